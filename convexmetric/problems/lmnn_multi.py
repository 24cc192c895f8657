r"""Multi-metric LMNN, §5.2 of Weinberger & Saul (JMLR 2009): one metric per cluster.

With clusters ``g(i) ∈ {0, …, c−1}`` (labels or k-means) and the asymmetric distance
of eq. (16), :math:`\hat D(x_i, x_j) = (x_i - x_j)^\top M^{g(j)} (x_i - x_j)`:

.. math::

    \min_{M^1, …, M^c \succeq 0,\ \xi \ge 0}\ (1-\mu)\sum_{i,\,j\rightsquigarrow i}
    (x_i-x_j)^\top M^{g(j)} (x_i-x_j) + \mu \sum_{i,\,j\rightsquigarrow i,\,l} (1-y_{il})\,\xi_{ijl}

    \text{s.t.}\quad (x_i-x_l)^\top M^{g(l)} (x_i-x_l) - (x_i-x_j)^\top M^{g(j)} (x_i-x_j)
    \ge 1 - \xi_{ijl}.

All metrics are learned jointly by one SDP. The paper writes ``M^{y_j}`` (clusters =
classes, its experiments); with k-means clusters the metric of ``x_j``'s cluster is used.
Impostors ``l`` are still defined by the labels (``y_l ≠ y_i``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..linalg import components_from_metric
from ..lmnn.terms import all_triplets
from ..neighbors import mask_padding
from .common import cp, psd_value, solve_problem


def pull_matrices(X, targets, clusters, n_clusters):
    """``P_g = Σ_{i, j⇝i, g(j)=g} C_ij``, one per cluster: a ``(c, d, d)`` array."""
    _n, k = targets.shape
    U = np.repeat(X, k, axis=0) - X[targets.ravel()]
    gj = clusters[targets.ravel()]
    return np.stack([U[gj == g].T @ U[gj == g] for g in range(n_clusters)])


def hinge_terms(
    Ms,
    X,
    targets,
    y,
    clusters,
    *,
    margin=0.0,
    block_size=512,
    components=None,
    rtol=1e-9,
    pairs=None,
):
    """Hinge terms ``1 + D̂(i, j) − D̂(i, l) > −margin`` at the metrics ``Ms``: ``(I, J, L, H)``.

    Searched cluster by cluster: the points ``l`` of cluster ``g`` against every query
    ``i`` of another label under ``M^g``, in blocks of ``block_size`` consecutive rows
    (memory ``O(block · n_g)``). Candidates come from one product per block with widened
    radii (:func:`_augmented`: a superset), and their values are recomputed from
    differences.
    A cluster of one label (clusters = classes) leaves the queries of its label out.
    ``pairs``: the :func:`target_pairs` of ``(X, targets, clusters)``, if kept.
    """
    Ls = [components_from_metric(M) for M in Ms] if components is None else components
    n = targets.shape[0]
    tp = target_pairs(X, targets, clusters, len(Ls)) if pairs is None else pairs
    Dt = mask_padding(_target_distances(Ls, tp, n), targets)
    radius = Dt.max(axis=1) + 1.0 + margin
    cols = np.cumsum([0] + [len(Lg) for Lg in Ls])
    W = np.concatenate(Ls).T
    Zall = X @ W  # every cluster's projection in one product
    Zc = Zall - tp.mean @ W  # centred: the candidates' products lose less
    out = [[], [], [], []]
    for g, idx in enumerate(tp.members):
        if len(idx) == 0:
            continue
        Z = Zall[:, cols[g] : cols[g + 1]]
        one = bool(np.all(y[idx] == y[idx[0]]))
        rows = np.flatnonzero(y != y[idx[0]]) if one else np.arange(n)
        A, B, half = _augmented(Zc[:, cols[g] : cols[g + 1]], rows, idx, radius, rtol)
        for s in range(0, len(rows), block_size):
            e = min(s + block_size, len(rows))
            hits = np.flatnonzero(A[s:e] @ B.T > half[s:e, None])
            I, L = rows[hits // len(idx) + s], idx[hits % len(idx)]
            if not one:
                I, L = I[y[I] != y[L]], L[y[I] != y[L]]
            dd = Z[I] - Z[L]
            H = 1.0 + Dt[I] - np.einsum("ij,ij->i", dd, dd)[:, None]
            p, q = np.nonzero(H > -margin)
            for lst, v in zip(out, (I[p], targets[I[p], q], L[p], H[p, q])):
                lst.append(v)
    if not out[0]:
        e = np.empty(0, np.int64)
        return e, e, e, np.empty(0)
    return tuple(np.concatenate(v) for v in out)


@dataclass
class TargetPairs:
    """What :func:`hinge_terms` needs of the data alone: every cluster's members, and the
    target differences grouped by the target's cluster (``order``, block ``ends``)."""

    members: list
    diff: np.ndarray
    order: np.ndarray
    ends: np.ndarray
    mean: np.ndarray  #: the points' mean (the search centres every projection by it)


