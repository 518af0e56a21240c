"""The spool's records as typed structures, and the one serializer that writes them.

Every line the recorder appends to its spool is one of the `*Record` classes below; `line()`
turns it into one line of compact JSON. Fields are declared in the order the trace format
(docs/trace-format.md §4-§7) lists them, which is the order they are written in, so the trace
that `bo-doctor record` assembles from the spool diffs well against bo-doctor's own. One
exception, kept so the spool stays as it was: a call line's `x` comes before `outputs`, which
the shadow run adds. A field holding OMIT is left out: the shadow run's fields (`outputs`,
`no_reuse`) are present only when the header says `shadow`.

Spool line kinds (tool/trace/spool.cpp reads them): `header` (once, first), `kernel` (a kernel
table entry, when a kernel first appears), `call` (a call line of the trace, under "call"),
`view_read` (a trace event, under "event"), `end` (the program ended).

This module only describes and serializes; it reads nothing of the program.
"""
import json
import math
import operator
from dataclasses import dataclass, field, fields
from typing import List


class _Omit:
    """The value of a field the line leaves out."""

    def __repr__(self):
        return "OMIT"


OMIT = _Omit()


# --- the parts of a call line (docs/trace-format.md §5, §6) ----------------------------------

@dataclass
class HostX:
    """The slot's `host.x` extension: what numpy said of the array."""
    numpy_dtype: str
    c_contiguous: bool
    zero_strides: bool


@dataclass
class Host:
    """The host array bound to a slot (§6 `host`)."""
    shape: List[int]
    dtype: str
    bytes: int
    hash: str
    source: str          # "tensor", "var", "view" or "placeholder"
    name: str
    view_of_call: int
    x: object = OMIT     # HostX


@dataclass
class Placement:
    """Where a slot's BO lives (§6 `bo`)."""
    ns: str
    pool: str            # "key", "shared", "alias" or "unbound"
    name: str
    index: int
    bytes: int
    first_call: int


@dataclass
class Slot:
    """One argument of a call (§6), with the `run` capability's fields."""
    role: str            # "input", "static" or "intermediate"
    output: bool
    host: Host
    bo: Placement
    bo_bytes: int
    written: bool
    written_bytes: int
    written_hash: str
    reuse: List[str]     # [before, after] the dispatch
    no_reuse: object = OMIT  # [before, after] on the shadow copy's fresh BO


@dataclass
class Labels:
    phase: str
    token: int
    layer: int


@dataclass
class Output:
    """One output compared between the real call and its shadow run (§5 `outputs`)."""
    slot: int
    bit_exact: bool
    cosine: float
    max_abs: float
    max_rel: float
    nan: List[int]
    inf: List[int]
    elements: int


@dataclass
class CallX:
    """The call line's `x` extension."""
    new_key: bool
    cache_id: str
    shadow_fed: object = OMIT  # [[slot, call]]: a placeholder's shadow got that call's array
    bo_unread_before: object = OMIT  # [slot]: reuse[0] not read (no check needs it here)
    bo_unread_after: object = OMIT   # [slot]: reuse[1] not read (no check needs it here)
    bo_assumed_unchanged: object = OMIT  # [slot]: static BO not read again, reuse[1] = reuse[0]
    bo_assumed_before: object = OMIT  # [slot]: reuse[0] carried over from an unread call


@dataclass
class Call:
    """A call line of the trace (§5), capability `run` (and `no_reuse` with a shadow run)."""
    type: str = field(default="call", init=False)
    n: int
    ns: str
    kernel: str
    bo_key: str
    bo_key_template: str
    static: List[int]
    intermediate: List[int]
    output: List[int]
    shared_nonstatic: bool
    alias: dict          # slot index as a string -> alias pool name
    labels: Labels
    path: str
    key_first_call: int
    slots: List[Slot]
    failed: bool
    error: str
    h2d: List[int]       # [real call, shadow run]
    writes: List[int]    # [real call, shadow run]
    x: object = OMIT     # CallX
    outputs: object = OMIT  # List[Output] with a shadow run
    shadow_like: object = OMIT  # int: not shadowed; this earlier call's shadow run stands for it
    thread: object = OMIT   # int, when not the first thread that made a call


