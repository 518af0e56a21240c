// `bo-doctor record [-o TRACE] [--shadow] [--target M:C.m] -- COMMAND ARGS...`: runs the user's
// Python program with the recorder injected through the environment (PYTHONPATH gets the
// recorder's folder, whose sitecustomize.py wraps KernelCache.load_and_run as modules load; no
// edit to the engine), then assembles the spool it wrote into a trace, whatever way the program
// ended. docs/recording.md.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "core/write_atomic.h"
#include "trace/spool.h"
#include "trace/trace_io.h"

extern char** environ;

namespace bod {

namespace fs = std::filesystem;

namespace {

CommandResult fail(const Error& e) {
  return CommandResult{e.code, "", e.line()};
}

// The folder holding sitecustomize.py and the bo_doctor package.
std::string recorder_dir() {
  if (const char* d = std::getenv("BOD_RECORDER_DIR"); d && *d) return d;
  return BOD_RECORDER_DIR;
}

// libbod_hash.so, the recorder's hashing (bo-doctor's own XXH3, tool/recorder/native): the one
// BOD_RECORD_HASHLIB names, else the one next to this executable, else the build's.
std::string hash_library() {
  if (const char* d = std::getenv("BOD_RECORD_HASHLIB"); d && *d) return d;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path next = self.parent_path() / "libbod_hash.so";
    if (fs::exists(next, ec)) return next.string();
  }
  return BOD_HASHLIB_PATH;
}

// The child's environment: ours plus the recorder's variables (BOD_RECORD_EXACT passes through:
// docs/recording.md); `extra` (record --xrt) replaces the recorder's variables.
std::vector<std::string> child_env(const RecordOptions& o, const std::string& spool,
                                   const std::vector<std::string>& extra = {}) {
  std::vector<std::string> env;
  std::string pythonpath = recorder_dir();
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("PYTHONPATH=", 0) == 0) {
      if (kv.size() > 11) pythonpath += ":" + kv.substr(11);
      continue;
    }
    if (kv.rfind("BOD_RECORD_", 0) == 0 && kv.rfind("BOD_RECORD_EXACT=", 0) != 0) continue;
    env.push_back(kv);
  }
  if (!extra.empty()) {  // record --xrt: its own variables (record_xrt.cpp), no spool
    for (auto& e : env)
      for (auto& x : extra)
        if (e.substr(0, e.find('=') + 1) == x.substr(0, x.find('=') + 1)) e.clear();
    env.erase(std::remove(env.begin(), env.end(), std::string()), env.end());
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("BOD_RECORD_SPOOL=" + spool);
  env.push_back("BOD_RECORD_HASHLIB=" + hash_library());
  if (o.shadow) env.push_back("BOD_RECORD_SHADOW=1");
  if (!o.target.empty()) env.push_back("BOD_RECORD_TARGET=" + o.target);
  if (o.labels == "explicit") env.push_back("BOD_RECORD_LABELS=explicit");
  return env;
}

