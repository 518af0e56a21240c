// The checks of hand-managed BOs (capability xrt) on the committed recordings of the C++ host
// program (tests/data/xrt, recorded with `bo-doctor record --xrt` on XRT's noop device; the
// recording itself is tested in tests/runtime/xrt/xrt_preload_test.cpp): each check fires on its
// seeded recording at the run, argument and byte range, and is silent on the clean one; the
// byte-range arithmetic; a wait() that returned a time-out.
#include <gtest/gtest.h>

#include "checks/registry.h"
#include "trace/trace_io.h"

namespace bod {
namespace {

Trace load(const std::string& name) {
  auto t =
      read_trace(std::string(BOD_FIXTURES_DIR) + "/../tests/data/xrt/" + name + ".trace.jsonl");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().line());
  return t.ok() ? std::move(t.value()) : Trace{};
}

std::vector<Finding> run(const Trace& t) {
  FindingSink sink;
  run_checks(t, sink);
  return sink.sorted();
}

TEST(XrtChecks, CleanRecordingIsSilent) {
  Trace t = load("clean");
  ASSERT_EQ(t.calls.size(), 4u);
  EXPECT_TRUE(t.header.caps.xrt);
  EXPECT_TRUE(run(t).empty());
  // What the clean program did, as the trace says: the weights sent once, the input every run.
  const XrtSlot& w1 = t.calls[0].slots[4].xrt;
  EXPECT_TRUE(w1.is_bo);
  EXPECT_EQ(range_text(w1.synced_to), "bytes 0..256");
  EXPECT_TRUE(t.calls[1].slots[4].xrt->synced_to.empty());  // resident
  EXPECT_EQ(range_text(t.calls[1].slots[3].xrt->synced_to), "bytes 0..256");
  EXPECT_EQ(range_text(t.calls[1].slots[5].xrt->synced_from), "bytes 0..256");
  EXPECT_EQ(t.calls[1].xrt.state, "completed");
  EXPECT_FALSE(t.calls[0].slots[0].xrt->is_bo);
  EXPECT_EQ(t.calls[0].slots[0].xrt->value, 3u);  // the opcode
}

struct Case {
  const char* fixture;
  const char* check;
  int slot;
  const char* range;
};

class XrtCheckFires : public ::testing::TestWithParam<Case> {};

TEST_P(XrtCheckFires, AtItsRunArgumentAndRange) {
  const Case& c = GetParam();
  auto fs = run(load(c.fixture));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].check, c.check);
  EXPECT_EQ(fs[0].call, 3);
  EXPECT_EQ(fs[0].slot, c.slot);
  EXPECT_NE(fs[0].message.find(c.range), std::string::npos) << fs[0].message;
}

INSTANTIATE_TEST_SUITE_P(
    Recordings, XrtCheckFires,
    ::testing::Values(Case{"unsynced_write", "unsynced-write", 3, "bytes 17..32 of BO 2"},
                      Case{"short_sync", "unsynced-write", 3, "bytes 252..256 of BO 2"},
                      Case{"unsynced_read", "unsynced-read", 5, "bytes 128..256 of BO 4"},
                      Case{"write_in_flight", "write-in-flight", 4, "bytes 0..256 of BO 3"},
                      Case{"run_not_completed", "run-not-completed", 5, "before run 3"},
                      Case{"unwritten_output", "unwritten-output", 5, "bytes 0..256 of BO 4"}),
    [](const auto& i) { return std::string(i.param.fixture); });

TEST(XrtChecks, TimedOutRunReadAnywayIsRunNotCompleted) {
  Trace t = load("clean");
  t.calls[1].xrt.state = "timeout";
  auto fs = run(t);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].check, "run-not-completed");
  EXPECT_EQ(fs[0].call, 2);
  EXPECT_EQ(fs[0].slot, 5);
  EXPECT_NE(fs[0].message.find("returned timeout"), std::string::npos) << fs[0].message;
  t.calls[1].xrt.state = "completed";
  EXPECT_TRUE(run(t).empty());
}

std::vector<Finding> of(const Trace& t, const std::string& check) {
  std::vector<Finding> r;
  for (auto& f : run(t))
    if (f.check == check) r.push_back(f);
  return r;
}

// unwritten-output needs every piece of its evidence; without one of them it says nothing.
TEST(XrtChecks, UnwrittenOutputNeedsEveryPieceOfEvidence) {
  const Trace t = load("unwritten_output");
  ASSERT_EQ(t.calls.size(), 4u);
  auto fs = of(t, "unwritten-output");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::error);
  EXPECT_EQ(fs[0].call, 3);
  {  // a device that never changes the output (XRT's noop device): no run wrote it
    Trace u = t;
    for (auto& c : u.calls) c.slots[5].xrt->out_changed.clear();
    EXPECT_TRUE(of(u, "unwritten-output").empty());
  }
  {  // nothing compared (read back over another range, or no read hashes): no verdict
    Trace u = t;
    u.calls[2].slots[5].xrt->out_compared.clear();
    EXPECT_TRUE(of(u, "unwritten-output").empty());
  }
  {  // the same inputs again (a rewrite of the same bytes): the same output is right
    Trace u = t;
    for (auto& s : u.calls[2].slots) s.xrt->new_values.clear();
    EXPECT_TRUE(of(u, "unwritten-output").empty());
    // ... new input bytes that never reached the device do not count either
    Trace v = t;
    for (auto& s : v.calls[2].slots) s.xrt->unsynced = s.xrt->new_values;
    EXPECT_TRUE(of(v, "unwritten-output").empty());
    // only a scalar changed: a warning
    u.calls[2].slots[2].xrt->value = 17;
    auto w = of(u, "unwritten-output");
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].severity, Severity::warning);
    EXPECT_NE(w[0].message.find("a scalar argument changed"), std::string::npos) << w[0].message;
  }
  {  // a run not known to have completed: run-not-completed's, not this check's
    Trace u = t;
    u.calls[2].xrt.state = "timeout";
    EXPECT_TRUE(of(u, "unwritten-output").empty());
  }
  // Every other recording (clean: the noop device's output never changes) is silent.
  for (const char* f : {"clean", "unsynced_write", "short_sync", "unsynced_read", "write_in_flight",
                        "run_not_completed"})
    EXPECT_TRUE(of(load(f), "unwritten-output").empty()) << f;
}

TEST(XrtChecks, WithoutTheCapabilityNothingRuns) {
  Trace t = load("unsynced_write");
  t.header.caps.xrt = false;
  EXPECT_TRUE(run(t).empty());
  // Not a gap on a trace that is not an XRT recording: those engines do their syncs themselves.
  for (auto& g : coverage_gaps(t)) EXPECT_NE(g.check, "unsynced-write");
}

TEST(XrtRanges, UnionMinusIntersect) {
  ByteRanges a{{0, 10}, {20, 10}}, b{{5, 20}};
  EXPECT_EQ(range_text(range_union(a, b)), "bytes 0..30");
  EXPECT_EQ(range_text(range_minus(a, b)), "bytes 0..5, 25..30");
  EXPECT_EQ(range_text(range_intersect(a, b)), "bytes 5..10, 20..25");
  EXPECT_EQ(range_bytes(a), 20u);
  EXPECT_TRUE(range_minus(b, b).empty());
  EXPECT_EQ(range_text(range_union({{0, 4}}, {{4, 4}})), "bytes 0..8");  // adjacent merge
}

}  // namespace
}  // namespace bod
