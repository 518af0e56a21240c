// The benchmark of a check's cost, all figures from one process, interleaved so machine drift
// hits every run alike, as thread CPU time (the other core's load does not count):
//   - per model: a reuse-engine-only run (the reference: what the engine itself costs), a full
//     `check` (reuse + no-reuse engines, hashing, the Trace, every check and the report's
//     analyses), `check --probe`, and `check` without the shadow shortcut (shadow_skip off);
//     per repeat the ratio of each to the reuse-only run, printed as min/median/max;
//   - hashing: XXH3 on every code path this CPU has, against a plain 8-byte read loop over the
//     same 256 MiB buffer (ratio = read time / hash time: 1.0 is hashing at read speed);
//   - scaling: check/reuse of llama-tiny with 4, 16, 64 and 128 decode tokens (dims T and SMAX
//     edited in memory), and with 2 to 32 layers;
//   - a long KV cache (SMAX 4096): check with the vars' chunk hashes against check hashing
//     every var whole on every call;
//   - the real-size Llama-3.2-1B layout plan: reuse-only, check and check --probe, thread CPU
//     and wall ratios, and each run's peak RSS over the weights' bytes.
// One line per figure, in a stable form (`ratio NAME MODEL min=.. median=.. max=..`).
// Prints, asserts nothing.
//   bench_check [repeats] [--quick] [--no-big] [--scaling] [--big]   (--quick: models only, no
//   hashing, scaling or 1B plan; --no-big: everything but the 1B plan; --scaling: the scaling
//   tables only, `repeats` each; --big: the 1B plan only, `repeats` each)
//   bench_check --only reuse|check|check-probe|check-noskip|check-wholehash [runs] [--dims
//   T=128,SMAX=144] (one mode on llama-tiny, dims edited, for a profiler)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/hash.h"
#include "core/pages.h"
#include "report/report.h"
#include "runner/runner.h"

using namespace bod;

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Stats {
  double min, median, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

void line(const std::string& what, const std::vector<double>& v, const char* unit = "") {
  Stats s = stats(v);
  std::printf("%s min=%.3f%s median=%.3f%s max=%.3f%s\n", what.c_str(), s.min, unit, s.median, unit,
              s.max, unit);
  std::fflush(stdout);
}

struct Loaded {
  Model model;
  Plan plan;
  HostData data;
};

// Loads a model.json, with dims overridden (JSON edited in memory before parsing). On the heap:
// the plan points into the model.
std::unique_ptr<Loaded> load(const std::string& path,
                             const std::vector<std::pair<std::string, int>>& dims = {}) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  if (!dims.empty()) {
    auto j = nlohmann::ordered_json::parse(text);
    for (auto& [k, v] : dims) j["dims"][k] = v;
    text = j.dump();
  }
  auto m = parse_model(text, path);
  if (!m) std::fprintf(stderr, "%s\n", m.error().line().c_str()), std::exit(2);
  auto l = std::make_unique<Loaded>(Loaded{std::move(m.value()), {}, {}});
  auto p = expand(l->model);
  if (!p) std::fprintf(stderr, "%s\n", p.error().line().c_str()), std::exit(2);
  l->plan = std::move(p.value());
  auto d = HostData::load(l->model);
  if (!d) std::fprintf(stderr, "%s\n", d.error().line().c_str()), std::exit(2);
  l->data = std::move(d.value());
  return l;
}

enum class Mode { reuse, check, probe, noskip, wholehash };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::reuse:
      return "reuse";
    case Mode::check:
      return "check";
    case Mode::probe:
      return "check-probe";
    case Mode::noskip:
      return "check-noskip";
    case Mode::wholehash:
      return "check-wholehash";
  }
  return "?";
}

size_t g_sink = 0;  // keeps the work observable

double wall_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// What one run cost besides its thread CPU time (the big plan's figures).
struct RunCost {
  double wall = 0;
  size_t peak = 0;  // peak resident bytes of the process during the run
};

