#include "trace/trace_cursor.h"

#include <climits>
#include <cmath>

namespace bod::trace_json {

std::string quote(const rjson& v) {
  return excerpt(json_short(v), kMsgBytes);
}

std::string expected(const std::string& what, const rjson& found) {
  return "expected " + what + ", found " + json_kind(found) + " " + quote(found);
}

std::string int_range(long long lo, long long hi) {
  if (lo == LLONG_MIN && hi == LLONG_MAX) return "an integer";
  if (lo == INT_MIN && hi == INT_MAX) return "a 32-bit integer";
  if (hi == LLONG_MAX) return "an integer >= " + std::to_string(lo);
  return "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
}

Error Cursor::err(const std::string& what) const {
  std::string w = file_ + ":" + std::to_string(line_);
  if (!path_.empty()) w += ":";
  for (auto& s : path_)
    w += "/" + (s.is_key ? excerpt(ptr_key(s.key), kMsgBytes) : std::to_string(s.index));
  return Error{w, what, Exit::bad_input};
}

Error Cursor::line_err(const std::string& what) const {
  return Error{file_ + ":" + std::to_string(line_), what, Exit::bad_input};
}

Result<std::string> str_v(Cursor& c, const rjson& v) {
  if (!v.is_string()) return c.err(expected("a string", v));
  return v.get<std::string>();
}

Result<bool> bool_v(Cursor& c, const rjson& v) {
  if (!v.is_boolean()) return c.err(expected("true or false", v));
  return v.get<bool>();
}

Result<long long> int_v(Cursor& c, const rjson& v, long long lo, long long hi) {
  if (v.is_number_integer()) {
    bool big =
        v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(hi);
    long long x = v.get<long long>();
    if (!big && x >= lo && x <= hi) return x;
  }
  return c.err(expected(int_range(lo, hi), v));
}

Result<double> num_v(Cursor& c, const rjson& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return HUGE_VAL;
    if (s == "-inf") return -HUGE_VAL;
  }
  return c.err(expected("a number or one of \"nan\", \"inf\", \"-inf\"", v));
}

Result<uint64_t> hash_v(Cursor& c, const rjson& v) {
  if (v.is_string() && v.get_ref<const std::string&>().size() == 16) {
    uint64_t h = 0;
    bool ok = true;
    for (char ch : v.get_ref<const std::string&>()) {
      int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
      ok = ok && d >= 0;
      h = h << 4 | static_cast<uint64_t>(d & 0xf);
    }
    if (ok) return h;
  }
  return c.err(expected("a hash: 16 lower-case hex digits", v));
}

Status object_v(Cursor& c, const rjson& v, const std::string& what) {
  if (v.is_object()) return ok_status();
  return c.err(expected(what, v));
}

Status array_v(Cursor& c, const rjson& v, size_t exact) {
  if (v.is_array() && (exact == SIZE_MAX || v.size() == exact)) return ok_status();
  std::string want = "an array";
  if (exact != SIZE_MAX) want += " of " + std::to_string(exact) + " elements";
  return c.err(expected(want, v));
}

Error missing(Cursor& c, const char* want) {
  return c.err(std::string("missing required field (expected ") + want + ")");
}

Status unknown_key(Cursor& c, std::string_view k, const rjson& v,
                   const std::vector<const char*>& known) {
  auto in = c.in(k);
  if (k == "x") {
    if (!v.is_object()) return c.err(expected("an object (writer extensions)", v));
    return ok_status();
  }
  std::string list;
  for (auto* n : known) list += (list.empty() ? "" : ", ") + std::string(n);
  return c.err("unknown key \"" + excerpt(k, kMsgBytes) + "\"; expected one of " + list +
               " (extensions go under \"x\")");
}

Status only_keys(Cursor& c, const rjson& o, const std::vector<const char*>& known) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    std::string_view k = it.key();
    bool ok = false;
    for (auto* n : known) ok = ok || k == n;
    if (!ok) BOD_CHECK(unknown_key(c, k, it.value(), known));
  }
  return ok_status();
}

}  // namespace bod::trace_json
