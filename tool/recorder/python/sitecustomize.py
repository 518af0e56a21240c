"""bo-doctor's recorder entry point: `bo-doctor record` puts this folder first on PYTHONPATH,
so Python runs this file at start-up (site.py imports `sitecustomize`). When BOD_RECORD_SPOOL
is set it first checks that the recorder can run in this interpreter (the preflight), then
installs the recorder, then runs the sitecustomize this one shadows (Debian ships one), so the
user's environment behaves as without bo-doctor.

The preflight runs before the program does any work: Python 3.10 or newer, numpy importable,
bo-doctor's hash library (BOD_RECORD_HASHLIB) loadable. If one fails it prints one message
naming this interpreter and the fix and exits with status 2 at once (it has written no spool
file: nothing was recorded). This file uses no syntax newer than Python 3.0, so an old interpreter still
reaches the message.
"""
import os
import sys


def _chain_shadowed_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    for d in sys.path:
        if not d or os.path.abspath(d) == here:
            continue
        path = os.path.join(d, "sitecustomize.py")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": path})
            return


def _preflight():
    """None when the recorder can run here, else (what is wrong, the fix)."""
    exe = sys.executable or "this python"
    if sys.version_info < (3, 10):
        return ("Python %d.%d is not supported (the recorder needs 3.10 or newer)" %
                sys.version_info[:2],
                "run the program with a Python 3.10-3.13 interpreter that has numpy")
    try:
        import numpy  # noqa: F401
    except Exception as e:
        return ("numpy is not importable (%s: %s)" % (type(e).__name__, e),
                "in a venv: %s -m pip install numpy; for Debian's python3: "
                "apt-get install python3-numpy" % exe)
    try:
        from bo_doctor import _hashing
        _hashing._backend()
    except Exception as e:
        return ("bo-doctor's hash library cannot be used (%s)" % e,
                "rebuild bo-doctor (cmake --build build) so that libbod_hash.so lies next to "
                "the bo-doctor executable, or set BOD_RECORD_HASHLIB to its path")
    return None


def _stop(problem, fix):
    sys.stderr.write("bo-doctor record: cannot record with %s (Python %d.%d): %s. Fix: %s. The "
                     "program was not run.\n" % (sys.executable or "this python",
                                                 sys.version_info[0], sys.version_info[1],
                                                 problem, fix))
    sys.stderr.flush()
    os._exit(2)


def _note_unrecorded(problem):
    """A child of a recorded program that cannot record: a spool file of its own holding only a
    header and a `stopped` line, so the trace says this process was not recorded (a `gap`) and
    no report passes the recording as whole. Standard library only; any failure is silent (the
    message on stderr stands)."""
    import json
    import time
    folder = os.environ.get("BOD_RECORD_SPOOL", "")
    if not os.path.isdir(folder):
        return
    clock = getattr(time, "monotonic_ns", None)
    start = clock() if clock else int(time.time() * 1e9)
    lines = [{"kind": "header", "producer": "bo-doctor record", "argv": list(sys.argv),
              "shadow": os.environ.get("BOD_RECORD_SHADOW", "") in ("1", "all"),
              "pid": os.getpid(), "ppid": os.getppid(), "start_ns": start},
             {"kind": "stopped", "call": 1, "why": "this process was not recorded: " + problem}]
    text = "".join(json.dumps(l, ensure_ascii=True) + "\n" for l in lines).encode("ascii")
    for k in range(1000):
        path = os.path.join(folder, "%d-%d.jsonl" % (os.getpid(), k))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            if os.path.exists(path):
                continue
            return
        try:
            os.write(fd, text)
        finally:
            os.close(fd)
        return


if os.environ.get("BOD_RECORD_SPOOL"):
    _bad = _preflight()
    if _bad and os.environ.get("BOD_RECORD_STARTED"):
        # A child of a recorded program: it runs as it would, unrecorded, and the trace says so.
        sys.stderr.write("bo-doctor record: process %d (%s) is not recorded: %s\n" %
                         (os.getpid(), sys.executable or "python", _bad[0]))
        try:
            _note_unrecorded(_bad[0])
        except Exception:
            pass
    elif _bad:
        _stop(*_bad)
    if not _bad:
        try:
            from bo_doctor import _record
            _record.install_from_environment(os.path.dirname(os.path.abspath(__file__)))
        except Exception as e:  # the user's program must run even if the recorder cannot
            sys.stderr.write("bo-doctor record: recorder not installed: %s\n" % e)
            raise
_chain_shadowed_sitecustomize()
