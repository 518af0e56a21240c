// Lint (static analysis of the expanded plan): each seeded mistake must fire its check on the
// right call and slot, and its clean twin must stay silent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "checks/checks.h"
#include "checks/registry.h"
#include "cli/commands.h"
#include "plan/plan.h"
#include "runner/runner.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using ptr = ojson::json_pointer;

// Two layers of one projection (static weights per layer, intermediate output), keyed per layer.
const char* kBase = R"({
  "format": "bo-doctor-model",
  "version": 1,
  "name": "lint-base",
  "seed": 3,
  "dims": {"L": 2, "S": 4, "E": 8, "N": 12},
  "tensors": {
    "w": {"shape": ["L", "E", "N"], "init": {"normal": {"std": 0.1}}},
    "bias": {"shape": ["L", "N"], "init": 0.5}
  },
  "vars": {
    "x": {"shape": ["S", "E"], "init": {"normal": {}}},
    "y": {"shape": ["S", "N"]},
    "xd": {"shape": [1, "E"], "init": {"normal": {}}},
    "yd": {"shape": [1, "N"]}
  },
  "kernels": {
    "proj": {
      "params": ["n"],
      "slots": [
        {"name": "a", "shape": ["n", "E"]},
        {"name": "b", "shape": ["E", "N"]},
        {"name": "out", "shape": ["n", "N"]}
      ],
      "body": [{"op": "gemm", "a": "a", "b": "b", "out": "out"}]
    },
    "proj_bias": {
      "params": ["n"],
      "slots": [
        {"name": "a", "shape": ["n", "E"]},
        {"name": "b", "shape": ["E", "N"]},
        {"name": "bias", "shape": ["N"]},
        {"name": "out", "shape": ["n", "N"]}
      ],
      "body": [{"op": "gemm", "a": "a", "b": "b", "bias": "bias", "out": "out"}]
    }
  },
  "program": {
    "phases": [
      {"name": "prefill", "steps": [
        {"loop": "l", "range": "L", "steps": [
          {"call": "proj", "params": {"n": "S"}, "args": {"a": "x", "b": "w[l]"},
           "static_input_indices": ["b"], "intermediate_indices": ["out"],
           "bo_key": "proj_L{l}", "keep": {"out": "y"}}
        ]}
      ]}
    ]
  }
})";

const std::string kCall = "/program/phases/0/steps/0/steps/0";

// A decode phase: one call per layer with n = 1.
ojson decode_phase(const std::string& kernel, const std::string& key) {
  ojson c = {{"call", kernel},
             {"params", {{"n", 1}}},
             {"args", {{"a", "xd"}, {"b", "w[l]"}}},
             {"static_input_indices", {"b"}},
             {"intermediate_indices", {"out"}},
             {"bo_key", key},
             {"keep", {{"out", "yd"}}}};
  if (kernel == "proj_bias") {
    c["args"]["bias"] = "bias[l]";
    c["static_input_indices"].push_back("bias");
  }
  return {{"name", "decode"}, {"steps", {{{"loop", "l"}, {"range", "L"}, {"steps", {c}}}}}};
}

struct Linted {
  std::vector<Finding> findings;
  std::string error;          // load/expand error, if any
  Trace trace;                // what lint read
  bool inconsistent = false;  // has_inconsistent_declarations: `check` would not run the plan
};

Linted lint(const std::function<void(ojson&)>& mutate = {}) {
  ojson j = ojson::parse(kBase);
  if (mutate) mutate(j);
  Linted r;
  auto m = parse_model(j.dump(), "lint/model.json");
  if (!m) {
    r.error = m.error().line();
    return r;
  }
  auto p = expand(m.value());
  if (!p) {
    r.error = p.error().line();
    return r;
  }
  r.trace = plan_trace(p.value(), "lint/model.json");
  r.inconsistent = has_inconsistent_declarations(r.trace);
  FindingSink sink;
  run_checks(r.trace, sink);
  r.findings = sink.sorted();
  return r;
}

// The placement of slot `slot` of call `call` (1-based) as the plan computed it.
const Placement& plan_place(const Linted& l, int call, int slot) {
  return l.trace.calls.at(static_cast<size_t>(call - 1)).slots.at(static_cast<size_t>(slot)).place;
}

