// classify: on clean models its advice reproduces the declared indices; on bug fixtures it
// flags the misdeclared slot with the right reason.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"

using nlohmann::json;

namespace {

// classify's JSON; exits 1 exactly when a declared setting corrupts results.
json classify(const std::string& rel, bod::Exit want = bod::Exit::ok) {
  spdlog::set_level(spdlog::level::err);
  bod::CommandOptions o;
  o.model = std::string(BOD_FIXTURES_DIR) + "/" + rel + "/model.json";
  o.format = "json";
  auto r = bod::cmd_classify(o);
  EXPECT_EQ(r.code, want) << rel << ": " << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["verdict"], want == bod::Exit::ok ? "pass" : "fail") << rel;
  return j;
}

// The disagreement text of `slot` at the first site of `kernel` whose bo_key matches.
std::string disagreement(const json& j, const std::string& kernel, const std::string& key_part,
                         const std::string& slot) {
  for (auto& s : j["sites"]) {
    if (s["kernel"] != kernel || s["bo_key"].get<std::string>().find(key_part) == std::string::npos)
      continue;
    for (auto& a : s["slots"])
      if (a["name"] == slot) return a["disagreement"];
  }
  return "<slot not found>";
}

}  // namespace

class ClassifyClean : public ::testing::TestWithParam<std::string> {};

TEST_P(ClassifyClean, ReproducesDeclaredIndices) {
  json j = classify("models/" + GetParam());
  ASSERT_FALSE(j["sites"].empty());
  for (auto& s : j["sites"]) {
    EXPECT_EQ(s["recommended"]["static_input_indices"], s["declared"]["static_input_indices"])
        << s["kernel"] << " " << s["bo_key"];
    EXPECT_EQ(s["recommended"]["intermediate_indices"], s["declared"]["intermediate_indices"])
        << s["kernel"] << " " << s["bo_key"];
    for (auto& a : s["slots"]) EXPECT_EQ(a["disagreement"], "") << s["kernel"] << " " << a["name"];
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ClassifyClean,
                         ::testing::Values("llama-tiny", "qwen-tiny", "tutorial-mini"));

TEST(ClassifyBugs, FlagsTheMisdeclaredSlot) {
  const auto corrupt = bod::Exit::findings;
  EXPECT_NE(
      disagreement(classify("bugs/rope_lut_static_decode", corrupt), "rms_gemms_rope", "dec", "lut")
          .find("stale-static"),
      std::string::npos);
  EXPECT_NE(
      disagreement(classify("bugs/gemm_accumulate_intermediate", corrupt), "o_ffn", "dec", "down")
          .find("intermediate-read"),
      std::string::npos);
  EXPECT_NE(disagreement(classify("bugs/norm_row0_clobber", corrupt), "o_ffn", "L", "norm")
                .find("static-clobber"),
            std::string::npos);
  EXPECT_NE(disagreement(classify("bugs/missed_static_weight"), "o_ffn", "dec", "wd")
                .find("missed-static"),
            std::string::npos);
  EXPECT_NE(disagreement(classify("bugs/missed_intermediate_scratch"), "o_ffn", "dec", "hn")
                .find("missed-intermediate"),
            std::string::npos);
  EXPECT_NE(disagreement(classify("bugs/latent_stale_equals_fresh", corrupt), "o_ffn", "L", "down")
                .find("intermediate-read"),
            std::string::npos);
}
