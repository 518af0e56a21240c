// A C++ host program that manages its BOs by hand through XRT, for the preload library's tests
// (tests/xrt_preload/xrt_preload_test.cpp) and benchmark: it knows nothing of bo-doctor. It
// writes a noop xclbin with kernel "scale" (opcode, instructions, count, in, w, out), loads it,
// writes the weights once (bo.write + sync), then per iteration fills the input through map(),
// syncs it, runs the kernel, waits, syncs the output back and reads it with bo.read. Each
// --bug seeds one mistake at iteration 2 (run 3; --seed-at N: iteration N, run N + 1):
//   unsynced-write     input elements 4..7 changed through map() after the sync (bytes 16..32)
//   unsynced-write-mid the same at elements n/2 + 4 .. n/2 + 7 (in a middle page of a large
//                      input, which the preload library write-tracks)
//   short-sync         input synced one element short: sync(TO, 252, 0) of 256 bytes
//   unsynced-read      output synced back 128 of 256 bytes, then read whole (bytes 128..256)
//   write-in-flight    the weights rewritten (bo.write + sync) before the run was waited for
//   run-not-completed  the output synced back and read without waiting for the run
//   unwritten-output   (implies --emulate) the kernel does not write its output at run 3: the
//                      host reads back run 2's bytes although the input changed
// XRT's noop device computes nothing: the output stays zero on every run. With --emulate the
// program plays a device that computes: the output is a user-pointer BO whose memory the program
// never maps through XRT, and after each wait it stores what "scale" computes (in * w) there
// directly, as a device's write lands in a host_only BO (the recorder, like the program's XRT
// calls, sees it only through the sync from the device and the read that follow).
// --end _exit ends the program with _exit(0) after its last read, --end exec with execv of
// /bin/true (the events after the last run start must still reach the log).
// Usage: bod_xrt_host XCLBIN_PATH [--bug NAME] [--seed-at N] [--emulate] [--iters N] [--elems N]
//                     [--end return|_exit|exec]
#include <unistd.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/xrt/xclbin_writer.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bod_xrt_host XCLBIN_PATH [--bug NAME] [--iters N] [--elems N]\n");
    return 2;
  }
  std::string path = argv[1], bug = "none", end = "return";
  int iters = 4, seed_at = 2;
  size_t n = 64;
  bool emulate = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--emulate") {
      emulate = true;
      continue;
    }
    if (i + 1 >= argc) break;
    if (a == "--bug") bug = argv[i + 1];
    if (a == "--iters") iters = std::stoi(argv[i + 1]);
    if (a == "--seed-at") seed_at = std::stoi(argv[i + 1]);
    if (a == "--elems") n = std::stoul(argv[i + 1]);
    if (a == "--end") end = argv[i + 1];
    ++i;
  }
  if (bug == "unwritten-output") emulate = true;
  if (!bod::testutil::write_noop_xclbin(path, "scale", 3)) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 2;
  }
  try {
    xrt::device dev(0);
    auto uuid = dev.load_xclbin(path);
    xrt::kernel k(dev, uuid, "scale");
    const size_t bytes = n * sizeof(float);
    xrt::bo instr(dev, 64, xrt::bo::flags::cacheable, k.group_id(1));
    xrt::bo in(dev, bytes, xrt::bo::flags::host_only, k.group_id(3));
    xrt::bo w(dev, bytes, xrt::bo::flags::host_only, k.group_id(4));
    // The emulated device's memory: page-aligned, as XRT wants a user pointer.
    const size_t page = 4096, obytes = (bytes + page - 1) / page * page;
    std::unique_ptr<float, decltype(&std::free)> dev_out(
        emulate ? static_cast<float*>(std::aligned_alloc(page, obytes)) : nullptr, &std::free);
    if (dev_out) std::memset(dev_out.get(), 0, obytes);
    xrt::bo out = dev_out ? xrt::bo(dev, dev_out.get(), bytes, k.group_id(5))
                          : xrt::bo(dev, bytes, xrt::bo::flags::host_only, k.group_id(5));
    auto* ip = instr.map<uint32_t*>();
    for (int i = 0; i < 16; ++i) ip[i] = 0x1000u + static_cast<uint32_t>(i);
    instr.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    std::vector<float> wv(n, 0.5f), result(n);
    w.write(wv.data());
    w.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    auto* x = in.map<float*>();
    double sum = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iters; ++it) {
      const bool seeded = it == seed_at;
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(it * 1000 + i);
      if (seeded && bug == "short-sync")
        in.sync(XCL_BO_SYNC_BO_TO_DEVICE, bytes - sizeof(float), 0);
      else
        in.sync(XCL_BO_SYNC_BO_TO_DEVICE);
      if (seeded && bug == "unsynced-write")
        for (size_t i = 4; i < 8; ++i) x[i] = -1.0f;
      if (seeded && bug == "unsynced-write-mid")
        for (size_t i = n / 2 + 4; i < n / 2 + 8; ++i) x[i] = -1.0f;
      xrt::run run = k(3, instr, 16u, in, w, out);
      if (seeded && bug == "write-in-flight") {
        w.write(wv.data());
        w.sync(XCL_BO_SYNC_BO_TO_DEVICE);
      }
      if (!(seeded && bug == "run-not-completed")) {
        auto state = run.wait();
        if (state != ERT_CMD_STATE_COMPLETED) {
          std::fprintf(stderr, "run %d: state %d\n", it, static_cast<int>(state));
          return 3;
        }
      }
      if (dev_out && !(seeded && bug == "unwritten-output"))
        for (size_t i = 0; i < n; ++i) dev_out.get()[i] = x[i] * wv[i];  // the kernel's write
      if (seeded && bug == "unsynced-read")
        out.sync(XCL_BO_SYNC_BO_FROM_DEVICE, bytes / 2, 0);
      else
        out.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
      out.read(result.data());
      for (float v : result) sum += v;
      if (seeded && bug == "run-not-completed") run.wait();
    }
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("ok %d runs, sum %g\n", iters, sum);
    std::fprintf(stderr, "loop_ms %.6f\n", ms);  // for tool/bench/bench_xrt_preload.py
    std::fflush(stdout);
    if (end == "_exit") _exit(0);
    if (end == "exec") {
      char true_path[] = "/bin/true";
      char* args[] = {true_path, nullptr};
      execv(true_path, args);
      return 4;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xrt error: %s\n", e.what());
    return 3;
  }
  return 0;
}
