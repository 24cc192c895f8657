"""The array namespace of LMNN's block functions: NumPy by default, any array-API library.

The block functions (:mod:`.full_check`, :mod:`.stream`, :mod:`.data`) are written
against the Python array API standard: they take their namespace from the data
(``namespace(data.X)``), so that the same code runs on NumPy arrays (the default, in
this process or on Dask workers) and on PyTorch or CuPy arrays, on the CPU or a GPU
(:mod:`.device`). Non-NumPy arrays go through ``array-api-compat`` (``pip install
'convexmetric[gpu]'``), imported only when such arrays are met.

Two kernels keep a NumPy-only form where NumPy offers more than the standard: the
pair search of a full check writes into reused buffers (``out=``; a fresh
``block_rows × n`` array costs its page faults each time) and compares by groups of
rows, and the push term of the streamed gradient goes through one sparse matrix per
chunk. On other namespaces they are the plain standard operations (a GPU has no page
faults to save and no sparse product to win). Both forms compute the same candidate
pairs and the same sums; the tests hold one against the other
(``tests/test_lmnn_array_api.py``).
"""

from __future__ import annotations

import numpy as np

from ...linalg import row_distances as _np_row_distances
from ...linalg import target_distances as _np_target_distances
from ...neighbors import mask_padding as _np_mask_padding


def namespace(x):
    """The array namespace of ``x``: :mod:`numpy` itself for NumPy arrays, else the
    ``array-api-compat`` namespace (a clear error naming the package if it is missing)."""
    if isinstance(x, np.ndarray):
        return np
    try:
        import array_api_compat
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"LMNN's block functions got a {type(x).__module__}.{type(x).__name__} array; "
            "arrays other than NumPy's need the package 'array-api-compat' "
            "(pip install 'convexmetric[gpu]')."
        ) from None
    return array_api_compat.array_namespace(x)


def is_numpy(xp):
    """True for :mod:`numpy` itself (the namespace with the NumPy-only kernels)."""
    return xp is np


def device_of(x):
    """The device ``x`` lives on (``"cpu"`` for NumPy arrays)."""
    if isinstance(x, np.ndarray):
        return "cpu"
    import array_api_compat

    return array_api_compat.device(x)


def to_device(a, like):
    """``a`` (NumPy or a Python scalar array) as an array of ``like``'s namespace and
    device; NumPy arrays stay what they are when ``like`` is NumPy."""
    xp = namespace(like)
    if is_numpy(xp):
        return np.asarray(a)
    return xp.asarray(np.ascontiguousarray(a), device=device_of(like))


def like_input(Z, X):
    """``Z`` (a NumPy result) in the array namespace and on the device of the input
    ``X``: NumPy for NumPy arrays, lists and frames, else ``X``'s library (array-API
    arrays: ``__array_namespace__``, PyTorch and CuPy through ``array-api-compat``)."""
    if isinstance(X, np.ndarray):
        return Z
    if not (hasattr(X, "__array_namespace__") or type(X).__module__.startswith(("torch", "cupy"))):
        return Z
    return to_device(Z, X)


def to_numpy(a):
    """``a`` as a NumPy array on the host (a copy from a device; NumPy arrays as they are)."""
    if isinstance(a, np.ndarray):
        return a
    mod = type(a).__module__
    if mod.startswith("torch"):
        return a.detach().cpu().numpy()
    if mod.startswith("cupy"):
        return a.get()
    try:
        return np.from_dlpack(a)  # any array the host can read
    except (TypeError, ValueError, RuntimeError, BufferError):
        return np.asarray(a)


def take(xp, a, idx):
    """Rows ``idx`` of ``a`` (``a[idx]``; ``take`` along axis 0 where indexing by an
    integer array is not in the namespace)."""
    if is_numpy(xp):
        return a[idx]
    return xp.take(a, idx, axis=0)


def row_distances(xp, Z, a, b, ws=None):
    """``‖z_a − z_b‖²`` for the pairs ``(a_t, b_t)`` (NumPy: the chunked kernel of
    :func:`convexmetric.linalg.row_distances`, the same values as the active list's, its
    buffers the workspace ``ws``'s if given)."""
    if is_numpy(xp):
        return _np_row_distances(Z, a, b, scratch=None if ws is None else ws.scratch)
    D = take(xp, Z, a) - take(xp, Z, b)
    return xp.sum(D * D, axis=1)


def target_distances(xp, Z, T):
    """``D[i, s] = ‖z_i − z_{T[i, s]}‖²`` (n × k)."""
    if is_numpy(xp):
        return _np_target_distances(Z, T)
    cols = []
    for s in range(T.shape[1]):
        D = take(xp, Z, T[:, s]) - Z
        cols.append(xp.sum(D * D, axis=1))
    return xp.stack(cols, axis=1)


def mask_padding(xp, Dt, T, rows=None):
    """``Dt`` (target distances of the rows ``rows``, default all, whose targets are
    ``T``) with ``−inf`` on the padded slots ``T[r, q] == rows[r]`` (no target:
    :func:`convexmetric.neighbors.target_neighbors`). NumPy: in place, untouched when no
    slot is padded."""
    if is_numpy(xp):
        return _np_mask_padding(Dt, T, rows)
    if rows is None:
        rows = xp.arange(T.shape[0], dtype=T.dtype, device=device_of(T))
    pad = T == rows[:, None]
    if not bool(xp.any(pad)):
        return Dt
    return xp.where(pad, xp.full_like(Dt, -float("inf")), Dt)


def argsort_stable(xp, x):
    """Indices that sort ``x``, ties in their order."""
    if is_numpy(xp):
        return np.argsort(x, kind="stable")
    return xp.argsort(x, stable=True)


def astype(xp, x, dtype):
    """``x`` as ``dtype`` (a copy)."""
    return x.astype(dtype) if is_numpy(xp) else xp.astype(x, dtype)


def concat(xp, arrays, axis=0):
    """The arrays joined along ``axis``."""
    return np.concatenate(arrays, axis=axis) if is_numpy(xp) else xp.concat(arrays, axis=axis)


def empty_int(xp, like):
    """An empty int64 index array of ``like``'s namespace and device."""
    if is_numpy(xp):
        return np.empty(0, np.int64)
    return xp.empty(0, dtype=xp.int64, device=device_of(like))
