// check_op_shapes: does an op call's operand set fit its op? One sentence per problem,
// naming the operands, their shapes and what was expected.
#include <cmath>

#include "kernels/op_table.h"
#include "kernels/op_util.h"

namespace bod {

namespace {

std::string num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return std::to_string(v);
}
std::string num(int64_t v) {
  return std::to_string(v);
}
std::string first(std::string a, std::string b) {
  return a.empty() ? b : a;
}

// Helper bound to one call; every check returns "" or the message without the op prefix.
struct Checker {
  const OpCall& c;
  const TensorRef& t(const char* role) const { return c.operand(role); }
  std::string is(const char* role) const {  // "b is [32,64]"
    return std::string(role) + " is " + shape_str(t(role).shape);
  }
  // Same 2-D view (rows and columns) as `ref`.
  std::string same2d(const char* role, const char* ref) const {
    if (!c.has(role)) return "";
    const auto &a = t(role), &b = t(ref);
    if (a.rows() == b.rows() && a.cols() == b.cols()) return "";
    return is(role) + " but " + is(ref) + "; expected " + role + " to have " + num(b.rows()) +
           " rows of " + num(b.cols()) + " columns like " + ref;
  }
  std::string same_numel(const char* role, const char* ref) const {
    if (t(role).numel() == t(ref).numel()) return "";
    return is(role) + " but " + is(ref) + "; expected the same element count (" +
           num(t(ref).numel()) + ")";
  }
  std::string numel_eq(const char* role, int64_t n, const std::string& why) const {
    if (!c.has(role) || t(role).numel() == n) return "";
    return is(role) + " but " + why + "; expected " + num(n) + " elements";
  }
  // A param that must be a positive integer (optionally even).
  std::string pos_int(const char* name, bool even = false) const {
    const double v = c.param(name);
    if (v >= 1 && v < 2147483648.0 && v == std::floor(v) &&
        (!even || static_cast<int64_t>(v) % 2 == 0))
      return "";
    return std::string(name) + " is " + num(v) + "; expected a positive " + (even ? "even " : "") +
           "integer";
  }
  std::string dtypes() const {
    if (c.info->any_dtype) return "";
    for (const auto& [role, ref] : c.operands) {
      const bool want_i32 = role == "ids" || role == "kv_len";
      if (want_i32 && ref.dtype != DType::i32)
        return role + " is " + dtype_name(ref.dtype) + " " + shape_str(ref.shape) +
               "; expected i32";
      if (!want_i32 && !detail::is_float(ref.dtype))
        return role + " is " + dtype_name(ref.dtype) + " " + shape_str(ref.shape) +
               "; expected bf16 or f32";
    }
    return "";
  }

