// Trace JSON Lines: a round trip of a trace with every field set (byte-identical when written
// again), the documented hand-written example and the Python example writer, and one test per
// refusal, each asserting exit 2 and a message that names FILE:LINE and the field.
#include "trace/trace_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// The repository root as CMake configured it (not __FILE__, which a compiler cache may make
// relative to its base directory).
fs::path source_root() {
  return fs::path(BOD_SOURCE_DIR);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TraceSlot make_slot(int s, const std::string& name, int n, bool probed) {
  TraceSlot t;
  t.slot = s;
  t.name = name;
  t.role = s == 0 ? SlotRole::static_input : s == 1 ? SlotRole::intermediate : SlotRole::input;
  t.output = s == 1;
  t.host.shape = {2, 3 + s};
  t.host.dtype = s == 1 ? DType::f32 : DType::bf16;
  t.host.bytes = 12 + static_cast<size_t>(s);
  t.host.hash = 0xfedcba9876543210ull + static_cast<uint64_t>(s * 7 + n);
  t.host.source = s == 2 && n > 1 ? ArraySource::view : ArraySource::placeholder;
  t.host.name = "w[" + std::to_string(s) + "]";
  t.host.view_of_call = t.host.source == ArraySource::view ? n - 1 : 0;
  t.place.ns = "ns\"1";
  t.place.pool = s == 2 ? BoPool::alias : s == 1 ? BoPool::shared : BoPool::key;
  t.place.name = "key/é";
  t.place.index = s == 2 ? -1 : s;
  t.place.bytes = 4096 + static_cast<size_t>(s);
  t.place.first_call = 1;
  t.access = BodyAccess{s == 0, s == 1, s != 2};
  t.bo_bytes = 8192;
  t.written = s != 1;
  t.written_bytes = 100 + static_cast<size_t>(n);
  t.written_hash = ~0ull;
  t.reuse_pre = 1;
  t.reuse_post = 0x00000000ffffffffull;
  t.noreuse_pre = 3;
  t.noreuse_post = 0xa0a0a0a0a0a0a0a0ull;
  t.diff_bytes = 17;
  t.stale_diff_bytes = 5;
  if (probed) t.probe = ProbeResult{true, s == 0, 33};
  return t;
}

TraceCall make_call(int n) {
  TraceCall c;
  c.number = n;
  c.ns = "ns\"1";
  c.kernel = "attn";
  c.bo_key = "attn_L" + std::to_string(n);
  c.bo_key_template = "attn_L{l}";
  c.statics = {0, 9};  // 9: out of range, kept for the config-error check
  c.inters = {1};
  c.outputs = {1, -2};
  c.shared_nonstatic = n == 2;
  c.alias = {{2, "pool x"}, {10, "p10"}, {-1, "neg"}};
  c.phase = "decode";
  c.token = n;
  c.layer = n == 1 ? -1 : 4;
  c.path = "/program/1/body/" + std::to_string(n);
  c.key_first_call = 1;
  for (int s = 0; s < 3; ++s)
    c.slots.push_back(make_slot(s, std::string(1, char('a' + s)), n, s != 2 || n == 2));
  c.failed = n == 2;
  c.error = n == 2 ? "boom\n\ttab" : "";
  c.h2d_reuse = 123456789012ull;
  c.h2d_noreuse = 7;
  c.writes_reuse = 2;
  c.writes_noreuse = 3;
  OutputMetrics o;
  o.slot = 1;
  o.bit_exact = false;
  o.cosine = n == 1 ? kNaN : 0.1;
  o.max_abs = kInf;
  o.max_rel = -kInf;
  o.nan_reuse = 1;
  o.inf_reuse = 2;
  o.nan_noreuse = 3;
  o.inf_noreuse = 4;
  o.elements = 1LL << 40;
  c.outputs_cmp = {o};
  return c;
}

// A trace with every field set, capabilities all declared and measured times.
Trace full_trace() {
  Trace t;
  TraceHeader& h = t.header;
  h.producer = "bo-doctor test";
  h.model_name = "m";
  h.model_path = "/tmp/m/model.json";
  h.backend = "npu";
  h.host_emulated = false;
  h.npu_launched = true;
  h.caps = Capabilities{true, true, true, true, true, true};
  h.kernels = {{"attn", {{"a", DType::bf16}, {"b", DType::f32}, {"c", DType::i8}}, "a.xclbin"},
               {"empty", {}, ""},
               {"norm", {{"x", DType::i32}}, ""}};
  h.verify = {{"logits", 0.995, 1e-3, -1}, {"h", 0.9, kInf, 0.5}};
  h.top_k = 3;
  t.calls = {make_call(1), make_call(2)};
  t.view_reads = {{"caps[2]", "call 2 (attn)", 2, 1, 1, 2, true},
                  {"h", "the end-to-end verification", 0, 2, 0, 1, false}};
  t.tokens_reuse = {{5, {5, 1, 2}}, {-3, {}}};
  t.tokens_noreuse = {{6, {6, 5, 1}}};
  t.verify = {{"logits", 0.1 + 0.2, 1e-300, 5e-324, 1, 2}, {"h", kNaN, -0.0, kInf, 0, 0}};
  t.noreuse_extra_calls = 4;
  t.reuse = EngineFigures{1000, 20, 2, 0.25, 1.0 / 3, 1e-9};
  t.noreuse = EngineFigures{2000, 40, 3, kNaN, 0, 2.5};
  t.timings = true;
  t.wall_s = 12.75;
  return t;
}

std::string text_of(const Trace& t) {
  std::ostringstream o;
  write_trace(o, t);
  return o.str();
}

Result<Trace> read_text(const std::string& text, const TraceLimits& lim = {}) {
  std::istringstream in(text);
  return read_trace(in, "t.jsonl", lim);
}

// NaN equals NaN and -0 differs from 0: the bits must survive.
void same(double a, double b, const std::string& what) {
  if (std::isnan(a) || std::isnan(b)) {
    EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << what << ": " << a << " vs " << b;
  } else {
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << what << ": " << a << " vs " << b;
  }
}

void expect_same_header(const TraceHeader& a, const TraceHeader& b) {
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.producer, b.producer);
  EXPECT_EQ(a.model_name, b.model_name);
  EXPECT_EQ(a.model_path, b.model_path);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.host_emulated, b.host_emulated);
  EXPECT_EQ(a.npu_launched, b.npu_launched);
  EXPECT_EQ(a.caps.run, b.caps.run);
  EXPECT_EQ(a.caps.no_reuse, b.caps.no_reuse);
  EXPECT_EQ(a.caps.byte_diffs, b.caps.byte_diffs);
  EXPECT_EQ(a.caps.access, b.caps.access);
  EXPECT_EQ(a.caps.probe, b.caps.probe);
  EXPECT_EQ(a.caps.verify, b.caps.verify);
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t k = 0; k < a.kernels.size(); ++k) {
    EXPECT_EQ(a.kernels[k].name, b.kernels[k].name);
    EXPECT_EQ(a.kernels[k].binary, b.kernels[k].binary);
    ASSERT_EQ(a.kernels[k].slots.size(), b.kernels[k].slots.size());
    for (size_t s = 0; s < a.kernels[k].slots.size(); ++s) {
      EXPECT_EQ(a.kernels[k].slots[s].name, b.kernels[k].slots[s].name);
      EXPECT_EQ(a.kernels[k].slots[s].dtype, b.kernels[k].slots[s].dtype);
    }
  }
  ASSERT_EQ(a.verify.size(), b.verify.size());
  for (size_t i = 0; i < a.verify.size(); ++i) {
    EXPECT_EQ(a.verify[i].var, b.verify[i].var);
    same(a.verify[i].min_cosine, b.verify[i].min_cosine, "min_cosine");
    same(a.verify[i].atol, b.verify[i].atol, "atol");
    same(a.verify[i].rtol, b.verify[i].rtol, "rtol");
  }
  EXPECT_EQ(a.top_k, b.top_k);
}

