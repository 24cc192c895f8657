"""Target neighbours, blocked impostor search and kNN classification for LMNN.

Assumptions: inputs are finite float arrays already validated at the boundary;
distances are squared Euclidean distances between rows of a (possibly transformed)
data matrix ``Z = X Lᵀ``, so ``‖z_i − z_j‖² = (x_i − x_j)ᵀ M (x_i − x_j)`` with
``M = LᵀL``. No function here forms an n×n matrix for large n: distances are computed
``block_size`` rows at a time.
"""

from __future__ import annotations

import numpy as np

from ._input_checks import check_indices
from .linalg import in_lanes

DEFAULT_BLOCK = 512


def sqdist(A, B, A2=None, B2=None):
    """Squared Euclidean distances between rows of A and rows of B (clipped at 0)."""
    A2 = np.einsum("ij,ij->i", A, A) if A2 is None else A2
    B2 = np.einsum("ij,ij->i", B, B) if B2 is None else B2
    D = A2[:, None] + B2[None, :] - 2.0 * (A @ B.T)
    np.maximum(D, 0.0, out=D)
    return D


def target_neighbors(X, y, k, *, block_size=DEFAULT_BLOCK, screen=None, threads=1):
    """The ``k`` nearest same-class points of every row of ``X`` (Euclidean).

    Exact: a float32 screen and a double-precision decision from the differences (see
    ``_class_targets``), so the result does not depend on the BLAS or the device. Ties
    are broken by index, nearest first.

    **Padding.** A point of a class with ``m ≤ k`` members has the ``m − 1`` others as
    targets, and its last ``k − m + 1`` slots *pad* the row with the point itself (a
    class of one point: the whole row; it has no target, and is an impostor ``l`` for
    the points of the other classes all the same). Every
    ``(n, k)`` target array of LMNN may hold ``targets[i, q] = i``: that slot is no
    target. Its pull term ``‖x_i − x_i‖²`` is zero by itself; its hinge terms must never
    be counted, so wherever a target distance enters a hinge argument ``1 + D(i, j) −
    D(i, l)`` (or a radius ``max_j D(i, j) + 1``) the padded slot's distance is ``−inf``
    (``mask_padding``): no triplet ``(i, i, l)`` exists.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The points (finite).
    y : ndarray of shape (n_samples,)
        Class labels (a class of one member gets no target: its row is padding).
    k : int
        Target neighbours per point.
    block_size : int, default=512
        Rows per block of the screen.
    screen : callable, optional
        The float32 screen (default: on the host); ``LMNN(device=...)`` passes its
        device's (``DeviceExecutor.screen_targets``).
    threads : int, default=1
        Threads sharing the host screen's blocks (the same targets: each block is
        decided exactly, in double precision).

    Returns
    -------
    ndarray of shape (n_samples, k)
        The targets' row indices, nearest first (padded rows as above).

    Examples
    --------
    >>> X = np.array([[0.], [1.], [3.], [10.], [11.], [13.]]); y = np.array([0, 0, 0, 1, 1, 1])
    >>> target_neighbors(X, y, 1).ravel().tolist()
    [1, 0, 1, 4, 3, 4]
    >>> target_neighbors(X[:5], y[:5], 2).tolist()  # class 1 has two members: one target
    [[1, 2], [0, 2], [1, 0], [4, 3], [3, 4]]
    >>> target_neighbors(X[:4], y[:4], 2).tolist()  # class 1 has one member: no target
    [[1, 2], [0, 2], [1, 0], [3, 3]]
    """
    n = X.shape[0]
    out = np.empty((n, k), dtype=np.int64)
    X = at_unit_scale(X)  # the same order of distances, and a float32 screen that holds them
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        kc = min(k, len(idx) - 1)
        out[idx, kc:] = idx[:, None]  # padding: the point itself (no target)
        if kc:  # a class of one point: its row is all padding
            out[idx, :kc] = idx[_class_targets(X[idx], kc, block_size, screen, threads)]
    return out


def unit_scale(X):
    """A power of two ``s`` with ``X·s`` of spread (largest centred entry) in ``[1, 2)``:
    exact, so distances keep their order and every formulation of the LMNN family its
    solutions up to ``M ↦ M·s²`` (eq. (14) is scale-covariant); 1 for constant data."""
    spread = float(np.abs(X - X.mean(axis=0)).max(initial=0.0)) if X.size else 0.0
    if not np.isfinite(spread) or spread == 0.0:
        return 1.0
    return float(2.0 ** -np.floor(np.log2(spread)))


def at_unit_scale(X):
    """``X·unit_scale(X)`` when the spread is far from 1 (outside ``[2⁻²⁰, 2²⁰]``), else
    ``X`` itself."""
    s = unit_scale(X)
    return X * s if not (2.0**-20 <= s <= 2.0**20) else X


#: the float32 rounding unit
_U32 = 2.0**-24


