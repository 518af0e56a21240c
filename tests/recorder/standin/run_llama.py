#!/usr/bin/python3
"""Toy Llama on the stand-in KernelCache, with the call structure of mlir-air's
llama32_1b_inference.py in miniature, and seeded BO-reuse bugs.

    /usr/bin/python3 tests/recorder/standin/run_llama.py --bug none
    /usr/bin/python3 tests/recorder/standin/run_llama.py --list

float32 everywhere; 2 layers, emb 32, hidden 64, 4 query heads / 2 KV heads of
8, vocab 64 (LM head in 2 partitions of 32), prompt of 6 tokens, 3 decode
tokens. Weights come from a seeded RNG, so a run is deterministic.

load_and_run calls, numbered 1.. across both caches (29 in a full run):
   1 prefill rms_gemms_rope  key rms_gemms_rope_L0   preload (15 args, f32 scratch 13, 14)
   2 prefill o_ffn           key o_ffn_L0            preload (19 args)
   3 prefill rms_gemms_rope  key rms_gemms_rope_L1   preload
   4 prefill o_ffn           key o_ffn_L1            preload
     -- prefill host weights freed: np.empty(0) placeholders from here on --
   5 decode  rms_gemv_rope   key rms_gemv_rope_L0    preload (13 args)
   6 decode  o_gemv_ffn      key o_gemv_ffn_L0       preload (15 args; dead args 2,4,5,8,9,10,13;
                                                     static packed (2,E) arg 6, row 0 rewritten
                                                     by the kernel on every call, row 1 = ffn_norm)
   7 decode  rms_gemv_rope   key rms_gemv_rope_L1    preload
   8 decode  o_gemv_ffn      key o_gemv_ffn_L1       preload
   9 decode  lm_head_gemv    key lm_head_gemv        preload (2 partitions: args 1,3 weights)
     -- decode host weights freed --
  10-13 prefill: rms_gemms_rope L0, o_ffn L0, rms_gemms_rope L1, o_ffn L1
        (shared_nonstatic=True; CPU attention between the two)
  14 decode  lm_head_gemv    (prefill's last-token LM head, on the decode cache)
  15-19 decode token 1 (pos 6): rms_gemv_rope L0, o_gemv_ffn L0, rms_gemv_rope L1,
        o_gemv_ffn L1, lm_head_gemv (decode: host KV cache, CPU attention)
  20-24 decode token 2 (pos 7), 25-29 decode token 3 (pos 8)

Seeded bugs (--bug NAME). call/arg = where the bug first bites; report = the
call bo-doctor's check attaches its finding to (docs/checks.md); wrong = the
first call whose returned outputs differ from the clean run's.

  bug                call arg report wrong check               what goes wrong
  none                 -    -    -     -   (none)              clean; matches the reference
  key-collision        7    1    7    17   key-collision       decode bo_key without the layer:
                                                               L1 calls skip their static slots
                                                               (1,3,5,7): every layer runs L0's
                                                               weights
  stale-static        15    9   15    15   stale-static        decode RoPE LUTs (args 9, 10)
                                                               static: preload's dummy zero LUT
                                                               stays resident
  size-mismatch       10   14   10    10   size-mismatch       preload (call 1) passed 14 args
                                                               (Q scratch only), inference 15:
                                                               arg 14 has no BO, the kernel's K
                                                               scratch is unbound, K = 0 (also
                                                               at call 1, whose output is unused)
  placeholder-upload   5    3    5    15   placeholder-upload  decode weights freed (zero arrays)
                                                               before the decode preload: zeros
                                                               uploaded as weights (args 3,5,7
                                                               of calls 5, 7; 0,12 of 6, 8)
  alias-conflict       2   10    2    11   alias-conflict      o_ffn shared_alias {8,10} -> one
                                                               pool BO: gate and up share it
                                                               (zeros at preload, so no visible
                                                               effect before call 11)
  static-clobber      15    1    5    15   static-clobber      decode rms_gemv_rope writes its
                                                               RMSNorm result into static arg 1
                                                               (norm weight) at call 5; call 15
                                                               reads it back as the weight
  view-overwritten    12    8   10    16   view-overwritten    prefill keeps per-layer zero-copy
                                                               K/V views (args 8, 12 of call 10)
                                                               and reads them after the loop;
                                                               call 12 rewrote the pooled BOs
  missed-static       14    3    9     -   missed-static       LM head partition-1 weight (arg 3)
                                                               not static: re-uploaded on calls
                                                               14, 19, 24, 29 (note; same tokens)
  config-error         2    1    2     -   config-error        o_ffn shared_alias on static arg 1:
                                                               load_and_run raises ValueError
                                                               before touching a BO; NOT caught,
                                                               the program exits 1 (traceback)

The program prints the bug's line first ("seeded-bug=NAME call=N arg=I
report_call=R wrong_output_call=W|- check=ID :: text"; --list prints all),
then "reference: match|MISMATCH ..." (the run against a plain numpy forward
pass with no BO reuse) and last "tokens: t0 t1 t2 t3" (greedy argmax; t0 from
prefill, t1..t3 from decode).
"""

