r"""Rigorous float64 evaluation of the pieces of the POE and Maurer objectives: pair
distances under a learned map, hinge sums and Gram matrices, each with a bound on its
error from the quantities actually computed (the model and the ``γ_n`` of
:mod:`._rigor`; every bound is componentwise in ``|data|·|map|``, never a norm of the
map times a norm of the data).

**Differences.** ``Û = fl(F_a − F_b)`` errs by at most ``u|U| ≤ u|Û|/(1 − u)``
componentwise; where the rows agree the difference is exactly 0, so a direction along
which the data do not vary adds no error, however large the map is there.

**Distances** ``d = uᵀWu`` of an exact difference ``u`` under a map given as

* a factor ``M`` (``k × D``, ``W = MᵀM``): ``Ê = fl(ÛMᵀ)`` errs by at most
  ``η = γ_{D+1}|Û||M|ᵀ`` (Higham, Lemma 3.5, with ``Û``'s own error:
  ``γ_D + u/(1 − u) ≤ γ_{D+1}``), and ``d̂ = fl(Σ Ê²)`` by
  ``γ_k Σ Ê² + Σ η(2|Ê| + η)``;
* a matrix ``W``: ``d̂ = fl(Σ_t fl(ÛW)_t Û_t)`` errs by ``γ_{2D+4}·|Û|ᵀ|W||Û|`` (the
  two products, and ``(1 + u)² − 1`` of ``Û``'s entries);
* a diagonal ``w``: ``d̂ = fl(Û² w)`` errs by ``γ_{D+4}·Û²|w|``.

**Hinges.** For ``z`` known to ``ẑ ± e``: ``|max(0, ẑ) − max(0, z)| ≤ e`` when
``ẑ + e > 0`` and 0 otherwise, so hinges that are surely inactive add nothing; a float
sum of ``m`` non-negative terms errs by ``γ_m`` of itself.

**Gram matrices** ``G = MᵀKM`` (``K = I``, a diagonal ``r`` or a symmetric matrix):
``|Ĝ − G| ≤ γ_{n+1}|M|ᵀ|K||M|`` entrywise (two products; ``γ_n`` for ``K = I``).
``‖Ĝ‖_F`` and ``tr Ĝ`` then err by ``‖E‖_F`` and ``Σ E_tt`` plus their own sums'
rounding. Error bounds are themselves computed in float64 from non-negative terms and
multiplied by :data:`._rigor.SAFETY`.
"""

from __future__ import annotations

import numpy as np

from ._rigor import SAFETY, UNIT, gamma

#: comparisons or pairs whose distances are evaluated at once
ROWS = 4096


def differences(F, a, b):
    """``fl(F[a] − F[b])`` (module docstring)."""
    return F[a] - F[b]


def _block_forms(U, form, M):
    """``(d̂, err)`` for the rows of ``U`` (one block)."""
    A = np.abs(U)
    D = U.shape[1]
    if form == "factor":
        E = U @ M.T
        eta = gamma(D + 1) * (A @ np.abs(M).T)
        d = np.einsum("ij,ij->i", E, E)
        err = gamma(max(M.shape[0], 1)) * d + np.einsum("ij,ij->i", eta, 2.0 * np.abs(E) + eta)
    elif form == "matrix":
        d = np.einsum("ij,ij->i", U @ M, U)
        err = gamma(2 * D + 4) * np.einsum("ij,ij->i", A @ np.abs(M), A)
    else:  # diagonal
        d = (U * U) @ M
        err = gamma(D + 4) * ((U * U) @ np.abs(M))
    return d, err * SAFETY


def pair_forms(F, a, b, form, M):
    """Distances ``(F_a − F_b)ᵀW(F_a − F_b)`` for index arrays ``a, b`` and their error
    bounds ``(d̂, err)``; ``form``: ``"factor"`` (``M`` with ``W = MᵀM``), ``"matrix"``
    (``M = W``) or ``"diagonal"`` (``M = w``)."""
    d, err = np.empty(len(a)), np.empty(len(a))
    for s in range(0, len(a), ROWS):
        U = differences(F, a[s : s + ROWS], b[s : s + ROWS])
        d[s : s + ROWS], err[s : s + ROWS] = _block_forms(U, form, M)
    return d, err


def hinge_total(z, ez):
    """``(Σ max(0, ẑ), err)`` bounding ``|Σ max(0, z) − fl(Σ max(0, ẑ))|`` for exact ``z``
    within ``ez`` of ``ẑ``."""
    h = np.maximum(z, 0.0)
    total = float(h.sum())
    live = float(ez[z + ez > 0].sum())
    return total, (live + gamma(max(len(z), 1)) * total) * SAFETY


def gram(M, K=None):
    """``Ĝ = fl(MᵀKM)`` (``M``: ``n × k``; ``K``: ``None`` for ``I``, a vector for a
    diagonal, or a matrix) and the entrywise bound ``E`` on ``|Ĝ − MᵀKM|``."""
    n = M.shape[0]
    A = np.abs(M)
    if K is None:
        return M.T @ M, gamma(max(n, 1)) * (A.T @ A) * SAFETY
    if np.ndim(K) == 1:
        return M.T @ (K[:, None] * M), gamma(n + 1) * (A.T @ (np.abs(K)[:, None] * A)) * SAFETY
    return M.T @ (K @ M), gamma(2 * n) * (A.T @ (np.abs(K) @ A)) * SAFETY


def frobenius(G, E):
    """``(‖Ĝ‖_F, err)`` bounding ``|‖G‖_F − ‖Ĝ‖_F|`` for ``|G − Ĝ| ≤ E``."""
    value = float(np.sqrt(np.sum(G * G)))
    own = gamma(G.size + 2) * value
    return value, (float(np.sqrt(np.sum(E * E))) + own) * SAFETY


def trace(G, E):
    """``(tr Ĝ, err)`` bounding ``|tr G − tr Ĝ|`` for ``|G − Ĝ| ≤ E``."""
    d = np.diag(G)
    value = float(d.sum())
    return value, (float(np.diag(E).sum()) + gamma(len(d) + 1) * float(np.abs(d).sum())) * SAFETY


def combine(terms):
    """``Σ cᵢ·xᵢ`` for exact weights known to ``(ĉᵢ, eᶜᵢ)`` and values ``(x̂ᵢ, eˣᵢ)``:
    ``terms`` is ``[((ĉ, eᶜ), (x̂, eˣ)), ...]``; returns ``(value, err)``, the float
    products and sum's rounding included."""
    value, err, size = 0.0, 0.0, 0.0
    for (c, ec), (x, ex) in terms:
        value += c * x
        err += abs(c) * ex + ec * (abs(x) + ex)
        size += abs(c * x)
    return value, (err + gamma(len(terms) + 2) * (size + abs(value))) * SAFETY


def quotient(num, den):
    """``(q̂, err)`` of one float division ``num/den`` of exact floats: ``|q − q̂| ≤ u|q̂|``
    (rounded up)."""
    q = num / den
    return q, 2.0 * UNIT * abs(q)
