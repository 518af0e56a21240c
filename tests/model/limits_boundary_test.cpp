// Every limit of the table in docs/model-format.md §13, at its boundary: the value at the limit
// is accepted, the value just past it is refused with exit 2 (Exit::bad_input) and a message
// that names the limit (and the flag or option that raises it, where there is one). Huge
// limits are hit cheaply: through ExpandOptions where the limit is an option, with sparse
// files, with loops whose bodies add no step, or with shapes that are never allocated. The
// trace reader's rows are in tests/trace/trace_limits_test.cpp.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "model/expr.h"
#include "model/json_in.h"
#include "model/model.h"
#include "model/tensor_io.h"
#include "plan/plan.h"
#include "support/scratch.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// A valid model: one kernel, vars for the host steps, one phase without steps.
ojson model() {
  return ojson::parse(R"({
    "format": "bo-doctor-model", "version": 1,
    "dims": {"S": 2, "E": 4},
    "vars": {"x": {"dtype": "f32", "shape": ["S", "E"]},
             "big": {"dtype": "f32", "shape": [8, "E"]},
             "y": {"dtype": "f32", "shape": [1]}},
    "kernels": {"k": {"slots": [{"name": "a", "dtype": "f32", "shape": ["S", "E"]},
                                {"name": "out", "dtype": "f32", "shape": ["S", "E"]}],
                      "body": [{"op": "copy", "src": "a", "out": "out"}]}},
    "program": {"phases": [{"name": "p", "steps": []}]}
  })");
}

ojson set_y() {
  return {{"host", "set"}, {"out", "y"}, {"value", 1}};
}

// `n` copies of a host step that sets y.
ojson sets(size_t n) {
  ojson a = ojson::array();
  for (size_t i = 0; i < n; ++i) a.push_back(set_y());
  return a;
}

ojson with_steps(ojson steps) {
  ojson j = model();
  j["program"]["phases"][0]["steps"] = std::move(steps);
  return j;
}

// Parses and expands `text`: the plan, or the first error.
Result<Plan> plan_of(const std::string& text, const ExpandOptions& o = {}) {
  static std::vector<std::unique_ptr<Model>> keep;  // the plan points into its model
  auto m = parse_model(text, "mem/model.json");
  if (!m) return m.error();
  keep.push_back(std::make_unique<Model>(std::move(m.value())));
  if (keep.size() > 8) keep.erase(keep.begin());
  return expand(*keep.back(), o);
}

#define EXPECT_ACCEPTED(r)                               \
  do {                                                   \
    auto r_ = (r);                                       \
    EXPECT_TRUE(r_) << "refused: " << r_.error().line(); \
  } while (0)

// `r` failed with exit 2 at `where` (unless empty) and its message holds every fragment.
template <typename R>
void expect_refused(const R& r, const std::string& where, const std::vector<std::string>& want) {
  ASSERT_FALSE(r) << "accepted, expected: " << (want.empty() ? "" : want[0]);
  const Error& e = r.error();
  EXPECT_EQ(e.code, Exit::bad_input) << e.line();
  if (!where.empty()) {
    EXPECT_EQ(e.where, where) << e.line();
  }
  for (auto& w : want) {
    EXPECT_NE(e.what.find(w), std::string::npos) << "'" << w << "' not in: " << e.line();
  }
  EXPECT_EQ(e.line().find('\n'), std::string::npos) << e.line();
}

// Each test has a scratch folder (removed afterwards) and can run the binary.
class Limits : public testing::ScratchDirTest {
 protected:
  Limits() : ScratchDirTest("bod_limits") {}
  // Runs the binary; returns stderr, the exit code in `code` (-1 when killed).
  std::string run(const std::string& args, int& code) {
    fs::path err = dir_ / "stderr";
    std::string line = "timeout 60 '" + std::string(BOD_BINARY) + "' " + args + " >/dev/null 2>'" +
                       err.string() + "' </dev/null";
    int st = std::system(line.c_str());
    code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return testing::slurp(err);
  }
  std::string write(const std::string& name, const std::string& bytes) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
};

