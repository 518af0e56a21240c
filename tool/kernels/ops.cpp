// run_op and the row-wise / elementwise reference ops. Every op loads what it reads into f32
// buffers before storing, so out may alias an input (in-place rope, add into a, ...).
// gemm and attention live in ops_matmul.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kernels/op_util.h"

namespace bod {

namespace detail {

void load_f32(const TensorRef& t, int64_t off, int64_t n, float* dst) {
  if (n <= 0) return;
  const uint8_t* p = t.data + off * static_cast<int64_t>(dtype_size(t.dtype));
  switch (t.dtype) {
    case DType::f32:
      std::memcpy(dst, p, static_cast<size_t>(n) * 4);
      return;
    case DType::bf16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    case DType::i32:
      for (int64_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        dst[i] = static_cast<float>(v);
      }
      return;
    case DType::i8:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<int8_t>(p[i]));
      return;
  }
}

template <typename I>
static I to_int(float v) {  // truncate toward zero, saturate, NaN -> 0
  if (!(v == v)) return 0;
  const float lo = static_cast<float>(std::numeric_limits<I>::min());
  const float hi = static_cast<float>(std::numeric_limits<I>::max());
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

void store_f32(const TensorRef& t, int64_t off, int64_t n, const float* src) {
  if (n <= 0) return;
  uint8_t* p = t.data + off * static_cast<int64_t>(dtype_size(t.dtype));
  switch (t.dtype) {
    case DType::f32:
      std::memmove(p, src, static_cast<size_t>(n) * 4);
      return;
    case DType::bf16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case DType::i32:
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = to_int<int32_t>(src[i]);
        std::memcpy(p + 4 * i, &v, 4);
      }
      return;
    case DType::i8:
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(to_int<int8_t>(src[i]));
      return;
  }
}

std::vector<float> load_vec(const TensorRef& t, int64_t n) {
  if (n < 0) n = t.numel();
  std::vector<float> v(static_cast<size_t>(n));
  load_f32(t, 0, n, v.data());
  return v;
}

int32_t load_i32(const TensorRef& t, int64_t i) {
  int32_t v = 0;
  if (i < t.numel()) std::memcpy(&v, t.data + 4 * i, 4);
  return v;
}

}  // namespace detail

namespace {

using detail::load_f32;
using detail::store_f32;
constexpr int64_t kChunk = 4096;

// Elementwise over the first `n` elements: out[i] = f(a[i], b[i]) (b may be null).
template <typename F>
void elementwise(const TensorRef* a, const TensorRef* b, const TensorRef& out, int64_t n, F f) {
  std::vector<float> va(kChunk), vb(kChunk);
  for (int64_t off = 0; off < n; off += kChunk) {
    const int64_t m = std::min(kChunk, n - off);
    if (a) load_f32(*a, off, m, va.data());
    if (b) load_f32(*b, off, m, vb.data());
    for (int64_t i = 0; i < m; ++i) va[i] = f(va[i], vb[i]);
    store_f32(out, off, m, va.data());
  }
}

void run_norm(const OpCall& c, bool layer) {
  const auto &x = c.operand("x"), &out = c.operand("out");
  const int64_t rows = rows_written(c), C = x.cols();
  const float eps = static_cast<float>(c.param("eps"));
  const std::vector<float> w = detail::load_vec(c.operand("weight"), C);
  std::vector<float> bias(static_cast<size_t>(C), 0.f), row(static_cast<size_t>(C));
  if (layer && c.has("bias")) bias = detail::load_vec(c.operand("bias"), C);
  for (int64_t r = 0; r < rows; ++r) {
    load_f32(x, r * C, C, row.data());
    float mean = 0.f;
    if (layer) {
      for (float v : row) mean += v;
      mean /= static_cast<float>(C);
    }
    float ss = 0.f;
    for (float v : row) ss += (v - mean) * (v - mean);
    const float inv = 1.f / std::sqrt(ss / static_cast<float>(C) + eps);
    for (int64_t i = 0; i < C; ++i) row[i] = (row[i] - mean) * inv * w[i] + bias[i];
    store_f32(out, r * C, C, row.data());
  }
}

}  // namespace

