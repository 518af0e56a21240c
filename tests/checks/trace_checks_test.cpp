// Unit tests of stale-static, key-collision, size-mismatch, static-clobber, intermediate-read
// and partial-overwrite on small hand-built Traces (tests/checks/trace_builder.h), independent
// of the fixture models. Each rule gets a trace that fires it and a twin differing in the one
// fact the rule depends on, so a change in a rule's condition, message or merge behaviour fails
// here before it shows in a golden report. The other checks are in trace_checks_more_test.cpp;
// the builder, registry, residents and summary in trace_checks_run_test.cpp.
#include <gtest/gtest.h>

#include "checks/checks.h"
#include "checks/registry.h"
#include "checks/trace_builder.h"

namespace bod {
namespace {

// ---- stale-static -------------------------------------------------------------------------

// Two decode calls of one key: call 1 uploads var 'lut' (hash 11); on call 2 the same binding
// holds hash 12 but the static write is skipped, so the reuse BO still has 11.
TraceBuilder stale_lut() {
  TraceBuilder b;
  b.kernel("rope", {"x", "lut", "out"});
  b.call("rope", "rope_dec").statics({1}).token(0).slot(1).var("lut").hash(11);
  b.call("rope", "rope_dec").statics({1}).token(1).slot(1).var("lut").hash(12).pre(11, 12);
  b.at(2).diverged(2, 0.9);  // the stale LUT changed the output
  return b;
}

// Severity from evidence: the same stale slot with bit-identical shadow outputs is a note that
// says why; without compared outputs (a plain recording) it stays an error.
TEST(TraceCheck_StaleStatic, NoteWhenTheOutputsAreBitIdentical) {
  TraceBuilder b;
  b.kernel("rope", {"x", "lut", "out"});
  b.call("rope", "rope_dec").statics({1}).token(0).slot(1).var("lut").hash(11);
  b.call("rope", "rope_dec").statics({1}).token(1).slot(1).var("lut").hash(12).pre(11, 12);
  auto v = run_check(run_stale_static, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::note);
  EXPECT_NE(v[0].message.find("bit-identical"), std::string::npos) << v[0].message;
  b.caps(only_caps(true, false));
  b.at(2).slot(1).pre(11, 0);
  v = run_check(run_stale_static, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::error);
}

TEST(TraceCheck_StaleStatic, FiresWhenSkippedStaticDataChanged) {
  auto v = run_check(run_stale_static, stale_lut().build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "stale-static");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 2);
  EXPECT_EQ(f.slot, 1);
  EXPECT_EQ(f.slot_name, "lut");
  EXPECT_EQ(f.kernel, "rope");
  EXPECT_EQ(f.bo_key, "rope_dec");
  EXPECT_EQ(f.key_first_call, 1);
  EXPECT_FALSE(f.first_call_of_key);
  EXPECT_FALSE(f.latent);
  EXPECT_EQ(f.token, 1);
  EXPECT_EQ(f.message,
            "static slot lut bound to 'lut' changed since call 1 but was not rewritten; the "
            "kernel read the old data");
  EXPECT_EQ(evidence(f, "data written at call"), "1");
  EXPECT_EQ(evidence(f, "device bytes reuse vs no-reuse"), hash_pair(11, 12));
  EXPECT_FALSE(f.fix.empty());
}

TEST(TraceCheck_StaleStatic, SilentWhenHostHashEqualsResidentWrite) {
  // The host data is what call 1 wrote: the BO was clobbered, not the data changed.
  auto b = stale_lut();
  b.at(2).slot(1).hash(11);
  EXPECT_TRUE(run_check(run_stale_static, b.build()).empty());
}

TEST(TraceCheck_StaleStatic, ComparesWithWrittenHashNotHostHashOfFirstCall) {
  // Call 1 wrote other bytes (42) than its host hash: call 2's hash 11 is a change.
  auto b = stale_lut();
  b.at(1).slot(1).written(42);
  b.at(2).slot(1).hash(11);
  auto v = run_check(run_stale_static, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
}

// Names do not decide: a slot whose data moves on (11, 12) is stale-static whatever it is
// bound to; data that comes back after other data (11, 12, 11) is key-collision's run part.
TEST(TraceCheck_StaleStatic, BytesNotBindingNamesDecide) {
  auto b = stale_lut();
  b.at(2).slot(1).var("lut2");
  Trace t = b.build();
  EXPECT_EQ(run_check(run_stale_static, t).size(), 1u);
  EXPECT_TRUE(run_check(run_key_collision, t).empty());
  b.call("rope", "rope_dec").statics({1}).token(2).slot(1).var("lut").hash(11);
  t = b.build();
  EXPECT_TRUE(run_check(run_stale_static, t).empty());
  auto k = run_check(run_key_collision, t);
  ASSERT_EQ(k.size(), 1u) << describe(k);
  EXPECT_EQ(k[0].call, 2);
  EXPECT_EQ(k[0].slot, 1);
}

TEST(TraceCheck_StaleStatic, SilentWhenSlotIsAliased) {
  // Call 1 set the key up with lut in an alias pool (not static there: an alias on a static
  // slot raises); call 2 declares it static and reuses that BO list, so its static slot is
  // aliased: alias-conflict's to report.
  auto b = stale_lut();
  b.at(1).statics({}).alias(1, "lut_pool");
  Trace t = b.build();
  ASSERT_EQ(t.calls[1].slots[1].place.pool, BoPool::alias);
  ASSERT_EQ(t.calls[1].slots[1].role, SlotRole::static_input);
  ASSERT_FALSE(t.calls[1].failed);
  EXPECT_TRUE(run_check(run_stale_static, t).empty());
  // The twin without the alias: the same non-static first call, then the skipped static slot.
  auto twin = stale_lut();
  twin.at(1).statics({});
  EXPECT_EQ(run_check(run_stale_static, twin.build()).size(), 1u);
}

TEST(TraceCheck_StaleStatic, SilentWhenCallFailed) {
  auto b = stale_lut();
  b.at(2).failed();
  EXPECT_TRUE(run_check(run_stale_static, b.build()).empty());
}

TEST(TraceCheck_StaleStatic, SilentWhenPlaceholder) {
  auto b = stale_lut();
  b.at(2).slot(1).placeholder("lut").hash(12);
  EXPECT_TRUE(run_check(run_stale_static, b.build()).empty());
}

TEST(TraceCheck_StaleStatic, SilentWhenSlotWasWritten) {
  auto b = stale_lut();
  b.at(2).slot(1).written();
  EXPECT_TRUE(run_check(run_stale_static, b.build()).empty());
}

TEST(TraceCheck_StaleStatic, SilentWhenBoIsOfAnotherSize) {
  // A resized BO is size-mismatch's finding, not this one (a larger array on the skipped
  // slot: truncated). A smaller one on a skipped slot writes nothing and is no size-mismatch.
  auto b = stale_lut();
  b.at(2).slot(1).bytes(4096);
  Trace t = b.build();
  EXPECT_TRUE(run_check(run_stale_static, t).empty());
  EXPECT_FALSE(run_check(run_size_mismatch, t).empty());
}

// A plain recording (no no-reuse engine): the no-reuse engine would have written the host
// array the call passed, so the BO's bytes before dispatch are compared with its hash.
TEST(TraceCheck_StaleStatic, FiresWithoutNoReuseFromTheHostHash) {
  auto b = stale_lut();
  b.caps(only_caps(true, false));
  b.at(2).slot(1).pre(11, 0);
  auto v = run_check(run_stale_static, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(evidence(v[0], "device bytes before dispatch vs the call's host data"),
            hash_pair(11, 12));
}

// The fix follows the evidence: without layer labels, per-layer weights under a key lacking the
// layer look like data that changes per call, so the per-layer key is named first; labels of
// one layer on both calls say the data changes per call.
TEST(TraceCheck_StaleStatic, FixFitsTheLayerEvidence) {
  auto v = run_check(run_stale_static, stale_lut().build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_TRUE(contains(v[0].fix, "weights that differ per layer, give each layer its own bo_key"));
  EXPECT_TRUE(contains(evidence(v[0], "layers"), "no layer labels"));
  auto b = stale_lut();
  b.at(1).layer(0);
  b.at(2).layer(0);
  v = run_check(run_stale_static, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].fix, stale_static_info().fix);
  EXPECT_EQ(evidence(v[0], "layers"), "<absent>");
}

// Two caches may use one key name: their findings stay apart and name the cache; every call a
// finding was seen on is listed.
TEST(TraceCheck_StaleStatic, OneKeyNameInTwoCachesStaysApart) {
  TraceBuilder b;
  b.kernel("rope", {"x", "lut", "out"});
  for (const char* ns : {"prefill", "decode"}) {
    b.call("rope", "rope").ns(ns).statics({1}).token(0).slot(1).var("lut").hash(11);
    b.call("rope", "rope").ns(ns).statics({1}).token(1).slot(1).var("lut").hash(12).pre(11, 12);
    b.call("rope", "rope").ns(ns).statics({1}).token(2).slot(1).var("lut").hash(13).pre(11, 13);
  }
  auto v = run_check(run_stale_static, b.build());
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[0].ns, "prefill");
  EXPECT_EQ(v[1].ns, "decode");
  EXPECT_EQ(v[0].calls, (std::vector<int>{2, 3}));
  EXPECT_EQ(v[1].calls, (std::vector<int>{5, 6}));
  EXPECT_EQ(key_label(v[1].ns, v[1].bo_key), "decode/rope");
}

TEST(TraceCheck_StaleStatic, SilentWithoutNoReuseWhenTheBoHoldsTheHostData) {
  auto b = stale_lut();
  b.caps(only_caps(true, false));
  b.at(2).slot(1).pre(12, 0);  // the BO already holds this call's data
  EXPECT_TRUE(run_check(run_stale_static, b.build()).empty());
  auto p = stale_lut();  // a placeholder's bytes say nothing of what the call meant
  p.caps(only_caps(true, false));
  p.at(2).slot(1).placeholder("lut").hash(12).pre(11, 0);
  EXPECT_TRUE(run_check(run_stale_static, p.build()).empty());
}

TEST(TraceCheck_StaleStatic, RepeatsMergeIntoFirstOccurrence) {
  auto b = stale_lut();
  b.call("rope", "rope_dec").statics({1}).token(2).slot(1).var("lut").hash(13).pre(11, 13);
  auto v = run_check(run_stale_static, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].occurrences, 2);
  EXPECT_EQ(v[0].last_call, 3);
  EXPECT_TRUE(contains(v[0].message, "changed since call 1"));
}

// ---- key-collision ------------------------------------------------------------------------

// Two layers binding w[0] and w[1] to the static slot, under keys key0 and key1.
TraceBuilder two_layers(const std::string& key0, const std::string& key1) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", key0).statics({1}).layer(0).slot(1).tensor("w[0]").hash(5);
  b.call("proj", key1).statics({1}).layer(1).slot(1).tensor("w[1]").hash(6).pre(5, 6);
  b.at(2).diverged(2, 0.5);  // layer 1 ran on layer 0's weights
  return b;
}