void expect_same_slot(const TraceSlot& a, const TraceSlot& b) {
  SCOPED_TRACE("slot " + std::to_string(a.slot));
  EXPECT_EQ(a.slot, b.slot);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.role, b.role);
  EXPECT_EQ(a.output, b.output);
  EXPECT_EQ(a.host.shape, b.host.shape);
  EXPECT_EQ(a.host.dtype, b.host.dtype);
  EXPECT_EQ(a.host.bytes, b.host.bytes);
  EXPECT_EQ(a.host.hash, b.host.hash);
  EXPECT_EQ(a.host.source, b.host.source);
  EXPECT_EQ(a.host.name, b.host.name);
  EXPECT_EQ(a.host.view_of_call, b.host.view_of_call);
  EXPECT_EQ(a.place.ns, b.place.ns);
  EXPECT_EQ(a.place.pool, b.place.pool);
  EXPECT_EQ(a.place.name, b.place.name);
  EXPECT_EQ(a.place.index, b.place.index);
  EXPECT_EQ(a.place.bytes, b.place.bytes);
  EXPECT_EQ(a.place.first_call, b.place.first_call);
  EXPECT_EQ(a.access.reads_before_write, b.access.reads_before_write);
  EXPECT_EQ(a.access.overwritten, b.access.overwritten);
  EXPECT_EQ(a.access.written, b.access.written);
  EXPECT_EQ(a.bo_bytes, b.bo_bytes);
  EXPECT_EQ(a.written, b.written);
  EXPECT_EQ(a.written_bytes, b.written_bytes);
  EXPECT_EQ(a.written_hash, b.written_hash);
  EXPECT_EQ(a.reuse_pre, b.reuse_pre);
  EXPECT_EQ(a.reuse_post, b.reuse_post);
  EXPECT_EQ(a.noreuse_pre, b.noreuse_pre);
  EXPECT_EQ(a.noreuse_post, b.noreuse_post);
  EXPECT_EQ(a.diff_bytes, b.diff_bytes);
  EXPECT_EQ(a.stale_diff_bytes, b.stale_diff_bytes);
  EXPECT_EQ(a.probe.probed, b.probe.probed);
  EXPECT_EQ(a.probe.read, b.probe.read);
  EXPECT_EQ(a.probe.unwritten_bytes, b.probe.unwritten_bytes);
}

