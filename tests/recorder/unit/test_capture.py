"""The capture of one call on the stand-in engine: arguments, host arrays, BOs and views."""
import contextlib
import inspect
import io
import unittest

import support
import numpy as np

from bo_doctor._hashing import NO_HASH, array_hash, hex_digest
from bo_doctor._capture import _fast_arguments, _layout, bind, dtype_name, slot_index

EMPTY = hex_digest(b"")


class Capture(support.RecorderTest):
    def test_a_call_line(self):
        c = self.cache()
        x = support.f32(1, 2, 3, 4)
        (r0, r1) = c.load_and_run("scale", {}, x, np.zeros(4, np.float32))
        np.testing.assert_array_equal(r1, 2 * x)  # the engine's result, unchanged
        self.assertEqual(r0.size, 0)
        kinds = [l["kind"] for l in self.lines()]
        self.assertEqual(kinds, ["header", "kernel", "call"])
        k = self.lines("kernel")[0]
        self.assertEqual(k["name"], "scale")
        self.assertEqual(k["slots"], [{"name": "arg0", "dtype": "f32"},
                                      {"name": "arg1", "dtype": "f32"}])
        self.assertTrue(k["binary"].endswith("scale.elf"))
        call = self.calls()[0]
        self.assertEqual((call["n"], call["ns"], call["kernel"], call["bo_key"]),
                         (1, "c", "scale", "scale"))
        self.assertEqual((call["output"], call["static"], call["key_first_call"]), ([1], [], 1))
        s0, s1 = call["slots"]
        self.assertEqual(s0["host"]["hash"], array_hash(x))
        self.assertEqual((s0["host"]["shape"], s0["host"]["bytes"], s0["host"]["source"]),
                         ([4], 16, "var"))
        self.assertEqual(s0["bo"], {"ns": "c", "pool": "key", "name": "scale", "index": 0,
                                    "bytes": 16, "first_call": 1})
        self.assertEqual((s0["written"], s0["written_bytes"], s0["written_hash"]),
                         (True, 16, array_hash(x)))
        # An input the call does not return: its BO is not read after the dispatch (no check
        # needs it; the next call writes it again), and the call line says so.
        self.assertEqual(s0["reuse"], [array_hash(x), "0" * 16])
        self.assertEqual(call["x"]["bo_unread_after"], [0])
        self.assertEqual(s1["reuse"], [array_hash(np.zeros(4, np.float32)), array_hash(2 * x)])
        self.assertEqual(call["h2d"], [32, 0])
        self.assertNotIn("outputs", call)  # no shadow run

    def test_later_call_skips_static_and_intermediate_slots(self):
        c = self.cache()
        w, y = support.f32(2, 2), support.f32(1, 1)
        args = dict(static_input_indices=[1], intermediate_indices=[2], bo_key="axpy_L0")
        c.load_and_run("axpy", {}, support.f32(1, 1), w, y, np.zeros(2, np.float32), **args)
        c.load_and_run("axpy", {}, support.f32(3, 3), support.f32(9, 9), y,
                       np.zeros(2, np.float32), **args)
        first, later = self.calls()
        self.assertEqual(later["key_first_call"], 1)
        self.assertEqual([s["written"] for s in later["slots"]], [True, False, False, True])
        # The static BO still holds the first call's weights: reuse[0] is their hash.
        self.assertEqual(later["slots"][1]["reuse"][0], array_hash(w))
        self.assertNotEqual(later["slots"][1]["host"]["hash"], array_hash(w))
        self.assertEqual(later["labels"]["layer"], 0)  # from the bo_key
        self.assertEqual(later["slots"][1]["host"]["name"], "arg1@L0")

    def test_placeholders_zero_elements_zero_strides_and_zero_weights(self):
        c = self.cache()
        c.load_and_run("axpy", {}, support.f32(1, 1), np.zeros(32, np.float32)[:2],
                       support.f32(0, 0), np.zeros(2, np.float32), static_input_indices=[1],
                       bo_key="k1")
        c.load_and_run("axpy", {}, support.f32(1, 1), np.empty(0, np.float32),
                       support.f32(0, 0), np.zeros(2, np.float32), static_input_indices=[1],
                       bo_key="k1")
        # A zero-stride stand-in for freed weights, on a call that does not write the slot.
        c.load_and_run("axpy", {}, support.f32(1, 1), np.broadcast_to(np.float32(0), (2,)),
                       support.f32(0, 0), np.zeros(2, np.float32), static_input_indices=[1],
                       bo_key="k1")
        zeros_static = np.zeros(16, np.float32)  # 64 bytes of zeros at its key's first call
        c.load_and_run("axpy", {}, support.f32(1, 1), zeros_static, support.f32(0, 0),
                       np.zeros(2, np.float32), static_input_indices=[1], bo_key="k3")
        # The same zeros at a later call of the key: not uploaded, not a placeholder.
        c.load_and_run("axpy", {}, support.f32(1, 1), zeros_static, support.f32(0, 0),
                       np.zeros(2, np.float32), static_input_indices=[1], bo_key="k3")
        one, empty, bcast, zero_w, zero_later = self.calls()
        self.assertEqual(zero_later["slots"][1]["host"]["source"], "tensor")
        self.assertEqual(one["slots"][1]["host"]["source"], "tensor")  # 8 bytes: too small
        h = empty["slots"][1]["host"]
        self.assertEqual((h["source"], h["bytes"], h["shape"], h["hash"]),
                         ("placeholder", 0, [0], EMPTY))
        # Not written (static, later call); the BO hashed whole: the 8 bytes of zeros the key's
        # first call uploaded are what the kernel reads.
        resident = array_hash(np.zeros(2, np.float32))
        self.assertEqual((empty["slots"][1]["written"], empty["slots"][1]["reuse"]),
                         (False, [resident, resident]))
        h = bcast["slots"][1]["host"]
        self.assertEqual((h["source"], h["x"]["zero_strides"]), ("placeholder", True))
        self.assertEqual(zero_w["slots"][1]["host"]["source"], "placeholder")

    def test_a_view_of_an_earlier_output_and_a_stale_view_read(self):
        c = self.cache()
        _, y1 = c.load_and_run("scale", {}, support.f32(1, 2), np.zeros(2, np.float32),
                               bo_key="a")
        c.load_and_run("scale", {}, y1, np.zeros(2, np.float32), bo_key="b")
        # Key a again: its output BO (which y1 views) gets new bytes from the device.
        c.load_and_run("scale", {}, support.f32(5, 5), np.zeros(2, np.float32), bo_key="a")
        c.load_and_run("scale", {}, y1, np.zeros(2, np.float32), bo_key="b")
        calls = self.calls()
        h = calls[1]["slots"][0]["host"]
        self.assertEqual((h["source"], h["view_of_call"], h["name"]),
                         ("view", 1, "view of call 1 slot 1"))
        # y1 is call 1's output, whatever call 3 returned at the same address since.
        self.assertEqual(calls[3]["slots"][0]["host"]["view_of_call"], 1)
        (ev,) = self.lines("view_read")
        self.assertEqual(ev["event"], {"type": "view_read", "var": "y1",
                                       "reader": "call 4 (scale)", "read_call": 4,
                                       "captured_call": 1, "slot": 1, "overwritten_by": 3,
                                       "by_host_write": False})
        kinds = [l["kind"] for l in self.lines()]  # after the call line that reads it
        self.assertEqual(kinds, ["header", "kernel"] + ["call"] * 4 + ["view_read"])

    def test_the_programs_own_writes_are_not_overwrites(self):
        c = self.cache()
        _, y1 = c.load_and_run("scale", {}, support.f32(1, 2), np.zeros(2, np.float32),
                               bo_key="a")
        # The program writes into the engine's BO, through the BO's mapping and through its
        # view: what the view shows is the program's own doing.
        c._cached_bos["a"][1].map()[:4] = np.float32(7).tobytes()
        y1[1] = 9
        c.load_and_run("scale", {}, y1, np.zeros(2, np.float32), bo_key="b")
        self.assertEqual(self.calls()[1]["slots"][0]["host"]["hash"],
                         array_hash(support.f32(7, 9)))
        self.assertEqual(self.lines("view_read"), [])

    def test_a_bo_the_program_holds_a_view_of_is_never_synced(self):
        # The program keeps call 1's output view y1; call 2 runs the key again with that slot
        # intermediate and not read back. Recording must leave y1 showing what it shows
        # without a recorder (a FROM_DEVICE sync for a hash would refresh it).
        def program(cls):
            c = cls(cache_dir=self.dir + "/k_" + cls.__name__ + str(id(cls)))
            c.register("scale", lambda a: a.get(1, (2,)).__setitem__(
                Ellipsis, 2 * a.get(0, (2,))), 2)
            _, y1 = c.load_and_run("scale", {}, support.f32(1, 2), np.zeros(2, np.float32),
                                   bo_key="a")
            c.load_and_run("scale", {}, support.f32(5, 6), np.zeros(2, np.float32), bo_key="a",
                           intermediate_indices=[1], output_indices=[0])
            return list(y1)

        self.assertEqual(program(self.KernelCache), [2, 4])  # the engine's own behaviour
        self.assertEqual(program(self.wrapped), [2, 4])
        later = self.calls()[1]["slots"][1]
        self.assertEqual(later["reuse"][1], later["reuse"][0])  # hashed as the mapping shows

    def test_numpy_integer_indices(self):
        c = self.cache()
        c.load_and_run("axpy", {}, support.f32(1), support.f32(2), support.f32(3),
                       np.zeros(1, np.float32), static_input_indices=np.array([1]),
                       output_indices=[np.int64(3)], shared_alias={np.int32(2): "pool"})
        call = self.calls()[0]
        self.assertEqual((call["static"], call["output"], call["alias"]),
                         ([1], [3], {"2": "pool"}))
        self.assertEqual([s["role"] for s in call["slots"]],
                         ["input", "static", "input", "input"])
        self.assertEqual(call["slots"][2]["bo"]["pool"], "alias")
        self.assertEqual(slot_index(np.uint8(4)), 4)
        self.assertIs(type(slot_index(np.int64(4))), int)

    def test_engine_errors_are_recorded_and_reraised(self):
        c = self.cache()
        with self.assertRaises(ValueError) as e:
            c.load_and_run("axpy", {}, *[support.f32(1)] * 4, static_input_indices=[1],
                           shared_alias={1: "p"})
        self.assertIn("shared_alias must not target", str(e.exception))
        call = self.calls()[0]
        self.assertTrue(call["failed"])
        self.assertTrue(call["error"].startswith("ValueError: shared_alias"))
        self.assertEqual([s["written"] for s in call["slots"]], [False] * 4)

    def test_arguments_the_method_does_not_take_are_its_own_error(self):
        c = self.cache()
        with self.assertRaises(TypeError):
            c.load_and_run("scale", {}, support.f32(1), support.f32(1), colour="red")
        self.assertEqual(self.calls(), [])
        self.assertEqual(self.rec.n, 0)

    def test_a_failing_recorder_stops_and_the_program_runs_on(self):
        c = self.cache()
        c.load_and_run("scale", {}, support.f32(1), np.zeros(1, np.float32))

        def broken(*args, **kwargs):
            raise RuntimeError("recorder bug")

        self.rec.views.rehash = broken  # (called before every call)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            y = c.load_and_run("scale", {}, support.f32(3), np.zeros(1, np.float32))[1][0]
            z = c.load_and_run("scale", {}, support.f32(4), np.zeros(1, np.float32))[1][0]
        self.assertEqual((y, z), (6, 8))
        self.assertIn("recording stopped at call 2 (RuntimeError: recorder bug)", err.getvalue())
        self.assertEqual([k["n"] for k in self.calls()], [1])

    def test_dtype_names(self):
        self.assertEqual(dtype_name(np.zeros((2, 3), np.float32)), ("f32", [2, 3]))
        self.assertEqual(dtype_name(np.zeros(3, np.int32)), ("i32", [3]))
        self.assertEqual(dtype_name(np.zeros(3, np.uint8)), ("i8", [3]))
        self.assertEqual(dtype_name(np.zeros((2, 3), np.float64)), ("i8", [48]))


