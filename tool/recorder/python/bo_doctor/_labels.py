"""Where a kernel call sits in the program: its labels (phase, layer, token), the name of the
cache instance it runs on and the caller's file:line, as the recorder reads them.

`label()` is the public API (re-exported by bo_doctor): a with-block that labels every call made
inside it, on this thread only; inner blocks refine outer ones. The recorder takes the layer
from `label()` first, then from an `L<n>` / `layer<n>` in the bo_key, then from the innermost
*running* layer loop in the program's 8 innermost frames (docs/recording.md, Labels): a `for`
loop whose variable is named like a layer (`layer_idx`, `layer`, `l`, `li`, ...) or whose
iterable names one (`range(config.n_layers)`, `enumerate(weights.layers)`), read from the
frame's bytecode (_frames.py). Its number is held by the first of the loop's variables that
is an int >= 0 (`i` of `for i, lw in enumerate(layers)`) or an object with an int
`layer_idx` / `_layer_idx` attribute (`lw` of `for lw in layers`). A loop that has finished gives nothing, whatever its variable still holds, and so
does a variable that no running loop assigns. `explicit` mode uses `label()` alone. Frames of
the recorder itself (this folder) are never looked at.

This module only reads frames and names; it changes no variable of the program. It imports
nothing beyond the standard library, so `import bo_doctor` works in any program.
"""
import contextlib
import os
import operator
import re
import threading

from ._frames import frame_locals, program_frames, running_loops

_labels = threading.local()

LAYER_VARS = ("l", "li", "lidx", "lid")  # short loop variable names that mean a layer
LAYER_FRAMES = 8   # program frames searched for a running layer loop
NAME_FRAMES = 14   # program frames searched for the variable that holds a cache
_KEY_LAYER = re.compile(r"(?:^|[_\-.])(?:L|layer)(\d+)(?:$|[_\-.])")
_PHASES = ("prefill", "decode", "preload")


def current_labels():
    """The innermost labels in force on this thread: a dict with phase, layer, token."""
    stack = getattr(_labels, "stack", None)
    return stack[-1] if stack else {}


@contextlib.contextmanager
def label(phase=None, layer=None, token=None):
    """Labels every kernel call made inside the block; inner labels refine outer ones."""
    inner = dict(current_labels())
    for k, v in (("phase", phase), ("layer", layer), ("token", token)):
        if v is not None:
            inner[k] = v
    stack = getattr(_labels, "stack", None)
    if stack is None:
        stack = _labels.stack = []
    stack.append(inner)
    try:
        yield
    finally:
        stack.pop()


def is_layer_loop(loop):
    """A loop over layers: its variable or its iterable names a layer."""
    names = [t for t in loop.targets if t] + list(loop.iter_names)
    return any("layer" in n.lower() for n in names) or \
        any(t in LAYER_VARS for t in loop.targets if t)


def loop_layer(running):
    """The number of a running layer loop's iteration (see the module's docstring); None when
    none of its variables holds one."""
    nums = [running.numbers[t] for t in running.loop.targets if t is not None]
    return next((v for v in nums if v is not None), None)


def frame_layer(loops=None):
    """The layer of the innermost running layer loop in the program's frames; -1 when no
    layer loop runs (or the innermost one has no number). `loops`: running_loops() already
    taken for this call."""
    if loops is None:
        loops = running_loops(LAYER_FRAMES)
    for r in loops:
        if is_layer_loop(r.loop):
            layer = loop_layer(r)
            return -1 if layer is None else int(layer)
    return -1


def label_int(v):
    """A layer or token label as the trace holds it: an integer of any kind (numpy's too) from
    0 to 2**63-1; anything else (a negative number, 2**64, a float, a string) is -1, unknown."""
    if isinstance(v, bool):
        return -1
    try:
        i = operator.index(v)
    except TypeError:
        return -1
    return i if 0 <= i < 2 ** 63 else -1


_KEY_LAYERS = {}  # a bo_key's text -> the layer it names, or None
_NS_PHASES = {}   # a cache's name -> the phase it names, or ""


def _key_layer(text):
    """The layer an `L<n>` / `layer<n>` in a bo_key's text names (None: none)."""
    if type(text) is not str:  # a str subclass's __eq__ and __hash__ are its own: not kept
        m = _KEY_LAYER.search(text)
        return int(m.group(1)) if m else None
    got = _KEY_LAYERS.get(text, _KEY_LAYERS)
    if got is not _KEY_LAYERS:
        return got
    m = _KEY_LAYER.search(text)
    got = int(m.group(1)) if m else None
    if len(_KEY_LAYERS) >= 65536:
        _KEY_LAYERS.clear()
    _KEY_LAYERS[text] = got
    return got


def _ns_phase(ns):
    got = _NS_PHASES.get(ns)
    if got is None:
        got = next((p for p in _PHASES if p in ns.lower()), "")
        if len(_NS_PHASES) >= 4096:
            _NS_PHASES.clear()
        _NS_PHASES[ns] = got
    return got


def call_labels(key, ns, explicit, loops=None):
    """(phase, token, layer) of a call with this bo_key on the cache named ns; `loops`: the
    program's running loops (running_loops()), taken here when not given."""
    lab = current_labels()
    if explicit:
        return str(lab.get("phase", "")), label_int(lab.get("token", -1)), \
            label_int(lab.get("layer", -1))
    layer = lab.get("layer")
    if layer is None:
        layer = _key_layer(str(key))
        if layer is None:
            layer = frame_layer(loops)
    phase = lab.get("phase")
    if phase is None:
        phase = _ns_phase(ns)
    token = lab.get("token")
    return str(phase), label_int(token) if token is not None else -1, label_int(layer)


def holder_name(obj):
    """The outermost name in the program's frames that holds obj (the program's
    `prefill_cache`, not a helper's `cache` parameter): a local, an attribute of a method's
    `self`, or a global; None when no frame holds it."""
    found = None
    for f in program_frames(NAME_FRAMES):
        here = None
        for k, v in list(frame_locals(f).items()):
            if v is obj:
                here = k
                break
            if k == "self" and hasattr(v, "__dict__"):
                here = next((ak for ak, av in list(vars(v).items()) if av is obj), None)
                if here:
                    break
        if here is None:
            here = next((k for k, v in list(f.f_globals.items()) if v is obj), None)
        found = here or found
    return found


def caller_path(frame=None):
    """file:line of the program's innermost frame (`frame` when the caller found it already;
    relative to the working folder the file was first seen from, when below it); "" when there
    is none."""
    f = frame if frame is not None else next(program_frames(1), None)
    if f is None:
        return ""
    return "%s:%d" % (_shown_path(f.f_code.co_filename), f.f_lineno)


_SHOWN = {}  # file name -> the file name as the call line shows it


def _shown_path(path):
    """The file name as call lines show it: relative to the working folder of its first sight
    when below it, else as given; kept per name, so a call costs no getcwd system call. (A
    relative name is one Python resolved against the working folder of its import; a program
    that changes folder later still gets it shown as then, not resolved against the new one.)"""
    got = _SHOWN.get(path)
    if got is None:
        got = path
        try:
            rel = os.path.relpath(path)
            got = rel if not rel.startswith("..") else path
        except (ValueError, OSError):  # the working folder is gone
            pass
        if len(_SHOWN) > 4096:
            _SHOWN.clear()
        _SHOWN[path] = got
    return got
