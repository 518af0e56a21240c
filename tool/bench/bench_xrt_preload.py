#!/usr/bin/python3
"""The cost of `bo-doctor record --xrt`'s preload library per kernel run, on the C++ host program
of the tests (tests/xrt_preload/host_prog.cpp) on XRT's noop device: per iteration it changes
its whole input through map(), syncs it, runs the kernel, waits, syncs the output back and reads
it. For each input size, the loop's time per run without and with the preload library
(interleaved, min / median / max over the repetitions), and, for comparison, the time XXH3-64
takes to hash the bytes the program changed per run (python3-xxhash, best of the repetitions).
The overhead is given from the medians and from the minima of the loop's wall time, and from the
medians of the whole process's CPU time (user + system) per run, which waiting for the 2 cores
of a loaded machine does not inflate (it includes the start-up, the same with and without the
library but for the library's own, spread over the runs). --before LIB adds another preload library (e.g. an older
build's) to the same interleaving, for a before/after comparison in one run.

    /usr/bin/python3 tool/bench/bench_xrt_preload.py [BUILD_DIR] [--reps 7] [--iters 200]
                                                     [--before LIB]
"""
import argparse
import os
import resource
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
            env["LD_PRELOAD"] = preload
            env["BOD_XRT_LOG"] = logs
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([os.path.join(build, "tests", "bod_xrt_host"), xclbin, "--iters",
                            str(iters), "--elems", str(elems)],
                           env=env, capture_output=True, text=True, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e3 / iters
    for line in p.stderr.splitlines():
        if line.startswith("loop_ms "):
            return float(line.split()[1]) / iters, cpu
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
    ap.add_argument("--before", help="another preload library, measured interleaved too")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    libs = [("preload", os.path.join(build, "libbod_xrt_preload.so"))]
    if a.before:
        libs.insert(0, ("before", os.path.abspath(a.before)))
    with tempfile.TemporaryDirectory() as d:
        xclbin = os.path.join(d, "k.xclbin")
        print("ms per run (min / median / max over %d repetitions of %d runs, interleaved; "
              "load average %.1f)" % (a.reps, a.iters, os.getloadavg()[0]))
        print("%-10s %-10s %-8s %-26s %-22s %-10s %-12s" % (
            "elements", "changed", "library", "ms per run", "overhead median / min",
            "CPU ovh", "XXH3(changed)"))
        for elems in (64, 16384, 262144):
            plain, pre = [], {n: [] for n, _ in libs}
            for _ in range(a.reps):
                plain.append(loop_ms(build, elems, a.iters, None, xclbin))
                for n, lib in libs:
                    pre[n].append(loop_ms(build, elems, a.iters, lib, xclbin))
            h = hash_ms(elems * 4, a.reps)
            wall = [w for w, _ in plain]
            cpu = statistics.median([c for _, c in plain])
            print("%-10d %-10s %-8s %-26s" % (elems, "%d B" % (elems * 4), "none", fmt(wall)))
            for n, _ in libs:
                w = [x for x, _ in pre[n]]
                print("%-10s %-10s %-8s %-26s %-22s %-10.4f %-12.4f" % (
                    "", "", n, fmt(w), "%.4f / %.4f" % (
                        statistics.median(w) - statistics.median(wall), min(w) - min(wall)),
                    statistics.median([c for _, c in pre[n]]) - cpu, h))
    return 0


if __name__ == "__main__":
    sys.exit(main())
