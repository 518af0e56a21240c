#!/usr/bin/env python3
"""Writes a bo-doctor trace (docs/trace-format.md) of a toy engine to stdout.

Shows what a recorder inside a real engine does: for every kernel call, record the slots'
host arrays, where each slot's BO lives, what was written into it and the BO's bytes before and
after the dispatch, hashed with XXH3-64 (seed 0, raw bytes in C order, 16 hex digits).

The toy engine runs two layers of `mul` (t = x * w[l]) and `add` (x = x + t): four calls, two
kernels. Both layers use one bo_key per kernel, and `mul` declares the weights static, so layer
1 runs with layer 0's weights still in the BO: the reuse bug bo-doctor's checks find in this
trace. Capabilities: "run" only (no no-reuse engine, no access analysis).

Standard library plus the xxhash module (Debian: python3-xxhash); exits 77 without it.
"""
import json
import sys
from array import array

try:
    import xxhash
except ImportError:
    print("write_trace.py needs python3-xxhash (Debian) or 'pip install xxhash'", file=sys.stderr)
    sys.exit(77)

N = 4  # elements per array (f32)
KERNELS = {"mul": ["x", "w", "out"], "add": ["x", "y", "out"]}
STATIC = {"mul": [1], "add": []}


def h(b):
    return "%016x" % xxhash.xxh3_64_intdigest(b)


def f32(values):
    return array("f", values).tobytes()  # raw bytes in C order (little-endian on x86/ARM)


def dispatch(kernel, ins):
    a, b = array("f"), array("f")
    a.frombytes(ins[0])
    b.frombytes(ins[1])
    op = (lambda p, q: p * q) if kernel == "mul" else (lambda p, q: p + q)
    return f32([op(p, q) for p, q in zip(a, b)])


def main():
    host = {"x": f32([1, 2, 3, 4]), "t": f32([0] * N),
            "w[0]": f32([2] * N), "w[1]": f32([3] * N)}
    bos = {}         # (bo_key, slot) -> bytes: the engine's cached buffer objects
    first = {}       # bo_key / (bo_key, slot) -> number of its first call
    out = [{"trace": "bo-doctor", "version": 1, "producer": "tool/trace/examples/write_trace.py",
            "model": {"name": "toy", "path": ""},
            "backend": {"name": "python-toy", "host_emulated": True, "npu_launched": False},
            "capabilities": {"run": True, "no_reuse": False, "byte_diffs": False,
                             "access": False, "probe": False, "verify": False},
            "kernels": [{"name": k, "slots": [{"name": s, "dtype": "f32"} for s in v],
                         "binary": ""} for k, v in KERNELS.items()],
            "verify": {"top_k": 5, "outputs": []}}]
    program = [("mul", ["x", "w[%d]", "t"]), ("add", ["x", "t", "x"])]
    n = 0
    total_h2d = total_writes = 0
    for layer in range(2):
        for kernel, binds in program:
            n += 1
            key = kernel  # one bo_key for every layer: the pattern under test
            first_of_key = first.setdefault(key, n)
            names = [b.replace("%d", str(layer)) for b in binds]
            slots, h2d, writes, bo_in = [], 0, 0, []
            for i, name in enumerate(names):
                data = host[name]
                static = i in STATIC[kernel]
                pre_write = bos.get((key, i), bytes(len(data)))
                write = not static or first_of_key == n  # statics: first call of the key only
                bo = data if write else pre_write
                bos[(key, i)] = bo
                bo_in.append(bo)
                h2d += len(data) if write else 0
                writes += 1 if write else 0
                slots.append({
                    "role": "static" if static else "input", "output": i == 2,
                    "host": {"shape": [N], "dtype": "f32", "bytes": len(data), "hash": h(data),
                             "source": "tensor" if name.startswith("w") else "var",
                             "name": name, "view_of_call": 0},
                    "bo": {"ns": "", "pool": "key", "name": key, "index": i, "bytes": len(data),
                           "first_call": first.setdefault((key, i), n)},
                    "bo_bytes": len(data), "written": write,
                    "written_bytes": len(data) if write else 0,
                    "written_hash": h(data) if write else "0" * 16,
                    "reuse": [h(bo), None]})
            result = dispatch(kernel, bo_in)
            bos[(key, 2)] = result
            host[names[2]] = result  # the engine reads the output back into the host var
            for i, s in enumerate(slots):
                s["reuse"][1] = h(bos[(key, i)])
            out.append({"type": "call", "n": n, "ns": "", "kernel": kernel, "bo_key": key,
                        "bo_key_template": key, "static": STATIC[kernel], "intermediate": [],
                        "output": [2], "shared_nonstatic": False, "alias": {},
                        "labels": {"phase": "decode", "token": 0, "layer": layer},
                        "path": "/program/0/body/%d" % (len(out) - 1), "key_first_call":
                        first_of_key, "slots": slots, "failed": False, "error": "",
                        "h2d": [h2d, 0], "writes": [writes, 0]})
            total_h2d += h2d
            total_writes += writes
    out.append({"type": "figures", "engine": "reuse", "calls": n, "h2d_bytes": total_h2d,
                "bo_writes": total_writes})
    out.append({"type": "end", "no_reuse_extra_calls": 0})
    for line in out:
        sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
