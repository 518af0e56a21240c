#include "core/hash.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>

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

// Threads that hash one large array (the calling one included): BOD_HASH_THREADS, else the
// CPUs the process may use, at most kDefaultThreads.
constexpr unsigned kDefaultThreads = 8;
unsigned default_threads() {
  cpu_set_t set;
  unsigned cpus = sched_getaffinity(0, sizeof set, &set) == 0
                      ? static_cast<unsigned>(CPU_COUNT(&set))
                      : std::thread::hardware_concurrency();
  return std::clamp(cpus, 1u, kDefaultThreads);
}

unsigned initial_threads() {
  const char* env = std::getenv("BOD_HASH_THREADS");
  if (env && *env) {
    char* end = nullptr;
    unsigned long v = std::strtoul(env, &end, 10);
    if (*end == 0 && v >= 1 && v <= kMaxHashThreads) return static_cast<unsigned>(v);
    std::fprintf(stderr, "bo-doctor: BOD_HASH_THREADS=%s is not a number from 1 to %u; using %u\n",
                 env, kMaxHashThreads, default_threads());
  }
  return default_threads();
}

struct State {
  std::atomic<HashPath> path{initial()};
  std::atomic<Fn> fn{fn_of(path.load())};
  std::atomic<unsigned> threads{initial_threads()};
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

// Above one chunk: the chunks' hashes, then the hash of those (see hash.h), all on `fn`. From
// kParallelMin bytes on, the chunks are split into contiguous runs of at least kRunMin chunks
// hashed by up to `threads` threads, the calling one included: each chunk's hash is its own, so
// every split gives the same value. The threads start with every signal blocked (a signal
// meant for the program never lands in one of them) and are joined before this returns; where
// one cannot start, the calling thread hashes its run.
constexpr size_t kParallelMin = size_t(16) << 20;
constexpr size_t kRunMin = 64;  // 4 MiB per thread at least

uint64_t tree(Fn fn, const void* data, size_t n, unsigned threads, uint64_t* out = nullptr) {
  const auto* p = static_cast<const uint8_t*>(data);
  size_t k = hash_chunk_count(n);
  uint64_t stack[64];  // up to 4 MiB of data without a heap allocation
  std::vector<uint64_t> heap;
  uint64_t* h = out ? out : stack;  // the caller's array keeps the chunk hashes
  if (!out && k > 64) heap.resize(k), h = heap.data();
  auto run = [fn, p, n, h](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      size_t off = i * kHashChunk;
      h[i] = fn(p + off, std::min(kHashChunk, n - off));
    }
  };
  size_t t = n >= kParallelMin ? std::min<size_t>(threads, k / kRunMin) : 1;
  if (t <= 1) {
    run(0, k);
    return combine(fn, h, k);
  }
  size_t per = (k + t - 1) / t;
  std::vector<std::thread> pool;
  sigset_t all, old;
  sigfillset(&all);
  bool masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
  try {
    pool.reserve(t - 1);
    for (size_t j = 1; j < t; ++j) pool.emplace_back(run, j * per, std::min(k, (j + 1) * per));
  } catch (const std::exception&) {  // no thread (or no memory) for the rest: hashed here
  }
  if (masked) pthread_sigmask(SIG_SETMASK, &old, nullptr);
  run(0, std::min(k, per));
  run(std::min(k, (pool.size() + 1) * per), k);
  for (std::thread& th : pool) th.join();
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
  return n <= kHashChunk ? fn_of(p)(data, n) : tree(fn_of(p), data, n, 1);
}

uint64_t hash_bytes(const void* data, size_t n) {
  Fn fn = current();
  return n <= kHashChunk ? fn(data, n) : tree(fn, data, n, hash_threads());
}

uint64_t hash_bytes_chunks(const void* data, size_t n, uint64_t* chunks) {
  Fn fn = current();
  if (n <= kHashChunk) return chunks[0] = fn(data, n);
  return tree(fn, data, n, hash_threads(), chunks);
}

unsigned hash_threads() {
  static State& s = state();
  return s.threads.load(std::memory_order_relaxed);
}

bool set_hash_threads(unsigned t) {
  if (t < 1 || t > kMaxHashThreads) return false;
  state().threads.store(t, std::memory_order_relaxed);
  return true;
}

uint64_t hash_chunk(const void* data, size_t n) {
  return current()(data, n);
}

void hash_blocks(const void* data, size_t n, size_t block, uint64_t* out) {
  const auto* p = static_cast<const uint8_t*>(data);
  Fn fn = current();
  if (n == 0) out[0] = fn(p, 0);
  for (size_t off = 0, i = 0; off < n; off += block, ++i)
    out[i] = fn(p + off, std::min(block, n - off));
}

std::string hash_hex(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}
}  // namespace bod
