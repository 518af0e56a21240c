"""The shadow's private cache copies (record --shadow, _shadow.Shadow.copy_of): told apart by the
cache's identity, not by id() alone; dropped with their cache; refreshed from the cache's
attributes at every shadow run; never logging to the program's stdout."""
import contextlib
import gc
import io
import os
import unittest

import support
import numpy as np


def times(k):
    def body(a):
        n = a[0].shape
        a.get(1, n)[...] = k * a.get(0, n)
    return body


class ShadowCacheCopies(support.RecorderTest):
    shadow = "all"

    def new_cache(self, factor, **kw):
        c = self.wrapped(cache_dir=os.path.join(self.dir, "kernels"), **kw)
        c.register("k", times(factor), 2)
        return c

    def run_once(self, c):
        x = np.arange(8, dtype=np.float32)
        return c.load_and_run("k", {}, x, np.zeros(8, np.float32), output_indices=[1],
                              bo_key="k")[1].copy()

    def test_a_new_cache_at_a_dead_caches_id_gets_its_own_copy(self):
        first = self.new_cache(2.0)
        self.run_once(first)
        entry = self.rec.shadow.caches[id(first)]  # (reference to first, first's copy)
        del first
        other = self.new_cache(2.0)  # its call ends the snapshot of the last call's locals
        self.run_once(other)
        gc.collect()
        self.assertIsNone(entry[0]())
        # CPython may give the dead cache's id() to the next cache: planted here, so that
        # the test does not depend on the allocator.
        second = self.new_cache(3.0)
        self.rec.shadow.caches[id(second)] = entry
        got = self.run_once(second)
        np.testing.assert_array_equal(got, 3.0 * np.arange(8, dtype=np.float32))
        calls = self.calls()
        self.assertEqual(len(calls), 3)
        # The shadow run of the second cache ran the second cache's kernel, not the dead one's.
        self.assertEqual(calls[2]["outputs"][0]["bit_exact"], True, calls[2])
        self.assertEqual(calls[2]["error"], "")
        self.assertIsNot(self.rec.shadow.caches[id(second)], entry)

    def test_a_dead_caches_copy_is_dropped(self):
        c = self.new_cache(2.0)
        self.run_once(c)
        self.assertEqual(len(self.rec.shadow.caches), 1)
        del c
        other = self.new_cache(2.0)  # its call ends the snapshot of the last call's locals
        self.run_once(other)
        gc.collect()
        self.assertEqual(list(self.rec.shadow.caches), [id(other)])

    def test_the_copy_sees_a_kernel_the_cache_loaded_after_its_first_shadow_run(self):
        c = self.new_cache(2.0)
        self.run_once(c)
        c._loaded = {}  # the program drops its loaded kernels: the next call loads again
        c.register("k", times(5.0), 2)
        got = self.run_once(c)
        np.testing.assert_array_equal(got, 5.0 * np.arange(8, dtype=np.float32))
        self.assertEqual(self.calls()[1]["outputs"][0]["bit_exact"], True)

    def test_a_verbose_cache_prints_only_its_own_lines(self):
        out = {}
        for recorded in (False, True):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                cls = self.wrapped if recorded else self.KernelCache
                c = cls(cache_dir=os.path.join(self.dir, "kernels"), verbose=True)
                c.register("k", times(2.0), 2)
                for _ in range(3):
                    self.run_once(c)
            out[recorded] = buf.getvalue()
        self.assertIn("[KernelCache]", out[False])
        self.assertEqual(out[True], out[False])
        self.assertEqual(len(self.calls()), 3)
        self.assertTrue(all("outputs" in c for c in self.calls()))  # all three shadowed

if __name__ == "__main__":
    unittest.main()
