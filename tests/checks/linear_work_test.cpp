// Work that must stay linear on traces and models of realistic size (issue 25): each test feeds
// the input that took minutes when the work was quadratic and must finish under a hang guard
// (support/hang_guard.h, not a timing assertion: the linear work takes well under a second),
// and checks the result is still right.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "checks/checks.h"
#include "checks/finding.h"
#include "model/model.h"
#include "report/gate.h"
#include "report/report.h"
#include "skeleton/skeleton_internal.h"
#include "support/hang_guard.h"
#include "support/sanitizer.h"
#include "trace/trace.h"
#include "trace/trace_io.h"

namespace bod {
namespace {

using testing::finishes_within;

// The quadratic forms ran for minutes in Release; the linear ones take seconds on a loaded
// machine (FindingSink 150k: 15 s at load 15), ten times that under the sanitizers.
#ifdef BOD_UNDER_SANITIZER
constexpr unsigned kGuardSeconds = 240;
#else
constexpr unsigned kGuardSeconds = 60;
#endif

// FindingSink::add compared each finding with every finding before it: 60k distinct findings
// took 70 s.
TEST(LinearWork, FindingSinkScansAllFindings) {
  std::string why = finishes_within(kGuardSeconds, [] {
    FindingSink sink;
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
      Finding f;
      f.check = "static-clobber";
      f.kernel = "k";
      f.bo_key = "key" + std::to_string(i);
      f.slot = 0;
      f.call = i + 1;
      sink.add(f);
    }
    // Repeats still merge into their first occurrence.
    for (int i = 0; i < n; i += 1000) {
      Finding f;
      f.check = "static-clobber";
      f.kernel = "k";
      f.bo_key = "key" + std::to_string(i);
      f.slot = 0;
      f.call = n + i + 1;
      sink.add(f);
    }
    auto v = sink.sorted();
    return v.size() == static_cast<size_t>(n) && v[0].occurrences == 2 && v[1].occurrences == 1 &&
           v[0].last_call == n + 1;
  });
  EXPECT_EQ(why, "");
}

// A trace of `n` calls of one bo_key whose static slot 0 the kernel clobbers on every call,
// without access facts (a recorded run).
Trace clobbering_calls(int n) {
  Trace t;
  t.header.caps.run = t.header.caps.no_reuse = true;
  t.header.kernels = {KernelInfo{"k", {{"w", DType::f32}, {"y", DType::f32}}, ""}};
  for (int i = 1; i <= n; ++i) {
    TraceCall c;
    c.number = i;
    c.kernel = "k";
    c.bo_key = "k";
    c.key_first_call = 1;
    c.statics = {0};
    c.outputs = {1};
    TraceSlot w;
    w.slot = 0;
    w.name = "w";
    w.role = SlotRole::static_input;
    w.written = i == 1;
    w.reuse_pre = i == 1 ? 1 : 2;
    w.noreuse_pre = 1;
    w.noreuse_post = 2;
    TraceSlot y;
    y.slot = 1;
    y.name = "y";
    y.output = true;
    y.written = true;
    c.slots = {w, y};
    t.calls.push_back(std::move(c));
  }
  return t;
}

// static-clobber rescanned every call of the trace for each clobbering call: 20k calls took
// 11.7 s, 40k more than 16 s.
TEST(LinearWork, StaticClobberExposureRescansEveryCall) {
  std::string why = finishes_within(kGuardSeconds, [] {
    const int n = 60000;
    Trace t = clobbering_calls(n);
    FindingSink sink;
    run_static_clobber(t, sink);
    auto v = sink.sorted();
    return v.size() == 1 && v[0].severity == Severity::note && v[0].occurrences == n &&
           v[0].message.find(std::to_string(n - 1) + " call(s) of 'k' ran on the clobbered") !=
               std::string::npos;
  });
  EXPECT_EQ(why, "");
}

// config-error looked each static index up in the intermediate and output lists: 300k + 300k
// indices took more than 16 s.
TEST(LinearWork, ConfigErrorScansIntermediateListPerStaticIndex) {
  std::string why = finishes_within(kGuardSeconds, [] {
    Trace t;
    TraceCall c;
    c.number = 1;
    c.kernel = "k";
    c.bo_key = "k";
    c.key_first_call = 1;
    for (int i = 0; i < 300000; ++i) {
      c.statics.push_back(i);
      c.inters.push_back(300000 + i);
    }
    c.inters.push_back(12345);  // one slot both static and intermediate
    t.calls.push_back(c);
    FindingSink sink;
    run_config_error(t, sink);
    int both = 0;
    for (auto& f : sink.sorted())
      both += f.message == "slot is both static and intermediate" && f.slot == 12345;
    return both == 1;
  });
  EXPECT_EQ(why, "");
}

// nlohmann's callback parser (used to see duplicate keys) rescans the open array at the end of
// every object: a trace line of 500k `{}` (1.5 MB) took 70 s.
TEST(LinearWork, TraceReaderCallbackParserIsQuadraticInObjects) {
  std::string why = finishes_within(kGuardSeconds, [] {
    std::ostringstream o;
    write_trace(o, Trace{});
    std::string text = o.str();
    size_t brace = text.find('\n') - 1;  // the header's closing }
    std::string many = ",\"x\":{\"many\":[{}";
    for (int i = 1; i < 500000; ++i) many += ",{}";
    many += "]}";
    text.insert(brace, many);
    std::istringstream in(text);
    auto r = read_trace(in, "t.jsonl");
    if (!r.ok()) return false;
    // Duplicate keys are still refused, in a big line as in a small one.
    std::string dup = text;
    dup.insert(brace, ",\"producer\":\"again\"");
    std::istringstream in2(dup);
    auto d = read_trace(in2, "t.jsonl");
    return !d.ok() && d.error().what == "duplicate key \"producer\" in one object";
  });
  EXPECT_EQ(why, "");
}

// The same parser in the model.json loader.
TEST(LinearWork, ModelLoaderCallbackParserIsQuadraticInObjects) {
  std::string why = finishes_within(kGuardSeconds, [] {
    std::string many = "[{}";
    for (int i = 1; i < 500000; ++i) many += ",{}";
    many += "]";
    std::string text = R"({"format": "bo-doctor-model", "version": 1, "doc": )" + many + R"(,
      "kernels": {"k": {"slots": [{"name": "out", "shape": [4]}],
                        "body": [{"op": "fill", "value": 0, "out": "out"}]}},
      "program": {"phases": [{"name": "p", "steps": []}]}})";
    auto m = parse_model(text, "model.json");
    if (!m.ok()) return false;
    auto d = parse_model(R"({"format": "bo-doctor-model", "version": 1, "doc": )" + many +
                             R"(, "kernels": {"k": {}, "k": {}}})",
                         "model.json");
    return !d.ok() && d.error().where == "/kernels/k";
  });
  EXPECT_EQ(why, "");
}

