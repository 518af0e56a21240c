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
    for (auto& s : r.slots) {
      if (s.role != SlotRole::intermediate || !stale_before(s)) continue;
      if (s.reuse_post == s.shadow_post || s.stale_diff_bytes < s.diff_bytes) continue;
      Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
      f.message = "intermediate slot " + s.name + ": " + std::to_string(s.stale_diff_bytes) +
                  " of " + std::to_string(s.bytes) +
                  " bytes were not written by the kernel and still hold an earlier call's data";
      f.evidence = {{"device bytes after (reuse vs shadow)", hash_pair(s.reuse_post, s.shadow_post)},
                    {"stale bytes", std::to_string(s.stale_diff_bytes)}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_partial_overwrite() { return std::make_unique<PartialOverwrite>(); }
const CheckInfo& partial_overwrite_info() { return kInfo; }

}  // namespace bod
