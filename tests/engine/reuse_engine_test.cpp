// ReuseEngine on the CPU device, one rule of the real KernelCache.load_and_run per test ("R" =
// a line of mlir-air's programming_examples/llms/shared/infra/cache.py at e972f29; the tests
// named Row_* follow the rows of the engine table in docs/model-format.md): which slots a call
// writes, how BOs are shared (per bo_key, shared_nonstatic pools, shared_alias), sizes fixed at
// first use, stale device bytes after a skipped write, and zero-copy output views.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "plan/plan.h"
#include "runtime/backend.h"

namespace bod {
namespace {

using ojson = nlohmann::ordered_json;

// Kernel k: a [n,C] input, w [C] static weights, s [n,C] scratch, out [n,C] output (f32, so a
// slot of n rows is n*16 bytes). Kernel k2 has the same first slot shape under another kernel.
const char* kModel = R"({
  "format": "bo-doctor-model",
  "version": 1,
  "dims": {"C": 4},
  "kernels": {
    "k": {
      "params": ["n"],
      "slots": [
        {"name": "a", "dtype": "f32", "shape": ["n", "C"]},
        {"name": "w", "dtype": "f32", "shape": ["C"]},
        {"name": "s", "dtype": "f32", "shape": ["n", "C"]},
        {"name": "out", "dtype": "f32", "shape": ["n", "C"]}
      ],
      "body": [{"op": "add", "a": "a", "b": "s", "out": "out"}]
    },
    "k2": {
      "params": ["n"],
      "slots": [
        {"name": "in", "dtype": "f32", "shape": ["n", "C"]},
        {"name": "out", "dtype": "f32", "shape": ["n", "C"]}
      ],
      "body": [{"op": "add", "a": "in", "b": "in", "out": "out"}]
    },
    "k3": {
      "params": ["n"],
      "slots": [
        {"name": "x", "dtype": "f32", "shape": ["n", "C"]},
        {"name": "y", "dtype": "f32", "shape": ["C"]}
      ],
      "body": [{"op": "add", "a": "y", "b": "y", "out": "y"}]
    }
  },
  "program": {"phases": [{"name": "run", "steps": []}]}
})";

enum { A = 0, W = 1, S = 2, OUT = 3 };

// A k call with the given key and row count; w static, s intermediate.
ojson kcall(const std::string& key, int n = 4) {
  return {{"call", "k"},
          {"params", {{"n", n}}},
          {"static_input_indices", {"w"}},
          {"intermediate_indices", {"s"}},
          {"bo_key", key}};
}

// The plan of `calls` (no bindings: the tests hand the engine host arrays directly).
struct Fixture {
  std::unique_ptr<Model> model;
  Plan plan;
  std::unique_ptr<Backend> backend = make_cpu_backend();
  std::unique_ptr<ReuseEngine> engine;

  explicit Fixture(const std::vector<ojson>& calls, bool weights = false) {
    ojson j = ojson::parse(kModel);
    if (weights) j["tensors"] = {{"wt", {{"dtype", "f32"}, {"shape", {"C"}}, {"init", 0.5}}}};
    for (auto& c : calls) j["program"]["phases"][0]["steps"].push_back(c);
    auto m = parse_model(j.dump(), "engine/model.json");
    if (!m) throw std::runtime_error(m.error().line());
    model = std::make_unique<Model>(std::move(m.value()));
    auto p = expand(*model);
    if (!p) throw std::runtime_error(p.error().line());
    plan = std::move(p.value());
    engine = std::make_unique<ReuseEngine>(*backend);
  }
  const PlanCall& call(int number) const { return plan.calls.at(static_cast<size_t>(number - 1)); }
  // The placement the plan gave a slot, as messages show it.
  std::string bo(int number, int slot) const {
    return call(number).place.at(static_cast<size_t>(slot)).label();
  }

