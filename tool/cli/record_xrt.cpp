// `bo-doctor record --xrt -- COMMAND`: records an engine that manages its BOs by hand at the
// XRT API boundary, with no edit to it. The program runs with LD_PRELOAD naming the preload
// library (tool/xrt_preload: every xrt::bo / xrt::kernel / xrt::run call of a C++ host or of
// pyxrt), and with PYTHONPATH starting at tool/xrt_preload/python, whose sitecustomize.py wraps a
// pyxrt module that does not call libxrt (a pure-Python stand-in) at module level. Each process
// appends its events to its own file in a folder beside the trace; the folder is then replayed
// into the trace (trace/xrt_log.h) and removed. docs/recording.md, "Hand-managed BOs".
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli/commands.h"
#include "core/write_atomic.h"
#include "trace/trace_io.h"
#include "trace/xrt_log.h"

namespace bod {

namespace fs = std::filesystem;

namespace {

CommandResult fail(const Error& e) {
  return CommandResult{e.code, "", e.line()};
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// The preload library ("" when this bo-doctor was built without XRT).
std::string preload_path() {
#ifdef BOD_XRT_PRELOAD
  return env_or("BOD_XRT_PRELOAD", BOD_XRT_PRELOAD);
#else
  return env_or("BOD_XRT_PRELOAD", "");
#endif
}

std::string python_dir() {
  return env_or("BOD_XRT_PYTHON_DIR", BOD_XRT_PYTHON_DIR);
}
std::string recorder_dir() {
  return env_or("BOD_RECORDER_DIR", BOD_RECORDER_DIR);
}

}  // namespace

CommandResult cmd_record_xrt(const RecordOptions& o, const std::string& out, SpawnFn spawn) {
  if (!o.target.empty() || o.labels != "auto")
    return fail(Error{!o.target.empty() ? "--target" : "--labels",
                      "applies to KernelCache recordings, not to --xrt", Exit::bad_input});
  std::string preload = preload_path();
  if (!preload.empty() && !fs::exists(preload))
    return fail(Error{preload,
                      "the XRT preload library is missing; rebuild bo-doctor or set "
                      "BOD_XRT_PRELOAD to libbod_xrt_preload.so",
                      Exit::bad_input});
  fs::path logs = fs::absolute(out).parent_path() /
                  (fs::path(out).filename().string() + ".xrtlog." + std::to_string(getpid()));
  std::error_code ec;
  fs::remove_all(logs, ec);
  if (!fs::create_directory(logs, ec))
    return fail(Error{logs.string(), "cannot create the event log folder", Exit::bad_input});
  std::vector<std::string> env;
  std::string pythonpath = python_dir() + (std::getenv("PYTHONPATH") && *std::getenv("PYTHONPATH")
                                               ? ":" + std::string(std::getenv("PYTHONPATH"))
                                               : "");
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("BOD_XRT_LOG=" + logs.string());
  env.push_back("BOD_XRT_RECORDER_DIR=" + recorder_dir());
  env.push_back("BOD_RECORD_HASHLIB=" + record_hash_library());
  if (o.shadow) env.push_back("BOD_XRT_SHADOW=1");
  if (!preload.empty()) {
    const char* old = std::getenv("LD_PRELOAD");
    env.push_back("LD_PRELOAD=" + preload + (old && *old ? ":" + std::string(old) : ""));
  } else {
    spdlog::warn("this bo-doctor was built without XRT: only a pure-Python pyxrt is recorded");
  }
  spdlog::info("recording {} at the XRT boundary (events in {})", o.command[0], logs.string());
  auto rc = spawn(o, env);
  if (!rc) {
    fs::remove_all(logs, ec);
    return fail(rc.error());
  }
  XrtLogSummary sum;
  std::string command;
  for (auto& a : o.command) command += (command.empty() ? "" : " ") + a;
  auto t = trace_from_xrt_logs(logs.string(), command, sum);
  if (!t) return fail(t.error());  // the logs stay for a bug report
  std::ostringstream text;
  write_trace(text, t.value());
  std::istringstream check(text.str());
  if (auto back = read_trace(check, out); !back)
    return fail(Error{back.error().where,
                      back.error().what + " (the recorder wrote an invalid trace; the event logs " +
                          logs.string() + " are kept)",
                      Exit::backend});
  if (auto st = write_atomic(out, text.str()); !st) return fail(st.error());
  fs::remove_all(logs, ec);
  std::ostringstream msg;
  msg << "recorded " << sum.runs << " run(s) on " << sum.bos << " BO(s) of " << o.command[0]
      << " at the XRT boundary to " << out << " (" << text.str().size() / 1024 << " KiB, "
      << sum.processes << " process(es)" << (sum.torn ? ", last event cut off" : "")
      << "); the program exited " << rc.value() << ". Next: bo-doctor analyze " << out << "\n";
  if (o.shadow) {
    std::vector<std::string> parts;
    if (sum.runs > sum.plumbing_runs)
      parts.push_back("shadowed " + std::to_string(sum.shadowed) + " of " +
                      std::to_string(sum.runs - sum.plumbing_runs) + " run(s)");
    if (sum.plumbing_runs)
      parts.push_back("the preload library re-ran " + std::to_string(sum.plumbing_shadowed) +
                      " of " + std::to_string(sum.plumbing_runs) +
                      " run(s) on fresh BOs but compares no outputs (plumbing only; XRT's noop "
                      "device computes nothing): the trace has no shadow comparison");
    if (sum.shadow_failed)
      parts.push_back(std::to_string(sum.shadow_failed) +
                      " shadow run(s) failed, the first: " + sum.shadow_error);
    if (sum.not_shadowed > sum.plumbing_runs)
      parts.push_back(std::to_string(sum.not_shadowed - sum.plumbing_runs) +
                      " run(s) were recorded without shadow runs: the trace has no shadow "
                      "comparison");
    msg << "bo-doctor:";
    for (size_t i = 0; i < parts.size(); ++i) msg << (i ? "; " : " ") << parts[i];
    msg << "\n";
  }
  if (sum.processes == 0 || sum.events == 0)
    msg << "bo-doctor: no XRT call was seen: the program made none, or its pyxrt is neither "
           "libxrt-backed nor a pure-Python module\n";
  CommandResult r;
  r.log = msg.str();
  r.code = static_cast<Exit>(rc.value());
  return r;
}

}  // namespace bod
