"""Labels: the public label() blocks, and what the recorder reads from the program's frames."""
import threading
import unittest

import support  # noqa: F401
import bo_doctor
from bo_doctor import _labels


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

    def test_layer_from_an_objects_layer_idx(self):
        class Block:
            def __init__(self):
                self._layer_idx = 7

            def run(self):
                return _labels.call_labels("gemv", "", False)

        self.assertEqual(Block().run()[2], 7)

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


if __name__ == "__main__":
    unittest.main()
