// partial-overwrite: the kernel leaves part of an intermediate slot unwritten, so stale
// bytes from an earlier call survive in it.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "partial-overwrite", Severity::error,
    "the kernel leaves part of an intermediate or output slot unwritten (padded tiles)",
    "stale bytes in the tail of the output",
    "after dispatch the skipped slot differs from the shadow's only in bytes that still hold "
    "the reuse BO's pre-dispatch contents",
    "drop the slot from intermediate_indices (let the host clear it), or make the kernel write "
    "the whole buffer"};

class PartialOverwrite final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void on_call(const CallRecord& r, FindingSink& sink) override {
    if (r.failed) return;  // the reuse engine never ran it: size-mismatch says why
    bool others_fine = only_intermediates_stale(r);
    for (auto& s : r.slots) {
      if (s.role != SlotRole::intermediate) continue;
      // Blamed only when the body does not overwrite the whole slot and nothing but
      // intermediates was stale (else identical rewritten bytes could look untouched).
      bool real = stale_before(s) && others_fine && !s.kernel_overwrites &&
                  s.reuse_post != s.shadow_post && s.diff_bytes > 0 &&
                  s.stale_diff_bytes == s.diff_bytes;
      if (!real) {
        if (s.probed && s.probe_unwritten_bytes > 0) latent(r, s, sink);
        continue;
      }
      Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
      f.message = "intermediate slot " + s.name + ": " + std::to_string(s.stale_diff_bytes) +
                  " of " + std::to_string(s.bytes) +
                  " bytes were not written by the kernel and still hold an earlier call's data";
      f.evidence = {{"device bytes after (reuse vs shadow)", hash_pair(s.reuse_post, s.shadow_post)},
                    {"stale bytes", std::to_string(s.stale_diff_bytes)}};
      sink.add(std::move(f));
    }
  }

 private:
  static void latent(const CallRecord& r, const SlotRecord& s, FindingSink& sink) {
    Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
    f.latent = true;
    f.message = "intermediate slot " + s.name + ": " + std::to_string(s.probe_unwritten_bytes) +
                " of " + std::to_string(s.bytes) + " bytes kept a canary through dispatch, so the "
                "kernel never writes them; stale bytes there do not differ yet";
    f.evidence = {{"probe", "canary survived in " + std::to_string(s.probe_unwritten_bytes) +
                                " bytes"}};
    sink.add(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Check> make_partial_overwrite() { return std::make_unique<PartialOverwrite>(); }
const CheckInfo& partial_overwrite_info() { return kInfo; }

}  // namespace bod
