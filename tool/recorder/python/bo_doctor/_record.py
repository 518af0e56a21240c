"""The recorder `bo-doctor record` injects into a Python engine (docs/recording.md).

sitecustomize.py calls `install_from_environment()` when BOD_RECORD_SPOOL is set. From then on
every call of the engine's `KernelCache.load_and_run` (_attach.py) is recorded into the spool
(_spool.py): the kernel when it first appears, then the call in the trace format's call-line
layout (_capture.py, _records.py), and with BOD_RECORD_SHADOW=1 the call's shadow run
(_shadow.py). `bo-doctor record` turns the spool into a trace when the program ends.

The recorder never changes what the program, the host or the device sees: the engine's method
runs with the arguments it was given and its result or exception goes back unchanged; the
recorder reads arrays and BO mappings, and syncs from the device only BOs no caller holds a
view of. If the recorder itself fails, it says so on stderr and stops recording; the program
runs on, and the trace ends before the call it failed on.

Threads: the state shared between calls (the call counter, the kernel table, cache names, each
key's and BO's first call, the view table, the shadow copies) is guarded by one lock, held while
a call is numbered and described and while its outcome is recorded, never while the engine runs.
Each call's own state is a CallCapture.

Processes: each process records into its own spool file in the spool folder (BOD_RECORD_SPOOL,
_spool.py). A child interpreter (subprocess, multiprocessing's spawn, exec) starts its own
recorder through sitecustomize.py (_children.py keeps the variables in its environment). A
forked child keeps the recorder it inherited (its tables describe the engine state the child
inherited too) and, in the child, `_after_fork_in_child` gives it a spool file of its own whose
header names the parent's spool and the last call number the parent had taken: the child's
calls are numbered on from there. The fork hooks hold the recorder's and the spool's locks
across the fork, so the child never inherits a lock another thread held. Write tracking
(_written.py) does not survive a fork (userfaultfd registrations stay with the parent): the
child hashes host arrays in full.
"""
import atexit
import os
import sys
import threading
import time
import weakref

import numpy as np

from ._attach import Attacher, parse_target
from ._bos import BoTable
from ._capture import CallCapture, bind, dtype_name
from ._frames import refresh_snapshots
from ._hashing import NO_HASH, STATS
from ._labels import call_labels, caller_path, holder_name
from ._records import (OMIT, CallRecord, EndRecord, ForkOf, HeaderRecord, KernelRecord,
                       KernelSlot, StoppedRecord)
from ._shadow import Shadow
from ._spool import Spool
from ._views import ViewTable
from ._written import HostHashes, exact_requested

PRODUCER = "bo-doctor record (Python recorder)"