class Binding(unittest.TestCase):
    """The arguments bound without inspect's bind (`_fast_arguments`) are those sig.bind +
    apply_defaults gives, for every call shape it takes; the others go the slow way."""

    @staticmethod
    def load_and_run(self, name, backend_kwargs, *inputs, output_indices=None,
                     static_input_indices=None, intermediate_indices=None, bo_key=None,
                     shared_nonstatic=False, shared_alias=None):
        pass

    @staticmethod
    def required(self, name, *inputs, bo_key, flag=1):
        pass

    @staticmethod
    def keywords(self, name, *inputs, **kw):
        pass

    def check(self, fn, args, kwargs):
        sig = inspect.signature(fn)
        var = next(p.name for p in sig.parameters.values() if p.kind == p.VAR_POSITIONAL)
        try:
            want = sig.bind("cache", *args, **kwargs)
            want.apply_defaults()
        except TypeError:
            with self.assertRaises(TypeError):
                bind(sig, var, "cache", args, kwargs)
            return None
        got = bind(sig, var, "cache", args, kwargs)
        self.assertEqual(list(got.bound.arguments.items()), list(want.arguments.items()))
        self.assertEqual((got.bound.args, got.bound.kwargs), (want.args, want.kwargs))
        layout = _layout(sig)
        return layout is not None and _fast_arguments(layout, "cache", args, kwargs) is not None

    def test_every_call_shape(self):
        x = np.zeros(2)
        fast = []
        for fn in (self.load_and_run, self.required, self.keywords):
            for args in ((), ("k",), ("k", {}), ("k", {}, x), ("k", {}, x, x, x)):
                for kwargs in ({}, {"bo_key": "b"}, {"output_indices": [1], "bo_key": "b"},
                               {"name": "k"}, {"backend_kwargs": {}}, {"nothing": 1},
                               {"shared_alias": {1: "a"}, "flag": 2}, {"self": 1}):
                    fast.append(self.check(fn, args, kwargs))
        self.assertIn(True, fast)   # the usual call is bound the fast way
        self.assertIn(False, fast)  # and other shapes the slow way


