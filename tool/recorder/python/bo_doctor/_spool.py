"""The spool: the file the recorder appends its records to, one JSON line each.

`bo-doctor record` creates the file (BOD_RECORD_SPOOL) and turns it into a trace when the
program ends, however it ends (tool/trace/spool.cpp); a last line cut off by a kill is dropped
there. So every line is written whole, with one write, and flushed at once.

Thread safety: one lock orders the writes, so lines of two threads never interleave. The lines
of one call (a kernel table entry it introduces, its view reads, its call line) are handed over
together with the call's number and written as one block, in call-number order: the block of
call n waits until the blocks of calls 1 … n-1 are written. The trace thus lists calls 1, 2, 3 …
in order even when two threads finish their calls in the other order. A call whose block never
arrives (the recorder stopped, see _record.py) holds back the later calls' blocks: the trace
then ends before it, still consistent.

This module writes the spool file only.
"""
import threading

from ._records import line


class Spool:
    def __init__(self, path):
        self._f = open(path, "a", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()
        self._next = 1   # the call whose block is written next
        self._held = {}  # call number -> its block, waiting for the calls before it

    def write(self, record):
        """Writes one record at once (the header, the end)."""
        text = line(record) + "\n"
        with self._lock:
            self._f.write(text)
            self._f.flush()

    def write_call(self, n, records):
        """Writes the records of call n as one block, after the blocks of calls 1 … n-1."""
        text = "".join(line(r) + "\n" for r in records)
        with self._lock:
            self._held[n] = text
            while self._next in self._held:
                self._f.write(self._held.pop(self._next))
                self._next += 1
            self._f.flush()

    def held(self):
        """How many calls' blocks are waiting for an earlier call's."""
        with self._lock:
            return len(self._held)
