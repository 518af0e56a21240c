// The replay of an XRT event log into a trace (tool/trace/xrt_log): what the hashes of writes
// and reads add: new_values (a rewrite of the same bytes is not new) and out_compared /
// out_changed (a read back against the same range's read after the BO's previous run).
#include "trace/xrt_log.h"

#include <gtest/gtest.h>

#include <sstream>

namespace bod {
namespace {

// BO 1 an input (written), BO 2 an output (synced back and read); `runs` lines per run.
Trace replay(const std::string& body) {
  std::string log =
      "{\"e\":\"open\",\"producer\":\"test\",\"device\":\"standin\",\"computes\":true}\n"
      "{\"e\":\"kernel\",\"k\":1,\"name\":\"k\"}\n"
      "{\"e\":\"bo\",\"bo\":1,\"size\":16,\"group\":0,\"parent\":0,\"offset\":0}\n"
      "{\"e\":\"bo\",\"bo\":2,\"size\":16,\"group\":0,\"parent\":0,\"offset\":0}\n" +
      body;
  std::istringstream in(log);
  Trace t;
  t.header.caps.xrt = true;
  XrtLogSummary sum;
  Status st = add_xrt_log(in, "log", "", t, sum);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().line());
  return t;
}

// One run: write `in` (hash) to BO 1, sync it, start, wait, sync BO 2 back, read 0..8 (hash).
std::string run(int n, int in_hash, int out_hash) {
  std::string r = std::to_string(n);
  return "{\"e\":\"host\",\"bo\":1,\"how\":\"write\",\"r\":[[0,16]],\"h\":" +
         std::to_string(in_hash) +
         "}\n"
         "{\"e\":\"sync\",\"bo\":1,\"dir\":\"to\",\"off\":0,\"len\":16}\n"
         "{\"e\":\"start\",\"run\":" +
         r +
         ",\"k\":1,\"args\":[{\"bo\":1,\"i\":0},{\"bo\":2,\"i\":1}]}\n{\"e\":\"wait\",\"run\":" +
         r +
         ",\"state\":4}\n"
         "{\"e\":\"sync\",\"bo\":2,\"dir\":\"from\",\"off\":0,\"len\":16}\n"
         "{\"e\":\"read\",\"bo\":2,\"off\":0,\"len\":8,\"h\":" +
         std::to_string(out_hash) + "}\n";
}

TEST(XrtLog, RewriteOfTheSameBytesIsNotNew) {
  Trace t = replay(run(1, 7, 1) + run(2, 7, 2) + run(3, 8, 3));
  ASSERT_EQ(t.calls.size(), 3u);
  EXPECT_EQ(range_text(t.calls[0].slots[0].xrt->new_values), "bytes 0..16");
  EXPECT_TRUE(t.calls[1].slots[0].xrt->new_values.empty());                // the same hash again
  EXPECT_EQ(range_text(t.calls[1].slots[0].xrt->changed), "bytes 0..16");  // still written
  EXPECT_EQ(range_text(t.calls[2].slots[0].xrt->new_values), "bytes 0..16");
}

TEST(XrtLog, ReadBackComparedWithThePreviousRunsReadBack) {
  Trace t = replay(run(1, 7, 1) + run(2, 8, 2) + run(3, 9, 2));
  EXPECT_TRUE(t.calls[0].slots[1].xrt->out_compared.empty());  // nothing before the first run
  EXPECT_EQ(range_text(t.calls[1].slots[1].xrt->out_compared), "bytes 0..8");
  EXPECT_EQ(range_text(t.calls[1].slots[1].xrt->out_changed), "bytes 0..8");
  EXPECT_EQ(range_text(t.calls[2].slots[1].xrt->out_compared), "bytes 0..8");
  EXPECT_TRUE(t.calls[2].slots[1].xrt->out_changed.empty());  // came back the same
}

TEST(XrtLog, NoComparisonWithoutEvidence) {
  // The host wrote into the output between the runs: its bytes before run 2 are not known.
  std::string between = "{\"e\":\"host\",\"bo\":2,\"how\":\"map\",\"r\":[[0,4]]}\n";
  Trace t = replay(run(1, 7, 1) + between + run(2, 8, 1));
  EXPECT_TRUE(t.calls[1].slots[1].xrt->out_compared.empty());
  // A read not covered by a sync from the device after the run, or without a hash.
  std::string r2 =
      "{\"e\":\"start\",\"run\":2,\"k\":1,\"args\":[{\"bo\":1,\"i\":0},{\"bo\":2,\"i\":1}]}\n"
      "{\"e\":\"wait\",\"run\":2,\"state\":4}\n"
      "{\"e\":\"read\",\"bo\":2,\"off\":0,\"len\":8,\"h\":1}\n"
      "{\"e\":\"sync\",\"bo\":2,\"dir\":\"from\",\"off\":0,\"len\":16}\n"
      "{\"e\":\"read\",\"bo\":2,\"off\":0,\"len\":8}\n";
  t = replay(run(1, 7, 1) + r2);
  EXPECT_TRUE(t.calls[1].slots[1].xrt->out_compared.empty());
}

}  // namespace
}  // namespace bod
