// Arithmetic on counts and sizes read from input (a trace's NaN counts, byte counts, a
// recorded shape's dimensions): sums and products that saturate at the type's maximum instead
// of overflowing (signed overflow is undefined behaviour; 2^63-1 + 5 used to print -2), and
// checked forms for callers that must know a result does not fit.
#pragma once
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace bod {

// a + b, clamped to [min, max] of T.
template <class T>
T sat_add(T a, T b) {
  static_assert(std::is_integral_v<T>);
  T r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  if constexpr (std::is_signed_v<T>)
    return b < 0 ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
  return std::numeric_limits<T>::max();
}

// a * b, clamped to [min, max] of T.
template <class T>
T sat_mul(T a, T b) {
  static_assert(std::is_integral_v<T>);
  T r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  if constexpr (std::is_signed_v<T>)
    return (a < 0) != (b < 0) ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
  return std::numeric_limits<T>::max();
}

// a + b, a - b, a * b, or nullopt when the result does not fit T.
template <class T>
std::optional<T> checked_add(T a, T b) {
  T r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
template <class T>
std::optional<T> checked_sub(T a, T b) {
  T r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
template <class T>
std::optional<T> checked_mul(T a, T b) {
  T r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// A count as printed: a saturated one (the type's maximum) says it is at least that,
// "9223372036854775807+".
template <class T>
std::string count_text(T v) {
  std::string s = std::to_string(v);
  if (v == std::numeric_limits<T>::max()) s += "+";
  return s;
}

}  // namespace bod
