// model.json loading and expansion: a table of invalid models (one mutation each of a small
// valid base model), each of which must fail with exit 2, the JSON pointer of the offending
// value and a message that says what was wrong; plus round trips of the llama-tiny fixture.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model.h"
#include "plan/plan.h"
#include "runner/host_data.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using ptr = nlohmann::ordered_json::json_pointer;

// A compact valid model: two kernels, a prefill phase (one call) and a decode phase repeated
// twice with a loop over the layers (two calls per layer). E != N so transposed shapes differ.
const char* kBase = R"({
  "format": "bo-doctor-model",
  "version": 1,
  "name": "base",
  "seed": 7,
  "dims": {"L": 2, "S": 4, "E": 8, "N": 12},
  "tensors": {
    "w": {"dtype": "bf16", "shape": ["L", "E", "N"], "init": {"normal": {"std": 0.1}}},
    "norm": {"dtype": "bf16", "shape": ["L", "E"], "init": 1.0}
  },
  "vars": {
    "x": {"dtype": "bf16", "shape": ["S", "E"], "init": {"normal": {}}},
    "y": {"dtype": "bf16", "shape": ["S", "N"]}
  },
  "kernels": {
    "norm_k": {
      "params": ["n"],
      "slots": [
        {"name": "x", "shape": ["n", "E"]},
        {"name": "w", "shape": ["E"]},
        {"name": "out", "shape": ["n", "E"]}
      ],
      "body": [{"op": "rmsnorm", "x": "x", "weight": "w", "out": "out"}]
    },
    "proj": {
      "params": ["n"],
      "slots": [
        {"name": "a", "shape": ["n", "E"]},
        {"name": "b", "shape": ["E", "N"]},
        {"name": "out", "dtype": "bf16", "shape": ["n", "N"]}
      ],
      "body": [{"op": "gemm", "a": "a", "b": "b", "out": "out"}]
    }
  },
  "program": {
    "phases": [
      {"name": "prefill", "steps": [
        {"call": "norm_k", "params": {"n": "S"}, "args": {"x": "x", "w": "norm[0]"},
         "static_input_indices": ["w"], "bo_key": "norm_pre", "keep": {"out": "x"}}
      ]},
      {"name": "decode", "repeat": 2, "var": "t", "steps": [
        {"loop": "l", "range": "L", "steps": [
          {"call": "norm_k", "params": {"n": "S"}, "args": {"x": "x", "w": "norm[l]"},
           "static_input_indices": ["w"], "bo_key": "norm_L{l}", "keep": {"out": "x"}},
          {"call": "proj", "params": {"n": "S"}, "args": {"a": "x", "b": "w[l]"},
           "static_input_indices": ["b"], "intermediate_indices": ["out"],
           "bo_key": "proj_L{l}", "keep": {"out": "y"}}
        ]}
      ]}
    ]
  },
  "verify": {"outputs": {"y": {"cosine": 0.99}}, "top_k": 5}
})";

const char* kModelPath = "mem/model.json";
const std::string kProj = "/program/phases/1/steps/0/steps/1";  // the proj call in the loop
const std::string kNormDec = "/program/phases/1/steps/0/steps/0";
const std::string kNormPre = "/program/phases/0/steps/0";

ojson base() {
  return ojson::parse(kBase);
}

// Where a case fails: parsing, expansion, or loading the host data.
enum class Stage { parse, expand, host_data };

struct Case {
  const char* name;
  std::function<std::string()> text;  // the mutated model.json
  Stage stage;
  std::string where;     // expected Error.where
  std::string fragment;  // expected part of Error.what
  size_t max_bytes = size_t(16) << 30;
};

// Helpers building the mutated text.
std::function<std::string()> set(const std::string& p, ojson v) {
  return [p, v] {
    ojson j = base();
    j[ptr(p)] = v;
    return j.dump(2);
  };
}
std::function<std::string()> erase(const std::string& p) {
  return [p] {
    ojson j = base();
    ptr pp(p);
    j[pp.parent_pointer()].erase(pp.back());
    return j.dump(2);
  };
}
std::function<std::string()> edit(std::function<void(ojson&)> f) {
  return [f] {
    ojson j = base();
    f(j);
    return j.dump(2);
  };
}
std::function<std::string()> raw(std::string s) {
  return [s] { return s; };
}

