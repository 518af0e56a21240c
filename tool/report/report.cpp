#include "report/report.h"

namespace bod {

bool Report::fails() const {
  if (gate.fail_on == FailOn::never) return false;
  for (auto& f : findings)
    if (f.status == FindingStatus::active && static_cast<int>(f.severity) >= static_cast<int>(gate.fail_on))
      return true;
  return false;  // exit 1 and "fail" (README, exit codes)
}

const Finding* Report::first_error() const {
  const Finding* first = nullptr;
  for (auto& f : findings)
    if (f.status == FindingStatus::active && f.severity == Severity::error && f.call &&
        (!first || f.call < first->call || (f.call == first->call && first->latent && !f.latent)))
      first = &f;
  return first;
}

std::string Report::location(const std::string& pointer) const {
  auto it = positions.find(pointer);
  if (it != positions.end())
    return model_path + ":" + std::to_string(it->second.line) + ":" + std::to_string(it->second.col);
  if (pointer.empty()) return model_path;
  return model_path.empty() ? pointer : model_path + ":" + pointer;
}

Report build_report(const std::string& command, const Trace& t, bool timings,
                    const std::string& subject) {
  Report r;
  r.command = command;
  r.model_path = t.header.model_path;
  r.subject = subject.empty() ? t.header.model_path : subject;
  r.model_name = t.header.model_name;
  r.trace = &t;
  r.timings = timings && t.timings;
  r.ran = t.header.caps.run;
  r.verified = t.header.caps.verify;
  FindingSink sink;
  run_checks(t, sink);
  if (r.verified) {
    r.verify = verify(t);
    add_verification_finding(r.verify, sink);
  }
  if (r.ran) r.keys = key_table(t);
  if (t.header.caps.probe)
    for (auto& c : t.calls) {
      bool candidate = false, probed = false;
      for (auto& s : c.slots) {  // what the runner probes: intermediate, not also static
        candidate = candidate || (c.is_inter(s.slot) && !c.is_static(s.slot));
        probed = probed || s.probe.probed;
      }
      r.probe_candidates += candidate;
      r.probed_calls += probed;
    }
  if (command != "lint") r.gaps = coverage_gaps(t);
  r.findings = sink.sorted();
  (void)apply_gate(r, GateOptions{});  // the default gate cannot fail: no suppressions
  return r;
}

}  // namespace bod
