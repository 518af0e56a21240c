// Typed reads from model.json that name the JSON pointer of a bad value in the error:
// "/kernels/0/slots/2/dtype: expected one of bf16, f32, i32, i8, found \"f16\"".
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_text.h"
#include "core/result.h"
#include "model/expr.h"

namespace bod {

using json = nlohmann::ordered_json;

// Limits on hostile input (docs/model-format.md §13).
constexpr size_t kMaxJsonDepth = 256;  // nesting of [ and { in model.json
// JSON values and keys in model.json (a 64 MiB file of small values holds about this many;
// the fixtures hold 2,500 at most), counted while parsing, before each is stored.
constexpr size_t kMaxJsonValues = size_t(1) << 22;

// The same for a whole error: every segment of a JSON pointer `where` is excerpted, control
// characters in `what` are escaped (its quoted parts are capped where they are quoted).
Error safe_error(Error e);

Error bad(const std::string& path, const std::string& what);
Error expected(const std::string& path, const std::string& what, const json& found);

inline std::string at(const std::string& path, const std::string& key) {
  return path + "/" + ptr_key(key);
}
inline std::string at(const std::string& path, size_t i) {
  return path + "/" + std::to_string(i);
}

Result<std::string> get_string(const json& j, const std::string& path);
Result<bool> get_bool(const json& j, const std::string& path);
Result<double> get_number(const json& j, const std::string& path);
// An integer or an expression string ("NQ*D").
Result<Expr> get_expr(const json& j, const std::string& path);
// Expression whose names must all be in `scope`; error names the unknown one.
Result<Expr> get_scoped_expr(const json& j, const std::string& path,
                             const std::vector<std::string>& scope);
Status require_object(const json& j, const std::string& path);
Status require_array(const json& j, const std::string& path);
// Unknown keys are refused so typos ("static_input_index") do not pass silently.
Status only_keys(const json& j, const std::string& path, const std::vector<std::string>& allowed);

}  // namespace bod
