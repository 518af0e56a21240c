// Integer expressions over named dims and loop variables ("NQ*D", "(S+T)/2", "l*4+p") and
// name templates ("rms_L{l}"). Shapes, ranges, op params and bo_keys are written with them.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace bod {

using Env = std::map<std::string, int64_t>;

// Hostile-input limits (docs/model-format.md §13): the parser and evaluator recurse.
constexpr int kMaxExprDepth = 64;        // nested parentheses / unary minus
constexpr size_t kMaxExprLength = 4096;  // characters in one expression

class Expr {
 public:
  Expr() = default;
  // Parses integers, names, + - * / % and parentheses. Error.what says where it stopped.
  static Result<Expr> parse(const std::string& text);
  static Expr constant(int64_t v);
  // Evaluates with `env`; unknown names and division by zero are errors.
  Result<int64_t> eval(const Env& env) const;
  const std::string& text() const { return text_; }
  // Names the expression uses (to check they are in scope before running anything).
  std::vector<std::string> names() const;

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// A numeric op parameter: a real literal (eps = 1e-5) or an integer expression ("D", "n-1").
struct Param {
  std::optional<Expr> expr;
  double real = 0;
  Result<double> eval(const Env& env) const;
};

// Replaces every {expr} in `tmpl` by its value: "L{l}_p{p}" -> "L3_p1".
Result<std::string> expand_template(const std::string& tmpl, const Env& env);
// Names used inside the {...} parts of a template (parse errors are reported as Error).
Result<std::vector<std::string>> template_names(const std::string& tmpl);

}  // namespace bod
