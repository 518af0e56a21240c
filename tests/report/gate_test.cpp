// The gate as a CI job uses it, through the binary: check selection, --fail-on, baselines
// (a known finding passes, a new one fails), model.json suppressions, grouping of one root
// cause, the print limit, safe -o, --timeout, and the CLI's did-you-mean and help.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support/scratch.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ojson = nlohmann::ordered_json;  // keeps model.json's key order (dims refer to earlier dims)
using testing::Proc;
using testing::quote;
using testing::slurp;

std::string fixture(const std::string& rel) {
  return std::string(BOD_FIXTURES_DIR) + "/" + rel + "/model.json";
}

class Gate : public testing::ScratchDirTest {
 protected:
  Gate() : ScratchDirTest("bod_gate_test") {}
  // `bo-doctor check ARGS`.
  Proc run(const std::string& args) {
    return testing::run_shell(dir_, quote(BOD_BINARY) + " check " + args);
  }
  // A copy of a fixture's model.json with `edit` applied to its JSON, in the scratch folder.
  std::string edited(const std::string& rel, const std::function<void(ojson&)>& edit,
                     int indent = 1) {
    ojson m = ojson::parse(slurp(fixture(rel)));
    edit(m);
    fs::path p = dir_ / (fs::path(rel).filename().string() + ".model.json");
    std::ofstream(p) << m.dump(indent);
    return p.string();
  }
};

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST_F(Gate, PastedKeyIsAFewGroupedFindingsInText) {
  Proc r = run(quote(fixture("bugs/qwen_ffn_key_pasted")));
  EXPECT_EQ(r.code, 1) << r.err;
  // 36 findings (one per slot and bo_key) of two causes: a pasted key and its size mismatch.
  int heads = count(r.out, ": error[") + count(r.out, ": warning[") + count(r.out, ": note[");
  EXPECT_LE(heads, 3) << r.out;
  EXPECT_GE(heads, 1) << r.out;
  EXPECT_NE(r.out.find("first error: call 19"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("one cause, 33 findings"), std::string::npos) << r.out;
  EXPECT_LT(count(r.out, "\n"), 60) << r.out;
  // JSON keeps every finding, and says how they group.
  Proc j = run(quote(fixture("bugs/qwen_ffn_key_pasted")) + " --format json");
  json rep = json::parse(j.out);
  EXPECT_EQ(rep["findings"].size(), 36u);
  EXPECT_EQ(rep["groups"].size(), 2u);
  size_t members = 0;
  for (auto& g : rep["groups"]) members += g["findings"].size();
  EXPECT_EQ(members, 36u);
}

TEST_F(Gate, PrintLimitSaysHowManyMore) {
  Proc r = run(quote(fixture("bugs/padded_tile_partial")) + " --print-limit 2");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count(r.out, "    fix: "), 2) << r.out;
  EXPECT_NE(r.out.find("... 4 more finding group(s)"), std::string::npos) << r.out;
  Proc all = run(quote(fixture("bugs/padded_tile_partial")) + " --print-limit 0");
  EXPECT_EQ(count(all.out, "    fix: "), 6) << all.out;
}

TEST_F(Gate, ChecksAndSkipChecksSelect) {
  Proc only =
      run(quote(fixture("bugs/qwen_ffn_key_pasted")) + " --checks key-collision --format json");
  json j = json::parse(only.out);
  for (auto& f : j["findings"]) EXPECT_EQ(f["check"], "key-collision");
  EXPECT_EQ(j["findings"].size(), 3u);
  Proc skip =
      run(quote(fixture("bugs/key_missing_layer")) +
          " --skip-checks key-collision,output-divergence,partial-overwrite,intermediate-read");
  EXPECT_EQ(skip.code, 0) << skip.out;
  Proc bad = run(quote(fixture("bugs/key_missing_layer")) + " --checks key-colision");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("did you mean 'key-collision'?"), std::string::npos) << bad.err;
}

TEST_F(Gate, FailOnChoosesTheSeverityThatFails) {
  std::string warn_only = quote(fixture("bugs/static_scratch_rewritten"));  // 8 warnings
  EXPECT_EQ(run(warn_only).code, 0);
  EXPECT_EQ(run(warn_only + " --fail-on warning").code, 1);
  EXPECT_EQ(run(warn_only + " --fail-on WARNING").code, 1);
  std::string notes = quote(fixture("bugs/missed_static_weight"));  // notes only
  EXPECT_EQ(run(notes + " --fail-on warning").code, 0);
  EXPECT_EQ(run(notes + " --fail-on note").code, 1);
  EXPECT_EQ(run(quote(fixture("bugs/key_missing_layer")) + " --fail-on never").code, 0);
  Proc bad = run(warn_only + " --fail-on warnings");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("did you mean 'warning'?"), std::string::npos) << bad.err;
}

