"""The spool's typed records: field order against the trace format, and the serializer."""
import json
import os
import unittest
from dataclasses import fields, replace

import support
import numpy as np

from bo_doctor import _records as R


def names(cls):
    return [f.name for f in fields(cls)]


def in_order(test, got, reference, what):
    """got (without extensions) lists names of reference, in reference's order."""
    got = [g for g in got if g != "x"]
    for g in got:
        test.assertIn(g, reference, "%s: %s is not a key of the format" % (what, g))
    idx = [reference.index(g) for g in got]
    test.assertEqual(idx, sorted(idx), "%s: %s not in the order %s" % (what, got, reference))


class FieldOrder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(support.ROOT, "docs", "trace.schema.json")) as f:
            cls.defs = json.load(f)["$defs"]

    def resolve(self, d):
        while "$ref" in d:  # "#/$defs/host"
            d = self.defs[d["$ref"].rsplit("/", 1)[1]]
        return d

    def props(self, *path):
        d = self.defs[path[0]]
        for p in path[1:]:
            d = self.resolve(d["properties"][p] if p != "items" else d["items"])
        return list(self.resolve(d)["properties"])

    def test_call_line(self):
        in_order(self, [n for n in names(R.Call) if n != "x"], self.props("call"), "call")
        # `x` goes before `outputs`, as the spool always had it.
        self.assertEqual(names(R.Call)[-4:], ["x", "outputs", "shadow_like", "thread"])

    def test_slot_and_its_objects(self):
        in_order(self, names(R.Slot), self.props("slot"), "slot")
        in_order(self, names(R.Host), self.props("slot", "host"), "host")
        in_order(self, names(R.Placement), self.props("slot", "bo"), "bo")

    def test_outputs_labels_events_kernels(self):
        in_order(self, names(R.Output), self.props("call", "outputs", "items"), "outputs[]")
        in_order(self, names(R.Labels), self.props("call", "labels"), "labels")
        in_order(self, names(R.ViewRead), self.props("view_read"), "view_read")
        kernels = self.props("header", "kernels", "items")
        in_order(self, [n for n in names(R.KernelRecord) if n != "kind"], kernels, "kernels[]")
        in_order(self, names(R.KernelSlot), self.props("header", "kernels", "items", "slots",
                                                       "items"), "kernels[].slots[]")


def from_plain(cls, d):
    """A record built from a parsed line (nested objects by the field's name)."""
    nested = {"labels": R.Labels, "host": R.Host, "bo": R.Placement}
    kw = {}
    for f in fields(cls):
        if not f.init or f.name not in d:
            continue
        v = d[f.name]
        if f.name in nested:
            v = from_plain(nested[f.name], v)
        elif f.name == "slots":
            v = [from_plain(R.Slot, s) for s in v]
        elif f.name == "outputs":
            v = [from_plain(R.Output, o) for o in v]
        kw[f.name] = v
    return cls(**kw)


