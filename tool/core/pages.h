// Memory for large byte buffers (model tensors, BOs of the CPU device). Exists because a
// real-size plan allocates gigabytes: `new uint8_t[n]()` zero-fills (and so first-touches)
// every page single-threaded, and 4 KiB pages fault in slowly. Large buffers come straight
// from the kernel instead: zero until first written at no cost (an untouched page holds no
// memory, even when read), on transparent huge pages where the kernel allows it. Small
// buffers come from the heap.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace bod {

// Buffers from this size on are mapped pages (with MADV_HUGEPAGE); smaller ones heap blocks.
constexpr size_t kPagesFrom = size_t(1) << 20;

struct PagesDeleter {
  size_t mapped = 0;  // bytes mapped at the pointer; 0: a heap block
  void operator()(uint8_t* p) const;
};
using Pages = std::unique_ptr<uint8_t[], PagesDeleter>;

// `n` bytes (at least 1), zero-filled when `zero` (free for mapped pages, which are always
// zero). Throws std::bad_alloc when the system refuses.
Pages alloc_pages(size_t n, bool zero);

// Resident set figures of this process from /proc/self/status, in bytes (0 where unknown):
// the current one and the peak since start or since reset_peak_rss().
size_t current_rss();
size_t peak_rss();
// Resets the peak to the current figure (Linux: /proc/self/clear_refs "5"); false when the
// kernel does not allow it.
bool reset_peak_rss();

}  // namespace bod
