// The CI formats checked by the tools that consume them: SARIF against the official SARIF
// 2.1.0 JSON Schema (vendored in tests/data/sarif, validated by Debian's python3-jsonschema),
// JUnit XML read by a standard JUnit parser (Debian's python3-junitparser), and the HTML
// report loaded in headless Chromium, asserting on the DOM its script built. Each tool is run
// as /usr/bin/python3 or chromium: the Debian ones CI installs (tool/setup.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "support/scratch.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Proc;
using testing::quote;
using testing::slurp;

std::string fixture(const std::string& rel) {
  return std::string(BOD_FIXTURES_DIR) + "/" + rel + "/model.json";
}

const char* kValidateSarif = R"(
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
for path in sys.argv[2:]:
    jsonschema.Draft4Validator(schema).validate(json.load(open(path)))
print("valid", len(sys.argv) - 2)
)";

const char* kParseJunit = R"(
import sys
from junitparser import JUnitXml, Failure, Skipped
xml = JUnitXml.fromfile(sys.argv[1])
suites = cases = failures = skipped = 0
for suite in xml:
    suites += 1
    for case in suite:
        cases += 1
        for r in case.result:
            if isinstance(r, Failure): failures += 1
            if isinstance(r, Skipped): skipped += 1
print(suites, cases, failures, skipped)
)";

class CiFormats : public testing::ScratchDirTest {
 protected:
  CiFormats() : ScratchDirTest("bod_ci_formats") {}
  Proc bod(const std::string& args) {
    return testing::run_shell(dir_, quote(BOD_BINARY) + " " + args);
  }
  Proc python(const char* script, const std::string& args) {
    std::ofstream(dir_ / "script.py") << script;
    return testing::run_shell(
        dir_, "/usr/bin/python3 " + quote((dir_ / "script.py").string()) + " " + args);
  }
  std::string report(const std::string& model, const std::string& format, const std::string& name,
                     const std::string& extra = "") {
    fs::path out = dir_ / name;
    Proc r = bod("check " + quote(model) + " --format " + format + " -o " + quote(out.string()) +
                 " " + extra);
    EXPECT_TRUE(r.code == 0 || r.code == 1) << r.err;
    return out.string();
  }
};

TEST_F(CiFormats, SarifValidatesAgainstTheOfficialSchema) {
  std::string schema =
      std::string(BOD_FIXTURES_DIR) + "/../tests/data/sarif/sarif-schema-2.1.0.json";
  std::vector<std::string> files = {
      report(fixture("bugs/key_missing_layer"), "sarif", "a.sarif"),
      report(fixture("bugs/qwen_ffn_key_pasted"), "sarif", "b.sarif"),
      report(fixture("models/tutorial-mini"), "sarif", "c.sarif"),
      report(fixture("bugs/static_scratch_rewritten"), "sarif", "d.sarif", "--probe"),
  };
  // With a baseline (baselineState) too.
  bod("check " + quote(fixture("bugs/key_missing_layer")) +
      " --checks key-collision --write-baseline " + quote((dir_ / "base.json").string()));
  files.push_back(report(fixture("bugs/key_missing_layer"), "sarif", "e.sarif",
                         "--baseline " + quote((dir_ / "base.json").string())));
  std::string args = quote(schema);
  for (auto& f : files) args += " " + quote(f);
  Proc v = python(kValidateSarif, args);
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_EQ(v.out, "valid 5\n") << v.err;
  json e = json::parse(slurp(files[4]));
  std::set<std::string> states;
  for (auto& r : e["runs"][0]["results"]) states.insert(r["baselineState"].get<std::string>());
  EXPECT_EQ(states, (std::set<std::string>{"new", "unchanged"}));
}