// apply_gate grouped findings of one site by scanning the group's lists of bo_keys and calls
// for each member: 120k distinct findings at one source line took 20 s through analyze, 400k
// minutes.
TEST(LinearWork, GroupingScansTheGroupsListsPerFinding) {
  std::string why = finishes_within(kGuardSeconds, [] {
    const int n = 400000;
    Report r;
    r.findings.reserve(n);
    for (int i = 0; i < n; ++i) {
      Finding f;
      f.check = "static-clobber";
      f.severity = Severity::error;
      f.kernel = "k";
      f.bo_key = "key" + std::to_string(i);
      f.slot = i % 2;
      f.call = i + 1;
      f.path = "run.py:1";
      r.findings.push_back(std::move(f));
    }
    if (!apply_gate(r, GateOptions{})) return false;
    if (r.groups.size() != 1) return false;
    const FindingGroup& g = r.groups[0];
    // Each bo_key, slot and call listed once, in order of first appearance.
    return g.members.size() == static_cast<size_t>(n) &&
           g.bo_keys.size() == static_cast<size_t>(n) && g.bo_keys[1] == "key1" &&
           g.slots.size() == 2 && g.calls.size() == static_cast<size_t>(n) && g.calls.back() == n &&
           r.counts.errors == n;
  });
  EXPECT_EQ(why, "");
}

// The skeleton numbered the values of a slice of moving data (a static slot with a new value
// on every call) by searching the list of the values before each: O(calls^2), 600k calls 51 s
// against 20 s. Numbering is one lookup per value now, and stops at the cap.
TEST(LinearWork, SkeletonSearchesTheSlotsValuesPerCall) {
  std::string why = finishes_within(kGuardSeconds, [] {
    const uint64_t n = 2000000;
    skeleton_detail::ValueNumbers all(SIZE_MAX), capped(4096);
    for (uint64_t i = 0; i < n; ++i) {
      all.add(i * 7919);
      all.add(i * 7919);  // a repeat keeps its number
      capped.add(i * 7919);
    }
    return all.size() == n && !all.over() && all.number(0) == 0 &&
           all.number((n - 1) * 7919) == n - 1 && capped.over() && capped.size() == 4097 &&
           capped.number(4095 * 7919) == 4095;
  });
  EXPECT_EQ(why, "");
}

}  // namespace
}  // namespace bod
