"""Hashing only what can have changed (docs/recording.md, "Hashing only what can have changed").

Host arrays of at least MIN_TRACKED bytes are hashed by 64 KiB chunks (the trace hash's own
chunks, docs/trace-format.md §8), and the chunk hashes are kept while the array lives. Its whole
pages are then write-tracked (tool/recorder/native/write_track.cpp: userfaultfd
write-protection in asynchronous mode, read back with PAGEMAP_SCAN), so the next time the
array is passed only the chunks holding a page written since, and the chunks at its two ends
(pages it shares with other memory), are read again. A page not in memory (neither present nor
swapped out), of an array numpy allocated itself (private anonymous memory), is zeros and is
neither read nor touched (libbod_hash.so's bod_wt_hash_present): the pages of a fresh
`np.zeros` array that nothing touched.

The mechanism cannot miss a write by the CPU: every write to a tracked page, by any thread or by
the kernel on the program's behalf, leaves the page marked written, and the kernel resolves the
write itself (nothing waits for the recorder). Where it is unavailable (an older kernel, no
userfaultfd permission) or BOD_RECORD_EXACT=1, every byte is hashed on every call.

An array is known by its memory and by a weak reference to the array owning that memory; when
the owner dies its pages are no longer tracked. Callers hold the recorder's lock.
"""
import ctypes
import functools
import os
import weakref

import numpy as np

from . import _hashing
from ._hashing import CHUNK, STATS, array_hash, block_hashes, combine, quick_hash

MIN_TRACKED = 1 << 20  # smaller arrays are hashed whole every time
MAX_TRACKED = 1024     # arrays tracked at once (each may split a memory mapping in three)
# A first sight of memory numpy allocated that read at most this many chunks (the rest not in
# memory: zeros) keeps no entry: nothing to track, and its next sight costs as little.
UNTRACKED_READ = 2


def exact_requested():
    return os.environ.get("BOD_RECORD_EXACT", "") not in ("", "0")


def _owner(a):
    """The ndarray owning a's memory, or None when numpy does not own it (bytes, a mapping)."""
    o = a
    while isinstance(o.base, np.ndarray):
        o = o.base
    return o if o.base is None and o.flags.owndata else None


def _numpy_allocated(o):
    try:
        return np.core.multiarray.get_handler_name(o) == "default_allocator"
    except (AttributeError, TypeError):
        return False


class _Entry:
    __slots__ = ("ref", "addr", "n", "chunks", "start", "len", "numpy", "deferred", "ends",
                 "combined")


