r"""The learned map of a POE/MKPOE fit, every stored form of it, and the objective's
rigorous interval (used by :mod:`.poe`).

**Forms.** A fit stores each block's map twice: ``components_`` (``N``, ``W = NᵀN``: what
``transform`` applies) and ``W_`` (the metric ``get_mahalanobis_matrix`` applies; the
diagonal LPs' ``w``). The objective is evaluated at each form, with its rigorous error
(:mod:`._forms`), and the verdict is taken on the hull of the intervals: the reported
``objective`` is the applied map's (``N``), and the resolution covers every form, so a
stored form that is another map widens the interval until the claim fails, and a
genuine fit (the forms agree to rounding) keeps its resolution.

**Feasibility** (the paper's ``W ⪰ 0``, ``w ≥ 0``). ``N`` is feasible by construction
(``NᵀN ⪰ 0``; a diagonal fit's ``N`` must hold one nonzero per row and per column, so
that ``NᵀN`` is diagonal). A diagonal ``w`` is checked ``≥ 0`` exactly. A full ``W_`` is
refused when clearly indefinite (``λ_min < −`` :data:`INDEFINITE` ``·λ_max``, a message
only); otherwise :func:`._rigor.lambda_min_lower` proves ``W_s + cI ⪰ 0`` for its
symmetric part ``W_s`` and ``c ≥ 0``, and the feasible point ``W_s + cI`` is what the
``W`` form's interval covers: the shift changes ``tr(WR)`` by ``c·tr R`` and each
distance by at most ``c‖u‖²``, so the interval is widened by
``c·(tr R + s Σ_c (‖u_c‖² + ‖v_c‖²))``.

**Kernel blocks** (full ``W``). The problem is posed on the verifier's features ``Φ``
(:mod:`._kernels`); the fit's point there is ``Ẑ = fl(ΦᵀNᵀ)`` (``B = ẐẐᵀ ⪰ 0``,
distances ``‖Ẑᵀ(Φ_a − Φ_b)‖²``, regulariser ``‖Ẑ‖_F²``), whose interval joins the hull
beside the applied map's on the kernel rows (``‖N(K_a − K_b)‖²``, ``tr(NKNᵀ)``).
"""

from __future__ import annotations

import numpy as np

from . import _forms
from ._kernels import features
from ._rigor import SAFETY, UNIT, gamma, lambda_min_lower

#: a full ``W_`` with ``λ_min < −INDEFINITE·λ_max`` is refused outright (infeasible); the
#: rounding-level negativity of a genuine low-rank ``W`` is proved harmless instead
INDEFINITE = 1e-8
#: ``W_`` whose objective differs from ``components_``'s by more than this share is refused
#: as another map (a message: below it, the hull of the two intervals still decides)
SAME_MAP_RTOL = 1e-7
#: ``embedding_`` must be the training rows mapped by ``components_`` to this share of
#: ``|F||N|ᵀ`` (a consistency check of a stored copy; it enters no bound)
EMBED_RTOL = 1e-10


class Refused(Exception):
    """A stored form of the map that is infeasible or not the same map (the message)."""


def _regulariser(form, M, R):
    """``tr(WR)`` of one block's form, ``(value, err)``; ``R``: ``None`` (``I``), a vector
    (a diagonal) or a matrix."""
    if form == "factor":
        return _forms.trace(*_forms.gram(M.T, R))
    if form == "diagonal":
        r = np.ones(len(M)) if R is None else R
        v = float(r @ M)
        return v, gamma(len(M) + 1) * float(np.abs(r) @ np.abs(M)) * SAFETY
    if R is None:  # tr W
        v, size, n = float(np.trace(M)), float(np.abs(np.diag(M)).sum()), len(M)
    else:  # tr(WK) = Σ W∘K for a symmetric K
        P = M * R
        v, size, n = float(P.sum()), float(np.abs(P).sum()), P.size
    return v, gamma(n + 1) * size * SAFETY


