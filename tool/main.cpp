// bo-doctor: a thin main over the library. Reports go to stdout, logs and errors to stderr;
// exit codes as README.md documents them (0 clean, 1 error findings, 2 bad input, 3 backend
// unavailable).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "cli/commands.h"
#include "core/printable.h"

#if defined(__SANITIZE_ADDRESS__)
#define BOD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BOD_ASAN 1
#endif
#endif
#ifdef BOD_ASAN
#include <sanitizer/lsan_interface.h>
#endif

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("bo-doctor"));
  spdlog::set_pattern("bo-doctor: %l: %v");
  bod::CommandResult r;
  try {
    r = bod::run_cli(argc, argv);
  } catch (const bod::FatalError& e) {
    r = {e.error.code, "", e.error.line()};
  } catch (const std::bad_alloc&) {
    r = {bod::Exit::backend, "", "out of memory; try a smaller model or --max-memory"};
  } catch (const std::exception& e) {
    r = {bod::Exit::backend, "", std::string("internal error: ") + e.what()};
  }
  if (!r.out.empty()) std::fwrite(r.out.data(), 1, r.out.size(), stdout);
  // Messages quote the input: printable, so no control character reaches the terminal.
  if (!r.log.empty()) std::fprintf(stderr, "bo-doctor: %s", bod::printable_lines(r.log).c_str());
  if (!r.err.empty()) std::fprintf(stderr, "bo-doctor: error: %s\n", bod::printable(r.err).c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  // Leave without static destructors: Debian's XRT 2.13 can hang in its exit handler
  // (xrt_core::kds::stop joins a thread that never wakes) after runs on the noop device. In a
  // sanitized build, LeakSanitizer checks first (what is still reachable is not a leak).
#ifdef BOD_ASAN
  __lsan_do_leak_check();
#endif
  std::_Exit(static_cast<int>(r.code));
}
