// Integer expressions over dims and loop variables, and bo_key / pool name templates.
#include "model/expr.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace bod {
namespace {

const Env kEnv = {{"S", 16}, {"E", 64}, {"l", 3}, {"p", 1}, {"zero", 0}};

int64_t ev(const std::string& s, const Env& env = kEnv) {
  auto e = Expr::parse(s);
  EXPECT_TRUE(e) << s << ": " << e.error().what;
  if (!e) return INT64_MIN;
  auto v = e->eval(env);
  EXPECT_TRUE(v) << s << ": " << v.error().what;
  return v ? v.value() : INT64_MIN;
}

std::string parse_error(const std::string& s) {
  auto e = Expr::parse(s);
  EXPECT_FALSE(e) << "'" << s << "' parsed";
  return e ? "" : e.error().what;
}

std::string eval_error(const std::string& s, const Env& env = kEnv) {
  auto e = Expr::parse(s);
  EXPECT_TRUE(e) << s << ": " << e.error().what;
  if (!e) return "";
  auto v = e->eval(env);
  EXPECT_FALSE(v) << "'" << s << "' evaluated to " << v.value();
  return v ? "" : v.error().what;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Expr, Literals) {
  EXPECT_EQ(ev("0"), 0);
  EXPECT_EQ(ev("42"), 42);
  EXPECT_EQ(ev("  7  "), 7);
  EXPECT_EQ(ev("1000000000000"), 1000000000000LL);
  EXPECT_EQ(Expr::constant(-5).eval({}).value(), -5);
  EXPECT_EQ(Expr::constant(12).text(), "12");
}

TEST(Expr, Names) {
  EXPECT_EQ(ev("S"), 16);
  EXPECT_EQ(ev("S*E"), 1024);
  auto e = Expr::parse("l*4 + p - S/E");
  ASSERT_TRUE(e);
  auto n = e->names();
  std::sort(n.begin(), n.end());
  EXPECT_EQ(n, (std::vector<std::string>{"E", "S", "l", "p"}));
  EXPECT_EQ(e->text(), "l*4 + p - S/E");
}

TEST(Expr, Precedence) {
  EXPECT_EQ(ev("2+3*4"), 14);
  EXPECT_EQ(ev("2*3+4"), 10);
  EXPECT_EQ(ev("10-4-3"), 3);  // left associative
  EXPECT_EQ(ev("64/4/2"), 8);  // left associative
  EXPECT_EQ(ev("7%4*2"), 6);
  EXPECT_EQ(ev("1+7%4"), 4);
  EXPECT_EQ(ev("S+E/2"), 48);
  EXPECT_EQ(ev("l*4+p"), 13);
}

TEST(Expr, Parentheses) {
  EXPECT_EQ(ev("(2+3)*4"), 20);
  EXPECT_EQ(ev("((S+E))/(2*2)"), 20);
  EXPECT_EQ(ev("(S+8)/2"), 12);
  EXPECT_EQ(ev("( 1 )"), 1);
}

TEST(Expr, UnaryMinus) {
  EXPECT_EQ(ev("-3"), -3);
  EXPECT_EQ(ev("--3"), 3);
  EXPECT_EQ(ev("-S+1"), -15);
  EXPECT_EQ(ev("2*-3"), -6);
  EXPECT_EQ(ev("-(2+3)*2"), -10);
  EXPECT_EQ(ev("S - -1"), 17);
}

TEST(Expr, IntegerDivisionTruncates) {
  EXPECT_EQ(ev("7/2"), 3);
  EXPECT_EQ(ev("-7/2"), -3);
  EXPECT_EQ(ev("-7%3"), -1);
}

TEST(Expr, DivisionByZero) {
  EXPECT_TRUE(contains(eval_error("S/0"), "division by zero in expression 'S/0'"));
  EXPECT_TRUE(contains(eval_error("S%zero"), "division by zero"));
  EXPECT_TRUE(contains(eval_error("1/(l-3)"), "division by zero"));
}

TEST(Expr, UnknownName) {
  std::string m = eval_error("S*Q");
  EXPECT_TRUE(contains(m, "unknown name 'Q'")) << m;
  EXPECT_TRUE(contains(m, "'S*Q'")) << m;
  // Unknown names are found at evaluation, not at parse.
  EXPECT_TRUE(Expr::parse("nobody").ok());
}

TEST(Expr, Overflow) {
  EXPECT_TRUE(contains(parse_error("99999999999999999999"), "number too large"));
  EXPECT_TRUE(contains(eval_error("4294967296*4294967296"), "overflow"));
  EXPECT_TRUE(contains(eval_error("-4294967296*4294967296"), "overflow"));
  EXPECT_TRUE(contains(eval_error("3037000500*3037000500"), "overflow"));
  EXPECT_EQ(ev("3037000499*3037000499"), 9223372030926249001LL);
}

// Addition and subtraction are not overflow-checked (signed overflow is undefined behaviour);
// see the report. Enable when expr.cpp checks + and - like *.
TEST(Expr, AdditionOverflow) {
  EXPECT_TRUE(contains(eval_error("9000000000000000000+9000000000000000000"), "overflow"));
  EXPECT_TRUE(contains(eval_error("-9000000000000000000-9000000000000000000"), "overflow"));
  // three terms wrap back to a positive, plausible-looking value
  EXPECT_TRUE(contains(
      eval_error("S*0+9000000000000000000+9000000000000000000+9000000000000000000"), "overflow"));
}

// The literal guard rejects the last few int64 values (9223372036854775800..807), which are
// valid; harmless in practice, noted in the report.
TEST(Expr, LargestLiteral) {
  EXPECT_EQ(ev("9223372036854775807"), INT64_MAX);
}

TEST(Expr, SyntaxErrors) {
  std::string m = parse_error("S*");
  EXPECT_TRUE(contains(m, "bad expression 'S*'")) << m;
  EXPECT_TRUE(contains(m, "ends early")) << m;
  EXPECT_TRUE(contains(parse_error(""), "ends early"));
  EXPECT_TRUE(contains(parse_error("(S+1"), "missing ')'"));
  m = parse_error("S+1)");
  EXPECT_TRUE(contains(m, "unexpected ')' at column 4")) << m;
  EXPECT_TRUE(contains(parse_error("S $ 2"), "unexpected '$' at column 3"));
  EXPECT_TRUE(contains(parse_error("2 3"), "unexpected '3'"));
  EXPECT_TRUE(contains(parse_error("*2"), "unexpected '*' at column 1"));
  EXPECT_TRUE(contains(parse_error("1.5"), "unexpected '.'"));
}

TEST(Expr, DefaultConstructedIsAnError) {
  Expr e;
  EXPECT_FALSE(e.eval({}).ok());
}

TEST(Param, RealOrExpression) {
  Param real{std::nullopt, 1e-5};
  EXPECT_DOUBLE_EQ(real.eval({}).value(), 1e-5);
  Param ex{Expr::parse("S/2").value(), 0};
  EXPECT_DOUBLE_EQ(ex.eval(kEnv).value(), 8.0);
  EXPECT_FALSE(ex.eval({}).ok());
}

TEST(Template, Expansion) {
  EXPECT_EQ(expand_template("rms_L{l}", kEnv).value(), "rms_L3");
  EXPECT_EQ(expand_template("L{l}_p{p}", kEnv).value(), "L3_p1");
  EXPECT_EQ(expand_template("k{l*4+p}", kEnv).value(), "k13");
  EXPECT_EQ(expand_template("{S}x{E}", kEnv).value(), "16x64");
  EXPECT_EQ(expand_template("plain", kEnv).value(), "plain");
  EXPECT_EQ(expand_template("", kEnv).value(), "");
  EXPECT_EQ(expand_template("neg{-l}", kEnv).value(), "neg-3");
}

TEST(Template, Names) {
  auto n = template_names("rms_L{l}_p{p+S}");
  ASSERT_TRUE(n);
  EXPECT_EQ(n.value(), (std::vector<std::string>{"l", "p", "S"}));
  EXPECT_TRUE(template_names("no_vars")->empty());
}

TEST(Template, UnbalancedBraces) {
  auto a = expand_template("rms_L{l", kEnv);
  ASSERT_FALSE(a);
  EXPECT_TRUE(contains(a.error().what, "unclosed '{' in template 'rms_L{l'")) << a.error().what;
  auto b = expand_template("rms_L}l", kEnv);
  ASSERT_FALSE(b);
  EXPECT_TRUE(contains(b.error().what, "unbalanced '}'")) << b.error().what;
  auto c = template_names("x{l}}");
  ASSERT_FALSE(c);
  EXPECT_TRUE(contains(c.error().what, "unbalanced '}'"));
  auto d = template_names("{");
  ASSERT_FALSE(d);
  EXPECT_TRUE(contains(d.error().what, "unclosed '{'"));
}

TEST(Template, BadExpressionsInside) {
  auto a = expand_template("k{}", kEnv);
  ASSERT_FALSE(a);
  EXPECT_TRUE(contains(a.error().what, "ends early")) << a.error().what;
  auto b = expand_template("k{q}", kEnv);
  ASSERT_FALSE(b);
  EXPECT_TRUE(contains(b.error().what, "unknown name 'q'")) << b.error().what;
  auto c = expand_template("k{l/zero}", kEnv);
  ASSERT_FALSE(c);
  EXPECT_TRUE(contains(c.error().what, "division by zero"));
  // Nested braces are not supported: the first '}' closes the first '{'.
  auto d = template_names("k{{l}}");
  EXPECT_FALSE(d);
}

}  // namespace
}  // namespace bod
