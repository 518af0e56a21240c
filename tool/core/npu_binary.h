// The NPU binary a kernel may declare in model.json (docs/xrt.md): plain data that the model
// loader fills and the backends consume, so it lives below both.
#pragma once
#include <string>

namespace bod {

// An NPU binary a kernel may declare in model.json (see docs/xrt.md).
struct NpuBinary {
  enum class Mode { none, xclbin, elf } mode = Mode::none;
  std::string path;          // xclbin or ELF file (absolute after loading)
  std::string kernel_name;   // kernel name inside the binary
  std::string instructions;  // xclbin mode: instruction stream file (uint32 words)
};

}  // namespace bod