  // Host arrays for call `number`: every slot filled with byte `fill` (+ slot index).
  std::vector<std::vector<uint8_t>> arrays(int number, uint8_t fill) const {
    std::vector<std::vector<uint8_t>> r;
    const PlanCall& c = call(number);
    for (size_t s = 0; s < c.slot_bytes.size(); ++s)
      r.emplace_back(c.slot_bytes[s], static_cast<uint8_t>(fill + s));
    return r;
  }
  static std::vector<HostSlot> slots(const std::vector<std::vector<uint8_t>>& a) {
    std::vector<HostSlot> r;
    for (size_t s = 0; s < a.size(); ++s) r.push_back(HostSlot{a[s].data(), a[s].size()});
    return r;
  }
  Prepared prepare(int number, const std::vector<std::vector<uint8_t>>& a) {
    return engine->prepare(call(number), slots(a));
  }
  std::vector<uint8_t> device(BoHandle bo) {
    const uint8_t* d = backend->device_bytes(bo);
    return std::vector<uint8_t>(d, d + backend->size(bo));
  }
  // Runs `body` on the call's BOs as the device would.
  void dispatch(int number, const Prepared& p,
                const std::function<void(const std::vector<TensorRef>&)>& body) {
    const PlanCall& c = call(number);
    Dispatch d;
    d.kernel = c.kernel->name;
    for (size_t s = 0; s < p.slots.size(); ++s) {
      d.bos.push_back(p.slots[s].bo);
      d.slot_dtypes.push_back(c.kernel->slots[s].dtype);
      d.slot_shapes.push_back(c.slot_shapes[s]);
    }
    d.body = body;
    backend->dispatch(d);
  }
};

std::vector<uint8_t> bytes(size_t n, uint8_t v) {
  return std::vector<uint8_t>(n, v);
}

// Row "key, first call" (R622 bo_key defaults to the kernel name, R645 first call = key not yet
// cached) and row "writes" (R675-688): the key's first call writes every slot.
TEST(ReuseEngine, Row_KeyFirstCallWritesEverySlot) {
  Fixture f(std::vector<ojson>{kcall("A")});
  auto h = f.arrays(1, 10);
  Prepared p = f.prepare(1, h);
  EXPECT_EQ(f.call(1).key_first_call, 1);
  EXPECT_EQ(f.call(1).key_first_call, 1);
  EXPECT_FALSE(p.failed);
  ASSERT_EQ(p.slots.size(), 4u);
  EXPECT_EQ(p.writes, 4);
  EXPECT_EQ(p.h2d_bytes, 64u + 16 + 64 + 64);
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_TRUE(p.slots[s].written) << s;
    EXPECT_EQ(p.slots[s].written_bytes, h[s].size()) << s;
    EXPECT_EQ(p.slots[s].bo_bytes, h[s].size()) << s;
    EXPECT_EQ(f.device(p.slots[s].bo), h[s]) << "slot " << s;
    EXPECT_EQ(f.bo(1, static_cast<int>(s)), "key:A/" + std::to_string(s));
    EXPECT_EQ(p.slots[s].bo_bytes, f.call(1).slot_bytes[s]);
  }
  // four distinct BOs
  for (size_t s = 0; s < 4; ++s)
    for (size_t o = 0; o < s; ++o) EXPECT_NE(p.slots[s].bo, p.slots[o].bo);
}

// Row "writes" (R676-679): later calls skip the host write of their static and intermediate
// slots only.
TEST(ReuseEngine, Row_WritesLaterCallSkipsStaticAndIntermediateOnly) {
  Fixture f(std::vector<ojson>{kcall("A"), kcall("A")});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50);
  Prepared p1 = f.prepare(1, h1);
  Prepared p2 = f.prepare(2, h2);
  EXPECT_NE(f.call(2).key_first_call, 2);
  EXPECT_EQ(f.call(2).key_first_call, 1);
  for (size_t s = 0; s < 4; ++s) EXPECT_EQ(p2.slots[s].bo, p1.slots[s].bo) << s;  // same set
  EXPECT_TRUE(p2.slots[A].written);
  EXPECT_FALSE(p2.slots[W].written);
  EXPECT_FALSE(p2.slots[S].written);
  EXPECT_TRUE(p2.slots[OUT].written);  // an output that is not intermediate is written
  EXPECT_EQ(p2.writes, 2);
  EXPECT_EQ(p2.h2d_bytes, 64u + 64);
  EXPECT_EQ(f.device(p2.slots[A].bo), h2[A]);
  EXPECT_EQ(f.device(p2.slots[W].bo), h1[W]);
  EXPECT_EQ(f.device(p2.slots[S].bo), h1[S]);
  EXPECT_EQ(f.device(p2.slots[OUT].bo), h2[OUT]);
  // who last changed what the BO holds
  EXPECT_EQ(f.engine->last_change(p2.slots[W].bo).call, 1);
  EXPECT_TRUE(f.engine->last_change(p2.slots[W].bo).host_write);
}

