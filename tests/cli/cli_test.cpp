// The bo-doctor executable as users and CI see it: exit codes, stdout vs stderr, reports.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "checks/registry.h"

namespace bod {
namespace {

namespace fs = std::filesystem;

struct Proc {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bod_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Runs the binary with `args` (already shell-quoted where needed).
  Proc run(const std::string& args) {
    fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    std::string cmd = quote(BOD_BINARY) + " " + args + " >" + quote(out.string()) + " 2>" +
                      quote(err.string()) + " </dev/null";
    int st = std::system(cmd.c_str());
    Proc r;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  static std::string llama() {
    return quote(std::string(BOD_FIXTURES_DIR) + "/models/llama-tiny/model.json");
  }
  fs::path dir_;
};

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST_F(Cli, Version) {
  Proc r = run("--version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("bo-doctor ") + BOD_VERSION + "\n");
  EXPECT_TRUE(r.err.empty());
}

TEST_F(Cli, UnknownSubcommandExitsTwo) {
  Proc r = run("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("bo-doctor --help"), std::string::npos) << r.err;
}

TEST_F(Cli, NoSubcommandExitsTwo) {
  Proc r = run("");
  EXPECT_EQ(r.code, 2);
}

TEST_F(Cli, ListChecksListsAllIds) {
  Proc r = run("list-checks");
  EXPECT_EQ(r.code, 0) << r.err;
  const char* ids[] = {"stale-static",      "key-collision",      "size-mismatch",
                       "static-clobber",    "intermediate-read",  "partial-overwrite",
                       "output-divergence", "view-overwritten",   "placeholder-upload",
                       "alias-conflict",    "missed-static",      "missed-intermediate",
                       "config-error"};
  for (const char* id : ids)
    EXPECT_NE(r.out.find(std::string(id) + " "), std::string::npos) << id << "\n" << r.out;
  EXPECT_EQ(lines(r.out), 13) << r.out;
  EXPECT_EQ(check_registry().size(), 13u);
}

TEST_F(Cli, ListChecksJson) {
  Proc r = run("list-checks --format json");
  EXPECT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), 13u);
  EXPECT_EQ(j[0]["id"], "stale-static");
}

TEST_F(Cli, ExplainKnownCheck) {
  Proc r = run("explain stale-static");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("stale-static (error)", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("Fix:"), std::string::npos);
}

TEST_F(Cli, ExplainUnknownCheck) {
  Proc r = run("explain nope");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("Try: bo-doctor list-checks"), std::string::npos) << r.err;
}

TEST_F(Cli, CheckMissingFile) {
  std::string missing = (dir_ / "no-such-model.json").string();
  Proc r = run("check " + quote(missing));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t i = s.find(part); i != std::string::npos; i = s.find(part, i + 1)) ++n;
  return n;
}

// BUG (tool/cli/commands.cpp at_model): file-level load errors carry the model path as `where`;
// at_model prefixes every `where` starting with '/' with the model path again, so an absolute
// model path is printed twice: "bo-doctor: error: /tmp/m.json:/tmp/m.json: cannot open ...".
// Enable when fixed.
TEST_F(Cli, AbsoluteModelPathNamedOnce) {
  std::string missing = (dir_ / "no-such-model.json").string();
  Proc r = run("check " + quote(missing));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count(r.err, missing), 1u) << r.err;
  fs::path bad = dir_ / "bad.json";
  std::ofstream(bad) << "{\"format\": \"bo-doctor-model\",,}";
  r = run("lint " + quote(bad.string()));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count(r.err, bad.string()), 1u) << r.err;
  r = run("lint " + quote(dir_.string()));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count(r.err, dir_.string()), 1u) << r.err;
}

TEST_F(Cli, CheckUnknownBackend) {
  Proc r = run("check " + llama() + " --backend nope");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
}

TEST_F(Cli, CheckUnknownFormat) {
  Proc r = run("check " + llama() + " --format yaml");
  EXPECT_EQ(r.code, 2) << r.err;
}

TEST_F(Cli, CheckBadModelNamesFileAndPointer) {
  fs::path m = dir_ / "bad.json";
  std::ofstream(m) << R"({"format": "bo-doctor-model", "version": 2})";
  Proc r = run("check " + quote(m.string()));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(m.string() + ":/version"), std::string::npos) << r.err;
}

TEST_F(Cli, CheckLlamaTinyPasses) {
  Proc r = run("check " + llama());
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
}