TEST(TraceCheck_KeyCollision, FiresWhenOneKeyBindsTwoTensorsLint) {
  auto b = two_layers("proj_dec", "proj_dec");
  b.identities_only();
  auto v = run_check(run_key_collision, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "key-collision");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 2);
  EXPECT_EQ(f.slot, 1);
  EXPECT_EQ(f.layer, 1);
  EXPECT_EQ(f.key_first_call, 1);
  EXPECT_EQ(f.message,
            "bo_key 'proj_dec' already holds 'w[0]' in static slot w; this call binds 'w[1]', "
            "which will not be written");
  EXPECT_EQ(evidence(f, "resident binding"), "w[0]");
  EXPECT_EQ(evidence(f, "this binding"), "w[1]");
}

TEST(TraceCheck_KeyCollision, SilentWithPerLayerKeysLint) {
  auto b = two_layers("proj_L0", "proj_L1");
  b.identities_only();
  EXPECT_TRUE(run_check(run_key_collision, b.build()).empty());
}

TEST(TraceCheck_KeyCollision, SilentInAnotherNamespaceLint) {
  auto b = two_layers("proj_dec", "proj_dec");
  b.identities_only();
  b.at(2).ns("engine2");
  EXPECT_TRUE(run_check(run_key_collision, b.build()).empty());
}

TEST(TraceCheck_KeyCollision, LintComparesPlaceholderBindings) {
  auto b = two_layers("proj_dec", "proj_dec");
  b.identities_only();
  b.at(2).slot(1).placeholder("w[1]");
  auto v = run_check(run_key_collision, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(evidence(v[0], "this binding"), "w[1]");
}

TEST(TraceCheck_KeyCollision, LintLeavesVarBindingsToTheRun) {
  auto b = two_layers("proj_dec", "proj_dec");
  b.identities_only();
  b.at(1).slot(1).var("h0");
  b.at(2).slot(1).var("h1");
  EXPECT_TRUE(run_check(run_key_collision, b.build()).empty());
}

TEST(TraceCheck_KeyCollision, LintRepeatsMergeIntoFirstOccurrence) {
  auto b = two_layers("proj_dec", "proj_dec");
  b.identities_only();
  b.call("proj", "proj_dec").statics({1}).layer(2).slot(1).tensor("w[2]");
  auto v = run_check(run_key_collision, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].occurrences, 2);
  EXPECT_EQ(v[0].last_call, 3);
  EXPECT_EQ(evidence(v[0], "this binding"), "w[1]");
}

