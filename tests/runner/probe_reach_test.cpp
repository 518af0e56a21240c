// Probing must not cry wolf: a latent partial-overwrite is reported only where the bytes a
// kernel leaves unwritten can reach a reader (an output slot the kernel writes). A dead ABI
// slot declared intermediate, or an input-only slot, keeps the canary but is never read: silent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// Kernel k: a [n,C] input, d [n,C] (declared intermediate, never read or written: a dead ABI
// slot), out [n,C]: a + a, or (`partial_out`) only its first row filled, declared intermediate.
ojson model(bool partial_out) {
  ojson body = ojson::array();
  body.push_back({{"op", "add"}, {"a", "a"}, {"b", "a"}, {"out", "out"}});
  if (partial_out) body.push_back({{"op", "fill"}, {"out", "out"}, {"value", 1}, {"rows", 1}});
  ojson call = {{"call", "k"},
                {"params", {{"n", 4}}},
                {"args", {{"a", "x"}}},
                {"intermediate_indices", {"d"}},
                {"output_indices", {"out"}},
                {"bo_key", "K"}};
  if (partial_out) {
    body = ojson::array({{{"op", "fill"}, {"out", "out"}, {"value", 1}, {"rows", 1}}});
    call["intermediate_indices"] = {"d", "out"};
  }
  return {{"format", "bo-doctor-model"},
          {"version", 1},
          {"name", "probe-reach"},
          {"seed", 1},
          {"dims", {{"C", 8}}},
          {"vars", {{"x", {{"shape", {4, "C"}}, {"init", {{"normal", ojson::object()}}}}}}},
          {"kernels",
           {{"k",
             {{"params", {"n"}},
              {"slots",
               {{{"name", "a"}, {"shape", {"n", "C"}}},
                {{"name", "d"}, {"shape", {"n", "C"}}},
                {{"name", "out"}, {"shape", {"n", "C"}}}}},
              {"body", body}}}}},
          {"program",
           {{"phases", {{{"name", "decode"}, {"repeat", 3}, {"var", "t"}, {"steps", {call}}}}}}}};
}

ojson probe(const ojson& m) {
  fs::path p =
      fs::temp_directory_path() / ("bod_probe_reach_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << m.dump(2);
  CommandOptions o;
  o.model = p.string();
  o.format = "json";
  o.probe = true;
  CommandResult r = cmd_check(o);
  fs::remove(p);
  EXPECT_TRUE(r.code == Exit::ok || r.code == Exit::findings) << r.err;
  return r.out.empty() ? ojson() : ojson::parse(r.out);
}

int latent(const ojson& report, const std::string& check, const std::string& slot) {
  int n = 0;
  for (auto& f : report["findings"])
    if (f["check"] == check && f["slot_name"] == slot && f["latent"] == true) ++n;
  return n;
}

TEST(ProbeReach, DeadIntermediateSlotIsNotALatentPartialOverwrite) {
  ojson r = probe(model(false));
  EXPECT_EQ(latent(r, "partial-overwrite", "d"), 0) << r.dump(2);
  EXPECT_EQ(r["summary"]["errors"], 0) << r.dump(2);
}

TEST(ProbeReach, OutputSlotTheKernelWritesPartlyIsALatentPartialOverwrite) {
  ojson r = probe(model(true));
  EXPECT_EQ(latent(r, "partial-overwrite", "out"), 1) << r.dump(2);
  EXPECT_EQ(latent(r, "partial-overwrite", "d"), 0) << r.dump(2);
}

}  // namespace
}  // namespace bod
