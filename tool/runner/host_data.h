// The model's host tensors, materialized once: generated from the seed or read from files.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/pages.h"
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
  // Storage no pass zero-fills: every byte is generated or read before use, and the
  // generator's threads first-touch the pages (huge pages where allowed). The bytes never
  // change after load, so the CPU device shares them with the BOs written from them.
  struct Bytes {
    Pages p;
    size_t n = 0;
    uint8_t* data() { return p.get(); }
  };
  static Status load_one(const Model& m, const TensorDecl& t, Bytes& out);
  std::map<std::string, Bytes> data_;
};

}  // namespace bod
