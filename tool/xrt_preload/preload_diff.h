// The byte-range diff of libbod_xrt_preload.so, shared by its plain and its AVX2 file (both
// include this header; everything here has internal linkage, so no inline code compiled with
// AVX2 can end up called on a CPU without it).
//
// diff: the byte ranges where `now` differs from `seen` in [off, off + len) (or in several such
// segments, in increasing order, with the bytes between them known equal); changes less than
// 16 bytes apart make one range (an element whose high bytes kept their value is not cut in two);
// at most `cap` ranges, the last one then covering the rest. As it compares, it copies the
// changed bytes into `seen` (and into `img` when not null), so one pass over the memory does the
// comparison and the update of the recorder's copy.
#pragma once
#include <cstddef>
#include <cstdint>

// Not exported: the library's only exported symbols are the XRT functions it hooks.
#pragma GCC visibility push(hidden)
namespace bod_preload {

typedef uint64_t Span[2];  // offset, length

struct DiffOut {
  Span* r;
  size_t n, cap;
  uint64_t lo, hi;  // the range being grown (hi == 0: none)
};

static inline void diff_add(DiffOut& d, uint64_t lo, uint64_t hi) {  // changed bytes [lo, hi)
  constexpr uint64_t kGap = 16;
  if (d.n && lo - (d.r[d.n - 1][0] + d.r[d.n - 1][1]) < kGap) {
    d.r[d.n - 1][1] = hi - d.r[d.n - 1][0];
  } else if (d.n < d.cap) {
    d.r[d.n][0] = lo;
    d.r[d.n][1] = hi - lo;
    ++d.n;
  } else {
    d.r[d.n - 1][1] = hi - d.r[d.n - 1][0];
  }
}

static inline void diff_change(DiffOut& d, uint64_t a, uint64_t z) {
  constexpr uint64_t kGap = 16;
  if (d.hi && a - d.hi < kGap) {
    d.hi = z;
    return;
  }
  if (d.hi) diff_add(d, d.lo, d.hi);
  d.lo = a, d.hi = z;
}

static inline void diff_finish(DiffOut& d) {
  if (d.hi) diff_add(d, d.lo, d.hi);
}

// The bytes [i, end) one at a time.
static inline void diff_bytes(DiffOut& d, const uint8_t* now, uint8_t* seen, uint8_t* img,
                              uint64_t i, uint64_t end) {
  for (; i < end; ++i) {
    if (now[i] == seen[i]) continue;
    const uint8_t v = now[i];
    seen[i] = v;
    if (img) img[i] = v;
    diff_change(d, i, i + 1);
  }
}

// The bytes [off, off + len) diffed into d (segments of one diff in increasing order, then
// diff_finish), with AVX2 (preload_avx2.cpp): the same result as the plain diff.
void diff_avx2(DiffOut& d, const uint8_t* now, uint8_t* seen, uint8_t* img, uint64_t off,
               uint64_t len);
// The same with AVX-512BW (preload_avx512.cpp).
void diff_avx512(DiffOut& d, const uint8_t* now, uint8_t* seen, uint8_t* img, uint64_t off,
                 uint64_t len);

}  // namespace bod_preload
#pragma GCC visibility pop
