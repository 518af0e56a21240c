// The result tree of a lint, check or analyze run, and its renderers. One tree, several
// formats: text (compiler-style diagnostics), JSON (for CI gates), markdown (the reuse block
// for a model's development notes). Built from a Trace by build_report.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "analysis/summary.h"
#include "checks/registry.h"
#include "core/result.h"
#include "report/gate.h"
#include "report/json_locate.h"
#include "trace/trace.h"

namespace bod {

inline constexpr int kReportSchemaVersion = 3;  // 3: gate (status, fingerprint, groups); 2: not_run

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
  // With probes: calls probed, of the calls that have intermediate slots to probe.
  int probed_calls = 0, probe_candidates = 0;
  GateOptions gate;                // what fails the run, what is known or suppressed
  std::vector<FindingGroup> groups;  // findings sharing a cause (apply_gate)
  // Line and column in model.json of the JSON pointers findings name (set by the command
  // when the model file is at hand; empty for a trace without one).
  std::map<std::string, TextPos> positions;
  // A new finding at or above --fail-on: exit 1 and verdict "fail".
  bool fails() const;
  std::string verdict() const { return fails() ? "fail" : "pass"; }
  // "model.json:12:9" for a finding's pointer when its position is known, else
  // "model.json:/program/..." (or the recorded "file.py:42").
  std::string location(const std::string& pointer) const;
  // The earliest new error tied to a call (a diverging one before a latent one on the same
  // call), or null: the "first error" line of the text and HTML reports.
  const Finding* first_error() const;
};

// Runs every check and analysis on `t` and assembles the report. The trace must outlive it.
Report build_report(const std::string& command, const Trace& t, bool timings,
                    const std::string& subject = "");

// Applies the gate to a built report: check selection, fingerprints, baseline and
// suppressions (an unused one becomes a note), groups. Exit 2 for an unknown check id in a
// suppression.
Status apply_gate(Report& r, const GateOptions& g);

// The --write-baseline file for this report's findings (suppressed ones left out).
std::string render_baseline(const Report& r);

std::string render_text(const Report& r);
std::string render_json(const Report& r);
std::string render_markdown(const Report& r);
// SARIF 2.1.0 for code scanning, JUnit XML for test-result tabs, one self-contained HTML page
// for the triage desk (docs/report-format.md).
std::string render_sarif(const Report& r);
std::string render_junit(const Report& r);
std::string render_html(const Report& r);

}  // namespace bod
