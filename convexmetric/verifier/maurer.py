r"""Maurer's operator-valued similarity (JMLR 2008): Ω_{ψ,λ}(A) of eq. (5) over the PSD
cone, recomputed from the pairs and the points.

**Objective.** ``Ω(A) = (1/m) Σ_i max(0, z_i) + (λ/√m)‖A‖`` with
``z_i = 1 − r_i(1 − ‖T(x_i − x'_i)‖²)/γ_{r_i}`` (margins ``γ₁ = gamma``,
``γ₋₁ = gamma_neg`` or ``gamma``) and ``‖A‖`` the Hilbert–Schmidt norm (``"hs"``) or
the trace (``"trace"``) of ``A = T*T``. The fitted ``T`` is ``x ↦ coef_ᵀx`` (linear) or
``x ↦ coef_ᵀ k(X, x)`` over the training points (kernel), so ``A``'s nonzero spectrum
is that of ``coef_ᵀ coef_`` or ``coef_ᵀ K coef_``.

**Bound** (the dual of eq. (5), derived in :mod:`convexmetric.maurer.certificate`).
With ``c_i = r_i/γ_{r_i}``, ``b_i = 1 − c_i``, ``μ = λ/√m`` and, for ``α ∈ [0, 1/m]^m``,
``G(α) = Σ_i α_i c_i u_i u_iᵀ`` (``u_i = x_i − x'_i``, in an orthonormal basis of the
span of the points' features: ``Φ = VΛ^{1/2}`` of ``K = VΛVᵀ`` for a kernel):
``ν = ‖[G]₋‖₂`` (HS) or ``max(0, −λ_min G)`` (trace). Then ``max(0, min(1, μ/ν) bᵀα)``
(``α`` scaled into the dual feasible set) and ``bᵀα − (F/μ) max(0, ν − μ)`` (the
Lagrangian over ``{μ‖A‖ ≤ F}``, which holds every minimiser when ``F`` is an attained
value) are lower bounds; the larger is the certificate's bound. ``F`` is the
certificate's ``radius``, raised to the objective recomputed here when below it.

=============  ==================  ====================================================
key            type                meaning
=============  ==================  ====================================================
kind           ``"maurer"``
regularizer    ``"hs"``/``"trace"``  the norm of eq. (5) the dual point belongs to
alpha          float (m,)          ``α_i ∈ [0, 1/m]``, one per pair
radius         float               ``F``, an attained objective value
=============  ==================  ====================================================

**Pairs.** ``fit(pairs)`` with a ``Pairs`` object: its points, index arrays and ``r``.
``fit(X, y)``: the estimator's oracle drew ``n_pairs`` pairs seeded by ``random_state``
(with an int, both oracles of Maurer §5.1 are re-implemented here with the same
documented draws and the pairs redrawn — label oracle: ``i, j`` uniform, ``r = +1`` iff
the labels agree; balanced: ``i`` uniform, a fair coin, ``j`` uniform over ``i``'s class
or over the other classes). ``None`` or a generator cannot be replayed: the fit's own
pairs ``pairs_`` (rows ``i, j, r``) are read instead and checked against ``y`` (indices in
range, ``r = +1`` exactly for pairs of one class, ``n_pairs`` of them). No scaling is
applied to ``X`` (the estimator applies none); the ``"maurer"`` kernel normalises
rows to unit length, ``κ(x, y) = ½ exp(−4‖x/|x| − y/|y|‖²)``; a callable kernel is the
user's function, called as given.

Reads ``params`` ``reg_weight``, ``margin``, ``margin_neg`` (before 0.2: ``lam``,
``gamma``, ``gamma_neg``), ``tol``, ``regularizer``, ``kernel``,
``solver``, ``oracle``, ``n_pairs``, ``random_state`` and ``attrs`` ``coef_``. The
tolerance is the solver's: ``1e-6`` (``"subgradient"``), ``1e-4`` (``"sgd"``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ._report import VerificationError, check_tol, model_tol, report

#: the certified gap each solver's "optimal" means
TOLS = {"subgradient": 1e-6, "sgd": 1e-4}


def _param(params, name, old):
    """A parameter by its name, or by its name before 0.2 (a model saved before the
    rename, or the old name given to the estimator)."""
    value = params.get(old)
    if old in params and not (isinstance(value, str) and value == "deprecated"):
        return value
    return params.get(name)


def _refuse(v, reason):
    return replace(v, verified=False, reason="; ".join(x for x in (reason, v.reason) if x))


def _draw(X, y, params):
    """Redraw the estimator's pairs ``(i, j, r)`` from ``X, y`` (module doc)."""
    seed = params.get("random_state")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise VerificationError(
            f"the pairs were drawn with random_state={seed!r}, which cannot be replayed: "
            "fit with an int random_state, or with a Pairs object."
        )
    _, codes = np.unique(np.asarray(y), return_inverse=True)
    n, m = len(codes), int(params["n_pairs"])
    rng = np.random.default_rng(int(seed))
    if params.get("oracle") == "labels":
        i, j = rng.integers(0, n, m), rng.integers(0, n, m)
        return i, j, np.where(codes[i] == codes[j], 1.0, -1.0)
    members = np.argsort(codes, kind="stable")  # the rows grouped by class
    size = np.bincount(codes)
    first = np.cumsum(size) - size
    i = rng.integers(0, n, m)
    own = codes[i]
    same = rng.random(m) < 0.5
    pick_same = (rng.random(m) * size[own]).astype(np.int64)
    pick_other = (rng.random(m) * (n - size[own])).astype(np.int64)
    other = np.where(pick_other < first[own], pick_other, pick_other + size[own])
    j = members[np.where(same, first[own] + pick_same, other)]
    return i, j, np.where(same, 1.0, -1.0)