TEST_F(CiFormats, SarifPointsAtLineAndColumnWithRulesAndRelatedLocations) {
  json s = json::parse(slurp(report(fixture("bugs/key_missing_layer"), "sarif", "a.sarif")));
  auto& run = s["runs"][0];
  EXPECT_EQ(s["version"], "2.1.0");
  std::set<std::string> rules;
  for (auto& r : run["tool"]["driver"]["rules"]) {
    rules.insert(r["id"].get<std::string>());
    EXPECT_EQ(r["helpUri"], "docs/checks.md#" + r["id"].get<std::string>());
    EXPECT_FALSE(r["help"]["text"].get<std::string>().empty());
  }
  EXPECT_EQ(rules.size(), 19u);  // every check's rule, the XRT-boundary ones included
  ASSERT_FALSE(run["results"].empty());
  std::string text = slurp(fixture("bugs/key_missing_layer"));
  std::vector<std::string> lines;
  for (size_t a = 0, b; a < text.size(); a = b + 1) {
    b = text.find('\n', a);
    if (b == std::string::npos) b = text.size();
    lines.push_back(text.substr(a, b - a));
  }
  bool related = false;
  for (auto& r : run["results"]) {
    EXPECT_EQ(run["tool"]["driver"]["rules"][r["ruleIndex"].get<int>()]["id"], r["ruleId"]);
    auto& region = r["locations"][0]["physicalLocation"]["region"];
    int line = region["startLine"], col = region["startColumn"];
    ASSERT_GE(line, 1);
    ASSERT_LE(static_cast<size_t>(line), lines.size());
    EXPECT_EQ(lines[static_cast<size_t>(line - 1)][static_cast<size_t>(col - 1)], '{') << r.dump();
    EXPECT_NE(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].get<std::string>().find(
            "key_missing_layer/model.json"),
        std::string::npos);
    EXPECT_EQ(r["partialFingerprints"]["boDoctorFinding/v1"].get<std::string>().size(), 16u);
    if (r.contains("relatedLocations")) {
      related = true;
      EXPECT_NE(r["relatedLocations"][0]["message"]["text"].get<std::string>().find(
                    "first call of bo_key"),
                std::string::npos);
      EXPECT_GE(r["relatedLocations"][0]["physicalLocation"]["region"]["startLine"].get<int>(), 1);
    }
  }
  EXPECT_TRUE(related);
}

TEST_F(CiFormats, SarifFingerprintsAreStableAcrossRunsAndReformatting) {
  auto prints = [](const std::string& file) {
    std::set<std::string> p;
    json s = json::parse(slurp(file));
    for (auto& r : s["runs"][0]["results"])
      p.insert(r["partialFingerprints"]["boDoctorFinding/v1"].get<std::string>());
    return p;
  };
  auto a = prints(report(fixture("bugs/key_missing_layer"), "sarif", "a.sarif"));
  auto b = prints(report(fixture("bugs/key_missing_layer"), "sarif", "b.sarif"));
  EXPECT_EQ(a, b);
  fs::path re = dir_ / "reformatted.json";
  std::ofstream(re)
      << nlohmann::ordered_json::parse(slurp(fixture("bugs/key_missing_layer"))).dump(4);
  auto c = prints(report(re.string(), "sarif", "c.sarif"));
  EXPECT_EQ(a, c);
  EXPECT_EQ(a.size(), 2u);
}

TEST_F(CiFormats, JunitParsesInAStandardJunitParser) {
  Proc bad =
      python(kParseJunit, quote(report(fixture("bugs/key_missing_layer"), "junit", "a.xml")));
  ASSERT_EQ(bad.code, 0) << bad.err;
  int suites = 0, cases = 0, failures = 0, skipped = 0;
  ASSERT_EQ(std::sscanf(bad.out.c_str(), "%d %d %d %d", &suites, &cases, &failures, &skipped), 4)
      << bad.out;
  EXPECT_EQ(suites, 14);  // one per check
  json rep =
      json::parse(bod("check " + quote(fixture("bugs/key_missing_layer")) + " --format json").out);
  EXPECT_EQ(cases, 13 * static_cast<int>(rep["keys"].size()) + 1);  // per bo_key per check
  std::set<std::pair<std::string, std::string>> failing;            // (check, bo_key) with an error
  for (auto& f : rep["findings"])
    if (f["severity"] == "error")
      failing.insert({f["check"].get<std::string>(), f["bo_key"].get<std::string>()});
  EXPECT_EQ(failures, static_cast<int>(failing.size()));
  EXPECT_GT(failures, 0);
  Proc good = python(kParseJunit, quote(report(fixture("models/tutorial-mini"), "junit", "b.xml")));
  ASSERT_EQ(good.code, 0) << good.err;
  ASSERT_EQ(std::sscanf(good.out.c_str(), "%d %d %d %d", &suites, &cases, &failures, &skipped), 4);
  EXPECT_EQ(failures, 0) << good.out;
  // lint cannot feed the run checks: those test cases are skipped, not passed.
  fs::path lint = dir_ / "lint.xml";
  bod("lint " + quote(fixture("models/tutorial-mini")) + " --format junit -o " +
      quote(lint.string()));
  Proc l = python(kParseJunit, quote(lint.string()));
  ASSERT_EQ(l.code, 0) << l.err;
  ASSERT_EQ(std::sscanf(l.out.c_str(), "%d %d %d %d", &suites, &cases, &failures, &skipped), 4);
  EXPECT_GT(skipped, 0) << l.out;
}