std::vector<Finding> of(const Linted& l, const std::string& check) {
  std::vector<Finding> r;
  for (auto& f : l.findings)
    if (f.check == check) r.push_back(f);
  return r;
}

std::string dump(const Linted& l) {
  std::string s = l.error.empty() ? "" : "error: " + l.error + "\n";
  for (auto& f : l.findings)
    s += f.check + " call " + std::to_string(f.call) + " slot " + std::to_string(f.slot) + " key " +
         f.bo_key + " first " + std::to_string(f.key_first_call) + ": " + f.message + "\n";
  return s;
}

// Every lint finding of the clean model, error or warning, is a failure of some check.
void expect_silent(const Linted& l, const std::string& check) {
  ASSERT_TRUE(l.error.empty()) << l.error;
  EXPECT_TRUE(of(l, check).empty()) << dump(l);
  for (auto& f : l.findings) EXPECT_EQ(f.severity, Severity::note) << dump(l);
}

TEST(Lint, BaseModelIsClean) {
  expect_silent(lint(), "config-error");
}

// --- config-error

TEST(LintConfigError, IndexOutOfRange) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/static_input_indices")] = {"b", 7}; });
  ASSERT_TRUE(l.error.empty()) << l.error;
  auto f = of(l, "config-error");
  ASSERT_EQ(f.size(), 2u) << dump(l);  // one per bo_key (layer)
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, -1);
  EXPECT_EQ(f[0].bo_key, "proj_L0");
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].path, kCall + "/static_input_indices/1");
  EXPECT_NE(f[0].message.find("index 7 is out of range"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[1].call, 2);
}

TEST(LintConfigError, NegativeIndex) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/intermediate_indices")] = {-1}; });
  auto f = of(l, "config-error");
  ASSERT_FALSE(f.empty()) << dump(l);
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, -1);
  EXPECT_EQ(f[0].path, kCall + "/intermediate_indices/0");
}

TEST(LintConfigError, StaticAndIntermediate) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/intermediate_indices")] = {"b", "out"}; });
  auto f = of(l, "config-error");
  ASSERT_EQ(f.size(), 2u) << dump(l);
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_EQ(f[0].slot_name, "b");
  EXPECT_NE(f[0].message.find("both static and intermediate"), std::string::npos);
}

TEST(LintConfigError, OutputDeclaredStatic) {
  auto l = lint([](ojson& j) {
    j[ptr(kCall + "/static_input_indices")] = {"b", 2};
    j[ptr(kCall + "/intermediate_indices")] = ojson::array();
  });
  auto f = of(l, "config-error");
  ASSERT_EQ(f.size(), 2u) << dump(l);
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, 2);
  EXPECT_EQ(f[0].slot_name, "out");
  EXPECT_NE(f[0].message.find("output slot is declared static"), std::string::npos);
}

TEST(LintConfigError, ExplicitOutputDeclaredStatic) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/output_indices")] = {"b", "out"}; });
  auto f = of(l, "config-error");
  ASSERT_FALSE(f.empty()) << dump(l);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_NE(f[0].message.find("output slot is declared static"), std::string::npos);
}

TEST(LintConfigError, Duplicate) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/static_input_indices")] = {"b", 1}; });
  auto f = of(l, "config-error");
  ASSERT_EQ(f.size(), 2u) << dump(l);
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_EQ(f[0].path, kCall + "/static_input_indices/1");
  EXPECT_NE(f[0].message.find("twice"), std::string::npos);
}

TEST(LintConfigError, CleanTwinWithNamesAndIndices) {
  // The same settings as the base, written with indices, mixed and explicit outputs.
  auto l = lint([](ojson& j) {
    j[ptr(kCall + "/static_input_indices")] = {1};
    j[ptr(kCall + "/intermediate_indices")] = {2};
    j[ptr(kCall + "/output_indices")] = {"out"};
  });
  expect_silent(l, "config-error");
}

// An out-of-range slot number in shared_alias: the real engine raises ValueError on the call.
TEST(LintConfigError, AliasIndexOutOfRange) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/shared_alias")] = {{"9", "h"}}; });
  ASSERT_TRUE(l.error.empty()) << l.error;
  auto f = of(l, "config-error");
  ASSERT_EQ(f.size(), 2u) << dump(l);  // one per layer key
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, -1);
  EXPECT_EQ(f[0].path, kCall + "/shared_alias");
  EXPECT_EQ(f[0].message,
            "shared_alias slot 9 is out of range; proj has slots 0..2; the real engine raises "
            "ValueError here");
  EXPECT_FALSE(l.inconsistent);  // the call fails in the run; the plan still runs
}