import argparse
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep the source tree clean
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from shared.infra.cache import KernelCache  # noqa: E402

# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------

N_LAYERS = 2
EMB = 32
HIDDEN = 64
N_HEADS = 4
N_KV_HEADS = 2
HEAD_DIM = 8
KV_DIM = N_KV_HEADS * HEAD_DIM
VOCAB = 64
LM_N_PARTITIONS = 2
LM_N_PART = 32
PROMPT = [1, 17, 42, 9, 33, 5]
SEQ = len(PROMPT)
N_DECODE = 3
MAX_SEQ = SEQ + N_DECODE
SEED = 1234
EPS = 1e-5
F32 = np.float32

RMS_GEMMS_ROPE_BACKEND = {"output_format": "elf", "instance_name": "rms_gemms_rope",
                          "runtime_loop_tiling_sizes": [2, 2]}
O_FFN_BACKEND = {"output_format": "elf", "instance_name": "o_ffn",
                 "omit_while_true_loop": False, "runtime_loop_tiling_sizes": [2, 2]}
RGR_BACKEND = {"output_format": "elf", "instance_name": "rms_gemv_rope"}
OGF_BACKEND = {"output_format": "elf", "instance_name": "o_gemv_ffn"}
LM_GEMV_BACKEND = {"output_format": "elf", "instance_name": "lm_head_gemv"}

# name -> (call, arg, report_call, wrong_output_call, check, summary); None = no bug.
# call/arg: where the bug first bites; report_call: where bo-doctor's check
# attaches its finding; wrong_output_call: first call whose returned outputs
# differ from the clean run's (None: never).
BUGS = {
    "none": None,
    "key-collision": (7, 1, 7, 17, "key-collision",
                      "decode bo_key lacks the layer index: L1 calls skip their static "
                      "slots (args 1,3,5,7) and run L0's weights"),
    "stale-static": (15, 9, 15, 15, "stale-static",
                     "decode RoPE LUT args 9,10 marked static: preload's zero LUT stays resident"),
    "size-mismatch": (10, 14, 10, 10, "size-mismatch",
                      "key's first call (preload, call 1) had 14 args, this call 15: arg 14 "
                      "has no BO, the kernel's K scratch is unbound and K comes out zero"),
    "placeholder-upload": (5, 3, 5, 15, "placeholder-upload",
                           "zero-array placeholders uploaded at the decode keys' first calls "
                           "(args 3,5,7 / 0,12; decode weights freed before the decode preload)"),
    "alias-conflict": (2, 10, 2, 11, "alias-conflict",
                       "shared_alias puts o_ffn args 8 (gate) and 10 (up) on one pool BO: "
                       "the up GEMM overwrites gate"),
    "static-clobber": (15, 1, 5, 15, "static-clobber",
                       "rms_gemv_rope writes its RMSNorm result into static arg 1 at call 5; "
                       "call 15 reads the clobbered bytes as the norm weight"),
    "view-overwritten": (12, 8, 10, 16, "view-overwritten",
                         "per-layer K/V zero-copy views (args 8, 12) returned by call 10 are "
                         "rewritten by call 12 and read after the layer loop"),
    "missed-static": (14, 3, 9, None, "missed-static",
                      "LM head partition-1 weight (arg 3) uploaded on every call "
                      "(redundant on calls 14,19,24,29); optimisation note, tokens unchanged"),
    "config-error": (2, 1, 2, None, "config-error",
                     "shared_alias on static o_ffn arg 1: load_and_run raises ValueError "
                     "(not caught: exit 1)"),
}

BUG = "none"


def bug_line(name):
    info = BUGS[name]
    if info is None:
        return f"seeded-bug={name}"
    call, arg, report, wrong, check, text = info
    wrong = "-" if wrong is None else wrong
    return (f"seeded-bug={name} call={call} arg={arg} report_call={report} "
            f"wrong_output_call={wrong} check={check} :: {text}")


# ---------------------------------------------------------------------------
# Math helpers
# ---------------------------------------------------------------------------


def rms_norm(x, w):
    x = np.asarray(x, dtype=F32)
    return (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * w).astype(F32)


def silu(x):
    return (x / (1.0 + np.exp(-x))).astype(F32)


def apply_rope(x, lut):
    """x, lut: (..., HEAD_DIM); lut = [cos(f0..f3), sin(f0..f3)] (half rotation)."""
    h = HEAD_DIM // 2
    x1, x2 = x[..., :h], x[..., h:]
    c, s = lut[..., :h], lut[..., h:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1).astype(F32)


def make_rope_lut(n_pos):
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, HEAD_DIM, 2) / HEAD_DIM))
    ang = np.arange(n_pos)[:, None] * inv_freq[None, :]
    return np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype(F32)