// The documented values are the code's.
TEST_F(Limits, DefaultsAreTheDocumentedValues) {
  EXPECT_EQ(kMaxElements, int64_t(1) << 40);
  EXPECT_EQ(ExpandOptions{}.max_steps, 2000000u);
  EXPECT_EQ(kMaxJsonValues, size_t(1) << 22);
  EXPECT_EQ(ExpandOptions{}.max_bytes, size_t(16) << 30);
  EXPECT_EQ(kMaxJsonDepth, 256u);
  EXPECT_EQ(kMaxLoopDepth, 32);
  EXPECT_EQ(kMaxExprLength, 4096u);
  EXPECT_EQ(kMaxExprDepth, 64);
  EXPECT_EQ(kMaxExcerpt, 200u);
  EXPECT_EQ(kMaxModelFileBytes, uint64_t(64) << 20);
}

// ---- elements in one shape: 2^40 -------------------------------------------------------------

TEST_F(Limits, ShapeElementsAt2Pow40AcceptedPastRefused) {
  // A var: checked at load (never allocated here).
  ojson j = model();
  j["vars"]["v"] = {{"dtype", "i8"}, {"shape", {1048576, 1048576}}};  // 2^40
  EXPECT_ACCEPTED(parse_model(j.dump(), "mem/model.json"));
  j["vars"]["v"]["shape"] = {1048576, 1048577};  // 2^40 + 2^20
  expect_refused(parse_model(j.dump(), "mem/model.json"), "/vars/v/shape",
                 {"shape has more than 2^40 elements"});
  j["vars"]["v"]["shape"] = {int64_t(1) << 40};
  EXPECT_ACCEPTED(parse_model(j.dump(), "mem/model.json"));
  j["vars"]["v"]["shape"] = {(int64_t(1) << 40) + 1};
  expect_refused(parse_model(j.dump(), "mem/model.json"), "/vars/v/shape",
                 {"shape has more than 2^40 elements"});
  // A tensor, the same.
  ojson t = model();
  t["tensors"]["w"] = {{"dtype", "i8"}, {"shape", {1024, 1024, 1048576}}, {"init", 0}};
  EXPECT_ACCEPTED(parse_model(t.dump(), "mem/model.json"));
  t["tensors"]["w"]["shape"] = {1024, 1025, 1048576};
  expect_refused(parse_model(t.dump(), "mem/model.json"), "/tensors/w/shape",
                 {"shape has more than 2^40 elements"});

  // A slot shape, per call at expansion; the memory cap is lifted so only this limit counts.
  ExpandOptions o;
  o.max_bytes = std::numeric_limits<size_t>::max();
  ojson s = model();
  s["dims"]["N"] = 1048576;
  s["kernels"]["k"]["params"] = {"M"};
  s["kernels"]["k"]["slots"] = ojson::parse(R"([{"name": "a", "dtype": "i8", "shape": ["N", "M"]},
                                               {"name": "out", "dtype": "i8", "shape": ["N", "M"]}])");
  s["program"]["phases"][0]["steps"] = {{{"call", "k"}, {"params", {{"M", 1048576}}}}};
  EXPECT_ACCEPTED(plan_of(s.dump(), o));
  s["program"]["phases"][0]["steps"][0]["params"]["M"] = 1048577;
  expect_refused(
      plan_of(s.dump(), o), "/kernels/k/slots/0/shape/1",
      {"slot a dimension 'M' = 1048577 at call 1 makes the shape more than 2^40 elements"});
}

// ---- steps in the expanded program: 2,000,000 (ExpandOptions::max_steps) --------------------

