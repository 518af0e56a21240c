"""What the recorder knows of the engine's BOs across calls: which call first used each BO,
which call last changed its bytes, and which BOs the engine has handed the program a zero-copy
view into (the views themselves: _views.py).

BOs are told apart by id(); nothing here keeps a BO alive. The hash of a BO's bytes syncs from
the device only BOs the engine never returned a view into: a FROM_DEVICE sync rewrites the host
mapping, which would change what such a view shows the program. Reading a mapping never writes
it. Callers hold the recorder's lock around every method (the tables are shared by all threads).
"""
import math
import sys

import numpy as np

from ._hashing import CHUNK, NO_HASH, STATS, quick_hash

_from_device = None


def _native(name):
    """The native module's function `name` (_fast.py), or None without the module."""
    from . import _fast
    m = _fast.module()
    return getattr(m, name) if m is not None else None


_HASH_BUFFER = _native("hash_buffer")
_HASH_BUFFER_CHUNKS = _native("hash_buffer_chunks")

# A spot check of a static BO (`BoTable.spot`) reads these 64 KiB chunks (the trace hash's own:
# docs/trace-format.md) of at least SPOT_MIN bytes hashed: the first, the last and SPOT_TURNING
# more, evenly spaced over the BO at an offset that moves at each of its spot checks by a step
# co-prime with the spacing, about 0.618 of it (so the chunks checked so far spread over the
# whole BO, and every chunk comes in turn).
SPOT_CHUNK = CHUNK  # the trace hash's chunk (_hashing.py)
SPOT_TURNING = 2
SPOT_MIN = 1 << 20
_STEPS = {}  # spacing -> step


def _step(stride):
    got = _STEPS.get(stride)
    if got is None:
        got = max(1, int(stride * 0.6180339887))
        while math.gcd(got, stride) != 1:
            got += 1
        if len(_STEPS) < 4096:
            _STEPS[stride] = got
    return got