// One run, thread CPU seconds (wall time and peak RSS into `cost` when given).
double time_run(const Plan& p, const HostData& d, Mode mode, RunCost* cost = nullptr) {
  if (cost) reset_peak_rss();
  double w0 = wall_s();
  auto backend = make_cpu_backend();
  double t0 = thread_cpu_s();
  RunOptions ro;
  ro.no_reuse = mode != Mode::reuse;
  ro.probe = mode == Mode::probe;
  ro.shadow_skip = mode != Mode::noskip;
  ro.chunk_hashes = mode != Mode::wholehash;
  Trace t = run_plan(p, "", d, *backend, ro);
  if (mode != Mode::reuse) g_sink += build_report("check", t, false).findings.size();
  g_sink += t.calls.size();
  double cpu = thread_cpu_s() - t0;
  if (cost) *cost = RunCost{wall_s() - w0, peak_rss()};
  return cpu;
}

// Interleaved repeats of `modes` (the order rotates each repeat); per mode the per-repeat
// times, index 0 being the reference. A repeat of a small plan runs it several times in a
// row (the same count for every mode), so that one sample of the reference lasts about
// 30 ms: a 3 ms run alone is at the mercy of one scheduler tick.
std::vector<std::vector<double>> measure(const Loaded& l, const std::vector<Mode>& modes,
                                         int reps) {
  double ref = 0;
  for (Mode m : modes) {  // warm-up
    double s = time_run(l.plan, l.data, m);
    if (m == modes[0]) ref = s;
  }
  int runs = std::max(1, std::min(50, static_cast<int>(0.03 / std::max(ref, 1e-6))));
  std::vector<std::vector<double>> t(modes.size());
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < modes.size(); ++k) {
      size_t i = (k + static_cast<size_t>(r)) % modes.size();
      double sum = 0;
      for (int n = 0; n < runs; ++n) sum += time_run(l.plan, l.data, modes[i]);
      t[i].push_back(sum / runs);
    }
  return t;
}

std::vector<double> ratios(const std::vector<double>& a, const std::vector<double>& ref) {
  std::vector<double> r;
  for (size_t i = 0; i < a.size(); ++i) r.push_back(a[i] / ref[i]);
  return r;
}

void bench_model(const std::string& name, int reps) {
  auto lp = load(BOD_SOURCE_DIR "/fixtures/models/" + name + "/model.json");
  const Loaded& l = *lp;
  std::vector<Mode> modes = {Mode::reuse, Mode::check, Mode::probe, Mode::noskip};
  auto t = measure(l, modes, reps);
  RunStats st;
  {
    auto backend = make_cpu_backend();
    RunOptions ro;
    ro.stats = &st;
    run_plan(l.plan, "", l.data, *backend, ro);
  }
  std::printf("model %s calls=%zu repeats=%d shadow-runs=%ld shadow-taken=%ld\n", name.c_str(),
              l.plan.calls.size(), reps, st.shadow_runs, st.shadow_taken);
  for (size_t i = 0; i < modes.size(); ++i) {
    std::vector<double> ms;
    for (double s : t[i]) ms.push_back(s * 1e3);
    line(std::string("time ") + mode_name(modes[i]) + " " + name, ms, "ms");
  }
  for (size_t i = 1; i < modes.size(); ++i)
    line(std::string("ratio ") + mode_name(modes[i]) + "/reuse " + name, ratios(t[i], t[0]));
}

