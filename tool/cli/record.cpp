// `bo-doctor record [-o TRACE] [--shadow] [--target M:C.m] -- COMMAND ARGS...`: runs the user's
// Python program with the recorder injected through the environment (PYTHONPATH gets the
// recorder's folder, whose sitecustomize.py wraps KernelCache.load_and_run as modules load; no
// edit to the engine), then assembles the spool it wrote into a trace, whatever way the program
// ended. docs/recording.md.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
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

}  // namespace

// libbod_hash.so, the recorder's hashing (bo-doctor's own XXH3, tool/recorder/native): the one
// BOD_RECORD_HASHLIB names, else the one next to this executable, else the build's.
std::string record_hash_library() {
  if (const char* d = std::getenv("BOD_RECORD_HASHLIB"); d && *d) return d;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path next = self.parent_path() / "libbod_hash.so";
    if (fs::exists(next, ec)) return next.string();
  }
  return BOD_HASHLIB_PATH;
}

namespace {

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
    if (kv.rfind("BOD_XRT_SHADOW=", 0) == 0) continue;  // only record --xrt --shadow sets it
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
  env.push_back("BOD_RECORD_HASHLIB=" + record_hash_library());
  if (o.shadow)
    env.push_back(o.shadow_mode == "all" ? "BOD_RECORD_SHADOW=all" : "BOD_RECORD_SHADOW=1");
  if (!o.target.empty()) env.push_back("BOD_RECORD_TARGET=" + o.target);
  if (o.labels == "explicit") env.push_back("BOD_RECORD_LABELS=explicit");
  return env;
}

// The program's pid while it runs, for the relay of SIGINT/SIGTERM/SIGHUP to it.
volatile sig_atomic_t g_child = 0;

// record relays a signal it is sent to the program, which handles it as it would alone
// (record itself keeps running, to assemble what was recorded). A signal the terminal raised
// (Ctrl-C) reached the program with the whole foreground process group: not sent twice.
void relay(int sig, siginfo_t* info, void*) {
  if (info && info->si_code == SI_KERNEL) return;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
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
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int s : sigs) sigaddset(&block, s);
  sigprocmask(SIG_BLOCK, &block, &old_mask);  // until the pid is known
  struct sigaction act {
  }, old[3];
  act.sa_sigaction = relay;
  act.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&act.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(sigs[i], &act, &old[i]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t deflt, none;
  sigemptyset(&deflt);
  for (int s : sigs) sigaddset(&deflt, s);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &deflt);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc == 0) g_child = pid;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  g_child = 0;
  for (int i = 0; i < 3; ++i) sigaction(sigs[i], &old[i], nullptr);
  if (rc != 0)
    return Error{o.command[0],
                 std::string("cannot run: ") + std::strerror(rc) +
                     "; give the program and its arguments after --",
                 Exit::bad_input};
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// The spool files the recorded processes wrote (non-empty regular files), sorted.
std::vector<std::string> spool_files(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2) && it->file_size(e2) > 0) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Writes the trace from the spool files to `out` atomically (a temp file beside it, checked
// by the trace reader, fsynced and renamed into place), in bounded memory.
Status write_trace(const std::vector<std::string>& files, const std::string& out,
                   const std::string& spool_dir, SpoolSummary& sum, uintmax_t& size) {
  fs::path target(out);
  fs::path tmp = fs::absolute(target).parent_path() /
                 ("." + target.filename().string() + ".tmp." + std::to_string(getpid()));
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove(tmp, ec);
  };
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Error{tmp.string(), "cannot create the trace's temp file", Exit::bad_input};
    auto st = assemble_spools(files, f, sum);
    f.close();
    if (!st || !f) {
      cleanup();
      Error e = st ? Error{tmp.string(), "cannot write the trace"} : st.error();
      e.what += " (the spool folder " + spool_dir + " is kept)";
      e.code = Exit::backend;
      return e;
    }
  }
  auto t = read_trace(tmp.string());
  if (!t) {
    cleanup();
    std::string where = t.error().where;
    if (where.rfind(tmp.string(), 0) == 0) where = out + where.substr(tmp.string().size());
    return Error{where,
                 t.error().what + " (the recorder wrote an invalid trace; the spool folder " +
                     spool_dir + " is kept)",
                 Exit::backend};
  }
  std::error_code ec;
  size = fs::file_size(tmp, ec);
  if (out == "-" || out == "/dev/stdout") {  // the trace on stdout
    std::ifstream f(tmp, std::ios::binary);
    std::cout << f.rdbuf() << std::flush;
    cleanup();
    return ok_status();
  }
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    cleanup();
    return Error{out, "cannot write the trace: " + ec.message(), Exit::bad_input};
  }
  int dfd = ::open(fs::absolute(target).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return ok_status();
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
  // Every recorded process writes its own spool file into this folder (docs/recording.md).
  fs::path dir = fs::absolute(out).parent_path();
  std::string spool =
      (dir / (fs::path(out).filename().string() + ".spool." + std::to_string(getpid()))).string();
  if (::mkdir(spool.c_str(), 0700) != 0)
    return fail(Error{
        spool, std::string("cannot create the recorder's spool folder: ") + std::strerror(errno),
        Exit::bad_input});
  auto drop_spool = [&] {
    // A helper process of the program that is still starting may add its file while the
    // folder is removed: removed again, for at most half a second.
    for (int k = 0; k < 10; ++k) {
      std::error_code ec;
      fs::remove_all(spool, ec);
      if (!fs::exists(spool, ec) && !ec) return;
      ::usleep(50000);
    }
  };
  spdlog::info("recording {} (spool folder {})", o.command[0], spool);
  auto rc = run_child(o, spool);
  if (!rc) {
    drop_spool();
    return fail(rc.error());
  }
  auto files = spool_files(spool);
  if (files.empty()) {
    // The recorder never started (a program that is not Python, python3 -E/-I, a preflight
    // that stopped the program having said why): nothing to keep; the program's status stands.
    drop_spool();
    CommandResult r;
    r.code = static_cast<Exit>(rc.value());
    r.log = "record: warning: nothing recorded: the recorder never started in " + o.command[0] +
            " (not a Python program, or Python run with -E/-I, which ignore PYTHONPATH); no "
            "trace written; the program exited " +
            std::to_string(rc.value()) + "\n";
    return r;
  }
  SpoolSummary sum;
  uintmax_t size = 0;
  if (auto st = write_trace(files, out, spool, sum, size); !st) return fail(st.error());
  drop_spool();
  std::ostringstream msg;
  msg << "recorded " << sum.calls << " call(s) of " << o.command[0] << " to " << out << " ("
      << size / 1024 << " KiB, " << (sum.calls ? size / sum.calls : 0) << " bytes/call"
      << (sum.processes > 1 ? ", " + std::to_string(sum.processes) + " processes" : "")
      << (sum.ended ? ", recorder time " + std::to_string(sum.recorder_seconds).substr(0, 6) + " s"
                    : "")
      << (sum.shadow ? ", shadowed " + std::to_string(sum.shadowed) + " of " +
                           std::to_string(sum.calls) + " calls"
                     : "")
      << (sum.torn ? ", last call cut off" : "")
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
