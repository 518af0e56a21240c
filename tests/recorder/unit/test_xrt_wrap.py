"""bo_doctor.xrt_wrap on the stand-in pyxrt: the events it writes for each wrapped call (BO made,
host changes through write() and through a map() view, syncs with what came back, reads through
np.frombuffer of a map() view, runs started by a kernel call or by run.start, waits), and that a
wrapped program computes exactly what it computes unwrapped."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import support  # noqa: F401  (sys.path: the recorder and the stand-in)

import numpy as np

from bo_doctor import xrt_wrap

ROOT = support.ROOT


def _kernel(args):
    y = args.get(1, (4,))
    y[:] = args.get(0, (4,)) * 2


class XrtWrapTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="bod_xrt_wrap_")
        xrt_wrap.install(cls._tmp.name)
        import pyxrt
        xrt_wrap.wrap_module(pyxrt)
        cls.x = pyxrt
        pyxrt.register_kernel("double", _kernel, 2)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def events(self):
        (name,) = os.listdir(self._tmp.name)
        with open(os.path.join(self._tmp.name, name)) as f:
            return [json.loads(line) for line in f]

    def test_sequence(self):
        x = self.x
        to, frm = x.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE, \
            x.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE
        a = x.bo(x.device(0), 16, x.bo.host_only, 3)
        y = x.bo(x.device(0), 16, x.bo.host_only, 4)
        k = x.kernel(x.hw_context(x.device(0), None), "double")
        y_view = y.map()  # mapped before the run: a sync from the device is compared with it
        a.write(np.arange(4, dtype=np.float32).tobytes(), 0)
        a.sync(to)
        view = np.frombuffer(a.map(), dtype=np.float32)
        view[2] = 7  # bytes 8..12 through map()
        h = k(3, None, 0, a, y)  # noqa: F841  (a kernel call with leading scalars)
        self.assertEqual(h.wait(1000), x.ert_cmd_state.ERT_CMD_STATE_COMPLETED)
        y.sync(frm, 8, 0)
        out = np.frombuffer(y_view, dtype=np.float32, count=2, offset=4)
        self.assertEqual(out.tolist(), [2.0, 0.0])  # the device had a's old bytes: 1*2, [2] unsynced
        r = x.run(k)
        r.set_arg(0, a)
        r.set_arg(1, y)
        r.start()
        r.wait()
        ev = self.events()
        kinds = [e["e"] for e in ev]
        self.assertEqual(kinds[0], "open")
        bo_a = next(e for e in ev if e["e"] == "bo")["bo"]
        writes = [e for e in ev if e["e"] == "host" and e["how"] == "write"]
        self.assertEqual(writes[-1]["r"], [[0, 16]])
        stores = [e for e in ev if e["e"] == "host" and e["how"] == "map"]
        self.assertEqual(stores[0]["bo"], bo_a)
        self.assertEqual(stores[0]["r"], [[10, 1]])  # 2.0 -> 7.0: 0x40000000 -> 0x40e00000
        starts = [e for e in ev if e["e"] == "start"]
        self.assertEqual(len(starts), 2)
        self.assertEqual([a.get("v") for a in starts[0]["args"][:3]], [3, 0, 0])
        self.assertEqual(starts[1]["args"][0]["bo"], bo_a)
        self.assertTrue(all(e["state"] == 4 for e in ev if e["e"] == "wait"))
        self.assertEqual(len([e for e in ev if e["e"] == "wait"]), 2)
        sync_from = [e for e in ev if e["e"] == "sync" and e["dir"] == "from"][0]
        self.assertEqual(sync_from["len"], 8)
        self.assertEqual(sync_from["changed"], [[7, 1]])  # 2.0 (0x40000000) came back at 4..8
        reads = [e for e in ev if e["e"] == "read"]
        self.assertEqual((reads[-1]["off"], reads[-1]["len"]), (4, 8))
        self.assertTrue(reads[-1]["at"].startswith("test_xrt_wrap.py:"))
        # Writes and reads carry the hash of the bytes passed / got: equal bytes, equal hashes.
        self.assertEqual(reads[-1]["h"], xrt_wrap._hash(out.tobytes()))
        self.assertEqual(writes[-1]["h"], xrt_wrap._hash(np.arange(4, dtype=np.float32)))
        self.assertNotEqual(reads[-1]["h"], xrt_wrap._hash(np.zeros(2, np.float32)))

    def test_extension_module_left_alone(self):
        import types
        m = types.ModuleType("pyxrt")
        m.__file__ = "/x/pyxrt.cpython-311-x86_64-linux-gnu.so"
        self.assertFalse(xrt_wrap.wrap_module(m))


class XrtWrapHash(unittest.TestCase):
    def test_the_trace_hash(self):
        """Writes and reads carry the trace hash (docs/trace-format.md §8, libbod_hash.so), the
        value the preload library gives for the same bytes (XrtPreload.SameHashAsPythonWrapper)."""
        from bo_doctor import _hashing
        self.assertEqual(xrt_wrap._hash(b""), 0x2d06800538d394c2)
        self.assertEqual(xrt_wrap._hash(bytes(16)), 0xd0a66a65c7528968)
        self.assertEqual(xrt_wrap._hash(bytes(65537)), 0x66268c5ee347da5e)  # chunked
        data = np.random.default_rng(1).standard_normal(40000).astype(np.float32)
        self.assertEqual(xrt_wrap._hash(data), _hashing.digest(data.tobytes()))
        self.assertEqual(xrt_wrap._hash(memoryview(data.tobytes())[::2]),
                         _hashing.digest(data.tobytes()[::2]))  # not contiguous: copied


def _run_q4nx(bug, d=None, shadow=False):
    prog = os.path.join(ROOT, "tests", "recorder", "standin", "run_q4nx.py")
    env = dict(os.environ)
    if d:
        env.update(BOD_XRT_LOG=d,
                   BOD_XRT_RECORDER_DIR=os.path.join(ROOT, "tool", "recorder", "python"),
                   PYTHONPATH=os.path.join(ROOT, "tool", "xrt_preload", "python"))
    if shadow:
        env["BOD_XRT_SHADOW"] = "1"
    return subprocess.run([sys.executable, prog, "--bug", bug], capture_output=True, text=True,
                          check=True, env=env)


def _events(d):
    (name,) = os.listdir(d)
    with open(os.path.join(d, name)) as f:
        return [json.loads(line) for line in f]


class XrtWrapShadow(unittest.TestCase):
    def test_shadow_is_invisible(self):
        """With BOD_XRT_SHADOW=1 the program prints the same, and its own BOs see exactly the
        calls they see without the shadow: the fresh BOs are the shadow's own, never logged."""
        for bug in ("none", "dirty-flag"):
            with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
                plain = _run_q4nx(bug, a)
                shadowed = _run_q4nx(bug, b, shadow=True)
                self.assertEqual(plain.stdout, shadowed.stdout)
                self.assertEqual(shadowed.stderr, "")
                ea, eb = _events(a), _events(b)
            keep = lambda ev: [e for e in ev if e["e"] not in ("open", "shadow", "shadow_out")]  # noqa: E731
            self.assertEqual(keep(ea), keep(eb))
            self.assertFalse([e for e in ea if e["e"].startswith("shadow")])
            sh = [e for e in eb if e["e"] == "shadow"]
            self.assertEqual(len(sh), 12)
            self.assertFalse([e for e in sh if "error" in e])
            self.assertEqual(len({e["bo"] for e in eb if e["e"] == "bo"}), 7)

    def test_divergence_where_the_device_computed_on_stale_bytes(self):
        """What the program synced back from y (BO 7) after each run, against the shadow run:
        the clean decoder's is bit-exact on every run, the LUT slice not synced at token 2
        diverges on that token's two runs (5, 6), compared as float32 (the program's view)."""
        for bug, runs in (("none", []), ("lut-unsynced", [5, 6])):
            with tempfile.TemporaryDirectory() as d:
                _run_q4nx(bug, d, shadow=True)
                out = [e for e in _events(d) if e["e"] == "shadow_out"]
            self.assertEqual(len(out), 12)
            self.assertTrue(all(e["bo"] == 7 and e["r"] == [[0, 64]] for e in out), out)
            self.assertTrue(all(e["dtype"] == "float32" and e["elements"] == 16 for e in out))
            self.assertEqual([e["run"] for e in out if not e["bit_exact"]], runs)
            for e in out:
                if e["bit_exact"]:
                    self.assertEqual((e["cosine"], e["max_abs"]), (1.0, 0.0))
                else:
                    self.assertLess(e["cosine"], 1.0)
                    self.assertGreater(e["max_abs"], 0.0)


