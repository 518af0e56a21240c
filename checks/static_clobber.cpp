// static-clobber: the kernel writes into a static slot (uses it as scratch), so the resident
// data is corrupt from the next call on.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "static-clobber", Severity::error,
    "the kernel writes into a static slot (uses it as scratch)",
    "right once, corrupt from the next call on",
    "a static slot's device bytes after dispatch differ from before dispatch (shadow engine)",
    "drop the slot from static_input_indices, or give the kernel its own scratch slot"};

class StaticClobber final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void on_call(const CallRecord& r, FindingSink& sink) override {
    for (auto& s : r.slots) {
      if (s.role != SlotRole::static_input || s.shadow_post == s.shadow_pre) continue;
      Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
      f.message = "kernel " + r.call->kernel->name + " wrote into static slot " + s.name +
                  "; later calls of '" + r.call->bo_key + "' will read the clobbered bytes";
      f.evidence = {{"static BO before vs after dispatch", hash_pair(s.shadow_pre, s.shadow_post)}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_static_clobber() { return std::make_unique<StaticClobber>(); }
const CheckInfo& static_clobber_info() { return kInfo; }

}  // namespace bod