void bench_hash(int reps) {
  std::vector<uint8_t> buf(size_t(256) << 20);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  auto paths = available_hash_paths();
  std::vector<std::vector<double>> rh(paths.size());
  std::vector<double> gb_read, gb_hash;
  double gb = double(buf.size()) / 1e9;
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < paths.size(); ++k) {
      double t0 = thread_cpu_s();
      uint64_t acc = 0;
      const uint64_t* w = reinterpret_cast<const uint64_t*>(buf.data());
      for (size_t i = 0; i < buf.size() / 8; ++i) acc ^= w[i];
      double tr = thread_cpu_s() - t0;
      t0 = thread_cpu_s();
      acc += hash_bytes_on(paths[k], buf.data(), buf.size());
      double th = thread_cpu_s() - t0;
      g_sink += static_cast<size_t>(acc & 1);
      rh[k].push_back(tr / th);
      if (paths[k] == hash_path()) gb_read.push_back(gb / tr), gb_hash.push_back(gb / th);
    }
  for (size_t k = 0; k < paths.size(); ++k)
    line(std::string("ratio hash-") + hash_path_name(paths[k]) + "/read", rh[k]);
  line(std::string("speed read GB/s"), gb_read);
  line(std::string("speed hash-") + hash_path_name(hash_path()) + " GB/s", gb_hash);
}

void bench_scaling(int reps) {
  for (int T : {4, 16, 64, 128}) {
    auto l =
        load(BOD_SOURCE_DIR "/fixtures/models/llama-tiny/model.json", {{"T", T}, {"SMAX", 16 + T}});
    auto t = measure(*l, {Mode::reuse, Mode::check}, reps);
    line("scaling check/reuse llama-tiny T=" + std::to_string(T) +
             " calls=" + std::to_string(l->plan.calls.size()),
         ratios(t[1], t[0]));
  }
}

// A long KV cache: llama-tiny with 128 decode tokens and SMAX 4096 (256 KiB per layer and
// cache, four 64 KiB chunks): check with the vars' chunk hashes kept (an append re-reads one
// chunk) and with every var hashed whole on every call (check-wholehash).
void bench_kv(int reps) {
  auto l =
      load(BOD_SOURCE_DIR "/fixtures/models/llama-tiny/model.json", {{"T", 128}, {"SMAX", 4096}});
  auto t = measure(*l, {Mode::reuse, Mode::check, Mode::wholehash}, reps);
  line("ratio check/reuse llama-tiny-kv4096", ratios(t[1], t[0]));
  line("ratio check-wholehash/reuse llama-tiny-kv4096", ratios(t[2], t[0]));
}

// Scaling over layers: check/reuse of llama-tiny with 2 to 32 layers.
void bench_layers(int reps) {
  for (int L : {2, 4, 8, 16, 32}) {
    auto l = load(BOD_SOURCE_DIR "/fixtures/models/llama-tiny/model.json", {{"L", L}});
    auto t = measure(*l, {Mode::reuse, Mode::check}, reps);
    line("scaling check/reuse llama-tiny L=" + std::to_string(L) +
             " calls=" + std::to_string(l->plan.calls.size()),
         ratios(t[1], t[0]));
  }
}

