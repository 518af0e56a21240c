// Inside the trace reader: where it is (file, line, JSON pointer) and the typed reads of one
// value, each refusing a wrong value with "FILE:LINE:/json/pointer: expected ..., found ...".
// The record tables (trace_records.h) and the line reader (trace_io.cpp) share them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json_text.h"
#include "core/result.h"

namespace bod::trace_json {

// Written with a fixed key order; read into std::map objects (faster to parse and look up).
using ojson = nlohmann::ordered_json;
using rjson = nlohmann::json;

inline constexpr size_t kMsgBytes = 80;  // input quoted in a trace error, at most

std::string quote(const rjson& v);  // a value found, shortened
std::string expected(const std::string& what, const rjson& found);
std::string int_range(long long lo, long long hi);  // "an integer from 0 to 3", ...

// File, line and JSON pointer of the value being read. The pointer is a stack of key/index
// segments (views into literals or into the parsed line) spelled out only for an error, so a
// valid trace reads without building strings for it.
class Cursor {
 public:
  explicit Cursor(std::string file) : file_(std::move(file)) {}
  void start_line(size_t line) {
    line_ = line;
    path_.clear();
  }
  Error err(const std::string& what) const;       // "FILE:LINE:/a/0/b: what"
  Error line_err(const std::string& what) const;  // "FILE:LINE: what"

  // Leaves the key or index entered by in() when it goes out of scope.
  class Scope {
   public:
    explicit Scope(Cursor& c) : c_(c) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { c_.path_.pop_back(); }

   private:
    Cursor& c_;
  };
  // `key` must outlive the scope (a literal or a key of the parsed line).
  [[nodiscard]] Scope in(std::string_view key) {
    path_.push_back(Seg{key, 0, true});
    return Scope(*this);
  }
  [[nodiscard]] Scope in(size_t index) {
    path_.push_back(Seg{{}, index, false});
    return Scope(*this);
  }

 private:
  struct Seg {
    std::string_view key;
    size_t index;
    bool is_key;
  };
  std::string file_;
  size_t line_ = 0;
  std::vector<Seg> path_;
};

inline const rjson* find(const rjson& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

// Typed reads of the value at the cursor.
Result<std::string> str_v(Cursor& c, const rjson& v);
Result<bool> bool_v(Cursor& c, const rjson& v);
Result<long long> int_v(Cursor& c, const rjson& v, long long lo, long long hi);
Result<double> num_v(Cursor& c, const rjson& v);  // a number, or "nan", "inf", "-inf"
Result<uint64_t> hash_v(Cursor& c, const rjson& v);
Status object_v(Cursor& c, const rjson& v, const std::string& what);
// An array; of exactly `exact` elements unless that is SIZE_MAX.
Status array_v(Cursor& c, const rjson& v, size_t exact = SIZE_MAX);

// An enum's spellings, in the order messages list them.
template <typename E>
using Names = std::pair<const char*, E>;

template <typename E, size_t N>
Result<E> enum_v(Cursor& c, const rjson& v, const Names<E> (&names)[N]) {
  if (v.is_string())
    for (auto& [n, e] : names)
      if (v.get_ref<const std::string&>() == n) return e;
  std::string want = "one of";
  for (size_t i = 0; i < N; ++i) want += std::string(i ? ", " : " ") + names[i].first;
  return c.err(expected(want, v));
}

// "missing required field (expected WANT)" at the cursor.
Error missing(Cursor& c, const char* want);

// Refuses keys outside `known` (typo protection); "x" holds a writer's extensions: any object,
// not read.
Status only_keys(Cursor& c, const rjson& o, const std::vector<const char*>& known);
// One key of an object that `known` does not list: ok for "x" holding an object, else the error
// only_keys gives.
Status unknown_key(Cursor& c, std::string_view k, const rjson& v,
                   const std::vector<const char*>& known);

}  // namespace bod::trace_json
