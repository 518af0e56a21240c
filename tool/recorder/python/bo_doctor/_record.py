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
"""
import atexit
import os
import sys
import threading
import time

import numpy as np

from ._attach import Attacher, parse_target
from ._bos import BoTable
from ._capture import CallCapture, bind, dtype_name
from ._frames import refresh_snapshots
from ._hashing import STATS
from ._labels import call_labels, caller_path, holder_name
from ._records import CallRecord, EndRecord, HeaderRecord, KernelRecord, KernelSlot
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
        self.caches = {}         # id(cache) -> namespace name
        self.key_first = {}      # (ns, key) -> first call number
        self.bos = BoTable(reuse=not exact_requested())
        self.host_hashes = HostHashes()
        self.running = 0         # calls described and not yet finished (other threads' engines)
        self.views = ViewTable()
        self.shadow = Shadow() if shadow else None
        self.seconds = 0.0       # time spent recording (not in the engine)
        self.stopped = False
        self.attacher = Attacher(self.record, target)
        spool.write(HeaderRecord(PRODUCER, list(sys.argv if argv is None else argv),
                                 bool(shadow)))

    # --- one call ----------------------------------------------------------------------------

    def record(self, orig, sig, var_pos, cache, args, kwargs):
        """Runs orig(cache, *args, **kwargs) and records the call."""
        if self.stopped:
            return orig(cache, *args, **kwargs)
        try:
            a = bind(sig, var_pos, cache, args, kwargs)
        except TypeError:  # arguments the method does not take: its own error, unrecorded
            return orig(cache, *args, **kwargs)
        c = CallCapture(orig, sig, var_pos, cache, a)
        with self.lock:
            t0 = time.perf_counter()
            try:
                c.before(self)
                if self.shadow:
                    self.shadow.before(c)
                ok = True
            except Exception as e:
                ok = self.stop(c, e)
            self.seconds += time.perf_counter() - t0
        if not ok:
            return orig(*a.bound.args, **a.bound.kwargs)
        with self.lock:
            self.running += 1
        try:
            results = orig(*a.bound.args, **a.bound.kwargs)
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
                    self.shadow.run(c, call, results, error)
            except Exception as e:
                self.stop(c, e)
                return
            self.seconds += time.perf_counter() - t0
        self.spool.write_call(c.n, c.records + [CallRecord(call)] + c.events)

    def stop(self, c, e):
        """Stops recording after a failure of the recorder's own (never the engine's)."""
        self.stopped = True
        sys.stderr.write("bo-doctor record: recording stopped at call %s (%s: %s); the trace "
                         "ends before it\n" % (getattr(c, "n", "?"), type(e).__name__, e))
        return False

    # --- shared tables (called under the lock) -------------------------------------------------

    def next_number(self):
        self.n += 1
        return self.n

    def thread_index(self):
        """The calling thread's number: 0 for the first thread that made a call, then 1, 2 ...
        in the order of their first calls (an OS thread id reused later counts as the same)."""
        return self.threads.setdefault(threading.get_ident(), len(self.threads))

    def labels(self, key, ns, loops=None):
        return call_labels(key, ns, self.explicit_labels, loops)

    def caller(self):
        return caller_path()

    def cache_name(self, cache):
        """The namespace of a cache instance: the variable that holds it, else cache<k>."""
        ns = self.caches.get(id(cache))
        if ns is not None:
            return ns
        name = holder_name(cache) or "cache%d" % len(self.caches)
        if name in self.caches.values():
            name = "%s#%d" % (name, len(self.caches))
        self.caches[id(cache)] = name
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


def install_from_environment():
    """Starts recording as BOD_RECORD_SPOOL, _TARGET, _SHADOW and _LABELS say (once)."""
    global _recorder
    if _recorder is not None:
        return _recorder
    target = parse_target(os.environ.get("BOD_RECORD_TARGET", ""))
    spool = Spool(os.environ["BOD_RECORD_SPOOL"])
    _recorder = Recorder(spool, target, os.environ.get("BOD_RECORD_SHADOW") == "1",
                         os.environ.get("BOD_RECORD_LABELS") == "explicit")
    _recorder.attacher.install()
    atexit.register(_recorder.end)
    return _recorder
