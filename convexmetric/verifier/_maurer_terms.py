r"""Maurer's eq. (5) and its certified bound, evaluated rigorously (used by
:mod:`.maurer`, whose docstring derives both).

**The objective's interval.** With ``c_i = r_i/γ_{r_i}`` computed as ``ĉ`` (``|ĉ − c| ≤
u|ĉ|``) and the distance ``d_i`` known to ``d̂_i ± e_i`` (:mod:`._forms`), the hinge
argument ``z_i = 1 − c_i(1 − d_i)``, evaluated as ``fl(1 − fl(ĉ·fl(1 − d̂)))``, errs by at
most ``|ĉ|e_i(1 + 2u) + 4u(1 + |ĉ|(|1 − d̂| + e_i) + |ẑ|)`` (three roundings and
``ĉ``'s own). ``μ = λ/√m`` is computed to ``3u`` of itself; ``‖A‖`` is the Frobenius
norm or the trace of the Gram matrix ``MᵀKM`` of the map (:func:`._forms.gram`).

**The bound.** ``G(α) = Σ α_i c_i u_iu_iᵀ`` is a :class:`._rigor.Scatter` (weights
``α_i ĉ_i`` known to ``2u`` of themselves, rows to ``u``); ``ν`` is bounded above by
:func:`._rigor.negative_part_upper` (HS) or ``max(0, −ℓ)`` with ``ℓ`` from
:func:`._rigor.lambda_min_lower` (trace); ``bᵀα`` below, ``μ`` below, and the two bounds
rounded down. Each is monotone in those quantities (``max(0, min(1, μ/ν)·bᵀα)``
increases with ``bᵀα`` and ``μ`` and decreases with ``ν``; so does
``bᵀα − (F/μ)·max(0, ν − μ)``), so the result is a rigorous lower bound.
"""

from __future__ import annotations

import numpy as np

from . import _forms
from ._rigor import SAFETY, UNIT, Scatter, gamma, lambda_min_lower, negative_part_upper

#: pairs per scatter block
CHUNK = 4096
#: multipliers above ``1/m`` by more than this share are refused (tampered or foreign);
#: within it they are clipped into the box
BOX_RTOL = 1e-12


def slopes(r, margin, margin_neg):
    """``ĉ = fl(r/γ_r)`` (``γ₋₁ = margin_neg`` or ``margin``)."""
    g_neg = margin if margin_neg is None else margin_neg
    return r / np.where(r > 0, float(margin), float(g_neg))


def weight(reg_weight, m):
    """``(μ̂, err)`` of ``μ = λ/√m``."""
    mu = float(reg_weight) / float(np.sqrt(m))
    return mu, 3.0 * UNIT * mu


def objective(rows, M, K, pairs, c, mu, regularizer):
    """``(Ω̂, err)``: eq. (5) for the map ``x ↦ Mᵀx`` on ``rows`` (``M``: ``D × k``), the
    regulariser the norm of ``MᵀKM`` (``K``: ``None`` for ``I``); ``pairs = (i, j)``."""
    i, j = pairs
    d, e = _forms.pair_forms(rows, i, j, "factor", M.T)
    p = 1.0 - d
    z = 1.0 - c * p
    ac = np.abs(c)
    ez = ac * e * (1.0 + 2.0 * UNIT) + 4.0 * UNIT * (1.0 + ac * (np.abs(p) + e) + np.abs(z))
    H = _forms.hinge_total(z, ez * SAFETY)
    G, E = _forms.gram(M, K)
    norm = _forms.frobenius(G, E) if regularizer == "hs" else _forms.trace(G, E)
    return _forms.combine([(_forms.quotient(1.0, len(z)), H), (mu, norm)])


def box(alpha, m):
    """``(α clipped into [0, 1/m], "")`` or ``(None, why)``."""
    if not isinstance(alpha, np.ndarray) or alpha.ndim != 1 or alpha.dtype.kind != "f":
        return None, "'alpha' must be a 1-d float array"
    if len(alpha) != m:
        return None, f"'alpha' has {len(alpha)} entries for {m} pairs"
    top = 1.0 / m
    if not np.all(np.isfinite(alpha)) or alpha.min() < 0 or alpha.max() > top * (1 + BOX_RTOL):
        return None, f"'alpha' leaves the box [0, 1/m = {top:.6g}]"
    below = float(np.nextafter(np.nextafter(top, 0.0), 0.0))  # fl(1/m) may exceed 1/m
    return np.minimum(alpha, below), ""


def violation_upper(alpha, P, pairs, c, regularizer):
    """A rigorous upper bound on ``ν(α)``: ``‖[G]₋‖_F`` (HS) or ``max(0, −λ_min G)``
    (trace), ``G = Σ α_i c_i u_iu_iᵀ`` over the problem's points ``P``."""
    i, j = pairs
    on = np.flatnonzero(alpha)
    sc = Scatter(P.shape[1])
    for s in range(0, len(on), CHUNK):
        t = on[s : s + CHUNK]
        Z = P[i[t]] - P[j[t]]
        w = alpha[t] * c[t]
        eta = UNIT / (1.0 - UNIT) * np.sqrt(np.einsum("ij,ij->i", Z, Z))
        sc.add(Z, w, eta=eta, omega=2.01 * UNIT * np.abs(w))
    if regularizer == "hs":
        return negative_part_upper(sc.S, sc.error())
    return max(0.0, -lambda_min_lower(sc.S, sc.error()))


def value_lower(alpha, c):
    """A lower bound on ``bᵀα = Σ α_i(1 − c_i)``."""
    b = 1.0 - c
    size = float(alpha @ np.abs(b))
    err = gamma(len(alpha) + 2) * size + 1.01 * UNIT * float(alpha @ (np.abs(b) + 2.0 * np.abs(c)))
    return float(alpha @ b) - err * SAFETY


def lower_bound(val, nu, mu, radius):
    """``max(max(0, min(1, μ/ν)·val), val − (F/μ)·max(0, ν − μ))`` rounded down, for a
    lower ``val``, an upper ``ν``, ``μ`` as ``(μ̂, err)`` and an upper ``F``."""
    mu_lo = (mu[0] - mu[1]) * (1.0 - UNIT)
    if not (mu_lo > 0 and np.isfinite(nu)):
        return max(0.0, val) if nu == 0 else 0.0
    share = 1.0 if nu <= mu_lo else mu_lo / nu * (1.0 - 2.0 * UNIT)
    scaled = max(0.0, share * val * (1.0 - 2.0 * UNIT)) if val > 0 else 0.0
    reach = radius / mu_lo * (1.0 + 2.0 * UNIT)
    excess = max(0.0, nu - mu_lo) * (1.0 + UNIT)
    cut = reach * excess * (1.0 + 2.0 * UNIT)
    restricted = val - cut - 2.0 * UNIT * (abs(val) + cut)
    return max(scaled, restricted)
