r"""The lower bound a POE/MKPOE certificate proves, computed rigorously (used by
:mod:`.poe`, whose docstring derives it): ``μ`` from a Cholesky proof
(:func:`._rigor.lambda_min_lower`) on the scatter ``S = I + Σ_c λ_c(u_cu_cᵀ − v_cv_cᵀ)``
with its error bound (:class:`._rigor.Scatter`), or from the diagonal's coordinates
with theirs; the sums and the final formula rounded down.
"""

from __future__ import annotations

import numpy as np

from ._rigor import SAFETY, UNIT, Scatter, gamma, lambda_min_lower

#: comparisons per scatter block (two rows each: ``u_c`` and ``v_c``)
CHUNK = 2048
#: multipliers above ``β/m`` by more than this share are refused as out of the box (a
#: tampered or foreign certificate); within it they are clipped into the box, which
#: leaves a dual point the bound holds for
BOX_RTOL = 1e-12


def _below(x):
    """A float at most ``x`` (two units in the last place below)."""
    return float(np.nextafter(np.nextafter(x, -np.inf), -np.inf))


def above(x):
    """A float at least ``x`` (two units in the last place above)."""
    return float(np.nextafter(np.nextafter(x, np.inf), np.inf))


def box(lam, beta, m):
    """``(λ clipped into [0, s], "")`` with ``s = β/m``, or ``(None, why)``."""
    if not isinstance(lam, np.ndarray) or lam.ndim != 1 or lam.dtype.kind != "f":
        return None, "'lam' must be a 1-d float array"
    if len(lam) != m:
        return None, f"'lam' has {len(lam)} multipliers for {m} comparisons"
    s = float(beta) / m
    if not np.all(np.isfinite(lam)) or lam.min() < 0.0 or lam.max() > s * (1 + BOX_RTOL):
        return None, f"'lam' leaves the box [0, β/m = {s:.6g}]"
    return np.minimum(lam, _below(s)), ""  # fl(β/m) may exceed β/m by one rounding


def mu_full(lam, points, C):
    """A rigorous lower bound on ``min_p λ_min(I + Σ_c λ_c(u_cu_cᵀ − v_cv_cᵀ))`` over the
    blocks' problem points (``X``, or the kernel's ``Φ``)."""
    mu = np.inf
    on = np.flatnonzero(lam)
    for P in points:
        sc = Scatter(P.shape[1])
        for s in range(0, len(on), CHUNK):
            c, lc = C[on[s : s + CHUNK]], lam[on[s : s + CHUNK]]
            Z = np.vstack([P[c[:, 0]] - P[c[:, 1]], P[c[:, 2]] - P[c[:, 3]]])
            eta = UNIT / (1.0 - UNIT) * np.sqrt(np.einsum("ij,ij->i", Z, Z))
            sc.add(Z, np.concatenate([lc, -lc]), eta=eta)
        S = sc.S.copy()
        S[np.diag_indices_from(S)] += 1.0
        err = sc.error() + UNIT * float(np.abs(np.diag(S)).max(initial=0.0)) * (1.0 + 4.0 * UNIT)
        mu = min(mu, lambda_min_lower(S, err))
    return mu


def mu_diagonal(lam, rows, regs, C):
    """A rigorous lower bound on ``min_{p,t} (r_t − Σ_c λ_c(v_ct² − u_ct²))/r_t`` (``r``:
    ``diag Rᵖ``, ones for ``R = I``); ``-inf`` when some ``r_t ≤ 0``."""
    mu = np.inf
    m = len(C)
    for F, r in zip(rows, regs):
        r = np.ones(F.shape[1]) if r is None else r
        if not np.all(r > 0):
            return -np.inf
        g, size = r.astype(float).copy(), np.abs(r).astype(float)
        for s in range(0, m, CHUNK):
            c, lc = C[s : s + CHUNK], lam[s : s + CHUNK]
            U2, V2 = (F[c[:, 0]] - F[c[:, 1]]) ** 2, (F[c[:, 2]] - F[c[:, 3]]) ** 2
            g -= lc @ (V2 - U2)
            size += lc @ (V2 + U2)
        # the squares' (and the differences') rounding, the products, the sum of m terms
        low = g - gamma(m + 8) * size * SAFETY
        q = low / r
        mu = min(mu, float((q - 2.0 * UNIT * np.abs(q)).min()))
    return mu


def nonnegative_sum_lower(x):
    """A lower bound on the exact sum of the non-negative floats ``x``: a float sum errs by
    at most ``γ_m`` of itself (in any order), and the division rounds once. (Not
    :func:`._rigor.sum_lower`, whose :data:`._rigor.SAFETY` factor on the value itself
    would cost a relative 1e-6, all of Maurer's default tolerance.)"""
    total = float(np.sum(x))
    return total / (1.0 + 2.0 * gamma(len(x) + 1)) * (1.0 - 2.0 * UNIT)


def lower_bound(lam, mu, radius, form):
    """The certificate's bound (module docstring of :mod:`.poe`), rounded down: ``λ`` in
    the box, ``μ`` a rigorous lower bound, ``radius`` an upper bound on ``f⋆``."""
    total = nonnegative_sum_lower(lam)
    if not np.isfinite(mu):
        return -np.inf if mu < 0 else total
    if mu >= 0:
        return total
    shifted = radius * mu
    trace = total + shifted * (1.0 + 2.0 * UNIT)
    trace -= 2.0 * UNIT * (abs(total) + abs(shifted)) * SAFETY
    if form == "diagonal":
        return trace
    den = (1.0 - mu) * (1.0 + 2.0 * UNIT)
    scaled = total / den * (1.0 - 2.0 * UNIT)
    return max(trace, scaled)