def _class_targets(Xc, k, block_size, screen=None, threads=1):
    """The ``k`` nearest other rows of ``Xc`` (one class), nearest first, ties by index.

    Exact, in two steps per block of rows. **Screen** (:func:`_screen_block`, or a
    device's ``screen``): one float32 GEMM of the centred rows gives ``v_ab = ‖x̂_b‖² −
    2 x̂_a·x̂_b`` (``‖x_a − x_b‖²`` less a per-row constant), within ``e_ab = (d + 16)·u·
    (‖x_a‖² + ‖x_b‖²)`` of the exact value (``u = 2⁻²⁴``: the coordinates' rounding, the
    dot product's ``γ_d`` and the float32 sums), so every ``b`` among the ``k`` nearest
    has ``v_ab ≤ t_a + 2 max_b e_ab`` for any ``t_a`` at least the ``k``-th smallest
    ``v_ab``. **Decide**: those candidates' distances in double precision from the
    differences, the ``k`` smallest by value, ties by index. The result does not depend on
    the BLAS or the device (their rounding only widens the screen), and duplicate points
    tie exactly."""
    m, d = Xc.shape
    C32 = (Xc - Xc.mean(axis=0)).astype(np.float32)  # distances unchanged, norms smaller
    sq = np.einsum("ij,ij->i", C32, C32, dtype=np.float64)
    band = 2.0 * (d + 16) * _U32 * (sq + sq.max())
    out = np.empty((m, k), dtype=np.int64)
    sq32 = sq.astype(np.float32)
    if screen is not None:  # a device's screen, block after block
        for s, e, rr, cc in screen(C32, sq32, band, k, block_size):
            out[s:e] = cc[_k_exact(Xc, rr, cc, s, e - s, k)]
        return out

    def block(s, e):
        rr, cc = _screen_block(C32, sq32, band, k, s, e)
        out[s:e] = cc[_k_exact(Xc, rr, cc, s, e - s, k)]

    in_lanes(m, block_size, threads, block)
    return out


def _screen_block(C32, sq32, band, k, s, e):
    """The screen's candidate pairs ``(s + rr, cc)`` of the rows ``s:e`` (``rr`` sorted)."""
    V = C32[s:e] @ C32.T
    V *= -2.0
    V += sq32
    V[np.arange(e - s), np.arange(s, e)] = np.inf  # a point is not its own target
    t = _kth_bound(V, k).astype(np.float64)
    return np.nonzero(V <= (t + band[s:e]).astype(np.float32)[:, None])


#: columns per group of :func:`_kth_bound`
_GROUP = 8


def _kth_bound(V, k):
    """Per row, an upper bound on the ``k``-th smallest entry of ``V``: the ``k``-th
    smallest of the minima of groups of :data:`_GROUP` columns (``k`` distinct entries are
    at most it; equal to the ``k``-th smallest when those lie in different groups), at an
    eighth of a row-wise partition's work."""
    m = V.shape[1]
    g = m // _GROUP  # group c: the columns c, c + g, c + 2g, ... (contiguous passes)
    if g <= k:
        return np.partition(V, k - 1, axis=1)[:, k - 1]
    mins = V[:, :g].copy()
    for j in range(1, _GROUP):
        np.minimum(mins, V[:, j * g : (j + 1) * g], out=mins)
    if g * _GROUP < m:  # the last columns: one more group
        mins = np.concatenate([mins, V[:, g * _GROUP :].min(axis=1, keepdims=True)], axis=1)
    return np.partition(mins, k - 1, axis=1)[:, k - 1]


def _k_exact(Xc, rr, cc, s, rows, k):
    """Positions in ``(rr, cc)`` (block rows, sorted; columns) of each row's ``k`` nearest
    candidates by double-precision distance from the differences, ties by column."""
    diff = Xc[rr + s] - Xc[cc]
    D = np.einsum("ij,ij->i", diff, diff)
    order = np.lexsort((cc, D, rr))
    counts = np.bincount(rr, minlength=rows)
    starts = np.cumsum(counts) - counts
    return order[starts[:, None] + np.arange(k)]


def check_targets(targets, y_enc, counts):
    """The user's ``targets`` (n × k indices into the points) checked: each row names points
    of its own class, at least one unless its class has one member (a slot naming the point
    itself is padding, :func:`padding`), none twice; ValueError naming 'targets' else."""
    T = check_indices(targets, len(y_enc), "targets")
    if T.ndim != 2 or T.shape[0] != len(y_enc):
        raise ValueError(f"'targets' must have shape (n_samples, k); got {T.shape}.")
    if np.any(y_enc[T] != y_enc[:, None]):
        raise ValueError("'targets' must name points of the same class as each row.")
    pad = padding(T)  # a row naming its own point: padding, no target (neighbors.py)
    if np.any(pad.all(axis=1) & (counts[y_enc] > 1)):  # (one member: no target to name)
        raise ValueError(
            "'targets' must name at least one target neighbour per row "
            "of a class of two points or more (a slot naming the point "
            "itself is padding)."
        )
    real = np.where(pad, -1 - np.arange(T.shape[1]), T)  # padded slots never collide
    if T.shape[1] > 1 and np.any(np.diff(np.sort(real, axis=1), axis=1) == 0):
        raise ValueError("'targets' must not list a target neighbour twice in one row.")
    return T


