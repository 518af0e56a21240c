// alias-conflict: an alias or pooled BO is shared by buffers live at the same time, or an
// alias is put on a static slot.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "alias-conflict",
    Severity::error,
    "an alias or pooled BO is shared by buffers that are live at the same time",
    "corrupted activations, or every layer reading the first layer's weights",
    "lint: two slots of one call on one pool; run: an aliased slot that was not written held "
    "other bytes than the no-reuse engine's and the kernel reads it before writing it (an alias "
    "on a static slot is a config-error: the real engine raises)",
    "alias only a producer's output with its consumer's input, never a static slot, and give "
    "buffers that are live together their own pools",
    kNeedRun | kNeedNoReuse,
    kNeedAccess,
    true,
    "two buffers live at the same time share one BO"};

// A shared_alias on a later call of a key whose first call set the slot up otherwise (e.g. an
// alias added after a preload phase): the real engine looks pools up only at a key's first
// call, so the alias is silently ignored. An error when the call skips the slot and the
// kernel reads it (it relies on the producer's bytes, which land elsewhere), else a note.
void ignored_alias(const Trace& t, const TraceCall& c, FindingSink& sink) {
  for (auto& [slot, pool] : c.alias) {
    // Out of range, empty or on a static slot: the real engine raises (config-error's).
    if (slot < 0 || static_cast<size_t>(slot) >= c.slots.size() || pool.empty() ||
        c.is_static(slot))
      continue;
    const TraceSlot& s = c.slots[static_cast<size_t>(slot)];
    if (s.place.pool == BoPool::alias && s.place.name == pool) continue;
    bool skipped = c.is_static(slot) || c.is_inter(slot);
    bool reads = !t.header.caps.access || s.access.reads_before_write;
    Finding f = make_finding(kInfo, c, slot, c.key_first_call);
    f.severity = skipped && reads ? Severity::error : Severity::note;
    f.message = "shared_alias '" + pool + "' on slot " + s.name + " is ignored: bo_key '" +
                c.bo_key + "' set up its BOs at call " + std::to_string(c.key_first_call) +
                " without it (" + s.place.label() +
                "), and the real engine looks pools up only "
                "at a key's first call";
    f.evidence = {{"severity", f.severity == Severity::error
                                   ? "error: the slot is not written and the kernel reads it, "
                                     "so it never sees what was left in pool '" +
                                         pool + "'"
                                   : "note: the slot is written or never read, so nothing "
                                     "depends on the alias"}};
    sink.add(std::move(f));
  }
}

// From the declarations alone.
void declared(const Trace& t, FindingSink& sink) {
  for (auto& c : t.calls) {
    if (!c.first_of_key()) ignored_alias(t, c, sink);
    std::map<std::string, int> used;
    for (auto& [slot, pool] : c.alias) {
      auto [it, fresh] = used.emplace(pool, slot);
      if (!fresh) {
        Finding f = make_finding(kInfo, c, slot, c.key_first_call);
        f.message = "slots " + std::to_string(it->second) + " and " + std::to_string(slot) +
                    " of one call share alias pool '" + pool + "'";
        sink.add(std::move(f));
      }
    }
  }
}

}  // namespace

// Who last changed each BO before a call: its host write, or its kernel (bytes after dispatch
// differ from before). Per call and slot, from the trace alone.
struct Changer {
  int call = 0;
  bool kernel = false;
  const std::string* who = nullptr;  // kernel name or host binding (in the Trace)
};

std::string changer_text(const Changer& w) {
  if (w.call == 0) return "nothing has written it yet";
  return w.kernel
             ? "it holds what kernel " + *w.who + " wrote at call " + std::to_string(w.call)
             : "it holds '" + *w.who + "' written by the host at call " + std::to_string(w.call);
}

void run_alias_conflict(const Trace& t, FindingSink& sink) {
  declared(t, sink);
  if (lacks(t, kInfo)) return;
  std::vector<Changer> last;  // by BO number
  for (auto& c : t.calls) {
    std::vector<Changer> before(c.slots.size());
    for (auto& s : c.slots)
      if (s.place.bo > 0 && static_cast<size_t>(s.place.bo) < last.size())
        before[static_cast<size_t>(s.slot)] = last[static_cast<size_t>(s.place.bo)];
    for (auto& s : c.slots) {  // this call's own changes, for the calls after it
      if (s.place.bo <= 0) continue;
      auto n = static_cast<size_t>(s.place.bo);
      if (n >= last.size()) last.resize(n + 1);
      if (s.written && s.written_bytes > 0) last[n] = Changer{c.number, false, &s.host.name};
      if (!c.failed && s.reuse_post != s.reuse_pre) last[n] = Changer{c.number, true, &c.kernel};
    }
    if (c.failed) continue;  // the reuse engine never ran it: size-mismatch says why
    std::vector<char> sharing = slots_sharing_a_bo(c);
    for (auto& s : c.slots) {
      // Stale bytes in an alias pool matter only when the kernel reads them before writing
      // the slot (with access facts; without them, assume it does).
      bool seen = !t.header.caps.access || s.access.reads_before_write;
      bool stale = s.place.pool == BoPool::alias && stale_before(t.header.caps, s) && seen;
      bool shared = s.slot >= 0 && static_cast<size_t>(s.slot) < sharing.size()
                        ? sharing[static_cast<size_t>(s.slot)] != 0
                        : shares_bo(c, s.slot);
      if (!stale && !shared) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      bool zeros = s.host.source == ArraySource::zeros;
      f.message = shared ? "slot " + s.name + " shares its BO with another slot of the same call"
                         : "aliased slot " + s.name + " (pool '" + s.place.name +
                               "') was not written and " +
                               changer_text(before[static_cast<size_t>(s.slot)]) +
                               ", not what the no-reuse engine had" +
                               (zeros ? " (the call binds no array there, so the no-reuse engine "
                                        "gets zeros; a baton input binds the producer's returned "
                                        "output)"
                                      : "");
      f.evidence = {{"device bytes reuse vs no-reuse", hash_pair(s.reuse_pre, s.noreuse_pre)},
                    {"severity", shared ? "error: two arguments of one launch are one buffer"
                                        : "error: the kernel reads the slot before writing it, so "
                                          "it sees bytes another user left in the pool"}};
      sink.add(std::move(f));
    }
  }
}

const CheckInfo& alias_conflict_info() {
  return kInfo;
}

}  // namespace bod
