// stale-static: a static slot's host data changed between calls of one key, but the write
// was skipped, so the kernel ran on the first call's data.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "stale-static", Severity::error,
    "a static slot's host data changed between calls of one bo_key (e.g. a position-dependent "
    "RoPE LUT marked static), but the reuse engine skipped the write",
    "subtle drift from the second call on",
    "the slot is static and skipped, the same binding is bound again, and the reuse BO's bytes "
    "before dispatch differ from the shadow engine's freshly written BO",
    "drop the slot from static_input_indices (it changes per call), or key the BO set by what "
    "makes the data differ"};

class StaleStatic final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void on_call(const CallRecord& r, FindingSink& sink) override {
    if (r.failed) return;  // the reuse engine never ran it: size-mismatch says why
    for (auto& s : r.slots) {
      if (s.role != SlotRole::static_input || !stale_before(s) || s.size_mismatch) continue;
      if (s.bo_id.rfind("alias:", 0) == 0) continue;  // an aliased BO: alias-conflict
      if (s.resident != s.binding.text) continue;  // other data: key-collision
      // Data unchanged (or a placeholder standing in for it): the BO was clobbered instead.
      if (s.placeholder || s.host_hash == s.resident_hash) continue;
      Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
      f.message = "static slot " + s.name + " bound to '" + s.binding.text +
                  "' changed since call " + std::to_string(s.resident_call) +
                  " but was not rewritten; the kernel read the old data";
      f.evidence = {{"device bytes reuse vs shadow", hash_pair(s.reuse_pre, s.shadow_pre)},
                    {"data written at call", std::to_string(s.resident_call)}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_stale_static() { return std::make_unique<StaleStatic>(); }
const CheckInfo& stale_static_info() { return kInfo; }

}  // namespace bod