void expect_same_call(const TraceCall& a, const TraceCall& b) {
  SCOPED_TRACE("call " + std::to_string(a.number));
  EXPECT_EQ(a.number, b.number);
  EXPECT_EQ(a.ns, b.ns);
  EXPECT_EQ(a.kernel, b.kernel);
  EXPECT_EQ(a.bo_key, b.bo_key);
  EXPECT_EQ(a.bo_key_template, b.bo_key_template);
  EXPECT_EQ(a.statics, b.statics);
  EXPECT_EQ(a.inters, b.inters);
  EXPECT_EQ(a.outputs, b.outputs);
  EXPECT_EQ(a.shared_nonstatic, b.shared_nonstatic);
  EXPECT_EQ(a.alias, b.alias);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.token, b.token);
  EXPECT_EQ(a.layer, b.layer);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.key_first_call, b.key_first_call);
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (size_t s = 0; s < a.slots.size(); ++s) expect_same_slot(a.slots[s], b.slots[s]);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.h2d_reuse, b.h2d_reuse);
  EXPECT_EQ(a.h2d_noreuse, b.h2d_noreuse);
  EXPECT_EQ(a.writes_reuse, b.writes_reuse);
  EXPECT_EQ(a.writes_noreuse, b.writes_noreuse);
  ASSERT_EQ(a.outputs_cmp.size(), b.outputs_cmp.size());
  for (size_t i = 0; i < a.outputs_cmp.size(); ++i) {
    const OutputMetrics &x = a.outputs_cmp[i], &y = b.outputs_cmp[i];
    EXPECT_EQ(x.slot, y.slot);
    EXPECT_EQ(x.bit_exact, y.bit_exact);
    same(x.cosine, y.cosine, "cosine");
    same(x.max_abs, y.max_abs, "max_abs");
    same(x.max_rel, y.max_rel, "max_rel");
    EXPECT_EQ(x.nan_reuse, y.nan_reuse);
    EXPECT_EQ(x.inf_reuse, y.inf_reuse);
    EXPECT_EQ(x.nan_noreuse, y.nan_noreuse);
    EXPECT_EQ(x.inf_noreuse, y.inf_noreuse);
    EXPECT_EQ(x.elements, y.elements);
  }
}

void expect_same_figures(const EngineFigures& a, const EngineFigures& b) {
  EXPECT_EQ(a.h2d_bytes, b.h2d_bytes);
  EXPECT_EQ(a.writes, b.writes);
  EXPECT_EQ(a.calls, b.calls);
  same(a.write_s, b.write_s, "write_s");
  same(a.dispatch_s, b.dispatch_s, "dispatch_s");
  same(a.read_s, b.read_s, "read_s");
}

void expect_same_events(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.view_reads.size(), b.view_reads.size());
  for (size_t i = 0; i < a.view_reads.size(); ++i) {
    const ViewRead &x = a.view_reads[i], &y = b.view_reads[i];
    EXPECT_EQ(x.var, y.var);
    EXPECT_EQ(x.reader, y.reader);
    EXPECT_EQ(x.read_call, y.read_call);
    EXPECT_EQ(x.captured_call, y.captured_call);
    EXPECT_EQ(x.slot, y.slot);
    EXPECT_EQ(x.overwritten_by, y.overwritten_by);
    EXPECT_EQ(x.overwritten_by_host_write, y.overwritten_by_host_write);
  }
  auto same_tokens = [](const std::vector<TokenStep>& x, const std::vector<TokenStep>& y) {
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].token, y[i].token);
      EXPECT_EQ(x[i].topk, y[i].topk);
    }
  };
  same_tokens(a.tokens_reuse, b.tokens_reuse);
  same_tokens(a.tokens_noreuse, b.tokens_noreuse);
  ASSERT_EQ(a.verify.size(), b.verify.size());
  for (size_t i = 0; i < a.verify.size(); ++i) {
    EXPECT_EQ(a.verify[i].var, b.verify[i].var);
    same(a.verify[i].cosine, b.verify[i].cosine, "verify cosine");
    same(a.verify[i].max_abs, b.verify[i].max_abs, "verify max_abs");
    same(a.verify[i].max_rel, b.verify[i].max_rel, "verify max_rel");
    EXPECT_EQ(a.verify[i].nan_inf_reuse, b.verify[i].nan_inf_reuse);
    EXPECT_EQ(a.verify[i].nan_inf_noreuse, b.verify[i].nan_inf_noreuse);
  }
  EXPECT_EQ(a.noreuse_extra_calls, b.noreuse_extra_calls);
  expect_same_figures(a.reuse, b.reuse);
  expect_same_figures(a.noreuse, b.noreuse);
  EXPECT_EQ(a.timings, b.timings);
  same(a.wall_s, b.wall_s, "wall_s");
}

TEST(TraceIo, RoundTripKeepsEveryFieldAndText) {
  Trace t = full_trace();
  std::string text = text_of(t);
  auto r = read_text(text);
  ASSERT_TRUE(r.ok()) << r.error().line();
  expect_same_header(t.header, r->header);
  ASSERT_EQ(t.calls.size(), r->calls.size());
  for (size_t i = 0; i < t.calls.size(); ++i) expect_same_call(t.calls[i], r->calls[i]);
  expect_same_events(t, *r);
  EXPECT_EQ(text_of(*r), text);
}

