#include "model/json_in.h"

#include "core/suggest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

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

namespace {
// Appends c to out, escaped when it is a control character; returns false (and appends
// nothing) when that would take out past `max`.
bool put_escaped(std::string& out, unsigned char c, size_t max) {
  char buf[8];
  const char* e = nullptr;
  switch (c) {
    case '\n': e = "\\n"; break;
    case '\t': e = "\\t"; break;
    case '\r': e = "\\r"; break;
    default:
      if (c < 0x20 || c == 0x7f) {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        e = buf;
      }
  }
  size_t n = e ? std::strlen(e) : 1;
  if (out.size() + n > max) return false;
  if (e) out += e;
  else out += static_cast<char>(c);
  return true;
}
}  // namespace

std::string excerpt(std::string_view s, size_t max) {
  std::string out;
  size_t room = max < 3 ? 0 : max - 3;  // what is kept when the text is cut, then "..."
  size_t keep = 0, i = 0;
  for (; i < s.size(); ++i) {
    if (!put_escaped(out, static_cast<unsigned char>(s[i]), max)) break;
    if (out.size() <= room) keep = out.size();
  }
  if (i == s.size()) return out;
  out.resize(keep);
  // Do not cut a UTF-8 sequence in two: drop an incomplete last sequence.
  size_t lead = out.size();
  while (lead > 0 && out.size() - lead < 4 &&
         (static_cast<unsigned char>(out[lead - 1]) & 0xC0) == 0x80)
    --lead;
  if (lead > 0 && (static_cast<unsigned char>(out[lead - 1]) & 0xC0) == 0xC0) {
    auto c = static_cast<unsigned char>(out[lead - 1]);
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (out.size() - (lead - 1) < len) out.resize(lead - 1);
  }
  return out + "...";
}

Error safe_error(Error e) {
  std::string where;
  size_t b = 0;
  for (;;) {  // each pointer segment (or the whole of a plain file path) on its own
    size_t slash = e.where.find('/', b);
    where += excerpt(std::string_view(e.where).substr(b, slash == std::string::npos ? slash : slash - b));
    if (slash == std::string::npos) break;
    where += '/';
    b = slash + 1;
  }
  e.where = std::move(where);
  e.what = excerpt(e.what, std::string::npos);
  return e;
}

std::string json_short(const json& j) {
  // Containers are summarised by their first elements only: dump() of a big (or deep) value
  // would build all of it just to cut it at 60 characters.
  std::string s;
  if (j.is_array() || j.is_object()) {
    s = j.is_array() ? "[" : "{";
    size_t n = 0;
    for (auto it = j.begin(); it != j.end() && s.size() < 60; ++it, ++n) {
      if (n) s += ",";
      if (j.is_object()) s += json(it.key()).dump() + ":";
      s += it->is_primitive() ? it->dump() : (it->is_array() ? "[...]" : "{...}");
    }
    s += j.is_array() ? "]" : "}";
  } else {
    s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return excerpt(s);
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
  const std::string range = "; expected an integer from -2^63 to 2^63-1 (-9223372036854775808 to "
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
