"""The hash rule (docs/trace-format.md §8) against the reference values the format states,
through libbod_hash.so (BOD_RECORD_HASHLIB, as ctest sets it) and through the optional xxhash
module: both give the same values."""
import os
import unittest

import support  # noqa: F401
import numpy as np

from bo_doctor import _hashing
from bo_doctor._hashing import (CHUNK, NO_HASH, HashLibError, array_hash, block_hashes, bytes_of,
                                combine, hex_digest, load_library)

try:
    import xxhash
except ImportError:
    xxhash = None


class HashRule(unittest.TestCase):
    def test_reference_values_of_the_format(self):
        # docs/trace-format.md §8: plain XXH3-64 up to 64 KiB, the hash of chunk hashes above.
        self.assertEqual(hex_digest(b""), "2d06800538d394c2")
        self.assertEqual(hex_digest(bytes(16)), "d0a66a65c7528968")
        self.assertEqual(hex_digest(bytes(65536)), "33b202d302b65caa")
        self.assertEqual(hex_digest(bytes(65537)), "66268c5ee347da5e")
        self.assertEqual(hex_digest(bytes(1 << 20)), "6ed551098c686bf9")

    def test_example_trace_values(self):
        # §9: eight bf16 1.0 (bytes 80 3f) hash to 2146c62ab21e396a.
        self.assertEqual(hex_digest(b"\x80\x3f" * 8), "2146c62ab21e396a")
        self.assertEqual(array_hash(np.full(8, 0x3f80, dtype=np.uint16)), "2146c62ab21e396a")

    def test_chunk_boundary_is_64_KiB(self):
        self.assertEqual(CHUNK, 65536)
        data = bytes(range(256)) * 600  # 153,600 bytes: three chunks, the last one short
        chunks = block_hashes(data, CHUNK)
        self.assertEqual(len(chunks), 3)
        self.assertEqual(hex_digest(data), "%016x" % combine(chunks))
        self.assertEqual(chunks[2], int(hex_digest(data[2 * CHUNK:]), 16))
        self.assertNotEqual(hex_digest(data), "%016x" % combine(block_hashes(data, 1 << 20)))

    def test_format_is_16_lower_case_hex_digits(self):
        for n in (0, 1, 7, CHUNK + 3):
            h = hex_digest(bytes(n))
            self.assertRegex(h, r"^[0-9a-f]{16}$")
        self.assertEqual(NO_HASH, "0000000000000000")

    def test_arrays_hash_their_C_order_bytes(self):
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        self.assertEqual(array_hash(a), hex_digest(a.tobytes()))
        t = a.T  # not contiguous: hashed as its C-order copy
        self.assertEqual(array_hash(t), hex_digest(np.ascontiguousarray(t).tobytes()))
        self.assertEqual(array_hash(a, 8), hex_digest(a.tobytes()[:8]))
        self.assertEqual(array_hash(np.empty(0, np.float32)), "2d06800538d394c2")

    def test_contiguous_arrays_are_not_copied(self):
        a = np.arange(5, dtype=np.int32)
        self.assertTrue(np.shares_memory(bytes_of(a), a))


@unittest.skipUnless(os.environ.get("BOD_RECORD_HASHLIB"), "BOD_RECORD_HASHLIB not set")
class HashLibrary(unittest.TestCase):
    def test_library_is_the_backend(self):
        self.assertIsNotNone(_hashing._backend())

    @unittest.skipIf(xxhash is None, "no xxhash module to compare with")
    def test_library_and_xxhash_module_agree(self):
        rng = np.random.default_rng(3)
        for n in (0, 1, 100, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 17):
            data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            self.assertEqual(_hashing.digest(data), xxhash.xxh3_64_intdigest(data)
                             if n <= CHUNK else xxhash.xxh3_64_intdigest(
                                 b"".join(xxhash.xxh3_64_intdigest(data[i:i + CHUNK])
                                          .to_bytes(8, "little")
                                          for i in range(0, n, CHUNK))))

    def test_not_a_library(self):
        with self.assertRaisesRegex(HashLibError, "cannot load"):
            load_library("/nonexistent/libbod_hash.so")
        with self.assertRaisesRegex(HashLibError, "not bo-doctor's hash library"):
            load_library("libc.so.6")


if __name__ == "__main__":
    unittest.main()