def objective(terms, C, beta):
    """``(f̂, err)`` of ``Σ_p tr(WᵖRᵖ) + β/m Σ_c max(0, 1 + d(i,j) − d(k,l))`` for
    ``terms = [(rows, form, M, R), ...]`` (one per block; ``rows`` the points the map acts
    on) and comparisons ``C`` (``(m, 4)``)."""
    m = len(C)
    d, e, size = [np.zeros(m), np.zeros(m)], [np.zeros(m), np.zeros(m)], [np.zeros(m), np.zeros(m)]
    regs = []
    for rows, form, M, R in terms:
        for side, (a, b) in enumerate(((0, 1), (2, 3))):
            dv, ev = _forms.pair_forms(rows, C[:, a], C[:, b], form, M)
            d[side], e[side], size[side] = d[side] + dv, e[side] + ev, size[side] + np.abs(dv)
        regs.append(_regulariser(form, M, R))
    p = len(terms)
    e = [e[k] + gamma(p + 1) * size[k] for k in (0, 1)]  # the sums over blocks
    z = 1.0 + d[0] - d[1]
    ez = (e[0] + e[1] + 3.0 * UNIT * (1.0 + size[0] + size[1] + np.abs(z))) * SAFETY
    H = _forms.hinge_total(z, ez)
    reg = _forms.combine([((1.0, 0.0), r) for r in regs])
    return _forms.combine([((1.0, 0.0), reg), (_forms.quotient(float(beta), m), H)])


def _shift(W):
    """``c ≥ 0`` with ``(W + Wᵀ)/2 + cI ⪰ 0`` proved; :class:`Refused` if clearly
    indefinite."""
    H = 0.5 * (W + W.T)
    w = np.linalg.eigvalsh(H)
    top = max(float(np.abs(w).max()), 1e-300)
    if w[0] < -INDEFINITE * top:
        raise Refused(f"W_ is not positive semidefinite (λ_min ≈ {w[0]:.3g}, λ_max ≈ {w[-1]:.3g})")
    err = UNIT * float(np.sqrt(np.sum(H * H))) * (1.0 + 4.0 * UNIT)
    return max(0.0, -lambda_min_lower(H, err))


def _shift_effect(c, rows, R, C, beta):
    """How far the objective moves when ``W`` becomes ``W + cI`` (module docstring)."""
    if c == 0:
        return 0.0
    ones = np.ones(rows.shape[1])
    total = 0.0
    for a, b in ((0, 1), (2, 3)):
        dv, ev = _forms.pair_forms(rows, C[:, a], C[:, b], "diagonal", ones)
        total += float((dv + ev).sum()) * (1.0 + gamma(len(C) + 2))
    tr_r = rows.shape[1] if R is None else float(np.abs(np.diag(R)).sum())
    return c * (tr_r + beta / len(C) * total) * (1.0 + gamma(8)) * SAFETY


def check_factor(N, D, diagonal, name="components_"):
    """``N`` as a float ``(k, D)`` array; :class:`Refused` unless it is a map of this form."""
    N = np.asarray(N, dtype=float)
    if N.ndim != 2 or N.shape[1] != D or not np.isfinite(N).all():
        raise Refused(f"{name} of shape {N.shape} is not a finite map of the {D} coordinates")
    if diagonal:
        nz = N != 0
        if (nz.sum(axis=1) > 1).any() or (nz.sum(axis=0) > 1).any():
            raise Refused(f"{name} is not the map of a diagonal W (one nonzero per row/column)")
    return N


def check_metric(W, D, diagonal, name="W_"):
    """``W_`` as a float array of its form; :class:`Refused` if infeasible or misshapen."""
    W = np.asarray(W, dtype=float)
    shape = (D,) if diagonal else (D, D)
    if W.shape != shape or not np.isfinite(W).all():
        raise Refused(f"{name} of shape {W.shape} is not a finite {'×'.join(map(str, shape))} W")
    if diagonal and (W < 0).any():
        raise Refused(f"{name} has negative entries: not a feasible diagonal W (w ≥ 0)")
    return W


