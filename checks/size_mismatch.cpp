// size-mismatch: a reused BO set or pool sees arrays of another size, or another slot count,
// than at its first call.
#include <set>

#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "size-mismatch",
    Severity::error,
    "a reused BO set or pool gets arrays of another size or another slot count than at its "
    "first call",
    "stale tail bytes, missing scratch, or a failed call",
    "lint compares each call's slot sizes and count with the BO list its bo_key's first call "
    "set up, and alias pools one name gives two sizes; the run reports every argument without "
    "a BO and every array of another size than its BO",
    "give calls with other shapes or slot lists their own bo_key (or pool name)",
    kNeedRun,
    0,
    true,
    "the real engine raises here, or the kernel runs on a BO of another size (stale tail or "
    "missing buffer)"};

void emit(FindingSink& sink, const TraceCall& c, int slot, int first, const std::string& msg) {
  Finding f = make_finding(kInfo, c, slot, first);
  f.message = msg;
  sink.add(std::move(f));
}

// One alias pool name used at two sizes: the real engine keys alias pools by (name, size), so
// each size is its own BO. That matters when a slot reads the pool (skipped, and the kernel
// reads it before writing) after the name was last written at another size: it reads another
// BO than the producer wrote (error). Otherwise the split is reported as a note.
class AliasSizes {
 public:
  void see(FindingSink& sink, const Trace& t, const TraceCall& c, const TraceSlot& s) {
    const Placement& p = s.place;
    auto name = std::make_pair(p.ns, p.name);
    bool skipped = !c.first_of_key() && (c.is_static(s.slot) || c.is_inter(s.slot));
    bool reads = skipped && (!t.header.caps.access || s.access.reads_before_write);
    auto last = last_write_.find(name);
    if (reads && last != last_write_.end() && last->second.first != p.bytes) {
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "slot " + s.name + " reads alias pool '" + p.name + "' at " +
                  std::to_string(p.bytes) + " bytes, but call " +
                  std::to_string(last->second.second) + " last wrote '" + p.name + "' at " +
                  std::to_string(last->second.first) +
                  " bytes: the real engine keys alias pools by (name, size), so this slot reads "
                  "another BO than the one written";
      f.evidence = {{"severity", "error: the kernel reads the pool before writing it"}};
      sink.add(std::move(f));
    }
    auto [it, fresh] = first_size_.emplace(name, std::make_pair(p.bytes, c.number));
    if (!fresh && it->second.first != p.bytes && c.first_of_key() && noted_.insert(name).second) {
      Finding f = make_finding(kInfo, c, s.slot, it->second.second);
      f.severity = Severity::note;
      f.message = "alias pool '" + p.name + "' was created with " +
                  std::to_string(it->second.first) + " bytes at call " +
                  std::to_string(it->second.second) + "; slot " + s.name + " needs " +
                  std::to_string(p.bytes) +
                  ": the real engine keys alias pools by (name, size), "
                  "so this size is a BO of its own and does not share with the other";
      f.evidence = {{"severity", "note: no slot reads '" + p.name +
                                     "' at one size after it was "
                                     "written at the other (an error names it where one does)"}};
      sink.add(std::move(f));
    }
    bool writes = !skipped || !t.header.caps.access || s.access.written;
    if (writes) last_write_[name] = std::make_pair(p.bytes, c.number);
  }

 private:
  using Name = std::pair<std::string, std::string>;
  std::map<Name, std::pair<size_t, int>> first_size_, last_write_;  // -> bytes, call
  std::set<Name> noted_;
};

