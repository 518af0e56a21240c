"""The recorder's native helpers (_bod_fast, tool/recorder/native/fast_ext.cpp) against the
Python code they stand in for: `facts` against what `describe` reads of an array, `hash_buffer`
against the mapping's hash taken with numpy, and whole spools of recorded programs written with
and without them (BOD_RECORD_NO_FAST=1), which must be the same bytes."""
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import unittest

import support
import numpy as np

from bo_doctor import _fast
from bo_doctor import _bos
from bo_doctor._bos import BoTable
from bo_doctor._capture import after_loop, pre_loop, slot_loop, zero_strides
from bo_doctor._hashing import NO_HASH
from bo_doctor._records import Host, Placement, Slot
from bo_doctor._hashing import quick_hash, array_hash

NATIVE = _fast.module()


def python_facts(arr):
    """What describe reads of an array without the native helper."""
    cc = bool(arr.flags.c_contiguous)
    return (arr.dtype, arr.nbytes, list(arr.shape), arr.__array_interface__["data"][0], cc,
            bool(0 in arr.strides and zero_strides(arr)), arr.size)


def arrays():
    base = np.arange(4096, dtype=np.float32).reshape(64, 64)
    out = [np.zeros(0, np.uint16), np.zeros((3, 0), np.float32), np.array(5, np.int32),
           np.ones(7, np.int8), base, base[:, 1:], base[::2], base.T, base[3:9],
           np.broadcast_to(np.float32(1), (8, 4)), np.lib.stride_tricks.as_strided(
               np.zeros(4, np.int32), (5, 4), (0, 4)),
           np.arange(10, dtype=">i4"), np.frombuffer(b"abcdefgh", np.uint8),
           np.zeros((2, 3), dtype=[("a", "<i4"), ("b", "<f8")]), np.ones(3, np.complex64),
           np.ones((1, 5), np.float64)[:, ::2], np.zeros(1 << 20, np.uint8),
           np.zeros((1 << 20) - 1, np.uint8), np.array(["a", "bc"]),
           np.array([1, None], dtype=object), np.datetime64("2026-01-01") + np.arange(3)]
    ro = np.ones(16, np.uint16)
    ro.flags.writeable = False
    out.append(ro)
    return out


