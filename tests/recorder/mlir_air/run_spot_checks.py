#!/usr/bin/python3
"""One static weight of 2 MiB (32 of the trace hash's 64 KiB chunks) on mlir-air's real
KernelCache, called CALLS times under one bo_key, for the recorder's spot checks of static BOs
(docs/recording.md, "A skipped static slot"). Where mlir-air's cache.py is looked for, and the
stand-ins for its imports: run_real_cache.py (exits 77 without one).

    /usr/bin/python3 tests/recorder/mlir_air/run_spot_checks.py [--clobber-at RUN --chunk C]

The kernel `mv` (x, w, y): y = x @ w. With --clobber-at, its RUN-th run also adds 1 to one value
of chunk C of the weight on the device (a kernel that writes into its static BO). Prints each
call's y[:4], so a recorded run can be compared with a plain one.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from run_real_cache import import_kernel_cache, mlir_air_dir  # noqa: E402

ROWS, COLS, CALLS = 512, 1024, 10  # w: 512 x 1024 f32 = 2 MiB
RUNS = {"n": 0}
CLOBBER = {"at": 0, "chunk": 0}


def k_mv(a):  # x, w, y
    RUNS["n"] += 1
    w = a.get(1, (ROWS, COLS))
    a.get(2, (COLS,))[...] = a.get(0, (ROWS,)) @ w
    if RUNS["n"] == CLOBBER["at"]:
        w.reshape(-1)[CLOBBER["chunk"] * (64 << 10) // 4 + 3] += 1.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clobber-at", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=0)
    o = ap.parse_args()
    CLOBBER.update(at=o.clobber_at, chunk=o.chunk)
    air = mlir_air_dir()
    if air is None:
        print("no mlir-air cache.py (see run_real_cache.py)", file=sys.stderr)
        return 77
    KernelCache, pyxrt = import_kernel_cache(air)
    from air.backend.xrt import XRTCompileArtifact
    tmp = tempfile.mkdtemp(prefix="bod_spot_checks_")
    cache = KernelCache(cache_dir=tmp)
    pyxrt.register_kernel("mv", k_mv, 3)
    binary = os.path.join(tmp, "mv.elf")
    with open(binary, "w") as f:
        f.write("stand-in binary of mv\n")
    cache.artifacts["mv"] = XRTCompileArtifact(binary, "mv", None)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    for n in range(CALLS):
        x = np.full(ROWS, 1.0 + n, np.float32)
        y = cache.load_and_run("mv", {}, x, w, np.zeros(COLS, np.float32), output_indices=[2],
                               static_input_indices=[1], bo_key="mv")[2]
        print("call %d: %s" % (n + 1, " ".join("%.3f" % v for v in np.asarray(y)[:4])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
