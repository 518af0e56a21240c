// The fingerprint taken of every BO and host array: XXH3-64 (seed 0) of the bytes up to one
// chunk (64 KiB); above that, XXH3-64 of the chunks' XXH3-64 hashes (little-endian u64s, in
// order; the last chunk may be short). So a large array whose rows change a few at a time (a
// KV cache) is re-hashed by its changed chunks only (runner/var_store.h), and every array of
// at most 64 KiB hashes as plain XXH3-64. The code is xxHash's own, compiled inline once per
// instruction set (hash_x86_*.cpp) and picked at run time for the CPU: every path gives the
// same value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bod {
inline constexpr size_t kHashChunk = size_t(64) << 10;
uint64_t hash_bytes(const void* data, size_t n);
// The pieces of hash_bytes for a caller that keeps chunk hashes: the chunks of n bytes, one
// chunk's hash (plain XXH3-64 of any n; hash_bytes calls it with n <= kHashChunk), and the
// hash of k > 1 chunk hashes (plain XXH3-64 of their little-endian bytes, however many).
inline size_t hash_chunk_count(size_t n) {
  return n == 0 ? 1 : (n + kHashChunk - 1) / kHashChunk;
}
uint64_t hash_chunk(const void* data, size_t n);
// Plain XXH3-64 of each `block` bytes of n bytes (the last block may be short) into out, which
// holds block_count(n, block) values: one, the hash of 0 bytes, when n is 0.
inline size_t block_count(size_t n, size_t block) {
  return n == 0 ? 1 : (n - 1) / block + 1;
}
void hash_blocks(const void* data, size_t n, size_t block, uint64_t* out);
uint64_t combine_chunk_hashes(const uint64_t* chunk_hashes, size_t k);
// hash_bytes(data, n), keeping the hashes of its hash_chunk_count(n) chunks in chunks (the one
// chunk's hash, which is the value, when n <= kHashChunk): a caller checks a chunk later by
// hash_chunk of its bytes alone.
uint64_t hash_bytes_chunks(const void* data, size_t n, uint64_t* chunks);
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
// One hash on a given path (which must be available), on the calling thread alone.
uint64_t hash_bytes_on(HashPath p, const void* data, size_t n);
// How many threads hash_bytes uses for one array of 16 MiB or more (4 MiB per thread at least;
// the same value whatever the count): BOD_HASH_THREADS (1 to kMaxHashThreads, read at the first
// hash), else the CPUs the process may use, at most 8. set_hash_threads refuses (false) a
// count outside 1 to kMaxHashThreads.
inline constexpr unsigned kMaxHashThreads = 64;
unsigned hash_threads();
bool set_hash_threads(unsigned t);
}  // namespace bod
