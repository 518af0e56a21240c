// Hostile model.json input (an ASan/UBSan audit): each case once crashed, hung, overflowed
// the stack or ended in exit 3. Each must now be a bad-input Error (exit 2) with a clear,
// printable message, or, for a run, a clean result. The inputs that fit in a small file are
// committed under tests/data/hostile/ (README.md there); the deep and long ones are built here.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "model/json_in.h"
#include "model/model.h"
#include "plan/plan.h"
#include "support/scratch.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// The committed inputs of the audit's defects.
const std::string kHostileDir = std::string(BOD_FIXTURES_DIR) + "/../tests/data/hostile";

// The text of tests/data/hostile/NAME (a failed expectation when it is missing or empty).
std::string hostile(const std::string& name) {
  std::string text = testing::slurp(kHostileDir + "/" + name);
  EXPECT_FALSE(text.empty()) << kHostileDir << "/" << name << " is missing";
  return text;
}

// A valid model with one kernel and one phase with no steps yet.
ojson model() {
  return ojson::parse(R"({
    "format": "bo-doctor-model", "version": 1,
    "dims": {"S": 2, "E": 4},
    "vars": {"x": {"dtype": "f32", "shape": ["S", "E"]},
             "big": {"dtype": "f32", "shape": [8, "E"]},
             "y": {"dtype": "f32", "shape": [1]}},
    "kernels": {"k": {"slots": [{"name": "a", "shape": ["S", "E"]},
                                {"name": "out", "shape": ["S", "E"]}],
                      "body": [{"op": "copy", "src": "a", "out": "out"}]}},
    "program": {"phases": [{"name": "p", "steps": []}]}
  })");
}

// The error of parsing `text`, or of expanding it when it parses.
Error load_error(const std::string& text) {
  auto m = parse_model(text, "mem/model.json");
  if (!m) return m.error();
  auto p = expand(m.value(), ExpandOptions{});
  if (!p) return p.error();
  return Error{"<no error>", "the model loaded and expanded"};
}

// An error line safe to print: no control characters, bounded length.
void expect_printable(const Error& e, size_t max_len = 1000) {
  std::string l = e.line();
  EXPECT_LE(l.size(), max_len) << l.substr(0, 300);
  for (char c : l) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << l;
  EXPECT_EQ(e.code, Exit::bad_input);
}

struct Proc {
  int code = -1;
  std::string err;
};

