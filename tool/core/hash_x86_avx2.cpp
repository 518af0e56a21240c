// XXH3-64 inline, AVX2: this file alone is compiled with -mavx2 (CMakeLists.txt) and is only
// called once the CPU reports AVX2 (hash.cpp). It includes nothing but xxhash.h, so no inline
// code shared with other files gets AVX2 instructions.
#if defined(BOD_HASH_AVX2) && defined(__AVX2__)
#define XXH_INLINE_ALL
#define XXH_VECTOR 2  // XXH_AVX2
#include <xxhash.h>

#include "core/hash_impl.h"

uint64_t bod::hash_impl::xxh3_avx2(const void* data, size_t n) {
  return XXH3_64bits(data, n);
}
#endif