def _pairs(fitted, X, y):
    """``(points, i, j, r)`` from the fit arguments."""
    if all(hasattr(X, a) for a in ("points", "i", "j", "r")):
        P = X
        return np.asarray(P.points, float), np.asarray(P.i), np.asarray(P.j), np.asarray(P.r)
    if y is None:
        raise VerificationError("OperatorSimilarity verification needs X, y or a Pairs object.")
    X = np.asarray(X, dtype=float)
    seed = fitted.params.get("random_state")
    stored = fitted.attrs.get("pairs_")
    if stored is not None and not isinstance(seed, (int, np.integer)):
        return (X, *_stored(stored, y, fitted.params))
    return (X, *_draw(X, y, fitted.params))


def _stored(pairs, y, params):
    """The fit's own pairs ``pairs_`` (rows ``i, j, r``) where its draw cannot be replayed:
    ``n_pairs`` rows of indices into ``y`` whose ``r`` is the label oracle's answer
    (``+1`` iff the labels agree, for both of §5.1's oracles)."""
    pairs = np.asarray(pairs)
    codes = np.unique(np.asarray(y), return_inverse=True)[1]
    n = len(codes)
    if (
        pairs.ndim != 2
        or pairs.shape != (int(params["n_pairs"]), 3)
        or pairs.dtype.kind not in "iu"
    ):
        raise VerificationError(f"pairs_ must be {params['n_pairs']} integer rows (i, j, r).")
    i, j, r = pairs[:, 0], pairs[:, 1], pairs[:, 2].astype(float)
    if min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n:
        raise VerificationError(f"pairs_ must index the {n} points of the fit.")
    if np.any(r != np.where(codes[i] == codes[j], 1.0, -1.0)):
        raise VerificationError("pairs_ must say r = +1 exactly for pairs of one class.")
    return i, j, r


def _kernel(params, points):
    k = params.get("kernel")
    if k is None or k == "linear":
        return None
    if k == "maurer":
        nrm = np.linalg.norm(points, axis=1, keepdims=True)
        Z = points / np.where(nrm > 0, nrm, 1.0)
        sq = np.sum(Z * Z, 1)
        return 0.5 * np.exp(-4.0 * np.maximum(sq[:, None] + sq[None, :] - 2.0 * Z @ Z.T, 0.0))
    if callable(k):
        return np.asarray(k(points, points), dtype=float)
    raise VerificationError(f"kernel {k!r} is not one the verifier knows.")