@unittest.skipIf(NATIVE is None, "no native helpers here: " + _fast.why)
class Facts(unittest.TestCase):
    def test_the_same_facts_as_numpy_gives(self):
        limit = 1 << 20
        seen = 0
        for a in arrays():
            got = NATIVE.facts(a, limit)
            if got is None:  # declined: the Python path reads it
                continue
            seen += 1
            want = python_facts(a)
            self.assertEqual(got[:7], want, repr(a.dtype) + str(a.shape))
            self.assertIs(type(got[1]), int)
            if want[4] and want[1] < limit:
                self.assertEqual("%016x" % got[7], quick_hash(a), repr(a))
            else:
                self.assertIsNone(got[7])
        self.assertGreater(seen, 15)

    def test_zero_strides_as_the_array_gives_them(self):
        # numpy exports other strides than arr.strides for arrays of 0 elements.
        for a in (np.zeros((0, 5)), np.zeros((4, 5))[:, :0], np.zeros((5, 0, 3), np.int8)):
            self.assertEqual(NATIVE.facts(a, 1 << 20)[:7], python_facts(a), repr(a.strides))

    def test_dtypes_with_no_buffer_format(self):
        a = np.datetime64("2026-01-01") + np.arange(4)
        self.assertEqual(NATIVE.facts(a, 1 << 20)[:7], python_facts(a))
        self.assertEqual("%016x" % NATIVE.facts(a, 1 << 20)[7], quick_hash(a))

    def test_what_it_declines(self):
        class Sub(np.ndarray):
            pass
        for x in ([1, 2], 3, None, "s", np.arange(3).view(Sub), np.float32(2)):
            self.assertIsNone(NATIVE.facts(x, 1 << 20), repr(x))

    def test_hash_buffer(self):
        for buf in (b"", b"abc", bytearray(range(256)) * 300, np.arange(70000, dtype=np.int32),
                    memoryview(b"xyz" * 1000)):
            m = np.frombuffer(buf, dtype=np.uint8)
            for limit in (0, 1, 3, 65536, 65537, 1 << 40):
                got = NATIVE.hash_buffer(buf, limit)
                self.assertEqual("%016x" % got[0], quick_hash(m[:min(limit, m.size)]))
                self.assertEqual(got[1], min(limit, m.size))
        self.assertIsNone(NATIVE.hash_buffer(np.arange(10)[::2], 100))
        self.assertIsNone(NATIVE.hash_buffer(3, 100))
        with self.assertRaises(OverflowError):
            NATIVE.hash_buffer(b"abc", 2 ** 64 + 3)
        with self.assertRaises(ValueError):
            NATIVE.hash_buffer(b"abc", -1)
        self.assertEqual(NATIVE.api_version(), _fast.API_VERSION)
        self.assertEqual(array_hash(np.zeros(0, np.uint8)), "%016x" % NATIVE.hash_buffer(b"", 5)[0])

    def test_view_block_hashes_with_and_without_the_module(self):
        from bo_doctor import _views
        self.assertIsNotNone(_views._FACTS)
        self.assertIsNotNone(_views._BLOCKS)

        def python_way(arr):  # the same, with the native facts and block hashes off
            saved = _views._FACTS, _views._BLOCKS
            _views._FACTS = _views._BLOCKS = None
            try:
                return _views.block_hashes(arr)
            finally:
                _views._FACTS, _views._BLOCKS = saved
        base = np.arange(3000, dtype=np.uint16)
        for arr in [np.ones(1, np.uint8), np.arange(2048, dtype=np.uint16),
                    np.arange(4095, dtype=np.uint8), np.arange(4097, dtype=np.uint8),
                    base[::2], base.reshape(30, 100).T, np.zeros((0, 4), np.float32)] + \
                [a for a in arrays() if not a.dtype.hasobject]:
            got = _views.block_hashes(arr)
            view = _views.View(arr, 1, 0, 0)
            want = python_way(arr)
            self.assertEqual(bytes(got), bytes(want), (arr.dtype, arr.shape, arr.strides))
            self.assertEqual(bytes(view.orig), bytes(want), (arr.dtype, arr.shape))
            self.assertEqual(_views.hash_values(got).tolist(),
                             [int(h) for h in _views.hash_values(want)])
            self.assertEqual((view.addr, view.nbytes, view.contiguous),
                             (arr.__array_interface__["data"][0], arr.nbytes,
                              bool(arr.flags.c_contiguous)))

    def test_block_hashes(self):
        from bo_doctor import _hashing
        m = _fast.module()
        for n in (0, 1, 4095, 4096, 4097, 3 * 4096, 100003, (1 << 20) + 5):
            a = np.frombuffer(np.random.default_rng(n).bytes(n), np.uint8)
            for block in (1, 4096, 65536):
                if n // block > 4096:
                    continue
                got = np.frombuffer(m.block_hashes(a, block), np.uint64)
                self.assertEqual(got.tolist(), _hashing.block_hashes(a, block).tolist(), (n, block))
        self.assertIsNone(m.block_hashes(np.arange(10)[::2], 4096))  # not C-contiguous
        self.assertIsNone(m.block_hashes(object(), 4096))
        with self.assertRaises(ValueError):
            m.block_hashes(np.zeros(4, np.uint8), 0)


    def test_write(self):
        m = _fast.module()
        with tempfile.TemporaryDirectory(prefix="bod_native_write_") as d:
            path = os.path.join(d, "spool")
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            st = os.fstat(fd)
            self.assertIs(m.write(fd, st.st_dev, st.st_ino, b"one\n"), True)
            self.assertIs(m.write(fd, st.st_dev, st.st_ino, b"x" * (1 << 20) + b"\n"), True)
            self.assertIs(m.write(fd, st.st_dev, st.st_ino, "text\n"), True)  # ASCII str too
            # Another file on that number (the program reused it): nothing written there
            self.assertIs(m.write(fd, st.st_dev, st.st_ino + 1, b"not here\n"), False)
            os.close(fd)
            self.assertIs(m.write(fd, st.st_dev, st.st_ino, b"closed\n"), False)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), b"one\n" + b"x" * (1 << 20) + b"\ntext\n")
            ro = os.open(path, os.O_RDONLY)  # the file, but not writable: the write's error
            try:
                with self.assertRaises(OSError):
                    m.write(ro, st.st_dev, st.st_ino, b"no\n")
            finally:
                os.close(ro)
            with self.assertRaises(ValueError):  # (checked before the descriptor)
                m.write(1, 0, 0, "text, not ASCII: \u00e9")
            with self.assertRaises(TypeError):
                m.write(1, 0, 0, 17)

    def test_frozen_objects_are_written_as_they_are_each_time(self):
        from bo_doctor import _records as R
        m = _fast.module()
        # More distinct frozen parts than the module keeps texts of, each written twice
        for k in range(20000):
            place = R.Placement("ns", "key", "k%d" % k, k, 4 * k, k + 1)
            hx = R.HostX("float32" if k % 2 else "uint16", bool(k % 3), bool(k % 5))
            host = R.Host([k], "f32", 4 * k, "%016x" % k, "var", "arg0", 0, hx)
            slot = R.Slot("input", False, host, place, 4 * k, True, 4 * k, "%016x" % k,
                          ["%016x" % k, "0" * 16])
            want = R.reference_line(slot)
            self.assertEqual(m.line(slot), want, k)
            self.assertEqual(m.line(slot), want, k)
        # The same values in new objects, and the old objects again
        self.assertEqual(m.line(R.Placement("a", "b", "c", 1, 2, 3)),
                         '{"ns":"a","pool":"b","name":"c","index":1,"bytes":2,"first_call":3}')


    def test_describe_gives_what_the_python_describe_gives(self):
        from types import SimpleNamespace
        from bo_doctor import _capture, _records, _views, _written
        views = _views.ViewTable()
        outs = [np.arange(64, dtype=np.float32), np.zeros((4, 8), np.uint16)]
        views.note_returned(3, outs, [object(), object()], {0, 1})
        # (with arrays of MIN_TRACKED bytes or more: hashed through HostHashes.hash natively,
        # but a non-contiguous one, which the Python describe does)
        args = arrays() + [outs[0], outs[1][1:], outs[1].T, outs[0][::2], [1.0, 2.0], None,
                           np.zeros(64, np.float32), np.ones(80, np.uint8), 7,
                           np.zeros(1 << 21, np.uint8), np.arange(1 << 19, dtype=np.float32),
                           np.ones((1024, 2048), np.uint16)[:, ::2], np.zeros((0, 1 << 20))]
        rec = SimpleNamespace(views=views, host_hashes=_written.HostHashes())
        n = len(args)
        for statics in (set(), set(range(0, n, 2)), set(range(n))):
            for new in (False, True):
                for layer in (-1, 0, 12):
                    def capture():
                        c = _capture.CallCapture.__new__(_capture.CallCapture)
                        c.args = SimpleNamespace(inputs=list(args), static=statics)
                        c.new, c.labels = new, SimpleNamespace(layer=layer)
                        c.arg_name = "arg%%d@L%d" % layer if layer >= 0 else "arg%d"
                        c.shape_placeholder, c.arg_views = [None] * n, [None] * n
                        return c
                    native = capture()
                    got = native.describe_all(rec)
                    saved = _capture._DESCRIBE
                    _capture._DESCRIBE = None
                    try:
                        python = capture()
                        want = python.describe_all(rec)
                    finally:
                        _capture._DESCRIBE = saved
                    what = (sorted(statics), new, layer)
                    self.assertEqual([_records.reference_line(h) for h in got],
                                     [_records.reference_line(h) for h in want], what)
                    self.assertEqual(native.shape_placeholder, python.shape_placeholder, what)
                    self.assertEqual([id(v) for v in native.arg_views],
                                     [id(v) for v in python.arg_views], what)
                    self.assertEqual(sum(v is not None for v in native.arg_views), 4)
        class Broken:
            @property
            def by_id(self):
                return 1 / 0

        with self.assertRaises(ZeroDivisionError):  # an error reading the table is the caller's
            NATIVE.describe([np.ones(4)], set(), False, 0, 1 << 20, Broken(),
                            _capture._dtype_info, {}, _capture._make_hostx, _records.Host)


