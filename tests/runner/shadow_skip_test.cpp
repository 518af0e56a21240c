// The shadow's shortcut (RunOptions::shadow_skip: the no-reuse engine takes the reuse engine's
// results when its kernel would read the same bytes) changes nothing anyone can see: on every
// fixture, with and without probing (and classify's probe-all), the saved trace and the JSON
// and text reports are byte-identical with the shortcut on and off. And it is taken: on the
// clean models most calls skip the second run.
// Likewise the CPU device's copy on write (BackendOptions::share: a BO's host mapping and
// device side share one block until written, whole writes from model tensors share the
// tensor, a kernel's own copy only of slots its body writes): traces and reports are
// byte-identical to a device that copies on every write and sync.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "checks/checks.h"
#include "report/report.h"
#include "runner/runner.h"
#include "support/fixtures.h"
#include "trace/trace_io.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = BOD_SOURCE_DIR;

std::vector<std::string> fixtures() {
  return testing::fixture_dirs();
}

struct Outcome {
  std::string trace, json, text, error;
  RunStats stats;
};

enum class Probe { none, probe, probe_all };

Outcome run(const std::string& fixture, bool skip, Probe probe, bool timings = false,
            bool share = true) {
  Outcome o;
  std::string path = (kSource / fixture / "model.json").string();
  auto m = load_model(path);
  if (!m) return o.error = m.error().line(), o;
  auto p = expand(m.value());
  if (!p) return o.error = p.error().line(), o;
  Trace t = plan_trace(p.value(), path);
  if (has_inconsistent_declarations(t)) return o.error = "not run", o;
  auto d = HostData::load(m.value());
  if (!d) return o.error = d.error().line(), o;
  RunOptions ro;
  ro.shadow_skip = skip;
  ro.probe = probe == Probe::probe;
  ro.probe_all = probe == Probe::probe_all;
  ro.stats = &o.stats;
  ro.timings = timings;
  try {
    auto backend = make_cpu_backend(share);
    t = run_plan(p.value(), path, d.value(), *backend, ro);
  } catch (const FatalError& e) {
    return o.error = e.error.line(), o;
  }
  std::ostringstream s;
  write_trace(s, t);
  o.trace = s.str();
  Report r = build_report("check", t, false);
  EXPECT_TRUE(apply_gate(r, GateOptions{}));
  o.json = render_json(r);
  o.text = render_text(r);
  return o;
}

class ShadowSkip : public ::testing::TestWithParam<std::string> {};

TEST_P(ShadowSkip, TraceAndReportsAreIdenticalWithTheShortcutOnAndOff) {
  for (Probe probe : {Probe::none, Probe::probe, Probe::probe_all}) {
    SCOPED_TRACE(probe == Probe::none    ? "no probe"
                 : probe == Probe::probe ? "--probe"
                                         : "probe all");
    Outcome on = run(GetParam(), true, probe), off = run(GetParam(), false, probe);
    EXPECT_EQ(on.error, off.error);
    EXPECT_EQ(off.stats.shadow_taken, 0);
    EXPECT_EQ(on.stats.shadow_runs + on.stats.shadow_taken, off.stats.shadow_runs);
    EXPECT_TRUE(on.trace == off.trace) << "the saved traces differ";
    EXPECT_EQ(on.json, off.json);
    EXPECT_EQ(on.text, off.text);
    if (on.trace != off.trace) {  // the first differing line, readable
      std::istringstream a(on.trace), b(off.trace);
      std::string la, lb;
      while (std::getline(a, la) && std::getline(b, lb))
        if (la != lb) {
          ADD_FAILURE() << "shortcut on:  " << la.substr(0, 2000)
                        << "\nshortcut off: " << lb.substr(0, 2000);
          break;
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ShadowSkip, ::testing::ValuesIn(fixtures()),
                         testing::fixture_test_name);

class CopyOnWrite : public ::testing::TestWithParam<std::string> {};

TEST_P(CopyOnWrite, TraceAndReportsAreIdenticalToADeviceThatCopies) {
  // Every probe mode with the shadow shortcut, and the no-shortcut run (every call on both
  // engines) without probes.
  const std::pair<Probe, bool> runs[] = {
      {Probe::none, true}, {Probe::none, false}, {Probe::probe, true}, {Probe::probe_all, true}};
  for (auto [probe, skip] : runs) {
    SCOPED_TRACE(std::string(probe == Probe::none    ? "no probe"
                             : probe == Probe::probe ? "--probe"
                                                     : "probe all") +
                 (skip ? ", shadow shortcut" : ", no shortcut"));
    Outcome shared = run(GetParam(), skip, probe, false, true);
    Outcome copied = run(GetParam(), skip, probe, false, false);
    EXPECT_EQ(shared.error, copied.error);
    EXPECT_TRUE(shared.trace == copied.trace) << "the saved traces differ";
    EXPECT_EQ(shared.json, copied.json);
    EXPECT_EQ(shared.text, copied.text);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CopyOnWrite, ::testing::ValuesIn(fixtures()),
                         testing::fixture_test_name);

// The shortcut is taken where it should be: on the clean models, most calls (the reuse engine
// skips only static weights, which hash the same, and intermediates the kernels overwrite).
TEST(ShadowSkipTaken, OnMostCallsOfTheCleanModels) {
  for (const char* model : {"fixtures/models/llama-tiny", "fixtures/models/qwen-tiny"}) {
    Outcome on = run(model, true, Probe::none);
    ASSERT_EQ(on.error, "") << model;
    EXPECT_GT(on.stats.shadow_taken, 2 * on.stats.shadow_runs) << model;
  }
}

// ...nor in a timed run: the report's no-reuse engine times are those of real calls.
TEST(ShadowSkipTaken, NotInATimedRun) {
  Outcome on = run("fixtures/models/llama-tiny", true, Probe::none, true);
  ASSERT_EQ(on.error, "");
  EXPECT_EQ(on.stats.shadow_taken, 0);
  EXPECT_GT(on.stats.shadow_runs, 0);
}

// ...and not where the kernel reads stale bytes: a seeded bug whose intermediate slot is read
// before the kernel writes it runs those calls on both engines.
TEST(ShadowSkipTaken, NotWhereTheKernelReadsStaleBytes) {
  Outcome on = run("fixtures/bugs/gemm_accumulate_intermediate", true, Probe::none);
  ASSERT_EQ(on.error, "");
  EXPECT_GT(on.stats.shadow_runs, 0);
}

}  // namespace
}  // namespace bod