TEST(TraceCheck_KeyCollision, FiresWhenStaleStaticHoldsOtherBindingRun) {
  // Vars: the lint part is silent, only the run sees the collision: the next token's layer 0
  // passes h0's bytes again (5, 6, 5: the data comes back).
  auto b = two_layers("proj_dec", "proj_dec");
  b.at(1).slot(1).var("h0");
  b.at(2).slot(1).var("h1");
  b.call("proj", "proj_dec").statics({1}).layer(0).slot(1).var("h0").hash(5).pre(5, 5);
  auto v = run_check(run_key_collision, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.call, 2);
  EXPECT_EQ(f.slot, 1);
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.message,
            "static slot w should hold 'h1' but the BO of 'proj_dec' still holds 'h0' from call 1");
  EXPECT_EQ(evidence(f, "resident binding"), "h0");
  EXPECT_EQ(evidence(f, "device bytes reuse vs no-reuse"), hash_pair(5, 6));
}

TEST(TraceCheck_KeyCollision, SilentWithPerLayerKeysRun) {
  // Layer 1's key is new: its static slot is written, never stale.
  auto b = two_layers("proj_L0", "proj_L1");
  b.at(1).slot(1).var("h0");
  b.at(2).slot(1).var("h1");
  EXPECT_TRUE(run_check(run_key_collision, b.build()).empty());
}

// Data that moves on within one layer (5, 6) is stale-static; the same bytes with the resident
// written by another layer's call is key-collision. Either way one error at call 2, slot 1.
TEST(TraceCheck_KeyCollision, SilentRunWhenDataMovesOnInOneLayer) {
  auto b = two_layers("proj_dec", "proj_dec");
  b.at(1).slot(1).var("h0");
  b.at(2).slot(1).var("h0");
  b.at(2).layer(0);
  Trace t = b.build();
  EXPECT_TRUE(run_check(run_key_collision, t).empty());
  EXPECT_EQ(run_check(run_stale_static, t).size(), 1u);
  b.at(2).layer(1);
  t = b.build();
  EXPECT_EQ(run_check(run_key_collision, t).size(), 1u);
  EXPECT_TRUE(run_check(run_stale_static, t).empty());
}

TEST(TraceCheck_KeyCollision, LintAndRunOfOneCallMergeKeepingLintMessage) {
  auto v = run_check(run_key_collision, two_layers("proj_dec", "proj_dec").build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].occurrences, 1);
  EXPECT_TRUE(contains(v[0].message, "already holds 'w[0]'"));
}

// ---- size-mismatch ------------------------------------------------------------------------

// Prefill (512 bytes) and decode (64 bytes) share one LM-head key.
TraceBuilder shared_lm_head(bool shared_nonstatic) {
  TraceBuilder b;
  b.kernel("lm_head", {"x", "w", "out"});
  b.call("lm_head", "lm_head").statics({1}).shared_nonstatic(shared_nonstatic).slot(0).bytes(512);
  b.call("lm_head", "lm_head").statics({1}).shared_nonstatic(shared_nonstatic).slot(0).bytes(64);
  return b;
}

TEST(TraceCheck_SizeMismatch, FiresWhenSlotBytesDifferFromKeysFirstCallLint) {
  auto b = shared_lm_head(false);
  b.identities_only();
  auto v = run_check(run_size_mismatch, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "size-mismatch");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 2);
  EXPECT_EQ(f.slot, 0);
  EXPECT_EQ(f.key_first_call, 1);
  EXPECT_EQ(f.message, "slot x is 64 bytes but the BO of 'lm_head' was sized 512 bytes at call 1");
}

TEST(TraceCheck_SizeMismatch, SilentWhenSlotBytesAgreeLint) {
  auto b = shared_lm_head(false);
  b.identities_only();
  b.at(2).slot(0).bytes(512);
  EXPECT_TRUE(run_check(run_size_mismatch, b.build()).empty());
}

TEST(TraceCheck_SizeMismatch, FiresForSmallerSharedNonstaticSlotOnLaterCall) {
  // Pools are looked up only at a key's first call: call 2 reuses call 1's pool BO (512 bytes)
  // whatever its own size, so a shared_nonstatic slot is compared like any other.
  Trace t = shared_lm_head(true).build();
  ASSERT_EQ(t.calls[1].slots[0].place.pool, BoPool::shared);
  EXPECT_EQ(t.calls[1].slots[0].place.label(), "pool:lm_head/0/512");
  EXPECT_EQ(t.calls[1].slots[0].place.bo, t.calls[0].slots[0].place.bo);
  EXPECT_FALSE(t.calls[1].failed);  // smaller: a prefix write
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 0);
  EXPECT_EQ(v[0].key_first_call, 1);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_EQ(v[0].message,
            "slot x is 64 bytes but the BO of 'lm_head' was sized 512 bytes at call 1");
  // The run's note on the same slot names the pool BO (merged into lint's finding above).
  EXPECT_EQ(size_note(t, t.calls[1], t.calls[1].slots[0]),
            "slot x is 64 bytes but its BO (pool:lm_head/0/512) was sized 512 bytes at first use");
}

TEST(TraceCheck_SizeMismatch, SilentWhenSharedNonstaticCallHasItsOwnKey) {
  // The twin: on a key of its own, call 2's first call looks the pool up at its own size and
  // gets a BO of its own.
  TraceBuilder own;
  own.kernel("lm_head", {"x", "w", "out"});
  own.call("lm_head", "lm_head_pre").statics({1}).shared_nonstatic().slot(0).bytes(512);
  own.call("lm_head", "lm_head_dec").statics({1}).shared_nonstatic().slot(0).bytes(64);
  Trace t = own.build();
  EXPECT_EQ(t.calls[1].slots[0].place.label(), "pool:lm_head/0/64");
  EXPECT_NE(t.calls[1].slots[0].place.bo, t.calls[0].slots[0].place.bo);
  EXPECT_TRUE(run_check(run_size_mismatch, t).empty()) << describe(run_check(run_size_mismatch, t));
}

