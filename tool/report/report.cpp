#include "report/report.h"

#include <set>

namespace bod {

bool Report::fails(const Finding& f) const {
  return f.status == FindingStatus::active && gate.fail_on != FailOn::never &&
         static_cast<int>(f.severity) >= static_cast<int>(gate.fail_on);
}

bool Report::fails() const {
  if (no_calls) return true;
  for (auto& f : findings)
    if (fails(f)) return true;
  return false;  // exit 1 and "fail" (README, exit codes)
}

void count_findings(Report& r) {
  r.counts = FindingCounts{};
  r.first_error_index = -1;
  r.first_error_where.clear();
  const Finding* first = nullptr;
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    r.counts.known += f.status == FindingStatus::known;
    r.counts.suppressed += f.status == FindingStatus::suppressed;
    if (f.status != FindingStatus::active) continue;
    r.counts.errors += f.severity == Severity::error;
    r.counts.warnings += f.severity == Severity::warning;
    r.counts.notes += f.severity == Severity::note;
    // The earliest call; at one call a real finding before a latent one, and a cause before
    // its symptom (output-divergence says the outputs differ, the other checks say why).
    auto symptom = [](const Finding& x) { return x.check == "output-divergence"; };
    bool better_here = first && f.call == first->call &&
                       ((first->latent && !f.latent) ||
                        (first->latent == f.latent && symptom(*first) && !symptom(f)));
    if (f.severity == Severity::error && f.call &&
        (!first || f.call < first->call || better_here)) {
      first = &f;
      r.first_error_index = static_cast<long>(i);
    }
  }
  const TraceCall* c = first && r.trace ? r.trace->call(first->call) : nullptr;
  if (c) r.first_error_where = c->where();
}

std::string Report::location(const std::string& pointer) const {
  auto it = positions.find(pointer);
  if (it != positions.end())
    return model_path + ":" + std::to_string(it->second.line) + ":" +
           std::to_string(it->second.col);
  if (pointer.empty()) return model_path;
  return model_path.empty() ? pointer : model_path + ":" + pointer;
}

void leave_out_stub_notes(Report& r, const std::vector<std::string>& stub_kernels) {
  r.stub_kernels = stub_kernels;
  if (stub_kernels.empty()) return;
  std::set<std::string> stubs(stub_kernels.begin(), stub_kernels.end());
  std::vector<Finding> kept;
  for (auto& f : r.findings) {
    bool body_note = f.check == "missed-static" || f.check == "missed-intermediate";
    if (body_note && stubs.count(f.kernel)) {
      ++r.stub_notes_left_out;
      continue;
    }
    // "Benign here" rests on the call's outputs; a stub's outputs say nothing: the finding keeps
    // its check's severity and says why.
    const std::string benign =
        "; benign here: the call's outputs are bit-identical to the "
        "no-reuse run's";
    const CheckEntry* e = find_check(f.check);
    if (stubs.count(f.kernel) && e && f.message.size() > benign.size() &&
        f.message.compare(f.message.size() - benign.size(), benign.size(), benign) == 0) {
      f.message.resize(f.message.size() - benign.size());
      f.severity = e->info->severity;
      for (auto& [k, v] : f.evidence)
        if (k == "severity")
          v = std::string(severity_name(f.severity)) +
              ": the kernel read stale bytes; its outputs match only because its body is a "
              "stub that does not read them";
    }
    kept.push_back(std::move(f));
  }
  r.findings = std::move(kept);
}

std::string stub_line(const Report& r) {
  if (r.stub_kernels.empty()) return "";
  std::string s = std::to_string(r.stub_kernels.size()) + " kernel(s) still have stub bodies (";
  for (size_t i = 0; i < r.stub_kernels.size() && i < 6; ++i)
    s += (i ? ", " : "") + r.stub_kernels[i];
  if (r.stub_kernels.size() > 6) s += ", ...";
  s += "; fill ops reading no input, e.g. a bo-doctor skeleton's): the reuse plan and the data "
       "checks stand, but outputs and what the kernels read are placeholders";
  if (r.stub_notes_left_out)
    s += "; " + std::to_string(r.stub_notes_left_out) +
         " missed-static/missed-intermediate note(s) that depend on the bodies are left out";
  return s + ". Fill in the bodies (docs/skeleton.md).";
}