class FakeBo:
    """A BO as slot_loop reads it: its size (each time asked noted in `log`)."""
    def __init__(self, size, log=None):
        self._size, self.log = size, log

    def size(self):
        if self.log is not None:
            self.log.append(id(self))
        return self._size


@unittest.skipIf(NATIVE is None, "no native helpers here: " + _fast.why)
class SlotLoop(unittest.TestCase):
    """The native `slots` against the Python `slot_loop` on random calls: the same Slots, bound
    slots, bytes and writes, and the same placements kept; or declined (None) where it must."""

    def run_both(self, rng, n_args, n_bos, keep):
        log = []
        hosts, bos = [], [FakeBo(int(rng.choice([0, 64, 128, 4096])), log) for _ in range(n_bos)]
        for i in range(n_args):
            source = str(rng.choice(["var", "tensor", "placeholder", "view"]))
            nbytes = 0 if source == "placeholder" else int(rng.choice([0, 32, 64, 128, 8192]))
            hosts.append(Host([nbytes], "i8", nbytes, "%016x" % int(rng.integers(1 << 62)),
                              source, "arg%d" % i, 0))
        static = {int(i) for i in rng.choice(n_args, int(rng.integers(n_args + 1)), False)}
        inter = {int(i) for i in rng.choice(n_args, int(rng.integers(n_args + 1)), False)}
        outs = {int(i) for i in rng.choice(n_args, int(rng.integers(n_args + 1)), False)}
        written = [bool(rng.integers(2)) for _ in range(n_args)]
        pre = {i: "%016x" % int(rng.integers(1 << 62)) for i in range(n_args) if rng.integers(2)}
        alias_error = bool(rng.integers(4) == 0)
        sides = []
        for fn in ("native", "python"):
            del log[:]
            key_places = [Placement("c", "key", "k", 0, 64, 1), None] if keep else []
            places, firsts = {}, {("c", "key", "k", 1): 3} if keep else {}
            args = (hosts, bos, set(static), set(inter), set(outs), list(written), dict(pre),
                    alias_error, "c", "k", 2, 9, key_places, places, firsts)
            inputs = [np.zeros(h.bytes, np.uint8) for h in hosts]
            declined = None
            if fn == "native":
                got = NATIVE.slots(*args, Slot, Placement, NO_HASH)
                if type(got) is list:  # declined: the Python loop goes on with these sizes
                    declined = got
                    got = slot_loop(inputs, *args, bo_hash=lambda bo, n, sync: "b0", sizes=got)
            else:
                got = slot_loop(inputs, *args, bo_hash=lambda bo, n, sync: "b0")
            sides.append((got, key_places, places, firsts, list(log), declined))
        return sides, hosts, bos, written, alias_error

    def test_the_same_slots_as_the_python_loop(self):
        rng = np.random.default_rng(7)
        declined = done = 0
        for _ in range(600):
            n_args = int(rng.integers(0, 9))
            (native, python), hosts, bos, written, alias_error = self.run_both(
                rng, n_args, int(rng.integers(0, n_args + 2)), bool(rng.integers(2)))
            larger = any(written[i] and not alias_error and hosts[i].bytes > bos[i].size()
                         for i in range(min(n_args, len(bos))))
            if native[5] is not None:
                self.assertTrue(larger, "declined a call it does exactly")
                declined += 1
            else:
                self.assertFalse(larger, "did a call with an array larger than its BO")
                done += 1
            self.assertEqual(native[4], python[4])  # each BO asked its size once, in order
            self.assertEqual(native[0][0], python[0][0])  # the Slots
            self.assertEqual(native[0][2:], python[0][2:])  # bytes written, writes
            self.assertEqual(len(native[0][1]), len(python[0][1]))
            for a, b in zip(native[0][1], python[0][1]):  # bound: the same BO objects
                self.assertEqual(a[:2] + a[3:], b[:2] + b[3:])
                self.assertIs(a[2], b[2])
            self.assertEqual(native[1:4], python[1:4])  # key_places, places, firsts
        self.assertGreater(declined, 20)
        self.assertGreater(done, 300)

    def test_a_kept_placement_is_shared_and_a_new_size_replaced(self):
        hosts = [Host([4], "i8", 4, "a" * 16, "var", "arg0", 0),
                 Host([4], "i8", 4, "b" * 16, "var", "arg1", 0)]
        kept = Placement("c", "key", "k", 0, 64, 1)
        key_places, places, firsts = [kept, Placement("c", "key", "k", 1, 32, 1)], {}, {}
        got = NATIVE.slots(hosts, [FakeBo(64), FakeBo(64)], set(), set(), {1}, [True, False],
                           {}, False, "c", "k", 1, 5, key_places, places, firsts, Slot,
                           Placement, NO_HASH)
        slots = got[0]
        self.assertIs(slots[0].bo, kept)
        self.assertEqual(slots[1].bo, Placement("c", "key", "k", 1, 64, 5))
        self.assertIs(key_places[1], slots[1].bo)
        self.assertEqual(firsts, {("c", "key", "k", 1): 5})
        self.assertEqual((slots[0].reuse, slots[1].reuse),
                         (["a" * 16, NO_HASH], ["b" * 16, NO_HASH]))
        self.assertEqual(got[2:], (4, 1))

    def test_an_error_of_the_bo_is_raised(self):
        class Broken:
            def size(self):
                raise RuntimeError("gone")
        with self.assertRaises(RuntimeError):
            NATIVE.slots([Host([4], "i8", 4, "a" * 16, "var", "arg0", 0)], [Broken()], set(),
                         set(), set(), [True], {}, False, "c", "k", 1, 5, [], {}, {}, Slot,
                         Placement, NO_HASH)


