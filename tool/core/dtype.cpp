#include "core/dtype.h"

namespace bod {

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "bf16") return DType::bf16;
  if (s == "f32") return DType::f32;
  if (s == "i32") return DType::i32;
  if (s == "i8") return DType::i8;
  return std::nullopt;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::bf16:
      return "bf16";
    case DType::f32:
      return "f32";
    case DType::i32:
      return "i32";
    case DType::i8:
      return "i8";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::bf16:
      return 2;
    case DType::f32:
      return 4;
    case DType::i32:
      return 4;
    case DType::i8:
      return 1;
  }
  return 0;
}

}  // namespace bod
