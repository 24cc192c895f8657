"""The worker side of :mod:`.dask_executor`: a per-process store of each fit's data, and the
tasks that run block functions on it.

``client.run(store, token, key, value)`` puts a fit's data (and its row blocks) into
:data:`STORE` of every worker process once per fit; each task then reads it there, so
only ``L`` and the small results travel per evaluation. A worker that restarted or
joined later holds nothing and raises :class:`WorkerDataMissing` (the client then
sends the data again).

A worker runs several tasks at once in its threads; each thread has its own
:class:`~.data.Workspace` per fit (``STORE[token]["workspaces"]``, keyed by thread), so
no two tasks ever share a buffer or a projection.
"""

from __future__ import annotations

import threading

import numpy as np

from .._sets import member, union
from ..constants import STORE_FITS
from .data import Workspace


class WorkerDataMissing(RuntimeError):
    """A worker that has not received this fit's data (restarted, or joined later);
    ``address`` names it, so that the client sends the data there again."""

    def __init__(self, message, address=None):
        super().__init__(message)
        self.address = address


def _missing(token):
    address = _worker_address()
    where = address[0] if address else None
    return WorkerDataMissing(f"worker {where} holds no data of fit {token}", where)


#: per worker process: token -> {"data": StreamData, "groups": [[rows, ...], ...]}
STORE: dict = {}


def store(token, key, value):
    """Keep ``value`` under ``key`` for fit ``token`` (``client.run`` on every worker)."""
    STORE.setdefault(token, {})[key] = value
    while len(STORE) > STORE_FITS:
        STORE.pop(next(iter(STORE)))


def store_all(token, items):
    """:func:`store` each of ``items`` (key -> value): one message for all of them."""
    for key, value in items.items():
        store(token, key, value)


def drop(token):
    """Forget fit ``token``."""
    STORE.pop(token, None)


def _space(token):
    """``(data, this thread's workspace)`` of fit ``token``."""
    entry = STORE.get(token, {})
    if "data" not in entry:
        raise _missing(token)
    spaces = entry.setdefault("workspaces", {})
    ws = spaces.setdefault(threading.get_ident(), Workspace())  # atomic under the GIL
    return entry["data"], ws


def _entry(token, g):
    """``(data, group g's blocks, this thread's workspace)`` of fit ``token``."""
    if "groups" not in STORE.get(token, {}):
        raise _missing(token)
    data, ws = _space(token)
    return data, STORE[token]["groups"][g], ws


def group_sums(fn, token, g, *args, **kwargs):
    """``fn`` over group ``g`` of consecutive blocks, partial sums added in block order
    (one block: its result as is, so small problems match the local executor bit for
    bit). Values are numbers, arrays or None."""
    data, group, ws = _entry(token, g)
    total = fn(group[0], data, *args, ws=ws, **kwargs)
    for rows in group[1:]:
        part = fn(rows, data, *args, ws=ws, **kwargs)
        total = {key: None if v is None else v + part[key] for key, v in total.items()}
    return total


def chunk_task(fn, token, chunk, **kwargs):
    """``fn(chunk, data, **kwargs)`` with fit ``token``'s data (a block of test rows)."""
    data = STORE.get(token, {}).get("data")
    if data is None:
        raise _missing(token)
    return fn(chunk, data, **kwargs)


def group_terms(fn, token, g, *args, base=None, epoch=None, **kwargs):
    """``fn`` (:func:`~.full_check.terms_block`) over group ``g``, as triplet keys
    ``(i·k + s)·n + l`` (``j`` the ``s``-th target of ``i``): added and removed since the
    set reported at check ``base`` if this worker holds it, else all (``full``). Stores
    the set reported now."""
    from .full_check import collect_terms

    data, group, ws = _entry(token, g)
    try:
        part = collect_terms(fn, group, data, *args, ws=ws, **kwargs)
    finally:
        ws.release()  # the group's block buffers
    if part["overflow"]:
        return {**part, "size": 0}
    n, k = data.targets.shape
    I = part["I"].astype(np.int64)
    slot = np.argmax(data.targets[I] == part["J"][:, None], axis=1)
    keys = np.sort((I * k + slot) * n + part["L"])  # < n²k: int64 up to n ≈ 1.7e9 (k = 3)
    reported = STORE[token].setdefault("reported", {})
    prev = reported.get(g)
    reported[g] = (epoch, keys)
    out = {"count": part["count"], "overflow": False, "worker": _worker_address()}
    if prev is None or base is None or prev[0] != base:
        return {**out, "full": True, "keys": keys, "size": len(keys)}
    added = keys[~member(keys, prev[1])]  # both sorted and distinct
    removed = prev[1][~member(prev[1], keys)]
    return {
        **out,
        "full": False,
        "added": added,
        "removed": removed,
        "size": len(added) + len(removed),
    }


def blocks_terms(fn, token, blocks, L, stale, **kwargs):
    """``fn`` (:func:`~.full_check.terms_block`) over ``blocks`` (a partial check's blocks of
    stale rows, :func:`~.data.stale_blocks`: they travel with the task), its triplets
    joined in block order."""
    from .full_check import collect_terms

    data, ws = _space(token)
    try:
        return collect_terms(fn, blocks, data, L, ws=ws, stale=stale, **kwargs)
    finally:
        ws.release()


def rebuild(known, part):
    """A task's sorted keys from its message (:func:`group_terms`) and the last set."""
    if part["full"]:
        return part["keys"]
    keys = known[1][~member(known[1], part["removed"])]
    return union(keys, part["added"])


def small_part(part, share):
    """``part`` if it may travel now, else its count (``held``: it stays on the worker)."""
    if part["overflow"] or share is None or part["size"] <= share:
        return part
    return {
        "count": part["count"],
        "overflow": False,
        "size": part["size"],
        "held": True,
        "worker": part.get("worker"),
    }


def _worker_address():
    from distributed import get_worker

    try:
        return [get_worker().address]
    except ValueError:  # pragma: no cover - not in a worker
        return None
