"""Hashing only what can have changed (_written.py): the hash of a tracked array always equals
the hash of all its bytes, whoever wrote them (numpy, another thread, the kernel through
readinto), untouched pages of a fresh np.zeros array are not read, and BOD_RECORD_EXACT=1 or a
missing mechanism hashes every byte."""
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
        self.assertLessEqual(hashed, 4 * 64 * 1024)  # the written page's chunks and the ends

    def test_untouched_zero_pages_are_not_read(self):
        h = tracker()
        z = np.zeros((4096, 2048), np.uint16)  # 16 MiB, fresh: no page touched
        before = dict(STATS)
        self.assertEqual(h.hash(z), _hashing.hex_digest(bytes(z.nbytes)))
        self.assertLess(STATS["bytes_hashed"] - before["bytes_hashed"] - z.nbytes, MIB)
        z[100, 7] = 3
        self.assertEqual(h.hash(z), array_hash(z))

    def test_a_fresh_zero_array_is_tracked_from_its_second_sight(self):
        h = tracker()
        # 8 MiB, no page touched: tracking deferred. (Smaller than the 16 MiB array of the test
        # below: glibc serves an allocation no larger than a freed mmap chunk from its heap.)
        z = np.zeros((4096, 1024), np.uint16)
        self.assertEqual(h.hash(z), _hashing.hex_digest(bytes(z.nbytes)))
        e = h.entries[(z.__array_interface__["data"][0], z.nbytes)]
        self.assertTrue(e.deferred)
        self.assertEqual(e.len, 0)
        z[5, 5] = 1        # written before its second sight, while not tracked
        z[2000, 3] = 2
        before = dict(STATS)
        self.assertEqual(h.hash(z), array_hash(z))
        self.assertLess(STATS["bytes_hashed"] - before["bytes_hashed"] - z.nbytes, MIB)
        self.assertFalse(e.deferred)
        self.assertGreater(e.len, 0)
        z[4000, 1] = 7     # tracked now
        before = dict(STATS)
        self.assertEqual(h.hash(z), array_hash(z))
        self.assertLessEqual(STATS["bytes_hashed"] - before["bytes_hashed"] - z.nbytes,
                             4 * 64 * 1024)

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


if __name__ == "__main__":
    unittest.main()
