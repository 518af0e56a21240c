"""The capture of one `load_and_run` call: its arguments bound with the method's own signature,
the host arrays described and hashed, then, after the engine ran, each slot's BO placement and
its bytes before and after the dispatch: the trace's call line (docs/trace-format.md §5, §6).

A CallCapture is created per call and holds that call's state only. The state shared between
calls (numbers, first calls, BO tables) is the Recorder's; `before` and `after` run under its
lock. Nothing here writes to an argument, a BO or the cache: arrays and BO mappings are read
(hashed), and BOs are synced from the device only where no caller holds a view (_bos.py). The
views the engine returned are checked before each call and hashed again after it (_views.py).
With --shadow, whether the call is shadowed is decided (_shadow.py `prepare`) between the bytes
before the dispatch and those after it, which a call not shadowed reads as without --shadow.
"""
import inspect
import operator
from dataclasses import dataclass

import numpy as np

from ._bos import BoTable
from ._frames import iteration_key, iteration_keys, loops_and_caller
from . import _hashing
from ._hashing import NO_HASH, STATS, array_hash, bytes_of
from ._labels import LAYER_FRAMES
from ._written import MIN_TRACKED
from ._records import Call, CallX, Host, HostX, Labels, Placement, Slot, host_text_around
from ._records import _native as _records_native

# A skipped static slot's BO is read again after the dispatch at its key's first READ_FIRST
# calls, and spot-checked (BoTable.spot; read whole only where that finds a difference) at the
# key's other calls up to SAMPLED_FIRST and at its 2^k-th calls (docs/recording.md, "Reading
# only what a check needs"). A call's `sampled` is one of NOT_SAMPLED, SPOT and READ.
READ_FIRST = 2
SAMPLED_FIRST = 3
NOT_SAMPLED, SPOT, READ = 0, 1, 2
# With --shadow, a skipped intermediate holding the key's previous leftover, of a kind a shadow
# run showed harmless, is read again before the call at the key's 2^k-th calls from the
# LEFT_SAMPLED_FROM-th on (_shadow.py `left_verified`). Its 2nd and 3rd calls read it anyway
# (their hashes are known from the shadow runs of the key's first two calls).
LEFT_SAMPLED_FROM = 8


def _native(name):
    """The native module's function `name` (_fast.py), or None without the module."""
    from . import _fast
    m = _fast.module()
    if m is None:
        return None
    m.set_ndarray(np.ndarray)
    return getattr(m, name)


_FACTS = _native("facts")
_DESCRIBE = _native("describe")
_SLOTS = _native("slots")  # slot_loop's
_AFTER = _native("after")  # after_loop's
_PRE = _native("pre_reads")  # pre_loop's
# With the native serializer a Host's JSON text is never used: describe keeps none (a HostX,
# never changed once made, is shared per value).
_NATIVE_LINES = _records_native is not None
_HOSTX = {}  # (numpy dtype name, c_contiguous, zero_strides) -> HostX
_DTYPES = {}  # numpy dtype -> (its trace name or None for "as its bytes", str(dtype))
# A host's fields but its hash -> (its JSON text before the hash, after it, its HostX)
_AROUND = {}


def _dtype_names(dt):
    try:
        got = _DTYPES.get(dt)
    except TypeError:  # a dtype that cannot be a key: not kept
        got = None
    if got is None:
        if dt.name == "bfloat16":
            name = "bf16"
        elif dt == np.float32:
            name = "f32"
        elif dt == np.int32:
            name = "i32"
        elif dt.itemsize == 1:
            name = "i8"
        else:
            name = None
        got = (name, str(dt))
        try:
            _DTYPES[dt] = got
        except TypeError:
            pass
    return got


def _dtype_info(dt):
    """(trace name or None, str(dtype), hasobject) of a dtype: what the native describe asks
    once per dtype object."""
    names = _dtype_names(dt)
    return names[0], names[1], bool(dt.hasobject)


def _make_hostx(numpy_dtype, c_contiguous, zero_strides):
    """A HostX, kept per value in _HOSTX (the native describe looks there first)."""
    if len(_HOSTX) >= 4096:
        _HOSTX.clear()
    hx = _HOSTX[(numpy_dtype, c_contiguous, zero_strides)] = HostX(numpy_dtype, c_contiguous,
                                                                  zero_strides)
    return hx


