// What surrounds the checks, on hand-built Traces (tests/checks/trace_builder.h): the builder
// itself (placements and first calls as the plan expansion computes them, since every check
// test relies on them), coverage_gaps() per capability set, run_checks() on clean, identity-only
// and empty traces, residents() and shares_bo() from trace.h, and the per-key table and the
// end-to-end verdict (analysis/summary.h). These decide what a report says was checked and
// whether a run fails, so they are pinned field by field.
#include <gtest/gtest.h>

#include <tuple>

#include "analysis/summary.h"
#include "checks/checks.h"
#include "checks/registry.h"
#include "checks/trace_builder.h"

namespace bod {
namespace {

// ---- the builder ---------------------------------------------------------------------------

TEST(TraceCheck_Builder, PlacementsAndFirstCallsFollowTheExpansion) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K").statics({1}).shared_nonstatic().alias(2, "act");
  b.call("proj", "K").statics({1}).shared_nonstatic().alias(2, "act").slot(0).bytes(32);
  b.call("proj", "K").ns("e2").statics({1});
  Trace t = b.build();
  ASSERT_EQ(t.calls.size(), 3u);
  EXPECT_EQ(t.calls[1].number, 2);
  EXPECT_EQ(t.calls[1].key_first_call, 1);
  EXPECT_EQ(t.calls[2].key_first_call, 3);  // per (ns, bo_key)
  const TraceSlot& x1 = t.calls[0].slots[0];
  EXPECT_EQ(x1.place.label(), "pool:proj/0/64");
  EXPECT_EQ(x1.place.bo, 1);  // BOs are numbered in order of first use
  // A later call copies its key's first placement whatever its own size: call 1's pool BO.
  const TraceSlot& x2 = t.calls[1].slots[0];
  EXPECT_EQ(x2.place.pool, BoPool::shared);
  EXPECT_EQ(x2.place.label(), "pool:proj/0/64");
  EXPECT_EQ(x2.place.bytes, 64u);
  EXPECT_EQ(x2.place.first_call, 1);
  EXPECT_EQ(x2.place.bo, 1);
  EXPECT_EQ(x2.host.bytes, 32u);
  EXPECT_EQ(x2.bo_bytes, 64u);
  EXPECT_TRUE(x2.written);  // a plain input, a prefix write
  EXPECT_FALSE(t.calls[1].failed);
  EXPECT_EQ(t.calls[1].slots[1].place.bo, 2);
  EXPECT_EQ(t.calls[1].slots[1].place.label(), "key:K/1");
  EXPECT_EQ(t.calls[1].slots[1].place.first_call, 1);
  EXPECT_EQ(t.calls[1].slots[1].role, SlotRole::static_input);
  EXPECT_FALSE(t.calls[1].slots[1].written);                     // static, BO resident
  EXPECT_EQ(t.calls[1].slots[2].place.label(), "alias:act/64");  // alias: (name, bytes)
  EXPECT_EQ(t.calls[1].slots[2].place.index, -1);
  EXPECT_EQ(t.calls[1].slots[2].place.first_call, 1);
  EXPECT_EQ(t.calls[1].slots[2].place.bo, 3);
  EXPECT_EQ(t.calls[2].slots[1].place.label(), "e2:key:K/1");
  EXPECT_EQ(t.calls[2].slots[1].place.bo, 5);  // e2 has its own K/0 (4), then K/1
  EXPECT_TRUE(t.calls[2].slots[1].written);    // a new BO in another namespace
}

TEST(TraceCheck_Builder, LaterCallKeepsTheFirstCallsBoListWhateverItsFlags) {
  // Call 2 drops shared_nonstatic and the alias and adds a static: every slot still lands
  // where call 1 put it; a key's own flags are read only at its first call.
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K").shared_nonstatic().alias(2, "act");
  b.call("proj", "K").statics({0});
  Trace t = b.build();
  for (size_t s = 0; s < 3; ++s) {
    const Placement& p1 = t.calls[0].slots[s].place;
    const Placement& p2 = t.calls[1].slots[s].place;
    EXPECT_EQ(p2.identity(), p1.identity()) << "slot " << s;
    EXPECT_EQ(p2.bo, p1.bo) << "slot " << s;
    EXPECT_EQ(p2.first_call, 1) << "slot " << s;
  }
  EXPECT_EQ(t.calls[1].slots[0].place.label(), "pool:proj/0/64");
  EXPECT_EQ(t.calls[1].slots[2].place.label(), "alias:act/64");
  EXPECT_FALSE(t.calls[1].slots[0].written);  // now static: skipped
}

TEST(TraceCheck_Builder, AliasNameAtTwoSizesIsTwoBos) {
  TraceBuilder b;
  b.kernel("prod", {"x", "y"}).kernel("cons", {"y", "z"});
  b.call("prod", "P").alias(1, "act").slot(1).bytes(256);
  b.call("cons", "C").alias(0, "act").slot(0).bytes(128);
  b.call("cons", "C2").alias(0, "act").slot(0).bytes(256);
  Trace t = b.build();
  const Placement& p = t.calls[0].slots[1].place;
  const Placement& c = t.calls[1].slots[0].place;
  const Placement& c2 = t.calls[2].slots[0].place;
  EXPECT_EQ(c.label(), "alias:act/128");
  EXPECT_FALSE(c.same_bo(p));
  EXPECT_NE(c.bo, p.bo);
  EXPECT_EQ(c.first_call, 2);
  EXPECT_TRUE(c2.same_bo(p));  // the twin: the same (name, bytes)
  EXPECT_EQ(c2.bo, p.bo);
  EXPECT_EQ(c2.first_call, 1);
}

TEST(TraceCheck_Builder, UnboundArgumentsHaveNoBoAndNoResident) {
  TraceBuilder b;
  b.kernel("k2", {"a", "out"}).kernel("k3", {"a", "b", "out"});
  b.call("k2", "K").slot(1).var("y");
  b.call("k3", "K").inters({2}).slot(2).var("y");
  Trace t = b.build();
  const TraceSlot& s = t.calls[1].slots[2];
  EXPECT_EQ(s.place.pool, BoPool::unbound);
  EXPECT_EQ(s.place.name, "K");
  EXPECT_EQ(s.place.index, 2);
  EXPECT_EQ(s.place.bo, -1);
  EXPECT_EQ(s.place.first_call, 1);
  EXPECT_FALSE(s.written);
  EXPECT_TRUE(t.calls[1].failed);
  EXPECT_FALSE(shares_bo(t.calls[1], 2));
  auto r = residents(t);
  EXPECT_EQ(r[1][2].call, 0);       // no BO, so nothing resident
  EXPECT_EQ(r[1][1].binding, "y");  // slot 1 is call 1's out BO (key:K/1)
  EXPECT_EQ(r[1][1].call, 1);
}

TEST(TraceCheck_Builder, NumberBosReproducesTheBuildersNumbering) {
  // A trace reader numbers BOs with number_bos(); it must agree with the expansion's rule the
  // builder follows, or hand-built traces would test another residents() than real ones.
  TraceBuilder b;
  b.kernel("prod", {"x", "y"}).kernel("cons", {"y", "z"});
  b.call("prod", "P").alias(1, "act");
  b.call("cons", "C").alias(0, "act").shared_nonstatic();
  b.call("prod", "P").ns("e2");
  b.call("cons", "C").slot(1).bytes(128);        // a later call: call 2's placements, copied
  b.call("prod", "P").ns("e2").alias(0, "act");  // alias flags of a later call: ignored
  Trace want = b.build();
  Trace t = want;
  for (auto& c : t.calls)
    for (auto& s : c.slots) s.place.bo = s.place.first_call = 0;
  number_bos(t);
  for (size_t c = 0; c < t.calls.size(); ++c)
    for (size_t s = 0; s < t.calls[c].slots.size(); ++s) {
      const Placement& p = t.calls[c].slots[s].place;
      const Placement& w = want.calls[c].slots[s].place;
      EXPECT_EQ(p.bo, w.bo) << "call " << c + 1 << " slot " << s;
      EXPECT_EQ(p.first_call, w.first_call) << "call " << c + 1 << " slot " << s;
    }
  EXPECT_EQ(want.calls[1].slots[0].place.bo, want.calls[0].slots[1].place.bo);  // the alias
  EXPECT_EQ(want.calls[2].slots[0].place.bo, 4);  // P/0, act, C's shared z, then e2's P/0
  EXPECT_EQ(want.calls[3].slots[1].place.bo, want.calls[1].slots[1].place.bo);
  EXPECT_EQ(want.calls[3].slots[1].place.bytes, 64u);
  EXPECT_EQ(want.calls[4].slots[0].place.label(), "e2:key:P/0");
}

// ---- coverage_gaps ------------------------------------------------------------------------

using Gap = std::tuple<std::string, bool, std::string>;

std::vector<Gap> gaps(const Capabilities& c) {
  Trace t;
  t.header.caps = c;
  std::vector<Gap> v;
  for (auto& g : coverage_gaps(t)) v.emplace_back(g.check, g.partly, g.missing);
  return v;
}

TEST(TraceCheck_Registry, EveryCheckInReportOrder) {
  std::vector<std::string> ids;
  for (auto& e : check_registry()) ids.push_back(e.info->id);
  EXPECT_EQ(ids, (std::vector<std::string>{
                     "stale-static", "key-collision", "size-mismatch", "static-clobber",
                     "intermediate-read", "partial-overwrite", "output-divergence",
                     "view-overwritten", "placeholder-upload", "alias-conflict", "missed-static",
                     "missed-intermediate", "config-error", "unsynced-write", "unsynced-read",
                     "write-in-flight", "run-not-completed", "unwritten-output"}));
  ASSERT_NE(find_check("stale-static"), nullptr);
  EXPECT_EQ(find_check("stale-static")->run, &run_stale_static);
  EXPECT_EQ(find_check("no-such-check"), nullptr);
}

TEST(TraceCheck_Registry, CoverageGapsWithRunOnly) {
  Capabilities c;
  c.run = true;
  EXPECT_EQ(gaps(c), (std::vector<Gap>{
                         {"static-clobber", false, "no_reuse"},
                         {"intermediate-read", false, "no_reuse, byte_diffs, access"},
                         {"partial-overwrite", false, "no_reuse, byte_diffs, access"},
                         {"output-divergence", false, "no_reuse"},
                         {"alias-conflict", true, "no_reuse"},
                         {"missed-static", false, "no_reuse"},
                         {"missed-intermediate", false, "access"},
                     }));
}

TEST(TraceCheck_Registry, CoverageGapsWithIdentitiesOnly) {
  EXPECT_EQ(gaps(Capabilities{}),
            (std::vector<Gap>{
                {"stale-static", false, "run"},
                {"key-collision", true, "run"},
                {"size-mismatch", true, "run"},
                {"static-clobber", false, "no_reuse"},
                {"intermediate-read", false, "run, no_reuse, byte_diffs, access"},
                {"partial-overwrite", false, "run, no_reuse, byte_diffs, access"},
                {"output-divergence", false, "no_reuse"},
                {"view-overwritten", false, "run"},
                {"placeholder-upload", true, "run"},
                {"alias-conflict", true, "run, no_reuse"},
                {"missed-static", false, "run, no_reuse"},
                {"missed-intermediate", false, "run, access"},
            }));
}

TEST(TraceCheck_Registry, NoCoverageGapsWithFullCapabilities) {
  // probe and verify are optional: a trace without them still feeds every rule.
  Capabilities c;
  c.run = c.no_reuse = c.byte_diffs = c.access = true;
  EXPECT_TRUE(gaps(c).empty());
  c.access = false;
  EXPECT_EQ(gaps(c).size(), 3u);  // the twin: intermediate-read, partial-overwrite, missed-int.
}

// ---- run_checks ---------------------------------------------------------------------------

// A clean two-token decode of two layers: per-layer keys, static weights, intermediate output
// fully overwritten by the body, activations changing every call. per_layer false drops {l}
// from the key (the one mistake).
TraceBuilder clean_decode(bool per_layer = true) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  for (int tok = 0; tok < 2; ++tok)
    for (int l = 0; l < 2; ++l) {
      auto& c = b.call("proj", per_layer ? "proj_L" + std::to_string(l) : "proj_dec")
                    .statics({1})
                    .inters({2})
                    .phase("decode")
                    .token(tok)
                    .layer(l)
                    .path("/program/phases/1/steps/0/steps/0");
      c.slot(0).var("x");
      c.slot(1).tensor("w[" + std::to_string(l) + "]");
      c.slot(2).var("y").access(false, true, true);
    }
  return b;
}