// --- key-collision

TEST(LintKeyCollision, KeyWithoutLayerIndex) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/bo_key")] = "proj"; });
  auto f = of(l, "key-collision");
  ASSERT_EQ(f.size(), 1u) << dump(l);
  EXPECT_EQ(f[0].call, 2);
  EXPECT_EQ(f[0].layer, 1);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_EQ(f[0].slot_name, "b");
  EXPECT_EQ(f[0].bo_key, "proj");
  EXPECT_EQ(f[0].key_first_call, 1);
  EXPECT_FALSE(f[0].first_call_of_key);
  EXPECT_NE(f[0].message.find("'w[0]'"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("'w[1]'"), std::string::npos) << f[0].message;
}

TEST(LintKeyCollision, DefaultKeyIsTheKernelName) {
  auto l = lint([](ojson& j) { j[ptr(kCall)].erase("bo_key"); });
  auto f = of(l, "key-collision");
  ASSERT_EQ(f.size(), 1u) << dump(l);
  EXPECT_EQ(f[0].call, 2);
  EXPECT_EQ(f[0].bo_key, "proj");
  EXPECT_EQ(f[0].slot, 1);
}

TEST(LintKeyCollision, CleanTwin) {
  expect_silent(lint(), "key-collision");
}

TEST(LintKeyCollision, SameWeightsUnderOneKeyIsFine) {
  // One key, but every layer binds the same tensor: nothing collides.
  auto l = lint([](ojson& j) {
    j[ptr(kCall + "/bo_key")] = "proj";
    j[ptr(kCall + "/args/b")] = "w[0]";
  });
  expect_silent(l, "key-collision");
}

// --- size-mismatch

TEST(LintSizeMismatch, SameKeyOtherParam) {
  auto l =
      lint([](ojson& j) { j["program"]["phases"].push_back(decode_phase("proj", "proj_L{l}")); });
  auto f = of(l, "size-mismatch");
  ASSERT_FALSE(f.empty()) << dump(l);
  // calls 1, 2 prefill (n=S); call 3 is decode l=0 with n=1 on key proj_L0
  EXPECT_EQ(f[0].call, 3);
  EXPECT_EQ(f[0].slot, 0);
  EXPECT_EQ(f[0].slot_name, "a");
  EXPECT_EQ(f[0].bo_key, "proj_L0");
  EXPECT_EQ(f[0].key_first_call, 1);
  EXPECT_NE(f[0].message.find("16 bytes but the BO of 'proj_L0' was sized 64 bytes at call 1"),
            std::string::npos)
      << f[0].message;
  bool out_slot = false;
  for (auto& x : f) out_slot = out_slot || (x.call == 3 && x.slot == 2);
  EXPECT_TRUE(out_slot) << dump(l);
}

TEST(LintSizeMismatch, SameKeyOtherSlotCount) {
  auto l = lint([](ojson& j) {
    j["program"]["phases"].push_back(decode_phase("proj_bias", "proj_L{l}"));
    // same n as prefill so only the slot count differs
    j["program"]["phases"][1]["steps"][0]["steps"][0]["params"]["n"] = "S";
    j["program"]["phases"][1]["steps"][0]["steps"][0]["args"]["a"] = "x";
    j["program"]["phases"][1]["steps"][0]["steps"][0]["keep"]["out"] = "y";
  });
  std::vector<Finding> f;
  for (auto& x : of(l, "size-mismatch"))
    if (x.slot == -1) f.push_back(x);
  ASSERT_EQ(f.size(), 2u) << dump(l);  // one per layer key
  EXPECT_EQ(f[0].call, 3);
  EXPECT_EQ(f[1].call, 4);
  EXPECT_EQ(f[0].kernel, "proj_bias");
  EXPECT_EQ(f[0].key_first_call, 1);
  EXPECT_EQ(f[0].message,
            "bo_key 'proj_L0' was set up with 3 args at call 1 (proj); this call passes 4 and "
            "the launch binds only the first 3");
  // Slot 3 (out) of proj_bias has no BO in proj_L0's list: the plan places it nowhere.
  const Placement& p = plan_place(l, 3, 3);
  EXPECT_EQ(p.pool, BoPool::unbound);
  EXPECT_EQ(p.first_call, 1);
}

