// CPU reference device: every BO has a host mapping and "device" memory. Only sync_to_device
// / sync_from_device move bytes between them, and kernels run on device memory, so a skipped
// write or sync leaves stale device bytes exactly as on an NPU.
//
// Memory: the two sides of a BO are references to byte blocks, shared until one side is
// written (copy on write). A sync shares the block instead of copying it; a whole write from
// a stable host array (a model tensor) points the mapping at the array; a kernel gets its
// own copy of a slot only when its body writes that slot (SlotUse), and no copy of the old
// bytes when the body overwrites the slot before reading it. A static weight BO therefore
// costs no memory beyond the model tensor it was written from, on either engine.
#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <vector>

#include "core/pages.h"
#include "core/result.h"
#include "runtime/backend.h"

namespace bod {

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(bool share) : share_(share) {}
  std::string name() const override { return "cpu"; }

  BoHandle alloc(const BoDesc& d) override {
    Bo b;
    b.n = d.bytes;
    if (d.overwritten) {
      b.host = fresh(d.bytes, false);  // written whole before use; device side comes at sync
    } else {
      b.host = fresh(d.bytes, true);  // zeros, shared by both sides until one is written
      b.dev = share_ ? b.host : fresh(d.bytes, true);
    }
    if (!free_.empty()) {
      BoHandle h = free_.back();
      free_.pop_back();
      bos_[h] = std::move(b);
      return h;
    }
    bos_.push_back(std::move(b));
    return static_cast<BoHandle>(bos_.size() - 1);
  }
  size_t size(BoHandle bo) const override { return at(bo).n; }
  uint8_t* map(BoHandle bo) override {
    Bo& b = at(bo);
    return own(b, b.host, true);
  }
  const uint8_t* host_bytes(BoHandle bo) override { return at(bo).host.p(); }

  void write(BoHandle bo, const uint8_t* src, size_t bytes, bool stable) override {
    Bo& b = at(bo);
    bytes = std::min(bytes, b.n);
    if (share_ && stable && bytes == b.n && bytes > 0) {
      Side ext{std::shared_ptr<uint8_t>(const_cast<uint8_t*>(src), [](uint8_t*) {}), b.n, false};
      recycle(b.host);
      b.host = std::move(ext);
      return;
    }
    // In place when the block is this side's alone (memmove: src may lie inside it);
    // otherwise own() gives a new block and the old one stays alive with its other holder.
    std::memmove(own(b, b.host, bytes < b.n), src, bytes);
  }

  void sync_to_device(BoHandle bo, size_t bytes) override {
    Bo& b = at(bo);
    bytes = std::min(bytes, b.n);
    if (share_ && bytes == b.n) {
      if (b.dev.mem == b.host.mem) return;
      recycle(b.dev);
      b.dev = b.host;
      return;
    }
    if (bytes) std::memcpy(own(b, b.dev, bytes < b.n), b.host.p(), bytes);
  }
  void sync_from_device(BoHandle bo) override {
    Bo& b = at(bo);
    device(b);
    if (b.host.mem == b.dev.mem) return;
    if (!share_) {
      std::memcpy(own(b, b.host, false), b.dev.p(), b.n);
      return;
    }
    recycle(b.host);
    b.host = b.dev;
  }
  const uint8_t* device_bytes(BoHandle bo) override { return device(at(bo)); }

  DispatchInfo dispatch(const Dispatch& d) override {
    // Each BO the body writes gets a device block of its own first (once, however many
    // slots name it), without the old bytes when its one slot is overwritten whole.
    struct Need {
      BoHandle bo;
      int slots = 0;
      bool write = false, keep = false;
    };
    std::vector<Need> need;  // a few slots: a linear search beats a map's allocations
    need.reserve(d.bos.size());
    for (size_t i = 0; i < d.bos.size(); ++i) {
      auto it =
          std::find_if(need.begin(), need.end(), [&](const Need& n) { return n.bo == d.bos[i]; });
      Need& n = it != need.end() ? *it : need.emplace_back(Need{d.bos[i]});
      n.slots++;
      SlotUse u = d.slot_use.empty() ? SlotUse::write : d.slot_use[i];
      if (u == SlotUse::read) continue;
      n.write = true;
      size_t view = static_cast<size_t>(numel(d.slot_shapes[i])) * dtype_size(d.slot_dtypes[i]);
      if (u != SlotUse::overwrite || view != at(d.bos[i]).n) n.keep = true;
    }
    for (const Need& n : need) {
      Bo& b = at(n.bo);
      if (n.write)
        own(b, b.dev, n.keep || n.slots > 1);
      else
        device(b);
    }
    std::vector<TensorRef> slots(d.bos.size());
    for (size_t i = 0; i < d.bos.size(); ++i)
      slots[i] = TensorRef{at(d.bos[i]).dev.p(), d.slot_dtypes[i], d.slot_shapes[i]};
    if (d.body) d.body(slots);
    return DispatchInfo{true, false};
  }

