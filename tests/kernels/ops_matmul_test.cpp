// gemm/gemv and attention vs plain scalar implementations.
#include <chrono>

#include "kernels/ops_test_util.h"

namespace bod::test {
namespace {

using P = std::map<std::string, double>;

void gemm_trials(const char* op, uint32_t seed) {
  std::mt19937 rng(seed);
  const bool gemv = std::string(op) == "gemv";
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t M = gemv ? 1 : pick(rng, 1, 6), K = pick(rng, 1, 40), N = pick(rng, 1, 24);
    const bool tb = pick(rng, 0, 1), use_bias = pick(rng, 0, 1), acc = pick(rng, 0, 1);
    HostTensor a(pick_float(rng), {M, K}), b(pick_float(rng), tb ? Shape{N, K} : Shape{K, N});
    HostTensor bias(pick_float(rng), {N}), out(pick_float(rng), {M, N});
    a.randomize(rng);
    b.randomize(rng);
    bias.randomize(rng);
    out.randomize(rng, -4, 4);
    const auto old = out.vals();
    P params;
    if (tb) params["transpose_b"] = 1;
    if (acc) params["accumulate"] = 1;
    const int64_t rw = maybe_rows(rng, params, M);
    std::map<std::string, TensorRef> ops{{"a", a.ref}, {"b", b.ref}, {"out", out.ref}};
    if (use_bias) ops["bias"] = bias.ref;
    run_checked(make_call(op, ops, params));

    const auto av = a.vals(), bv = b.vals(), biasv = bias.vals();
    std::vector<double> ref(M * N);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = use_bias ? biasv[n] : 0.0;
        for (int64_t k = 0; k < K; ++k) s += double(av[m * K + k]) * bv[tb ? n * K + k : k * N + n];
        ref[m * N + n] = acc ? s + old[m * N + n] : s;
      }
    expect_near_ref(out.vals(), partial(ref, rw, N, old), out.ref.dtype,
                    std::string(op) + " trial " + std::to_string(trial), 1e-4);
  }
}

TEST(OpsMatmul, GemmMatchesScalar) {
  gemm_trials("gemm", 11);
}
TEST(OpsMatmul, GemvMatchesScalar) {
  gemm_trials("gemv", 12);
}

TEST(OpsMatmul, GemmTransposeAndAccumulateExact) {
  HostTensor a(DType::f32, {1, 2}), b(DType::f32, {2, 2}), out(DType::f32, {1, 2});
  a.set_vals({1, 2});
  b.set_vals({1, 2, 3, 4});
  run_checked(make_call("gemm", {{"a", a.ref}, {"b", b.ref}, {"out", out.ref}}));
  EXPECT_EQ(out.vals(), (std::vector<float>{7, 10}));
  run_checked(
      make_call("gemm", {{"a", a.ref}, {"b", b.ref}, {"out", out.ref}}, {{"transpose_b", 1}}));
  EXPECT_EQ(out.vals(), (std::vector<float>{5, 11}));
  // accumulate reads the stale output: running twice doubles it.
  run_checked(make_call("gemm", {{"a", a.ref}, {"b", b.ref}, {"out", out.ref}},
                        {{"transpose_b", 1}, {"accumulate", 1}}));
  EXPECT_EQ(out.vals(), (std::vector<float>{10, 22}));
}

TEST(OpsMatmul, GemmBf16WeightsWiderThanOneConversionBlock) {
  // bf16 b is converted in column blocks (~1M elements); N = 1100 at K = 2048 spans three.
  const int64_t M = 2, K = 2048, N = 1100;
  std::mt19937 rng(14);
  for (int tb = 0; tb < 2; ++tb) {
    HostTensor a(DType::f32, {M, K}), b(DType::bf16, tb ? Shape{N, K} : Shape{K, N});
    HostTensor out(DType::f32, {M, N});
    a.randomize(rng);
    b.randomize(rng);
    run_checked(make_call("gemm", {{"a", a.ref}, {"b", b.ref}, {"out", out.ref}},
                          {{"transpose_b", double(tb)}}));
    const auto av = a.vals(), bv = b.vals();
    std::vector<double> ref(M * N, 0.0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k)
          ref[m * N + n] += double(av[m * K + k]) * bv[tb ? n * K + k : k * N + n];
    expect_near_ref(out.vals(), ref, DType::f32, "wide gemm tb=" + std::to_string(tb), 1e-3);
  }
}

TEST(OpsMatmul, GemmLargeBf16SampledEntries) {
  const int64_t M = 16, K = 2048, N = 8192;
  std::mt19937 rng(13);
  HostTensor a(DType::bf16, {M, K}), b(DType::bf16, {K, N}), out(DType::bf16, {M, N});
  a.randomize(rng);
  b.randomize(rng);
  const auto t0 = std::chrono::steady_clock::now();
  run_checked(make_call("gemm", {{"a", a.ref}, {"b", b.ref}, {"out", out.ref}}));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "gemm 16x2048x8192 bf16: " << ms << " ms\n";
  for (int s = 0; s < 64; ++s) {
    const int64_t m = pick(rng, 0, M - 1), n = pick(rng, 0, N - 1);
    double want = 0;
    for (int64_t k = 0; k < K; ++k) want += double(a.ref.get(m * K + k)) * b.ref.get(k * N + n);
    EXPECT_NEAR(out.ref.get(m * N + n), want, 0.05 + std::fabs(want) / 128) << m << "," << n;
  }
}