TEST(LintSizeMismatch, CleanTwinOwnKey) {
  auto l = lint(
      [](ojson& j) { j["program"]["phases"].push_back(decode_phase("proj", "proj_dec_L{l}")); });
  expect_silent(l, "size-mismatch");
}

TEST(LintSizeMismatch, SharedNonstaticPoolsAreKeyedBySize) {
  // Pools are per (kernel, slot, bytes): other sizes get other pools, which is fine, while the
  // static weights stay per key.
  auto l = lint([](ojson& j) {
    j["program"]["phases"].push_back(decode_phase("proj", "proj_dec_L{l}"));
    j[ptr(kCall + "/shared_nonstatic")] = true;
    j["program"]["phases"][1]["steps"][0]["steps"][0]["shared_nonstatic"] = true;
  });
  expect_silent(l, "size-mismatch");
}

TEST(LintSizeMismatch, AliasPoolOfOtherSize) {
  auto l = lint([](ojson& j) {
    j["program"]["phases"].push_back(decode_phase("proj", "proj_dec_L{l}"));
    j[ptr(kCall + "/shared_alias")] = {{"out", "h"}};
    j["program"]["phases"][1]["steps"][0]["steps"][0]["shared_alias"] = {{"out", "h"}};
  });
  // Two BOs for one name, but nothing reads 'h' at one size after it was written at the other:
  // reported, as a note.
  auto f = of(l, "size-mismatch");
  ASSERT_EQ(f.size(), 1u) << dump(l);
  EXPECT_EQ(f[0].call, 3);
  EXPECT_EQ(f[0].slot, 2);
  EXPECT_EQ(f[0].severity, Severity::note);
  EXPECT_NE(f[0].message.find("alias pool 'h'"), std::string::npos) << f[0].message;
}

// Fire twin: a decode call reads 'h' (skipped, read before written) at 16 bytes right after a
// prefill-sized call wrote 'h' at 96 bytes: it reads another BO than the one written.
TEST(LintSizeMismatch, AliasReadAtAnotherSizeThanItsLastWrite) {
  auto l = lint([](ojson& j) {
    ojson pre = j[ptr(kCall)];
    pre["shared_alias"] = {{"out", "h"}};
    pre["bo_key"] = "proj_pre_L{l}";
    ojson dec = {{"call", "proj"},
                 {"params", {{"n", 1}}},
                 {"args", {{"b", "w[l]"}}},
                 {"static_input_indices", {"b"}},
                 {"intermediate_indices", {"a", "out"}},
                 {"shared_alias", {{"a", "h"}}},
                 {"bo_key", "proj_dec_L{l}"},
                 {"keep", {{"out", "yd"}}}};
    j["program"]["phases"] = {
        {{"name", "decode"},
         {"repeat", 2},
         {"var", "t"},
         {"steps", {{{"loop", "l"}, {"range", "L"}, {"steps", {pre, dec}}}}}}};
  });
  auto f = of(l, "size-mismatch");
  std::vector<Finding> errors;
  for (auto& x : f)
    if (x.severity == Severity::error) errors.push_back(x);
  ASSERT_EQ(errors.size(), 2u) << dump(l);  // token 1, layers 0 and 1
  EXPECT_EQ(errors[0].call, 6);
  EXPECT_EQ(errors[0].slot, 0);
  EXPECT_NE(errors[0].message.find("reads alias pool 'h' at 16 bytes, but call 5 last wrote 'h' "
                                   "at 96 bytes"),
            std::string::npos)
      << errors[0].message;
}

TEST(LintSizeMismatch, SharedNonstaticLaterCallReusesFirstCallsPoolBo) {
  // Decode on the prefill keys with shared_nonstatic: pools are looked up only at a key's first
  // call, so decode's 1-row activations land in prefill's S-row pool BOs.
  auto l = lint([](ojson& j) {
    j["program"]["phases"].push_back(decode_phase("proj", "proj_L{l}"));
    j[ptr(kCall + "/shared_nonstatic")] = true;
    j["program"]["phases"][1]["steps"][0]["steps"][0]["shared_nonstatic"] = true;
  });
  auto f = of(l, "size-mismatch");
  ASSERT_FALSE(f.empty()) << dump(l);
  EXPECT_EQ(f[0].call, 3);
  EXPECT_EQ(f[0].slot, 0);
  EXPECT_EQ(f[0].message,
            "slot a is 16 bytes but the BO of 'proj_L0' was sized 64 bytes at call 1");
  EXPECT_EQ(plan_place(l, 3, 0).label(), "pool:proj/0/64");
  EXPECT_EQ(plan_place(l, 3, 0).bo, plan_place(l, 1, 0).bo);
}