TEST(TraceIo, LinesAreOrderedOneObjectEach) {
  std::string text = text_of(full_trace());
  std::istringstream in(text);
  std::vector<std::string> kinds;
  for (std::string line; std::getline(in, line);) {
    ojson j = ojson::parse(line);
    kinds.push_back(j.contains("type")
                        ? j["type"].get<std::string>() +
                              (j.contains("engine") ? ":" + j["engine"].get<std::string>() : "")
                        : "header");
  }
  std::vector<std::string> want = {"header",    "call",        "call",          "view_read",
                                   "view_read", "token:reuse", "token:reuse",   "token:no_reuse",
                                   "verify",    "verify",      "figures:reuse", "figures:no_reuse",
                                   "end"};
  EXPECT_EQ(kinds, want);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("\"hash\":\"fedcba9876543211\""), std::string::npos);
  EXPECT_NE(text.find("\"cosine\":\"nan\",\"max_abs\":\"inf\",\"max_rel\":\"-inf\""),
            std::string::npos);
}

TEST(TraceIo, WithoutCapabilitiesOnlyIdentityIsWritten) {
  Trace t = full_trace();
  t.header.caps = Capabilities{};
  t.timings = false;
  std::string text = text_of(t);
  std::string after_header = text.substr(text.find('\n'));
  for (const char* gone : {"\"bo_bytes\"", "\"reuse\":[", "\"no_reuse\":[", "\"diff\"", "\"probe\"",
                           "\"access\"", "\"failed\"", "\"outputs\"", "\"figures\"", "\"verify\"",
                           "\"seconds\"", "\"wall_seconds\""})
    EXPECT_EQ(after_header.find(gone), std::string::npos) << gone;
  auto r = read_text(text);
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_FALSE(r->timings);
  EXPECT_EQ(text_of(*r), text);
}

TEST(TraceIo, RunWithoutNoReuseWritesZeroSecondElements) {
  Trace t = full_trace();
  t.header.caps = Capabilities{};
  t.header.caps.run = true;
  std::string text = text_of(t);
  EXPECT_NE(text.find("\"h2d\":[123456789012,0],\"writes\":[2,0]"), std::string::npos);
  auto r = read_text(text);
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls[0].h2d_noreuse, 0u);
}

TEST(TraceIo, ProbeIsPerSlot) {
  auto r = read_text(text_of(full_trace()));
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_TRUE(r->calls[0].slots[0].probe.probed);
  EXPECT_FALSE(r->calls[0].slots[2].probe.probed);
  EXPECT_TRUE(r->calls[1].slots[2].probe.probed);
}

TEST(TraceIo, HandWrittenExampleReads) {
  fs::path p = source_root() / "tests/data/trace/hand_written.trace.jsonl";
  auto r = read_trace(p.string());
  ASSERT_TRUE(r.ok()) << r.error().line();
  ASSERT_EQ(r->calls.size(), 2u);
  EXPECT_EQ(r->calls[1].slots[1].name, "y");
  EXPECT_EQ(r->calls[1].key_first_call, 1);
  EXPECT_FALSE(r->calls[1].slots[1].written);
  EXPECT_EQ(r->calls[0].slots[0].host.hash, 0x2146c62ab21e396aull);
  EXPECT_EQ(r->reuse.writes, 3);
  // BO numbers are derived on reading: x and y have one BO each, the same in both calls.
  EXPECT_EQ(r->calls[0].slots[0].place.bo, 1);
  EXPECT_EQ(r->calls[0].slots[1].place.bo, 2);
  EXPECT_EQ(r->calls[1].slots[1].place.bo, 2);
  // Written in the canonical form, so writing it again gives the same bytes.
  std::ifstream f(p);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text_of(*r), text.str());
}

// docs/trace-format.md shows the hand-written example in full: every line must be the file's.
TEST(TraceIo, FormatDocShowsTheHandWrittenExample) {
  std::ifstream doc(source_root() / "docs/trace-format.md");
  ASSERT_TRUE(doc) << "docs/trace-format.md missing";
  std::stringstream d;
  d << doc.rdbuf();
  std::ifstream f(source_root() / "tests/data/trace/hand_written.trace.jsonl");
  int lines = 0;
  for (std::string line; std::getline(f, line); ++lines)
    EXPECT_NE(d.str().find(line + "\n"), std::string::npos) << "not in the doc: " << line;
  EXPECT_EQ(lines, 6);
  EXPECT_NE(d.str().find("Which checks need which capabilities: docs/checks.md."),
            std::string::npos);
}

