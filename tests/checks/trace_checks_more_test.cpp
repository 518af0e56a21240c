// Unit tests of output-divergence, view-overwritten, placeholder-upload, alias-conflict,
// missed-static, missed-intermediate and config-error on small hand-built Traces
// (tests/checks/trace_builder.h), independent of the fixture models. As in
// trace_checks_test.cpp, every rule has a trace that fires it and a twin differing in the one
// fact the rule depends on, and the assertions pin the finding's call, slot, severity, message
// and merging, so a drifting rule fails here first.
#include <gtest/gtest.h>

#include <vector>

#include "checks/checks.h"
#include "checks/trace_builder.h"

namespace bod {
namespace {

// ---- output-divergence --------------------------------------------------------------------

TraceBuilder two_calls_of_key() {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K").statics({1}).slot(1).tensor("w");
  b.call("proj", "K").statics({1}).slot(1).tensor("w");
  return b;
}

TEST(TraceCheck_OutputDivergence, ErrorWhenCosineBelowThreshold) {
  auto b = two_calls_of_key();
  b.at(2).diverged(2, 0.5);
  auto v = run_check(run_output_divergence, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "output-divergence");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 2);
  EXPECT_EQ(f.slot, 2);
  EXPECT_FALSE(f.first_call_of_key);
  EXPECT_EQ(f.message,
            "output out differs from the no-reuse run on a later call of bo_key 'K' "
            "(cosine 0.5)");
  EXPECT_EQ(evidence(f, "cosine"), "0.5");
  EXPECT_EQ(evidence(f, "call of key"), "later");
}

TEST(TraceCheck_OutputDivergence, ErrorWhenNewNaNDespiteHighCosine) {
  auto b = two_calls_of_key();
  b.at(2).diverged(2, 0.999, 3, 0);
  auto v = run_check(run_output_divergence, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_EQ(evidence(v[0], "nan/inf reuse"), "3/0");
  EXPECT_EQ(evidence(v[0], "nan/inf no-reuse"), "0/0");
}

TEST(TraceCheck_OutputDivergence, WarningWhenSmallDifferenceAndNoNewNaN) {
  auto b = two_calls_of_key();
  b.at(2).diverged(2, 0.995);
  auto v = run_check(run_output_divergence, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::warning);
  EXPECT_TRUE(contains(v[0].message, "(cosine 0.995)"));
}

// A small difference whose generated tokens changed is an error whatever the cosine; calls of
// later tokens than the one that changed stay warnings (their inputs already differ).
TEST(TraceCheck_OutputDivergence, ErrorWhenGreedyTokensOrTopKChange) {
  auto b = two_calls_of_key();
  b.at(1).token(0);
  b.at(2).token(1).diverged(2, 0.998);
  Trace t = b.build();
  t.tokens_reuse = {{5, {5, 6}}, {7, {7, 8}}};
  t.tokens_noreuse = {{5, {5, 6}}, {9, {9, 7}}};
  auto v = run_check(run_output_divergence, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_TRUE(contains(evidence(v[0], "severity"), "greedy token 1 is 7 with reuse, 9 without"));
  t.tokens_noreuse = {{5, {5, 6}}, {7, {7, 9}}};  // same token, another top-k
  v = run_check(run_output_divergence, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_TRUE(contains(evidence(v[0], "severity"), "the top-2 of token 1 differs"));
  t.tokens_noreuse = {{6, {6, 5}}, {7, {7, 8}}};  // changed at token 0: call 2 (t=1) follows
  EXPECT_EQ(run_check(run_output_divergence, t)[0].severity, Severity::warning);
  t.tokens_noreuse = t.tokens_reuse;  // tokens unchanged: a warning
  EXPECT_EQ(run_check(run_output_divergence, t)[0].severity, Severity::warning);
}

TEST(TraceCheck_OutputDivergence, WarningAtExactlyThreshold) {
  auto b = two_calls_of_key();
  b.at(2).diverged(2, 0.99);
  auto v = run_check(run_output_divergence, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::warning);
}

TEST(TraceCheck_OutputDivergence, WarningWhenNaNOnBothEngines) {
  auto b = two_calls_of_key();
  b.at(2).diverged(2, 0.995, 2, 2);
  auto v = run_check(run_output_divergence, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::warning);
}

TEST(TraceCheck_OutputDivergence, SaysWhenFirstCallOfKeyDiverged) {
  auto b = two_calls_of_key();
  b.at(1).diverged(2, 0.5);
  auto v = run_check(run_output_divergence, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 1);
  EXPECT_TRUE(v[0].first_call_of_key);
  EXPECT_TRUE(contains(v[0].message, "on the first call of bo_key 'K'"));
  EXPECT_EQ(evidence(v[0], "call of key"), "first");
}

TEST(TraceCheck_OutputDivergence, SilentWhenBitExact) {
  Trace t = two_calls_of_key().build();
  ASSERT_EQ(t.calls[1].outputs_cmp.size(), 1u);  // compared, and equal
  EXPECT_TRUE(run_check(run_output_divergence, t).empty());
}

TEST(TraceCheck_OutputDivergence, NeedsOnlyNoReuse) {
  auto b = two_calls_of_key();
  b.at(2).diverged(2, 0.5);
  b.caps(only_caps(false, true));
  EXPECT_EQ(run_check(run_output_divergence, b.build()).size(), 1u);
  b.caps(only_caps(true, false));
  EXPECT_TRUE(run_check(run_output_divergence, b.build()).empty());
}

// ---- view-overwritten ---------------------------------------------------------------------

// Two prefill layers on their own keys; layer 0's output is kept as a view.
Trace two_prefill_layers() {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "proj_L0").phase("prefill").layer(0);
  b.call("proj", "proj_L1").phase("prefill").layer(1);
  return b.build();
}

ViewRead view_read(int captured, int overwritten_by, bool by_host_write) {
  ViewRead v;
  v.var = "caps[0]";
  v.reader = "the end-to-end verification";
  v.captured_call = captured;
  v.slot = 2;
  v.overwritten_by = overwritten_by;
  v.overwritten_by_host_write = by_host_write;
  return v;
}

TEST(TraceCheck_ViewOverwritten, FiresNamingTheOverwritingCall) {
  Trace t = two_prefill_layers();
  t.view_reads.push_back(view_read(1, 2, false));
  auto v = run_check(run_view_overwritten, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "view-overwritten");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 1);  // the call that returned the view
  EXPECT_EQ(f.slot, 2);
  EXPECT_EQ(f.bo_key, "proj_L0");
  EXPECT_EQ(f.key_first_call, 0);
  EXPECT_FALSE(f.first_call_of_key);
  EXPECT_EQ(f.message,
            "'caps[0]' is a view of output out returned by call 1; call 2 (proj, prefill l=1) "
            "overwrote that BO before the end-to-end verification read it");
  EXPECT_EQ(evidence(f, "returned by call"), "1");
  EXPECT_EQ(evidence(f, "read by"), "the end-to-end verification");
}

TEST(TraceCheck_ViewOverwritten, NamesTheHostWriteWhenItOverwrote) {
  Trace t = two_prefill_layers();
  t.view_reads.push_back(view_read(1, 2, true));
  auto v = run_check(run_view_overwritten, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_TRUE(contains(v[0].message, "; the host write of call 2 (proj) overwrote that BO"));
}

TEST(TraceCheck_ViewOverwritten, SaysAnotherCallWhenOverwriterUnknown) {
  Trace t = two_prefill_layers();
  t.view_reads.push_back(view_read(1, 0, false));
  auto v = run_check(run_view_overwritten, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_TRUE(contains(v[0].message, "; another call overwrote that BO"));
}

TEST(TraceCheck_ViewOverwritten, SilentWithoutViewReads) {
  EXPECT_TRUE(run_check(run_view_overwritten, two_prefill_layers()).empty());
}

TEST(TraceCheck_ViewOverwritten, SkipsReadOfUnknownCall) {
  Trace t = two_prefill_layers();
  t.view_reads.push_back(view_read(9, 2, false));
  EXPECT_TRUE(run_check(run_view_overwritten, t).empty());
}

TEST(TraceCheck_ViewOverwritten, SilentWithoutRunCapability) {
  Trace t = two_prefill_layers();
  t.view_reads.push_back(view_read(1, 2, false));
  t.header.caps.run = false;
  EXPECT_TRUE(run_check(run_view_overwritten, t).empty());
}

TEST(TraceCheck_ViewOverwritten, ReadsOfOneViewAreOneFinding) {
  Trace t = two_prefill_layers();
  t.view_reads.push_back(view_read(1, 2, false));
  auto again = view_read(1, 2, false);
  again.reader = "call 5 (attn)";
  t.view_reads.push_back(again);
  auto v = run_check(run_view_overwritten, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].occurrences, 1);
  EXPECT_EQ(evidence(v[0], "read by"), "the end-to-end verification");
}

// ---- placeholder-upload -------------------------------------------------------------------

// Weights preloaded by call 1 (w[0]) and replaced by a placeholder on call 2, whose key is
// `key2`: the same key (harmless, the slot is skipped) or a new one (the placeholder is
// uploaded as the weights).
TraceBuilder placeholder_after_preload(const std::string& key2) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "proj_L0").statics({1}).slot(1).tensor("w[0]").hash(5);
  b.call("proj", key2).statics({1}).slot(1).placeholder("w[0]").hash(kZerosHash).pre(5, 5);
  return b;
}

TEST(TraceCheck_PlaceholderUpload, SilentWhenPlaceholderOnLaterCallsStaticSlot) {
  Trace t = placeholder_after_preload("proj_L0").build();
  ASSERT_FALSE(t.calls[1].slots[1].written);
  EXPECT_TRUE(run_check(run_placeholder_upload, t).empty());
}

TEST(TraceCheck_PlaceholderUpload, FiresWhenPlaceholderOnFirstCallOfKeyLint) {
  auto b = placeholder_after_preload("proj_L1");
  b.identities_only();
  auto v = run_check(run_placeholder_upload, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "placeholder-upload");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 2);
  EXPECT_EQ(f.slot, 1);
  EXPECT_TRUE(f.first_call_of_key);
  EXPECT_EQ(f.message,
            "placeholder for 'w[0]' is uploaded into slot w on the first call of bo_key 'proj_L1'");
}

