"""Evaluation metrics shared by the methods.

kNN error and leave-one-out error live in :mod:`convexmetric.neighbors`; the
ranking and verification metrics of the other papers are collected here (one
function per metric, numpy only).
"""

from __future__ import annotations

import numpy as np

from .neighbors import knn_error, loo_error

__all__ = ["knn_error", "loo_error"]


# --- Retrieval metrics (AROMA §5: every test item as a query against the rest) -------------


def _ranked_relevance(S, y):
    """Relevance (same label) of the other items, ranked by decreasing score per query row."""
    S = np.array(S, dtype=float)
    y = np.asarray(y)
    n = S.shape[0]
    if S.ndim != 2 or S.shape != (n, n) or y.shape != (n,):
        raise ValueError(
            f"'S' must be an n×n score matrix matching 'y' of length n; "
            f"got {S.shape} and {y.shape}."
        )
    if n < 2:
        raise ValueError("retrieval needs at least two items.")
    if not np.all(np.isfinite(S)):
        raise ValueError("'S' contains NaN or inf.")
    np.fill_diagonal(S, -np.inf)  # a query never retrieves itself
    order = np.argsort(-S, axis=1, kind="stable")[:, : n - 1]  # ties: lower index first
    return y[order] == y[:, None]


def precision_at_k(S, y, k):
    """Mean precision at ``k``: the fraction of same-label items among each query's top ``k``.

    Parameters
    ----------
    S : array of shape (n, n)
        Scores ``S[i, j]`` of item ``j`` for query ``i`` (e.g. ``X W Xᵀ``); the diagonal
        is ignored (each item is a query against the rest).
    y : array of shape (n,)
        Labels; an item is relevant to a query when their labels agree.
    k : int or sequence of int
        Cut-off(s), ``1 ≤ k ≤ n − 1``.

    Returns
    -------
    float, or ndarray of the same length as ``k``.

    >>> precision_at_k(np.array([[0, 2, 1], [2, 0, 1], [1, 2, 0.0]]), [0, 0, 1], [1, 2])
    array([0.66666667, 0.33333333])
    """
    rel = _ranked_relevance(S, y)
    ks = np.atleast_1d(np.asarray(k))
    if ks.dtype.kind not in "iu" or ks.min() < 1 or ks.max() > rel.shape[1]:
        raise ValueError(f"'k' must hold integers in [1, {rel.shape[1]}]; got {k!r}.")
    hits = np.cumsum(rel, axis=1)
    out = hits[:, ks - 1].mean(axis=0) / ks
    return float(out[0]) if np.ndim(k) == 0 else out


def mean_average_precision(S, y):
    """Mean over queries of the average precision of the ranking by ``S`` (self excluded).

    Average precision of one query: the mean of the precision at the rank of each
    relevant item. Queries without any relevant item are left out of the mean.

    >>> mean_average_precision(np.array([[0, 2, 1], [2, 0, 1], [1, 2, 0.0]]), [0, 0, 1])
    1.0
    """
    rel = _ranked_relevance(S, y)
    n_rel = rel.sum(axis=1)
    prec = np.cumsum(rel, axis=1) / np.arange(1, rel.shape[1] + 1)
    keep = n_rel > 0
    if not keep.any():
        raise ValueError("no query has a relevant item: 'y' needs a class with two members.")
    ap = (prec * rel).sum(axis=1)[keep] / n_rel[keep]
    return float(ap.mean())


__all__ += ["mean_average_precision", "precision_at_k"]


# --- Verification and transfer metrics (Maurer 2008, §5.1 and §6.1) --------------------------


def _dist_r(dist2, r):
    dist2 = np.asarray(dist2, dtype=float).ravel()
    r = np.asarray(r, dtype=float).ravel()
    if dist2.shape != r.shape or not np.all(np.isin(r, (-1.0, 1.0))):
        raise ValueError("'dist2' and 'r' must have the same length, with r in {-1, +1}.")
    if not np.all(np.isfinite(dist2)):
        raise ValueError("'dist2' contains NaN or inf.")
    return dist2, r


def pair_risk(dist2, r):
    """Empirical 0–1 risk ``R̂(T)``: the fraction of pairs with ``r(1 − ‖T(x − x')‖²) ≤ 0``.

    A distance of exactly 1 ("undecided") counts as an error (Definition 1).

    >>> pair_risk([0.5, 2.0, 1.0, 0.2], [1, -1, 1, -1])
    0.5
    """
    dist2, r = _dist_r(dist2, r)
    return float(np.mean(r * (1.0 - dist2) <= 0))


