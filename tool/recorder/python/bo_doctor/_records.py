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
`view_read` (a trace event, under "event"), `stopped` (the recorder failed at call `call` and
records nothing more in this process: the trace's `gap` line), `end` (the program ended).

This module only describes and serializes; it reads nothing of the program.
"""
import json
import math
import operator
import os
from dataclasses import dataclass, field, fields
from typing import List


class _Omit:
    """The value of a field the line leaves out."""

    def __repr__(self):
        return "OMIT"


OMIT = _Omit()


# --- the parts of a call line (docs/trace-format.md §5, §6) ----------------------------------

# HostX and Placement are frozen (shared per value by the recorder: the native serializer keeps
# each one's text).
@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
    bo_spot_checked: object = OMIT  # [slot]: of bo_assumed_unchanged, spot-checked (_bos.py)


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
class StoppedRecord:
    kind: str = field(default="stopped", init=False)
    call: int
    why: str


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


def reference_line(record):
    """The record as one line of compact JSON: the reference `line` must equal byte for byte
    (plain values through json.dumps)."""
    return json.dumps(plain(record), separators=(",", ":"), allow_nan=False)


# --- the fast serializer --------------------------------------------------------------------
# `line` writes the same bytes as `reference_line` without building the plain values first: the
# call line's slots (most of its bytes) through encoders written out per record type, with the
# JSON text of a slot's placement and numpy description kept per value. Every encoder checks
# the exact type of each value it writes by a template (str, int, bool, a list of those) and
# hands anything else to the reference path, so no value is ever written differently (a bool
# where an int is expected, a str subclass, a numpy integer, a non-finite float...).
# tests/recorder/unit/test_records.py compares the two on hand-made and generated records.

_esc = json.encoder.encode_basestring_ascii
_dump = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_BOOL = {True: "true", False: "false"}
_ENCODERS = {}  # type -> its encoder
_FRAGMENTS = {}  # (type, field values) -> JSON text, for values that repeat (placements, x)
_MAX_FRAGMENTS = 65536


def _s(v):
    """An exact str as JSON text."""
    return _esc(v) if v.isascii() else _esc(text(v))


def encode(v):
    """v as the JSON text reference_line writes for it."""
    t = type(v)
    if t is str:
        return _esc(v) if v.isascii() else _esc(text(v))
    if t is int:
        return int.__repr__(v)
    if t is bool:
        return _BOOL[v]
    f = _ENCODERS.get(t)
    if f is not None:
        return f(v)
    if v is None:
        return "null"
    if t is list:
        return "[" + ",".join([encode(e) for e in v]) + "]"
    if t is dict and not v:
        return "{}"
    if hasattr(t, "__dataclass_fields__"):
        f = _ENCODERS[t] = _dataclass_encoder(t)
        return f(v)
    return _dump(plain(v))


def _dataclass_encoder(cls):
    keys = tuple(_esc(n) + ":" for n in _names(cls))
    get = _getter(cls)

    def enc(v):
        return "{" + ",".join([k + encode(e) for k, e in zip(keys, get(v)) if e is not OMIT]) + \
            "}"
    return enc


def _fragment(key, make):
    got = _FRAGMENTS.get(key)
    if got is None:
        got = make()
        if len(_FRAGMENTS) >= _MAX_FRAGMENTS:
            _FRAGMENTS.clear()
        _FRAGMENTS[key] = got
    return got


def _ints(v):
    """A list of exact ints as JSON text; None when it is not one."""
    if type(v) is not list:
        return None
    for e in v:
        if type(e) is not int:
            return None
    return "[" + ",".join(map(int.__repr__, v)) + "]"


_get_hostx = _getter(HostX)
_get_host = _getter(Host)
_get_place = _getter(Placement)
_get_slot = _getter(Slot)


def _enc_hostx(v):
    vals = _get_hostx(v)
    dt, cc, zs = vals
    if type(dt) is not str or type(cc) is not bool or type(zs) is not bool:
        return _generic(HostX, v)
    return _fragment((HostX,) + vals, lambda: '{"numpy_dtype":%s,"c_contiguous":%s,'
                     '"zero_strides":%s}' % (_s(dt), _BOOL[cc], _BOOL[zs]))


def _enc_placement(v):
    vals = _get_place(v)
    ns, pool, name, index, nbytes, first = vals
    if type(ns) is not str or type(pool) is not str or type(name) is not str or \
            type(index) is not int or type(nbytes) is not int or type(first) is not int:
        return _generic(Placement, v)
    return _fragment((Placement,) + vals, lambda: '{"ns":%s,"pool":%s,"name":%s,"index":%d,'
                     '"bytes":%d,"first_call":%d}' % (_s(ns), _s(pool), _s(name), index,
                                                      nbytes, first))


def host_text_around(host):
    """(JSON text of a Host up to its hash's first digit, from after its last digit) when its
    hash is the only place NO_HASH appears in it; None otherwise."""
    t = _enc_host(host)
    mark = _esc(host.hash)
    if t.count(mark) != 1:
        return None
    a, b = t.split(mark)
    return a + '"', '"' + b


def _enc_host(v):
    j = v.__dict__.get("_json")
    if j is not None:  # the text describe() made of it (_capture.py)
        return j
    shape, dtype, nbytes, h, source, name, view, x = _get_host(v)
    if type(shape) is list and len(shape) == 1 and type(shape[0]) is int:
        dims = "[%d]" % shape[0]
    else:
        dims = _ints(shape)
    if dims is None or type(dtype) is not str or type(nbytes) is not int or \
            type(h) is not str or type(source) is not str or type(name) is not str or \
            type(view) is not int or not (dtype + h + source + name).isascii():
        return _generic(Host, v)
    head = '{"shape":%s,"dtype":%s,"bytes":%d,"hash":%s,"source":%s,"name":%s,' \
        '"view_of_call":%d' % (dims, _esc(dtype), nbytes, _esc(h), _esc(source), _esc(name),
                               view)
    if x is OMIT:
        return head + "}"
    return head + ',"x":' + (_enc_hostx(x) if type(x) is HostX else encode(x)) + "}"


def _enc_slot(v):
    role, output, host, bo, bo_bytes, written, nb, wh, reuse, no_reuse = _get_slot(v)
    if type(role) is not str or type(output) is not bool or type(host) is not Host or \
            type(bo) is not Placement or type(bo_bytes) is not int or \
            type(written) is not bool or type(nb) is not int or type(wh) is not str or \
            type(reuse) is not list or len(reuse) != 2 or type(reuse[0]) is not str or \
            type(reuse[1]) is not str or not (role + wh + reuse[0] + reuse[1]).isascii():
        return _generic(Slot, v)
    out = '{"role":%s,"output":%s,"host":%s,"bo":%s,"bo_bytes":%d,"written":%s,' \
        '"written_bytes":%d,"written_hash":%s,"reuse":[%s,%s]' % (
            _esc(role), _BOOL[output], _enc_host(host), _enc_placement(bo), bo_bytes,
            _BOOL[written], nb, _esc(wh), _esc(reuse[0]), _esc(reuse[1]))
    if no_reuse is OMIT:
        return out + "}"
    return out + ',"no_reuse":' + encode(no_reuse) + "}"


def _generic(cls, v):
    f = _GENERIC.get(cls)
    if f is None:
        f = _GENERIC[cls] = _dataclass_encoder(cls)
    return f(v)


_GENERIC = {}
_ENCODERS.update({HostX: _enc_hostx, Placement: _enc_placement, Host: _enc_host,
                  Slot: _enc_slot})


# BOD_RECORD_VERIFY_LINES=1 (the recorder's unit tests set it): every line is also written the
# reference way and compared; a difference raises.
_VERIFY = os.environ.get("BOD_RECORD_VERIFY_LINES", "") not in ("", "0")


def _native_line():
    """The native serializer's `line` with every record type of this module registered, or
    None (_fast.py)."""
    from . import _fast
    m = _fast.module()
    if m is None:
        return None
    for v in list(globals().values()):
        if isinstance(v, type) and hasattr(v, "__dataclass_fields__"):
            m.register(v, _names(v), OMIT, v.__dataclass_params__.frozen)
    return m.line


_native = _native_line()


def line(record):
    """The record as one line of compact JSON, without the newline (reference_line's bytes):
    the native serializer's where it writes the record, else the Python one's."""
    t = _native(record) if _native is not None else None
    if t is None:
        t = encode(record)
    if _VERIFY:
        ref = reference_line(record)
        if t != ref:
            raise AssertionError("the spool serializer wrote %r where the reference writes %r"
                                 % (t, ref))
    return t