TEST(TraceCheck_PlaceholderUpload, FiresWhenPlaceholderOnNonStaticSlotLint) {
  auto b = placeholder_after_preload("proj_L0");
  b.identities_only();
  b.at(2).slot(0).placeholder("emb");
  auto v = run_check(run_placeholder_upload, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 0);
  EXPECT_EQ(v[0].message,
            "placeholder for 'emb' is uploaded into slot x (not static: written every call)");
}

TEST(TraceCheck_PlaceholderUpload, FiresWhenPlaceholderWrittenRun) {
  // Lint sees a skipped static slot; the (recorded) engine wrote it anyway.
  auto b = placeholder_after_preload("proj_L0");
  b.at(2).slot(1).written().pre(kZerosHash, 5);
  auto v = run_check(run_placeholder_upload, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].message,
            "placeholder for 'w[0]' was written into slot w; the kernel ran on placeholder data "
            "instead of the weights");
  EXPECT_EQ(evidence(v[0], "device bytes reuse vs no-reuse"), hash_pair(kZerosHash, 5));
}

TEST(TraceCheck_PlaceholderUpload, RunEvidenceIsBytesWrittenWithoutNoReuse) {
  auto b = placeholder_after_preload("proj_L0");
  b.at(2).slot(1).written();
  b.caps(only_caps(true, false));
  auto v = run_check(run_placeholder_upload, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(evidence(v[0], "bytes written"), "64");
  EXPECT_EQ(evidence(v[0], "device bytes reuse vs no-reuse"), "<absent>");
}

TEST(TraceCheck_PlaceholderUpload, RunSilentWhenCallFailed) {
  auto b = placeholder_after_preload("proj_L0");
  b.at(2).slot(1).written();
  b.at(2).failed();
  EXPECT_TRUE(run_check(run_placeholder_upload, b.build()).empty());
}

TEST(TraceCheck_PlaceholderUpload, LintAndRunOfFirstCallMerge) {
  // Full capabilities: the first call of proj_L1 writes the placeholder; one finding.
  Trace t = placeholder_after_preload("proj_L1").build();
  ASSERT_TRUE(t.calls[1].slots[1].written);
  auto v = run_check(run_placeholder_upload, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].occurrences, 1);
  EXPECT_TRUE(contains(v[0].message, "is uploaded into slot w on the first call"));
}

