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


def recorder_stats():
    """What the recorder has done so far in this process (all zero outside a recording):
    bytes_hashed, syncs (BO syncs from the device the recorder made) and sync_bytes, calls
    recorded and shadowed, and bytes_hashed split by where (hashed_host, hashed_bo_before,
    hashed_bo_after, hashed_shadow; the rest hashed the views the engine returned),
    bytes_spot_checked (of static BOs, by spot checks; in bytes_hashed too), and
    seconds: the time the recording threads spent in the recorder, by the clock (it includes
    what the system took from them). A copy."""
    from ._hashing import STATS
    return dict(STATS)


__all__ = ["label", "current_labels", "recorder_stats"]
