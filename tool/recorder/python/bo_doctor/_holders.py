"""Who holds a view the engine returned, as far as the recorder can tell without tracing the
program: whether only argument lists hold it, and a name the program knows it by.

An argument list is a list the program passes, item by item, as the arguments of a recorded
call (`cache.load_and_run(name, backend, *args)`) and keeps for the next call of that key, as
mlir-air's prefill keeps one per layer and replaces its first item before every call. A stale
view that only such a list holds is read again only by passing it to a call, which the
recorder sees; it is not reported as held.

The test counts references (sys.getrefcount) and accepts only references it can attribute:
each array made from the view (`.base`) that the program passed to a recorded call, and items
of lists the garbage collector lists as referrers whose items are, by identity, a recorded
call's arguments. A holder it cannot attribute (a capture list, a tuple or dict the collector
does not track, a frame's local) makes the answer False, so an unsure answer reports.
This module reads references and frames; it changes nothing.
"""
import gc
import sys

import numpy as np

from ._frames import frame_locals, program_frames

NAME_FRAMES = 14  # program frames searched for a name of a view


def _count(ref):
    obj = ref()
    return sys.getrefcount(obj)


def _probe_own():
    import weakref

    class Probe:
        pass

    p = Probe()
    return _count(weakref.ref(p)) - 1  # the local p is its one reference outside _count


_OWN = _probe_own()  # the references _count itself holds while it counts


def _refs(ref):
    """References to ref's object beyond the recorder's own."""
    return _count(ref) - _OWN


def only_argument_lists(view_ref, passed_refs, arg_lists):
    """True when the view (view_ref: a weak reference) is held only through argument lists:
    directly, or by arrays made from it (passed_refs: weak references to arrays the program
    passed to recorded calls) that only argument lists hold. arg_lists: a set of tuples of the
    ids of recorded calls' arguments. One pass of the garbage collector's referrers."""
    if view_ref() is None:
        return True
    made = [r for r in passed_refs if r() is not None and r() is not view_ref() and
            getattr(r(), "base", None) is view_ref()]
    refs = [_refs(view_ref)] + [_refs(r) for r in made]  # counted while no local holds them
    lists = [r for r in gc.get_referrers(view_ref(), *[r() for r in made])
             if type(r) is list and tuple(map(id, r)) in arg_lists]

    def in_lists(ref):
        return sum(1 for lst in lists for e in lst if e is ref())

    direct = refs[0] - len(made)  # each array made from the view holds it once (.base)
    return direct >= 0 and in_lists(view_ref) == direct and \
        all(in_lists(r) == n for r, n in zip(made, refs[1:]))


def _matches(v, targets):
    """v is one of targets or an array made from one (its base)."""
    b = v.base if isinstance(v, np.ndarray) else None
    return any(v is t or b is t for t in targets)


def _find(value, targets, depth, skip):
    """The subscript path (e.g. "[2]['out']") to a target inside value, None when none; lists
    whose id is in skip are not looked into."""
    if _matches(value, targets):
        return ""
    if depth == 0 or id(value) in skip:
        return None
    if isinstance(value, (list, tuple)):
        items = enumerate(value[:1000])
    elif isinstance(value, dict):
        items = list(value.items())[:1000]
    else:
        return None
    for k, e in items:
        if isinstance(e, (list, tuple, dict)) or _matches(e, targets):
            p = _find(e, targets, depth - 1, skip)
            if p is not None:
                return "[%r]%s" % (k, p)
    return None


def name_of(targets, arg_lists=()):
    """How the program names one of targets (a view or arrays made from it): a local or global
    of its innermost frames, or an item two levels down a list, tuple or dict one of them
    holds (`caps[2]`, `outs[0]['ffn']`); the __main__ module's globals after the program's
    frames have returned. A holder that is not an argument list (arg_lists: the ids of recorded
    calls' arguments) is named first. None when the recorder finds no name."""
    spaces = [frame_locals(f) for f in program_frames(NAME_FRAMES)]
    main = sys.modules.get("__main__")
    if main is not None:
        spaces.append(vars(main))
    for skip_args in (True, False):
        skip = set()
        if skip_args:
            for space in spaces:
                skip |= _argument_lists_in(space, arg_lists)
        for space in spaces:
            for k, v in list(space.items()):
                if k.startswith("__"):
                    continue
                p = _find(v, targets, 2, skip)
                if p is not None:
                    return k + p
    return None


def _argument_lists_in(space, arg_lists, depth=2):
    """ids of the argument lists in a namespace, down to depth levels of lists and dicts."""
    found, todo = set(), [(v, 0) for v in list(space.values())]
    while todo:
        v, d = todo.pop()
        if type(v) is list and tuple(map(id, v)) in arg_lists:
            found.add(id(v))
        elif d < depth and isinstance(v, (list, tuple, dict)):
            todo += [(e, d + 1) for e in (list(v.values()) if isinstance(v, dict) else v[:1000])]
    return found