// A temp dir for weight files, shared by the file cases; removed at exit.
const fs::path& tmp_dir() {
  struct Dir {
    fs::path p = fs::temp_directory_path() / ("bod_loader_test_" + std::to_string(::getpid()));
    Dir() { fs::create_directories(p); }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  };
  static Dir d;
  return d.p;
}

std::string write_file(const std::string& name, size_t bytes) {
  fs::path p = tmp_dir() / name;
  std::ofstream f(p, std::ios::binary);
  std::string zeros(bytes, '\0');
  f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  return p.string();
}

Error run_case(const Case& c) {
  auto m = parse_model(c.text(), kModelPath);
  if (c.stage == Stage::parse) {
    if (m) return Error{"<no error>", "the model parsed"};
    return m.error();
  }
  if (!m) return Error{"<parse failed>", m.error().line()};
  ExpandOptions eo;
  eo.max_bytes = c.max_bytes;
  auto p = expand(m.value(), eo);
  if (c.stage == Stage::expand) {
    if (p) return Error{"<no error>", "the model expanded"};
    return p.error();
  }
  if (!p) return Error{"<expand failed>", p.error().line()};
  auto h = HostData::load(m.value());
  if (h) return Error{"<no error>", "the host data loaded"};
  return h.error();
}

std::vector<Case> cases() {
  const std::string truncated = std::string(kBase).substr(0, std::string(kBase).size() / 2);
  const std::string missing_bin = (tmp_dir() / "missing.bin").string();
  // w is L*E*N bf16 = 2*8*12*2 = 384 bytes; the truncated file has 100.
  const std::string short_bin = write_file("short.bin", 100);
  return {
      // --- JSON syntax and top level
      {"malformed_json", raw("{\n  \"format\": \"bo-doctor-model\",\n  \"version\": 1,,\n}"),
       Stage::parse, kModelPath, "malformed JSON at line 3, column 16"},
      {"truncated_json", raw(truncated), Stage::parse, kModelPath, "unexpected end of input"},
      {"top_level_array", raw("[1, 2]"), Stage::parse, "/", "expected an object, found an array"},
      {"missing_format", erase("/format"), Stage::parse, "/format", "bo-doctor-model"},
      {"unknown_format", set("/format", "onnx"), Stage::parse, "/format", "bo-doctor-model"},
      {"unknown_version", set("/version", 2), Stage::parse, "/version",
       "unsupported format version 2"},
      {"version_as_string", set("/version", "1"), Stage::parse, "/version",
       "unsupported format version \"1\""},
      {"unknown_top_level_field", set("/kernals", ojson::object()), Stage::parse, "/kernals",
       "unknown field 'kernals'"},
      {"missing_kernels", erase("/kernels"), Stage::parse, "/kernels", "at least one kernel"},
      // --- wrong types
      {"seed_as_string", set("/seed", "7"), Stage::parse, "/seed",
       "expected a non-negative integer, found a string \"7\""},
      {"dim_as_bool", set("/dims/S", true), Stage::parse, "/dims/S",
       "expected an integer or an expression string, found a boolean"},
      {"top_k_as_string", set("/verify/top_k", "5"), Stage::parse, "/verify/top_k",
       "expected a number, found a string"},
      {"cosine_as_string", set("/verify/outputs/y/cosine", "high"), Stage::parse,
       "/verify/outputs/y/cosine", "expected a number"},
      {"shared_nonstatic_as_string", set(kProj + "/shared_nonstatic", "yes"), Stage::parse,
       kProj + "/shared_nonstatic", "expected true or false, found a string \"yes\""},
      {"binding_as_number", set(kProj + "/args/a", 5), Stage::parse, kProj + "/args/a",
       "expected a string, found a number 5"},
      {"static_indices_not_array", set(kProj + "/static_input_indices", "b"), Stage::parse,
       kProj + "/static_input_indices", "expected an array"},
      {"slot_ref_as_bool", set(kProj + "/intermediate_indices/0", true), Stage::parse,
       kProj + "/intermediate_indices/0", "expected a slot index or slot name"},
      // --- ops, dtypes, shapes and dims
      {"unknown_op", set("/kernels/proj/body/0/op", "gemmm"), Stage::parse,
       "/kernels/proj/body/0/op", "unknown op 'gemmm'"},
      {"unknown_slot_dtype", set("/kernels/proj/slots/2/dtype", "f16"), Stage::parse,
       "/kernels/proj/slots/2/dtype", "unknown dtype 'f16'"},
      {"unknown_tensor_dtype", set("/tensors/w/dtype", "fp8"), Stage::parse, "/tensors/w/dtype",
       "unknown dtype 'fp8'"},
      {"unknown_dim_in_tensor_shape", set("/tensors/w/shape/2", "M"), Stage::parse,
       "/tensors/w/shape/2", "unknown name 'M'"},
      {"unknown_dim_in_slot_shape", set("/kernels/proj/slots/1/shape/0", "EE"), Stage::parse,
       "/kernels/proj/slots/1/shape/0", "unknown name 'EE'"},
      {"shape_expr_syntax", set("/tensors/w/shape/1", "E*"), Stage::parse, "/tensors/w/shape/1",
       "bad expression 'E*'"},
      {"negative_dim", set("/dims/S", -4), Stage::parse, "/dims/S", "expected a positive integer"},
      {"zero_dim", set("/dims/E", 0), Stage::parse, "/dims/E", "expected a positive integer"},
      {"non_integer_dim", set("/dims/S", 2.5), Stage::parse, "/dims/S", "expected an integer"},
      {"negative_shape_entry", set("/tensors/norm/shape/1", "E-9"), Stage::parse,
       "/tensors/norm/shape/1", "expected a positive size"},
      {"absurd_size", edit([](ojson& j) {
         j["dims"]["BIG"] = 1000000000000LL;
         j["tensors"]["huge"] = {{"shape", {"BIG", 2}}, {"init", 0}};
       }),
       Stage::parse, "/tensors/huge/shape", "more than 2^40 elements"},
      {"duplicate_slot_name", set("/kernels/proj/slots/1/name", "a"), Stage::parse,
       "/kernels/proj/slots/1/name", "duplicate slot name 'a'"},
      {"body_unknown_slot", set("/kernels/proj/body/0/b", "bb"), Stage::parse,
       "/kernels/proj/body/0/b", "unknown slot 'bb'"},
      // --- bindings, slots and scopes in calls
      {"unknown_tensor_in_binding", set(kProj + "/args/b", "wx[l]"), Stage::parse,
       kProj + "/args/b", "unknown tensor or var 'wx'"},
      {"unknown_var_in_keep", set(kProj + "/keep/out", "yy"), Stage::parse, kProj + "/keep/out",
       "unknown tensor or var 'yy'"},
      {"unknown_slot_in_args", edit([](ojson& j) { j[ptr(kProj + "/args")]["bb"] = "x"; }),
       Stage::parse, kProj + "/args/bb", "unknown slot 'bb' in kernel proj"},
      {"unknown_slot_in_static_indices",
       set(kProj + "/static_input_indices", ojson::array({"b", "a", "nope"})), Stage::parse,
       kProj + "/static_input_indices/2", "unknown slot 'nope' in kernel proj"},
      {"unknown_slot_in_keep", edit([](ojson& j) { j[ptr(kProj + "/keep")]["outt"] = "y"; }),
       Stage::parse, kProj + "/keep/outt", "unknown slot 'outt'"},
      {"loop_var_out_of_scope", set(kNormPre + "/args/w", "norm[l]"), Stage::parse,
       kNormPre + "/args/w", "unknown name 'l'"},
      {"loop_var_out_of_scope_in_bo_key", set(kNormPre + "/bo_key", "norm_L{l}"), Stage::parse,
       kNormPre + "/bo_key", "unknown name 'l'"},
      {"unbalanced_bo_key", set(kProj + "/bo_key", "proj_L{l"), Stage::parse, kProj + "/bo_key",
       "unclosed '{'"},
      {"typo_field", edit([](ojson& j) {
         ojson& c = j[ptr(kProj)];
         c["static_input_index"] = c["static_input_indices"];
         c.erase("static_input_indices");
       }),
       Stage::parse, kProj + "/static_input_index", "unknown field 'static_input_index'"},
      {"placeholder_for_var", set(kProj + "/args/a", {{"placeholder", "x"}}), Stage::parse,
       kProj + "/args/a", "'x' is a var"},
      {"too_many_indices", set(kProj + "/args/b", "w[l][0][0]"), Stage::parse, kProj + "/args/b",
       "expected fewer indices than dims"},
      {"keep_into_tensor", set(kProj + "/keep/out", "norm"), Stage::parse, kProj + "/keep/out",
       "outputs are kept in vars"},
      {"unknown_kernel", set(kProj + "/call", "projj"), Stage::parse, kProj + "/call",
       "unknown kernel 'projj'"},
      {"missing_kernel_param", erase(kProj + "/params"), Stage::parse, kProj,
       "missing value for kernel param 'n'"},
      {"unknown_kernel_param", set(kProj + "/params/m", 3), Stage::parse, kProj + "/params/m",
       "kernel proj has no param 'm'"},
      {"loop_var_shadows_dim", set("/program/phases/1/steps/0/loop", "S"), Stage::parse,
       "/program/phases/1/steps/0/loop", "shadows a dim"},
      {"step_without_kind", set("/program/phases/1/steps/0/steps/1", {{"doc", "nothing"}}),
       Stage::parse, kProj, "expected a step with 'call', 'host' or 'loop'"},
      {"unknown_host_step", edit([](ojson& j) {
         j["program"]["phases"][0]["steps"].push_back({{"host", "frobnicate"}, {"out", "x"}});
       }),
       Stage::parse, "/program/phases/0/steps/1/host", "unknown host step 'frobnicate'"},
      {"repeat_without_var", erase("/program/phases/1/var"), Stage::parse, "/program/phases/1",
       "needs 'var'"},
      // --- surfaced by expand()
      {"gemm_operand_shape_mismatch", set("/kernels/proj/slots/1/shape", {"N", "E"}), Stage::expand,
       "/kernels/proj/body/0", "(slot shapes of call 3)"},
      {"binding_index_out_of_range", set(kProj + "/args/b", "w[l+1]"), Stage::expand,
       kProj + "/args/b", "index 2 of 'w[2]' is out of range"},
      {"bound_array_wrong_size", set(kProj + "/args/a", "y"), Stage::expand, kProj + "/args/a",
       "expected the same element count and dtype"},
      {"keep_non_output_slot", edit([](ojson& j) { j[ptr(kNormDec + "/keep")]["w"] = "y"; }),
       Stage::expand, kNormDec + "/keep/w", "not in output_indices"},
      {"memory_cap", raw(kBase), Stage::expand, "/program", "over the memory cap", 1000},
      // --- surfaced when the host data is loaded
      {"missing_weight_file", edit([missing_bin](ojson& j) {
         j["tensors"]["w"].erase("init");
         j["tensors"]["w"]["file"] = missing_bin;
       }),
       Stage::host_data, missing_bin, "cannot open"},
      {"truncated_weight_file", edit([short_bin](ojson& j) {
         j["tensors"]["w"].erase("init");
         j["tensors"]["w"]["file"] = short_bin;
       }),
       Stage::host_data, short_bin, "truncated"},
  };
}