TEST(TraceCheck_RunChecks, CleanPlanWithFullCapabilitiesHasNoFindings) {
  FindingSink sink;
  run_checks(clean_decode().build(), sink);
  EXPECT_TRUE(sink.sorted().empty()) << describe(sink.sorted());
}

TEST(TraceCheck_RunChecks, CleanPlanWithIdentitiesOnlyHasNoFindings) {
  auto b = clean_decode();
  b.identities_only();
  Trace t = b.build();
  ASSERT_EQ(t.calls.size(), 4u);
  FindingSink sink;
  run_checks(t, sink);
  EXPECT_TRUE(sink.sorted().empty()) << describe(sink.sorted());
  // The twin: the key without {l} makes the same identities fail lint.
  auto bad = clean_decode(false);
  bad.identities_only();
  FindingSink s2;
  run_checks(bad.build(), s2);
  auto v = s2.sorted();
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].check, "key-collision");
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].occurrences, 2);  // calls 2 and 4 bind w[1]
  EXPECT_EQ(v[0].last_call, 4);
}

TEST(TraceCheck_RunChecks, ZeroCallsNeverCrashOrFind) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  Trace t = b.build();
  t.header.caps.probe = true;
  t.view_reads.push_back(ViewRead{"caps[0]", "host step", 0, 1, 2, 1, false});
  ASSERT_TRUE(t.calls.empty());
  for (auto& e : check_registry()) {
    FindingSink sink;
    e.run(t, sink);
    EXPECT_TRUE(sink.sorted().empty()) << e.info->id << describe(sink.sorted());
  }
  EXPECT_TRUE(residents(t).empty());
}

