"""What a Dask fit moved: the payload bytes of each kind of map, for ``result_.info``.

Payload: the arrays and numbers of the task arguments sent and of the results gathered,
not Dask's framing. Three kinds of map: ``"evaluation"`` (d × d sums), ``"check"`` (a full
check's triplet keys) and ``"partial_check"`` (a partial check's triplets). Arguments
travel inline in every task while ``tasks × bytes`` stays under
:data:`~convexmetric.lmnn.constants.INLINE_BYTES`, else once to each worker
(:meth:`.dask_executor.DaskExecutor._inline`): :meth:`Traffic.moved` counts them so.
"""

from __future__ import annotations

from ..constants import INLINE_BYTES

KINDS = ("evaluation", "check", "partial_check")


class Traffic:
    """Round trips and payload bytes per kind of map."""

    def __init__(self):
        self.counts = {
            f"{kind}_{what}": 0 for kind in KINDS for what in ("count", "tasks", "sent", "received")
        }

    def moved(self, kind, args, tasks, parts, workers, once=()):
        """Count one map: ``args`` inline in each of ``tasks`` tasks, or broadcast once to
        each of ``workers``, ``once`` in one task each (a partial check's blocks), and
        the ``parts`` gathered."""
        arrays = sum(payload(a) for a in args if is_array(a))
        copies = tasks if arrays * tasks <= INLINE_BYTES else max(workers, 1)
        small = sum(payload(a) for a in args if not is_array(a))
        t = self.counts
        t[f"{kind}_count"] += 1
        t[f"{kind}_tasks"] += tasks
        t[f"{kind}_sent"] += arrays * copies + tasks * small + payload(once)
        t[f"{kind}_received"] += sum(payload(p) for p in parts)

    def info(self):
        """``result_.info``'s round trips (``cluster_evaluations``, ``cluster_checks``,
        ``cluster_partial_checks``), the average tasks (``tasks_per_check``, ...: how many
        workers a round trip can keep busy) and bytes sent and received per round trip of
        each kind (``bytes_sent_per_check``, ...)."""
        t, info = self.counts, {}
        for kind in KINDS:
            count = t[f"{kind}_count"]
            info[f"cluster_{kind}s"] = count
            if count:
                info[f"tasks_per_{kind}"] = t[f"{kind}_tasks"] / count
                info[f"bytes_sent_per_{kind}"] = t[f"{kind}_sent"] / count
                info[f"bytes_received_per_{kind}"] = t[f"{kind}_received"] / count
        return info


def payload(obj):
    """Bytes of the arrays and numbers in ``obj`` (dicts, lists and tuples walked)."""
    if isinstance(obj, dict):
        return sum(payload(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(payload(v) for v in obj)
    return int(getattr(obj, "nbytes", 8 if isinstance(obj, (int, float)) else 0))


def is_array(a):
    """Whether ``a`` is an array of more than one element (broadcast when large)."""
    return hasattr(a, "shape") and getattr(a, "size", 0) > 1
