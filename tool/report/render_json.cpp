// JSON report, schema_version kReportSchemaVersion (docs/report-format.md). Key order is fixed
// and no measured time is included unless --timings, so the same model and seed give
// byte-identical output.
#include <cmath>
#include <nlohmann/json.hpp>

#include "report/report.h"

namespace bod {

namespace {
using J = nlohmann::ordered_json;

double finite(double v) {
  return std::isfinite(v) ? v : -1;
}

J finding_json(const Finding& f) {
  J e = J::object();
  for (auto& [k, v] : f.evidence) e[k] = v;
  return J{{"check", f.check},
           {"severity", severity_name(f.severity)},
           {"call", f.call},
           {"phase", f.phase},
           {"token", f.token},
           {"layer", f.layer},
           {"kernel", f.kernel},
           {"bo_key", f.bo_key},
           {"ns", f.ns},
           {"slot", f.slot},
           {"slot_name", f.slot_name},
           {"first_call_of_key", f.first_call_of_key},
           {"key_first_call", f.key_first_call},
           {"latent", f.latent},
           {"occurrences", f.occurrences},
           {"last_call", f.last_call},
           {"calls", f.calls},
           {"message", f.message},
           {"evidence", e},
           {"fix", f.fix},
           {"path", f.path},
           {"fingerprint", f.fingerprint},
           {"status", finding_status_name(f.status)},
           {"status_reason", f.status_reason}};
}

J engine_json(const EngineFigures& e, bool timings) {
  J j{{"calls", e.calls}, {"h2d_bytes", e.h2d_bytes}, {"bo_writes", e.writes}};
  if (timings)
    j["seconds"] = {{"write", e.write_s},
                    {"dispatch", e.dispatch_s},
                    {"read", e.read_s},
                    {"wall", e.wall_s()},
                    {"steady_call_median", e.steady_median_s},
                    {"steady_calls", e.steady_calls},
                    {"first_calls", e.first_calls_s}};
  return j;
}
}  // namespace

std::string render_json(const Report& r) {
  J findings = J::array();
  for (auto& f : r.findings) {
    findings.push_back(finding_json(f));
    auto pos = r.positions.find(f.path);
    if (pos != r.positions.end())
      findings.back()["line"] = pos->second.line, findings.back()["column"] = pos->second.col;
  }
  J groups = J::array();
  for (auto& g : r.groups)
    groups.push_back({{"check", r.findings[g.lead].check},
                      {"severity", severity_name(g.severity)},
                      {"status", finding_status_name(g.status)},
                      {"lead", g.lead},
                      {"findings", g.members},
                      {"slots", g.slots},
                      {"bo_keys", g.bo_keys},
                      {"calls", g.calls},
                      {"occurrences", g.occurrences},
                      {"fingerprint", g.fingerprint}});
  J j;
  j["schema_version"] = kReportSchemaVersion;
  j["tool"] = {{"name", "bo-doctor"}, {"version", BOD_VERSION}};
  j["command"] = r.command;
  j["model"] = {{"name", r.model_name}, {"path", r.model_path}};
  if (r.command == "analyze") j["trace"] = r.subject;
  if (!r.stub_kernels.empty())
    j["stub_bodies"] = {{"kernels", r.stub_kernels},
                        {"notes_left_out", r.stub_notes_left_out},
                        {"message", stub_line(r)}};
  j["summary"] = {{"verdict", r.verdict()},
                  {"errors", r.counts.errors},
                  {"warnings", r.counts.warnings},
                  {"notes", r.counts.notes},
                  {"known", r.counts.known},
                  {"suppressed", r.counts.suppressed},
                  {"groups", r.groups.size()},
                  {"fail_on", fail_on_name(r.gate.fail_on)},
                  {"calls", r.calls}};
  if (r.no_calls) j["summary"]["reason"] = "no calls recorded";
  j["findings"] = findings;
  j["groups"] = groups;
  if (r.lists_gaps()) {
    J gaps = J::array();
    for (auto& g : r.gaps)
      gaps.push_back(
          {{"check", g.check}, {"ran", g.partly ? "partly" : "no"}, {"missing", g.missing}});
    j["not_run"] = gaps;
  }
  if (r.probed)
    j["probe_coverage"] = {{"probed_calls", r.probed_calls},
                           {"calls_with_intermediates", r.probe_candidates}};
  if (!r.xrt_reuse.empty()) {
    J kernels = J::array();
    for (auto& k : r.xrt_reuse) {
      J args = J::array();
      for (auto& a : k.args)
        args.push_back({{"slot", a.slot},
                        {"name", a.name},
                        {"role", a.role},
                        {"bytes", a.bytes},
                        {"first_run_sent_bytes", a.first_sent},
                        {"later_runs", a.later_runs},
                        {"later_resent", a.later_resent},
                        {"later_sent_bytes", a.later_sent_bytes},
                        {"later_new_values", a.later_new},
                        {"resident_changed", a.resident_changed},
                        {"first_resident_changed_run", a.first_resident_changed},
                        {"read_back_runs", a.read_back},
                        {"advice", a.advice},
                        {"corrupts", a.corrupts}});
      kernels.push_back({{"kernel", k.kernel},
                         {"ns", k.ns},
                         {"runs", k.runs},
                         {"first_run", k.first_run},
                         {"args", args}});
    }
    j["xrt_reuse"] = kernels;
  }
  if (r.ran) {
    const RunFigures& run = r.run;
    j["backend"] = {{"name", run.backend},
                    {"host_emulated", run.host_emulated},
                    {"npu_launched", run.npu_launched}};
    J keys = J::array();
    for (auto& k : r.keys)
      if (!r.coverage.no_reuse)  // divergence was not measured: not 0, not cosine 1
        keys.push_back({{"bo_key", k.bo_key},
                        {"ns", k.ns},
                        {"kernel", k.kernel},
                        {"first_call", k.first_call},
                        {"calls", k.calls},
                        {"divergence", "not measured (needs no_reuse: record --shadow)"}});
      else
        keys.push_back({{"bo_key", k.bo_key},
                        {"ns", k.ns},
                        {"kernel", k.kernel},
                        {"first_call", k.first_call},
                        {"calls", k.calls},
                        {"first_call_diverged", k.first_diverged > 0},
                        {"later_calls_diverged", k.later_diverged},
                        {"first_bad_later_call", k.first_bad_later_call},
                        {"first_min_cosine", finite(k.first_min_cosine)},
                        {"later_min_cosine", finite(k.later_min_cosine)},
                        {"later_nan_inf", k.later_nan}});
    if (r.coverage.shadowed >= 0)  // a recording: the calls each key had compared
      for (size_t i = 0; i < r.keys.size(); ++i) keys[i]["shadowed_calls"] = r.keys[i].shadowed;
    j["keys"] = keys;
    if (r.engine_figures) {
      j["figures"] = {{"reuse", engine_json(run.reuse, r.timings)}};
      if (r.coverage.no_reuse) j["figures"]["no_reuse"] = engine_json(run.noreuse, r.timings);
    }
    if (!r.coverage.complete())
      j["coverage"] = {{"checks", r.coverage.checks},
                       {"ran", r.coverage.ran},
                       {"no_reuse", r.coverage.no_reuse},
                       {"finished", r.coverage.finished},
                       {"need_no_reuse", r.coverage.need_no_reuse},
                       {"recording_gaps", r.coverage.recording_gaps},
                       {"note", r.coverage.note()}};
    if (r.coverage.shadowed >= 0) {
      j["coverage"]["shadowed_calls"] = r.coverage.shadowed;
      j["coverage"]["calls"] = r.coverage.calls;
    }
    if (r.timings) j["wall_seconds"] = run.wall_s;
  }
  if (r.verified) {
    const Verification& v = r.verify;
    J outs = J::array();
    for (auto& o : v.outputs)
      outs.push_back({{"var", o.var},
                      {"cosine", finite(o.cosine)},
                      {"min_cosine", o.min_cosine},
                      {"max_abs", finite(o.max_abs)},
                      {"max_rel", finite(o.max_rel)},
                      {"nan_inf_reuse", o.nan_reuse},
                      {"nan_inf_no_reuse", o.nan_noreuse},
                      {"pass", o.pass}});
    j["verification"] = {{"result", v.pass ? "PASS" : "FAIL"},
                         {"outputs", outs},
                         {"tokens_reuse", v.tokens_reuse},
                         {"tokens_no_reuse", v.tokens_noreuse},
                         {"first_token_divergence", v.first_token_divergence},
                         {"top_k", v.top_k},
                         {"top_k_agree", v.topk_agree},
                         {"no_reuse_extra_calls", v.noreuse_extra_calls}};
  }
  return j.dump(2) + "\n";
}

}  // namespace bod