TEST(TraceCheck_SizeMismatch, FiresForStaticSlotEvenWithSharedNonstatic) {
  auto b = shared_lm_head(true);
  b.identities_only();
  b.at(2).slot(0).bytes(512);
  b.at(2).slot(1).bytes(128);
  auto v = run_check(run_size_mismatch, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, 1);
  // Static (skipped) and not read back: larger than its BO is a truncation, not a raise.
  EXPECT_EQ(v[0].severity, Severity::warning);
  EXPECT_EQ(v[0].message,
            "slot w is 128 bytes but the BO of 'lm_head' was sized 64 bytes at "
            "call 1; the write is skipped, so the kernel sees only the first 64 "
            "bytes (truncated)");
}

TEST(TraceCheck_SizeMismatch, LintAndRunOfOneSlotMerge) {
  // Full capabilities: the run's size note on call 2 repeats lint's and is merged into it.
  auto v = run_check(run_size_mismatch, shared_lm_head(false).build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].occurrences, 1);
  EXPECT_TRUE(contains(v[0].message, "was sized 512 bytes at call 1"));
}

TEST(TraceCheck_SizeMismatch, LaterCallComparesWithTheFirstCallsBoNotTheLastCall) {
  // Calls 2 and 3 agree with each other (64 bytes) but not with the BO call 1 set up.
  auto b = shared_lm_head(false);
  b.identities_only();
  b.call("lm_head", "lm_head").statics({1}).slot(0).bytes(64);
  Trace t = b.build();
  EXPECT_EQ(t.calls[2].slots[0].place.bytes, 512u);
  EXPECT_EQ(t.calls[2].slots[0].place.first_call, 1);
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].occurrences, 2);
  EXPECT_EQ(v[0].last_call, 3);
}

// Kernel k3 (3 slots) creates key K; k4 (4 slots) reuses it when same_key.
TraceBuilder slot_counts(bool same_key) {
  TraceBuilder b;
  b.kernel("k3", {"a", "b", "out"}).kernel("k4", {"a", "b", "c", "out"});
  b.call("k3", "K");
  b.call("k4", same_key ? "K" : "K4");
  return b;
}

TEST(TraceCheck_SizeMismatch, FiresWhenSlotCountDiffersLint) {
  auto b = slot_counts(true);
  b.identities_only();
  auto v = run_check(run_size_mismatch, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, -1);
  EXPECT_EQ(v[0].kernel, "k4");
  EXPECT_EQ(v[0].key_first_call, 1);
  EXPECT_EQ(v[0].message,
            "bo_key 'K' was set up with 3 args at call 1 (k3); this call passes 4 and the launch "
            "binds only the first 3");
}

TEST(TraceCheck_SizeMismatch, SilentWhenOtherSlotCountHasOwnKey) {
  auto b = slot_counts(false);
  EXPECT_TRUE(run_check(run_size_mismatch, b.build()).empty());
}

TEST(TraceCheck_SizeMismatch, LaterCallsSlotBeyondFirstCallsCountIsUnbound) {
  Trace t = slot_counts(true).build();
  const TraceCall& c = t.calls[1];
  // Slots 0..2 reuse the BOs call 1 set up, whatever k4 calls them.
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(c.slots[s].place.label(), "key:K/" + std::to_string(s));
    EXPECT_EQ(c.slots[s].place.bo, t.calls[0].slots[s].place.bo);
  }
  const Placement& p = c.slots[3].place;
  EXPECT_EQ(p.pool, BoPool::unbound);
  EXPECT_EQ(p.label(), "unbound:K/3");
  EXPECT_EQ(p.bytes, 0u);
  EXPECT_EQ(p.bo, -1);
  EXPECT_EQ(p.first_call, 1);
  EXPECT_FALSE(c.slots[3].written);
  EXPECT_EQ(c.slots[3].bo_bytes, 0u);
  EXPECT_TRUE(c.failed);  // writing it raises IndexError
  EXPECT_TRUE(contains(c.error, "IndexError"));
}

TEST(TraceCheck_SizeMismatch, RunNotesWrittenUnboundArgumentRaises) {
  // k4's slot 3 (out) is a plain input: the engine writes it, and there is no BO to write.
  auto v = run_check(run_size_mismatch, slot_counts(true).build());
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[0].slot, -1);  // lint
  EXPECT_EQ(v[1].call, 2);
  EXPECT_EQ(v[1].slot, 3);
  EXPECT_EQ(v[1].slot_name, "out");
  EXPECT_EQ(v[1].key_first_call, 1);
  EXPECT_EQ(v[1].severity, Severity::error);
  EXPECT_EQ(v[1].message,
            "argument 3 (out) has no BO: bo_key 'K' was set up with 3 args; the real engine "
            "raises IndexError writing it");
}

TEST(TraceCheck_SizeMismatch, RunNotesSkippedUnboundArgumentIsNeverSeen) {
  // The twin: slot 3 is intermediate on the later call, so the engine skips it; the launch
  // binds only the key's 3 BOs.
  auto b = slot_counts(true);
  b.at(2).inters({3});
  Trace t = b.build();
  ASSERT_EQ(t.calls[1].slots[3].place.pool, BoPool::unbound);
  EXPECT_TRUE(t.calls[1].failed);  // not modelled
  EXPECT_TRUE(contains(t.calls[1].error, "never sees argument 3"));
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[1].slot, 3);
  EXPECT_EQ(v[1].severity, Severity::error);
  EXPECT_EQ(v[1].message,
            "argument 3 (out) has no BO: the launch binds only the 3 BOs of bo_key 'K', so the "
            "kernel never sees it");
}

TEST(TraceCheck_SizeMismatch, SilentOnUnboundArgumentWithoutRunCapability) {
  // Lint says the count differs; only the run part names the argument.
  auto b = slot_counts(true);
  b.identities_only();
  auto v = run_check(run_size_mismatch, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, -1);
}

// A producer's output and a consumer's input on one alias pool name.
TraceBuilder alias_sizes(size_t producer, size_t consumer) {
  TraceBuilder b;
  b.kernel("prod", {"x", "y"}).kernel("cons", {"y", "z"});
  b.call("prod", "P").alias(1, "act").slot(1).bytes(producer);
  b.call("cons", "C").alias(0, "act").slot(0).bytes(consumer);
  return b;
}

TEST(TraceCheck_SizeMismatch, FiresWhenAliasPoolNameGetsTwoSizesLint) {
  auto b = alias_sizes(256, 128);
  b.identities_only();
  Trace t = b.build();
  // Alias pools are keyed by (name, bytes): two BOs, sharing lost. The consumer's slot is
  // written by the host at its key's first call, so nothing reads across sizes: a note.
  EXPECT_EQ(t.calls[1].slots[0].place.label(), "alias:act/128");
  EXPECT_NE(t.calls[1].slots[0].place.bo, t.calls[0].slots[1].place.bo);
  EXPECT_EQ(t.calls[1].slots[0].place.first_call, 2);
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::note);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 0);
  EXPECT_EQ(v[0].kernel, "cons");
  EXPECT_EQ(v[0].key_first_call, 1);  // the pool name's first user
  EXPECT_EQ(v[0].message,
            "alias pool 'act' was created with 256 bytes at call 1; slot y needs 128: the real "
            "engine keys alias pools by (name, size), so this size is a BO of its own and does "
            "not share with the other");
}

