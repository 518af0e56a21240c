"""The trace's hash of a byte range (docs/trace-format.md §8), as the recorder takes it.

Up to 64 KiB: XXH3-64 (seed 0) of the bytes. Above: XXH3-64 of the list of the 64 KiB chunks'
XXH3-64 hashes, each as 8 little-endian bytes (one plain XXH3-64 however long the list). The
result is 16 lower-case hex digits; NO_HASH stands where a hash is unknown or does not apply.

This module only reads the buffers it is given; it never copies an array that is already
C-contiguous and never writes to one.
"""
import numpy as np

try:
    import xxhash
except ImportError as e:  # pragma: no cover - reported by sitecustomize
    raise ImportError("the recorder needs the xxhash module (Debian: python3-xxhash)") from e

CHUNK = 64 << 10
NO_HASH = "0" * 16


def hex_digest(buf):
    """The trace hash of a buffer (bytes, memoryview, numpy uint8 array …) over all its bytes."""
    mv = memoryview(buf).cast("B")
    n = len(mv)
    if n <= CHUNK:
        return "%016x" % xxhash.xxh3_64_intdigest(mv)
    parts = b"".join(xxhash.xxh3_64_intdigest(mv[i:i + CHUNK]).to_bytes(8, "little")
                     for i in range(0, n, CHUNK))
    return "%016x" % xxhash.xxh3_64_intdigest(parts)


def bytes_of(arr, limit=None):
    """The raw C-order bytes of an array as a uint8 array, the first `limit` of them when given
    (a copy only when the array is not C-contiguous)."""
    a = np.asarray(arr)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    b = a.reshape(-1).view(np.uint8)
    return b if limit is None else b[:limit]


def array_hash(arr, limit=None):
    """hex_digest of an array's C-order bytes (the first `limit` of them when given)."""
    return hex_digest(bytes_of(arr, limit))