// ---- alias-conflict -----------------------------------------------------------------------

// A norm whose gamma slot g is static, with slot `aliased` on pool p.
TraceBuilder norm_with_alias(int aliased) {
  TraceBuilder b;
  b.kernel("norm", {"x", "g", "out"});
  b.call("norm", "norm_L0")
      .path("/program/phases/0/steps/1")
      .statics({1})
      .alias(aliased, "p")
      .slot(1)
      .tensor("g[0]");
  return b;
}

TEST(TraceCheck_AliasConflict, SilentOnAliasedStaticSlot) {
  // The real engine raises on it: config-error's (below), not a conflict, lint or run.
  auto b = norm_with_alias(1);
  Trace t = b.build();
  EXPECT_TRUE(t.calls[0].failed);
  EXPECT_TRUE(run_check(run_alias_conflict, t).empty())
      << describe(run_check(run_alias_conflict, t));
  b.identities_only();
  EXPECT_TRUE(run_check(run_alias_conflict, b.build()).empty());
  EXPECT_EQ(run_check(run_config_error, b.build()).size(), 1u);
}

TEST(TraceCheck_AliasConflict, SilentOnAliasedInputSlotLint) {
  auto b = norm_with_alias(0);
  b.identities_only();
  EXPECT_TRUE(run_check(run_alias_conflict, b.build()).empty());
  EXPECT_TRUE(run_check(run_config_error, b.build()).empty());
}