TEST(TraceIo, SchemaHasADefinitionPerLineKind) {
  std::ifstream f(source_root() / "docs/trace.schema.json");
  ASSERT_TRUE(f) << "docs/trace.schema.json missing";
  ojson s = ojson::parse(f);
  EXPECT_EQ(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
  for (const char* d : {"header", "call", "slot", "view_read", "token", "verify", "figures", "end"})
    EXPECT_TRUE(s["$defs"].contains(d)) << d;
  EXPECT_EQ(s["oneOf"].size(), 3u);
}

TEST(TraceIo, PythonExampleWriterReads) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  fs::path script = source_root() / "tool/trace/examples/write_trace.py";
  fs::path out = fs::temp_directory_path() / ("bod_py_trace_" + std::to_string(getpid()));
  std::string cmd = "/usr/bin/python3 '" + script.string() + "' > '" + out.string() + "'";
  int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc)) << cmd;
  if (WEXITSTATUS(rc) == 77) {
    fs::remove(out);
    GTEST_SKIP() << "the example needs the python3 xxhash module";
  }
  ASSERT_EQ(WEXITSTATUS(rc), 0) << cmd;
  auto r = read_trace(out.string());
  fs::remove(out);
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls.size(), 4u);
  EXPECT_EQ(r->header.kernels.size(), 2u);
  EXPECT_TRUE(r->header.caps.run);
  EXPECT_FALSE(r->header.caps.no_reuse);
  // Layer 1's mul reuses the BO of layer 0's static weights: not written, stale bytes.
  const TraceSlot& w = r->calls[2].slots[1];
  EXPECT_FALSE(w.written);
  EXPECT_EQ(w.reuse_pre, r->calls[0].slots[1].reuse_post);
  EXPECT_NE(w.host.hash, w.reuse_pre);
}

// ---- Refusals --------------------------------------------------------------------------------

// The lines of a small valid trace (one 2-slot kernel, 2 calls; run and access declared).
std::vector<ojson> base_lines() {
  Trace t;
  t.header.producer = "test";
  t.header.caps.run = true;
  t.header.caps.access = true;
  t.header.kernels = {{"k", {{"a", DType::f32}, {"b", DType::f32}}, ""}};
  for (int n = 1; n <= 2; ++n) {
    TraceCall c;
    c.number = n;
    c.kernel = "k";
    c.bo_key = "k";
    c.key_first_call = 1;
    for (int s = 0; s < 2; ++s) {
      TraceSlot ts;
      ts.slot = s;
      ts.place.name = "k";
      ts.place.index = s;
      ts.place.first_call = 1;
      c.slots.push_back(ts);
    }
    t.calls.push_back(c);
  }
  std::vector<ojson> lines;
  std::istringstream in(text_of(t));
  for (std::string l; std::getline(in, l);) lines.push_back(ojson::parse(l));
  return lines;
}

std::string join(const std::vector<ojson>& lines) {
  std::string s;
  for (auto& l : lines) s += l.dump() + "\n";
  return s;
}

// Reads the base trace after `mutate`; it must fail with exit 2 and a message containing
// every string of `want`.
void refuses(const std::function<void(std::vector<ojson>&)>& mutate,
             const std::vector<std::string>& want, const TraceLimits& lim = {}) {
  auto lines = base_lines();
  mutate(lines);
  auto r = read_text(join(lines), lim);
  ASSERT_FALSE(r.ok()) << "accepted:\n" << join(lines);
  EXPECT_EQ(r.error().code, Exit::bad_input);
  std::string msg = r.error().line();
  for (auto& w : want) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(TraceIoRefuses, BaseTraceReads) {
  auto r = read_text(join(base_lines()));
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls.size(), 2u);
}

TEST(TraceIoRefuses, NewerVersion) {
  refuses([](auto& l) { l[0]["version"] = 2; },
          {"t.jsonl:1:/version: ", "version 2", "newer", "version 1"});
  refuses([](auto& l) { l[0]["version"] = "1"; }, {"t.jsonl:1:/version: ", "found a string"});
  refuses([](auto& l) { l[0]["trace"] = "bo-docter"; },
          {"t.jsonl:1:/trace: ", "\"bo-docter\"", "expected \"bo-doctor\""});
}

