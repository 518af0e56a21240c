// Write tracking of host memory for the Python recorder (part of libbod_hash.so): which pages of
// a tracked range were written since the recorder last looked, and which pages are present at
// all, through Linux's userfaultfd write-protection in asynchronous mode
// (UFFD_FEATURE_WP_ASYNC: the kernel resolves every write fault itself, so no handler thread
// exists and writes by the program, its threads or the kernel on its behalf (read(2) into the
// array) proceed exactly as without the recorder) and the PAGEMAP_SCAN ioctl of
// /proc/self/pagemap (Linux 6.7+). bod_wt_init() checks all of it on a probe buffer before
// anything is tracked; where something is missing it returns an error and the recorder hashes
// every byte (docs/recording.md, "Hashing only what can have changed").
//
// bod_wt_hash_present hashes the 64 KiB chunks of private anonymous memory reading only its
// pages present or swapped out; a page neither reads as zeros and is not touched (reading it
// would fault it in: ~10 us a page, and a fresh 32 MiB np.zeros has its first page present).
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/hash.h"
#include "core/uffd_wp.h"

namespace {

using namespace bod::uffd_wp;

int g_uffd = -1;
int g_pagemap = -1;
size_t g_page = 4096;

// Marks in out[(page_start - base) / unit] every unit of [start, end) holding a page of the
// given categories (any of `anyof`, or all of `all`); with reprotect the written ones are
// protected again. Returns 0 or an errno.
int scan(uintptr_t start, uintptr_t end, uint64_t all, uint64_t anyof, bool reprotect,
         uintptr_t base, size_t unit, uint8_t* out, size_t n_out) {
  start -= start % g_page;  // the ioctl takes whole pages
  end += (g_page - end % g_page) % g_page;
  return bod::uffd_wp::scan(
      g_pagemap, start, end, all, anyof, reprotect, [&](uint64_t region_lo, uint64_t region_hi) {
        uint64_t lo = region_lo < base ? base : region_lo;
        if (region_hi <= lo) return;
        size_t first = (lo - base) / unit, last = (region_hi - 1 - base) / unit;
        for (size_t u = first; u <= last && u < n_out; ++u) out[u] = 1;
      });
}

// The trace chunk hash of n <= kHashChunk zero bytes.
uint64_t zero_chunk_hash(size_t n) {
  static const std::vector<uint8_t> zeros(bod::kHashChunk, 0);
  static const uint64_t full = bod::hash_chunk(zeros.data(), bod::kHashChunk);
  return n == bod::kHashChunk ? full : bod::hash_chunk(zeros.data(), n);
}

// Whether the n bytes at p are all zero.
bool all_zero(const uint8_t* p, size_t n) {
  static const uint8_t zeros[4096] = {};
  while (n > 0) {
    size_t m = n < sizeof zeros ? n : sizeof zeros;
    if (std::memcmp(p, zeros, m) != 0) return false;
    p += m;
    n -= m;
  }
  return true;
}

}  // namespace