class Recorder:
    def __init__(self, spool, target=None, shadow=False, explicit_labels=False, argv=None):
        self.spool = spool
        self.explicit_labels = explicit_labels
        self.lock = threading.RLock()
        self.n = 0               # calls numbered so far
        self.threads = {}        # threading.get_ident() -> thread number in the trace
        self.kernels = {}        # (name, nargs) -> kernel table entry name
        self.kernel_names = set()
        self.caches = {}         # id(cache) -> (weak reference to it or None, namespace name)
        self.ns_names = set()    # every namespace name given out
        self.key_first = {}      # (ns, key) -> first call number
        # (ns, key text, slot, bytes, first call) -> the Placement of a key's own BO (read only
        # once made: the slots of many calls share it)
        self.placements = {}
        self.bos = BoTable(reuse=not exact_requested())
        # Reading only what a check needs (_capture.py): not with BOD_RECORD_EXACT=1. Before
        # the dispatch, not with --shadow either (whether a call is shadowed is decided from
        # every slot's bytes before it); after it, with --shadow on the calls not shadowed.
        self.lazy = not exact_requested() and not shadow
        self.lazy_after = not exact_requested()
        # missed-static with --shadow (Recorder.missed_static_open): (ns, key, slot) -> [the
        # host hash at the key's first call, whether every call so far kept the rule]
        self.missed_static = {}
        self.key_calls = {}      # (ns, key) -> calls of the key so far
        # (ns, key) -> [per slot: host hash of the data last passed there, or None]
        self.passed = {}
        self.host_hashes = HostHashes()
        self.running = 0         # calls described and not yet finished (other threads' engines)
        self.views = ViewTable()
        self.shadow = Shadow(self.bos, self.host_hashes, every=shadow == "all") if shadow else None
        self.seconds = 0.0       # time spent recording (not in the engine)
        self.stopped = False
        self.attacher = Attacher(self.record, target)
        self.argv = list(sys.argv if argv is None else argv)
        spool.write(self.header())

    def header(self, fork_of=None):
        h = HeaderRecord(PRODUCER, self.argv, self.shadow is not None)
        h.pid, h.ppid, h.start_ns = os.getpid(), os.getppid(), time.monotonic_ns()
        if fork_of is not None:
            h.fork_of = fork_of
        return h

    # --- fork ----------------------------------------------------------------------------------

    def before_fork(self):
        self.lock.acquire()
        self.spool._lock.acquire()

    def after_fork_in_parent(self):
        self.spool._lock.release()
        self.lock.release()

    def after_fork_in_child(self):
        """The forked child: fresh locks, no other thread's call running, its own spool file
        going on from the parent's last call number."""
        parent = self.spool
        self.lock = threading.RLock()
        parent._lock = threading.Lock()
        self.running = 0
        self.seconds = 0.0
        self.host_hashes.forget_after_fork()
        folder = os.path.dirname(parent.path)
        try:
            parent.close()
            self.spool = Spool.in_folder(folder, first=self.n + 1)
            self.spool.write(self.header(ForkOf(os.path.basename(parent.path), self.n)))
        except Exception as e:
            self.stopped = True
            sys.stderr.write("bo-doctor record: the forked process %d is not recorded (%s: %s)\n"
                             % (os.getpid(), type(e).__name__, e))

    # --- one call ----------------------------------------------------------------------------

    def record(self, orig, sig, var_pos, cache, args, kwargs):
        """Runs orig(cache, *args, **kwargs) and records the call."""
        if self.stopped:
            return orig(cache, *args, **kwargs)
        tb = time.perf_counter()
        try:
            a = bind(sig, var_pos, cache, args, kwargs)
            hash(a.key)
        except Exception:  # arguments the method does not take (or an unhashable bo_key):
            return orig(cache, *args, **kwargs)  # its own error, unrecorded
        c = CallCapture(orig, sig, var_pos, cache, a)
        tb = time.perf_counter() - tb  # binding, not under the lock
        with self.lock:
            t0 = time.perf_counter() - tb
            try:
                # the program's frames lie below the one that called this (the method's
                # wrapper, _attach.py): the walk starts there, not at the recorder's frames above
                c.before(self, sys._getframe(1))
                if self.shadow:
                    self.shadow.before(c)
                ok = True
            except Exception as e:
                ok = self.stop(c, e)
            t = time.perf_counter() - t0
            self.seconds += t
            STATS["seconds"] += t
        if not ok:
            return orig(cache, *args, **kwargs)
        with self.lock:
            self.running += 1
        try:
            results = orig(cache, *args, **kwargs)
        except BaseException as e:
            self.finish(c, None, "%s: %s" % (type(e).__name__, e))
            raise
        self.finish(c, results, "")
        return results

    def finish(self, c, results, error):
        with self.lock:
            self.running -= 1
            STATS["calls"] += 1
            t0 = time.perf_counter()
            try:
                call = c.after(self, results, error)
                if self.shadow:
                    b0 = STATS["bytes_hashed"]
                    self.shadow.run(c, call, results, error)
                    STATS["hashed_shadow"] += STATS["bytes_hashed"] - b0
                    self.note_missed_static(call)
            except Exception as e:
                self.stop(c, e)
                return
        self.spool.write_call(c.n, c.records + [CallRecord(call)] + c.events)
        with self.lock:  # the recorder's time: describing the call and writing its lines
            t = time.perf_counter() - t0
            self.seconds += t
            STATS["seconds"] += t

    def stop(self, c, e):
        """Stops recording after a failure of the recorder's own (never the engine's)."""
        self.stopped = True
        n = getattr(c, "n", None)
        if not isinstance(n, int):  # failed before the call got its number: the next one
            n = self.n + 1
        why = "%s: %s" % (type(e).__name__, e)
        sys.stderr.write("bo-doctor record: recording stopped at call %d (%s); the trace ends "
                         "before it\n" % (n, why))
        try:  # the trace says so too (a `gap` line), so no report passes it as whole
            self.spool.write(StoppedRecord(n, why))
        except Exception:
            pass
        return False

    # --- shared tables (called under the lock) -------------------------------------------------

    def missed_static_open(self, ns, key, i):
        """Whether missed-static may still report slot i of the key: it reads the reuse BO's
        bytes after the dispatch of an input slot on a call that was not shadowed, as long as
        every call of the key so far kept its rule (checks/missed_static.cpp). Unknown: True."""
        got = self.missed_static.get((ns, key, i))
        return got is None or got[1]

    def note_missed_static(self, call):
        """Follows missed-static's rule on the finished call line, slot by slot, as the check
        does over the key's calls that did not fail."""
        if call.failed:
            return
        shadowed = call.shadow_like is OMIT
        table, ns, key = self.missed_static, call.ns, call.bo_key
        for i, s in enumerate(call.slots):
            k = (ns, key, i)
            st = table.get(k)
            if st is None:
                st = table[k] = [s.host.hash, True]
            elif not st[1]:
                continue
            pair = s.no_reuse if shadowed else s.reuse
            unchanged = pair is not OMIT and pair[1] == pair[0] and \
                (shadowed or pair[1] != NO_HASH)
            st[1] = s.role == "input" and not s.output and unchanged and \
                s.host.source in ("tensor", "var") and s.host.hash == st[0]

    def next_number(self):
        self.n += 1
        return self.n

    def thread_index(self):
        """The calling thread's number: 0 for the first thread that made a call, then 1, 2 ...
        in the order of their first calls (an OS thread id reused later counts as the same)."""
        return self.threads.setdefault(threading.get_ident(), len(self.threads))

    def labels(self, key, ns, loops=None):
        return call_labels(key, ns, self.explicit_labels, loops)

    def caller(self, frame=None):
        return caller_path(frame)

    def cache_name(self, cache):
        """The namespace of a cache instance: the variable that holds it, else cache<k>."""
        got = self.caches.get(id(cache))
        # A cache that died and left its id() to a new one is a new namespace.
        if got is not None and (got[0] is None or got[0]() is cache):
            return got[1]
        name = holder_name(cache) or "cache%d" % len(self.ns_names)
        if name in self.ns_names:
            name = "%s#%d" % (name, len(self.ns_names))
        try:
            ref = weakref.ref(cache)
        except TypeError:
            ref = None
        self.caches[id(cache)] = (ref, name)
        self.ns_names.add(name)
        return name

    def kernel_entry(self, name, inputs, cache, records):
        """The kernel table name of (kernel, argument count); a new one adds its record."""
        k = (name, len(inputs))
        if k in self.kernels:
            return self.kernels[k]
        entry = name if name not in self.kernel_names else "%s/%dargs" % (name, len(inputs))
        self.kernels[k] = entry
        self.kernel_names.add(entry)
        art = (getattr(cache, "artifacts", {}) or {}).get(name)
        binary = str(getattr(art, "output_binary", "") or "")
        slots = [KernelSlot("arg%d" % i, dtype_name(np.asarray(x))[0]) for i, x in enumerate(inputs)]
        records.append(KernelRecord(entry, slots, binary))
        return entry

    def end(self):
        """At exit: the overwritten views the program still holds, then the end line."""
        events = []
        with self.lock:
            if not self.stopped:
                t0 = time.perf_counter()
                try:
                    refresh_snapshots()
                    events = self.views.held(set(), "the program (which still held it at exit)",
                                             at_exit=True)
                except Exception as e:
                    sys.stderr.write("bo-doctor record: the views held at exit were not checked "
                                     "(%s: %s)\n" % (type(e).__name__, e))
                self.seconds += time.perf_counter() - t0
        for e in events:
            self.spool.write(e)
        self.spool.write(EndRecord(self.n, round(self.seconds, 6)))


