#include "model/json_in.h"

#include <algorithm>
#include <cmath>

namespace bod {

std::string json_kind(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "a number";
    default:
      return "a value";
  }
}

std::string json_short(const json& j) {
  std::string s = j.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

Error bad(const std::string& path, const std::string& what) {
  return Error{path, what};
}

Error expected(const std::string& path, const std::string& what, const json& found) {
  return Error{path, "expected " + what + ", found " + json_kind(found) + " " + json_short(found)};
}

std::string ptr_key(const std::string& k) {
  std::string r;
  for (char c : k) {
    if (c == '~')
      r += "~0";
    else if (c == '/')
      r += "~1";
    else
      r += c;
  }
  return r;
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
  if (j.is_number_integer() || j.is_number_unsigned()) return Expr::constant(j.get<int64_t>());
  if (j.is_number_float()) {
    double v = j.get<double>();
    if (!std::isfinite(v) || v != std::floor(v))
      return bad(path, "expected an integer or an expression, found " + json_short(j));
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
      return bad(path, "unknown name '" + n + "' in '" + e->text() +
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
    return bad(at(path, it.key()), "unknown field '" + it.key() + "'; expected one of " + list);
  }
  return ok_status();
}

}  // namespace bod
