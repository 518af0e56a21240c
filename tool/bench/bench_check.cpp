// Benchmark: thread CPU time of `check` (reuse + no-reuse engines, hashing, the Trace, every
// check and the report's analyses) divided by that of a reuse-engine-only run of the same
// plan, measured in one process, interleaved, with min/median/max; plus XXH3 hashing
// throughput against a plain read of the same buffer. Prints ratios, asserts nothing.
//   bench_check [MODEL.json] [repeats] [nohash]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <ctime>

#include "core/hash.h"
#include "report/report.h"
#include "runner/runner.h"

using namespace bod;
using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// One run; `check` adds the no-reuse engine, hashing and every consumer of the trace.
static double wall_last = 0;  // wall seconds of the last time_run

static double time_run(const Plan& p, const HostData& d, bool check) {
  auto backend = make_cpu_backend();
  auto w0 = Clock::now();
  double t0 = thread_cpu_s();
  RunOptions ro;
  ro.no_reuse = check;
  Trace t = run_plan(p, "", d, *backend, ro);
  if (check) {
    Report r = build_report("check", t, false);
    if (r.findings.size() > (size_t(1) << 40)) std::puts("");  // keep the work observable
  }
  double cpu = thread_cpu_s() - t0;
  wall_last = std::chrono::duration<double>(Clock::now() - w0).count();
  return cpu;
}

static void row(const char* name, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("  %-18s: min %8.2f  median %8.2f  max %8.2f ms\n", name, v.front() * 1e3,
              v[v.size() / 2] * 1e3, v.back() * 1e3);
}

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : BOD_SOURCE_DIR "/fixtures/models/llama-tiny/model.json";
  int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
  auto m = load_model(path);
  if (!m) return std::fprintf(stderr, "%s\n", m.error().line().c_str()), 2;
  auto p = expand(m.value());
  if (!p) return std::fprintf(stderr, "%s\n", p.error().line().c_str()), 2;
  auto d = HostData::load(m.value());
  if (!d) return std::fprintf(stderr, "%s\n", d.error().line().c_str()), 2;
  std::vector<double> reuse, check, ratio, wreuse, wcheck, wratio;
  time_run(p.value(), d.value(), true);  // warm-up
  for (int i = 0; i < reps; ++i) {       // interleaved so drift hits both alike
    reuse.push_back(time_run(p.value(), d.value(), false));
    wreuse.push_back(wall_last);
    check.push_back(time_run(p.value(), d.value(), true));
    wcheck.push_back(wall_last);
    ratio.push_back(check.back() / reuse.back());
    wratio.push_back(wcheck.back() / wreuse.back());
  }
  std::printf("model %s: %zu calls, %d interleaved repeats, thread CPU time\n", path.c_str(),
              p->calls.size(), reps);
  row("reuse engine only", reuse);
  row("check", check);
  std::sort(ratio.begin(), ratio.end());
  std::printf("  ratio check/reuse : min %.2f  median %.2f  max %.2f   (median of medians %.2f)\n",
              ratio.front(), ratio[ratio.size() / 2], ratio.back(), median(check) / median(reuse));
  std::sort(wratio.begin(), wratio.end());
  std::printf("  wall-time ratio   : min %.2f  median %.2f  max %.2f   (median of medians %.2f)\n",
              wratio.front(), wratio[wratio.size() / 2], wratio.back(),
              median(wcheck) / median(wreuse));

  if (argc > 3 && std::string(argv[3]) == "nohash") return 0;  // for profiling the run alone
  std::vector<uint8_t> buf(size_t(256) << 20);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  std::vector<double> th, tr;
  volatile uint64_t sink_v = 0;
  for (int i = 0; i < 5; ++i) {
    auto t0 = Clock::now();
    sink_v = sink_v + hash_bytes(buf.data(), buf.size());
    th.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    uint64_t acc = 0;
    const uint64_t* w = reinterpret_cast<const uint64_t*>(buf.data());
    for (size_t k = 0; k < buf.size() / 8; ++k) acc ^= w[k];
    sink_v = sink_v + acc;
    tr.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  double gb = double(buf.size()) / 1e9;
  std::printf("hashing 256 MiB: XXH3 %.2f GB/s, plain read %.2f GB/s, ratio %.2f\n",
              gb / median(th), gb / median(tr), median(tr) / median(th));
  return 0;
}
