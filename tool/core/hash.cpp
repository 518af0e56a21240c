#include "core/hash.h"

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
    case HashPath::scalar: return hash_impl::xxh3_scalar;
#if defined(__x86_64__) || defined(_M_X64)
    case HashPath::sse2: return hash_impl::xxh3_sse2;
#endif
#ifdef BOD_HASH_AVX2
    case HashPath::avx2: return hash_impl::xxh3_avx2;
#endif
#ifdef BOD_HASH_AVX512
    case HashPath::avx512: return hash_impl::xxh3_avx512;
#endif
    default: return nullptr;
  }
}

bool cpu_has(HashPath p) {
  switch (p) {
    case HashPath::scalar: return true;
    case HashPath::sse2: return kX86;
#if defined(__x86_64__) || defined(_M_X64)
    case HashPath::avx2: return __builtin_cpu_supports("avx2");
    case HashPath::avx512: return __builtin_cpu_supports("avx512f");
#endif
    default: return false;
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
        std::fprintf(stderr, "bo-doctor: BOD_HASH_PATH=%s is not available here; using %s\n",
                     env, hash_path_name(best()));
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
    case HashPath::scalar: return "scalar";
    case HashPath::sse2: return "sse2";
    case HashPath::avx2: return "avx2";
    case HashPath::avx512: return "avx512";
  }
  return "?";
}

bool hash_path_available(HashPath p) { return fn_of(p) != nullptr && cpu_has(p); }

std::vector<HashPath> available_hash_paths() {
  std::vector<HashPath> r;
  for (HashPath p : {HashPath::scalar, HashPath::sse2, HashPath::avx2, HashPath::avx512})
    if (hash_path_available(p)) r.push_back(p);
  return r;
}

HashPath hash_path() { return state().path.load(std::memory_order_relaxed); }

bool set_hash_path(HashPath p) {
  if (!hash_path_available(p)) return false;
  State& s = state();
  s.path.store(p, std::memory_order_relaxed);
  s.fn.store(fn_of(p), std::memory_order_relaxed);
  return true;
}

uint64_t hash_bytes_on(HashPath p, const void* data, size_t n) { return fn_of(p)(data, n); }

uint64_t hash_bytes(const void* data, size_t n) {
  static State& s = state();
  return s.fn.load(std::memory_order_relaxed)(data, n);
}

std::string hash_hex(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}
}  // namespace bod