// Row "key, first call" (R645, R657-658): one BO list per bo_key.
TEST(ReuseEngine, Row_KeyOneBoListPerKey) {
  Fixture f(std::vector<ojson>{kcall("A"), kcall("B"), kcall("A")});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50), h3 = f.arrays(3, 90);
  Prepared p1 = f.prepare(1, h1);
  Prepared p2 = f.prepare(2, h2);
  Prepared p3 = f.prepare(3, h3);
  EXPECT_EQ(f.call(2).key_first_call, 2);  // a new key is a first call again
  EXPECT_EQ(f.call(2).key_first_call, 2);
  EXPECT_EQ(p2.writes, 4);
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_NE(p1.slots[s].bo, p2.slots[s].bo) << s;
    EXPECT_EQ(p1.slots[s].bo, p3.slots[s].bo) << s;
    EXPECT_EQ(f.bo(2, static_cast<int>(s)), "key:B/" + std::to_string(s));
  }
  EXPECT_NE(f.call(3).key_first_call, 3);
  EXPECT_EQ(f.call(3).key_first_call, 1);
  // key A's weights were not touched by key B's first call
  EXPECT_EQ(f.device(p3.slots[W].bo), h1[W]);
  EXPECT_EQ(f.device(p2.slots[W].bo), h2[W]);
}

// Row "array smaller than the BO" (R680-686 copy of the array's bytes only, R712-723 views
// sized by the current array): a prefix write, the tail keeps old bytes.
TEST(ReuseEngine, Row_SmallerArrayWritesPrefixAndTailKeepsOldBytes) {
  Fixture f(std::vector<ojson>{kcall("A", 4), kcall("A", 2)});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50);
  Prepared p1 = f.prepare(1, h1);
  Prepared p2 = f.prepare(2, h2);
  EXPECT_FALSE(p2.failed);
  const SlotWrite& a = p2.slots[A];
  EXPECT_EQ(f.call(2).slot_bytes[A], 32u);  // smaller than the BO: written as a prefix
  EXPECT_EQ(a.bo, p1.slots[A].bo);
  EXPECT_EQ(a.bo_bytes, 64u);
  EXPECT_TRUE(a.written);
  EXPECT_EQ(a.written_bytes, 32u);
  std::vector<uint8_t> want = bytes(32, 50);
  want.resize(64, 10);  // tail: the first call's bytes
  EXPECT_EQ(f.device(a.bo), want);
  // the kernel keeps running with the first call's shapes
  EXPECT_EQ(p2.shape_call, &f.call(1));
}

// Row "array larger than the BO" (R684: np.frombuffer(..., count=) of the BO mapping is too
// short): writing it raises ValueError; the call fails.
TEST(ReuseEngine, Row_LargerArrayOnAWrittenSlotRaises) {
  Fixture f(std::vector<ojson>{kcall("A", 2), kcall("A", 4)});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50);
  Prepared p1 = f.prepare(1, h1);
  Prepared p2 = f.prepare(2, h2);
  EXPECT_TRUE(p2.failed);
  // Slot a (written) is too large: the real engine raises ValueError there (R684).
  EXPECT_EQ(p2.error,
            "the real engine raises ValueError: slot a is 64 bytes but its BO (key:A/0) "
            "holds 32 (host write)");
  EXPECT_EQ(p2.slots[A].bo_bytes, 32u);
  EXPECT_FALSE(p2.slots[A].written);
  EXPECT_EQ(f.device(p1.slots[A].bo), h1[A]);  // nothing was written
  EXPECT_EQ(p2.writes, 0);
}

