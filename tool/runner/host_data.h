// The model's host tensors, materialized once: generated from the seed or read from files.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace bod {

class HostData {
 public:
  // Generates or loads every tensor; file errors name the file (exit 2).
  static Result<HostData> load(const Model& m);
  // Loads file-backed tensors only, to validate them (lint), and drops the bytes.
  static Status validate_files(const Model& m);
  // The bytes of a bound tensor region.
  TensorRef tensor(const Model& m, const BoundArray& b) const;

 private:
  std::map<std::string, std::vector<uint8_t>> data_;
};

}  // namespace bod
