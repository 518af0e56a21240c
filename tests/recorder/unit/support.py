"""Shared helpers of the recorder's unit tests (tests/recorder/unit).

Puts the recorder (tool/recorder/python) and the stand-in engine (tests/recorder/standin: a
KernelCache with mlir-air's load_and_run contract over a CPU stand-in for pyxrt) on sys.path,
and builds recorders that write to a spool file in a temporary folder.
"""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RECORDER = os.path.join(ROOT, "tool", "recorder", "python")
STANDIN = os.path.join(ROOT, "tests", "recorder", "standin")
for _d in (STANDIN, RECORDER):
    if _d not in sys.path:
        sys.path.insert(0, _d)
# Every spool line the tests make is also written by the reference serializer and compared.
os.environ.setdefault("BOD_RECORD_VERIFY_LINES", "1")

import numpy as np  # noqa: E402

from bo_doctor._record import Recorder  # noqa: E402
from bo_doctor._spool import Spool  # noqa: E402


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class RecorderTest(unittest.TestCase):
    """A test with a temporary folder, a recorder writing a spool there and the stand-in
    KernelCache class, whose load_and_run `self.wrapped` (a subclass) records."""

    shadow = False

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bod_recorder_unit_")
        self.dir = self._tmp.name
        self.spool_path = os.path.join(self.dir, "spool.jsonl")
        self.spool = Spool(self.spool_path)
        self.rec = Recorder(self.spool, shadow=self.shadow, argv=["unit-test"])
        from shared.infra.cache import KernelCache
        self.KernelCache = KernelCache
        self.wrapped = type("KernelCache", (KernelCache,), {
            "load_and_run": self.rec.attacher.wrap(KernelCache.load_and_run)})

    def tearDown(self):
        self.spool.close()
        self._tmp.cleanup()

    def cache(self):
        """A recorded stand-in cache with kernels `scale` (y = 2x, 2 slots) and `axpy`
        (out = a*x + y over slots x, a, y, out)."""
        c = self.wrapped(cache_dir=os.path.join(self.dir, "kernels"))

        def scale(a):
            y = a.get(1, a[0].shape)
            y[...] = 2 * a.get(0, a[0].shape)

        def axpy(a):
            n = a[0].shape
            a.get(3, n)[...] = a.get(1, n) * a.get(0, n) + a.get(2, n)

        c.register("scale", scale, 2)
        c.register("axpy", axpy, 4)
        return c

    def lines(self, kind=None):
        got = read_lines(self.spool_path)
        return [g for g in got if kind is None or g["kind"] == kind]

    def calls(self):
        return [g["call"] for g in self.lines("call")]


def f32(*values):
    return np.array(values, dtype=np.float32)
