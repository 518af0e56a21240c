"""The spool's typed records: field order against the trace format, and the serializer."""
import json
import os
import unittest
from dataclasses import fields

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


if __name__ == "__main__":
    unittest.main()
