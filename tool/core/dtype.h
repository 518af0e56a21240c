// Element types a slot or tensor can hold, and bf16 <-> f32 conversion with the
// round-to-nearest-even rule NPU kernels use when they write bf16 results.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace bod {

enum class DType : uint8_t { bf16, f32, i32, i8 };

// Parses "bf16", "f32", "i32", "i8"; nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view s);
const char* dtype_name(DType t);
size_t dtype_size(DType t);

// f32 -> bf16 with round-to-nearest-even; NaN stays a (quiet) NaN, Inf stays Inf.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace bod
