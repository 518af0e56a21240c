"""Labels: the public label() blocks, and what the recorder reads from the program's frames."""
import threading
import unittest

import support  # noqa: F401
import bo_doctor
from bo_doctor import _labels


N_LAYERS = 2


def layer():
    return _labels.call_labels("gemv", "", False)[2]


class LabelBlocks(unittest.TestCase):
    def test_inner_labels_refine_outer_ones(self):
        self.assertEqual(bo_doctor.current_labels(), {})
        with bo_doctor.label(phase="decode", token=4):
            with bo_doctor.label(layer=2):
                self.assertEqual(bo_doctor.current_labels(),
                                 {"phase": "decode", "token": 4, "layer": 2})
                with bo_doctor.label(phase="prefill", layer=3):
                    self.assertEqual(bo_doctor.current_labels(),
                                     {"phase": "prefill", "token": 4, "layer": 3})
                self.assertEqual(bo_doctor.current_labels()["layer"], 2)
            self.assertEqual(bo_doctor.current_labels(), {"phase": "decode", "token": 4})
        self.assertEqual(bo_doctor.current_labels(), {})

    def test_a_block_left_by_an_exception_is_undone(self):
        with self.assertRaises(KeyError):
            with bo_doctor.label(layer=1):
                raise KeyError("x")
        self.assertEqual(bo_doctor.current_labels(), {})

    def test_labels_belong_to_their_thread(self):
        seen = {}
        inside, done = threading.Event(), threading.Event()

        def other():
            seen["before"] = bo_doctor.current_labels()
            with bo_doctor.label(layer=9):
                inside.set()
                done.wait(5)
                seen["inside"] = bo_doctor.current_labels()

        with bo_doctor.label(layer=1):
            t = threading.Thread(target=other)
            t.start()
            inside.wait(5)
            self.assertEqual(bo_doctor.current_labels(), {"layer": 1})
            done.set()
            t.join()
        self.assertEqual(seen, {"before": {}, "inside": {"layer": 9}})

    def test_public_api(self):
        self.assertIs(bo_doctor.label, _labels.label)
        self.assertIn("label", bo_doctor.__all__)


class CallLabels(unittest.TestCase):
    def test_explicit_labels_win(self):
        with bo_doctor.label(phase="decode", layer=5, token=2):
            self.assertEqual(_labels.call_labels("o_ffn_L3", "prefill_cache", False),
                             ("decode", 2, 5))

    def test_layer_from_the_bo_key(self):
        for key, want in (("o_ffn_L3", 3), ("layer12.attn", 12), ("L0", 0), ("rmsL3", -1),
                           ("o_ffn_L3x", -1)):
            self.assertEqual(_labels.call_labels(key, "", False)[2], want, key)

    def test_layer_from_a_loop_variable_in_the_callers_frames(self):
        def engine_helper():
            return _labels.call_labels("gemv", "decode_cache", False)

        for layer_idx in range(3):
            got = engine_helper()
        self.assertEqual(got, ("decode", -1, 2))

    def test_any_loop_variable_name_over_layers(self):
        n_layers, layers = 3, ["w0", "w1", "w2"]
        got = []
        for i in range(n_layers):
            got.append(layer())
        for idx, w in enumerate(layers):
            got.append(layer())
        for li in range(2):  # a short layer name, whatever the iterable
            got.append(layer())
        self.assertEqual(got, [0, 1, 2, 0, 1, 2, 0, 1])

    def test_layer_from_a_loop_variables_layer_idx(self):
        class Block:
            def __init__(self, i):
                self._layer_idx = i

            def run(self):
                return layer()

        blocks = [Block(7), Block(8)]
        got = []
        for b in blocks:  # the iterable does not say "layer": not a layer loop
            got.append(b.run())
        for layer_block in blocks:
            got.append(layer_block.run())
        self.assertEqual(got, [-1, -1, 7, 8])
        self.assertEqual(Block(3).run(), -1)  # an attribute of `self` alone is no loop

    def test_a_finished_loop_gives_no_layer(self):
        for layer_idx in range(3):
            pass
        self.assertEqual(layer_idx, 2)
        self.assertEqual(layer(), -1)
        layer_idx = 5  # noqa: F841 - a variable named like a layer, assigned by no loop
        self.assertEqual(layer(), -1)

    def test_a_call_after_the_layer_loop_inside_a_token_loop(self):
        got = []
        for t in range(2):
            for i in range(N_LAYERS):
                got.append(layer())
            got.append(layer())  # the LM head: after the layer loop, in the token loop
        self.assertEqual(got, [0, 1, -1, 0, 1, -1])

    def test_a_non_layer_loop_inside_a_layer_loop(self):
        got = []
        for layer_idx in range(2):
            for p in range(2):
                got.append(layer())
        self.assertEqual(got, [0, 0, 1, 1])

    def test_explicit_mode_reads_label_only(self):
        layer = 4  # noqa: F841 - a loop variable the explicit mode must not read
        self.assertEqual(_labels.call_labels("o_ffn_L3", "decode_cache", True), ("", -1, -1))
        with bo_doctor.label(layer=1, token=0):
            self.assertEqual(_labels.call_labels("o_ffn_L3", "decode_cache", True), ("", 0, 1))

    def test_phase_from_the_cache_name(self):
        self.assertEqual(_labels.call_labels("k", "Prefill_Cache", False)[0], "prefill")
        self.assertEqual(_labels.call_labels("k", "cache0", False)[0], "")


class Names(unittest.TestCase):
    def test_the_outermost_name_that_holds_an_object(self):
        def helper(cache):
            return _labels.holder_name(cache)

        decode_cache = object()
        self.assertEqual(helper(decode_cache), "decode_cache")
        self.assertIsNone(_labels.holder_name(object()))

    def test_an_attribute_of_self(self):
        class Model:
            def __init__(self):
                self.prefill_kc = object()

            def run(self):
                return _labels.holder_name(self.prefill_kc)

        self.assertEqual(Model().run(), "prefill_kc")

    def test_caller_path_is_file_and_line(self):
        path = _labels.caller_path()
        self.assertRegex(path, r"test_labels\.py:\d+$")


class ShownPaths(unittest.TestCase):
    """The call line's file name: relative to the working folder of its first sight when
    below it, worked out once per name (no getcwd system call per call), and kept when the
    program changes folder."""

    def test_worked_out_once_and_kept_across_a_change_of_folder(self):
        import os
        import tempfile
        from unittest import mock
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as d:
            sub = os.path.join(d, "pkg")
            os.mkdir(sub)
            path = os.path.join(sub, "engine.py")
            _labels._SHOWN.pop(path, None)
            asked = []
            relpath = _labels.os.path.relpath
            try:
                os.chdir(d)
                with mock.patch.object(_labels.os.path, "relpath",
                                       side_effect=lambda p: asked.append(p) or relpath(p)):
                    self.assertEqual(_labels._shown_path(path), os.path.join("pkg", "engine.py"))
                    os.chdir(sub)
                    self.assertEqual(_labels._shown_path(path), os.path.join("pkg", "engine.py"))
                    outside = os.path.join(here, "x.py") if not here.startswith(d) else "/x.py"
                    _labels._SHOWN.pop(outside, None)
                    self.assertEqual(_labels._shown_path(outside), outside)  # not below: as is
            finally:
                os.chdir(here)
            self.assertEqual(asked, [path, outside])


if __name__ == "__main__":
    unittest.main()