// The decode phase on the prefill keys (other sizes), with the prefill call in cache
// `prefill_cache` and the decode call in `decode_cache` ("" leaves the field out).
Linted two_caches(const std::string& prefill_cache, const std::string& decode_cache) {
  return lint([&](ojson& j) {
    j["program"]["phases"].push_back(decode_phase("proj", "proj_L{l}"));
    if (!prefill_cache.empty()) j[ptr(kCall + "/cache")] = prefill_cache;
    if (!decode_cache.empty())
      j["program"]["phases"][1]["steps"][0]["steps"][0]["cache"] = decode_cache;
  });
}

TEST(LintSizeMismatch, SameKeyInTwoCachesIsTwoKeys) {
  auto l = two_caches("prefill", "decode");
  expect_silent(l, "size-mismatch");
  ASSERT_EQ(l.trace.calls.size(), 4u);
  EXPECT_EQ(l.trace.calls[2].ns, "decode");
  EXPECT_EQ(l.trace.calls[2].bo_key, "proj_L0");
  EXPECT_EQ(l.trace.calls[2].key_first_call, 3);  // its own first call
  EXPECT_EQ(plan_place(l, 3, 0).label(), "decode:key:proj_L0/0");
  EXPECT_EQ(plan_place(l, 3, 0).bytes, 16u);
}

TEST(LintSizeMismatch, SameKeyInOneNamedCacheIsOneKey) {
  // The twin: both calls in one (named) cache instance.
  auto l = two_caches("main", "main");
  ASSERT_TRUE(l.error.empty()) << l.error;
  auto f = of(l, "size-mismatch");
  ASSERT_FALSE(f.empty()) << dump(l);
  EXPECT_EQ(f[0].call, 3);
  EXPECT_EQ(f[0].slot, 0);
  EXPECT_EQ(f[0].key_first_call, 1);
  EXPECT_EQ(f[0].message,
            "slot a is 16 bytes but the BO of 'proj_L0' was sized 64 bytes at call 1");
  EXPECT_EQ(l.trace.calls[2].ns, "main");
}

TEST(LintSizeMismatch, CacheFieldMustBeAString) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/cache")] = 3; });
  EXPECT_NE(l.error.find(kCall + "/cache"), std::string::npos) << dump(l);
}

// --- alias-conflict: an alias added after the key's first call (after a preload phase)

// Fire: decode calls alias their (intermediate, read) input to the prefill output's pool, but
// their keys were set up by a preload call without the alias: the real engine ignores it.
TEST(LintAliasConflict, AliasAddedAfterTheKeysFirstCallIsIgnored) {
  auto l = lint([](ojson& j) {
    j["dims"]["E"] = 12;  // the consumer's input is as large as the producer's output
    ojson pre = j[ptr(kCall)];
    pre["shared_alias"] = {{"out", "h"}};
    pre["params"]["n"] = 1;
    pre["args"]["a"] = "xd";
    pre["keep"] = {{"out", "yd"}};
    ojson cons = {{"call", "proj"},
                  {"params", {{"n", 1}}},
                  {"args", {{"b", "w[l]"}}},
                  {"static_input_indices", {"b"}},
                  {"intermediate_indices", {"out"}},
                  {"bo_key", "cons_L{l}"},
                  {"keep", {{"out", "yd"}}}};
    ojson later = cons;
    later["intermediate_indices"] = {"a", "out"};
    later["shared_alias"] = {{"a", "h"}};
    cons["args"]["a"] = "xd";
    j["program"]["phases"] = {
        {{"name", "preload"}, {"steps", {{{"loop", "l"}, {"range", "L"}, {"steps", {cons}}}}}},
        {{"name", "run"}, {"steps", {{{"loop", "l"}, {"range", "L"}, {"steps", {pre, later}}}}}}};
  });
  auto f = of(l, "alias-conflict");
  ASSERT_EQ(f.size(), 2u) << dump(l);  // one per layer's key
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].call, 4);
  EXPECT_EQ(f[0].slot, 0);
  EXPECT_EQ(f[0].message,
            "shared_alias 'h' on slot a is ignored: bo_key 'cons_L0' set up its BOs at call 1 "
            "without it (key:cons_L0/0), and the real engine looks pools up only at a key's "
            "first call");
}