// Fire twin: a later call of the consumer skips the slot (intermediate) and reads it before
// writing it, right after the producer wrote 'act' at another size: it reads another BO.
TEST(TraceCheck_SizeMismatch, FiresWhenAnAliasIsReadAtAnotherSizeThanItsLastWriteLint) {
  auto b = alias_sizes(256, 128);
  b.at(2).inters({0});
  b.call("prod", "P").alias(1, "act").slot(1).bytes(256);
  b.call("cons", "C").inters({0}).alias(0, "act").slot(0).bytes(128).access(true, false, false);
  b.identities_only();
  auto v = run_check(run_size_mismatch, b.build());
  // The note at the consumer's first call and the error at call 4 are one finding (same key
  // and slot): the error supersedes it.
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_EQ(v[0].occurrences, 2);
  EXPECT_EQ(v[0].call, 4);
  EXPECT_EQ(v[0].slot, 0);
  EXPECT_EQ(v[0].message,
            "slot y reads alias pool 'act' at 128 bytes, but call 3 last wrote 'act' at 256 "
            "bytes: the real engine keys alias pools by (name, size), so this slot reads another "
            "BO than the one written");
}

TEST(TraceCheck_SizeMismatch, SilentWhenAliasPoolSizesAgree) {
  Trace t = alias_sizes(256, 256).build();
  EXPECT_EQ(t.calls[1].slots[0].place.label(), "alias:act/256");
  EXPECT_EQ(t.calls[1].slots[0].place.bo, t.calls[0].slots[1].place.bo);  // one shared BO
  EXPECT_EQ(t.calls[1].slots[0].place.first_call, 1);
  EXPECT_TRUE(run_check(run_size_mismatch, t).empty()) << describe(run_check(run_size_mismatch, t));
}

TEST(TraceCheck_SizeMismatch, AliasPoolsOfOneNameInTwoNamespacesAreNotCompared) {
  auto b = alias_sizes(256, 128);
  b.at(2).ns("e2");
  EXPECT_TRUE(run_check(run_size_mismatch, b.build()).empty());
}

TEST(TraceCheck_SizeMismatch, LaterCallOfAliasedSlotComparesWithItsKeysFirstCall) {
  // A later call of P reuses the alias BO P's first call set up: the bytes rule, not the pool
  // name rule, and only against P's first call.
  auto b = alias_sizes(256, 256);
  b.identities_only();
  b.call("prod", "P").alias(1, "act").slot(1).bytes(128);
  Trace t = b.build();
  EXPECT_EQ(t.calls[2].slots[1].place.label(), "alias:act/256");
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 3);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].key_first_call, 1);
  EXPECT_EQ(v[0].message, "slot y is 128 bytes but the BO of 'P' was sized 256 bytes at call 1");
}

TEST(TraceCheck_SizeMismatch, FiresWhenBoBytesDifferFromHostBytesRun) {
  // A BO sized elsewhere (e.g. by a recorded engine): only the run knows. Smaller host bytes
  // than the BO are a prefix write.
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K").slot(0).bytes(256).bo_bytes(512);
  auto v = run_check(run_size_mismatch, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 1);
  EXPECT_EQ(v[0].slot, 0);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_EQ(v[0].message,
            "slot x is 256 bytes but its BO (key:K/0) was sized 512 bytes at first use");

  b.at(1).slot(0).bo_bytes(256);
  EXPECT_TRUE(run_check(run_size_mismatch, b.build()).empty());
}

// Call 1 sets key K up (64-byte slots); call 2's slot 1 is 64 bytes as declared (lint is
// silent), but the (recorded) engine's BO holds only 32. On call 2 the slot is `role`.
enum class Role { input, static_input, intermediate_output };
TraceBuilder larger_than_bo(Role role) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K");
  auto& c = b.call("proj", "K");
  if (role == Role::static_input) c.statics({1});
  if (role == Role::intermediate_output) c.inters({1}).outputs({1, 2});
  c.slot(1).bo_bytes(32);
  return b;
}

TEST(TraceCheck_SizeMismatch, WarnsTruncatedWhenSkippedSlotIsLargerThanItsBoRun) {
  Trace t = larger_than_bo(Role::static_input).build();
  ASSERT_FALSE(t.calls[1].slots[1].written);
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].key_first_call, 1);
  EXPECT_EQ(v[0].severity, Severity::warning);
  EXPECT_EQ(v[0].message,
            "slot w is 64 bytes but its BO (key:K/1) was sized 32 bytes at first use; the write "
            "is skipped, so the kernel sees only the first 32 bytes (truncated)");
}

TEST(TraceCheck_SizeMismatch, ErrorWhenLargerSlotIsWrittenRun) {
  // The twin: a plain input is written, and the real engine raises there.
  auto v = run_check(run_size_mismatch, larger_than_bo(Role::input).build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_EQ(v[0].message,
            "slot w is 64 bytes but its BO (key:K/1) was sized 32 bytes at first use; the real "
            "engine raises ValueError there");
}

TEST(TraceCheck_SizeMismatch, ErrorWhenLargerSkippedSlotIsReadBackRun) {
  // Skipped (intermediate) but an output: the real engine raises reading it back.
  Trace t = larger_than_bo(Role::intermediate_output).build();
  ASSERT_FALSE(t.calls[1].slots[1].written);
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_EQ(v[0].message,
            "slot w is 64 bytes but its BO (key:K/1) was sized 32 bytes at first use; the real "
            "engine raises ValueError there");
}

TEST(TraceCheck_SizeMismatch, LargerSkippedSlotIsAWarningFromLintAndRun) {
  // Declared larger than the BO call 1 set up, on a skipped slot that is not read back: the
  // lint rule and the run part agree on a truncated warning (merged into one finding).
  auto b = stale_lut();
  b.at(2).slot(1).bytes(128).pre(11, 11);
  Trace t = b.build();
  EXPECT_FALSE(t.calls[1].failed);  // skipped and not an output: nothing raises
  EXPECT_TRUE(contains(size_note(t, t.calls[1], t.calls[1].slots[1]), "(truncated)"));
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::warning);
  EXPECT_EQ(v[0].message,
            "slot lut is 128 bytes but the BO of 'rope_dec' was sized 64 bytes at "
            "call 1; the write is skipped, so the kernel sees only the first 64 "
            "bytes (truncated)");
}

