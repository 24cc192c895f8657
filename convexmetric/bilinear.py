"""Bilinear similarity ``S_W(q, p) = qᵀ W p``: triplet streams from labels and scoring.

``W`` is m×n: queries live in ℝᵐ, objects in ℝⁿ (they may differ). Inputs may be dense
arrays or scipy.sparse matrices (one row per item); scoring a sparse pair costs
O(k_q·k_p) through the products ``Q W`` computed by scipy.

A triplet ``(q, p⁺, p⁻)`` asks for ``S_W(q, p⁺) ≥ S_W(q, p⁻) + 1`` (Crammer &
Chechik 2012, eq. 1); its hinge is ``max(0, 1 − qᵀ W (p⁺ − p⁻))`` (eq. 2).

>>> import numpy as np
>>> T = sample_triplets([0, 0, 1, 1], 3, random_state=0)
>>> T.shape
(3, 3)
>>> bool(np.all(np.array([0, 0, 1, 1])[T[:, 0]] == np.array([0, 0, 1, 1])[T[:, 1]]))
True
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._input_checks import check_scalar

__all__ = [
    "hinge_losses",
    "rank",
    "sample_triplets",
    "score_pairs",
    "similarity",
    "triplet_differences",
    "triplet_margins",
]


def sample_triplets(y, n_triplets, *, random_state=None):
    """A seeded stream of ``(query, positive, negative)`` index triplets from labels.

    The query is drawn uniformly among items whose class has another member and does
    not hold every item; the positive uniformly among the *other* members of its
    class; the negative uniformly among the items of the other classes (the sampling
    of OASIS and AROMA §5).

    Parameters
    ----------
    y : array-like of shape (N,)
        Class labels.
    n_triplets : int
        Number of triplets to draw.
    random_state : int, Generator or None

    Returns
    -------
    ndarray of shape (n_triplets, 3), int64
    """
    n_triplets = check_scalar(n_triplets, "n_triplets", int, min_val=0)
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"'y' must be a 1-dimensional array of labels; got shape {y.shape}.")
    rng = np.random.default_rng(random_state)
    order = np.argsort(y, kind="stable")
    _, start, size = np.unique(y[order], return_index=True, return_counts=True)
    cls = np.empty(len(y), dtype=np.int64)
    cls[order] = np.repeat(np.arange(len(size)), size)
    eligible = np.flatnonzero((size[cls] >= 2) & (size[cls] < len(y)))
    if eligible.size == 0:
        raise ValueError(
            "'y' admits no triplet: some class needs two members and another class one."
        )
    pos_in_class = np.empty(len(y), dtype=np.int64)
    pos_in_class[order] = np.arange(len(y)) - np.repeat(start, size)
    q = eligible[rng.integers(0, eligible.size, n_triplets)]
    c = cls[q]
    j = rng.integers(0, size[c] - 1)  # among the other members: skip the query itself
    j = j + (j >= pos_in_class[q])
    pos = order[start[c] + j]
    k = rng.integers(0, len(y) - size[c])  # among the other classes
    k = np.where(k < start[c], k, k + size[c])
    neg = order[k]
    return np.column_stack([q, pos, neg]).astype(np.int64)


def _rows(A):
    return sp.csr_matrix(A, dtype=float) if sp.issparse(A) else np.asarray(A, dtype=float)


def triplet_differences(Q, P, triplets):
    """``(Q[t_q], P[t_pos] − P[t_neg])`` for index triplets (CSR stays CSR)."""
    Q, P = _rows(Q), _rows(P)
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    return Q[t[:, 0]], P[t[:, 1]] - P[t[:, 2]]


def score_pairs(W, Q, P):
    """Row-wise scores ``q_iᵀ W p_i`` for paired rows of ``Q`` and ``P``."""
    Q, P = _rows(Q), _rows(P)
    QW = Q @ W
    if sp.issparse(P):
        return np.asarray(P.multiply(QW).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", np.asarray(QW), P)


def triplet_margins(W, Q, P, triplets):
    """``q_tᵀ W (p⁺_t − p⁻_t)`` for every index triplet ``t``."""
    Qt, Dt = triplet_differences(Q, P, triplets)
    return score_pairs(W, Qt, Dt)


def hinge_losses(W, Q, P, triplets):
    """``max(0, 1 − q_tᵀ W (p⁺_t − p⁻_t))`` for every index triplet (eq. 2)."""
    return np.maximum(0.0, 1.0 - triplet_margins(W, Q, P, triplets))


def similarity(W, Q, P=None):
    """The dense score matrix ``Q W Pᵀ`` (``P = Q`` by default)."""
    Q = _rows(Q)
    P = Q if P is None else _rows(P)
    QW = np.asarray(Q @ W)
    return np.asarray((P @ QW.T).T if sp.issparse(P) else QW @ P.T)


def rank(W, query, candidates):
    """Indices of ``candidates`` sorted by decreasing ``queryᵀ W p`` (ties: lower index first)."""
    query = _rows(query)
    if not sp.issparse(query) and query.ndim == 1:
        query = query[None, :]
    scores = similarity(W, query, candidates)[0]
    return np.argsort(-scores, kind="stable")
