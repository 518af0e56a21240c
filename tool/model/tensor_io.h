// Reading and writing tensor files: raw .bin, NumPy .npy and .safetensors.
// Workloads name weight/input files in these formats; loading them must never crash on a bad
// file but report "path: what was found, what was expected" (Exit::bad_input). The writers
// exist for tests and fixture generation, so fixtures are produced by the same code that reads
// them and no Python is needed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "core/tensor.h"

namespace bod {

// Loads the tensor stored in `path` into `dst`, which holds exactly
// numel(shape) * dtype_size(dtype) bytes, as `dtype`.
//   format "bin":         raw little-endian data already in `dtype`; size must match exactly.
//   format "npy":         NumPy v1/v2/v3; descr <f4, <i4, |i1, or <u2/<i2/|V2 (bf16 bits);
//                         C order only; shape must equal `shape`.
//   format "safetensors": `key` picks the tensor; dtypes BF16, F32, I32, I8.
// The file's element type must equal `dtype`, except f32 data may be loaded as bf16
// (rounded to nearest even). `key` is ignored for bin and npy. Any failure returns an Error
// with where = path; this function never throws.
Status load_tensor_file(const std::string& path, const std::string& format, const std::string& key,
                        DType dtype, const Shape& shape, uint8_t* dst);

// Checks `path` as load_tensor_file would, without reading the data or needing a buffer:
// a regular file at least numel(shape) * dtype_size(dtype) bytes long (checked first, on its
// size: "declared as ... = N bytes, but the file holds only M bytes"), then its header, dtype,
// shape and data size. Callers run it before allocating the tensor.
Status check_tensor_file(const std::string& path, const std::string& format, const std::string& key,
                         DType dtype, const Shape& shape);

// Writes `n` raw bytes to `path` (a "bin" tensor file).
Status save_bin(const std::string& path, const uint8_t* bytes, size_t n);

// Writes a NumPy v1 .npy file (C order). bf16 is stored as '<u2' (its raw bits), since NumPy
// has no bf16; load_tensor_file reads that back as bf16.
Status save_npy(const std::string& path, DType dtype, const Shape& shape, const uint8_t* data);

// One tensor for save_safetensors: name, dtype, shape, numel(shape)*dtype_size(dtype) bytes.
using NamedTensor = std::tuple<std::string, DType, Shape, const uint8_t*>;

// Writes a .safetensors file holding `tensors`, data laid out in the given order.
// Names must be unique and not "__metadata__".
Status save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors);

}  // namespace bod