def attention_causal(q, k, v):
    """Prefill attention (CPU): q (S, NH*HD), k/v (S, KV_DIM), causal GQA."""
    s = q.shape[0]
    qh = q.reshape(s, N_HEADS, HEAD_DIM)
    kh = k.reshape(s, N_KV_HEADS, HEAD_DIM)
    vh = v.reshape(s, N_KV_HEADS, HEAD_DIM)
    group = N_HEADS // N_KV_HEADS
    out = np.zeros((s, N_HEADS, HEAD_DIM), dtype=F32)
    mask = np.triu(np.full((s, s), -np.inf, dtype=F32), k=1)
    for h in range(N_HEADS):
        scores = qh[:, h] @ kh[:, h // group].T / np.sqrt(HEAD_DIM) + mask
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        out[:, h] = p @ vh[:, h // group]
    return out.reshape(s, N_HEADS * HEAD_DIM)


def decode_attention_cpu(q, k_cache, v_cache, pos):
    """q (EMB,), caches (N_KV_HEADS, MAX_SEQ, HEAD_DIM); attends to [0, pos]."""
    group = N_HEADS // N_KV_HEADS
    qh = q.reshape(N_HEADS, HEAD_DIM)
    out = np.zeros((N_HEADS, HEAD_DIM), dtype=F32)
    for h in range(N_HEADS):
        kv = h // group
        scores = k_cache[kv, : pos + 1] @ qh[h] / np.sqrt(HEAD_DIM)
        p = np.exp(scores - scores.max())
        out[h] = (p / p.sum()) @ v_cache[kv, : pos + 1]
    return out.reshape(-1)


# ---------------------------------------------------------------------------
# Kernels ("ELFs"): numpy functions over device memory. a.get(i, shape) is a
# view of slot i's device bytes (zeros, writes lost, if no BO is bound).
# ---------------------------------------------------------------------------


def k_rms_gemms_rope(a):
    """Prefill: RMSNorm + Q/K/V GEMMs + RoPE. 15 args; Q and K GEMMs are
    fused-cast through f32 scratch args 13 and 14, V is drained directly."""
    S, E, KV = SEQ, EMB, KV_DIM
    a.get(2, (S, E))[...] = rms_norm(a.get(0, (S, E)), a.get(1, (E,)))
    a.get(13, (S, E))[...] = a.get(2, (S, E)) @ a.get(3, (E, E))
    a.get(4, (S, E))[...] = a.get(13, (S, E))
    a.get(14, (S, KV))[...] = a.get(2, (S, E)) @ a.get(5, (E, KV))
    a.get(6, (S, KV))[...] = a.get(14, (S, KV))
    a.get(8, (S, KV))[...] = a.get(2, (S, E)) @ a.get(7, (E, KV))
    lut_q = a.get(9, (S * N_HEADS * HEAD_DIM,)).reshape(S, N_HEADS, HEAD_DIM)
    lut_k = a.get(10, (S * N_KV_HEADS * HEAD_DIM,)).reshape(S, N_KV_HEADS, HEAD_DIM)
    q = a.get(4, (S, E)).reshape(S, N_HEADS, HEAD_DIM)
    k = a.get(6, (S, KV)).reshape(S, N_KV_HEADS, HEAD_DIM)
    a.get(11, (S, E))[...] = apply_rope(q, lut_q).reshape(S, E)
    a.get(12, (S, KV))[...] = apply_rope(k, lut_k).reshape(S, KV)


def k_o_ffn(a):
    """Prefill: O GEMM + residual + RMSNorm + SwiGLU FFN + residual. 19 args;
    every GEMM goes through its f32 scratch (15..18); output arg 14 (flat)."""
    S, E, H = SEQ, EMB, HIDDEN
    a.get(15, (S, E))[...] = a.get(0, (S, E)) @ a.get(1, (E, E))
    a.get(2, (S, E))[...] = a.get(15, (S, E))
    a.get(4, (S, E))[...] = a.get(2, (S, E)) + a.get(3, (S, E))
    a.get(6, (S, E))[...] = rms_norm(a.get(4, (S, E)), a.get(5, (E,)))
    a.get(16, (S, H))[...] = a.get(6, (S, E)) @ a.get(7, (E, H))
    a.get(8, (S, H))[...] = a.get(16, (S, H))
    a.get(17, (S, H))[...] = a.get(6, (S, E)) @ a.get(9, (E, H))
    a.get(10, (S, H))[...] = a.get(17, (S, H))
    a.get(11, (S, H))[...] = silu(a.get(8, (S, H))) * a.get(10, (S, H))
    a.get(18, (S, E))[...] = a.get(11, (S, H)) @ a.get(12, (H, E))
    a.get(13, (S, E))[...] = a.get(18, (S, E))
    a.get(14, (S * E,))[...] = (a.get(13, (S, E)) + a.get(4, (S, E))).reshape(-1)


def make_k_rms_gemv_rope(clobber_norm_weight):
    def k_rms_gemv_rope(a):
        """Decode: RMSNorm + Q/K/V GEMVs (transposed weights) + RoPE. 13 args."""
        E, KV = EMB, KV_DIM
        normed = rms_norm(a.get(0, (E,)), a.get(1, (E,)))
        # static-clobber: the RMSNorm launch writes its result over its own
        # weight operand (arg 1) instead of the normed buffer (arg 2).
        out = 1 if clobber_norm_weight else 2
        a.get(out, (E,))[...] = normed
        n = a.get(out, (E,))
        a.get(4, (E,))[...] = a.get(3, (E, E)) @ n
        a.get(6, (KV,))[...] = a.get(5, (KV, E)) @ n
        a.get(8, (KV,))[...] = a.get(7, (KV, E)) @ n
        lut_q = a.get(9, (N_HEADS * HEAD_DIM,)).reshape(N_HEADS, HEAD_DIM)
        lut_k = a.get(10, (N_KV_HEADS * HEAD_DIM,)).reshape(N_KV_HEADS, HEAD_DIM)
        a.get(11, (E,))[...] = apply_rope(
            a.get(4, (E,)).reshape(N_HEADS, HEAD_DIM), lut_q).reshape(E)
        a.get(12, (KV,))[...] = apply_rope(
            a.get(6, (KV,)).reshape(N_KV_HEADS, HEAD_DIM), lut_k).reshape(KV)

    return k_rms_gemv_rope


def k_o_gemv_ffn(a):
    """Decode: 3 stages, 15-arg ABI. Stage 1 writes res1 into row 0 of the
    static packed (2, E) arg 6 (row 1 = ffn_norm, preloaded); stage 2 RMSNorm +
    interleaved gate/up GEMV (arg 7) + SwiGLU -> arg 11; stage 3 down GEMV +
    res1 -> arg 14. Args 2, 4, 5, 8, 9, 10, 13 are dead (never touched)."""
    E, H = EMB, HIDDEN
    res1 = a.get(0, (E, E)) @ a.get(1, (E,)) + a.get(3, (E,))
    a.get(6, (2, E))[0] = res1
    packed = a.get(6, (2, E))
    gu = a.get(7, (2 * H, E)) @ rms_norm(packed[0], packed[1])
    a.get(11, (H,))[...] = silu(gu[0::2]) * gu[1::2]
    a.get(14, (E,))[...] = a.get(12, (E, H)) @ a.get(11, (H,)) + a.get(6, (2, E))[0]


def k_lm_head_gemv(a):
    """LM head: 2-partition GEMV in one kernel; args 1+2p weights, 2+2p outputs."""
    x = a.get(0, (EMB,))
    for p in range(LM_N_PARTITIONS):
        a.get(2 + 2 * p, (LM_N_PART,))[...] = a.get(1 + 2 * p, (LM_N_PART, EMB)) @ x


# ---------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------


class LayerWeights:
    pass


class Weights:
    pass


def make_weights():
    rng = np.random.default_rng(SEED)

    def randn(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(F32)

    w = Weights()
    w.embed_table = randn(VOCAB, EMB)
    w.layers = []
    for _ in range(N_LAYERS):
        lw = LayerWeights()
        lw.attn_norm = 1.0 + randn(EMB, scale=0.1)
        lw.wq = randn(EMB, EMB, scale=EMB ** -0.5)
        lw.wk = randn(EMB, KV_DIM, scale=EMB ** -0.5)
        lw.wv = randn(EMB, KV_DIM, scale=EMB ** -0.5)
        lw.wo = randn(EMB, EMB, scale=EMB ** -0.5)
        lw.ffn_norm = 1.0 + randn(EMB, scale=0.1)
        lw.w_gate = randn(EMB, HIDDEN, scale=EMB ** -0.5)
        lw.w_up = randn(EMB, HIDDEN, scale=EMB ** -0.5)
        lw.w_down = randn(HIDDEN, EMB, scale=HIDDEN ** -0.5)
        w.layers.append(lw)
    w.final_norm = 1.0 + randn(EMB, scale=0.1)
    w.lm_head = randn(VOCAB, EMB, scale=2.0 * EMB ** -0.5)
    return w


def _empty():
    return np.empty(0, dtype=F32)


# ---------------------------------------------------------------------------
# Per-bug configuration points (each is where the real program makes the choice)
# ---------------------------------------------------------------------------


def rms_scratch_specs():
    """f32 C-scratch args of rms_gemms_rope (Q, K fused-cast): indices 13, 14."""
    return [np.zeros((SEQ, EMB), F32), np.zeros((SEQ, KV_DIM), F32)], {13, 14}


def preload_rms_scratch_specs():
    if BUG == "size-mismatch":  # hardcoded "Q only" (the PR #1689 mistake)
        return [np.zeros((SEQ, EMB), F32)], {13}
    return rms_scratch_specs()


def o_ffn_shared_alias():
    if BUG == "alias-conflict":  # copy-pasted pool name: gate and up share a BO
        return {8: "ffn_gate_up", 10: "ffn_gate_up"}
    if BUG == "config-error":  # meant arg 2 (proj_buf), hit arg 1 (wo, static)
        return {1: "o_proj"}
    return None


def decode_bo_key(name, layer_idx):
    if BUG == "key-collision":
        return name  # layer index dropped
    return f"{name}_L{layer_idx}"


def decode_rgr_static():
    return {1, 3, 5, 7, 9, 10} if BUG == "stale-static" else {1, 3, 5, 7}


def lm_static():
    if BUG == "missed-static":
        return {1}  # partition 1's weight (arg 3) forgotten
    return {1 + 2 * p for p in range(LM_N_PARTITIONS)}


# ---------------------------------------------------------------------------
# Prefill (llama32_1b_prefill.py in miniature)
# ---------------------------------------------------------------------------

_ARG_CACHE = {}
_O_FFN_STATIC = {1, 5, 7, 9, 12}
_O_FFN_INTER = {2, 4, 6, 8, 10, 11, 13, 14, 15, 16, 17, 18}
_RMS_STATIC = {1, 3, 5, 7, 9, 10}


def _rms_args(x, lw, lut_q, lut_k, scratch):
    return [
        x,                                     # arg0 x_in (dynamic)
        lw.attn_norm,                          # arg1 (static)
        np.zeros((SEQ, EMB), F32),             # arg2 normed
        lw.wq,                                 # arg3 (static)
        np.zeros((SEQ, EMB), F32),             # arg4 q
        lw.wk,                                 # arg5 (static)
        np.zeros((SEQ, KV_DIM), F32),          # arg6 k
        lw.wv,                                 # arg7 (static)
        np.zeros((SEQ, KV_DIM), F32),          # arg8 v (output)
        lut_q,                                 # arg9 (static)
        lut_k,                                 # arg10 (static)
        np.zeros((SEQ, EMB), F32),             # arg11 q_roped (output)
        np.zeros((SEQ, KV_DIM), F32),          # arg12 k_roped (output)
    ] + scratch


def _o_ffn_args(attn_out, x_res, lw):
    S, E, H = SEQ, EMB, HIDDEN
    return [
        attn_out,                              # arg0 (dynamic)
        lw.wo,                                 # arg1 (static)
        np.zeros((S, E), F32),                 # arg2 proj
        x_res,                                 # arg3 x_residual (dynamic)
        np.zeros((S, E), F32),                 # arg4 res1
        lw.ffn_norm,                           # arg5 (static)
        np.zeros((S, E), F32),                 # arg6 normed2
        lw.w_gate,                             # arg7 (static)
        np.zeros((S, H), F32),                 # arg8 gate
        lw.w_up,                               # arg9 (static)
        np.zeros((S, H), F32),                 # arg10 up
        np.zeros((S, H), F32),                 # arg11 swiglu
        lw.w_down,                             # arg12 (static)
        np.zeros((S, E), F32),                 # arg13 down
        np.zeros(S * E, F32),                  # arg14 output
        np.zeros((S, E), F32),                 # arg15..18 f32 scratch
        np.zeros((S, H), F32),
        np.zeros((S, H), F32),
        np.zeros((S, E), F32),
    ]


def _rope_luts_prefill(rope_lut):
    return (np.repeat(rope_lut[:SEQ], N_HEADS, axis=0).flatten(),
            np.repeat(rope_lut[:SEQ], N_KV_HEADS, axis=0).flatten())


def preload_prefill_weights(weights, cache, rope_lut):
    lut_q, lut_k = _rope_luts_prefill(rope_lut)
    for l, lw in enumerate(weights.layers):
        scratch, scratch_inter = preload_rms_scratch_specs()
        cache.load_and_run(
            "rms_gemms_rope", RMS_GEMMS_ROPE_BACKEND,
            *_rms_args(np.zeros((SEQ, EMB), F32), lw, lut_q, lut_k, scratch),
            output_indices=[8, 11, 12],
            static_input_indices=_RMS_STATIC,
            intermediate_indices={2, 4, 6, 8, 11, 12} | scratch_inter,
            bo_key=f"rms_gemms_rope_L{l}",
            shared_nonstatic=True,
        )
        z = np.zeros((SEQ, EMB), F32)
        cache.load_and_run(
            "o_ffn", O_FFN_BACKEND, *_o_ffn_args(z, z, lw),
            output_indices=[14],
            static_input_indices=_O_FFN_STATIC,
            intermediate_indices=_O_FFN_INTER,
            bo_key=f"o_ffn_L{l}",
            shared_nonstatic=True,
            shared_alias=o_ffn_shared_alias(),
        )


def run_transformer_block(x, lw, rope_lut, cache, layer_idx):
    """One prefill layer. Args are built once per key (from lw, which holds
    np.empty(0) placeholders for the freed weights by now) and reused."""
    rms_key = f"rms_gemms_rope_L{layer_idx}"
    if rms_key not in _ARG_CACHE:
        lut_q, lut_k = _rope_luts_prefill(rope_lut)
        scratch, scratch_inter = rms_scratch_specs()
        _ARG_CACHE[rms_key] = (_rms_args(None, lw, lut_q, lut_k, scratch), scratch_inter)
    rms_args, scratch_inter = _ARG_CACHE[rms_key]
    rms_args[0] = x.reshape(SEQ, EMB)
    res = cache.load_and_run(
        "rms_gemms_rope", RMS_GEMMS_ROPE_BACKEND, *rms_args,
        output_indices=[8, 11, 12],
        static_input_indices=_RMS_STATIC,
        intermediate_indices={2, 4, 6, 8, 11, 12} | scratch_inter,
        bo_key=rms_key,
        shared_nonstatic=True,
    )
    v = res[8].reshape(SEQ, KV_DIM)              # zero-copy views into pooled BOs
    q_roped = res[11].reshape(SEQ, EMB)
    k_roped = res[12].reshape(SEQ, KV_DIM)
    inter = {"v": v, "k_roped": k_roped, "q_roped": q_roped}

    attn_out = attention_causal(q_roped, k_roped, v)

    offn_key = f"o_ffn_L{layer_idx}"
    if offn_key not in _ARG_CACHE:
        _ARG_CACHE[offn_key] = _o_ffn_args(None, None, lw)
    offn_args = _ARG_CACHE[offn_key]
    offn_args[0] = attn_out
    offn_args[3] = x.reshape(SEQ, EMB)
    res = cache.load_and_run(
        "o_ffn", O_FFN_BACKEND, *offn_args,
        output_indices=[14],
        static_input_indices=_O_FFN_STATIC,
        intermediate_indices=_O_FFN_INTER,
        bo_key=offn_key,
        shared_nonstatic=True,
        shared_alias=o_ffn_shared_alias(),
    )
    return res[14].reshape(SEQ, EMB), inter


# ---------------------------------------------------------------------------
# Decode (llama32_1b_decode.py in miniature)
# ---------------------------------------------------------------------------


def run_decode_block(x, lw, cache, k_cache_l, v_cache_l, pos, rope_lut):
    def _run(name, backend, *inputs, static_indices=None, **kwargs):
        bk = decode_bo_key(name, lw.layer_idx) if static_indices else None
        return cache.load_and_run(name, backend, *inputs, bo_key=bk,
                                  static_input_indices=static_indices, **kwargs)

    E, KV, H = EMB, KV_DIM, HIDDEN
    lut_pos = rope_lut[pos: pos + 1]
    res = _run(
        "rms_gemv_rope", RGR_BACKEND,
        x.astype(F32),                               # arg0
        lw.attn_norm,                                # arg1 (static)
        np.zeros(E, F32),                            # arg2 normed
        lw.wq_t,                                     # arg3 (static)
        np.zeros(E, F32),                            # arg4 q
        lw.wk_t,                                     # arg5 (static)
        np.zeros(KV, F32),                           # arg6 k
        lw.wv_t,                                     # arg7 (static)
        np.zeros(KV, F32),                           # arg8 v
        np.tile(lut_pos, (N_HEADS, 1)).flatten(),    # arg9 lut_q (per position)
        np.tile(lut_pos, (N_KV_HEADS, 1)).flatten(), # arg10 lut_k (per position)
        np.zeros(E, F32),                            # arg11 q_roped
        np.zeros(KV, F32),                           # arg12 k_roped
        output_indices=[8, 11, 12],
        static_indices=decode_rgr_static(),
        intermediate_indices={2, 4, 6, 8, 11, 12},
    )
    k_cache_l[:, pos, :] = res[12].reshape(N_KV_HEADS, HEAD_DIM)
    v_cache_l[:, pos, :] = res[8].reshape(N_KV_HEADS, HEAD_DIM)
    attn_out = decode_attention_cpu(res[11], k_cache_l, v_cache_l, pos)

    z_emb, z_hidden = np.zeros(E, F32), np.zeros(H, F32)
    res = _run(
        "o_gemv_ffn", OGF_BACKEND,
        lw.wo_t,                          # arg0 (static)
        attn_out,                         # arg1
        z_emb,                            # arg2 (dead)
        x.astype(F32),                    # arg3 x_residual
        z_emb,                            # arg4 (dead)
        z_emb,                            # arg5 (dead)
        lw.packed_rms_buf,                # arg6 packed (2, E) (static)
        lw.wgateup_t,                     # arg7 (static)
        z_hidden,                         # arg8 (dead)
        np.zeros((H, E), F32),            # arg9 (dead)
        z_hidden,                         # arg10 (dead)
        np.zeros(H, F32),                 # arg11 swiglu
        lw.wdown_t,                       # arg12 (static)
        z_emb,                            # arg13 (dead)
        np.zeros(E, F32),                 # arg14 output
        output_indices=[14],
        static_indices={0, 6, 7, 12},
        intermediate_indices={2, 4, 5, 8, 9, 10, 11, 13, 14},
    )
    return res[14].astype(F32)


def lm_head(cache, weights, x_normed):
    inputs = [x_normed.astype(F32)]
    for p in range(LM_N_PARTITIONS):
        inputs += [weights.lm_parts[p], np.zeros(LM_N_PART, F32)]
    res = cache.load_and_run(
        "lm_head_gemv", LM_GEMV_BACKEND, *inputs,
        output_indices=[2 + 2 * p for p in range(LM_N_PARTITIONS)],
        static_input_indices=lm_static(),
        intermediate_indices={2 + 2 * p for p in range(LM_N_PARTITIONS)},
    )
    logits = np.zeros(VOCAB, F32)
    for p in range(LM_N_PARTITIONS):
        lo, hi = p * LM_N_PART, min((p + 1) * LM_N_PART, VOCAB)
        logits[lo:hi] = res[2 + 2 * p][: hi - lo]
    return logits


def _free_transposed(weights, placeholder):
    for lw in weights.layers:
        for attr in ("wq_t", "wk_t", "wv_t", "wo_t", "wdown_t", "wgateup_t"):
            if hasattr(lw, attr):
                setattr(lw, attr, placeholder(getattr(lw, attr)))


def preload_decode_weights(weights, cache):
    E, KV, H = EMB, KV_DIM, HIDDEN
    for l, lw in enumerate(weights.layers):
        cache.load_and_run(
            "rms_gemv_rope", RGR_BACKEND,
            np.zeros(E, F32), lw.attn_norm, np.zeros(E, F32),
            lw.wq_t, np.zeros(E, F32), lw.wk_t, np.zeros(KV, F32),
            lw.wv_t, np.zeros(KV, F32),
            np.zeros(N_HEADS * HEAD_DIM, F32),      # dummy LUTs
            np.zeros(N_KV_HEADS * HEAD_DIM, F32),
            np.zeros(E, F32), np.zeros(KV, F32),
            output_indices=[8, 11, 12],
            static_input_indices={1, 3, 5, 7},
            intermediate_indices={2, 4, 6, 8, 11, 12},
            bo_key=decode_bo_key("rms_gemv_rope", l),
        )
        wgateup = np.empty((2 * H, E), F32)
        wgateup[0::2] = lw.wgate_t
        wgateup[1::2] = lw.wup_t
        lw.wgateup_t = wgateup
        del lw.wgate_t, lw.wup_t
        packed = np.empty((2, E), F32)
        packed[0] = 0.0
        packed[1] = lw.ffn_norm
        lw.packed_rms_buf = packed
        z_emb, z_hidden = np.zeros(E, F32), np.zeros(H, F32)
        cache.load_and_run(
            "o_gemv_ffn", OGF_BACKEND,
            lw.wo_t, z_emb, z_emb, z_emb, z_emb, z_emb, lw.packed_rms_buf,
            lw.wgateup_t, z_hidden, np.zeros((H, E), F32), z_hidden, z_hidden,
            lw.wdown_t, z_emb, z_emb,
            output_indices=[14],
            static_input_indices={0, 6, 7, 12},
            intermediate_indices={2, 4, 5, 8, 9, 10, 11, 13, 14},
            bo_key=decode_bo_key("o_gemv_ffn", l),
        )
    weights.lm_parts = []
    for p in range(LM_N_PARTITIONS):
        lo, hi = p * LM_N_PART, min((p + 1) * LM_N_PART, VOCAB)
        w = np.zeros((LM_N_PART, EMB), F32)
        w[: hi - lo] = weights.lm_head[lo:hi]
        weights.lm_parts.append(w)
    lm_head(cache, weights, np.zeros(EMB, F32))


# ---------------------------------------------------------------------------
# Runtime preparation, prefill, decode (llama32_1b_inference.py in miniature)
# ---------------------------------------------------------------------------


def prepare_runtime(prefill_cache, decode_cache, weights, rope_lut):
    for i, lw in enumerate(weights.layers):
        lw.layer_idx = i
        lw.wq_t = np.ascontiguousarray(lw.wq.T)
        lw.wk_t = np.ascontiguousarray(lw.wk.T)
        lw.wv_t = np.ascontiguousarray(lw.wv.T)
        lw.wo_t = np.ascontiguousarray(lw.wo.T)
        lw.wgate_t = np.ascontiguousarray(lw.w_gate.T)
        lw.wup_t = np.ascontiguousarray(lw.w_up.T)
        lw.wdown_t = np.ascontiguousarray(lw.w_down.T)

    preload_prefill_weights(weights, prefill_cache, rope_lut)        # calls 1-4
    for lw in weights.layers:                                         # free originals
        for attr in ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"):
            setattr(lw, attr, _empty())

    if BUG == "placeholder-upload":
        # Freed before the decode preload to lower the memory peak, with
        # shape-preserving zero placeholders "so the BO sizes stay right".
        _free_transposed(weights, np.zeros_like)
    preload_decode_weights(weights, decode_cache)                     # calls 5-9
    _free_transposed(weights, lambda _a: _empty())


def run_prefill(weights, prefill_cache, decode_cache, rope_lut):
    k_cache = np.zeros((N_LAYERS, N_KV_HEADS, MAX_SEQ, HEAD_DIM), F32)
    v_cache = np.zeros((N_LAYERS, N_KV_HEADS, MAX_SEQ, HEAD_DIM), F32)
    x = weights.embed_table[PROMPT].astype(F32)
    kept = []
    for l in range(N_LAYERS):
        x, inter = run_transformer_block(x, weights.layers[l], rope_lut, prefill_cache, l)
        if BUG == "view-overwritten":
            kept.append((inter["k_roped"], inter["v"]))  # zero-copy views, read later
        else:
            k_cache[l, :, :SEQ] = inter["k_roped"].reshape(SEQ, N_KV_HEADS, HEAD_DIM).transpose(1, 0, 2)
            v_cache[l, :, :SEQ] = inter["v"].reshape(SEQ, N_KV_HEADS, HEAD_DIM).transpose(1, 0, 2)
    for l, (k_roped, v) in enumerate(kept):
        k_cache[l, :, :SEQ] = k_roped.reshape(SEQ, N_KV_HEADS, HEAD_DIM).transpose(1, 0, 2)
        v_cache[l, :, :SEQ] = v.reshape(SEQ, N_KV_HEADS, HEAD_DIM).transpose(1, 0, 2)
    last = rms_norm(x[SEQ - 1], weights.final_norm)
    logits = lm_head(decode_cache, weights, last)                     # call 14
    return int(np.argmax(logits)), logits, k_cache, v_cache


def run_decode_step(x, weights, decode_cache, rope_lut, k_cache, v_cache, pos):
    for l in range(N_LAYERS):
        x = run_decode_block(x, weights.layers[l], decode_cache,
                             k_cache[l], v_cache[l], pos, rope_lut)
    logits = lm_head(decode_cache, weights, rms_norm(x, weights.final_norm))
    return int(np.argmax(logits)), logits


def generate(weights, prefill_cache, decode_cache, rope_lut):
    tok, logits, k_cache, v_cache = run_prefill(weights, prefill_cache, decode_cache, rope_lut)
    tokens, all_logits = [tok], [logits]
    pos = SEQ
    for _ in range(N_DECODE):
        x = weights.embed_table[tokens[-1]].astype(F32)
        tok, logits = run_decode_step(x, weights, decode_cache, rope_lut, k_cache, v_cache, pos)
        tokens.append(tok)
        all_logits.append(logits)
        pos += 1
    return tokens, all_logits


# ---------------------------------------------------------------------------
# Reference: the same model as a plain numpy forward pass (no BOs, no reuse)
# ---------------------------------------------------------------------------


def reference_logits(w, ids, rope_lut):
    s = len(ids)
    x = w.embed_table[ids].astype(F32)
    for lw in w.layers:
        n = rms_norm(x, lw.attn_norm)
        q = (n @ lw.wq).reshape(s, N_HEADS, HEAD_DIM)
        k = (n @ lw.wk).reshape(s, N_KV_HEADS, HEAD_DIM)
        v = n @ lw.wv
        q = apply_rope(q, rope_lut[:s, None, :]).reshape(s, EMB)
        k = apply_rope(k, rope_lut[:s, None, :]).reshape(s, KV_DIM)
        res1 = attention_causal(q, k, v) @ lw.wo + x
        n2 = rms_norm(res1, lw.ffn_norm)
        x = (silu(n2 @ lw.w_gate) * (n2 @ lw.w_up)) @ lw.w_down + res1
    return rms_norm(x[-1], w.final_norm) @ w.lm_head.T


def reference_generate(w, rope_lut):
    ids, tokens, logits = list(PROMPT), [], []
    for _ in range(N_DECODE + 1):
        lg = reference_logits(w, ids, rope_lut)
        tokens.append(int(np.argmax(lg)))
        logits.append(lg)
        ids.append(tokens[-1])
    return tokens, logits


# ---------------------------------------------------------------------------


def main(argv=None):
    global BUG
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bug", default="none", choices=list(BUGS))
    ap.add_argument("--list", action="store_true", help="print every bug line and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name in BUGS:
            print(bug_line(name))
        return 0
    BUG = args.bug
    _ARG_CACHE.clear()
    print(bug_line(BUG), flush=True)

    rope_lut = make_rope_lut(MAX_SEQ)
    ref_tokens, ref_logits = reference_generate(make_weights(), rope_lut)

    weights = make_weights()
    prefill_cache = KernelCache()
    decode_cache = KernelCache()
    prefill_cache.register("rms_gemms_rope", k_rms_gemms_rope, 15)
    prefill_cache.register("o_ffn", k_o_ffn, 19)
    decode_cache.register("rms_gemv_rope",
                          make_k_rms_gemv_rope(BUG == "static-clobber"), 13)
    decode_cache.register("o_gemv_ffn", k_o_gemv_ffn, 15)
    decode_cache.register("lm_head_gemv", k_lm_head_gemv, 1 + 2 * LM_N_PARTITIONS)

    prepare_runtime(prefill_cache, decode_cache, weights, rope_lut)
    tokens, logits = generate(weights, prefill_cache, decode_cache, rope_lut)

    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(logits, ref_logits))
    ok = tokens == ref_tokens and diff < 1e-3
    print(f"reference: {'match' if ok else 'MISMATCH'} max_abs_logit_diff={diff:.3g} "
          f"reference_tokens={' '.join(map(str, ref_tokens))}")
    print("tokens: " + " ".join(str(t) for t in tokens))
    return 0


if __name__ == "__main__":
    sys.exit(main())