TEST(TraceCheck_RunChecks, FindingsOfAllChecksSortByCallThenCheck) {
  auto b = clean_decode();
  b.at(3).slot(0).bytes(32);   // size-mismatch on call 3 (a written slot: stale tail)
  b.at(2).diverged(2, 0.995);  // output-divergence warning on call 2
  FindingSink sink;
  run_checks(b.build(), sink);
  auto v = sink.sorted();
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[0].check, "output-divergence");
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].severity, Severity::warning);
  EXPECT_EQ(v[1].check, "size-mismatch");
  EXPECT_EQ(v[1].call, 3);
  EXPECT_TRUE(sink.has_error());
}

// ---- residents / shares_bo ----------------------------------------------------------------

TEST(TraceCheck_Residents, LastWriteIntoTheSameBo) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K").statics({1}).slot(1).tensor("w[0]").written(42);
  b.call("proj", "K").statics({1}).slot(1).tensor("w[0]");
  b.call("proj", "K").statics({1}).slot(1).tensor("w[1]").written(43);
  b.call("proj", "K").statics({1}).slot(1).tensor("w[1]");
  Trace t = b.build();  // outlives r: bindings point into it
  auto r = residents(t);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0][1].call, 0);  // nothing before the first write
  EXPECT_EQ(r[0][1].binding, "");
  EXPECT_EQ(r[1][1].binding, "w[0]");
  EXPECT_EQ(r[1][1].call, 1);
  EXPECT_EQ(r[1][1].hash, 42u);  // the written hash, not the host hash
  EXPECT_EQ(r[2][1].call, 1);    // before call 3's own write
  EXPECT_EQ(r[3][1].binding, "w[1]");
  EXPECT_EQ(r[3][1].call, 3);
  EXPECT_EQ(r[3][1].hash, 43u);
}

