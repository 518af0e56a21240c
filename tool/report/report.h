// The result tree of a lint, check or analyze run, and its renderers. One tree, six formats
// (report/formats.h): text (compiler-style diagnostics), JSON (for CI gates), markdown (the
// reuse block for a model's development notes), SARIF, JUnit and HTML. Built from a Trace by
// build_report, then gated once by apply_gate; renderers read the tree, and the trace only for
// per-call detail (the HTML map, JUnit's per-key cases, SARIF's related locations).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "analysis/summary.h"
#include "analysis/xrt_reuse.h"
#include "checks/registry.h"
#include "core/result.h"
#include "report/gate.h"
#include "report/json_locate.h"
#include "trace/trace.h"

namespace bod {

inline constexpr int kReportSchemaVersion = 3;  // 3: gate (status, fingerprint, groups); 2: not_run

// Active (new) findings by severity, and the ones the gate accepted: every format's summary.
struct FindingCounts {
  int errors = 0, warnings = 0, notes = 0;
  int known = 0, suppressed = 0;
};

// A call as the first-bad-call lines name it.
struct CallRef {
  int number = 0;     // 0: none
  std::string where;  // "decode t=3 l=1" (TraceCall::where)
  std::string kernel;
};

// The run's backend and engine figures, as the trace recorded them.
struct RunFigures {
  std::string backend;
  bool host_emulated = true, npu_launched = false;
  EngineFigures reuse, noreuse;
  double wall_s = 0;
};

// How much of the trace's evidence the checks had: every format states it beside the verdict,
// so a PASS never hides what was not checked.
struct Coverage {
  int checks = 0;        // in the registry
  int ran = 0;           // fed fully by the trace
  bool no_reuse = true;  // compared with a no-reuse engine (check, record --shadow)
  bool finished = true;  // the run reached its end (the trace has its "end" line)
  // A recording's missing stretches (the trace's "gap" lines), one phrase each: "process 0:
  // the recorder stopped after call 57 (TypeError: ...)".
  std::vector<std::string> recording_gaps;
  std::vector<std::string> need_no_reuse;  // checks not (fully) run for want of no_reuse
  // A recording with shadow runs (record --shadow): the calls that ran on the no-reuse engine,
  // of `calls`; -1 for any other trace. Every format states it ("shadowed N of M calls").
  long shadowed = -1, calls = 0;
  // Nothing to say: every check's evidence was there, the run finished.
  bool complete() const {
    return no_reuse && finished && ran == checks && shadowed < 0 && recording_gaps.empty();
  }
  // "shadowed N of M calls; the other K each like an earlier call of the same kind" ("" when
  // not a recording with shadow runs).
  std::string shadow_note() const;
  // "no no-reuse run: 6 of 13 checks ran; static-clobber, ... need record --shadow", and/or
  // "the run stopped early", "recording incomplete: ..."; "" when there is nothing to add
  // beside the verdict.
  std::string note() const;
};

struct Report {
  std::string command;     // "lint" | "check" | "analyze"
  std::string model_path;  // the file findings point into ("" when their paths stand alone)
  std::string subject;     // what the run read: the model, or for analyze the trace file
  std::string model_name;
  std::vector<Finding> findings;
  const Trace* trace = nullptr;  // per-call detail only; never null in a built report
  size_t calls = 0;              // calls in the trace
  // analyze of a trace without a single call: nothing was checked, so it fails ("no calls
  // recorded": a program that never reached the engine, or a recorder that did not start).
  bool no_calls = false;
  bool ran = false;  // the trace holds a run: key table, figures
  // The engines' figures (h2d bytes, BO writes): a run of the reuse engine. A recording at the
  // XRT boundary with shadow runs (record --xrt --shadow) has the key table and none.
  bool engine_figures = false;
  bool verified = false;  // ... and the end-to-end comparison
  bool probed = false;    // ... and probe runs: probe coverage
  std::vector<KeyRow> keys;
  // A recording at the XRT boundary: per kernel, which BO arguments are re-sent and which stay
  // resident, first run vs later runs, with advice (text and JSON show it).
  std::vector<XrtKernelReuse> xrt_reuse;
  RunFigures run;  // when ran
  Verification verify;
  // Checks the trace could not (fully) feed. Text and JSON list them except for lint (a plan
  // feeds no run checks: lists_gaps); JUnit marks them skipped.
  std::vector<CoverageGap> gaps;
  bool timings = false;  // include measured times (not byte-identical across runs)
  // With probes: calls probed, of the calls that have intermediate slots to probe.
  int probed_calls = 0, probe_candidates = 0;
  // Call sites (distinct call paths) declaring static / intermediate indices (markdown's B1/B2).
  size_t static_sites = 0, intermediate_sites = 0;
  // The first call whose outputs differ between the engines (a trace with no_reuse).
  CallRef first_divergence;
  Coverage coverage;  // when ran
  // Set by apply_gate, from the findings' statuses:
  GateOptions gate;                  // what fails the run, what is known or suppressed
  std::vector<FindingGroup> groups;  // findings sharing a cause
  FindingCounts counts;
  // The earliest new error tied to a call (on one call: a real one before a latent one, a
  // cause before its symptom, output-divergence): its index in findings (-1: none) and where
  // its call is (TraceCall::where).
  long first_error_index = -1;
  std::string first_error_where;
  // Line and column in model.json of the JSON pointers findings name (set by the command
  // when the model file is at hand; empty for a trace without one).
  std::map<std::string, TextPos> positions;
  // Kernels whose bodies are still stubs (a skeleton's `fill` bodies, which read no input): every
  // format says so once at the top; body-dependent optimisation notes on their calls are left
  // out (set by leave_out_stub_notes, before the gate).
  std::vector<std::string> stub_kernels;
  int stub_notes_left_out = 0;
  // A new finding at or above --fail-on: exit 1 and verdict "fail".
  bool fails() const;
  bool fails(const Finding& f) const;  // this one is such a finding
  std::string verdict() const { return fails() ? "fail" : "pass"; }
  bool lists_gaps() const { return command != "lint"; }
  // "model.json:12:9" for a finding's pointer when its position is known, else
  // "model.json:/program/..." (or the recorded "file.py:42").
  std::string location(const std::string& pointer) const;
  // The "first error" line of the text and HTML reports, or null.
  const Finding* first_error() const {
    return first_error_index < 0 ? nullptr : &findings[static_cast<size_t>(first_error_index)];
  }
};

// Runs every check and analysis on `t` and assembles the report, ungated: the caller applies
// the gate next, exactly once (apply_gate; the renderers need its groups and counts). The
// trace must outlive the report.
Report build_report(const std::string& command, const Trace& t, bool timings,
                    const std::string& subject = "");

// Applies the gate to a built report: check selection, fingerprints, baseline and
// suppressions (an unused one becomes a note), groups, then the counts and the first error.
// Exit 2 for an unknown check id in a suppression.
Status apply_gate(Report& r, const GateOptions& g);

// Names the stub kernels and drops the findings that only a real body could support on their
// calls: missed-static and missed-intermediate (what the stub writes, or leaves zero, says nothing
// of what the kernel needs). Call before apply_gate.
void leave_out_stub_notes(Report& r, const std::vector<std::string>& stub_kernels);

// "2 kernel(s) still have stub bodies (...)...": the line every format shows at the top; "" when
// none.
std::string stub_line(const Report& r);

// The counts and the first error from the findings' statuses (apply_gate ends with it).
void count_findings(Report& r);

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
