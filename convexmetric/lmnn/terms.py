r"""LMNN's eq. (14) in numpy (Weinberger & Saul, JMLR 2009): its hinge terms, pull matrix
and objective, without an ``n × n`` matrix.

.. math::

    ε(M) = (1-μ)\sum_{i,\,j\rightsquigarrow i} (x_i-x_j)^\top M (x_i-x_j)
    + μ \sum_{i,\,j\rightsquigarrow i,\,l} (1-y_{il})\,[1 + d_M(x_i, x_j) - d_M(x_i, x_l)]_+

A *triplet* ``(i, j, l)`` is one hinge term: ``j`` a target neighbour of ``i`` and ``l``
any point of another class. The solvers (:mod:`.active_list`, :mod:`.blocks`, the
certificates) and the CVXPY formulation :mod:`convexmetric.problems.lmnn` share these
functions; that module holds the problem as a conic program.
"""

from __future__ import annotations

import numpy as np

from ..linalg import components_from_metric
from ..neighbors import impostor_blocks, mask_padding


def all_triplets(y, targets):
    """Every hinge term ``(i, j, l)``: ``j`` a target of ``i``, ``y_l ≠ y_i``.

    Returns three int arrays ``I, J, L``. Their number is ``Σ_i k_i·#{l : y_l ≠ y_i}``
    with ``k_i`` the targets of ``i`` (30,318 on the standard wine split with k = 3). A
    slot naming ``i`` itself is padding, no target
    (:func:`convexmetric.neighbors.target_neighbors`).
    """
    n, _k = targets.shape
    I_list, J_list, L_list = [], [], []
    for i in range(n):
        others = np.flatnonzero(y != y[i])
        for j in targets[i][targets[i] != i]:
            I_list.append(np.full(len(others), i))
            J_list.append(np.full(len(others), j))
            L_list.append(others)
    if not I_list:
        e = np.empty(0, np.int64)
        return e, e, e
    return (np.concatenate(I_list), np.concatenate(J_list), np.concatenate(L_list))


def pull_matrix(X, targets):
    """``Σ_{i, j⇝i} C_ij`` with ``C_ij = (x_i − x_j)(x_i − x_j)ᵀ`` (a padded slot,
    ``j = i``, adds ``C_ii = 0``)."""
    _n, k = targets.shape
    U = np.repeat(X, k, axis=0) - X[targets.ravel()]
    return U.T @ U


class TooManyTerms(RuntimeError):
    """More positive hinge terms than ``max_terms``: the metric has collapsed there."""


def hinge_terms(
    M, X, targets, y, *, block_size=512, components=None, margin=0.0, search=None, max_terms=None
):
    """The positive hinge terms of eq. (14) at ``M``: ``(I, J, L, values)``.

    With ``margin > 0`` the terms with ``1 + d(i, j) − d(i, l) > −margin`` are
    returned (their values may then be negative).

    Candidates are found by a blocked search under ``M`` (no n×n matrix), then every
    value is recomputed from the differences ``z_i − z_j`` for accuracy. ``components``
    (``L`` with ``M = LᵀL``) may be passed instead of ``M``. ``search`` chooses the
    candidate search: ``None``/``"brute"`` (blocked), ``"balltree"``/``"kdtree"`` (one
    tree per class, :mod:`convexmetric.lmnn.balltree`), or a callable
    ``search(Z, y, radius, block_size=...) -> (I, L)``; all give the same terms.
    """
    Lc = components_from_metric(M) if components is None else components
    Z = X @ Lc.T
    diff = Z[:, None, :] - Z[targets]
    Dt = mask_padding(np.einsum("ijk,ijk->ij", diff, diff), targets)
    radius = Dt.max(axis=1) + 1.0 + margin
    if search is None or search == "brute":
        # filter block by block: candidates never pile up (memory ~ the terms kept)
        chunks = impostor_blocks(Z, y, radius, block_size=block_size)
    else:
        if isinstance(search, str):
            from .balltree import impostor_pairs_tree

            I, L = impostor_pairs_tree(Z, y, radius, tree=search)
        else:
            I, L = search(Z, y, radius, block_size=block_size)
        step = 1 << 20
        chunks = ((I[s : s + step], L[s : s + step]) for s in range(0, len(I), step))
    out_I, out_J, out_L, out_H = [], [], [], []
    count = 0
    for Ic, Lc_ in chunks:
        if max_terms is not None and count + len(Ic) > max_terms:
            raise TooManyTerms(f"more than {max_terms} candidate hinge terms")
        dil = np.empty(len(Ic))
        for s in range(0, len(Ic), 1 << 17):  # bounded temporaries (a collapsed block)
            diff = Z[Ic[s : s + (1 << 17)]] - Z[Lc_[s : s + (1 << 17)]]
            dil[s : s + (1 << 17)] = np.einsum("ij,ij->i", diff, diff)
        H = 1.0 + Dt[Ic] - dil[:, None]  # (pairs, k), exact in double precision
        p, q = np.nonzero(H > -margin)
        out_I.append(Ic[p])
        out_J.append(targets[Ic[p], q])
        out_L.append(Lc_[p])
        out_H.append(H[p, q])
        count += len(p)
    if not out_I:
        e = np.empty(0, np.int64)
        return e, e, e, np.empty(0)
    return (
        np.concatenate(out_I),
        np.concatenate(out_J),
        np.concatenate(out_L),
        np.concatenate(out_H),
    )


def objective(M, X, targets, y, mu):
    """Eq. (14) at ``M``, over all hinge terms (numpy; blocked, no n×n matrix)."""
    pull = float(np.sum(pull_matrix(X, targets) * M))
    _, _, _, h = hinge_terms(M, X, targets, y)
    return (1.0 - mu) * pull + mu * float(h.sum())


def index_dtype(n):
    """The integer type of triplet indices on ``n`` points: int32 while it holds them
    (half the memory of a list of terms), else int64."""
    return np.int32 if n < 2**31 else np.int64


def dual_point(kind, n, triplets, lam, F):
    """``SolveResult.certificate`` of an LMNN bound (``kind`` ``"lmnn"`` or
    ``"lmnn_multi"``; the format is documented in :mod:`convexmetric.verifier.lmnn`):
    the triplets ``(i, j, l)`` with nonzero multipliers ``lam`` on ``n`` points, and the
    attained value ``F`` the trace bound used (NaN where the bound used none)."""
    index = index_dtype(n)
    unknown = F is None or not np.isfinite(F)
    return {
        "kind": kind,
        **{key: np.asarray(t, index) for key, t in zip("ijl", triplets)},
        "lam": np.asarray(lam, np.float64),
        "F": float("nan") if unknown else float(F),
    }
