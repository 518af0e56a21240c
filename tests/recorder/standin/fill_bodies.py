#!/usr/bin/python3
"""Fills the kernel bodies of a `bo-doctor skeleton` of a run_llama.py recording with the
stand-in's real kernels (run_llama.py's k_* functions) as model.json ops, the way a user fills
in the skeleton's TODO stubs.

    /usr/bin/python3 tests/recorder/standin/fill_bodies.py SKELETON.json OUT.json [--bug NAME]

--bug static-clobber gives rms_gemv_rope its clobbering body (RMSNorm written over arg 1), as
run_llama.py does for that bug. A kernel the recorder saw with fewer arguments (preload's
"rms_gemms_rope" with 14: no K scratch, so K comes out zero, as in the stand-in, whose unbound
argument reads zeros and loses its writes) gets the body of that arity. Slot shapes the ops need
as matrices (the prefill RoPE tables, recorded flat) are reshaped to the same element count.
Everything else of the skeleton (slots, data, program, reuse settings) is left as it is.
"""

import argparse
import json
import sys

S, E, KV, H, NH, NKV, HD = 6, 32, 16, 64, 4, 2, 8


def op(name, **kw):
    d = {"op": name}
    d.update(kw)
    return d


def rms_gemms_rope(n_args):
    body = [op("rmsnorm", x="arg0", weight="arg1", out="arg2", eps=1e-5),
            op("gemm", a="arg2", b="arg3", out="arg13"),
            op("copy", src="arg13", out="arg4")]
    if n_args >= 15:
        body += [op("gemm", a="arg2", b="arg5", out="arg14"),
                 op("copy", src="arg14", out="arg6")]
    else:  # the K scratch (arg 14) has no BO: K reads zeros
        body += [op("fill", out="arg6", value=0)]
    body += [op("gemm", a="arg2", b="arg7", out="arg8"),
             op("rope", x="arg4", lut="arg9", out="arg11", head_dim=HD),
             op("rope", x="arg6", lut="arg10", out="arg12", head_dim=HD)]
    return body, {"arg9": [S, NH * HD], "arg10": [S, NKV * HD]}


def o_ffn(_n):
    return [op("gemm", a="arg0", b="arg1", out="arg15"),
            op("copy", src="arg15", out="arg2"),
            op("add", a="arg2", b="arg3", out="arg4"),
            op("rmsnorm", x="arg4", weight="arg5", out="arg6", eps=1e-5),
            op("gemm", a="arg6", b="arg7", out="arg16"),
            op("copy", src="arg16", out="arg8"),
            op("gemm", a="arg6", b="arg9", out="arg17"),
            op("copy", src="arg17", out="arg10"),
            op("silu_mul", gate="arg8", up="arg10", out="arg11"),
            op("gemm", a="arg11", b="arg12", out="arg18"),
            op("copy", src="arg18", out="arg13"),
            op("add", a="arg13", b="arg4", out="arg14")], {}


def rms_gemv_rope(clobber):
    def body(_n):
        n = "arg1" if clobber else "arg2"
        return [op("rmsnorm", x="arg0", weight="arg1", out=n, eps=1e-5),
                op("gemv", a=n, b="arg3", out="arg4", transpose_b=1),
                op("gemv", a=n, b="arg5", out="arg6", transpose_b=1),
                op("gemv", a=n, b="arg7", out="arg8", transpose_b=1),
                op("rope", x="arg4", lut="arg9", out="arg11", head_dim=HD),
                op("rope", x="arg6", lut="arg10", out="arg12", head_dim=HD)], {}
    return body


def o_gemv_ffn(_n):
    return [op("gemv", a="arg1", b="arg0", out="tmp", transpose_b=1),
            op("add", a="tmp", b="arg3", out="arg6[0]"),
            op("rmsnorm", x="arg6[0]", weight="arg6[1]", out="normed", eps=1e-5),
            op("gemv", a="normed", b="arg7[0::2]", out="gate", transpose_b=1),
            op("gemv", a="normed", b="arg7[1::2]", out="up", transpose_b=1),
            op("silu_mul", gate="gate", up="up", out="arg11"),
            op("gemv", a="arg11", b="arg12", out="tmp", transpose_b=1),
            op("add", a="tmp", b="arg6[0]", out="arg14")], {}


O_GEMV_FFN_LOCALS = [{"name": "tmp", "dtype": "f32", "shape": [1, E]},
                     {"name": "normed", "dtype": "f32", "shape": [1, E]},
                     {"name": "gate", "dtype": "f32", "shape": [1, H]},
                     {"name": "up", "dtype": "f32", "shape": [1, H]}]


def lm_head_gemv(_n):
    return [op("gemv", a="arg0", b="arg1", out="arg2", transpose_b=1),
            op("gemv", a="arg0", b="arg3", out="arg4", transpose_b=1)], {}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("skeleton")
    ap.add_argument("out")
    ap.add_argument("--bug", default="none")
    a = ap.parse_args(argv)
    with open(a.skeleton) as f:
        model = json.load(f)
    bodies = {"rms_gemms_rope": rms_gemms_rope, "o_ffn": o_ffn,
              "rms_gemv_rope": rms_gemv_rope(a.bug == "static-clobber"),
              "o_gemv_ffn": o_gemv_ffn, "lm_head_gemv": lm_head_gemv}
    for name, k in model["kernels"].items():
        base = name.split("/")[0]
        if base not in bodies:
            sys.exit(f"fill_bodies: unknown kernel '{name}'")
        n_args = len(k["slots"])
        body, shapes = bodies[base](n_args)
        for slot in k["slots"]:
            if slot["name"] in shapes:
                slot["shape"] = shapes[slot["name"]]
        if base == "o_gemv_ffn":
            k["locals"] = O_GEMV_FFN_LOCALS
        k["body"] = body
        k["doc"] = f"run_llama.py's k_{base} ({n_args} args), filled in by fill_bodies.py"
    with open(a.out, "w") as f:
        json.dump(model, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
