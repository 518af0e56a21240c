// The message kit of both JSON readers (model.json and traces): how a value found in the input
// is named and quoted in a one-line error, and how a key is spelled in a JSON pointer. One kit,
// so the two readers escape and shorten alike.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace bod {

constexpr size_t kMaxExcerpt = 200;  // characters of input quoted in one error message

// Input quoted in an error line, safe to print by printable()'s rule (core/printable.h: control
// characters as \n, \t, \r, \x1b, ..., C1 controls and bidi overrides as \u{NNNN}, bytes that
// are not UTF-8 as \xNN), capped at `max` characters ("..." marks a cut,
// never inside a character).
std::string excerpt(std::string_view s, size_t max = kMaxExcerpt);

// Escapes a key for use in a JSON pointer (~ and /).
std::string ptr_key(std::string_view k);

// "a string", "a number", ... of a parsed value (any nlohmann::basic_json).
template <typename J>
const char* json_kind(const J& j) {
  if (j.is_null()) return "null";
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  return "a value";
}

// The value, shortened for messages: containers summarised by their first elements only (a
// dump of a big or deep value would build all of it just to cut it at 60 characters).
template <typename J>
std::string json_short(const J& j) {
  std::string s;
  if (j.is_array() || j.is_object()) {
    s = j.is_array() ? "[" : "{";
    size_t n = 0;
    for (auto it = j.begin(); it != j.end() && s.size() < 60; ++it, ++n) {
      if (n) s += ",";
      if (j.is_object()) s += J(it.key()).dump() + ":";
      s += it->is_primitive() ? it->dump(-1, ' ', false, J::error_handler_t::replace)
                              : (it->is_array() ? "[...]" : "{...}");
    }
    s += j.is_array() ? "]" : "}";
  } else {
    s = j.dump(-1, ' ', false, J::error_handler_t::replace);
  }
  if (s.size() > 60) {
    size_t cut = 57;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  return excerpt(s);
}

// "expected WHAT, found KIND VALUE".
template <typename J>
std::string expected_text(const std::string& what, const J& found) {
  return "expected " + what + ", found " + json_kind(found) + " " + json_short(found);
}

}  // namespace bod