// Scalar attention over float inputs; rows of q at positions L - Sq + i.
std::vector<double> ref_attention(const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v, int64_t Sq, int64_t H, int64_t KH,
                                  int64_t D, int64_t L, bool causal) {
  std::vector<double> out(Sq * H * D, 0.0);
  for (int64_t i = 0; i < Sq; ++i)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / KH), lim = causal ? std::min(L - Sq + i + 1, L) : L;
      std::vector<double> s(lim);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < lim; ++j) {
        for (int64_t d = 0; d < D; ++d)
          s[j] += double(q[i * H * D + h * D + d]) * k[j * KH * D + g * D + d];
        s[j] /= std::sqrt(double(D));
        mx = std::max(mx, s[j]);
      }
      for (auto& x : s) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < lim; ++j)
        for (int64_t d = 0; d < D; ++d)
          out[i * H * D + h * D + d] += s[j] / sum * v[j * KH * D + g * D + d];
    }
  return out;
}

TEST(OpsMatmul, AttentionMatchesScalar) {
  std::mt19937 rng(21);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t KH = pick(rng, 1, 3), H = KH * pick(rng, 1, 3), D = pick(rng, 1, 8);
    const int64_t Sk = pick(rng, 1, 10), Sq = pick(rng, 1, Sk), L = pick(rng, Sq, Sk);
    const bool causal = pick(rng, 0, 1), use_len = L != Sk || pick(rng, 0, 1);
    HostTensor q(pick_float(rng), {Sq, H * D}), k(pick_float(rng), {Sk, KH * D});
    HostTensor v(pick_float(rng), {Sk, KH * D}), len(DType::i32, {1}),
        out(pick_float(rng), {Sq, H * D});
    q.randomize(rng, -2, 2);
    k.randomize(rng, -2, 2);
    v.randomize(rng);
    len.set_vals({static_cast<float>(L)});
    out.fill(kSentinel);
    P params{{"heads", double(H)}, {"kv_heads", double(KH)}, {"head_dim", double(D)}};
    if (!causal) params["causal"] = 0;
    const int64_t rw = maybe_rows(rng, params, Sq);
    std::map<std::string, TensorRef> ops{
        {"q", q.ref}, {"k", k.ref}, {"v", v.ref}, {"out", out.ref}};
    if (use_len) ops["kv_len"] = len.ref;
    run_checked(make_call("attention", ops, params));
    const auto ref = ref_attention(q.vals(), k.vals(), v.vals(), Sq, H, KH, D, L, causal);
    expect_near_ref(out.vals(), partial(ref, rw, H * D), out.ref.dtype,
                    "attention trial " + std::to_string(trial), 1e-4);
  }
}

// v row j holds j + 100*(kv head) in every column; q = 0 so every visible row weighs the same
// and each output is the mean of the visible rows' values.
struct MeanSetup {
  int64_t Sq, Sk, H, KH, D = 2;
  HostTensor q{DType::f32, {Sq, H*D}}, k{DType::f32, {Sk, KH*D}}, v{DType::f32, {Sk, KH*D}};
  HostTensor out{DType::f32, {Sq, H*D}}, len{DType::i32, {1}};
  MeanSetup(int64_t sq, int64_t sk, int64_t h, int64_t kh) : Sq(sq), Sk(sk), H(h), KH(kh) {
    for (int64_t j = 0; j < Sk; ++j)
      for (int64_t c = 0; c < KH * D; ++c) v.ref.set(j * KH * D + c, float(j + 100 * (c / D)));
    std::mt19937 rng(5);
    k.randomize(rng);  // irrelevant while q == 0
  }
  std::vector<float> run(int32_t kv_len, bool causal) {
    len.set_vals({float(kv_len)});
    run_checked(
        make_call("attention",
                  {{"q", q.ref}, {"k", k.ref}, {"v", v.ref}, {"kv_len", len.ref}, {"out", out.ref}},
                  {{"heads", double(H)},
                   {"kv_heads", double(KH)},
                   {"head_dim", double(D)},
                   {"causal", causal ? 1.0 : 0.0}}));
    return out.vals();
  }
};

void expect_vals(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "at " << i;
}

TEST(OpsMatmul, AttentionCausalMaskWithKvLen) {
  MeanSetup s(2, 6, 1, 1);
  // kv_len 4: row 0 sits at position 2 (sees rows 0..2), row 1 at 3 (rows 0..3).
  expect_vals(s.run(4, true), {1, 1, 1.5, 1.5});
  expect_vals(s.run(4, false), {1.5, 1.5, 1.5, 1.5});
  expect_vals(s.run(6, true), {2, 2, 2.5, 2.5});
  // Out-of-range kv_len is clamped to [Sq, Sk], not a crash.
  EXPECT_EQ(s.run(100, true), s.run(6, true));
  EXPECT_EQ(s.run(-3, true), s.run(2, true));
  expect_vals(s.run(2, true), {0, 0, 0.5, 0.5});
}

TEST(OpsMatmul, AttentionGroupedQueryHeads) {
  // 4 query heads over 2 kv heads: heads 0,1 use kv head 0; heads 2,3 use kv head 1.
  MeanSetup s(1, 3, 4, 2);
  expect_vals(s.run(3, true), {1, 1, 1, 1, 101, 101, 101, 101});
}

}  // namespace
}  // namespace bod::test
