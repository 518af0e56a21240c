"""Attaching the recorder: finding the engine's method and wrapping it.

An import hook (a finder first on sys.meta_path) hands every module, as it finishes executing,
to `patch_module`, which replaces `load_and_run` of each class named `KernelCache` defined in
that module (or the one method BOD_RECORD_TARGET names, "module:Class.method") by a wrapper.
Modules already imported when the recorder starts are patched at once. A method is wrapped at
most once (the wrapper is marked), and a class is patched only in the module that defines it.

The wrapper calls the original with exactly the arguments it was given and returns (or raises)
exactly what it returned (or raised): the recorder only looks. A call made while this thread is
already inside a recorded call (the engine calling itself, the shadow run) goes straight to the
original; the flag is per thread. The hook never changes what a module contains beyond the
wrapped method, and a failure to patch is reported on stderr, never raised into the import.
"""
import functools
import importlib.abc
import inspect
import re
import sys
import threading

_TARGET = re.compile(r"([\w.]+):(\w+)\.(\w+)")


def parse_target(text):
    """(module, class, method) of a "module:Class.method" string; None for ""."""
    if not text:
        return None
    m = _TARGET.fullmatch(text)
    if not m:
        raise ValueError("BOD_RECORD_TARGET '%s': expected module:Class.method" % text)
    return m.groups()


class Attacher:
    """Wraps the target method of the classes it is shown; `record(orig, sig, var_pos, self,
    args, kwargs)` is called for each call of a wrapped method."""

    def __init__(self, record, target=None):
        self.record = record
        self.target = target  # (module, class, method), or None: every KernelCache.load_and_run
        self.method = target[2] if target else "load_and_run"
        self.busy = threading.local()

    def wants(self, module_name, cls):
        if self.target:
            mod, cname, meth = self.target
            return module_name == mod and cls.__name__ == cname and meth in cls.__dict__
        return cls.__name__ == "KernelCache" and "load_and_run" in cls.__dict__

    def patch_module(self, module):
        """Wraps the target method of every class defined in module; returns how many."""
        n = 0
        for obj in list(vars(module).values()):
            if isinstance(obj, type) and obj.__module__ == module.__name__ and \
                    self.wants(module.__name__, obj):
                orig = obj.__dict__[self.method]
                if getattr(orig, "_bo_doctor_wrapped", False):
                    continue
                setattr(obj, self.method, self.wrap(orig))
                n += 1
        return n

    def wrap(self, orig):
        sig = inspect.signature(orig)
        var_pos = next((p.name for p in sig.parameters.values()
                        if p.kind == inspect.Parameter.VAR_POSITIONAL), None)
        busy, record = self.busy, self.record

        @functools.wraps(orig, assigned=("__doc__", "__name__"), updated=())
        def load_and_run(cache, *args, **kwargs):
            if getattr(busy, "on", False) or var_pos is None:
                return orig(cache, *args, **kwargs)
            busy.on = True
            try:
                return record(orig, sig, var_pos, cache, args, kwargs)
            finally:
                busy.on = False

        load_and_run._bo_doctor_wrapped = True
        return load_and_run

    def install(self):
        """Puts the import hook first on sys.meta_path and patches the modules already loaded."""
        sys.meta_path.insert(0, _Finder(self))
        for mod in list(sys.modules.values()):
            if mod is not None and hasattr(mod, "__dict__"):
                try:
                    self.patch_module(mod)
                except Exception:
                    pass


class _Finder(importlib.abc.MetaPathFinder):
    """Finds each module with the finders after it and wraps the loader it gets."""

    def __init__(self, attacher):
        self.attacher = attacher
        self._local = threading.local()  # names this thread is finding (no recursion)

    def find_spec(self, fullname, path, target=None):
        busy = self._local.__dict__.setdefault("names", set())
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            busy.discard(fullname)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self.attacher)
        return spec


class _Loader(importlib.abc.Loader):
    """The module's own loader, then patch_module on the module it executed."""

    def __init__(self, inner, attacher):
        self._inner = inner
        self._attacher = attacher

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        try:
            self._attacher.patch_module(module)
        except Exception as e:  # never break the user's import
            sys.stderr.write("bo-doctor record: could not patch %s: %s\n" % (module.__name__, e))

    def __getattr__(self, name):
        return getattr(self._inner, name)
