"""The shadow run (`bo-doctor record --shadow`): after each call, the same kernel once more on a
private copy of the cache with fresh BOs and every slot written from the current host arrays,
then its outputs compared with the real call's. This is the trace's `no_reuse` capability.

A slot handed a placeholder (0 elements or zero strides) never feeds it to a fresh BO: it gets
the array last really written into that slot of the key (a reference kept for that; for a
static slot, the one its key's first call passed; one of 1 MiB or more that its BO held whole
after that call is not kept but read back from the BO: `release`, `read_back`), and the call
line says so in its `x` (`shadow_fed`: [slot, the call whose array it got]). An argument that is a view of an earlier call's BO is copied before the real call, so the
shadow sees the bytes the engine was given. The copy shares the cache's loaded kernels and
device but none of its BOs (`_cached_bos`, `_shared_bos`), none of its profiler and none of its
log: the real cache's BOs, the program's arrays and its profile are never touched, nothing is
printed. Its BOs are dropped after
each run. Runs under the recorder's lock (one shadow run at a time).
"""
import inspect
import weakref

import numpy as np

from ._bos import mapped_hash
from ._capture import is_placeholder
from ._hashing import NO_HASH, STATS, array_hash
from ._records import Output

SHADOW_KEY = "__bo_doctor_shadow__"
IN_BO_MIN = 1 << 20  # static arrays from this size on are read back from their BO


def _size(x):
    return x.nbytes // max(1, x.dtype.itemsize) if isinstance(x, _InBo) else np.asarray(x).size


class _NullProfiler:
    enabled = False

    def __getattr__(self, name):
        return lambda *a, **k: None


class _InBo:
    """A static array a key's first call passed, left to the BO that holds it: its bytes are
    read back from that BO when a shadow run needs them (the recorder keeps no copy of weights
    the program frees)."""

    def __init__(self, x, host_hash):
        x = np.asarray(x)
        self.dtype, self.shape, self.nbytes, self.hash = x.dtype, x.shape, x.nbytes, host_hash


class _Kept:
    """An array of at least IN_BO_MIN bytes a call wrote into a slot, for a later placeholder
    in that slot: held by a weak reference (the recorder keeps no scratch or activation alive
    that the program dropped) with its hash. When it is gone and needed: zeros again if it was
    all zeros (a fresh scratch), else read back from the slot's BO if that still holds it."""

    def __init__(self, x, host_hash):
        a = np.asarray(x)
        self.dtype, self.shape, self.nbytes, self.hash = a.dtype, a.shape, a.nbytes, host_hash
        try:
            self.ref = weakref.ref(x)
        except TypeError:  # not weak-referenceable: held
            self.ref = lambda x=x: x


_PRIVATE = ("_cached_bos", "_shared_bos", "profiler", "verbose")

_ZERO_HASHES = {}


def _canonical(indices):
    """A set of slot indices as a tuple equal sets give alike: sorted (by repr where its
    values do not compare, as a str among ints)."""
    try:
        return tuple(sorted(indices))
    except TypeError:
        return tuple(sorted(indices, key=repr))


def zero_hash(nbytes):
    h = _ZERO_HASHES.get(nbytes)
    if h is None:
        h = _ZERO_HASHES[nbytes] = array_hash(np.zeros(nbytes, np.uint8))
    return h


