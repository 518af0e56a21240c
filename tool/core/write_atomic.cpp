// Writing an output file atomically and durably: reports, traces, baselines and skeletons all
// go through write_atomic, so a killed run never leaves a half-written file in place.
#include "core/write_atomic.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace bod {

namespace {

// The temp file of the write in progress, for the signal handler: a fixed buffer, set before
// the file exists and cleared after it is renamed or removed.
char g_tmp_path[4096];
volatile std::sig_atomic_t g_tmp_set = 0;

extern "C" void unlink_tmp_on_signal(int sig) {
  if (g_tmp_set) ::unlink(g_tmp_path);  // async-signal-safe
  ::signal(sig, SIG_DFL);               // then die of the signal as we would have
  ::raise(sig);
}

// SIGINT/SIGTERM remove the temp file while it exists; the previous handlers come back after.
class TmpGuard {
 public:
  explicit TmpGuard(const std::string& tmp) {
    std::snprintf(g_tmp_path, sizeof g_tmp_path, "%s", tmp.c_str());
    struct sigaction sa {};
    sa.sa_handler = unlink_tmp_on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
    g_tmp_set = 1;
  }
  ~TmpGuard() {
    g_tmp_set = 0;
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  TmpGuard(const TmpGuard&) = delete;
  TmpGuard& operator=(const TmpGuard&) = delete;

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

Error out_error(const std::string& path, const std::string& what) {
  return Error{path, what, Exit::bad_input};
}

std::string errno_str() {
  return std::strerror(errno);
}

const char* kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

Status write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{"", errno_str()};
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

}  // namespace

void (*g_write_atomic_test_hook)(const std::string& tmp) = nullptr;

Status write_atomic(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  if (path == "-" || path == "/dev/stdout") {
    if (auto st = write_all(STDOUT_FILENO, text); !st)
      return out_error(path, "cannot write to stdout: " + st.error().what);
    return ok_status();
  }
  if (path.empty()) return out_error(path, "empty output path; expected a file name or -");
  // An existing target must be a regular file: it is replaced, never followed (a symlink) or
  // turned into a regular file (a device, FIFO, directory). Its permission bits are kept.
  struct stat st;
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return out_error(path, "cannot write report: " + errno_str());
  if (exists && !S_ISREG(st.st_mode))
    return out_error(path, std::string("is ") + kind_of(st.st_mode) +
                               "; refusing to replace it with the report (expected a regular "
                               "file, a new name, or - for stdout)");
  fs::path p(path);
  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  // The temp file, in the target's folder so rename() is atomic: O_EXCL never follows or
  // reuses what is there (a stale one from a killed run with our pid gets a new number).
  std::string tmp;
  int fd = -1;
  for (int i = 0; i < 100 && fd < 0; ++i) {
    tmp = (dir / ("." + p.filename().string() + ".tmp." + std::to_string(::getpid()) +
                  (i ? "." + std::to_string(i) : "")))
              .string();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0)
    return out_error(path,
                     "cannot write report (is the folder there and writable?): " + errno_str());
  TmpGuard guard(tmp);
  auto fail = [&](const std::string& what) {
    int e = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    errno = e;
    return out_error(path, what);
  };
  if (exists && ::fchmod(fd, st.st_mode & 07777) != 0)
    return fail("cannot keep the file's permissions: " + errno_str());
  if (g_write_atomic_test_hook) g_write_atomic_test_hook(tmp);
  if (auto w = write_all(fd, text); !w)
    return fail("cannot write report (disk full?): " + w.error().what);
  if (::fsync(fd) != 0) return fail("cannot write report (fsync): " + errno_str());
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) return fail("cannot write report: " + errno_str());
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail("cannot move report into place: " + errno_str());
  // The rename is durable once the folder is synced (best effort: some file systems refuse).
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return ok_status();
}

}  // namespace bod