  std::string gemm() const {
    const auto &a = t("a"), &b = t("b"), &out = t("out");
    const bool tb = c.param("transpose_b") != 0;
    const int64_t K = a.cols(), M = a.rows();
    const int64_t bK = tb ? b.cols() : b.rows(), N = tb ? b.rows() : b.cols();
    if (bK != K)
      return is("b") + " but a has " + num(K) + " columns; expected b " +
             (tb ? "columns" : "rows") + " == " + num(K) +
             (tb ? " (transpose_b=1: b is [N,K])" : " (b is [K,N])");
    if (out.rows() != M || out.cols() != N)
      return is("out") + " but " + is("a") + " and " + is("b") + (tb ? " (transposed)" : "") +
             "; expected out [" + num(M) + "," + num(N) + "]";
    return numel_eq("bias", N, "out has " + num(N) + " columns");
  }
  std::string norm() const {
    const int64_t C = t("x").cols();
    std::string e = numel_eq("weight", C, "x has " + num(C) + " columns");
    if (e.empty()) e = numel_eq("bias", C, "x has " + num(C) + " columns");
    if (e.empty()) e = same2d("out", "x");
    return e;
  }
  std::string rope() const {
    if (auto e = pos_int("head_dim", true); !e.empty()) return e;
    const auto &x = t("x"), &lut = t("lut");
    const auto hd = static_cast<int64_t>(c.param("head_dim"));
    if (x.cols() % hd != 0)
      return is("x") + " but head_dim is " + num(hd) +
             "; expected x columns to be a multiple of head_dim";
    if (lut.rows() != x.rows() || (lut.cols() != hd && lut.cols() != x.cols()))
      return is("lut") + " but " + is("x") + " and head_dim is " + num(hd) + "; expected lut [" +
             num(x.rows()) + "," + num(hd) + "] (one cos|sin row per x row) or [" + num(x.rows()) +
             "," + num(x.cols()) + "] (that row repeated for every head)";
    return same2d("out", "x");
  }
  std::string attention() const {
    for (const char* p : {"heads", "kv_heads", "head_dim"})
      if (auto e = pos_int(p); !e.empty()) return e;
    const auto H = static_cast<int64_t>(c.param("heads"));
    const auto KH = static_cast<int64_t>(c.param("kv_heads"));
    const auto D = static_cast<int64_t>(c.param("head_dim"));
    const auto &q = t("q"), &k = t("k");
    if (H % KH != 0)
      return "heads is " + num(H) + " and kv_heads is " + num(KH) +
             "; expected heads to be a multiple of kv_heads";
    if (q.cols() != H * D)
      return is("q") + " but heads*head_dim is " + num(H) + "*" + num(D) + "; expected q with " +
             num(H * D) + " columns";
    if (k.cols() != KH * D)
      return is("k") + " but kv_heads*head_dim is " + num(KH) + "*" + num(D) +
             "; expected k with " + num(KH * D) + " columns";
    if (k.rows() < 1) return is("k") + "; expected at least one kv row";
    if (auto e = same2d("v", "k"); !e.empty()) return e;
    if (c.param("causal") != 0 && q.rows() > k.rows())
      return is("q") + " but " + is("k") +
             "; expected q rows <= k rows (causal queries sit inside the kv range)";
    if (c.has("kv_len") && t("kv_len").numel() < 1)
      return is("kv_len") + "; expected at least one element (the valid kv row count)";
    return same2d("out", "q");
  }
  std::string embedding() const {
    const auto &table = t("table"), &ids = t("ids"), &out = t("out");
    if (out.rows() != ids.numel() || out.cols() != table.cols())
      return is("out") + " but " + is("ids") + " and " + is("table") + "; expected out [" +
             num(ids.numel()) + "," + num(table.cols()) + "]";
    return "";
  }
};

}  // namespace

namespace detail {

std::string check_gemm(const OpCall& c) {
  return Checker{c}.gemm();
}
std::string check_norm(const OpCall& c) {
  return Checker{c}.norm();
}
std::string check_rope(const OpCall& c) {
  return Checker{c}.rope();
}
std::string check_silu_mul(const OpCall& c) {
  Checker k{c};
  return first(k.same2d("up", "gate"), k.same2d("out", "gate"));
}
std::string check_add(const OpCall& c) {
  Checker k{c};
  return first(k.same_numel("b", "a"), k.same_numel("out", "a"));
}
std::string check_softmax(const OpCall& c) {
  return Checker{c}.same2d("out", "x");
}
std::string check_attention(const OpCall& c) {
  return Checker{c}.attention();
}
std::string check_embedding(const OpCall& c) {
  return Checker{c}.embedding();
}
std::string check_convert(const OpCall& c) {
  return Checker{c}.same_numel("out", "src");
}

}  // namespace detail

std::string check_op_shapes(const OpCall& call) {
  if (!call.info) return "op call has no op";
  const std::string op = call.info->name;
  for (const auto& o : call.info->operands)
    if (o.required && !call.has(o.role))
      return op + ": missing required operand " + o.role + " (" + o.role + " is not bound)";
  for (const auto& [role, ref] : call.operands) {
    bool known = false;
    for (const auto& o : call.info->operands) known = known || role == o.role;
    if (!known) return op + ": unknown operand " + role;
  }
  std::string e = Checker{call}.dtypes();
  if (e.empty() && call.info->check_shapes) e = call.info->check_shapes(call);
  return e.empty() ? e : op + ": " + e;
}

}  // namespace bod
