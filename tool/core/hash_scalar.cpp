// XXH3-64 inline, portable scalar code (XXH_VECTOR = XXH_SCALAR). This file includes nothing
// but xxhash.h so no other inline code is compiled here.
#define XXH_INLINE_ALL
#define XXH_VECTOR 0  // XXH_SCALAR
#include <xxhash.h>

#include "core/hash_impl.h"

uint64_t bod::hash_impl::xxh3_scalar(const void* data, size_t n) {
  return XXH3_64bits(data, n);
}
