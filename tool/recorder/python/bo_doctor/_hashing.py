"""The trace's hash of a byte range (docs/trace-format.md §8), as the recorder takes it.

Up to 64 KiB: XXH3-64 (seed 0) of the bytes. Above: XXH3-64 of the list of the 64 KiB chunks'
XXH3-64 hashes, each as 8 little-endian bytes (one plain XXH3-64 however long the list). The
result is 16 lower-case hex digits; NO_HASH stands where a hash is unknown or does not apply.

The hashing itself is bo-doctor's own XXH3 code, in libbod_hash.so (tool/recorder/native),
loaded with ctypes from the path in BOD_RECORD_HASHLIB (`bo-doctor record` sets it). Without
that variable (the unit tests, a program importing bo_doctor outside a recording) the `xxhash`
module is used when it is installed; it gives the same values.

This module only reads the buffers it is given; it never copies an array that is already
C-contiguous and never writes to one. Every hashed byte is counted in STATS (recorder_stats()).
"""
import ctypes
import os

import numpy as np

CHUNK = 64 << 10
NO_HASH = "0" * 16
API_VERSION = 1

# What the recorder did, for `bo_doctor.recorder_stats()` (the benchmark reads it).
STATS = {"bytes_hashed": 0, "bytes_skipped": 0, "syncs": 0, "sync_bytes": 0, "bo_hashes_reused": 0,
         "bytes_spot_checked": 0,  # of static BOs, by `BoTable.spot` (in bytes_hashed too)
         "tracked_arrays": 0, "calls": 0, "shadowed": 0, "shadow_skipped": 0,
         # bytes_hashed by where: host arguments, BOs before and after the dispatch, the shadow
         # run (the rest: the views the engine returned)
         "hashed_host": 0, "hashed_bo_before": 0, "hashed_bo_after": 0, "hashed_shadow": 0,
         # the time the recording threads spent in the recorder (describing, hashing, the
         # shadow run, serializing and writing the spool; not the engine's own call), by the
         # clock (perf_counter): a CPU-time clock costs a system call per reading
         "seconds": 0.0}


class HashLibError(Exception):
    """libbod_hash.so cannot be used; the message says why."""


def load_library(path):
    """The ctypes handle of libbod_hash.so at path, its functions typed; HashLibError when it
    cannot be loaded or is not a libbod_hash of this API version."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise HashLibError("cannot load %s (%s)" % (path, e)) from None
    try:
        lib.bod_hash_api_version.restype = ctypes.c_int
        lib.bod_hash_bytes.restype = ctypes.c_uint64
        lib.bod_hash_bytes.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.bod_block_hashes.restype = None
        lib.bod_block_hashes.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
                                         ctypes.c_void_p]
        lib.bod_combine_chunk_hashes.restype = ctypes.c_uint64
        lib.bod_combine_chunk_hashes.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        version = lib.bod_hash_api_version()
    except AttributeError as e:
        raise HashLibError("%s is not bo-doctor's hash library (%s)" % (path, e)) from None
    if version != API_VERSION:
        raise HashLibError("%s has hash API version %d; this recorder needs %d" %
                           (path, version, API_VERSION))
    return lib


_lib = None
_xxh = None


def _backend():
    """Loads the hashing backend once: the library BOD_RECORD_HASHLIB names, else xxhash."""
    global _lib, _xxh
    if _lib is None and _xxh is None:
        path = os.environ.get("BOD_RECORD_HASHLIB", "")
        if path:
            _lib = load_library(path)
        else:
            try:
                import xxhash
            except ImportError:
                raise HashLibError("no hash library: BOD_RECORD_HASHLIB is not set (bo-doctor "
                                   "record sets it) and the xxhash module is not installed") \
                    from None
            _xxh = xxhash
    return _lib


def _u8(buf):
    """buf as a 1-D uint8 numpy array over the same memory (no copy)."""
    if isinstance(buf, np.ndarray) and buf.dtype == np.uint8 and buf.ndim == 1:
        return buf
    return np.frombuffer(memoryview(buf).cast("B"), dtype=np.uint8)


def _addr(a):
    return a.__array_interface__["data"][0]


def digest(buf):
    """The trace hash of a buffer (bytes, memoryview, numpy uint8 array …) as an int."""
    a = _u8(buf)
    n = a.size
    STATS["bytes_hashed"] += n
    lib = _backend()
    if lib is not None:
        return lib.bod_hash_bytes(_addr(a), n)
    mv = memoryview(a)
    if n <= CHUNK:
        return _xxh.xxh3_64_intdigest(mv)
    parts = b"".join(_xxh.xxh3_64_intdigest(mv[i:i + CHUNK]).to_bytes(8, "little")
                     for i in range(0, n, CHUNK))
    return _xxh.xxh3_64_intdigest(parts)


def hex_digest(buf):
    """The trace hash of a buffer over all its bytes, as 16 hex digits."""
    return "%016x" % digest(buf)


def block_hashes(buf, block):
    """Plain XXH3-64 of each `block` bytes of a buffer (the last may be short), as a uint64
    array (one value, the hash of no bytes, for an empty buffer)."""
    a = _u8(buf)
    n = a.size
    k = max(1, -(-n // block))
    out = np.empty(k, np.uint64)
    STATS["bytes_hashed"] += n
    lib = _backend()
    if lib is not None:
        lib.bod_block_hashes(_addr(a), n, block, _addr(out))
        return out
    mv = memoryview(a)
    for i in range(k):
        out[i] = _xxh.xxh3_64_intdigest(mv[i * block:(i + 1) * block])
    return out


def blocks_at(addr, n, block):
    """block_hashes of the n bytes at addr (memory the caller holds alive) through the hash
    library; None without it."""
    lib = _lib
    if lib is None:
        return None
    k = max(1, -(-n // block))
    out = np.empty(k, np.uint64)
    STATS["bytes_hashed"] += n
    lib.bod_block_hashes(addr, n, block, out.ctypes.data)
    return out


def combine(chunk_hashes, at=None):
    """The trace hash (int) of an array above one chunk from its chunk hashes (uint64 array);
    at: their address when the caller knows it (a C-contiguous native uint64 array)."""
    h = chunk_hashes if at is not None else np.ascontiguousarray(chunk_hashes, dtype="<u8")
    if len(h) == 1:
        return int(h[0])
    lib = _backend()
    if lib is not None:
        return lib.bod_combine_chunk_hashes(_addr(h) if at is None else at, len(h))
    return _xxh.xxh3_64_intdigest(h.tobytes())


def bytes_of(arr, limit=None):
    """The raw C-order bytes of an array as a uint8 array, the first `limit` of them when given
    (a copy only when the array is not C-contiguous)."""
    a = np.asarray(arr)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    b = a.reshape(-1).view(np.uint8)
    return b if limit is None else b[:limit]


def quick_hash(a, addr=None):
    """array_hash of a C-contiguous numpy array (hashed where it lies, one call); addr: its
    data address when the caller has it."""
    n = a.nbytes
    lib = _lib if _lib is not None else _backend()
    if lib is None:
        return array_hash(a)
    STATS["bytes_hashed"] += n
    return "%016x" % lib.bod_hash_bytes(a.__array_interface__["data"][0] if addr is None
                                        else addr, n)


def array_hash(arr, limit=None):
    """hex_digest of an array's C-order bytes (the first `limit` of them when given)."""
    return hex_digest(bytes_of(arr, limit))