TEST(TraceIoRefuses, HeaderNotFirst) {
  refuses([](auto& l) { l.erase(l.begin()); }, {"t.jsonl:1: ", "header", "\"call\""});
  refuses([](auto& l) { l.insert(l.begin() + 1, l[0]); }, {"t.jsonl:2: ", "second header"});
  auto r = read_text("\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().line().find("t.jsonl:1: empty trace"), std::string::npos);
}

TEST(TraceIoRefuses, UnknownKey) {
  refuses([](auto& l) { l[2]["kernle"] = "k"; },
          {"t.jsonl:3:/kernle: ", "unknown key \"kernle\"", "kernel", "\"x\""});
  refuses([](auto& l) { l[1]["slots"][1]["host"]["hsah"] = 1; },
          {"t.jsonl:2:/slots/1/host/hsah: ", "unknown key"});
  refuses([](auto& l) { l[0]["capabilities"]["probes"] = true; },
          {"t.jsonl:1:/capabilities/probes: ", "unknown key"});
  refuses([](auto& l) { l[1]["x"] = 1; }, {"t.jsonl:2:/x: ", "expected an object"});
}

TEST(TraceIo, ExtensionsUnderXAreAccepted) {
  auto lines = base_lines();
  lines[0]["x"] = {{"recorder", {{"pid", 1}}}};
  lines[1]["x"] = ojson::object();
  lines[1]["slots"][0]["host"]["x"] = {{"anything", {1, "two", nullptr}}};
  auto r = read_text(join(lines));
  EXPECT_TRUE(r.ok()) << r.error().line();
}

TEST(TraceIoRefuses, MissingField) {
  refuses([](auto& l) { l[1]["slots"][0]["host"].erase("hash"); },
          {"t.jsonl:2:/slots/0/host/hash: ", "missing required field"});
  refuses([](auto& l) { l[2].erase("labels"); }, {"t.jsonl:3:/labels: ", "missing"});
  refuses([](auto& l) { l[0]["capabilities"].erase("verify"); },
          {"t.jsonl:1:/capabilities/verify: ", "missing"});
  // A declared capability needs its fields.
  refuses([](auto& l) { l[1]["slots"][1].erase("written_hash"); },
          {"t.jsonl:2:/slots/1/written_hash: ", "missing"});
  refuses([](auto& l) { l[1]["slots"][1].erase("access"); },
          {"t.jsonl:2:/slots/1/access: ", "missing"});
}

TEST(TraceIoRefuses, WrongType) {
  refuses([](auto& l) { l[1]["n"] = "1"; },
          {"t.jsonl:2:/n: ", "expected an integer", "found a string \"1\""});
  refuses([](auto& l) { l[1]["shared_nonstatic"] = 0; },
          {"t.jsonl:2:/shared_nonstatic: ", "true or false", "found a number 0"});
  refuses([](auto& l) { l[1]["slots"][0]["bo"]["bytes"] = -4; },
          {"t.jsonl:2:/slots/0/bo/bytes: ", ">= 0", "-4"});
  refuses([](auto& l) { l[1]["slots"][0]["bo"]["bytes"] = 4.5; },
          {"t.jsonl:2:/slots/0/bo/bytes: ", "4.5"});
  refuses([](auto& l) { l[1]["static"] = {0, "1"}; }, {"t.jsonl:2:/static/1: ", "\"1\""});
  refuses([](auto& l) { l[1]["slots"][0]["host"]["hash"] = "00000000000000AB"; },
          {"t.jsonl:2:/slots/0/host/hash: ", "16 lower-case hex digits", "00000000000000AB"});
  refuses([](auto& l) { l[1]["slots"][0]["reuse"] = {"0000000000000000"}; },
          {"t.jsonl:2:/slots/0/reuse: ", "an array of 2 elements"});
  refuses([](auto& l) { l[1]["alias"] = {{"01", "p"}}; }, {"t.jsonl:2:/alias/01: ", "slot index"});
  refuses([](auto& l) { l[1]["alias"] = {{"2", 3}}; }, {"t.jsonl:2:/alias/2: ", "a string"});
  refuses([](auto& l) { l[1] = ojson::array({1}); }, {"t.jsonl:2: ", "one JSON object per line"});
}

TEST(TraceIoRefuses, BadEnum) {
  refuses([](auto& l) { l[1]["slots"][1]["role"] = "inptu"; },
          {"t.jsonl:2:/slots/1/role: ", "input, static, intermediate", "\"inptu\""});
  refuses([](auto& l) { l[0]["kernels"][0]["slots"][0]["dtype"] = "f16"; },
          {"t.jsonl:1:/kernels/0/slots/0/dtype: ", "bf16, f32, i32, i8", "\"f16\""});
  refuses([](auto& l) { l[1]["slots"][0]["host"]["source"] = "weights"; },
          {"t.jsonl:2:/slots/0/host/source: ", "tensor, var, view, zeros, placeholder"});
  refuses([](auto& l) { l[1]["slots"][0]["bo"]["pool"] = "keys"; },
          {"t.jsonl:2:/slots/0/bo/pool: ", "key, shared, alias"});
  refuses([](auto& l) { l[2]["type"] = "cal"; }, {"t.jsonl:3:/type: ", "call, view_read"});
  refuses(
      [](auto& l) {
        l.insert(l.end() - 1,
                 ojson{{"type", "token"}, {"engine", "noreuse"}, {"token", 1}, {"topk", {1}}});
      },
      {"t.jsonl:5:/engine: ", "reuse, no_reuse", "\"noreuse\""});
}

TEST(TraceIoRefuses, NonConsecutiveCallNumbers) {
  refuses([](auto& l) { l[2]["n"] = 3; }, {"t.jsonl:3:/n: ", "expected 2", "consecutive"});
  refuses([](auto& l) { l[1]["n"] = 0; }, {"t.jsonl:2:/n: ", "expected 1"});
}

TEST(TraceIoRefuses, SlotCountMismatch) {
  refuses([](auto& l) { l[2]["slots"].erase(1); },
          {"t.jsonl:3:/slots: ", "expected 2 slots", "kernel \"k\"", "found 1"});
  refuses([](auto& l) { l[1]["kernel"] = "q"; },
          {"t.jsonl:2:/kernel: ", "unknown kernel \"q\"", "k"});
}

TEST(TraceIoRefuses, CallReferences) {
  refuses([](auto& l) { l[1]["key_first_call"] = 2; }, {"t.jsonl:2:/key_first_call: ", "1 to 1"});
  refuses([](auto& l) { l[2]["slots"][0]["bo"]["first_call"] = 0; },
          {"t.jsonl:3:/slots/0/bo/first_call: ", "1 to 2"});
  refuses(
      [](auto& l) {
        l[2]["slots"][0]["host"]["source"] = "view";
        l[2]["slots"][0]["host"]["view_of_call"] = 3;
      },
      {"t.jsonl:3:/slots/0/host/view_of_call: ", "1 to 2", "found a number 3"});
  refuses([](auto& l) { l[1]["slots"][0]["host"]["view_of_call"] = 1; },
          {"t.jsonl:2:/slots/0/host/view_of_call: ", "not \"view\""});
  ojson vr = {{"type", "view_read"}, {"var", "v"}, {"reader", "r"},       {"read_call", 0},
              {"captured_call", 1},  {"slot", 0},  {"overwritten_by", 2}, {"by_host_write", false}};
  refuses([&](auto& l) { l.insert(l.begin() + 2, vr); }, {"t.jsonl:3:/overwritten_by: ", "1 to 1"});
  auto lines = base_lines();
  lines.insert(lines.end() - 1, vr);
  EXPECT_TRUE(read_text(join(lines)).ok());
}

TEST(TraceIoRefuses, OutOfRangeSlotIndicesAreKept) {
  auto lines = base_lines();
  lines[1]["static"] = {7};
  lines[1]["output"] = {-1, 2};
  lines[1]["alias"] = {{"9", "p"}, {"-3", "q"}};
  auto r = read_text(join(lines));
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls[0].statics, std::vector<int>{7});
  EXPECT_EQ(r->calls[0].alias.at(-3), "q");
}