TEST_F(Gate, BaselineMakesKnownFindingsPassAndNewOnesFail) {
  std::string model = quote(fixture("bugs/key_missing_layer"));
  std::string base = quote((dir_ / "baseline.json").string());
  // Accept only the key-collision findings ...
  Proc w = run(model + " --checks key-collision --write-baseline " + base);
  EXPECT_EQ(w.code, 1);
  json b = json::parse(slurp(dir_ / "baseline.json"));
  EXPECT_EQ(b["kind"], "bo-doctor-baseline");
  ASSERT_EQ(b["findings"].size(), 5u);
  // ... then they pass as known,
  Proc known = run(model + " --checks key-collision --baseline " + base);
  EXPECT_EQ(known.code, 0) << known.out;
  EXPECT_NE(known.out.find("(known)"), std::string::npos) << known.out;
  EXPECT_NE(known.out.find("5 known (baseline)"), std::string::npos) << known.out;
  // while the findings of the other checks are new and fail the run.
  Proc all = run(model + " --baseline " + base + " --format json");
  EXPECT_EQ(all.code, 1);
  json j = json::parse(all.out);
  int known_n = 0, fresh = 0;
  for (auto& f : j["findings"]) (f["status"] == "known" ? known_n : fresh)++;
  EXPECT_EQ(known_n, 5);
  EXPECT_GT(fresh, 0);
  // A baseline survives reformatting of model.json (indent 4, keys reordered by the dump).
  std::string re = edited(
      "bugs/key_missing_layer", [](ojson&) {}, 4);
  EXPECT_EQ(run(quote(re) + " --checks key-collision --baseline " + base).code, 0);
  // A file that is not a baseline is refused.
  std::ofstream(dir_ / "nope.json") << "{}";
  Proc bad = run(model + " --baseline " + quote((dir_ / "nope.json").string()));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--write-baseline"), std::string::npos) << bad.err;
}

TEST_F(Gate, SuppressionsInTheModelAcceptFindingsWithAReason) {
  std::string m = edited("bugs/static_scratch_rewritten", [](ojson& j) {
    j["suppressions"] = ojson::array({{{"check", "static-clobber"},
                                       {"kernel", "*"},
                                       {"reason", "scratch, rewritten before read"}},
                                      {{"check", "stale-static"},
                                       {"bo_key", "nothing_*"},
                                       {"reason", "kept for a later plan"}}});
  });
  Proc r = run(quote(m) + " --fail-on warning --format json");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  json j = json::parse(r.out);
  int suppressed = 0, unused = 0;
  for (auto& f : j["findings"]) {
    if (f["status"] == "suppressed") {
      ++suppressed;
      EXPECT_NE(f["status_reason"].get<std::string>().find("scratch, rewritten before read"),
                std::string::npos);
    }
    if (f["check"] == "unused-suppression") {
      ++unused;
      EXPECT_EQ(f["severity"], "note");
      EXPECT_EQ(f["path"], "/suppressions/1");
    }
  }
  EXPECT_EQ(suppressed, j["summary"]["suppressed"].get<int>());
  EXPECT_GT(suppressed, 0);
  EXPECT_EQ(unused, 1);
  // The reason is required, and the check id must exist.
  std::string no_reason = edited("bugs/static_scratch_rewritten", [](ojson& j) {
    j["suppressions"] = ojson::array({{{"check", "static-clobber"}}});
  });
  Proc nr = run(quote(no_reason));
  EXPECT_EQ(nr.code, 2);
  EXPECT_NE(nr.err.find("/suppressions/0/reason"), std::string::npos) << nr.err;
  std::string typo = edited("bugs/static_scratch_rewritten", [](ojson& j) {
    j["suppressions"] = ojson::array({{{"check", "static-clober"}, {"reason", "x"}}});
  });
  Proc ty = run(quote(typo));
  EXPECT_EQ(ty.code, 2);
  EXPECT_NE(ty.err.find("/suppressions/0/check"), std::string::npos) << ty.err;
  EXPECT_NE(ty.err.find("did you mean 'static-clobber'?"), std::string::npos) << ty.err;
}

TEST_F(Gate, TextLocationsAreLineAndColumnOfTheCallStep) {
  Proc r = run(quote(fixture("bugs/key_missing_layer")));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m, std::regex("model\\.json:([0-9]+):([0-9]+): error\\[key-collision\\]")))
      << r.out;
  // The position holds the step object the JSON report's pointer names.
  std::string text = slurp(fixture("bugs/key_missing_layer"));
  size_t line = std::stoul(m[1]), col = std::stoul(m[2]), at = 0;
  for (size_t l = 1; l < line; ++l) at = text.find('\n', at) + 1;
  ASSERT_LT(at + col - 1, text.size());
  EXPECT_EQ(text[at + col - 1], '{');
  json j = json::parse(run(quote(fixture("bugs/key_missing_layer")) + " --format json").out);
  json step = json::parse(text).at(json::json_pointer(j["findings"][0]["path"].get<std::string>()));
  size_t end = at + col - 1;
  // Parse the object that starts there and compare it with the value at the pointer.
  int depth = 0;
  bool in_str = false;
  for (; end < text.size(); ++end) {
    char c = text[end];
    if (in_str) {
      if (c == '\\')
        ++end;
      else if (c == '"')
        in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      break;
    }
  }
  EXPECT_EQ(json::parse(text.substr(at + col - 1, end - (at + col - 1) + 1)), step);
}

