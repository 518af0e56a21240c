// Smart probing (check --probe): each bo_key's first calls and the later calls whose probe
// outcome could differ. It must find every latent bug --probe=all finds, at the same first
// call, slot and severity, while probing fewer calls, and the report states the coverage.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "cli/commands.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json probe_report(const std::string& model, bool every_call) {
  spdlog::set_level(spdlog::level::err);
  CommandOptions o;
  o.model = model;
  o.format = "json";
  o.probe = true;
  o.probe_every_call = every_call;
  auto r = cmd_check(o);
  EXPECT_TRUE(r.code == Exit::ok || r.code == Exit::findings) << r.err;
  return json::parse(r.out);
}

using Key = std::tuple<std::string, std::string, int, std::string, std::string, int, bool>;
std::set<Key> findings(const json& j) {
  std::set<Key> s;
  for (auto& f : j["findings"])
    s.insert(Key{f["check"].get<std::string>(), f["severity"].get<std::string>(),
                 f["call"].get<int>(), f["kernel"].get<std::string>(),
                 f["bo_key"].get<std::string>(), f["slot"].get<int>(), f["latent"].get<bool>()});
  return s;
}

TEST(ProbeCoverage, SmartProbeFindsWhatExhaustiveProbingFinds) {
  int fixtures = 0;
  for (const char* group : {"models", "bugs"})
    for (auto& d : fs::directory_iterator(fs::path(BOD_FIXTURES_DIR) / group)) {
      if (fs::exists(d.path() / "LARGE") || !fs::exists(d.path() / "model.json")) continue;
      std::string m = (d.path() / "model.json").string();
      json smart = probe_report(m, false), all = probe_report(m, true);
      EXPECT_EQ(findings(smart), findings(all)) << m;
      if (smart.contains("probe_coverage")) {
        EXPECT_LE(smart["probe_coverage"]["probed_calls"], all["probe_coverage"]["probed_calls"])
            << m;
        EXPECT_EQ(all["probe_coverage"]["probed_calls"],
                  all["probe_coverage"]["calls_with_intermediates"])
            << m;
      }
      ++fixtures;
    }
  EXPECT_GE(fixtures, 25);
}

TEST(ProbeCoverage, ReportStatesCoverageAndSmartProbesFewerCalls) {
  std::string m = std::string(BOD_FIXTURES_DIR) + "/models/llama-tiny/model.json";
  json smart = probe_report(m, false), all = probe_report(m, true);
  EXPECT_EQ(all["probe_coverage"]["probed_calls"], 144);
  EXPECT_EQ(smart["probe_coverage"]["calls_with_intermediates"], 144);
  // 2 calls per bo_key: 32 keys (16 of them with one call) -> 48; decode calls repeat.
  EXPECT_EQ(smart["probe_coverage"]["probed_calls"], 48);
  CommandOptions o;
  o.model = m;
  o.probe = true;
  auto text = cmd_check(o);
  EXPECT_NE(text.out.find("probe coverage: probed 48 of 144 calls with intermediate slots"),
            std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace bod
