"""What LMNN's last brute-force search still decides at a nearby metric.

A search at ``M₀`` keeps the triplets with ``z₀ > −m`` (``m``, the memo's margin;
:class:`~.active_list.ActiveList`). At ``M = M₀ + D``, ``D = D⁺ − D⁻`` (its positive and
negative eigen-parts), a triplet ``(i, j, l)`` is violated when ``d(i, l) < 1 + d(i, j)``.
The target distance ``d(i, j)`` is known exactly (``n·k`` of them), and

    ``d(i, l) ≥ d₀(i, l) − (x_i − x_l)ᵀD⁻(x_i − x_l) ≥ d₀(i, l) − (√q_i + √q_l)²``,

with ``q = ‖Bᵀ(x − c)‖²`` per point (``BBᵀ = D⁻``, ``c`` the data's mean; the triangle
inequality in the seminorm of ``D⁻``). So a triplet violated at ``M`` has ``z₀ > −(δ_i +
(√q_i + √q_l)²)``, with ``δ_i = max_j d(i, j) − d₀(i, j)``, and the memo holds it when that
is at most ``m``. For a threshold ``t``, the *stale* points are the rows with ``δ_i + (√q_i
+ √t)² ≥ m`` and the points with ``q > t``: every pair with no end among them is decided
by the memo, exactly (its triplets' values are recomputed at ``M``), and only the pairs
with a stale end are searched again (:meth:`.blocks.stream.StreamingEvaluator.partial_terms`).
A step that moves every point (phase 1's, early on) leaves them all stale: then a full search.
"""

from __future__ import annotations

import numpy as np

from ..linalg import row_distances, target_distances
from .constants import PARTIAL_MIN_N, PARTIAL_SHARE, QUANTILES


class SearchMemo:
    """The triplets ``terms = (I, J, L)`` with ``z > −margin`` at the searched ``M = LcᵀLc``
    (``margin = 0``: the violated ones alone, which decide ``M`` itself only)."""

    def __init__(self, M, Lc, terms, margin):
        self.M, self.Lc = np.array(M, copy=True), Lc
        self.terms, self.margin = terms, float(margin)
        self._Dt = None  #: the target distances at ``M`` (n × k; computed when first needed)
        self._answer = None  #: ``(M', triplets)``: the last metric answered (:meth:`remember`)

    def at(self, M):
        """Whether ``M`` is the searched metric itself."""
        return np.array_equal(self.M, M)

    def remember(self, M, triplets):
        """Remember the violated ``triplets`` at ``M`` (the drivers often ask for the exact
        objective and then a full check at the same point); return them."""
        self._answer = (np.array(M, copy=True), triplets)
        return triplets

    def answer(self, M):
        """The triplets remembered at ``M`` (:meth:`remember`), or None."""
        if self._answer is not None and np.array_equal(self._answer[0], M):
            return self._answer[1]
        return None

    def stale(self, M, Lc, X, T, spread):
        """``(stale, Z)``: the stale points at ``M = LcᵀLc`` (a bool mask; none: the memo
        decides every triplet) and ``Z = X Lcᵀ``, or ``(None, None)`` when more than
        :data:`PARTIAL_SHARE` of them are (or plainly would be). ``spread``: the data's
        :class:`~convexmetric.linalg.Spread`."""
        if not self.margin or self.M.shape != M.shape or len(X) < PARTIAL_MIN_N:
            return None, None
        D = Lc.T @ Lc - self.Lc.T @ self.Lc  # the change of the distances' own metric
        w, V = np.linalg.eigh(0.5 * (D + D.T))
        B = V[:, w < 0] * np.sqrt(-w[w < 0])
        if np.einsum("ij,ij->", B, spread.cov @ B) >= self.margin:  # the mean of q
            return None, None
        q, Z = spread.rows(B), X @ Lc.T
        if self._Dt is None:
            self._Dt = target_distances(X @ self.Lc.T, T)
        Dt = target_distances(Z, T)
        delta = np.max(Dt - self._Dt, axis=1)
        m = self.margin - 1e-9 * (1.0 + float(Dt.max(initial=0.0)))  # the rounding of z₀
        best = None
        for t in np.quantile(q, QUANTILES) if len(q) else ():
            mask = (delta + (np.sqrt(q) + np.sqrt(t)) ** 2 >= m) | (q > t)
            if best is None or mask.sum() < best.sum():
                best = mask
        if best is None or best.sum() > PARTIAL_SHARE * len(best):
            return None, None
        return best, Z

    def outside(self, stale):
        """The memo's triplets whose pair has no end in ``stale``."""
        I, J, L = self.terms
        keep = ~(stale[I] | stale[L])
        return I[keep], J[keep], L[keep]


def violated(terms, Z, T, threads=1):
    """The triplets of ``terms`` with ``z = 1 + d(i, j) − d(i, l) > 0`` at ``Z``, in double
    precision by the full check's formula: ``d(i, j)`` from the target distances (n × k),
    ``d(i, l)`` once per run of triplets of one pair (a search lists them together)."""
    I, J, L = terms
    if len(I) == 0:
        return terms
    first = np.flatnonzero(np.r_[True, (I[1:] != I[:-1]) | (L[1:] != L[:-1])])
    d_il = row_distances(Z, I[first], L[first], threads=threads)
    d_il = np.repeat(d_il, np.diff(np.r_[first, len(I)]))
    slot = np.argmax(T[I] == J[:, None], axis=1)
    keep = 1.0 + target_distances(Z, T, threads=threads)[I, slot] - d_il > 0
    return I[keep], J[keep], L[keep]
