// libbod_xrt_preload.so's AVX2 code: this file alone is compiled with -mavx2 (CMakeLists.txt) and
// is only called once the CPU reports AVX2 (xrt_preload.cpp). It includes nothing but the
// intrinsics and preload_diff.h (internal linkage only), so no inline code shared with other
// files gets AVX2 instructions.
#if defined(BOD_PRELOAD_AVX2) && defined(__AVX2__)
#include <immintrin.h>

#include "preload_diff.h"

namespace bod_preload {

// 128 bytes compared at a time while they are equal, then 32 at a time: a 32-byte vector with
// fewer than 16 equal bytes between any two of its changed bytes is one change (from its first
// to its last changed byte), any other is taken 8 bytes (one mask byte) at a time with the plain
// diff's rule; the result is the same.
void diff_avx2(DiffOut& d, const uint8_t* now, uint8_t* seen, uint8_t* img, uint64_t off,
               uint64_t len) {
  const uint64_t end = off + len;
  uint64_t i = off;
  while (i + 32 <= end) {
    if (i + 128 <= end) {
      const auto* p = reinterpret_cast<const __m256i*>(now + i);
      const auto* q = reinterpret_cast<const __m256i*>(seen + i);
      __m256i e0 = _mm256_cmpeq_epi8(_mm256_loadu_si256(p), _mm256_loadu_si256(q));
      __m256i e1 = _mm256_cmpeq_epi8(_mm256_loadu_si256(p + 1), _mm256_loadu_si256(q + 1));
      __m256i e2 = _mm256_cmpeq_epi8(_mm256_loadu_si256(p + 2), _mm256_loadu_si256(q + 2));
      __m256i e3 = _mm256_cmpeq_epi8(_mm256_loadu_si256(p + 3), _mm256_loadu_si256(q + 3));
      __m256i all = _mm256_and_si256(_mm256_and_si256(e0, e1), _mm256_and_si256(e2, e3));
      if (static_cast<uint32_t>(_mm256_movemask_epi8(all)) == 0xffffffffu) {
        i += 128;
        continue;
      }
    }
    const uint64_t stop = i + 128 <= end ? i + 128 : end - (end - i) % 32;
    for (; i < stop; i += 32) {
      __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(now + i));
      __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(seen + i));
      __m256i eq = _mm256_cmpeq_epi8(a, b);
      const uint32_t ne = ~static_cast<uint32_t>(_mm256_movemask_epi8(eq));
      if (!ne) continue;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(seen + i), a);
      if (img) {
        auto* ip = reinterpret_cast<__m256i*>(img + i);
        _mm256_storeu_si256(ip, _mm256_blendv_epi8(a, _mm256_loadu_si256(ip), eq));
      }
      // From the first to the last changed byte of the vector: one change when no 16 equal
      // bytes lie between them (bit k of r: bytes k..k+15 all equal), as the rule merges them.
      // Every 8-byte group holding a changed byte (no zero mask byte) settles it at once: 16
      // equal bytes in a row always fill a whole group.
      const unsigned first = static_cast<unsigned>(__builtin_ctz(ne));
      const unsigned last = 32 - static_cast<unsigned>(__builtin_clz(ne));
      uint32_t r = 0;
      if ((ne - 0x01010101u) & ~ne & 0x80808080u) {
        r = ~ne & (last - first == 32 ? 0xffffffffu : ((1u << (last - first)) - 1) << first);
        r &= r >> 1;
        r &= r >> 2;
        r &= r >> 4;
        r &= r >> 8;
      }
      if (!r) {
        diff_change(d, i + first, i + last);
        continue;
      }
      for (unsigned k = 0; k < 4; ++k) {
        const unsigned m = (ne >> (8 * k)) & 0xffu;
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