// One call of `add` with slots a and b on the pools pool_a and pool_b.
TraceBuilder add_on_pools(const std::string& pool_a, const std::string& pool_b) {
  TraceBuilder b;
  b.kernel("add", {"a", "b", "out"});
  b.call("add", "add").alias(0, pool_a).alias(1, pool_b);
  return b;
}

TEST(TraceCheck_AliasConflict, FiresOnTwoSlotsOnOnePoolLint) {
  auto b = add_on_pools("p", "p");
  b.identities_only();
  auto v = run_check(run_alias_conflict, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].message, "slots 0 and 1 of one call share alias pool 'p'");
}

TEST(TraceCheck_AliasConflict, SilentOnTwoSlotsOnTwoPools) {
  EXPECT_TRUE(run_check(run_alias_conflict, add_on_pools("p", "q").build()).empty());
}

TEST(TraceCheck_AliasConflict, TwoSlotsOnOnePoolFireRunForBothSlots) {
  auto v = run_check(run_alias_conflict, add_on_pools("p", "p").build());
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[0].slot, 0);
  EXPECT_EQ(v[0].message, "slot a shares its BO with another slot of the same call");
  EXPECT_EQ(v[1].slot, 1);
  EXPECT_EQ(v[1].occurrences, 1);
  EXPECT_TRUE(contains(v[1].message, "share alias pool 'p'"));  // lint's, merged first
}