TEST(TraceCheck_SizeMismatch, SilentRunPartWithoutRunCapability) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K").slot(0).bytes(512).bo_bytes(256);
  b.caps(only_caps(false, true));
  EXPECT_TRUE(run_check(run_size_mismatch, b.build()).empty());
}

// Key K in two cache instances: call 1 (ns "") sets it up with 3 slots of 64 bytes, call 2
// (ns "e2", or "" when same_ns) passes 4 slots with a 128-byte first one, call 3 is K in "".
TraceBuilder two_caches(bool same_ns) {
  auto b = slot_counts(true);
  b.at(2).ns(same_ns ? "" : "e2").slot(0).bytes(128);
  b.call("k3", "K");
  return b;
}

TEST(TraceCheck_SizeMismatch, KeysOfTwoNamespacesAreSeparate) {
  Trace t = two_caches(false).build();
  EXPECT_EQ(t.calls[1].key_first_call, 2);  // per (ns, bo_key)
  EXPECT_EQ(t.calls[2].key_first_call, 1);
  EXPECT_EQ(t.calls[1].slots[3].place.pool, BoPool::key);  // its own, four-slot BO list
  EXPECT_EQ(t.calls[1].slots[0].place.label(), "e2:key:K/0");
  EXPECT_EQ(t.calls[1].slots[0].place.bytes, 128u);
  EXPECT_FALSE(t.calls[1].failed);
  EXPECT_TRUE(run_check(run_size_mismatch, t).empty()) << describe(run_check(run_size_mismatch, t));
  auto b = two_caches(false);
  b.identities_only();
  EXPECT_TRUE(run_check(run_size_mismatch, b.build()).empty());
}

TEST(TraceCheck_SizeMismatch, KeysOfOneNamespaceAreCompared) {
  // The twin: the same calls in one cache instance.
  Trace t = two_caches(true).build();
  EXPECT_EQ(t.calls[1].key_first_call, 1);
  auto v = run_check(run_size_mismatch, t);
  ASSERT_EQ(v.size(), 3u) << describe(v);
  EXPECT_EQ(v[0].slot, -1);  // slot count
  EXPECT_EQ(v[1].slot, 0);   // 128 bytes into a 64-byte BO
  EXPECT_EQ(v[1].message, "slot a is 128 bytes but the BO of 'K' was sized 64 bytes at call 1");
  EXPECT_EQ(v[2].slot, 3);  // no BO
}

// ---- static-clobber -----------------------------------------------------------------------

// A norm kernel that writes into its static gamma slot (hash 5 -> 6 in the no-reuse engine).
TraceBuilder clobber(std::vector<int> statics) {
  TraceBuilder b;
  b.kernel("norm", {"x", "g", "out"});
  b.call("norm", "norm_L0").statics(std::move(statics)).slot(1).tensor("g[0]").hash(5).post(5, 6);
  return b;
}

TEST(TraceCheck_StaticClobber, FiresWhenKernelWritesStaticSlot) {
  auto v = run_check(run_static_clobber, clobber({1}).build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "static-clobber");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 1);
  EXPECT_EQ(f.slot, 1);
  EXPECT_TRUE(f.first_call_of_key);
  EXPECT_EQ(f.message,
            "kernel norm wrote into static slot g; later calls of 'norm_L0' will read the "
            "clobbered bytes");
  EXPECT_EQ(evidence(f, "static BO before vs after dispatch"), hash_pair(5, 6));
}

TEST(TraceCheck_StaticClobber, SilentOnInputSlot) {
  EXPECT_TRUE(run_check(run_static_clobber, clobber({}).build()).empty());
}

TEST(TraceCheck_StaticClobber, SilentWhenStaticSlotUnchanged) {
  auto b = clobber({1});
  b.at(1).slot(1).post(5, 5);
  EXPECT_TRUE(run_check(run_static_clobber, b.build()).empty());
}

TEST(TraceCheck_StaticClobber, NeedsOnlyNoReuse) {
  auto b = clobber({1});
  b.caps(only_caps(false, true));
  EXPECT_EQ(run_check(run_static_clobber, b.build()).size(), 1u);
  b.caps(only_caps(true, false));
  EXPECT_TRUE(run_check(run_static_clobber, b.build()).empty());
}

// ---- intermediate-read --------------------------------------------------------------------

// A GEMM accumulating into intermediate slot acc: on call 2 (and later) the skipped slot holds
// call 1's result (7) where the no-reuse engine has fresh zeros (0), and the body reads it.
TraceBuilder accumulate(int calls = 2) {
  TraceBuilder b;
  b.kernel("gemm", {"a", "b", "acc"});
  for (int i = 0; i < calls; ++i)
    b.call("gemm", "gemm_L0").inters({2}).slot(2).zeros().access(true, false, true);
  b.at(2).slot(2).pre(7, 0).post(8, 9).diffs(64, 16);
  return b;
}

TEST(TraceCheck_IntermediateRead, FiresWhenStaleBytesReadAndWrittenDifferently) {
  Trace t = accumulate().build();
  ASSERT_FALSE(t.calls[1].slots[2].written);
  auto v = run_check(run_intermediate_read, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "intermediate-read");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 2);
  EXPECT_EQ(f.slot, 2);
  EXPECT_FALSE(f.latent);
  EXPECT_EQ(f.message,
            "intermediate slot acc held stale bytes and the kernel read them: 48 bytes it wrote "
            "differ from the no-reuse engine's");
  EXPECT_EQ(evidence(f, "device bytes before (reuse vs no-reuse)"), hash_pair(7, 0));
  EXPECT_EQ(evidence(f, "device bytes after (reuse vs no-reuse)"), hash_pair(8, 9));
}