class InvalidModel : public ::testing::TestWithParam<Case> {};

TEST_P(InvalidModel, ReportsPathAndMessage) {
  const Case& c = GetParam();
  Error e = run_case(c);
  if (std::getenv("BOD_TEST_SHOW_ERRORS")) std::printf("%-36s %s\n", c.name, e.line().c_str());
  EXPECT_EQ(e.code, Exit::bad_input) << e.line();
  EXPECT_EQ(static_cast<int>(e.code), 2);
  EXPECT_EQ(e.where, c.where) << e.line();
  EXPECT_NE(e.what.find(c.fragment), std::string::npos)
      << "message: " << e.what << "\nexpected to contain: " << c.fragment;
}

INSTANTIATE_TEST_SUITE_P(Table, InvalidModel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(Loader, BaseModelIsValid) {
  auto m = parse_model(kBase, kModelPath);
  ASSERT_TRUE(m) << m.error().line();
  auto p = expand(m.value());
  ASSERT_TRUE(p) << p.error().line();
  EXPECT_EQ(p->calls.size(), 1u + 2 * 2 * 2);
  EXPECT_EQ(p->calls[2].key.bo_key, "proj_L0");
  EXPECT_EQ(p->calls[4].key.bo_key, "proj_L1");
  EXPECT_EQ(p->calls[4].args[1].text, "w[1]");
  EXPECT_EQ(p->calls[4].where.str(), "decode t=0 l=1");
  EXPECT_TRUE(HostData::load(m.value()));
}

// Duplicate keys are accepted silently and the last one wins (nlohmann's default), although
// the loader refuses unknown fields so that typos do not pass silently. A model with
// "bo_key": "o_ffn_L{l}", "bo_key": "o_ffn" in one call loads with "o_ffn". Enable when the
// loader refuses duplicates (e.g. with a parser callback that tracks the keys of each object).
TEST(Loader, DuplicateKeysRefused) {
  std::string text = ojson::parse(kBase).dump();
  const std::string key = "\"bo_key\":\"proj_L{l}\"";
  ASSERT_NE(text.find(key), std::string::npos);
  text.replace(text.find(key), key.size(), key + ",\"bo_key\":\"proj\"");
  auto m = parse_model(text, kModelPath);
  ASSERT_FALSE(m) << "loaded with bo_key "
                  << *std::get<CallDecl>(std::get<LoopDecl>(m->phases[1].steps[0]).steps[1]).bo_key;
  EXPECT_EQ(m.error().where, kProj + "/bo_key");
}

TEST(Loader, WeightFileErrorNamesTheTensor) {
  ojson j = base();
  j["tensors"]["w"].erase("init");
  std::string f = write_file("short2.bin", 10);
  j["tensors"]["w"]["file"] = f;
  auto m = parse_model(j.dump(), kModelPath);
  ASSERT_TRUE(m) << m.error().line();
  auto st = HostData::validate_files(m.value());
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().where, f);
  EXPECT_NE(st.error().what.find("tensor w at /tensors/w"), std::string::npos) << st.error().what;
}