_recorder = None


def _before_fork():
    if _recorder is not None:
        _recorder.before_fork()


def _after_fork_in_parent():
    if _recorder is not None:
        _recorder.after_fork_in_parent()


def _after_fork_in_child():
    if _recorder is not None:
        _recorder.after_fork_in_child()


def install_from_environment(folder=None):
    """Starts recording as BOD_RECORD_SPOOL (the spool folder; a file path is written as is),
    _TARGET, _SHADOW and _LABELS say (once), and keeps child processes recorded."""
    global _recorder
    if _recorder is not None:
        return _recorder
    target = parse_target(os.environ.get("BOD_RECORD_TARGET", ""))
    where = os.environ["BOD_RECORD_SPOOL"]
    started = bool(os.environ.get("BOD_RECORD_STARTED"))  # a child of a recorded program
    spool = None
    try:
        if os.path.isdir(where):
            spool = Spool.in_folder(where)
        elif not started:
            spool = Spool(where)
    except FileNotFoundError:  # the folder went meanwhile
        if not started:
            raise
    if spool is None:
        # A child of a recorded program that starts once the recording has ended (a helper
        # process that came up after the program exited and `bo-doctor record` assembled the
        # trace, e.g. multiprocessing's resource tracker): it runs unrecorded, and never creates
        # the spool folder's name as a file of its own.
        sys.stderr.write("bo-doctor record: process %d is not recorded: the recording it was "
                         "started in has ended (%s is gone)\n" % (os.getpid(), where))
        return None
    mode = os.environ.get("BOD_RECORD_SHADOW", "")
    _recorder = Recorder(spool, target, "all" if mode == "all" else mode == "1",
                         os.environ.get("BOD_RECORD_LABELS") == "explicit")
    _recorder.attacher.install()
    atexit.register(_recorder.end)
    os.environ["BOD_RECORD_STARTED"] = "1"  # children that cannot record run unrecorded
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
    if folder:
        from . import _children
        _children.install(folder, {k: v for k, v in os.environ.items()
                                   if k.startswith("BOD_RECORD_")})
    return _recorder