// The real-size plan (3 GB of generated weights, loaded once): reuse-only, check and
// check --probe interleaved; thread CPU and wall ratios to reuse-only, and each run's peak
// resident memory over the weights' bytes (the peak is reset before each run; the weights
// are resident throughout, so 1.0 is a run that adds nothing).
void bench_big(int reps) {
  const std::string name = "llama32-1b-layout";
  double w0 = wall_s();
  auto lp = load(BOD_SOURCE_DIR "/fixtures/models/" + name + "/model.json");
  const Loaded& l = *lp;
  size_t weights = 0;
  for (auto& t : l.model.tensors)
    weights += static_cast<size_t>(numel(t.shape)) * dtype_size(t.dtype);
  std::printf("model %s calls=%zu weights=%.2fGB load-wall=%.1fs repeats=%d\n", name.c_str(),
              l.plan.calls.size(), double(weights) / 1e9, wall_s() - w0, reps);
  std::fflush(stdout);
  std::vector<Mode> modes = {Mode::reuse, Mode::check, Mode::probe};
  std::vector<std::vector<double>> cpu(modes.size()), wall(modes.size()), rss(modes.size());
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < modes.size(); ++k) {
      size_t i = (k + static_cast<size_t>(r)) % modes.size();
      RunCost c;
      cpu[i].push_back(time_run(l.plan, l.data, modes[i], &c));
      wall[i].push_back(c.wall);
      rss[i].push_back(double(c.peak) / double(weights));
    }
  for (size_t i = 0; i < modes.size(); ++i) {
    line(std::string("time ") + mode_name(modes[i]) + " " + name, wall[i], "s");
    line(std::string("ratio rss/weights ") + mode_name(modes[i]) + " " + name, rss[i]);
  }
  for (size_t i = 1; i < modes.size(); ++i) {
    line(std::string("ratio ") + mode_name(modes[i]) + "/reuse " + name, ratios(cpu[i], cpu[0]));
    line(std::string("ratio-wall ") + mode_name(modes[i]) + "/reuse " + name,
         ratios(wall[i], wall[0]));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  bool quick = false, no_big = false, scaling_only = false, big_only = false;
  std::string only;
  std::vector<std::pair<std::string, int>> dims;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--no-big")
      no_big = true;
    else if (a == "--scaling")
      scaling_only = true;
    else if (a == "--big")
      big_only = true;
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else if (a == "--dims" && i + 1 < argc) {  // K=V[,K=V...]: llama-tiny's dims for --only
      std::stringstream ds(argv[++i]);
      for (std::string kv; std::getline(ds, kv, ',');) {
        auto eq = kv.find('=');
        if (eq != std::string::npos)
          dims.emplace_back(kv.substr(0, eq), std::atoi(kv.c_str() + eq + 1));
      }
    } else
      reps = std::max(1, std::atoi(argv[i]));
  }
  if (!only.empty()) {
    auto l = load(BOD_SOURCE_DIR "/fixtures/models/llama-tiny/model.json", dims);
    for (Mode m : {Mode::reuse, Mode::check, Mode::probe, Mode::noskip, Mode::wholehash}) {
      if (only != mode_name(m)) continue;
      std::vector<double> ms;
      for (int r = 0; r < reps; ++r) ms.push_back(time_run(l->plan, l->data, m) * 1e3);
      line(std::string("time ") + only + " llama-tiny", ms, "ms");
      RunStats st;
      auto backend = make_cpu_backend();
      RunOptions ro;
      ro.stats = &st;
      ro.no_reuse = m != Mode::reuse;
      ro.probe = m == Mode::probe;
      ro.shadow_skip = m != Mode::noskip;
      ro.chunk_hashes = m != Mode::wholehash;
      run_plan(l->plan, "", l->data, *backend, ro);
      std::printf("calls=%zu shadow-runs=%ld shadow-taken=%ld\n", l->plan.calls.size(),
                  st.shadow_runs, st.shadow_taken);
      return 0;
    }
    return std::fprintf(stderr, "unknown mode '%s'\n", only.c_str()), 2;
  }
  std::printf("bench_check repeats=%d hash-path=%s (thread CPU time, interleaved)\n", reps,
              hash_path_name(hash_path()));
  if (big_only) {
    bench_big(reps);
    return g_sink == 42 ? 1 : 0;
  }
  if (scaling_only) {
    bench_scaling(reps);
    bench_layers(reps);
    bench_kv(reps);
    return g_sink == 42 ? 1 : 0;
  }
  bench_model("llama-tiny", reps);
  bench_model("qwen-tiny", reps);
  if (!quick) {
    bench_hash(std::max(3, reps / 3));
    bench_scaling(std::max(3, reps / 2));
    bench_layers(std::max(3, reps / 2));
    bench_kv(std::max(3, reps / 2));
    if (!no_big) bench_big(std::max(3, reps / 7));
  }
  return g_sink == 42 ? 1 : 0;
}
