// XXH3-64 inline, SSE2 (every x86-64 CPU has it).
#if defined(__x86_64__) || defined(_M_X64)
#define XXH_INLINE_ALL
#define XXH_VECTOR 1  // XXH_SSE2
#include <xxhash.h>

#include "core/hash_impl.h"

uint64_t bod::hash_impl::xxh3_sse2(const void* data, size_t n) {
  return XXH3_64bits(data, n);
}
#endif