class HostHashes:
    def __init__(self):
        self.lib = None
        self.hash_present = None
        self.refresh_native = None
        self.why = "exact hashing requested (BOD_RECORD_EXACT=1)" if exact_requested() else ""
        if not self.why:
            lib = _hashing._backend()
            if lib is None:
                self.why = "no hash library (the xxhash module has no write tracking)"
            else:
                try:
                    for f in (lib.bod_wt_track, lib.bod_wt_written, lib.bod_wt_present):
                        f.restype = ctypes.c_int
                        f.argtypes = [ctypes.c_size_t] * 4 + [ctypes.c_void_p, ctypes.c_size_t] \
                            if f is not lib.bod_wt_track else [ctypes.c_size_t, ctypes.c_size_t]
                    lib.bod_wt_untrack.restype = None
                    lib.bod_wt_untrack.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
                    lib.bod_wt_page_size.restype = ctypes.c_size_t
                    rc = lib.bod_wt_init()
                except AttributeError:
                    rc = -1
                if rc == 0:
                    self.lib = lib
                    self.page = int(lib.bod_wt_page_size())
                    try:  # a tracked array's re-hash in one call (a newer library)
                        f = lib.bod_wt_refresh
                        f.restype = ctypes.c_int
                        f.argtypes = [ctypes.c_size_t] * 4 + [ctypes.c_void_p, ctypes.c_size_t] + \
                            [ctypes.c_void_p] * 3
                        self.refresh_native = f
                    except AttributeError:
                        pass
                    try:  # chunk hashes reading only present pages (a newer library)
                        f = lib.bod_wt_hash_present
                        f.restype = ctypes.c_int
                        f.argtypes = [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p,
                                      ctypes.c_size_t, ctypes.c_void_p]
                        self.hash_present = f
                    except AttributeError:
                        pass
                else:
                    self.why = "write tracking unavailable here (%s)" % (
                        os.strerror(rc) if rc > 0 else "old hash library")
        self.counts = np.zeros(2, np.uint64)  # bod_wt_hash_present's: chunks read, bytes read
        self.counts_at = self.counts.ctypes.data
        self.combined = np.zeros(1, np.uint64)  # bod_wt_refresh's: the array's hash
        self.combined_at = self.combined.ctypes.data
        self.entries = {}  # (address, nbytes) -> _Entry
        self.scratch = np.empty(0, np.uint64)  # present_hashes' chunk hashes, and their address
        self.scratch_at = self.scratch.ctypes.data
        self.zero = {}     # chunk length -> hash of that many zero bytes

    def forget_after_fork(self):
        """In a forked child: the parent's write tracking does not carry over (its userfaultfd
        registrations belong to the parent's memory), so nothing is tracked and every host array
        is hashed in full from here on, and the child never unregisters the parent's memory."""
        self.entries = {}  # their weak references' callbacks find nothing to forget
        if self.lib is not None:
            self.lib = None
            self.why = "a forked process (write tracking stays with its parent)"

    @property
    def active(self):
        return self.lib is not None

    def hash(self, arr, addr=None):
        """The trace hash of an array's C-order bytes, reading only what can have changed;
        addr: the array's data address when the caller has it."""
        a = arr if type(arr) is np.ndarray else np.asarray(arr)
        if not a.flags.c_contiguous:
            return array_hash(a)
        if self.lib is None or a.nbytes < MIN_TRACKED:
            return quick_hash(a, addr)
        owner = _owner(a)
        if owner is None:
            return array_hash(a)
        if addr is None:
            addr = a.__array_interface__["data"][0]
        n = int(a.nbytes)
        e = self.entries.get((addr, n))
        if e is not None and e.ref() is owner:
            got = self.refresh(e, a)
            if got is not None:  # the library's re-hash gave the whole array's hash too
                return "%016x" % got
        else:
            if e is not None:
                self.drop(e)
            numpy = _numpy_allocated(owner)
            read = None
            if numpy and self.hash_present is not None:
                # Memory numpy allocated, seen for the first time: hashed reading only its
                # pages in memory. Nearly none in memory (a fresh np.zeros scratch, which
                # programs often pass once and drop), or no room to track it: not tracked, and
                # its next sight is a first sight again (its absent pages still read as zeros,
                # only what is in memory then is read).
                k = -(-n // CHUNK)
                read = self.present_hashes(addr, n, k)
                if read is not None and (read <= UNTRACKED_READ or
                                         len(self.entries) >= MAX_TRACKED):
                    return "%016x" % combine(self.scratch[:k], self.scratch_at)
            if len(self.entries) >= MAX_TRACKED:
                return array_hash(a)
            e = self.first(a, owner, addr, n, numpy, read)
        return "%016x" % combine(e.chunks)

    def present_hashes(self, addr, n, k):
        """Hashes the k chunks of the n bytes at addr (private anonymous memory numpy
        allocated) into self.scratch[:k], reading only its pages in memory, through the
        library's bod_wt_hash_present; how many chunks it read, or None when it failed. The
        next call reuses the buffer."""
        if len(self.scratch) < k:
            self.scratch = np.empty(max(k, 2 * len(self.scratch)), np.uint64)
            self.scratch_at = self.scratch.ctypes.data
        return self._present(addr, n, self.scratch_at, k)

    def _present(self, addr, n, out_at, k):
        """bod_wt_hash_present into the k chunk hashes at out_at; the chunks it read, or None
        when it failed."""
        if self.hash_present(addr, n, out_at, k, self.counts_at) != 0:
            return None
        read = int(self.counts[1])
        STATS["bytes_hashed"] += read
        STATS["bytes_skipped"] += n - read
        return int(self.counts[0])

    def first(self, a, owner, addr, n, numpy, scanned=None):
        """Hashes an array seen for the first time (zero chunks unread) and tracks its pages,
        or, when at most an eighth of its chunks has a page in memory, leaves tracking to its
        next sight. numpy: whether numpy allocated its memory; scanned: the chunks
        present_hashes read of it when it was just hashed into self.scratch (None: not)."""
        e = _Entry()
        # When the owner dies, _died forgets the entry (a weak reference's callback: a tenth
        # of weakref.finalize's cost).
        e.ref = weakref.ref(owner, functools.partial(self._died, (addr, n)))
        e.addr, e.n = addr, n
        e.numpy = numpy
        k = -(-n // CHUNK)
        pg = self.page
        e.start = -(-addr // pg) * pg
        e.len = 0
        e.ends = None  # the library's record of the untracked bytes at the two ends
        if scanned is not None:
            e.chunks = self.scratch[:k].copy()
            present = scanned
        else:
            e.chunks = np.empty(k, np.uint64)
            present = self.scan_hash(e, a)
        e.deferred = present * 8 <= len(e.chunks)
        if not e.deferred:
            self.track(e)
        self.entries[(addr, n)] = e
        STATS["tracked_arrays"] = len(self.entries)
        return e

    def scan_hash(self, e, a):
        """Hashes all of an array, the pages not in memory as zeros without reading them
        (memory numpy allocated: private anonymous pages never touched, or dropped, read as
        zeros); returns how many chunks it read. Through the library's bod_wt_hash_present
        (page by page, absent pages never touched), else here (chunk by chunk: a chunk with a
        page present is read whole, faulting in its absent pages)."""
        k = len(e.chunks)
        if e.numpy and self.hash_present is not None:
            read = self._present(e.addr, e.n, e.chunks.ctypes.data, k)
            if read is not None:
                return read
        present = np.ones(k, np.uint8)
        if e.numpy:
            present[:] = 0
            if self.lib.bod_wt_present(e.addr, e.n, e.addr, CHUNK, present.ctypes.data, k) != 0:
                present[:] = 1
        self.rehash(e, a.reshape(-1).view(np.uint8), present)
        return int(np.count_nonzero(present))

    def track(self, e):
        """Starts tracking the array's whole pages (e.len > 0), unless another tracked array
        covers some of them or the kernel refuses."""
        end = (e.addr + e.n) // self.page * self.page
        e.len = max(0, end - e.start)
        # Pages another tracked array covers are not tracked twice (asking one range for its
        # written pages protects them again, which would hide the write from the other).
        if e.len and any(o is not e and o.len and o.start < e.start + e.len and
                         e.start < o.start + o.len for o in self.entries.values()):
            e.len = 0
        if e.len and self.lib.bod_wt_track(e.start, e.len) != 0:
            e.len = 0

    def refresh(self, e, a):
        """Re-hashes the chunks of a known array that can have changed since it was hashed;
        returns the array's hash (int) when the library's bod_wt_refresh did it all, else None.
        The library reads the untracked bytes at the two ends (the partial pages the array
        shares with other memory) and re-hashes their chunks only when those bytes changed."""
        if e.deferred:
            # Its next sight: hashed again as at its first (its pages still absent are still
            # zeros, so only what was written since is read), then tracked from now on.
            e.deferred = False
            self.scan_hash(e, a)
            self.track(e)
            return
        k = len(e.chunks)
        if e.len and self.refresh_native is not None:
            if e.ends is None:
                e.ends = np.zeros(3, np.uint64)
            c, out = self.counts, self.combined
            if self.refresh_native(e.addr, e.n, e.start, e.len, e.chunks.ctypes.data, k,
                                   e.ends.ctypes.data, self.counts_at, self.combined_at) == 0:
                read = int(c[1])
                STATS["bytes_hashed"] += read
                STATS["bytes_skipped"] += e.n - min(e.n, read)
                return int(out[0])
            # Failed (its scan may have protected some pages again): every chunk is read.
            e.ends = None
            self.rehash(e, a.reshape(-1).view(np.uint8), np.ones(k, np.uint8), zero_absent=False)
            return None
        dirty = np.ones(k, np.uint8)
        if e.len:
            dirty[:] = 0
            if self.lib.bod_wt_written(e.start, e.len, e.addr, CHUNK, dirty.ctypes.data, k) != 0:
                dirty[:] = 1
            # The ends: pages shared with memory outside the array, never tracked.
            if e.start > e.addr:
                dirty[0] = 1
            if e.start + e.len < e.addr + e.n:
                dirty[(e.start + e.len - e.addr) // CHUNK:] = 1
        STATS["bytes_skipped"] += int(e.n - min(e.n, int(dirty.sum()) * CHUNK))
        self.rehash(e, a.reshape(-1).view(np.uint8), dirty, zero_absent=False)

    def zero_hash(self, ln):
        """The chunk hash of ln zero bytes."""
        z = self.zero.get(ln)
        if z is None:
            z = self.zero[ln] = int(block_hashes(np.zeros(ln, np.uint8), CHUNK)[0])
            STATS["bytes_hashed"] -= ln  # not the program's bytes
        return z

    def rehash(self, e, u8, which, zero_absent=True):
        """Hashes the chunks flagged in `which` (runs of them at once); with zero_absent, the
        others are zeros (their pages are not present)."""
        k, n = len(e.chunks), e.n
        w = np.asarray(which, dtype=bool)
        if zero_absent and not w.all():
            absent = ~w
            e.chunks[absent] = self.zero_hash(CHUNK)
            last = n - (k - 1) * CHUNK  # the last chunk's length
            skipped = int(absent.sum()) * CHUNK
            if absent[k - 1] and last != CHUNK:
                e.chunks[k - 1] = self.zero_hash(last)
                skipped -= CHUNK - last
            STATS["bytes_skipped"] += skipped
        idx = np.flatnonzero(w)
        if not idx.size:
            return
        # runs of consecutive flagged chunks: [starts[r], ends[r])
        gaps = np.flatnonzero(np.diff(idx) != 1)
        starts = [int(idx[0])] + (idx[gaps + 1]).tolist()
        ends = (idx[gaps] + 1).tolist() + [int(idx[-1]) + 1]
        for i, j in zip(starts, ends):
            e.chunks[i:j] = block_hashes(u8[i * CHUNK:min(n, j * CHUNK)], CHUNK)

    def drop(self, e):
        self._gone((e.addr, e.n), e)

    def _died(self, key, ref):
        e = self.entries.get(key)
        if e is not None and e.ref is ref:
            self._gone(key, e)

    def _gone(self, key, e):
        if self.entries.get(key) is e:
            del self.entries[key]
        if e.len and self.lib is not None:
            self.lib.bod_wt_untrack(e.start, e.len)
            e.len = 0
