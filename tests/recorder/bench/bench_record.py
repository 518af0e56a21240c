#!/usr/bin/python3
"""What `bo-doctor record` adds to a decode at Llama-3.2-1B size (docs/benchmarks.md).

    /usr/bin/python3 tests/recorder/bench/bench_record.py BO_DOCTOR [--size 1b|small]
        [--tokens N] [--runs R] [--modes alone,record,shadow] [--extra ARGS]
        [--before BO_DOCTOR]

Runs tests/recorder/bench/decode_1b.py R times in each mode, interleaved (alone, record,
record --shadow, alone, ...), and prints side by side, per mode: host ms per decode token
(the tokens after the first two; min / median / max over the runs of each run's mean), the
recorder's added ms per token (median against the program alone), the same in process CPU time
with the recorder's own time per token and per call (recorder_stats() seconds, by the clock; a
build before 2026-12-07 counted its CPU time, cpu_seconds: the row says which; process CPU time
is steadier than wall time on a loaded machine), MiB hashed and BO syncs per
token (bo_doctor.recorder_stats(), same tokens; and the MiB of them synced and spot-checked),
peak RSS and RSS after decode (and their ratio
to the program alone). `--before` runs the record modes of another bo-doctor build too, in the
same interleaving (rows before-record, before-shadow). Exits 1 when a run fails.
`--size small --tokens 4 --runs 1` is the smoke run of the test suite (ctest -R
recorder_bench_small).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
WHERE = ("host", "bo_before", "bo_after", "shadow")  # recorder_stats() hashed_<where>


def run(mode, bod, o, tmp, i):
    report = os.path.join(tmp, "%s-%d.json" % (mode, i))
    prog = [PY, os.path.join(HERE, "decode_1b.py"), "--size", o.size, "--tokens",
            str(o.tokens), "--report", report]
    if mode == "alone":
        cmd = prog
    else:
        if mode.startswith("before-"):  # the same mode with the --before executable
            bod, mode = o.before, mode[len("before-"):]
        cmd = [bod, "record", "--force", "-o", os.path.join(tmp, "t.jsonl")] + \
            (["--shadow"] if mode == "shadow" else []) + o.extra.split() + ["--"] + prog
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 or not os.path.exists(report):
        sys.stderr.write("bench_record: %s run %d failed (exit %d):\n%s\n" %
                         (mode, i, p.returncode, p.stderr[-3000:]))
        return None
    with open(report) as f:
        r = json.load(f)
    os.unlink(report)
    steady = r["tokens"][2:] or r["tokens"]
    before = r["tokens"][1]["stats"] if len(r["tokens"]) > 2 else {}
    after = steady[-1]["stats"]
    n = len(steady)
    # The recorder's own time: by the clock, or (builds before 2026-12-07) its CPU time
    own = "seconds" if "seconds" in after else "cpu_seconds"

    def per_token(k):
        return (after.get(k, 0) - before.get(k, 0)) / n

    calls = per_token("calls")
    # The median token (most tokens read no static BO again: a key's sampled calls are its
    # 1st-3rd and 2^k-th): its CPU ms, and the recorder's CPU ms in it.
    toks = r["tokens"]
    rec_cpu = [(toks[k]["stats"][own] - toks[k - 1]["stats"][own]) * 1000
               for k in range(max(1, len(toks) - n), len(toks))
               if own in toks[k]["stats"] and own in toks[k - 1]["stats"]]
    return {"ms": statistics.mean(t["ms"] for t in steady),
            "cpu_med_ms": statistics.median(t["cpu_ms"] for t in steady),
            "rec_cpu_med_ms": statistics.median(rec_cpu) if rec_cpu else None,
            "cpu_ms": statistics.mean(t["cpu_ms"] for t in steady),
            # (a recorder that does not count its CPU time: None)
            "rec_cpu_ms": per_token(own) * 1000 if own in after else None,
            "rec_cpu_call_ms": per_token(own) * 1000 / calls if calls and own in after else None,
            "own": "time" if own == "seconds" else "CPU",
            "first_ms": r["tokens"][0]["ms"],
            "mib": per_token("bytes_hashed") / (1 << 20), "syncs": per_token("syncs"),
            "sync_mib": per_token("sync_bytes") / (1 << 20),
            "spot_mib": per_token("bytes_spot_checked") / (1 << 20),
            "shadowed": per_token("shadowed"), "calls": per_token("calls"),
            "where": {k: per_token("hashed_" + k) / (1 << 20) for k in WHERE},
            "peak": r["peak_rss_kib"] / 1024, "after": r["rss_after_kib"] / 1024,
            "cache": r["cache"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bo_doctor")
    ap.add_argument("--size", default="1b")
    ap.add_argument("--tokens", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="alone,record,shadow")
    ap.add_argument("--extra", default="", help="more options for bo-doctor record")
    ap.add_argument("--before", default="", help="another bo-doctor (an earlier build, with "
                    "its own recorder): its record / shadow runs interleaved as before-record, "
                    "before-shadow")
    o = ap.parse_args()
    modes = o.modes.split(",")
    if o.before:
        modes += ["before-" + m for m in modes if m != "alone"]
    res = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="bod_bench_record_") as tmp:
        for i in range(o.runs):
            for m in modes:
                r = run(m, o.bo_doctor, o, tmp, i)
                if r is None:
                    return 1
                res[m].append(r)
    cache = res[modes[0]][0]["cache"]
    print("decode at %s size, %s KernelCache, %d tokens (%d measured), %d interleaved run(s) "
          "per mode" % (o.size, cache, o.tokens, max(1, o.tokens - 2), o.runs))
    print("%-13s %28s %12s %11s %10s %14s %15s %15s" % (
        "mode", "ms/token min/median/max", "added ms", "first ms", "MiB hashed", "syncs/token",
        "peak RSS MiB", "RSS after MiB"))
    base = statistics.median(r["ms"] for r in res["alone"]) if "alone" in res else None
    base_peak = statistics.median(r["peak"] for r in res["alone"]) if "alone" in res else None
    base_after = statistics.median(r["after"] for r in res["alone"]) if "alone" in res else None
    for m in modes:
        ms = sorted(r["ms"] for r in res[m])
        med = statistics.median(ms)
        peak = statistics.median(r["peak"] for r in res[m])
        after = statistics.median(r["after"] for r in res[m])
        added = "%.1f" % (med - base) if base is not None and m != "alone" else "-"
        ratio = (lambda v, b: " (%.2fx)" % (v / b) if b and m != "alone" else "")
        print("%-13s %28s %12s %11.1f %10.1f %14.1f %15s %15s" % (
            m, "%.1f / %.1f / %.1f" % (ms[0], med, ms[-1]), added,
            statistics.median(r["first_ms"] for r in res[m]),
            statistics.median(r["mib"] for r in res[m]),
            statistics.median(r["syncs"] for r in res[m]),
            "%.0f%s" % (peak, ratio(peak, base_peak)),
            "%.0f%s" % (after, ratio(after, base_after))))
        if m != "alone":
            cpu = sorted(r["cpu_ms"] for r in res[m])
            base_cpu = statistics.median(r["cpu_ms"] for r in res["alone"]) \
                if "alone" in res else None
            rec = sorted(r["rec_cpu_call_ms"] for r in res[m] if r["rec_cpu_call_ms"] is not None)
            print("         CPU ms/token %.1f / %.1f / %.1f, added %s; %s" % (
                cpu[0], statistics.median(cpu), cpu[-1],
                "%.1f" % (statistics.median(cpu) - base_cpu) if base_cpu is not None else "-",
                "the recorder's %s per token %.1f ms, per call %.3f / %.3f / %.3f ms (min / "
                "median / max)" % (res[m][0]["own"],
                                   statistics.median(r["rec_cpu_ms"] for r in res[m]), rec[0],
                                   statistics.median(rec), rec[-1]) if rec else
                "the recorder does not count its time"))
            med = sorted(r["cpu_med_ms"] for r in res[m])
            base_med = statistics.median(r["cpu_med_ms"] for r in res["alone"]) \
                if "alone" in res else None
            rec_med = [r["rec_cpu_med_ms"] for r in res[m] if r["rec_cpu_med_ms"] is not None]
            print("         median token: CPU ms %.1f / %.1f / %.1f, added %s%s" % (
                med[0], statistics.median(med), med[-1],
                "%.1f" % (statistics.median(med) - base_med) if base_med is not None else "-",
                "; the recorder's %s %.1f ms, %.3f ms per call" % (
                    res[m][0]["own"], statistics.median(rec_med), statistics.median(rec_med) /
                    statistics.median(r["calls"] for r in res[m]))
                if rec_med and any(r["calls"] for r in res[m]) else ""))
            where = {k: statistics.median(r["where"][k] for r in res[m]) for k in WHERE}
            print("         MiB hashed per token by where: %s, views %.1f; of static BOs' "
                  "spot checks %.2f; MiB synced from the device per token %.1f" % (
                      ", ".join("%s %.1f" % (k.replace("_", " "), v) for k, v in where.items()),
                      statistics.median(r["mib"] for r in res[m]) - sum(where.values()),
                      statistics.median(r["spot_mib"] for r in res[m]),
                      statistics.median(r["sync_mib"] for r in res[m])))
        if m.endswith("shadow") and any(r["calls"] for r in res[m]):
            print("         shadow runs per token: %.1f of %.1f calls" % (
                statistics.median(r["shadowed"] for r in res[m]),
                statistics.median(r["calls"] for r in res[m])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