// Row "shared_nonstatic pool key" (R628-636): (kernel name, arg index, size), static slots
// excluded.
TEST(ReuseEngine, Row_SharedNonstaticPoolKeyedByKernelSlotAndSize) {
  ojson c1 = kcall("A"), c2 = kcall("B"), c3 = kcall("C", 2);
  for (ojson* c : {&c1, &c2, &c3}) (*c)["shared_nonstatic"] = true;
  ojson c4 = {{"call", "k2"}, {"params", {{"n", 4}}}, {"bo_key", "D"}, {"shared_nonstatic", true}};
  Fixture f(std::vector<ojson>{c1, c2, c3, c4});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50), h3 = f.arrays(3, 90), h4 = f.arrays(4, 130);
  Prepared p1 = f.prepare(1, h1);
  Prepared p2 = f.prepare(2, h2);
  Prepared p3 = f.prepare(3, h3);
  Prepared p4 = f.prepare(4, h4);
  // non-static slots: one pool per (kernel, slot, bytes), shared by keys A and B
  for (int s : {A, S, OUT}) {
    EXPECT_EQ(p1.slots[s].bo, p2.slots[s].bo) << s;
    EXPECT_NE(p1.slots[s].bo, p3.slots[s].bo) << s;  // other byte size
    EXPECT_EQ(f.bo(1, s), "pool:k/" + std::to_string(s) + "/64");
  }
  EXPECT_EQ(f.bo(3, A), "pool:k/0/32");
  // static weights stay per key
  EXPECT_NE(p1.slots[W].bo, p2.slots[W].bo);
  EXPECT_EQ(f.bo(1, W), "key:A/1");
  EXPECT_EQ(f.device(p1.slots[W].bo), h1[W]);
  EXPECT_EQ(f.device(p2.slots[W].bo), h2[W]);
  // same slot index and bytes under another kernel: another pool
  EXPECT_NE(p4.slots[0].bo, p1.slots[A].bo);
  EXPECT_EQ(f.bo(4, 0), "pool:k2/0/64");
  // key B's first call wrote the shared pool: key A now sees B's scratch bytes
  EXPECT_EQ(f.device(p1.slots[S].bo), h2[S]);
}

TEST(ReuseEngine, SharedAliasGivesOneBoToTwoCalls) {
  ojson prod = kcall("A");
  prod["shared_alias"] = {{"out", "h"}};
  ojson cons = {
      {"call", "k2"}, {"params", {{"n", 4}}}, {"bo_key", "B"}, {"shared_alias", {{"in", "h"}}}};
  Fixture f(std::vector<ojson>{prod, cons});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50);
  Prepared p1 = f.prepare(1, h1);
  Prepared p2 = f.prepare(2, h2);
  EXPECT_EQ(p1.slots[OUT].bo, p2.slots[0].bo);
  EXPECT_EQ(f.bo(1, OUT), "alias:h/64");
  EXPECT_EQ(f.bo(2, 0), "alias:h/64");
  EXPECT_NE(p2.slots[1].bo, p1.slots[OUT].bo);
  // the non-aliased slots keep their per-key BOs
  EXPECT_EQ(f.bo(1, A), "key:A/0");
  EXPECT_EQ(f.bo(2, 1), "key:B/1");
  // the pool remembers who wrote it last
  EXPECT_EQ(f.engine->last_change(p2.slots[0].bo).call, 2);  // call 2 wrote its input
  EXPECT_EQ(f.call(2).place[0].first_call, 1);               // the pool's first user
}

TEST(ReuseEngine, SkippedWriteLeavesStaleDeviceBytes) {
  Fixture f(std::vector<ojson>{kcall("A"), kcall("A")});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50);
  Prepared p1 = f.prepare(1, h1);
  Prepared p2 = f.prepare(2, h2);
  ASSERT_FALSE(p2.slots[S].written);
  // The kernel sees the first call's scratch, not the second call's host array.
  std::vector<float> seen;
  f.dispatch(2, p2, [&](const std::vector<TensorRef>& t) {
    for (int64_t i = 0; i < t[S].numel(); ++i) seen.push_back(t[S].get(i));
  });
  std::vector<float> first(static_cast<size_t>(h1[S].size() / 4));
  std::memcpy(first.data(), h1[S].data(), h1[S].size());
  EXPECT_EQ(seen, first);
  EXPECT_NE(f.device(p2.slots[S].bo), h2[S]);
}