class FakeTable:
    """The BO table as after_loop uses it; every hash and remember noted in order."""
    def __init__(self, rng):
        self.rng, self.log, self.assumed, self.changed = rng, [], set(), {}

    def hash(self, bo, nbytes, sync, keep=False):
        h = NO_HASH if self.rng.integers(8) == 0 else "%016x" % int(self.rng.integers(4))
        self.log.append(("hash", id(bo), nbytes, sync, keep, h))
        return h

    def remember(self, bo, nbytes, h):
        self.log.append(("remember", id(bo), nbytes, h))

    def spot(self, bo, nbytes, before):
        found = bool(self.rng.integers(2))
        self.log.append(("spot", id(bo), nbytes, before, found))
        return found


class FakeTableNoSpot(FakeTable):
    """A table without spot checks: a spot-checked call reads the static slot whole."""
    spot = property(lambda self: self.no_such_attribute)


@unittest.skipIf(NATIVE is None, "no native helpers here: " + _fast.why)
class AfterLoop(unittest.TestCase):
    """The native `after` against the Python `after_loop` on random bound slots: the same
    reads and remembered hashes in the same order, the same reuse[1], lists and changes."""

    def test_the_same_reads_as_the_python_loop(self):
        rng = np.random.default_rng(11)
        hashes = [NO_HASH] + ["%016x" % k for k in range(4)]
        seen = {"spot": 0, "keep": 0}
        for _ in range(800):
            n_args = int(rng.integers(0, 9))
            bos = [FakeBo(64) for _ in range(int(rng.integers(1, 4)))]
            bound = []
            for i in range(n_args):
                if rng.integers(5) == 0:
                    continue  # unbound
                host = Host([4], "i8", 4, "a" * 16, str(rng.choice(["var", "view", "tensor"])),
                            "arg%d" % i, 0)
                place = Placement("c", str(rng.choice(["key", "shared"])), "k", i, 64, 1)
                s = Slot("input", False, host, place, 64, False, 0, NO_HASH,
                         [str(rng.choice(hashes)), NO_HASH])
                bound.append((i, s, bos[int(rng.integers(len(bos)))], int(rng.integers(1, 64)),
                              bool(rng.integers(2)), bool(rng.integers(2))))
            outs = {int(i) for i in rng.choice(max(n_args, 1), int(rng.integers(3)))}
            static = {int(i) for i in rng.choice(max(n_args, 1), int(rng.integers(4)))}
            flags = [bool(rng.integers(2)) for _ in range(3)]
            shadow = bool(rng.integers(2))
            assumed_before = [i for i in range(n_args) if rng.integers(2)]
            seed = int(rng.integers(1 << 30))
            sampled = int(rng.integers(3))  # NOT_SAMPLED, SPOT or READ
            no_spot = rng.integers(4) == 0
            sides = []
            for native in (True, False):
                local = np.random.default_rng(seed)
                table = (FakeTableNoSpot if no_spot else FakeTable)(local)
                b = [(i, dataclasses.replace(s, reuse=list(s.reuse)), bo, e, w, p)
                     for i, s, bo, e, w, p in bound]
                opened = []

                def missed_open(ns, key, i, local=local, opened=opened):
                    opened.append((ns, key, i))
                    return bool(local.integers(2))
                args = (b, set(outs), set(static), flags[0], sampled, flags[2], table,
                        missed_open if shadow else None, "c", "k", [], [], assumed_before, 7)
                changes = NATIVE.after(*args, NO_HASH, False) if native else after_loop(*args)
                sides.append((changes, table.log, table.assumed, table.changed,
                               [s.reuse for _, s, *_ in b], args[10], args[11], opened))
            self.assertEqual(sides[0], sides[1])
            for entry in sides[0][1]:
                if entry[0] == "spot":
                    seen["spot"] += 1
                elif entry[0] == "hash" and entry[4]:
                    seen["keep"] += 1
        # the random calls reached the spot checks and the kept reads
        self.assertGreater(seen["spot"], 5)
        self.assertGreater(seen["keep"], 15)


