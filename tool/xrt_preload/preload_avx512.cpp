// libbod_xrt_preload.so's AVX-512 code: this file alone is compiled with -mavx512f -mavx512bw
// (CMakeLists.txt); its diff is only called once the CPU reports AVX-512BW (xrt_preload.cpp). It
// includes nothing but the intrinsics and preload_diff.h (internal linkage only), so no inline code
// shared with other files gets AVX-512 instructions.
#if defined(BOD_PRELOAD_AVX512) && defined(__AVX512F__) && defined(__AVX512BW__)
// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_epi32 is "uninitialized" by
// design).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "preload_diff.h"

namespace bod_preload {

// The AVX2 diff's method (preload_avx2.cpp) on 64-byte vectors: 256 bytes compared at a time
// while they are equal; a vector whose every 8-byte group holds a changed byte, or with fewer
// than 16 equal bytes between any two changed ones, is one change; any other is taken 8 bytes at
// a time with the plain diff's rule. Only the changed bytes are stored.
void diff_avx512(DiffOut& d, const uint8_t* now, uint8_t* seen, uint8_t* img, uint64_t off,
                 uint64_t len) {
  const uint64_t end = off + len;
  uint64_t i = off;
  while (i + 64 <= end) {
    if (i + 256 <= end) {
      uint64_t any = 0;
      for (unsigned k = 0; k < 4; ++k)
        any |= _mm512_cmpneq_epi8_mask(_mm512_loadu_si512(now + i + 64 * k),
                                       _mm512_loadu_si512(seen + i + 64 * k));
      if (!any) {
        i += 256;
        continue;
      }
    }
    const uint64_t stop = i + 256 <= end ? i + 256 : end - (end - i) % 64;
    for (; i < stop; i += 64) {
      const __m512i a = _mm512_loadu_si512(now + i);
      const uint64_t ne = _mm512_cmpneq_epi8_mask(a, _mm512_loadu_si512(seen + i));
      if (!ne) continue;
      _mm512_mask_storeu_epi8(seen + i, ne, a);
      if (img) _mm512_mask_storeu_epi8(img + i, ne, a);
      const unsigned first = static_cast<unsigned>(__builtin_ctzll(ne));
      const unsigned last = 64 - static_cast<unsigned>(__builtin_clzll(ne));
      uint64_t r = 0;
      if ((ne - 0x0101010101010101ull) & ~ne & 0x8080808080808080ull) {
        r = ~ne & (last - first == 64 ? ~0ull : ((1ull << (last - first)) - 1) << first);
        r &= r >> 1;
        r &= r >> 2;
        r &= r >> 4;
        r &= r >> 8;
      }
      if (!r) {
        diff_change(d, i + first, i + last);
        continue;
      }
      for (unsigned k = 0; k < 8; ++k) {
        const unsigned m = static_cast<unsigned>(ne >> (8 * k)) & 0xffu;
        if (!m) continue;
        diff_change(d, i + 8 * k + static_cast<unsigned>(__builtin_ctz(m)),
                    i + 8 * k + 8 - static_cast<unsigned>(__builtin_clz(m) - 24));
      }
    }
  }
  diff_bytes(d, now, seen, img, i, end);
}

}  // namespace bod_preload
#endif
