// output-divergence: the outputs of a call with reuse differ from the same call without.
#include <cstdio>

#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "output-divergence",
    Severity::error,
    "outputs with reuse differ from outputs without reuse; NaN/Inf appear with reuse only",
    "the user-visible failure: right on the first call, wrong on later ones",
    "each output slot of the reuse engine is compared with the no-reuse engine's: bit-exact, "
    "cosine, max-abs, max-rel and NaN/Inf counts; cosine < 0.99 or new NaN/Inf is an error, "
    "any other difference a warning",
    "look at the other findings of this call: they name the slot and rule that caused it",
    kNeedNoReuse,
    kNeedVerify,
    false,
    "an output read back differs from the no-reuse engine's"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

void run_output_divergence(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls)
    for (auto& o : c.outputs_cmp) {
      if (o.bit_exact) continue;
      Finding f = make_finding(kInfo, c, o.slot, c.key_first_call);
      bool new_nan = o.nan_reuse + o.inf_reuse > o.nan_noreuse + o.inf_noreuse;
      if (o.cosine >= 0.99 && !new_nan) f.severity = Severity::warning;
      f.message = std::string("output ") + f.slot_name + " differs from the no-reuse run on " +
                  (f.first_call_of_key ? "the first call" : "a later call") + " of bo_key '" +
                  c.bo_key + "' (cosine " + num(o.cosine) + ")";
      f.evidence = {
          {"cosine", num(o.cosine)},
          {"max_abs", num(o.max_abs)},
          {"max_rel", num(o.max_rel)},
          {"nan/inf reuse", std::to_string(o.nan_reuse) + "/" + std::to_string(o.inf_reuse)},
          {"nan/inf no-reuse", std::to_string(o.nan_noreuse) + "/" + std::to_string(o.inf_noreuse)},
          {"call of key", f.first_call_of_key ? "first" : "later"}};
      sink.add(std::move(f));
    }
}

const CheckInfo& output_divergence_info() {
  return kInfo;
}

}  // namespace bod
