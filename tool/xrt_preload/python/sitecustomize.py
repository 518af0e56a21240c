"""`bo-doctor record --xrt` puts this folder first on PYTHONPATH, so Python runs this file at
start-up (site.py imports `sitecustomize`). When BOD_XRT_LOG names the event folder it wraps a
pure-Python pyxrt as it is imported (bo_doctor.xrt_wrap, from BOD_XRT_RECORDER_DIR), after running
the sitecustomize this one shadows (Debian ships one), so the program's environment behaves as
without bo-doctor. A libxrt-backed pyxrt is recorded by the preload library instead.
"""
import os
import sys


def _chain_shadowed_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    for d in sys.path:
        if not d or os.path.abspath(d) == here:
            continue
        path = os.path.join(d, "sitecustomize.py")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": path})
            return


_chain_shadowed_sitecustomize()  # first: the recorder's folder (appended below) has one too
if os.environ.get("BOD_XRT_LOG"):
    _dir = os.environ.get("BOD_XRT_RECORDER_DIR", "")
    if _dir and _dir not in sys.path:
        sys.path.append(_dir)
    try:
        from bo_doctor import xrt_wrap
        xrt_wrap.install()
    except Exception as e:  # the program runs even if the recorder cannot
        sys.stderr.write("bo-doctor record --xrt: pyxrt wrapper not installed: %s\n" % e)
