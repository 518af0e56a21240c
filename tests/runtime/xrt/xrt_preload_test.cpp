// `bo-doctor record --xrt` on a real C++ host program (tests/xrt_preload/host_prog.cpp, linked to
// Debian's libxrt and run on XRT's noop device through the preload library): the clean program
// gives no finding and keeps its output and exit status; each seeded bug is found at its run,
// argument and byte range.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/hash.h"
#include "support/scratch.h"

namespace bod {
namespace {

using testing::quote;

testing::Proc sh(const std::string& cmd, const std::filesystem::path& dir) {
  return testing::run_shell(dir, cmd);
}

class XrtPreload : public testing::ScratchDirTest {
 protected:
  XrtPreload() : ScratchDirTest("bod_xrt_preload") {}

  // Records the host program with --bug `bug` (and `more` arguments), then analyzes the trace
  // as JSON.
  nlohmann::json record(const std::string& bug, testing::Proc* rec_out = nullptr,
                        const std::string& more = "") {
    std::string trace = (dir_ / "run.trace.jsonl").string();
    std::string env = "XILINX_XRT=" + quote(BOD_XRT_NOOP_DIR) + " XCL_EMULATION_MODE=noop ";
    testing::Proc rec = sh(env + quote(BOD_BINARY) + " record --xrt -o " + quote(trace) + " -- " +
                               quote(BOD_XRT_HOST) + " " + quote((dir_ / "k.xclbin").string()) +
                               " --bug " + bug + more,
                           dir_);
    if (rec_out) *rec_out = rec;
    EXPECT_EQ(rec.code, 0) << rec.err;
    testing::Proc an =
        sh(quote(BOD_BINARY) + " analyze --format json --fail-on never " + quote(trace), dir_);
    EXPECT_EQ(an.code, 0) << an.err;
    return nlohmann::json::parse(an.out, nullptr, false);
  }
};

std::vector<nlohmann::json> findings(const nlohmann::json& r) {
  std::vector<nlohmann::json> out;
  if (r.contains("findings"))
    for (auto& f : r["findings"]) out.push_back(f);
  return out;
}

TEST_F(XrtPreload, CleanProgramIsSilentAndUnchanged) {
  testing::Proc rec;
  auto r = record("none", &rec);
  EXPECT_TRUE(findings(r).empty()) << r.dump(1);
  EXPECT_NE(rec.out.find("ok 4 runs"), std::string::npos) << rec.out;  // the program's own output
  EXPECT_NE(rec.err.find("recorded 4 run(s)"), std::string::npos) << rec.err;
}

// The program playing a device that computes (--emulate: the noop device computes nothing):
// its output changes on every run, compared run to run, and nothing is reported; on the noop
// device proper (above) the output never changes and unwritten-output has no run that wrote it.
TEST_F(XrtPreload, EmulatedDeviceCleanProgramIsSilent) {
  testing::Proc rec;
  auto r = record("none --emulate", &rec);
  EXPECT_TRUE(findings(r).empty()) << r.dump(1);
  EXPECT_EQ(rec.out.find("sum 0"), std::string::npos) << rec.out;  // it computed
  // The evidence was there: the output compared after runs 2..4 and changed each time.
  std::ifstream in(dir_ / "run.trace.jsonl");
  std::string line;
  int compared = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "call") continue;
    auto& x = j["slots"][5]["xrt"];
    if (x.contains("out_compared")) {
      ++compared;
      EXPECT_EQ(x["out_compared"], x["out_changed"]) << line;
    }
  }
  EXPECT_EQ(compared, 3);
}

TEST_F(XrtPreload, ProgramExitStatusIsKept) {
  std::string env = "XILINX_XRT=" + quote(BOD_XRT_NOOP_DIR) + " XCL_EMULATION_MODE=noop ";
  testing::Proc rec = sh(env + quote(BOD_BINARY) + " record --xrt -o " +
                             quote((dir_ / "t.jsonl").string()) + " -- " + quote(BOD_XRT_HOST),
                         dir_);
  EXPECT_EQ(rec.code, 2) << rec.err;  // the program's usage error
}

