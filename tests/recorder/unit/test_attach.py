"""Attaching: the import hook patches the engine's class as its module is imported, once."""
import importlib
import os
import sys
import tempfile
import textwrap
import threading
import unittest

import support  # noqa: F401
from bo_doctor._attach import Attacher, _Finder, parse_target

ENGINE = textwrap.dedent('''
    class KernelCache:
        def load_and_run(self, name, backend_kwargs, *inputs, bo_key=None):
            """The engine's docstring."""
            if name == "again":  # the engine calling itself
                return self.load_and_run("inner", backend_kwargs, *inputs)
            if name == "boom":
                raise KeyError(name)
            return (name, inputs, bo_key)

        def other(self, *inputs):
            return inputs

    class Fork(KernelCache):  # inherits load_and_run: patched through its base only
        pass
''')


class Attach(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bod_attach_unit_")
        self.seen = []
        sys.path.insert(0, self._tmp.name)
        self.meta_path = list(sys.meta_path)

    def tearDown(self):
        sys.meta_path[:] = self.meta_path
        sys.path.remove(self._tmp.name)
        for name in [m for m in sys.modules if m.startswith("bod_fresh")]:
            del sys.modules[name]
        self._tmp.cleanup()

    def record(self, orig, sig, var_pos, cache, args, kwargs):
        self.seen.append((args[0], var_pos))
        return orig(cache, *args, **kwargs)

    def module(self, name, text=ENGINE):
        with open(os.path.join(self._tmp.name, name + ".py"), "w") as f:
            f.write(text)
        importlib.invalidate_caches()

    def test_a_freshly_imported_module_is_patched_once(self):
        self.module("bod_fresh_engine")
        a = Attacher(self.record)
        a.install()
        self.assertIsInstance(sys.meta_path[0], _Finder)
        import bod_fresh_engine as m
        kc = m.KernelCache.__dict__["load_and_run"]
        self.assertTrue(getattr(kc, "_bo_doctor_wrapped", False))
        self.assertEqual(kc.__doc__, "The engine's docstring.")
        self.assertEqual(kc.__name__, "load_and_run")
        self.assertNotIn("load_and_run", m.Fork.__dict__)
        self.assertEqual(a.patch_module(m), 0)  # already wrapped: not wrapped again
        self.assertIs(m.KernelCache.__dict__["load_and_run"], kc)
        self.assertEqual(m.KernelCache().load_and_run("k", {}, 1, 2, bo_key="b"),
                         ("k", (1, 2), "b"))
        self.assertEqual(m.Fork().load_and_run("f", {}), ("f", (), None))
        self.assertEqual(self.seen, [("k", "inputs"), ("f", "inputs")])

    def test_a_second_attacher_does_not_wrap_again(self):
        self.module("bod_fresh_twice")
        import bod_fresh_twice as m
        self.assertEqual(Attacher(self.record).patch_module(m), 1)
        self.assertEqual(Attacher(self.record).patch_module(m), 0)
        m.KernelCache().load_and_run("k", {})
        self.assertEqual(len(self.seen), 1)

    def test_a_class_imported_from_elsewhere_is_patched_where_it_is_defined(self):
        self.module("bod_fresh_base")
        self.module("bod_fresh_user", "from bod_fresh_base import KernelCache\n")
        a = Attacher(self.record)
        import bod_fresh_user as user
        self.assertEqual(a.patch_module(user), 0)
        import bod_fresh_base as base
        self.assertEqual(a.patch_module(base), 1)
        self.assertIs(user.KernelCache, base.KernelCache)

    def test_modules_loaded_before_install_are_patched_at_install(self):
        self.module("bod_fresh_early")
        import bod_fresh_early as m
        Attacher(self.record).install()
        self.assertTrue(m.KernelCache.__dict__["load_and_run"]._bo_doctor_wrapped)

    def test_a_named_target(self):
        self.module("bod_fresh_target")
        a = Attacher(self.record, parse_target("bod_fresh_target:KernelCache.other"))
        a.install()
        import bod_fresh_target as m
        self.assertFalse(getattr(m.KernelCache.load_and_run, "_bo_doctor_wrapped", False))
        self.assertTrue(m.KernelCache.other._bo_doctor_wrapped)
        self.assertEqual(m.KernelCache().other(4, 5), (4, 5))
        self.assertEqual(self.seen, [(4, "inputs")])

    def test_target_syntax(self):
        self.assertIsNone(parse_target(""))
        self.assertEqual(parse_target("a.b:C.m"), ("a.b", "C", "m"))
        for bad in ("a.b", "a:C", "a:C.m.n", ":C.m"):
            with self.assertRaises(ValueError):
                parse_target(bad)

    def test_calls_inside_a_recorded_call_are_not_recorded(self):
        self.module("bod_fresh_reentry")
        import bod_fresh_reentry as m
        Attacher(self.record).patch_module(m)
        self.assertEqual(m.KernelCache().load_and_run("again", {}, 7), ("inner", (7,), None))
        self.assertEqual(self.seen, [("again", "inputs")])

    def test_exceptions_pass_through_and_reset_the_guard(self):
        self.module("bod_fresh_raise")
        import bod_fresh_raise as m
        Attacher(self.record).patch_module(m)
        with self.assertRaises(KeyError):
            m.KernelCache().load_and_run("boom", {})
        m.KernelCache().load_and_run("k", {})
        self.assertEqual([s[0] for s in self.seen], ["boom", "k"])

    def test_the_guard_is_per_thread(self):
        self.module("bod_fresh_threads")
        import bod_fresh_threads as m
        inside, release = threading.Event(), threading.Event()
        outer = []

        def record(orig, sig, var_pos, cache, args, kwargs):
            outer.append(args[0])
            if args[0] == "slow":
                inside.set()
                release.wait(5)
            return orig(cache, *args, **kwargs)

        Attacher(record).patch_module(m)
        t = threading.Thread(target=lambda: m.KernelCache().load_and_run("slow", {}))
        t.start()
        inside.wait(5)
        m.KernelCache().load_and_run("fast", {})  # another thread's call is recorded
        release.set()
        t.join()
        self.assertEqual(outer, ["slow", "fast"])

    def test_a_failing_patch_never_breaks_the_import(self):
        self.module("bod_fresh_badpatch")
        a = Attacher(self.record)
        a.wants = lambda module_name, cls: 1 / 0
        a.install()
        import io
        import contextlib
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            import bod_fresh_badpatch as m
        self.assertTrue(hasattr(m, "KernelCache"))
        self.assertIn("could not patch bod_fresh_badpatch", err.getvalue())


if __name__ == "__main__":
    unittest.main()