@dataclass
class ViewRead:
    """A `view_read` event (§7): a call read a view whose BO changed since it was returned."""
    type: str = field(default="view_read", init=False)
    var: str
    reader: str
    read_call: int
    captured_call: int
    slot: int
    overwritten_by: int
    by_host_write: bool


@dataclass
class KernelSlot:
    name: str
    dtype: str


# --- spool lines ---------------------------------------------------------------------------

@dataclass
class ForkOf:
    """A forked process's parent: its spool file (a name in the spool folder) and the number
    of the last call the parent had numbered when it forked (this process's calls go on from
    there; numbers up to it are the parent's calls)."""
    spool: str
    calls: int


@dataclass
class HeaderRecord:
    kind: str = field(default="header", init=False)
    producer: str
    argv: List[str]
    shadow: bool
    pid: object = OMIT       # int: this process
    ppid: object = OMIT      # int: its parent
    start_ns: object = OMIT  # int: CLOCK_MONOTONIC when it started recording (orders processes)
    fork_of: object = OMIT   # ForkOf, in a forked process


@dataclass
class KernelRecord:
    """An entry of the trace header's kernel table (§4 `kernels[]`)."""
    kind: str = field(default="kernel", init=False)
    name: str
    slots: List[KernelSlot]
    binary: str


@dataclass
class CallRecord:
    kind: str = field(default="call", init=False)
    call: Call


@dataclass
class ViewReadRecord:
    kind: str = field(default="view_read", init=False)
    event: ViewRead


@dataclass
class EndRecord:
    kind: str = field(default="end", init=False)
    calls: int
    recorder_seconds: float


# --- the serializer ------------------------------------------------------------------------

_NAMES = {}  # dataclass type -> its field names in order
_GETTERS = {}  # dataclass type -> a function giving the values of its fields in order


def _names(cls):
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _getter(cls):
    g = _GETTERS.get(cls)
    if g is None:
        names = _names(cls)
        if not names:
            g = lambda v: ()  # noqa: E731
        else:
            g = operator.attrgetter(*names)
        if len(names) == 1:
            g = (lambda one: lambda v: (one(v),))(g)
        _GETTERS[cls] = g
    return g


def text(s):
    """A str as valid Unicode text: characters that are not (lone surrogates: bytes of a path or
    message that were not UTF-8, decoded with surrogateescape) become `\\xNN` per byte
    (`\\udNNN` for other lone surrogates), so the JSON line stays valid UTF-8."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        pass
    out = []
    for ch in s:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            out.append("\\x%02x" % (o - 0xDC00))
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    return "".join(out)


def plain(v):
    """A record as JSON-ready values: dataclasses become dicts in field order (OMIT fields
    left out), tuples lists, integers of any kind ints, non-finite floats the strings "nan", "inf", "-inf" (§2 *num*),
    text valid Unicode (`text`)."""
    t = type(v)
    if t is str:
        return text(v)
    if t is int or t is bool or v is None:
        return v
    get = _GETTERS.get(t)
    if get is not None or hasattr(t, "__dataclass_fields__"):
        out = {}
        for name, e in zip(_names(t), (get or _getter(t))(v)):
            if e is OMIT:
                continue
            te = type(e)  # plain ints, bools and ASCII text as they are (most fields)
            out[name] = e if te is int or te is bool or e is None or \
                te is str and e.isascii() else plain(e)
        return out
    if t is list or t is tuple:
        return [e if type(e) is int else plain(e) for e in v]
    if isinstance(v, (list, tuple)):
        return [plain(e) for e in v]
    if isinstance(v, dict):
        return {text(str(k)): plain(e) for k, e in v.items()}
    if isinstance(v, float):
        v = float(v)
        if math.isfinite(v):
            return v
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    if isinstance(v, str):  # as json.dumps writes str and int subclasses
        return text(str.__str__(v))
    if isinstance(v, int) or hasattr(t, "__index__"):  # numpy integers too
        return int(operator.index(v))
    raise TypeError("a spool record holds a %s, which the trace format has no type for" % t.__name__)


def line(record):
    """The record as one line of compact JSON, without the newline."""
    return json.dumps(plain(record), separators=(",", ":"), allow_nan=False)