class LoggedBo:
    """A BO whose reads are logged (the engine-visible calls must be the same, in order)."""
    def __init__(self, log, k, size, data):
        self.log, self.k, self._size, self.data = log, k, size, data
        self.moved = False

    def address(self):
        self.log.append(("address", self.k))
        if self.k == 3:
            raise RuntimeError("no address")  # identity None
        return 0x1000 * (self.k + 1) + (1 if self.moved else 0)

    def size(self):
        self.log.append(("size", self.k))
        return self._size

    def sync(self, direction, size=None, offset=0):
        self.log.append(("sync", self.k, size, offset))

    def map(self):
        self.log.append(("map", self.k))
        return self.data


def table_from(spec, bos):
    """A BoTable in the state `spec` gives: (reuse, reading, known, viewed, assumed)."""
    reuse, reading, known, viewed, assumed = spec
    t = BoTable(reuse=reuse)
    for k, (ident_ok, hashes) in known.items():
        ident = (0x1000 * (k + 1), bos[k]._size) if ident_ok else (1, 1)
        t.known[id(bos[k])] = (ident, dict(hashes))
    t.viewed = {id(bos[k]) for k in viewed}
    t.assumed = {id(bos[k]) for k in assumed}
    if reading:
        t.reading()
    return t


def table_state(t, bos):
    index = {id(bo): k for k, bo in enumerate(bos)}
    return ({index[i]: v for i, v in t.known.items()}, sorted(index[i] for i in t.assumed),
            None if t._ids is None else {index[i]: (index[id(b)], ident)
                                         for i, (b, ident) in t._ids.items()})


