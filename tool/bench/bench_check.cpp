// Benchmark: wall time of `check` (reuse + shadow engines, hashing, checks) divided by the
// wall time of a reuse-engine-only run of the same plan, measured in one process; plus XXH3
// hashing throughput against a plain read of the same buffer. Prints ratios, asserts nothing.
//   bench_check [MODEL.json] [repeats] [nohash]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "checks/registry.h"
#include "core/hash.h"
#include "runner/runner.h"

using namespace bod;
using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static double time_run(const Plan& p, const HostData& d, bool shadow) {
  auto backend = make_cpu_backend();
  auto checks = make_all_checks();
  FindingSink sink;
  auto t0 = Clock::now();
  run_shadow(p, d, *backend, checks, sink, RunOptions{shadow});
  return std::chrono::duration<double>(Clock::now() - t0).count();
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
  std::vector<double> reuse, check;
  time_run(p.value(), d.value(), true);  // warm-up
  for (int i = 0; i < reps; ++i) {       // interleaved so drift hits both alike
    reuse.push_back(time_run(p.value(), d.value(), false));
    check.push_back(time_run(p.value(), d.value(), true));
  }
  double r = median(reuse), c = median(check);
  std::printf("model %s: %zu calls, %d repeats (median)\n", path.c_str(), p->calls.size(), reps);
  std::printf("  reuse engine only : %9.2f ms\n", r * 1e3);
  std::printf("  check (shadow)    : %9.2f ms\n", c * 1e3);
  std::printf("  ratio check/reuse : %9.2f   (target <= 2.5; two engines cannot beat 2.0)\n", c / r);

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
