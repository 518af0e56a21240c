// `bo-doctor record --xrt` on a Python program that manages its BOs by hand
// (tests/recorder/standin/run_q4nx.py, on the stand-in pyxrt, which the module-level wrapper
// bo_doctor.xrt_wrap records): the clean decoder gives no finding and its output is unchanged;
// each seeded bug is found at its run, argument and byte range.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/scratch.h"

namespace bod {
namespace {

using testing::quote;

class RecordXrtPython : public testing::ScratchDirTest {
 protected:
  RecordXrtPython() : ScratchDirTest("bod_record_xrt_py") {}

  std::string program(const std::string& bug) {
    return "/usr/bin/python3 " +
           quote(std::string(BOD_FIXTURES_DIR) + "/../tests/recorder/standin/run_q4nx.py") +
           " --bug " + bug;
  }
  nlohmann::json record(const std::string& bug, testing::Proc* rec_out, bool shadow = false) {
    std::string trace = (dir_ / "q4nx.trace.jsonl").string();
    *rec_out =
        testing::run_shell(dir_, quote(BOD_BINARY) + " record --xrt" + (shadow ? " --shadow" : "") +
                                     " -o " + quote(trace) + " -- " + program(bug));
    EXPECT_EQ(rec_out->code, 0) << rec_out->err;
    testing::Proc an = testing::run_shell(
        dir_, quote(BOD_BINARY) + " analyze --format json --fail-on never " + quote(trace));
    EXPECT_EQ(an.code, 0) << an.err;
    return nlohmann::json::parse(an.out, nullptr, false);
  }
};

TEST_F(RecordXrtPython, CleanDecoderIsSilentAndUnchanged) {
  testing::Proc rec;
  auto r = record("none", &rec);
  ASSERT_TRUE(r.contains("findings")) << r.dump(1);
  EXPECT_TRUE(r["findings"].empty()) << r["findings"].dump(1);
  EXPECT_NE(rec.err.find("recorded 12 run(s) on 7 BO(s)"), std::string::npos) << rec.err;
  // The program prints the same under the recorder as without it.
  testing::Proc plain = testing::run_shell(dir_, program("none"));
  EXPECT_EQ(plain.code, 0);
  EXPECT_EQ(rec.out, plain.out);
  EXPECT_NE(rec.out.find("matches reference: True"), std::string::npos) << rec.out;
}

// The per-kernel reuse view (analyze's xrt_reuse): the clean decoder's weights stay resident, its
// KV cache is re-sent once (the dirty flag), nothing is advised; with the dirty flag not set, the
// KV cache stays resident while its host bytes change: the hand-managed stale-static.
TEST_F(RecordXrtPython, ReuseViewPerKernel) {
  testing::Proc rec;
  auto clean = record("none", &rec);
  ASSERT_TRUE(clean.contains("xrt_reuse")) << clean.dump(1);
  auto& k = clean["xrt_reuse"][0];
  EXPECT_EQ(k["kernel"], "q4nx_layer");
  EXPECT_EQ(k["runs"], 12);
  auto& args = k["args"];
  EXPECT_EQ(args[4]["role"], "static");  // weights: sent once
  EXPECT_EQ(args[4]["later_resent"], 0);
  EXPECT_EQ(args[5]["role"], "input");  // KV cache: re-sent once, when dirty
  EXPECT_EQ(args[5]["later_resent"], 1);
  EXPECT_EQ(args[8]["role"], "output");
  for (auto& a : args) EXPECT_EQ(a["advice"], "") << a.dump();
  auto bug = record("dirty-flag", &rec);
  auto& kv = bug["xrt_reuse"][0]["args"][5];
  EXPECT_EQ(kv["role"], "static");
  EXPECT_EQ(kv["later_resent"], 0);
  EXPECT_EQ(kv["first_resident_changed_run"], 7);
  EXPECT_TRUE(kv["corrupts"].get<bool>());
  EXPECT_NE(kv["advice"].get<std::string>().find("stale-static"), std::string::npos) << kv;
}

struct Seeded {
  const char* bug;
  const char* check;
  int call, slot;
  const char* range;
};

class RecordXrtPythonBug : public RecordXrtPython, public ::testing::WithParamInterface<Seeded> {};

TEST_P(RecordXrtPythonBug, FoundAtItsRunArgumentAndRange) {
  const Seeded& s = GetParam();
  testing::Proc rec;
  auto r = record(s.bug, &rec);
  ASSERT_TRUE(r.contains("findings")) << r.dump(1);
  ASSERT_EQ(r["findings"].size(), 1u) << r["findings"].dump(1);
  auto& f = r["findings"][0];
  EXPECT_EQ(f["check"], s.check);
  EXPECT_EQ(f["call"], s.call);
  EXPECT_EQ(f["slot"], s.slot);
  EXPECT_NE(f["message"].get<std::string>().find(s.range), std::string::npos) << f["message"];
  EXPECT_NE(f["path"].get<std::string>().find("run_q4nx.py:"), std::string::npos) << f["path"];
}

INSTANTIATE_TEST_SUITE_P(
    Q4nx, RecordXrtPythonBug,
    ::testing::Values(Seeded{"dirty-flag", "unsynced-write", 7, 5,
                             "bytes 0..128, 512..640 of BO 4"},
                      Seeded{"lut-unsynced", "unsynced-write", 5, 6, "bytes 1088..1344 of BO 5"},
                      Seeded{"short-sync", "unsynced-write", 1, 5, "bytes 636..640 of BO 4"},
                      Seeded{"readback-beyond", "unsynced-read", 5, 8, "bytes 64..68 of BO 7"},
                      Seeded{"bare-herd", "unwritten-output", 10, 8, "bytes 0..64 of BO 7"}),
    [](const auto& i) {
      std::string n = i.param.bug;
      for (auto& c : n)
        if (c == '-') c = '_';
      return n;
    });

// record --xrt --shadow: every run is re-run on fresh BOs holding what the host meant, and what
// the program synced back is compared with it. The seeded sync bugs show output divergence at
// the run where the real device first computed on other bytes, on the output argument (8); the
// clean decoder and the bugs that are no sync mistake (a read beyond the synced range whose
// bytes happen to be right, a bare herd the host itself sent) show none. The program's output
// is the same as without the recorder.
struct ShadowRow {
  const char* bug;
  int first_divergent_call;  // 0: none
  int diverged_calls;
  const char* other_check;  // the finding without --shadow, still there ("" none)
};

class RecordXrtShadow : public RecordXrtPython, public ::testing::WithParamInterface<ShadowRow> {};

TEST_P(RecordXrtShadow, DivergenceAtTheRightRun) {
  const ShadowRow& row = GetParam();
  testing::Proc rec;
  auto r = record(row.bug, &rec, true);
  ASSERT_TRUE(r.contains("findings")) << r.dump(1);
  EXPECT_NE(rec.err.find("shadowed 12 of 12 run(s)"), std::string::npos) << rec.err;
  testing::Proc plain = testing::run_shell(dir_, program(row.bug));
  EXPECT_EQ(rec.out, plain.out);  // invisible: the program computes what it computes alone
  EXPECT_EQ(rec.code, plain.code);
  std::vector<int> diverged;
  std::string other;
  for (auto& f : r["findings"]) {
    if (f["check"] == "output-divergence") {
      EXPECT_EQ(f["slot"], 8) << f.dump();
      diverged.push_back(f["call"].get<int>());
    } else {
      other = f["check"].get<std::string>();
    }
  }
  // One finding at the first divergent run ("seen on N calls"); the count is the key table's.
  EXPECT_EQ(diverged.size(), row.diverged_calls ? 1u : 0u) << r["findings"].dump(1);
  if (row.first_divergent_call) {
    ASSERT_FALSE(diverged.empty());
    EXPECT_EQ(diverged.front(), row.first_divergent_call);
  }
  EXPECT_EQ(other, row.other_check);
  // The first-run vs later-run table: one kernel, 12 runs, every one shadowed.
  ASSERT_TRUE(r.contains("keys")) << r.dump(1);
  auto& k = r["keys"][0];
  EXPECT_EQ(k["calls"], 12);
  EXPECT_EQ(k["shadowed_calls"], 12);
  EXPECT_EQ(k["first_call_diverged"], false);
  EXPECT_EQ(k["later_calls_diverged"], row.diverged_calls) << k;
  EXPECT_EQ(k["first_bad_later_call"], row.first_divergent_call) << k;
  EXPECT_EQ(r["coverage"]["shadowed_calls"], 12);
}

INSTANTIATE_TEST_SUITE_P(Q4nx, RecordXrtShadow,
                         ::testing::Values(ShadowRow{"none", 0, 0, ""},
                                           ShadowRow{"lut-unsynced", 5, 2, "unsynced-write"},
                                           ShadowRow{"dirty-flag", 7, 6, "unsynced-write"},
                                           ShadowRow{"short-sync", 2, 3, "unsynced-write"},
                                           ShadowRow{"readback-beyond", 0, 0, "unsynced-read"},
                                           ShadowRow{"bare-herd", 0, 0, "unwritten-output"}),
                         [](const auto& i) {
                           std::string n = i.param.bug;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Without --shadow an XRT recording has no no-reuse capability: analyze says divergence was not
// measured rather than printing a cosine nobody measured.
TEST_F(RecordXrtPython, WithoutShadowNoDivergenceIsClaimed) {
  testing::Proc rec;
  auto r = record("dirty-flag", &rec);
  EXPECT_FALSE(r.contains("keys")) << r.dump(1);
  for (auto& f : r["findings"]) EXPECT_NE(f["check"], "output-divergence") << f.dump();
  bool listed = false;
  for (auto& g : r["not_run"])
    listed = listed || (g["check"] == "output-divergence" && g["missing"] == "no_reuse");
  EXPECT_TRUE(listed) << r["not_run"];
  EXPECT_EQ(rec.err.find("shadowed"), std::string::npos) << rec.err;
}

}  // namespace
}  // namespace bod
