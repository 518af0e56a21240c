// Deterministic tensor initialisation (weights, inputs, token ids) for workloads that do not
// ship data files. A tensor's contents depend only on (spec, seed, stream name, dtype, n): not
// on the machine, thread count or the order tensors are generated in, so two runs - or a CPU
// reference and an NPU run on different hosts - see bit-identical inputs.
#pragma once
#include <cstdint>
#include <string_view>

#include "core/dtype.h"

namespace bod {

// How to fill a tensor. Element values are computed in double, then stored as the dtype
// (f32: rounded to float; bf16: float then round-to-nearest-even; i32/i8: rounded half away
// from zero and saturated).
struct InitSpec {
  enum class Kind {
    normal,    // a = mean, b = standard deviation (Box-Muller)
    uniform,   // a = lo, b = hi; values in [lo, hi) before rounding to the dtype
    constant,  // a = value
    range,     // element i = a + i * b (e.g. token ids 0..n-1)
  } kind = Kind::normal;
  double a = 0, b = 1;
};

// Fills dst[0..n) (n elements of `dtype`) per `spec`. `seed` and `stream` (usually the tensor's
// name) select an independent random sequence; element i's value is a pure function of
// (seed, stream, i), computed with a counter-based generator. Large tensors are split across
// hardware threads; the result does not depend on how.
void fill_tensor(uint8_t* dst, DType dtype, int64_t n, const InitSpec& spec, uint64_t seed,
                 std::string_view stream);

namespace detail {
// fill_tensor with an explicit thread count (1 = single-threaded). Exposed so tests can check
// that the output is identical whatever the split.
void fill_tensor_threads(uint8_t* dst, DType dtype, int64_t n, const InitSpec& spec, uint64_t seed,
                         std::string_view stream, unsigned threads);
}  // namespace detail

}  // namespace bod
