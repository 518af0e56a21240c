#include "model/json_in.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "core/suggest.h"

namespace bod {

Error safe_error(Error e) {
  std::string where;
  size_t b = 0;
  for (;;) {  // each pointer segment (or the whole of a plain file path) on its own
    size_t slash = e.where.find('/', b);
    where += excerpt(
        std::string_view(e.where).substr(b, slash == std::string::npos ? slash : slash - b));
    if (slash == std::string::npos) break;
    where += '/';
    b = slash + 1;
  }
  e.where = std::move(where);
  e.what = excerpt(e.what, std::string::npos);
  return e;
}

Error bad(const std::string& path, const std::string& what) {
  return Error{path, what};
}

Error expected(const std::string& path, const std::string& what, const json& found) {
  return Error{path, expected_text(what, found)};
}

Result<std::string> get_string(const json& j, const std::string& path) {
  if (!j.is_string()) return expected(path, "a string", j);
  return j.get<std::string>();
}

Result<bool> get_bool(const json& j, const std::string& path) {
  if (!j.is_boolean()) return expected(path, "true or false", j);
  return j.get<bool>();
}

Result<double> get_number(const json& j, const std::string& path) {
  if (!j.is_number()) return expected(path, "a number", j);
  double v = j.get<double>();
  if (!std::isfinite(v)) return bad(path, "expected a finite number");
  return v;
}

Result<Expr> get_expr(const json& j, const std::string& path) {
  const std::string range =
      "; expected an integer from -2^63 to 2^63-1 (-9223372036854775808 to "
      "9223372036854775807)";
  if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX))
    return bad(path, "integer " + json_short(j) + " is out of range" + range);
  if (j.is_number_integer()) return Expr::constant(j.get<int64_t>());
  if (j.is_number_float()) {
    double v = j.get<double>();
    if (!std::isfinite(v) || v != std::floor(v))
      return bad(path, "expected an integer or an expression, found " + json_short(j));
    // Checked before converting: a double outside int64's range does not convert. A literal
    // like -9223372036854775809 is read as a double and rounds to -2^63, so -2^63 itself is
    // refused as a double too (written as an integer it is read exactly and accepted).
    if (v <= -9223372036854775808.0 || v >= 9223372036854775808.0)
      return bad(path, "number " + json_short(j) + " is out of range" + range);
    return Expr::constant(static_cast<int64_t>(v));
  }
  if (!j.is_string()) return expected(path, "an integer or an expression string", j);
  auto e = Expr::parse(j.get<std::string>());
  if (!e) return bad(path, e.error().what);
  return e;
}

Result<Expr> get_scoped_expr(const json& j, const std::string& path,
                             const std::vector<std::string>& scope) {
  auto e = get_expr(j, path);
  if (!e) return e;
  for (auto& n : e->names())
    if (std::find(scope.begin(), scope.end(), n) == scope.end())
      return bad(path, "unknown name '" + excerpt(n) + "' in '" + excerpt(e->text()) +
                           "'; expected a dim, a kernel param or a loop variable in scope");
  return e;
}

Status require_object(const json& j, const std::string& path) {
  if (!j.is_object()) return expected(path.empty() ? "/" : path, "an object", j);
  return ok_status();
}

Status require_array(const json& j, const std::string& path) {
  if (!j.is_array()) return expected(path, "an array", j);
  return ok_status();
}

Status only_keys(const json& j, const std::string& path, const std::vector<std::string>& allowed) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    std::string list;
    for (auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    std::string hint = did_you_mean(it.key(), allowed);
    return bad(at(path, it.key()), "unknown field '" + excerpt(it.key()) + "'" +
                                       (hint.empty() ? "; expected one of " + list
                                                     : hint + " (expected one of " + list + ")"));
  }
  return ok_status();
}

}  // namespace bod