TEST(ReuseEngine, CpuDeviceOnlyChangesOnSync) {
  auto b = make_cpu_backend();
  BoHandle bo = b->alloc(BoDesc{16, 0, "k", "test"});
  EXPECT_EQ(std::vector<uint8_t>(b->device_bytes(bo), b->device_bytes(bo) + 16), bytes(16, 0));
  std::memset(b->map(bo), 0xAB, 16);
  EXPECT_EQ(std::vector<uint8_t>(b->device_bytes(bo), b->device_bytes(bo) + 16), bytes(16, 0));
  b->sync_to_device(bo, 8);  // a prefix sync moves only the prefix
  std::vector<uint8_t> want = bytes(8, 0xAB);
  want.resize(16, 0);
  EXPECT_EQ(std::vector<uint8_t>(b->device_bytes(bo), b->device_bytes(bo) + 16), want);
  b->sync_from_device(bo);
  EXPECT_EQ(std::vector<uint8_t>(b->map(bo), b->map(bo) + 16), want);
}

// Row "readback" (R706-711 sync FROM_DEVICE of output_indices, default the last slot;
// R712-723 zero-copy views of the BO mappings).
TEST(ReuseEngine, Row_ReadbackOutputsAreZeroCopyViews) {
  ojson c = kcall("A");
  c["intermediate_indices"] = {"s", "out"};
  Fixture f(std::vector<ojson>{c, c});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50);
  auto fill_out = [](float v) {
    return [v](const std::vector<TensorRef>& t) {
      for (int64_t i = 0; i < t[OUT].numel(); ++i) t[OUT].set(i, v);
    };
  };
  Prepared p1 = f.prepare(1, h1);
  f.dispatch(1, p1, fill_out(1.0f));
  BoHandle bo = p1.slots[OUT].bo;
  const uint8_t* view = f.engine->read_output(p1, OUT);
  EXPECT_EQ(view, f.backend->host_bytes(bo));  // the BO's mapping
  // A held view reads the BO's mapping as it is now (VarStore takes it from the backend).
  auto held = [&](int64_t i) {
    return TensorRef{const_cast<uint8_t*>(f.backend->host_bytes(bo)), DType::f32, {4, 4}}.get(i);
  };
  EXPECT_EQ(held(0), 1.0f);
  EXPECT_EQ(held(15), 1.0f);

  Prepared p2 = f.prepare(2, h2);  // out is intermediate: not written, view untouched
  EXPECT_EQ(p2.slots[OUT].bo, bo);
  EXPECT_EQ(held(0), 1.0f);
  f.dispatch(2, p2, fill_out(2.0f));
  EXPECT_EQ(held(0), 1.0f);  // the device changed, the mapping not yet
  f.engine->read_output(p2, OUT);
  EXPECT_EQ(held(0), 2.0f);  // what the caller held from call 1 now shows call 2's output
  EXPECT_EQ(held(15), 2.0f);
}

TEST(ReuseEngine, WrittenOutputOverwritesHeldViewBeforeDispatch) {
  // Without intermediate_indices on out, the next call's host write lands in the same mapping.
  Fixture f(std::vector<ojson>{kcall("A"), kcall("A")});
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50);
  Prepared p1 = f.prepare(1, h1);
  const uint8_t* view = f.engine->read_output(p1, OUT);
  std::vector<uint8_t> held(view, view + 64);
  EXPECT_EQ(held, h1[OUT]);
  f.prepare(2, h2);
  const uint8_t* now = f.backend->host_bytes(p1.slots[OUT].bo);
  EXPECT_EQ(std::vector<uint8_t>(now, now + 64), h2[OUT]);
}

// Row "pool lookup" (R646-658): pools are looked up only at a key's first call; a later call
// of the key reuses the stored BO list, here a smaller shared_nonstatic slot gets the first
// call's 64-byte pool BO (prefix write), not a 32-byte pool of its own.
TEST(ReuseEngine, Row_PoolLookupOnlyAtTheKeysFirstCall) {
  ojson c1 = kcall("A", 4), c2 = kcall("A", 2);
  for (ojson* c : {&c1, &c2}) (*c)["shared_nonstatic"] = true;
  Fixture f(std::vector<ojson>{c1, c2});
  EXPECT_EQ(f.bo(2, A), "pool:k/0/64");
  auto h1 = f.arrays(1, 10), h2 = f.arrays(2, 50);
  Prepared p1 = f.prepare(1, h1);
  Prepared p2 = f.prepare(2, h2);
  EXPECT_EQ(p2.slots[A].bo, p1.slots[A].bo);
  EXPECT_EQ(p2.slots[A].bo_bytes, 64u);
  EXPECT_EQ(p2.slots[A].written_bytes, 32u);
}