TEST_F(Gate, OutputRefusesToReplaceAFileThatIsNotAReport) {
  fs::path src = dir_ / "notes.md";
  std::ofstream(src) << "my notes\n";
  Proc r = run(quote(fixture("models/tutorial-mini")) + " -o " + quote(src.string()));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(src), "my notes\n");
  // A previous report is replaced; --force replaces anything regular.
  fs::path rep = dir_ / "report.txt";
  EXPECT_EQ(run(quote(fixture("models/tutorial-mini")) + " -o " + quote(rep.string())).code, 0);
  EXPECT_EQ(
      run(quote(fixture("models/tutorial-mini")) + " --format json -o " + quote(rep.string())).code,
      0);
  EXPECT_EQ(run(quote(fixture("models/tutorial-mini")) + " --force -o " + quote(src.string())).code,
            0);
  EXPECT_NE(slurp(src), "my notes\n");
}

TEST_F(Gate, TimeoutStopsTheWholeRunWithExit4) {
  Proc r = run(quote(fixture("models/llama-tiny")) + " --timeout 0.000001");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("--timeout"), std::string::npos) << r.err;
  EXPECT_EQ(run(quote(fixture("models/tutorial-mini")) + " --timeout 600").code, 0);
}

class KindCli : public testing::ScratchDirTest {
 protected:
  KindCli() : ScratchDirTest("bod_kind_cli") {}
  Proc run(const std::string& args) {
    return testing::run_shell(dir_, quote(BOD_BINARY) + " " + args);
  }
};

TEST_F(KindCli, DidYouMeanForCommandsFlagsAndModelNames) {
  Proc c = run("chek x.json");
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.err.find("did you mean 'check'?"), std::string::npos) << c.err;
  Proc f = run("check " + quote(fixture("models/tutorial-mini")) + " --fial-on warning");
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("did you mean '--fail-on'?"), std::string::npos) << f.err;
  Proc e = run("explain stale-statik");
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find("did you mean 'stale-static'?"), std::string::npos) << e.err;
  // A slot name misspelt in model.json: the closest one and the kernel's slots.
  ojson m = ojson::parse(slurp(fixture("models/tutorial-mini")));
  std::string dumped = m.dump();
  ASSERT_NE(dumped.find("\"static_input_indices\":[\"w\"]"), std::string::npos)
      << dumped.substr(0, 2000);
  size_t at = dumped.find("\"static_input_indices\":[\"w\"]");
  dumped.replace(at, std::string("\"static_input_indices\":[\"w\"]").size(),
                 "\"static_input_indices\":[\"ww\"]");
  std::ofstream(dir_ / "m.json") << dumped;
  Proc s = run("lint " + quote((dir_ / "m.json").string()));
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.err.find("unknown slot 'ww'"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("did you mean 'w'?"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("(its slots: "), std::string::npos) << s.err;
}