class Serializer(unittest.TestCase):
    def test_hand_written_call_lines_come_out_byte_for_byte(self):
        # The format's own example (docs/trace-format.md §9), without the access capability
        # the recorder never writes: built as records, serialized, the same bytes.
        path = os.path.join(support.ROOT, "tests", "data", "trace", "hand_written.trace.jsonl")
        with open(path) as f:
            calls = [json.loads(l) for l in f if '"type":"call"' in l]
        self.assertEqual(len(calls), 2)
        for c in calls:
            for s in c["slots"]:
                del s["access"]
            want = json.dumps(c, separators=(",", ":"))
            self.assertEqual(R.line(from_plain(R.Call, c)), want)

    def test_omitted_fields_are_left_out(self):
        s = R.Slot("input", False, R.Host([1], "f32", 4, "0" * 16, "var", "x", 0),
                   R.Placement("", "key", "k", 0, 4, 1), 4, True, 4, "0" * 16, ["a", "b"])
        d = json.loads(R.line(s))
        self.assertNotIn("no_reuse", d)
        self.assertNotIn("x", d["host"])
        s.no_reuse = ["c", "d"]
        self.assertEqual(list(json.loads(R.line(s)))[-1], "no_reuse")

    def test_spool_kinds_come_first(self):
        self.assertEqual(R.line(R.EndRecord(3, 0.25)),
                         '{"kind":"end","calls":3,"recorder_seconds":0.25}')
        self.assertEqual(R.line(R.HeaderRecord("p", ["a.py", "-x"], True)),
                         '{"kind":"header","producer":"p","argv":["a.py","-x"],"shadow":true}')
        k = R.KernelRecord("scale", [R.KernelSlot("arg0", "f32")], "")
        self.assertEqual(R.line(k), '{"kind":"kernel","name":"scale","slots":[{"name":"arg0",'
                                    '"dtype":"f32"}],"binary":""}')

    def test_non_finite_numbers_are_the_formats_strings(self):
        o = R.Output(1, False, float("nan"), float("inf"), -float("inf"), [1, 0], [0, 2], 4)
        d = json.loads(R.line(o))
        self.assertEqual((d["cosine"], d["max_abs"], d["max_rel"]), ("nan", "inf", "-inf"))
        self.assertEqual(R.plain(np.float64(0.5)), 0.5)

    def test_numpy_integers_are_ints_and_other_values_are_refused(self):
        self.assertEqual(R.line(R.Labels("decode", np.int64(3), np.int32(-1))),
                         '{"phase":"decode","token":3,"layer":-1}')
        with self.assertRaises(TypeError):
            R.line(R.EndRecord(3, object()))


class FastSerializer(unittest.TestCase):
    """`line` (encoders per record type, fragments kept per value) writes the bytes of
    `reference_line` (plain values through json.dumps) for every value a field can hold."""

    ODD = [0, 1, -1, 2 ** 70, True, False, None, 1.0, 0.5, float("nan"), float("inf"),
           np.int64(1), np.int32(0), np.bool_(True), np.float32(1.5), "", "a\"b\\c\n",
           "caf\u00e9", "x\udc80y", "\ud800", "\x00\x1f\x7f", [], [1, 2], [True], (1, 2),
           ["a", "b"], {}, {"1": "p"}, {2: "q"}, R.OMIT]

    def same(self, record):
        try:
            want = R.reference_line(record)
        except (TypeError, ValueError) as e:
            with self.assertRaises(type(e), msg=repr(record)):
                R.line(record)
            return
        self.assertEqual(R.line(record), want, repr(record))

    def slot(self, **kw):
        """A slot with the fields named in kw (`host__hash`, `bo__ns`, `x__numpy_dtype`, `role`
        ...) set to the values given (HostX and Placement are frozen: made with them)."""
        parts = {"": {}, "host": {}, "bo": {}, "x": {}}
        for k, v in kw.items():
            obj, _, name = k.rpartition("__")
            parts[obj][name] = v
        hx = replace(R.HostX("float32", True, False), **parts["x"])
        host = R.Host([4, 2], "f32", 32, "0123456789abcdef", "var", "arg0@L1", 0, hx)
        bo = replace(R.Placement("decode_cache", "key", "k_L1", 0, 32, 3), **parts["bo"])
        s = R.Slot("input", False, host, bo, 32, True, 32, "0123456789abcdef",
                   ["0123456789abcdef", "0" * 16])
        for obj, target in (("", s), ("host", host)):
            for name, v in parts[obj].items():
                setattr(target, name, v)
        return s

    def test_every_field_of_a_slot_with_every_odd_value(self):
        targets = [f.name for f in fields(R.Slot)] + \
            ["host__" + f.name for f in fields(R.Host)] + \
            ["bo__" + f.name for f in fields(R.Placement)] + \
            ["x__" + f.name for f in fields(R.HostX)]
        n = 0
        for t in targets:
            for v in self.ODD:
                self.same(self.slot(**{t: v}))
                n += 1
        self.assertGreater(n, 700)
        # Fragments are kept per value: a value of another type that compares equal (True and
        # 1, 1.0 and 1) never gets the one written before it.
        for a, b in ((1, True), (True, 1), (0, False), (1, 1.0), (3, np.int64(3))):
            self.same(self.slot(bo__index=a))
            self.same(self.slot(bo__index=b))
            self.same(self.slot(x__c_contiguous=a))
            self.same(self.slot(x__c_contiguous=b))

    def test_calls_and_every_record_kind(self):
        for v in self.ODD:
            for f in [f.name for f in fields(R.Call) if f.init]:
                c = R.Call(3, "ns", "k", "key", "key", [1], [2], [3], False, {"1": "a"},
                           R.Labels("decode", 2, 1), "p.py:3", 1, [self.slot()], False, "",
                           [4, 0], [1, 0], R.CallX(False, "7f"))
                setattr(c, f, v)
                self.same(R.CallRecord(c))
        self.same(R.ViewReadRecord(R.ViewRead("v\u00e9", "call 3", 3, 1, 2, 2, True)))
        self.same(R.HeaderRecord("p", ["a.py", "\udcff"], True, 1, 2, 3, R.ForkOf("s", 4)))
        self.same(R.KernelRecord("k", [R.KernelSlot("arg0", "f32")], "/b\"in"))
        self.same(R.EndRecord(3, 0.25))
        self.same(R.Output(1, False, float("nan"), 0.5, -float("inf"), [1, 0], [0, 2], 4))

    def test_random_slots(self):
        rng = np.random.default_rng(5)
        targets = [f.name for f in fields(R.Slot)] + \
            ["host__" + f.name for f in fields(R.Host)] + \
            ["bo__" + f.name for f in fields(R.Placement)] + \
            ["x__" + f.name for f in fields(R.HostX)]
        for _ in range(2000):
            kw = {}
            for _ in range(int(rng.integers(1, 4))):
                kw[targets[int(rng.integers(len(targets)))]] = \
                    self.ODD[int(rng.integers(len(self.ODD)))]
            self.same(self.slot(**kw))


