"""The program's frames as the recorder reads them, and the `for` loops running in them.

`program_frames` walks the calling thread's stack outside the recorder (this folder).
`running_loops` finds the `for` loops those frames are inside of, from their bytecode: a loop
runs while its FOR_ITER's iterator is on the frame's value stack, which is exactly while the
frame's last instruction (f_lasti) lies in the loop's body, after its FOR_ITER and before the
FOR_ITER's exit target. A loop that finished (or was left by `break` or `return`) is past that
range: its variable may still be bound, but it is never taken for a running loop.

Reading locals: `frame.f_locals` on CPython 3.11 and 3.12 stores a snapshot of the frame's
locals on the frame, which keeps what they held alive after the program rebinds them, until the
snapshot is taken again or the function returns. The recorder reads locals only through
`frame_locals`, which notes the frame, and `refresh_snapshots` retakes the snapshot of every
noted frame still on the stack before anything asks which objects are still alive. The
snapshot changes nothing the program reads or writes. Standard library only.
"""
import dis
import os
import sys
from collections import namedtuple

_HERE = os.path.dirname(os.path.abspath(__file__))
_noted = set()   # id() of frames whose f_locals the recorder took
_MAX_NOTED = 100000

# One `for` loop of a code object: FOR_ITER's offset, its exit target, the names its first
# stores assign (None for an attribute or item target) and the names its iterable loads.
LoopCode = namedtuple("LoopCode", "start end targets iter_names")
# A loop running in a frame: the frame's id, its code, the loop, the number each target holds
# (an int >= 0, else a layer_idx / _layer_idx attribute of its value, else None) and what tells
# this iteration from the next (the first target's value, or its id). No value is kept.
Running = namedtuple("Running", "frame_id code loop numbers first")
NUMBER_ATTRS = ("layer_idx", "_layer_idx")

_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_ATTR", "LOAD_METHOD", "LOAD_DEREF",
          "LOAD_CLOSURE", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "LOAD_SUPER_ATTR")
_ENDS = ("STORE_", "POP_TOP", "RETURN", "JUMP", "POP_JUMP", "RESUME", "FOR_ITER", "END_FOR",
         "GET_ITER", "POP_EXCEPT", "PUSH_EXC_INFO", "RERAISE", "NOP")
_loops = {}  # code object -> tuple of LoopCode


def _names(argval):
    if isinstance(argval, str):
        return [argval]
    if isinstance(argval, tuple):  # superinstructions (3.13): a pair of names
        return [a for a in argval if isinstance(a, str)]
    return []


def _targets(ins, k):
    """The names the stores right after FOR_ITER ins[k] assign, in order."""
    names, pending, j = [], 1, k + 1
    while j < len(ins) and pending > 0:
        op, arg = ins[j].opname, ins[j].arg or 0
        if op == "UNPACK_SEQUENCE":
            pending += arg - 1
        elif op == "UNPACK_EX":
            pending += (arg & 0xFF) + (arg >> 8)
        elif op.startswith(("STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF")):
            got = _names(ins[j].argval)
            names += got
            pending -= max(1, len(got))
        elif op.startswith("STORE_"):  # for obj.attr in ..., for a[i] in ...
            names.append(None)
            pending -= 1
        elif not op.startswith("LOAD_") and op != "CACHE":
            break
        j += 1
    return tuple(names)


def _iter_names(ins, k):
    """The names loaded by the instructions that build the iterable of FOR_ITER ins[k]."""
    names, j = [], k - 2  # ins[k - 1] is its GET_ITER
    while j >= 0 and not ins[j].opname.startswith(_ENDS):
        if ins[j].opname in _LOADS:
            names += _names(ins[j].argval)
        j -= 1
    return tuple(reversed(names))


def loops_of(code):
    """The `for` loops of a code object (cached per code object)."""
    found = _loops.get(code)
    if found is None:
        ins = list(dis.get_instructions(code))
        found = tuple(LoopCode(i.offset, i.argval, _targets(ins, k), _iter_names(ins, k))
                      for k, i in enumerate(ins)
                      if i.opname == "FOR_ITER" and isinstance(i.argval, int))
        _loops[code] = found
    return found


def program_frames(limit, start=None):
    """The calling thread's frames outside the recorder, innermost first, at most `limit`."""
    f = start or sys._getframe(1)
    n = 0
    while f is not None and n < limit:
        if not _ours(f.f_code.co_filename):
            yield f
            n += 1
        f = f.f_back


_OURS = {}  # a code object's file name -> whether it is a file of the recorder
# The recorder's own modules were imported by an absolute name (their code objects' file names
# are this one's folder): a relative file name is then never one of theirs, whatever the
# working folder (a module the program imported from '' on sys.path, as `python3 -c` does).
_RELATIVE_NOT_OURS = os.path.isabs(__file__)


