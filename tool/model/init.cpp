#include "model/init.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>
#include <thread>
#include <vector>

// Bit-identical results on every machine need plain IEEE double arithmetic: no fused
// multiply-add contraction (GCC contracts by default in gnu++ modes on FMA targets, clang
// within expressions) and no libm transcendentals (their last bit differs between libms).
// Never build this file with -ffast-math.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace bod {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// splitmix64 finalizer: a bijective 64-bit mix with good avalanche.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Random bits for counter i of the sequence `key`: splitmix64's i-th output, computed directly.
inline uint64_t draw(uint64_t key, uint64_t i) {
  return mix64(key + (i + 1) * kGolden);
}

constexpr double kTwoPow53Inv = 1.0 / 9007199254740992.0;

// [0, 1) from the top 53 bits.
inline double unit(uint64_t bits) {
  return static_cast<double>(bits >> 11) * kTwoPow53Inv;
}

// Coefficients 1/k! for k = first, first+2, ... (Taylor series of sin/cos), computed at
// compile time so they are the same for every build.
template <int N>
struct Taylor {
  double c[N];
  constexpr explicit Taylor(int first) : c() {
    double f = 1;
    for (int k = 2; k <= first; ++k) f *= k;
    for (int j = 0; j < N; ++j) {
      c[j] = ((j & 1) ? -1.0 : 1.0) / f;
      f *= (first + 2 * j + 1) * (first + 2 * j + 2);
    }
  }
};
constexpr Taylor<12> kSin(1);  // x - x^3/3! + ... - x^23/23!
constexpr Taylor<12> kCos(0);  // 1 - x^2/2! + ... - x^22/22!

// Natural log of u in (0, 1] with +, -, *, / only (accurate to a few ulp).
inline double log_det(double u) {
  uint64_t b;
  std::memcpy(&b, &u, 8);
  int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
  b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;  // mantissa m in [1, 2)
  double m;
  std::memcpy(&m, &b, 8);
  if (m > 1.4142135623730951) m *= 0.5, ++e;  // m in [0.707, 1.414]
  double s = (m - 1) / (m + 1), s2 = s * s;   // log m = 2 atanh s, |s| <= 0.172
  double p = 1.0 / 23;
  for (int k = 10; k >= 0; --k) p = p * s2 + 1.0 / (2 * k + 1);
  return e * 0.6931471805599453 + 2 * s * p;
}

// Standard normal pair j (Box-Muller on draws 2j and 2j+1).
inline void normal_pair(uint64_t key, uint64_t j, double& z0, double& z1) {
  double u1 = static_cast<double>((draw(key, 2 * j) >> 11) + 1) * kTwoPow53Inv;  // (0, 1]
  double r = std::sqrt(-2 * log_det(u1));      // sqrt is correctly rounded by IEEE 754
  double q4 = unit(draw(key, 2 * j + 1)) * 4;  // angle in quarter turns, exact
  int q = static_cast<int>(q4);
  double x = (q4 - q) * 1.5707963267948966, x2 = x * x;  // x in [0, pi/2)
  double sn = kSin.c[11], cs = kCos.c[11];
  for (int k = 10; k >= 0; --k) sn = sn * x2 + kSin.c[k], cs = cs * x2 + kCos.c[k];
  sn *= x;
  switch (q) {  // rotate by q quarter turns
    case 0:
      z0 = r * cs, z1 = r * sn;
      break;
    case 1:
      z0 = -r * sn, z1 = r * cs;
      break;
    case 2:
      z0 = -r * cs, z1 = -r * sn;
      break;
    default:
      z0 = r * sn, z1 = -r * cs;
      break;
  }
}

template <typename I>
inline I to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v <= std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
  if (v >= std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
  return static_cast<I>(std::round(v));
}

template <DType T>
inline void store(uint8_t* dst, int64_t i, double v) {
  if constexpr (T == DType::f32) {
    float f = static_cast<float>(v);
    std::memcpy(dst + 4 * i, &f, 4);
  } else if constexpr (T == DType::bf16) {
    uint16_t h = f32_to_bf16(static_cast<float>(v));
    std::memcpy(dst + 2 * i, &h, 2);
  } else if constexpr (T == DType::i32) {
    int32_t x = to_int<int32_t>(v);
    std::memcpy(dst + 4 * i, &x, 4);
  } else {
    dst[i] = static_cast<uint8_t>(to_int<int8_t>(v));
  }
}

// Fills elements [begin, end); each element depends only on its index.
template <DType T>
void fill_span(uint8_t* dst, int64_t begin, int64_t end, const InitSpec& sp, uint64_t key) {
  const double a = sp.a, b = sp.b;
  switch (sp.kind) {
    case InitSpec::Kind::normal:
      for (int64_t i = begin; i < end;) {
        double z0, z1;
        normal_pair(key, static_cast<uint64_t>(i) >> 1, z0, z1);
        if ((i & 1) == 0) store<T>(dst, i++, a + b * z0);
        if (i < end) store<T>(dst, i++, a + b * z1);
      }
      return;
    case InitSpec::Kind::uniform:
      for (int64_t i = begin; i < end; ++i)
        store<T>(dst, i, a + (b - a) * unit(draw(key, static_cast<uint64_t>(i))));
      return;
    case InitSpec::Kind::constant:
      for (int64_t i = begin; i < end; ++i) store<T>(dst, i, a);
      return;
    case InitSpec::Kind::range:
      for (int64_t i = begin; i < end; ++i) store<T>(dst, i, a + static_cast<double>(i) * b);
      return;
  }
}

void fill_span_any(uint8_t* dst, DType t, int64_t begin, int64_t end, const InitSpec& sp,
                   uint64_t key) {
  switch (t) {
    case DType::bf16:
      return fill_span<DType::bf16>(dst, begin, end, sp, key);
    case DType::f32:
      return fill_span<DType::f32>(dst, begin, end, sp, key);
    case DType::i32:
      return fill_span<DType::i32>(dst, begin, end, sp, key);
    case DType::i8:
      return fill_span<DType::i8>(dst, begin, end, sp, key);
  }
}

}  // namespace

namespace detail {
void fill_tensor_threads(uint8_t* dst, DType dtype, int64_t n, const InitSpec& spec, uint64_t seed,
                         std::string_view stream, unsigned threads) {
  if (n <= 0) return;
  const uint64_t key = mix64(mix64(seed) ^ fnv1a64(stream));
  threads = std::max(1u, threads);
  int64_t per = (n + threads - 1) / threads;
  per += per & 1;  // even chunks keep Box-Muller pairs within one thread
  std::vector<std::thread> pool;
  for (int64_t begin = per; begin < n; begin += per) {  // chunk 0 runs on this thread
    int64_t end = std::min(n, begin + per);
    try {
      pool.emplace_back(fill_span_any, dst, dtype, begin, end, std::cref(spec), key);
    } catch (const std::system_error&) {  // cannot start a thread: do the chunk here
      fill_span_any(dst, dtype, begin, end, spec, key);
    }
  }
  fill_span_any(dst, dtype, 0, std::min(n, per), spec, key);
  for (auto& t : pool) t.join();
}
}  // namespace detail

void fill_tensor(uint8_t* dst, DType dtype, int64_t n, const InitSpec& spec, uint64_t seed,
                 std::string_view stream) {
  constexpr int64_t kParallelFrom = int64_t{4} << 20;
  unsigned threads = n > kParallelFrom ? std::thread::hardware_concurrency() : 1;
  detail::fill_tensor_threads(dst, dtype, n, spec, seed, stream, threads);
}

}  // namespace bod