// Row "shared_alias pool key" (R636): ("__alias__", name, size): one name at two sizes is two
// BOs that silently do not share.
TEST(ReuseEngine, Row_AliasPoolKeyedByNameAndSize) {
  ojson prod = kcall("A", 4);
  prod["shared_alias"] = {{"out", "h"}};
  ojson cons = {
      {"call", "k2"}, {"params", {{"n", 2}}}, {"bo_key", "B"}, {"shared_alias", {{"in", "h"}}}};
  Fixture f(std::vector<ojson>{prod, cons});
  Prepared p1 = f.prepare(1, f.arrays(1, 10));
  Prepared p2 = f.prepare(2, f.arrays(2, 50));
  EXPECT_NE(p1.slots[OUT].bo, p2.slots[0].bo);
  EXPECT_EQ(f.bo(1, OUT), "alias:h/64");
  EXPECT_EQ(f.bo(2, 0), "alias:h/32");
}

// Row "alias validation" (R581-601): an alias on a static index raises ValueError before any
// BO is touched; the key is not created, so the next call of the key is its first.
TEST(ReuseEngine, Row_AliasOnStaticIndexRaisesBeforeAnyBo) {
  ojson bad = kcall("A");
  bad["shared_alias"] = {{"w", "h"}};
  Fixture f(std::vector<ojson>{bad, kcall("A")});
  Prepared p1 = f.prepare(1, f.arrays(1, 10));
  EXPECT_TRUE(p1.failed);
  EXPECT_EQ(p1.error,
            "the real engine raises ValueError: shared_alias must not target "
            "static_input_indices [1]");
  EXPECT_EQ(p1.writes, 0);
  EXPECT_EQ(p1.slots[A].bo, ReuseEngine::kNone);
  EXPECT_EQ(f.call(2).key_first_call, 2);
  Prepared p2 = f.prepare(2, f.arrays(2, 50));
  EXPECT_FALSE(p2.failed);
  EXPECT_EQ(p2.writes, 4);  // a first call: every slot written
}

// Row "array larger than the BO" (R684): on a skipped slot nothing raises; the kernel runs on
// the BO the key's first call set up (the caller's array is truncated). Written: see
// Row_LargerArrayOnAWrittenSlotRaises.
TEST(ReuseEngine, Row_LargerArrayOnASkippedSlotDoesNotRaise) {
  auto k3 = [](int n) {
    return ojson{
        {"call", "k3"}, {"params", {{"n", n}}}, {"bo_key", "A"}, {"intermediate_indices", {"x"}}};
  };
  Fixture f(std::vector<ojson>{k3(2), k3(4)});
  Prepared p1 = f.prepare(1, f.arrays(1, 10));
  Prepared p2 = f.prepare(2, f.arrays(2, 50));
  EXPECT_FALSE(p2.failed) << p2.error;
  EXPECT_FALSE(p2.slots[0].written);
  EXPECT_EQ(p2.slots[0].bo_bytes, 32u);  // the host array is 64 bytes
  EXPECT_TRUE(p2.slots[1].written);
  EXPECT_EQ(p2.shape_call, &f.call(1));  // the kernel runs with the first call's shapes
}

// Row "more args than the key's first call" (R675-688, R695-700): the launch binds only the
// cached list; writing an argument beyond it raises IndexError, a skipped one is never seen.
TEST(ReuseEngine, Row_ExtraArgumentHasNoBo) {
  ojson pre = {{"call", "k2"}, {"params", {{"n", 4}}}, {"bo_key", "A"}};
  ojson live = kcall("A");  // 4 slots under a key set up with 2
  Fixture f(std::vector<ojson>{pre, live});
  EXPECT_EQ(f.call(2).place[S].pool, BoPool::unbound);
  EXPECT_EQ(f.bo(2, OUT), "unbound:A/3");
  Prepared p1 = f.prepare(1, f.arrays(1, 10));
  Prepared p2 = f.prepare(2, f.arrays(2, 50));
  EXPECT_TRUE(p2.failed);
  // slot 2 (s) is skipped, slot 3 (out) is written: the first one the engine meets decides.
  EXPECT_NE(p2.error.find("the kernel never sees argument 2"), std::string::npos) << p2.error;
  EXPECT_EQ(p2.slots[OUT].bo, ReuseEngine::kNone);
  EXPECT_EQ(p2.slots[0].bo, p1.slots[0].bo);
}

