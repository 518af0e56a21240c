// Consumers of a Trace that are not checks: the per-bo_key first-call vs later-call table and
// the end-to-end verdict. Plain functions of the trace, returning data.
#pragma once
#include <string>
#include <vector>

#include "checks/finding.h"
#include "trace/trace.h"

namespace bod {

// Per bo_key: how its first call and its later calls fared (where "NaN on call 2" shows).
struct KeyRow {
  std::string bo_key, kernel;
  std::string ns;  // the key's cache instance ("" when the trace names none)
  int first_call = 0, calls = 0, later_diverged = 0, first_diverged = 0;
  double first_min_cosine = 1, later_min_cosine = 1;
  long long later_nan = 0;
  int first_bad_later_call = 0;
  int shadowed = 0;  // calls that ran on the no-reuse engine (record --shadow shadows a selection)
};
std::vector<KeyRow> key_table(const Trace& t);

struct OutputCheck {
  std::string var;
  double cosine = 1, max_abs = 0, max_rel = 0, min_cosine = 0.99;
  long long nan_reuse = 0, nan_noreuse = 0;
  bool pass = true;
};

// The end-to-end comparison of the reuse and no-reuse dataflows, judged.
struct Verification {
  std::vector<OutputCheck> outputs;
  std::vector<int32_t> tokens_reuse, tokens_noreuse;
  int first_token_divergence = -1;  // index into the token traces, -1 if none
  bool topk_agree = true;           // reuse's token within the no-reuse top-k there
  int top_k = 5;
  int noreuse_extra_calls = 0;  // calls the no-reuse dataflow ran alone after the split
  bool pass = true;
};
// Needs caps.verify.
Verification verify(const Trace& t);

// The gate must not pass a run whose end result diverged: when no error finding explains it
// (only sub-threshold per-call warnings), the failed verification becomes one.
void add_verification_finding(const Verification& v, FindingSink& sink);

}  // namespace bod