_DEVICE_STATE = r"""
import numpy as np, pyxrt
def acc(args):
    st = args.get(0, (4,))
    st += 1  # device-resident state: the host never syncs it back
    args.get(1, (4,))[:] = st
pyxrt.register_kernel("acc", acc, 2)
dev = pyxrt.device(0)
k = pyxrt.kernel(pyxrt.hw_context(dev, None), "acc")
TO = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE
FROM = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE
st = pyxrt.bo(dev, 16, pyxrt.bo.host_only, 3)
y = pyxrt.bo(dev, 16, pyxrt.bo.host_only, 4)
view = np.frombuffer(st.map(), dtype=np.float32)
yv = np.frombuffer(y.map(), dtype=np.float32)
for i in range(3):
    if i == 2:  # the host sets elements 0 and 2 (one changed range, bytes 2..12), syncs both
        view[0] = 10; view[2] = 20
        st.sync(TO, 4, 0); st.sync(TO, 4, 8)
    k(3, None, 0, st, y).wait()
    y.sync(FROM)
    print(np.frombuffer(y.map(), dtype=np.float32).tolist())
"""


class XrtWrapShadowBytes(unittest.TestCase):
    def test_device_bytes_between_host_stores_are_kept(self):
        """Host stores at elements 0 and 2 make one changed range (bytes 2..12); element 1, which
        only the device wrote, keeps the shadow's own value, so the clean program compares
        bit-exact (copying the whole range would put the host's stale 0 there)."""
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "state.py")
            with open(script, "w") as f:
                f.write(_DEVICE_STATE)
            logs = os.path.join(d, "logs")
            os.mkdir(logs)
            env = dict(os.environ, BOD_XRT_LOG=logs, BOD_XRT_SHADOW="1",
                       BOD_XRT_RECORDER_DIR=os.path.join(ROOT, "tool", "recorder", "python"),
                       PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tool", "xrt_preload",
                                                                "python"), support.STANDIN]))
            p = subprocess.run([sys.executable, script], capture_output=True, text=True,
                               check=True, env=env)
            self.assertEqual(p.stdout.splitlines()[-1], "[11.0, 3.0, 21.0, 3.0]")
            ev = _events(logs)
        stores = [e for e in ev if e["e"] == "host" and e["how"] == "map"]
        self.assertEqual(stores[-1]["r"], [[2, 10]])  # 10.0, 20.0: bytes 2..4, 10..12
        out = [e for e in ev if e["e"] == "shadow_out"]
        self.assertEqual([e["run"] for e in out], [1, 2, 3])
        self.assertTrue(all(e["bit_exact"] for e in out), out)


class XrtWrapInvisible(unittest.TestCase):
    def test_program_output_unchanged(self):
        prog = os.path.join(ROOT, "tests", "recorder", "standin", "run_q4nx.py")
        plain = subprocess.run([sys.executable, prog, "--bug", "lut-unsynced"],
                               capture_output=True, text=True, check=True)
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, BOD_XRT_LOG=d,
                       BOD_XRT_RECORDER_DIR=os.path.join(ROOT, "tool", "recorder", "python"),
                       PYTHONPATH=os.path.join(ROOT, "tool", "xrt_preload", "python"))
            wrapped = subprocess.run([sys.executable, prog, "--bug", "lut-unsynced"],
                                     capture_output=True, text=True, check=True, env=env)
            self.assertTrue(os.listdir(d))
        self.assertEqual(plain.stdout, wrapped.stdout)
        self.assertEqual(wrapped.stderr, "")


if __name__ == "__main__":
    unittest.main()
