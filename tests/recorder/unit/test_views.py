"""Zero-copy output views tracked by identity: read by a later call, still held after the
iteration that overwrote them or at exit, held only by argument lists, slices, the program's
own writes (tool/recorder/python/bo_doctor/_views.py, _holders.py)."""
import gc
import unittest
import weakref

import support
import numpy as np

from bo_doctor import _holders

HELD = "the program (which still held it at call %d)"
AT_EXIT = "the program (which still held it at exit)"


def f32(*v):
    return support.f32(*v)


class Views(support.RecorderTest):
    def layer(self, c, x, i):
        """One layer: the output (slot 1) is a pooled BO every layer shares; a view of it."""
        return c.load_and_run("scale", {}, x, np.zeros_like(x), bo_key="L%d" % i,
                              shared_nonstatic=True)[1]

    def events(self):
        return [(e["captured_call"], e["slot"], e["read_call"], e["overwritten_by"], e["var"],
                 e["reader"]) for e in (l["event"] for l in self.lines("view_read"))]

    def test_passing_a_view_on_and_rebinding_it_is_silent(self):
        c = self.cache()
        x = f32(1, 2)
        for i in range(3):
            x = self.layer(c, x, i)
        y = c.load_and_run("scale", {}, x, np.zeros(2, np.float32), bo_key="head")[1]
        self.rec.end()
        np.testing.assert_array_equal(y, [16, 32])
        self.assertEqual(self.events(), [])

    def test_a_capture_list_is_reported_after_the_overwriting_iteration(self):
        c = self.cache()
        x, outs = f32(1, 2), []
        for i in range(3):
            x = self.layer(c, x, i)
            outs.append(x)
        self.assertEqual([list(o) for o in outs], [[8, 16]] * 3)  # all the last layer's
        self.rec.end()
        # Call 1's output, overwritten by call 2 (iteration i=1), is still held at call 3
        # (i=2); call 2's, overwritten by call 3, still at exit. Call 3's is intact.
        self.assertEqual(self.events(), [(1, 1, 0, 2, "outs[0]", HELD % 3),
                                         (2, 1, 0, 3, "outs[1]", AT_EXIT)])

    def test_a_slice_read_by_a_later_call(self):
        c = self.cache()
        for i in range(1):  # one iteration: nothing is reported as merely held
            x = self.layer(c, f32(1, 2, 3, 4), 0)
            first = x[:2]
            self.layer(c, f32(5, 6, 7, 8), 1)  # overwrites the pooled BO
            c.load_and_run("scale", {}, first, np.zeros(2, np.float32), bo_key="head")
        self.assertEqual(self.events(), [(1, 1, 3, 2, "first", "call 3 (scale)")])
        self.assertEqual(self.calls()[2]["slots"][0]["host"]["view_of_call"], 1)

    def test_a_slice_whose_blocks_did_not_change_is_not_stale(self):
        c = self.cache()

        def first_half(a):  # writes only the first 4 KiB of its 8 KiB output
            a.get(1, (2048,))[:1024] = 2 * a.get(0, (2048,))[:1024]

        c.register("half", first_half, 2)
        for i in range(1):
            y = c.load_and_run("half", {}, np.ones(2048, np.float32),
                               np.zeros(2048, np.float32), bo_key="h1", shared_nonstatic=True)[1]
            c.load_and_run("half", {}, np.full(2048, 3, np.float32),
                           np.zeros(2048, np.float32), bo_key="h2", shared_nonstatic=True)
            tail, head = y[1024:], y[:1024]
            c.load_and_run("scale", {}, tail, np.zeros(1024, np.float32), bo_key="t")
            self.assertEqual(self.events(), [])
            c.load_and_run("scale", {}, head, np.zeros(1024, np.float32), bo_key="t")
        self.assertEqual(self.events(), [(1, 1, 4, 2, "head", "call 4 (scale)")])

    def test_an_overwrite_by_a_host_write(self):
        c = self.cache()
        y = c.load_and_run("scale", {}, f32(1, 2), np.zeros(2, np.float32), bo_key="a",
                           shared_alias={1: "p"})[1]
        # Call 2 uploads other bytes into the alias BO y views (its slot 0); its kernel only
        # reads that slot.
        c.load_and_run("scale", {}, f32(5, 5), np.zeros(2, np.float32), bo_key="b",
                       shared_alias={0: "p"})
        c.load_and_run("scale", {}, y, np.zeros(2, np.float32), bo_key="c")
        (ev,) = [l["event"] for l in self.lines("view_read")]
        self.assertEqual((ev["read_call"], ev["overwritten_by"], ev["by_host_write"]),
                         (3, 2, True))

    def test_a_view_is_hashed_again_only_around_calls_that_bind_its_bo(self):
        """A call changes no BO it does not bind: the 256 KiB view of key a's output is not
        hashed at key b's calls; the program's own write into it in between is still its own,
        and key a's next call overwriting it is still seen."""
        from bo_doctor._hashing import STATS
        c = self.cache()
        n = 1 << 16
        y = c.load_and_run("scale", {}, np.ones(n, np.float32), np.zeros(n, np.float32),
                           bo_key="a")[1]
        x = f32(1, 2)
        c.load_and_run("scale", {}, x, np.zeros(2, np.float32), bo_key="b")
        where = ("hashed_host", "hashed_bo_before", "hashed_bo_after", "hashed_shadow")
        b0 = STATS["bytes_hashed"] - sum(STATS[k] for k in where)
        for _ in range(4):
            c.load_and_run("scale", {}, x, np.zeros(2, np.float32), bo_key="b")
        y[0] = 42.0  # the program's own write
        for _ in range(2):
            c.load_and_run("scale", {}, x, np.zeros(2, np.float32), bo_key="b")
        views = STATS["bytes_hashed"] - sum(STATS[k] for k in where) - b0
        self.assertLess(views, 4 * n)  # not one hash of y: only key b's 8-byte outputs
        self.assertEqual(self.events(), [])
        c.load_and_run("scale", {}, np.full(n, 3.0, np.float32), np.zeros(n, np.float32),
                       bo_key="a")  # overwrites the BO y views (call 9)
        c.load_and_run("scale", {}, y, np.zeros(n, np.float32), bo_key="c")
        self.assertEqual([e[:4] for e in self.events()], [(1, 1, 10, 9)])

    def test_views_held_only_by_argument_lists_are_not_reported(self):
        c = self.cache()
        x, args_of = f32(1, 2), {}
        for i in range(3):  # an argument list per layer, its first item replaced every call
            args = args_of.setdefault(i, [None, np.zeros(2, np.float32)])
            args[0] = x.reshape(2)
            x = c.load_and_run("scale", {}, *args, bo_key="L%d" % i, shared_nonstatic=True)[1]
        c.load_and_run("scale", {}, x, np.zeros(2, np.float32), bo_key="head")
        self.rec.end()
        self.assertEqual(self.events(), [])

    def test_a_view_in_an_argument_list_and_a_capture_list_is_reported(self):
        c = self.cache()
        x, args_of, caps = f32(1, 2), {}, []
        for i in range(3):
            args = args_of.setdefault(i, [None, np.zeros(2, np.float32)])
            args[0] = x.reshape(2)
            x = c.load_and_run("scale", {}, *args, bo_key="L%d" % i, shared_nonstatic=True)[1]
            caps.append({"out": x[:1]})
        self.rec.end()
        self.assertEqual([e[:5] for e in self.events()], [(1, 1, 0, 2, "caps[0]['out']"),
                                                          (2, 1, 0, 3, "caps[1]['out']")])

    def test_a_name_is_not_always_found(self):
        c = self.cache()

        class Holder:
            pass

        h = Holder()
        h.kept = self.layer(c, f32(1, 2), 0)
        self.layer(c, f32(3, 4), 1)
        self.rec.end()
        self.assertEqual(self.events(), [(1, 1, 0, 2, "view of call 1 slot 1", AT_EXIT)])

    def test_the_recorder_keeps_no_view_alive(self):
        c = self.cache()
        y = self.layer(c, f32(1, 2), 0)
        ref = weakref.ref(y)
        self.layer(c, y, 1)
        del y
        # The snapshot of this frame's locals the recorder took at the last call (Python
        # 3.11, 3.12) holds y until the next call retakes it.
        self.layer(c, f32(3, 4), 2)
        gc.collect()
        self.assertIsNone(ref())
        self.assertEqual(self.rec.views.alive(), [])  # call 3's output was not kept either


