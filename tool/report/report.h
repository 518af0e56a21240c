// The result tree of a lint or check run, and its renderers. One tree, several formats:
// text (compiler-style diagnostics), JSON (schema_version 1, for CI gates), markdown (the
// reuse block for a model's development notes).
#pragma once
#include <string>
#include <vector>

#include "model/plan.h"
#include "report/finding.h"
#include "runner/runner.h"

namespace bod {

inline constexpr int kReportSchemaVersion = 1;

struct Report {
  std::string command;     // "lint" | "check"
  std::string model_path;  // as given on the command line
  std::string model_name;
  std::vector<Finding> findings;
  const Plan* plan = nullptr;
  const RunResult* run = nullptr;  // null for lint
  bool timings = false;            // include measured times (not byte-identical across runs)
  bool has_error() const;
  std::string verdict() const { return has_error() ? "fail" : "pass"; }
};

// Per bo_key: how its first call and its later calls fared (where "NaN on call 2" shows).
struct KeyRow {
  std::string bo_key, kernel;
  int first_call = 0, calls = 0, later_diverged = 0, first_diverged = 0;
  double first_min_cosine = 1, later_min_cosine = 1;
  long long later_nan = 0;
  int first_bad_later_call = 0;
};
std::vector<KeyRow> key_table(const RunResult& r);

std::string render_text(const Report& r);
std::string render_json(const Report& r);
std::string render_markdown(const Report& r);

// Writes `text` to `path` atomically (temp file in the same folder, then rename).
Status write_atomic(const std::string& path, const std::string& text);

}  // namespace bod
