"""Two threads calling a recorded load_and_run at once (docs/recording.md, Threads)."""
import sys
import threading
import time
import unittest

import support
import numpy as np

import bo_doctor
from bo_doctor._hashing import array_hash


class Threads(support.RecorderTest):
    def setUp(self):
        super().setUp()
        self.interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can

    def tearDown(self):
        sys.setswitchinterval(self.interval)
        super().tearDown()

    def test_concurrent_calls_get_consistent_records(self):
        per_thread, n_threads = 25, 2
        caches = [self.cache() for _ in range(n_threads)]

        def slow_scale(a):  # long enough in the engine for the other thread to run
            time.sleep(0.002)
            a.get(1, a[0].shape)[...] = 2 * a.get(0, a[0].shape)

        for c in caches:
            c.register("slow_scale", slow_scale, 2)
        start = threading.Barrier(n_threads)
        sent = {}  # (thread, i) -> hash of the array the call passed
        errors = []

        def work(t):
            try:
                cache = caches[t]
                start.wait(5)
                for i in range(per_thread):
                    x = np.full(64, t * 1000 + i, np.float32)
                    sent[(t, i)] = array_hash(x)
                    with bo_doctor.label(phase="t%d" % t, token=i):
                        _, y = cache.load_and_run("slow_scale", {}, x,
                                                  np.zeros(64, np.float32), bo_key="k%d" % (i % 3))
                    if not np.array_equal(y, 2 * x):
                        errors.append((t, i, "wrong result"))
            except Exception as e:  # reported below
                errors.append((t, repr(e)))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        calls = self.calls()  # every line parses
        total = per_thread * n_threads
        self.assertEqual([c["n"] for c in calls], list(range(1, total + 1)))
        self.assertEqual(self.spool.held(), 0)
        by_thread, ns = {}, {}
        for c in calls:
            t, i = int(c["labels"]["phase"][1:]), c["labels"]["token"]
            by_thread.setdefault(t, []).append(i)
            # The call's own arguments, never the other thread's.
            self.assertEqual(c["slots"][0]["host"]["hash"], sent[(t, i)], c["n"])
            self.assertEqual(c["bo_key"], "k%d" % (i % 3))
            ns.setdefault(t, set()).add(c["ns"])
            first = [d["n"] for d in calls if d["ns"] == c["ns"] and d["bo_key"] == c["bo_key"]]
            self.assertEqual(c["key_first_call"], first[0])
        self.assertEqual(by_thread, {t: list(range(per_thread)) for t in range(n_threads)})
        # Each program thread keeps one trace thread number; the first to call is 0 (absent).
        numbers = {}
        for c in calls:
            numbers.setdefault(int(c["labels"]["phase"][1:]), set()).add(c.get("thread", 0))
        self.assertEqual(sorted(map(sorted, numbers.values())), [[0], [1]])
        # One cache per thread, each its own namespace (both held by a variable `cache`).
        self.assertEqual(sorted(ns.values(), key=sorted), [{"cache"}, {"cache#1"}])
        self.assertEqual(len(self.lines("kernel")), 1)  # one table entry for both threads
        order = [int(c["labels"]["phase"][1:]) for c in calls]
        switches = sum(a != b for a, b in zip(order, order[1:]))
        self.assertGreater(switches, 2, "the threads' calls did not interleave: %s" % order)

    def test_describing_a_call_takes_the_lock_and_the_engine_does_not(self):
        cache = self.cache()
        entered = threading.Event()
        held_in_engine = []

        def probe(a):
            entered.set()
            got = self.rec.lock.acquire(timeout=5)  # from another thread: free while in here
            held_in_engine.append(got)
            if got:
                self.rec.lock.release()
            a.get(1, a[0].shape)[...] = a.get(0, a[0].shape)

        cache.register("probe", probe, 2)

        def call():
            cache.load_and_run("probe", {}, support.f32(1), np.zeros(1, np.float32))

        with self.rec.lock:
            t = threading.Thread(target=call)
            t.start()
            # The call waits for the lock before it is numbered and before the engine runs.
            self.assertFalse(entered.wait(0.3))
            self.assertEqual(self.rec.n, 0)
        t.join(10)
        self.assertTrue(entered.is_set())
        self.assertEqual(held_in_engine, [True])

    def test_a_call_that_ends_first_waits_for_the_earlier_number(self):
        a_in_engine, b_done = threading.Event(), threading.Event()
        cache = self.cache()

        def slow(args):  # call 1 stays in the engine until call 2 has been recorded
            a_in_engine.set()
            b_done.wait(5)
            args.get(1, args[0].shape)[...] = 2 * args.get(0, args[0].shape)

        cache.register("slow", slow, 2)
        t = threading.Thread(target=lambda: cache.load_and_run(
            "slow", {}, support.f32(1), np.zeros(1, np.float32)))
        t.start()
        self.assertTrue(a_in_engine.wait(5))
        cache.load_and_run("scale", {}, support.f32(2), np.zeros(1, np.float32))
        self.assertEqual(self.calls(), [])  # call 2 is held back: call 1 is still running
        self.assertEqual(self.spool.held(), 1)
        b_done.set()
        t.join()
        self.assertEqual([(c["n"], c["kernel"]) for c in self.calls()],
                         [(1, "slow"), (2, "scale")])
        kinds = [l["kind"] for l in self.lines()]
        self.assertEqual(kinds, ["header", "kernel", "call", "kernel", "call"])


if __name__ == "__main__":
    unittest.main()
