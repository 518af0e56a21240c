// The host-only actions: one table row per action carries its docs, operands, params, shape
// check and run, so the parser, the checks and the runner read the same row.
#include "kernels/host_actions.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace bod {

namespace {

bool has(const OpCall& c, const char* role) {
  return c.operands.count(role) != 0;
}

std::string check_write_rows(const OpCall& c) {
  if (!has(c, "src") || !has(c, "out")) return "";
  const auto& src = c.operand("src");
  const auto& out = c.operand("out");
  if (src.cols() != out.cols() || src.dtype != out.dtype)
    return "write_rows: src " + shape_str(src.shape) + " " + dtype_name(src.dtype) +
           " does not match out " + shape_str(out.shape) + " " + dtype_name(out.dtype) +
           "; expected the same columns and dtype";
  // Checked on the double, without forming row + rows: a huge row must neither overflow
  // the sum nor be converted to an integer it does not fit.
  double row = c.param("row");
  int64_t last = out.rows() - src.rows();  // the last row src may start at
  if (!(row >= 0) || src.rows() > out.rows() || row > static_cast<double>(last) ||
      row != std::floor(row)) {
    char r[32];
    std::snprintf(r, sizeof r, "%.17g", row);
    return "write_rows: row " + std::string(r) + " with " + std::to_string(src.rows()) +
           " src rows does not fit out " + shape_str(out.shape) +
           "; expected 0 <= row <= " + std::to_string(last < 0 ? 0 : last);
  }
  return "";
}

std::string write_rows(const OpCall& c, std::vector<int32_t>*) {
  const auto& src = c.operand("src");
  const auto& out = c.operand("out");
  int64_t row = static_cast<int64_t>(c.param("row"));
  size_t rb = static_cast<size_t>(out.cols()) * dtype_size(out.dtype);
  std::memmove(out.data + row * rb, src.data, src.bytes());
  return "";
}

std::pair<size_t, size_t> write_rows_part(const OpCall& c) {
  const std::pair<size_t, size_t> all{0, SIZE_MAX};
  if (!has(c, "src") || !has(c, "out")) return all;
  const auto& src = c.operand("src");
  const auto& out = c.operand("out");
  double row = c.param("row");
  if (!(row >= 0) || row != std::floor(row) || row > static_cast<double>(out.rows())) return all;
  size_t rb = static_cast<size_t>(out.cols()) * dtype_size(out.dtype);
  return {static_cast<size_t>(row) * rb, src.bytes()};
}

std::string check_argmax(const OpCall& c) {
  if (has(c, "out") && c.operand("out").dtype != DType::i32)
    return "argmax: out must be an i32 var, found " +
           std::string(dtype_name(c.operand("out").dtype));
  return "";
}

std::string argmax(const OpCall& c, std::vector<int32_t>* tokens) {
  const auto& src = c.operand("src");
  const auto& out = c.operand("out");
  int64_t base = (src.rows() - 1) * src.cols();
  int64_t best = 0;
  float bv = -INFINITY;
  for (int64_t i = 0; i < src.cols(); ++i) {
    float v = src.get(base + i);
    if (v > bv) {  // NaN never wins; ties keep the lowest index
      bv = v;
      best = i;
    }
  }
  out.set(0, static_cast<float>(best));
  if (tokens && c.param("record") != 0) tokens->push_back(static_cast<int32_t>(best));
  return "";
}

std::string check_rope_lut(const OpCall& c) {
  double heads = c.param("heads");
  if (!(heads >= 1 && heads <= double(1 << 30))) {
    char h[32];  // printed as a double: it may not fit an integer
    std::snprintf(h, sizeof h, "%.17g", heads);
    return "rope_lut: heads must be from 1 to 2^30, found " + std::string(h);
  }
  if (!has(c, "out")) return "";
  const auto& out = c.operand("out");
  if (out.cols() % (2 * static_cast<int64_t>(heads)))
    return "rope_lut: out needs heads * an even head_dim columns, found " +
           std::to_string(out.cols()) + " for heads " + std::to_string(static_cast<int64_t>(heads));
  if (out.cols() % 2)
    return "rope_lut: out needs an even number of columns (head_dim), found " +
           shape_str(out.shape);
  return "";
}

std::string rope_lut(const OpCall& c, std::vector<int32_t>*) {
  const auto& out = c.operand("out");
  auto heads = static_cast<int64_t>(c.param("heads"));
  int64_t C = out.cols(), d = C / heads, half = d / 2;
  double pos = c.param("pos"), theta = c.param("theta");
  for (int64_t r = 0; r < out.rows(); ++r)
    for (int64_t i = 0; i < half; ++i) {
      double freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      double a = (pos + static_cast<double>(r)) * freq;
      for (int64_t h = 0; h < heads; ++h) {
        out.set(r * C + h * d + i, static_cast<float>(std::cos(a)));
        out.set(r * C + h * d + half + i, static_cast<float>(std::sin(a)));
      }
    }
  return "";
}

std::string check_nothing(const OpCall&) {
  return "";
}

std::string set(const OpCall& c, std::vector<int32_t>*) {
  const auto& out = c.operand("out");
  const auto v = static_cast<float>(c.param("value"));
  for (int64_t i = 0; i < out.numel(); ++i) out.set(i, v);
  return "";
}

std::string check_concat_cols(const OpCall& c) {
  if (!has(c, "src") || !has(c, "out")) return "";
  const auto& src = c.operand("src");
  const auto& out = c.operand("out");
  if (src.shape.size() < 3)
    return "concat_cols: src must be [P, R, C], found " + shape_str(src.shape);
  int64_t P = src.shape[0], C = src.shape.back(), R = src.numel() / (P * C);
  if (out.rows() != R || out.cols() != P * C)
    return "concat_cols: out is " + shape_str(out.shape) + ", expected [" + std::to_string(R) +
           "," + std::to_string(P * C) + "]";
  return "";
}

std::string concat_cols(const OpCall& c, std::vector<int32_t>*) {
  const auto& src = c.operand("src");
  const auto& out = c.operand("out");
  int64_t P = src.shape[0], C = src.shape.back(), R = src.numel() / (P * C);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t k = 0; k < C; ++k) out.set(r * P * C + p * C + k, src.get((p * R + r) * C + k));
  return "";
}

}  // namespace