TEST(TraceCheck_IntermediateRead, FiresSilentReadWhenOutputsDiverged) {
  auto b = accumulate();
  b.at(2).slot(2).post(9, 9);
  b.at(2).diverged(2, 0.5);
  auto v = run_check(run_intermediate_read, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_FALSE(v[0].latent);
  EXPECT_EQ(v[0].message,
            "intermediate slot acc held stale bytes and the kernel read them: the outputs "
            "diverged");
}

TEST(TraceCheck_IntermediateRead, SilentWhenPostEqualAndOutputsAgree) {
  auto b = accumulate();
  b.at(2).slot(2).post(9, 9);
  EXPECT_TRUE(run_check(run_intermediate_read, b.build()).empty());
}

TEST(TraceCheck_IntermediateRead, SilentWhenBodyDoesNotReadBeforeWrite) {
  auto b = accumulate();
  b.at(2).slot(2).access(false, true, true);
  EXPECT_TRUE(run_check(run_intermediate_read, b.build()).empty());
}

TEST(TraceCheck_IntermediateRead, SilentWhenAnotherNonIntermediateSlotWasStale) {
  auto b = accumulate();
  b.at(2).slot(1).pre(3, 4);
  EXPECT_TRUE(run_check(run_intermediate_read, b.build()).empty());
}

TEST(TraceCheck_IntermediateRead, SilentWhenOnlyStaleBytesDiffer) {
  // Every differing byte kept its stale value: the kernel did not write them (partial-overwrite).
  auto b = accumulate();
  b.at(2).slot(2).diffs(64, 64);
  Trace t = b.build();
  EXPECT_TRUE(run_check(run_intermediate_read, t).empty());
  EXPECT_EQ(run_check(run_partial_overwrite, t).size(), 1u);
}

TEST(TraceCheck_IntermediateRead, SilentWhenCallFailed) {
  auto b = accumulate();
  b.at(2).failed();
  EXPECT_TRUE(run_check(run_intermediate_read, b.build()).empty());
}

TEST(TraceCheck_IntermediateRead, SilentWithoutByteDiffsCapability) {
  auto b = accumulate();
  b.caps(only_caps(true, true, false, true));
  EXPECT_TRUE(run_check(run_intermediate_read, b.build()).empty());
}

// Three calls of the accumulating GEMM whose stale bytes equal fresh ones (nothing differs).
TraceBuilder accumulate_unstale() {
  auto b = accumulate(3);
  b.at(2).slot(2).pre(0, 0).post(9, 9).diffs(0, 0);
  return b;
}

TEST(TraceCheck_IntermediateRead, LatentWhenProbeSaysSlotIsRead) {
  auto b = accumulate_unstale();
  b.at(2).slot(2).probe(true);
  Trace t = b.build();
  ASSERT_TRUE(t.header.caps.probe);
  auto v = run_check(run_intermediate_read, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 2);
  EXPECT_TRUE(v[0].latent);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_TRUE(contains(v[0].message, "filling it with a canary changed the outputs"));
  EXPECT_EQ(evidence(v[0], "stale before dispatch"), "no");
}

TEST(TraceCheck_IntermediateRead, SilentWhenProbeSaysSlotIsNotRead) {
  auto b = accumulate_unstale();
  b.at(2).slot(2).probe(false);
  EXPECT_TRUE(run_check(run_intermediate_read, b.build()).empty());
}

TEST(TraceCheck_IntermediateRead, LatentIsSupersededByLaterRealFinding) {
  auto b = accumulate_unstale();
  b.at(2).slot(2).probe(true);
  b.at(3).slot(2).pre(7, 0).post(8, 9).diffs(64, 16);
  auto v = run_check(run_intermediate_read, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 3);
  EXPECT_FALSE(v[0].latent);
  EXPECT_EQ(v[0].occurrences, 2);
  EXPECT_EQ(v[0].last_call, 3);
  EXPECT_TRUE(contains(v[0].message, "48 bytes it wrote differ"));
}

TEST(TraceCheck_IntermediateRead, RealFindingIsNotDowngradedByLaterLatent) {
  auto b = accumulate(3);
  b.at(3).slot(2).probe(true);
  auto v = run_check(run_intermediate_read, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_FALSE(v[0].latent);
  EXPECT_EQ(v[0].occurrences, 2);
  EXPECT_EQ(v[0].last_call, 3);
}

// ---- partial-overwrite --------------------------------------------------------------------

// A padded-tile kernel: on call 2 the skipped intermediate slot out is stale (7 vs 0) and
// after dispatch differs from the no-reuse engine's in 32 bytes, all still holding stale data.
TraceBuilder padded(int calls = 2) {
  TraceBuilder b;
  b.kernel("tile", {"a", "out"});
  for (int i = 0; i < calls; ++i)
    b.call("tile", "tile_L0").inters({1}).slot(1).zeros().access(false, false, true);
  b.at(2).slot(1).pre(7, 0).post(8, 9).diffs(32, 32);
  return b;
}

TEST(TraceCheck_PartialOverwrite, FiresWhenAllDifferingBytesAreStale) {
  auto v = run_check(run_partial_overwrite, padded().build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  const Finding& f = v[0];
  EXPECT_EQ(f.check, "partial-overwrite");
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.call, 2);
  EXPECT_EQ(f.slot, 1);
  EXPECT_FALSE(f.latent);
  EXPECT_EQ(f.message,
            "intermediate slot out: 32 of 64 bytes were not written by the kernel and still hold "
            "an earlier call's data");
  EXPECT_EQ(evidence(f, "stale bytes"), "32");
  EXPECT_EQ(evidence(f, "device bytes after (reuse vs no-reuse)"), hash_pair(8, 9));
}

TEST(TraceCheck_PartialOverwrite, SilentWhenBodyOverwritesWholeSlot) {
  auto b = padded();
  b.at(2).slot(1).access(false, true, true);
  EXPECT_TRUE(run_check(run_partial_overwrite, b.build()).empty());
}

TEST(TraceCheck_PartialOverwrite, SilentWhenSomeDifferingBytesWereWritten) {
  auto b = padded();
  b.at(2).slot(1).diffs(32, 16);
  EXPECT_TRUE(run_check(run_partial_overwrite, b.build()).empty());
}

TEST(TraceCheck_PartialOverwrite, SilentWhenAnInputWasStale) {
  auto b = padded();
  b.at(2).slot(0).pre(3, 4);
  EXPECT_TRUE(run_check(run_partial_overwrite, b.build()).empty());
}

TEST(TraceCheck_PartialOverwrite, LatentWhenProbeFindsUnwrittenBytes) {
  auto b = padded();
  b.at(2).slot(1).pre(0, 0).post(9, 9).diffs(0, 0).probe(false, 16);
  auto v = run_check(run_partial_overwrite, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_TRUE(v[0].latent);
  EXPECT_EQ(v[0].message,
            "intermediate slot out: 16 of 64 bytes kept a canary through dispatch, so the kernel "
            "never writes them; stale bytes there do not differ yet");
  EXPECT_EQ(evidence(v[0], "probe"), "canary survived in 16 bytes");
}

TEST(TraceCheck_PartialOverwrite, SilentWhenProbeFindsNoUnwrittenBytes) {
  auto b = padded();
  b.at(2).slot(1).pre(0, 0).post(9, 9).diffs(0, 0).probe(false, 0);
  EXPECT_TRUE(run_check(run_partial_overwrite, b.build()).empty());
}

TEST(TraceCheck_PartialOverwrite, LatentIsSupersededByLaterRealFinding) {
  auto b = padded(3);
  b.at(2).slot(1).pre(0, 0).post(9, 9).diffs(0, 0).probe(false, 16);
  b.at(3).slot(1).pre(7, 0).post(8, 9).diffs(32, 32);
  auto v = run_check(run_partial_overwrite, b.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 3);
  EXPECT_FALSE(v[0].latent);
  EXPECT_EQ(v[0].occurrences, 2);
  EXPECT_TRUE(contains(v[0].message, "32 of 64 bytes were not written"));
}

}  // namespace
}  // namespace bod

namespace bod {
namespace {

// A plain recording: layer 1 runs on layer 0's weights at every token, found from the bytes
// alone (no no-reuse engine, no labels); the twin with one key per layer is silent.
TEST(TraceCheck_KeyCollision, FiresWithoutNoReuseOrLabelsFromTheBytes) {
  auto run = [](bool shared_key) {
    TraceBuilder b;
    b.caps(only_caps(true, false));
    b.kernel("proj", {"x", "w", "out"});
    for (int t = 0; t < 2; ++t)
      for (int l = 0; l < 2; ++l) {
        std::string key = shared_key ? "proj_dec" : "proj_L" + std::to_string(l);
        auto& s = b.call("proj", key).statics({1}).slot(1).var("arg1").hash(5 + l);
        if (shared_key && (t > 0 || l > 0)) s.pre(5, 0);
        if (!shared_key && t > 0) s.pre(5 + l, 0);
      }
    return run_check(run_key_collision, b.build());
  };
  auto v = run(true);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].occurrences, 2);  // calls 2 and 4: layer 1 at each token
  EXPECT_TRUE(run(false).empty());
}

}  // namespace
}  // namespace bod

