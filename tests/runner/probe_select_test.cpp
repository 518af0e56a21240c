// The probe selection rule (ProbeSelection): which calls and slots a run canary-probes. With
// --probe: each (cache, bo_key)'s first 2 calls with intermediate slots, and every later call
// whose outcome could differ (another body or shapes, params, BOs, kinds of host data); with
// --probe-every-call every call; with --probe=all (classify) every slot alone on each bo_key's
// first 2 calls.
#include "runner/probe_select.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace bod {
namespace {

using Groups = std::vector<std::vector<int>>;

// Calls of one kernel with 3 slots: 0 static input, 1 intermediate, 2 output. `n` is the
// kernel param; `body` picks one of two bound bodies.
struct Calls {
  KernelDecl kernel;
  std::shared_ptr<const BoundKernel> bodies[2] = {std::make_shared<BoundKernel>(),
                                                  std::make_shared<BoundKernel>()};
  int number = 0;
  Calls() {
    kernel.name = "k";
    kernel.slots.resize(3);
    kernel.params = {"n"};
  }
  PlanCall make(const std::string& key, int64_t n = 4, int body = 0,
                const std::string& cache = "") {
    PlanCall c;
    c.number = ++number;
    c.kernel = &kernel;
    c.key = {cache, key};
    c.env = {{"n", n}, {"t", number}};  // t: a loop variable, not a kernel param
    c.slot_shapes = {{n, 8}, {n, 8}, {n, 8}};
    c.slot_bytes = {size_t(n) * 16, size_t(n) * 16, size_t(n) * 16};
    c.args.resize(3);
    c.statics = {{0, ""}};
    c.inters = {{1, ""}};
    c.outputs = {{2, ""}};
    c.place.resize(3);
    c.bound = bodies[body];
    return c;
  }
};

TEST(RunnerProbeSelection, FirstTwoCallsOfEachKeyThenOnlyNewSignatures) {
  Calls k;
  ProbeSelection sel(ProbeRule{});
  const Groups slot1 = {{1}};
  EXPECT_EQ(sel.select(k.make("a")), slot1);
  EXPECT_EQ(sel.select(k.make("a")), slot1);  // the second call, though it repeats the first
  EXPECT_EQ(sel.select(k.make("a")), Groups{});
  EXPECT_EQ(sel.select(k.make("b")), slot1);                  // another key: its own first calls
  EXPECT_EQ(sel.select(k.make("a", 4, 0, "decode")), slot1);  // another cache instance
  // A later call whose outcome could differ: other params, another body.
  EXPECT_EQ(sel.select(k.make("a", 6)), slot1);
  EXPECT_EQ(sel.select(k.make("a", 6)), Groups{});
  EXPECT_EQ(sel.select(k.make("a", 4, 1)), slot1);
  EXPECT_EQ(sel.select(k.make("a", 4, 1)), Groups{});
  // Another kind of host data or another BO in a slot.
  PlanCall c = k.make("a");
  c.args[0].kind = Binding::Kind::placeholder;
  EXPECT_EQ(sel.select(c), slot1);
  EXPECT_EQ(sel.select(c), Groups{});
  c.place[1].bo = 7;
  EXPECT_EQ(sel.select(c), slot1);
}

TEST(RunnerProbeSelection, OnlyIntermediateSlotsThatAreNotStatic) {
  Calls k;
  ProbeSelection sel(ProbeRule{});
  PlanCall c = k.make("a");
  c.inters = {{0, ""}, {1, ""}, {2, ""}, {5, ""}, {-1, ""}};  // 0 is static; 5, -1 no slot
  EXPECT_EQ(sel.select(c), (Groups{{1, 2}}));
  // A call with nothing to probe is not one of the key's first calls.
  c.inters = {{0, ""}};
  EXPECT_EQ(sel.select(c), Groups{});
  EXPECT_EQ(sel.select(c), Groups{});
  c.inters = {{1, ""}};
  EXPECT_EQ(sel.select(c), Groups{{1}});  // the second counted call
  EXPECT_EQ(sel.select(c), Groups{});
}

TEST(RunnerProbeSelection, EveryCall) {
  Calls k;
  ProbeRule rule;
  rule.every_call = true;
  ProbeSelection sel(rule);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sel.select(k.make("a")), Groups{{1}});
  PlanCall c = k.make("a");
  c.inters.clear();
  EXPECT_EQ(sel.select(c), Groups{});
}

TEST(RunnerProbeSelection, CallsPerKey) {
  Calls k;
  ProbeRule rule;
  rule.calls_per_key = 3;
  ProbeSelection sel(rule);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(sel.select(k.make("a")), Groups{{1}});
  EXPECT_EQ(sel.select(k.make("a")), Groups{});
}

TEST(RunnerProbeSelection, AllProbesEverySlotAloneOnEachKeysFirstCalls) {
  Calls k;
  ProbeRule rule;
  rule.all = true;
  ProbeSelection sel(rule);
  const Groups each = {{0}, {1}, {2}};
  EXPECT_EQ(sel.select(k.make("a")), each);
  EXPECT_EQ(sel.select(k.make("a", 6)), each);
  EXPECT_EQ(sel.select(k.make("a", 8)), Groups{});  // a new signature does not count here
  // Counted per bo_key, whatever the cache instance.
  EXPECT_EQ(sel.select(k.make("a", 4, 0, "decode")), Groups{});
  EXPECT_EQ(sel.select(k.make("b", 4, 0, "decode")), each);
  // Slots without intermediates are probed too.
  PlanCall c = k.make("c");
  c.inters.clear();
  EXPECT_EQ(sel.select(c), each);
}

TEST(RunnerProbeSelection, SignatureSeparatesRanks) {
  Calls k;
  PlanCall a = k.make("a"), b = k.make("a");
  EXPECT_EQ(ProbeSelection::signature(a), ProbeSelection::signature(b));  // `t` is no param
  b.slot_shapes[0] = {4, 8, 1};
  EXPECT_NE(ProbeSelection::signature(a), ProbeSelection::signature(b));
  b = k.make("a");
  b.statics.clear();  // slot 0 no longer static
  EXPECT_NE(ProbeSelection::signature(a), ProbeSelection::signature(b));
}

}  // namespace
}  // namespace bod