def _embedding_problem(emb, blocks, Ns):
    """Why ``embedding_`` is not the training rows mapped by ``components_`` ("" if it is)."""
    emb = np.asarray(emb, dtype=float)
    want = np.hstack([b.rows @ N.T for b, N in zip(blocks, Ns)])
    scale = np.hstack([np.abs(b.rows) @ np.abs(N).T for b, N in zip(blocks, Ns)])
    if emb.shape != want.shape or not (np.abs(emb - want) <= EMBED_RTOL * scale + 1e-300).all():
        return "embedding_ is not the training items mapped by components_"
    return ""


def evaluate(blocks, Ns, Ws, C, beta, diagonal):
    """``(f, resolution, note)``: the objective at the applied map ``Ns`` (or ``Ws`` without
    it) and the hull's half-width over every stored form and, for kernel blocks, the
    point in ``Φ`` (module docstring); ``note`` names the form that widens it most ("" if
    none does more than the applied map's own error)."""

    def at(form, maps):
        terms = [(b.rows, form, M, b.reg(diagonal)) for b, M in zip(blocks, maps)]
        return objective(terms, C, beta)

    values = []
    if Ns is not None:
        values.append(("components_", at("factor", Ns)))
    if Ws is not None:
        f, err = at("diagonal" if diagonal else "matrix", Ws)
        for b, W in zip(blocks, Ws):  # the feasible W + cI (module docstring)
            err += 0.0 if diagonal else _shift_effect(_shift(W), b.rows, b.reg(False), C, beta)
        values.append(("W_", (f, err)))
    if not diagonal and any(b.kernel is not None for b in blocks):
        point = _feature_point(blocks, Ns, Ws, C, beta)
        values.append(("its point in the kernel's features", point))
    f0 = values[0][1][0]
    for name, (f, err) in values[1:]:
        if name == "W_" and abs(f - f0) > SAME_MAP_RTOL * abs(f0) + err + values[0][1][1]:
            raise Refused(f"W_ is not the map components_ applies (objective {f!r} against {f0!r})")
    widths = [(abs(f - f0) + err, k) for k, (_, (f, err)) in enumerate(values)]
    res, widest = max(widths)
    return f0, res, (values[widest][0] if widest else "")


def _feature_point(blocks, Ns, Ws, C, beta):
    """The fit's point ``Ẑ = fl(ΦᵀNᵀ)`` in the problem's coordinates, and its objective."""
    terms = []
    for p, b in enumerate(blocks):
        N = Ns[p] if Ns is not None else _factor_of(Ws[p])
        if b.kernel is None:
            terms.append((b.rows, "factor", N, None))
        else:
            Phi = b.features()
            terms.append((Phi, "factor", N @ Phi, None))
    return objective(terms, C, beta)


def _factor_of(W):
    """A factor ``N`` of ``W``'s positive part (a helper point; any factor is feasible)."""
    w, V = np.linalg.eigh(0.5 * (W + W.T))
    keep = w > 0
    return (V[:, keep] * np.sqrt(w[keep])).T


class Block:
    """One block of the problem: ``rows`` the applied map acts on (``X`` or ``K``) and the
    ``kernel`` (``None`` for LPOE)."""

    def __init__(self, rows, kernel=None):
        self.rows, self.kernel, self._phi = rows, kernel, None

    def reg(self, diagonal):
        """``R`` of the applied form: ``None`` (``I``), ``diag K`` or ``K``."""
        if self.kernel is None:
            return None
        return np.diag(self.kernel).copy() if diagonal else self.kernel

    def features(self):
        """The problem's points: ``X``, or the kernel's ``Φ`` (computed once)."""
        if self.kernel is None:
            return self.rows
        if self._phi is None:
            self._phi = features(self.kernel)
        return self._phi