TEST_F(Limits, ExpandedStepsAtMaxStepsAcceptedPastRefused) {
  ExpandOptions o;
  o.max_steps = 10;
  auto ok = plan_of(with_steps(sets(10)).dump(), o);
  ASSERT_TRUE(ok) << ok.error().line();
  EXPECT_EQ(ok->order.size(), 10u);
  expect_refused(plan_of(with_steps(sets(11)).dump(), o), "/program/phases/0",
                 {"the program expands to more than 10 steps", "ExpandOptions::max_steps"});
  // Steps of two loops add up: 5 + 5 fit, 5 + 6 do not.
  ojson two = with_steps({{{"loop", "i"}, {"range", 5}, {"steps", sets(1)}},
                          {{"loop", "j"}, {"range", 5}, {"steps", sets(1)}}});
  EXPECT_ACCEPTED(plan_of(two.dump(), o));
  two["program"]["phases"][0]["steps"][1]["range"] = 6;
  expect_refused(plan_of(two.dump(), o), "/program/phases/0",
                 {"the program expands to more than 10 steps"});
}

// The count comes before the expansion: 20,000 x 20,000 calls used to expand for 15 s and
// 2.9 GB (its plan metadata) before the steps limit stopped it. With a memory cap that the
// expansion would reach first, the steps limit is still what refuses it: nothing was expanded.
TEST_F(Limits, ExpandedStepsRefusedFromTheirCountBeforeExpansion) {
  ojson call = {{"call", "k"}, {"args", {{"a", "x"}, {"out", "x"}}}};
  ojson inner = {{"loop", "j"}, {"range", 20000}, {"steps", {call}}};
  std::string text = with_steps({{{"loop", "i"}, {"range", 20000}, {"steps", {inner}}}}).dump();
  ExpandOptions small;
  small.max_bytes = size_t(64) << 20;
  expect_refused(plan_of(text, small), "/program/phases/0",
                 {"the program expands to more than 2000000 steps", "ExpandOptions::max_steps"});
  expect_refused(plan_of(text), "/program/phases/0",
                 {"the program expands to more than 2000000 steps"});
  // An inner range that depends on the outer variable is counted per outer iteration:
  // sum over i < 2000 of i = 1,999,000 steps fit, i < 2001 (2,001,000) do not; 2000 calls fit
  // the small cap when counted, not when expanded, so only the count is checked here.
  ExpandOptions o;
  o.max_bytes = size_t(1) << 20;
  ojson tri = {{"loop", "j"}, {"range", "i"}, {"steps", {call}}};
  auto tri_of = [&](int n) {
    return with_steps({{{"loop", "i"}, {"range", n}, {"steps", {tri}}}}).dump();
  };
  auto fits = plan_of(tri_of(2000), o);
  ASSERT_FALSE(fits);
  EXPECT_NE(fits.error().what.find("memory cap"), std::string::npos) << fits.error().line();
  expect_refused(plan_of(tri_of(2001), o), "/program/phases/0",
                 {"the program expands to more than 2000000 steps"});
}

// ---- iterations of one loop or phase repeat: the steps limit --------------------------------

TEST_F(Limits, LoopCountAtMaxStepsAcceptedPastRefused) {
  ExpandOptions o;
  o.max_steps = 10;
  ojson j = with_steps({{{"loop", "i"}, {"range", 10}, {"steps", sets(1)}}});
  EXPECT_ACCEPTED(plan_of(j.dump(), o));
  j["program"]["phases"][0]["steps"][0]["range"] = 11;
  expect_refused(plan_of(j.dump(), o), "/program/phases/0/steps/0/range",
                 {"the loop runs 11 times; the program may expand to at most 10 steps",
                  "ExpandOptions::max_steps"});
  // A phase repeat.
  ojson r = with_steps(sets(1));
  r["program"]["phases"][0]["var"] = "t";
  r["program"]["phases"][0]["repeat"] = 10;
  EXPECT_ACCEPTED(plan_of(r.dump(), o));
  r["program"]["phases"][0]["repeat"] = 11;
  expect_refused(plan_of(r.dump(), o), "/program/phases/0/repeat",
                 {"the loop runs 11 times", "ExpandOptions::max_steps"});
  // At the default, past it: refused before the first iteration, so this is cheap.
  j["program"]["phases"][0]["steps"][0]["range"] = 2000001;
  expect_refused(plan_of(j.dump()), "/program/phases/0/steps/0/range",
                 {"the loop runs 2000001 times; the program may expand to at most 2000000 steps"});
  r["program"]["phases"][0]["repeat"] = 2000001;
  expect_refused(plan_of(r.dump()), "/program/phases/0/repeat",
                 {"the loop runs 2000001 times; the program may expand to at most 2000000 steps"});
}

