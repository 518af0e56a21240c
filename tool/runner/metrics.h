// Divergence metrics between two arrays of one dtype: bit-exactness, cosine, max-abs,
// max-rel and NaN/Inf counts, as the BF16 validation convention reports them.
#pragma once
#include "core/tensor.h"

namespace bod {

struct Divergence {
  bool bit_exact = true;
  double cosine = 1, max_abs = 0, max_rel = 0;
  long long nan_a = 0, inf_a = 0, nan_b = 0, inf_b = 0, elements = 0;
};

// a: with reuse, b: reference. Non-finite elements are counted and left out of the sums
// (cosine covers the finite elements; NaN/Inf counts are reported beside it). Bit-exact
// arrays return at once with cosine 1 and zero counts.
Divergence compare(const TensorRef& a, const TensorRef& b);

}  // namespace bod