def _objective(coef, points, K, i, j, r, p):
    """Ω at the fitted ``T``; also the margins' data ``(c, b)``."""
    Z = (points if K is None else K) @ coef
    d2 = np.sum((Z[i] - Z[j]) ** 2, axis=1)
    gamma, g_neg = _param(p, "margin", "gamma"), _param(p, "margin_neg", "gamma_neg")
    g_neg = gamma if g_neg is None else g_neg
    c = r / np.where(r > 0, float(gamma), float(g_neg))
    z = 1.0 - c * (1.0 - d2)
    gram = coef.T @ coef if K is None else coef.T @ K @ coef
    norm = float(np.trace(gram)) if p["regularizer"] == "trace" else float(np.linalg.norm(gram))
    mu = float(_param(p, "reg_weight", "lam")) / np.sqrt(len(r))
    return float(np.maximum(z, 0.0).mean() + mu * norm), c, 1.0 - c, mu


def _features(points, K):
    """The points' coordinates in an orthonormal basis of their feature span."""
    if K is None:
        return points
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    keep = w > 1e-12 * max(float(w[-1]), 1e-300)
    return V[:, keep] * np.sqrt(w[keep])


def _problem(cert, p, m):
    """Why the certificate is not a dual point of this fit ("" if it is)."""
    if cert.get("regularizer") != p["regularizer"]:
        return f"certificate for regularizer {cert.get('regularizer')!r}, fit {p['regularizer']!r}"
    radius, alpha = cert.get("radius"), cert.get("alpha")
    if not isinstance(radius, (int, float, np.floating)) or not np.isfinite(radius):
        return f"radius {radius!r} is not a finite number"
    if not isinstance(alpha, np.ndarray) or alpha.ndim != 1 or alpha.dtype.kind != "f":
        return "'alpha' must be a 1-d float array"
    if len(alpha) != m:
        return f"'alpha' has {len(alpha)} entries for {m} pairs"
    if not np.all(np.isfinite(alpha)) or alpha.min() < 0 or alpha.max() > (1 + 1e-12) / m:
        return f"'alpha' leaves the box [0, 1/m = {1 / m:.6g}]"
    return ""


def check(fitted, X, y=None, *, tol=None):
    """Recompute eq. (5) at the fitted operator and the bound of the certificate.

    Parameters
    ----------
    fitted : Fitted
        An OperatorSimilarity with a ``"maurer"`` certificate.
    X, y
        The arguments of ``fit``: a ``Pairs`` object, or points and labels.

    Returns
    -------
    Verification
    """
    t0 = time.perf_counter()
    p, cert = fitted.params, fitted.certificate
    points, i, j, r = _pairs(fitted, X, y)
    n = len(points)
    if len(i) == 0 or min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n:
        raise VerificationError(f"the pairs must index the {n} points of the fit.")
    K = _kernel(p, points)
    coef = np.asarray(fitted.attrs.get("coef_"), dtype=float)
    if coef.ndim != 2 or coef.shape[0] != (n if K is not None else points.shape[1]):
        raise VerificationError(f"coef_ of shape {coef.shape} does not fit the data.")
    f, c, b, mu = _objective(coef, points, K, i, j, r, p)
    tol = check_tol(tol, TOLS.get(p.get("solver"), 1e-6))
    numbers = {"model_tol": model_tol(p)}
    problem = _problem(cert, p, len(r))
    if problem:
        return _refuse(report("maurer", f, -np.inf, tol, fitted.objective, t0, **numbers),
                       f"infeasible certificate: {problem}")  # fmt: skip
    alpha, radius = cert["alpha"], max(float(cert["radius"]), f)
    Phi = _features(points, K)
    U = Phi[i] - Phi[j]
    G = (U.T * (alpha * c)) @ U
    w = np.linalg.eigvalsh(0.5 * (G + G.T))
    if p["regularizer"] == "trace":
        nu = max(0.0, -float(w[0]))
    else:
        nu = float(np.sqrt(np.sum(np.minimum(w, 0.0) ** 2)))
    val = float(b @ alpha)
    scaled = max(0.0, min(1.0, mu / nu) * val) if nu > 0 else max(0.0, val)
    lb = max(scaled, val - (radius / mu) * max(0.0, nu - mu))
    return report("maurer", f, lb, tol, fitted.objective, t0, **numbers)


KINDS = {"maurer": check}
