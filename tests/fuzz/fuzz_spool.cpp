// libFuzzer harness: spool files -> assemble_spools -> read_trace. The input is split at NUL
// bytes into up to 4 spool files of one spool folder (one per recorded process,
// docs/recording.md); any input must end in a trace or an Error, never a crash or a hang, and
// what assembly writes is read back under the reader's limits (docs/robustness.md).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "trace/spool.h"
#include "trace/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bod_fuzz_spool." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> files;
  size_t at = 0;
  for (int k = 0; k < 4 && at <= in.size(); ++k) {
    size_t end = k == 3 ? in.size() : std::min(in.find('\0', at), in.size());
    std::string path = (dir / (std::to_string(k) + "-0.jsonl")).string();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << in.substr(at, end - at);
    files.push_back(path);
    at = end + 1;
  }
  std::ostringstream out;
  bod::SpoolSummary sum;
  if (!bod::assemble_spools(files, out, sum)) return 0;
  std::istringstream t(out.str());
  bod::TraceLimits lim;
  lim.max_line_bytes = 1 << 20;
  lim.max_calls = 10000;
  (void)bod::read_trace(t, "fuzz.trace", lim);
  return 0;
}
