#include "core/hash.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/hash_impl.h"

namespace bod {
namespace {

using Fn = uint64_t (*)(const void*, size_t);

#if defined(__x86_64__) || defined(_M_X64)
constexpr bool kX86 = true;
#else
constexpr bool kX86 = false;
#endif

Fn fn_of(HashPath p) {
  switch (p) {
    case HashPath::scalar:
      return hash_impl::xxh3_scalar;
#if defined(__x86_64__) || defined(_M_X64)
    case HashPath::sse2:
      return hash_impl::xxh3_sse2;
#endif
#ifdef BOD_HASH_AVX2
    case HashPath::avx2:
      return hash_impl::xxh3_avx2;
#endif
#ifdef BOD_HASH_AVX512
    case HashPath::avx512:
      return hash_impl::xxh3_avx512;
#endif
    default:
      return nullptr;
  }
}

bool cpu_has(HashPath p) {
  switch (p) {
    case HashPath::scalar:
      return true;
    case HashPath::sse2:
      return kX86;
#if defined(__x86_64__) || defined(_M_X64)
    case HashPath::avx2:
      return __builtin_cpu_supports("avx2");
    case HashPath::avx512:
      return __builtin_cpu_supports("avx512f");
#endif
    default:
      return false;
  }
}

HashPath best() {
  for (HashPath p : {HashPath::avx512, HashPath::avx2, HashPath::sse2})
    if (hash_path_available(p)) return p;
  return HashPath::scalar;
}

// The chosen path; initialised on first use from BOD_HASH_PATH or the CPU.
HashPath initial() {
  const char* env = std::getenv("BOD_HASH_PATH");
  if (env && *env) {
    for (HashPath p : {HashPath::scalar, HashPath::sse2, HashPath::avx2, HashPath::avx512})
      if (std::strcmp(env, hash_path_name(p)) == 0) {
        if (hash_path_available(p)) return p;
        std::fprintf(stderr, "bo-doctor: BOD_HASH_PATH=%s is not available here; using %s\n", env,
                     hash_path_name(best()));
        return best();
      }
    std::fprintf(stderr,
                 "bo-doctor: BOD_HASH_PATH=%s is not one of scalar, sse2, avx2, avx512; using %s\n",
                 env, hash_path_name(best()));
  }
  return best();
}

struct State {
  std::atomic<HashPath> path{initial()};
  std::atomic<Fn> fn{fn_of(path.load())};
};
State& state() {
  static State s;
  return s;
}

}  // namespace

const char* hash_path_name(HashPath p) {
  switch (p) {
    case HashPath::scalar:
      return "scalar";
    case HashPath::sse2:
      return "sse2";
    case HashPath::avx2:
      return "avx2";
    case HashPath::avx512:
      return "avx512";
  }
  return "?";
}

bool hash_path_available(HashPath p) {
  return fn_of(p) != nullptr && cpu_has(p);
}

std::vector<HashPath> available_hash_paths() {
  std::vector<HashPath> r;
  for (HashPath p : {HashPath::scalar, HashPath::sse2, HashPath::avx2, HashPath::avx512})
    if (hash_path_available(p)) r.push_back(p);
  return r;
}

HashPath hash_path() {
  return state().path.load(std::memory_order_relaxed);
}

bool set_hash_path(HashPath p) {
  if (!hash_path_available(p)) return false;
  State& s = state();
  s.path.store(p, std::memory_order_relaxed);
  s.fn.store(fn_of(p), std::memory_order_relaxed);
  return true;
}

namespace {
// The hash of k chunk hashes: their little-endian bytes (the array itself on the little-endian
// hosts we build for) as one plain XXH3-64 however long the list (above 8192 chunks the list
// is itself longer than a chunk).
uint64_t combine(Fn fn, const uint64_t* chunk_hashes, size_t k) {
  static_assert(sizeof(uint64_t) == 8, "u64");
  const uint16_t probe = 1;
  if (*reinterpret_cast<const uint8_t*>(&probe) == 1) return fn(chunk_hashes, k * 8);
  std::vector<uint8_t> le(k * 8);
  for (size_t i = 0; i < k; ++i)
    for (size_t b = 0; b < 8; ++b) le[i * 8 + b] = static_cast<uint8_t>(chunk_hashes[i] >> (8 * b));
  return fn(le.data(), le.size());
}

// Above one chunk: the chunks' hashes, then the hash of those (see hash.h), all on `fn`.
uint64_t tree(Fn fn, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  size_t k = hash_chunk_count(n);
  uint64_t stack[64];  // up to 4 MiB of data without a heap allocation
  std::vector<uint64_t> heap;
  uint64_t* h = stack;
  if (k > 64) heap.resize(k), h = heap.data();
  for (size_t i = 0; i < k; ++i) {
    size_t off = i * kHashChunk;
    h[i] = fn(p + off, std::min(kHashChunk, n - off));
  }
  return combine(fn, h, k);
}

Fn current() {
  static State& s = state();
  return s.fn.load(std::memory_order_relaxed);
}
}  // namespace

uint64_t combine_chunk_hashes(const uint64_t* chunk_hashes, size_t k) {
  return combine(current(), chunk_hashes, k);
}

uint64_t hash_bytes_on(HashPath p, const void* data, size_t n) {
  return n <= kHashChunk ? fn_of(p)(data, n) : tree(fn_of(p), data, n);
}

uint64_t hash_bytes(const void* data, size_t n) {
  Fn fn = current();
  return n <= kHashChunk ? fn(data, n) : tree(fn, data, n);
}

uint64_t hash_chunk(const void* data, size_t n) {
  return current()(data, n);
}

std::string hash_hex(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}
}  // namespace bod
