#!/usr/bin/python3
"""The cost of `bo-doctor record --xrt --shadow` per kernel run, on the tests' hand-managed q4nx
decoder (tests/recorder/standin/run_q4nx.py: 12 runs of one kernel per decode, BOs of 8 B to
2 KiB, kernels computed on the CPU by the stand-in pyxrt).

Two measurements, the modes interleaved, one process per sample:
- in the process: the decode loop's time per run (min of --decodes decodes in one process) with
  no recorder, with bo_doctor.xrt_wrap, and with xrt_wrap shadowing every run;
- the whole command: wall time of the program alone, under `record --xrt` and under
  `record --xrt --shadow` (Python start-up, the replay into a trace and its check included),
  divided by its 12 runs.
Prints min / median / max over --reps samples of each.

    /usr/bin/python3 tool/bench/bench_xrt_shadow.py [BUILD_DIR] [--reps 15] [--decodes 5]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUNS = 12  # kernel runs per decode of run_q4nx.py

CHILD = r'''
import os, sys, tempfile, time
sys.path[:0] = [sys.argv[3], sys.argv[4]]
if sys.argv[1] != "plain":
    if sys.argv[1] == "shadow":
        os.environ["BOD_XRT_SHADOW"] = "1"
    from bo_doctor import xrt_wrap
    xrt_wrap.install(tempfile.mkdtemp(prefix="bod_bench_shadow_"))
import run_q4nx
best = None
for _ in range(int(sys.argv[2])):
    d = run_q4nx.Decoder("none")
    s = time.perf_counter()
    d.decode()
    ms = (time.perf_counter() - s) * 1e3 / %d
    best = ms if best is None else min(best, ms)
print(best)
''' % RUNS


def stats(v):
    return "%.3f / %.3f / %.3f" % (min(v), statistics.median(v), max(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--decodes", type=int, default=5)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    env = dict(os.environ, BOD_RECORD_HASHLIB=os.path.join(build, "libbod_hash.so"))
    prog = [sys.executable, os.path.join(ROOT, "tests", "recorder", "standin", "run_q4nx.py")]
    inproc = {"plain": [], "xrt": [], "shadow": []}
    whole = {"plain": [], "xrt": [], "shadow": []}
    with tempfile.TemporaryDirectory(prefix="bod_bench_shadow_") as tmp:
        trace = os.path.join(tmp, "q4nx.trace.jsonl")
        rec = [os.path.join(build, "bo-doctor"), "record", "--xrt", "--force", "-o", trace]
        cmds = {"plain": prog, "xrt": rec + ["--"] + prog,
                "shadow": rec + ["--shadow", "--"] + prog}
        for _ in range(a.reps):
            for m in inproc:
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, m, str(a.decodes),
                     os.path.join(ROOT, "tool", "recorder", "python"),
                     os.path.join(ROOT, "tests", "recorder", "standin")],
                    env=env, check=True, capture_output=True, text=True).stdout
                inproc[m].append(float(out))
            for m, c in cmds.items():
                s = time.perf_counter()
                subprocess.run(c, check=True, capture_output=True)
                whole[m].append((time.perf_counter() - s) * 1e3 / RUNS)
    print("ms per kernel run (min / median / max over %d samples, interleaved)" % a.reps)
    print("%-26s %-26s %-26s %s" % ("", "no recorder", "record --xrt", "record --xrt --shadow"))
    print("%-26s %-26s %-26s %s" % ("decode loop, in process", stats(inproc["plain"]),
                                    stats(inproc["xrt"]), stats(inproc["shadow"])))
    print("%-26s %-26s %-26s %s" % ("whole command / 12 runs", stats(whole["plain"]),
                                    stats(whole["xrt"]), stats(whole["shadow"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