// Stay-silent twin: the same alias given from the key's first call on.
TEST(LintAliasConflict, AliasFromTheKeysFirstCallIsKept) {
  auto l = lint([](ojson& j) {
    j["dims"]["E"] = 12;  // the consumer's input is as large as the producer's output
    ojson pre = j[ptr(kCall)];
    pre["shared_alias"] = {{"out", "h"}};
    pre["params"]["n"] = 1;
    pre["args"]["a"] = "xd";
    pre["keep"] = {{"out", "yd"}};
    ojson cons = {{"call", "proj"},
                  {"params", {{"n", 1}}},
                  {"args", {{"b", "w[l]"}}},
                  {"static_input_indices", {"b"}},
                  {"intermediate_indices", {"a", "out"}},
                  {"shared_alias", {{"a", "h"}}},
                  {"bo_key", "cons_L{l}"},
                  {"keep", {{"out", "yd"}}}};
    j["program"]["phases"] = {
        {{"name", "run"},
         {"repeat", 2},
         {"var", "t"},
         {"steps", {{{"loop", "l"}, {"range", "L"}, {"steps", {pre, cons}}}}}}};
  });
  expect_silent(l, "alias-conflict");
  expect_silent(l, "size-mismatch");
}

// --- alias-conflict

TEST(LintConfigError, AliasOnStaticSlotRaisesInRealEngine) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/shared_alias")] = {{"b", "wpool"}}; });
  ASSERT_TRUE(l.error.empty()) << l.error;
  auto f = of(l, "config-error");
  ASSERT_EQ(f.size(), 2u) << dump(l);  // one per layer key
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_EQ(f[0].slot_name, "b");
  EXPECT_EQ(f[0].severity, Severity::error);
  EXPECT_EQ(f[0].path, kCall + "/shared_alias");
  EXPECT_EQ(f[0].message,
            "static slot b is aliased to pool 'wpool'; the real engine raises ValueError here (an "
            "alias would share one layer's weights across every bo_key)");
  EXPECT_EQ(f[1].call, 2);
  // Not a conflict any more (the engine never gets that far), and not a declaration that stops
  // `check` from running the plan.
  EXPECT_TRUE(of(l, "alias-conflict").empty()) << dump(l);
  EXPECT_FALSE(l.inconsistent);
}

TEST(LintConfigError, AliasByIndexOnStaticSlotRaisesInRealEngine) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/shared_alias")] = {{"1", "wpool"}}; });
  auto f = of(l, "config-error");
  ASSERT_EQ(f.size(), 2u) << dump(l);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_EQ(f[0].path, kCall + "/shared_alias");
  EXPECT_NE(f[0].message.find("the real engine raises ValueError here"), std::string::npos)
      << f[0].message;
  EXPECT_TRUE(of(l, "alias-conflict").empty()) << dump(l);
}

TEST(LintConfigError, AliasOnNonStaticSlotIsNoConfigError) {
  // The twin: the same pool on the intermediate output.
  auto l = lint([](ojson& j) { j[ptr(kCall + "/shared_alias")] = {{"out", "wpool"}}; });
  expect_silent(l, "config-error");
}

TEST(LintAliasConflict, TwoSlotsOfOneCallOnOnePool) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/shared_alias")] = {{"a", "h"}, {"out", "h"}}; });
  auto f = of(l, "alias-conflict");
  ASSERT_FALSE(f.empty()) << dump(l);
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, 2);
  EXPECT_NE(f[0].message.find("slots 0 and 2 of one call share alias pool 'h'"), std::string::npos)
      << f[0].message;
}

TEST(LintAliasConflict, CleanTwinAliasOnOutput) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/shared_alias")] = {{"out", "h"}}; });
  expect_silent(l, "alias-conflict");
}

// --- placeholder-upload

