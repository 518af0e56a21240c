// The result tree of a lint, check or analyze run, and its renderers. One tree, several
// formats: text (compiler-style diagnostics), JSON (for CI gates), markdown (the reuse block
// for a model's development notes). Built from a Trace by build_report.
#pragma once
#include <string>
#include <vector>

#include "analysis/summary.h"
#include "checks/registry.h"
#include "core/result.h"
#include "trace/trace.h"

namespace bod {

inline constexpr int kReportSchemaVersion = 2;  // 2: no_reuse names, not_run

struct Report {
  std::string command;     // "lint" | "check" | "analyze"
  std::string model_path;  // the file findings point into ("" when their paths stand alone)
  std::string subject;     // what the run read: the model, or for analyze the trace file
  std::string model_name;
  std::vector<Finding> findings;
  const Trace* trace = nullptr;
  bool ran = false;                // the trace holds a run: key table, figures
  bool verified = false;           // ... and the end-to-end comparison
  std::vector<KeyRow> keys;
  Verification verify;
  std::vector<CoverageGap> gaps;   // checks the trace could not (fully) feed
  bool timings = false;            // include measured times (not byte-identical across runs)
  bool has_error() const;
  std::string verdict() const { return has_error() ? "fail" : "pass"; }
};

// Runs every check and analysis on `t` and assembles the report. The trace must outlive it.
Report build_report(const std::string& command, const Trace& t, bool timings,
                    const std::string& subject = "");

std::string render_text(const Report& r);
std::string render_json(const Report& r);
std::string render_markdown(const Report& r);

// Writes `text` to `path` atomically and durably: a temp file in the target's folder
// (".NAME.tmp.PID"), written, fsynced, renamed over the target, then the folder fsynced.
// "-" (or /dev/stdout) writes to stdout instead. An existing target must be a regular file
// (a symlink, device, directory, FIFO or socket is refused, exit 2) and keeps its permission
// bits. SIGINT/SIGTERM during the write remove the temp file (the process then dies of the
// signal as before).
Status write_atomic(const std::string& path, const std::string& text);

// Tests only: called with the temp path once the temp file exists, before it is written.
extern void (*g_write_atomic_test_hook)(const std::string& tmp);

}  // namespace bod
