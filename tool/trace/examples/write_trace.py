#!/usr/bin/env python3
"""Writes a bo-doctor trace (docs/trace-format.md) of a toy engine to stdout.

Shows what a recorder inside a real engine does: for every kernel call, record the slots'
host arrays, where each slot's BO lives, what was written into it and the BO's bytes before and
after the dispatch, hashed with XXH3-64 (seed 0, raw bytes in C order, 16 hex digits).

The toy engine runs two layers of `mul` (t = x * w[l]) and `add` (x = x + t): four calls, two
kernels. Both layers use one bo_key per kernel, and `mul` declares the weights static, so layer
1 runs with layer 0's weights still in the BO: the reuse bug bo-doctor's checks find in this
trace. Capabilities: "run" only (no no-reuse engine, no access analysis).

Each line is a dataclass whose fields are the format's keys in its order; `plain` turns one
into the dict json.dumps writes.

Standard library plus the xxhash module (Debian: python3-xxhash); exits 77 without it.
"""
import json
import sys
from array import array
from dataclasses import dataclass, field, fields
from typing import List

try:
    import xxhash
except ImportError:
    print("write_trace.py needs python3-xxhash (Debian) or 'pip install xxhash'", file=sys.stderr)
    sys.exit(77)

N = 4  # elements per array (f32)
KERNELS = {"mul": ["x", "w", "out"], "add": ["x", "y", "out"]}
STATIC = {"mul": [1], "add": []}


# --- the trace's lines, fields in the order docs/trace-format.md lists them -----------------

@dataclass
class Model:
    name: str
    path: str


@dataclass
class Backend:
    name: str
    host_emulated: bool
    npu_launched: bool


@dataclass
class Capabilities:
    run: bool
    no_reuse: bool = False
    byte_diffs: bool = False
    access: bool = False
    probe: bool = False
    verify: bool = False


@dataclass
class KernelSlot:
    name: str
    dtype: str


@dataclass
class Kernel:
    name: str
    slots: List[KernelSlot]
    binary: str


@dataclass
class Verify:
    top_k: int
    outputs: list


@dataclass
class Header:  # §4
    trace: str = field(default="bo-doctor", init=False)
    version: int = field(default=1, init=False)
    producer: str
    model: Model
    backend: Backend
    capabilities: Capabilities
    kernels: List[Kernel]
    verify: Verify


@dataclass
class Host:  # §6 host
    shape: List[int]
    dtype: str
    bytes: int
    hash: str
    source: str
    name: str
    view_of_call: int


@dataclass
class Bo:  # §6 bo
    ns: str
    pool: str
    name: str
    index: int
    bytes: int
    first_call: int


@dataclass
class Slot:  # §6, with capability run
    role: str
    output: bool
    host: Host
    bo: Bo
    bo_bytes: int
    written: bool
    written_bytes: int
    written_hash: str
    reuse: List[str]


@dataclass
class Labels:
    phase: str
    token: int
    layer: int


@dataclass
class Call:  # §5, with capability run
    type: str = field(default="call", init=False)
    n: int
    ns: str
    kernel: str
    bo_key: str
    bo_key_template: str
    static: List[int]
    intermediate: List[int]
    output: List[int]
    shared_nonstatic: bool
    alias: dict
    labels: Labels
    path: str
    key_first_call: int
    slots: List[Slot]
    failed: bool
    error: str
    h2d: List[int]
    writes: List[int]


@dataclass
class Figures:  # §7
    type: str = field(default="figures", init=False)
    engine: str
    calls: int
    h2d_bytes: int
    bo_writes: int


@dataclass
class End:  # §7
    type: str = field(default="end", init=False)
    no_reuse_extra_calls: int


def plain(v):
    """A line's dataclasses as dicts in field order, ready for json.dumps."""
    if hasattr(type(v), "__dataclass_fields__"):
        return {f.name: plain(getattr(v, f.name)) for f in fields(v)}
    if isinstance(v, (list, tuple)):
        return [plain(e) for e in v]
    if isinstance(v, dict):
        return {k: plain(e) for k, e in v.items()}
    return v


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
    out = [Header("tool/trace/examples/write_trace.py", Model("toy", ""),
                  Backend("python-toy", True, False), Capabilities(run=True),
                  [Kernel(k, [KernelSlot(s, "f32") for s in v], "") for k, v in KERNELS.items()],
                  Verify(5, []))]
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
                slots.append(Slot(
                    "static" if static else "input", i == 2,
                    Host([N], "f32", len(data), h(data),
                         "tensor" if name.startswith("w") else "var", name, 0),
                    Bo("", "key", key, i, len(data), first.setdefault((key, i), n)),
                    len(data), write, len(data) if write else 0,
                    h(data) if write else "0" * 16, [h(bo), None]))
            result = dispatch(kernel, bo_in)
            bos[(key, 2)] = result
            host[names[2]] = result  # the engine reads the output back into the host var
            for i, s in enumerate(slots):
                s.reuse[1] = h(bos[(key, i)])
            out.append(Call(n, "", kernel, key, key, STATIC[kernel], [], [2], False, {},
                            Labels("decode", 0, layer), "/program/0/body/%d" % (len(out) - 1),
                            first_of_key, slots, False, "", [h2d, 0], [writes, 0]))
            total_h2d += h2d
            total_writes += writes
    out.append(Figures("reuse", n, total_h2d, total_writes))
    out.append(End(0))
    for line in out:
        sys.stdout.write(json.dumps(plain(line), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