TEST(Loader, RelativeWeightFileResolvesAgainstModelDir) {
  ojson j = base();
  j["tensors"]["w"].erase("init");
  j["tensors"]["w"]["file"] = "w.bin";
  auto m = parse_model(j.dump(), "/some/dir/model.json");
  ASSERT_TRUE(m) << m.error().line();
  EXPECT_EQ(m->tensor("w")->file, "/some/dir/w.bin");
  EXPECT_EQ(m->tensor("w")->format, "bin");
}

TEST(Loader, MissingModelFileNamesThePath) {
  auto m = load_model("/nonexistent/dir/model.json");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, Exit::bad_input);
  EXPECT_EQ(m.error().where, "/nonexistent/dir/model.json");
}

// --- round trips of the llama-tiny fixture

class LlamaTiny : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = load_model(std::string(BOD_FIXTURES_DIR) + "/models/llama-tiny/model.json");
    ASSERT_TRUE(m) << m.error().line();
    model_ = new Model(std::move(m.value()));
    auto p = expand(*model_);
    ASSERT_TRUE(p) << p.error().line();
    plan_ = new Plan(std::move(p.value()));
  }
  static void TearDownTestSuite() {
    delete plan_;
    delete model_;
    plan_ = nullptr;
    model_ = nullptr;
  }
  static const PlanCall& call(int number) {
    return plan_->calls.at(static_cast<size_t>(number - 1));
  }
  static Model* model_;
  static Plan* plan_;
};
Model* LlamaTiny::model_ = nullptr;
Plan* LlamaTiny::plan_ = nullptr;

