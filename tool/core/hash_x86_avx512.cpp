// XXH3-64 inline, AVX-512F: compiled with -mavx512f where the compiler supports it
// (CMakeLists.txt), called only once the CPU reports AVX-512F (hash.cpp).
#if defined(BOD_HASH_AVX512) && defined(__AVX512F__)
// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_epi32 is "uninitialized" by
// design); nothing but xxHash is compiled in this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define XXH_INLINE_ALL
#define XXH_VECTOR 3  // XXH_AVX512
#include <xxhash.h>

#include "core/hash_impl.h"

uint64_t bod::hash_impl::xxh3_avx512(const void* data, size_t n) {
  return XXH3_64bits(data, n);
}
#endif
