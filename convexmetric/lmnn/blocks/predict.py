"""kNN and energy prediction (eq. 15) by blocks of test rows, through an executor.

In this process one call covers all rows; on a Dask cluster
(:class:`~convexmetric.lmnn.blocks.dask_executor.DaskExecutor`) the training side goes to the
workers' stores once and each block of test rows travels with its task.
"""

from __future__ import annotations

import numpy as np

from ..constants import PREDICT_ROWS


def predict_blocks(fn, data, Q, executor=None, rows=None, **kwargs):
    """``fn(Q, data, **kwargs)`` by blocks of ``rows`` (default :data:`PREDICT_ROWS`)
    test rows, results concatenated.

    ``executor=None`` calls ``fn`` once on all rows in this process; a
    :class:`~convexmetric.lmnn.blocks.dask_executor.DaskExecutor` sends ``data`` (the training
    side) to the workers' stores once and maps ``fn`` over the blocks, each travelling
    with its task. ``Q`` may be a tuple of arrays with the same rows (cut together)."""
    if executor is None:
        return fn(Q, data, **kwargs)
    rows = PREDICT_ROWS if rows is None else rows
    m = len(Q[0]) if isinstance(Q, tuple) else len(Q)
    cut = (
        (lambda s: tuple(None if a is None else a[s : s + rows] for a in Q))
        if isinstance(Q, tuple)
        else (lambda s: Q[s : s + rows])
    )
    handle = executor.scatter(data)
    try:
        parts = executor.map_chunks(fn, [cut(s) for s in range(0, m, rows)], handle, **kwargs)
    finally:
        executor.close(handle)
    return np.concatenate(parts) if parts else fn(cut(0), data, **kwargs)


def knn_chunk(Z, data, k):
    """kNN labels (encoded) of the rows ``Z``; ``data = (Z_train, y_train)``."""
    from ...neighbors import knn_predict

    return knn_predict(data[0], data[1], Z, k)


def energy_chunk(Q, data):
    """Energy-based labels (eq. 15) of the test rows ``Q = (X, test_clusters)``;
    ``data``: the keyword arguments of :func:`~convexmetric.energy.energy_predict`
    without ``X_test`` and ``test_clusters``."""
    from ..energy import energy_predict

    X, tc = Q
    return energy_predict(X_test=X, test_clusters=tc, **data)