def target_pairs(X, targets, clusters, n_clusters):
    """The :class:`TargetPairs` of a problem (independent of the metrics: keep it)."""
    k = targets.shape[1]
    gt = clusters[targets].ravel()
    order = np.argsort(gt, kind="stable")
    ends = np.searchsorted(gt[order], np.arange(n_clusters + 1))
    diff = X[order // k] - X[targets.ravel()[order]]
    members = [np.flatnonzero(clusters == g) for g in range(n_clusters)]
    return TargetPairs(members, diff, order, ends, X.mean(axis=0))


def _target_distances(Ls, tp, n):
    """``D̂(i, j)`` for every target ``j`` of every ``i``: an ``(n, k)`` array, from the
    differences (grouped by the target's cluster) times ``L_{g(j)}ᵀ``."""
    Dt = np.empty(len(tp.order))
    for g, Lg in enumerate(Ls):
        Zd = tp.diff[tp.ends[g] : tp.ends[g + 1]] @ Lg.T
        Dt[tp.order[tp.ends[g] : tp.ends[g + 1]]] = np.einsum("ij,ij->i", Zd, Zd)
    return Dt.reshape(n, -1)


def _augmented(Z, rows, cols, radius, rtol):
    """``A``, ``B`` with ``A_i·B_l = −‖z_i − z_l‖²/2`` for ``i ∈ rows``, ``l ∈ cols``
    (``A_i = [z_i, 1, −‖z_i‖²/2]``, ``B_l = [z_l, −‖z_l‖²/2, 1]``, ``z`` centred), and
    the thresholds ``−r'_i/2``: the radius widened by ``rtol`` (relative) and by a bound
    on the product's rounding (absolute: ``Σ_k |A_ik B_lk| ≤ 2 max ‖z‖²``).

    Double precision: a metric in the original coordinates of nearly constant features
    has eigenvalues of 10⁶ and more (digits), where a float32 product cancels whole radii."""
    sq = np.einsum("ij,ij->i", Z, Z)
    r = Z.shape[1]
    A = np.empty((len(rows), r + 2))
    A[:, :r], A[:, r], A[:, r + 1] = Z[rows], 1.0, -0.5 * sq[rows]
    B = np.empty((len(cols), r + 2))
    B[:, :r], B[:, r], B[:, r + 1] = Z[cols], -0.5 * sq[cols], 1.0
    rounding = 4 * (r + 2) * np.finfo(float).eps * (1.0 + float(sq.max(initial=0.0)))
    return A, B, -0.5 * (radius[rows] * (1 + rtol) + rounding)


def objective(Ms, X, targets, y, clusters, mu):
    """The multi-metric objective at ``Ms`` (a sequence of ``c`` PSD matrices), in numpy."""
    P = pull_matrices(X, targets, clusters, len(Ms))
    pull = float(sum(np.sum(P[g] * Ms[g]) for g in range(len(Ms))))
    _, _, _, h = hinge_terms(Ms, X, targets, y, clusters)
    return (1.0 - mu) * pull + mu * float(h.sum())


def build(X, targets, mu, clusters, n_clusters, triplets):
    """The multi-metric SDP restricted to ``triplets``; returns ``(problem, Ms, slack)``."""
    I, J, L = triplets
    d = X.shape[1]
    Ms = [cp.Variable((d, d), PSD=True, name=f"M{g}") for g in range(n_clusters)]
    P = pull_matrices(X, targets, clusters, n_clusters)
    pull = (1.0 - mu) * sum(cp.sum(cp.multiply(P[g], Ms[g])) for g in range(n_clusters))
    if len(I) == 0:
        return cp.Problem(cp.Minimize(pull)), Ms, None
    U, V = X[I] - X[J], X[I] - X[L]
    A_j = (U[:, :, None] * U[:, None, :]).reshape(len(I), d * d)  # vec(C_ij), symmetric
    A_l = (V[:, :, None] * V[:, None, :]).reshape(len(I), d * d)
    gj, gl = clusters[J], clusters[L]
    lhs = 0
    for g in range(n_clusters):
        A = A_l * (gl == g)[:, None] - A_j * (gj == g)[:, None]
        if np.any(A):
            lhs = lhs + A @ cp.vec(Ms[g], order="F")
    slack = cp.Variable(len(I), nonneg=True, name="slack")
    problem = cp.Problem(cp.Minimize(pull + mu * cp.sum(slack)), [lhs >= 1 - slack])
    return problem, Ms, slack


def solve(X, y, targets, mu, clusters, n_clusters=None, *, solver="CLARABEL", **solver_opts):
    """Solve the multi-metric SDP exactly over all hinge terms.

    Returns ``(Ms, value, status, seconds)``; ``Ms`` is a ``(c, d, d)`` array.

    >>> X = np.array([[0.], [1.], [3.], [4.]]); y = np.array([0, 0, 1, 1])
    >>> Ms, value, status, _ = solve(X, y, np.array([[1], [0], [3], [2]]), 0.5, y)
    >>> status, round(value, 6)
    ('optimal', 0.666667)
    """
    n_clusters = int(clusters.max()) + 1 if n_clusters is None else n_clusters
    problem, Ms, _ = build(X, targets, mu, clusters, n_clusters, all_triplets(y, targets))
    status, seconds = solve_problem(problem, solver, **solver_opts)
    out = np.stack([psd_value(M) for M in Ms])
    return out, float(problem.value), status, seconds