@unittest.skipIf(NATIVE is None, "no native helpers here: " + _fast.why)
class BoReads(unittest.TestCase):
    """The native `pre_reads`, and `after` with the BO table's remember done natively, against
    the Python `pre_loop` and `after_loop` on a real BoTable: the same BO calls in the same
    order, the same hashes and the same table afterwards."""

    def setUp(self):
        self.saved = _bos._from_device
        _bos._from_device = "FROM_DEVICE"  # no pyxrt here: the direction is only passed on

    def tearDown(self):
        _bos._from_device = self.saved

    def scenario(self, rng):
        n_args = int(rng.integers(0, 9))
        log = []
        bos = [LoggedBo(log, k, int(rng.choice([64, 128])),
                        bytes(rng.integers(0, 3, 128, dtype=np.uint8)))
               for k in range(int(rng.integers(1, 5)))]
        slot_bos = [bos[int(rng.integers(len(bos)))] for _ in range(n_args)]
        hosts = []
        for i in range(n_args):
            source = str(rng.choice(["var", "tensor", "placeholder", "view"]))
            nbytes = 0 if source == "placeholder" else int(rng.choice([32, 64, 128]))
            hosts.append(Host([nbytes], "i8", nbytes, "a" * 16, source, "arg%d" % i, 0))
        hashes = lambda: {int(n): "%016x" % int(rng.integers(3))
                          for n in rng.choice([32, 64, 128], int(rng.integers(3)))}
        known = {k: (bool(rng.integers(4)), hashes()) for k in range(len(bos))
                 if rng.integers(3)}
        spec = (bool(rng.integers(5)), bool(rng.integers(4)), known,
                [k for k in range(len(bos)) if rng.integers(5) == 0],
                [k for k in range(len(bos)) if rng.integers(3) == 0])
        pick = lambda: {int(i) for i in rng.choice(max(n_args, 1), int(rng.integers(4)))}
        return log, bos, slot_bos, hosts, spec, pick

    def test_pre_reads_as_the_python_loop(self):
        rng = np.random.default_rng(5)
        for _ in range(500):
            log, bos, slot_bos, hosts, spec, pick = self.scenario(rng)
            n_args = len(hosts)
            written = [bool(rng.integers(2)) for _ in range(n_args)]
            sets = [pick() for _ in range(4)]  # static, inter, outs, new_data
            pooled = {id(b) for b in bos if rng.integers(4) == 0}
            flags = [bool(rng.integers(2)) for _ in range(4)]  # lazy, left_ok, reuse, sampled
            seed = int(rng.integers(1 << 30))
            sides = []
            for native in (True, False):
                del log[:]
                local = np.random.default_rng(seed)
                table = table_from(spec, bos)
                asked = []

                def verified(ns, key, i, sampled, local=local, asked=asked):
                    asked.append((ns, key, i, sampled))
                    return bool(local.integers(2))
                out = ({}, [], set(), [])
                args = (hosts, list(slot_bos), written, set(sets[0]), set(sets[1]),
                        set(sets[2]), set(sets[3]), set(pooled), flags[0], flags[1], flags[2],
                        table, verified, "c", "k", flags[3]) + out
                got = NATIVE.pre_reads(*args, NO_HASH) if native else pre_loop(*args)
                sides.append((got, out, list(log), asked, table_state(table, bos)))
            self.assertIsNotNone(sides[0][0])
            self.assertEqual(sides[0], sides[1])

    def test_after_with_the_native_remember_as_the_python_loop(self):
        rng = np.random.default_rng(6)
        for _ in range(500):
            log, bos, slot_bos, hosts, spec, pick = self.scenario(rng)
            bound = []
            for i, (h, bo) in enumerate(zip(hosts, slot_bos)):
                s = Slot("input", False, h, Placement("c", "key", "k", i, 64, 1), 64, False, 0,
                         NO_HASH, [str(rng.choice([NO_HASH, "%016x" % 1])), NO_HASH])
                bound.append((i, s, bo, int(rng.choice([32, 64, 128])), bool(rng.integers(2)),
                              h.source == "placeholder"))
            flags = [bool(rng.integers(2)) for _ in range(3)]
            outs, static = pick(), pick()
            assumed_before = sorted(pick())
            moved = [b for b in bos if rng.integers(4) == 0]
            sides = []
            for native in (True, False):
                del log[:]
                table = table_from(spec, bos)
                for b in bos:
                    b.moved = b in moved  # a new identity for these
                b2 = [(i, dataclasses.replace(s, reuse=list(s.reuse)), bo, e, w, p)
                      for i, s, bo, e, w, p in bound]
                args = (b2, set(outs), set(static), flags[0], int(flags[1]) * 2, flags[2], table, None,
                        "c", "k", [], [], assumed_before, 7)
                changes = NATIVE.after(*args, NO_HASH, True) if native else after_loop(*args)
                sides.append((changes, list(log), table_state(table, bos), table.changed and
                              sorted(table.changed.values()), [s.reuse for _, s, *_ in b2],
                              args[10], args[11]))
            self.assertEqual(sides[0], sides[1])

    def test_after_spot_checks_with_the_native_remember_as_the_python_loop(self):
        """Static slots of BOs of 1 MiB and more, read whole with their chunks kept, then a call
        that is not sampled, spot-checked or read: the same BO calls (partial syncs included),
        hashes, kept chunks and turns on both sides; a BO whose bytes changed is read whole."""
        rng = np.random.default_rng(8)
        big = [(1 << 20) + 64, 3 << 19, 2 << 20]
        data = {n: bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in big}
        seen = {"spot_sync": 0, "whole_after_spot": 0}
        for _ in range(120):
            log = []
            bos = [LoggedBo(log, k, int(n), data[int(n)])
                   for k, n in enumerate(rng.choice(big, int(rng.integers(1, 4))))]
            n_args = int(rng.integers(1, 6))
            slot_bos = [bos[int(rng.integers(len(bos)))] for _ in range(n_args)]
            sampled = int(rng.integers(3))
            changed = [b for b in bos if rng.integers(3) == 0]
            sides = []
            for native in (True, False):
                table = BoTable()
                for b in bos:
                    b.data, b.moved = data[b._size], False
                    table.hash(b, b._size, sync=True, keep=True)  # the whole read, chunks kept
                for b in changed:  # the device changed its bytes since
                    b.data = b.data[:-5] + bytes(5)
                del log[:]
                bound = []
                for i, bo in enumerate(slot_bos):
                    h = Host([bo._size], "i8", bo._size, "a" * 16, "tensor", "arg%d" % i, 0)
                    known = table.chunks[id(bo)][2]
                    s = Slot("static", False, h, Placement("c", "key", "k", i, bo._size, 1),
                             bo._size, False, 0, NO_HASH, [known, NO_HASH])
                    bound.append((i, s, bo, bo._size, False, False))
                table.reading()
                args = (bound, set(), set(range(n_args)), True, sampled, False, table, None,
                        "c", "k", [], [], [], 7)
                changes = NATIVE.after(*args, NO_HASH, True) if native else after_loop(*args)
                index = {id(b): k for k, b in enumerate(bos)}
                sides.append((changes, list(log), table_state(table, bos),
                              {index[i]: (e[1], e[2], e[4]) for i, e in table.chunks.items()},
                              [s.reuse for _, s, *_ in bound], args[10]))
            self.assertEqual(sides[0], sides[1])
            syncs = [e for e in sides[0][1] if e[0] == "sync"]
            seen["spot_sync"] += sum(1 for e in syncs if e[2] is not None)
            if sampled == 1 and changed and any(b in changed for b in slot_bos):
                seen["whole_after_spot"] += sum(1 for e in syncs if e[2] is None)
        self.assertGreater(seen["spot_sync"], 50)
        self.assertGreater(seen["whole_after_spot"], 5)