class NativeSerializer(FastSerializer):
    """The native serializer (_bod_fast, tool/recorder/native/fast_ext.cpp) on its own: for
    every record of FastSerializer's tests it writes reference_line's bytes or declines (None:
    the Python path writes it); it declines only values it does not know exactly."""

    def setUp(self):
        from bo_doctor import _fast
        lib = os.environ.get("BOD_RECORD_HASHLIB", "")
        built = lib and os.path.isfile(os.path.join(os.path.dirname(lib), _fast.FILE))
        if R._native is None:
            if built and os.environ.get("BOD_RECORD_NO_FAST", "") in ("", "0"):
                self.fail("the native serializer was built but not loaded: " + _fast.why)
            self.skipTest("no native serializer here: " + _fast.why)
        self.written = self.declined = 0

    def same(self, record):
        try:
            want = R.reference_line(record)
        except (TypeError, ValueError):
            want = None
        got = R._native(record)
        if got is None:
            self.declined += 1
        else:
            self.written += 1
            self.assertEqual(got, want, repr(record))

    def tearDown(self):
        self.assertGreater(self.written, 0)

    def test_what_it_declines(self):
        s = self.slot()
        self.assertIsNotNone(R._native(s))
        for odd in ("caf\u00e9", "x\udc80y", np.int64(1), {2: "q"}, [np.int32(2)]):
            self.assertIsNone(R._native(self.slot(host__name=odd)), repr(odd))
        self.assertEqual(R._native(self.slot(bo__index=2 ** 70)),
                         R.reference_line(self.slot(bo__index=2 ** 70)))
        deep = []
        for _ in range(100):
            deep = [deep]
        self.assertIsNone(R._native(deep))
        self.written += 1


if __name__ == "__main__":
    unittest.main()