def padding(targets, rows=None):
    """The padded slots of ``targets`` (``targets[i, q] == i``, :func:`target_neighbors`):
    an ``(n, k)`` bool array; ``rows``: the row indices of a block ``targets``."""
    rows = np.arange(targets.shape[0]) if rows is None else np.asarray(rows)
    return targets == rows[:, None]


def mask_padding(Dt, targets, rows=None):
    """``Dt`` (target distances of ``targets``' rows) with ``−inf`` on the padded slots,
    in place: they then make no hinge term and no radius (:func:`target_neighbors`)."""
    pad = padding(targets, rows)
    if pad.any():
        Dt[pad] = -np.inf
    return Dt


def target_counts(targets):
    """The number of real target neighbours of every row (padding left out)."""
    return targets.shape[1] - padding(targets).sum(axis=1)


def impostor_pairs(Z, y, radius, *, block_size=DEFAULT_BLOCK, rtol=1e-5):
    """Differently labelled pairs ``(i, l)`` with ``‖z_i − z_l‖² < radius[i]``.

    Returns ``(I, L)``, sorted by ``i``. The search runs class by class in row blocks
    against the other classes (no n×n matrix; memory ``O(block_size · n)``), in single
    precision with the radius widened by ``rtol`` (relative): a superset of the pairs,
    which callers filter after recomputing distances in double precision.
    :func:`impostor_blocks` yields the same pairs block by block.
    """
    blocks = list(impostor_blocks(Z, y, radius, block_size=block_size, rtol=rtol))
    if not blocks:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    I = np.concatenate([b[0] for b in blocks])
    L = np.concatenate([b[1] for b in blocks])
    srt = np.argsort(I, kind="stable")
    return I[srt], L[srt]


def impostor_blocks(Z, y, radius, *, block_size=DEFAULT_BLOCK, rtol=1e-5):
    """Generator of ``(I, L)`` candidate impostor pairs, one row block at a time."""
    n = Z.shape[0]
    order = np.argsort(y, kind="stable")
    Zs = np.ascontiguousarray(Z[order], dtype=np.float32)
    ys = y[order]
    sq = np.einsum("ij,ij->i", Zs, Zs, dtype=np.float64)
    scale = float(sq.max(initial=0.0)) + 1.0
    # one GEMM gives ‖z_l‖² − 2 z_i·z_l directly: rows [−2 z_i, 1] times columns [z_l, ‖z_l‖²]
    left = np.hstack([-2.0 * Zs, np.ones((n, 1), np.float32)])
    right = np.ascontiguousarray(np.hstack([Zs, sq[:, None].astype(np.float32)]).T)
    starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
    ends = np.r_[starts[1:], n]
    for c0, c1 in zip(starts, ends):
        for s in range(c0, c1, block_size):
            e = min(c1, s + block_size)
            G = left[s:e] @ right  # float32 GEMM
            thr = radius[order[s:e]] * (1 + rtol) + rtol * scale - sq[s:e]
            ii, ll = np.nonzero(G < thr[:, None].astype(np.float32))
            other = (ll < c0) | (ll >= c1)  # same class: never an impostor
            if not other.all():
                ii, ll = ii[other], ll[other]
            if len(ii):
                yield order[ii + s], order[ll]


def knn_predict(Z_train, y_train, Z_query, k, *, exclude_self=False, block_size=DEFAULT_BLOCK):
    """kNN labels with the paper's tie rule: on a tie, reduce k until it breaks.

    With ``exclude_self=True`` the query set is the training set and each point's own
    row is left out (leave-one-out).
    """
    classes, y_enc = np.unique(y_train, return_inverse=True)
    n_q = Z_query.shape[0]
    kk = min(k, Z_train.shape[0] - (1 if exclude_self else 0))
    pred = np.empty(n_q, dtype=np.int64)
    sq_t = np.einsum("ij,ij->i", Z_train, Z_train)
    for s in range(0, n_q, block_size):
        e = min(n_q, s + block_size)
        D = sqdist(Z_query[s:e], Z_train, None, sq_t)
        if exclude_self:
            r = np.arange(e - s)
            D[r, r + s] = np.inf
        nn = np.argsort(D, axis=1, kind="stable")[:, :kk]
        labels = y_enc[nn]
        pred[s:e] = [vote(row) for row in labels]
    return classes[pred]


def vote(labels):
    """Majority vote over neighbour labels (nearest first); ties reduce k."""
    for m in range(len(labels), 0, -1):
        counts = np.bincount(labels[:m])
        top = np.flatnonzero(counts == counts.max())
        if len(top) == 1:
            return top[0]
    return labels[0]  # pragma: no cover - m = 1 never ties


def knn_error(Z_train, y_train, Z_test, y_test, k=3):
    """Test error of kNN classification (paper's tie rule)."""
    return float(np.mean(knn_predict(Z_train, y_train, Z_test, k) != np.asarray(y_test)))


def loo_error(Z, y, k=3):
    """Leave-one-out kNN training error."""
    return float(np.mean(knn_predict(Z, y, Z, k, exclude_self=True) != np.asarray(y)))