const std::vector<OpInfo>& host_action_table() {
  static const std::vector<OpInfo> t = {
      {"write_rows",
       "copy src's rows into out starting at row `row` (KV-cache append)",
       {{"src", true, Access::read}, {"out", true, Access::write}},
       {{"row", true, 0, "first destination row"}},
       check_write_rows,
       write_rows,
       write_rows_part},
      {"argmax",
       "out[0] = index of the largest value in src's last row (greedy decode)",
       {{"src", true, Access::read}, {"out", true, Access::write}},
       {{"record", false, 1, "1: append the token to the run's token trace"}},
       check_argmax,
       argmax},
      {"rope_lut",
       "fill out [rows, heads*head_dim] with cos|sin for positions pos, pos+1, "
       "..., repeated for each of `heads` heads",
       {{"out", true, Access::write}},
       {{"pos", true, 0, "position of row 0"},
        {"theta", false, 10000, "RoPE base"},
        {"heads", false, 1, "copies of the row per head (the real kernels' tiled LUTs)"}},
       check_rope_lut,
       rope_lut},
      {"set",
       "fill every element of out with value",
       {{"out", true, Access::write}},
       {{"value", true, 0, "the value"}},
       check_nothing,
       set},
      {"concat_cols",
       "out [R, P*C] = the P blocks of src [P, R, C] side by side",
       {{"src", true, Access::read}, {"out", true, Access::write}},
       {},
       check_concat_cols,
       concat_cols},
  };
  return t;
}

const OpInfo* find_host_action(std::string_view name) {
  for (auto& o : host_action_table())
    if (name == o.name) return &o;
  return nullptr;
}

std::string host_action_names() {
  std::string r;
  for (auto& o : host_action_table()) r += std::string(r.empty() ? "" : ", ") + o.name;
  return r;
}

std::string check_host_action(const OpCall& c) {
  if (!c.info || !c.info->check) return "";
  return c.info->check(c);
}

std::string run_host_action(const OpCall& c, std::vector<int32_t>* tokens) {
  if (!c.info || !c.info->run)
    return std::string("unknown host action ") + (c.info ? c.info->name : "?");
  std::string err = c.info->check(c);  // expansion checked the shapes; data may differ
  if (!err.empty()) return err;
  return c.info->run(c, tokens);
}

}  // namespace bod
