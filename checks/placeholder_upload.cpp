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

// From the declarations alone.
void declared(const Trace& t, FindingSink& sink) {
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      if (s.host.source != ArraySource::placeholder) continue;
      bool uploads = c.first_of_key() || !c.is_static(s.slot);
      if (!uploads) continue;
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
