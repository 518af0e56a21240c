// The runner: replays a plan on the reuse engine and, call by call, on the no-reuse engine
// with identical host inputs; hashes every BO before and after every dispatch; compares the
// outputs; follows both dataflows to the end for the end-to-end comparison. It records all of
// it as a Trace and judges nothing: the checks (checks/) and analyses (tool/analysis/) read
// the Trace.
#pragma once
#include <functional>
#include <string>

#include "plan/plan.h"
#include "runner/host_data.h"
#include "runtime/backend.h"
#include "trace/trace.h"

namespace bod {

// Counts a run can report besides its Trace (tests, the benchmark).
struct RunStats {
  long shadow_runs = 0;   // calls the no-reuse engine ran
  long shadow_taken = 0;  // calls it took the reuse engine's results for (shadow_skip)
  // 64 KiB chunks of vars (a KV cache) the host hashes read, and those whose hash was kept
  // from an earlier call because nothing wrote them since (chunk_hashes).
  long var_chunks_hashed = 0;
  long var_chunks_kept = 0;
  // Likewise for the reuse BOs' device bytes after dispatch: chunks read, and chunks kept
  // because the body wrote other rows of the slot only.
  long bo_chunks_hashed = 0;
  long bo_chunks_kept = 0;
};

struct RunOptions {
  bool no_reuse = true;  // false: reuse engine only (the benchmark's reference run)
  // canary-probe intermediate slots (latent bugs): each bo_key's first `probe_calls_per_key`
  // calls and every later call whose probe outcome could differ (another body or shapes,
  // kernel params, placements or kinds of host data); with `probe_every_call`, every call.
  bool probe = false;
  bool probe_every_call = false;
  // classify: canary-probe every slot, one at a time, on the first `probe_calls_per_key`
  // calls of each bo_key.
  bool probe_all = false;
  int probe_calls_per_key = 2;
  bool timings = false;  // keep measured times in the trace's figures
  // The no-reuse engine takes the reuse engine's results instead of running a call whose
  // kernel reads the same bytes (by hash) in both engines (runner.cpp,
  // can_take_reuse_results). The trace and every report are byte-identical either way
  // (tests/runner/shadow_skip_test.cpp); false runs every call on both engines. A run with
  // `timings` takes no shadow shortcut: its no-reuse engine times are those of real calls.
  // Also: probes whose outcome the body's access analysis fixes are not run (runner.cpp,
  // known_probe).
  bool shadow_skip = true;
  // A var's host hash re-reads only the 64 KiB chunks written since it was last hashed
  // (VarStore::hash): a KV cache is not re-hashed whole on every call; and a reuse BO's hash
  // after a dispatch re-reads only the chunks of the rows the body wrote. The trace and every
  // report are byte-identical either way (tests/runner/var_hash_test.cpp); false hashes
  // every var and BO whole, every time.
  bool chunk_hashes = true;
  RunStats* stats = nullptr;  // filled in when set
  // Called before each step and once at the end with (steps done, steps in all): the CLI's
  // progress line and its --timeout (which throws FatalError to stop the run).
  std::function<void(size_t, size_t)> progress;
};

// The plan alone as a Trace: every call's identity, host arrays (no hashes), placements and
// body access facts, with capabilities.run false. What lint's checks read.
Trace plan_trace(const Plan& plan, const std::string& model_path);
// Its two parts, for the runner: the header with one empty record per call, and one call's
// identity, filled in when the call runs (while its record is in cache).
Trace plan_trace_header(const Plan& plan, const std::string& model_path);
void fill_call_identity(const PlanCall& c, TraceCall& t);

// Runs the plan and returns its Trace (plan_trace plus everything observed). Throws
// FatalError on a backend failure (exit 3).
Trace run_plan(const Plan& plan, const std::string& model_path, const HostData& data,
               Backend& backend, const RunOptions& opt = {});

}  // namespace bod