TEST(TraceCheck_AliasConflict, FiresWhenTwoSlotsShareABoRun) {
  // No alias declared (lint is silent): the recorded placement puts b on a's BO.
  TraceBuilder b;
  b.kernel("add", {"a", "b", "out"});
  b.call("add", "add").slot(1).bo(BoPool::key, "add", 0);
  auto v = run_check(run_alias_conflict, b.build());
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[0].slot, 0);
  EXPECT_EQ(v[1].slot, 1);
  EXPECT_EQ(v[1].message, "slot b shares its BO with another slot of the same call");

  b.at(1).slot(1).bo(BoPool::key, "add", 1);
  EXPECT_TRUE(run_check(run_alias_conflict, b.build()).empty());
}

// A producer writes var 'h' (hash 5) into alias pool act; the consumer binds 'h' to the same
// pool, and its slot is skipped. The no-reuse engine has `noreuse` there.
TraceBuilder alias_handoff(uint64_t noreuse) {
  TraceBuilder b;
  b.kernel("prod", {"x", "y"}).kernel("cons", {"y", "z"});
  b.call("prod", "P").alias(1, "act").slot(1).var("h").hash(5);
  b.call("cons", "C").alias(0, "act").slot(0).var("h").hash(noreuse).skipped().pre(5, noreuse);
  b.at(2).slot(0).access(true, false, false);  // the consumer reads its input
  return b;
}

TEST(TraceCheck_AliasConflict, FiresWhenAliasedSlotStaleRun) {
  auto v = run_check(run_alias_conflict, alias_handoff(6).build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 0);
  EXPECT_EQ(v[0].kernel, "cons");
  EXPECT_EQ(v[0].message,
            "aliased slot y (pool 'act') was not written and it holds 'h' written by the host at "
            "call 1, not what the no-reuse engine had");
  EXPECT_EQ(evidence(v[0], "device bytes reuse vs no-reuse"), hash_pair(5, 6));
  EXPECT_NE(evidence(v[0], "severity").find("reads the slot before writing it"), std::string::npos);
}

// Severity from what the bytes do: a consumer that overwrites the aliased slot before any read
// never sees what another user left there.
TEST(TraceCheck_AliasConflict, SilentWhenTheKernelOverwritesTheStaleAliasFirst) {
  auto b = alias_handoff(6);
  b.at(2).slot(0).access(false, true, true);
  EXPECT_TRUE(run_check(run_alias_conflict, b.build()).empty());
}

TEST(TraceCheck_AliasConflict, WithoutAccessFactsAStaleAliasIsAssumedRead) {
  auto b = alias_handoff(6);
  b.at(2).slot(0).access(false, true, true);
  Capabilities c = b.build().header.caps;
  c.access = false;
  b.caps(c);
  EXPECT_EQ(run_check(run_alias_conflict, b.build()).size(), 1u);
}

TEST(TraceCheck_AliasConflict, SilentWhenAliasedBytesMatchRun) {
  EXPECT_TRUE(run_check(run_alias_conflict, alias_handoff(5).build()).empty());
}

TEST(TraceCheck_AliasConflict, SilentWhenAliasWasWrittenRun) {
  auto b = alias_handoff(6);
  b.at(2).slot(0).written();
  EXPECT_TRUE(run_check(run_alias_conflict, b.build()).empty());
}

TEST(TraceCheck_AliasConflict, RunPartNeedsNoReuse) {
  auto b = alias_handoff(6);
  b.caps(only_caps(true, false));
  EXPECT_TRUE(run_check(run_alias_conflict, b.build()).empty());
}

// ---- missed-static ------------------------------------------------------------------------

// `calls` calls of one key whose input slot w is bound to the same tensor (constant hash);
// x is a var (changes every call), out the output.
TraceBuilder constant_weight(int calls) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  for (int i = 0; i < calls; ++i) {
    auto& c = b.call("proj", "proj_L0");
    c.slot(0).var("x");
    c.slot(1).tensor("w[0]").hash(5);
  }
  return b;
}