// ---- loop iterations that add no step: the steps limit --------------------------------------

TEST_F(Limits, IdleIterationsAtMaxStepsAcceptedPastRefused) {
  // loop i (1) { loop j (J) { loop k (0) { set } } }: each j iteration, the one i iteration and
  // the phase's one pass add no step: J + 2 idle iterations; the last one counted, and so the
  // one refused, is the phase's pass.
  ExpandOptions o;
  o.max_steps = 10;
  auto prog = [](int j) {
    ojson k = {{"loop", "k"}, {"range", 0}, {"steps", sets(1)}};
    ojson jl = {{"loop", "j"}, {"range", j}, {"steps", {k}}};
    return with_steps({{{"loop", "i"}, {"range", 1}, {"steps", {jl}}}}).dump();
  };
  auto ok = plan_of(prog(8), o);
  ASSERT_TRUE(ok) << ok.error().line();
  EXPECT_TRUE(ok->order.empty());
  expect_refused(plan_of(prog(9), o), "/program/phases/0/repeat",
                 {"the program's loops run more than 10 iterations that expand to no step",
                  "ExpandOptions::max_steps"});
}

// ---- JSON nesting: 256 -----------------------------------------------------------------------

TEST_F(Limits, JsonNestingAt256AcceptedAt257Refused) {
  auto nested = [](size_t n) { return std::string(n, '[') + std::string(n, ']'); };
  // 256 levels parse: the error is the next stage's (a model is an object).
  auto at = parse_model(nested(256), "mem/model.json");
  ASSERT_FALSE(at);
  EXPECT_EQ(at.error().what.find("nested deeper"), std::string::npos) << at.error().line();
  EXPECT_NE(at.error().what.find("expected an object"), std::string::npos) << at.error().line();
  expect_refused(parse_model(nested(257), "mem/model.json"), "mem/model.json",
                 {"JSON nested deeper than 256 levels at line 1, column 257; expected at most 256 "
                  "levels of [ and {"});
  // Inside a model: the top-level object is one level, so 255 arrays below it is 256.
  std::string text = model().dump();
  text.insert(text.size() - 1, R"(,"doc":)" + nested(255));
  EXPECT_ACCEPTED(plan_of(text));  // doc takes any JSON
  text = model().dump();
  text.insert(text.size() - 1, R"(,"doc":)" + nested(256));
  expect_refused(parse_model(text, "mem/model.json"), "mem/model.json",
                 {"JSON nested deeper than 256 levels"});
}

// ---- JSON values in model.json: 2^22 ---------------------------------------------------------

