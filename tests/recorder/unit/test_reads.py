"""Reading only what a check needs (docs/recording.md): a skipped static slot's BO is read again
after the dispatch only at its key's sampled calls, a skipped intermediate's BO only before a
call that passed it other data than the key's previous call, and every unread hash is named in
the call line's x. With BOD_RECORD_EXACT=1 everything is read, as before; with --shadow every
BO before the dispatch, and after it on shadowed calls."""
import gc
import os
import weakref
import unittest
from unittest import mock

import support
import numpy as np

from bo_doctor import _hashing
from bo_doctor import _bos
from bo_doctor._bos import SPOT_CHUNK, SPOT_MIN, SPOT_TURNING, BoTable, spot_chunks
from bo_doctor._hashing import STATS, array_hash
from bo_doctor._record import Recorder
from bo_doctor._spool import Spool

NO_HASH = "0" * 16
N = 1 << 20  # 4 MiB of f32 per slot


CLOBBER = {"at": None, "calls": 0}


def kernel(a):
    """out = w[:4] + scratch[:4]; writes its scratch whole (an intermediate), and its static
    weight at the call CLOBBER["at"] (a clobbering kernel)."""
    CLOBBER["calls"] += 1
    w, s = a.get(0, (N,)), a.get(1, (N,))
    a.get(3, (4,))[...] = w[:4] + s[:4] + a.get(2, (4,))
    s[...] = 1.0
    if CLOBBER["calls"] == CLOBBER["at"]:
        w[:4] = 7.0


CLOBBER_AT_CHUNK = {"chunk": None}


