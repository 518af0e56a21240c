// The reuse block of the seed's update protocol, ready to paste into a model's
// development-progress notes, followed by the findings as a table.
#include <cstdio>
#include <set>
#include <sstream>

#include "core/printable.h"
#include "report/report.h"

namespace bod {

namespace {

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
  return b;
}

// "applied (...)" or "skipped (reason)" for one mechanism; `statics` picks B1 or B2.
std::string mechanism(const Report& r, bool statics) {
  size_t sites = statics ? r.static_sites : r.intermediate_sites;
  std::set<std::string> bad_checks =
      statics ? std::set<std::string>{"stale-static", "key-collision", "static-clobber",
                                      "placeholder-upload"}
              : std::set<std::string>{"intermediate-read", "partial-overwrite"};
  std::string missed = statics ? "missed-static" : "missed-intermediate";
  int errors = 0, notes = 0;
  for (auto& f : r.findings) {
    if (bad_checks.count(f.check) && f.severity == Severity::error) ++errors;
    if (f.check == missed) ++notes;
  }
  std::ostringstream o;
  if (sites == 0) {
    o << "skipped (no call declares " << (statics ? "static_input_indices" : "intermediate_indices")
      << ")";
  } else if (errors) {
    o << "applied but BROKEN (" << errors << " error finding(s) on "
      << (statics ? "static" : "intermediate") << " slots; see below)";
  } else {
    o << "applied (" << sites << " call site(s))";
  }
  if (notes)
    o << "; " << notes << " further opportunit" << (notes == 1 ? "y" : "ies") << " (" << missed
      << ")";
  return o.str();
}

// Text from the input in a table cell: printable, one line, its '|' escaped.
std::string cell(const std::string& s) {
  std::string r;
  for (char c : printable(s)) r += c == '|' ? std::string("\\|") : std::string(1, c);
  return r;
}

// "0.12 ms per call (steady-state median)"; a trace without steady figures gives the total.
std::string per_call(const EngineFigures& e) {
  if (e.steady_calls == 0) return ms(e.wall_s()) + " in all";
  char b[48];
  std::snprintf(b, sizeof b, "%.4f ms", e.steady_median_s * 1e3);  // calls take microseconds
  return std::string(b) + " per call (steady-state median)";
}

}  // namespace

std::string render_markdown(const Report& r) {
  std::ostringstream o;
  o << "## Buffer-object reuse\n";
  if (!r.ran || !r.verified) {
    bool config = false;
    for (auto& f : r.findings) config = config || f.check == "config-error";
    o << (r.command == "lint" ? "- not measured: lint does not run the plan; bo-doctor check "
                                "--format markdown measures it\n"
          : config            ? "- not run: the plan has config errors\n"
                   : "- not measured: the trace holds no run of both engines with an end-to-end "
                     "comparison\n");
  } else {
    const RunFigures& run = r.run;
    double cosine = 1;
    for (auto& v : r.verify.outputs) cosine = std::min(cosine, v.cosine);
    char cs[32];
    std::snprintf(cs, sizeof cs, "%.6f", cosine);
    o << "- B1 weight BOs: " << mechanism(r, true) << "\n"
      << "- B2 intermediate BOs: " << mechanism(r, false) << "\n"
      << "- Host/wall time before: " << per_call(run.noreuse)
      << " (no reuse: " << run.noreuse.h2d_bytes << " bytes host->device, " << run.noreuse.writes
      << " BO writes)\n"
      << "- Host/wall time after:  " << per_call(run.reuse) << " (reuse: " << run.reuse.h2d_bytes
      << " bytes host->device, " << run.reuse.writes << " BO writes)\n"
      << "- First call of each bo_key (BO allocation, first touch), kept apart: "
      << ms(run.noreuse.first_calls_s) << " before, " << ms(run.reuse.first_calls_s) << " after\n"
      << "- Cosine vs baseline: " << cs  // the notes template's fixed label
      << "  | end-to-end verify: " << (r.verify.pass ? "PASS" : "FAIL") << "\n";
    o << "\n_Measured by bo-doctor " << BOD_VERSION << " on the " << run.backend << " backend"
      << (run.host_emulated ? " (host-emulated kernels)" : "") << ", " << r.calls
      << " calls; per-call times are steady-state medians over the calls after each bo_key's "
         "first ("
      << run.reuse.steady_calls << " calls), both engines in the same process._\n";
  }
  if (!r.xrt_reuse.empty()) {
    // The per-kernel reuse view of a recording at the XRT boundary (analysis/xrt_reuse.h).
    o << "\n### Per-kernel BO reuse (recorded at the XRT boundary): first run vs later runs\n"
      << "\n| kernel | arg | bytes | first run | later runs | role | advice |\n"
      << "|---|---|---|---|---|---|---|\n";
    for (auto& k : r.xrt_reuse)
      for (auto& a : k.args) {
        if (!a.is_bo) continue;
        o << "| " << cell((k.ns.empty() ? "" : k.ns + "/") + k.kernel) << " | " << cell(a.name)
          << " | " << a.bytes << " | " << xrt_first_run_text(a) << " | " << xrt_later_runs_text(a)
          << " | " << cell(a.role) << " | "
          << cell(a.advice + (a.corrupts ? " [corrupts results]" : "")) << " |\n";
      }
  }
  if (!r.stub_kernels.empty()) o << "\n> " << stub_line(r) << "\n";
  if (!r.findings.empty()) {
    o << "\n| severity | check | call | kernel | bo_key | slot | message |\n"
      << "|---|---|---|---|---|---|---|\n";
    for (auto& f : r.findings)
      o << "| " << severity_name(f.severity) << (f.latent ? " (latent)" : "") << " | " << f.check
        << " | " << f.call << " | " << cell(f.kernel) << " | " << cell(key_label(f.ns, f.bo_key))
        << " | " << (f.slot >= 0 ? std::to_string(f.slot) + " " + cell(f.slot_name) : "") << " | "
        << cell(f.message) << " |\n";
  }
  o << "\nVerdict: **" << (r.fails() ? "FAIL" : "PASS") << "**"
    << (r.no_calls ? " (no calls recorded)" : "") << "\n";
  if (r.ran && r.coverage.shadowed >= 0)
    o << "\nShadow coverage: " << r.coverage.shadow_note() << "\n";
  return printable_lines(o.str());  // nothing from the input reaches a terminal raw
}

}  // namespace bod
