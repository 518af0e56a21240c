"""The spool writer: whole lines from many threads, call blocks in call-number order."""
import json
import os
import tempfile
import threading
import unittest

import support
from bo_doctor._records import EndRecord, HeaderRecord, Labels
from bo_doctor._spool import Spool


class SpoolTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bod_spool_unit_")
        self.path = os.path.join(self._tmp.name, "spool")
        self.spool = Spool(self.path)

    def tearDown(self):
        self.spool.close()
        self._tmp.cleanup()

    def test_lines_from_threads_are_whole(self):
        n_threads, per_thread = 8, 300
        long_name = "p" * 5000  # long lines: a torn write would show

        def work(t):
            for i in range(per_thread):
                self.spool.write(HeaderRecord(long_name, ["t%d" % t, str(i)], False))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        got = support.read_lines(self.path)  # every line parses
        self.assertEqual(len(got), n_threads * per_thread)
        seen = {tuple(g["argv"]) for g in got}
        self.assertEqual(len(seen), n_threads * per_thread)
        for t in range(n_threads):  # each thread's lines in its own order
            mine = [int(g["argv"][1]) for g in got if g["argv"][0] == "t%d" % t]
            self.assertEqual(mine, list(range(per_thread)))

    def test_call_blocks_are_written_in_number_order(self):
        self.spool.write_call(2, [Labels("b", 2, 0), Labels("b", 2, 1)])
        self.spool.write_call(3, [Labels("c", 3, 0)])
        self.assertEqual(support.read_lines(self.path), [])  # held until call 1's block
        self.assertEqual(self.spool.held(), 2)
        self.spool.write_call(1, [Labels("a", 1, 0)])
        got = [(g["phase"], g["layer"]) for g in support.read_lines(self.path)]
        self.assertEqual(got, [("a", 0), ("b", 0), ("b", 1), ("c", 0)])
        self.assertEqual(self.spool.held(), 0)

    def test_call_blocks_from_threads_in_any_order(self):
        numbers = list(range(1, 201))
        chunks = [numbers[i::4][::-1] for i in range(4)]  # each thread hands over late numbers first

        def work(chunk):
            for n in chunk:
                self.spool.write_call(n, [Labels("x", n, 0), Labels("x", n, 1)])

        threads = [threading.Thread(target=work, args=(c,)) for c in chunks]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        got = [(g["token"], g["layer"]) for g in support.read_lines(self.path)]
        self.assertEqual(got, [(n, l) for n in numbers for l in (0, 1)])

    def test_each_write_is_flushed(self):
        self.spool.write(EndRecord(0, 0.0))
        with open(self.path) as f:  # another reader sees it at once
            self.assertEqual(f.read(), '{"kind":"end","calls":0,"recorder_seconds":0.0}\n')


if __name__ == "__main__":
    unittest.main()