TEST_F(KindCli, FormatsAreCaseInsensitiveAndPerCommand) {
  Proc j = run("check " + quote(fixture("models/tutorial-mini")) + " --format JSON");
  EXPECT_EQ(j.code, 0) << j.err;
  EXPECT_NO_THROW(json::parse(j.out));
  Proc h = run("classify --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("{text, json}"), std::string::npos) << h.out;
  EXPECT_EQ(h.out.find("markdown"), std::string::npos) << h.out;
  Proc cm = run("classify " + quote(fixture("models/tutorial-mini")) + " --format markdown");
  EXPECT_EQ(cm.code, 2);
  Proc lm = run("lint " + quote(fixture("models/tutorial-mini")) + " --format markdown");
  EXPECT_EQ(lm.code, 0);
  EXPECT_EQ(lm.out.find("config errors"), std::string::npos) << lm.out;
  EXPECT_NE(lm.out.find("lint does not run the plan"), std::string::npos) << lm.out;
}

TEST_F(KindCli, BackendOptionsAreRejectedWhereTheyDoNotApply) {
  Proc d = run("check " + quote(fixture("models/tutorial-mini")) + " --device 2");
  EXPECT_EQ(d.code, 2);
  EXPECT_NE(d.err.find("--backend xrt only"), std::string::npos) << d.err;
  Proc t = run("check " + quote(fixture("models/tutorial-mini")) + " --timeout-ms -5");
  EXPECT_EQ(t.code, 2);
  Proc x =
      run("check " + quote(fixture("models/tutorial-mini")) + " --backend xrt --timeout-ms -5");
  EXPECT_EQ(x.code, 2);
  EXPECT_NE(x.err.find("positive"), std::string::npos) << x.err;
}

TEST_F(KindCli, HelpShowsDefaultsExitCodesAndExamples) {
  for (const char* cmd :
       {"check", "lint", "analyze", "classify", "skeleton", "record", "list-checks", "explain"}) {
    Proc h = run(std::string(cmd) + " --help");
    EXPECT_EQ(h.code, 0) << cmd;
    EXPECT_NE(h.out.find("Exit codes: "), std::string::npos) << cmd << h.out;
    EXPECT_NE(h.out.find("Examples:\n  bo-doctor " + std::string(cmd)), std::string::npos)
        << cmd << h.out;
    // Only the codes this command can exit with: --fail-on where there is a gate, the
    // timeout where there is a run.
    bool gate =
        std::string(cmd) == "check" || std::string(cmd) == "lint" || std::string(cmd) == "analyze";
    EXPECT_EQ(h.out.find("1 a new finding at or above --fail-on") != std::string::npos, gate)
        << cmd << h.out;
    bool runs = std::string(cmd) == "check" || std::string(cmd) == "classify";
    EXPECT_EQ(h.out.find("4 the run exceeded --timeout") != std::string::npos, runs)
        << cmd << h.out;
  }
  // record exits with the program's status; its own codes are for its own failures.
  Proc rec = run("record --help");
  EXPECT_NE(rec.out.find("Exit codes: the program's own exit status"), std::string::npos)
      << rec.out;
  EXPECT_NE(rec.out.find("record's own failures: 2"), std::string::npos) << rec.out;
  EXPECT_NE(rec.out.find("=run.trace.jsonl"), std::string::npos) << rec.out;  // default -o
  Proc h = run("check --help");
  EXPECT_NE(h.out.find("--max-memory FLOAT=16"), std::string::npos) << h.out;  // defaults
  EXPECT_NE(h.out.find("--fail-on TEXT=error"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("--print-limit UINT=20"), std::string::npos) << h.out;
}

TEST_F(KindCli, ClassifyExitsOneWhenDeclaredSettingsCorruptResults) {
  EXPECT_EQ(run("classify " + quote(fixture("models/tutorial-mini"))).code, 0);
  Proc bad = run("classify " + quote(fixture("bugs/rope_lut_static_decode")));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("[corrupts results]"), std::string::npos) << bad.out;
  EXPECT_EQ(run("classify " + quote(fixture("bugs/missed_static_weight"))).code, 0);
}

}  // namespace
}  // namespace bod

namespace bod {
namespace {

// The progress line: on stderr only when it is a terminal (here a pseudo-terminal made by
// util-linux `script`), cleared at the end, and never with -q or into a file.
TEST_F(KindCli, ProgressLineOnlyOnATerminal) {
  if (!fs::exists("/usr/bin/script")) GTEST_SKIP() << "util-linux script is needed for a pty";
  std::string cmd =
      quote(BOD_BINARY) + " check " + quote(fixture("models/qwen-tiny")) + " >/dev/null";
  Proc tty = testing::run_shell(dir_, "/usr/bin/script -qec " + quote(cmd) + " /dev/null");
  EXPECT_EQ(tty.code, 0) << tty.err;
  EXPECT_NE(tty.out.find("bo-doctor: check: step 0/"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.rfind("\r\033[K"), std::string::npos);  // cleared at the end
  Proc quiet =
      testing::run_shell(dir_, "/usr/bin/script -qec " + quote(cmd + " -q") + " /dev/null");
  EXPECT_EQ(quiet.out.find("step 0/"), std::string::npos) << quiet.out;
  Proc file = run("check " + quote(fixture("models/qwen-tiny")));
  EXPECT_EQ(file.err, "");  // stderr is a file: no progress line, nothing else either
}

}  // namespace
}  // namespace bod

namespace bod {
namespace {

TEST_F(KindCli, ProbeModesFromTheCommandLine) {
  std::string model = quote(fixture("models/llama-tiny"));
  Proc smart = run("check " + model + " --probe");
  EXPECT_EQ(smart.code, 0) << smart.err;
  EXPECT_NE(smart.out.find("probe coverage: probed 48 of 144 calls"), std::string::npos)
      << smart.out;
  Proc all = run("check " + model + " --probe=all");
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("probe coverage: probed 144 of 144 calls"), std::string::npos) << all.out;
  Proc bad = run("check " + model + " --probe=al");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("did you mean 'all'?"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace bod
