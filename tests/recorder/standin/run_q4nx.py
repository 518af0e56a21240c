#!/usr/bin/python3
"""A hand-managed decoder on the stand-in pyxrt, in the manner of mlir-air's *_q4nx programs
(llama32_1b_q4nx_inference.py, e972f29): it never calls KernelCache.load_and_run, it writes,
maps, syncs and reads its BOs itself. For `bo-doctor record --xrt` (docs/recording.md).

    /usr/bin/python3 tests/recorder/standin/run_q4nx.py --bug none

float32 throughout; emb E=16, 2 layers, KV cache of 8 positions per layer, 6 decode tokens from
position 2, a second request at token 3 that re-seeds the KV cache. One kernel, "q4nx_layer",
called once per layer and token (12 runs) as kern(3, instr, n_instr, x, w, kvc, r, p, y):

  w    weights [L, E, E]: bo.write whole + sync once
  kvc  KV cache [L, 8, E]: seeded per layer with a partial write + a partial sync of its first
       2 rows (kvc.write(seed, off); kvc.sync(TO, size, off)), then device-resident: the kernel
       appends row `pos` in place; the seeded rows are re-uploaded only when `_kv_dirty` is set
       (after the host re-seeds them for the second request)
  r    RMS weights [E] + a LUT of 64 words per position: RMS written once; per token only the
       64-word LUT slice is written and synced: r.write(slice, off); r.sync(TO, 256, off)
  p    params int32 [layer, pos]: written + synced per run
  y    output [2E]: read back partially, y.sync(FROM, E*4, 0), then a zero-copy
       np.frombuffer(y.map(), float32, count=E, offset=0)
  x    input [E]: written through np.frombuffer(x.map()) and synced per run
  instr  instruction words, patched per token in words [4:8] and synced by that range

Each run is waited for with h.wait(60000) and its state checked.

Seeded bugs (--bug NAME): run = the run (call) the finding is at, arg = the argument index.
  dirty-flag       run 7  arg 5  the host re-seeds the KV cache for request 2 (stores through
                                 map() into rows 0..2 of both layers) but does not set _kv_dirty:
                                 unsynced-write, bytes 0..128, 512..640
  lut-unsynced     run 5  arg 6  token 2's LUT slice written but not synced: unsynced-write,
                                 bytes 1088..1344
  short-sync       run 1  arg 5  layer 1's KV seed synced one element short (both layers are
                                 seeded before the first run, which binds the cache BO):
                                 unsynced-write, bytes 636..640
  readback-beyond  run 5  arg 8  token 2's read-backs take E+1 floats, E were synced (the first
                                 is after run 5): unsynced-read, bytes 64..68
  bare-herd        run 10 arg 8  token 4's layer-1 run gets an instruction stream without its
                                 launch wrapper (words 0..4 zeroed, synced), so the kernel does
                                 not run and y keeps run 9's bytes although x changed:
                                 unwritten-output, bytes 0..64
The stand-in kernel runs only when the instruction BO's device bytes start with the launch
wrapper word (a bare herd does nothing and raises nothing).
Prints the generated values' checksum last; the clean run matches a plain numpy reference.
"""
import argparse
import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import pyxrt  # noqa: E402  (the stand-in)

E, L, T, P, TOKENS, LUTW = 16, 2, 8, 2, 6, 64
TO = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE
FROM = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE
BUGS = ["none", "dirty-flag", "lut-unsynced", "short-sync", "readback-beyond", "bare-herd"]
LAUNCH = 0x100  # the launch wrapper's first instruction word


def layer_math(x, w, kv, rms, lut, pos):
    """What the kernel computes for one layer at position pos (kv: this layer's cache, updated)."""
    kv[pos] = x @ w
    att = kv[:pos + 1].mean(axis=0)
    return np.tanh(att * rms + lut[:E] * 0.01).astype(np.float32)


def kernel_fn(args):
    x = args.get(0, (E,))
    w = args.get(1, (L, E, E))
    kvc = args.get(2, (L, T, E))
    r = args.get(3, (E + T * LUTW,))
    p = args.get(4, (2,), np.int32)
    y = args.get(5, (2 * E,))
    layer, pos = int(p[0]), int(p[1])
    lut = r[E + pos * LUTW:E + (pos + 1) * LUTW]
    y[:E] = layer_math(x, w[layer], kvc[layer], r[:E], lut, pos)
    y[E:] = 0


def data():
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((L, E, E)) * 0.3).astype(np.float32)
    rms = (1 + 0.1 * rng.standard_normal(E)).astype(np.float32)
    lut = rng.standard_normal((T, LUTW)).astype(np.float32)
    seeds = [rng.standard_normal((L, P, E)).astype(np.float32) for _ in range(2)]
    x0 = rng.standard_normal(E).astype(np.float32)
    return w, rms, lut, seeds, x0


def reference():
    w, rms, lut, seeds, x0 = data()
    kv = np.zeros((L, T, E), np.float32)
    kv[:, :P] = seeds[0]
    x, out = x0, []
    for t in range(TOKENS):
        pos = P + t
        if t == 3:
            kv[:, :P] = seeds[1]
        for layer in range(L):
            x = layer_math(x, w[layer], kv[layer], rms, lut[pos], pos)
        out.append(x.copy())
    return np.stack(out)


