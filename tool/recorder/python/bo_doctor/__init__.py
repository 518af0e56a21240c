"""bo-doctor's helpers for Python engines.

`label` names where a kernel call sits in the program (phase, layer, token) for the recorder
that `bo-doctor record` injects; outside a recording it does nothing, so a program may keep
the labels in place:

    import bo_doctor
    for l in range(n_layers):
        with bo_doctor.label(phase="decode", layer=l, token=t):
            cache.load_and_run(...)

Programs that cannot import bo_doctor outside a recording can guard the import:
`try: import bo_doctor except ImportError: bo_doctor = None`.
"""
import contextlib
import threading

_labels = threading.local()


def current_labels():
    """The innermost labels in force on this thread: a dict with phase, layer, token."""
    stack = getattr(_labels, "stack", None)
    return stack[-1] if stack else {}


@contextlib.contextmanager
def label(phase=None, layer=None, token=None):
    """Labels every kernel call made inside the block; inner labels refine outer ones."""
    outer = current_labels()
    inner = dict(outer)
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
