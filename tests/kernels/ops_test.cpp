// Row-wise and elementwise reference ops vs plain scalar implementations (randomized shapes,
// bf16/f32 mixes, the rows param). gemm/attention: ops_matmul_test.cpp; table and shape
// checks: op_table_test.cpp.
#include "kernels/ops_test_util.h"

namespace bod::test {
namespace {

using P = std::map<std::string, double>;

TEST(Ops, NormsMatchScalar) {
  std::mt19937 rng(101);
  for (int trial = 0; trial < 60; ++trial) {
    const bool layer = trial % 2;
    const bool use_bias = layer && pick(rng, 0, 1);
    const int64_t R = pick(rng, 1, 6), C = pick(rng, 1, 40);
    HostTensor x(pick_float(rng), {1, R, C}), w(pick_float(rng), {C}), b(pick_float(rng), {1, C}),
        out(pick_float(rng), {R, C});
    x.randomize(rng, -3, 2);
    w.randomize(rng, 0.5, 1.5);
    b.randomize(rng);
    out.fill(kSentinel);
    P params;
    const double eps = trial % 3 ? 1e-5 : 0.25;
    if (eps != 1e-5) params["eps"] = eps;
    const int64_t rw = maybe_rows(rng, params, R);
    std::map<std::string, TensorRef> ops{{"x", x.ref}, {"weight", w.ref}, {"out", out.ref}};
    if (use_bias) ops["bias"] = b.ref;
    run_checked(make_call(layer ? "layernorm" : "rmsnorm", ops, params));

    const auto xv = x.vals(), wv = w.vals(), bv = b.vals();
    std::vector<double> ref(xv.size());
    for (int64_t r = 0; r < R; ++r) {
      double mean = 0, ss = 0;
      if (layer) {
        for (int64_t i = 0; i < C; ++i) mean += xv[r * C + i];
        mean /= C;
      }
      for (int64_t i = 0; i < C; ++i) ss += (xv[r * C + i] - mean) * (xv[r * C + i] - mean);
      const double inv = 1 / std::sqrt(ss / C + eps);
      for (int64_t i = 0; i < C; ++i)
        ref[r * C + i] = (xv[r * C + i] - mean) * inv * wv[i] + (use_bias ? bv[i] : 0.0);
    }
    expect_near_ref(out.vals(), partial(ref, rw, C), out.ref.dtype,
                    (layer ? "layernorm trial " : "rmsnorm trial ") + std::to_string(trial), 1e-4);
  }
}

TEST(Ops, RopeMatchesScalarAndWorksInPlace) {
  std::mt19937 rng(202);
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t hd = 2 * pick(rng, 1, 4), heads = pick(rng, 1, 3), R = pick(rng, 1, 5);
    const int64_t C = hd * heads;
    HostTensor x(pick_float(rng), {R, C}), lut(pick_float(rng), {R, hd});
    HostTensor out(pick_float(rng), {R, C});
    x.randomize(rng, -2, 2);
    lut.randomize(rng);
    out.fill(kSentinel);
    P params{{"head_dim", static_cast<double>(hd)}};
    const int64_t rw = maybe_rows(rng, params, R);
    const auto xv = x.vals(), lv = lut.vals();
    run_checked(make_call("rope", {{"x", x.ref}, {"lut", lut.ref}, {"out", out.ref}}, params));
    std::vector<double> ref(xv.size());
    const int64_t half = hd / 2;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t h = 0; h < C; h += hd)
        for (int64_t i = 0; i < half; ++i) {
          const double x0 = xv[r * C + h + i], x1 = xv[r * C + h + i + half];
          const double cs = lv[r * hd + i], sn = lv[r * hd + half + i];
          ref[r * C + h + i] = x0 * cs - x1 * sn;
          ref[r * C + h + i + half] = x1 * cs + x0 * sn;
        }
    expect_near_ref(out.vals(), partial(ref, rw, C), out.ref.dtype,
                    "rope trial " + std::to_string(trial));