// The file size capped bytes, not values: 64 MiB of `[],` is 21M arrays (1.6 GB parsed).
TEST_F(Limits, JsonValuesAt2Pow22AcceptedPastRefused) {
  std::string base = model().dump();
  // The model's values and keys, counted as the reader does (each value and each key one).
  std::function<size_t(const ojson&)> count = [&](const ojson& v) {
    size_t n = 1;
    if (v.is_object())
      for (auto it = v.begin(); it != v.end(); ++it) n += 1 + count(it.value());
    if (v.is_array())
      for (auto& e : v) n += count(e);
    return n;
  };
  size_t have = count(model()) + 2;  // "doc" and its array
  auto with_values = [&](size_t total) {
    std::string text = base;
    std::string doc = R"(,"doc":[)";
    for (size_t i = have; i < total; ++i) doc += i == have ? "0" : ",0";
    text.insert(text.size() - 1, doc + "]");
    return text;
  };
  EXPECT_ACCEPTED(plan_of(with_values(kMaxJsonValues)));
  expect_refused(parse_model(with_values(kMaxJsonValues + 1), "mem/model.json"),
                 "/doc/" + std::to_string(kMaxJsonValues - have),
                 {"more than 4194304 JSON values and keys; expected at most 4194304"});
}

// ---- loop nesting: 32 ------------------------------------------------------------------------

TEST_F(Limits, LoopNestingAt32AcceptedAt33Refused) {
  auto prog = [](int depth) {
    ojson steps = sets(1);
    for (int i = depth - 1; i >= 0; --i)
      steps = ojson::array({{{"loop", "i" + std::to_string(i)}, {"range", 1}, {"steps", steps}}});
    return with_steps(steps).dump();
  };
  auto ok = plan_of(prog(32));
  ASSERT_TRUE(ok) << ok.error().line();
  EXPECT_EQ(ok->order.size(), 1u);
  auto r = plan_of(prog(33));
  expect_refused(r, "", {"loops nested deeper than 32 levels; expected at most 32"});
  std::string where = "/program/phases/0/steps/0";
  for (int i = 0; i < 32; ++i) where += "/steps/0";
  EXPECT_EQ(r.error().where, where);
}

// ---- expression length: 4096 characters ------------------------------------------------------

TEST_F(Limits, ExpressionLengthAt4096AcceptedAt4097Refused) {
  std::string tail;
  for (int i = 0; i < 2047; ++i) tail += "+1";
  std::string at = "11" + tail, past = "111" + tail;
  ASSERT_EQ(at.size(), 4096u);
  ASSERT_EQ(past.size(), 4097u);
  auto e = Expr::parse(at);
  ASSERT_TRUE(e) << e.error().line();
  EXPECT_EQ(e->eval({}).value(), 11 + 2047);
  expect_refused(Expr::parse(past), "", {"is 4097 characters long; expected at most 4096"});
  // Through the loader, with the JSON pointer.
  ojson j = model();
  j["dims"]["T"] = at;
  auto m = parse_model(j.dump(), "mem/model.json");
  ASSERT_TRUE(m) << m.error().line();
  EXPECT_EQ(m->dims.at("T"), 11 + 2047);
  j["dims"]["T"] = past;
  expect_refused(parse_model(j.dump(), "mem/model.json"), "/dims/T",
                 {"is 4097 characters long; expected at most 4096"});
}

// ---- expression nesting: 64 ------------------------------------------------------------------

TEST_F(Limits, ExpressionNestingAt64AcceptedAt65Refused) {
  auto parens = [](int n) { return std::string(n, '(') + "7" + std::string(n, ')'); };
  auto minus = [](int n) { return std::string(n, '-') + "7"; };
  for (auto& [at, past] : {std::pair{parens(64), parens(65)}, std::pair{minus(64), minus(65)}}) {
    auto e = Expr::parse(at);
    ASSERT_TRUE(e) << e.error().line();
    EXPECT_EQ(e->eval({}).value(), 7);
    expect_refused(Expr::parse(past), "",
                   {"nested deeper than 64 levels of parentheses or unary minus; expected at "
                    "most 64 at column 65"});
    ojson j = model();
    j["dims"]["T"] = at;
    EXPECT_ACCEPTED(parse_model(j.dump(), "mem/model.json"));
    j["dims"]["T"] = past;
    expect_refused(parse_model(j.dump(), "mem/model.json"), "/dims/T",
                   {"nested deeper than 64 levels"});
  }
}

// ---- integer literals: -2^63 to 2^63-1 -------------------------------------------------------