// Headless Chromium: loads the file, lets its script run, dumps the DOM.
class Browser : public CiFormats {
 protected:
  static std::string chromium() {
    for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
      if (fs::exists(c)) return c;
    return "";
  }
  std::string flags() const {
    return " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars "
           "--user-data-dir=" +
           quote((dir_ / "profile").string()) + " ";
  }
  // `tail`: a query and/or #fragment the page reads (filters, a finding group).
  std::string dom(const std::string& html, const std::string& tail = "") {
    Proc p = testing::run_shell(dir_, "timeout 120 " + chromium() + flags() +
                                          "--virtual-time-budget=10000 --dump-dom " +
                                          quote("file://" + html + tail));
    EXPECT_EQ(p.code, 0) << p.err;
    return p.out;
  }
  void screenshot(const std::string& html, const std::string& png, const std::string& tail = "") {
    fs::path out = fs::path(BOD_BUILD_DIR) / png;
    Proc p =
        testing::run_shell(dir_, "timeout 120 " + chromium() + flags() +
                                     "--window-size=1400,2200 --screenshot=" + quote(out.string()) +
                                     " " + quote("file://" + html + tail));
    EXPECT_EQ(p.code, 0) << p.err;
    EXPECT_GT(fs::file_size(out), 10000u);
  }
  static int attr(const std::string& dom, const std::string& name) {
    std::smatch m;
    if (!std::regex_search(dom, m, std::regex("id=\"map\"[^>]*" + name + "=\"([0-9]+)\"")))
      return -1;
    return std::stoi(m[1]);
  }
};

TEST_F(Browser, HtmlReportLoadsWithMapFindingsAndPlot) {
  ASSERT_FALSE(chromium().empty())
      << "chromium is needed (Debian: chromium; tool/setup.sh installs it)";
  std::string html = report(fixture("bugs/key_missing_layer"), "html", "k.html");
  std::string d = dom(html);
  EXPECT_EQ(attr(d, "data-drawn"), 1) << d.substr(0, 3000);
  EXPECT_EQ(attr(d, "data-rows"), 144);
  EXPECT_EQ(attr(d, "data-cols"), 14);
  std::regex finding("class=\"finding (error|warning|note)\"");
  auto n = std::distance(std::sregex_iterator(d.begin(), d.end(), finding), std::sregex_iterator());
  EXPECT_EQ(n, 2);
  EXPECT_NE(d.find("id=\"verdict\" class=\"verdict fail\""), std::string::npos);
  EXPECT_NE(d.find("First error: call 22"), std::string::npos);
  EXPECT_NE(d.find("id=\"divplot\""), std::string::npos);
  EXPECT_NE(d.find("<table id=\"keys\""), std::string::npos);
  // No request leaves the page: no http(s) URL anywhere in it.
  EXPECT_EQ(slurp(html).find("http"), std::string::npos);
  screenshot(html, "html-report-key_missing_layer.png");
}