# Other interpreters a user's venv may run: BOD_TEST_PYTHONS (colon-separated paths), else
# python3.10/3.12/3.13 on PATH or installed by pyenv; skipped where there are none.
def other_pythons():
    import glob
    import shutil
    given = os.environ.get("BOD_TEST_PYTHONS", "")
    if given:
        return [p for p in given.split(":") if p]
    found = []
    for minor in ("10", "12", "13"):
        exe = shutil.which("python3." + minor)
        cands = ([exe] if exe else []) + sorted(glob.glob(os.path.expanduser(
            "~/.pyenv/versions/3.%s.*/bin/python3" % minor)))
        for c in cands:
            r = subprocess.run([c, "-c", "import sys; print(sys.version_info[1])"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0 and r.stdout.strip() == minor:
                found.append(c)
                break
    return found


PROBE = r"""
import importlib.machinery, importlib.util, json, sys
sys.path.insert(0, sys.argv[2])
import _fast
import dataclasses
m = _fast.module()
if sys.version_info < (3, 11):
    print("declined" if m is None and "3.11" in _fast.why else "loaded?")
    raise SystemExit
@dataclasses.dataclass
class R:
    a: list
    b: dict
m.register(R, ("a", "b"), None)
r = R([1, "x\"\n", 2.5, float("nan"), None, True, 2 ** 70], {"k": (1, 2)})
want = '{"a":[1,"x\\"\\n",2.5,"nan",null,true,%d],"b":{"k":[1,2]}}' % 2 ** 70
if m.line(r) != want:
    raise SystemExit("differs: %r" % m.line(r))
@dataclasses.dataclass(frozen=True)
class F:
    a: str
    b: int
m.register(F, ("a", "b"), None, True)
f = F("x", 1)
if [m.line(f), m.line(f)] != ['{"a":"x","b":1}'] * 2:
    raise SystemExit("frozen differs: %r" % m.line(f))
import os, tempfile
with tempfile.TemporaryDirectory() as d:
    fd = os.open(os.path.join(d, "s"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    st = os.fstat(fd)
    ok = m.write(fd, st.st_dev, st.st_ino, b"line\n") is True and \
        m.write(fd, st.st_dev, st.st_ino + 1, b"no\n") is False
    os.close(fd)
    if not ok or open(os.path.join(d, "s")).read() != "line\n":
        raise SystemExit("write differs")
got = m.describe([1, "x"], set(), False, 0, 1 << 20, None, None, {}, None, None)
print("ok" if got == ([None, None], [False, False], [None, None], 0) else "describe: %r" % (got,))
"""


@unittest.skipIf(NATIVE is None, "no native helpers here: " + _fast.why)
class OtherPythons(unittest.TestCase):
    """The one abi3 build loads into the 3.11+ interpreters a user's venv may have and writes
    the same line there; a 3.10 interpreter declines it (the Python path)."""

    def test_each_interpreter_on_path(self):
        pkg = os.path.dirname(_fast.__file__)
        ran = 0
        for exe in other_pythons():
            r = subprocess.run([exe, "-c", PROBE, "x", pkg], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=""), timeout=60)
            self.assertEqual(r.returncode, 0, exe + ": " + r.stderr)
            old = r.stdout.strip() == "declined"
            self.assertEqual(r.stdout.strip(), "declined" if old else "ok", exe)
            ran += 1
        if not ran:
            self.skipTest("no other Python 3 interpreter on PATH")


# The bench engine at toy size and the run_captures programs, recorded in a child interpreter
# through sitecustomize as `bo-doctor record` does, with and without the native helpers.
STANDIN = os.path.join(support.ROOT, "tests", "recorder", "standin")
PROGRAMS = [  # (argv, with --shadow too)
    ([os.path.join(support.ROOT, "tests", "recorder", "bench", "decode_1b.py"), "--size",
      "small", "--tokens", "4", "--cache", "standin"], True),
] + [([os.path.join(STANDIN, "run_llama.py"), "--bug", b], True) for b in (
    "none", "key-collision", "stale-static", "size-mismatch", "placeholder-upload",
    "alias-conflict", "static-clobber", "view-overwritten", "missed-static", "config-error")] + \
    [([os.path.join(STANDIN, "run_captures.py"), "--variant", v], False) for v in (
        "pass-on", "after-loop", "capture-views", "capture-slices", "skip-view",
        "key-without-layer", "second-request", "lora-in-place", "input-in-intermediate",
        "kv-in-static", "head-placeholder", "accumulate")]
VOLATILE = ("pid", "ppid", "start_ns", "recorder_seconds")


def spool_of(argv, env_extra):
    with tempfile.TemporaryDirectory(prefix="bod_native_") as d:
        spool = os.path.join(d, "spool")
        os.mkdir(spool)
        env = dict(os.environ)
        env.update({"BOD_RECORD_SPOOL": spool, "PYTHONPATH": support.RECORDER,
                    "PYTHONDONTWRITEBYTECODE": "1"}, **env_extra)
        env.pop("BOD_RECORD_VERIFY_LINES", None)
        rc = subprocess.run([sys.executable] + argv, env=env, cwd=d, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, timeout=120).returncode
        out = ["exit %d" % rc]
        for name in sorted(os.listdir(spool)):
            with open(os.path.join(spool, name)) as f:
                for line in f:
                    rec = json.loads(line)
                    for k in VOLATILE:
                        rec.pop(k, None)
                    rec.get("call", {}).get("x", {}).pop("cache_id", None)  # an id()
                    if rec["kind"] == "kernel":
                        rec.pop("binary")  # in a fresh temporary folder
                    out.append(json.dumps(rec))
        return out


@unittest.skipIf(NATIVE is None, "no native helpers here: " + _fast.why)
class Spools(unittest.TestCase):
    def test_the_same_spool_with_and_without_the_native_helpers(self):
        for argv, with_shadow in PROGRAMS:
            for shadow in ("", "1") if with_shadow else ("",):
                env = {"BOD_RECORD_SHADOW": shadow} if shadow else {}
                fast = spool_of(argv, env)
                slow = spool_of(argv, dict(env, BOD_RECORD_NO_FAST="1"))
                self.assertGreater(len(fast), 4, argv)
                self.assertEqual(fast, slow, "%s shadow=%r" % (argv, shadow))


if __name__ == "__main__":
    unittest.main()
