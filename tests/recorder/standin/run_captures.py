#!/usr/bin/python3
"""A three-layer toy model written the way users write their loops, for the recorder's view and
label tests: on the stand-in KernelCache (tests/recorder/standin) or on mlir-air's real one.

    /usr/bin/python3 tests/recorder/standin/run_captures.py --variant NAME [--engine mlir-air]
    /usr/bin/python3 tests/recorder/standin/run_captures.py --list

Kernels (f32, ROWS x E activations): `block` (x, w, res, y): y = tanh(x @ w) + res, under
per-layer keys with shared_nonstatic=True, so every layer's output y (slot 3) is one pooled BO,
handed back as a zero-copy view; `head` (x, w_head, logits): logits = x[-1] @ w_head, under key
"head". Calls: 1 head (the preload, outside any loop, w_head static), 2-4 block for layers 0-2,
5 head (w_head an np.empty(0) placeholder by then).

  variant            bug  loop                         what the recorder must report
  pass-on             -   for i in range(N_LAYERS)     nothing: x is passed on, then rebound
  after-loop          -   for layer_idx, w in ...      nothing; call 5 runs after the loop
                                                       has finished: layer -1 (not 2)
  capture-views      yes  for i in range(N_LAYERS)     outs.append(x) per layer, read after the
                                                       loop: view-overwritten, calls 2 and 3 slot 3
  capture-slices     yes  for i, w in enumerate(W)     outs.append({"y": np.asarray(x)[:2]}):
                                                       view-overwritten, calls 2 and 3 slot 3
  skip-view          yes  for i in range(N_LAYERS)     layer 0's output kept as `skip`, passed to
                                                       layer 2 as its residual: view-overwritten,
                                                       call 2 slot 3, read by call 4
  key-without-layer  yes  for i in range(N_LAYERS)     bo_key "block" for every layer: layers 1, 2
                                                       run layer 0's weights: key-collision call 3
                                                       slot 1 (the layer comes from `i`)

Two requests through the same caches (calls 6-9 repeat 2-5 on another input):
  second-request      -   for i in range(N_LAYERS)     nothing: the weights stay resident
  lora-in-place      yes  W[1] += delta in place       layer 1's static weights changed but are
                          between the requests         not rewritten: stale-static call 7 slot 1
  input-in-intermediate yes res in intermediate_indices the residual (new data each request) is
                                                       never written: intermediate-read call 6
                                                       slot 2 (a warning without --shadow, an
                                                       error with it)
  kv-in-static       yes  a host KV cache (updated in  the cache's new rows never reach the BO:
                          place every call) passed as  stale-static at call 6 slot 2
                          res, in static_input_indices
  head-placeholder    -   w_head not static, an        the 0-byte write keeps the head's own BO:
                          np.empty(0) at calls 5, 9    a note, no error or warning
  accumulate         yes  the head accumulates into    logits in intermediate_indices, zeros
                          its logits (+=)              passed each call: nothing without
                                                       --shadow; with it intermediate-read at
                                                       call 5 slot 2 (the cause)

Prints "variant=NAME", then "reference: match|MISMATCH" (the outputs and captures against a
plain numpy forward pass), then "logits: ...". --engine mlir-air runs on mlir-air's cache.py
(tests/recorder/mlir_air/run_real_cache.py says where it looks) and exits 77 without one.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))

N_LAYERS, ROWS, E, V = 3, 4, 16, 8
VARIANTS = ("pass-on", "after-loop", "capture-views", "capture-slices", "skip-view",
            "key-without-layer", "second-request", "lora-in-place", "input-in-intermediate",
            "kv-in-static", "head-placeholder", "accumulate")
TWO_REQUESTS = ("second-request", "lora-in-place", "input-in-intermediate", "kv-in-static",
                "head-placeholder", "accumulate")
F32 = np.float32


def k_block(a):  # x, w, res, y
    a.get(3, (ROWS, E))[...] = np.tanh(a.get(0, (ROWS, E)) @ a.get(1, (E, E))) + \
        a.get(2, (ROWS, E))


def k_head(a):  # x, w_head, logits
    a.get(2, (V,))[...] = a.get(0, (ROWS, E))[-1] @ a.get(1, (E, V))


def k_head_acc(a):  # x, w_head, logits: accumulates into logits (a GEMM with beta = 1)
    a.get(2, (V,))[...] += a.get(0, (ROWS, E))[-1] @ a.get(1, (E, V))


def standin_cache():
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    from shared.infra.cache import KernelCache
    cache = KernelCache(cache_dir=tempfile.mkdtemp(prefix="bod_captures_"))
    cache.register("block", k_block, 4)
    cache.register("head", k_head, 3)
    cache.register("head_acc", k_head_acc, 3)
    return cache


def mlir_air_cache():
    sys.path.insert(0, os.path.join(HERE, "..", "mlir_air"))
    from run_real_cache import import_kernel_cache, mlir_air_dir
    air = mlir_air_dir()
    if air is None:
        print("no mlir-air cache.py: set BOD_MLIR_AIR_DIR to a checkout's "
              "programming_examples/llms", file=sys.stderr)
        sys.exit(77)
    KernelCache, pyxrt = import_kernel_cache(air)
    from air.backend.xrt import XRTCompileArtifact
    tmp = tempfile.mkdtemp(prefix="bod_captures_air_")
    cache = KernelCache(cache_dir=tmp)
    for name, fn, n in (("block", k_block, 4), ("head", k_head, 3), ("head_acc", k_head_acc, 3)):
        pyxrt.register_kernel(name, fn, n)
        binary = os.path.join(tmp, name + ".elf")
        with open(binary, "w") as f:
            f.write("stand-in binary of %s\n" % name)
        cache.artifacts[name] = XRTCompileArtifact(binary, name, None)
    return cache


def block(cache, x, w, key, res=None, inter=(), static=(1,)):
    """One layer; returns the output as the engine hands it back (a view of the pooled BO)."""
    res = x if res is None else res
    return cache.load_and_run("block", {}, x, w, res, np.zeros((ROWS, E), F32),
                              output_indices=[3], static_input_indices=list(static),
                              intermediate_indices=list(inter),
                              bo_key=key, shared_nonstatic=True)[3].reshape(ROWS, E)


VARIANT = None  # set by main: how the head is called


def head(cache, x, w_head):
    if VARIANT == "accumulate":  # logits in intermediate_indices, zeros passed every call
        return cache.load_and_run("head_acc", {}, x, w_head, np.zeros(V, F32),
                                  output_indices=[2], static_input_indices=[1],
                                  intermediate_indices=[2], bo_key="head")[2]
    static = [] if VARIANT == "head-placeholder" else [1]
    return cache.load_and_run("head", {}, x, w_head, np.zeros(V, F32), output_indices=[2],
                              static_input_indices=static, bo_key="head")[2]


def reference(x, W, w_head, skip_from=None):
    outs, first = [], None
    for l in range(N_LAYERS):
        res = first if skip_from is not None and l == skip_from else x
        x = (np.tanh(x @ W[l]) + res).astype(F32)
        first = x if l == 0 else first
        outs.append(x)
    return outs, x[-1] @ w_head


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", default="pass-on", choices=VARIANTS)
    ap.add_argument("--engine", default="standin", choices=("standin", "mlir-air"))
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(VARIANTS))
        return 0
    variant = args.variant
    global VARIANT
    VARIANT = variant
    print("variant=%s" % variant, flush=True)
    rng = np.random.default_rng(11)
    W = [(rng.standard_normal((E, E)) * 0.3).astype(F32) for _ in range(N_LAYERS)]
    w_head = rng.standard_normal((E, V)).astype(F32)
    x0 = rng.standard_normal((ROWS, E)).astype(F32)
    cache = standin_cache() if args.engine == "standin" else mlir_air_cache()

    ref_outs, ref_logits = reference(x0, W, w_head, skip_from=2 if variant == "skip-view" else None)
    head(cache, np.zeros((ROWS, E), F32), w_head)  # preload: call 1, outside any loop
    w_full, w_head = w_head, np.empty(0, F32)       # freed: resident in its BO
    x = x0
    outs = []
    if variant == "after-loop":
        for layer_idx, w in enumerate(W):
            x = block(cache, x, w, "block_L%d" % layer_idx)
            outs.append(np.array(x))  # a copy: fine
    elif variant == "capture-slices":
        for i, w in enumerate(W):
            x = block(cache, x, w, f"block_L{i}")
            outs.append({"y": np.asarray(x)[:2]})  # a slice of the pooled view
        outs = [o["y"] for o in outs]
        ref_outs = [r[:2] for r in ref_outs]
    elif variant == "skip-view":
        skip = None
        for i in range(N_LAYERS):
            x = block(cache, x, W[i], f"block_L{i}", res=skip if i == 2 else None)
            if i == 0:
                skip = x  # meant as a skip connection: a view the next layer overwrites
            outs.append(np.array(x))
    else:
        for i in range(N_LAYERS):
            x = block(cache, x, W[i], "block" if variant == "key-without-layer"
                      else f"block_L{i}")
            outs.append(x if variant == "capture-views" else np.array(x))
    logits = head(cache, x, w_head)                 # call 5, after the layer loop

    if variant in TWO_REQUESTS:  # a second request through the same caches
        if variant == "lora-in-place":
            W[1] += F32(0.05)  # a LoRA merge, in place: the same array, new bytes
        x1 = (x0 + 1).astype(F32)
        ref_outs, ref_logits = reference(x1, W, np.asarray(w_full), None)
        x, outs = x1, []
        inter = (2,) if variant == "input-in-intermediate" else ()
        kv = np.zeros((ROWS, E), F32) if variant == "kv-in-static" else None
        for i in range(N_LAYERS):
            if kv is not None:  # the host KV cache, appended in place: the same array each call
                kv[...] = x
                x = block(cache, x, W[i], f"block_L{i}", res=kv, static=(1, 2))
            else:
                x = block(cache, x, W[i], f"block_L{i}", inter=inter)
            outs.append(np.array(x))
        logits = head(cache, x, w_head)             # call 9
    ok = all(np.allclose(o, r, atol=1e-5) for o, r in zip(outs, ref_outs)) and \
        np.allclose(logits, ref_logits, atol=1e-4)
    print("reference: %s" % ("match" if ok else "MISMATCH"))
    print("logits: " + " ".join("%.4f" % v for v in logits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
