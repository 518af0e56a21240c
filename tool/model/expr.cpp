#include "model/expr.h"

#include <cctype>

#include "model/json_in.h"

namespace bod {

struct Expr::Node {
  char op = 0;  // 0 number, 'n' name, '+', '-', '*', '/', '%', 'u' (unary minus)
  int64_t value = 0;
  std::string name;
  std::shared_ptr<const Node> l, r;
};

namespace {

using NodeP = std::shared_ptr<const Expr::Node>;

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  Result<NodeP> parse() {
    auto n = sum();
    if (!n) return n;
    skip();
    if (i_ != s_.size()) return fail("unexpected '" + excerpt(s_.substr(i_, 1)) + "'");
    return n;
  }

 private:
  Error fail(const std::string& what) {
    return Error{"", "bad expression '" + excerpt(s_) + "': " + what + " at column " +
                         std::to_string(i_ + 1)};
  }
  // Parentheses and unary minus recurse: deeper nesting than kMaxExprDepth is refused
  // before it can exhaust the stack.
  struct Nest {
    Parser& p;
    explicit Nest(Parser& q) : p(q) { ++p.depth_; }
    ~Nest() { --p.depth_; }
  };
  bool too_deep() const { return depth_ > kMaxExprDepth; }
  Error deep() {
    --i_;  // the column of the '(' or '-' that opened one level too many
    return fail("nested deeper than " + std::to_string(kMaxExprDepth) +
                " levels of parentheses or unary minus; expected at most " +
                std::to_string(kMaxExprDepth));
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  Result<NodeP> sum() {
    auto l = product();
    if (!l) return l;
    for (;;) {
      skip();
      if (i_ >= s_.size() || (s_[i_] != '+' && s_[i_] != '-')) return l;
      char op = s_[i_++];
      auto r = product();
      if (!r) return r;
      l = NodeP(new Expr::Node{op, 0, "", l.value(), r.value()});
    }
  }
  Result<NodeP> product() {
    auto l = unary();
    if (!l) return l;
    for (;;) {
      skip();
      if (i_ >= s_.size() || (s_[i_] != '*' && s_[i_] != '/' && s_[i_] != '%')) return l;
      char op = s_[i_++];
      auto r = unary();
      if (!r) return r;
      l = NodeP(new Expr::Node{op, 0, "", l.value(), r.value()});
    }
  }
  Result<NodeP> unary() {
    skip();
    if (i_ < s_.size() && s_[i_] == '-') {
      ++i_;
      Nest n(*this);
      if (too_deep()) return deep();
      auto r = unary();
      if (!r) return r;
      return NodeP(new Expr::Node{'u', 0, "", r.value(), nullptr});
    }
    return atom();
  }
  Result<NodeP> atom() {
    skip();
    if (i_ >= s_.size()) return fail("expression ends early");
    char c = s_[i_];
    if (c == '(') {
      ++i_;
      Nest nest(*this);
      if (too_deep()) return deep();
      auto n = sum();
      if (!n) return n;
      skip();
      if (i_ >= s_.size() || s_[i_] != ')') return fail("missing ')'");
      ++i_;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      size_t b = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[i_++] - '0', &v)) {
          while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
          std::string digits = excerpt(s_.substr(b, i_ - b), 40);
          i_ = b;
          return fail("number too large: " + digits +
                      "; expected a literal of at most 2^63-1 (9223372036854775807)");
        }
      }
      return NodeP(new Expr::Node{0, v, "", nullptr, nullptr});
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t b = i_;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
        ++i_;
      return NodeP(new Expr::Node{'n', 0, s_.substr(b, i_ - b), nullptr, nullptr});
    }
    return fail("unexpected '" + excerpt(std::string(1, c)) + "'");
  }
  const std::string& s_;
  size_t i_ = 0;
  int depth_ = 0;
};

