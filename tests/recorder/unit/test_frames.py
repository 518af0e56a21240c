"""The `for` loops running in the program's frames, read from bytecode, and the locals
snapshots the recorder retakes (tool/recorder/python/bo_doctor/_frames.py)."""
import gc
import sys
import unittest
import weakref

import support  # noqa: F401
import numpy as np

from bo_doctor import _frames


def running(limit=3):
    """(targets, numbers) of the loops running around the caller, innermost first."""
    return [(r.loop.targets, r.numbers) for r in _frames.running_loops(limit)]


class Layer:
    def __init__(self, i):
        self.layer_idx = i


class LoopsOfCode(unittest.TestCase):
    def test_targets_and_iterable_names(self):
        def f(config, weights):
            for layer_idx in range(config.n_layers):
                pass
            for i, lw in enumerate(weights.layers):
                pass
            for l, (a, b) in enumerate(zip(weights.x, weights.y)):
                pass
            for self_attr in weights:
                pass

        got = [(lc.targets, lc.iter_names) for lc in _frames.loops_of(f.__code__)]
        self.assertEqual(got, [(("layer_idx",), ("range", "config", "n_layers")),
                               (("i", "lw"), ("enumerate", "weights", "layers")),
                               (("l", "a", "b"), ("enumerate", "zip", "weights", "x",
                                                  "weights", "y")),
                               (("self_attr",), ("weights",))])

    def test_an_attribute_target_has_no_name(self):
        def f(obj, xs):
            for obj.x in xs:
                pass

        (lc,) = _frames.loops_of(f.__code__)
        self.assertEqual(lc.targets, (None,))


class RunningLoops(unittest.TestCase):
    def test_only_loops_still_running(self):
        got = []
        for layer_idx in range(2):
            got.append(running())
        got.append(running())  # layer_idx is still bound: the loop has finished
        self.assertEqual(got, [[(("layer_idx",), {"layer_idx": 0})],
                               [(("layer_idx",), {"layer_idx": 1})], []])

    def test_innermost_first_across_frames(self):
        def inner():
            for p in range(1):
                return running()

        for t in range(1):
            for i, lw in enumerate([Layer(7)]):
                got = inner()
        self.assertEqual(got, [(("p",), {"p": 0}), (("i", "lw"), {"i": 0, "lw": 7}),
                               (("t",), {"t": 0})])

    def test_break_except_while_and_comprehensions(self):
        got = []
        for i in range(3):
            try:
                raise ValueError
            except ValueError:
                got.append(running()[0][1])  # an except block inside the loop
            if i == 1:
                break
        got.append(running())
        k = 0
        while k < 1:
            got.append(running())
            k += 1
        got.append([running()[0][1] for l in range(2)])
        self.assertEqual(got, [{"i": 0}, {"i": 1}, [], [], [{"l": 0}, {"l": 1}]])

    def test_module_level_loops(self):
        space = {"running": running, "got": []}
        exec(compile("for layer in range(2):\n    got.append(running())\n", "<program>",
                     "exec"), space)
        self.assertEqual(space["got"], [[(("layer",), {"layer": 0})],
                                        [(("layer",), {"layer": 1})]])

    def test_iteration_keys_tell_iterations_apart(self):
        keys = []
        for i in range(2):
            keys.append(_frames.iteration_key(_frames.running_loops(2)))
        self.assertNotEqual(keys[0], keys[1])
        self.assertIsNone(_frames.iteration_key(_frames.running_loops(2)))
        for x in [object(), object()]:
            keys.append(_frames.iteration_key(_frames.running_loops(2)))
        self.assertNotEqual(keys[2], keys[3])

    def test_no_loop_value_is_kept(self):
        for x in [np.zeros(3)]:
            loops = _frames.running_loops(2)
        ref = weakref.ref(x)
        del x
        _frames.refresh_snapshots()
        gc.collect()
        self.assertIsNone(ref())
        self.assertEqual(len(loops), 1)


class Snapshots(unittest.TestCase):
    def test_a_snapshot_is_retaken(self):
        def reads_my_locals():
            _frames.frame_locals(sys._getframe(1))

        def program():
            x = np.zeros(4)
            ref = weakref.ref(x)
            reads_my_locals()  # the snapshot now holds x
            x = None
            held = ref() is not None
            _frames.refresh_snapshots()
            return held, ref() is None

        held, gone = program()
        self.assertTrue(held or sys.version_info >= (3, 13))  # 3.13: no snapshot (PEP 667)
        self.assertTrue(gone)


class RelativeFileNames(unittest.TestCase):
    """A program frame named by a relative file (a module imported from '' on sys.path, as
    under `python3 -c`) is the program's, known without asking the working folder (no
    os.path.abspath, a getcwd system call per frame and call), and remembered."""

    def test_a_relative_name_is_the_programs_and_is_remembered(self):
        from unittest import mock
        self.assertTrue(_frames._RELATIVE_NOT_OURS)  # the recorder's own names are absolute
        name = "bod_relative_prog.py"
        _frames._OURS.pop(name, None)
        code = compile("def prog(run):\n    for layer_idx in range(2):\n"
                       "        out.append(run())\n", name, "exec")
        env = {"out": []}
        exec(code, env)
        asked, abspath = [], _frames.os.path.abspath
        with mock.patch.object(_frames.os.path, "abspath",
                               side_effect=lambda p: asked.append(p) or abspath(p)):
            env["prog"](lambda: running(4))
        self.assertNotIn(name, asked)
        self.assertEqual(env["out"][1][0], (("layer_idx",), {"layer_idx": 1}))
        self.assertIs(_frames._OURS[name], False)


if __name__ == "__main__":
    unittest.main()