TEST(TraceIoRefuses, FieldWithoutItsCapability) {
  refuses(
      [](auto& l) {
        l[1]["slots"][0]["no_reuse"] = {"0000000000000000", "0000000000000000"};
      },
      {"t.jsonl:2:/slots/0/no_reuse: ", "capability \"no_reuse\"", "does not declare"});
  refuses([](auto& l) { l[2]["outputs"] = ojson::array(); },
          {"t.jsonl:3:/outputs: ", "capability \"no_reuse\""});
  refuses(
      [](auto& l) {
        l[1]["slots"][1]["probe"] = {{"read", true}, {"unwritten_bytes", 0}};
      },
      {"t.jsonl:2:/slots/1/probe: ", "capability \"probe\""});
  refuses([](auto& l) { l[0]["capabilities"]["run"] = false; },
          {"t.jsonl:2:/failed: ", "capability \"run\""});
  refuses([](auto& l) { l[1]["h2d"] = {0, 5}; }, {"t.jsonl:2:/h2d/1: ", "expected 0"});
  refuses([](auto& l) { l[0]["capabilities"]["byte_diffs"] = true; },
          {"t.jsonl:1:/capabilities/byte_diffs: ", "\"no_reuse\": true"});
  refuses(
      [](auto& l) {
        l.insert(l.end() - 1, ojson{{"type", "verify"},
                                    {"var", "v"},
                                    {"cosine", 1},
                                    {"max_abs", 0},
                                    {"max_rel", 0},
                                    {"nan_inf", {0, 0}}});
      },
      {"t.jsonl:5:/type: ", "capability \"verify\""});
  refuses(
      [](auto& l) {
        l.insert(l.end() - 1, ojson{{"type", "figures"},
                                    {"engine", "no_reuse"},
                                    {"calls", 1},
                                    {"h2d_bytes", 0},
                                    {"bo_writes", 0}});
      },
      {"t.jsonl:5:/engine: ", "\"no_reuse\" or \"verify\""});
}

TEST(TraceIoRefuses, NumbersAndNonFiniteStrings) {
  refuses(
      [](auto& l) {
        l[0]["verify"]["outputs"] = {
            {{"var", "v"}, {"min_cosine", "Infinity"}, {"atol", 0}, {"rtol", 0}}};
      },
      {"t.jsonl:1:/verify/outputs/0/min_cosine: ", "\"nan\", \"inf\", \"-inf\"", "\"Infinity\""});
  auto lines = base_lines();
  lines[0]["verify"]["outputs"] = {
      {{"var", "v"}, {"min_cosine", "-inf"}, {"atol", 1}, {"rtol", "nan"}}};
  auto r = read_text(join(lines));
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->header.verify[0].min_cosine, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(r->header.verify[0].atol, 1.0);
  EXPECT_TRUE(std::isnan(r->header.verify[0].rtol));
}

TEST(TraceIoRefuses, StructureOfTheFile) {
  refuses([](auto& l) { l.push_back(l[3]); }, {"t.jsonl:6: ", "after the \"end\" line (line 5)"});
  refuses([](auto& l) { l.insert(l.end() - 1, l[3]); },
          {"t.jsonl:5:/engine: ", "second figures line"});
  auto r = read_text(join(base_lines()) + "{\"type\":\"call\",\"n\":");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().line().find("t.jsonl:6: not valid JSON"), std::string::npos)
      << r.error().line();
  r = read_text("{\"trace\":\"bo-doctor\",\"trace\":\"bo-doctor\"}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().line().find("t.jsonl:1: duplicate key \"trace\""), std::string::npos)
      << r.error().line();
}

TEST(TraceIo, TraceWithoutEndLineReads) {
  auto lines = base_lines();
  lines.pop_back();  // end
  lines.pop_back();  // figures
  auto r = read_text(join(lines));
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls.size(), 2u);
}