TEST_F(Cli, OutputFileAndNothingOnStdout) {
  fs::path report = dir_ / "report.json";
  Proc r = run("check " + llama() + " --format json --output " + quote(report.string()));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_TRUE(fs::exists(report));
  auto j = nlohmann::json::parse(slurp(report));
  EXPECT_EQ(j["summary"]["verdict"], "pass");
}

TEST_F(Cli, JsonReportShape) {
  Proc r = run("check " + llama() + " --format json");
  EXPECT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("summary"));
  EXPECT_EQ(j["summary"]["verdict"], "pass");
  ASSERT_TRUE(j.contains("findings"));
  EXPECT_TRUE(j["findings"].is_array());
  for (auto& f : j["findings"]) {
    for (const char* k : {"check", "severity", "call", "kernel", "bo_key", "slot"})
      EXPECT_TRUE(f.contains(k)) << k << " missing in " << f.dump();
    EXPECT_EQ(f["severity"], "note");  // a clean model has notes at most
  }
}

TEST_F(Cli, JsonReportFailsOnBuggyModel) {
  // llama-tiny with the layer index dropped from one bo_key: key-collision, exit 1.
  auto j = nlohmann::ordered_json::parse(
      slurp(std::string(BOD_FIXTURES_DIR) + "/models/llama-tiny/model.json"));
  j["program"]["phases"][0]["steps"][3]["steps"][4]["bo_key"] = "o_ffn";
  fs::path m = dir_ / "model.json";
  std::ofstream(m) << j.dump(1);
  Proc r = run("check " + quote(m.string()) + " --format json");
  EXPECT_EQ(r.code, 1) << r.err;
  auto rep = nlohmann::json::parse(r.out);
  EXPECT_EQ(rep["summary"]["verdict"], "fail");
  bool found = false;
  for (auto& f : rep["findings"])
    found = found || (f["check"] == "key-collision" && f["kernel"] == "o_ffn" && f["call"] == 6);
  EXPECT_TRUE(found) << r.out;
}

TEST_F(Cli, SameModelTwiceGivesIdenticalJson) {
  Proc a = run("check " + llama() + " --format json");
  Proc b = run("check " + llama() + " --format json");
  EXPECT_EQ(a.code, 0);
  EXPECT_EQ(b.code, 0);
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, b.out);
}


TEST_F(Cli, TimingsOnlyWhenAsked) {
  Proc plain = run("check " + llama() + " --format json");
  Proc timed = run("check " + llama() + " --format json --timings");
  ASSERT_EQ(plain.code, 0);
  ASSERT_EQ(timed.code, 0);
  EXPECT_EQ(plain.out.find("\"seconds\""), std::string::npos);
  EXPECT_NE(timed.out.find("\"seconds\""), std::string::npos);
  EXPECT_NE(timed.out.find("\"wall_seconds\""), std::string::npos);
}

TEST_F(Cli, MemoryCapRefusesBeforeRunning) {
  Proc r = run("check " + llama() + " --max-memory 0.0001");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("memory cap"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-memory"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(run("check " + llama() + " --max-memory -3").code, 2);
}

TEST_F(Cli, VerbosityFlagsAfterTheSubcommand) {
  Proc v = run("check " + llama() + " -v");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.err.find("info"), std::string::npos) << v.err;
  Proc q = run("-q check " + llama());
  EXPECT_EQ(q.code, 0);
  EXPECT_TRUE(q.err.empty()) << q.err;
}

TEST_F(Cli, ProbeAndMarkdownAndClassify) {
  std::string latent =
      quote(std::string(BOD_FIXTURES_DIR) + "/bugs/latent_stale_equals_fresh/model.json");
  EXPECT_EQ(run("check " + latent).code, 0);  // not diverging today
  Proc p = run("check --probe " + latent);
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.out.find("error[intermediate-read] (latent)"), std::string::npos) << p.out;
  Proc md = run("check " + llama() + " --format markdown");
  EXPECT_EQ(md.code, 0);
  EXPECT_EQ(md.out.rfind("## Buffer-object reuse\n", 0), 0u) << md.out;
  Proc c = run("classify " + llama());
  EXPECT_EQ(c.code, 0);
  EXPECT_NE(c.out.find("0 disagreement(s)"), std::string::npos) << c.out;
  EXPECT_EQ(run("classify " + llama() + " --format markdown").code, 2);
}

}  // namespace
}  // namespace bod