class ArgumentLists(unittest.TestCase):
    def setUp(self):
        self.view = np.frombuffer(bytearray(16), np.float32)
        self.ref = weakref.ref(self.view)

    def held_by(self, holder, passed=()):
        """only_argument_lists, with holder as the one argument list (when a list) and its
        items at indices `passed` as the arrays passed to calls."""
        arg_lists = {tuple(map(id, holder))} if isinstance(holder, list) else set()
        return _holders.only_argument_lists(self.ref, [weakref.ref(holder[i]) for i in passed],
                                            arg_lists)

    def test_only_argument_lists(self):
        args = [self.view.reshape(2, 2), 1]
        self.assertFalse(self.held_by(args, [0]))  # self.view holds the view too
        self.view = None
        self.assertTrue(self.held_by(args, [0]))
        caps = [args[0][:1]]  # a slice nobody passed to a call
        self.assertFalse(self.held_by(args, [0]))
        del caps
        self.assertTrue(self.held_by(args, [0]))
        other = args[0]  # a variable holds the passed array
        self.assertFalse(self.held_by(args, [0]))
        del other
        direct = [self.ref(), 2]  # the view itself in an argument list
        self.assertFalse(self.held_by(direct, [0]))  # args[0] still makes a reference
        args[0] = None
        self.assertTrue(self.held_by(direct, [0]))

    def test_a_tuple_holder_is_not_attributed(self):
        t = (self.view,)
        self.view = None
        self.assertFalse(self.held_by(t))
        del t
        self.assertTrue(self.held_by([]))  # dead: nothing holds it


