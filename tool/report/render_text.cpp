// Text report: compiler-style diagnostics, the per-key first/later table, engine figures and
// the end-to-end verification.
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "core/hash.h"
#include "core/printable.h"
#include "core/saturate.h"
#include "core/suggest.h"
#include "report/report.h"

namespace bod {

namespace {
// Text from the input (names, keys, paths, messages), one line, safe on a terminal.
std::string P(const std::string& s) {
  return printable(s);
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// One group of findings: the lead finding in full, the rest as the slots, keys and calls
// they add.
void group(std::ostringstream& o, const Report& r, const FindingGroup& g) {
  const Finding& f = r.findings[g.lead];
  o << P(r.location(f.path)) << ": " << severity_name(g.severity) << "[" << f.check << "]";
  if (f.latent) o << " (latent)";
  if (g.status != FindingStatus::active) o << " (" << finding_status_name(g.status) << ")";
  o << ": " << P(f.message) << "\n";
  if (f.call) {
    o << "    at call " << f.call << " (" << P(f.phase);
    if (f.token >= 0) o << " t=" << f.token;
    if (f.layer >= 0) o << " l=" << f.layer;
    o << ") kernel " << P(f.kernel) << ", bo_key '" << P(f.bo_key) << "'";
    if (!f.ns.empty()) o << " of cache '" << P(f.ns) << "'";
    if (f.slot >= 0) o << ", slot " << f.slot << " (" << P(f.slot_name) << ")";
    o << "\n";
    if (f.key_first_call)
      o << "    "
        << (f.first_call_of_key
                ? "first call of its bo_key"
                : "later call; first call of the key was " + std::to_string(f.key_first_call))
        << "\n";
  }
  if (g.members.size() > 1) {
    std::vector<std::string> calls;
    for (int c : g.calls) calls.push_back(std::to_string(c));
    o << "    one cause, " << g.members.size() << " findings: ";
    if (g.slots.size() > 1) o << g.slots.size() << " slots " << P(name_list(g.slots, 8)) << "; ";
    if (g.bo_keys.size() > 1)
      o << g.bo_keys.size() << " bo_keys " << P(name_list(g.bo_keys, 4)) << "; ";
    o << "first seen at call" << (calls.size() > 1 ? "s " : " ") << name_list(calls, 8) << " ("
      << g.occurrences << " occurrences)\n";
  } else if (f.occurrences > 1) {
    o << "    seen on " << f.occurrences << " calls (last: call " << f.last_call << ")\n";
  }
  if (f.status == FindingStatus::known)
    o << "    known: in the baseline (fingerprint " << f.fingerprint << ")\n";
  if (f.status == FindingStatus::suppressed) o << "    suppressed: " << P(f.status_reason) << "\n";
  for (auto& [k, v] : f.evidence) o << "    " << P(k) << ": " << P(v) << "\n";
  o << "    fix: " << P(f.fix) << "\n";
}

// The first bad call at a glance: the first error finding and the first diverging call.
void first_bad(std::ostringstream& o, const Report& r) {
  const Finding* first = r.first_error();
  const CallRef& d = r.first_divergence;
  auto at = [](const std::string& where) { return where.empty() ? "" : P(where) + ", "; };
  if (d.number)
    o << "first divergence: call " << d.number << ", " << at(d.where) << P(d.kernel) << "\n";
  if (first) {
    o << "first error: call " << first->call << ", " << at(r.first_error_where) << P(first->kernel);
    if (first->slot >= 0) o << " slot " << first->slot << " (" << P(first->slot_name) << ")";
    o << " -- " << first->check << "\n";
  }
  if (d.number || first) o << "\n";
}
}  // namespace

std::string render_text(const Report& r) {
  std::ostringstream o;
  if (!r.stub_kernels.empty())
    o << "note: " << stub_line(r) << "\n"
      << (r.first_error() || r.first_divergence.number || !r.groups.empty() ? "\n" : "");
  first_bad(o, r);
  size_t shown = 0, hidden_findings = 0;
  for (auto& g : r.groups) {
    if (r.gate.print_limit && shown >= r.gate.print_limit) {
      hidden_findings += g.members.size();
      continue;
    }
    group(o, r, g);
    ++shown;
  }
  if (shown < r.groups.size())
    o << "... " << r.groups.size() - shown << " more finding group(s) (" << hidden_findings
      << " findings) not shown; --print-limit 0 shows all, --format json lists every finding\n";
  if (r.lists_gaps() && !r.gaps.empty()) {
    o << "\nchecks this trace could not feed:\n";
    for (auto& g : r.gaps)
      o << "  " << g.check << ": " << (g.partly ? "only its declaration part ran" : "not run")
        << "; needs " << g.missing << "\n";
    // How to get what was missing, once per kind (a trace given to analyze).
    bool no_reuse = false, bodies = false;
    for (auto& g : r.gaps) {
      no_reuse = no_reuse || g.missing.find("no_reuse") != std::string::npos;
      bodies = bodies || g.missing.find("access") != std::string::npos ||
               g.missing.find("byte_diffs") != std::string::npos ||
               g.missing.find("probe") != std::string::npos;
    }
    if (r.command != "analyze") no_reuse = bodies = false;
    bool xrt = r.trace && r.trace->header.caps.xrt;
    if (no_reuse && xrt)  // hand-managed: only the pyxrt wrapper compares its shadow runs
      o << "  to get no_reuse: bo-doctor record --xrt --shadow -- python3 ... (a Python program "
           "on a pure-Python pyxrt; the preload library's shadow runs compare nothing)\n";
    else if (no_reuse)
      o << "  to get no_reuse: record with shadow runs (bo-doctor record --shadow -- ...), or "
           "run bo-doctor check on a model.json\n";
    if (bodies)
      o << "  to get access, byte_diffs, probe: they need the kernels' reference bodies: "
           "bo-doctor skeleton TRACE > model.json, fill in the bodies, bo-doctor check "
           "model.json --probe\n";
  }
  if (r.probed)
    o << "\nprobe coverage: probed " << r.probed_calls << " of " << r.probe_candidates
      << " calls with intermediate slots\n";
  if (r.ran) {
    const RunFigures& run = r.run;
    // The device as the trace states it: "NPU" only when it says an NPU ran the kernels.
    o << "\nbo_key first call vs later calls (backend " << run.backend
      << (run.host_emulated  ? ", host-emulated kernels"
          : run.npu_launched ? ", NPU"
                             : ", device not recorded")
      << "):\n";
    if (!r.coverage.no_reuse) {  // nothing was compared: no figure that nobody measured
      o << "  bo_key                         first  calls  divergence\n";
      for (auto& k : r.keys) {
        char line[256];
        std::snprintf(line, sizeof line, "  %-30s %5d  %5d  needs --shadow\n",
                      key_label(k.ns, k.bo_key).c_str(), k.first_call, k.calls);
        o << line;
      }
    }
    // A selective shadow: the calls compared, per key (the divergence columns count only them).
    bool partial = r.coverage.shadowed >= 0 && r.coverage.shadowed < r.coverage.calls;
    if (r.coverage.no_reuse)
      o << "  bo_key                         first  calls  first-diverged  later-diverged  "
           "min-cos(first)  min-cos(later)  NaN(later)"
        << (partial ? "  shadowed" : "") << "\n";
    for (auto& k : r.coverage.no_reuse ? r.keys : std::vector<KeyRow>{}) {
      char line[256];
      std::snprintf(line, sizeof line, "  %-30s %5d  %5d  %14d  %14d  %14.6f  %14.6f  %10s",
                    P(key_label(k.ns, k.bo_key)).c_str(), k.first_call, k.calls, k.first_diverged,
                    k.later_diverged, k.first_min_cosine, k.later_min_cosine,
                    count_text(k.later_nan).c_str());
      o << line;
      if (partial) o << "  " << std::setw(8) << k.shadowed;
      o << "\n";
    }
    if (r.engine_figures) {  // an XRT recording's shadow runs have no reuse engine figures
      auto per = [&](const EngineFigures& e) {
        return e.calls ? static_cast<double>(e.h2d_bytes) / static_cast<double>(e.calls) : 0.0;
      };
      // Without a no-reuse engine there is no second column: not 0, not a copy of the first.
      bool both = r.coverage.no_reuse;
      auto row = [&](const char* name, double a, double b) {
        o << name << fmt("%14.0f", a) << (both ? fmt("     %14.0f", b) : std::string()) << "\n";
      };
      o << "\nengine figures            with reuse" << (both ? "      without reuse" : "") << "\n";
      row("  host->device bytes    ", double(run.reuse.h2d_bytes), double(run.noreuse.h2d_bytes));
      row("  bytes per call        ", per(run.reuse), per(run.noreuse));
      row("  BO writes             ", double(run.reuse.writes), double(run.noreuse.writes));
      if (r.timings) {
        auto t = [&](const char* name, double a, double b) {
          o << "  " << name << fmt("%14.2f ms", a * 1e3) << fmt("  %14.2f ms\n", b * 1e3);
        };
        t("write time          ", run.reuse.write_s, run.noreuse.write_s);
        t("dispatch time       ", run.reuse.dispatch_s, run.noreuse.dispatch_s);
        t("read time           ", run.reuse.read_s, run.noreuse.read_s);
        t("engine wall time    ", run.reuse.wall_s(), run.noreuse.wall_s());
        t("steady call median  ", run.reuse.steady_median_s, run.noreuse.steady_median_s);
        t("first calls of keys ", run.reuse.first_calls_s, run.noreuse.first_calls_s);
      }
    }
  }
  if (!r.xrt_reuse.empty()) {
    // The per-kernel reuse view of a recording at the XRT boundary (analysis/xrt_reuse.h).
    o << "\nper-kernel BO reuse (recorded at the XRT boundary): first run vs later runs\n";
    for (auto& k : r.xrt_reuse) {
      o << "  " << (k.ns.empty() ? "" : k.ns + "/") << k.kernel << "  (" << k.runs
        << " runs, first run " << k.first_run << ")\n";
      o << "    arg          bytes  first run        later runs                   role\n";
      for (auto& a : k.args) {
        if (!a.is_bo) continue;
        std::string first = xrt_first_run_text(a), later = xrt_later_runs_text(a);
        char line[256];
        std::snprintf(line, sizeof line, "    %-10s %7llu  %-16s %-28s %s\n", P(a.name).c_str(),
                      static_cast<unsigned long long>(a.bytes), first.c_str(), later.c_str(),
                      a.role.c_str());
        o << line;
      }
      for (auto& a : k.args)
        if (!a.advice.empty())
          o << "      " << P(a.name) << ": " << a.advice
            << (a.corrupts ? " [corrupts results]" : "") << "\n";
    }
  }
  if (r.verified) {
    const Verification& v = r.verify;
    o << "\nend-to-end verification (reuse vs no-reuse dataflow): " << (v.pass ? "PASS" : "FAIL")
      << "\n";
    for (auto& oc : v.outputs)
      o << "  " << oc.var << ": cosine " << fmt("%.6f", oc.cosine) << " (min "
        << fmt("%.2f", oc.min_cosine) << "), max_abs " << fmt("%.4g", oc.max_abs) << ", max_rel "
        << fmt("%.4g", oc.max_rel) << ", NaN/Inf " << oc.nan_reuse << " vs " << oc.nan_noreuse
        << (oc.pass ? "" : "  FAIL") << "\n";
    o << "  greedy tokens: " << v.tokens_reuse.size() << " generated, ";
    auto at = static_cast<size_t>(v.first_token_divergence);
    if (v.first_token_divergence < 0) {
      o << "identical\n";
    } else if (at >= v.tokens_reuse.size() || at >= v.tokens_noreuse.size()) {
      o << "the no-reuse dataflow generated " << v.tokens_noreuse.size() << "\n";
    } else {
      o << "first divergence at token " << v.first_token_divergence << " (reuse "
        << v.tokens_reuse[static_cast<size_t>(v.first_token_divergence)] << " vs no-reuse "
        << v.tokens_noreuse[static_cast<size_t>(v.first_token_divergence)] << "), "
        << (v.topk_agree ? "within" : "NOT within") << " the no-reuse top-" << v.top_k << "\n";
    }
    if (v.noreuse_extra_calls)
      o << "  the no-reuse dataflow ran " << v.noreuse_extra_calls
        << " calls of its own after the dataflows split\n";
  }
  const FindingCounts& n = r.counts;
  o << "\nbo-doctor " << r.command << " " << r.subject << ": " << n.errors << " error(s), "
    << n.warnings << " warning(s), " << n.notes << " note(s)";
  if (r.groups.size() < r.findings.size()) o << " in " << r.groups.size() << " group(s)";
  if (n.known) o << ", " << n.known << " known (baseline)";
  if (n.suppressed) o << ", " << n.suppressed << " suppressed";
  o << ", " << r.calls << " calls";
  if (r.gate.fail_on != FailOn::error) o << ", fail-on " << fail_on_name(r.gate.fail_on);
  o << " -> " << (r.fails() ? "FAIL" : "PASS");
  if (r.no_calls) o << " (no calls recorded)";
  if (r.ran && !r.coverage.note().empty()) o << " (" << r.coverage.note() << ")";
  o << "\n";
  // Every line printable, whatever a field above was not escaped for (a terminal gets no
  // control character from the input).
  return printable_lines(o.str());
}

}  // namespace bod