TEST(TraceCheck_MissedStatic, NotesConstantInputOverTwoCalls) {
  auto v = run_check(run_missed_static, constant_weight(2).build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "missed-static");
  EXPECT_EQ(f.severity, Severity::note);
  EXPECT_EQ(f.call, 1);
  EXPECT_EQ(f.slot, 1);
  EXPECT_EQ(f.key_first_call, 1);
  EXPECT_EQ(f.message,
            "slot w of bo_key 'proj_L0' is re-uploaded with the same 64 bytes on all 2 calls; "
            "static would save 64 bytes per later call");
  EXPECT_EQ(evidence(f, "calls"), "2");
  EXPECT_EQ(evidence(f, "bytes/call"), "64");
}

TEST(TraceCheck_MissedStatic, SilentWithOneCall) {
  EXPECT_TRUE(run_check(run_missed_static, constant_weight(1).build()).empty());
}

TEST(TraceCheck_MissedStatic, SilentWhenHashChanges) {
  auto b = constant_weight(2);
  b.at(2).slot(1).hash(6);
  EXPECT_TRUE(run_check(run_missed_static, b.build()).empty());
}

TEST(TraceCheck_MissedStatic, SilentForZerosSource) {
  auto b = constant_weight(2);
  b.at(1).slot(1).zeros().hash(5);
  b.at(2).slot(1).zeros().hash(5);
  EXPECT_TRUE(run_check(run_missed_static, b.build()).empty());
}

TEST(TraceCheck_MissedStatic, SilentWhenKernelWritesTheSlot) {
  auto b = constant_weight(2);
  b.at(2).slot(1).post(5, 7);
  EXPECT_TRUE(run_check(run_missed_static, b.build()).empty());
}

TEST(TraceCheck_MissedStatic, SilentWhenAlreadyStatic) {
  auto b = constant_weight(2);
  b.at(1).statics({1});
  b.at(2).statics({1});
  EXPECT_TRUE(run_check(run_missed_static, b.build()).empty());
}

TEST(TraceCheck_MissedStatic, SilentAcrossNamespaces) {
  auto b = constant_weight(2);
  b.at(2).ns("engine2");
  EXPECT_TRUE(run_check(run_missed_static, b.build()).empty());
}

TEST(TraceCheck_MissedStatic, IgnoresFailedCalls) {
  auto b = constant_weight(3);
  b.at(2).failed().slot(1).hash(6);
  auto v = run_check(run_missed_static, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_TRUE(contains(v[0].message, "on all 2 calls"));
}

// ---- missed-intermediate ------------------------------------------------------------------

// `calls` calls of one key whose output slot out is a plain input, written by the host and
// fully overwritten by the body before any read.
TraceBuilder overwritten_output(int calls) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  for (int i = 0; i < calls; ++i) {
    auto& c = b.call("proj", "proj_L0").statics({1});
    c.slot(0).var("x");
    c.slot(1).tensor("w[0]");
    c.slot(2).var("y").access(false, true, true);
  }
  return b;
}

TEST(TraceCheck_MissedIntermediate, NotesSlotOverwrittenOnEveryCall) {
  auto v = run_check(run_missed_intermediate, overwritten_output(2).build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "missed-intermediate");
  EXPECT_EQ(f.severity, Severity::note);
  EXPECT_EQ(f.call, 1);
  EXPECT_EQ(f.slot, 2);
  EXPECT_EQ(f.message,
            "slot out of bo_key 'proj_L0' is overwritten by the kernel before any read on all 2 "
            "calls but uploaded each time; intermediate would save 64 bytes per later call");
  EXPECT_EQ(evidence(f, "calls"), "2");
}

TEST(TraceCheck_MissedIntermediate, SilentWhenOneCallReadsIt) {
  auto b = overwritten_output(2);
  b.at(2).slot(2).access(true, false, true);
  EXPECT_TRUE(run_check(run_missed_intermediate, b.build()).empty());
}

TEST(TraceCheck_MissedIntermediate, SilentWithOneCall) {
  EXPECT_TRUE(run_check(run_missed_intermediate, overwritten_output(1).build()).empty());
}

