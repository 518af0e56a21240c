"""The recorder's native helpers (tool/recorder/native/fast_ext.cpp): `_bod_fast.abi3.so`, a
CPython extension built for the stable ABI of Python 3.11, loaded from the folder of the hash
library `bo-doctor record` names (BOD_RECORD_HASHLIB). Optional: where it is missing, does not
load (Python 3.10, a build without Python's headers) or BOD_RECORD_NO_FAST=1, `module()` is None
and the recorder does the same work in Python, with the same output.
"""
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig

NAME = "_bod_fast"
FILE = NAME + ".abi3.so"
API_VERSION = 5  # the module's api_version() this package was written for

_module = None
_tried = False
why = ""  # why the module is not in use ("" when it is)


def module():
    """The loaded extension module, or None."""
    global _module, _tried, why
    if _tried:
        return _module
    _tried = True
    if os.environ.get("BOD_RECORD_NO_FAST", "") not in ("", "0"):
        why = "BOD_RECORD_NO_FAST is set"
        return None
    lib = os.environ.get("BOD_RECORD_HASHLIB", "")
    path = os.path.join(os.path.dirname(lib), FILE) if lib else ""
    if sys.version_info < (3, 11):
        why = "Python %d.%d (the extension needs 3.11 or later)" % sys.version_info[:2]
    elif ".abi3.so" not in importlib.machinery.EXTENSION_SUFFIXES or \
            sysconfig.get_config_var("Py_GIL_DISABLED"):
        # A free-threaded build lays objects out differently: it must not load an abi3 module.
        why = "this interpreter loads no stable-ABI extension"
    elif not path or not os.path.isfile(path):
        why = "no %s next to the hash library" % FILE
    else:
        try:
            loader = importlib.machinery.ExtensionFileLoader(NAME, path)
            spec = importlib.util.spec_from_loader(NAME, loader, origin=path)
            m = importlib.util.module_from_spec(spec)
            loader.exec_module(m)
            got = m.api_version()
            if got != API_VERSION:
                why = "%s has API version %d, this recorder needs %d" % (path, got, API_VERSION)
            else:
                _module = m
        except Exception as e:  # an unloadable file: the Python path does the same work
            why = "%s did not load (%s: %s)" % (path, type(e).__name__, e)
    return _module
