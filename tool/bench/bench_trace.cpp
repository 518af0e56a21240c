// The benchmark of reading and judging large traces (issue 25): generates recorded-style
// traces of 10^5 and 10^6 calls (a decode loop: 16 layers x 4 kernels per token, each layer's
// kernels on their own bo_key, 6 slots per call: static weights, an intermediate scratch slot,
// inputs and an output; run on both engines, no access facts, a static slot the kernel
// clobbers on one kernel so static-clobber's exposure and the finding sink both work), then
// runs `bo-doctor analyze` and `bo-doctor skeleton` on each as child processes, interleaved,
// and prints the wall time and the child's peak RSS (min/median/max over the runs). Also
// traces of 15k, 30k and 60k calls each with a finding of its own (--distinct; 0 for none),
// whose times should double with the count. --at-limits adds the traces at the reader's limits
// (TraceLimits): 6-slot calls up to max_trace_slots, and max_calls calls without slots.
// Prints, asserts nothing.
//   bench_trace [runs] [--sizes 100000,1000000] [--distinct 15000,30000,60000] [--at-limits]
//               [--bin PATH/bo-doctor] [--keep DIR]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trace/trace_io.h"

using namespace bod;
namespace fs = std::filesystem;

namespace {

constexpr int kLayers = 16, kKernels = 4, kSlots = 6;

// Writes a trace of `calls` calls to `path`, one call at a time (constant memory).
void write_big_trace(const std::string& path, long calls) {
  Trace t;
  t.header.producer = "bench_trace";
  t.header.model_name = "bench";
  t.header.caps.run = t.header.caps.no_reuse = true;
  t.header.named_bindings = false;
  const char* kernels[kKernels] = {"rms_gemv_rope", "attn", "o_gemv_ffn", "lm_head"};
  for (auto* k : kernels) {
    KernelInfo ki{k, {}, ""};
    for (int s = 0; s < kSlots; ++s) ki.slots.push_back({"arg" + std::to_string(s), DType::bf16});
    t.header.kernels.push_back(ki);
  }
  std::ofstream out(path, std::ios::binary);
  out << trace_header_line(t) << '\n';
  std::vector<int> first(kLayers * kKernels, 0);
  TraceCall c;
  for (long n = 1; n <= calls; ++n) {
    long step = (n - 1) % (kLayers * kKernels);
    int layer = static_cast<int>(step / kKernels), k = static_cast<int>(step % kKernels);
    int key = layer * kKernels + k;
    if (!first[static_cast<size_t>(key)]) first[static_cast<size_t>(key)] = static_cast<int>(n);
    int kf = first[static_cast<size_t>(key)];
    bool first_call = kf == n;
    c = TraceCall{};
    c.number = static_cast<int>(n);
    c.kernel = kernels[k];
    c.bo_key = std::string(kernels[k]) + "_L" + std::to_string(layer);
    c.bo_key_template = std::string(kernels[k]) + "_L{layer}";
    c.key_first_call = kf;
    c.statics = {0, 1};
    c.inters = {4};
    c.outputs = {5};
    c.phase = "decode";
    c.token = (n - 1) / (kLayers * kKernels);
    c.layer = layer;
    c.path = "decode.py:" + std::to_string(100 + k);
    for (int s = 0; s < kSlots; ++s) {
      TraceSlot ts;
      ts.slot = s;
      ts.role = s < 2 ? SlotRole::static_input : s == 4 ? SlotRole::intermediate : SlotRole::input;
      ts.output = s == 5;
      ts.host.shape = {1, 2048};
      ts.host.dtype = DType::bf16;
      ts.host.bytes = ts.bo_bytes = 4096;
      ts.host.source = s < 2 ? ArraySource::tensor : ArraySource::var;
      ts.host.name = "arg" + std::to_string(s) + "@L" + std::to_string(layer);
      ts.host.hash = s < 2 ? 1000u + static_cast<uint64_t>(key * 8 + s)
                           : static_cast<uint64_t>(n) * 8 + static_cast<uint64_t>(s);
      ts.place.name = c.bo_key;
      ts.place.index = s;
      ts.place.first_call = kf;
      bool skipped = !first_call && (s < 2 || s == 4);
      ts.written = !skipped;
      ts.written_bytes = skipped ? 0 : 4096;
      ts.written_hash = skipped ? 0 : ts.host.hash;
      ts.reuse_pre = ts.noreuse_pre = ts.host.hash;
      ts.reuse_post = ts.noreuse_post = ts.host.hash + 1;
      if (s < 2) ts.reuse_post = ts.noreuse_post = ts.host.hash;  // weights unchanged
      if (k == 2 && s == 1) {  // o_gemv_ffn writes its packed norm buffer (a clobber)
        ts.noreuse_post = ts.host.hash + 7;
        if (!first_call) ts.reuse_pre = ts.host.hash + 7;
      }
      c.slots.push_back(ts);
    }
    c.h2d_reuse = first_call ? 6 * 4096 : 3 * 4096;
    c.h2d_noreuse = 6 * 4096;
    c.writes_reuse = first_call ? 6 : 3;
    c.writes_noreuse = 6;
    OutputMetrics om;
    om.slot = 5;
    om.elements = 2048;
    c.outputs_cmp = {om};
    out << trace_call_line(t, c) << '\n';
  }
  t.reuse.calls = t.noreuse.calls = calls;
  out << trace_figures_line(t, TraceEngine::reuse) << '\n';
  out << trace_figures_line(t, TraceEngine::no_reuse) << '\n';
  out << trace_end_line(t) << '\n';
}

// Writes a trace of `calls` calls, each on a bo_key of its own whose static slot the kernel
// clobbers: one distinct static-clobber finding per call (the grouping, sorting and rendering
// of many findings; the audit's 20k-distinct-findings trace at any size).
void write_distinct_trace(const std::string& path, long calls) {
  Trace t;
  t.header.producer = "bench_trace";
  t.header.model_name = "bench";
  t.header.caps.run = t.header.caps.no_reuse = true;
  t.header.kernels = {KernelInfo{"k", {{"w", DType::f32}, {"y", DType::f32}}, ""}};
  std::ofstream out(path, std::ios::binary);
  out << trace_header_line(t) << '\n';
  for (long n = 1; n <= calls; ++n) {
    TraceCall c;
    c.number = static_cast<int>(n);
    c.kernel = "k";
    c.bo_key = "key" + std::to_string(n);
    c.key_first_call = c.number;
    c.statics = {0};
    c.outputs = {1};
    c.phase = "decode";
    c.token = n;
    c.path = "run.py:1";
    for (int s = 0; s < 2; ++s) {
      TraceSlot ts;
      ts.slot = s;
      ts.name = s ? "y" : "w";
      ts.role = s ? SlotRole::input : SlotRole::static_input;
      ts.output = s == 1;
      ts.host.shape = {4};
      ts.host.bytes = ts.bo_bytes = 16;
      ts.host.source = s ? ArraySource::zeros : ArraySource::tensor;
      ts.host.name = s ? "zeros" : "w";
      ts.place.name = c.bo_key;
      ts.place.index = s;
      ts.place.first_call = c.number;
      ts.written = true;
      ts.written_bytes = 16;
      ts.reuse_pre = ts.noreuse_pre = ts.reuse_post = 1;
      ts.noreuse_post = s == 0 ? 2 : 1;  // the kernel writes its static weights
      c.slots.push_back(ts);
    }
    OutputMetrics om;
    om.slot = 1;
    om.elements = 4;
    c.outputs_cmp = {om};
    out << trace_call_line(t, c) << '\n';
  }
  t.reuse.calls = t.noreuse.calls = calls;
  out << trace_figures_line(t, TraceEngine::reuse) << '\n';
  out << trace_figures_line(t, TraceEngine::no_reuse) << '\n';
  out << trace_end_line(t) << '\n';
}

// Writes a trace of `calls` calls of a kernel without slots (the most calls a trace may hold
// costs the reader and the skeleton per call, not per slot).
void write_slotless_trace(const std::string& path, long calls) {
  Trace t;
  t.header.producer = "bench_trace";
  t.header.model_name = "bench";
  t.header.caps.run = t.header.caps.no_reuse = true;
  t.header.kernels = {KernelInfo{"k0", {}, ""}};
  std::ofstream out(path, std::ios::binary);
  out << trace_header_line(t) << '\n';
  for (long n = 1; n <= calls; ++n) {
    TraceCall c;
    c.number = static_cast<int>(n);
    c.kernel = "k0";
    c.bo_key = "k";
    c.key_first_call = 1;
    c.phase = "decode";
    c.token = (n - 1) / kKernels;
    c.layer = static_cast<int>((n - 1) % kKernels);
    c.path = "decode.py:100";
    out << trace_call_line(t, c) << '\n';
  }
  t.reuse.calls = t.noreuse.calls = calls;
  out << trace_figures_line(t, TraceEngine::reuse) << '\n';
  out << trace_figures_line(t, TraceEngine::no_reuse) << '\n';
  out << trace_end_line(t) << '\n';
}

struct Run {
  double seconds = 0;
  long max_rss_kib = 0;
  int code = -1;
};

// Runs `bin args... FILE` with stdout and stderr to /dev/null; wall time and peak RSS.
Run run_child(const std::string& bin, const std::string& cmd, const std::string& file) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    FILE* null = std::fopen("/dev/null", "w");
    if (null) {
      dup2(fileno(null), 1);
      dup2(fileno(null), 2);
    }
    execl(bin.c_str(), bin.c_str(), cmd.c_str(), file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  struct rusage ru {};
  wait4(pid, &st, 0, &ru);
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.max_rss_kib = ru.ru_maxrss;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

template <class T>
std::string stats(std::vector<T> v, const char* f) {
  std::sort(v.begin(), v.end());
  char b[160];
  std::string fmt = std::string("min=") + f + " median=" + f + " max=" + f;
  std::snprintf(b, sizeof b, fmt.c_str(), v.front(), v[v.size() / 2], v.back());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  std::vector<long> sizes = {100000, 1000000};
  std::vector<long> distinct = {15000, 30000, 60000};
  std::string bin = (fs::path(argv[0]).parent_path() / "bo-doctor").string();
  std::string keep;
  bool at_limits = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--sizes" || a == "--distinct") && i + 1 < argc) {
      auto& v = a == "--sizes" ? sizes : distinct;
      v.clear();
      std::string s = argv[++i];
      for (size_t p = 0; p < s.size();) {
        size_t q = s.find(',', p);
        long n = std::stol(s.substr(p, q == std::string::npos ? q : q - p));
        if (n > 0) v.push_back(n);
        p = q == std::string::npos ? s.size() : q + 1;
      }
    } else if (a == "--bin" && i + 1 < argc) {
      bin = argv[++i];
    } else if (a == "--at-limits") {
      at_limits = true;
    } else if (a == "--keep" && i + 1 < argc) {
      keep = argv[++i];
    } else {
      runs = std::max(1, std::atoi(a.c_str()));
    }
  }
  fs::path dir = keep.empty()
                     ? fs::temp_directory_path() / ("bod_bench_trace_" + std::to_string(getpid()))
                     : fs::path(keep);
  fs::create_directories(dir);
  struct Input {
    std::string label, file;
  };
  std::vector<Input> files;
  for (int kind = 0; kind < 2; ++kind)
    for (long n : kind ? distinct : sizes) {
      std::string what = kind ? "distinct" : "calls";
      std::string f = (dir / (what + "_" + std::to_string(n) + ".trace.jsonl")).string();
      auto t0 = std::chrono::steady_clock::now();
      if (kind)
        write_distinct_trace(f, n);
      else
        write_big_trace(f, n);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string label = std::to_string(n) + (kind ? " distinct findings" : " calls");
      std::printf("trace %s: %.1f MiB, written in %.2f s\n", label.c_str(),
                  static_cast<double>(fs::file_size(f)) / (1 << 20), s);
      files.push_back({label, f});
    }
  if (at_limits) {
    const TraceLimits lim;
    long slot_calls = static_cast<long>(lim.max_trace_slots / kSlots);
    long slotless = static_cast<long>(lim.max_calls);
    for (int kind = 0; kind < 2; ++kind) {
      long n = kind ? slotless : slot_calls;
      std::string f = (dir / (kind ? "slotless_at_max_calls.trace.jsonl"
                                   : "slots_at_max_trace_slots.trace.jsonl"))
                          .string();
      auto t0 = std::chrono::steady_clock::now();
      if (kind)
        write_slotless_trace(f, n);
      else
        write_big_trace(f, n);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string label = std::to_string(n) + (kind ? " calls without slots (max_calls)"
                                                    : " calls of 6 slots (max_trace_slots)");
      std::printf("trace %s: %.1f MiB, written in %.2f s\n", label.c_str(),
                  static_cast<double>(fs::file_size(f)) / (1 << 20), s);
      files.push_back({label, f});
    }
  }
  std::fflush(stdout);
  const char* cmds[] = {"analyze", "skeleton"};
  // [size][cmd] -> runs
  std::vector<std::vector<std::vector<Run>>> got(
      files.size(), std::vector<std::vector<Run>>(2, std::vector<Run>()));
  for (int r = 0; r < runs; ++r)
    for (size_t i = 0; i < files.size(); ++i)
      for (int c = 0; c < 2; ++c)
        got[i][static_cast<size_t>(c)].push_back(run_child(bin, cmds[c], files[i].file));
  for (size_t i = 0; i < files.size(); ++i)
    for (int c = 0; c < 2; ++c) {
      std::vector<double> secs, rss;
      int code = 0;
      for (auto& run : got[i][static_cast<size_t>(c)]) {
        secs.push_back(run.seconds);
        rss.push_back(static_cast<double>(run.max_rss_kib) / 1024);
        code = run.code;
      }
      std::printf("%-8s %s (exit %d): wall s %s; peak RSS MiB %s\n", cmds[c],
                  files[i].label.c_str(), code, stats(secs, "%.2f").c_str(),
                  stats(rss, "%.0f").c_str());
    }
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
