#include "core/hash.h"

#include <xxhash.h>

#include <cstdio>

namespace bod {
uint64_t hash_bytes(const void* data, size_t n) { return XXH3_64bits(data, n); }
std::string hash_hex(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}
}  // namespace bod
