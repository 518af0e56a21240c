// The per-instruction-set XXH3-64 entry points hash.cpp dispatches between (internal to
// tool/core). Each is defined in its own translation unit, compiled for its instruction set.
#pragma once
#include <cstddef>
#include <cstdint>

namespace bod::hash_impl {
uint64_t xxh3_scalar(const void* data, size_t n);
uint64_t xxh3_sse2(const void* data, size_t n);    // x86 only
uint64_t xxh3_avx2(const void* data, size_t n);    // BOD_HASH_AVX2 builds only
uint64_t xxh3_avx512(const void* data, size_t n);  // BOD_HASH_AVX512 builds only
}  // namespace bod::hash_impl
