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
from ._labels import current_labels, label

__all__ = ["label", "current_labels"]