class Decoder:
    def __init__(self, bug):
        self.bug = bug
        pyxrt.register_kernel("q4nx_layer", self._kernel, 6)
        dev = pyxrt.device(0)
        self.kern = pyxrt.kernel(pyxrt.hw_context(dev, None), "q4nx_layer")
        f32 = 4
        self.instr = pyxrt.bo(dev, 16 * 4, pyxrt.bo.cacheable, 1)
        self.x = pyxrt.bo(dev, E * f32, pyxrt.bo.host_only, 3)
        self.w = pyxrt.bo(dev, L * E * E * f32, pyxrt.bo.host_only, 4)
        self.kvc = pyxrt.bo(dev, L * T * E * f32, pyxrt.bo.host_only, 5)
        self.r = pyxrt.bo(dev, (E + T * LUTW) * f32, pyxrt.bo.host_only, 6)
        self.p = pyxrt.bo(dev, 2 * 4, pyxrt.bo.host_only, 7)
        self.y = pyxrt.bo(dev, 2 * E * f32, pyxrt.bo.host_only, 8)
        self._kv_dirty = False
        self.w_data, self.rms, self.lut, self.seeds, self.x0 = data()
        words = np.frombuffer(self.instr.map(), dtype=np.uint32)
        words[:] = np.arange(16, dtype=np.uint32) + 0x100
        self.instr.sync(TO)
        # Weights: written and synced once.
        self.w.write(self.w_data.tobytes(), 0)
        self.w.sync(TO)
        # RMS weights once; the LUT goes slice by slice, per token.
        self.r.write(self.rms.tobytes(), 0)
        self.r.sync(TO, E * f32, 0)

    def _kernel(self, args):
        """The device: runs the layer only behind its launch wrapper (else a bare herd)."""
        if int(np.frombuffer(self.instr.device_bytes(), dtype=np.uint32)[0]) != LAUNCH:
            return
        kernel_fn(args)

    def seed_kv(self, layer, seed):
        row = E * 4
        off = layer * T * row
        self.kvc.write(seed[layer].tobytes(), off)
        size = P * row
        if self.bug == "short-sync" and layer == 1:
            size -= 4  # one element short
        self.kvc.sync(TO, size, off)

    def run_layer(self, x, layer, pos):
        np.frombuffer(self.x.map(), dtype=np.float32)[:] = x
        self.x.sync(TO)
        self.p.write(np.array([layer, pos], np.int32).tobytes(), 0)
        self.p.sync(TO)
        if self._kv_dirty:  # the host changed the seeded rows: upload them (not the
            row = E * 4  # appended ones, which live on the device only)
            for layer_ in range(L):
                self.kvc.sync(TO, P * row, layer_ * T * row)
            self._kv_dirty = False
        bare = self.bug == "bare-herd" and pos == P + 4 and layer == 1
        words = np.frombuffer(self.instr.map(), dtype=np.uint32)
        if bare:  # this run's instructions lost their launch wrapper
            words[0:4] = 0
            self.instr.sync(TO, 4 * 4, 0)
        h = self.kern(3, self.instr, 16, self.x, self.w, self.kvc, self.r, self.p, self.y)
        state = h.wait(60000)
        if state != pyxrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED:
            raise RuntimeError("q4nx_layer: run state %s" % state)
        if bare:
            words[0:4] = np.arange(4, dtype=np.uint32) + LAUNCH
            self.instr.sync(TO, 4 * 4, 0)

    def read_y(self, t):
        n = E + 1 if self.bug == "readback-beyond" and t == 2 else E
        self.y.sync(FROM, E * 4, 0)
        return np.frombuffer(self.y.map(), dtype=np.float32, count=n, offset=0)[:E].copy()

    def decode(self):
        for layer in range(L):
            self.seed_kv(layer, self.seeds[0])
        x, out = self.x0, []
        for t in range(TOKENS):
            pos = P + t
            if t == 3:  # request 2: the host re-seeds the cache, the kernel keeps appending
                kv = np.frombuffer(self.kvc.map(), dtype=np.float32).reshape(L, T, E)
                kv[:, :P] = self.seeds[1]
                if self.bug != "dirty-flag":
                    self._kv_dirty = True
            words = np.frombuffer(self.instr.map(), dtype=np.uint32)
            words[4:8] = pos
            self.instr.sync(TO, 4 * 4, 4 * 4)
            off = (E + pos * LUTW) * 4
            self.r.write(self.lut[pos].tobytes(), off)
            if not (self.bug == "lut-unsynced" and t == 2):
                self.r.sync(TO, LUTW * 4, off)
            for layer in range(L):
                self.run_layer(x, layer, pos)
                x = self.read_y(t)
            out.append(x)
        return np.stack(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bug", choices=BUGS, default="none")
    a = ap.parse_args()
    out = Decoder(a.bug).decode()
    ref = reference()
    ok = np.allclose(out, ref, atol=1e-5)
    print("matches reference:", ok)
    print("checksum: %.6f" % float(out.sum()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
