// Regression tests of issue 25's report defects, each named after it: control characters from
// a trace printed raw by the text and markdown reports, a 0-call trace judged PASS, and NaN
// counts of 2^63-1 overflowing the key table's sums (UBSan aborted; Release printed -2).
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "analysis/summary.h"
#include "core/printable.h"
#include "core/saturate.h"
#include "report/report.h"
#include "trace/trace.h"

namespace bod {
namespace {

bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  return false;
}

// One call on bo_key `key` whose output diverged (a finding that prints the key).
Trace one_call(const std::string& key, long long nan = 0) {
  Trace t;
  t.header.caps.run = t.header.caps.no_reuse = true;
  t.header.kernels = {KernelInfo{"k", {{"y", DType::f32}}, ""}};
  for (int n = 1; n <= 2; ++n) {
    TraceCall c;
    c.number = n;
    c.kernel = "k";
    c.bo_key = key;
    c.key_first_call = 1;
    c.path = "run.py:1\x1b[2J";
    c.phase = "decode";
    TraceSlot y;
    y.slot = 0;
    y.name = "y";
    y.output = true;
    y.written = true;
    c.slots = {y};
    OutputMetrics o;
    o.slot = 0;
    o.bit_exact = false;
    o.cosine = 0.5;
    o.nan_reuse = o.inf_reuse = nan;
    c.outputs_cmp = {o};
    c.outputs = {0};
    t.calls.push_back(c);
  }
  return t;
}

TEST(InputText, EscAndBelInBoKeyPrintedRawByTextReport) {
  const std::string key = "k\x1b]0;owned\x07\x1b[2J\nforged line";
  Trace t = one_call(key);
  Report r = build_report("analyze", t, false);
  std::string text = render_text(r), md = render_markdown(r);
  EXPECT_FALSE(has_control(text)) << text;
  EXPECT_FALSE(has_control(md)) << md;
  // The key table prints the key, escaped.
  EXPECT_NE(text.find("k\\x1b]0;owned\\x07\\x1b[2J\\nforged line"), std::string::npos) << text;
  EXPECT_EQ(text.find("\nforged line"), std::string::npos);
}

TEST(InputText, PrintableEscapesControlsAndKeepsText) {
  EXPECT_EQ(printable("a\tb\x1b\x7f"), "a\\tb\\x1b\\x7f");
  EXPECT_EQ(printable("caf\xc3\xa9 \\x"), "caf\xc3\xa9 \\x");  // text kept
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\u{009b}31m");  // C1 CSI
  EXPECT_EQ(printable("\xe2\x80\xae"
                      "txt"),
            "\\u{202e}txt");                       // bidi override
  EXPECT_EQ(printable("\xff\xc3"), "\\xff\\xc3");  // not UTF-8
  EXPECT_EQ(printable_lines("a\x07\nb\n"), "a\\x07\nb\n");
}

TEST(InputText, ZeroCallTraceIsAPass) {
  Trace t;
  Report r = build_report("analyze", t, false);
  EXPECT_TRUE(r.fails());
  EXPECT_NE(render_text(r).find("0 calls -> FAIL (no calls recorded)"), std::string::npos)
      << render_text(r);
  // A trace with calls and no finding still passes.
  Trace ok = one_call("k");
  for (auto& c : ok.calls) c.outputs_cmp[0].bit_exact = true, c.outputs_cmp[0].cosine = 1;
  EXPECT_FALSE(build_report("analyze", ok, false).fails());
}

TEST(InputText, NanCountsOfInt64MaxOverflowKeyTableSums) {
  Trace t = one_call("k", LLONG_MAX);
  auto rows = key_table(t);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].later_nan, LLONG_MAX);  // saturated, not -2
  Report r = build_report("analyze", t, false);
  EXPECT_NE(render_text(r).find("9223372036854775807+"), std::string::npos) << render_text(r);
  EXPECT_EQ(sat_add<long long>(LLONG_MAX, 5), LLONG_MAX);
  EXPECT_EQ(sat_add<long long>(LLONG_MIN, -5), LLONG_MIN);
  EXPECT_EQ(sat_mul<long long>(int64_t(1) << 62, 4), LLONG_MAX);
  EXPECT_FALSE(checked_mul<long long>(int64_t(1) << 62, 4));
}

}  // namespace
}  // namespace bod
