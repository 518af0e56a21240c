"""The recorder `bo-doctor record` injects into a Python engine (docs/recording.md).

It wraps `load_and_run` of every class named `KernelCache` that defines it (or the class named
by BOD_RECORD_TARGET, "module:Class.method") as its module is imported, and for each call
appends what the checks need to a spool file (BOD_RECORD_SPOOL), one JSON object per line,
flushed per call: kernels as they first appear, then the call in the trace format's call-line
layout (docs/trace-format.md). `bo-doctor record` turns the spool into a trace when the program
ends, however it ends.

What it reads of the engine: the call's arguments (with the method's own defaults), the cache's
`_cached_bos` (the key's BO list, after the call), `_shared_bos` (which pool a BO came from) and
`artifacts[name].output_binary`. It never changes what the engine computes: it hashes host
arrays and BO mappings, and syncs from the device only BOs no caller holds a view of. With
BOD_RECORD_SHADOW=1 it also runs each call once more on fresh BOs of a private copy of the
cache, every slot written from the current host arrays (placeholders replaced by the arrays the
key's first call passed), and compares the outputs.
"""
import atexit
import importlib.abc
import inspect
import json
import os
import re
import sys
import threading
import time

import numpy as np

try:
    import xxhash
except ImportError as e:  # pragma: no cover - reported by sitecustomize
    raise ImportError("the recorder needs the xxhash module (Debian: python3-xxhash)") from e

_HERE = os.path.dirname(os.path.abspath(__file__))
_NO_HASH = "0" * 16
_SHADOW_KEY = "__bo_doctor_shadow__"


_CHUNK = 64 << 10


def _hex(buf):
    """The trace's hash of a byte buffer (docs/trace-format.md, Hashes): XXH3-64 up to 64 KiB,
    above that XXH3-64 of the 64 KiB chunks' XXH3-64 hashes as little-endian u64s."""
    mv = memoryview(buf).cast("B")
    n = len(mv)
    if n <= _CHUNK:
        return "%016x" % xxhash.xxh3_64_intdigest(mv)
    parts = b"".join(xxhash.xxh3_64_intdigest(mv[i:i + _CHUNK]).to_bytes(8, "little")
                     for i in range(0, n, _CHUNK))
    return "%016x" % xxhash.xxh3_64_intdigest(parts)


def _bytes_of(arr, limit=None):
    """The raw C-order bytes of an array (a copy only when it is not contiguous)."""
    a = np.asarray(arr)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    b = a.reshape(-1).view(np.uint8)
    return b if limit is None else b[:limit]


def _dtype_name(a):
    """The trace dtype of an array and its shape as the trace describes it."""
    dt = a.dtype
    if dt.name == "bfloat16":
        return "bf16", list(a.shape)
    if dt == np.float32:
        return "f32", list(a.shape)
    if dt == np.int32:
        return "i32", list(a.shape)
    if dt.itemsize == 1:
        return "i8", list(a.shape)
    return "i8", [int(a.nbytes)]  # other types: described as their bytes


class _NullProfiler:
    enabled = False

    def __getattr__(self, name):
        return lambda *a, **k: None


class _Spool:
    def __init__(self, path):
        self._f = open(path, "a", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, obj):
        line = json.dumps(obj, separators=(",", ":"), allow_nan=False)
        with self._lock:
            self._f.write(line + "\n")
            self._f.flush()