    // In place (out == x) must equal the out-of-place result into a tensor of x's dtype.
    HostTensor same(x.ref.dtype, {R, C});
    same.fill(kSentinel);
    run_checked(make_call("rope", {{"x", x.ref}, {"lut", lut.ref}, {"out", same.ref}}, params));
    run_checked(make_call("rope", {{"x", x.ref}, {"lut", lut.ref}, {"out", x.ref}}, params));
    const auto inplace = x.vals(), separate = same.vals();
    for (size_t i = 0; i < inplace.size(); ++i) {
      const float want = i < static_cast<size_t>(rw * C) ? separate[i] : xv[i];
      ASSERT_EQ(inplace[i], want) << "in-place rope trial " << trial << " at " << i;
    }
  }
}

TEST(Ops, ElementwiseMatchScalar) {
  std::mt19937 rng(303);
  for (int trial = 0; trial < 60; ++trial) {
    const bool silu = trial % 2;
    const int64_t R = pick(rng, 1, 6), C = pick(rng, 1, 50);
    // add takes any shapes with equal element counts; silu_mul needs equal 2-D views.
    HostTensor a(pick_float(rng), {R, C}), b(pick_float(rng), silu ? Shape{R, C} : Shape{R * C});
    HostTensor out(pick_float(rng), {R, C});
    a.randomize(rng, -6, 6);
    b.randomize(rng, -3, 3);
    out.fill(kSentinel);
    P params;
    const int64_t rw = maybe_rows(rng, params, R);
    if (silu)
      run_checked(
          make_call("silu_mul", {{"gate", a.ref}, {"up", b.ref}, {"out", out.ref}}, params));
    else
      run_checked(make_call("add", {{"a", a.ref}, {"b", b.ref}, {"out", out.ref}}, params));
    const auto av = a.vals(), bv = b.vals();
    std::vector<double> ref(av.size());
    for (size_t i = 0; i < ref.size(); ++i)
      ref[i] = silu ? av[i] / (1 + std::exp(-static_cast<double>(av[i]))) * bv[i]
                    : static_cast<double>(av[i]) + bv[i];
    expect_near_ref(out.vals(), partial(ref, rw, C), out.ref.dtype,
                    (silu ? "silu_mul trial " : "add trial ") + std::to_string(trial));
  }
}

TEST(Ops, SoftmaxMatchesScalarAndIsStable) {
  std::mt19937 rng(404);
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t R = pick(rng, 1, 6), C = pick(rng, 1, 40);
    HostTensor x(pick_float(rng), {R, C}), out(pick_float(rng), {R, C});
    x.randomize(rng, -8, 8);
    out.fill(kSentinel);
    P params;
    const int64_t rw = maybe_rows(rng, params, R);
    run_checked(make_call("softmax", {{"x", x.ref}, {"out", out.ref}}, params));
    const auto xv = x.vals();
    std::vector<double> ref(xv.size());
    for (int64_t r = 0; r < R; ++r) {
      double sum = 0;
      for (int64_t i = 0; i < C; ++i) sum += std::exp(static_cast<double>(xv[r * C + i]));
      for (int64_t i = 0; i < C; ++i) ref[r * C + i] = std::exp(xv[r * C + i]) / sum;
    }
    expect_near_ref(out.vals(), partial(ref, rw, C), out.ref.dtype,
                    "softmax trial " + std::to_string(trial));
  }
  HostTensor big(DType::f32, {1, 3}), out(DType::f32, {1, 3});
  big.set_vals({1000.f, 1000.f, -1000.f});  // exp(1000) overflows without the max shift
  run_checked(make_call("softmax", {{"x", big.ref}, {"out", out.ref}}));
  EXPECT_EQ(out.vals(), (std::vector<float>{0.5f, 0.5f, 0.f}));
}

TEST(Ops, EmbeddingGathersRowsAndNaNsBadIds) {
  std::mt19937 rng(505);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t V = pick(rng, 1, 10), E = pick(rng, 1, 16), n = pick(rng, 1, 8);
    HostTensor table(pick_float(rng), {V, E}), ids(DType::i32, {n}), out(pick_float(rng), {n, E});
    table.randomize(rng, -4, 4);
    out.fill(kSentinel);
    std::vector<float> idv(n);
    for (auto& id : idv) id = static_cast<float>(pick(rng, -2, V + 1));  // some out of range
    ids.set_vals(idv);
    P params;
    const int64_t rw = maybe_rows(rng, params, n);
    run_checked(
        make_call("embedding", {{"table", table.ref}, {"ids", ids.ref}, {"out", out.ref}}, params));
    const auto tv = table.vals();
    std::vector<double> ref(n * E);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t e = 0; e < E; ++e)
        ref[r * E + e] =
            idv[r] >= 0 && idv[r] < V ? tv[static_cast<int64_t>(idv[r]) * E + e] : std::nan("");
    expect_near_ref(out.vals(), partial(ref, rw, E), out.ref.dtype,
                    "embedding trial " + std::to_string(trial), 0);
  }
}