class ShadowSelection(support.RecorderTest):
    """record --shadow: each key's first two calls, then only calls whose bytes before dispatch
    differ from the no-reuse engine's in a way no harmless shadow run of the kernel showed yet;
    --shadow=all: every call."""
    shadow = True

    def run_calls(self):
        c = self.cache()
        w, w2 = support.f32(2, 2), support.f32(3, 3)
        args = dict(static_input_indices=[1], bo_key="k")
        x = support.f32(1, 1)
        for weights in (w, w, w, w, w2, w2):  # w2: a stale static (the BO keeps w): diverges
            c.load_and_run("axpy", {}, x, weights, support.f32(0, 1), np.zeros(2, np.float32),
                           **args)
        return self.calls()

    def test_clean_repeats_are_not_shadowed_new_differences_are(self):
        calls = self.run_calls()
        self.assertEqual([c.get("shadow_like") for c in calls], [None, None, 1, 1, None, None])
        for c in calls[2:4]:
            self.assertEqual(c["outputs"], [])
            self.assertEqual([s["no_reuse"][1] for s in c["slots"]], [NO_HASH] * 4)
            self.assertEqual([s["no_reuse"][0] for s in c["slots"]],
                             [s["host"]["hash"] for s in c["slots"]])
        for c in calls[4:]:  # diverged: never shown harmless, so shadowed each time
            self.assertFalse(c["outputs"][0]["bit_exact"], c["n"])