TEST(TraceCheck_Residents, NotSharedAcrossNamespaces) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K").statics({1}).slot(1).tensor("w[0]");
  b.call("proj", "K").ns("e2").statics({1}).slot(1).tensor("w[0]").skipped();
  Trace t = b.build();  // outlives r: bindings point into it
  auto r = residents(t);
  EXPECT_EQ(r[1][1].call, 0);
}

TEST(TraceCheck_Residents, SharedAcrossAnAliasPool) {
  TraceBuilder b;
  b.kernel("prod", {"x", "y"}).kernel("cons", {"y", "z"});
  b.call("prod", "P").alias(1, "act").slot(1).var("h").written(5);
  b.call("cons", "C").alias(0, "act").slot(0).var("h").skipped();
  Trace t = b.build();
  auto r = residents(t);
  EXPECT_EQ(r[1][0].binding, "h");
  EXPECT_EQ(r[1][0].call, 1);
  EXPECT_EQ(r[1][0].hash, 5u);
  EXPECT_EQ(r[1][1].call, 0);  // z: key C's own BO, never written before
  EXPECT_FALSE(shares_bo(t.calls[0], 1));
  EXPECT_FALSE(shares_bo(t.calls[1], 0));
}

TEST(TraceCheck_Residents, SlotSeesEarlierSlotOfTheSameCall) {
  TraceBuilder b;
  b.kernel("add", {"a", "b", "out"});
  auto& c = b.call("add", "add").alias(0, "p").alias(1, "p");
  c.slot(0).var("u").written(5);
  c.slot(1).var("v").skipped();
  Trace t = b.build();
  auto r = residents(t);
  EXPECT_EQ(r[0][0].call, 0);  // slot 0 is prepared first
  EXPECT_EQ(r[0][1].binding, "u");
  EXPECT_EQ(r[0][1].call, 1);
  EXPECT_EQ(r[0][1].hash, 5u);
  EXPECT_TRUE(shares_bo(t.calls[0], 0));
  EXPECT_TRUE(shares_bo(t.calls[0], 1));
  EXPECT_FALSE(shares_bo(t.calls[0], 2));
}

