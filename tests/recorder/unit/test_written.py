"""Hashing only what can have changed (_written.py): the hash of a tracked array always equals
the hash of all its bytes, whoever wrote them (numpy, another thread, the kernel through
readinto), untouched pages of a fresh np.zeros array are not read (nor faulted in), and
BOD_RECORD_EXACT=1 or a missing mechanism hashes every byte."""
import os
import tempfile
import threading
import unittest

import support  # noqa: F401
import numpy as np

from bo_doctor import _hashing
from bo_doctor._hashing import STATS, array_hash
from bo_doctor._written import HostHashes

MIB = 1 << 20


def tracker():
    h = HostHashes()
    if not h.active:
        raise unittest.SkipTest(h.why)
    return h


@unittest.skipUnless(os.environ.get("BOD_RECORD_HASHLIB"), "BOD_RECORD_HASHLIB not set")
class WriteTracking(unittest.TestCase):
    def test_every_write_is_seen(self):
        h = tracker()
        a = np.arange(3 * MIB + 100, dtype=np.uint8)
        self.assertEqual(h.hash(a), array_hash(a))
        self.assertEqual(h.hash(a), array_hash(a))  # unchanged
        a[5] ^= 1           # first chunk (shares a page with other memory)
        a[MIB + 7] ^= 1     # a tracked page in the middle
        a[-1] ^= 1          # the last chunk
        self.assertEqual(h.hash(a), array_hash(a))
        t = threading.Thread(target=lambda: a.__setitem__(2 * MIB + 3, 77))
        t.start()
        t.join()
        self.assertEqual(h.hash(a), array_hash(a))
        with tempfile.TemporaryFile() as f:  # a write by the kernel (read(2) into the array)
            f.write(b"\x05" * 4096)
            f.seek(0)
            self.assertEqual(f.readinto(memoryview(a)[MIB + 4096:MIB + 8192]), 4096)
        self.assertEqual(h.hash(a), array_hash(a))
        self.assertTrue((a[MIB + 4096:MIB + 8192] == 5).all())

    def test_unchanged_chunks_are_not_read(self):
        h = tracker()
        a = np.ones(8 * MIB, np.uint8)
        h.hash(a)
        before = dict(STATS)
        a[3 * MIB] = 9
        self.assertEqual(h.hash(a), array_hash(a))  # array_hash adds 8 MiB itself
        hashed = STATS["bytes_hashed"] - before["bytes_hashed"] - a.nbytes
        # the written page's chunks, the ends' chunks and their partial pages
        self.assertLessEqual(hashed, 4 * 64 * 1024 + 2 * PAGE)

    def test_the_ends_are_read_again_only_when_their_bytes_changed(self):
        h = tracker()
        a = np.ones(8 * MIB + 100, np.uint8)
        addr = a.__array_interface__["data"][0]
        if addr % PAGE == 0 or h.refresh_native is None:
            self.skipTest("the array starts on a page boundary, or no bod_wt_refresh")
        h.hash(a)
        h.hash(a)  # the ends' bytes recorded
        # (8 MiB - 5: in the tail's partial page and in the chunk before the last, when the
        # array starts 16 bytes into a page)
        for where in (None, 0, 7, -1, -100, 5 * MIB, 8 * MIB - 5):
            if where is not None:
                a[where] ^= 3
            before = dict(STATS)
            self.assertEqual(h.hash(a), array_hash(a), where)
            hashed = STATS["bytes_hashed"] - before["bytes_hashed"] - a.nbytes
            # the ends' partial pages, and the chunks of what was written
            self.assertLessEqual(hashed, 2 * PAGE + (0 if where is None else 2 * 64 * 1024),
                                 where)

    def test_untouched_zero_pages_are_not_read(self):
        h = tracker()
        z = np.zeros((4096, 2048), np.uint16)  # 16 MiB, fresh: no page touched
        before = dict(STATS)
        self.assertEqual(h.hash(z), _hashing.hex_digest(bytes(z.nbytes)))
        self.assertLess(STATS["bytes_hashed"] - before["bytes_hashed"] - z.nbytes, MIB)
        z[100, 7] = 3
        self.assertEqual(h.hash(z), array_hash(z))

    def test_a_fresh_zero_array_keeps_no_entry_until_it_is_in_memory(self):
        h = tracker()
        if h.hash_present is None:
            self.skipTest("libbod_hash.so lacks bod_wt_hash_present")
        # 8 MiB, no page touched: hashed without reading it, and not tracked (no entry: its
        # next sight is a first sight). (Smaller than the 16 MiB array of the test above: glibc
        # serves an allocation no larger than a freed mmap chunk from its heap.) The expected
        # hashes are those of a mirror given the same writes: reading z itself would map its
        # absent pages.
        z = np.zeros((4096, 1024), np.uint16)
        mirror = np.zeros_like(z)
        key = (z.__array_interface__["data"][0], z.nbytes)

        def write(row, col, v):
            z[row, col] = mirror[row, col] = v

        def sight():
            before = STATS["bytes_hashed"]
            self.assertEqual(h.hash(z), array_hash(mirror))
            return STATS["bytes_hashed"] - before - z.nbytes  # (array_hash's bytes)

        self.assertLess(sight(), 2 * 64 * 1024)
        self.assertNotIn(key, h.entries)
        write(5, 5, 1)     # written before its second sight, while not tracked
        self.assertLess(sight(), 2 * 64 * 1024)
        self.assertNotIn(key, h.entries)  # still at most UNTRACKED_READ chunks in memory
        for row in (1000, 2000, 3000):  # more of it in memory: an entry, tracking deferred
            write(row, 3, row % 251)
        self.assertLess(sight(), 4 * 64 * 1024)
        e = h.entries[key]
        self.assertTrue(e.deferred)
        self.assertEqual(e.len, 0)
        write(3500, 1, 5)  # written while deferred: seen at its next sight, which tracks it
        self.assertLess(sight(), 5 * 64 * 1024)
        self.assertFalse(e.deferred)
        self.assertGreater(e.len, 0)
        write(4000, 1, 7)  # tracked now
        self.assertLessEqual(sight(), 4 * 64 * 1024 + 2 * PAGE)

    def test_no_room_to_track_hashes_from_the_scan_alone(self):
        from unittest import mock
        from bo_doctor import _written
        h = tracker()
        if h.hash_present is None:
            self.skipTest("libbod_hash.so lacks bod_wt_hash_present")
        z = np.zeros(2 * MIB, np.uint8)
        for i in range(0, 2 * MIB, MIB // 4):  # 8 chunks written: more than UNTRACKED_READ
            z[i] = 1 + i // (MIB // 4)
        want = array_hash(z)

        def read_again(*args):
            raise AssertionError("the array was read again")

        # No room to track it: its hash from the scan that read it, not a second whole read
        with mock.patch.object(_written, "MAX_TRACKED", 0), \
                mock.patch.object(_written, "array_hash", read_again):
            self.assertEqual(h.hash(z), want)
        self.assertEqual(h.entries, {})

    def test_views_and_overlapping_arrays(self):
        h = tracker()
        a = np.arange(4 * MIB, dtype=np.uint8)
        b = a[MIB:3 * MIB]            # inside a's tracked pages: hashed, never tracked twice
        self.assertEqual(h.hash(a), array_hash(a))
        self.assertEqual(h.hash(b), array_hash(b))
        b[100] ^= 0xFF
        self.assertEqual(h.hash(b), array_hash(b))
        self.assertEqual(h.hash(a), array_hash(a))
        self.assertEqual(h.hash(a.reshape(1024, -1)), array_hash(a))

    def test_a_new_array_at_the_same_address_is_hashed_anew(self):
        h = tracker()
        for v in range(3):
            a = np.full(2 * MIB, v, np.uint8)
            self.assertEqual(h.hash(a), array_hash(a))
            del a

    def test_exact_mode(self):
        os.environ["BOD_RECORD_EXACT"] = "1"
        try:
            h = HostHashes()
        finally:
            del os.environ["BOD_RECORD_EXACT"]
        self.assertFalse(h.active)
        self.assertIn("BOD_RECORD_EXACT", h.why)
        a = np.ones(2 * MIB, np.uint8)
        before = STATS["bytes_hashed"]
        self.assertEqual(h.hash(a), array_hash(a))
        self.assertEqual(STATS["bytes_hashed"] - before, 2 * a.nbytes)


PAGE = os.sysconf("SC_PAGE_SIZE")
# The arrays of FreshZeroPages, never freed: freeing an array glibc mmapped raises its mmap
# threshold to that size, and a later "fresh" array of the other tests would then come from
# the heap, its pages already present.
KEEP = []


def zeros(shape, dtype):
    z = np.zeros(shape, dtype)
    KEEP.append(z)
    return z


def pages_present(a):
    """How many pages of a's memory are present (/proc/self/pagemap bit 63), read without
    touching them. (Not bit 62, swapped: a write-tracked page never written shows as such.)"""
    addr = a.__array_interface__["data"][0]
    first, last = addr // PAGE, (addr + a.nbytes - 1) // PAGE
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(first * 8)
        raw = np.frombuffer(f.read((last - first + 1) * 8), np.uint64)
    return int(np.count_nonzero(raw & np.uint64(1 << 63)))


@unittest.skipUnless(os.environ.get("BOD_RECORD_HASHLIB"), "BOD_RECORD_HASHLIB not set")
class FreshZeroPages(unittest.TestCase):
    """bod_wt_hash_present (write_track.cpp): a fresh np.zeros array hashed reading only its
    pages in memory, the others taken as zeros without being touched; every hash equal to
    the hash of all the bytes, chunk by chunk."""

    def tracker(self):
        h = tracker()
        if h.hash_present is None:
            self.fail("libbod_hash.so lacks bod_wt_hash_present")
        return h

    def check(self, h, a, touched=None):
        """h.hash(a) as a's first sight: same chunk hashes and hash as reading every byte, and
        no page of a faulted in by it."""
        before = pages_present(a)
        got = h.hash(a)
        self.assertEqual(pages_present(a), before)
        if touched is not None:
            self.assertGreaterEqual(before, touched)
        # Tracked (an entry), or, at most UNTRACKED_READ chunks read, not: the chunk hashes
        # are then those present_hashes left in the tracker's scratch buffer
        e = h.entries.get((a.__array_interface__["data"][0], a.nbytes))
        u8 = a.reshape(-1).view(np.uint8)
        k = -(-a.nbytes // (64 << 10))
        chunks = e.chunks if e is not None else h.scratch[:k]
        self.assertEqual(chunks.tolist(), _hashing.block_hashes(u8, 64 << 10).tolist())
        self.assertEqual(got, array_hash(a))
        return e

    def test_fresh_zeros(self):
        h = self.tracker()
        for shape, dtype in (((32 * MIB) // 2, np.uint16), ((3 * MIB + 1000,), np.uint8),
                             ((MIB,), np.uint8), ((1024, 1023), np.float32)):
            z = zeros(shape, dtype)
            self.check(h, z)

    def test_scattered_pages_written(self):
        h = self.tracker()
        n = 16 * MIB + 4096 * 3 + 100  # the last chunk short
        z = zeros(n, np.uint8)
        writes = {0: 1, n - 1: 2, 5 * MIB + 7: 3, 5 * MIB + 3 * 4096: 4,  # two pages, one chunk
                  9 * MIB + 8: 0,                          # a page written with zeros
                  12 * MIB + (64 << 10) - 1: 5, 12 * MIB + (64 << 10): 6}  # across a chunk end
        for i, v in writes.items():
            z[i] = v
        e = self.check(h, z, touched=len(writes) - 1)
        self.assertTrue(e.deferred)  # few chunks in memory: tracked from its next sight
        for i, v in writes.items():
            self.assertEqual(int(z[i]), v)

    def test_page_written_only_in_its_tail_and_unaligned_starts(self):
        h = self.tracker()
        z = zeros(8 * MIB, np.uint8)
        z[3 * MIB - 1] = 9           # the last byte of a page
        z[3 * MIB + 4096 * 5] = 8
        z[7 * MIB + 123] = 7
        for off, ln in ((1, 3 * MIB), (1000, 3 * MIB + 5000), (4095, 2 * MIB + 1),
                        (3 * MIB - 1, MIB + 4096 * 5 + 1), (4097, 8 * MIB - 4097)):
            self.check(h, z[off:off + ln])
        self.assertEqual(h.hash(z), array_hash(z))

    def test_a_later_sight_sees_what_was_written(self):
        h = self.tracker()
        z = zeros(8 * MIB, np.float32)
        self.check(h, z)              # deferred
        z[100] = 1.5
        z[-1] = 2.5
        self.assertEqual(h.hash(z), array_hash(z))
        z[MIB] = 3.5                  # tracked now
        self.assertEqual(h.hash(z), array_hash(z))

    def test_the_fallback_reads_partly_present_chunks_whole(self):
        # The Python path (a library without bod_wt_hash_present) gives the same hash but
        # faults in the absent pages of a chunk with a page present: what the library avoids.
        h = self.tracker()
        z = zeros(8 * MIB, np.uint8)
        z[3 * MIB + 10] = 1
        before = pages_present(z)
        h.hash_present = None
        self.assertEqual(h.hash(z), array_hash(z))
        self.assertGreater(pages_present(z), before)


if __name__ == "__main__":
    unittest.main()