Result<int64_t> eval_node(const Expr::Node& n, const Env& env, const std::string& text) {
  if (n.op == 0) return n.value;
  if (n.op == 'n') {
    auto it = env.find(n.name);
    if (it == env.end())
      return Error{"", "unknown name '" + excerpt(n.name) + "' in expression '" + excerpt(text) +
                           "'; expected a dim, a kernel param or a loop variable in scope"};
    return it->second;
  }
  auto a = eval_node(*n.l, env, text);
  if (!a) return a;
  if (n.op == 'u') {
    if (a.value() == INT64_MIN) return Error{"", "overflow in expression '" + excerpt(text) + "'"};
    return -a.value();
  }
  auto b = eval_node(*n.r, env, text);
  if (!b) return b;
  int64_t x = a.value(), y = b.value(), r = 0;
  Error overflow{"", "overflow in expression '" + excerpt(text) + "'"};
  switch (n.op) {
    case '+':
      if (__builtin_add_overflow(x, y, &r)) return overflow;
      return r;
    case '-':
      if (__builtin_sub_overflow(x, y, &r)) return overflow;
      return r;
    case '*':
      if (__builtin_mul_overflow(x, y, &r)) return overflow;
      return r;
    case '/':
    case '%':
      if (y == 0) return Error{"", "division by zero in expression '" + excerpt(text) + "'"};
      if (x == INT64_MIN && y == -1) return overflow;
      return n.op == '/' ? x / y : x % y;
  }
  return Error{"", "bad expression node"};
}

void collect(const Expr::Node* n, std::vector<std::string>& out) {
  if (!n) return;
  if (n->op == 'n') out.push_back(n->name);
  collect(n->l.get(), out);
  collect(n->r.get(), out);
}

}  // namespace

Result<Expr> Expr::parse(const std::string& text) {
  // Long sums recurse once per term when evaluated: the length bounds that depth.
  if (text.size() > kMaxExprLength)
    return Error{"", "expression '" + excerpt(text) + "' is " + std::to_string(text.size()) +
                         " characters long; expected at most " + std::to_string(kMaxExprLength)};
  auto r = Parser(text).parse();
  if (!r) return r.error();
  Expr e;
  e.text_ = text;
  e.root_ = r.value();
  return e;
}

Expr Expr::constant(int64_t v) {
  Expr e;
  e.text_ = std::to_string(v);
  e.root_ = NodeP(new Node{0, v, "", nullptr, nullptr});
  return e;
}

Result<int64_t> Expr::eval(const Env& env) const {
  if (!root_) return Error{"", "empty expression"};
  return eval_node(*root_, env, text_);
}

Result<double> Param::eval(const Env& env) const {
  if (!expr) return real;
  auto v = expr->eval(env);
  if (!v) return v.error();
  return static_cast<double>(v.value());
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  collect(root_.get(), out);
  return out;
}

namespace {
// Calls f(expr_text) for each {...}; returns an error for unbalanced braces.
template <typename F>
Result<std::string> walk_template(const std::string& t, F f) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '}') return Error{"", "unbalanced '}' in template '" + excerpt(t) + "'"};
    if (t[i] != '{') {
      out += t[i];
      continue;
    }
    size_t e = t.find('}', i);
    if (e == std::string::npos) return Error{"", "unclosed '{' in template '" + excerpt(t) + "'"};
    auto part = f(t.substr(i + 1, e - i - 1));
    if (!part) return part;
    out += part.value();
    i = e;
  }
  return out;
}
}  // namespace

Result<std::string> expand_template(const std::string& tmpl, const Env& env) {
  return walk_template(tmpl, [&](const std::string& s) -> Result<std::string> {
    auto e = Expr::parse(s);
    if (!e) return e.error();
    auto v = e->eval(env);
    if (!v) return v.error();
    return std::to_string(v.value());
  });
}

Result<std::vector<std::string>> template_names(const std::string& tmpl) {
  std::vector<std::string> names;
  auto r = walk_template(tmpl, [&](const std::string& s) -> Result<std::string> {
    auto e = Expr::parse(s);
    if (!e) return e.error();
    for (auto& n : e->names()) names.push_back(n);
    return std::string();
  });
  if (!r) return r.error();
  return names;
}

}  // namespace bod