TEST_F(Limits, IntegerLiteralsAtInt64RangeAcceptedPastRefused) {
  // The top: a dim (dims are positive).
  auto dim = [](const std::string& literal) {
    std::string text = model().dump();
    text.replace(text.find(R"("E":4)"), 5, R"("E":4,"T":)" + literal);
    return parse_model(text, "mem/model.json");
  };
  const std::string range = "is out of range; expected an integer from -2^63 to 2^63-1";
  auto hi = dim("9223372036854775807");
  ASSERT_TRUE(hi) << hi.error().line();
  EXPECT_EQ(hi->dims.at("T"), INT64_MAX);
  expect_refused(dim("9223372036854775808"), "/dims/T", {"integer 9223372036854775808 " + range});
  expect_refused(dim("9223372036854775808.0"), "/dims/T", {range});
  // The bottom: the start of a loop range of one iteration.
  auto from = [](const std::string& literal) {
    std::string text =
        with_steps({{{"loop", "i"}, {"range", {-1, -9223372036854775807}}, {"steps", sets(1)}}})
            .dump();
    text.replace(text.find("[-1,"), 4, "[" + literal + ",");
    return plan_of(text);
  };
  auto lo = from("-9223372036854775808");
  ASSERT_TRUE(lo) << lo.error().line();
  EXPECT_EQ(lo->order.size(), 1u);
  // Read as a double, this one rounds to -2^63: refused, not silently taken as -2^63.
  expect_refused(from("-9223372036854775809"), "/program/phases/0/steps/0/range/0", {range});
  // In an expression string, literals are 0 to 2^63-1 (a minus sign applies after).
  auto e = Expr::parse("9223372036854775807");
  ASSERT_TRUE(e) << e.error().line();
  EXPECT_EQ(e->eval({}).value(), INT64_MAX);
  expect_refused(Expr::parse("9223372036854775808"), "",
                 {"number too large: 9223372036854775808; expected a literal of at most 2^63-1 "
                  "(9223372036854775807) at column 1"});
  auto m = from(R"("-9223372036854775807 - 1")");
  ASSERT_TRUE(m) << m.error().line();
  EXPECT_EQ(m->order.size(), 1u);
}

// ---- number literals: a finite double --------------------------------------------------------

TEST_F(Limits, NumberLiteralsAtDoubleMaxAcceptedPastRefused) {
  auto value = [](const std::string& literal) {
    std::string text = with_steps(sets(1)).dump();
    text.replace(text.find(R"("value":1)"), 9, R"("value":)" + literal);
    return plan_of(text);
  };
  auto hi = value("1.7976931348623157e308");  // DBL_MAX
  ASSERT_TRUE(hi) << hi.error().line();
  EXPECT_EQ(hi->hosts[0].params.at("value"), std::numeric_limits<double>::max());
  EXPECT_ACCEPTED(value("-1.7976931348623157e308"));
  // The next decimal up rounds to infinity.
  expect_refused(value("1.7976931348623159e308"), "/program/phases/0/steps/0/value",
                 {"number overflow parsing '1.7976931348623159e308'; expected a number within the "
                  "range of a double (about +-1.8e308)"});
  expect_refused(value("-1.7976931348623159e308"), "/program/phases/0/steps/0/value",
                 {"number overflow parsing"});
}

// ---- write_rows destination row: 0 to out rows - src rows ------------------------------------

TEST_F(Limits, WriteRowsRowAtLastFittingRowAcceptedPastRefused) {
  auto rows = [](const std::string& row) {
    return plan_of(with_steps(ojson::parse(R"([{"host": "write_rows", "src": "x", "out": "big",
                                                "row": )" +
                                           row + "}]"))
                       .dump());
  };
  EXPECT_ACCEPTED(rows("6"));  // big is [8,4], x is [2,4]: rows 6 and 7
  EXPECT_ACCEPTED(rows("0"));
  const std::string where = "/program/phases/0/steps/0";
  expect_refused(
      rows("7"), where,
      {"write_rows: row 7 with 2 src rows does not fit out [8,4]; expected 0 <= row <= 6"});
  expect_refused(rows("-1"), where,
                 {"write_rows: row -1 with 2 src rows", "expected 0 <= row <= 6"});
}

