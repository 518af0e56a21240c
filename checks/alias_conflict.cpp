// alias-conflict: an alias or pooled BO is shared by buffers live at the same time, or an
// alias is put on a static slot.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "alias-conflict", Severity::error,
    "an alias or pooled BO is shared by buffers that are live at the same time, or aliases a "
    "static slot",
    "corrupted activations, or every layer reading the first layer's weights",
    "lint: shared_alias on a static slot, or two slots of one call on one pool; run: an "
    "aliased slot that was not written held other bytes than the shadow's",
    "alias only a producer's output with its consumer's input, never a static slot, and give "
    "buffers that are live together their own pools"};

class AliasConflict final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }

  void lint(const Plan& p, FindingSink& sink) override {
    auto first = key_first_calls(p);
    for (auto& c : p.calls) {
      std::map<std::string, int> used;
      for (auto& [slot, pool] : c.alias) {
        if (c.is_static(slot)) {
          Finding f = make_finding(kInfo, c, slot, first[c.bo_key]);
          f.message = "static slot " + f.slot_name + " is aliased to pool '" + pool +
                      "'; every key would read whatever the pool holds";
          sink.add(std::move(f));
        }
        auto [it, fresh] = used.emplace(pool, slot);
        if (!fresh) {
          Finding f = make_finding(kInfo, c, slot, first[c.bo_key]);
          f.message = "slots " + std::to_string(it->second) + " and " + std::to_string(slot) +
                      " of one call share alias pool '" + pool + "'";
          sink.add(std::move(f));
        }
      }
    }
  }

  void on_call(const CallRecord& r, FindingSink& sink) override {
    if (r.failed) return;  // the reuse engine never ran it: size-mismatch says why
    for (auto& s : r.slots) {
      bool aliased = s.bo_id.rfind("alias:", 0) == 0;
      bool stale = aliased && stale_before(s);
      if (!stale && !s.shared_with_other_slot) continue;
      Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
      f.message = s.shared_with_other_slot
                      ? "slot " + s.name + " shares its BO with another slot of the same call"
                      : "aliased slot " + s.name + " (" + s.bo_id.substr(6) +
                            ") was not written and holds '" + s.resident + "' from call " +
                            std::to_string(s.resident_call) + ", not what the shadow run had";
      f.evidence = {{"device bytes reuse vs shadow", hash_pair(s.reuse_pre, s.shadow_pre)}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_alias_conflict() { return std::make_unique<AliasConflict>(); }
const CheckInfo& alias_conflict_info() { return kInfo; }

}  // namespace bod