// The event lines of the log folder `dir`, in order.
std::vector<nlohmann::json> events_in(const std::filesystem::path& dir) {
  std::vector<nlohmann::json> out;
  for (auto& f : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(f.path());
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line, nullptr, false));
  }
  return out;
}

// record --xrt --shadow of a C++ host: the preload library re-runs every run on fresh BOs of its
// own holding what the host meant, on XRT's noop device, which computes nothing: plumbing only.
// It says so, claims no comparison (the trace has no no_reuse: no output-divergence, no key
// table, no cosine), finds what it finds without --shadow, and the program's output is the same.
TEST_F(XrtPreload, ShadowIsPlumbingOnly) {
  std::string env = "XILINX_XRT=" + quote(BOD_XRT_NOOP_DIR) + " XCL_EMULATION_MODE=noop ";
  std::string prog = quote(BOD_XRT_HOST) + " " + quote((dir_ / "k.xclbin").string()) +
                     " --emulate --bug unsynced-write";
  std::string trace = (dir_ / "t.jsonl").string();
  testing::Proc rec = sh(
      env + quote(BOD_BINARY) + " record --xrt --shadow -o " + quote(trace) + " -- " + prog, dir_);
  EXPECT_EQ(rec.code, 0) << rec.err;
  EXPECT_NE(rec.err.find("the preload library re-ran 4 of 4 run(s) on fresh BOs but compares no "
                         "outputs (plumbing only; XRT's noop device computes nothing)"),
            std::string::npos)
      << rec.err;
  testing::Proc plain = sh(env + prog, dir_);
  EXPECT_EQ(rec.out, plain.out);  // "ok 4 runs, sum ...": what the program computed
  testing::Proc an =
      sh(quote(BOD_BINARY) + " analyze --format json --fail-on never " + quote(trace), dir_);
  auto r = nlohmann::json::parse(an.out, nullptr, false);
  auto fs = findings(r);
  ASSERT_EQ(fs.size(), 1u) << r.dump(1);
  EXPECT_EQ(fs[0]["check"], "unsynced-write");
  EXPECT_FALSE(r.contains("keys")) << r.dump(1);
  bool listed = false;
  for (auto& g : r["not_run"]) listed = listed || g["check"] == "output-divergence";
  EXPECT_TRUE(listed) << r["not_run"];

  // The shadow runs themselves: what each fed its fresh BOs and what came back.
  auto logs = [&](const std::string& name, bool shadow) {
    auto d = dir_ / name;
    std::filesystem::create_directory(d);
    testing::Proc p =
        sh(env + "LD_PRELOAD=" + quote(BOD_XRT_PRELOAD) + " BOD_XRT_LOG=" + quote(d.string()) +
               (shadow ? " BOD_XRT_SHADOW=1 " : " ") + quote(BOD_XRT_HOST) + " " +
               quote((dir_ / "k.xclbin").string()) + " --bug unsynced-write",
           dir_);
    EXPECT_EQ(p.code, 0) << p.err;
    return events_in(d);
  };
  auto with = logs("with", true), without = logs("without", false);
  std::vector<nlohmann::json> sh_ev, rest_with, rest_without;
  for (auto& e : with) (e["e"] == "shadow" ? sh_ev : rest_with).push_back(e);
  for (auto& e : without) rest_without.push_back(e);
  ASSERT_FALSE(rest_with.empty());
  EXPECT_EQ(rest_with.front()["shadow_plumbing"], true);
  rest_with.front().erase("shadow_plumbing");
  rest_with.front().erase("pid");
  rest_without.front().erase("pid");
  EXPECT_EQ(rest_with, rest_without);  // the program's own calls, as without the shadow
  ASSERT_EQ(sh_ev.size(), 4u);
  for (int run = 1; run <= 4; ++run) {
    auto& e = sh_ev[static_cast<size_t>(run - 1)];
    EXPECT_EQ(e["run"], run);
    ASSERT_TRUE(e.contains("bos")) << e;
    ASSERT_EQ(e["bos"].size(), 4u) << e;  // instructions, input, weights, output
    // The input's fresh BO holds what the host meant: run 3's stores after the sync included.
    std::vector<float> x(64);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((run - 1) * 1000 + i);
    if (run == 3)
      for (size_t i = 4; i < 8; ++i) x[i] = -1.0f;
    EXPECT_EQ(e["bos"][1][0], 2);
    EXPECT_EQ(e["bos"][1][1].get<uint64_t>(), hash_bytes(x.data(), x.size() * sizeof(float)));
    for (auto& b : e["bos"]) EXPECT_EQ(b[1], b[2]) << "the noop device computed something";
  }
}

