"""Where a kernel call sits in the program: its labels (phase, layer, token), the name of the
cache instance it runs on and the caller's file:line, as the recorder reads them.

`label()` is the public API (re-exported by bo_doctor): a with-block that labels every call made
inside it, on this thread only; inner blocks refine outer ones. The recorder takes the layer
from `label()` first, then from an `L<n>` / `layer<n>` in the bo_key, then from a layer loop
variable in the 5 innermost frames of the program (docs/recording.md, Labels); `explicit` mode
uses `label()` alone. Frames of the recorder itself (this folder) are never looked at.

This module only reads frames and names; it changes no variable of the program. It imports
nothing beyond the standard library, so `import bo_doctor` works in any program.
"""
import contextlib
import os
import re
import sys
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_labels = threading.local()

LAYER_NAMES = ("layer_idx", "layer", "layer_id", "lidx", "l")
LAYER_ATTRS = ("layer_idx", "_layer_idx")
LAYER_FRAMES = 5   # program frames searched for a layer loop variable
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


def program_frames(limit):
    """The calling thread's frames outside the recorder, innermost first, at most `limit`."""
    f = sys._getframe(1)
    n = 0
    while f is not None and n < limit:
        if os.path.dirname(os.path.abspath(f.f_code.co_filename)) != _HERE:
            yield f
            n += 1
        f = f.f_back


def _layer_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def frame_layer():
    """The layer loop's variable in the program's frames (layer_idx, layer, l, … or an object's
    layer_idx attribute), innermost first; -1 when there is none."""
    for f in program_frames(LAYER_FRAMES):
        loc = f.f_locals
        for k in LAYER_NAMES:
            if _layer_int(loc.get(k)):
                return loc[k]
        for v in loc.values():
            if hasattr(v, "__dict__"):
                for attr in LAYER_ATTRS:
                    a = getattr(v, attr, None)
                    if _layer_int(a):
                        return a
    return -1


def call_labels(key, ns, explicit):
    """(phase, token, layer) of a call with this bo_key on the cache named ns."""
    lab = current_labels()
    if explicit:
        return str(lab.get("phase", "")), int(lab.get("token", -1)), int(lab.get("layer", -1))
    layer = lab.get("layer")
    if layer is None:
        m = _KEY_LAYER.search(str(key))
        layer = int(m.group(1)) if m else frame_layer()
    phase = lab.get("phase")
    if phase is None:
        phase = next((p for p in _PHASES if p in ns.lower()), "")
    token = lab.get("token")
    return str(phase), int(token) if token is not None else -1, int(layer)


def holder_name(obj):
    """The outermost name in the program's frames that holds obj (the program's
    `prefill_cache`, not a helper's `cache` parameter): a local, an attribute of a method's
    `self`, or a global; None when no frame holds it."""
    found = None
    for f in program_frames(NAME_FRAMES):
        here = None
        for k, v in list(f.f_locals.items()):
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


def caller_path():
    """file:line of the program's innermost frame (relative to the working folder when below
    it); "" when there is none."""
    f = next(program_frames(1), None)
    if f is None:
        return ""
    path = f.f_code.co_filename
    try:
        rel = os.path.relpath(path)
        path = rel if not rel.startswith("..") else path
    except ValueError:
        pass
    return "%s:%d" % (path, f.f_lineno)