class Recorder:
    def __init__(self, spool, target=None, shadow=False):
        self.spool = spool
        self.target = target  # (module, class, method) or None: every KernelCache.load_and_run
        self.shadow = shadow
        self.n = 0
        self.kernels = {}        # (name, nargs) -> kernel entry name
        self.kernel_names = set()
        self.caches = {}         # id(cache) -> namespace name
        self.key_first = {}      # (ns, key) -> first call number
        self.bo_first = {}       # id(bo) -> first call number
        self.viewed = set()      # id(bo) of BOs some caller holds (or held) a view into
        self.bo_changed = {}     # id(bo) -> the last call that changed its bytes
        self.views = []          # (start, end, call, slot) of output views handed back
        self.first_arrays = {}   # (ns, key, slot) -> the array the key's first call passed
        self.shadow_caches = {}  # id(cache) -> its private copy for shadow runs
        self.busy = threading.local()
        self.seconds = 0.0       # time spent recording (not in the engine)
        spool.write({"kind": "header", "producer": "bo-doctor record (Python recorder)",
                     "argv": list(sys.argv), "shadow": bool(shadow)})

    # --- finding the method --------------------------------------------------------------

    def wants(self, module_name, cls):
        if self.target:
            mod, cname, meth = self.target
            return module_name == mod and cls.__name__ == cname and meth in cls.__dict__
        return cls.__name__ == "KernelCache" and "load_and_run" in cls.__dict__

    def patch_module(self, module):
        for obj in list(vars(module).values()):
            if isinstance(obj, type) and obj.__module__ == module.__name__ and \
                    self.wants(module.__name__, obj):
                meth = self.target[2] if self.target else "load_and_run"
                orig = obj.__dict__[meth]
                if getattr(orig, "_bo_doctor_wrapped", False):
                    continue
                setattr(obj, meth, self.wrap(orig))

    def wrap(self, orig):
        sig = inspect.signature(orig)
        var_pos = next((p.name for p in sig.parameters.values()
                        if p.kind == inspect.Parameter.VAR_POSITIONAL), None)
        rec = self

        def load_and_run(cache, *args, **kwargs):
            if getattr(rec.busy, "on", False) or var_pos is None:
                return orig(cache, *args, **kwargs)
            rec.busy.on = True
            try:
                return rec.call(orig, sig, var_pos, cache, args, kwargs)
            finally:
                rec.busy.on = False

        load_and_run._bo_doctor_wrapped = True
        load_and_run.__wrapped__ = orig
        load_and_run.__doc__ = orig.__doc__
        load_and_run.__name__ = orig.__name__
        return load_and_run

    # --- one call --------------------------------------------------------------------------

    def call(self, orig, sig, var_pos, cache, args, kwargs):
        t0 = time.perf_counter()
        bound = sig.bind(cache, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        name = a.get("name", args[0] if args else "?")
        inputs = list(a[var_pos])
        n_args = len(inputs)
        self.n += 1
        n = self.n
        ns = self.cache_name(cache)
        key = a.get("bo_key") or name
        cached = getattr(cache, "_cached_bos", {}) or {}
        new = key not in cached
        static = set(a.get("static_input_indices") or [])
        inter = set(a.get("intermediate_indices") or [])
        outs = a.get("output_indices")
        outs = sorted(set(outs)) if outs is not None else [n_args - 1]
        alias = dict(a.get("shared_alias") or {})
        labels = self.labels(key, ns)
        kernel = self.kernel_entry(name, inputs, cache)
        # What the engine will write: the key's first call writes every slot.
        written = [new or (i not in static and i not in inter) for i in range(n_args)]
        self.first_call_now = new
        hosts = [self.describe(i, x, n, static, labels, hash_it=True) for i, x in enumerate(inputs)]
        self.stale_view_reads(n, kernel, inputs, hosts)
        pre = {}
        if not new:
            bos = cached[key]
            for i in range(n_args):
                if not written[i] and i < len(bos):
                    pre[i] = self.bo_hash(bos[i], hosts[i]["bytes"], sync=True)
        self.snapshots = {}
        if self.shadow:
            if new:
                for i in static:
                    if 0 <= i < n_args:
                        self.first_arrays[(ns, key, i)] = inputs[i]
            # A view into a BO that this very call may overwrite (layer N's x in the pooled
            # output of the kernel it feeds): the shadow must see what the engine wrote.
            for i, h in enumerate(hosts):
                if h["source"] == "view":
                    self.snapshots[i] = np.array(inputs[i], copy=True)
        self.current_orig = orig
        self.seconds += time.perf_counter() - t0
        error = ""
        results = None
        try:
            results = orig(*bound.args, **bound.kwargs)
        except BaseException as e:
            error = "%s: %s" % (type(e).__name__, e)
            self.finish(n, ns, cache, name, kernel, key, new, static, inter, outs, alias, labels,
                        inputs, hosts, written, pre, None, error, sig, var_pos, bound)
            raise
        self.finish(n, ns, cache, name, kernel, key, new, static, inter, outs, alias, labels,
                    inputs, hosts, written, pre, results, "", sig, var_pos, bound)
        return results

    def finish(self, n, ns, cache, name, kernel, key, new, static, inter, outs, alias, labels,
               inputs, hosts, written, pre, results, error, sig, var_pos, bound):
        t0 = time.perf_counter()
        cached = getattr(cache, "_cached_bos", {}) or {}
        bos = cached.get(key)
        if bos is not None and (ns, key) not in self.key_first:
            self.key_first[(ns, key)] = n
        first = self.key_first.get((ns, key), n)
        pools = {id(bo): pk for pk, bo in (getattr(cache, "_shared_bos", {}) or {}).items()}
        out_set = set(outs)
        slots, h2d, writes = [], 0, 0
        for i, x in enumerate(inputs):
            h = hosts[i]
            s = {"role": "static" if i in static else "intermediate" if i in inter else "input",
                 "output": i in out_set, "host": h}
            if bos is None or i >= len(bos):
                s["bo"] = {"ns": ns, "pool": "unbound" if bos is not None else "key",
                           "name": key, "index": i, "bytes": 0 if bos is not None else h["bytes"],
                           "first_call": first}
                s.update({"bo_bytes": 0 if bos is not None else h["bytes"], "written": False,
                          "written_bytes": 0, "written_hash": _NO_HASH,
                          "reuse": [h["hash"], h["hash"]]})
                slots.append(s)
                continue
            bo = bos[i]
            size = int(bo.size())
            self.bo_first.setdefault(id(bo), n)
            pk = pools.get(id(bo))
            if pk is not None and pk[0] == "__alias__":
                place = {"pool": "alias", "name": str(pk[1]), "index": -1, "bytes": size}
            elif pk is not None:
                place = {"pool": "shared", "name": str(pk[0]), "index": int(pk[1]), "bytes": size}
            else:
                place = {"pool": "key", "name": key, "index": i, "bytes": size}
            place = dict({"ns": ns}, **place)
            place["first_call"] = self.bo_first[id(bo)]
            s["bo"] = place
            s["bo_bytes"] = size
            wrote = written[i] and not error.startswith(("ValueError: shared_alias",))
            nb = min(h["bytes"], size)
            if wrote:
                # The whole array written: its hash is the host hash already taken.
                wh = h["hash"] if nb == h["bytes"] else _hex(_bytes_of(x, nb))
                s.update({"written": True, "written_bytes": nb, "written_hash": wh})
                h2d += nb
                writes += 1
            else:
                s.update({"written": False, "written_bytes": 0, "written_hash": _NO_HASH})
            if wrote and nb == h["bytes"]:
                before = s["written_hash"]
            elif wrote:  # larger than its BO: the write raised, the BO holds what it held
                before = self.bo_hash(bo, h["bytes"], sync=False)
            else:
                before = pre.get(i, h["hash"])
            after = before if error else self.bo_hash(bo, h["bytes"], sync=i not in out_set)
            s["reuse"] = [before, after]
            if wrote or after != before:
                self.bo_changed[id(bo)] = n
            slots.append(s)
        line = {"type": "call", "n": n, "ns": ns, "kernel": kernel, "bo_key": key,
                "bo_key_template": key, "static": sorted(i for i in static if isinstance(i, int)),
                "intermediate": sorted(i for i in inter if isinstance(i, int)), "output": outs,
                "shared_nonstatic": bool(bound.arguments.get("shared_nonstatic")),
                "alias": {str(k): str(v) for k, v in alias.items()},
                "labels": labels, "path": self.caller(), "key_first_call": first,
                "slots": slots, "failed": bool(error), "error": error,
                "h2d": [h2d, 0], "writes": [writes, 0],
                "x": {"new_key": bool(new), "cache_id": "%x" % id(cache)}}
        if results is not None:
            self.note_views(n, results, bos, out_set)
        if self.shadow:
            self.run_shadow(line, cache, key, ns, inputs, outs, static, results, sig, var_pos,
                            bound, error)
        self.seconds += time.perf_counter() - t0
        self.spool.write({"kind": "call", "call": line})

    # --- facts ----------------------------------------------------------------------------

    def describe(self, i, x, n, static, labels, hash_it):
        arr = np.asarray(x)
        dtype, shape = _dtype_name(arr)
        zero_stride = any(st == 0 and d > 1 for st, d in zip(arr.strides, arr.shape))
        view = self.view_of(arr)
        if view:
            source, name = "view", "view of call %d slot %d" % view
        elif arr.size == 0 or zero_stride:
            source, name = "placeholder", self.binding_name(i, static, labels)
        elif i in static and self.all_zero_first(arr, n):
            # A static slot uploaded as all zeros at its key's first call: freed weights
            # passed as a zero placeholder (real weights are never all zero).
            source, name = "placeholder", self.binding_name(i, static, labels)
        elif i in static:
            source, name = "tensor", self.binding_name(i, static, labels)
        else:
            source, name = "var", self.binding_name(i, static, labels)
        return {"shape": [int(d) for d in shape], "dtype": dtype, "bytes": int(arr.nbytes),
                "hash": _hex(_bytes_of(arr)) if hash_it else _NO_HASH, "source": source,
                "name": name, "view_of_call": view[0] if view else 0,
                "x": {"numpy_dtype": str(arr.dtype), "c_contiguous": bool(arr.flags.c_contiguous),
                      "zero_strides": bool(zero_stride)}}

    def binding_name(self, i, static, labels):
        """What the slot is bound to, as far as the recorder can name it: the argument and the
        layer it belongs to (two layers' weights under one key are two bindings)."""
        layer = labels.get("layer", -1)
        return "arg%d@L%d" % (i, layer) if layer >= 0 else "arg%d" % i

    def all_zero_first(self, arr, n):
        if not self.first_call_now or arr.nbytes < 64:
            return False
        b = _bytes_of(arr)
        return not b.any()

    def view_of(self, arr):
        if arr.size == 0 or not self.views:
            return None
        p = arr.__array_interface__["data"][0]
        for start, end, call, slot, _, _ in reversed(self.views):
            if start <= p < end:
                return (call, slot)
        return None

    def stale_view_reads(self, n, kernel, inputs, hosts):
        """A kernel input that is a view whose BO changed since the call that returned it."""
        for i, h in enumerate(hosts):
            if h["source"] != "view":
                continue
            p = np.asarray(inputs[i]).__array_interface__["data"][0]
            for start, end, call, slot, digest, bo in reversed(self.views):
                if not (start <= p < end):
                    continue
                if p == start and np.asarray(inputs[i]).nbytes == end - start and \
                        h["hash"] != digest:
                    self.spool.write({"kind": "view_read", "event": {
                        "type": "view_read", "var": "arg%d" % i,
                        "reader": "call %d (%s)" % (n, kernel), "read_call": n,
                        "captured_call": call, "slot": slot,
                        "overwritten_by": self.bo_changed.get(bo, call), "by_host_write": False}})
                break

    def note_views(self, n, results, bos, out_set):
        try:
            items = list(results)
        except TypeError:
            return
        for i, r in enumerate(items):
            if i not in out_set or not isinstance(r, np.ndarray) or r.size == 0:
                continue
            p = r.__array_interface__["data"][0]
            self.views = [v for v in self.views if not (v[0] <= p < v[1])]
            bo = id(bos[i]) if bos is not None and i < len(bos) else 0
            self.views.append((p, p + r.nbytes, n, i, _hex(_bytes_of(r)), bo))
            if bo:
                self.viewed.add(bo)
        del self.views[:-4096]  # the most recent views are the ones a caller can still hold

    def bo_hash(self, bo, nbytes, sync):
        """XXH3 of the BO's first nbytes as the device holds them. Syncs from the device only
        BOs no caller holds a view of (a sync would change what such a view shows)."""
        try:
            if sync and id(bo) not in self.viewed:
                bo.sync(self.from_device())
            m = np.frombuffer(bo.map(), dtype=np.uint8)
            return _hex(m[:min(nbytes, m.size)])
        except Exception:
            return _NO_HASH

    def from_device(self):
        if not hasattr(self, "_from_device"):
            xrt = sys.modules.get("pyxrt")
            if xrt is None:
                import pyxrt as xrt
            self._from_device = xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE
        return self._from_device

    def kernel_entry(self, name, inputs, cache):
        k = (name, len(inputs))
        if k in self.kernels:
            return self.kernels[k]
        entry = name if name not in self.kernel_names else "%s/%dargs" % (name, len(inputs))
        self.kernels[k] = entry
        self.kernel_names.add(entry)
        art = (getattr(cache, "artifacts", {}) or {}).get(name)
        binary = str(getattr(art, "output_binary", "") or "")
        slots = [{"name": "arg%d" % i, "dtype": _dtype_name(np.asarray(x))[0]}
                 for i, x in enumerate(inputs)]
        self.spool.write({"kind": "kernel", "name": entry, "slots": slots, "binary": binary})
        return entry

    def cache_name(self, cache):
        ns = self.caches.get(id(cache))
        if ns is not None:
            return ns
        # The outermost name that holds it (the program's `prefill_cache`, not a helper's
        # `cache` parameter).
        found = None
        f = sys._getframe(1)
        depth = 0
        while f is not None and depth < 16:
            if os.path.dirname(os.path.abspath(f.f_code.co_filename)) != _HERE:
                here = None
                for k, v in list(f.f_locals.items()):
                    if v is cache:
                        here = k
                        break
                    if k == "self" and hasattr(v, "__dict__"):
                        for ak, av in list(vars(v).items()):
                            if av is cache:
                                here = ak
                                break
                    if here:
                        break
                if here is None:
                    for k, v in list(f.f_globals.items()):
                        if v is cache:
                            here = k
                            break
                found = here or found
            f = f.f_back
            depth += 1
        name = found or "cache%d" % len(self.caches)
        if name in self.caches.values():
            name = "%s#%d" % (name, len(self.caches))
        self.caches[id(cache)] = name
        return name

    def labels(self, key, ns):
        from bo_doctor import current_labels
        lab = current_labels()
        if os.environ.get("BOD_RECORD_LABELS") == "explicit":
            return {"phase": str(lab.get("phase", "")), "token": int(lab.get("token", -1)),
                    "layer": int(lab.get("layer", -1))}
        layer = lab.get("layer")
        if layer is None:
            m = re.search(r"(?:^|[_\-.])(?:L|layer)(\d+)(?:$|[_\-.])", str(key))
            layer = int(m.group(1)) if m else self.frame_layer()
        phase = lab.get("phase")
        if phase is None:
            phase = next((p for p in ("prefill", "decode", "preload") if p in ns.lower()), "")
        token = lab.get("token")
        return {"phase": str(phase), "token": int(token) if token is not None else -1,
                "layer": int(layer)}

    _LAYER_NAMES = ("layer_idx", "layer", "layer_id", "lidx", "l")

    def frame_layer(self):
        """The layer loop's variable in the callers' frames (layer_idx, layer, l, or an object's
        layer_idx attribute), innermost first; -1 when there is none."""
        f = sys._getframe(1)
        depth = 0
        while f is not None and depth < 8:
            if os.path.dirname(os.path.abspath(f.f_code.co_filename)) != _HERE:
                loc = f.f_locals
                for k in self._LAYER_NAMES:
                    v = loc.get(k)
                    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                        return v
                for v in loc.values():
                    for attr in ("layer_idx", "_layer_idx"):
                        a = getattr(v, attr, None) if hasattr(v, "__dict__") else None
                        if isinstance(a, int) and not isinstance(a, bool) and a >= 0:
                            return a
            f = f.f_back
            depth += 1
        return -1

    def caller(self):
        f = sys._getframe(1)
        while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _HERE:
            f = f.f_back
        if f is None:
            return ""
        path = f.f_code.co_filename
        try:
            rel = os.path.relpath(path)
            path = rel if not rel.startswith("..") else path
        except ValueError:
            pass
        return "%s:%d" % (path, f.f_lineno)

    # --- shadow run -------------------------------------------------------------------------

    def shadow_cache(self, cache):
        sh = self.shadow_caches.get(id(cache))
        if sh is None:
            sh = object.__new__(type(cache))
            sh.__dict__.update(cache.__dict__)
            sh._cached_bos = {}
            sh._shared_bos = {}
            if hasattr(cache, "profiler"):
                sh.profiler = _NullProfiler()
            self.shadow_caches[id(cache)] = sh
        return sh

    def run_shadow(self, line, cache, key, ns, inputs, outs, static, results, sig, var_pos,
                   bound, error):
        line["outputs"] = []
        for s in line["slots"]:
            s["no_reuse"] = [s["host"]["hash"], s["host"]["hash"]]
        if error or results is None:
            return
        fresh, replaced = [], set()  # replaced: slots given the key's first-call array
        for i, x in enumerate(inputs):
            arr = np.asarray(self.snapshots.get(i, x))
            first = self.first_arrays.get((ns, key, i))
            placeholder = arr.size == 0 or any(st == 0 and d > 1 for st, d in
                                               zip(arr.strides, arr.shape))
            if i in static and first is not None and (placeholder or arr.size != np.asarray(first).size):
                arr = np.asarray(first)
                replaced.add(i)
            fresh.append(arr)
        sh = self.shadow_cache(cache)
        args = dict(bound.arguments)
        args[var_pos] = tuple(fresh)
        args.update(output_indices=list(outs), static_input_indices=None,
                    intermediate_indices=None, bo_key=_SHADOW_KEY, shared_nonstatic=False,
                    shared_alias=None)
        call_args, call_kwargs = [], {}
        for p in sig.parameters.values():
            if p.name not in args:
                continue
            v = args[p.name]
            if p.kind == inspect.Parameter.VAR_POSITIONAL:
                call_args.extend(v)
            elif p.kind == inspect.Parameter.KEYWORD_ONLY or p.kind == inspect.Parameter.VAR_KEYWORD:
                if p.kind == inspect.Parameter.VAR_KEYWORD:
                    call_kwargs.update(v)
                else:
                    call_kwargs[p.name] = v
            else:
                call_args.append(v)
        call_args[0] = sh
        try:
            shadow_results = self.current_orig(*call_args, **call_kwargs)
        except Exception as e:
            line["error"] = (line["error"] + "; " if line["error"] else "") + \
                "shadow run failed: %s: %s" % (type(e).__name__, e)
            sh._cached_bos.clear()
            return
        sbos = sh._cached_bos.get(_SHADOW_KEY, [])
        h2d = 0
        for i, s in enumerate(line["slots"]):
            # Written whole: the host hash, unless a placeholder was replaced (snapshots of views
            # hold the bytes the host hash was taken of).
            pre = _hex(_bytes_of(fresh[i])) if i in replaced else s["host"]["hash"]
            post = pre
            if i < len(sbos):
                post = self.shadow_bo_hash(sbos[i], fresh[i].nbytes)
            s["no_reuse"] = [pre, post]
            h2d += fresh[i].nbytes
        line["h2d"][1] = h2d
        line["writes"][1] = len(fresh)
        for i in outs:
            if 0 <= i < len(fresh):
                line["outputs"].append(_compare(i, results[i], shadow_results[i]))
        sh._cached_bos.clear()

    def shadow_bo_hash(self, bo, nbytes):
        try:
            bo.sync(self.from_device())
            m = np.frombuffer(bo.map(), dtype=np.uint8)
            return _hex(m[:min(nbytes, m.size)])
        except Exception:
            return _NO_HASH


def _compare(slot, a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    exact = a.shape == b.shape and a.tobytes() == b.tobytes()
    try:
        x = a.astype(np.float64).reshape(-1)
        y = b.astype(np.float64).reshape(-1)
    except (TypeError, ValueError):
        x = np.frombuffer(a.tobytes(), np.uint8).astype(np.float64)
        y = np.frombuffer(b.tobytes(), np.uint8).astype(np.float64)
    m = min(x.size, y.size)
    x, y = x[:m], y[:m]
    fin = np.isfinite(x) & np.isfinite(y)
    xf, yf = x[fin], y[fin]
    nx, ny = float(np.sqrt(np.dot(xf, xf))), float(np.sqrt(np.dot(yf, yf)))
    if nx == 0 and ny == 0:
        cos = 1.0
    elif nx == 0 or ny == 0:
        cos = 0.0
    else:
        cos = float(np.dot(xf, yf) / (nx * ny))
    d = np.abs(xf - yf)
    max_abs = float(d.max()) if d.size else 0.0
    max_rel = float((d / np.maximum(np.abs(yf), 1e-12)).max()) if d.size else 0.0
    if exact:
        cos, max_abs, max_rel = 1.0, 0.0, 0.0
    return {"slot": int(slot), "bit_exact": bool(exact), "cosine": cos, "max_abs": max_abs,
            "max_rel": max_rel, "nan": [int(np.isnan(x).sum()), int(np.isnan(y).sum())],
            "inf": [int(np.isinf(x).sum()), int(np.isinf(y).sum())], "elements": int(m)}


class _Finder(importlib.abc.MetaPathFinder):
    """Patches every module as it is imported (after it ran), wherever it comes from."""

    def __init__(self, rec):
        self.rec = rec
        self.busy = set()

    def find_spec(self, fullname, path, target=None):
        if fullname in self.busy:
            return None
        self.busy.add(fullname)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self.busy.discard(fullname)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self.rec)
        return spec


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, rec):
        self._inner = inner
        self._rec = rec

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        try:
            self._rec.patch_module(module)
        except Exception as e:  # never break the user's import
            sys.stderr.write("bo-doctor record: could not patch %s: %s\n" % (module.__name__, e))

    def __getattr__(self, name):
        return getattr(self._inner, name)


_recorder = None


def install_from_environment():
    global _recorder
    if _recorder is not None:
        return _recorder
    target = None
    t = os.environ.get("BOD_RECORD_TARGET", "")
    if t:
        m = re.fullmatch(r"([\w.]+):(\w+)\.(\w+)", t)
        if not m:
            raise ValueError("BOD_RECORD_TARGET '%s': expected module:Class.method" % t)
        target = m.groups()
    spool = _Spool(os.environ["BOD_RECORD_SPOOL"])
    _recorder = Recorder(spool, target, os.environ.get("BOD_RECORD_SHADOW") == "1")
    sys.meta_path.insert(0, _Finder(_recorder))
    for mod in list(sys.modules.values()):
        if mod is not None and hasattr(mod, "__dict__"):
            try:
                _recorder.patch_module(mod)
            except Exception:
                pass
    atexit.register(lambda: spool.write({"kind": "end", "calls": _recorder.n,
                                         "recorder_seconds": round(_recorder.seconds, 6)}))
    return _recorder