TEST(Ops, EmbeddingOutOfRangeIdWritesNaNRow) {
  HostTensor table(DType::bf16, {2, 3}), ids(DType::i32, {3}), out(DType::f32, {3, 3});
  table.set_vals({1, 2, 3, 4, 5, 6});
  ids.set_vals({1, 2, -1});
  run_checked(make_call("embedding", {{"table", table.ref}, {"ids", ids.ref}, {"out", out.ref}}));
  const auto o = out.vals();
  EXPECT_EQ(std::vector<float>(o.begin(), o.begin() + 3), (std::vector<float>{4, 5, 6}));
  for (int i = 3; i < 9; ++i) EXPECT_TRUE(std::isnan(o[i])) << i;
}

TEST(Ops, CopyCastFillHonourRows) {
  std::mt19937 rng(606);
  for (int trial = 0; trial < 30; ++trial) {
    const char* op = trial % 3 == 0 ? "copy" : trial % 3 == 1 ? "cast" : "fill";
    const int64_t R = pick(rng, 1, 6), C = pick(rng, 1, 20);
    HostTensor src(pick_float(rng), {R * C}), out(pick_float(rng), {R, C});
    src.randomize(rng, -100, 100);
    out.fill(kSentinel);
    P params;
    const double value = pick(rng, -50, 50) / 4.0;
    const bool fill = std::string(op) == "fill";
    if (fill) params["value"] = value;
    const int64_t rw = maybe_rows(rng, params, R);
    std::map<std::string, TensorRef> ops{{"out", out.ref}};
    if (!fill) ops["src"] = src.ref;
    run_checked(make_call(op, ops, params));
    std::vector<double> ref(R * C, value);
    const auto sv = src.vals();
    if (!fill) ref.assign(sv.begin(), sv.end());
    EXPECT_EQ(rows_written(make_call(op, ops, params)), rw);
    expect_near_ref(out.vals(), partial(ref, rw, C), out.ref.dtype,
                    std::string(op) + " trial " + std::to_string(trial), 0);
  }
}

TEST(Ops, Bf16StoresRoundToNearestEven) {
  // Casts: 1+2^-8 is a tie between 1 and 1+2^-7 -> even (1.0); 1+3*2^-8 ties up to 1+2^-6.
  HostTensor src(DType::f32, {5}), out(DType::bf16, {5});
  src.set_vals({1.f + 0x1p-8f, 1.f + 3 * 0x1p-8f, -(1.f + 0x1p-8f), 1.f + 0x1p-8f + 0x1p-20f,
                1.f + 0x1p-9f});
  run_checked(make_call("cast", {{"src", src.ref}, {"out", out.ref}}));
  const auto* bits = reinterpret_cast<const uint16_t*>(out.ref.data);
  EXPECT_EQ(bits[0], 0x3f80);
  EXPECT_EQ(bits[1], 0x3f82);
  EXPECT_EQ(bits[2], 0xbf80);
  EXPECT_EQ(bits[3], 0x3f81);  // above the tie: rounds up
  EXPECT_EQ(bits[4], 0x3f80);  // below the tie: rounds down

  // An op computing in f32 rounds its bf16 result the same way (not truncation).
  HostTensor a(DType::bf16, {2}), b(DType::bf16, {2}), sum(DType::bf16, {2});
  a.set_vals({1.f, 1.f + 0x1p-7f});
  b.set_vals({0x1p-8f, 0x1p-8f});
  run_checked(make_call("add", {{"a", a.ref}, {"b", b.ref}, {"out", sum.ref}}));
  const auto* sb = reinterpret_cast<const uint16_t*>(sum.ref.data);
  EXPECT_EQ(sb[0], 0x3f80);
  EXPECT_EQ(sb[1], 0x3f82);
}

}  // namespace
}  // namespace bod::test