TEST(TraceCheck_MissedIntermediate, SilentWhenAlreadyIntermediate) {
  auto b = overwritten_output(2);
  b.at(1).inters({2});
  b.at(2).inters({2});
  EXPECT_TRUE(run_check(run_missed_intermediate, b.build()).empty());
}

TEST(TraceCheck_MissedIntermediate, SilentWithoutAccessCapability) {
  auto b = overwritten_output(2);
  b.caps(only_caps(true, true, true, false));
  EXPECT_TRUE(run_check(run_missed_intermediate, b.build()).empty());
}

// ---- config-error -------------------------------------------------------------------------

const std::string kPath = "/program/phases/0/steps/3";

TEST(TraceCheck_ConfigError, FiresOnIndexOutOfRange) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).statics({1, 5});
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "config-error");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 1);
  EXPECT_EQ(f.slot, -1);
  EXPECT_EQ(f.key_first_call, 0);
  EXPECT_EQ(f.path, kPath + "/static_input_indices/1");
  EXPECT_EQ(f.message, "static_input_indices index 5 is out of range; k has slots 0..2");
}

TEST(TraceCheck_ConfigError, FiresOnNegativeIndex) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).inters({-1});
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].path, kPath + "/intermediate_indices/0");
  EXPECT_EQ(v[0].message, "intermediate_indices index -1 is out of range; k has slots 0..2");
}

TEST(TraceCheck_ConfigError, FiresOnDuplicateIndex) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).inters({2, 2});
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, 2);
  EXPECT_EQ(v[0].path, kPath + "/intermediate_indices/1");
  EXPECT_EQ(v[0].message, "intermediate_indices lists slot 2 twice");
}

TEST(TraceCheck_ConfigError, FiresOnStaticAndIntermediate) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).statics({1}).inters({1});
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].path, kPath + "/static_input_indices/0");
  EXPECT_EQ(v[0].message, "slot is both static and intermediate");
}

TEST(TraceCheck_ConfigError, FiresOnOutputDeclaredStatic) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).statics({0, 2});
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, 2);
  EXPECT_EQ(v[0].path, kPath + "/static_input_indices/1");
  EXPECT_EQ(v[0].message, "output slot is declared static");
}

TEST(TraceCheck_ConfigError, KeepsOnlyFirstProblemOfOneSlot) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).statics({2}).inters({2});
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].occurrences, 1);
  EXPECT_EQ(v[0].message, "slot is both static and intermediate");
}

TEST(TraceCheck_ConfigError, FiresOnAliasSlotOutOfRange) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).alias(7, "p");
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_EQ(v[0].slot, -1);
  EXPECT_EQ(v[0].path, kPath + "/shared_alias");
  EXPECT_EQ(v[0].message,
            "shared_alias slot 7 is out of range; k has slots 0..2; the real engine raises "
            "ValueError here");
}

TEST(TraceCheck_ConfigError, FiresOnAliasedStaticSlotRaisesInRealEngine) {
  auto b = norm_with_alias(1);
  b.identities_only();
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "config-error");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 1);
  EXPECT_EQ(f.slot, 1);
  EXPECT_EQ(f.slot_name, "g");
  EXPECT_EQ(f.path, "/program/phases/0/steps/1/shared_alias");
  EXPECT_EQ(f.message,
            "static slot g is aliased to pool 'p'; the real engine raises ValueError here (an "
            "alias would share one layer's weights across every bo_key)");
}

TEST(TraceCheck_ConfigError, SilentOnAliasedInputSlot) {
  auto b = norm_with_alias(0);
  b.identities_only();
  EXPECT_TRUE(run_check(run_config_error, b.build()).empty());
}

