#!/usr/bin/python3
"""The cost of `bo-doctor record --xrt`'s preload library per kernel run, on the C++ host program
of the tests (tests/xrt_preload/host_prog.cpp) on XRT's noop device: per iteration it changes
its whole input through map(), syncs it, runs the kernel, waits, syncs the output back and reads
it. For each input size, the loop's time per run without and with the preload library
(interleaved, min / median / max over the repetitions), and, for comparison, the time XXH3-64
takes to hash the bytes the program changed per run (python3-xxhash, best of the repetitions).

    /usr/bin/python3 tool/bench/bench_xrt_preload.py [BUILD_DIR] [--reps 7] [--iters 200]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def loop_ms(build, elems, iters, preload, xclbin):
    env = dict(os.environ, XILINX_XRT=os.path.join(build, "xrt-noop"), XCL_EMULATION_MODE="noop")
    with tempfile.TemporaryDirectory(prefix="bod_bench_xrt_") as logs:
        if preload:
            env["LD_PRELOAD"] = os.path.join(build, "libbod_xrt_preload.so")
            env["BOD_XRT_LOG"] = logs
        p = subprocess.run([os.path.join(build, "tests", "bod_xrt_host"), xclbin, "--iters",
                            str(iters), "--elems", str(elems)],
                           env=env, capture_output=True, text=True, check=True)
    for line in p.stderr.splitlines():
        if line.startswith("loop_ms "):
            return float(line.split()[1]) / iters
    raise RuntimeError("no loop_ms in " + p.stderr)


def hash_ms(nbytes, reps):
    import xxhash
    data = os.urandom(nbytes)
    n = max(10, 2_000_000 // max(nbytes, 1))
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(n):
            xxhash.xxh3_64_intdigest(data)
        best = min(best, (time.perf_counter() - t) / n * 1e3)
    return best


def fmt(v):
    return "%.4f / %.4f / %.4f" % (min(v), statistics.median(v), max(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    with tempfile.TemporaryDirectory() as d:
        xclbin = os.path.join(d, "k.xclbin")
        print("ms per run (min / median / max over %d repetitions of %d runs, interleaved)"
              % (a.reps, a.iters))
        print("%-10s %-10s %-28s %-28s %-10s %-12s" % ("elements", "changed", "plain",
                                                      "preload", "overhead", "XXH3(changed)"))
        for elems in (64, 16384, 262144):
            plain, pre = [], []
            for _ in range(a.reps):
                plain.append(loop_ms(build, elems, a.iters, False, xclbin))
                pre.append(loop_ms(build, elems, a.iters, True, xclbin))
            over = statistics.median(pre) - statistics.median(plain)
            print("%-10d %-10s %-28s %-28s %-10.4f %-12.4f" % (
                elems, "%d B" % (elems * 4), fmt(plain), fmt(pre), over,
                hash_ms(elems * 4, a.reps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
