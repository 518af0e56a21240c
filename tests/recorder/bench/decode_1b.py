#!/usr/bin/python3
"""A stand-in engine at Llama-3.2-1B decode size, for measuring what `bo-doctor record` adds
(tests/recorder/bench/bench_record.py runs it; docs/benchmarks.md).

    /usr/bin/python3 tests/recorder/bench/decode_1b.py [--size 1b|small] [--tokens N]
        [--cache auto|real|standin] [--report FILE]

The calls and arguments are those of mlir-air's llama32_1b decode (the real argument layouts
and byte sizes, bf16 as 2-byte integers), on one `decode_cache`:
- preload: per layer `rms_gemv_rope` (13 args, static {1,3,5,7}) and `o_gemv_ffn` (15 args,
  static {0,6,7,12}), then `lm_head_gemv` (17 args: x, then 8 partitions of weight + output,
  weights static); the host copies of the layer weights are then replaced by 0-element
  placeholders (the program frees them: the BOs hold them);
- per decode token: 16 x (`rms_gemv_rope`, `o_gemv_ffn`) with fresh activations, the position's
  RoPE LUT rows, a fresh 32 MiB `np.zeros` scratch in o_gemv_ffn's arg 9 (as upstream passes
  it), the host KV cache appended per layer; then `lm_head_gemv` with the 8 real 64 MiB weight
  partitions (the program keeps them), 512 MiB in all.
Kernels do nothing (tests/recorder/bench/pyxrt.py: host-only BOs, syncs counted, no device),
so only host-side cost is measured. The KernelCache is mlir-air's real cache.py when one is
found (../shared/mlir-air or $BOD_MLIR_AIR_DIR; --cache real requires it), else the project's
stand-in (tests/recorder/standin/shared/infra/cache.py). `--size small` is the same program
at toy size (the test suite smoke-runs it).

The report (--report FILE, JSON): per token its host ms (wall) and cpu_ms (the process's CPU
time), bo_doctor.recorder_stats() after it
(zeros when not recorded), and the process's peak RSS (VmHWM) and RSS after decode (VmRSS).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

SIZES = {  # emb, hidden, kv_dim, layers, lm_head rows per partition, max positions
    "1b": dict(E=2048, H=8192, KV=512, L=16, LM=16384, POS=2048),
    "small": dict(E=64, H=256, KV=16, L=2, LM=512, POS=64),
}
LM_PARTS = 8
BF16 = np.uint16  # bf16 bytes (the engine views bf16 as 16-bit integers)


def import_cache(kind):
    """(KernelCache class, XRTCompileArtifact class or None, which) with the bench pyxrt."""
    sys.dont_write_bytecode = True
    sys.path.insert(0, HERE)  # the bench's pyxrt
    import pyxrt  # noqa: F401
    air = None
    if kind != "standin":
        sys.path.insert(0, os.path.join(ROOT, "tests", "recorder", "mlir_air"))
        import run_real_cache
        air = run_real_cache.mlir_air_dir()
        if air is None and kind == "real":
            sys.exit("decode_1b.py: --cache real: no mlir-air cache.py (set BOD_MLIR_AIR_DIR)")
    if air is None:
        sys.path.insert(0, os.path.join(ROOT, "tests", "recorder", "standin"))
        from shared.infra.cache import KernelCache
        return KernelCache, None, "standin"
    sys.path[:0] = [air, os.path.join(ROOT, "tests", "recorder", "mlir_air", "stubs")]
    if sys.version_info < (3, 12):
        import importlib.machinery
        at = sys.meta_path.index(importlib.machinery.PathFinder)
        sys.meta_path.insert(at, run_real_cache._Py311Finder(
            os.path.join(air, "shared", "infra", "cache.py")))
    from shared.infra.cache import KernelCache
    from air.backend.xrt import XRTCompileArtifact
    return KernelCache, XRTCompileArtifact, "real"


def make_cache(KernelCache, Artifact, tmp):
    cache = KernelCache(cache_dir=tmp)
    for name, n in (("rms_gemv_rope", 13), ("o_gemv_ffn", 15), ("lm_head_gemv", 17)):
        if Artifact is None:
            cache.register(name, None, n)
        else:
            binary = os.path.join(tmp, name + ".elf")
            with open(binary, "w") as f:
                f.write("bench stand-in binary of %s\n" % name)
            cache.artifacts[name] = Artifact(binary, name, None)
    return cache


def weight(shape, seed):
    """A weight of the given shape whose bytes are not all zero (real weights never are)."""
    return np.full(shape, 0x3C00 + seed % 997, BF16)


def rss():
    """(VmHWM, VmRSS) of this process in KiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0])
    return out.get("VmHWM", 0), out.get("VmRSS", 0)


def stats():
    try:
        import bo_doctor
        return bo_doctor.recorder_stats()
    except ImportError:
        return {}