// The "h" of every write and read event in the log folder `dir`, in order.
std::vector<std::pair<std::string, uint64_t>> hashes_in(const std::filesystem::path& dir) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (auto& f : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(f.path());
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("h"))
        out.push_back({j.value("e", ""), j["h"].get<uint64_t>()});
    }
  }
  return out;
}

// Both XRT recorders hash what a program writes and reads by one rule, the trace hash
// (docs/trace-format.md §8, bod::hash_bytes): the preload library inline, the Python wrapper
// through libbod_hash.so. The same bytes (n floats of 0.5, the host program's weights) give the
// same "h" in both, below and above the 64 KiB chunk.
TEST_F(XrtPreload, SameHashAsThePythonWrapper) {
  for (size_t n : {size_t(64), size_t(20000)}) {
    std::vector<float> w(n, 0.5f);
    const uint64_t want = hash_bytes(w.data(), n * sizeof(float));
    std::string tag = std::to_string(n);
    auto cpp = dir_ / ("cpp" + tag), py = dir_ / ("py" + tag);
    std::filesystem::create_directory(cpp);
    std::filesystem::create_directory(py);
    testing::Proc c =
        sh("XILINX_XRT=" + quote(BOD_XRT_NOOP_DIR) + " XCL_EMULATION_MODE=noop " +
               "LD_PRELOAD=" + quote(BOD_XRT_PRELOAD) + " BOD_XRT_LOG=" + quote(cpp.string()) +
               " " + quote(BOD_XRT_HOST) + " " + quote((dir_ / "k.xclbin").string()) +
               " --iters 1 --elems " + tag,
           dir_);
    ASSERT_EQ(c.code, 0) << c.err;
    auto ch = hashes_in(cpp);
    ASSERT_FALSE(ch.empty());
    EXPECT_EQ(ch.front(), std::make_pair(std::string("host"), want)) << "the weights' bo.write";
    std::string script =
        "import numpy as np, pyxrt\n"
        "b = pyxrt.bo(pyxrt.device(0), " +
        tag +
        " * 4, pyxrt.bo.host_only, 3)\n"
        "b.write(np.full(" +
        tag +
        ", 0.5, np.float32).tobytes(), 0)\n"
        "b.read(" +
        tag + " * 4, 0)\n";
    std::ofstream(dir_ / "same_bytes.py") << script;
    testing::Proc p = sh("PYTHONPATH=" +
                             quote(std::string(BOD_XRT_PYTHON_DIR) + ":" + BOD_FIXTURES_DIR +
                                   "/../tests/recorder/standin") +
                             " BOD_XRT_LOG=" + quote(py.string()) +
                             " BOD_XRT_RECORDER_DIR=" + quote(BOD_RECORDER_DIR) +
                             " BOD_RECORD_HASHLIB=" + quote(record_hash_library()) +
                             " /usr/bin/python3 " + quote((dir_ / "same_bytes.py").string()),
                         dir_);
    ASSERT_EQ(p.code, 0) << p.err;
    auto ph = hashes_in(py);
    ASSERT_EQ(ph.size(), 2u) << p.err;
    EXPECT_EQ(ph[0], std::make_pair(std::string("host"), want)) << "bo.write";
    EXPECT_EQ(ph[1], std::make_pair(std::string("read"), want)) << "bo.read of the same bytes";
  }
}

