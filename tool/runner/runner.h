// The shadow-copy runner: executes the plan on the reuse engine and, call by call, on the
// no-reuse shadow engine with identical host inputs; hashes every BO before and after every
// dispatch; hands one CallRecord per call to the checks; verifies the whole run end to end
// against a no-reuse baseline that costs nothing extra while both dataflows agree.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "checks/check.h"
#include "runner/call_record.h"
#include "runner/host_data.h"

namespace bod {

struct EngineFigures {
  size_t h2d_bytes = 0;
  long writes = 0;
  long calls = 0;
  double write_s = 0, dispatch_s = 0, read_s = 0;
  double wall_s() const { return write_s + dispatch_s + read_s; }
};

struct OutputCheck {
  std::string var;
  double cosine = 1, max_abs = 0, max_rel = 0, min_cosine = 0.99;
  long long nan_reuse = 0, nan_base = 0;
  bool pass = true;
};

struct Verification {
  std::vector<OutputCheck> outputs;
  std::vector<int32_t> tokens_reuse, tokens_base;
  int first_token_divergence = -1;  // index into the token traces, -1 if none
  bool topk_agree = true;           // reuse's token within the baseline's top-k there
  int top_k = 5;
  int baseline_extra_calls = 0;     // calls the baseline ran on its own after divergence
  bool pass = true;
};

struct RunOptions {
  bool shadow = true;  // false: reuse engine only (benchmark reference run)
  bool probe = false;  // canary-probe every intermediate slot (latent bugs)
  // classify: canary-probe every slot, one at a time, on the first `probe_calls_per_key`
  // calls of each bo_key.
  bool probe_all = false;
  int probe_calls_per_key = 2;
};

struct RunResult {
  std::string backend;
  bool host_emulated = true;
  bool npu_launched = false;
  std::vector<CallRecord> records;
  EngineFigures reuse, shadow;
  Verification verify;
  double wall_s = 0;
};

// Runs the plan; findings go to `sink`. Throws FatalError on backend failure (exit 3).
RunResult run_shadow(const Plan& plan, const HostData& data, Backend& backend,
                     std::vector<std::unique_ptr<Check>>& checks, FindingSink& sink,
                     const RunOptions& opt = {});

}  // namespace bod