// Row "namespaces": separate KernelCache instances (prefill_cache, decode_cache) are separate
// key namespaces: one bo_key in two caches is two BO sets, each with its own first call.
TEST(ReuseEngine, Row_SameKeyInTwoCachesIsTwoBoSets) {
  ojson c1 = kcall("A"), c2 = kcall("A");
  c1["cache"] = "prefill";
  c2["cache"] = "decode";
  Fixture f(std::vector<ojson>{c1, c2});
  EXPECT_EQ(f.call(2).key_first_call, 2);
  EXPECT_EQ(f.bo(2, W), "decode:key:A/1");
  Prepared p1 = f.prepare(1, f.arrays(1, 10));
  Prepared p2 = f.prepare(2, f.arrays(2, 50));
  EXPECT_NE(p1.slots[W].bo, p2.slots[W].bo);
  EXPECT_TRUE(p2.slots[W].written);  // a first call in its own cache
}

// Row "placeholders" (llama32_1b_inference.py 214-245, llama32_3b_inference.py 166-196): after
// preload the engines pass np.empty(0) or a zero-stride np.broadcast_to for static slots.
TEST(ReuseEngine, Row_EmptyPlaceholderWrittenUploadsNothing) {
  // Written (slot w is not static on this call): 0 bytes go up, the BO keeps the weights.
  ojson c1 = kcall("A");
  ojson c2 = kcall("A");
  c2["static_input_indices"] = ojson::array();
  c2["args"] = {{"w", {{"placeholder", "wt"}, {"as", "empty"}}}};
  Fixture f(std::vector<ojson>{c1, c2}, true);
  auto h1 = f.arrays(1, 10);
  f.prepare(1, h1);
  auto h2 = f.arrays(2, 50);
  std::vector<HostSlot> hs = Fixture::slots(h2);
  hs[W].bytes = 0;  // what the runner hands the engine for np.empty(0)
  Prepared p2 = f.engine->prepare(f.call(2), hs);
  EXPECT_FALSE(p2.failed) << p2.error;
  EXPECT_TRUE(p2.slots[W].written);
  EXPECT_EQ(p2.slots[W].written_bytes, 0u);
  EXPECT_EQ(f.device(p2.slots[W].bo), h1[W]);  // still the first call's weights
}

TEST(ReuseEngine, Row_EmptyPlaceholderOnTheKeysFirstCallIsNotRun) {
  ojson c1 = kcall("A");
  c1["args"] = {{"w", {{"placeholder", "wt"}, {"as", "empty"}}}};
  Fixture f(std::vector<ojson>{c1}, true);
  Prepared p1 = f.prepare(1, f.arrays(1, 10));
  EXPECT_TRUE(p1.failed);
  EXPECT_NE(p1.error.find("gets a 0-byte BO"), std::string::npos) << p1.error;
}

TEST(ReuseEngine, Row_BroadcastPlaceholderRaisesOnlyWhenWritten) {
  ojson c1 = kcall("A"), c2 = kcall("A"), c3 = kcall("A");
  c2["args"] = {{"w", {{"placeholder", "wt"}, {"as", "broadcast"}}}};  // static: skipped
  c3["args"] = c2["args"];
  c3["static_input_indices"] = ojson::array();  // written
  Fixture f(std::vector<ojson>{c1, c2, c3}, true);
  f.prepare(1, f.arrays(1, 10));
  Prepared p2 = f.prepare(2, f.arrays(2, 50));
  EXPECT_FALSE(p2.failed) << p2.error;
  Prepared p3 = f.prepare(3, f.arrays(3, 90));
  EXPECT_TRUE(p3.failed);
  EXPECT_NE(p3.error.find("ndarray is not C-contiguous"), std::string::npos) << p3.error;
}

}  // namespace
}  // namespace bod