// Runs the bo-doctor binary on `text` written to a temp model.json.
Proc run_binary(const std::string& cmd, const std::string& text) {
  fs::path dir =
      fs::temp_directory_path() / ("bod_hostile_" + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::create_directories(dir);
  fs::path m = dir / "model.json", err = dir / "stderr";
  std::ofstream(m, std::ios::binary) << text;
  std::string line = "timeout 120 '" + std::string(BOD_BINARY) + "' " + cmd + " '" + m.string() +
                     "' >/dev/null 2>'" + err.string() + "' </dev/null";
  int st = std::system(line.c_str());
  Proc r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream f(err, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  r.err = s.str();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

TEST(HostileInput, BaseModelLoads) {
  EXPECT_EQ(load_error(model().dump()).where, "<no error>");
}

// 1. write_rows with a huge row: row + rows overflowed the bounds check.
TEST(HostileInput, WriteRowsHugeRowOverflowsBoundsCheck) {
  std::string text = hostile("write_rows_huge_row.json");  // row 2^63-1
  ASSERT_NE(text.find("\"row\": 9223372036854775807"), std::string::npos);
  Error fe = load_error(text);
  EXPECT_EQ(fe.where, "/program/phases/0/steps/0") << fe.line();
  EXPECT_NE(fe.what.find("write_rows: row 9.2233720368547758e+18 with 2 src rows does not fit "
                         "out [8,4]; expected 0 <= row <= 6"),
            std::string::npos)
      << fe.line();
  expect_printable(fe);
  for (std::string row : {"9223372036854775807", "9223372036854775000", "1e30"}) {
    ojson j = model();
    j["program"]["phases"][0]["steps"] =
        ojson::parse(R"([{"host": "write_rows", "src": "x", "out": "big", "row": )" + row + "}]");
    Error e = load_error(j.dump());
    EXPECT_EQ(e.where, "/program/phases/0/steps/0") << e.line();
    EXPECT_NE(e.what.find("does not fit out"), std::string::npos) << e.line();
    expect_printable(e);
  }
  ojson ok = model();
  ok["program"]["phases"][0]["steps"] =
      ojson::parse(R"([{"host": "write_rows", "src": "x", "out": "big", "row": 6}])");
  EXPECT_EQ(load_error(ok.dump()).where, "<no error>");
}

// 2. A host copy from "zeros" in a model without kernel calls: the runner's zero buffer was
// sized from the calls' slots only (empty: a null pointer).
TEST(HostileInput, HostCopyFromZerosWithoutCallsDereferencesNull) {
  std::string text = hostile("host_copy_zeros_no_calls.json");
  ASSERT_NE(text.find(R"({"host": "copy", "src": "zeros", "out": "y"})"), std::string::npos);
  Proc r = run_binary("check", text);
  EXPECT_TRUE(r.code == 0 || r.code == 1 || r.code == 2) << r.code << " " << r.err;
  EXPECT_EQ(r.err.find("AddressSanitizer"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// 3. Tens of thousands of nested arrays overflowed the stack (parser, error excerpt).
TEST(HostileInput, DeeplyNestedJsonOverflowsStack) {
  const size_t n = 50000;
  std::string deep = std::string(n, '[') + std::string(n, ']');
  for (std::string text :
       {deep, R"({"format": )" + deep + "}",
        R"({"dims": {"S": )" + std::string(n, '{') + std::string(n, '}') + "}}"}) {
    Error e = load_error(text);
    EXPECT_EQ(e.where, "mem/model.json") << e.line().substr(0, 300);
    EXPECT_NE(e.what.find("nested deeper than " + std::to_string(kMaxJsonDepth)), std::string::npos)
        << e.line().substr(0, 300);
    expect_printable(e);
  }
  // Brackets inside strings do not count; nesting up to the limit parses.
  ojson j = model();
  j["name"] = std::string(n, '[');
  EXPECT_EQ(load_error(j.dump()).where, "<no error>");
  std::string at_limit = std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']');
  ojson k = model();
  k["doc"] = "x";
  std::string text = k.dump();
  text.insert(text.size() - 1, R"(, "description": )" + at_limit);
  Error e = load_error(text);
  EXPECT_EQ(e.what.find("nested deeper"), std::string::npos) << e.line().substr(0, 300);
}

// 4. Deeply nested or very long expressions overflowed the parser's stack.
TEST(HostileInput, DeepOrLongExpressionOverflowsStack) {
  struct C {
    std::string expr, fragment;
  };
  for (const C& c :
       {C{std::string(100000, '(') + "1" + std::string(100000, ')'),
          "characters long; expected at most 4096"},
        C{std::string(1000, '(') + "1" + std::string(1000, ')'), "nested deeper than 64 levels"},
        C{std::string(1000, '-') + "1", "nested deeper than 64 levels"},
        C{"1" +
              [] {
                std::string s;
                for (int i = 0; i < 3000; ++i) s += "+1";
                return s;
              }(),
          "characters long; expected at most 4096"}}) {
    auto e = Expr::parse(c.expr);
    ASSERT_FALSE(e);
    EXPECT_NE(e.error().what.find(c.fragment), std::string::npos) << e.error().what;
    expect_printable(e.error());
    ojson j = model();
    j["dims"]["T"] = c.expr;
    Error le = load_error(j.dump());
    EXPECT_EQ(le.where, "/dims/T");
    EXPECT_NE(le.what.find(c.fragment), std::string::npos) << le.what;
    expect_printable(le);
  }
  EXPECT_TRUE(Expr::parse(std::string(64, '(') + "1" + std::string(64, ')')));
  std::string sum = "1";
  for (int i = 0; i < 2000; ++i) sum += "+1";
  auto e = Expr::parse(sum);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->eval({}).value(), 2001);
}

// 5. Deeply nested loops overflowed the program loader's stack.
TEST(HostileInput, DeeplyNestedLoopsOverflowStack) {
  for (int depth : {33, 100}) {
    ojson steps = ojson::array({{{"host", "set"}, {"out", "y"}, {"value", 1}}});
    for (int i = depth - 1; i >= 0; --i)
      steps = ojson::array({{{"loop", "i" + std::to_string(i)}, {"range", 1}, {"steps", steps}}});
    ojson j = model();
    j["program"]["phases"][0]["steps"] = steps;
    std::string text = j.dump();
    if (depth == 100) {  // the committed input: the same 100 loops
      text = hostile("nested_loops.json");
      ASSERT_EQ(ojson::parse(text)["program"], j["program"]);
    }
    Error e = load_error(text);
    EXPECT_NE(e.what.find("loops nested deeper than 32 levels"), std::string::npos) << e.line();
    EXPECT_EQ(e.where.rfind("/program/phases/0/steps/0/steps/0/", 0), 0u) << e.where;
    expect_printable(e);
  }
}

// 6. 1e99999 ended in exit 3 ("internal error"): nlohmann's out_of_range was not caught.
TEST(HostileInput, HugeNumberLiteralIsInternalError) {
  std::string text = hostile("huge_number_literal.json");
  ASSERT_NE(text.find(R"("S": 1e99999)"), std::string::npos);
  Error e = load_error(text);
  EXPECT_EQ(e.where, "/dims/S") << e.line();
  EXPECT_NE(e.what.find("1e99999"), std::string::npos) << e.line();
  expect_printable(e);
  Proc r = run_binary("lint", text);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("/dims/S"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// 7. A 100k-character kernel key in an error made std::filesystem::exists throw (exit 3).
TEST(HostileInput, LongKernelKeyMakesFilesystemThrow) {
  ojson j = model();
  std::string key(100000, 'k');
  j["kernels"][key] = {
      {"slots", ojson::array({{{"name", "a"}, {"shape", ojson::array({"S"})}, {"dtype", "f16"}}})},
      {"body", ojson::array()}};
  Error e = load_error(j.dump());
  EXPECT_NE(e.what.find("unknown dtype"), std::string::npos) << e.line().substr(0, 300);
  expect_printable(e);
  Proc r = run_binary("lint", j.dump());
  EXPECT_EQ(r.code, 2) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find("unknown dtype"), std::string::npos) << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 2000u);
}

// 8. Dimensions like 1e30 or a 20-digit integer were converted with undefined behaviour.
TEST(HostileInput, HugeDimensionFloatCastOverflow) {
  const std::string file = hostile("huge_dimension.json");  // "S": 1e30
  ASSERT_NE(file.find(R"("S": 1e30,)"), std::string::npos);
  for (std::string v : {"1e30", "-1e30", "99999999999999999999", "18446744073709551615",
                        "9223372036854775808", "9.3e18"}) {
    std::string text = file;
    text.replace(text.find(R"("S": 1e30,)"), 10, R"("S": )" + v + ",");
    Error e = load_error(text);
    EXPECT_EQ(e.where, "/dims/S") << v << ": " << e.line();
    EXPECT_NE(e.what.find("out of range; expected an integer from -2^63 to 2^63-1"),
              std::string::npos)
        << v << ": " << e.line();
    expect_printable(e);
  }
  std::string text = model().dump();
  text.replace(text.find(R"("S":2)"), 5, R"("S":2.0)");
  EXPECT_EQ(load_error(text).where, "<no error>");
}

// 9. A loop with an empty body and a count of 1e18 hung expansion.
TEST(HostileInput, EmptyLoopWithHugeCountHangs) {
  std::string text = hostile("empty_loop_huge_count.json");
  ojson j = ojson::parse(text);
  ASSERT_EQ(j["program"]["phases"][0]["steps"],
            ojson::parse(R"([{"loop": "i", "range": 1000000000000000000, "steps": []}])"));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(load_error(text).where, "<no error>");  // costs nothing
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // A huge repeat of a body with a step is refused before iterating.
  j["program"]["phases"][0] = ojson::parse(
      R"({"name": "p", "repeat": 1000000000000000000, "var": "t", "steps": [
          {"loop": "i", "range": 1000000000000000000, "steps": [
            {"loop": "j", "range": 0, "steps": [{"host": "set", "out": "y", "value": 1}]}]}]})");
  Error e = load_error(j.dump());
  EXPECT_NE(e.what.find("at most 2000000 steps"), std::string::npos) << e.line();
  EXPECT_EQ(e.where, "/program/phases/0/repeat") << e.line();
  // A non-empty body: the count is refused before iterating.
  j["program"]["phases"][0] = ojson::parse(
      R"({"name": "p", "steps": [{"loop": "i", "range": [-9223372036854775807, 9223372036854775807],
          "steps": [{"host": "set", "out": "y", "value": 1}]}]})");
  e = load_error(j.dump());
  EXPECT_EQ(e.where, "/program/phases/0/steps/0/range") << e.line();
  EXPECT_NE(e.what.find("at most 2000000 steps"), std::string::npos) << e.line();
  // Nested loops whose inner ranges are empty: bounded by the idle-iteration count.
  j["program"]["phases"][0] = ojson::parse(
      R"({"name": "p", "steps": [{"loop": "i", "range": 2000000, "steps": [
          {"loop": "j", "range": 2000000, "steps": [
            {"loop": "k", "range": 0, "steps": [{"host": "set", "out": "y", "value": 1}]}]}]}]})");
  e = load_error(j.dump());
  EXPECT_NE(e.what.find("iterations that expand to no step"), std::string::npos) << e.line();
}