// A store through map() into a middle page of a 256 KiB input, between its sync and the run:
// found while the preload library write-tracks the BO (run 3: only the pages written since the
// last look are compared) and once it has stopped tracking it (run 31: the program rewrites the
// whole input every run, so after 16 looks the BO is compared whole). Where Linux offers no
// write tracking both are found by the whole comparison.
TEST_F(XrtPreload, StoreInTheMiddleOfALargeMappedInputIsFound) {
  for (int seed_at : {2, 30}) {
    auto r = record("unsynced-write-mid", nullptr,
                    " --elems 65536 --iters 34 --seed-at " + std::to_string(seed_at));
    auto fs = findings(r);
    ASSERT_EQ(fs.size(), 1u) << seed_at << r.dump(1);
    EXPECT_EQ(fs[0]["check"], "unsynced-write");
    EXPECT_EQ(fs[0]["call"], seed_at + 1);
    EXPECT_EQ(fs[0]["slot"], 3);
    EXPECT_NE(fs[0]["message"].get<std::string>().find("bytes 131089..131104 of BO 2"),
              std::string::npos)
        << fs[0]["message"];
  }
}

struct Seeded {
  const char* bug;
  const char* check;
  int slot;
  const char* range;  // in the message
};

class XrtPreloadBug : public XrtPreload, public ::testing::WithParamInterface<Seeded> {};

// The lines after the last run start (the output's partial sync and its read: the evidence of
// unsynced-read at the last run) are still buffered when the program ends; _exit and exec skip
// the exit handler that writes them, so the library writes them before forwarding those calls.
TEST_F(XrtPreload, EventsAfterTheLastRunStartSurviveExitAndExec) {
  for (std::string end : {"return", "_exit", "exec"}) {
    testing::Proc rec;
    auto r = record("unsynced-read", &rec, " --seed-at 3 --end " + end);  // run 4 of 4
    EXPECT_NE(rec.out.find("ok 4 runs"), std::string::npos) << end << ": " << rec.out;
    auto fs = findings(r);
    ASSERT_EQ(fs.size(), 1u) << end << ": " << r.dump(1);
    EXPECT_EQ(fs[0]["check"], "unsynced-read") << end;
    EXPECT_EQ(fs[0]["call"], 4) << end;
    EXPECT_NE(fs[0]["message"].get<std::string>().find("bytes 128..256 of BO 4"), std::string::npos)
        << end << ": " << fs[0]["message"];
  }
}

TEST_P(XrtPreloadBug, FoundAtItsRunArgumentAndRange) {
  const Seeded& s = GetParam();
  auto r = record(s.bug);
  auto fs = findings(r);
  ASSERT_EQ(fs.size(), 1u) << r.dump(1);
  EXPECT_EQ(fs[0]["check"], s.check);
  EXPECT_EQ(fs[0]["call"], 3);  // the seeded iteration's run
  EXPECT_EQ(fs[0]["slot"], s.slot);
  EXPECT_NE(fs[0]["message"].get<std::string>().find(s.range), std::string::npos)
      << fs[0]["message"];
}

INSTANTIATE_TEST_SUITE_P(
    Bugs, XrtPreloadBug,
    ::testing::Values(Seeded{"unsynced-write", "unsynced-write", 3, "bytes 17..32 of BO 2"},
                      Seeded{"short-sync", "unsynced-write", 3, "bytes 252..256 of BO 2"},
                      Seeded{"unsynced-read", "unsynced-read", 5, "bytes 128..256 of BO 4"},
                      Seeded{"write-in-flight", "write-in-flight", 4, "bytes 0..256 of BO 3"},
                      Seeded{"run-not-completed", "run-not-completed", 5, "before run 3"},
                      Seeded{"unwritten-output", "unwritten-output", 5, "bytes 0..256 of BO 4"}),
    [](const auto& i) {
      std::string n = i.param.bug;
      for (auto& c : n)
        if (c == '-') c = '_';
      return n;
    });

}  // namespace
}  // namespace bod
