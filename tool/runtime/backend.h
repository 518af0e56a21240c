// The device layer both engines run on. A BO has a host-visible mapping and device-side
// bytes; a host write only reaches the device through sync_to_device, and a kernel only sees
// device bytes. The CPU reference device keeps the two apart so a skipped write or sync leaves
// stale device bytes exactly as on an NPU; the XRT backend uses real xrt::bo objects.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/npu_binary.h"
#include "core/tensor.h"

namespace bod {

using BoHandle = uint32_t;

// What to allocate. `slot` is the kernel argument index (xclbin: group_id(slot + 3)).
struct BoDesc {
  size_t bytes = 0;
  int slot = 0;
  std::string kernel;
  std::string label;         // for logs and errors: "rms_L0/slot 3 (wq)"
  bool overwritten = false;  // caller writes every byte before use: no need to zero-fill
};

// What the kernel body does to a slot's bytes (from the body's access analysis): lets the
// CPU device share one copy between a BO's host mapping and device side until the kernel
// writes it, and skip copying bytes a kernel overwrites before reading.
enum class SlotUse : uint8_t {
  read,       // never written
  write,      // written, in part or after a read: the old bytes matter
  overwrite,  // every byte of the slot's view written before any read
};

// One kernel launch on a list of BOs (one per slot, in slot order).
struct Dispatch {
  std::string kernel;
  const NpuBinary* binary = nullptr;  // null or mode none: run the reference body on the host
  std::vector<BoHandle> bos;
  std::vector<DType> slot_dtypes;  // how the body views each BO
  std::vector<Shape> slot_shapes;
  std::vector<SlotUse> slot_use;  // per slot; empty: every slot may be written
  // The reference body over the device bytes of each slot (TensorRefs in slot order).
  std::function<void(const std::vector<TensorRef>&)> body;
};

struct DispatchInfo {
  bool host_emulated = true;  // true when the reference body ran on the host, not an NPU
  bool npu_launched = false;  // true when an NPU binary was launched (noop device included)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Allocates a BO, zero-filled unless desc.overwritten. Throws FatalError (exit 3) when the device
  // refuses.
  virtual BoHandle alloc(const BoDesc& desc) = 0;
  virtual size_t size(BoHandle bo) const = 0;
  // Host-visible mapping, writable. On the CPU device its address can change at the next
  // write or sync of the BO (copy on write): take it again rather than keep it.
  virtual uint8_t* map(BoHandle bo) = 0;
  // The host mapping's current bytes, read only: no copy is made (a zero-copy view of an
  // output reads the BO through this, so it sees whatever the BO's mapping holds now).
  virtual const uint8_t* host_bytes(BoHandle bo) { return map(bo); }
  // Host write: copies `bytes` bytes from `src` to the start of the mapping. `stable`: src
  // stays unchanged and alive for the backend's lifetime (a model tensor), so a whole write
  // may point the mapping at src instead of copying (the CPU device does: copy on write).
  virtual void write(BoHandle bo, const uint8_t* src, size_t bytes, bool stable) {
    (void)stable;
    std::memmove(map(bo), src, std::min(bytes, size(bo)));
  }
  // Host mapping -> device, first `bytes` bytes (a prefix write syncs only the prefix).
  virtual void sync_to_device(BoHandle bo, size_t bytes) = 0;
  // Device -> host mapping, whole BO.
  virtual void sync_from_device(BoHandle bo) = 0;
  // Device-side bytes as the kernel sees them, for hashing and byte diffs. CPU: device memory
  // directly (mapping untouched); XRT: sync from device, then the mapping.
  virtual const uint8_t* device_bytes(BoHandle bo) = 0;
  // Launches the kernel; throws FatalError on a device failure or timeout.
  virtual DispatchInfo dispatch(const Dispatch& d) = 0;
  // Frees a BO (no-reuse engine BOs live for one call).
  virtual void release(BoHandle bo) = 0;
};

struct BackendOptions {
  std::string kind = "cpu";  // cpu | xrt
  int device = 0;
  int timeout_ms = 10000;  // NPU run wait timeout
  // CPU device: a BO's host mapping and device side share one block until either is written,
  // and a whole write from a stable host array shares the array (copy on write; a real-size
  // plan then needs about its weights' size in memory). false: every write and sync copies,
  // as a transfer does, so measured times include the copies (timed runs).
  bool share = true;
};

// Creates the backend; throws FatalError (exit 3) when it is unavailable.
std::unique_ptr<Backend> make_backend(const BackendOptions& opt);
std::unique_ptr<Backend> make_cpu_backend(bool share = true);
#ifdef BOD_WITH_XRT
std::unique_ptr<Backend> make_xrt_backend(const BackendOptions& opt);
#endif

}  // namespace bod
