#include "core/pages.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

namespace bod {
namespace {

constexpr size_t kHuge = size_t(2) << 20;  // x86-64 transparent huge page
constexpr size_t kPage = 4096;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// /proc/self/status field in kB -> bytes.
size_t status_kb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  size_t len = std::strlen(field);
  while (std::getline(f, line))
    if (line.compare(0, len, field) == 0 && line.size() > len && line[len] == ':')
      return std::strtoull(line.c_str() + len + 1, nullptr, 10) * 1024;
  return 0;
}

}  // namespace

void PagesDeleter::operator()(uint8_t* p) const {
  if (!p) return;
  if (mapped)
    munmap(p, mapped);
  else
    std::free(p);
}

Pages alloc_pages(size_t n, bool zero) {
  n = n ? n : 1;
  if (n < kPagesFrom) {
    void* p = zero ? std::calloc(n, 1) : std::malloc(n);
    if (!p) throw std::bad_alloc();
    return Pages(static_cast<uint8_t*>(p), PagesDeleter{0});
  }
  // Map a huge page more than needed and trim both ends, so the buffer starts on a huge-page
  // boundary and every whole 2 MiB of it can be a huge page.
  size_t len = round_up(n, kPage);
  size_t want = len >= kHuge ? len + kHuge : len;
  void* m = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<uint8_t*>(m);
  uint8_t* p = base;
  if (want != len) {
    p = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(base), kHuge));
    if (p != base) munmap(base, static_cast<size_t>(p - base));
    size_t tail = want - static_cast<size_t>(p - base) - len;
    if (tail) munmap(p + len, tail);
    madvise(p, len, MADV_HUGEPAGE);  // advice only: ignored where huge pages are off
  }
  return Pages(p, PagesDeleter{len});
}

size_t current_rss() {
  return status_kb("VmRSS");
}
size_t peak_rss() {
  return status_kb("VmHWM");
}

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

}  // namespace bod
