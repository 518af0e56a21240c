// output-divergence: the outputs of a call with reuse differ from the same call without.
#include <cstdio>

#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "output-divergence", Severity::error,
    "outputs with reuse differ from outputs without reuse; NaN/Inf appear with reuse only",
    "the user-visible failure: right on the first call, wrong on later ones",
    "each output slot of the reuse engine is compared with the shadow engine's: bit-exact, "
    "cosine, max-abs, max-rel and NaN/Inf counts; cosine < 0.99 or new NaN/Inf is an error, "
    "any other difference a warning",
    "look at the other findings of this call: they name the slot and rule that caused it"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

class OutputDivergence final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void on_call(const CallRecord& r, FindingSink& sink) override {
    for (auto& o : r.outputs) {
      if (o.bit_exact) continue;
      Finding f = make_finding(kInfo, *r.call, o.slot, r.key_first_call);
      bool new_nan = o.nan_reuse + o.inf_reuse > o.nan_shadow + o.inf_shadow;
      if (o.cosine >= 0.99 && !new_nan) f.severity = Severity::warning;
      f.message = std::string("output ") + f.slot_name + " differs from the no-reuse run on " +
                  (f.first_call_of_key ? "the first call" : "a later call") + " of bo_key '" +
                  r.call->bo_key + "' (cosine " + num(o.cosine) + ")";
      f.evidence = {{"cosine", num(o.cosine)},
                    {"max_abs", num(o.max_abs)},
                    {"max_rel", num(o.max_rel)},
                    {"nan/inf reuse", std::to_string(o.nan_reuse) + "/" + std::to_string(o.inf_reuse)},
                    {"nan/inf shadow",
                     std::to_string(o.nan_shadow) + "/" + std::to_string(o.inf_shadow)},
                    {"call of key", f.first_call_of_key ? "first" : "later"}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_output_divergence() { return std::make_unique<OutputDivergence>(); }
const CheckInfo& output_divergence_info() { return kInfo; }

}  // namespace bod
