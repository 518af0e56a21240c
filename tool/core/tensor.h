// TensorRef: a typed, shaped window onto bytes someone else owns (a host tensor, a BO's
// mapping, CPU-device memory). Ops and hashing work on these, so every backend looks alike.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace bod {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
std::string shape_str(const Shape& s);  // "[16,64]"

struct TensorRef {
  uint8_t* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;

  int64_t numel() const { return bod::numel(shape); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  // 2-D view used by every op: cols = last dim, rows = product of the others (1 for scalars).
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const { return cols() == 0 ? 0 : numel() / cols(); }

  // Element access converting to/from f32 (bf16 stores round-to-nearest-even).
  float get(int64_t i) const;
  void set(int64_t i, float v) const;
};

}  // namespace bod
