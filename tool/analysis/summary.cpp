#include "analysis/summary.h"

#include <algorithm>

#include "checks/checks.h"
#include "core/saturate.h"

namespace bod {

std::vector<KeyRow> key_table(const Trace& t) {
  std::vector<KeyRow> rows;
  std::map<std::pair<std::string, std::string>, size_t> at;  // (ns, bo_key) -> row
  for (auto& c : t.calls) {
    auto [it, fresh] = at.emplace(std::make_pair(c.ns, c.bo_key), rows.size());
    if (fresh) rows.push_back({c.bo_key, c.kernel, c.ns, c.number});
    KeyRow& k = rows[it->second];
    k.calls++;
    k.shadowed += c.shadowed();
    double cmin = 1;
    long long nan = 0;
    for (auto& o : c.outputs_cmp) {
      cmin = std::min(cmin, o.cosine);
      nan = sat_add(nan, sat_add(o.nan_reuse, o.inf_reuse));  // counts are input: saturate
    }
    bool bad = c.diverged() || c.failed;
    if (c.first_of_key()) {
      k.first_diverged += bad;
      k.first_min_cosine = std::min(k.first_min_cosine, cmin);
    } else {
      k.later_diverged += bad;
      k.later_min_cosine = std::min(k.later_min_cosine, cmin);
      k.later_nan = sat_add(k.later_nan, nan);
      if (bad && !k.first_bad_later_call) k.first_bad_later_call = c.number;
    }
  }
  return rows;
}

Verification verify(const Trace& t) {
  Verification v;
  v.top_k = t.header.top_k;
  v.noreuse_extra_calls = t.noreuse_extra_calls;
  for (auto& o : t.verify) {
    VerifySpec tol;
    for (auto& s : t.header.verify)
      if (s.var == o.var) tol = s;
    OutputCheck oc{o.var,          o.cosine,        o.max_abs,         o.max_rel,
                   tol.min_cosine, o.nan_inf_reuse, o.nan_inf_noreuse, true};
    oc.pass = o.cosine >= tol.min_cosine && oc.nan_reuse <= oc.nan_noreuse &&
              (tol.atol < 0 || o.max_abs <= tol.atol) && (tol.rtol < 0 || o.max_rel <= tol.rtol);
    v.pass = v.pass && oc.pass;
    v.outputs.push_back(oc);
  }
  for (auto& s : t.tokens_reuse) v.tokens_reuse.push_back(s.token);
  for (auto& s : t.tokens_noreuse) v.tokens_noreuse.push_back(s.token);
  size_t n = std::min(t.tokens_reuse.size(), t.tokens_noreuse.size());
  for (size_t i = 0; i < n; ++i) {
    if (t.tokens_reuse[i].token == t.tokens_noreuse[i].token) continue;
    v.first_token_divergence = static_cast<int>(i);
    auto& tk = t.tokens_noreuse[i].topk;
    v.topk_agree = std::find(tk.begin(), tk.end(), t.tokens_reuse[i].token) != tk.end();
    v.pass = false;
    break;
  }
  // One dataflow generated more tokens than the other: they diverged where the shorter ended.
  if (v.first_token_divergence < 0 && t.tokens_reuse.size() != t.tokens_noreuse.size()) {
    v.first_token_divergence = static_cast<int>(n);
    v.topk_agree = false;
    v.pass = false;
  }
  return v;
}

void add_verification_finding(const Verification& v, FindingSink& sink) {
  if (v.pass || sink.has_error()) return;
  Finding f;
  f.check = output_divergence_info().id;
  f.severity = Severity::error;
  f.message =
      "end-to-end verification failed although no single call crossed the error "
      "threshold: small per-call differences added up";
  f.evidence = {{"first token divergence", std::to_string(v.first_token_divergence)}};
  for (auto& o : v.outputs) f.evidence.push_back({o.var + " cosine", std::to_string(o.cosine)});
  f.fix = output_divergence_info().fix;
  sink.add(std::move(f));
}

}  // namespace bod