class SpoolDescriptor(unittest.TestCase):
    """The spool's descriptor cannot be reached by the program (docs/recording.md)."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bod_spool_fd_")
        self.path = os.path.join(self._tmp.name, "spool")
        self.user = os.path.join(self._tmp.name, "user.txt")
        with open(self.user, "w") as f:
            f.write("mine\n")

    def tearDown(self):
        self._tmp.cleanup()

    def test_descriptor_is_high_and_close_on_exec(self):
        s = Spool(self.path)
        self.assertGreaterEqual(s._fd, 64)
        self.assertFalse(os.get_inheritable(s._fd))
        s.close()

    def test_closed_descriptor_reused_by_the_program_is_never_written(self):
        s = Spool(self.path)
        s.write(EndRecord(1, 0.0))
        fd = s._fd
        os.close(fd)  # os.closerange(3, ...)
        u = os.open(self.user, os.O_WRONLY | os.O_APPEND)
        os.dup2(u, fd)  # the program's file on the spool's number
        s.write(EndRecord(2, 0.0))
        s.write_call(1, [Labels("a", 1, 0)])
        with open(self.user) as f:
            self.assertEqual(f.read(), "mine\n")
        self.assertEqual([g.get("calls", g.get("phase")) for g in support.read_lines(self.path)],
                         [1, 2, "a"])
        os.close(u)
        os.close(fd)
        s.close()

    def test_spool_files_of_one_folder_are_per_process(self):
        a = Spool.in_folder(self._tmp.name)
        b = Spool.in_folder(self._tmp.name)  # an exec'd interpreter: same pid, next file
        self.assertNotEqual(a.path, b.path)
        self.assertEqual(os.path.basename(a.path), "%d-0.jsonl" % os.getpid())
        a.close()
        b.close()


class Text(unittest.TestCase):
    def test_bytes_that_are_not_utf8_are_escaped(self):
        from bo_doctor._records import line
        p = os.fsdecode(b"/tmp/caf\xff.py")
        got = json.loads(line(Labels(p, 1, 2)))
        self.assertEqual(got["phase"], "/tmp/caf\\xff.py")
        self.assertEqual(json.loads(line(Labels("\ud800x", 1, 2)))["phase"], "\\ud800x")
        self.assertEqual(json.loads(line(Labels("café", 1, 2)))["phase"], "café")


class ChildEnvironment(unittest.TestCase):
    def test_recorder_variables_put_back(self):
        from bo_doctor import _children
        _children._FOLDER = "/rec"
        _children._VARS.clear()
        _children._VARS.update({"BOD_RECORD_SPOOL": "/s"})
        self.assertEqual(_children._fix_dict({"PATH": "/bin", "PYTHONPATH": "/mine"}),
                         {"PATH": "/bin", "PYTHONPATH": "/rec:/mine", "BOD_RECORD_SPOOL": "/s"})
        self.assertIsNone(_children._fix_dict({"PYTHONPATH": "/rec:/mine",
                                                "BOD_RECORD_SPOOL": "/s"}))
        self.assertEqual(_children._fix_list([b"A=1"]),
                         [b"A=1", b"BOD_RECORD_SPOOL=/s", b"PYTHONPATH=/rec"])
        self.assertEqual(_children._fix_dict({b"X": b"1"}),
                         {b"X": b"1", b"BOD_RECORD_SPOOL": b"/s", b"PYTHONPATH": b"/rec"})


class LateChild(unittest.TestCase):
    def test_a_child_that_starts_after_the_recording_ended_runs_unrecorded(self):
        # A helper process of a recorded program whose interpreter comes up after the program
        # exited and the spool folder was removed: it runs as it would, creates nothing.
        import subprocess
        import sys
        with tempfile.TemporaryDirectory(prefix="bod_late_") as d:
            gone = os.path.join(d, "trace.jsonl.spool.1")
            env = dict(os.environ, BOD_RECORD_SPOOL=gone, BOD_RECORD_STARTED="1",
                       PYTHONPATH=support.RECORDER)
            r = subprocess.run([sys.executable, "-c", "print(6 * 7)"], env=env, cwd=d,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual((r.returncode, r.stdout), (0, "42\n"), r.stderr)
            self.assertIn("the recording it was started in has ended", r.stderr)
            self.assertEqual(os.listdir(d), [])


class SpoolFailure(unittest.TestCase):
    def test_a_spool_that_cannot_be_written_never_raises_into_the_program(self):
        with tempfile.TemporaryDirectory(prefix="bod_spool_fail_") as d:
            s = Spool(os.path.join(d, "spool"))
            os.close(s._fd)
            s.path = os.path.join(d, "no", "such", "folder", "spool")  # cannot be opened again
            s.write(EndRecord(1, 0.0))
            s.write_call(1, [Labels("a", 1, 0)])
            self.assertTrue(s.failed)


class WithoutTheNativeWrite:
    """Runs a test class's tests with the spool written the Python way (no native `write`)."""

    def setUp(self):
        from bo_doctor import _spool
        self._saved = _spool._WRITE
        _spool._WRITE = None
        super().setUp()

    def tearDown(self):
        from bo_doctor import _spool
        super().tearDown()
        _spool._WRITE = self._saved


class PythonWriteSpoolTest(WithoutTheNativeWrite, SpoolTest):
    pass


class PythonWriteSpoolDescriptor(WithoutTheNativeWrite, SpoolDescriptor):
    pass


class PythonWriteSpoolFailure(WithoutTheNativeWrite, SpoolFailure):
    pass


class NativeWriteInUse(unittest.TestCase):
    def test_the_native_write_is_in_use_where_the_module_loads(self):
        from bo_doctor import _fast, _spool
        self.assertEqual(_spool._WRITE is not None, _fast.module() is not None)