class Layer:
    pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="1b")
    ap.add_argument("--tokens", type=int, default=5)
    ap.add_argument("--cache", choices=("auto", "real", "standin"), default="auto")
    ap.add_argument("--report", default="")
    ap.add_argument("--keep-views", action="store_true",
                    help="keep every output view the engine returns, as a program collecting "
                         "each layer's outputs does (the recorder then tracks them all)")
    o = ap.parse_args(argv)
    s = SIZES[o.size]
    E, H, KV, L, LM = s["E"], s["H"], s["KV"], s["L"], s["LM"]
    KernelCache, Artifact, which = import_cache(o.cache)
    decode_cache = make_cache(KernelCache, Artifact, tempfile.mkdtemp(prefix="bod_bench_"))
    rope_lut = weight((s["POS"], 64), 7)  # one row of 64 per position

    def rms_gemv_rope(x, lw, pos):
        return decode_cache.load_and_run(
            "rms_gemv_rope", {}, x, lw.attn_norm, np.zeros(E, BF16), lw.wq, np.zeros(E, BF16),
            lw.wk, np.zeros(KV, BF16), lw.wv, np.zeros(KV, BF16),
            np.tile(rope_lut[pos], E // 64), np.tile(rope_lut[pos], KV // 64),
            np.zeros(E, BF16), np.zeros(KV, BF16),
            output_indices=[8, 11, 12], static_input_indices={1, 3, 5, 7},
            intermediate_indices={2, 4, 6, 8, 11, 12}, bo_key="rms_gemv_rope_L%d" % lw.idx)

    def o_gemv_ffn(attn_out, x, lw):
        z_emb, z_hidden = np.zeros(E, BF16), np.zeros(H, BF16)
        return decode_cache.load_and_run(
            "o_gemv_ffn", {}, lw.wo, attn_out, z_emb, x, z_emb, z_emb, lw.packed,
            lw.wgateup, z_hidden, np.zeros((H, E), BF16), z_hidden, np.zeros(H, BF16),
            lw.wdown, z_emb, np.zeros(E, BF16),
            output_indices=[14], static_input_indices={0, 6, 7, 12},
            intermediate_indices={2, 4, 5, 8, 9, 10, 11, 13, 14},
            bo_key="o_gemv_ffn_L%d" % lw.idx)

    def lm_head(x, parts):
        inputs = [x]
        for p in range(LM_PARTS):
            inputs += [parts[p], np.zeros(LM, BF16)]
        return decode_cache.load_and_run(
            "lm_head_gemv", {}, *inputs, output_indices=[2 + 2 * p for p in range(LM_PARTS)],
            static_input_indices={1 + 2 * p for p in range(LM_PARTS)},
            intermediate_indices={2 + 2 * p for p in range(LM_PARTS)})

    layers = []
    for i in range(L):
        lw = Layer()
        lw.idx = i
        lw.attn_norm = weight(E, 10 * i + 1)
        lw.wq, lw.wk, lw.wv = (weight((E, E), 10 * i + 2), weight((KV, E), 10 * i + 3),
                               weight((KV, E), 10 * i + 4))
        lw.wo, lw.wgateup, lw.wdown = (weight((E, E), 10 * i + 5),
                                       weight((2 * H, E), 10 * i + 6),
                                       weight((E, H), 10 * i + 7))
        lw.packed = weight((2, E), 10 * i + 8)
        layers.append(lw)
    parts = [weight((LM, E), 100 + p) for p in range(LM_PARTS)]
    x0 = weight(E, 99)
    # Preload: every key's first call writes its weights.
    for layer_idx in range(L):
        lw = layers[layer_idx]
        rms_gemv_rope(x0, lw, 0)
        o_gemv_ffn(np.zeros(E, BF16), x0, lw)
    lm_head(x0, parts)
    empty = np.empty(0, BF16)
    for lw in layers:  # the host weights are freed: the BOs hold them
        lw.wq = lw.wk = lw.wv = lw.wo = lw.wgateup = lw.wdown = empty
    k_cache = np.zeros((L, s["POS"], KV), BF16)
    v_cache = np.zeros((L, s["POS"], KV), BF16)

    tokens = []
    kept = []  # --keep-views: every output view returned
    x = x0
    for t in range(o.tokens):
        pos = t + 1
        t0, c0 = time.perf_counter(), time.process_time()
        for layer_idx in range(L):
            lw = layers[layer_idx]
            res = rms_gemv_rope(x, lw, pos)
            if o.keep_views:
                kept.extend(res[i] for i in (8, 11, 12))
            k_cache[layer_idx, pos] = res[12]
            v_cache[layer_idx, pos] = res[8]
            attn_out = np.array(res[11], copy=True)  # CPU attention stands here (not computed)
            out = o_gemv_ffn(attn_out, x, lw)
            if o.keep_views:
                kept.append(out[14])
            x = np.array(out[14], copy=True)
        logits = lm_head(x, parts)
        x = weight(E, int(logits[2][0]) + t)  # the next token's embedding
        ms = (time.perf_counter() - t0) * 1000
        cpu_ms = (time.process_time() - c0) * 1000
        tokens.append({"ms": ms, "cpu_ms": cpu_ms, "stats": stats()})
    peak, after = rss()
    report = {"size": o.size, "cache": which, "tokens": tokens, "peak_rss_kib": peak,
              "rss_after_kib": after}
    if o.report:
        with open(o.report, "w") as f:
            json.dump(report, f)
    print("decode_1b: %s cache, %d tokens, %.1f ms/token after the first two, peak RSS %d MiB" % (
        which, len(tokens),
        float(np.mean([t["ms"] for t in tokens[2:]])) if len(tokens) > 2 else float("nan"),
        peak // 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