TEST_F(LlamaTiny, CallCounts) {
  ASSERT_NE(plan_, nullptr);
  EXPECT_EQ(model_->name, "llama-tiny");
  EXPECT_EQ(plan_->calls.size(), 144u);
  int prefill = 0, decode = 0;
  for (auto& c : plan_->calls) (c.where.phase == "prefill" ? prefill : decode)++;
  EXPECT_EQ(prefill, 16);  // 3 per layer * 4 + 4 LM head partitions
  EXPECT_EQ(decode, 128);  // 16 per token * 8 tokens
  for (size_t i = 0; i < plan_->calls.size(); ++i)
    EXPECT_EQ(plan_->calls[i].number, static_cast<int>(i) + 1);
  // Host steps interleave with calls in execution order.
  EXPECT_EQ(plan_->order.size(), plan_->calls.size() + plan_->hosts.size());
  ASSERT_FALSE(plan_->order.empty());
  EXPECT_FALSE(plan_->order.front().is_call);  // embedding first
}

TEST_F(LlamaTiny, BoKeysAndWhere) {
  ASSERT_NE(plan_, nullptr);
  EXPECT_EQ(call(1).key.bo_key, "rms_gemms_rope_L0");
  EXPECT_EQ(call(2).key.bo_key, "attention_L0");
  EXPECT_EQ(call(6).key.bo_key, "o_ffn_L1");
  EXPECT_EQ(call(13).key.bo_key, "lm_head_pre_p0");
  EXPECT_EQ(call(16).key.bo_key, "lm_head_pre_p3");
  EXPECT_EQ(call(17).key.bo_key, "rms_gemms_rope_dec_L0");
  EXPECT_EQ(call(33).key.bo_key, "rms_gemms_rope_dec_L0");  // token 1, layer 0
  EXPECT_EQ(call(144).key.bo_key, "lm_head_dec_p3");
  EXPECT_EQ(call(6).where.phase, "prefill");
  EXPECT_EQ(call(6).where.layer, 1);
  EXPECT_EQ(call(6).where.token, -1);
  EXPECT_EQ(call(13).where.layer, -1);  // the LM head loop runs over p, not the layer var
  EXPECT_EQ(call(33).where.str(), "decode t=1 l=0");
  EXPECT_EQ(call(6).where.path, "/program/phases/0/steps/3/steps/4");
  EXPECT_EQ(call(6).args[1].text, "wo[1]");
  EXPECT_EQ(call(6).args[1].kind, Binding::Kind::tensor);
  EXPECT_EQ(call(6).args[0].kind, Binding::Kind::var);
  EXPECT_EQ(call(14).args[1].text, "lm_head[1]");
}