def chunk_kernel(a):
    """kernel, writing at call CLOBBER["at"] one value in chunk CLOBBER_AT_CHUNK["chunk"] of
    its static weight instead of the first four."""
    CLOBBER["calls"] += 1
    w, s = a.get(0, (N,)), a.get(1, (N,))
    a.get(3, (4,))[...] = w[:4] + s[:4] + a.get(2, (4,))
    s[...] = 1.0
    if CLOBBER["calls"] == CLOBBER["at"]:
        w[CLOBBER_AT_CHUNK["chunk"] * SPOT_CHUNK // 4 + 5] = 7.0


def overwriting_kernel(a):
    """out = w[:4] + a2, after writing its scratch whole: the scratch's stale bytes are never
    read (a shadow run gives bit-identical outputs)."""
    w, s = a.get(0, (N,)), a.get(1, (N,))
    s[...] = 1.0
    a.get(3, (4,))[...] = w[:4] + s[:4] + a.get(2, (4,))


class Reads(support.RecorderTest):
    def run_calls(self, calls, clobber_at=None, new_scratch_at=(), body=kernel):
        c = self.wrapped(cache_dir=os.path.join(self.dir, "kernels"))
        c.register("k", body, 4)
        w = np.full(N, 2.0, np.float32)
        CLOBBER.update(at=clobber_at, calls=0)
        reads = []  # (syncs, BO bytes hashed) each call added
        for n in range(1, calls + 1):
            scratch = np.full(N, 3.0, np.float32) if n in new_scratch_at else \
                np.zeros(N, np.float32)  # untouched pages: known zero, not read
            s0, b0 = STATS["syncs"], STATS["hashed_bo_before"] + STATS["hashed_bo_after"]
            c.load_and_run("k", {}, w, scratch, np.ones(4, np.float32), np.zeros(4, np.float32),
                           static_input_indices=[0], intermediate_indices=[1],
                           output_indices=[3], bo_key="k")
            reads.append((STATS["syncs"] - s0,
                          STATS["hashed_bo_before"] + STATS["hashed_bo_after"] - b0))
        return self.calls(), reads

    def test_static_bo_read_again_only_at_sampled_calls(self):
        calls, reads = self.run_calls(20)
        sampled = [n for n in range(1, 21) if n <= 3 or n & (n - 1) == 0]
        self.assertEqual(sampled, [1, 2, 3, 4, 8, 16])
        spots = [3, 4, 8, 16]  # after the whole reads of calls 1-2: spot checks
        for call in calls:
            n, s = call["n"], call["slots"][0]
            if n in (1, 2):
                self.assertNotIn(0, call["x"].get("bo_assumed_unchanged", []), n)
            else:
                self.assertEqual(call["x"]["bo_assumed_unchanged"], [0], n)
            self.assertEqual(call["x"].get("bo_spot_checked"), [0] if n in spots else None, n)
            self.assertEqual(s["reuse"], [array_hash(np.full(N, 2.0, np.float32))] * 2, n)
        # Between the sampled calls nothing of the 4 MiB weight or scratch BO is read or synced
        # (the 16-byte output is what is hashed).
        for n in (5, 6, 7, 9, 15, 17, 20):
            self.assertEqual(reads[n - 1], (0, 16), n)
        self.assertGreaterEqual(reads[1][1], 4 * N)  # call 2 reads the weight BO whole
        # A spot check syncs and hashes 3 or 4 of the weight's 64 chunks, one at a time.
        for turn, n in enumerate(spots):
            k = len(spot_chunks(4 * N // SPOT_CHUNK, turn))
            self.assertIn(k, (3, 4))
            self.assertEqual(reads[n - 1], (k, k * SPOT_CHUNK + 16), n)

    def test_a_clobber_a_spot_check_misses_shows_at_a_later_one(self):
        """A kernel that writes the middle of its static BO at call 5: call 8's spot check reads
        other chunks (taken as unchanged: a known limit of a sample), call 16's reads that
        chunk, finds the write and reads the BO whole: its reuse after differs from before
        there."""
        # a chunk call 16's check (the 4th) reads and none before it did
        chunk = min(set(spot_chunks(64, 3)) - set().union(*(spot_chunks(64, t) for t in range(3))))
        CLOBBER_AT_CHUNK["chunk"] = chunk
        try:
            calls, reads = self.run_calls(17, clobber_at=5, body=chunk_kernel)
        finally:
            CLOBBER_AT_CHUNK["chunk"] = None
        w = array_hash(np.full(N, 2.0, np.float32))
        by_n = {c["n"]: c for c in calls}
        self.assertEqual(by_n[8]["slots"][0]["reuse"], [w, w])
        self.assertEqual(by_n[8]["x"]["bo_spot_checked"], [0])
        self.assertEqual(by_n[16]["slots"][0]["reuse"][0], w)
        self.assertNotEqual(by_n[16]["slots"][0]["reuse"][1], w)
        self.assertNotIn("bo_spot_checked", by_n[16]["x"])
        self.assertNotIn(0, by_n[16]["x"].get("bo_assumed_unchanged", []))
        self.assertGreaterEqual(reads[15][1], 4 * N)  # read whole after the failed check
        self.assertEqual(by_n[17]["slots"][0]["reuse"], [by_n[16]["slots"][0]["reuse"][1]] * 2)

    def test_a_clobber_between_samples_shows_at_the_next_sampled_call(self):
        calls, _ = self.run_calls(9, clobber_at=6)
        w = array_hash(np.full(N, 2.0, np.float32))
        by_n = {c["n"]: c["slots"][0]["reuse"] for c in calls}
        self.assertEqual(by_n[6], [w, w])  # not read at call 6: taken as unchanged
        self.assertEqual(by_n[8][0], w)
        self.assertNotEqual(by_n[8][1], w)  # read at call 8: the device's write shows
        self.assertEqual(by_n[9], [by_n[8][1]] * 2)

    def test_intermediate_read_before_a_call_that_passes_new_data(self):
        calls, reads = self.run_calls(7, new_scratch_at=(6,))
        ones = array_hash(np.full(N, 1.0, np.float32))
        for call in calls:
            n, s = call["n"], call["slots"][1]
            self.assertEqual(s["reuse"][1], NO_HASH, n)  # never read after the dispatch
            self.assertIn(1, call["x"]["bo_unread_after"])
            if n <= 5:  # the data the key's previous call passed (or the key's first call)
                self.assertEqual(s["reuse"][0], s["written_hash"] if n == 1 else NO_HASH, n)
                if n > 1:
                    self.assertIn(1, call["x"]["bo_unread_before"])
        # Call 6 passes 3.0s, call 7 zeros again: new data each time, so what the BO held
        # (the kernel's 1.0s) is read, with one sync, for that BO only.
        for n in (6, 7):
            self.assertEqual(calls[n - 1]["slots"][1]["reuse"][0], ones, n)
            self.assertNotIn("bo_unread_before", calls[n - 1]["x"], n)
            self.assertEqual(reads[n - 1], (1, 4 * N + 16), n)

    def test_exact_mode_reads_everything(self):
        with mock.patch.dict(os.environ, {"BOD_RECORD_EXACT": "1"}):
            self.rec = Recorder(Spool(self.spool_path + ".exact"), argv=["unit-test"])
            self.spool_path += ".exact"
            self.spool.close()
            self.spool = self.rec.spool
            from shared.infra.cache import KernelCache
            self.wrapped = type("KernelCache", (KernelCache,), {
                "load_and_run": self.rec.attacher.wrap(KernelCache.load_and_run)})
            calls, _ = self.run_calls(6)
        for call in calls:
            self.assertFalse({"bo_unread_before", "bo_unread_after", "bo_assumed_unchanged"} &
                             set(call["x"]), call["n"])
            self.assertNotIn(NO_HASH, call["slots"][1]["reuse"][1:], call["n"])


class ReadsWithShadow(Reads):
    shadow = True

    def test_static_bo_read_again_only_at_sampled_calls(self):
        calls, _ = self.run_calls(9)
        for call in calls:
            self.assertNotIn("bo_assumed_unchanged", call["x"])
            for s in call["slots"]:
                self.assertNotIn(NO_HASH, s["reuse"], call["n"])

    test_a_clobber_between_samples_shows_at_the_next_sampled_call = None
    test_a_clobber_a_spot_check_misses_shows_at_a_later_one = None
    test_intermediate_read_before_a_call_that_passes_new_data = None

    def test_calls_not_shadowed_are_read_as_without_shadow(self):
        """A call a harmless shadow run stands for reads after its dispatch what a call of
        plain record reads: the static BO only at sampled calls, the scratch not, and the input
        slot whose data never changed, because missed-static reads it there. The scratch then
        holds what that call left (a leftover, "left:K" in the signature): the first such call,
        call 3, whose scratch's hash call 2's shadow run read after its dispatch, is shadowed,
        and once that run was harmless the later ones are not read before the call either,
        but where its hash is known (call 4: call 3's shadow run read it) or at the key's
        2^k-th calls from the 8th (call 8)."""
        calls, reads = self.run_calls(10, body=overwriting_kernel)
        w = array_hash(np.full(N, 2.0, np.float32))
        ones = array_hash(np.full(N, 1.0, np.float32))
        self.assertEqual([c.get("shadow_like") for c in calls],
                         [None, None, None, 3, 3, 3, 3, 3, 3, 3])
        for call in calls[2:]:
            n, (s0, s1, s2) = call["n"], call["slots"][:3]
            self.assertEqual(s0["reuse"], [w, w], n)
            self.assertEqual(s2["reuse"], [s2["host"]["hash"]] * 2, n)  # for missed-static
            if n == 3:  # shadowed: every BO read after the dispatch
                self.assertEqual(s1["reuse"], [ones, ones], n)
                continue
            self.assertEqual(call["x"]["bo_unread_after"], [1], n)
            if n in (4, 8):  # 4: known from the shadowed call before; 8: read again
                self.assertEqual(s1["reuse"], [ones, NO_HASH], n)
                self.assertNotIn("bo_unread_before", call["x"], n)
            else:  # the leftover, not read
                self.assertEqual(s1["reuse"], [NO_HASH, NO_HASH], n)
                self.assertEqual(call["x"]["bo_unread_before"], [1], n)
            self.assertEqual(call["x"]["bo_assumed_unchanged"], [0], n)
            # sampled: the weight BO spot-checked (call 3's whole read, shadowed, kept the
            # chunks: call 4 makes the 1st spot check, call 8 the 2nd)
            self.assertEqual(call["x"].get("bo_spot_checked"), [0] if n in (4, 8) else None, n)
        # Not sampled, nothing but the 16-byte input (one sync, for missed-static) and the
        # output are read: not the 4 MiB scratch.
        for n in (5, 6, 7, 9, 10):
            self.assertEqual(reads[n - 1], (1, 32), n)
        k = len(spot_chunks(64, 1))
        # call 8: the scratch whole, the weight's spot check (k chunks), the input
        self.assertEqual(reads[7], (2 + k, 4 * N + k * SPOT_CHUNK + 32))

    def test_a_leftover_shown_harmless_on_one_key_stands_for_another(self):
        """Two keys (two layers) of one kernel, binary and shapes: key "a"'s leftover gets the
        shadow run (its 3rd call, the leftover's hash known from the shadowed 2nd); key "b"'s
        3rd call, read the same way, has the signature that run made harmless, so it is not
        shadowed, and from its 4th call on its scratch is not read (the leftover's next
        reading is at the key's 8th call)."""
        c = self.wrapped(cache_dir=os.path.join(self.dir, "kernels"))
        c.register("k", overwriting_kernel, 4)
        w = np.full(N, 2.0, np.float32)
        for _ in range(6):
            for key in ("a", "b"):
                c.load_and_run("k", {}, w, np.zeros(N, np.float32), np.ones(4, np.float32),
                               np.zeros(4, np.float32), static_input_indices=[0],
                               intermediate_indices=[1], output_indices=[3], bo_key=key)
        calls = self.calls()
        b = [x for x in calls if x["bo_key"] == "b"]
        self.assertIsNone(calls[4].get("shadow_like"))  # key a's 3rd call: the leftover's run
        self.assertEqual(b[2].get("shadow_like"), 5)    # key b's 3rd: read, stood for by it
        self.assertNotIn("bo_unread_before", b[2]["x"])
        self.assertNotEqual(b[2]["slots"][1]["reuse"][0], NO_HASH)
        for x in b[3:]:
            self.assertEqual(x["x"]["bo_unread_before"], [1], x["n"])
            self.assertEqual(x["slots"][1]["reuse"][0], NO_HASH, x["n"])

    def test_a_leftover_of_another_kind_is_shadowed_at_the_next_sampled_call(self):
        """From call 6 on the kernel leaves its scratch as zeros (what the program passes):
        the leftover's kind changes from "bytes" to none (call 3 showed "bytes" harmless: its
        hash known from call 2's shadow run). Call 7's is not read (its kind taken
        as before); call 8, sampled, reads it: the BOs hold what the no-reuse engine writes
        (call 1 stands for it); call 9's leftover of that new kind is read and shadowed."""
        state = {"n": 0}

        def kernel_then_zeros(a):  # by the program's call number (the shadow runs it too)
            w, s = a.get(0, (N,)), a.get(1, (N,))
            s[...] = 1.0 if state["n"] < 6 else 0.0
            a.get(3, (4,))[...] = w[:4] + a.get(2, (4,))

        c = self.wrapped(cache_dir=os.path.join(self.dir, "kernels"))
        c.register("k", kernel_then_zeros, 4)
        w = np.full(N, 2.0, np.float32)
        for n in range(1, 10):
            state["n"] = n
            c.load_and_run("k", {}, w, np.zeros(N, np.float32), np.ones(4, np.float32),
                           np.zeros(4, np.float32), static_input_indices=[0],
                           intermediate_indices=[1], output_indices=[3], bo_key="k")
        calls = self.calls()
        zeros = array_hash(np.zeros(N, np.float32))
        self.assertEqual([c.get("shadow_like") for c in calls],
                         [None, None, None, 3, 3, 3, 3, 1, None])
        self.assertEqual(calls[6]["slots"][1]["reuse"][0], NO_HASH)
        self.assertEqual(calls[7]["slots"][1]["reuse"][0], zeros)
        self.assertEqual(calls[8]["slots"][1]["reuse"], [zeros, zeros])


class DeviceBo:
    """A BO with device bytes apart from its host mapping; every sync logged as (size, offset)
    (None for a whole-BO sync)."""
    def __init__(self, nbytes, addr=0x1000):
        self.dev = bytearray(np.arange(nbytes, dtype=np.uint32).tobytes()[:nbytes])
        self.host = bytearray(nbytes)
        self.addr, self.syncs, self.fail = addr, [], False

    def address(self):
        return self.addr

    def size(self):
        return len(self.host)

    def map(self):
        return memoryview(self.host)

    def sync(self, direction, size=None, offset=0):
        if self.fail:
            raise RuntimeError("sync failed")
        self.syncs.append(None if size is None else (size, offset))
        end = len(self.host) if size is None else offset + size
        self.host[offset:end] = self.dev[offset:end]


class SpotChecks(unittest.TestCase):
    """BoTable.spot: a static BO's chunks, each synced from the device alone and hashed, against
    the chunk hashes its last whole read with keep kept."""

    def setUp(self):
        self.saved = _bos._from_device
        _bos._from_device = "FROM_DEVICE"  # no pyxrt here: the direction is only passed on
        if _bos._HASH_BUFFER_CHUNKS is None:
            self.skipTest("no native helpers here")

    def tearDown(self):
        _bos._from_device = self.saved

    def test_spot_checks_read_every_chunk_in_turn(self):
        t, bo = BoTable(), DeviceBo(4 << 20)  # 64 chunks
        h = t.hash(bo, 4 << 20, sync=True, keep=True)
        self.assertEqual(bo.syncs, [None])
        seen = set()
        for turn in range(40):
            bo.syncs.clear()
            self.assertTrue(t.spot(bo, 4 << 20, h))
            picked = [off // SPOT_CHUNK for _, off in bo.syncs]
            self.assertEqual(picked, spot_chunks(64, turn))
            self.assertEqual({n for n, _ in bo.syncs}, {SPOT_CHUNK})
            self.assertEqual((picked[0], picked[-1]), (0, 63))
            self.assertLessEqual(len(picked), 2 + SPOT_TURNING)
            seen.update(picked)
            if turn == 3:  # the middle chunks checked so far spread over both halves
                mid = sorted(seen - {0, 63})
                self.assertTrue(any(c < 32 for c in mid) and any(c >= 32 for c in mid), mid)
                self.assertGreater(max(c % 32 for c in mid) - min(c % 32 for c in mid), 8, mid)
            if turn == 31:  # 32 checks turn through every chunk
                self.assertEqual(seen, set(range(64)))
        # A whole read keeps the turn: the next check goes on where the last one stopped.
        t.hash(bo, 4 << 20, sync=True, keep=True)
        bo.syncs.clear()
        self.assertTrue(t.spot(bo, 4 << 20, h))
        self.assertEqual([off // SPOT_CHUNK for _, off in bo.syncs], spot_chunks(64, 40))
        # A BO whose size is not a whole number of chunks: the last chunk is short.
        bo = DeviceBo((2 << 20) + 100)
        h = t.hash(bo, (2 << 20) + 100, sync=True, keep=True)
        bo.syncs.clear()
        self.assertTrue(t.spot(bo, (2 << 20) + 100, h))
        self.assertEqual(bo.syncs[-1], (100, 2 << 20))

    def test_a_mapping_of_wider_items_is_checked_by_its_bytes(self):
        class WideBo(DeviceBo):  # a mapping of 2-D uint32 items, as a binding may give it
            def map(self):
                return np.frombuffer(self.host, np.uint32).reshape(-1, 256)
        n = 2 << 20
        t, bo = BoTable(), WideBo(n)
        h = t.hash(bo, n, sync=True, keep=True)
        self.assertTrue(t.spot(bo, n, h))
        bo.dev[n - 1] ^= 1  # the last chunk, which every check reads
        self.assertFalse(t.spot(bo, n, h))

    def test_a_spot_check_needs_a_kept_read_and_partial_syncs(self):
        n = 4 << 20
        t, bo = BoTable(), DeviceBo(n)
        h = t.hash(bo, n, sync=True)  # read without keep: nothing to compare
        self.assertFalse(t.spot(bo, n, h))
        small = DeviceBo(SPOT_MIN - SPOT_CHUNK)  # under SPOT_MIN: never kept
        hs = t.hash(small, small.size(), sync=True, keep=True)
        self.assertFalse(t.spot(small, small.size(), hs))
        h = t.hash(bo, n, sync=True, keep=True)
        self.assertEqual(h, array_hash(np.frombuffer(bytes(bo.dev), np.uint8)))
        self.assertTrue(t.spot(bo, n, h))
        self.assertFalse(t.spot(bo, n, "1" * 16))  # another hash than the kept read's
        self.assertFalse(t.spot(bo, n - SPOT_CHUNK, h))  # another extent
        # The device writes a middle chunk the next check (turn 1) reads: found.
        hit = spot_chunks(64, 1)[1]
        bo.dev[hit * SPOT_CHUNK + 9] ^= 0xFF
        self.assertFalse(t.spot(bo, n, h))
        bo.dev[hit * SPOT_CHUNK + 9] ^= 0xFF
        # ... one the next check (turn 2) does not read: not found (a spot check is a sample;
        # the read of the whole BO at a key's first calls is what is exact)
        miss = min(set(range(64)) - set(spot_chunks(64, 2)))
        bo.dev[miss * SPOT_CHUNK] ^= 0xFF
        self.assertTrue(t.spot(bo, n, h))
        bo.dev[miss * SPOT_CHUNK] ^= 0xFF
        bo.fail = True  # a sync that raises: no answer, the BO is read whole
        self.assertFalse(t.spot(bo, n, h))
        bo.fail = False
        self.assertTrue(t.spot(bo, n, h))
        bo.addr += 1  # another BO at that id(): its identity differs
        self.assertFalse(t.spot(bo, n, h))
        bo.addr -= 1
        self.assertTrue(t.spot(bo, n, h))
        t.viewed.add(id(bo))  # a BO the program holds a view into is never synced
        bo.syncs.clear()
        self.assertFalse(t.spot(bo, n, h))
        self.assertEqual(bo.syncs, [])


if __name__ == "__main__":
    unittest.main()


class ShadowKeepsNoFreedWeights(support.RecorderTest):
    """--shadow: a static array of 1 MiB or more that the key's first call passed and its BO
    holds whole is not kept alive; a later call's shadow run reads it back from the BO."""
    shadow = "all"  # every call shadowed (the selection would leave the repeats unshadowed)

    def run_calls(self, n_weight, clobber_at=None):
        c = self.wrapped(cache_dir=os.path.join(self.dir, "kernels"))
        CLOBBER.update(at=clobber_at, calls=0)

        def k(a):
            CLOBBER["calls"] += 1
            w = a.get(0, (n_weight,))
            a.get(2, (4,))[...] = w[:4] * a.get(1, (4,))
            if CLOBBER["calls"] == CLOBBER["at"]:
                w[:4] = 7.0

        c.register("k", k, 3)
        w = np.full(n_weight, 2.0, np.float32)
        w_hash = array_hash(w)
        ref = weakref.ref(w)
        args = dict(static_input_indices=[0], output_indices=[2], bo_key="k")
        c.load_and_run("k", {}, w, np.ones(4, np.float32), np.zeros(4, np.float32), **args)
        del w  # the program frees its weights: the BO holds them
        kept = True
        for _ in range(3):  # later calls with an empty placeholder
            c.load_and_run("k", {}, np.empty(0, np.float32), np.ones(4, np.float32),
                           np.zeros(4, np.float32), **args)
            # (a snapshot of this frame's locals the recorder took lives until the next call)
            gc.collect()
            kept = kept and ref() is not None
        return self.calls(), kept, w_hash

    def test_a_freed_weight_is_read_back_from_its_bo(self):
        calls, kept, w_hash = self.run_calls(N)  # the shadow runs double the outputs
        self.assertFalse(kept)
        for call in calls[1:]:
            self.assertEqual(call["x"]["shadow_fed"], [[0, 1]], call["n"])
            self.assertEqual(call["slots"][0]["no_reuse"][0], w_hash, call["n"])
            self.assertEqual(call["outputs"][0]["bit_exact"], True, call["n"])
            self.assertEqual(call["error"], "")

    def test_a_small_weight_is_still_kept(self):
        calls, kept, w_hash = self.run_calls(1024)
        self.assertTrue(kept)
        self.assertEqual(calls[1]["slots"][0]["no_reuse"][0], w_hash)

    def test_a_weight_its_bo_no_longer_holds_is_not_made_up(self):
        # The kernel writes the static BO at call 2 (its 3rd run: call 1's shadow run was the
        # 2nd): the shadow runs of calls 2 to 4, made after their real calls, have no bytes to
        # feed, and say so.
        calls, _, w_hash = self.run_calls(N, clobber_at=3)
        for call in calls[1:]:
            self.assertIn("shadow run not made: slot 0's BO no longer holds the bytes call 1 "
                          "passed", call["error"])
            self.assertFalse(call["failed"])
            self.assertEqual(call["outputs"], [])
