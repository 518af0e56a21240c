#include "core/tensor.h"

#include <cstring>

namespace bod {

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

float TensorRef::get(int64_t i) const {
  switch (dtype) {
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      return bf16_to_f32(h);
    }
    case DType::f32: {
      float f;
      std::memcpy(&f, data + 4 * i, 4);
      return f;
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, data + 4 * i, 4);
      return static_cast<float>(v);
    }
    case DType::i8:
      return static_cast<float>(static_cast<int8_t>(data[i]));
  }
  return 0.f;
}

void TensorRef::set(int64_t i, float v) const {
  switch (dtype) {
    case DType::bf16: {
      uint16_t h = f32_to_bf16(v);
      std::memcpy(data + 2 * i, &h, 2);
      return;
    }
    case DType::f32:
      std::memcpy(data + 4 * i, &v, 4);
      return;
    case DType::i32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(data + 4 * i, &x, 4);
      return;
    }
    case DType::i8:
      data[i] = static_cast<uint8_t>(static_cast<int8_t>(v));
      return;
  }
}

}  // namespace bod
