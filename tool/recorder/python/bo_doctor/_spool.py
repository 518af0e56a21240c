"""The spool: the file the recorder appends its records to, one JSON line each.

`bo-doctor record` creates a spool folder (BOD_RECORD_SPOOL) and turns the files in it into one
trace when the program ends, however it ends (tool/trace/spool.cpp); a last line cut off by a
kill is dropped there. Every process (the program, each child interpreter it starts, each fork)
writes its own file, `<pid>-<k>.jsonl` (k = 0, 1 ... for interpreters that `exec` into the same
pid), created exclusively so no two processes ever share one. Every line is written whole, with
one write(2), at once.

The descriptor is the recorder's own and the program cannot reach it by accident
(docs/recording.md, "Processes, threads and files"): it is moved high above the descriptors a
program uses (FIRST_FD and up, close-on-exec), and before each write fstat(2) checks that the
number still names the spool file (device and inode). A program that closed it (`os.closerange`)
or reused its number (`dup2`) is never written into: the recorder opens the spool again by its
path and writes there.

Thread safety: one lock orders the writes, so lines of two threads never interleave. The lines
of one call (a kernel table entry it introduces, its view reads, its call line) are handed over
together with the call's number and written as one block, in call-number order: the block of
call n waits until the blocks of calls 1 … n-1 are written. The trace thus lists calls 1, 2, 3 …
in order even when two threads finish their calls in the other order. A call whose block never
arrives (the recorder stopped, see _record.py) holds back the later calls' blocks: the trace
then ends before it, still consistent.

This module writes the spool file only.
"""
import errno
import fcntl
import os
import resource
import threading

from ._records import line


def _native_write():
    """The native `write` (_fast.py), or None."""
    from . import _fast
    m = _fast.module()
    return m.write if m is not None else None


_WRITE = _native_write()

FIRST_FD = 1000  # the spool's descriptor is the lowest free one from here (lower if the limit is)


def _high_fd(fd):
    """fd moved to a free descriptor number >= FIRST_FD (close-on-exec); fd is closed."""
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        soft = 1024
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    start = min(FIRST_FD, max(3, int(soft) - 64))
    try:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, start)
    except OSError:
        return fd
    os.close(fd)
    return high


class Spool:
    def __init__(self, path, first=1, exclusive=False):
        """Opens the spool file at path (created; with exclusive, it must not exist yet).
        first: the number of the first call this spool writes."""
        self.path = os.path.abspath(path)
        self._lock = threading.Lock()
        self._next = first  # the call whose block is written next
        self._held = {}     # call number -> its block, waiting for the calls before it
        self._fd, self._id = -1, None
        self.failed = False  # a write failed: nothing more is written
        self._open(os.O_EXCL if exclusive else 0)

    @classmethod
    def in_folder(cls, folder, first=1):
        """A new spool file of this process in the spool folder: <pid>-<k>.jsonl."""
        pid = os.getpid()
        for k in range(1000):
            try:
                return cls(os.path.join(folder, "%d-%d.jsonl" % (pid, k)), first, exclusive=True)
            except FileExistsError:
                continue
        raise OSError(errno.EEXIST, "no free spool file name for process %d in %s" % (pid, folder))

    def _open(self, extra=0):
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | extra,
                     0o600)
        fd = _high_fd(fd)
        st = os.fstat(fd)
        self._fd, self._id = fd, (st.st_dev, st.st_ino)

    def _ours(self):
        """Whether the descriptor still names the spool file (not closed, not reused)."""
        try:
            st = os.fstat(self._fd)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._id

    def _write(self, text):
        """Writes text whole; if the spool cannot be written (no descriptor left, no space), says
        so once on stderr and writes nothing more: the program never gets the recorder's error."""
        if self.failed:
            return
        try:
            if _WRITE is not None:  # the same check and write in one native call (the text's
                # own ASCII bytes, not an encoded copy)
                if not _WRITE(self._fd, self._id[0], self._id[1], text):
                    self._open()  # closed or reused by the program: never written there
                    if not _WRITE(self._fd, self._id[0], self._id[1], text):
                        raise OSError(errno.EBADF, "the spool's descriptor was taken again")
                return
            data = text.encode("ascii")
            if not self._ours():  # closed or reused by the program: never write there
                self._open()
            while data:
                n = os.write(self._fd, data)
                data = data[n:]
        except OSError as e:
            self.failed = True
            try:
                os.write(2, ("bo-doctor record: cannot write the spool %s (%s); the trace ends "
                             "here\n" % (self.path, e.strerror or e)).encode("utf-8", "replace"))
            except OSError:
                pass

    def write(self, record):
        """Writes one record at once (the header, the end)."""
        text = line(record) + "\n"
        with self._lock:
            self._write(text)

    def write_call(self, n, records):
        """Writes the records of call n as one block, after the blocks of calls 1 … n-1."""
        text = "".join(line(r) + "\n" for r in records)
        with self._lock:
            self._held[n] = text
            out = []
            while self._next in self._held:
                out.append(self._held.pop(self._next))
                self._next += 1
            if out:
                self._write("".join(out))

    def held(self):
        """How many calls' blocks are waiting for an earlier call's."""
        with self._lock:
            return len(self._held)

    def close(self):
        """Closes the descriptor if it is still the spool's (a forked child drops its parent's)."""
        if self._ours():
            os.close(self._fd)
        self._fd = -1
