// XRT backend extras beyond the Backend interface (make_xrt_backend is declared in
// runtime/backend.h). The backend itself lives in xrt_backend.cpp.
//
// Environment, read when the backend is created:
//   XILINX_XRT          XRT install prefix; XRT loads its device shim from $XILINX_XRT/lib.
//   XCL_EMULATION_MODE  "noop": XRT's noop device (no NPU needed). It opens any device index,
//                       loads xclbins, allocates BOs and completes every launch at once without
//                       computing anything, so the backend also runs the kernel's reference body
//                       on the host. Its BO mapping IS the device memory: sync is a no-op there,
//                       so a host write that skipped sync_to_device is still seen by device_bytes.
//                       tool/xrt-noop-env.sh sets both variables up on a machine without an NPU.
//                       Other emulation modes (sw_emu, hw_emu) are refused.
// BackendOptions::timeout_ms bounds each NPU run's wait (values below 1 count as 1 ms: XRT
// would take 0 as "wait forever"). device_bytes() syncs the whole BO from the device into the
// mapping, so on an NPU it overwrites host writes not yet synced to the device.
#pragma once
#ifdef BOD_WITH_XRT
#include <string>

#include "runtime/backend.h"

namespace bod {

// Loads a kernel's NPU binary on an XRT backend before any BO of that kernel is allocated:
// the xclbin (once per file), the xrt::kernel, and the instruction BO (written and synced
// once). Afterwards alloc() of a BoDesc whose `kernel` equals `kernel` places slot s in the
// kernel's memory group group_id(s + 3) (ELF mode: xrt::ext::bo). Without it, BOs go to
// memory group 0 and a dispatch of an xclbin kernel whose groups differ fails with a
// FatalError (XRT would otherwise run the kernel on a temporary copy of the BO).
// Does nothing on other backends or for a binary with mode none; calling it again with the
// same binary is cheap. Throws FatalError (exit 3) when the binary cannot be loaded.
void xrt_prepare_kernel(Backend& b, const std::string& kernel, const NpuBinary& bin);

// The XRT memory group a BO was allocated in (diagnostics and tests); -1 for other backends
// and for ELF-mode BOs.
int xrt_bo_group(Backend& b, BoHandle bo);

// True when the backend runs on XRT's noop device (XCL_EMULATION_MODE=noop at creation).
bool xrt_is_noop(const Backend& b);

// What went wrong when an NPU run did not reach ERT_CMD_STATE_COMPLETED within the wait
// (`state` as xrt::run::wait returned it), as the `what` of a FatalError whose `where` names
// the kernel; empty for the completed state.
std::string xrt_run_failure(int state, int timeout_ms);

}  // namespace bod
#endif  // BOD_WITH_XRT