def spot_chunks(k, turn):
    """The chunks (ascending, 3 or 4 of them) of a BO of k chunks its spot check number `turn`
    (0, 1, ...) reads."""
    stride = -(-k // SPOT_TURNING)
    picked = {0, k - 1}
    picked.update(range(turn * _step(stride) % stride, k, stride))
    return sorted(picked)


def from_device():
    """pyxrt's FROM_DEVICE sync direction (the program's own pyxrt module)."""
    global _from_device
    if _from_device is None:
        xrt = sys.modules.get("pyxrt")
        if xrt is None:
            import pyxrt as xrt
        _from_device = xrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE
    return _from_device


def mapped_hash(bo, nbytes, sync):
    """The trace hash of the BO's first nbytes (at most its size) as its mapping holds them,
    after a FROM_DEVICE sync when `sync`; NO_HASH when the BO cannot be read."""
    try:
        if sync:
            bo.sync(from_device())
            STATS["syncs"] += 1
            STATS["sync_bytes"] += int(bo.size())
        m = bo.map()
        got = _HASH_BUFFER(m, nbytes) if _HASH_BUFFER is not None and type(nbytes) is int \
            and 0 <= nbytes < 1 << 62 else None
        if got is not None:  # the same hash of the same bytes, in one native call
            STATS["bytes_hashed"] += got[1]
            return "%016x" % got[0]
        m = np.frombuffer(m, dtype=np.uint8)
        return quick_hash(m[:min(nbytes, m.size)])
    except Exception:
        return NO_HASH


def _kept_hash(bo, nbytes, sync):
    """(mapped_hash, the hashes of its 64 KiB chunks) of a BO of at least nbytes bytes, or
    (that hash, None) when the chunks cannot be taken."""
    if sync:
        try:
            bo.sync(from_device())
            STATS["syncs"] += 1
            STATS["sync_bytes"] += int(bo.size())
        except Exception:
            return NO_HASH, None
    try:
        got = _HASH_BUFFER_CHUNKS(bo.map(), nbytes)
    except Exception:
        got = None
    if got is None or got[1] != nbytes:
        return mapped_hash(bo, nbytes, False), None
    STATS["bytes_hashed"] += got[1]
    return "%016x" % got[0], got[2]


def _identity(bo):
    """What tells a BO apart from a later one that gets the same id(): its device address and
    size (None when the BO cannot say)."""
    try:
        return (int(bo.address()), int(bo.size()))
    except Exception:
        return None


class BoTable:
    def __init__(self, reuse=True):
        self.first = {}    # (ns, pool, name, index) -> the first call that used that BO
        # (ns, bo_key text) -> [the Placement of slot i of that key's own BOs, or None]: what
        # the call line gives it while its size is the same (its first call, once set, stays)
        self.key_places = {}
        self.changed = {}  # id(bo) -> the last call that changed its bytes
        self.viewed = set()  # id(bo) of BOs the engine returned a view into (never synced)
        self.reuse = reuse
        self.known = {}    # id(bo) -> (identity, {nbytes: hash}) taken after its last call
        self.assumed = set()  # id(bo) whose known hash was not read but carried over
        # id(bo) -> [identity, nbytes, hash, its chunk hashes (bytearray of uint64), spot checks
        # so far] from the BO's last whole read with keep (what `spot` compares)
        self.chunks = {}
        self.chunk_bytes = 0  # the bytes of those chunk hashes
        # While one call's BOs are read (`reading` ... `done`): id(bo) -> (bo, its identity).
        # Within that stretch no engine code runs, so a BO's address and size stay as read.
        self._ids = None

    def reading(self):
        """Starts a stretch of reads of one call's BOs: each BO's identity is asked once."""
        self._ids = {}

    def done(self):
        """Ends it (the BOs it held are let go)."""
        self._ids = None

    def identity(self, bo):
        ids = self._ids
        if ids is None:
            return _identity(bo)
        got = ids.get(id(bo))
        if got is not None and got[0] is bo:
            return got[1]
        ident = _identity(bo)
        ids[id(bo)] = (bo, ident)
        return ident

    def hash(self, bo, nbytes, sync, reuse=False, keep=False):
        """The BO's first nbytes as the device holds them; from the mapping as it is when the
        program may hold a view into it. reuse: the hash taken after the last call that bound
        the BO, when it holds one of these bytes (see `remember`). keep: a static BO's read
        whose chunk hashes a later `spot` compares (kept for a BO of SPOT_MIN bytes or more
        that the program holds no view into)."""
        viewed = id(bo) in self.viewed
        if reuse and self.reuse and not viewed:
            k = self.known.get(id(bo))
            if k is not None and nbytes in k[1] and k[0] == self.identity(bo):
                STATS["bo_hashes_reused"] += 1
                return k[1][nbytes]
        if not keep or viewed or _HASH_BUFFER_CHUNKS is None or type(nbytes) is not int or \
                not SPOT_MIN <= nbytes < 1 << 62:
            return mapped_hash(bo, nbytes, sync and not viewed)
        h, chunks = _kept_hash(bo, nbytes, sync)
        old = self.chunks.pop(id(bo), None)
        if old is not None:
            self.chunk_bytes -= len(old[3])
        if chunks is not None and h != NO_HASH:
            # at most 65536 BOs' chunk hashes and 64 MiB of them (those of 512 GiB of BOs)
            if len(self.chunks) >= 65536 or self.chunk_bytes + len(chunks) > 64 << 20:
                self.chunks.clear()
                self.chunk_bytes = 0
            self.chunk_bytes += len(chunks)
            # the spot checks go on turning where they were (a whole read starts none over)
            self.chunks[id(bo)] = [self.identity(bo), nbytes, h, chunks,
                                   old[4] if old is not None else 0]
        return h

    def spot(self, bo, nbytes, before):
        """Whether a spot check finds the BO's first nbytes as its last whole read with keep
        left them, that read's hash being `before`: the chunks `spot_chunks` picks, each synced
        from the device alone and hashed, all equal to the kept ones. False (the caller reads
        the BO whole) when no such read is kept, the BO moved, the program holds a view into it,
        or any chunk differs or cannot be read."""
        e = self.chunks.get(id(bo))
        if e is None or e[1] != nbytes or e[2] != before or id(bo) in self.viewed or \
                _HASH_BUFFER is None or e[0] != self.identity(bo):
            return False
        kept = memoryview(e[3]).cast("Q")
        picks = spot_chunks(len(kept), e[4])
        e[4] += 1
        try:
            d = from_device()
            m = memoryview(bo.map())
            if m.ndim != 1 or m.itemsize != 1:  # sliced by byte offsets below
                m = m.cast("B")
            for c in picks:
                off = c * SPOT_CHUNK
                n = min(SPOT_CHUNK, nbytes - off)
                bo.sync(d, n, off)
                STATS["syncs"] += 1
                STATS["sync_bytes"] += n
                got = _HASH_BUFFER(m[off:off + n], n)
                if got is None or got[1] != n:
                    return False
                STATS["bytes_hashed"] += n
                STATS["bytes_spot_checked"] += n
                if got[0] != kept[c]:
                    return False
        except Exception:
            return False
        return True

    def has(self, bo, nbytes):
        """Whether a hash of the BO's first nbytes taken after its last call is known."""
        return self.known_hash(bo, nbytes) is not None

    def known_hash(self, bo, nbytes):
        """That hash (what `hash` with reuse returns without reading), or None."""
        if not self.reuse or id(bo) in self.viewed:
            return None
        k = self.known.get(id(bo))
        if k is not None and nbytes in k[1] and k[0] == self.identity(bo):
            return k[1][nbytes]
        return None

    def remember(self, bo, nbytes, h):
        """The hash of the BO's first nbytes as the call that bound it left them. Until another
        call binds it, nothing can change those bytes: the engine writes a BO only in a call
        that binds it, the device only during such a call's dispatch, and the program reaches a
        BO's memory only through the views the engine returned (a viewed BO never reuses a
        hash) or a mapping of its own (docs/recording.md)."""
        if not self.reuse or h == NO_HASH:
            return
        ident = self.identity(bo)
        k = self.known.get(id(bo))
        if k is None or k[0] != ident:
            k = self.known[id(bo)] = (ident, {})
        k[1][nbytes] = h

    def forget(self, bos):
        """The BOs a call binds, before it runs: their bytes may change."""
        if not bos:
            return
        pop, discard = self.known.pop, self.assumed.discard
        for k in map(id, bos):
            pop(k, None)
            discard(k)

    def note_viewed(self, results, bos, out_set):
        """Marks the BOs of the output slots the call returned arrays for."""
        try:
            items = list(results)
        except TypeError:
            return
        if bos is None:
            return
        n = min(len(items), len(bos))
        for i in out_set:
            if 0 <= i < n and isinstance(items[i], np.ndarray) and items[i].size:
                self.viewed.add(id(bos[i]))
