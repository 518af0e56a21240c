// The per-kernel reuse view of a recording at the XRT boundary (analysis/xrt_reuse) on the C++
// host program's recordings (tests/data/xrt): weights and instructions sent once and resident,
// the input re-sent every run, the output never sent; none on a trace without capability xrt.
#include "analysis/xrt_reuse.h"

#include <gtest/gtest.h>

#include "trace/trace_io.h"

namespace bod {
namespace {

Trace load(const std::string& name) {
  auto t =
      read_trace(std::string(BOD_FIXTURES_DIR) + "/../tests/data/xrt/" + name + ".trace.jsonl");
  EXPECT_TRUE(t.ok());
  return t.ok() ? std::move(t.value()) : Trace{};
}

TEST(XrtReuse, CleanProgramFirstRunVsLaterRuns) {
  auto v = xrt_reuse(load("clean"));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kernel, "scale");
  EXPECT_EQ(v[0].runs, 4);
  ASSERT_EQ(v[0].args.size(), 6u);
  EXPECT_EQ(v[0].args[0].role, "scalar");
  EXPECT_EQ(v[0].args[1].role, "static");  // instructions
  EXPECT_EQ(v[0].args[3].role, "input");   // re-sent every run
  EXPECT_EQ(v[0].args[3].later_resent, 3);
  EXPECT_EQ(v[0].args[3].later_sent_bytes, 768u);
  EXPECT_EQ(v[0].args[4].role, "static");  // weights: sent on the first run, resident since
  EXPECT_EQ(v[0].args[4].first_sent, 256u);
  EXPECT_EQ(v[0].args[4].later_resent, 0);
  EXPECT_EQ(v[0].args[5].role, "output");
  for (auto& a : v[0].args) EXPECT_EQ(a.advice, "") << a.name;
}

TEST(XrtReuse, ResentWithoutAnyHostChangeIsMissedStatic) {
  Trace t = load("clean");
  for (auto& c : t.calls) c.slots[3].xrt->changed.clear();  // the host never touched the input
  auto v = xrt_reuse(t);
  EXPECT_EQ(v[0].args[3].role, "static");
  EXPECT_NE(v[0].args[3].advice.find("missed-static"), std::string::npos) << v[0].args[3].advice;
  EXPECT_FALSE(v[0].args[3].corrupts);
}

TEST(XrtReuse, NotAnXrtRecording) {
  Trace t = load("clean");
  t.header.caps.xrt = false;
  EXPECT_TRUE(xrt_reuse(t).empty());
}

}  // namespace
}  // namespace bod
