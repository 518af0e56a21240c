// The markdown reuse block (check --format markdown) against a golden file. Measured times are
// masked; set BOD_UPDATE_GOLDEN=1 to rewrite the golden after an intended change.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli/commands.h"

namespace {
std::string md(const std::string& rel) {
  spdlog::set_level(spdlog::level::err);
  bod::CommandOptions o;
  o.model = std::string(BOD_FIXTURES_DIR) + "/" + rel + "/model.json";
  o.format = "markdown";
  auto r = bod::cmd_check(o);
  std::string out = std::regex_replace(r.out, std::regex("[0-9]+\\.[0-9]+ ms"), "<t> ms");
  return std::regex_replace(out, std::regex(BOD_FIXTURES_DIR), "<fixtures>");
}

void golden(const std::string& rel, const std::string& file) {
  std::string path = std::string(BOD_FIXTURES_DIR) + "/../tests/data/" + file;
  std::string got = md(rel);
  if (std::getenv("BOD_UPDATE_GOLDEN")) std::ofstream(path) << got;
  std::ifstream f(path);
  ASSERT_TRUE(f) << path << " missing; run with BOD_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(got, want.str());
}
}  // namespace

TEST(MarkdownReuseBlock, CleanModelMatchesGolden) {
  golden("models/llama-tiny", "llama-tiny.reuse.md");
}

TEST(MarkdownReuseBlock, BrokenModelMatchesGolden) {
  golden("bugs/key_missing_layer", "key_missing_layer.reuse.md");
}

// The reuse block's times mean what they say: steady-state per-call medians (each bo_key's
// first call, with BO allocation and first touch, kept apart), so "with reuse" is never above
// "without reuse" on a clean model: reuse only removes host writes.
TEST(MarkdownReuseBlock, WithReuseIsNotSlowerThanWithoutOnCleanFixtures) {
  spdlog::set_level(spdlog::level::err);
  for (const char* m : {"llama-tiny", "qwen-tiny", "tutorial-mini", "llama32-1b-layout-tiny"}) {
    bod::CommandOptions o;
    o.model = std::string(BOD_FIXTURES_DIR) + "/models/" + m + "/model.json";
    o.format = "markdown";
    auto r = bod::cmd_check(o);
    ASSERT_EQ(r.code, bod::Exit::ok) << m << r.err;
    std::smatch before, after;
    ASSERT_TRUE(std::regex_search(r.out, before, std::regex("time before: ([0-9.]+) ms per call")))
        << r.out;
    ASSERT_TRUE(std::regex_search(r.out, after, std::regex("time after:  ([0-9.]+) ms per call")))
        << r.out;
    // Medians of a few calls on a shared machine (and under the sanitizers) wobble by a few
    // per cent: "not slower" allows that much noise, not a reuse path that does more work.
    EXPECT_LE(std::stod(after[1]), std::stod(before[1]) * 1.10) << m << "\n" << r.out;
    EXPECT_NE(r.out.find("First call of each bo_key (BO allocation, first touch), kept apart"),
              std::string::npos);
  }
}