class Shadow:
    def __init__(self, bos=None, host_hashes=None, every=False):
        self.bos = bos          # the recorder's BoTable (which BOs the program holds views of)
        self.hasher = host_hashes.hash if host_hashes is not None else array_hash
        self.every = every      # --shadow=all: every call; else a selection (`_run`)
        # signature (`signature`) -> the first call of it whose shadow run was harmless:
        # bit-identical outputs, every static slot left as written
        self.harmless = {}
        # (ns, key, slot) -> the static array the key's first call passed, or an _InBo for one
        # of at least IN_BO_MIN bytes that its BO held whole after that call
        self.first_arrays = {}
        self.last_real = {}     # (ns, key, slot) -> (array last really written there, its call)
        self.caches = {}        # id(cache) -> (reference to the cache, its private copy)
        # A skipped intermediate whose bytes before the call are what the key's previous call
        # left there (read by the hash that call's shadow run took, or, when it was not
        # shadowed, not read), passed the same data as then (CallCapture.left): its kind of
        # difference is "left:K", K the kind the slot had at the last call its bytes were known.
        # (ns, key, slot) -> that K.
        self.left_root = {}
        # (ns, key, slot, K): a shadow run with the slot read and of kind "left:K" was harmless,
        # or stood for a call (its signature's harmless run) where the slot was read and of that
        # kind; from then on such a slot is not read before the call when its hash is unknown
        # (but at the key's 2^k-th calls from the 8th: _capture.py LEFT_SAMPLED_FROM)
        self.left_shown = set()

    def before(self, c):
        """Keeps what the shadow run of CallCapture c needs from before the real call."""
        a = c.args
        if c.new:
            for i in a.static:
                if 0 <= i < len(a.inputs):
                    x = a.inputs[i]  # a view is copied: the recorder must not keep it alive
                    self.first_arrays[(c.ns, a.key, i)] = \
                        np.array(x, copy=True) if c.hosts[i].source == "view" else x
        # A view into a BO that this very call may overwrite (layer N's x in the pooled output
        # of the kernel it feeds): the shadow must see what the engine was given.
        for i, h in enumerate(c.hosts):
            if h.source == "view":
                c.snapshots[i] = np.array(a.inputs[i], copy=True)

    def copy_of(self, cache):
        """The cache's private copy for shadow runs. Told apart by identity, not by id() alone:
        a cache that died and left its id() to a new one gets a new copy. The copy takes the
        cache's current attributes at every shadow run (a kernel loaded or a setting changed
        since is seen), except its BOs, its profiler and its log switch: a shadow run never
        touches the program's BOs or profile and never prints."""
        got = self.caches.get(id(cache))
        sh = got[1] if got is not None and got[0]() is cache else None
        if sh is None:
            sh = object.__new__(type(cache))
            sh._cached_bos, sh._shared_bos = {}, {}
            key, caches = id(cache), self.caches

            def dropped(ref):  # the cache died: its copy (and what it shares) goes too
                if caches.get(key, (None,))[0] is ref:
                    del caches[key]
            try:
                ref = weakref.ref(cache, dropped)
            except TypeError:  # not weak-referenceable: held (its id() cannot be reused)
                ref = lambda cache=cache: cache
            self.caches[key] = (ref, sh)
        for k, v in cache.__dict__.items():
            if k not in _PRIVATE:
                sh.__dict__[k] = v
        if hasattr(cache, "profiler"):
            sh.profiler = _NullProfiler()
        if hasattr(cache, "verbose"):
            sh.verbose = False
        return sh

    def left_verified(self, ns, key, i, sampled):
        """Whether slot i, holding the key's previous leftover, may go unread before the call:
        a shadow run already showed its kind ("left:K") harmless, and `sampled` is false: the
        call is not one of the key's 2^k-th from the 8th (_capture.py LEFT_SAMPLED_FROM), where
        it is read and a change of K gives a new signature."""
        if sampled:
            return False
        k = self.left_root.get((ns, key, i))
        return k is not None and (ns, key, i, k) in self.left_shown

    def release(self, c, call):
        """After a key's first call: a large static array its BO holds whole, byte for byte
        (the hash after the dispatch is the host array's), is left to the BO."""
        a = c.args
        if not c.new or call.failed:
            return
        for i in a.static:
            k = (c.ns, a.key, i)
            x = self.first_arrays.get(k)
            if not isinstance(i, int) or not 0 <= i < len(call.slots) or x is None or \
                    isinstance(x, _InBo):
                continue
            s = call.slots[i]
            if np.asarray(x).nbytes >= IN_BO_MIN and s.written and \
                    s.written_bytes == s.host.bytes == s.bo_bytes and \
                    s.reuse[1] == s.host.hash != NO_HASH and s.host.source != "view":
                self.first_arrays[k] = _InBo(x, s.host.hash)
                last = self.last_real.get(k)
                held = last[0].ref() if last is not None and isinstance(last[0], _Kept) else \
                    last[0] if last is not None else None
                if held is x:  # the static branch of run() feeds it
                    del self.last_real[k]

    def read_back(self, c, i, kept):
        """The bytes of the static array the key's first call passed in slot i, read back from
        the real BO; None when the BO no longer holds them (a kernel wrote it since)."""
        bos = (getattr(c.cache, "_cached_bos", {}) or {}).get(c.args.key) or []
        if i >= len(bos) or int(bos[i].size()) < kept.nbytes:
            return None
        sync = self.bos is None or id(bos[i]) not in self.bos.viewed
        if mapped_hash(bos[i], kept.nbytes, sync=sync) != kept.hash:
            return None
        raw = np.frombuffer(bos[i].map(), np.uint8, count=kept.nbytes)
        return raw.copy().view(kept.dtype).reshape(kept.shape)

    def prepare(self, c, call, results, error):
        """Decides, from the call line's bytes before dispatch (its `reuse` after-hashes not
        taken yet), whether CallCapture c gets a shadow run, and keeps what that run needs in
        c.shadow_plan. True unless it is known not to get one (a call that raised or returned
        nothing gets none, but is no call a shadow run stands for either)."""
        c.shadow_plan = None
        if error or results is None:
            return True
        a = c.args
        fresh, replaced = [], {}  # replaced: slots given another call's array -> its hash
        fed = []
        known_ph = getattr(c, "shape_placeholder", None) or [None] * len(a.inputs)
        snapshots, ns, bo_key = c.snapshots, c.ns, a.key
        first_arrays, last_real = self.first_arrays, self.last_real
        static, written, hosts = a.static, c.written, c.hosts
        for i, x in enumerate(a.inputs):
            snap = snapshots.get(i) if snapshots else None
            if snap is None:
                arr = x if type(x) is np.ndarray else np.asarray(x)
                ph = known_ph[i]
            else:
                arr, ph = np.asarray(snap), None
            if ph is None:
                ph = is_placeholder(arr)
            # (the tables are asked only where a branch reads them)
            last = last_real.get((ns, bo_key, i)) if ph else None
            first = first_arrays.get((ns, bo_key, i)) if last is None and i in static else None
            if last is not None:  # a placeholder where an array was really written before
                held = last[0].ref() if isinstance(last[0], _Kept) else last[0]
                if held is None:  # gone: zeros again or read back, only if shadowed
                    arr = last[0]
                    replaced[i] = last[0].hash
                else:
                    arr = np.asarray(held)
                    replaced[i] = None
                fed.append([i, last[1]])
            elif first is not None and (ph or arr.size != _size(first)):
                if isinstance(first, _InBo):
                    arr = first  # read back from the BO only if the call is shadowed
                    replaced[i] = first.hash
                else:
                    arr = np.asarray(first)
                    replaced[i] = None
                fed.append([i, call.key_first_call])
            elif written[i] and not ph and hosts[i].source != "view":
                # what the real BO got here (a large one by weak reference: _Kept)
                last_real[(ns, bo_key, i)] = (_Kept(x, hosts[i].hash)
                                              if arr.nbytes >= IN_BO_MIN else x, c.n)
            fresh.append(arr)
        # What the no-reuse engine writes into each slot's fresh BO (known without running it):
        # the host hash, or the hash of the array a placeholder is replaced by.
        pre = [(replaced[i] or self.hasher(fresh[i])) if i in replaced else s.host.hash
               for i, s in enumerate(call.slots)]
        sig = self.signature(c, call, fresh, pre)
        like = self.harmless.get(sig)
        # Not shadowed: an earlier call of the same kernel, binary, shapes and kind of
        # before-state difference gave bit-identical outputs and left its statics as written.
        skip = not self.every and c.key_call > 2 and like is not None
        if skip:  # that harmless run (of another key, maybe) stands for these leftovers too
            for i, kind in c.left_read.items():
                self.left_shown.add((c.ns, a.key, i, kind))
        c.shadow_plan = (fresh, fed, pre, sig, like if skip else None)
        return not skip

    def run(self, c, call, results, error):
        """Runs CallCapture c again on fresh BOs, as `prepare` planned, and adds the `no_reuse`
        fields to its call line (placeholders: the host hashes, when the real call raised)."""
        try:
            self._run(c, call, results, error)
        finally:
            self.release(c, call)

    def _run(self, c, call, results, error):
        a = c.args
        call.outputs = []
        plan = getattr(c, "shadow_plan", None)
        planned = not error and results is not None and plan is not None
        if planned:
            fresh, fed, pre, sig, like = plan
            c.shadow_plan = None
            if fed and call.x is not None and hasattr(call.x, "shadow_fed"):
                call.x.shadow_fed = fed
            if like is not None:  # not shadowed: the before-hashes are what the no-reuse
                for s, p in zip(call.slots, pre):  # engine would write
                    s.no_reuse = [p, NO_HASH]
                call.shadow_like = like
                STATS["shadow_skipped"] += 1
                return
        for s in call.slots:
            s.no_reuse = [s.host.hash, s.host.hash]
        if not planned:
            return
        for i, f in enumerate(fresh):
            if isinstance(f, _Kept) and f.hash == zero_hash(f.nbytes):
                fresh[i] = np.zeros(f.shape, f.dtype)
            elif isinstance(f, (_InBo, _Kept)):
                back = self.read_back(c, i, f)
                if back is None:
                    by = dict(fed).get(i, call.key_first_call)
                    call.error = (call.error + "; " if call.error else "") + \
                        "shadow run not made: slot %d's BO no longer holds the bytes " \
                        "call %d passed, and the program freed them" % (i, by)
                    return
                fresh[i] = back
        sh = self.copy_of(c.cache)
        try:
            shadow_results = self.call(c, sh, fresh)
        except Exception as e:
            call.error = (call.error + "; " if call.error else "") + \
                "shadow run failed: %s: %s" % (type(e).__name__, e)
            sh._cached_bos.clear()
            return
        STATS["shadowed"] += 1
        sbos = sh._cached_bos.get(SHADOW_KEY, [])
        h2d = 0
        for i, s in enumerate(call.slots):
            post = mapped_hash(sbos[i], fresh[i].nbytes, sync=True) if i < len(sbos) else pre[i]
            s.no_reuse = [pre[i], post]
            h2d += fresh[i].nbytes
        call.h2d[1] = h2d
        call.writes[1] = len(fresh)
        for i in a.outs:
            if 0 <= i < len(fresh):
                call.outputs.append(compare(i, results[i], shadow_results[i]))
        # The shadow's fresh BOs and arrays are dropped now, not kept until the next call.
        sh._cached_bos.clear()
        del fresh, shadow_results, sbos
        if all(o.bit_exact for o in call.outputs) and not any(
                s.role == "static" and s.no_reuse[0] != s.no_reuse[1] for s in call.slots):
            self.harmless.setdefault(sig, c.n)
            for i, kind in c.left_read.items():
                self.left_shown.add((c.ns, a.key, i, kind))
        else:  # not harmless: a leftover slot is read again before the key's next calls
            for i in c.left_unread:
                self.left_shown.discard((c.ns, a.key, i, self.left_root[(c.ns, a.key, i)]))

    def signature(self, c, call, fresh, pre):
        """What a shadow run's outcome depends on beyond the data: the kernel (its arity
        variant) and binary, the declared roles, each slot's shape, dtype and bytes, and how its
        bytes before dispatch differ from what the no-reuse engine writes there: per differing
        slot its role, pool and kind (other bytes, unread, other size)."""
        a = c.args
        art = (getattr(c.cache, "artifacts", {}) or {}).get(a.name)
        binary = str(getattr(art, "output_binary", "") or "")
        shapes = tuple((tuple(h.shape), h.dtype, h.bytes, h.source == "placeholder")
                       for h in c.hosts)
        diffs = []
        left = getattr(c, "left", ())
        c.left_read, c.left_unread = {}, []
        left_root, ns, bo_key = self.left_root, c.ns, a.key
        for i, s in enumerate(call.slots):
            kind = ""
            before = s.reuse[0]
            if before == NO_HASH and i in left:
                # not read: what the key's previous call left, a kind shown harmless before
                root = left_root[(ns, bo_key, i)]
                kind = "left:" + root
                c.left_unread.append(i)
            else:
                if before == NO_HASH:
                    kind = "unread"
                elif before != pre[i]:
                    kind = "bytes"
                if kind != "unread" and not s.written and s.role == "intermediate":
                    # the slot's kind whenever its bytes are known: a later leftover's root
                    k = (ns, bo_key, i)
                    if i in left and left_root.get(k) == kind:
                        c.left_read[i] = kind  # read, and the leftover kept its kind
                        left_root[k] = kind
                        kind = "left:" + kind
                    else:
                        left_root[k] = kind
            if s.bo_bytes != fresh[i].nbytes:
                kind += "+size"
            if kind:
                diffs.append((i, s.role, s.bo.pool, kind))
        return (call.kernel, binary, _canonical(a.static), _canonical(a.inter), tuple(a.outs),
                shapes, tuple(diffs))

    @staticmethod
    def call(c, sh, fresh):
        """The engine's own method on the copy: the call's arguments, the fresh arrays, one
        private bo_key, nothing static, intermediate, pooled or aliased."""
        args = dict(c.args.bound.arguments)
        args[c.var_pos] = tuple(fresh)
        args.update(output_indices=list(c.args.outs), static_input_indices=None,
                    intermediate_indices=None, bo_key=SHADOW_KEY, shared_nonstatic=False,
                    shared_alias=None)
        call_args, call_kwargs = [], {}
        for p in c.sig.parameters.values():
            if p.name not in args:
                continue
            v = args[p.name]
            if p.kind == inspect.Parameter.VAR_POSITIONAL:
                call_args.extend(v)
            elif p.kind == inspect.Parameter.VAR_KEYWORD:
                call_kwargs.update(v)
            elif p.kind == inspect.Parameter.KEYWORD_ONLY:
                call_kwargs[p.name] = v
            else:
                call_args.append(v)
        call_args[0] = sh
        return c.orig(*call_args, **call_kwargs)


def compare(slot, a, b):
    """The `outputs` entry of one output slot: the real call's array a against the shadow's b."""
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
    return Output(int(slot), bool(exact), cos, max_abs, max_rel,
                  [int(np.isnan(x).sum()), int(np.isnan(y).sum())],
                  [int(np.isinf(x).sum()), int(np.isinf(y).sum())], int(m))