def balanced_pair_error(dist2, r):
    """Balanced error of the elementary verifier (§5.1): the mean of the false-rejection
    rate on similar pairs (``‖T(x−x')‖ ≥ 1``) and the false-acceptance rate on dissimilar
    pairs (``‖T(x−x')‖ ≤ 1``).

    >>> balanced_pair_error([0.5, 2.0, 1.5, 0.2], [1, -1, 1, -1])
    0.5
    """
    dist2, r = _dist_r(dist2, r)
    sim, dis = r > 0, r < 0
    if not sim.any() or not dis.any():
        raise ValueError("'r' must hold both similar (+1) and dissimilar (-1) pairs.")
    return float(0.5 * np.mean(dist2[sim] >= 1.0) + 0.5 * np.mean(dist2[dis] <= 1.0))


def distance_roc_auc(Z, y):
    """ROC area of the distance as a detector of class equality over all pairs ``i < j``:
    the probability that a same-class pair is closer than a different-class pair (ties ½).

    >>> distance_roc_auc(np.array([[0.0], [0.1], [5.0], [5.2]]), [0, 0, 1, 1])
    1.0
    """
    from scipy.stats import rankdata

    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y)
    iu, ju = np.triu_indices(len(y), 1)
    sq = np.einsum("ij,ij->i", Z, Z)
    d = (sq[:, None] + sq[None, :] - 2.0 * Z @ Z.T)[iu, ju]
    same = y[iu] == y[ju]
    n_pos, n_neg = int(same.sum()), int((~same).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("'y' must give both same-class and different-class pairs.")
    ranks = rankdata(-d)  # the closer, the higher the score
    return float((ranks[same].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def one_shot_error(Z, y, *, n_draws=100, random_state=None):
    """Error of 1-NN with a single random prototype per class (§6.1, item 3).

    Each draw picks one prototype per class, classifies every other row by its nearest
    prototype, and the error rates are averaged over ``n_draws`` draws.

    >>> one_shot_error(np.array([[0.0], [0.1], [5.0], [5.2]]), [0, 0, 1, 1], n_draws=5)
    0.0
    """
    Z = np.asarray(Z, dtype=float)
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    counts = np.bincount(codes)
    if len(classes) < 2 or counts.min() < 2:
        raise ValueError("'y' needs at least 2 classes with at least 2 members each.")
    rng = np.random.default_rng(random_state)
    members = [np.flatnonzero(codes == c) for c in range(len(classes))]
    errors = []
    for _ in range(n_draws):
        proto = np.array([rng.choice(mem) for mem in members])
        rest = np.setdiff1d(np.arange(len(codes)), proto)
        P = Z[proto]
        D = (Z[rest] ** 2).sum(1)[:, None] + (P**2).sum(1)[None, :] - 2 * Z[rest] @ P.T
        errors.append(np.mean(np.argmin(D, axis=1) != codes[rest]))
    return float(np.mean(errors))


def sparsity(singular_values, rel=0.02):
    """Maurer's "sparsity" of T: the number of singular values above ``rel`` (2%) of the largest.

    >>> sparsity([10.0, 1.0, 0.1])
    2
    """
    s = np.abs(np.asarray(singular_values, dtype=float))
    return int(np.sum(s > rel * s.max())) if s.size else 0


__all__ += [
    "balanced_pair_error",
    "distance_roc_auc",
    "one_shot_error",
    "pair_risk",
    "sparsity",
]


# --- partial order embedding (McFee & Lanckriet 2011, App. C) ------------------------------
def gauc(Z, comparisons):
    """Generalised AUC, eq. (18): the fraction of comparisons ``(i, j, k, l)`` with
    ``‖g(x_i) − g(x_j)‖ < ‖g(x_k) − g(x_l)‖`` (ties count as errors).

    Parameters
    ----------
    Z : ndarray of shape (n, d)
        Embedded items (row ``t`` is ``g(x_t)``).
    comparisons : Comparisons or array of shape (m, 4)

    >>> import numpy as np
    >>> gauc(np.array([[0.0], [1.0], [3.0]]), np.array([[0, 1, 0, 2], [0, 2, 0, 1]]))
    0.5
    """
    from .comparisons import check_comparisons

    Z = np.asarray(Z, dtype=float)
    if Z.ndim == 1:
        Z = Z[:, None]
    C = check_comparisons(comparisons, Z.shape[0], owner="gauc")
    left = ((Z[C.i] - Z[C.j]) ** 2).sum(1)
    right = ((Z[C.k] - Z[C.l]) ** 2).sum(1)
    return float(np.mean(left < right))


__all__ += ["gauc"]
