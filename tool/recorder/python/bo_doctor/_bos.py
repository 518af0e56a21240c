"""What the recorder knows of the engine's BOs across calls: which call first used each BO,
which call last changed its bytes, and the zero-copy output views the engine handed back (so a
later argument can be recognised as a view of an earlier call's BO, and a stale one reported).

BOs are told apart by id(); nothing here keeps a BO or a view alive. The hash of a BO's bytes
syncs from the device only BOs no caller holds a view of: a FROM_DEVICE sync rewrites the host
mapping, which would change what such a view shows the program. Reading a mapping never writes
it. Callers hold the recorder's lock around every method (the tables are shared by all threads).
"""
import sys

import numpy as np

from ._hashing import NO_HASH, array_hash, hex_digest
from ._records import ViewRead, ViewReadRecord

MAX_VIEWS = 4096  # the most recent views are the ones a caller can still hold

_from_device = None


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
        m = np.frombuffer(bo.map(), dtype=np.uint8)
        return hex_digest(m[:min(nbytes, m.size)])
    except Exception:
        return NO_HASH


def _address(arr):
    return arr.__array_interface__["data"][0]


class BoTable:
    def __init__(self):
        self.first = {}    # id(bo) -> the first call that used it
        self.changed = {}  # id(bo) -> the last call that changed its bytes
        self.viewed = set()  # id(bo) of BOs some caller holds (or held) a view into
        self.views = []    # (start, end, call, slot, hash, id(bo)) of output views handed back

    def hash(self, bo, nbytes, sync):
        """The BO's first nbytes as the device holds them; from the mapping as it is when a
        caller holds a view into it."""
        return mapped_hash(bo, nbytes, sync and id(bo) not in self.viewed)

    def view_of(self, arr):
        """(call, slot) of the most recent output view whose memory holds arr's first byte."""
        if arr.size == 0 or not self.views:
            return None
        p = _address(arr)
        for start, end, call, slot, _, _ in reversed(self.views):
            if start <= p < end:
                return (call, slot)
        return None

    def stale_reads(self, n, kernel, inputs, hosts):
        """The view_read records of call n: an argument that is a whole view whose bytes differ
        from what the call that returned it handed back."""
        events = []
        for i, h in enumerate(hosts):
            if h.source != "view":
                continue
            arr = np.asarray(inputs[i])
            p = _address(arr)
            for start, end, call, slot, digest, bo in reversed(self.views):
                if not (start <= p < end):
                    continue
                if p == start and arr.nbytes == end - start and h.hash != digest:
                    events.append(ViewReadRecord(ViewRead(
                        var="arg%d" % i, reader="call %d (%s)" % (n, kernel), read_call=n,
                        captured_call=call, slot=slot,
                        overwritten_by=self.changed.get(bo, call), by_host_write=False)))
                break
        return events

    def note_views(self, n, results, bos, out_set):
        """Remembers the output arrays call n returned (zero-copy views into its BOs)."""
        try:
            items = list(results)
        except TypeError:
            return
        for i, r in enumerate(items):
            if i not in out_set or not isinstance(r, np.ndarray) or r.size == 0:
                continue
            p = _address(r)
            self.views = [v for v in self.views if not (v[0] <= p < v[1])]
            bo = id(bos[i]) if bos is not None and i < len(bos) else 0
            self.views.append((p, p + r.nbytes, n, i, array_hash(r), bo))
            if bo:
                self.viewed.add(bo)
        del self.views[:-MAX_VIEWS]
