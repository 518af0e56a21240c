// placeholder-upload: a placeholder standing in for freed host weights is uploaded into a BO.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "placeholder-upload",
    Severity::error,
    "a key's first call uploads placeholder data into a static slot (host weights were freed "
    "before the key was preloaded)",
    "a layer silently runs on zero weights",
    "lint: the first call of a bo_key binds a placeholder, or a placeholder sits in a slot that "
    "is not static; run: the reuse engine wrote a placeholder into a BO",
    "preload every bo_key (one call with the real weights) before freeing host weights, or keep "
    "the weights until the key's first call",
    kNeedRun,
    0,
    true,
    "the BO of a static slot holds placeholder bytes, not the weights, for every call of the key"};

// A 0-byte placeholder written into a non-static slot uploads nothing: the BO keeps its bytes.
// Harmless (a note) when only its key uses the BO or the last write into it was this key's; an
// error when a pooled BO was last written by another key's call, whose bytes the kernel reads.
bool empty_write(const Trace& t, const TraceCall& c, const TraceSlot& s,
                 const std::vector<std::vector<Resident>>& resident, FindingSink& sink) {
  Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
  const Resident& r = resident[static_cast<size_t>(c.number - 1)][static_cast<size_t>(s.slot)];
  const TraceCall* by = t.call(r.call);
  bool other = s.place.pool != BoPool::key && by && (by->bo_key != c.bo_key || by->ns != c.ns);
  f.message = "placeholder for '" + s.host.name + "' in slot " + f.slot_name +
              " (not static) uploads 0 bytes: the BO keeps ";
  if (other) {
    f.message += "what call " + std::to_string(r.call) + " (bo_key '" + by->bo_key +
                 "') wrote into this shared BO, and the kernel reads that";
    f.severity_basis = "a pooled BO another key wrote since: the kernel reads its bytes";
  } else {
    f.severity = Severity::note;
    f.message += "the bytes this key put there: harmless here";
    f.severity_basis = s.place.pool == BoPool::key
                           ? "only its own key uses this BO: it still holds that key's data"
                           : "the pooled BO was last written by this key: it still holds its data";
  }
  f.evidence = {{"BO", s.place.label()}, {"last written at call", std::to_string(r.call)}};
  sink.add(std::move(f));
  return true;
}

// From the declarations alone (and, with a run, the 0-byte writes above).
void declared(const Trace& t, FindingSink& sink) {
  std::vector<std::vector<Resident>> resident;
  bool derived = false;
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      if (s.host.source != ArraySource::placeholder) continue;
      bool uploads = c.first_of_key() || !c.is_static(s.slot);
      if (!uploads) continue;
      if (t.header.caps.run && !c.failed && !c.is_static(s.slot) && s.written &&
          s.written_bytes == 0 && s.place.pool != BoPool::unbound) {
        if (!derived) resident = residents(t), derived = true;
        empty_write(t, c, s, resident, sink);
        continue;
      }
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "placeholder for '" + s.host.name + "' is uploaded into slot " + f.slot_name +
                  (c.is_static(s.slot) ? " on the first call of bo_key '" + c.bo_key + "'"
                                       : " (not static: written every call)");
      sink.add(std::move(f));
    }
}

}  // namespace

void run_placeholder_upload(const Trace& t, FindingSink& sink) {
  declared(t, sink);
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls) {
    if (c.failed) continue;  // the reuse engine never ran it: size-mismatch says why
    for (auto& s : c.slots) {
      // A 0-byte write (np.empty(0)) uploads nothing: the BO keeps what it held.
      if (s.host.source != ArraySource::placeholder || !s.written || s.written_bytes == 0) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "placeholder for '" + s.host.name + "' was written into slot " + s.name +
                  "; the kernel ran on placeholder data instead of the weights";
      if (t.header.caps.no_reuse)
        f.evidence = {{"device bytes reuse vs no-reuse", hash_pair(s.reuse_pre, s.noreuse_pre)}};
      else
        f.evidence = {{"bytes written", std::to_string(s.written_bytes)}};
      sink.add(std::move(f));
    }
  }
}

const CheckInfo& placeholder_upload_info() {
  return kInfo;
}

}  // namespace bod
