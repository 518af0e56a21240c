"""The zero-copy output views the engine hands back, tracked by identity, and the view_read
events (docs/trace-format.md §7) of views whose bytes a later call overwrote.

Every array a call returns for an output slot is remembered by a weak reference (the recorder
never keeps one alive) with the hashes of its bytes, per BLOCK bytes, as it showed them when
returned. Slices, reshapes and np.asarray of it keep it alive through their `.base`, so it
stays tracked exactly while the program holds it or any array made from it.

Bytes are hashed again around the calls, over the views still alive (each memory range once):
after a call, the views of the BOs it binds; before a call, those and the views it is passed
and the overwritten ones not yet reported (`rehash`'s `only`; every view at a key's first call).
The table indexes its views by BO, by address and by whether they are overwritten and not yet
reported, so that this work is in the views a call can concern, not in all the program holds.
What changed during call k was overwritten by call k (a view's `last_change`); what changed
between two hashings otherwise the program wrote itself (through the view or the BO's
mapping): a call changes no BO it does not bind. That becomes what the view is expected to show
and is never reported.

Each view is reported at most once:
- read: an argument of call n that is the view or an array made from it (or lies in its
  memory), in a slot call n uploads, with some of its blocks overwritten: read_call = n;
- held: a view overwritten by call k and still alive at a call made after the iteration of the
  innermost `for` loop call k ran in has ended (the next call when call k ran in no loop), or
  at the program's exit, unless only argument lists hold it (_holders.py): read_call = 0.
A slice counts as overwritten when a block holding part of it changed.

Only the views' own memory (the BO mappings) is read: nothing is synced, written or flushed.
Callers hold the recorder's lock.
"""
import bisect
import sys
import weakref

import numpy as np

from ._hashing import block_hashes as _blocks
from ._hashing import STATS, blocks_at, bytes_of, digest
from ._holders import name_of, only_argument_lists
from ._records import ViewRead, ViewReadRecord

BLOCK = 4096      # bytes per block hash
_AFTER_ANY = float("inf")  # sorts after every serial number: (address, _AFTER_ANY) bounds a key
MAX_VIEWS = 4096  # views tracked at once (the oldest are dropped beyond)


def _native_facts():
    """The native `facts` (_fast.py), or None."""
    from . import _fast
    m = _fast.module()
    if m is None:
        return None
    m.set_ndarray(np.ndarray)
    return m.facts


_FACTS = _native_facts()


def _native_blocks():
    """The native `block_hashes` (_fast.py), or None."""
    from . import _fast
    m = _fast.module()
    return m.block_hashes if m is not None else None


_BLOCKS = _native_blocks()


def _address(arr):
    return arr.__array_interface__["data"][0]


def block_hashes(arr, addr=None):
    """XXH3-64 of each BLOCK bytes of a C-contiguous array's memory (of all its bytes as one
    block when it is not C-contiguous), as the bytes of native uint64 values (8 per block: two
    such texts are equal exactly when every block's hash is); addr: its data address when the
    caller has it."""
    if _BLOCKS is not None:
        got = _BLOCKS(arr, BLOCK)  # None when not C-contiguous
        if got is not None:  # the same hashes, made in one native call
            STATS["bytes_hashed"] += arr.nbytes
            return got
    if not arr.flags.c_contiguous:
        return np.array([digest(bytes_of(arr))], np.uint64).tobytes()
    if addr is not None:
        got = blocks_at(addr, arr.nbytes, BLOCK)
        if got is not None:
            return got.tobytes()
    return _blocks(arr.reshape(-1).view(np.uint8), BLOCK).tobytes()


def hash_values(blocks):
    """The block hashes (block_hashes' bytes) as a uint64 array."""
    return np.frombuffer(blocks, np.uint64)


def byte_span(arr):
    """[low, high) addresses of the bytes an array reaches."""
    lo = hi = _address(arr)
    for d, s in zip(arr.shape, arr.strides):
        if d > 1:
            lo, hi = lo + min(0, (d - 1) * s), hi + max(0, (d - 1) * s)
    return lo, hi + arr.itemsize