extern "C" {

// Opens the tracker and proves it on a probe buffer: a write to one page shows as written and
// no other page does, an untouched page is not present. 0, or the errno of what failed (ENOSYS
// when the kernel lacks a feature).
__attribute__((visibility("default"))) int bod_wt_init() {
  if (g_uffd >= 0) return 0;
  g_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (int e = open_tracker(&g_uffd, &g_pagemap)) return e;
  // The probe: 4 pages, tracked; page 1 written; then exactly page 1 written and present.
  size_t len = 4 * g_page;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int err = p == MAP_FAILED ? errno : 0;
  auto base = reinterpret_cast<uintptr_t>(p);
  uint8_t written[4] = {0, 0, 0, 0}, present[4] = {0, 0, 0, 0};
  if (!err) {  // presence, before tracking (a tracked page never written shows as swapped)
    static_cast<volatile uint8_t*>(p)[g_page + 5] = 1;
    err =
        scan(base, base + len, 0, kPageIsPresent | kPageIsSwapped, false, base, g_page, present, 4);
  }
  if (!err) err = track(g_uffd, base, len);
  if (!err) {
    static_cast<volatile uint8_t*>(p)[2 * g_page + 5] = 1;
    err = scan(base, base + len, kPageIsWritten, 0, true, base, g_page, written, 4);
  }
  if (!err && !(written[2] && !written[0] && !written[1] && !written[3] && present[1] &&
                !present[0] && !present[2] && !present[3]))
    err = ENOSYS;
  if (p != MAP_FAILED) munmap(p, len);
  if (err) {
    close(g_uffd);
    close(g_pagemap);
    g_uffd = g_pagemap = -1;
  }
  return err;
}

__attribute__((visibility("default"))) size_t bod_wt_page_size() {
  return g_page;
}

// Tracks the whole pages inside [addr, addr + len): registers them for write protection and
// protects them. 0 or an errno (the range is then not tracked).
__attribute__((visibility("default"))) int bod_wt_track(uintptr_t addr, size_t len) {
  if (g_uffd < 0) return ENODEV;
  return track(g_uffd, addr, len);
}

// Stops tracking a range (its memory may be gone already: errors are ignored).
__attribute__((visibility("default"))) void bod_wt_untrack(uintptr_t addr, size_t len) {
  if (g_uffd < 0) return;
  untrack(g_uffd, addr, len);
}

// Sets out[u] = 1 for every `unit` bytes from `base` (u < n_out) holding a page of the tracked
// range [addr, addr + len) written since it was tracked or last asked, and protects those pages
// again. 0 or an errno (then the caller must treat the whole range as written).
__attribute__((visibility("default"))) int bod_wt_written(uintptr_t addr, size_t len,
                                                          uintptr_t base, size_t unit, uint8_t* out,
                                                          size_t n_out) {
  if (g_uffd < 0) return ENODEV;
  return scan(addr, addr + len, kPageIsWritten, 0, true, base, unit, out, n_out);
}

// Sets out[u] = 1 for every `unit` bytes from `base` holding a page of [addr, addr + len) that
// is present or swapped out (one never touched in private anonymous memory reads as zeros). Ask
// before tracking the range: a tracked page never written shows as swapped.
__attribute__((visibility("default"))) int bod_wt_present(uintptr_t addr, size_t len,
                                                          uintptr_t base, size_t unit, uint8_t* out,
                                                          size_t n_out) {
  if (g_pagemap < 0) return ENODEV;
  return scan(addr, addr + len, 0, kPageIsPresent | kPageIsSwapped, false, base, unit, out, n_out);
}

// The trace chunk hashes (core/hash.h: hash_chunk of each kHashChunk bytes from addr, the last
// chunk possibly short) of the n bytes at addr into out[0..k), k = hash_chunk_count(n), reading
// only the pages present or swapped out; every other page is taken as zeros without being
// touched. Only sound for private anonymous memory (a page never touched, or dropped, reads as
// zeros there): the caller knows it is. A chunk with no such page gets the zero chunk's hash, a
// chunk all of whose pages are present is hashed where it lies, and the present parts of the
// others are copied into zeros and hashed there. counts[0]: the chunks with a page present,
// counts[1]: the bytes read. 0 or an errno (then out is not all written: hash another way).
__attribute__((visibility("default"))) int bod_wt_hash_present(uintptr_t addr, size_t n,
                                                               uint64_t* out, size_t k,
                                                               uint64_t* counts) {
  if (g_pagemap < 0) return ENODEV;
  constexpr size_t kChunk = bod::kHashChunk;
  if (n == 0 || k != bod::hash_chunk_count(n) || addr + n < addr) return EINVAL;
  const size_t pg = g_page;
  const uintptr_t p0 = addr - addr % pg, end = addr + n;
  const size_t n_pages = (end - p0 + pg - 1) / pg;
  std::vector<uint8_t> present(n_pages, 0);
  if (int e = scan(addr, end, 0, kPageIsPresent | kPageIsSwapped, false, p0, pg, present.data(),
                   n_pages))
    return e;
  std::vector<uint8_t> scratch;
  uint64_t chunks_read = 0, bytes_read = 0;
  for (size_t i = 0; i < k; ++i) {
    const uintptr_t c0 = addr + i * kChunk, c1 = end - c0 < kChunk ? end : c0 + kChunk;
    const size_t len = c1 - c0, pa = (c0 - p0) / pg, pb = (c1 - 1 - p0) / pg;
    size_t in = 0;
    for (size_t j = pa; j <= pb; ++j) in += present[j];
    if (in == 0) {
      out[i] = zero_chunk_hash(len);
      continue;
    }
    ++chunks_read;
    if (in == pb - pa + 1) {
      out[i] = bod::hash_chunk(reinterpret_cast<const void*>(c0), len);
      bytes_read += len;
      continue;
    }
    // Partly in memory: its present bytes over zeros. When those bytes are zeros too (the
    // first page of a fresh np.zeros, which the allocator touched), the chunk is all zeros.
    bool zero = true;
    for (size_t j = pa; j <= pb; ++j) {
      if (!present[j]) continue;
      uintptr_t lo = p0 + j * pg, hi = lo + pg;
      if (lo < c0) lo = c0;
      if (hi > c1) hi = c1;
      bytes_read += hi - lo;
      if (zero) zero = all_zero(reinterpret_cast<const uint8_t*>(lo), hi - lo);
    }
    if (zero) {
      out[i] = zero_chunk_hash(len);
      continue;
    }
    if (scratch.empty()) scratch.resize(kChunk);
    std::memset(scratch.data(), 0, len);
    for (size_t j = pa; j <= pb; ++j) {
      if (!present[j]) continue;
      uintptr_t lo = p0 + j * pg, hi = lo + pg;
      if (lo < c0) lo = c0;
      if (hi > c1) hi = c1;
      std::memcpy(scratch.data() + (lo - c0), reinterpret_cast<const void*>(lo), hi - lo);
    }
    out[i] = bod::hash_chunk(scratch.data(), len);
  }
  if (counts) {
    counts[0] = chunks_read;
    counts[1] = bytes_read;
  }
  return 0;
}

// The re-hash of a tracked array seen again (the recorder's HostHashes.refresh): the n bytes at
// addr, whose whole pages [start, start + len) are tracked (len > 0), chunk hashes in
// chunks[0..k). Re-hashes every chunk holding a tracked page written since the last look (and
// protects those pages again), and the chunks holding the untracked bytes at the two ends (the
// partial pages the array shares with other memory) unless those bytes hash as they did at the
// last look: ends[0] says whether ends[1] (the head's hash) and ends[2] (the tail's) are known,
// and they are updated here (taken before the chunks they lie in are hashed, so a write in
// between only makes the next look read them again). counts[0]: chunks re-hashed, counts[1]:
// bytes read; *combined: the array's trace hash from its chunks. 0 or an errno (then nothing
// is known: the caller re-hashes the whole array).
__attribute__((visibility("default"))) int bod_wt_refresh(uintptr_t addr, size_t n, uintptr_t start,
                                                          size_t len, uint64_t* chunks, size_t k,
                                                          uint64_t* ends, uint64_t* counts,
                                                          uint64_t* combined) {
  if (g_uffd < 0) return ENODEV;
  constexpr size_t kChunk = bod::kHashChunk;
  const uintptr_t end = addr + n;
  if (n == 0 || len == 0 || k != bod::hash_chunk_count(n) || end < addr || start < addr ||
      start + len > end)
    return EINVAL;
  std::vector<uint8_t> dirty(k, 0);
  if (int e = scan(start, start + len, kPageIsWritten, 0, true, addr, kChunk, dirty.data(), k))
    return e;
  uint64_t read = 0;
  // The ends: the head [addr, start) lies in chunk 0, the tail [start + len, end) in the chunks
  // from tail_first on. Their bytes are compared with the last look's first; a chunk holding
  // end bytes that is re-hashed is then hashed from a copy, and the ends' hashes kept for the
  // next look are taken from the same copy, so the two always describe the same bytes (another
  // thread may write the ends meanwhile: the next look then sees them differ).
  const uintptr_t tail = start + len;
  const size_t tail_first = tail < end ? (tail - addr) / kChunk : k;
  const bool known = ends[0] != 0;
  if (start > addr &&
      !(known && ends[1] == bod::hash_chunk(reinterpret_cast<const void*>(addr), start - addr)))
    dirty[0] = 1;
  if (tail < end &&
      !(known && ends[2] == bod::hash_chunk(reinterpret_cast<const void*>(tail), end - tail)))
    dirty[tail_first] = 1;
  read += (start - addr) + (end - tail);
  // A tail chunk re-hashed: all of them (the tail's hash covers them all)
  bool tail_dirty = false;
  for (size_t u = tail_first; u < k; ++u) tail_dirty = tail_dirty || dirty[u];
  for (size_t u = tail_first; tail_dirty && u < k; ++u) dirty[u] = 1;
  const bool head_dirty = start > addr && dirty[0];
  // The chunks hashed from copies: chunk 0 for the head, [tail_first, k) for the tail (the
  // tail's copy alone when it holds chunk 0 too)
  const bool head_alone = head_dirty && !(tail_dirty && tail_first == 0);
  std::vector<uint8_t> head_copy, tail_copy;
  if (head_alone) {
    const size_t clen = n < kChunk ? n : kChunk;
    head_copy.assign(reinterpret_cast<const uint8_t*>(addr),
                     reinterpret_cast<const uint8_t*>(addr + clen));
    ends[1] = bod::hash_chunk(head_copy.data(), start - addr);
  }
  const uintptr_t tail_lo = addr + tail_first * kChunk;
  if (tail_dirty) {
    tail_copy.assign(reinterpret_cast<const uint8_t*>(tail_lo),
                     reinterpret_cast<const uint8_t*>(end));
    ends[2] = bod::hash_chunk(tail_copy.data() + (tail - tail_lo), end - tail);
    if (head_dirty && !head_alone) ends[1] = bod::hash_chunk(tail_copy.data(), start - addr);
  }
  if (!known) {  // the first look: both ends were re-hashed from copies just now
    ends[0] = 1;
    if (start <= addr) ends[1] = 0;
    if (tail >= end) ends[2] = 0;
  }
  uint64_t rehashed = 0;
  for (size_t i = 0; i < k; ++i) {
    if (!dirty[i]) continue;
    const uintptr_t c0 = addr + i * kChunk;
    const size_t clen = end - c0 < kChunk ? end - c0 : kChunk;
    const void* at = reinterpret_cast<const void*>(c0);
    if (tail_dirty && i >= tail_first)
      at = tail_copy.data() + (i - tail_first) * kChunk;
    else if (i == 0 && head_alone)
      at = head_copy.data();
    chunks[i] = bod::hash_chunk(at, clen);
    read += clen;
    ++rehashed;
  }
  counts[0] = rehashed;
  counts[1] = read;
  *combined = k == 1 ? chunks[0] : bod::combine_chunk_hashes(chunks, k);
  return 0;
}

}  // extern "C"
