"""Hostile programs under `bo-doctor record` (docs/robustness.md, "Recording hostile programs").

Each case is a small Python program on the stand-in KernelCache (tests/recorder/standin) that
does something a recorder can trip on: threads, fork, multiprocessing, subprocess, exec, a child
that resets PYTHONPATH, os.closerange, odd argument values, signals, os._exit, huge arguments,
a program that is not Python. Each runs under `record` in a fresh folder holding a file of the
user's, and must:
- end in at most 15 s (a hang guard, not a timing assertion);
- exit with the program's own status;
- leave the user's file as the program left it, and no spool behind;
- leave a trace `analyze` reads (exit 0 or 1) with the expected calls and processes, or, when
  nothing could be recorded, no trace and a message saying so.

    BOD_BINARY=build/bo-doctor /usr/bin/python3 tests/recorder/hostile/test_hostile.py -v
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
STANDIN = os.path.join(ROOT, "tests", "recorder", "standin")
BINARY = os.path.abspath(os.environ.get("BOD_BINARY", os.path.join(ROOT, "build", "bo-doctor")))
PY = "/usr/bin/python3"
GUARD = 15  # seconds

PRELUDE = r'''
import os, sys
sys.path.insert(0, %r)
import numpy as np
from shared.infra.cache import KernelCache

def scale(a):
    a.get(1, a[0].shape)[...] = 2 * a.get(0, a[0].shape)

def make_cache(name="kernels"):
    c = KernelCache(cache_dir=os.path.join(os.getcwd(), name))
    c.register("scale", scale, 2)
    return c

def call(c, key="k", v=1.0, n=16, **kw):
    x = np.full(n, v, np.float32)
    return c.load_and_run("scale", {}, x, np.zeros(n, np.float32), bo_key=key, **kw)

''' % STANDIN

USER_TEXT = "the user's own notes\n"


class Hostile(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="bod_hostile_")
        self.dir = self._tmp.name
        self.user = os.path.join(self.dir, "notes.txt")
        with open(self.user, "w") as f:
            f.write(USER_TEXT)

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, body, prelude=True):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write((PRELUDE if prelude else "") + body)
        return path

    def record(self, command, env=None, before_wait=None):
        """Runs `record -o trace.jsonl -- command` in the folder; (exit code, stderr)."""
        p = subprocess.Popen([BINARY, "record", "-o", "trace.jsonl", "--"] + command,
                             cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, start_new_session=True)
        if before_wait:
            before_wait(p)
        try:
            out, err = p.communicate(timeout=GUARD)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # record, the program and what it started
            p.communicate()
            self.fail("record did not end within %d s" % GUARD)
        self.out = out.decode("utf-8", "replace")
        return p.returncode, err.decode("utf-8", "replace")

    def trace(self):
        with open(os.path.join(self.dir, "trace.jsonl"), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def calls(self):
        return [j for j in self.trace() if j.get("type") == "call"]

    def check(self, prog, code=0, calls=None, processes=None, user_text=USER_TEXT, args=(),
              interpreter=(PY,), env=None):
        """Records `prog` and checks the contract; returns the trace's call lines."""
        rc, err = self.record(list(interpreter) + [prog] + list(args), env=env)
        self.assertEqual(rc, code, err)
        with open(self.user) as f:
            self.assertEqual(f.read(), user_text, "the user's file changed")
        left = [n for n in os.listdir(self.dir) if ".spool" in n]
        inside = [os.listdir(os.path.join(self.dir, n)) if os.path.isdir(
            os.path.join(self.dir, n)) else "(a file)" for n in left]
        self.assertEqual(left, [], "spool left behind: %s %s\n%s" % (left, inside, err))
        if calls is None:
            self.assertFalse(os.path.exists(os.path.join(self.dir, "trace.jsonl")), err)
            self.assertIn("nothing recorded", err)
            return []
        a = subprocess.run([BINARY, "analyze", "--format", "json", "trace.jsonl"], cwd=self.dir,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=GUARD)
        self.assertIn(a.returncode, (0, 1), a.stderr.decode())
        self.report = json.loads(a.stdout)
        got = self.calls()
        self.assertEqual(len(got), calls, err)
        if processes is not None:
            self.assertEqual(len({c.get("process", 0) for c in got}), processes, err)
        return got

    def errors(self):
        return [f for f in self.report["findings"] if f["severity"] != "note"]

    # --- plain endings ------------------------------------------------------------------------

    def test_plain(self):
        self.check(self.write("p.py", "c = make_cache()\ncall(c)\ncall(c)\n"), 0, 2, 1)

    def test_exit_status(self):
        self.check(self.write("p.py", "c = make_cache()\ncall(c)\nsys.exit(3)\n"), 3, 1)

    def test_os_exit(self):
        self.check(self.write("p.py", "c = make_cache()\ncall(c)\ncall(c)\nos._exit(5)\n"), 5, 2)

    def test_uncaught_exception(self):
        self.check(self.write("p.py", "c = make_cache()\ncall(c)\nraise KeyError('x')\n"), 1, 1)

    def test_sigkill_self(self):
        self.check(self.write("p.py", "import signal\nc = make_cache()\ncall(c)\n"
                                      "os.kill(os.getpid(), signal.SIGKILL)\n"), 137, 1)

    def test_sigterm_self(self):
        self.check(self.write("p.py", "import signal\nc = make_cache()\ncall(c)\n"
                                      "os.kill(os.getpid(), signal.SIGTERM)\n"), 143, 1)

    def test_closed_stdout_and_stderr(self):
        self.check(self.write("p.py", "c = make_cache()\nos.close(1)\nos.close(2)\ncall(c)\n"
                                      "call(c)\nos._exit(0)\n"), 0, 2)

    def test_huge_arguments(self):
        self.check(self.write("p.py", "c = make_cache()\ncall(c)\n"), 0, 1,
                   args=["x" * 100000] * 10)

    def test_many_calls(self):
        self.check(self.write("p.py", "c = make_cache()\nfor i in range(1500):\n"
                                      "    call(c, key='k%d' % (i % 7))\n"), 0, 1500)

    def test_changes_directory(self):
        self.check(self.write("p.py", "c = make_cache()\nos.makedirs('sub')\nos.chdir('sub')\n"
                                      "call(c)\n"), 0, 1)

    # --- threads ------------------------------------------------------------------------------

    def test_threads_own_caches(self):
        got = self.check(self.write("p.py", """
import threading
def work(t):
    c = make_cache('k%d' % t)
    for i in range(10):
        call(c, key='k%d' % (i % 2), v=t)
ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
"""), 0, 40)
        self.assertEqual([c["n"] for c in got], list(range(1, 41)))

    def test_threads_one_cache(self):
        self.check(self.write("p.py", """
import threading
c = make_cache()
def work(t):
    for i in range(10):
        call(c, key='t%d' % t, v=i)
ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
"""), 0, 40)

    # --- processes ----------------------------------------------------------------------------

    def test_fork(self):
        got = self.check(self.write("p.py", """
c = make_cache()
call(c, key='a'); call(c, key='b')
pid = os.fork()
if pid == 0:
    d = make_cache('child')
    call(d, key='a'); call(d, key='c')
    os._exit(0)
os.waitpid(pid, 0)
call(c, key='a'); call(c, key='b')
"""), 0, 6, 2)
        self.assertEqual([c["n"] for c in got], list(range(1, 7)))
        self.assertEqual([c.get("process", 0) for c in got], [0, 0, 0, 0, 1, 1])
        self.assertEqual([c["ns"] for c in got[4:]], ["d@p1", "d@p1"])
        self.assertEqual(self.errors(), [])

    def test_fork_child_uses_the_parents_cache(self):
        self.check(self.write("p.py", """
c = make_cache()
call(c, key='a', static_input_indices=[0]); call(c, key='b')
pid = os.fork()
if pid == 0:
    call(c, key='a', static_input_indices=[0]); call(c, key='c')
    os._exit(0)
os.waitpid(pid, 0)
call(c, key='a', static_input_indices=[0]); call(c, key='b')
"""), 0, 6, 2)
        got = self.calls()
        # The child's 'a' was first called by its parent before the fork: call 1.
        self.assertEqual((got[4]["bo_key"], got[4]["process"], got[4]["key_first_call"]),
                         ("a", 1, 1))
        self.assertEqual(self.errors(), [])

    def test_fork_child_exit_status_is_not_the_programs(self):
        self.check(self.write("p.py", """
c = make_cache()
call(c)
pid = os.fork()
if pid == 0:
    call(c); os._exit(9)
os.waitpid(pid, 0)
sys.exit(4)
"""), 4, 2, 2)

    def test_fork_while_another_thread_records(self):
        self.check(self.write("p.py", """
import threading
c = make_cache()
stop = False
def spin():
    d = make_cache('spin')
    for i in range(200):
        call(d, key='s%d' % (i % 3))
t = threading.Thread(target=spin); t.start()
for k in range(3):
    pid = os.fork()
    if pid == 0:
        call(make_cache('c%d' % k))
        os._exit(0)
    os.waitpid(pid, 0)
t.join()
"""), 0, 203, 4)

    def test_multiprocessing_fork_pool(self):
        self.check(self.write("p.py", """
import multiprocessing as mp
def work(i):
    c = make_cache('w%d' % os.getpid())
    call(c, key='k%d' % i)
    return i
if __name__ == '__main__':
    with mp.get_context('fork').Pool(2) as p:
        print(sorted(p.map(work, range(4))))
"""), 0, 4)

    def test_multiprocessing_spawn(self):
        self.check(self.write("p.py", """
import multiprocessing as mp
def work(i):
    c = make_cache('w%d' % i)
    call(c, key='k'); call(c, key='k')
if __name__ == '__main__':
    c = make_cache()
    call(c)
    ps = [mp.get_context('spawn').Process(target=work, args=(i,)) for i in range(2)]
    [p.start() for p in ps]; [p.join() for p in ps]
    sys.exit(sum(p.exitcode for p in ps))
"""), 0, 5, 3)

    def test_multiprocessing_forkserver(self):
        self.check(self.write("p.py", """
import multiprocessing as mp
def work(i):
    call(make_cache('w%d' % i), key='k')
if __name__ == '__main__':
    p = mp.get_context('forkserver').Process(target=work, args=(1,))
    p.start(); p.join()
    sys.exit(p.exitcode)
"""), 0, 1)

    def test_subprocess_children(self):
        child = self.write("child.py", "c = make_cache('ch')\ncall(c)\ncall(c)\n")
        self.check(self.write("p.py", """
import subprocess
c = make_cache()
call(c)
for i in range(2):
    subprocess.run([sys.executable, %r], check=True)
call(c)
""" % child), 0, 6, 3)

    def test_subprocess_child_that_cannot_record(self):
        # A child whose interpreter fails the preflight (numpy not importable there) runs
        # unrecorded; the trace says so (a gap of process 1), so the report is not a plain PASS.
        shim = os.path.join(self.dir, "shim", "numpy")
        os.makedirs(shim)
        with open(os.path.join(shim, "__init__.py"), "w") as f:
            f.write("raise ImportError('No module named numpy')\n")
        child = self.write("child.py", "print('child ran')\n", prelude=False)
        self.check(self.write("p.py", """
import subprocess
c = make_cache()
call(c)
env = dict(os.environ, PYTHONPATH=%r)
subprocess.run([sys.executable, %r], check=True, env=env)
call(c)
""" % (os.path.dirname(shim), child)), 0, 2, 1)
        gaps = self.report["coverage"]["recording_gaps"]
        self.assertEqual(len(gaps), 1, gaps)
        self.assertIn("process 1: the recorder stopped before its first call (this process was "
                      "not recorded: numpy is not importable", gaps[0])
        self.assertIn("recording incomplete", self.report["coverage"]["note"])

    def test_subprocess_child_sets_its_own_pythonpath(self):
        child = self.write("child.py", "call(make_cache('ch'))\n")
        self.check(self.write("p.py", """
import subprocess
env = dict(os.environ, PYTHONPATH=os.getcwd())
subprocess.run([sys.executable, %r], check=True, env=env)
""" % child), 0, 1)

    def test_subprocess_child_with_a_bare_environment(self):
        child = self.write("child.py", "call(make_cache('ch'))\n")
        self.check(self.write("p.py", """
import subprocess
subprocess.run([sys.executable, %r], check=True, env={'PATH': '/usr/bin:/bin'})
""" % child), 0, 1)

    def test_program_drops_pythonpath_then_starts_a_child(self):
        child = self.write("child.py", "call(make_cache('ch'))\n")
        self.check(self.write("p.py", """
import subprocess
del os.environ['PYTHONPATH']
call(make_cache())
subprocess.run([sys.executable, %r], check=True)
"""  % child), 0, 2, 2)

    def test_posix_spawn_child(self):
        child = self.write("child.py", "call(make_cache('ch'))\n")
        self.check(self.write("p.py", """
pid = os.posix_spawn(sys.executable, [sys.executable, %r], {'PATH': '/usr/bin'})
os.waitpid(pid, 0)
""" % child), 0, 1)

    def test_execv(self):
        child = self.write("child.py", "call(make_cache('ch'))\nsys.exit(6)\n")
        self.check(self.write("p.py", """
call(make_cache())
sys.stdout.flush()
os.execv(sys.executable, [sys.executable, %r])
""" % child), 6, 2, 2)

    def test_execve_without_pythonpath(self):
        child = self.write("child.py", "call(make_cache('ch'))\n")
        self.check(self.write("p.py", """
call(make_cache())
os.execve(sys.executable, [sys.executable, %r], {'PATH': '/usr/bin'})
""" % child), 0, 2, 2)

    def test_fork_then_exec_of_a_non_python(self):
        self.check(self.write("p.py", """
call(make_cache())
pid = os.fork()
if pid == 0:
    os.execv('/bin/true', ['true'])
os.waitpid(pid, 0)
call(make_cache('b'))
"""), 0, 2, 1)

    # --- the spool's descriptor ---------------------------------------------------------------

    def test_closerange(self):
        self.check(self.write("p.py", """
c = make_cache()
call(c)
os.closerange(3, 65536)
f = open('notes.txt', 'a')
call(c); call(c)
f.write('the program wrote this\\n'); f.close()
"""), 0, 3, user_text=USER_TEXT + "the program wrote this\n")

    def test_user_file_on_every_high_descriptor(self):
        self.check(self.write("p.py", """
import resource
c = make_cache()
call(c)
fd = os.open('notes.txt', os.O_WRONLY | os.O_APPEND)
soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
for n in range(3, min(soft, 4096)):
    if n != fd:
        try:
            os.dup2(fd, n)
        except OSError:
            pass
call(c); call(c)
os.write(fd, b'mine\\n')
"""), 0, 3, user_text=USER_TEXT + "mine\n")

    # --- odd values ---------------------------------------------------------------------------

    def test_numpy_integer_indices(self):
        got = self.check(self.write("p.py", """
c = make_cache()
for v in (1.0, 2.0):
    call(c, key='k', v=v, static_input_indices=[np.int64(0)],
         intermediate_indices=np.array([1], dtype=np.int32))
"""), 0, 2)
        self.assertEqual(got[0]["static"], [0])
        self.assertEqual(got[0]["intermediate"], [1])

    def test_int_bo_key(self):
        self.check(self.write("p.py", "c = make_cache()\ncall(c, key=7)\ncall(c, key=7)\n"), 0, 2)

    def test_label_of_two_to_the_64(self):
        self.check(self.write("p.py", """
import bo_doctor
c = make_cache()
with bo_doctor.label(phase='decode', layer=2**64, token=-2**70):
    call(c)
"""), 0, 1)

    def test_non_utf8_caller_path(self):
        name = os.path.join(self.dir, "caf\udcff.py")
        with open(name, "w", errors="surrogateescape") as f:
            f.write(PRELUDE + "call(make_cache())\n")
        got = self.check(name, 0, 1)
        self.assertIn("\\xff", got[0]["path"])

    def test_non_utf8_engine_error(self):
        got = self.check(self.write("p.py", """
c = make_cache()
c.register('bad', lambda a: 1 / 0, 1)
try:
    c.load_and_run('bad', {}, np.zeros(4, np.float32), bo_key='k\\udcff')
except ZeroDivisionError as e:
    pass
call(c)
"""), 0, 2)
        self.assertTrue(got[0]["failed"])
        self.assertEqual(got[0]["bo_key"], "k\\xff")

    def test_object_array_argument(self):
        self.check(self.write("p.py", """
c = make_cache()
try:
    c.load_and_run('scale', {}, np.array([object(), 1], dtype=object), np.zeros(2, np.float32))
except Exception as e:
    print(type(e).__name__)
    sys.exit(7 if 'recorder' in str(e) or 'spool' in str(e) else 8)
"""), 8, 1)
        self.assertTrue(self.calls()[0]["failed"])
        self.assertEqual(self.out.strip(), self._plain_error(
            "c.load_and_run('scale', {}, np.array([object(), 1], dtype=object), "
            "np.zeros(2, np.float32))"))

    def test_none_argument(self):
        self.check(self.write("p.py", """
c = make_cache()
call(c)
try:
    c.load_and_run('scale', {}, None, np.zeros(2, np.float32))
except Exception as e:
    print(type(e).__name__)
    sys.exit(8)
"""), 8, 2)
        self.assertTrue(self.calls()[1]["failed"])
        self.assertEqual(self.out.strip(), self._plain_error(
            "c.load_and_run('scale', {}, None, np.zeros(2, np.float32))"))

    def _plain_error(self, stmt):
        """The exception type the statement raises without the recorder."""
        p = self.write("plain.py", "c = make_cache()\ntry:\n    %s\nexcept Exception as e:\n"
                                   "    print(type(e).__name__)\n" % stmt)
        return subprocess.run([PY, p], cwd=self.dir, stdout=subprocess.PIPE,
                              timeout=GUARD).stdout.decode().strip()

    # --- programs that never load the recorder ------------------------------------------------

    def test_not_python(self):
        rc, err = self.record(["sh", "-c", "exit 7"])
        self.assertEqual(rc, 7, err)
        self.assertIn("nothing recorded", err)
        self.assertEqual([n for n in os.listdir(self.dir) if n != "notes.txt"], [])

    def test_not_python_exit_0(self):
        rc, err = self.record(["true"])
        self.assertEqual(rc, 0, err)
        self.assertIn("nothing recorded", err)
        self.assertEqual([n for n in os.listdir(self.dir) if n != "notes.txt"], [])

    def test_python_dash_E(self):
        self.check(self.write("p.py", "call(make_cache())\nsys.exit(4)\n"), 4, None,
                   interpreter=(PY, "-E"))

    def test_python_dash_I(self):
        self.check(self.write("p.py", "call(make_cache())\n"), 0, None, interpreter=(PY, "-I"))

    # --- signals to record --------------------------------------------------------------------

    def _relay(self, sig, handled_exit):
        prog = self.write("p.py", """
import signal, time
def on(s, f):
    call(c)
    sys.exit(%d)
signal.signal(%d, on)
c = make_cache()
call(c)
open('ready', 'w').close()
time.sleep(30)
""" % (handled_exit, sig))

        def send(p):
            t0 = time.time()
            while not os.path.exists(os.path.join(self.dir, "ready")):
                if time.time() - t0 > GUARD:
                    return
                time.sleep(0.02)
            os.kill(p.pid, sig)

        rc, err = self.record([PY, prog], before_wait=send)
        self.assertEqual(rc, handled_exit, err)
        os.unlink(os.path.join(self.dir, "ready"))
        self.assertEqual(len(self.calls()), 2)

    def test_sigterm_to_record_is_relayed(self):
        self._relay(signal.SIGTERM, 11)

    def test_sigint_to_record_is_relayed(self):
        self._relay(signal.SIGINT, 12)


if __name__ == "__main__":
    unittest.main()
