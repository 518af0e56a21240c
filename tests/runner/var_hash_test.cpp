// A var's host hash re-reads only the 64 KiB chunks written since it was last hashed
// (VarStore::hash, RunOptions::chunk_hashes), so a KV cache is not re-hashed whole per call.
// - VarStore: the kept chunk hashes give hash_bytes' value after whole and partial writes; a
//   chunk outside the range a writer declared is not read again (shown by changing it behind
//   the store's back); regions that do not start on a chunk, and views, are hashed as they are.
// - The runner: llama-tiny with a 128 KiB KV cache per layer (SMAX 2048: every layer's region
//   starts on a chunk) and with SMAX 2080 (only layer 0's does): the saved trace and the JSON
//   and text reports are byte-identical with chunk hashes on and off, and an append re-reads
//   one chunk of its cache, the rest are kept.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/hash.h"
#include "report/report.h"
#include "runner/runner.h"
#include "runner/var_store.h"
#include "trace/trace_io.h"

namespace bod {
namespace {

struct Loaded {
  Model model;
  Plan plan;
  HostData data;
};

// A model from its JSON text, expanded, with its host data. On the heap: the plan points
// into the model.
std::unique_ptr<Loaded> load_text(const std::string& text, const std::string& path) {
  auto m = parse_model(text, path);
  EXPECT_TRUE(bool(m)) << (m ? "" : m.error().line());
  if (!m) return nullptr;
  auto l = std::make_unique<Loaded>(Loaded{std::move(m.value()), {}, {}});
  auto p = expand(l->model);
  EXPECT_TRUE(bool(p)) << (p ? "" : p.error().line());
  if (!p) return nullptr;
  l->plan = std::move(p.value());
  auto d = HostData::load(l->model);
  EXPECT_TRUE(bool(d));
  if (!d) return nullptr;
  l->data = std::move(d.value());
  return l;
}

// llama-tiny with its decode cache length SMAX set (the JSON edited before parsing).
std::unique_ptr<Loaded> llama_tiny(int smax) {
  std::string path = std::string(BOD_SOURCE_DIR) + "/fixtures/models/llama-tiny/model.json";
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  auto j = nlohmann::ordered_json::parse(ss.str());
  j["dims"]["SMAX"] = smax;
  return load_text(j.dump(), path);
}

BoundArray var_region(const std::string& name, std::vector<int64_t> index) {
  BoundArray b;
  b.kind = Binding::Kind::var;
  b.name = name;
  b.index = std::move(index);
  return b;
}

const auto kNoStale = [](const std::string&, ViewRef&) {};

TEST(VarHash, KeptChunkHashesFollowWholeAndPartialWrites) {
  auto l = llama_tiny(2048);  // kcache [L, 2048, 32] bf16: 128 KiB, two chunks, per layer
  ASSERT_TRUE(l);
  VarStore st(l->model);
  BoundArray b = var_region("kcache", {1});
  TensorRef r = st.read(b, kNoStale);
  ASSERT_EQ(r.bytes(), 2 * kHashChunk);
  auto fresh = [&] { return hash_bytes(r.data, r.bytes()); };

  EXPECT_EQ(st.hash("kcache", r.data, r.bytes()), fresh());
  EXPECT_EQ(st.chunks_hashed(), 2);
  EXPECT_EQ(st.hash("kcache", r.data, r.bytes()), fresh());
  EXPECT_EQ(st.chunks_kept(), 2);  // nothing written: both kept

  // A KV-cache append: row 5 of 2048 (64 bytes per row), declared by the writer.
  TensorRef w = st.write(b, VarStore::ByteRange{5 * 64, 64});
  std::memset(w.data + 5 * 64, 0x7f, 64);
  EXPECT_EQ(st.hash("kcache", r.data, r.bytes()), fresh());
  EXPECT_EQ(st.chunks_hashed(), 3);  // the written chunk only
  EXPECT_EQ(st.chunks_kept(), 3);

  // A write the writer did not declare is not seen: the declared range is the contract.
  TensorRef quiet = st.write(b, VarStore::ByteRange{});
  quiet.data[kHashChunk + 1] ^= 1;
  EXPECT_NE(st.hash("kcache", r.data, r.bytes()), fresh());

  // A whole write re-reads every chunk of the region.
  st.write(b);
  EXPECT_EQ(st.hash("kcache", r.data, r.bytes()), fresh());
  EXPECT_EQ(st.chunks_hashed(), 5);
}

TEST(VarHash, OtherRegionsAreHashedAsTheyAre) {
  auto l = llama_tiny(2080);  // 130 KiB per layer: layer 1 starts 2 KiB past a chunk
  ASSERT_TRUE(l);
  VarStore st(l->model);
  TensorRef r1 = st.read(var_region("kcache", {1}), kNoStale);
  EXPECT_EQ(st.hash("kcache", r1.data, r1.bytes()), hash_bytes(r1.data, r1.bytes()));
  // Layer 0 starts on a chunk and ends inside the third: two kept chunks and a short one.
  TensorRef r0 = st.read(var_region("kcache", {0}), kNoStale);
  EXPECT_EQ(st.hash("kcache", r0.data, r0.bytes()), hash_bytes(r0.data, r0.bytes()));
  EXPECT_EQ(st.chunks_hashed(), 2);
  // Bytes that are not the var's own (a copy) are hashed as they are.
  std::vector<uint8_t> copy(r0.data, r0.data + r0.bytes());
  EXPECT_EQ(st.hash("kcache", copy.data(), copy.size()), hash_bytes(copy.data(), copy.size()));
  EXPECT_EQ(st.chunks_hashed(), 2);
  // Off: everything as it is, nothing kept.
  st.keep_chunk_hashes(false);
  std::memset(st.write(var_region("kcache", {0}), VarStore::ByteRange{}).data, 1, 8);
  EXPECT_EQ(st.hash("kcache", r0.data, r0.bytes()), hash_bytes(r0.data, r0.bytes()));
  EXPECT_EQ(st.chunks_kept(), 0);
}

struct Outcome {
  std::string trace, json, text;
  RunStats stats;
};

Outcome check(const Loaded& l, bool chunk_hashes, bool probe) {
  Outcome o;
  RunOptions ro;
  ro.chunk_hashes = chunk_hashes;
  ro.probe = probe;
  ro.stats = &o.stats;
  auto backend = make_cpu_backend();
  Trace t = run_plan(l.plan, "llama-tiny", l.data, *backend, ro);
  std::ostringstream s;
  write_trace(s, t);
  o.trace = s.str();
  Report r = build_report("check", t, false);
  apply_gate(r, GateOptions{});
  o.json = render_json(r);
  o.text = render_text(r);
  return o;
}

TEST(VarHash, TraceAndReportsAreIdenticalWithChunkHashesOnAndOff) {
  for (int smax : {2048, 2080}) {
    for (bool probe : {false, true}) {
      SCOPED_TRACE("SMAX " + std::to_string(smax) + (probe ? ", --probe" : ""));
      auto l = llama_tiny(smax);
      ASSERT_TRUE(l);
      Outcome on = check(*l, true, probe), off = check(*l, false, probe);
      EXPECT_TRUE(on.trace == off.trace) << "the saved traces differ";
      EXPECT_EQ(on.json, off.json);
      EXPECT_EQ(on.text, off.text);
      EXPECT_EQ(off.stats.var_chunks_hashed + off.stats.var_chunks_kept, 0);
      // Each attention call hashes its layer's kcache and vcache (2 full chunks each, plus a
      // short third at SMAX 2080, hashed as it is). Per cache: the prefill call reads both
      // chunks; each of the 8 decode calls follows an append to row < 1024, so it re-reads
      // chunk 0 and keeps chunk 1. SMAX 2048: 4 layers x 2 caches x (2 + 8) read, x 8 kept;
      // SMAX 2080: layer 0 only starts on a chunk.
      int layers = smax == 2048 ? 4 : 1;
      EXPECT_EQ(on.stats.var_chunks_hashed, layers * 2 * 10);
      EXPECT_EQ(on.stats.var_chunks_kept, layers * 2 * 8);
    }
  }
}

// A kernel that appends one row to a 256 KiB cache slot it keeps resident (an in-kernel KV
// append): its intermediate slot is not rewritten by the host after the key's first call, so
// after each dispatch only the chunk holding the written row is re-read.
const char* kAppendModel = R"({
  "format": "bo-doctor-model", "version": 1, "name": "kv-append", "seed": 3,
  "dims": {"R": 1024, "C": 64, "T": 6},
  "tensors": {"xs": {"dtype": "f32", "shape": ["T", 1, "C"], "init": {"normal": {"std": 1.0}}}},
  "vars": {"cache": {"dtype": "f32", "shape": ["R", "C"]}},
  "kernels": {
    "append": {
      "params": ["p"],
      "slots": [
        {"name": "x", "dtype": "f32", "shape": [1, "C"]},
        {"name": "cache", "dtype": "f32", "shape": ["R", "C"]}
      ],
      "body": [{"op": "copy", "src": "x", "out": "cache[p:p+1]"}]
    }
  },
  "program": {"phases": [{"name": "decode", "repeat": "T", "var": "t", "steps": [
    {"call": "append", "params": {"p": "t*170"}, "args": {"x": "xs[t]", "cache": "cache"},
     "intermediate_indices": ["cache"], "output_indices": ["cache"], "bo_key": "append",
     "keep": {"cache": {"to": "cache", "as": "copy"}}}
  ]}]},
  "verify": {"outputs": {"cache": {"cosine": 0.99}}}
})";

TEST(BoHash, ADispatchThatWritesOneRowReReadsOnlyItsChunk) {
  auto lp = load_text(kAppendModel, "kv-append.json");
  ASSERT_TRUE(lp);
  const Loaded& l = *lp;
  for (bool probe : {false, true}) {
    SCOPED_TRACE(probe ? "--probe" : "no probe");
    Outcome on = check(l, true, probe), off = check(l, false, probe);
    EXPECT_TRUE(on.trace == off.trace) << "the saved traces differ";
    EXPECT_EQ(on.json, off.json);
    EXPECT_EQ(on.text, off.text);
    EXPECT_EQ(off.stats.bo_chunks_hashed + off.stats.bo_chunks_kept, 0);
    // 6 calls, 4 chunks: the first call reads all 4; each later one the written row's chunk
    // only (rows 170, 340, ... 850: chunks 0, 1, 1, 2, 3), keeping 3.
    EXPECT_EQ(on.stats.bo_chunks_kept, 5 * 3);
    EXPECT_LE(on.stats.bo_chunks_hashed, 4 + 5 + 4)
        << "a post hash re-read more than the written chunk";
  }
}

}  // namespace
}  // namespace bod
