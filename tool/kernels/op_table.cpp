// The op table: names, operands, params, one-line docs, shape check and implementation of
// every reference op (one row each), plus the small queries on it (lookup, param defaults,
// rows written). Shape checks: op_shapes.cpp; the ops themselves: ops.cpp, ops_matmul.cpp.
#include "kernels/op_table.h"

#include <cmath>
#include <stdexcept>

#include "kernels/op_util.h"

namespace bod {

namespace {

constexpr Access R = Access::read;
constexpr Access W = Access::write;

const ParamSpec kRows{"rows", false, -1,
                      "write only the first N rows of out; -1 (default) writes all rows"};

std::vector<ParamSpec> with_rows(std::vector<ParamSpec> p) {
  p.push_back(kRows);
  return p;
}

// A reference op's row: its docs, operands and params, then its shape check and
// implementation (op_util.h); `any_dtype` for the ops that convert.
OpInfo op(OpInfo row, std::string (*check_shapes)(const OpCall&), void (*compute)(const OpCall&),
          bool any_dtype = false) {
  row.check_shapes = check_shapes;
  row.compute = compute;
  row.any_dtype = any_dtype;
  return row;
}

OpInfo gemm_like(const char* name, const char* summary) {
  return op({name,
             summary,
             {{"a", true, R}, {"b", true, R}, {"bias", false, R}, {"out", true, W}},
             with_rows({
                 {"transpose_b", false, 0, "1: b is [N,K] and used transposed; 0: b is [K,N]"},
                 {"accumulate", false, 0,
                  "1: out = out + a@b (+bias), reading out before writing it (NPU bug pattern)"},
             })},
            detail::check_gemm, detail::run_gemm);
}

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> t;
  t.push_back(gemm_like("gemm", "out[M,N] = a[M,K] @ b[K,N] (+ bias[N]), f32 accumulation"));
  t.push_back(gemm_like("gemv",
                        "matrix-vector product: out[1,N] = a[1,K] @ b[K,N] (+ bias[N]); "
                        "same rules as gemm"));
  t.push_back(op({"rmsnorm",
                  "out = x / sqrt(mean(x^2) + eps) * weight, per row",
                  {{"x", true, R}, {"weight", true, R}, {"out", true, W}},
                  with_rows({{"eps", false, 1e-5, "added to the mean square"}})},
                 detail::check_norm, detail::run_rmsnorm));
  t.push_back(op({"layernorm",
                  "out = (x - mean) / sqrt(var + eps) * weight + bias, per row",
                  {{"x", true, R}, {"weight", true, R}, {"bias", false, R}, {"out", true, W}},
                  with_rows({{"eps", false, 1e-5, "added to the variance"}})},
                 detail::check_norm, detail::run_layernorm));
  t.push_back(op({"rope",
                  "rotary embedding, rotate-half per head; lut row r = [cos(head_dim/2), "
                  "sin(head_dim/2)] for row r's position, once or repeated per head; out may be x",
                  {{"x", true, R}, {"lut", true, R}, {"out", true, W}},
                  with_rows({{"head_dim", true, 0, "head size; x columns are a multiple of it"}})},
                 detail::check_rope, detail::run_rope));
  t.push_back(op({"silu_mul",
                  "out = silu(gate) * up = gate * sigmoid(gate) * up, elementwise",
                  {{"gate", true, R}, {"up", true, R}, {"out", true, W}},
                  with_rows({})},
                 detail::check_silu_mul, detail::run_silu_mul));
  t.push_back(op({"add",
                  "out = a + b, elementwise (residual add)",
                  {{"a", true, R}, {"b", true, R}, {"out", true, W}},
                  with_rows({})},
                 detail::check_add, detail::run_add));
  t.push_back(op({"softmax",
                  "out = softmax(x) per row (max-subtracted, f32)",
                  {{"x", true, R}, {"out", true, W}},
                  with_rows({})},
                 detail::check_softmax, detail::run_softmax));
  t.push_back(op(
      {"attention",
       "grouped-query scaled dot-product attention: q[Sq,heads*head_dim] over the first "
       "kv_len rows of k, v [Sk,kv_heads*head_dim]; query row i sits at position "
       "kv_len - Sq + i",
       {{"q", true, R}, {"k", true, R}, {"v", true, R}, {"kv_len", false, R}, {"out", true, W}},
       with_rows({
           {"heads", true, 0, "query heads"},
           {"kv_heads", true, 0, "key/value heads; query head h uses kv head h/(heads/kv_heads)"},
           {"head_dim", true, 0, "size of one head"},
           {"causal", false, 1, "1: row i attends only to kv rows at positions <= its own"},
       })},
      detail::check_attention, detail::run_attention));
  t.push_back(op({"embedding",
                  "out row r = table row ids[r]; an id outside [0,V) writes a row of NaN",
                  {{"table", true, R}, {"ids", true, R}, {"out", true, W}},
                  with_rows({})},
                 detail::check_embedding, detail::run_embedding));
  t.push_back(op({"copy",
                  "out = src converted to out's dtype (same element count)",
                  {{"src", true, R}, {"out", true, W}},
                  with_rows({})},
                 detail::check_convert, detail::run_convert, true));
  t.push_back(op({"cast",
                  "out = src converted to out's dtype (same element count; bf16 rounds to "
                  "nearest even)",
                  {{"src", true, R}, {"out", true, W}},
                  with_rows({})},
                 detail::check_convert, detail::run_convert, true));
  t.push_back(op({"fill",
                  "out = value everywhere",
                  {{"out", true, W}},
                  with_rows({{"value", false, 0, "the value written"}})},
                 nullptr, detail::run_fill, true));
  return t;
}

}  // namespace

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = build_table();
  return table;
}

const OpInfo* find_op(std::string_view name) {
  for (const auto& op : op_table())
    if (name == op.name) return &op;
  return nullptr;
}

std::string op_names() {
  std::string s;
  for (const auto& op : op_table()) s += (s.empty() ? "" : ", ") + std::string(op.name);
  return s;
}

double OpCall::param(const std::string& n) const {
  auto it = params.find(n);
  if (it != params.end()) return it->second;
  if (info)
    for (const auto& p : info->params)
      if (n == p.name) return p.default_value;
  throw std::logic_error(std::string("op ") + (info ? info->name : "?") + " has no param named " +
                         n);
}

int64_t rows_written(const OpCall& call) {
  if (!call.info) return 0;
  const OperandSpec* out = nullptr;
  for (const auto& o : call.info->operands)
    if (o.access == Access::write) {
      out = &o;
      break;
    }
  if (!out || !call.has(out->role)) return 0;
  const int64_t all = call.operand(out->role).rows();
  bool has_rows = false;
  for (const auto& p : call.info->params) has_rows = has_rows || std::string(p.name) == "rows";
  if (!has_rows) return all;
  const double r = call.param("rows");
  if (!(r >= 0)) return all;  // -1 (default) and NaN mean "all rows"
  if (r >= static_cast<double>(all)) return all;
  return static_cast<int64_t>(std::floor(r));
}

}  // namespace bod
