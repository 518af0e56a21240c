// XXH3-64 (seed 0) of a byte range: the fingerprint taken of every BO and host array.
// The code is xxHash's own, compiled inline once per instruction set (hash_x86_*.cpp) and
// picked at run time for the CPU: every path gives the same value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bod {
uint64_t hash_bytes(const void* data, size_t n);
std::string hash_hex(uint64_t h);  // 16 lowercase hex digits

// The code paths hash_bytes can take. scalar is portable; the others are x86 SIMD.
enum class HashPath { scalar, sse2, avx2, avx512 };
const char* hash_path_name(HashPath p);  // "scalar" | "sse2" | "avx2" | "avx512"
// Compiled in and supported by this CPU.
bool hash_path_available(HashPath p);
std::vector<HashPath> available_hash_paths();
// The path hash_bytes takes: the fastest available one, unless the environment variable
// BOD_HASH_PATH (scalar|sse2|avx2|avx512, read at the first hash) or set_hash_path chose one.
HashPath hash_path();
// Forces a path; false (and no change) when it is not available.
bool set_hash_path(HashPath p);
// One hash on a given path (which must be available).
uint64_t hash_bytes_on(HashPath p, const void* data, size_t n);
}  // namespace bod