// Runs the command; returns its exit code (128 + signal when killed), or an error.
Result<int> run_child(const RecordOptions& o, const std::string& spool,
                      const std::vector<std::string>& extra = {}) {
  std::vector<std::string> env = child_env(o, spool, extra);
  std::vector<char*> argv, envp;
  for (auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // Ctrl-C goes to the whole process group: let the program handle it, then assemble.
  struct sigaction ignore {
  }, old_int{}, old_term{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &ignore, &old_term);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t deflt;
  sigemptyset(&deflt);
  sigaddset(&deflt, SIGINT);
  sigaddset(&deflt, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &deflt);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  int status = 0;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (rc != 0)
    return Error{o.command[0],
                 std::string("cannot run: ") + std::strerror(rc) +
                     "; give the program and its arguments after --",
                 Exit::bad_input};
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

CommandResult cmd_record(const RecordOptions& o) {
  if (o.command.empty())
    return fail(Error{"record",
                      "no command; usage: bo-doctor record [-o TRACE] -- python3 run.py ...",
                      Exit::bad_input});
  std::string out = o.output.empty() ? "run.trace.jsonl" : o.output;
  if (o.labels != "auto" && o.labels != "explicit")
    return fail(
        Error{"--labels",
              "'" + o.labels +
                  "': expected auto (bo_doctor.label, else the "
                  "bo_key's L<n> or the layer loop variable) or explicit (bo_doctor.label only)",
              Exit::bad_input});
  if (!o.target.empty() && o.target.find(':') == std::string::npos)
    return fail(Error{"--target",
                      "'" + o.target +
                          "': expected module:Class.method, e.g. "
                          "shared.infra.cache:KernelCache.load_and_run",
                      Exit::bad_input});
  if (!fs::exists(fs::path(recorder_dir()) / "sitecustomize.py"))
    return fail(Error{recorder_dir(),
                      "the Python recorder is missing here; set BOD_RECORDER_DIR "
                      "to the folder holding sitecustomize.py",
                      Exit::bad_input});
  // The output is judged before the program runs: a refused -o must not cost the user a run,
  // and must never replace the program, its inputs or a file that is not ours.
  {
    std::error_code ec;
    auto ls = fs::symlink_status(out, ec);
    if (!ec && fs::exists(ls) && !fs::is_regular_file(ls))
      return fail(Error{out,
                        std::string("-o names ") +
                            (fs::is_symlink(ls)     ? "a symbolic link"
                             : fs::is_directory(ls) ? "a directory"
                                                    : "a special file") +
                            "; expected a regular file name for the trace",
                        Exit::bad_input});
    for (size_t i = 0; i < o.command.size(); ++i)
      if (fs::exists(o.command[i], ec))
        if (auto st = not_input("-o", out, o.command[i]); !st) return fail(st.error());
    if (auto st = may_replace("-o", out, o.force); !st) return fail(st.error());
  }
  if (o.xrt)
    return cmd_record_xrt(o, out, [](const RecordOptions& ro, const std::vector<std::string>& e) {
      return run_child(ro, "", e);
    });
  fs::path dir = fs::absolute(out).parent_path();
  std::string spool =
      (dir / (fs::path(out).filename().string() + ".spool." + std::to_string(getpid()))).string();
  {
    std::ofstream s(spool, std::ios::trunc);
    if (!s) return fail(Error{spool, "cannot create the recorder's spool file", Exit::bad_input});
  }
  spdlog::info("recording {} (spool {})", o.command[0], spool);
  auto rc = run_child(o, spool);
  if (!rc) {
    fs::remove(spool);
    return fail(rc.error());
  }
  {
    // The recorder never started (its preflight stopped the program, having said why, and
    // removed the spool, or the program ran no Python): nothing to keep.
    std::error_code ec;
    if (!fs::exists(spool, ec) || fs::file_size(spool, ec) == 0) {
      fs::remove(spool, ec);
      CommandResult r;
      r.code = rc.value() != 0 ? static_cast<Exit>(rc.value()) : Exit::bad_input;
      r.log = "record: nothing recorded: the recorder never started in " + o.command[0] +
              " (it exited " + std::to_string(rc.value()) + "); no trace written\n";
      return r;
    }
  }
  std::ifstream in(spool);
  SpoolSummary sum;
  auto text = trace_text_from_spool(in, spool, sum);
  if (!text) return fail(text.error());  // the spool stays for a bug report
  std::istringstream check(text.value());
  auto t = read_trace(check, out);
  if (!t)
    return fail(Error{t.error().where,
                      t.error().what +
                          " (the recorder wrote an invalid trace; "
                          "the spool " +
                          spool + " is kept)",
                      Exit::backend});
  if (auto st = write_atomic(out, text.value()); !st) return fail(st.error());
  fs::remove(spool);
  std::ostringstream msg;
  msg << "recorded " << sum.calls << " call(s) of " << o.command[0] << " to " << out << " ("
      << text->size() / 1024 << " KiB, " << (sum.calls ? text->size() / sum.calls : 0)
      << " bytes/call"
      << (sum.ended ? ", recorder time " + std::to_string(sum.recorder_seconds).substr(0, 6) + " s"
                    : "")
      << (sum.shadow ? ", with shadow runs" : "") << (sum.torn ? ", last call cut off" : "")
      << (sum.ended ? ""
                    : ", the program did not "
                      "exit normally")
      << "); the program exited " << rc.value() << ". Next: bo-doctor analyze " << out << "\n";
  CommandResult r;
  r.log = msg.str();
  // Like valgrind or compute-sanitizer: record exits with the program's own status.
  r.code = static_cast<Exit>(rc.value());
  return r;
}

}  // namespace bod
