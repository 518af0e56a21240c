// Minimal xclbin (axlf) images that XRT's noop device accepts, for tests and fixtures that
// exercise the XRT backend's xclbin path without an NPU. Each kernel follows bo-doctor's xclbin
// ABI (docs/xrt.md): arg 0 uint64 opcode, arg 1 instruction buffer, arg 2 uint32 instruction
// count, args 3.. one global buffer per slot. The image carries no hardware: the noop device
// completes every launch at once and computes nothing.
//
// Memory banks: bank 0 ("instr") is connected to every kernel's instruction argument and bank 1
// ("bos") to every buffer slot, so kernel.group_id(1) == 0 and kernel.group_id(slot + 3) == 1.
// Keeping them apart lets a test tell a BO allocated in the kernel's group from a default one.
#pragma once
#include <string>
#include <vector>

namespace bod::testutil {

struct NoopKernelSpec {
  std::string name;   // kernel name as xrt::kernel / xrt::xclbin::get_kernels() report it
  int n_bo_args = 1;  // buffer slots after opcode, instructions and instruction count
};

inline constexpr int kNoopInstrGroup = 0;  // group_id(1) of every kernel in the image
inline constexpr int kNoopSlotGroup = 1;   // group_id(slot + 3) of every kernel in the image

// The xclbin bytes for these kernels (at least one). The uuid is derived from the kernel
// names and argument counts, so different images get different uuids.
std::vector<char> build_noop_xclbin(const std::vector<NoopKernelSpec>& kernels);
std::vector<char> build_noop_xclbin(const std::string& kernel, int n_bo_args);

// Writes the image to `path`; false when the file cannot be written.
bool write_noop_xclbin(const std::string& path, const std::vector<NoopKernelSpec>& kernels);
bool write_noop_xclbin(const std::string& path, const std::string& kernel, int n_bo_args);

}  // namespace bod::testutil
