#!/usr/bin/python3
"""What the Python recorder spends hashing a fresh np.zeros scratch array (docs/benchmarks.md):
`HostHashes.hash` of a fresh 32 MiB `np.zeros` (what decode_1b.py passes to each o_gemv_ffn
call), the array dropped after each hash as the engine drops it.

    /usr/bin/python3 tests/recorder/bench/bench_fresh_zeros.py build/libbod_hash.so \\
        [--before MAIN/build/libbod_hash.so] [--runs 5] [--arrays 200] [--mib 32]

Each run is a child process hashing --arrays fresh arrays (the first 10 not counted); with
--before, runs of main's recorder (MAIN/tool/recorder/python, its library) alternate with this
checkout's. Prints per side the µs per hash (min / median / max over every hash of every run)
and the median of each run's median.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def child(arrays, mib):
    import numpy as np
    from bo_doctor._written import HostHashes
    h = HostHashes()
    if not h.active:
        sys.exit("write tracking unavailable: " + h.why)
    out = []
    for i in range(arrays):
        z = np.zeros((mib << 20) // 2, np.uint16)
        t = time.perf_counter_ns()
        h.hash(z)
        t = time.perf_counter_ns() - t
        del z
        if i >= 10:
            out.append(t / 1000.0)
    print(" ".join("%.1f" % x for x in out))


def run_side(lib, root, arrays, mib):
    env = dict(os.environ, BOD_RECORD_HASHLIB=os.path.abspath(lib),
               PYTHONPATH=os.path.join(root, "tool", "recorder", "python"),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("BOD_RECORD_EXACT", None)
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(arrays),
                        str(mib)], env=env, stdout=subprocess.PIPE, text=True, check=True)
    return [float(x) for x in r.stdout.split()]


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("lib")
    p.add_argument("--before", help="main's libbod_hash.so (MAIN/build/libbod_hash.so)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--arrays", type=int, default=200)
    p.add_argument("--mib", type=int, default=32)
    a = p.parse_args()
    sides = [("after", a.lib, ROOT)]
    if a.before:
        main_root = os.path.dirname(os.path.dirname(os.path.abspath(a.before)))
        sides.insert(0, ("before", a.before, main_root))
    got = {name: [] for name, _, _ in sides}
    for _ in range(a.runs):
        for name, lib, root in sides:
            got[name].append(run_side(lib, root, a.arrays, a.mib))
    print("fresh %d MiB np.zeros, HostHashes.hash, µs per hash (%d runs x %d arrays)" %
          (a.mib, a.runs, a.arrays - 10))
    for name, _, _ in sides:
        every = [x for run in got[name] for x in run]
        print("%-7s min %8.1f  median %8.1f  max %8.1f   run medians %s" % (
            name, min(every), statistics.median(every), max(every),
            " ".join("%.1f" % statistics.median(run) for run in got[name])))


if __name__ == "__main__":
    main()