def _ours(filename):
    got = _OURS.get(filename)
    if got is None:
        # "<frozen runpy>", "<string>", "<stdin>": no file, never one of the recorder's
        pseudo = filename.startswith("<") and filename.endswith(">")
        relative = not pseudo and not os.path.isabs(filename)
        got = not pseudo and not (relative and _RELATIVE_NOT_OURS) and \
            os.path.dirname(os.path.abspath(filename)) == _HERE
        # a relative name depends on the working folder unless it is never ours
        if not relative or _RELATIVE_NOT_OURS:
            if len(_OURS) > 4096:
                _OURS.clear()
            _OURS[filename] = got
    return got


def frame_locals(f):
    """f.f_locals, noting the frame so that refresh_snapshots retakes its snapshot."""
    if len(_noted) > _MAX_NOTED:
        _noted.clear()
    _noted.add(id(f))
    return f.f_locals


def refresh_snapshots():
    """Retakes the locals snapshot of every noted frame on the calling thread's stack, so that
    objects the program dropped are no longer held by an old snapshot."""
    f = sys._getframe(1)
    while f is not None:
        if id(f) in _noted:
            f.f_locals  # noqa: B018 - retakes the snapshot
        f = f.f_back


# (id(code object), f_lasti) -> (the code object, ((LoopCode, its named targets), ...) innermost
# first). Keyed by id: a code object's own hash reads its bytecode and constants (nested
# functions' code too) on every lookup; the entry keeps its code object alive, so no other code
# object can have that id while the entry is there.
_INSIDE = {}


def _inside(code, lasti):
    """The loops of a code object whose body holds the instruction at lasti, innermost first,
    each with the names its targets assign (cached per code object and instruction)."""
    k = (id(code), lasti)
    got = _INSIDE.get(k)
    if got is not None and got[0] is code:
        return got[1]
    inside = sorted([lc for lc in loops_of(code) if lc.start < lasti < lc.end],
                    key=lambda lc: -lc.start)
    loops = tuple((lc, tuple(t for t in lc.targets if t is not None)) for lc in inside)
    if len(_INSIDE) > 65536:
        _INSIDE.clear()
    _INSIDE[k] = (code, loops)
    return loops


def running_loops(limit):
    """The `for` loops running in the program's innermost `limit` frames, innermost first."""
    return loops_and_caller(limit)[0]  # this frame is the recorder's own: not counted


def loops_and_caller(limit, start=None):
    """(the `for` loops running in the program's innermost `limit` frames, innermost first; the
    innermost program frame or None) of the calling thread, in one walk of its stack that also
    retakes the snapshot of every noted frame on it, as refresh_snapshots does (once per frame:
    a loop frame's locals are read anew). start: the frame to walk from (a frame of the
    recorder's own that called the others, so that they are not made frame objects and walked
    at every call); the caller's by default."""
    out = []
    first = None
    n = 0
    f = start if start is not None else sys._getframe(1)
    ours_of, inside_of = _OURS.get, _INSIDE.get  # (the caches' lookups, inlined)
    while f is not None:
        code = f.f_code
        fresh = False
        if n < limit:
            ours = ours_of(code.co_filename)
            if ours is None:
                ours = _ours(code.co_filename)
        if n < limit and not ours:
            n += 1
            if first is None:
                first = f
            lasti = f.f_lasti
            got = inside_of((id(code), lasti))
            inside = got[1] if got is not None and got[0] is code else _inside(code, lasti)
            if inside:
                loc = frame_locals(f)
                fresh = True
                fid = id(f)
                for lc, named in inside:
                    v = loc.get(named[0]) if named else None
                    numbers = {}
                    for t in named:
                        numbers[t] = _number(loc.get(t))
                    out.append(Running(fid, code, lc, numbers,
                                       v if isinstance(v, (int, str, float)) else ("id", id(v))))
        if not fresh and id(f) in _noted:
            f.f_locals  # noqa: B018 - retakes the snapshot
        f = f.f_back
    return out, first


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _number(v):
    if type(v) is int:  # the usual loop variable, at once
        return v if v >= 0 else None
    if _int(v):
        return int(v)
    if v is not None and hasattr(v, "__dict__"):
        for attr in NUMBER_ATTRS:
            a = getattr(v, attr, None)
            if _int(a):
                return int(a)
    return None


def iteration_key(running):
    """What tells one iteration of the innermost running loop from the next: its frame, its
    loop and the identity of the value its first target holds; None outside any loop."""
    return _key(running[0]) if running else None


def iteration_keys(running):
    """The iteration keys of all running loops."""
    return {_key(r) for r in running}


def _key(r):
    return (r.frame_id, id(r.code), r.loop.start, r.first)
