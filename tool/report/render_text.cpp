// Text report: compiler-style diagnostics, the per-key first/later table, engine figures and
// the end-to-end verification.
#include <cstdio>
#include <sstream>

#include "core/hash.h"
#include "report/report.h"

namespace bod {

namespace {
std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

void finding(std::ostringstream& o, const Report& r, const Finding& f) {
  // "model.json:/json/pointer", or a recorded call's own "file.py:42" when there is no model.
  o << r.model_path;
  if (!f.path.empty()) o << (r.model_path.empty() ? "" : ":") << f.path;
  o << ": " << severity_name(f.severity) << "[" << f.check << "]";
  if (f.latent) o << " (latent)";
  o << ": " << f.message << "\n";
  if (f.call) {
    o << "    at call " << f.call << " (" << f.phase;
    if (f.token >= 0) o << " t=" << f.token;
    if (f.layer >= 0) o << " l=" << f.layer;
    o << ") kernel " << f.kernel << ", bo_key '" << f.bo_key << "'";
    if (f.slot >= 0) o << ", slot " << f.slot << " (" << f.slot_name << ")";
    o << "\n";
    if (f.key_first_call)
      o << "    " << (f.first_call_of_key ? "first call of its bo_key"
                                         : "later call; first call of the key was " +
                                               std::to_string(f.key_first_call))
        << "\n";
  }
  if (f.occurrences > 1)
    o << "    seen on " << f.occurrences << " calls (last: call " << f.last_call << ")\n";
  for (auto& [k, v] : f.evidence) o << "    " << k << ": " << v << "\n";
  o << "    fix: " << f.fix << "\n";
}
}  // namespace

std::string render_text(const Report& r) {
  std::ostringstream o;
  int counts[3] = {0, 0, 0};
  for (auto& f : r.findings) {
    finding(o, r, f);
    counts[static_cast<int>(f.severity)]++;
  }
  if (!r.gaps.empty()) {
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
    if (no_reuse)
      o << "  to get no_reuse: record with shadow runs (bo-doctor record --shadow -- ...), or "
           "run bo-doctor check on a model.json\n";
    if (bodies)
      o << "  to get access, byte_diffs, probe: they need the kernels' reference bodies: "
           "bo-doctor skeleton TRACE > model.json, fill in the bodies, bo-doctor check "
           "model.json --probe\n";
  }
  if (r.ran) {
    const Trace& run = *r.trace;
    o << "\nbo_key first call vs later calls (backend " << run.header.backend
      << (run.header.host_emulated ? ", host-emulated kernels" : ", NPU") << "):\n";
    o << "  bo_key                         first  calls  first-diverged  later-diverged  "
         "min-cos(first)  min-cos(later)  NaN(later)\n";
    for (auto& k : r.keys) {
      char line[256];
      std::snprintf(line, sizeof line, "  %-30s %5d  %5d  %14d  %14d  %14.6f  %14.6f  %10lld\n",
                    k.bo_key.c_str(), k.first_call, k.calls, k.first_diverged, k.later_diverged,
                    k.first_min_cosine, k.later_min_cosine, k.later_nan);
      o << line;
    }
    auto per = [&](const EngineFigures& e) {
      return e.calls ? static_cast<double>(e.h2d_bytes) / static_cast<double>(e.calls) : 0.0;
    };
    o << "\nengine figures            with reuse      without reuse\n";
    o << "  host->device bytes    " << fmt("%14.0f", double(run.reuse.h2d_bytes))
      << fmt("     %14.0f\n", double(run.noreuse.h2d_bytes));
    o << "  bytes per call        " << fmt("%14.0f", per(run.reuse))
      << fmt("     %14.0f\n", per(run.noreuse));
    o << "  BO writes             " << fmt("%14.0f", double(run.reuse.writes))
      << fmt("     %14.0f\n", double(run.noreuse.writes));
    if (r.timings) {
      auto t = [&](const char* name, double a, double b) {
        o << "  " << name << fmt("%14.2f ms", a * 1e3) << fmt("  %14.2f ms\n", b * 1e3);
      };
      t("write time          ", run.reuse.write_s, run.noreuse.write_s);
      t("dispatch time       ", run.reuse.dispatch_s, run.noreuse.dispatch_s);
      t("read time           ", run.reuse.read_s, run.noreuse.read_s);
      t("engine wall time    ", run.reuse.wall_s(), run.noreuse.wall_s());
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
  o << "\n" << r.command << " " << r.subject << ": " << counts[2] << " error(s), " << counts[1]
    << " warning(s), " << counts[0] << " note(s)";
  if (r.trace) o << ", " << r.trace->calls.size() << " calls";
  o << " -> " << (r.has_error() ? "FAIL" : "PASS") << "\n";
  return o.str();
}

}  // namespace bod
