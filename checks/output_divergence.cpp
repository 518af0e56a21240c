// output-divergence: the outputs of a call with reuse differ from the same call without.
#include <algorithm>
#include <cstdio>
#include <utility>

#include "checks/checks.h"
#include "core/saturate.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "output-divergence",
    Severity::error,
    "outputs with reuse differ from outputs without reuse; NaN/Inf appear with reuse only",
    "the user-visible failure: right on the first call, wrong on later ones",
    "each output slot of the reuse engine is compared with the no-reuse engine's: bit-exact, "
    "cosine, max-abs, max-rel and NaN/Inf counts; cosine < 0.99 or new NaN/Inf is an error, "
    "and so is any difference on a call up to the token where the greedy tokens or their "
    "top-k differ between the dataflows; any other difference a warning",
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

// The first generated token whose greedy choice or top-k differs between the dataflows, and
// what differs there ("" when none does, or the trace has no tokens).
std::pair<int, std::string> token_change(const Trace& t) {
  size_t n = std::min(t.tokens_reuse.size(), t.tokens_noreuse.size());
  for (size_t i = 0; i < n; ++i) {
    const TokenStep &a = t.tokens_reuse[i], &b = t.tokens_noreuse[i];
    if (a.token != b.token)
      return {static_cast<int>(i), "greedy token " + std::to_string(i) + " is " +
                                       std::to_string(a.token) + " with reuse, " +
                                       std::to_string(b.token) + " without"};
    if (!a.topk.empty() && !b.topk.empty() && a.topk != b.topk)
      return {static_cast<int>(i), "the top-" + std::to_string(b.topk.size()) + " of token " +
                                       std::to_string(i) + " differs between the dataflows"};
  }
  return {-1, ""};
}

}  // namespace

void run_output_divergence(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  auto [changed_at, changed] = token_change(t);
  for (auto& c : t.calls)
    for (auto& o : c.outputs_cmp) {
      if (o.bit_exact) continue;
      Finding f = make_finding(kInfo, c, o.slot, c.key_first_call);
      bool new_nan = sat_add(o.nan_reuse, o.inf_reuse) > sat_add(o.nan_noreuse, o.inf_noreuse);
      // A difference the generated tokens show is an error whatever the cosine: on a call
      // before or at the first token that changed (a prefill call has no token).
      bool tokens_show = changed_at >= 0 && c.token <= changed_at;
      if (o.cosine >= 0.99 && !new_nan && !tokens_show) f.severity = Severity::warning;
      // A hand-managed run (record --xrt --shadow) is compared with its shadow run: the same
      // kernel on fresh BOs holding the bytes the host meant.
      f.message = t.header.caps.xrt
                      ? std::string("output ") + f.slot_name +
                            " as synced back from the device differs from the shadow run on " +
                            "fresh BOs holding the host's bytes, on " +
                            (f.first_call_of_key ? "the first run" : "a later run") +
                            " of kernel '" + c.kernel + "' (cosine " + num(o.cosine) + ")"
                      : std::string("output ") + f.slot_name +
                            " differs from the no-reuse run on " +
                            (f.first_call_of_key ? "the first call" : "a later call") +
                            " of bo_key '" + c.bo_key + "' (cosine " + num(o.cosine) + ")";
      f.evidence = {{"cosine", num(o.cosine)},
                    {"max_abs", num(o.max_abs)},
                    {"max_rel", num(o.max_rel)},
                    {t.header.caps.xrt ? "nan/inf recorded" : "nan/inf reuse",
                     std::to_string(o.nan_reuse) + "/" + std::to_string(o.inf_reuse)},
                    {t.header.caps.xrt ? "nan/inf shadow" : "nan/inf no-reuse",
                     std::to_string(o.nan_noreuse) + "/" + std::to_string(o.inf_noreuse)},
                    {"call of key", f.first_call_of_key ? "first" : "later"}};
      if (t.header.caps.xrt)
        f.severity_basis =
            "an output the program synced back from the device differs from the shadow run's "
            "(the same kernel on fresh BOs holding the bytes the host meant)";
      if (tokens_show && o.cosine >= 0.99 && !new_nan)
        f.evidence.push_back({"severity", "error: " + changed + ", at or after this call"});
      sink.add(std::move(f));
    }
}

const CheckInfo& output_divergence_info() {
  return kInfo;
}

}  // namespace bod