class ShadowEveryCall(ShadowSelection):
    shadow = "all"

    def test_clean_repeats_are_not_shadowed_new_differences_are(self):
        calls = self.run_calls()
        self.assertEqual([c.get("shadow_like") for c in calls], [None] * 6)
        self.assertEqual([len(c["outputs"]) for c in calls], [1] * 6)


class Shadow(support.RecorderTest):
    shadow = True

    def test_shadow_run_compares_outputs_on_fresh_bos(self):
        c = self.cache()
        w = support.f32(2, 2)
        args = dict(static_input_indices=[1], bo_key="k")
        c.load_and_run("axpy", {}, support.f32(1, 1), w, support.f32(0, 1),
                       np.zeros(2, np.float32), **args)
        # Later call with a placeholder for the weights: the shadow gets the first call's.
        _, _, _, out = c.load_and_run("axpy", {}, support.f32(3, 3), np.empty(0, np.float32),
                                      support.f32(0, 1), np.zeros(2, np.float32), **args)
        np.testing.assert_array_equal(out, [6, 7])
        first, later = self.calls()
        self.assertEqual(later["outputs"], [{"slot": 3, "bit_exact": True, "cosine": 1.0,
                                             "max_abs": 0.0, "max_rel": 0.0, "nan": [0, 0],
                                             "inf": [0, 0], "elements": 2}])
        self.assertEqual(later["slots"][1]["no_reuse"][0], array_hash(w))  # replaced
        self.assertEqual(later["slots"][3]["no_reuse"][1], array_hash(out))
        self.assertEqual(later["h2d"][1], 32)
        self.assertEqual(later["writes"], [3, 4])
        self.assertNotIn("__bo_doctor_shadow__", c._cached_bos)  # the real cache untouched

    def test_a_placeholder_in_a_non_static_slot_never_reaches_the_shadow(self):
        c = self.cache()
        w = support.f32(2, 2)
        args = dict(bo_key="k")  # nothing static: the weights are written every call
        c.load_and_run("axpy", {}, support.f32(1, 1), w, support.f32(0, 1),
                       np.zeros(2, np.float32), **args)
        # A 0-element placeholder: the real BO keeps call 1's weights (0 bytes written); the
        # shadow is fed call 1's array, not the placeholder, and the line says so.
        c.load_and_run("axpy", {}, support.f32(3, 3), np.empty(0, np.float32),
                       support.f32(0, 1), np.zeros(2, np.float32), **args)
        later = self.calls()[1]
        self.assertTrue(later["outputs"][0]["bit_exact"], later["outputs"])
        self.assertEqual(later["slots"][1]["no_reuse"][0], array_hash(w))
        self.assertEqual(later["x"]["shadow_fed"], [[1, 1]])

    def test_a_diverging_shadow_run(self):
        c = self.cache()
        args = dict(static_input_indices=[1], bo_key="k")
        c.load_and_run("axpy", {}, support.f32(1), support.f32(2), support.f32(0),
                       np.zeros(1, np.float32), **args)
        # New weights under the same key: the real call keeps the resident 2, the shadow 5.
        c.load_and_run("axpy", {}, support.f32(1), support.f32(5), support.f32(0),
                       np.zeros(1, np.float32), **args)
        out = self.calls()[1]["outputs"][0]
        self.assertFalse(out["bit_exact"])
        self.assertEqual(out["max_abs"], 3.0)


if __name__ == "__main__":
    unittest.main()