// From the declarations alone: each call against the BO list its key's first call set up, and
// alias pools that one name gives two sizes.
void declared(const Trace& t, FindingSink& sink) {
  AliasSizes alias;
  for (auto& c : t.calls) {
    const TraceCall* f0 = t.call(c.key_first_call);
    if (!c.first_of_key() && f0 && f0->slots.size() != c.slots.size())
      emit(sink, c, -1, f0->number,
           "bo_key '" + c.bo_key + "' was set up with " + std::to_string(f0->slots.size()) +
               " args at call " + std::to_string(f0->number) + " (" + f0->kernel +
               "); this call passes " + std::to_string(c.slots.size()) +
               " and the launch binds only the first " + std::to_string(f0->slots.size()));
    for (auto& s : c.slots) {
      const Placement& p = s.place;
      if (p.pool == BoPool::unbound) continue;  // the run part says what happens to it
      if (p.pool == BoPool::alias) alias.see(sink, t, c, s);
      if (p.pool == BoPool::alias && c.first_of_key()) continue;
      if (s.host.bytes == p.bytes || c.first_of_key()) continue;
      bool skipped_slot = c.is_static(s.slot) || c.is_inter(s.slot);
      if (s.host.bytes < p.bytes && skipped_slot && !s.output) continue;  // nothing written
      // A 0-byte placeholder uploads nothing (the real engine writes 0 bytes, raising nothing):
      // placeholder-upload judges what the kernel then reads.
      if (s.host.source == ArraySource::placeholder && s.host.bytes == 0 && !s.output) continue;
      std::string msg = "slot " + s.name + " is " + std::to_string(s.host.bytes) +
                        " bytes but the BO of '" + c.bo_key + "' was sized " +
                        std::to_string(p.bytes) + " bytes at call " +
                        std::to_string(c.key_first_call);
      // Larger on a slot the call skips and does not read back: nothing raises, the kernel
      // runs on the BO it was set up with (truncated): a warning, as in the run part.
      bool skipped = c.is_static(s.slot) || c.is_inter(s.slot);
      if (s.host.bytes > p.bytes && skipped && !s.output) {
        Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
        f.message = msg + "; the write is skipped, so the kernel sees only the first " +
                    std::to_string(p.bytes) + " bytes (truncated)";
        f.severity = Severity::warning;
        sink.add(std::move(f));
        continue;
      }
      emit(sink, c, s.slot, c.key_first_call, msg);
    }
  }
}

}  // namespace

std::string size_note(const Trace& t, const TraceCall& c, const TraceSlot& s) {
  const TraceCall* first = t.call(c.key_first_call);
  size_t n = first ? first->slots.size() : 0;
  if (s.place.pool == BoPool::unbound)
    return s.written || !(c.is_static(s.slot) || c.is_inter(s.slot))
               ? "argument " + std::to_string(s.slot) + " (" + s.name + ") has no BO: bo_key '" +
                     c.bo_key + "' was set up with " + std::to_string(n) +
                     " args; the real engine raises IndexError writing it"
               : "argument " + std::to_string(s.slot) + " (" + s.name +
                     ") has no BO: the launch "
                     "binds only the " +
                     std::to_string(n) + " BOs of bo_key '" + c.bo_key +
                     "', so the kernel never sees it";
  if (s.host.bytes == s.bo_bytes || s.bo_bytes == 0) return "";
  // Smaller on a skipped slot that is not read back: nothing is written, the kernel runs on
  // the BO as its key's first call set it up (an np.empty(0) placeholder after a preload).
  bool skipped_slot = c.is_static(s.slot) || c.is_inter(s.slot);
  if (s.host.bytes < s.bo_bytes && skipped_slot && !s.output && !s.written) return "";
  // A 0-byte placeholder written into a slot uploads nothing: placeholder-upload judges it.
  if (s.host.source == ArraySource::placeholder && s.host.bytes == 0 && s.written) return "";
  std::string head = "slot " + s.name + " is " + std::to_string(s.host.bytes) +
                     " bytes but its BO (" + s.place.label() + ") was sized " +
                     std::to_string(s.bo_bytes) + " bytes at first use";
  if (s.host.bytes < s.bo_bytes) return head;
  bool skipped = c.is_static(s.slot) || c.is_inter(s.slot);
  if (!skipped || s.output) return head + "; the real engine raises ValueError there";
  return head + "; the write is skipped, so the kernel sees only the first " +
         std::to_string(s.bo_bytes) + " bytes (truncated)";
}

void run_size_mismatch(const Trace& t, FindingSink& sink) {
  declared(t, sink);
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      std::string note = size_note(t, c, s);
      if (note.empty()) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = note;
      // A skipped slot larger than its BO raises nothing: the kernel runs on the BO it was set
      // up with; what that does to the outputs is output-divergence's to say.
      if (note.find("(truncated)") != std::string::npos) f.severity = Severity::warning;
      sink.add(std::move(f));
    }
}

const CheckInfo& size_mismatch_info() {
  return kInfo;
}

}  // namespace bod
