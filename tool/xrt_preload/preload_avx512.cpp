// libbod_xrt_preload.so's XXH3 for AVX-512: this file alone is compiled with -mavx512f
// (CMakeLists.txt) and is only called once the CPU reports AVX-512F (xrt_preload.cpp). It
// includes nothing but xxhash.h and preload_diff.h's declarations.
#if defined(BOD_PRELOAD_AVX512) && defined(__AVX512F__)
// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_epi32 is "uninitialized" by
// design); nothing but xxHash is compiled in this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define XXH_INLINE_ALL
#define XXH_VECTOR 3  // XXH_AVX512
#include <xxhash.h>

#include "preload_diff.h"

uint64_t bod_preload::xxh3_avx512(const void* data, size_t n) {
  return XXH3_64bits(data, n);
}
#endif
