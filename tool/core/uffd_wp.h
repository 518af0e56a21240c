// Write tracking of host pages through Linux's userfaultfd write-protection in asynchronous mode
// (UFFD_FEATURE_WP_ASYNC: the kernel resolves every write fault itself, so no handler thread
// exists and the program's writes proceed as without a tracker) and the PAGEMAP_SCAN ioctl of
// /proc/self/pagemap (Linux 6.7+), which lists the pages written since the last look and protects
// them again in one call. The kernel interface only, header-only and with no project
// dependency: both the Python recorder's libbod_hash.so (tool/recorder/native/write_track.cpp)
// and the XRT preload library (tool/xrt_preload), which links no project code, use it; each
// proves it on a probe buffer of its own before tracking anything.
#pragma once
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace bod::uffd_wp {

// From linux/userfaultfd.h and linux/fs.h of Linux 6.7+ (older headers lack them).
constexpr uint64_t kFeatureWpUnpopulated = 1ull << 13;
constexpr uint64_t kFeatureWpAsync = 1ull << 15;
struct PageRegion {
  uint64_t start, end, categories;
};
struct PmScanArg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
      category_mask, category_anyof_mask, return_mask;
};
constexpr uint64_t kPageIsWritten = 1u << 1;
constexpr uint64_t kPageIsPresent = 1u << 3;
constexpr uint64_t kPageIsSwapped = 1u << 4;
constexpr uint64_t kScanWpMatching = 1u << 0;
constexpr uint64_t kScanCheckWpAsync = 1u << 1;
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PmScanArg);

// Opens a userfaultfd with asynchronous write-protection (also of unpopulated pages) and
// /proc/self/pagemap. 0, or the errno of what failed (ENOSYS: the kernel lacks a feature).
inline int open_tracker(int* uffd, int* pagemap) {
  int fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (fd < 0) fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1));
  if (fd < 0) return errno;
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = kFeatureWpAsync | kFeatureWpUnpopulated;
  if (ioctl(fd, UFFDIO_API, &api) != 0) {
    int e = errno;
    close(fd);
    return e == EINVAL ? ENOSYS : e;
  }
  int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pm < 0) {
    int e = errno;
    close(fd);
    return e;
  }
  *uffd = fd;
  *pagemap = pm;
  return 0;
}

// Write-protects [start, start + len) (registered): 0 or an errno.
inline int protect(int uffd, uintptr_t start, uint64_t len) {
  uffdio_writeprotect wp{};
  wp.range.start = start;
  wp.range.len = len;
  wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
  return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) == 0 ? 0 : errno;
}

// Registers [start, start + len) (whole pages) for write protection and protects it: 0 or an
// errno (then it is not registered).
inline int track(int uffd, uintptr_t start, uint64_t len) {
  uffdio_register reg{};
  reg.range.start = start;
  reg.range.len = len;
  reg.mode = UFFDIO_REGISTER_MODE_WP;
  if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) return errno;
  int e = protect(uffd, start, len);
  if (e) {
    uffdio_range r{start, len};
    ioctl(uffd, UFFDIO_UNREGISTER, &r);
  }
  return e;
}

// Stops tracking a range (its memory may be gone already: errors are ignored).
inline void untrack(int uffd, uintptr_t start, uint64_t len) {
  uffdio_range r{start, len};
  ioctl(uffd, UFFDIO_UNREGISTER, &r);
}

// The pages of [start, end) (whole pages) of the given categories (all of `all`, or any of
// `anyof`), as calls of f(lo, hi) in increasing order; with `reprotect` the written ones are
// protected again. 0, or an errno (EIO: the scan made no progress).
template <typename F>
int scan(int pagemap, uintptr_t start, uintptr_t end, uint64_t all, uint64_t anyof, bool reprotect,
         F f) {
  PageRegion vec[256];
  while (start < end) {
    PmScanArg a{};
    a.size = sizeof a;
    a.flags = reprotect ? (kScanWpMatching | kScanCheckWpAsync) : 0;
    a.start = start;
    a.end = end;
    a.vec = reinterpret_cast<uint64_t>(vec);
    a.vec_len = sizeof vec / sizeof vec[0];
    a.category_mask = all;
    a.category_anyof_mask = anyof;
    a.return_mask = all | anyof;
    long n = ioctl(pagemap, kPagemapScan, &a);
    if (n < 0) return errno;
    for (long i = 0; i < n; ++i) f(vec[i].start, vec[i].end);
    if (a.walk_end <= start) return EIO;
    start = a.walk_end;
  }
  return 0;
}

}  // namespace bod::uffd_wp
