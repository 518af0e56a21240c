// Test helpers for the reference ops: owned host tensors, random fills, call building and
// comparison against plain scalar references computed in double.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/op_table.h"

namespace bod::test {

// A tensor owning its bytes; ref points into them (heap-stable, so moves are safe).
struct HostTensor {
  std::unique_ptr<std::vector<uint8_t>> buf;
  TensorRef ref;
  HostTensor(DType dt, Shape s)
      : buf(std::make_unique<std::vector<uint8_t>>(numel(s) * dtype_size(dt))) {
    ref.data = buf->data();
    ref.dtype = dt;
    ref.shape = std::move(s);
  }
  std::vector<float> vals() const {
    std::vector<float> v(static_cast<size_t>(ref.numel()));
    for (int64_t i = 0; i < ref.numel(); ++i) v[i] = ref.get(i);
    return v;
  }
  void set_vals(const std::vector<float>& v) {
    for (size_t i = 0; i < v.size(); ++i) ref.set(static_cast<int64_t>(i), v[i]);
  }
  void fill(float v) {
    for (int64_t i = 0; i < ref.numel(); ++i) ref.set(i, v);
  }
  void randomize(std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
    std::uniform_real_distribution<float> d(lo, hi);
    for (int64_t i = 0; i < ref.numel(); ++i) ref.set(i, d(rng));
  }
};

inline DType pick_float(std::mt19937& rng) {
  return std::uniform_int_distribution<int>(0, 1)(rng) ? DType::bf16 : DType::f32;
}
inline int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

inline OpCall make_call(const char* op, std::map<std::string, TensorRef> operands,
                        std::map<std::string, double> params = {}) {
  OpCall c;
  c.info = find_op(op);
  EXPECT_NE(c.info, nullptr) << op;
  c.operands = std::move(operands);
  c.params = std::move(params);
  return c;
}

constexpr float kSentinel = 7.25f;  // exact in bf16: marks rows an op must leave alone

// Randomly leaves `rows` unset (all rows) or sets it in [0, rows+1]; returns rows expected.
inline int64_t maybe_rows(std::mt19937& rng, std::map<std::string, double>& params, int64_t rows) {
  if (pick(rng, 0, 2) == 0) return rows;
  const int64_t r = pick(rng, 0, rows + 1);
  params["rows"] = static_cast<double>(r);
  return std::min(r, rows);
}

// Expected contents of out: ref in the first rw rows, `old` (or the sentinel) after them.
inline std::vector<double> partial(const std::vector<double>& ref, int64_t rw, int64_t cols,
                                   const std::vector<float>& old = {}) {
  std::vector<double> e = ref;
  for (size_t i = static_cast<size_t>(rw * cols); i < e.size(); ++i)
    e[i] = old.empty() ? kSentinel : old[i];
  return e;
}

// Checks shapes, then runs.
inline void run_checked(const OpCall& c) {
  const std::string err = check_op_shapes(c);
  ASSERT_EQ(err, "") << c.info->name;
  run_op(c);
}

// The value a double reference result takes once stored in dtype dt (independent RNE).
inline float stored(DType dt, double v) {
  const float f = static_cast<float>(v);
  if (dt != DType::bf16 || std::isnan(f)) return f;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t low = u & 0xffffu, hi = u >> 16;
  uint32_t r = hi;
  if (low > 0x8000u || (low == 0x8000u && (hi & 1u))) ++r;
  u = r << 16;
  float o;
  std::memcpy(&o, &u, 4);
  return o;
}

// got vs the double reference: within a few f32-accumulation ulps, plus one bf16 ulp of
// rounding-boundary slack when the output is bf16.
inline void expect_near_ref(const std::vector<float>& got, const std::vector<double>& want,
                            DType out_dt, const std::string& ctx, double atol = 1e-5) {
  ASSERT_EQ(got.size(), want.size()) << ctx;
  const double rtol = out_dt == DType::bf16 ? 1.0 / 128 : 1e-4;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double w = stored(out_dt, want[i]);
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << ctx << " at " << i;
      continue;
    }
    const bool ok = std::fabs(got[i] - w) <= atol + rtol * std::fabs(w);
    if (!ok) ++bad;
    EXPECT_TRUE(ok) << ctx << " at " << i << ": got " << got[i] << " want " << want[i];
  }
}

}  // namespace bod::test