// ---- rope_lut heads: 1 to 2^30 ---------------------------------------------------------------

TEST_F(Limits, RopeLutHeadsAt2Pow30AcceptedPastRefused) {
  // out needs heads * an even head_dim columns: [1, 2^31] fits heads = 2^30 (never allocated
  // here; the memory cap is lifted so only this limit counts).
  ExpandOptions o;
  o.max_bytes = std::numeric_limits<size_t>::max();
  auto lut = [&](const std::string& heads) {
    ojson j = with_steps(ojson::parse(R"([{"host": "rope_lut", "out": "lut", "pos": 0,
                                           "heads": )" +
                                      heads + "}]"));
    j["vars"]["lut"] = {{"dtype", "f32"}, {"shape", {1, int64_t(1) << 31}}};
    return plan_of(j.dump(), o);
  };
  EXPECT_ACCEPTED(lut("1073741824"));
  EXPECT_ACCEPTED(lut("1"));
  const std::string where = "/program/phases/0/steps/0";
  expect_refused(lut("1073741825"), where,
                 {"rope_lut: heads must be from 1 to 2^30, found 1073741825"});
  expect_refused(lut("0"), where, {"rope_lut: heads must be from 1 to 2^30, found 0"});
}

// ---- input quoted in one error message: 200 characters ---------------------------------------

TEST_F(Limits, QuotedInputAt200CharactersWholePastCut) {
  auto unknown = [](const std::string& name) {
    return plan_of(with_steps({{{"call", name}, {"args", ojson::object()}}}).dump());
  };
  std::string at(200, 'q'), past(201, 'q');
  expect_refused(unknown(at), "/program/phases/0/steps/0/call", {"unknown kernel '" + at + "'"});
  auto r = unknown(past);
  expect_refused(r, "/program/phases/0/steps/0/call",
                 {"unknown kernel '" + std::string(197, 'q') + "...'"});
  EXPECT_EQ(r.error().what.find(std::string(198, 'q')), std::string::npos) << r.error().line();
}

// ---- the memory cap: --max-memory (ExpandOptions::max_bytes) ---------------------------------

TEST_F(Limits, MemoryCapAtEstimateAcceptedOneByteLessRefused) {
  ojson j = with_steps(ojson::parse(R"([{"loop": "i", "range": 50, "steps": [
                                         {"call": "k", "args": {"a": "x"}},
                                         {"host": "set", "out": "y", "value": 1}]}])"));
  ExpandOptions o;
  o.max_bytes = std::numeric_limits<size_t>::max();
  auto free = plan_of(j.dump(), o);
  ASSERT_TRUE(free) << free.error().line();
  size_t need = free->estimated_bytes;
  ASSERT_GT(need, 0u);
  o.max_bytes = need;
  auto at = plan_of(j.dump(), o);
  ASSERT_TRUE(at) << at.error().line();
  EXPECT_EQ(at->estimated_bytes, need);
  o.max_bytes = need - 1;
  expect_refused(plan_of(j.dump(), o), "/program", {"over the memory cap", "raise --max-memory"});
}

// ---- the --max-memory flag itself: more than 0, at most 2^20 GiB ------------------------------

TEST_F(Limits, MaxMemoryFlagAt2Pow20GiBAcceptedPastRefused) {
  std::string m = write("model.json", with_steps(sets(1)).dump());
  int code = -1;
  std::string err = run("lint --max-memory 1048576 '" + m + "'", code);
  EXPECT_EQ(code, 0) << err;
  err = run("lint --max-memory 1048576.5 '" + m + "'", code);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("--max-memory: expected a number of GiB more than 0 and at most 1048576"),
            std::string::npos)
      << err;
  err = run("lint --max-memory 0 '" + m + "'", code);
  EXPECT_EQ(code, 2) << err;
}