namespace detail {

void run_rmsnorm(const OpCall& c) {
  run_norm(c, false);
}
void run_layernorm(const OpCall& c) {
  run_norm(c, true);
}

void run_rope(const OpCall& c) {
  const auto &x = c.operand("x"), &lut = c.operand("lut"), &out = c.operand("out");
  const int64_t rows = rows_written(c), C = x.cols();
  const auto hd = static_cast<int64_t>(c.param("head_dim")), half = hd / 2;
  const int64_t L = lut.cols();  // head_dim (one table for every head) or C (one per head)
  std::vector<float> in(static_cast<size_t>(C)), o(static_cast<size_t>(C)),
      cs(static_cast<size_t>(L));
  for (int64_t r = 0; r < rows; ++r) {
    load_f32(x, r * C, C, in.data());
    load_f32(lut, r * L, L, cs.data());
    for (int64_t h = 0; h < C; h += hd) {
      const float* cosv = cs.data() + (L == C ? h : 0);
      const float* sinv = cosv + half;
      const float* xi = in.data() + h;
      float* oi = o.data() + h;
      for (int64_t i = 0; i < half; ++i) {
        oi[i] = xi[i] * cosv[i] - xi[i + half] * sinv[i];
        oi[i + half] = xi[i + half] * cosv[i] + xi[i] * sinv[i];
      }
    }
    store_f32(out, r * C, C, o.data());
  }
}

void run_softmax(const OpCall& c) {
  const auto &x = c.operand("x"), &out = c.operand("out");
  const int64_t rows = rows_written(c), C = x.cols();
  std::vector<float> row(static_cast<size_t>(C));
  for (int64_t r = 0; r < rows; ++r) {
    load_f32(x, r * C, C, row.data());
    const float mx = *std::max_element(row.begin(), row.end());
    float sum = 0.f;
    for (float& v : row) sum += (v = std::exp(v - mx));
    for (float& v : row) v /= sum;
    store_f32(out, r * C, C, row.data());
  }
}

void run_embedding(const OpCall& c) {
  const auto &table = c.operand("table"), &ids = c.operand("ids"), &out = c.operand("out");
  const int64_t rows = rows_written(c), E = table.cols(), V = table.rows();
  std::vector<float> row(static_cast<size_t>(E));
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t id = detail::load_i32(ids, r);
    if (id >= 0 && id < V)
      load_f32(table, id * E, E, row.data());
    else
      std::fill(row.begin(), row.end(), std::numeric_limits<float>::quiet_NaN());
    store_f32(out, r * E, E, row.data());
  }
}

void run_convert(const OpCall& c) {
  const auto &src = c.operand("src"), &out = c.operand("out");
  const int64_t n = rows_written(c) * out.cols();
  if (src.dtype == out.dtype) {
    if (n > 0) std::memmove(out.data, src.data, static_cast<size_t>(n) * dtype_size(out.dtype));
    return;
  }
  elementwise(&src, nullptr, out, n, [](float a, float) { return a; });
}

void run_silu_mul(const OpCall& c) {
  const TensorRef& out = c.operand("out");
  elementwise(&c.operand("gate"), &c.operand("up"), out, rows_written(c) * out.cols(),
              [](float g, float u) { return g / (1.f + std::exp(-g)) * u; });
}
void run_add(const OpCall& c) {
  const TensorRef& out = c.operand("out");
  elementwise(&c.operand("a"), &c.operand("b"), out, rows_written(c) * out.cols(),
              [](float a, float b) { return a + b; });
}
void run_fill(const OpCall& c) {
  const TensorRef& out = c.operand("out");
  const float v = static_cast<float>(c.param("value"));
  elementwise(nullptr, nullptr, out, rows_written(c) * out.cols(), [v](float, float) { return v; });
}

}  // namespace detail

void run_op(const OpCall& c) {
  if (!c.info) throw std::logic_error("run_op: call has no op");
  if (!c.info->compute)
    throw std::logic_error("run_op: no implementation for op " + std::string(c.info->name));
  c.info->compute(c);
}

}  // namespace bod
