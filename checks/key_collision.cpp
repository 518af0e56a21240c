// key-collision: one bo_key serves calls that bind different static data (the key lacks the
// layer index), so later layers run on the first layer's resident weights.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "key-collision", Severity::error,
    "one bo_key serves calls that bind different static data (layer 1 runs on layer 0's "
    "weights: the bo_key lacks the layer index, or falls back to the kernel name)",
    "garbage or NaN from the second layer on",
    "lint: calls of one bo_key bind different tensors to a static slot; run: a skipped static "
    "slot holds data written from another binding and differs from the shadow's",
    "make bo_key unique per distinct weight set, e.g. bo_key=\"<kernel>_L{l}\""};

class KeyCollision final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }

  void lint(const Plan& p, FindingSink& sink) override {
    auto first = key_first_calls(p);
    std::map<std::pair<std::string, int>, std::string> bound;  // (key, slot) -> first binding
    for (auto& c : p.calls) {
      for (auto& s : c.statics) {
        if (s.index < 0 || static_cast<size_t>(s.index) >= c.args.size()) continue;
        const auto& b = c.args[static_cast<size_t>(s.index)];
        if (b.kind != Binding::Kind::tensor && b.kind != Binding::Kind::placeholder) continue;
        auto [it, fresh] = bound.emplace(std::make_pair(c.bo_key, s.index), b.text);
        if (fresh || it->second == b.text) continue;
        Finding f = make_finding(kInfo, c, s.index, first[c.bo_key]);
        f.message = "bo_key '" + c.bo_key + "' already holds '" + it->second + "' in static slot " +
                    f.slot_name + "; this call binds '" + b.text + "', which will not be written";
        f.evidence = {{"resident binding", it->second}, {"this binding", b.text}};
        sink.add(std::move(f));
      }
    }
  }

  void on_call(const CallRecord& r, FindingSink& sink) override {
    if (r.failed) return;  // the reuse engine never ran it: size-mismatch says why
    for (auto& s : r.slots) {
      if (s.role != SlotRole::static_input || !stale_before(s) || s.size_mismatch) continue;
      if (s.bo_id.rfind("alias:", 0) == 0) continue;  // an aliased BO: alias-conflict
      if (s.resident == s.binding.text) continue;  // same binding: stale-static
      Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
      f.message = "static slot " + s.name + " should hold '" + s.binding.text + "' but the BO of '" +
                  r.call->bo_key + "' still holds '" + s.resident + "' from call " +
                  std::to_string(s.resident_call);
      f.evidence = {{"device bytes reuse vs shadow", hash_pair(s.reuse_pre, s.shadow_pre)},
                    {"resident binding", s.resident}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_key_collision() { return std::make_unique<KeyCollision>(); }
const CheckInfo& key_collision_info() { return kInfo; }

}  // namespace bod
