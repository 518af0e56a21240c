// The bo-doctor commands as library functions (the executable is a thin main over them), so
// tests can run a command in-process and get its output and exit code.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace bod {

struct CommandOptions {
  std::string model;            // model.json (analyze: the trace file)
  std::string format = "text";  // report_formats() (classify: classify_formats()), any case
  std::string output;           // "" = stdout
  bool force = false;           // -o may replace a file that is not a bo-doctor report
  std::string backend = "cpu";
  int device = 0;
  int timeout_ms = 10000;
  double max_memory_gib = 16;
  bool timings = false;
  bool probe = false;             // check --probe: canary runs of intermediate slots
  bool probe_every_call = false;  // --probe=all: on every call, not only where outcomes can differ
  std::string save_trace;         // check --save-trace FILE
  // The gate (report/gate.h): check selection, failing severity, baseline, text print limit.
  std::vector<std::string> checks, skip_checks;
  std::string fail_on = "error";
  std::string baseline, write_baseline;
  size_t print_limit = 20;
  double timeout_s = 0;   // check, classify: stop the whole run after this long (exit 4); 0 none
  bool progress = false;  // a progress line on stderr (the CLI sets it when stderr is a TTY)
  // analyze: read the model.json a trace names (model.path) for line:column positions; a
  // trace's path is never opened unless asked.
  bool read_model = false;
};

struct CommandResult {
  CommandResult() = default;
  CommandResult(Exit c, std::string o, std::string e)
      : code(c), out(std::move(o)), err(std::move(e)) {}
  Exit code = Exit::ok;
  std::string out;  // the report (already written when options.output was set)
  std::string err;  // one-line error for exit 2/3
  std::string log;  // a summary for stderr that is not an error (record)
};

CommandResult cmd_lint(const CommandOptions& o);
CommandResult cmd_check(const CommandOptions& o);
CommandResult cmd_classify(const CommandOptions& o);
// `o.model` names the trace file.
CommandResult cmd_analyze(const CommandOptions& o);
// `o.model` names the trace file; writes the skeleton model.json (docs/skeleton.md).
CommandResult cmd_skeleton(const CommandOptions& o);
CommandResult cmd_list_checks(const std::string& format);

// The --format values of classify and list-checks (first: the default), from the tables that
// render them; lint, check and analyze take report_formats() (report/formats.h).
std::vector<std::string> classify_formats();
std::vector<std::string> list_checks_formats();
CommandResult cmd_explain(const std::string& id);

// `bo-doctor record`: the program to run under the recorder and where the trace goes.
// An output option (-o, --save-trace) naming the input file `in` is refused before any write.
Status not_input(const std::string& flag, const std::string& out, const std::string& in);
// An existing output file is replaced only when it is empty or a previous bo-doctor output,
// unless `force`: a mistyped -o must not eat a source file.
Status may_replace(const std::string& flag, const std::string& out, bool force);

struct RecordOptions {
  std::vector<std::string> command;  // program and arguments (after --)
  std::string output;                // trace file; default run.trace.jsonl
  bool shadow = false;               // re-run calls on fresh BOs and compare outputs
  std::string shadow_mode;           // "" (no --shadow), "selective" (--shadow) or "all"
  std::string target;                // module:Class.method; default every KernelCache.load_and_run
  std::string labels = "auto";       // auto: label() then heuristics; explicit: label() only
  bool force = false;                // -o may replace a file that is not a bo-doctor output
  bool xrt = false;  // record at the XRT boundary (hand-managed BOs; record_xrt.cpp)
};
// Runs the program with the recorder injected, then writes the trace; exits with the program's
// status (the summary line goes to `err`).
CommandResult cmd_record(const RecordOptions& o);
// `record --xrt`, after cmd_record judged the options and the output: runs the program with
// the XRT preload library and the Python module-level wrapper, then writes the trace of its runs.
// `spawn` runs the program with the given environment additions and returns its exit status.
using SpawnFn = Result<int> (*)(const RecordOptions& o, const std::vector<std::string>& extra_env);
CommandResult cmd_record_xrt(const RecordOptions& o, const std::string& out, SpawnFn spawn);

// libbod_hash.so for the Python recorders (KernelCache and record --xrt's pyxrt wrapper).
std::string record_hash_library();

// Parses argv and runs the command; the whole CLI, minus process concerns.
CommandResult run_cli(int argc, char** argv);

}  // namespace bod
