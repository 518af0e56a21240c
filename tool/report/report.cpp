#include "report/report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace bod {

bool Report::has_error() const {
  for (auto& f : findings)
    if (f.severity == Severity::error) return true;
  return false;  // exit 1 and "fail" mean an error finding (README, exit codes)
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
  if (command != "lint") r.gaps = coverage_gaps(t);
  r.findings = sink.sorted();
  return r;
}

Status write_atomic(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  fs::path p(path);
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Error{path, "cannot write report (is the folder there and writable?)", Exit::bad_input};
    f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return Error{path, "cannot write report (disk full?)", Exit::bad_input};
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error{path, "cannot move report into place: " + ec.message(), Exit::bad_input};
  }
  return ok_status();
}

}  // namespace bod