// Every call of a finding is outlined on the map, not only its first and last; a finding group
// (one row of the findings list, #group-N) lights every call it was seen on.
TEST_F(Browser, EveryCallOfAFindingGroupIsOnTheMap) {
  ASSERT_FALSE(chromium().empty())
      << "chromium is needed (Debian: chromium; tool/setup.sh installs it)";
  std::string html = report(fixture("bugs/key_missing_layer"), "html", "k.html");
  json rep =
      json::parse(bod("check " + quote(fixture("bugs/key_missing_layer")) + " --format json").out);
  std::set<int> marked, group1;
  for (auto& f : rep["findings"])
    if (f["slot"].get<int>() >= 0)
      for (auto& c : f["calls"]) marked.insert(c.get<int>());
  auto& g1 = rep["groups"][0];
  for (auto& m : g1["findings"])
    for (auto& c : rep["findings"][m.get<size_t>()]["calls"]) group1.insert(c.get<int>());
  EXPECT_GT(group1.size(), 2u);  // more than a first and a last call
  std::string d = dom(html);
  EXPECT_EQ(attr(d, "data-marked"), static_cast<int>(marked.size())) << d.substr(0, 2000);
  EXPECT_EQ(attr(d, "data-highlighted"), 0);
  std::string lit = dom(html, "#group-1");
  EXPECT_EQ(attr(lit, "data-highlighted"), static_cast<int>(group1.size()));
  EXPECT_NE(lit.find("data-group=\"group-1\""), std::string::npos);
  EXPECT_NE(lit.find("class=\"finding error sel\""), std::string::npos);
  screenshot(html, "html-report-key_missing_layer-group1.png", "#group-1");
}

// 15,000 calls stay readable: the phase and layer filters (here from the page's query) show one
// layer's decode calls at a row height with labels; unfiltered, every call is drawn.
TEST_F(Browser, MapOfFifteenThousandCallsFiltersByPhaseAndLayer) {
  ASSERT_FALSE(chromium().empty())
      << "chromium is needed (Debian: chromium; tool/setup.sh installs it)";
  auto m = nlohmann::ordered_json::parse(slurp(fixture("models/llama32-1b-layout")));
  m["dims"]["T"] = 460;
  m["dims"]["SMAX"] = 468;  // S + T
  fs::path model = dir_ / "model.json", out = dir_ / "15k.html";
  std::ofstream(model) << m.dump();
  Proc r = bod("lint " + quote(model.string()) + " --format html -o " + quote(out.string()));
  ASSERT_TRUE(r.code == 0 || r.code == 1) << r.err;
  int calls =
      json::parse(bod("lint " + quote(model.string()) + " --format json").out)["summary"]["calls"];
  EXPECT_GE(calls, 15000);
  std::string all = dom(out.string());
  EXPECT_EQ(attr(all, "data-rows"), calls);
  EXPECT_EQ(attr(all, "data-rowpx"), 2);  // no labels at this height: hence the filters
  std::string one = dom(out.string(), "?phase=decode&layer=3");
  EXPECT_EQ(attr(one, "data-rows"), 2 * 460);  // rms_gemv_rope and o_gemv_ffn per token
  EXPECT_GE(attr(one, "data-rowpx"), 8);       // labelled rows
  screenshot(out.string(), "html-report-15k-decode-l3.png", "?phase=decode&layer=3");
}

TEST_F(Browser, RealSizePlanMapLoads) {
  ASSERT_FALSE(chromium().empty())
      << "chromium is needed (Debian: chromium; tool/setup.sh installs it)";
  // The real-size Llama-3.2-1B layout plan generating 100 tokens (3,414 calls): lint gives
  // every call's placements (the full check of the plan runs with the large tests).
  auto m = nlohmann::ordered_json::parse(slurp(fixture("models/llama32-1b-layout")));
  m["dims"]["T"] = 100;
  m["dims"]["SMAX"] = 108;  // S + T
  fs::path model = dir_ / "model.json", out = dir_ / "1b.html";
  std::ofstream(model) << m.dump();
  Proc r = bod("lint " + quote(model.string()) + " --format html -o " + quote(out.string()));
  ASSERT_TRUE(r.code == 0 || r.code == 1) << r.err;
  json plan = json::parse(bod("lint " + quote(model.string()) + " --format json").out);
  int calls = plan["summary"]["calls"];
  EXPECT_EQ(calls, 3414);
  std::string d = dom(out.string());
  EXPECT_EQ(attr(d, "data-drawn"), 1);
  EXPECT_EQ(attr(d, "data-rows"), calls);
  EXPECT_EQ(attr(d, "data-cols"), 19);
  screenshot(out.string(), "html-report-llama32-1b-layout-lint.png");
}

}  // namespace
}  // namespace bod
