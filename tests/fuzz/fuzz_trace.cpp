// libFuzzer harness: trace text -> read_trace -> every check. Any input must end in a Trace or
// an Error within the reader's limits (docs/trace-format.md §10, docs/robustness.md).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "checks/registry.h"
#include "trace/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  bod::TraceLimits lim;
  lim.max_line_bytes = 1 << 20;
  lim.max_calls = 10000;
  auto t = bod::read_trace(in, "fuzz.trace", lim);
  if (!t) return 0;
  bod::FindingSink sink;
  bod::run_checks(t.value(), sink);
  return 0;
}