// ---- key_table ----------------------------------------------------------------------------

TEST(TraceCheck_Summary, KeyTableSplitsFirstAndLaterCalls) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K0");
  b.call("proj", "K0").diverged(2, 0.5, 3, 0);
  b.call("proj", "K1").diverged(2, 0.8);
  b.call("proj", "K0").failed();
  b.call("proj", "K0").ns("e2");
  auto rows = key_table(b.build());
  ASSERT_EQ(rows.size(), 3u);
  const KeyRow& k0 = rows[0];
  EXPECT_EQ(k0.bo_key, "K0");
  EXPECT_EQ(k0.kernel, "proj");
  EXPECT_EQ(k0.first_call, 1);
  EXPECT_EQ(k0.calls, 3);
  EXPECT_EQ(k0.first_diverged, 0);
  EXPECT_EQ(k0.later_diverged, 2);  // call 2 diverged, call 4 failed
  EXPECT_DOUBLE_EQ(k0.first_min_cosine, 1);
  EXPECT_DOUBLE_EQ(k0.later_min_cosine, 0.5);
  EXPECT_EQ(k0.later_nan, 3);
  EXPECT_EQ(k0.first_bad_later_call, 2);
  const KeyRow& k1 = rows[1];
  EXPECT_EQ(k1.bo_key, "K1");
  EXPECT_EQ(k1.first_call, 3);
  EXPECT_EQ(k1.first_diverged, 1);
  EXPECT_DOUBLE_EQ(k1.first_min_cosine, 0.8);
  EXPECT_EQ(k1.later_diverged, 0);
  EXPECT_EQ(k1.first_bad_later_call, 0);
  EXPECT_EQ(rows[2].bo_key, "K0");  // namespace e2
  EXPECT_EQ(rows[2].first_call, 5);
  EXPECT_EQ(rows[2].calls, 1);
}

// ---- verify / add_verification_finding ----------------------------------------------------