def dtype_name(arr):
    """The trace dtype of an array and its shape as the trace describes it (a dtype the format
    has no name for is described as its bytes)."""
    name = _dtype_names(arr.dtype)[0]
    if name is None:
        return "i8", [int(arr.nbytes)]
    return name, list(arr.shape)


def zero_strides(arr):
    return any(st == 0 and d > 1 for st, d in zip(arr.strides, arr.shape))


def is_placeholder(arr):
    """0 elements or a zero stride: an array that stands in for data the program freed."""
    return arr.size == 0 or zero_strides(arr)


@dataclass
class Arguments:
    """A call's arguments as the engine reads them (the method's defaults applied)."""
    bound: inspect.BoundArguments
    name: object
    inputs: list
    key: object          # bo_key, or the kernel name
    static: set
    inter: set
    outs: list           # output_indices sorted, or the last slot
    alias: dict
    shared_nonstatic: bool


def slot_index(i):
    """A slot index as an int when it is an integer of any kind (numpy's too: the engine's set
    lookups treat np.int64(1) as 1); anything else as given."""
    if isinstance(i, bool):
        return i
    try:
        return operator.index(i)
    except TypeError:
        return i


_INT_ONLY = frozenset((int,))
_NOT_PASSED = ("placeholder", "view")  # host sources that are not data the program passed


def indices(v):
    """An index list as passed (a list, set, tuple, numpy array, dict's keys): its elements as
    slot_index gives them; [] for None or anything that is not iterable."""
    if v is None:
        return []
    t = type(v)
    if (t is list or t is tuple or t is set or t is frozenset) and _INT_ONLY >= set(map(type, v)):
        return list(v)  # exact ints: slot_index gives each as it is (the usual call, at C speed)
    try:
        return [slot_index(i) for i in v]
    except TypeError:
        return []


def ints(values):
    """The integer indices of a collection, sorted (the trace keeps only those: an index of
    another type is the engine's to refuse)."""
    return sorted(i for i in values if type(i) is int)


def key_text(key):
    """A bo_key as the trace's text: a str as is; any other key the engine accepts (an int, a
    tuple) as its repr and its type, so two keys the engine tells apart stay apart."""
    if isinstance(key, str):
        return str.__str__(key)
    try:
        r = repr(key)
    except Exception:
        r = "?"
    return "%s (%s)" % (r, type(key).__name__)


_LAYOUTS = {}  # id(signature) -> (signature, its layout for _fast_arguments or None)
_P = inspect.Parameter


def _layout(sig):
    """(names of the positional parameters, the *args name, ((keyword-only name, default),
    ...)) of a signature of that shape (`load_and_run`'s), else None."""
    got = _LAYOUTS.get(id(sig))
    if got is not None and got[0] is sig:
        return got[1]
    params = list(sig.parameters.values())
    k = 0
    while k < len(params) and params[k].kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
        k += 1
    layout = None
    if 0 < k < len(params) and params[k].kind == _P.VAR_POSITIONAL and \
            all(p.kind == _P.KEYWORD_ONLY for p in params[k + 1:]):
        layout = (tuple(p.name for p in params[:k]), params[k].name,
                  tuple((p.name, p.default) for p in params[k + 1:]))
    _LAYOUTS[id(sig)] = (sig, layout)
    return layout


def _fast_arguments(layout, cache, args, kwargs):
    """The arguments dict sig.bind + apply_defaults gives, for a call that passes every
    positional parameter by position and only keyword-only ones by name, each at most once;
    None for any other call (bound the slow way, which also raises the method's TypeError)."""
    pos, var, kwonly = layout
    n = len(pos) - 1
    if len(args) < n:
        return None
    a = {pos[0]: cache}
    for name, v in zip(pos[1:], args):
        a[name] = v
    a[var] = args[n:]
    used = 0
    for name, default in kwonly:
        if name in kwargs:
            a[name] = kwargs[name]
            used += 1
        elif default is _P.empty:
            return None
        else:
            a[name] = default
    return a if used == len(kwargs) else None