TEST(TraceCheck_ConfigError, FiresOnEmptyAliasPoolName) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).alias(2, "");
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, 2);
  EXPECT_EQ(v[0].path, kPath + "/shared_alias");
  EXPECT_EQ(v[0].message,
            "shared_alias pool name of slot 2 is empty; the real engine raises ValueError here");
  b.at(1).alias(2, "h");  // the twin: named
  EXPECT_TRUE(run_check(run_config_error, b.build()).empty());
}

TEST(TraceCheck_ConfigError, CallTheEngineRaisesOnFailsAndDoesNotCreateItsKey) {
  auto b = norm_with_alias(1);
  b.call("norm", "norm_L0").statics({1}).slot(1).tensor("g[0]");
  Trace t = b.build();
  EXPECT_TRUE(t.calls[0].failed);
  EXPECT_TRUE(contains(t.calls[0].error, "ValueError"));
  EXPECT_FALSE(t.calls[0].slots[1].written);
  EXPECT_TRUE(t.calls[0].outputs_cmp.empty());
  // Call 2 is the key's first call: it sets the BO list up and writes its static slot.
  EXPECT_EQ(t.calls[1].key_first_call, 2);
  EXPECT_FALSE(t.calls[1].failed);
  EXPECT_TRUE(t.calls[1].slots[1].written);
}

TEST(TraceCheck_ConfigError, InconsistentDeclarationsExcludeEngineRaises) {
  // Only the declaration rules stop `check` from running the plan; the shared_alias rules
  // fail their call in the run, as in the real engine.
  auto alias_static = norm_with_alias(1);
  alias_static.identities_only();
  EXPECT_FALSE(has_inconsistent_declarations(alias_static.build()));
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").alias(7, "p");
  b.call("k", "k_L1").alias(2, "");
  EXPECT_FALSE(has_inconsistent_declarations(b.build()));
  EXPECT_EQ(run_check(run_config_error, b.build()).size(), 2u);
  for (auto decl : {std::vector<int>{5}, std::vector<int>{1, 1}, std::vector<int>{2}}) {
    TraceBuilder d;
    d.identities_only().kernel("k", {"a", "b", "out"});
    d.call("k", "k_L0").statics(decl);
    EXPECT_TRUE(has_inconsistent_declarations(d.build())) << decl.size();
  }
  TraceBuilder both;
  both.identities_only().kernel("k", {"a", "b", "out"});
  both.call("k", "k_L0").statics({1}).inters({1});
  EXPECT_TRUE(has_inconsistent_declarations(both.build()));
  TraceBuilder clean;
  clean.identities_only().kernel("k", {"a", "b", "out"});
  clean.call("k", "k_L0").statics({1}).inters({2});
  EXPECT_FALSE(has_inconsistent_declarations(clean.build()));
}

TEST(TraceCheck_ConfigError, KeepsRecordedSourceLocationAsPath) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path("engine.py:42").statics({5});
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].path, "engine.py:42");
}

// A recorded call's location stays "file:line" for every entry (editors parse it), never
// "file:line/shared_alias".
TEST(TraceCheck_ConfigError, RecordedAliasLocationIsFileAndLine) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path("engine.py:9").statics({1}).alias(1, "pool");
  auto v = run_check(run_config_error, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].path, "engine.py:9");
  TraceBuilder m;  // a model.json call: the pointer of its member
  m.identities_only().kernel("k", {"a", "b", "out"});
  m.call("k", "k_L0").path(kPath).statics({1}).alias(1, "pool");
  EXPECT_EQ(run_check(run_config_error, m.build())[0].path, std::string(kPath) + "/shared_alias");
}

TEST(TraceCheck_ConfigError, SilentOnCleanCall) {
  TraceBuilder b;
  b.identities_only().kernel("k", {"a", "b", "out"});
  b.call("k", "k_L0").path(kPath).statics({1}).inters({2}).outputs({2});
  EXPECT_TRUE(run_check(run_config_error, b.build()).empty());
  b.at(1).statics({1, 1});  // the twin: one duplicated entry
  EXPECT_EQ(run_check(run_config_error, b.build()).size(), 1u);
}

}  // namespace
}  // namespace bod