TEST_F(LlamaTiny, SlotShapesAndBytes) {
  ASSERT_NE(plan_, nullptr);
  const PlanCall& pre = call(1);  // rms_gemms_rope, n = S = 16
  ASSERT_EQ(pre.kernel->name, "rms_gemms_rope");
  ASSERT_EQ(pre.slot_shapes.size(), 10u);
  EXPECT_EQ(pre.slot_shapes[0], (Shape{16, 64}));
  EXPECT_EQ(pre.slot_shapes[2], (Shape{64, 64}));
  EXPECT_EQ(pre.slot_shapes[5], (Shape{16, 16}));
  EXPECT_EQ(pre.slot_bytes[5], 16u * 16 * 4);  // f32 lut
  EXPECT_EQ(pre.slot_bytes[0], 16u * 64 * 2);  // bf16
  const PlanCall& dec = call(17);              // n = 1
  EXPECT_EQ(dec.slot_shapes[0], (Shape{1, 64}));
  EXPECT_EQ(dec.slot_shapes[9], (Shape{1, 64}));
  EXPECT_EQ(dec.env.at("n"), 1);
  EXPECT_EQ(dec.env.at("t"), 0);
  EXPECT_EQ(dec.env.at("l"), 0);
  EXPECT_EQ(call(2).env.at("m"), 24);  // attention m = SMAX
  EXPECT_EQ(call(2).slot_shapes[1], (Shape{24, 32}));
  EXPECT_GT(plan_->estimated_bytes, 0u);
}

std::vector<int> indices(const std::vector<SlotRef>& v) {
  std::vector<int> r;
  for (auto& s : v) r.push_back(s.index);
  return r;
}

TEST_F(LlamaTiny, IndexListsResolvedFromNames) {
  ASSERT_NE(plan_, nullptr);
  const PlanCall& c = call(1);
  EXPECT_EQ(indices(c.statics), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(indices(c.inters), (std::vector<int>{6, 7, 8, 9}));
  EXPECT_EQ(indices(c.outputs), (std::vector<int>{6, 7, 8}));
  EXPECT_TRUE(c.shared_nonstatic);
  EXPECT_EQ(c.statics[0].path, "/program/phases/0/steps/3/steps/0/static_input_indices/0");
  // attention: no output_indices -> the last slot; one keep
  const PlanCall& a = call(2);
  EXPECT_EQ(indices(a.outputs), (std::vector<int>{4}));
  EXPECT_EQ(indices(a.inters), (std::vector<int>{4}));
  ASSERT_EQ(a.keep.size(), 1u);
  EXPECT_EQ(a.keep[0].slot, 4);
  EXPECT_EQ(a.keep[0].target.text, "attn");
  EXPECT_TRUE(a.keep[0].view);
  // the decode rms_gemms_rope drops the per-token lut from the statics
  EXPECT_EQ(indices(call(17).statics), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_FALSE(call(17).shared_nonstatic);
  // lm_head keeps a copy into an indexed var
  const PlanCall& lm = call(15);
  ASSERT_EQ(lm.keep.size(), 1u);
  EXPECT_FALSE(lm.keep[0].view);
  EXPECT_EQ(lm.keep[0].target.text, "lg_pre[2]");
  EXPECT_EQ(lm.keep[0].target.index, (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace bod