std::string Coverage::note() const {
  std::string s;
  if (!no_reuse && ran < checks) {
    s = "no no-reuse run: " + std::to_string(ran) + " of " + std::to_string(checks) + " checks ran";
    if (!need_no_reuse.empty()) {
      s += "; ";
      for (size_t i = 0; i < need_no_reuse.size(); ++i) s += (i ? ", " : "") + need_no_reuse[i];
      s += need_no_reuse.size() == 1 ? " needs" : " need";
      s += " record --shadow";
    }
  }
  if (!finished) s += std::string(s.empty() ? "" : "; ") + "the run stopped early";
  if (!recording_gaps.empty()) {
    s += std::string(s.empty() ? "" : "; ") + "recording incomplete: ";
    for (size_t i = 0; i < recording_gaps.size(); ++i) s += (i ? ", " : "") + recording_gaps[i];
  }
  if (shadowed >= 0) s += std::string(s.empty() ? "" : "; ") + shadow_note();
  return s;
}

std::string Coverage::shadow_note() const {
  if (shadowed < 0) return "";
  std::string s =
      "shadowed " + std::to_string(shadowed) + " of " + std::to_string(calls) + " calls";
  if (shadowed < calls)
    s += "; the other " + std::to_string(calls - shadowed) +
         " not compared, each like an earlier call of the same kind whose outputs were "
         "bit-identical";
  return s;
}

Report build_report(const std::string& command, const Trace& t, bool timings,
                    const std::string& subject) {
  Report r;
  r.command = command;
  r.model_path = t.header.model_path;
  r.subject = subject.empty() ? t.header.model_path : subject;
  r.model_name = t.header.model_name;
  r.trace = &t;
  r.calls = t.calls.size();
  r.no_calls = command == "analyze" && t.calls.empty();
  r.timings = timings && t.timings;
  r.ran = t.header.caps.run || (t.header.caps.xrt && t.header.caps.no_reuse);
  r.engine_figures = t.header.caps.run;
  r.verified = t.header.caps.verify;
  r.probed = t.header.caps.probe;
  FindingSink sink;
  run_checks(t, sink);
  if (r.verified) {
    r.verify = verify(t);
    add_verification_finding(r.verify, sink);
  }
  if (r.ran) {
    r.keys = key_table(t);
    r.run = RunFigures{
        t.header.backend, t.header.host_emulated, t.header.npu_launched, t.reuse, t.noreuse,
        t.wall_s};
    std::set<std::string> statics, inters;
    for (auto& c : t.calls) {
      if (!c.statics.empty()) statics.insert(c.path);
      if (!c.inters.empty()) inters.insert(c.path);
    }
    r.static_sites = statics.size();
    r.intermediate_sites = inters.size();
  }
  if (r.probed)
    for (auto& c : t.calls) {
      bool candidate = false, probed = false;
      for (auto& s : c.slots) {  // what the runner probes: intermediate, not also static
        candidate = candidate || (c.is_inter(s.slot) && !c.is_static(s.slot));
        probed = probed || s.probe.probed;
      }
      r.probe_candidates += candidate;
      r.probed_calls += probed;
    }
  if (t.header.caps.no_reuse)
    for (auto& c : t.calls)
      if (c.diverged()) {
        r.first_divergence = CallRef{c.number, c.where(), c.kernel};
        break;
      }
  r.xrt_reuse = xrt_reuse(t);
  r.gaps = coverage_gaps(t);
  r.coverage.checks = 0;
  for (auto& e : check_registry()) r.coverage.checks += check_applies(*e.info, t.header.caps);
  r.coverage.ran = r.coverage.checks - static_cast<int>(r.gaps.size());
  r.coverage.no_reuse = t.header.caps.no_reuse;
  if (t.header.caps.no_reuse && (t.header.backend == "recorded" || t.header.caps.xrt)) {
    r.coverage.calls = static_cast<long>(t.calls.size());
    r.coverage.shadowed = 0;
    for (auto& c : t.calls) r.coverage.shadowed += c.shadowed();
  }
  r.coverage.finished = t.finished;
  for (auto& g : t.gaps) {
    std::string after = g.after_call ? "after call " + std::to_string(g.after_call)
                                     : std::string("before its first call");
    std::string what = g.cause == GapCause::recorder_stopped
                           ? "the recorder stopped " + after +
                                 (g.detail.empty() ? "" : " (" + g.detail + ")") +
                                 "; its later calls are not in the trace"
                           : std::string("the line of its ") +
                                 (g.after_call ? "call after call " + std::to_string(g.after_call)
                                               : std::string("first call")) +
                                 " was cut off by its death; that call is lost";
    r.coverage.recording_gaps.push_back("process " + std::to_string(g.process) + ": " + what);
  }
  for (auto& g : r.gaps)
    if (g.missing.find("no_reuse") != std::string::npos)
      r.coverage.need_no_reuse.push_back(g.check);
  r.findings = sink.sorted();
  return r;
}

}  // namespace bod
