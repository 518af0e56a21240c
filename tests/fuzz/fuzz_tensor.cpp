// libFuzzer harness: a tensor file's bytes (the first byte picks the format: bin, npy,
// safetensors) loaded as a small f32 / bf16 tensor. Must never crash or allocate beyond the
// declared tensor (docs/robustness.md).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "model/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const char* formats[] = {"bin", "npy", "safetensors"};
  const char* format = formats[data[0] % 3];
  bod::DType dtype = (data[1] & 1) ? bod::DType::bf16 : bod::DType::f32;
  static std::string path = "/tmp/bod_fuzz_tensor_" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data + 2, 1, size - 2, f);
  std::fclose(f);
  bod::Shape shape{4, 8};
  std::vector<uint8_t> dst(32 * bod::dtype_size(dtype));
  (void)bod::load_tensor_file(path, format, "w", dtype, shape, dst.data());
  return 0;
}
