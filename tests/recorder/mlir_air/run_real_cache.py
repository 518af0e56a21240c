#!/usr/bin/python3
"""A toy two-layer model on mlir-air's real KernelCache (shared/infra/cache.py), for recording.

The folder holding mlir-air's `shared/infra/cache.py` is $BOD_MLIR_AIR_DIR (a checkout's
programming_examples/llms), else ../shared/mlir-air beside the bo-doctor checkout; exits 77
when there is none (2 when $BOD_MLIR_AIR_DIR names a folder without it). load_and_run's imports are stood in for: pyxrt by the project's CPU stand-in
(tests/recorder/standin/pyxrt.py), filelock, ml_dtypes and air.backend.xrt by ./stubs.

Calls, as mlir-air's Llama makes them in miniature (E=16, H=32, f32):
  prefill_cache: per layer `norm_up` (x, gamma, w_up -> h; scratch intermediate) and
    `down_add` (h, w_down, x -> y), shared_nonstatic=True, h passed from one to the other
    through the shared_alias pool "h" (the consumer lists it as intermediate);
  decode_cache: 3 tokens x 2 layers of the same kernels under per-layer bo_keys, weights
    static; from the second token on the weights are np.empty(0) placeholders. `down_add` is
    an xclbin kernel (instruction BO), `norm_up` an ELF one.
Prints "reference: match" when every result equals a plain numpy forward pass, then the final
activations.

Python 3.11: cache.py puts '\\u2500' escapes inside f-string expressions (PEP 701, 3.12), so
on 3.11 it is compiled from its text with those escapes written as the character (same lines;
the file itself is not changed, and no bytecode is written beside it).
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def mlir_air_dir():
    """The folder holding shared/infra/cache.py; None when there is none where no one asked
    for it; exits 2 when $BOD_MLIR_AIR_DIR names a folder without it."""
    d = os.environ.get("BOD_MLIR_AIR_DIR")
    if d and not os.path.isfile(os.path.join(d, "shared", "infra", "cache.py")):
        print("BOD_MLIR_AIR_DIR=%s has no shared/infra/cache.py (point it at an mlir-air "
              "checkout's programming_examples/llms)" % d, file=sys.stderr)
        sys.exit(2)
    d = d or os.path.join(ROOT, "..", "shared", "mlir-air")
    return d if os.path.isfile(os.path.join(d, "shared", "infra", "cache.py")) else None


class _Py311Source(importlib.machinery.SourceFileLoader):
    def source_to_code(self, data, path, *, _optimize=-1):
        text = data.decode("utf-8").replace("'\\u2500'", "'\u2500'")
        return compile(text, path, "exec", dont_inherit=True, optimize=_optimize)

    def set_data(self, *args, **kwargs):
        pass  # never write bytecode into the user's checkout


class _Py311Finder(importlib.abc.MetaPathFinder):
    def __init__(self, path):
        self.path = path

    def find_spec(self, fullname, path, target=None):
        if fullname != "shared.infra.cache":
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.path, loader=_Py311Source(fullname, self.path))


def import_kernel_cache(air):
    sys.dont_write_bytecode = True
    sys.path[:0] = [air, os.path.join(HERE, "stubs")]
    spec = importlib.util.spec_from_file_location(
        "pyxrt", os.path.join(ROOT, "tests", "recorder", "standin", "pyxrt.py"))
    pyxrt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pyxrt)
    sys.modules["pyxrt"] = pyxrt
    if sys.version_info < (3, 12):
        # Before the path finder, after any import hook (bo-doctor record's) put first.
        at = sys.meta_path.index(importlib.machinery.PathFinder)
        sys.meta_path.insert(at, _Py311Finder(os.path.join(air, "shared", "infra", "cache.py")))
    from shared.infra.cache import KernelCache
    return KernelCache, pyxrt


E, H, LAYERS, TOKENS = 16, 32, 2, 3


def k_norm_up(a):  # x, gamma, w_up, h, scratch
    s = a.get(4, (H,))
    s[...] = 0
    x = a.get(0, (E,)) * a.get(1, (E,))
    a.get(3, (H,))[...] = x @ a.get(2, (E, H))


def k_down_add(a):  # h, w_down, x, y
    a.get(3, (E,))[...] = a.get(2, (E,)) + a.get(0, (H,)) @ a.get(1, (H, E))


def main():
    air = mlir_air_dir()
    if air is None:
        print("no mlir-air cache.py: set BOD_MLIR_AIR_DIR to a checkout's "
              "programming_examples/llms", file=sys.stderr)
        return 77
    KernelCache, pyxrt = import_kernel_cache(air)
    from air.backend.xrt import XRTCompileArtifact

    rng = np.random.default_rng(7)
    gamma = [rng.standard_normal(E).astype(np.float32) for _ in range(LAYERS)]
    w_up = [(rng.standard_normal((E, H)) * 0.2).astype(np.float32) for _ in range(LAYERS)]
    w_down = [(rng.standard_normal((H, E)) * 0.2).astype(np.float32) for _ in range(LAYERS)]

    tmp = tempfile.mkdtemp(prefix="bod_mlir_air_")
    pyxrt.register_kernel("norm_up", k_norm_up, 5)
    pyxrt.register_kernel("down_add", k_down_add, 4)

    def caches_with_kernels(name):
        c = KernelCache(cache_dir=os.path.join(tmp, name))
        for k, ext in (("norm_up", ".elf"), ("down_add", ".xclbin")):
            binary = os.path.join(tmp, name, k + ext)
            with open(binary, "w") as f:
                f.write("stand-in binary of %s\n" % k)
            insts = None
            if ext == ".xclbin":
                insts = os.path.join(tmp, name, k + ".insts.bin")
                np.arange(16, dtype=np.uint32).tofile(insts)
            c.artifacts[k] = XRTCompileArtifact(binary, k, insts)
        return c

    prefill_cache = caches_with_kernels("prefill")
    decode_cache = caches_with_kernels("decode")

    def reference(x, l):
        h = (x * gamma[l]) @ w_up[l]
        return x + h @ w_down[l]

    ok = True
    x = rng.standard_normal(E).astype(np.float32)
    for l in range(LAYERS):  # prefill: pooled activations, h through the alias pool
        want = reference(x, l)
        h = prefill_cache.load_and_run(
            "norm_up", {}, x, gamma[l], w_up[l], np.zeros(H, np.float32),
            np.zeros(H, np.float32), output_indices=[3], static_input_indices=[1, 2],
            intermediate_indices=[4], bo_key="norm_up_L%d" % l, shared_nonstatic=True,
            shared_alias={3: "h"})[3]
        y = prefill_cache.load_and_run(
            "down_add", {}, h, w_down[l], x, np.zeros(E, np.float32),
            static_input_indices=[1], intermediate_indices=[0], bo_key="down_add_L%d" % l,
            shared_nonstatic=True, shared_alias={0: "h"})[3]
        ok = ok and np.allclose(y, want, rtol=1e-5, atol=1e-5)
        x = np.array(y, copy=True)
    for t in range(TOKENS):  # decode: per-layer keys, weights resident after token 0
        for layer_idx in range(LAYERS):
            l = layer_idx
            g, wu, wd = (gamma[l], w_up[l], w_down[l]) if t == 0 else (np.empty(0, np.float32),) * 3
            want = reference(x, l)
            h = decode_cache.load_and_run(
                "norm_up", {}, x, g, wu, np.zeros(H, np.float32), np.zeros(H, np.float32),
                output_indices=[3], static_input_indices=[1, 2], intermediate_indices=[4],
                bo_key="dec_norm_up_L%d" % l)[3]
            y = decode_cache.load_and_run(
                "down_add", {}, h, wd, x, np.zeros(E, np.float32),
                static_input_indices=[1], bo_key="dec_down_add_L%d" % l)[3]
            ok = ok and np.allclose(y, want, rtol=1e-5, atol=1e-5)
            x = np.array(y, copy=True)
    print("reference:", "match" if ok else "MISMATCH")
    print("x:", " ".join("%.4f" % v for v in x[:4]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
