// A hang guard for work that must stay linear on big input: runs it in a forked child under
// an alarm, so quadratic work that used to run for minutes fails the test instead of stalling
// the suite. Not a timing assertion: the limit is tens of times what the linear work takes,
// even under the sanitizers.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace bod::testing {

// "" when `fn` returned true in the child within `seconds`, else what happened.
inline std::string finishes_within(unsigned seconds, const std::function<bool()>& fn) {
  pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::alarm(seconds);
    bool ok = fn();
    ::_exit(ok ? 0 : 1);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
  }
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
    return "did not finish within " + std::to_string(seconds) + " s (the hang guard)";
  if (WIFSIGNALED(st)) return "killed by signal " + std::to_string(WTERMSIG(st));
  if (WEXITSTATUS(st) != 0) return "finished with a wrong result";
  return "";
}

}  // namespace bod::testing