TEST(LintPlaceholderUpload, PlaceholderOnFirstCallOfKey) {
  auto l = lint([](ojson& j) { j[ptr(kCall + "/args/b")] = {{"placeholder", "w[l]"}}; });
  auto f = of(l, "placeholder-upload");
  ASSERT_EQ(f.size(), 2u) << dump(l);
  EXPECT_EQ(f[0].call, 1);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_EQ(f[0].slot_name, "b");
  EXPECT_EQ(f[0].key_first_call, 1);
  EXPECT_TRUE(f[0].first_call_of_key);
  EXPECT_NE(f[0].message.find("on the first call of bo_key 'proj_L0'"), std::string::npos)
      << f[0].message;
}

TEST(LintPlaceholderUpload, PlaceholderInNonStaticSlot) {
  // The decode phase reuses the prefill keys (same shapes) but forgets b is static.
  auto l = lint([](ojson& j) {
    ojson ph = decode_phase("proj", "proj_L{l}");
    ojson& c = ph["steps"][0]["steps"][0];
    c["params"]["n"] = "S";
    c["args"] = {{"a", "x"}, {"b", {{"placeholder", "w[l]"}}}};
    c["keep"]["out"] = "y";
    c["static_input_indices"] = ojson::array();
    j["program"]["phases"].push_back(ph);
  });
  auto f = of(l, "placeholder-upload");
  ASSERT_FALSE(f.empty()) << dump(l);
  EXPECT_EQ(f[0].call, 3);
  EXPECT_EQ(f[0].slot, 1);
  EXPECT_EQ(f[0].key_first_call, 1);
  EXPECT_NE(f[0].message.find("not static"), std::string::npos) << f[0].message;
}

TEST(LintPlaceholderUpload, CleanTwinPreloadedKey) {
  // Prefill preloads every key with the real weights; decode passes placeholders on the same
  // keys and skips them as static.
  auto l = lint([](ojson& j) {
    ojson ph = decode_phase("proj", "proj_L{l}");
    ojson& c = ph["steps"][0]["steps"][0];
    c["params"]["n"] = "S";
    c["args"] = {{"a", "x"}, {"b", {{"placeholder", "w[l]"}}}};
    c["keep"]["out"] = "y";
    j["program"]["phases"].push_back(ph);
  });
  expect_silent(l, "placeholder-upload");
}

// --- through the lint command, on a model file

struct TempModel {
  fs::path dir;
  std::string path;
  explicit TempModel(const ojson& j) {
    dir = fs::temp_directory_path() /
          ("bod_lint_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(dir);
    path = (dir / "model.json").string();
    std::ofstream(path) << j.dump(2);
  }
  ~TempModel() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

TEST(LintCommand, KeyCollisionExitsOne) {
  ojson j = ojson::parse(kBase);
  j[ptr(kCall + "/bo_key")] = "proj";
  TempModel t(j);
  CommandOptions o;
  o.model = t.path;
  o.format = "json";
  CommandResult r = cmd_lint(o);
  EXPECT_EQ(r.code, Exit::findings) << r.err;
  auto rep = nlohmann::json::parse(r.out);
  EXPECT_EQ(rep["summary"]["verdict"], "fail");
  bool found = false;
  for (auto& f : rep["findings"])
    if (f["check"] == "key-collision") {
      found = true;
      EXPECT_EQ(f["call"], 2);
      EXPECT_EQ(f["bo_key"], "proj");
      EXPECT_EQ(f["kernel"], "proj");
    }
  EXPECT_TRUE(found) << r.out;
}

TEST(LintCommand, CleanModelExitsZero) {
  TempModel t(ojson::parse(kBase));
  CommandOptions o;
  o.model = t.path;
  CommandResult r = cmd_lint(o);
  EXPECT_EQ(r.code, Exit::ok) << r.err << r.out;
  EXPECT_TRUE(r.err.empty());
}

TEST(LintCommand, BadModelExitsTwoWithPath) {
  ojson j = ojson::parse(kBase);
  j[ptr(kCall + "/args/b")] = "nope[l]";
  TempModel t(j);
  CommandOptions o;
  o.model = t.path;
  CommandResult r = cmd_lint(o);
  EXPECT_EQ(r.code, Exit::bad_input);
  EXPECT_EQ(r.err.rfind(t.path + ":" + kCall + "/args/b: ", 0), 0u) << r.err;
}

}  // namespace
}  // namespace bod