class _Ref(weakref.ref):
    """A view's weak reference to its array, carrying the view's serial number for the one
    death callback the table gives all its views (no callback object made per view)."""
    __slots__ = ("serial",)


def _death_callback(dead):
    """The callback of the table whose dead-serials list is `dead` (it holds no table)."""
    return lambda ref: dead.append(ref.serial)


class View:
    """One output array the engine returned."""
    __slots__ = ("ref", "id", "call", "slot", "bo", "serial", "addr", "nbytes", "contiguous",
                 "orig", "now", "last_change", "by_host", "stale_since", "stale_key",
                 "stale_thread", "passed", "done", "excused")

    def __init__(self, arr, call, slot, bo, on_death=None, serial=0):
        """on_death: called with the weak reference (its `serial` set) once arr dies
        (ViewTable's, to drop it); serial: its number in the ViewTable."""
        ref = self.ref = _Ref(arr, on_death)
        ref.serial = self.serial = serial
        self.id, self.call, self.slot, self.bo = id(arr), call, slot, bo
        f = _FACTS(arr, BLOCK + 1) if _FACTS is not None else None
        if f is not None:  # its address and, for one block, its hash, in one native call
            self.addr, self.nbytes, self.contiguous = f[3], f[1], f[4]
        else:
            self.addr, self.nbytes = _address(arr), arr.nbytes
            self.contiguous = bool(arr.flags.c_contiguous)
        # Block hashes (block_hashes' bytes, never changed in place: replaced when they change)
        if f is not None and f[4] and f[7] is not None and f[1] <= BLOCK:
            STATS["bytes_hashed"] += f[1]
            self.orig = f[7].to_bytes(8, sys.byteorder)
        else:  # what it showed when returned (or the program wrote)
            self.orig = block_hashes(arr, self.addr)
        self.now = self.orig           # what it showed when last hashed
        self.last_change, self.by_host = 0, False
        self.stale_since, self.stale_key, self.stale_thread = 0, None, 0
        self.passed = None  # id -> weak ref of arrays made from it passed to calls (once one is)
        self.done = self.excused = False

    def note_passed(self, x):
        """Remembers an array made from this view that the program passed to a call."""
        if self.passed is None:
            self.passed = {}
        r = self.passed.get(id(x))
        if r is None or r() is not x:
            if len(self.passed) >= 64:
                self.passed = {k: w for k, w in self.passed.items() if w() is not None}
            self.passed[id(x)] = weakref.ref(x)

    def blocks_of(self, arr):
        """The block range [first, last) that an array in this view's memory reaches."""
        if not self.contiguous:
            return 0, 1
        lo, hi = byte_span(arr)
        n = len(self.orig) // 8
        return (min(n, max(0, (lo - self.addr) // BLOCK)),
                min(n, max(1, -(-(hi - self.addr) // BLOCK))))


class ViewTable:
    """The views tracked, indexed so that a call's work is in the views it can concern: by BO
    (the views of the BOs a call binds), by address (`find`) and the overwritten views not yet
    reported (`held`). A view whose array died is dropped at the next `prune` (its weak
    reference's callback only notes its serial number: it runs wherever the program lets go of
    the array)."""

    def __init__(self):
        self.views = {}     # serial -> View, oldest first
        self.by_id = {}     # id(returned array) -> View
        self.by_bo = {}     # id(BO) (0: not known) -> {serial: View}
        self.stale = {}     # serial -> View overwritten (stale_since) and not reported (done)
        self.serial = 0
        self.arg_lists = {}  # (ns, bo_key) -> ids of the arguments of its latest call
        self._dead = []      # serials of views whose array died (appended by weakref callbacks)
        self._on_death = _death_callback(self._dead)
        # The address index: (start, serial) sorted, and per entry (end, serial, View); the
        # longest view's length (None: to be found again)
        self._keys, self._spans, self._longest = [], [], 0

    def _drop(self, serial, v):
        del self.views[serial]
        if self.by_id.get(v.id) is v:
            del self.by_id[v.id]
        group = self.by_bo.get(v.bo)
        if group is not None:
            group.pop(serial, None)
            if not group:
                del self.by_bo[v.bo]
        self.stale.pop(serial, None)
        k = bisect.bisect_left(self._keys, (v.addr, serial))
        if k < len(self._keys) and self._keys[k] == (v.addr, serial):
            del self._keys[k], self._spans[k]
        if self._longest is not None and v.nbytes >= self._longest:
            self._longest = None

    def prune(self):
        """Drops the views whose array died."""
        dead = self._dead
        while dead:
            serial = dead.pop()
            v = self.views.get(serial)
            if v is not None and v.ref() is None:
                self._drop(serial, v)

    def alive(self):
        """[(View, its array)] of the views still alive, oldest first; forgets the others."""
        self.prune()
        out = []
        for serial, v in list(self.views.items()):
            arr = v.ref()
            if arr is None:
                self._drop(serial, v)
            else:
                out.append((v, arr))
        return out

    def find(self, arr, addr=None):
        """The View arr is (or is made from, or lies in the memory of); None when none. addr:
        arr's data address when the caller has it."""
        if not isinstance(arr, np.ndarray) or arr.size == 0:
            return None
        b = arr
        by_id = self.by_id
        while isinstance(b, np.ndarray):
            v = by_id.get(id(b))
            if v is not None and v.ref() is b:
                return v
            b = b.base
        keys = self._keys
        if not keys:
            return None
        p = _address(arr) if addr is None else addr
        longest = self._longest
        if longest is None:
            longest = self._longest = max(v.nbytes for v in self.views.values())
        # The views that start at or before p and less than the longest view's length before
        # it; of those holding p, the latest call's (the first returned among equals).
        hi = bisect.bisect_right(keys, (p, _AFTER_ANY))
        lo = bisect.bisect_right(keys, (p - longest, _AFTER_ANY), 0, hi)
        best = None
        spans = self._spans
        for k in range(lo, hi):
            end, serial, v = spans[k]
            if p < end and v.ref() is not None and \
                    (best is None or v.call > best[1].call or
                     v.call == best[1].call and serial < best[0]):
                best = (serial, v)
        return best[1] if best is not None else None

    def _update(self, v, cur, call, key, wrote, thread):
        """v's bytes hashed again (cur): what changed during call n (call > 0) that call
        overwrote; what changed before a call (call 0) the program wrote itself."""
        if cur != v.now:
            if call:
                v.last_change = call
                v.by_host = bool((wrote or {}).get(v.bo, False))
            else:  # the program's own writes: what the view is now expected to show
                orig, c = hash_values(v.orig).copy(), hash_values(cur)
                diff = c != hash_values(v.now)
                orig[diff] = c[diff]
                v.orig = orig.tobytes()
            v.now = cur
        if v.now == v.orig:
            v.stale_since, v.stale_key = 0, None
            self.stale.pop(v.serial, None)
        elif call and not v.stale_since:
            v.stale_since, v.stale_key, v.stale_thread = call, key, thread
            if not v.done:
                self.stale[v.serial] = v

    def rehash(self, call=0, key=None, wrote=None, thread=0, only=None):
        """Hashes the live views again. call 0: changes since the last hashing are the program's
        own writes; call n: call n overwrote them (wrote: id(bo) -> whether call n's change of
        that BO was a host write rather than its kernel); key: call n's iteration_key; thread:
        the thread that made it.

        only: the id()s of the BOs whose views to hash (None: every view). A call changes no BO
        it does not bind, so after call n the views of other BOs are left as they were; what
        the program writes into them meanwhile is its own, whenever it is seen. Before a call
        (call 0) the overwritten views not yet reported are hashed too (what `held` reports),
        and views of no known BO always."""
        if only is None:
            todo = [v for v, _ in self.alive()]
        else:
            # The views of those BOs, of no known BO and, before a call, the overwritten ones
            # not yet reported (the order does not matter: each view's update is its own)
            self.prune()
            by_bo = self.by_bo
            picked = dict(by_bo.get(0, ()))
            for b in only:
                group = by_bo.get(b)
                if group:
                    picked.update(group)
            if not call and self.stale:
                picked.update(self.stale)
            todo = picked.values()
        memo = {}
        for v in todo:
            arr = v.ref()
            if arr is None:
                continue
            region = (v.addr, v.nbytes, v.contiguous)
            cur = memo.get(region)
            if cur is None:
                cur = memo[region] = block_hashes(arr, v.addr)
            self._update(v, cur, call, key, wrote, thread)

    def note_returned(self, n, results, bos, out_set):
        """Tracks the output arrays call n returned (zero-copy views into its BOs)."""
        try:
            items = list(results)
        except TypeError:
            return
        n_items = len(items)
        for i in sorted(out_set):  # the output slots, in the order of the results
            if not 0 <= i < n_items:
                continue
            r = items[i]
            if not isinstance(r, np.ndarray) or r.size == 0 or \
                    id(r) in self.by_id and self.by_id[id(r)].ref() is r:
                continue
            bo = id(bos[i]) if bos is not None and i < len(bos) else 0
            self.serial += 1
            serial = self.serial
            v = View(r, n, i, bo, self._on_death, serial)
            self.views[serial] = self.by_id[id(r)] = v
            self.by_bo.setdefault(bo, {})[serial] = v
            k = bisect.bisect_left(self._keys, (v.addr, serial))
            self._keys.insert(k, (v.addr, serial))
            self._spans.insert(k, (v.addr + v.nbytes, serial, v))
            if self._longest is not None and v.nbytes > self._longest:
                self._longest = v.nbytes
        while len(self.views) > MAX_VIEWS:
            serial = next(iter(self.views))
            self._drop(serial, self.views[serial])

    def note_arguments(self, ns, key, inputs):
        self.arg_lists[(ns, key)] = tuple(map(id, inputs))

    def event(self, v, var, reader, read_call):
        v.done = True
        self.stale.pop(getattr(v, "serial", None), None)
        return ViewReadRecord(ViewRead(var=var, reader=reader, read_call=read_call,
                                       captured_call=v.call, slot=v.slot,
                                       overwritten_by=v.last_change or v.call,
                                       by_host_write=v.by_host))

    def reads(self, n, kernel, inputs, written, found=None):
        """view_read events of call n's arguments (before the engine runs it); found: the View
        of each argument when the caller already looked them up."""
        events = []
        for i, x in enumerate(inputs):
            v = found[i] if found is not None else self.find(x)
            if v is None:
                continue
            if x is not v.ref():
                v.note_passed(x)
            first, last = v.blocks_of(x)
            if v.done or not written[i] or v.now[8 * first:8 * last] == v.orig[8 * first:8 * last]:
                continue
            var = name_of([x]) or "arg%d" % i
            events.append(self.event(v, var, "call %d (%s)" % (n, kernel), n))
        return events

    def held(self, running_keys, reader, at_exit=False, thread=0):
        """view_read events of overwritten views the program still holds: at a call of thread
        `thread` whose running loops' iteration keys are running_keys (views that thread's
        calls overwrote), or at exit (all)."""
        events = []
        lists = None  # the argument lists, once a view needs them
        for serial in sorted(self.stale):  # the overwritten views not reported, oldest first
            v = self.stale.get(serial)
            if v is None or v.done or not v.stale_since or v.ref() is None or \
                    (not at_exit and (v.excused or v.stale_thread != thread or
                                      v.stale_key is not None and v.stale_key in running_keys)):
                continue
            if lists is None:
                lists = set(self.arg_lists.values())
            passed = [r for r in list((v.passed or {}).values()) if r() is not None]
            if only_argument_lists(v.ref, passed, lists):
                v.excused = True
                continue
            var = name_of([a for a in [v.ref()] + [r() for r in passed] if a is not None],
                          lists) or \
                "view of call %d slot %d" % (v.call, v.slot)
            events.append(self.event(v, var, reader, 0))
        return events