Trace verified(double cosine, double max_abs) {
  Trace t = TraceBuilder().build();
  t.header.verify.push_back(VerifySpec{"logits", 0.99, 0.1, -1});
  VerifyOutput o;
  o.var = "logits";
  o.cosine = cosine;
  o.max_abs = max_abs;
  t.verify.push_back(o);
  return t;
}

TEST(TraceCheck_Summary, VerifyPassesWithinTolerances) {
  Verification v = verify(verified(0.999, 0.05));
  EXPECT_TRUE(v.pass);
  ASSERT_EQ(v.outputs.size(), 1u);
  EXPECT_TRUE(v.outputs[0].pass);
  EXPECT_EQ(v.first_token_divergence, -1);
}

TEST(TraceCheck_Summary, VerifyFailsOnAtolOrCosine) {
  EXPECT_FALSE(verify(verified(0.999, 0.5)).pass);
  Verification v = verify(verified(0.98, 0.05));
  EXPECT_FALSE(v.pass);
  EXPECT_DOUBLE_EQ(v.outputs[0].min_cosine, 0.99);
}

TEST(TraceCheck_Summary, VerifyFailsOnNewNaN) {
  Trace t = verified(0.999, 0.05);
  t.verify[0].nan_inf_reuse = 2;
  EXPECT_FALSE(verify(t).pass);
  t.verify[0].nan_inf_noreuse = 2;
  EXPECT_TRUE(verify(t).pass);
}

Trace with_tokens(std::vector<int32_t> noreuse_topk) {
  Trace t = TraceBuilder().build();
  t.tokens_reuse = {{1, {}}, {2, {}}, {3, {3, 4}}};
  t.tokens_noreuse = {{1, {1}}, {2, {2}}, {4, std::move(noreuse_topk)}};
  return t;
}

TEST(TraceCheck_Summary, TokenDivergenceWithinTopK) {
  Verification v = verify(with_tokens({4, 3, 9}));
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.first_token_divergence, 2);
  EXPECT_TRUE(v.topk_agree);
  EXPECT_EQ(v.tokens_reuse, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(v.tokens_noreuse, (std::vector<int32_t>{1, 2, 4}));
}

TEST(TraceCheck_Summary, TokenDivergenceOutsideTopK) {
  Verification v = verify(with_tokens({4, 9}));
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.first_token_divergence, 2);
  EXPECT_FALSE(v.topk_agree);
}

TEST(TraceCheck_Summary, FailedVerificationWithoutErrorAddsOne) {
  Trace t = with_tokens({4, 9});
  t.header.verify.push_back(VerifySpec{"logits", 0.99, -1, -1});
  t.verify.push_back(VerifyOutput{"logits", 0.95, 0.2, 0.1, 0, 0});
  FindingSink sink;
  Finding warn;
  warn.check = "output-divergence";
  warn.severity = Severity::warning;
  warn.call = 4;
  warn.kernel = "proj";
  warn.bo_key = "K";
  warn.slot = 2;
  sink.add(warn);
  add_verification_finding(verify(t), sink);
  auto v = sink.sorted();
  ASSERT_EQ(v.size(), 2u) << describe(v);
  const Finding& f = v[0];  // call 0 sorts first
  EXPECT_EQ(f.check, "output-divergence");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 0);
  EXPECT_TRUE(contains(f.message, "end-to-end verification failed"));
  EXPECT_EQ(evidence(f, "first token divergence"), "2");
  EXPECT_EQ(evidence(f, "logits cosine"), std::to_string(0.95));
  EXPECT_EQ(f.fix, output_divergence_info().fix);
  EXPECT_TRUE(sink.has_error());
}

TEST(TraceCheck_Summary, FailedVerificationWithAnErrorAddsNone) {
  FindingSink sink;
  Finding err;
  err.check = "stale-static";
  err.call = 3;
  sink.add(err);
  add_verification_finding(verify(with_tokens({4, 9})), sink);
  auto v = sink.sorted();
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].check, "stale-static");
}

TEST(TraceCheck_Summary, PassedVerificationAddsNone) {
  FindingSink sink;
  add_verification_finding(verify(verified(0.999, 0.05)), sink);
  EXPECT_TRUE(sink.sorted().empty());
}

}  // namespace
}  // namespace bod