TEST(TraceIoRefuses, ControlCharactersAreEscapedAndValuesShortened) {
  auto lines = base_lines();
  lines[1]["slots"][0]["role"] = std::string(200, 'r') + "\x01";
  auto r = read_text(join(lines));
  ASSERT_FALSE(r.ok());
  std::string msg = r.error().what;
  EXPECT_EQ(msg.find('\x01'), std::string::npos);
  EXPECT_NE(msg.find("\"rrrr"), std::string::npos);
  EXPECT_LT(msg.size(), 200u) << msg;
  r = read_text("{\"trace\":\x02}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().line().find('\x02'), std::string::npos) << r.error().line();
}

// ---- Limits ----------------------------------------------------------------------------------

TEST(TraceIoLimits, LineTooLong) {
  TraceLimits lim;
  lim.max_line_bytes = 100;
  refuses([](auto&) {}, {"t.jsonl:1: ", "longer than the limit of 100 bytes", "max_line_bytes"},
          lim);
  // A huge line fails without being read whole.
  std::string text = join(base_lines()) + std::string(size_t(8) << 20, ' ') + "\n";
  auto r = read_text(text, TraceLimits{size_t(1) << 20});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().line().find("t.jsonl:6: line longer"), std::string::npos);
}

TEST(TraceIoLimits, NestingTooDeep) {
  TraceLimits lim;
  lim.max_depth = 8;
  refuses(
      [](auto& l) {
        ojson deep = 1;
        for (int i = 0; i < 10; ++i) deep = ojson::array({deep});
        l[1]["x"] = {{"deep", deep}};
      },
      {"t.jsonl:2: ", "nested deeper than 8 levels", "max_depth"}, lim);
  // Brackets inside strings do not count.
  auto lines = base_lines();
  lines[1]["path"] = std::string(50, '[');
  EXPECT_TRUE(read_text(join(lines), lim).ok());
}

TEST(TraceIoLimits, StringTooLong) {
  TraceLimits lim;
  lim.max_string_bytes = 64;
  refuses([](auto& l) { l[0]["producer"] = std::string(65, 'p'); },
          {"t.jsonl:1: ", "string of 65 bytes", "max_string_bytes"}, lim);
  auto lines = base_lines();
  lines[0]["producer"] = std::string(64, 'p');
  EXPECT_TRUE(read_text(join(lines), lim).ok());
}

TEST(TraceIoLimits, TooManyCalls) {
  TraceLimits lim;
  lim.max_calls = 1;
  refuses([](auto&) {}, {"t.jsonl:3: ", "more than 1 calls", "max_calls"}, lim);
}

TEST(TraceIoLimits, TooManySlots) {
  TraceLimits lim;
  lim.max_slots = 1;
  refuses([](auto&) {}, {"t.jsonl:1:/kernels/0/slots: ", "2 slots", "max_slots"}, lim);
}

// ---- Paths -----------------------------------------------------------------------------------

void refuses_path(const std::string& path, const std::string& what) {
  auto r = read_trace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Exit::bad_input);
  EXPECT_EQ(r.error().where, path);
  EXPECT_NE(r.error().what.find(what), std::string::npos) << r.error().line();
}

TEST(TraceIoPaths, DirectoryIsRefused) {
  refuses_path(fs::temp_directory_path().string(), "a directory, not a regular file");
}

TEST(TraceIoPaths, DevZeroIsRefused) {
  refuses_path("/dev/zero", "a character device, not a regular file");
}

TEST(TraceIoPaths, FifoIsRefusedWithoutOpening) {
  fs::path p = fs::temp_directory_path() / ("bod_trace_fifo_" + std::to_string(getpid()));
  fs::remove(p);
  ASSERT_EQ(mkfifo(p.c_str(), 0600), 0) << std::strerror(errno);
  refuses_path(p.string(), "a FIFO, not a regular file");  // would block if it were opened
  fs::remove(p);
}

TEST(TraceIoPaths, MissingFileIsRefused) {
  refuses_path("/nonexistent/trace.jsonl", "No such file");
}

TEST(TraceIoPaths, FileRoundTrip) {
  fs::path p = fs::temp_directory_path() / ("bod_trace_" + std::to_string(getpid()) + ".jsonl");
  {
    std::ofstream f(p);
    write_trace(f, full_trace());
  }
  auto r = read_trace(p.string());
  fs::remove(p);
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls.size(), 2u);
}

}  // namespace
}  // namespace bod

namespace bod {
namespace {

// An optional field: absent when 0 (every trace before it reads and writes the same), written
// and read back otherwise, and named where a call is described.
TEST(TraceIo, CallThreadIsWrittenOnlyWhenNotTheFirst) {
  auto lines = base_lines();
  EXPECT_FALSE(lines[1].contains("thread"));
  lines[2]["thread"] = 2;
  auto r = read_text(join(lines));
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls[0].thread, 0);
  EXPECT_EQ(r->calls[1].thread, 2);
  std::string text = text_of(*r);
  EXPECT_EQ(text.find("\"thread\""), text.rfind("\"thread\""));  // one call carries it
  EXPECT_NE(text.find("\"thread\":2"), std::string::npos);
  r->calls[1].phase = "decode";
  EXPECT_EQ(r->calls[1].where(), "decode thread 2");
  refuses([](auto& l) { l[2]["thread"] = -1; }, {"t.jsonl:3:/thread: ", "from 0 to"});
}

}  // namespace
}  // namespace bod