  void release(BoHandle bo) override {
    Bo& b = at(bo);
    recycle(b.host);
    recycle(b.dev);
    b = Bo{};
    free_.push_back(bo);
  }

 private:
  // One side of a BO: a reference to a block, owned (our allocation) or a stable host array.
  struct Side {
    std::shared_ptr<uint8_t> mem;
    size_t n = 0;  // bytes of the block
    bool owned = false;
    uint8_t* p() const { return mem.get(); }
  };
  struct Bo {
    Side host, dev;  // dev.mem null: never synced (undefined: reads as zeros)
    size_t n = 0;
  };

  static Side wrap(Pages pg, size_t n) {
    PagesDeleter del = pg.get_deleter();
    return Side{std::shared_ptr<uint8_t>(pg.release(), del), n, true};
  }

  // A block of n bytes: zero-filled, or (zero false) any bytes, from the spares when one of
  // that size is there. Spares serve only BOs that will be overwritten (the no-reuse
  // engine's, written whole every call), so each engine pays for its own long-lived memory.
  Side fresh(size_t n, bool zero) {
    if (!zero) {
      auto it = spare_.find(n);
      if (it != spare_.end()) {
        Side s{std::move(it->second), n, true};
        order_.erase(std::find(order_.begin(), order_.end(), it));
        spare_.erase(it);
        spare_bytes_ -= n;
        return s;
      }
    }
    return wrap(alloc_pages(n, zero), n);
  }

  // The side's block, made this side's alone first (copy on write); `keep`: with its bytes.
  uint8_t* own(Bo& b, Side& s, bool keep) {
    if (s.owned && s.mem.use_count() == 1) return s.p();
    Side mine = fresh(b.n, keep && !s.mem);  // zeros only where there are no bytes to keep
    if (keep && s.mem) std::memcpy(mine.p(), s.p(), b.n);
    recycle(s);
    s = std::move(mine);
    return s.p();
  }

  // The device side, materialized (zeros) when never synced.
  uint8_t* device(Bo& b) {
    if (!b.dev.mem) b.dev = fresh(b.n, true);
    return b.dev.p();
  }

  // Drops a side's reference; a block nobody else holds is kept for the next BO of its size
  // (the no-reuse engine allocates the same sizes every call: no fresh page faults).
  void recycle(Side& s) {
    if (!s.owned || s.mem.use_count() != 1 || !s.mem) {
      s = Side{};
      return;
    }
    size_t n = s.n;
    if (n && n <= kSpareCap) {
      while (spare_bytes_ + n > kSpareCap && !order_.empty()) {  // evict the oldest
        auto it = order_.front();
        order_.pop_front();
        spare_bytes_ -= it->first;
        spare_.erase(it);
      }
      spare_bytes_ += n;
      order_.push_back(spare_.emplace(n, std::move(s.mem)));
    }
    s = Side{};
  }
  static constexpr size_t kSpareCap = size_t(1) << 30;  // bytes kept for reuse at most
  const bool share_;  // false: every write and sync copies (BackendOptions::share)
  std::multimap<size_t, std::shared_ptr<uint8_t>> spare_;
  std::list<std::multimap<size_t, std::shared_ptr<uint8_t>>::iterator> order_;  // oldest first
  size_t spare_bytes_ = 0;
  std::vector<BoHandle> free_;
  Bo& at(BoHandle h) { return bos_.at(h); }
  const Bo& at(BoHandle h) const { return bos_.at(h); }
  std::vector<Bo> bos_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(bool share) {
  return std::make_unique<CpuBackend>(share);
}

std::unique_ptr<Backend> make_backend(const BackendOptions& opt) {
  if (opt.kind == "cpu") return make_cpu_backend(opt.share);
#ifdef BOD_WITH_XRT
  if (opt.kind == "xrt") return make_xrt_backend(opt);
#else
  if (opt.kind == "xrt")
    throw FatalError{{"--backend xrt",
                      "this bo-doctor was built without XRT; install libxrt-dev and rebuild "
                      "(cmake -DBO_DOCTOR_WITH_XRT=ON)",
                      Exit::backend}};
#endif
  throw FatalError{
      {"--backend", "unknown backend '" + opt.kind + "'; expected cpu or xrt", Exit::bad_input}};
}

}  // namespace bod
