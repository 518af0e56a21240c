// `bo-doctor skeleton`: the model.json it writes from a trace loads, expands and replays the
// recorded plan call by call (kernel, bo_key, index lists, shared flags, cache, placements),
// folds layers and decode tokens of the fixture models into loops and repeated phases, stays
// flat where nothing repeats, and passes `lint` with no finding the recorded plan does not have.
#include "skeleton/skeleton.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "checks/trace_builder.h"
#include "cli/commands.h"
#include "model/model.h"
#include "plan/plan.h"
#include "runner/runner.h"
#include "support/fixtures.h"
#include "trace/trace_io.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

const fs::path kSource = BOD_SOURCE_DIR;

std::string file_name(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return r;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("bod_skeleton_test_" + std::to_string(::getpid()) + "_" +
            file_name(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// `check --save-trace` on a fixture, read back.
Trace checked_trace(const std::string& fixture, const fs::path& dir,
                    CommandResult* result = nullptr) {
  CommandOptions o;
  o.model = (kSource / fixture / "model.json").string();
  o.format = "json";
  o.save_trace = (dir / (file_name(fixture) + ".trace.jsonl")).string();
  auto r = cmd_check(o);
  EXPECT_TRUE(r.code == Exit::ok || r.code == Exit::findings) << r.err;
  if (result) *result = r;
  auto t = read_trace(o.save_trace);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().line());
  return t.ok() ? t.value() : Trace{};
}

// The skeleton through the real loader and expansion.
struct Loaded {
  std::unique_ptr<Model> model;
  Plan plan;
  Trace identity;  // the plan's calls as a trace (what lint sees)
};

::testing::AssertionResult load(const ojson& j, Loaded& out) {
  auto m = parse_model(j.dump(1), "skeleton.json");
  if (!m) return ::testing::AssertionFailure() << "load: " << m.error().line();
  out.model = std::make_unique<Model>(std::move(m.value()));
  auto p = expand(*out.model);
  if (!p) return ::testing::AssertionFailure() << "expand: " << p.error().line();
  out.plan = std::move(p.value());
  out.identity = plan_trace(out.plan, "skeleton.json");
  return ::testing::AssertionSuccess();
}

std::string where(const TraceCall& c) {
  return "call " + std::to_string(c.number) + " (" + c.kernel + ", bo_key '" + c.bo_key + "')";
}

// The skeleton's calls are the trace's, call by call: identity, reuse settings and placements.
void expect_replays(const Trace& t, const Loaded& l, bool labels) {
  ASSERT_EQ(l.identity.calls.size(), t.calls.size());
  std::map<std::string, std::string> names, back;  // recorded tensor binding <-> skeleton's
  for (size_t i = 0; i < t.calls.size(); ++i) {
    const TraceCall& want = t.calls[i];
    const TraceCall& got = l.identity.calls[i];
    SCOPED_TRACE(where(want));
    EXPECT_EQ(got.kernel, want.kernel);
    EXPECT_EQ(got.bo_key, want.bo_key);
    EXPECT_EQ(got.statics, want.statics);
    EXPECT_EQ(got.inters, want.inters);
    EXPECT_EQ(got.outputs, want.outputs);
    EXPECT_EQ(got.shared_nonstatic, want.shared_nonstatic);
    EXPECT_EQ(got.alias, want.alias);
    EXPECT_EQ(got.ns, want.ns);
    EXPECT_EQ(got.key_first_call, want.key_first_call);
    if (labels) {
      EXPECT_EQ(got.phase, want.phase.empty() ? "main" : want.phase);
      EXPECT_EQ(got.token, want.token);
      EXPECT_EQ(got.layer, want.layer);
    }
    ASSERT_EQ(got.slots.size(), want.slots.size());
    for (size_t s = 0; s < want.slots.size(); ++s) {
      const TraceSlot& ws = want.slots[s];
      const TraceSlot& gs = got.slots[s];
      SCOPED_TRACE("slot " + std::to_string(s) + " (" + ws.name + ")");
      EXPECT_EQ(gs.place.pool, ws.place.pool);
      EXPECT_EQ(gs.place.name, ws.place.name);
      EXPECT_EQ(gs.place.index, ws.place.index);
      EXPECT_EQ(gs.place.bytes, ws.place.bytes);
      EXPECT_EQ(gs.host.bytes, ws.host.bytes);
      EXPECT_EQ(gs.host.dtype, ws.host.dtype);
      bool tensor =
          ws.host.source == ArraySource::tensor || ws.host.source == ArraySource::placeholder;
      if (ws.host.source == ArraySource::zeros) {
        EXPECT_EQ(gs.host.source, ArraySource::zeros);
      } else if (tensor) {
        EXPECT_EQ(gs.host.source, ws.host.source);
      }
      if (ws.host.source != ArraySource::zeros && gs.host.source != ArraySource::zeros) {
        // one recorded binding, one skeleton binding: the same data where the trace had it; a
        // binding whose data moved on in a skipped slot: one slice per distinct value
        bool values = gs.host.name.find("_values[") != std::string::npos;
        std::string value = std::to_string(ws.host.hash);
        // (a recorder's names are slot names: one array per kernel and name)
        std::string name =
            t.header.named_bindings ? ws.host.name : want.kernel + "/" + ws.host.name;
        auto a = names.emplace(values ? name + "#" + value : name, gs.host.name).first;
        auto b = back.emplace(gs.host.name, values ? value : name).first;
        if (values) {
          EXPECT_EQ(b->second, value) << "'" << gs.host.name << "' stands for two values";
          continue;
        }
        EXPECT_EQ(a->second, gs.host.name) << "'" << name << "' bound as two arrays";
        EXPECT_EQ(b->second, name) << "'" << gs.host.name << "' stands for two bindings";
      }
    }
  }
}

size_t count_steps(const ojson& steps) {
  size_t n = 0;
  for (auto& s : steps) n += s.contains("loop") ? count_steps(s["steps"]) : 1;
  return n;
}

size_t program_steps(const ojson& m) {
  size_t n = 0;
  for (auto& ph : m["program"]["phases"]) n += count_steps(ph["steps"]);
  return n;
}

void find_loops(const ojson& steps, std::vector<ojson>& out) {
  for (auto& s : steps)
    if (s.contains("loop")) {
      out.push_back(s);
      find_loops(s["steps"], out);
    }
}

std::vector<ojson> loops(const ojson& m) {
  std::vector<ojson> out;
  for (auto& ph : m["program"]["phases"]) find_loops(ph["steps"], out);
  return out;
}

// Errors of `lint` on a model file, as (check, call, slot).
std::set<std::tuple<std::string, int, int>> lint_errors(const std::string& model, Exit* code) {
  CommandOptions o;
  o.model = model;
  o.format = "json";
  auto r = cmd_lint(o);
  *code = r.code;
  std::set<std::tuple<std::string, int, int>> e;
  EXPECT_TRUE(r.code == Exit::ok || r.code == Exit::findings) << model << ": " << r.err;
  if (r.out.empty()) return e;
  auto j = nlohmann::json::parse(r.out);
  for (auto& f : j["findings"])
    if (f["severity"] == "error")
      e.insert({f["check"].get<std::string>(), f["call"].get<int>(), f["slot"].get<int>()});
  return e;
}

std::string write(const fs::path& p, const ojson& j) {
  std::ofstream(p) << j.dump(1) << "\n";
  return p.string();
}

// ------------------------------------------------------------------ fixtures

std::vector<std::string> fixtures(const char* dir) {
  return testing::fixture_dirs({dir});
}

std::string name_of(const ::testing::TestParamInfo<std::string>& info) {
  return file_name(fs::path(info.param).filename().string());
}

class SkeletonFixtures : public ::testing::TestWithParam<std::string> {};

// Clean models: the skeleton of their run replays every call and lints clean (exit 0).
TEST_P(SkeletonFixtures, ReplaysTheRecordedPlanAndLintsClean) {
  TempDir dir;
  Trace t = checked_trace(GetParam(), dir.path);
  ASSERT_FALSE(t.calls.empty());
  auto m = skeleton_model(t, "run.trace.jsonl");
  ASSERT_TRUE(m.ok()) << m.error().line();
  Loaded l;
  ASSERT_TRUE(load(m.value(), l));
  expect_replays(t, l, true);
  EXPECT_LE(program_steps(m.value()), t.calls.size());
  for (auto& [name, k] : m.value()["kernels"].items()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(k["doc"].get<std::string>().rfind(kSkeletonTodo, 0), 0u);
    for (auto& op : k["body"]) EXPECT_EQ(op["op"], "fill");
  }
  EXPECT_FALSE(m.value().contains("verify"));
  Exit code;
  auto errors = lint_errors(write(dir.path / "skeleton.json", m.value()), &code);
  EXPECT_EQ(code, Exit::ok) << errors.size() << " error finding(s)";
}

INSTANTIATE_TEST_SUITE_P(SkeletonModels, SkeletonFixtures,
                         ::testing::ValuesIn(fixtures("fixtures/models")), name_of);

class SkeletonBugFixtures : public ::testing::TestWithParam<std::string> {};

// Seeded bugs: the skeleton still replays the plan, and lint finds the errors the original
// model's lint finds, at the same calls and slots: no new one, none lost.
TEST_P(SkeletonBugFixtures, ReplaysWithoutNewLintErrors) {
  TempDir dir;
  Trace t = checked_trace(GetParam(), dir.path);
  ASSERT_FALSE(t.calls.empty());
  auto m = skeleton_model(t, "run.trace.jsonl");
  ASSERT_TRUE(m.ok()) << m.error().line();
  Loaded l;
  ASSERT_TRUE(load(m.value(), l));
  expect_replays(t, l, true);
  Exit want_code, got_code;
  auto want = lint_errors((kSource / GetParam() / "model.json").string(), &want_code);
  auto got = lint_errors(write(dir.path / "skeleton.json", m.value()), &got_code);
  for (auto& e : got)
    EXPECT_TRUE(want.count(e)) << "new lint error " << std::get<0>(e) << " at call "
                               << std::get<1>(e) << " slot " << std::get<2>(e);
  for (auto& e : want)
    EXPECT_TRUE(got.count(e)) << "lost lint error " << std::get<0>(e) << " at call "
                              << std::get<1>(e) << " slot " << std::get<2>(e);
  EXPECT_EQ(got_code, want_code);
}

INSTANTIATE_TEST_SUITE_P(SkeletonBugs, SkeletonBugFixtures,
                         ::testing::ValuesIn(fixtures("fixtures/bugs")), name_of);

// llama-tiny: per-layer calls become a loop over l with bo_key templates, the decode tokens a
// repeated phase; the weights are per-layer tensors with a leading L; rows vary -> param n.
TEST(SkeletonTest, LlamaTinyFoldsLayersAndTokens) {
  TempDir dir;
  Trace t = checked_trace("fixtures/models/llama-tiny", dir.path);
  auto r = skeleton_model(t, "llama-tiny.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& m = r.value();
  EXPECT_EQ(m["name"], "skeleton of llama-tiny.trace.jsonl");
  size_t steps = program_steps(m);
  EXPECT_LT(steps, t.calls.size() / 4) << steps << " call steps for " << t.calls.size() << " calls";
  auto ls = loops(m);
  ASSERT_FALSE(ls.empty());
  bool layer_loop = false;
  for (auto& lp : ls) {
    if (lp["loop"] != "l") continue;
    layer_loop = true;
    EXPECT_EQ(lp["range"], "L");
    for (auto& s : lp["steps"])
      if (s.contains("call")) {
        EXPECT_NE(s["bo_key"].get<std::string>().find("{l}"), std::string::npos) << s.dump();
      }
  }
  EXPECT_TRUE(layer_loop);
  EXPECT_EQ(m["dims"]["L"], 4);
  ASSERT_EQ(m["program"]["phases"].size(), 2u);
  EXPECT_EQ(m["program"]["phases"][0]["name"], "prefill");
  const ojson& decode = m["program"]["phases"][1];
  EXPECT_EQ(decode["name"], "decode");
  EXPECT_EQ(decode["repeat"], "T");
  EXPECT_EQ(decode["var"], "t");
  EXPECT_EQ(m["dims"]["T"], 8);
  // per-layer weights: a slice per layer, bound as wq[l]
  ASSERT_TRUE(m["tensors"].contains("wq"));
  EXPECT_EQ(m["tensors"]["wq"]["shape"], ojson::parse("[4, 64, 64]"));
  EXPECT_EQ(m["tensors"]["wq"]["init"], ojson::parse(R"({"normal": {"std": 0.02}})"));
  // prefill 16 rows, decode 1: the leading dimension is a kernel param
  const ojson& k = m["kernels"]["rms_gemms_rope"];
  EXPECT_EQ(k["params"], ojson::parse(R"(["n"])"));
  EXPECT_EQ(k["slots"][0]["shape"], ojson::parse(R"(["n", 64])"));
  EXPECT_EQ(k["slots"][2]["shape"], ojson::parse("[64, 64]"));
  Loaded l;
  ASSERT_TRUE(load(m, l));
  expect_replays(t, l, true);
}

// ------------------------------------------------------------------ hand-built traces

// Two kernels, no labels, nothing repeating: one flat phase, one step per call, as recorded.
TEST(SkeletonTest, HandBuiltTwoKernelsWithoutLabelsStaysFlat) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "y"}).kernel("norm", {"x", "g", "scratch", "out"});
  b.call("proj", "proj_a").statics({1}).outputs({2}).slot(0).var("x");
  b.at(1).slot(1).tensor("w_a");
  b.call("norm", "norm").statics({1}).inters({2}).outputs({3}).shared_nonstatic().slot(0).var("y");
  b.at(2).slot(1).tensor("gamma");
  b.call("proj", "proj_b").statics({1}).outputs({2}).alias(0, "act_pool").slot(0).view("y", 1);
  b.at(3).slot(1).placeholder("w_b");
  b.call("norm", "norm").statics({1}).inters({2}).outputs({3}).shared_nonstatic().ns("decode");
  b.at(4).slot(0).var("y");
  b.at(4).slot(1).tensor("gamma");
  Trace t = b.build();
  auto r = skeleton_model(t, "hand.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& m = r.value();
  ASSERT_EQ(m["program"]["phases"].size(), 1u);
  const ojson& ph = m["program"]["phases"][0];
  EXPECT_EQ(ph["name"], "main");
  EXPECT_FALSE(ph.contains("repeat"));
  ASSERT_EQ(ph["steps"].size(), 4u);
  for (auto& s : ph["steps"]) EXPECT_TRUE(s.contains("call")) << s.dump();
  EXPECT_EQ(ph["steps"][2]["shared_alias"], ojson::parse(R"({"0": "act_pool"})"));
  EXPECT_EQ(ph["steps"][2]["args"]["w"], ojson::parse(R"({"placeholder": "w_b"})"));
  EXPECT_EQ(ph["steps"][3]["cache"], "decode");
  EXPECT_FALSE(ph["steps"][0].contains("cache"));
  EXPECT_EQ(ph["steps"][0]["output_indices"], ojson::parse("[2]"));
  EXPECT_FALSE(ph["steps"][0]["args"].contains("y"));  // outputs are not bound
  // tensors for static and tensor/placeholder bindings, vars for the rest
  EXPECT_TRUE(m["tensors"].contains("w_a"));
  EXPECT_TRUE(m["tensors"].contains("w_b"));
  EXPECT_TRUE(m["tensors"].contains("gamma"));
  EXPECT_TRUE(m["vars"].contains("x"));
  EXPECT_TRUE(m["vars"].contains("y"));
  EXPECT_EQ(m["tensors"]["gamma"]["shape"], ojson::parse("[16]"));  // 64 bytes of f32
  EXPECT_EQ(m["kernels"]["norm"]["slots"][3]["dtype"], "f32");
  EXPECT_EQ(m["kernels"]["norm"]["body"],
            ojson::parse(R"([{"op": "fill", "out": "out", "value": 0}])"));
  EXPECT_TRUE(m["dims"].empty());
  Loaded l;
  ASSERT_TRUE(load(m, l));
  expect_replays(t, l, false);
}

// No labels, but four calls that differ only in a number in bo_key and in the numbered weight
// they bind: one loop, the weights stacked into one tensor.
TEST(SkeletonTest, HandBuiltNumberedKeysFoldWithoutLabels) {
  TraceBuilder b;
  b.kernel("rms", {"x", "w", "out"});
  for (int i = 0; i < 4; ++i) {
    b.call("rms", "rms_L" + std::to_string(i)).statics({1}).slot(0).var("x");
    b.at(i + 1).slot(1).tensor("w" + std::to_string(i));
  }
  Trace t = b.build();
  auto r = skeleton_model(t, "numbered.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& m = r.value();
  const ojson& steps = m["program"]["phases"][0]["steps"];
  ASSERT_EQ(steps.size(), 1u) << steps.dump();
  EXPECT_EQ(steps[0]["range"], 4);
  std::string v = steps[0]["loop"];
  const ojson& call = steps[0]["steps"][0];
  EXPECT_EQ(call["bo_key"], "rms_L{" + v + "}");
  EXPECT_EQ(call["args"]["w"], "w[" + v + "]");
  EXPECT_EQ(m["tensors"]["w"]["shape"], ojson::parse("[4, 16]"));
  Loaded l;
  ASSERT_TRUE(load(m, l));
  expect_replays(t, l, false);
}

// The toy engine of tool/trace/examples/write_trace.py: one bo_key for both layers, weights
// w[0] and w[1] static. The layer loop keeps the literal key, and lint still finds the
// recorded key-collision (exit 1: a finding the recorded plan really has).
TEST(SkeletonTest, RecordedKeyCollisionSurvivesTheFold) {
  TraceBuilder b;
  b.kernel("mul", {"x", "w", "out"}).kernel("add", {"x", "y", "out"});
  for (int l = 0; l < 2; ++l) {
    auto& m = b.call("mul", "mul").statics({1}).phase("decode").token(0).layer(l);
    m.slot(0).var("x");
    m.slot(1).tensor("w[" + std::to_string(l) + "]");
    m.slot(2).var("t");
    auto& a = b.call("add", "add").phase("decode").token(0).layer(l);
    a.slot(0).var("x");
    a.slot(1).var("t");
    a.slot(2).var("x");
  }
  Trace t = b.build();
  auto r = skeleton_model(t, "toy.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& m = r.value();
  const ojson& steps = m["program"]["phases"][0]["steps"];
  ASSERT_EQ(steps.size(), 1u) << steps.dump();
  EXPECT_EQ(steps[0]["loop"], "l");
  EXPECT_EQ(steps[0]["steps"][0]["bo_key"], "mul");
  EXPECT_EQ(steps[0]["steps"][0]["args"]["w"], "w[l]");
  EXPECT_FALSE(steps[0]["steps"][0]["args"].contains("out"));  // output: unbound
  Loaded l;
  ASSERT_TRUE(load(m, l));
  expect_replays(t, l, false);
  TempDir dir;
  Exit code;
  auto errors = lint_errors(write(dir.path / "toy.json", m), &code);
  EXPECT_EQ(code, Exit::findings);
  EXPECT_TRUE(errors.count({"key-collision", 3, 1}));
}

// Data that moves on in a static slot under one binding name (a recorder names slots, "arg1@L0",
// not arrays): each distinct value becomes a slice of a seeded var, bound per call and folded
// over the token loop, so `check` of the skeleton finds the recorded stale-static at the same
// call and slot, at its severity (the stub bodies' matching outputs prove nothing).
TEST(SkeletonTest, DistinctValuesOfAStaticSlotReplayTheStaleSlot) {
  TraceBuilder b;
  b.kernel("rope", {"x", "lut", "out"});
  for (int tok = 0; tok < 4; ++tok) {
    auto& c = b.call("rope", "rope_L0").statics({1}).phase("decode").token(tok).layer(0);
    c.slot(0).var("x");
    c.slot(1).tensor("lut@L0").hash(static_cast<uint64_t>(11 + tok));
    if (tok) c.slot(1).pre(11, static_cast<uint64_t>(11 + tok));
  }
  Trace t = b.build();
  auto r = skeleton_model(t, "stale.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& m = r.value();
  ASSERT_TRUE(m["vars"].contains("rope_lut_values")) << m["vars"].dump();
  EXPECT_EQ(m["vars"]["rope_lut_values"]["shape"][0], 4);
  EXPECT_TRUE(m["vars"]["rope_lut_values"].contains("init"));
  EXPECT_NE(m["program"].dump().find("rope_lut_values[t]"), std::string::npos)
      << m["program"].dump();
  TempDir dir;
  CommandOptions o;
  o.model = write(dir.path / "stale.json", m);
  o.format = "json";
  auto res = cmd_check(o);
  ASSERT_FALSE(res.out.empty()) << res.err;
  auto j = nlohmann::json::parse(res.out);
  bool found = false;
  for (auto& f : j["findings"]) {
    found = found || (f["check"] == "stale-static" && f["call"] == 2 && f["slot"] == 1 &&
                      f["severity"] == "error");
    EXPECT_NE(f["check"], "missed-static") << "a stub's zeros advise nothing";
  }
  EXPECT_TRUE(found) << res.out;
  // Said once, at the top: the bodies are stubs.
  EXPECT_EQ(j["stub_bodies"]["kernels"], nlohmann::json::array({"rope"})) << res.out;
}

// A recorder names bindings by slot, with the layer label ("arg1@L0"): each kernel's slot is one
// array, its layers the slices, so the layer loop folds ("o_arg1[l]") under the token loop.
TEST(SkeletonTest, RecorderSlotNamesFoldIntoLayerLoops) {
  TraceBuilder b;
  b.kernel("qkv", {"x", "w", "out"}).kernel("o", {"x", "w", "out"});
  for (int tok = 0; tok < 3; ++tok)
    for (int l = 0; l < 2; ++l)
      for (const char* k : {"qkv", "o"}) {
        auto& c = b.call(k, std::string(k) + "_L" + std::to_string(l)).statics({1});
        c.phase("decode").token(tok).layer(l);
        c.slot(0).var("arg0@L" + std::to_string(l));
        c.slot(1)
            .tensor("arg1@L" + std::to_string(l))
            .hash(static_cast<uint64_t>(100 + l + (k[0] == 'o' ? 10 : 0)));
      }
  Trace t = b.build();
  t.header.named_bindings = false;  // a recording
  auto r = skeleton_model(t, "rec.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  std::string prog = r.value()["program"].dump();
  EXPECT_NE(prog.find("\"loop\":\"l\""), std::string::npos) << prog;
  EXPECT_NE(prog.find("\"w\":\"qkv_arg1[l]\""), std::string::npos) << prog;
  EXPECT_NE(prog.find("\"w\":\"o_arg1[l]\""), std::string::npos) << prog;
  Loaded l;
  ASSERT_TRUE(load(r.value(), l));
  expect_replays(t, l, true);
}

// A placeholder is described as one in the tensor's doc, a plain tensor as seeded data.
TEST(SkeletonTest, PlaceholdersAreDescribedAsSuch) {
  TraceBuilder b;
  b.kernel("k", {"x", "w", "v", "out"});
  for (int i = 0; i < 2; ++i) {
    auto& c = b.call("k", "k").statics({1, 2});
    c.slot(1).tensor("w");
    if (i)
      c.slot(2).placeholder("v");
    else
      c.slot(2).tensor("v");
  }
  auto r = skeleton_model(b.build(), "ph.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& ts = r.value()["tensors"];
  EXPECT_NE(ts["v"]["doc"].get<std::string>().find("a placeholder where the program passed"),
            std::string::npos)
      << ts.dump();
  EXPECT_EQ(ts["w"]["doc"].get<std::string>().find("placeholder"), std::string::npos);
}

// Names that clash once made valid ("v-1", "v:1", ... all become "v") get v, v_2, v_3, ... in
// order of first use; 20,000 of them in one trace (the numbering is linear: 22.4 s before,
// build/tests/bod_tests --gtest_filter='SkeletonTest.ClashingNames*' times it). A name with
// more indices than the cap is sanitized like any other.
TEST(SkeletonTest, ClashingNamesAreNumberedInOrder) {
  TraceBuilder b;
  b.kernel("k", {"x", "out"});
  const char* marks = "-:@+!";
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::string name = "v";
    for (int v = i + 1; v; v /= 5) name += marks[v % 5];
    b.call("k", "k").slot(0).var(name);
  }
  b.call("k", "k").slot(0).var("x[1][2][3][4][5]");  // above the index cap: sanitized
  Trace t = b.build();
  auto r = skeleton_model(t, "clash.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& vars = r.value()["vars"];
  EXPECT_EQ(vars.size(), static_cast<size_t>(n + 1));
  EXPECT_TRUE(vars.contains("v"));
  for (int k = 2; k <= n; ++k)
    if (!vars.contains("v_" + std::to_string(k))) {
      ADD_FAILURE() << "no v_" << k;
      break;
    }
  EXPECT_TRUE(vars.contains("x_1_2_3_4_5"));
}

// shared_alias on slot -1 (the engine raises on it) has no model.json spelling: left out, noted.
TEST(SkeletonTest, NegativeAliasIndexIsLeftOutWithANote) {
  TraceBuilder b;
  b.kernel("k", {"x", "out"});
  b.call("k", "k").alias(-1, "pool").slot(0).var("x");
  auto r = skeleton_model(b.build(), "alias.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& step = r.value()["program"]["phases"][0]["steps"][0];
  EXPECT_FALSE(step.contains("shared_alias"));
  EXPECT_NE(step["doc"].get<std::string>().find("-1 -> 'pool'"), std::string::npos);
  Loaded l;
  EXPECT_TRUE(load(r.value(), l));
}

// A fold is made only where it is exact: a key that does not step evenly stays flat.
TEST(SkeletonTest, UnevenKeysStayFlat) {
  TraceBuilder b;
  b.kernel("k", {"x", "out"});
  for (int i : {0, 1, 3}) b.call("k", "k_L" + std::to_string(i)).slot(0).var("x");
  Trace t = b.build();
  auto r = skeleton_model(t, "uneven.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& steps = r.value()["program"]["phases"][0]["steps"];
  // 0, 1 fold (two iterations), 3 does not
  Loaded l;
  ASSERT_TRUE(load(r.value(), l));
  expect_replays(t, l, false);
  EXPECT_EQ(count_steps(steps), 2u);
}

// Shapes that vary in more than the leading dimension: the first call's shapes, and a note.
TEST(SkeletonTest, ShapesVaryingBeyondTheLeadingDimUseTheFirstCall) {
  TraceBuilder b;
  b.kernel("k", {"x", "out"});
  b.call("k", "a").slot(0).var("x").bytes(64);
  b.call("k", "b").slot(0).var("x2").bytes(32);
  Trace t = b.build();
  t.calls[0].slots[0].host.shape = {4, 4};
  t.calls[1].slots[0].host.shape = {4, 2};
  auto r = skeleton_model(t, "shapes.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& k = r.value()["kernels"]["k"];
  EXPECT_FALSE(k.contains("params"));
  EXPECT_EQ(k["slots"][0]["shape"], ojson::parse("[4, 4]"));
  EXPECT_NE(k["doc"].get<std::string>().find("first call's shape"), std::string::npos);
  Loaded l;
  ASSERT_TRUE(load(r.value(), l));
}

// Only the leading dimension varies: a kernel param n, given per call.
TEST(SkeletonTest, LeadingDimensionBecomesAParam) {
  TraceBuilder b;
  b.kernel("k", {"x", "w", "out"});
  b.call("k", "pre").statics({1}).slot(0).var("x");
  b.at(1).slot(1).tensor("w");
  b.call("k", "dec").statics({1}).slot(0).var("xd");
  b.at(2).slot(1).tensor("w");
  Trace t = b.build();
  for (int c : {0, 1})
    for (int s : {0, 2}) t.calls[c].slots[s].host.shape = {c == 0 ? 8 : 1, 4};
  t.calls[1].slots[0].host.bytes = t.calls[1].slots[2].host.bytes = 16;
  auto r = skeleton_model(t, "param.trace.jsonl");
  ASSERT_TRUE(r.ok()) << r.error().line();
  const ojson& m = r.value();
  EXPECT_EQ(m["kernels"]["k"]["params"], ojson::parse(R"(["n"])"));
  EXPECT_EQ(m["kernels"]["k"]["slots"][0]["shape"], ojson::parse(R"(["n", 4])"));
  EXPECT_EQ(m["kernels"]["k"]["slots"][1]["shape"], ojson::parse("[16]"));
  const ojson& steps = m["program"]["phases"][0]["steps"];
  EXPECT_EQ(steps[0]["params"]["n"], 8);
  EXPECT_EQ(steps[1]["params"]["n"], 1);
  Loaded l;
  ASSERT_TRUE(load(m, l));
  EXPECT_EQ(l.plan.calls[1].slot_bytes[0], 16u);
}

// Random plans in the shapes engines have (tokens of layers of calls, per-layer keys and
// weights spelled in several ways, sizes that differ per phase, calls in between, with and
// without labels): whatever the folder makes of them expands to the recorded calls.
TEST(SkeletonTest, RandomPlansReplayExactly) {
  size_t folded = 0, repeated = 0;
  for (unsigned seed = 1; seed <= 150; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    TraceBuilder b;
    int nk = 1 + pick(3);
    std::vector<int> slots;
    for (int k = 0; k < nk; ++k) {
      std::vector<std::string> names;
      slots.push_back(3 + pick(2));
      for (int s = 0; s < slots.back(); ++s) names.push_back("s" + std::to_string(s));
      b.kernel("k" + std::to_string(k), names);
    }
    bool labels = pick(2) == 0;
    int tokens = 1 + pick(3), layers = 1 + pick(4), per_layer = 1 + pick(3);
    struct Spec {
      int kernel, key, weight, offset, placeholder;
      std::vector<int> statics;
      bool shared;
    };
    std::vector<Spec> specs;
    for (int c = 0; c < per_layer; ++c)
      specs.push_back(Spec{pick(nk), pick(3), pick(4), pick(3), pick(6),
                           pick(2) ? std::vector<int>{1} : std::vector<int>{}, pick(3) == 0});
    bool head = pick(2) == 0;
    auto emit = [&](const std::string& phase, int t, int l, const Spec& sp, int c) {
      std::string k = "k" + std::to_string(sp.kernel);
      int layer = l + sp.offset;
      std::string key = sp.key == 0   ? k + "_c" + std::to_string(c) + "_L" + std::to_string(layer)
                        : sp.key == 1 ? k + "_c" + std::to_string(c)
                                      : k + "_" + std::to_string(c) + "_t" + std::to_string(t % 2);
      auto& call = b.call(k, key).statics(sp.statics).shared_nonstatic(sp.shared);
      if (labels) call.phase(phase).token(t).layer(l);
      call.slot(0).var(phase == "prefill" ? "x" : "xd").bytes(phase == "prefill" ? 64 : 16);
      std::string w =
          sp.weight == 0   ? "w" + std::to_string(sp.kernel) + "[" + std::to_string(layer) + "]"
          : sp.weight == 1 ? "w" + std::to_string(sp.kernel) + "_" + std::to_string(layer)
          : sp.weight == 2 ? "shared_w"
                           : "zeros";
      if (w != "zeros") call.slot(1).tensor(w);
      if (sp.placeholder < 2) call.slot(2).placeholder("ph" + std::to_string(sp.placeholder));
      if (pick(40) == 0) call.slot(2).var("odd");  // a one-off difference
    };
    for (int l = 0; l < layers; ++l)
      for (int c = 0; c < per_layer; ++c) emit("prefill", -1, l, specs[static_cast<size_t>(c)], c);
    for (int t = 0; t < tokens; ++t) {
      for (int l = 0; l < layers; ++l)
        for (int c = 0; c < per_layer; ++c) emit("decode", t, l, specs[static_cast<size_t>(c)], c);
      if (head) {
        auto& h = b.call("k0", "head").statics({1});
        if (labels) h.phase("decode").token(t);
        h.slot(1).tensor("head_w");
      }
    }
    Trace t = b.build();
    auto r = skeleton_model(t, "random.trace.jsonl");
    ASSERT_TRUE(r.ok()) << r.error().line();
    Loaded l;
    ASSERT_TRUE(load(r.value(), l)) << r.value().dump(1);
    expect_replays(t, l, false);
    EXPECT_LE(program_steps(r.value()), t.calls.size());
    folded += program_steps(r.value()) < t.calls.size();
    for (auto& ph : r.value()["program"]["phases"]) repeated += ph.contains("repeat");
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << r.value()["program"].dump(1);
      return;
    }
  }
  // the folds are exercised, not only the flat path
  EXPECT_GT(folded, 75u);
  EXPECT_GT(repeated, 10u);
  std::printf("random plans: %zu of 150 folded, %zu repeated phases\n", folded, repeated);
}

TEST(SkeletonTest, TraceWithoutCallsIsAnError) {
  Trace t;
  t.header.kernels.push_back({"k", {{"x", DType::f32}}, ""});
  auto r = skeleton_model(t, "empty.trace.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Exit::bad_input);
}

// ------------------------------------------------------------------ the command

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int run(const std::string& args, const fs::path& dir, std::string* out = nullptr) {
  fs::path o = dir / "stdout", e = dir / "stderr";
  std::string cmd = std::string("'") + BOD_BINARY + "' " + args + " >'" + o.string() + "' 2>'" +
                    e.string() + "' </dev/null";
  int st = std::system(cmd.c_str());
  if (out) *out = slurp(o);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// check --save-trace, skeleton -o, lint: the command line a user runs.
TEST(SkeletonCli, SkeletonOfASavedTraceLintsClean) {
  TempDir dir;
  fs::path trace = dir.path / "tutorial.trace.jsonl", model = dir.path / "skeleton.json";
  std::string model_in = (kSource / "fixtures/models/tutorial-mini/model.json").string();
  ASSERT_EQ(run("check '" + model_in + "' --save-trace '" + trace.string() + "'", dir.path), 0);
  std::string out;
  ASSERT_EQ(run("skeleton '" + trace.string() + "'", dir.path, &out), 0);
  auto j = ojson::parse(out);
  EXPECT_EQ(j["name"], "skeleton of tutorial.trace.jsonl");
  EXPECT_EQ(out.substr(0, 3), "{\n ");  // indent 1
  ASSERT_EQ(run("skeleton '" + trace.string() + "' -o '" + model.string() + "'", dir.path, &out),
            0);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(slurp(model), j.dump(1) + "\n");
  EXPECT_EQ(run("lint '" + model.string() + "'", dir.path), 0);
}

TEST(SkeletonCli, HandWrittenTraceAndBadInput) {
  TempDir dir;
  std::string out;
  fs::path hand = kSource / "tests/data/trace/hand_written.trace.jsonl";
  ASSERT_EQ(
      run("skeleton '" + hand.string() + "' -o '" + (dir.path / "m.json").string() + "'", dir.path),
      0);
  int lint = run("lint '" + (dir.path / "m.json").string() + "'", dir.path);
  EXPECT_TRUE(lint == 0 || lint == 1) << lint;
  EXPECT_EQ(run("skeleton '" + (dir.path / "missing.jsonl").string() + "'", dir.path), 2);
  EXPECT_EQ(run("skeleton", dir.path), 2);
}

}  // namespace
}  // namespace bod