namespace bod {
namespace {

// A recording (no kernel bodies): call 2 passes new data (8) for an intermediate slot whose BO
// still holds 7. Caps: run, and no_reuse when `shadow`.
TraceBuilder new_data_in_intermediate(bool shadow, uint64_t second) {
  TraceBuilder b;
  b.caps(only_caps(true, shadow));
  b.kernel("k", {"x", "s", "out"});
  b.call("k", "k").inters({1}).slot(1).var("s").hash(7);
  b.call("k", "k").inters({1}).slot(1).var("s").hash(second).pre(7, second);
  return b;
}

TEST(TraceCheck_IntermediateRead, RecordedNewDataWithoutShadowIsAWarning) {
  auto v = run_check(run_intermediate_read, new_data_in_intermediate(false, 8).build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 1);
  EXPECT_EQ(v[0].severity, Severity::warning);
  EXPECT_NE(v[0].message.find("record --shadow to decide"), std::string::npos) << v[0].message;
}

TEST(TraceCheck_IntermediateRead, RecordedSameScratchEachCallIsSilent) {
  // The B2 pattern: the caller passes the same scratch; the BO holds the last output.
  EXPECT_TRUE(run_check(run_intermediate_read, new_data_in_intermediate(false, 7).build()).empty());
  EXPECT_TRUE(run_check(run_intermediate_read, new_data_in_intermediate(true, 7).build()).empty());
}

TEST(TraceCheck_IntermediateRead, RecordedWithShadowSeverityFromTheOutputs) {
  auto diverged = new_data_in_intermediate(true, 8);
  diverged.at(2).diverged(2, 0.5);
  auto v = run_check(run_intermediate_read, diverged.build());
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::error);
  auto same = run_check(run_intermediate_read, new_data_in_intermediate(true, 8).build());
  ASSERT_EQ(same.size(), 1u) << describe(same);
  EXPECT_EQ(same[0].severity, Severity::note);
  EXPECT_NE(same[0].message.find("bit-identical"), std::string::npos) << same[0].message;
}

}  // namespace
}  // namespace bod

namespace bod {
namespace {

// A 0-element placeholder in a non-static slot uploads nothing: the BO keeps its bytes. Only
// its own key uses the BO: a note, and no size-mismatch. A shared pool BO another key wrote
// since: an error naming that call.
TEST(TraceCheck_PlaceholderUpload, EmptyPlaceholderInANonStaticSlot) {
  TraceBuilder own;
  own.kernel("k", {"x", "w", "out"});
  own.call("k", "k").slot(1).var("w");
  own.call("k", "k").slot(1).placeholder("w").bytes(0);
  Trace t = own.build();
  ASSERT_TRUE(t.calls[1].slots[1].written);
  auto v = run_check(run_placeholder_upload, t);
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::note);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_TRUE(run_check(run_size_mismatch, t).empty()) << describe(run_check(run_size_mismatch, t));

  TraceBuilder pool;
  pool.kernel("k", {"x", "w", "out"});
  pool.call("k", "a").shared_nonstatic().slot(1).var("wa");
  pool.call("k", "b").shared_nonstatic().slot(1).var("wb");
  pool.call("k", "a").shared_nonstatic().slot(1).placeholder("wa").bytes(0);
  Trace p = pool.build();
  ASSERT_EQ(p.calls[2].slots[1].place.pool, BoPool::shared);
  auto e = run_check(run_placeholder_upload, p);
  ASSERT_EQ(e.size(), 1u) << describe(e);
  EXPECT_EQ(e[0].severity, Severity::error);
  EXPECT_EQ(e[0].call, 3);
  EXPECT_NE(e[0].message.find("call 2 (bo_key 'b')"), std::string::npos) << e[0].message;
}

}  // namespace
}  // namespace bod

namespace bod {
namespace {

// With shadow outputs, the B2 pattern gone wrong: the caller passes the same zeros each call
// for an output the kernel accumulates into. The outputs diverge and the intermediate output is
// the only slot whose before-state differed: intermediate-read names it. Bit-identical outputs:
// silent.
TEST(TraceCheck_IntermediateRead, RecordedAccumulatingOutputWithShadow) {
  auto build = [](bool diverge) {
    TraceBuilder b;
    b.caps(only_caps(true, true));
    b.kernel("gemm", {"a", "w", "c"});
    b.call("gemm", "g").inters({2}).outputs({2}).slot(2).var("zeros").hash(0x20);
    auto& c2 = b.call("gemm", "g").inters({2}).outputs({2});
    c2.slot(2).var("zeros").hash(0x20).pre(0x99, 0x20);
    if (diverge) c2.diverged(2, 0.7);
    return b.build();
  };
  auto v = run_check(run_intermediate_read, build(true));
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].severity, Severity::error);
  EXPECT_EQ(v[0].call, 2);
  EXPECT_EQ(v[0].slot, 2);
  EXPECT_NE(v[0].message.find("accumulating"), std::string::npos) << v[0].message;
  EXPECT_TRUE(run_check(run_intermediate_read, build(false)).empty());
}

}  // namespace
}  // namespace bod
