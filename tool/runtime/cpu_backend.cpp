// CPU reference device: every BO owns two byte arrays, the host mapping and "device" memory.
// Only sync_to_device / sync_from_device move bytes between them, and kernels run on device
// memory, so a skipped write or sync leaves stale device bytes exactly as on an NPU.
#include <cstring>
#include <algorithm>
#include <list>
#include <map>
#include <memory>
#include <vector>

#include "core/result.h"
#include "runtime/backend.h"

namespace bod {
namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  BoHandle alloc(const BoDesc& d) override {
    Bo b{take(d.bytes, !d.overwritten), take(d.bytes, !d.overwritten), true};
    if (!free_.empty()) {
      bos_[free_.back()] = std::move(b);
      BoHandle h = free_.back();
      free_.pop_back();
      return h;
    }
    bos_.push_back(std::move(b));
    return static_cast<BoHandle>(bos_.size() - 1);
  }
  size_t size(BoHandle bo) const override { return at(bo).host.size(); }
  uint8_t* map(BoHandle bo) override { return at(bo).host.data(); }

  void sync_to_device(BoHandle bo, size_t bytes) override {
    auto& b = at(bo);
    std::memcpy(b.dev.data(), b.host.data(), std::min(bytes, b.host.size()));
  }
  void sync_from_device(BoHandle bo) override {
    auto& b = at(bo);
    std::memcpy(b.host.data(), b.dev.data(), b.dev.size());
  }
  const uint8_t* device_bytes(BoHandle bo) override { return at(bo).dev.data(); }

  DispatchInfo dispatch(const Dispatch& d) override {
    std::vector<TensorRef> slots(d.bos.size());
    for (size_t i = 0; i < d.bos.size(); ++i)
      slots[i] = TensorRef{at(d.bos[i]).dev.data(), d.slot_dtypes[i], d.slot_shapes[i]};
    if (d.body) d.body(slots);
    return DispatchInfo{true, false};
  }

  void release(BoHandle bo) override {
    auto& b = at(bo);
    // Keep the memory for the next BO of that size (the no-reuse engine allocates the same
    // sizes every call): no allocator round trip, no fresh page faults.
    size_t need = 2 * b.host.size();
    if (need <= kSpareCap) {
      // Evict the oldest spares (sizes no call has asked for since) to make room.
      while (spare_bytes_ + need > kSpareCap && !order_.empty()) {
        auto it = order_.front();
        order_.pop_front();
        spare_bytes_ -= it->first;
        spare_.erase(it);
      }
      spare_bytes_ += need;
      order_.push_back(spare_.emplace(b.host.size(), std::move(b.host)));
      order_.push_back(spare_.emplace(b.dev.size(), std::move(b.dev)));
    }
    b = Bo{};
    free_.push_back(bo);
  }

 private:
  // A byte buffer that can skip zero-filling (std::vector cannot).
  class Buf {
   public:
    Buf() = default;
    Buf(size_t n, bool zero) : p_(zero ? new uint8_t[n]() : new uint8_t[n]), n_(n) {}
    uint8_t* data() { return p_.get(); }
    const uint8_t* data() const { return p_.get(); }
    size_t size() const { return n_; }

   private:
    std::unique_ptr<uint8_t[]> p_;
    size_t n_ = 0;
  };
  struct Bo {
    Buf host, dev;
    bool live = false;
  };
  static constexpr size_t kSpareCap = size_t(1) << 30;  // bytes kept for reuse at most
  // Spares serve only BOs that will be overwritten whole (the no-reuse engine's): long-lived,
  // zero-filled BOs (the reuse engine's sets) get fresh memory, so each engine pays for its own.
  Buf take(size_t n, bool zero) {
    if (zero) return Buf(n, true);
    auto it = spare_.find(n);
    if (it == spare_.end()) return Buf(n, zero);
    Buf b = std::move(it->second);
    order_.erase(std::find(order_.begin(), order_.end(), it));
    spare_.erase(it);
    spare_bytes_ -= n;
    return b;
  }
  std::multimap<size_t, Buf> spare_;
  std::list<std::multimap<size_t, Buf>::iterator> order_;  // spares, oldest first
  size_t spare_bytes_ = 0;
  std::vector<BoHandle> free_;
  Bo& at(BoHandle h) { return bos_.at(h); }
  const Bo& at(BoHandle h) const { return bos_.at(h); }
  std::vector<Bo> bos_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

std::unique_ptr<Backend> make_backend(const BackendOptions& opt) {
  if (opt.kind == "cpu") return make_cpu_backend();
#ifdef BOD_WITH_XRT
  if (opt.kind == "xrt") return make_xrt_backend(opt);
#else
  if (opt.kind == "xrt")
    throw FatalError{{"--backend xrt",
                      "this bo-doctor was built without XRT; install libxrt-dev and rebuild "
                      "(cmake -DBO_DOCTOR_WITH_XRT=ON)",
                      Exit::backend}};
#endif
  throw FatalError{{"--backend", "unknown backend '" + opt.kind + "'; expected cpu or xrt",
                    Exit::bad_input}};
}

}  // namespace bod
