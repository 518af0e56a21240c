"""bo-doctor's recorder entry point: `bo-doctor record` puts this folder first on PYTHONPATH,
so Python runs this file at start-up (site.py imports `sitecustomize`). It installs the
recorder when BOD_RECORD_SPOOL is set, then runs the sitecustomize this one shadows (Debian
ships one), so the user's environment behaves as without bo-doctor.
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


if os.environ.get("BOD_RECORD_SPOOL"):
    try:
        from bo_doctor import _record
        _record.install_from_environment()
    except Exception as e:  # the user's program must run even if the recorder cannot
        sys.stderr.write("bo-doctor record: recorder not installed: %s\n" % e)
        raise
_chain_shadowed_sitecustomize()
