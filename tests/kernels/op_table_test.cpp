// The op table, param defaults, rows_written and check_op_shapes messages.
#include <set>

#include "kernels/ops_test_util.h"

namespace bod::test {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(OpTable, ListsEveryOpOnceWithOutAndRows) {
  const std::vector<std::string> want{"gemm",     "gemv", "rmsnorm", "layernorm", "rope",
                                      "silu_mul", "add",  "softmax", "attention", "embedding",
                                      "copy",     "cast", "fill"};
  std::set<std::string> seen;
  for (const auto& op : op_table()) {
    EXPECT_TRUE(seen.insert(op.name).second) << op.name;
    EXPECT_GT(std::string(op.summary).size(), 10u) << op.name;
    bool out = false, rows = false;
    for (const auto& o : op.operands)
      out = out || (std::string(o.role) == "out" && o.access == Access::write && o.required);
    for (const auto& p : op.params) {
      EXPECT_GT(std::string(p.help).size(), 3u) << op.name << "." << p.name;
      rows = rows || (std::string(p.name) == "rows" && p.default_value == -1 && !p.required);
    }
    EXPECT_TRUE(out && rows) << op.name;
  }
  EXPECT_EQ(seen, std::set<std::string>(want.begin(), want.end()));
  for (const auto& n : want) ASSERT_NE(find_op(n), nullptr) << n;
  EXPECT_EQ(find_op("matmul"), nullptr);
  EXPECT_EQ(find_op(""), nullptr);
  EXPECT_EQ(op_names().rfind("gemm, gemv, rmsnorm, ", 0), 0u) << op_names();
  EXPECT_TRUE(contains(op_names(), ", fill"));
}

TEST(OpTable, ParamDefaultsAndRowsWritten) {
  HostTensor x(DType::f32, {2, 5, 8}), w(DType::f32, {8}), out(DType::f32, {2, 5, 8});
  OpCall c = make_call("rmsnorm", {{"x", x.ref}, {"weight", w.ref}, {"out", out.ref}});
  EXPECT_DOUBLE_EQ(c.param("eps"), 1e-5);
  EXPECT_EQ(c.param("rows"), -1);
  EXPECT_EQ(rows_written(c), 10);
  c.params["rows"] = 3;
  EXPECT_EQ(rows_written(c), 3);
  c.params["rows"] = 0;
  EXPECT_EQ(rows_written(c), 0);
  c.params["rows"] = 99;
  EXPECT_EQ(rows_written(c), 10);
  c.params["eps"] = 0.5;
  EXPECT_EQ(c.param("eps"), 0.5);
  EXPECT_THROW(c.param("nonexistent"), std::logic_error);
  OpCall a = make_call("attention", {});
  EXPECT_EQ(a.param("causal"), 1);
  EXPECT_EQ(rows_written(a), 0);  // no out bound: nothing written
}

TEST(OpTable, RowsParamLeavesLaterRowsUntouched) {
  HostTensor out(DType::bf16, {4, 3});
  out.fill(kSentinel);
  run_checked(make_call("fill", {{"out", out.ref}}, {{"value", 2}, {"rows", 1}}));
  EXPECT_EQ(out.vals(), (std::vector<float>{2, 2, 2, 7.25f, 7.25f, 7.25f, 7.25f, 7.25f, 7.25f,
                                            7.25f, 7.25f, 7.25f}));
}

struct OpShapes : ::testing::Test {
  std::vector<std::unique_ptr<HostTensor>> keep;
  TensorRef t(Shape s, DType dt = DType::f32) {
    keep.push_back(std::make_unique<HostTensor>(dt, std::move(s)));
    return keep.back()->ref;
  }
  std::string check(const char* op, std::map<std::string, TensorRef> ops,
                    std::map<std::string, double> params = {}) {
    return check_op_shapes(make_call(op, std::move(ops), std::move(params)));
  }
};

TEST_F(OpShapes, Gemm) {
  EXPECT_EQ(check("gemm", {{"a", t({16, 48})}, {"b", t({48, 64})}, {"out", t({16, 64})}}), "");
  EXPECT_EQ(check("gemm", {{"a", t({16, 48})}, {"b", t({32, 64})}, {"out", t({16, 64})}}),
            "gemm: b is [32,64] but a has 48 columns; expected b rows == 48 (b is [K,N])");
  EXPECT_EQ(check("gemm", {{"a", t({16, 48})}, {"b", t({64, 48})}, {"out", t({16, 64})}},
                  {{"transpose_b", 1}}),
            "");
  const auto e = check("gemm", {{"a", t({16, 48})}, {"b", t({48, 64})}, {"out", t({16, 64})}},
                       {{"transpose_b", 1}});
  EXPECT_TRUE(contains(e, "b is [48,64]") && contains(e, "expected b columns == 48")) << e;
  const auto o = check("gemm", {{"a", t({16, 48})}, {"b", t({48, 64})}, {"out", t({16, 32})}});
  EXPECT_TRUE(contains(o, "out is [16,32]") && contains(o, "expected out [16,64]")) << o;
  const auto b =
      check("gemv", {{"a", t({1, 8})}, {"b", t({8, 4})}, {"bias", t({5})}, {"out", t({1, 4})}});
  EXPECT_TRUE(contains(b, "gemv: bias is [5]") && contains(b, "expected 4 elements")) << b;
}

TEST_F(OpShapes, DtypesAndMissingOperands) {
  const auto e =
      check("rmsnorm", {{"x", t({2, 8}, DType::i32)}, {"weight", t({8})}, {"out", t({2, 8})}});
  EXPECT_EQ(e, "rmsnorm: x is i32 [2,8]; expected bf16 or f32");
  const auto ids =
      check("embedding", {{"table", t({10, 4})}, {"ids", t({3}, DType::f32)}, {"out", t({3, 4})}});
  EXPECT_EQ(ids, "embedding: ids is f32 [3]; expected i32");
  EXPECT_EQ(
      check("embedding",
            {{"table", t({10, 4})}, {"ids", t({3}, DType::i32)}, {"out", t({3, 4}, DType::bf16)}}),
      "");
  const auto m = check("gemm", {{"a", t({2, 2})}, {"out", t({2, 2})}});
  EXPECT_TRUE(contains(m, "gemm: missing required operand b")) << m;
  EXPECT_TRUE(contains(check("add", {{"a", t({2})}, {"b", t({2})}, {"out", t({2})}, {"c", t({2})}}),
                       "unknown operand c"));
  EXPECT_EQ(check("cast", {{"src", t({6}, DType::i32)}, {"out", t({2, 3}, DType::bf16)}}), "");
  EXPECT_TRUE(contains(check("copy", {{"src", t({6})}, {"out", t({2, 4})}}),
                       "out is [2,4] but src is [6]"));
}

TEST_F(OpShapes, NormsRopeElementwise) {
  const auto w = check("rmsnorm", {{"x", t({2, 8})}, {"weight", t({1, 7})}, {"out", t({2, 8})}});
  EXPECT_EQ(w, "rmsnorm: weight is [1,7] but x has 8 columns; expected 8 elements");
  EXPECT_EQ(check("rmsnorm", {{"x", t({2, 8})}, {"weight", t({1, 8})}, {"out", t({1, 2, 8})}}), "");
  EXPECT_TRUE(
      contains(check("layernorm",
                     {{"x", t({2, 8})}, {"weight", t({8})}, {"bias", t({4})}, {"out", t({2, 8})}}),
               "bias is [4]"));
  const auto r = check("rope", {{"x", t({3, 24})}, {"lut", t({3, 16})}, {"out", t({3, 24})}},
                       {{"head_dim", 16}});
  EXPECT_TRUE(contains(r, "x is [3,24] but head_dim is 16") && contains(r, "multiple")) << r;
  const auto l = check("rope", {{"x", t({3, 32})}, {"lut", t({1, 16})}, {"out", t({3, 32})}},
                       {{"head_dim", 16}});
  EXPECT_TRUE(contains(l, "lut is [1,16]") && contains(l, "expected lut [3,16]")) << l;
  EXPECT_TRUE(contains(check("rope", {{"x", t({3, 32})}, {"lut", t({3, 16})}, {"out", t({3, 32})}}),
                       "head_dim is 0"));
  EXPECT_TRUE(
      contains(check("silu_mul", {{"gate", t({2, 8})}, {"up", t({8, 2})}, {"out", t({2, 8})}}),
               "up is [8,2] but gate is [2,8]"));
  EXPECT_EQ(check("add", {{"a", t({2, 8})}, {"b", t({16})}, {"out", t({4, 4})}}), "");
  EXPECT_TRUE(contains(check("add", {{"a", t({2, 8})}, {"b", t({15})}, {"out", t({2, 8})}}),
                       "b is [15] but a is [2,8]"));
  EXPECT_TRUE(contains(check("softmax", {{"x", t({2, 8})}, {"out", t({2, 9})}}), "out is [2,9]"));
}

TEST_F(OpShapes, AttentionAndEmbedding) {
  auto att = [&](Shape q, Shape k, Shape v, double H, double KH, double D, DType len = DType::i32) {
    return check("attention",
                 {{"q", t(q)}, {"k", t(k)}, {"v", t(v)}, {"kv_len", t({1}, len)}, {"out", t(q)}},
                 {{"heads", H}, {"kv_heads", KH}, {"head_dim", D}});
  };
  EXPECT_EQ(att({4, 64}, {8, 32}, {8, 32}, 4, 2, 16), "");
  EXPECT_EQ(att({4, 64}, {8, 48}, {8, 48}, 4, 3, 16),
            "attention: heads is 4 and kv_heads is 3; expected heads to be a multiple of kv_heads");
  EXPECT_TRUE(contains(att({4, 60}, {8, 32}, {8, 32}, 4, 2, 16), "q is [4,60]"));
  EXPECT_TRUE(contains(att({4, 64}, {8, 16}, {8, 16}, 4, 2, 16), "k is [8,16]"));
  EXPECT_TRUE(contains(att({4, 64}, {8, 32}, {7, 32}, 4, 2, 16), "v is [7,32] but k is [8,32]"));
  EXPECT_TRUE(contains(att({9, 64}, {8, 32}, {8, 32}, 4, 2, 16), "expected q rows <= k rows"));
  EXPECT_TRUE(contains(att({4, 64}, {8, 32}, {8, 32}, 4, 0, 16), "kv_heads is 0"));
  EXPECT_EQ(att({4, 64}, {8, 32}, {8, 32}, 4, 2, 16, DType::f32),
            "attention: kv_len is f32 [1]; expected i32");
  const auto e =
      check("embedding", {{"table", t({10, 4})}, {"ids", t({3}, DType::i32)}, {"out", t({2, 4})}});
  EXPECT_TRUE(contains(e, "out is [2,4] but ids is [3]") && contains(e, "expected out [3,4]")) << e;
}

}  // namespace
}  // namespace bod::test