def bind(sig, var_pos, cache, args, kwargs):
    """The call's Arguments; raises TypeError when the method does not take them."""
    layout = _layout(sig)
    a = _fast_arguments(layout, cache, args, kwargs) if layout is not None else None
    if a is not None:
        bound = inspect.BoundArguments(sig, a)
    else:
        bound = sig.bind(cache, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
    name = a.get("name", args[0] if args else "?")
    inputs = list(a[var_pos])
    outs = a.get("output_indices")
    key = a.get("bo_key")
    alias = a.get("shared_alias")
    try:
        alias = {slot_index(k): v for k, v in alias.items()} if alias else {}
    except (AttributeError, TypeError):
        alias = {}
    return Arguments(bound, name, inputs, name if key is None else key,
                     set(indices(a.get("static_input_indices"))),
                     set(indices(a.get("intermediate_indices"))),
                     ints(set(indices(outs))) if outs is not None else [len(inputs) - 1],
                     alias, bool(a.get("shared_nonstatic")))


def pre_loop(hosts, bos, written, static, inter, outs, new_data, pooled, lazy, left_ok, reuse,
             table, left_verified, ns, key, sampled, pre, unread_before, left, assumed_before):
    """The hashes of the BOs of the slots the engine does not write (or writes with a
    placeholder), before the call, into pre (slot -> hash; NO_HASH: not read, in
    unread_before); returns how many known hashes it reused. lazy: a skipped intermediate that
    passed the data the key's previous call passed is not read; left_ok (--shadow): it is
    noted in `left` and not read once left_verified(ns, key, i, sampled) (sampled: one of the
    key's calls where a leftover is read again, LEFT_SAMPLED_FROM) says its kind was shown
    harmless, or, when its hash is known (reuse), only noted in `left`; reuse: a hash the BO's
    last call left is taken as it is. Appends to
    assumed_before the slots whose known hash was carried over unread. The native `pre_reads`
    (fast_bos.cpp) does the same."""
    reused = 0
    for i in range(min(len(hosts), len(bos))):
        # A placeholder's BO is hashed whole: what it holds is what the kernel reads,
        # whether the slot is skipped or written with 0 bytes.
        h = hosts[i]
        ph = h.source == "placeholder"
        if written[i] and not ph:
            continue
        bo = bos[i]
        extent = int(bo.size()) if ph else h.bytes
        # The hash the BO's last call left (None: not known)
        known = table.known_hash(bo, extent)
        if not ph and (known is None or left_ok and reuse) and i in inter and \
                i not in static and i not in outs and i not in new_data and \
                h.source != "view" and id(bo) not in pooled and (lazy or left_ok):
            if known is not None:
                # With --shadow: what the key's previous call left there, its hash known (that
                # call's bytes after the dispatch were read): a leftover read (_shadow.py)
                left.add(i)
            elif lazy:
                # A skipped intermediate passed the data the key's previous call
                # passed there: no check reads its bytes before the call.
                pre[i] = NO_HASH
                unread_before.append(i)
                continue
            else:
                # With --shadow: it holds what the key's previous call (not shadowed)
                # left there, a kind of difference of its own (_shadow.py `left`),
                # not read once a shadow run showed that kind harmless.
                left.add(i)
                if left_verified(ns, key, i, sampled):
                    pre[i] = NO_HASH
                    unread_before.append(i)
                    continue
        if known is not None and id(bo) in table.assumed:
            assumed_before.append(i)  # carried over, not read
        if known is not None and reuse:  # `hash` with reuse, without a second lookup
            reused += 1
            pre[i] = known
        else:
            pre[i] = table.hash(bo, extent, sync=True)
    return reused


def slot_loop(inputs, hosts, bos, static, inter, out_set, written, pre, alias_error, ns, keytext,
              first, n, key_places, places, firsts, pools=None, placement=None, bo_hash=None,
              sizes=()):
    """The call's Slots (after the engine ran): (slots, bound, h2d, writes), `bound` the
    (index, Slot, BO, extent hashed, written, placeholder) of the slots with a BO. key_places
    (slot -> the key's own Placement), places (the Placements by value) and firsts (each BO's
    first call) are the recorder's, updated here; pools: id(bo) -> its key in the cache's
    `_shared_bos`; placement(pool_key, i, size, 0): a pooled BO's Placement; bo_hash(bo, n,
    sync): a BO's hash; sizes: int(bo.size()) of the first slots' BOs, already asked. The
    native `slots` (fast_slots.cpp) does the same for a call with no pooled BO and no array
    larger than its BO, and for any other returns the sizes it asked before declining."""
    slots, bound, h2d, writes = [], [], 0, 0
    n_bos = len(bos) if bos is not None else 0
    for i, x in enumerate(inputs):
        h = hosts[i]
        role = "static" if i in static else "intermediate" if i in inter else "input"
        if i >= n_bos:
            size = 0 if bos is not None else h.bytes
            pool = "unbound" if bos is not None else "key"
            slots.append(Slot(role, i in out_set, h, Placement(ns, pool, keytext, i, size,
                                                              first),
                              size, False, 0, NO_HASH, [h.hash, h.hash]))
            continue
        bo = bos[i]
        size = sizes[i] if i < len(sizes) else int(bo.size())
        pool_key = pools.get(id(bo)) if pools else None
        # The BO's first call by its identity in the trace (ns, pool, name, index), as the
        # trace reader numbers BOs (an id() a freed BO left to a new one says nothing).
        if pool_key is None:  # the key's own BO: one Placement per value, kept
            place = key_places[i] if i < len(key_places) else None
            if place is None or place.bytes != size:
                bo_first = firsts.setdefault((ns, "key", keytext, i), n)
                mk = (ns, keytext, i, size, bo_first)
                place = places.get(mk)
                if place is None:
                    place = places[mk] = Placement(ns, "key", keytext, i, size, bo_first)
                key_places.extend([None] * (i + 1 - len(key_places)))
                key_places[i] = place
        else:
            p = placement(pool_key, i, size, 0)
            place = Placement(p.ns, p.pool, p.name, p.index, size,
                              firsts.setdefault((p.ns, p.pool, p.name, p.index), n))
        wrote = written[i] and not alias_error
        hb = h.bytes
        nb = hb if hb <= size else size
        if wrote:
            # The whole array written: its hash is the host hash already taken.
            wh = h.hash if nb == hb else array_hash(x, nb)
            h2d += nb
            writes += 1
        else:
            nb, wh = 0, NO_HASH
        ph = h.source == "placeholder"
        extent = size if ph else hb
        if ph and i in pre:  # the BO as it was: a placeholder writes at most 0 bytes
            before = pre[i]
        elif wrote and nb == hb:
            before = wh
        elif wrote:  # larger than its BO: the write raised, the BO holds what it held
            before = bo_hash(bo, hb, sync=False)
        else:
            before = pre.get(i, h.hash)
        s = Slot(role, i in out_set, h, place, size, wrote, nb, wh, [before, NO_HASH])
        slots.append(s)
        bound.append((i, s, bo, extent, wrote, ph))
    return slots, bound, h2d, writes


def after_loop(bound, out_set, static, lazy_call, sampled, error, table, missed_open, ns, bo_key,
               assumed, unread_after, assumed_before, n):
    """Each bound slot's bytes after the dispatch (its Slot's reuse[1]), read or not as a check
    needs them, and remembered in the BO table: {id(bo): (this call wrote it, its kernel changed
    it)}. bound: slot_loop's; lazy_call: the call's slots may be left unread; missed_open(ns,
    key, i): whether missed-static reads slot i after the dispatch (None: not with --shadow);
    sampled: the call's NOT_SAMPLED, SPOT or READ. Appends to assumed (static slots not read
    again, or spot-checked) and unread_after. The native `after` (fast_slots.cpp) does the
    same."""
    changes = {}  # id(bo) -> (this call wrote it, its kernel changed it)
    for i, s, bo, extent, wrote, ph in bound:
        reuse = s.reuse
        before = reuse[0]
        lazy = lazy_call and i not in out_set and s.bo.pool == "key" and \
            s.host.source != "view"
        if lazy and i in static and not wrote and sampled != READ and before != NO_HASH and \
                (sampled == NOT_SAMPLED or _spot(table, bo, extent, before)):
            # A skipped static slot between its key's sampled calls, or whose spot check found
            # what was read before: not read again; its bytes are taken to be those read before
            # (docs/recording.md).
            after = before
            assumed.append(i)
        elif lazy and not ph and i not in static and \
                not (missed_open is not None and missed_open(ns, bo_key, i)):
            # An input or intermediate the call does not return: read before the next call
            # that needs its bytes, not now.
            after = NO_HASH
            unread_after.append(i)
        elif error:
            after = before
        elif wrote or i not in static:
            after = table.hash(bo, extent, sync=i not in out_set)
        else:  # a static slot the call did not write: its chunks kept for its spot checks
            after = table.hash(bo, extent, sync=i not in out_set, keep=True)
        reuse[1] = after
        if not error and after != NO_HASH:
            table.remember(bo, extent, after)
            if i in assumed or i in assumed_before and after == before and \
                    sampled == NOT_SAMPLED:
                table.assumed.add(id(bo))
        kernel_changed = before != NO_HASH and after != NO_HASH and after != before
        if wrote or kernel_changed:
            table.changed[id(bo)] = n
        k = id(bo)
        got = changes.get(k)
        changes[k] = (wrote, kernel_changed) if got is None else \
            (got[0] or wrote, got[1] or kernel_changed)
    return changes


def _spot(table, bo, nbytes, before):
    """table.spot(bo, nbytes, before); False (read it whole) for a table without spot checks."""
    spot = getattr(table, "spot", None)
    return spot is not None and spot(bo, nbytes, before)


class CallCapture:
    def __init__(self, orig, sig, var_pos, cache, args):
        self.orig, self.sig, self.var_pos, self.cache, self.args = orig, sig, var_pos, cache, args
        self.snapshots = {}  # slot -> copy of a view argument, for the shadow run
        self.records = []    # spool records of this call before its call line
        self.events = []     # its view_read records, after its call line (they name it)

    def before(self, rec, start=None):
        """Numbers the call and describes its arguments, before the engine runs it. start: a
        frame of the calling thread's stack from which its program frames are looked for (the
        recorder's own frames are skipped wherever they are; by default this one's caller)."""
        rec.bos.reading()
        try:
            self._before(rec, start)
        finally:
            rec.bos.done()

    def _before(self, rec, start=None):
        a, cache = self.args, self.cache
        self.n = n = rec.next_number()
        self.thread = rec.thread_index()
        # The snapshots retaken before anything asks which views are still alive.
        self.loops, self.caller_frame = loops_and_caller(LAYER_FRAMES, start)
        self.ns = rec.cache_name(cache)
        self.new = a.key not in (getattr(cache, "_cached_bos", {}) or {})
        self.labels = Labels(*rec.labels(a.key, self.ns, self.loops))
        layer = self.labels.layer  # binding_name's format
        self.arg_name = "arg%%d@L%d" % layer if layer >= 0 else "arg%d"
        self.kernel = rec.kernel_entry(a.name, a.inputs, cache, self.records)
        n_args = len(a.inputs)
        # What the engine will write: the key's first call writes every slot.
        self.written = [self.new or (i not in a.static and i not in a.inter) for i in range(n_args)]
        views = rec.views
        self.arg_views = [None] * n_args  # the View each argument is (or lies in), by describe
        # is_placeholder of each argument as describe read it (None: not read)
        self.shape_placeholder = [None] * n_args
        b0 = STATS["bytes_hashed"]
        self.hosts = self.describe_all(rec)
        STATS["hashed_host"] += STATS["bytes_hashed"] - b0
        # Bytes the program wrote itself since the last call: in the views this call can
        # overwrite (of its BOs), reads (its arguments) or report held (overwritten ones); the
        # others are looked at again before a call that binds their BO (_views.py).
        if views.views:  # (no view tracked: nothing to hash, read or report)
            only = None
            if rec.lazy_after and not rec.running and not self.new:
                only = {id(bo) for bo in cache._cached_bos[a.key]}
                only.update(v.bo for v in self.arg_views if v is not None)
            views.rehash(only=only)
            if self.arg_views.count(None) < n_args:  # an argument is (or lies in) a view
                self.events += views.reads(n, self.kernel, a.inputs, self.written,
                                           self.arg_views)
            if views.stale:  # overwritten views not reported yet
                self.events += views.held(iteration_keys(self.loops),
                                          "the program (which still held it at call %d)" % n,
                                          thread=self.thread)
        else:
            views.prune()
        views.note_arguments(self.ns, a.key, a.inputs)
        # Which calls of the key this is, and what each slot was passed at the key's previous
        # call (what intermediate-read compares: placeholders and views are not data passed).
        kc = rec.key_calls[(self.ns, a.key)] = rec.key_calls.get((self.ns, a.key), 0) + 1
        self.key_call = kc
        self.sampled = READ if kc <= READ_FIRST else \
            SPOT if kc <= SAMPLED_FIRST or (kc & (kc - 1)) == 0 else NOT_SAMPLED
        self.lazy = rec.lazy and not rec.running  # another thread's call may share a BO
        self.lazy_after = rec.lazy_after and not rec.running
        new_data = self.new_data = set()
        hosts = self.hosts
        prev = rec.passed.get((self.ns, a.key))  # one list per key, one lookup per call
        if prev is None:
            prev = rec.passed[(self.ns, a.key)] = []
        if len(prev) < len(hosts):
            prev.extend([None] * (len(hosts) - len(prev)))
        for i, h in enumerate(hosts):
            if h.source in _NOT_PASSED:
                continue
            hh, p = h.hash, prev[i]
            if p is not None and p != hh:
                new_data.add(i)
            prev[i] = hh
        b0 = STATS["bytes_hashed"]
        self.pre = {}
        self.unread_before, self.unread_after, self.assumed = [], [], []
        self.assumed_before = []
        # Skipped intermediates whose before-state is the key's previous leftover (--shadow)
        self.left = set()
        left_ok = bool(rec.shadow) and not rec.shadow.every and self.lazy_after and \
            not self.new
        if not self.new:
            bos = cache._cached_bos[a.key]
            pooled = {id(bo) for bo in (getattr(cache, "_shared_bos", {}) or {}).values()}
            outs = set(a.outs)
            loop_args = (self.hosts, bos, self.written, a.static, a.inter, outs, self.new_data,
                         pooled, bool(self.lazy), bool(left_ok), not rec.running, rec.bos,
                         rec.shadow.left_verified if rec.shadow else None, self.ns, a.key,
                         kc >= LEFT_SAMPLED_FROM and (kc & (kc - 1)) == 0, self.pre,
                         self.unread_before, self.left,
                         self.assumed_before)
            reused = None
            if _PRE is not None and type(bos) is list and type(a.static) is set and \
                    type(a.inter) is set and type(self.written) is list and \
                    type(rec.bos) is BoTable:
                reused = _PRE(*loop_args, NO_HASH)  # pre_loop's, natively
            if reused is None:
                reused = pre_loop(*loop_args)
            STATS["bo_hashes_reused"] += reused
            rec.bos.forget(bos)
        STATS["hashed_bo_before"] += STATS["bytes_hashed"] - b0

    def binding_name(self, i):
        """What the slot is bound to, as far as the recorder can name it: the argument and the
        layer it belongs to (two layers' weights under one key are two bindings)."""
        layer = self.labels.layer
        return "arg%d@L%d" % (i, layer) if layer >= 0 else "arg%d" % i

    def describe_all(self, rec):
        """The hosts of all the call's arguments: in one native call (_fast.py; it looks for
        views in the view table's indexes, and hashes an array of MIN_TRACKED bytes or more
        through HostHashes.hash as describe does), which leaves to `describe` what it does not
        do exactly as describe does (not an exact ndarray, an object dtype, an array that is
        not C-contiguous, a static array at its key's first call); else each by `describe`."""
        a = self.args
        inputs, layer = a.inputs, self.labels.layer
        if _DESCRIBE is None or not _NATIVE_LINES or _hashing._lib is None or \
                type(a.static) is not set or type(layer) is not int or \
                not -(1 << 62) < layer < 1 << 62:
            return [self.describe(rec, i, x) for i, x in enumerate(inputs)]
        views = rec.views
        hosts, shapes, found, hashed = _DESCRIBE(
            inputs, a.static, bool(self.new), layer, MIN_TRACKED,
            views if views.views else None, _dtype_info, _HOSTX, _make_hostx, Host,
            rec.host_hashes.hash)
        STATS["bytes_hashed"] += hashed
        for i, h in enumerate(hosts):
            if h is None:
                hosts[i] = self.describe(rec, i, inputs[i])
            else:
                self.shape_placeholder[i] = shapes[i]
                self.arg_views[i] = found[i]
        return hosts

    def describe(self, rec, i, x):
        """The host side of slot i (§6 `host`). An argument that is no array of plain data
        (None, an object array, something numpy cannot take) is described as 0 bytes named
        after its type: the engine refuses it with an error of its own, which the call records."""
        lib = _hashing._lib
        facts = _FACTS(x, MIN_TRACKED if lib is not None else 0) if _FACTS is not None else None
        if facts is not None:
            dt, nbytes, shape, addr, cc, zs, size, small = facts
            arr, plain = x, not dt.hasobject
        else:
            try:
                arr = x if type(x) is np.ndarray else np.asarray(x)
                dt = arr.dtype
                plain = not dt.hasobject
            except Exception:
                plain = False
        if not plain:
            return Host([0], "i8", 0, array_hash(np.zeros(0, np.uint8)), "var",
                        "%s (%s: not an array the recorder can read)" % (self.binding_name(i),
                                                                          type(x).__name__), 0,
                        HostX(type(x).__name__, False, False))
        try:
            names = _DTYPES[dt]
        except (KeyError, TypeError):
            names = _dtype_names(dt)
        if facts is None:
            nbytes, shape, size = arr.nbytes, list(arr.shape), arr.size
            zs = 0 in arr.strides and zero_strides(arr)
            addr = arr.__array_interface__["data"][0]
            cc, small = bool(arr.flags.c_contiguous), None
            if cc and nbytes < MIN_TRACKED and lib is not None:  # HostHashes.hash's quick_hash
                small = lib.bod_hash_bytes(addr, nbytes)
        if names[0] is None:  # a dtype the format has no name for: described as its bytes
            dtype, shape = "i8", [int(nbytes)]
        else:
            dtype = names[0]
        self.shape_placeholder[i] = size == 0 or bool(zs)
        v = self.arg_views[i] = rec.views.find(arr, addr) if size and rec.views.views else None
        if v is not None:
            source, name, view = "view", "view of call %d slot %d" % (v.call, v.slot), v.call
        else:
            view = 0
            static = i in self.args.static
            name = self.arg_name % i
            if size == 0 or zs:
                source = "placeholder"
            elif static and self.new and nbytes >= 64 and not bytes_of(arr).any():
                # A static slot uploaded as all zeros at its key's first call: freed weights
                # passed as a zero placeholder (real weights are never all zero).
                source = "placeholder"
            else:
                source = "tensor" if static else "var"
        zs = bool(zs)
        if small is not None:  # HostHashes.hash's quick_hash, taken with the facts
            STATS["bytes_hashed"] += nbytes
            h = "%016x" % small
        else:
            h = rec.host_hashes.hash(arr, addr)
        if _NATIVE_LINES:  # the native serializer writes the fields: no text kept per value
            hx = _HOSTX.get((names[1], cc, zs))
            if hx is None:
                hx = _make_hostx(names[1], cc, zs)
            return Host(shape, dtype, int(nbytes), h, source, name, view, hx)
        # Everything but the hash is kept as JSON text per value: the host's text is then that
        # text around its hash (host_text; _records.py writes it, as it would write the host).
        k = (names[1], dtype, tuple(shape), int(nbytes), source, name, view, cc, zs)
        around = _AROUND.get(k)
        if around is None:
            hx = HostX(names[1], cc, zs)
            around = host_text_around(Host(shape, dtype, int(nbytes), NO_HASH, source, name,
                                           view, hx)) or ()
            if len(_AROUND) >= 65536:
                _AROUND.clear()
            _AROUND[k] = around + (hx,) if around else (None, None, hx)
            around = _AROUND[k]
        host = Host(shape, dtype, int(nbytes), h, source, name, view, around[2])
        if around[0] is not None and type(h) is str and h.isalnum() and h.isascii():
            host._json = around[0] + h + around[1]
        return host

    def after(self, rec, results, error):
        """The call line, once the engine returned `results` or raised `error` ("" if not)."""
        rec.bos.reading()
        try:
            return self._after(rec, results, error)
        finally:
            rec.bos.done()

    def _after(self, rec, results, error):
        a, n, ns, hosts = self.args, self.n, self.ns, self.hosts
        bos = (getattr(self.cache, "_cached_bos", {}) or {}).get(a.key)
        if bos is not None:
            rec.key_first.setdefault((ns, a.key), n)
        first = rec.key_first.get((ns, a.key), n)
        pools = {id(bo): pk for pk, bo in (getattr(self.cache, "_shared_bos", {}) or {}).items()}
        out_set = set(a.outs)
        rec.bos.forget(bos)
        b0 = STATS["bytes_hashed"]
        keytext = key_text(a.key)
        alias_error = error.startswith(("ValueError: shared_alias",))
        places = rec.placements
        if len(places) > 100000:
            places.clear()
        static, inter, written, pre = a.static, a.inter, self.written, self.pre
        kp = rec.bos.key_places
        key_places = kp.get((ns, keytext))
        if key_places is None:
            if len(kp) > 65536:
                kp.clear()
            key_places = kp[(ns, keytext)] = []
        got = None
        loop_args = (hosts, bos, static, inter, out_set, written, pre, alias_error, ns, keytext,
                     first, n, key_places, places, rec.bos.first)
        if _SLOTS is not None and not pools and type(bos) is list and type(static) is set and \
                type(inter) is set and type(written) is list and type(first) is int:
            got = _SLOTS(*loop_args, Slot, Placement, NO_HASH)  # slot_loop's, natively
        sizes = ()
        if type(got) is list:  # declined, having asked the BOs of the slots before for sizes
            sizes, got = got, None
        if got is None:
            got = slot_loop(a.inputs, *loop_args, pools=pools, placement=self.placement,
                            bo_hash=rec.bos.hash, sizes=sizes)
        slots, bound, h2d, writes = got
        call = Call(n, ns, self.kernel, keytext, keytext, ints(a.static),
                    ints(a.inter), a.outs, a.shared_nonstatic,
                    {str(k): str(v) for k, v in a.alias.items() if type(k) is int}
                    if a.alias else {},
                    self.labels, rec.caller(self.caller_frame),
                    first, slots, bool(error), error, [h2d, 0], [writes, 0],
                    CallX(bool(self.new), "%x" % id(self.cache)))
        # With --shadow, whether this call gets a shadow run is decided from its bytes before
        # dispatch (_shadow.py); a call that does not is read after the dispatch as without
        # --shadow, except what missed-static reads there (Recorder.missed_static_open).
        shadowed = False
        if rec.shadow:
            b1 = STATS["bytes_hashed"]
            shadowed = rec.shadow.prepare(self, call, results, error)
            STATS["hashed_shadow"] += STATS["bytes_hashed"] - b1
            b0 += STATS["bytes_hashed"] - b1
        lazy_call = self.lazy_after and not error and not shadowed
        loop_args = (bound, out_set, static, bool(lazy_call), self.sampled, bool(error),
                     rec.bos, rec.missed_static_open if rec.shadow else None, ns, call.bo_key,
                     self.assumed, self.unread_after, self.assumed_before, n)
        changes = _AFTER(*loop_args, NO_HASH, type(rec.bos) is BoTable) \
            if _AFTER is not None and type(static) is set else None
        if changes is None:
            changes = after_loop(*loop_args)
        if self.unread_before:
            call.x.bo_unread_before = self.unread_before
        if self.unread_after:
            call.x.bo_unread_after = self.unread_after
        if self.assumed:
            call.x.bo_assumed_unchanged = self.assumed
            if self.sampled == SPOT:  # each one's spot check found the bytes read before
                call.x.bo_spot_checked = self.assumed
        if self.assumed_before:
            call.x.bo_assumed_before = self.assumed_before
        if self.thread:
            call.thread = self.thread
        STATS["hashed_bo_after"] += STATS["bytes_hashed"] - b0
        # Only this call's BOs can have changed during it (the engine writes a BO only in a
        # call that binds it, the device only during its dispatch).
        only = {id(bo) for bo in bos} if bos is not None and self.lazy_after and \
            not self.new and not error and not rec.running else None
        if rec.views.views:  # (no view tracked: none to hash)
            rec.views.rehash(n, iteration_key(self.loops),
                             {b: w and not k for b, (w, k) in changes.items()}, self.thread,
                             only)
        if results is not None:
            rec.bos.note_viewed(results, bos, out_set)
            rec.views.note_returned(n, results, bos, out_set)
        return call

    def placement(self, pool_key, i, size, first_call):
        """Where the BO of slot i lives, from its key in the cache's `_shared_bos` (None: the
        bo_key's own BO)."""
        if pool_key is not None and pool_key[0] == "__alias__":
            return Placement(self.ns, "alias", str(pool_key[1]), -1, size, first_call)
        if pool_key is not None:
            return Placement(self.ns, "shared", str(pool_key[0]), int(pool_key[1]), size,
                             first_call)
        return Placement(self.ns, "key", key_text(self.args.key), i, size, first_call)
