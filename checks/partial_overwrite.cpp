// partial-overwrite: the kernel leaves part of an intermediate slot unwritten, so stale
// bytes from an earlier call survive in it.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "partial-overwrite",
    Severity::error,
    "the kernel leaves part of an intermediate or output slot unwritten (padded tiles)",
    "stale bytes in the tail of the output",
    "after dispatch the skipped slot differs from the no-reuse engine's only in bytes that "
    "still hold the reuse BO's pre-dispatch contents; latent (probe): a canary survives in an "
    "output slot the kernel writes (never on dead, input-only or scratch-only slots)",
    "drop the slot from intermediate_indices (let the host clear it), or make the kernel write "
    "the whole buffer",
    kNeedRun | kNeedNoReuse | kNeedByteDiffs | kNeedAccess,
    kNeedProbe,
    false,
    "bytes the kernel does not write keep what an earlier call left there, and they are read"};

void latent(const TraceCall& c, const TraceSlot& s, FindingSink& sink) {
  Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
  f.latent = true;
  f.message = "intermediate slot " + s.name + ": " + std::to_string(s.probe.unwritten_bytes) +
              " of " + std::to_string(s.host.bytes) +
              " bytes kept a canary through dispatch, "
              "so the kernel never writes them; stale bytes there do not differ yet";
  f.evidence = {
      {"probe", "canary survived in " + std::to_string(s.probe.unwritten_bytes) + " bytes"},
      {"severity",
       "error: the slot is read back as an output, so its unwritten bytes "
       "reach the caller"}};
  sink.add(std::move(f));
}

}  // namespace

void run_partial_overwrite(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls) {
    if (c.failed) continue;  // the reuse engine never ran it: size-mismatch says why
    bool others_fine = only_intermediates_stale(c);
    for (auto& s : c.slots) {
      if (s.role != SlotRole::intermediate) continue;
      // Blamed only when the body does not overwrite the whole slot and nothing but
      // intermediates was stale (else identical rewritten bytes could look untouched).
      bool real = stale_before(t.header.caps, s) && others_fine && !s.access.overwritten &&
                  s.reuse_post != s.noreuse_post && s.diff_bytes > 0 &&
                  s.stale_diff_bytes == s.diff_bytes;
      if (!real) {
        // Latent only where stale bytes could be seen: the kernel writes the slot (else it is an
        // input, not scratch) and the slot is read back (else nobody reads the bytes the kernel
        // skips: a dead or scratch-only slot).
        bool reachable = s.access.written && s.output;
        if (s.probe.probed && s.probe.unwritten_bytes > 0 && reachable) latent(c, s, sink);
        continue;
      }
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "intermediate slot " + s.name + ": " + std::to_string(s.stale_diff_bytes) +
                  " of " + std::to_string(s.host.bytes) +
                  " bytes were not written by the kernel and still hold an earlier call's data";
      f.evidence = {
          {"device bytes after (reuse vs no-reuse)", hash_pair(s.reuse_post, s.noreuse_post)},
          {"stale bytes", std::to_string(s.stale_diff_bytes)}};
      sink.add(std::move(f));
    }
  }
}

const CheckInfo& partial_overwrite_info() {
  return kInfo;
}

}  // namespace bod