// ---- tensor file size: at least numel x dtype size bytes --------------------------------------

TEST_F(Limits, TensorFileAtDeclaredSizeAcceptedOneByteShortRefused) {
  // Small: [4] f32 needs 16 bytes.
  std::string f = write("w.bin", std::string(16, '\0'));
  EXPECT_ACCEPTED(check_tensor_file(f, "bin", "", DType::f32, {4}));
  fs::resize_file(f, 15);
  expect_refused(check_tensor_file(f, "bin", "", DType::f32, {4}), f,
                 {"truncated: declared as shape [4] f32 = 16 bytes, but the file holds only 15 "
                  "bytes; expected a file with the whole tensor"});
  // Huge: [1000000000] f32 in a sparse file of exactly 4000000000 bytes (costs no disk).
  std::string big = write("big.bin", "");
  fs::resize_file(big, 4000000000u);
  EXPECT_ACCEPTED(check_tensor_file(big, "bin", "", DType::f32, {1000000000}));
  fs::resize_file(big, 3999999999u);
  expect_refused(check_tensor_file(big, "bin", "", DType::f32, {1000000000}), big,
                 {"declared as shape [1000000000] f32 = 4000000000 bytes, but the file holds "
                  "only 3999999999 bytes"});
}

// ---- regular files only ----------------------------------------------------------------------

TEST_F(Limits, RegularFilesAcceptedFifoAndDeviceRefused) {
  std::string m = write("model.json", with_steps(sets(1)).dump());
  EXPECT_ACCEPTED(load_model(m));
  std::string link = (dir_ / "link.json").string();
  fs::create_symlink(m, link);  // a link to a regular file is the file
  EXPECT_ACCEPTED(load_model(link));
  std::string fifo = (dir_ / "fifo.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(load_model(fifo), fifo, {"is not a regular file (a device, FIFO or socket)"});
  expect_refused(load_model("/dev/null"), "/dev/null", {"is not a regular file"});
  // Tensor files.
  std::string w = write("w.bin", std::string(16, '\0'));
  EXPECT_ACCEPTED(check_tensor_file(w, "bin", "", DType::f32, {4}));
  auto t = check_tensor_file(fifo, "bin", "", DType::f32, {4});
  expect_refused(t, fifo, {"not a regular file"});
}

// ---- model.json size: 64 MiB ------------------------------------------------------------------

TEST_F(Limits, ModelFileAt64MiBAcceptedOneBytePastRefused) {
  // A valid model padded with spaces to exactly 64 MiB loads; one more byte is refused before
  // the file is read.
  std::string text = with_steps(sets(1)).dump();
  const size_t limit = size_t(64) << 20;
  std::string path = (dir_ / "model.json").string();
  {
    std::ofstream f(path, std::ios::binary);
    f << text;
    std::string pad(size_t(1) << 20, ' ');
    size_t left = limit - text.size();
    while (left > 0) {
      size_t n = std::min(left, pad.size());
      f.write(pad.data(), static_cast<std::streamsize>(n));
      left -= n;
    }
  }
  ASSERT_EQ(fs::file_size(path), limit);
  EXPECT_ACCEPTED(load_model(path));
  std::ofstream(path, std::ios::binary | std::ios::app) << ' ';
  ASSERT_EQ(fs::file_size(path), limit + 1);
  expect_refused(load_model(path), path,
                 {"model file is 67108865 bytes; expected at most 67108864 (64 MiB)"});
  int code = -1;
  std::string err = run("lint '" + path + "'", code);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("expected at most 67108864 (64 MiB)"), std::string::npos) << err;
}

}  // namespace
}  // namespace bod
