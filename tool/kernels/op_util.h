// Internal helpers shared by the reference op implementations (ops*.cpp): typed bulk
// loads/stores between tensors and f32 buffers, so hot loops never switch per element.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/op_table.h"

namespace bod::detail {

// Reads n elements starting at element `off` of t, converted to f32.
void load_f32(const TensorRef& t, int64_t off, int64_t n, float* dst);
// Writes n f32 values to t starting at element `off`: bf16 rounds to nearest even, integer
// types truncate toward zero and saturate (NaN -> 0).
void store_f32(const TensorRef& t, int64_t off, int64_t n, const float* src);
// The first n elements (all when n < 0) as f32.
std::vector<float> load_vec(const TensorRef& t, int64_t n = -1);
// Element i of an i32 tensor, read raw (no float round trip).
int32_t load_i32(const TensorRef& t, int64_t i);

inline bool is_float(DType t) {
  return t == DType::bf16 || t == DType::f32;
}

// The op table's columns (op_table.cpp): each reference op's own shape check (op_shapes.cpp)
// and implementation (ops.cpp, ops_matmul.cpp).
std::string check_gemm(const OpCall& call);  // gemm, gemv
std::string check_norm(const OpCall& call);  // rmsnorm, layernorm
std::string check_rope(const OpCall& call);
std::string check_silu_mul(const OpCall& call);
std::string check_add(const OpCall& call);
std::string check_softmax(const OpCall& call);
std::string check_attention(const OpCall& call);
std::string check_embedding(const OpCall& call);
std::string check_convert(const OpCall& call);  // copy, cast

void run_gemm(const OpCall& call);  // gemm, gemv
void run_rmsnorm(const OpCall& call);
void run_layernorm(const OpCall& call);
void run_rope(const OpCall& call);
void run_silu_mul(const OpCall& call);
void run_add(const OpCall& call);
void run_softmax(const OpCall& call);
void run_attention(const OpCall& call);
void run_embedding(const OpCall& call);
void run_convert(const OpCall& call);  // copy, cast
void run_fill(const OpCall& call);

}  // namespace bod::detail