if __name__ == "__main__":
    unittest.main()


class Index(unittest.TestCase):
    """The view table's indexes (by address, by BO, the overwritten views not reported) give
    what a walk over every live view gives, as views are returned, die and are overwritten."""

    def brute_find(self, table, arr):
        """find() the slow way: the base chain, then every live view holding arr's address
        (the latest call's, the first returned among equals)."""
        b = arr
        while isinstance(b, np.ndarray):
            for v in table.views.values():
                if v.id == id(b) and v.ref() is b:
                    return v
            b = b.base
        p = arr.__array_interface__["data"][0]
        best = None
        for serial, v in table.views.items():
            if v.ref() is not None and v.addr <= p < v.addr + v.nbytes and \
                    (best is None or v.call > best[1].call):
                best = (serial, v)
        return best[1] if best is not None else None

    def native_find(self, table, arr):
        """The view the native describe finds for arr (table.find's where there is no native
        module)."""
        from bo_doctor import _capture, _fast, _records
        m = _fast.module()
        if m is None or not arr.size:
            return table.find(arr)
        got = m.describe([arr], set(), False, -1, 1 << 20, table if table.views else None,
                         _capture._dtype_info, {}, _capture._make_hostx, _records.Host)
        return got[2][0]

    def test_find_and_rehash_agree_with_a_walk_over_every_view(self):
        from bo_doctor import _views
        rng = np.random.default_rng(7)
        memory = [np.zeros(int(n), np.uint8) for n in rng.integers(1, 20000, 6)]
        bos = [object() for _ in memory]
        table = _views.ViewTable()
        held = []
        for n in range(1, 400):
            k = int(rng.integers(len(memory)))
            lo = int(rng.integers(memory[k].size))
            hi = int(rng.integers(lo + 1, memory[k].size + 1))
            out = memory[k][lo:hi]
            table.note_returned(n, [out], [bos[k]], {0})
            held.append(out)
            if rng.random() < 0.5 and held:  # the program lets go of a view
                held.pop(int(rng.integers(len(held))))
                gc.collect()
            # The program writes a byte somewhere; then a call binding BO j changes another
            memory[int(rng.integers(len(memory)))][0] += 1
            table.rehash(only={id(bos[int(rng.integers(len(bos)))])})
            j = int(rng.integers(len(memory)))
            memory[j][int(rng.integers(memory[j].size))] += 1
            table.rehash(n, ("loop", n), {id(bos[j]): False}, only={id(bos[j])})
            for _ in range(5):
                k = int(rng.integers(len(memory)))
                i = int(rng.integers(memory[k].size))
                probe = memory[k][i:i + 1]
                want = self.brute_find(table, probe)
                self.assertIs(table.find(probe), want, (n, k, i))
                self.assertIs(self.native_find(table, probe), want, (n, k, i))
            for h in held[-3:]:
                self.assertIs(table.find(h), self.brute_find(table, h))
                self.assertIs(self.native_find(table, h), self.brute_find(table, h))
            table.prune()
            live = {s for s, v in table.views.items() if v.ref() is not None}
            self.assertEqual(set(table.views), live)
            self.assertEqual(sorted(s for _, s in table._keys), sorted(live))
            self.assertEqual({s for s, v in table.views.items() if v.stale_since and not v.done},
                             set(table.stale))
            self.assertEqual({s for g in table.by_bo.values() for s in g}, live)
        # Every view a call changed, and only those, carries that call as its last change
        stale = [v for v in table.views.values() if v.stale_since]
        self.assertTrue(stale)
        for v in stale:
            self.assertLessEqual(v.stale_since, v.last_change)

    def test_a_view_the_program_wrote_whole_after_a_call_overwrote_it_is_not_held(self):
        from bo_doctor import _views
        table = _views.ViewTable()
        mem, bo, other = np.zeros(8192, np.uint8), object(), object()
        view = mem[:4096]
        table.note_returned(1, [view], [bo], {0})
        v = table.find(view)
        mem[:4096] = 1  # call 2, which binds the BO, overwrites it
        table.rehash(2, ("loop", 2), {id(bo): False}, only={id(bo)})
        self.assertEqual((v.stale_since, v.last_change), (2, 2))
        self.assertEqual(list(table.stale.values()), [v])
        view[:] = 2  # the program writes all of it itself: what it now expects to see
        # Before call 3, which binds another BO: the overwritten views are looked at too
        table.rehash(only={id(other)})
        self.assertEqual(v.stale_since, 0)
        self.assertEqual(table.stale, {})
        self.assertEqual(table.held(set(), "call 3", at_exit=True), [])