// Error lines quote input: control characters escaped, excerpts capped at 200 characters.
TEST(HostileInput, ControlCharactersAndLongExcerptsInErrors) {
  EXPECT_EQ(excerpt("a\nb\x1b[31mc\t\r\x7f"), "a\\nb\\x1b[31mc\\t\\r\\x7f");
  EXPECT_EQ(excerpt(std::string(200, 'x')), std::string(200, 'x'));
  EXPECT_EQ(excerpt(std::string(201, 'x')), std::string(197, 'x') + "...");
  EXPECT_EQ(excerpt(std::string(196, 'x') + "\xc3\xa9\xc3\xa9\xc3\xa9"),
            std::string(196, 'x') + "...");  // a UTF-8 sequence is not cut in two
  // The same rule as printable(): a C1 control (CSI, U+009B) and a bidi override (U+202E, which
  // would show the rest of the line reversed) are escaped; an overlong '/' is a stray byte.
  EXPECT_EQ(excerpt("a\xc2\x9b"
                    "2Jb\xe2\x80\xae"
                    "cd\xc0\xaf"),
            "a\\u{009b}2Jb\\u{202e}cd\\xc0\\xaf");
  ojson j = model();
  j["program"]["phases"][0]["steps"] = ojson::array(
      {{{"call", "evil\n\x1b[2Jkernel" + std::string(5000, 'z')}, {"args", ojson::object()}}});
  Error e = load_error(j.dump());
  EXPECT_NE(e.what.find("unknown kernel 'evil\\n\\x1b[2Jkernel"), std::string::npos) << e.line();
  expect_printable(e, 400);
  ojson k = model();
  k["dims"]["bad\nname" + std::string(5000, 'n')] = 1;
  e = load_error(k.dump());
  EXPECT_EQ(e.where.rfind("/dims/bad\\nname", 0), 0u) << e.where.substr(0, 300);
  expect_printable(e, 700);
}

}  // namespace
}  // namespace bod
