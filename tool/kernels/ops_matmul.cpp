// gemm/gemv and attention on Eigen f32 matrices. Inputs are loaded (bf16 -> f32) or mapped
// (f32) first and the result is stored only at the end, so out may alias an input.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/op_util.h"

namespace bod::detail {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat>;
using StridedMap = Eigen::Map<const RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;

// Per-thread grow-only f32 buffers: re-allocating multi-MB buffers on every call costs more in
// page faults than the conversion itself. Slots: 0 a/q, 1 b block/k, 2 gemm result/v.
float* scratch(int slot, int64_t n) {
  thread_local std::vector<float> bufs[3];
  auto& v = bufs[slot];
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

bool f32_aligned(const TensorRef& t) {
  return t.dtype == DType::f32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0;
}

// The first n elements of t as f32: a direct view of aligned f32 data, else converted into
// scratch slot `slot`.
const float* f32_view(const TensorRef& t, int64_t n, int slot) {
  if (f32_aligned(t)) return reinterpret_cast<const float*>(t.data);
  float* p = scratch(slot, n);
  load_f32(t, 0, n, p);
  return p;
}

}  // namespace

void run_gemm(const OpCall& c) {
  const auto &a = c.operand("a"), &b = c.operand("b"), &out = c.operand("out");
  const int64_t M = rows_written(c), K = a.cols(), N = out.cols();
  if (M <= 0 || N <= 0) return;
  const bool tb = c.param("transpose_b") != 0;
  const ConstMap A(f32_view(a, M * K, 0), M, K);
  Eigen::Map<RowMat> C(scratch(2, M * N), M, N);
  if (K == 0) {
    C.setZero();
  } else if (f32_aligned(b)) {
    const auto* bp = reinterpret_cast<const float*>(b.data);
    if (tb)
      C.noalias() = A * ConstMap(bp, N, K).transpose();
    else
      C.noalias() = A * ConstMap(bp, K, N);
  } else {
    // Convert b one block of output columns (~4 MB of f32) at a time: a whole f32 copy of a
    // large weight would cost more (memory, page faults) than the product itself.
    const int64_t nb = std::min(N, std::max<int64_t>(64, (int64_t{1} << 20) / K));
    float* blk = scratch(1, nb * K);
    for (int64_t n0 = 0; n0 < N; n0 += nb) {
      const int64_t nn = std::min(nb, N - n0);
      if (tb) {  // rows n0.. of b [N,K] are contiguous
        load_f32(b, n0 * K, nn * K, blk);
        C.middleCols(n0, nn).noalias() = A * ConstMap(blk, nn, K).transpose();
      } else {  // columns n0.. of b [K,N]: nn elements from each of the K rows
        for (int64_t k = 0; k < K; ++k) load_f32(b, k * N + n0, nn, blk + k * nn);
        C.middleCols(n0, nn).noalias() = A * ConstMap(blk, K, nn);
      }
    }
  }
  if (c.has("bias")) {
    const std::vector<float> bias = load_vec(c.operand("bias"), N);
    C.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias.data(), N);
  }
  if (c.param("accumulate") != 0) {
    const std::vector<float> old = load_vec(out, M * N);  // reads out before writing it
    C += ConstMap(old.data(), M, N);
  }
  store_f32(out, 0, M * N, C.data());
}

void run_attention(const OpCall& c) {
  const auto &q = c.operand("q"), &k = c.operand("k"), &v = c.operand("v");
  const auto& out = c.operand("out");
  const auto H = static_cast<int64_t>(c.param("heads"));
  const auto KH = static_cast<int64_t>(c.param("kv_heads"));
  const auto D = static_cast<int64_t>(c.param("head_dim"));
  const bool causal = c.param("causal") != 0;
  const int64_t Sq = q.rows(), Sk = k.rows(), R = rows_written(c);
  if (R <= 0 || Sk <= 0) return;
  // Valid kv rows: kv_len clamped to [Sq, Sk] (to [1, Sk] when Sq > Sk, non-causal only).
  int64_t L = c.has("kv_len") ? load_i32(c.operand("kv_len"), 0) : Sk;
  L = std::clamp<int64_t>(L, std::max<int64_t>(1, std::min(Sq, Sk)), Sk);

  const float* qp = f32_view(q, R * H * D, 0);
  const float* kp = f32_view(k, L * KH * D, 1);
  const float* vp = f32_view(v, L * KH * D, 2);
  const int64_t group = H / KH;
  const float scale = 1.f / std::sqrt(static_cast<float>(D));
  RowMat O(R, H * D), S(R, L);
  for (int64_t h = 0; h < H; ++h) {
    const int64_t g = h / group;
    const StridedMap Qh(qp + h * D, R, D, Eigen::OuterStride<>(H * D));
    const StridedMap Kg(kp + g * D, L, D, Eigen::OuterStride<>(KH * D));
    const StridedMap Vg(vp + g * D, L, D, Eigen::OuterStride<>(KH * D));
    S.noalias() = (Qh * Kg.transpose()) * scale;
    for (int64_t i = 0; i < R; ++i) {
      // Row i sits at position L - Sq + i and sees kv rows j <= that position (all if !causal).
      const int64_t n = causal ? std::clamp<int64_t>(L - Sq + i + 1, 1, L) : L;
      auto row = S.row(i);
      const float mx = row.head(n).maxCoeff();
      row.head(n) = (row.head(n).array() - mx).exp().matrix();
      row.head(n) /= row.head(n).sum();
      row.tail(L - n).setZero();
    }
    O.middleCols(h * D, D).noalias() = S * Vg;
  }
  store_f32(out, 0, R * H * D, O.data());
}

}  // namespace bod::detail
