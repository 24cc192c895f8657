r"""Maurer's operator-valued similarity (JMLR 2008): Ω_{ψ,λ}(A) of eq. (5) over the PSD
cone, recomputed from the pairs and the points.

**Objective.** ``Ω(A) = (1/m) Σ_i max(0, z_i) + (λ/√m)‖A‖`` with
``z_i = 1 − r_i(1 − ‖T(x_i − x'_i)‖²)/γ_{r_i}`` (margins ``γ₁ = margin``,
``γ₋₁ = margin_neg`` or ``margin``) and ``‖A‖`` the Hilbert–Schmidt norm (``"hs"``) or
the trace (``"trace"``) of ``A = T*T``. The fitted ``T`` is ``x ↦ coef_ᵀx`` (linear) or
``x ↦ coef_ᵀ k(X, x)`` over the training points (kernel), so ``A``'s nonzero spectrum
is that of ``coef_ᵀ coef_`` or ``coef_ᵀ K coef_``. ``Ω(0) = mean(max(0, 1 − c_i))`` is
the problem's scale (``zero_value``).

**The problem.** Linear: the points ``X`` themselves (no truncation). Kernel: the float
kernel is only nearly PSD, so the problem is posed on the verifier's empirical features
``Φ`` (:mod:`._kernels`, where that definition is derived): operators ``A ⪰ 0`` on
``span Φ``, ``u_i = Φ_{a_i} − Φ_{b_i}``. The fit's point there is ``Ẑ = fl(Φᵀ coef_)``
(``A = ẐẐᵀ``); the objective's interval is the hull of that point's and of the applied
map's on the kernel rows themselves (``‖coef_ᵀ(K_a − K_b)‖²``, ``‖coef_ᵀ K coef_‖``), each
evaluated with a rigorous float64 error bound (:mod:`._maurer_terms`).

**Bound** (the dual of eq. (5), derived in :mod:`convexmetric.maurer.certificate`).
With ``c_i = r_i/γ_{r_i}``, ``b_i = 1 − c_i``, ``μ = λ/√m`` and, for ``α ∈ [0, 1/m]^m``,
``G(α) = Σ_i α_i c_i u_i u_iᵀ``: ``ν = ‖[G]₋‖₂`` (HS) or ``max(0, −λ_min G)`` (trace).
Then ``max(0, min(1, μ/ν) bᵀα)`` (``α`` scaled into the dual feasible set) and
``bᵀα − (F/μ) max(0, ν − μ)`` (the Lagrangian over ``{μ‖A‖ ≤ F}``, which holds every
minimiser when ``F ≥ Ω⋆``) are lower bounds; the larger is the certificate's bound.
``F`` is the certificate's ``radius``, raised to the objective's upper end when below
it. ``ν`` is bounded above rigorously (``‖[G]₋‖_F ≤ ‖Q‖_F`` for any symmetric ``Q`` with
``G + Q ⪰ 0``, proved by Cholesky; :mod:`._rigor`), ``bᵀα`` and ``μ`` below; both
bounds are monotone in them, so no tolerance enters.

=============  ==================  ====================================================
key            type                meaning
=============  ==================  ====================================================
kind           ``"maurer"``
regularizer    ``"hs"``/``"trace"``  the norm of eq. (5) the dual point belongs to
alpha          float (m,)          ``α_i ∈ [0, 1/m]``, one per pair
radius         float               ``F``, an attained objective value
=============  ==================  ====================================================

**Pairs.** ``fit(pairs)`` with a ``Pairs`` object: its points, index arrays and ``r``.
``fit(X, y)``: the estimator's oracle drew ``n_pairs`` pairs seeded by ``random_state``;
both oracles of Maurer §5.1 are re-implemented here with the same documented draws and
the pairs redrawn (label oracle: ``i, j`` uniform, ``r = +1`` iff the labels agree;
balanced: ``i`` uniform, a fair coin, ``j`` uniform over ``i``'s class or over the other
classes). A draw with ``random_state`` ``None`` or a generator cannot be replayed: the
pairs are then data the caller must pass (a ``Pairs`` object); the fit's own ``pairs_``
are never read. The caller may give ``n_pairs``, ``oracle`` and ``random_state`` (the
CLI passes its options): the problem is the caller's. No scaling is applied to ``X``
(the estimator applies none); the ``"maurer"`` kernel normalises rows to unit length,
``κ(x, y) = ½ exp(−4‖x/|x| − y/|y|‖²)``; a callable kernel is the user's function,
called as given.

Reads ``params`` ``reg_weight``, ``margin``, ``margin_neg`` (before 0.2: ``lam``,
``gamma``, ``gamma_neg``), ``regularizer``, ``kernel``, ``solver``, ``oracle``,
``n_pairs``, ``random_state`` (each checked in its domain) and ``attrs`` ``coef_`` (the
applied map), ``components_`` (where stored, or a saved model's ``components.npy``: must
be ``coef_ᵀ``) and ``points_``/``saved:kernel_points`` (kernel: must be the points). The
default tolerance is the solver's: ``1e-6`` (``"subgradient"``), ``1e-4`` (``"sgd"``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from . import _kernels
from . import _maurer_terms as T
from ._report import VerificationError, check_tol, model_tol, refused, report

#: the certified gap each solver's "optimal" means
TOLS = {"subgradient": 1e-6, "sgd": 1e-4}
ORACLES = ("balanced", "labels")


def _param(params, name, old):
    """A parameter by its name, or by its name before 0.2 (a model saved before the
    rename, or the old name given to the estimator)."""
    value = params.get(old)
    if old in params and not (isinstance(value, str) and value == "deprecated"):
        return value
    return params.get(name)


def _positive(value, name, optional=False):
    if optional and value is None:
        return None
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not ok or not np.isfinite(value) or value <= 0:
        raise VerificationError(
            f"The '{name}' parameter of OperatorSimilarity must be a float in the range "
            f"(0, inf); got {value!r}: the problem is unbounded or undefined outside it."
        )
    return float(value)


def _params(p):
    """The problem's parameters, each checked in its domain."""
    out = {
        "lam": _positive(_param(p, "reg_weight", "lam"), "reg_weight"),
        "margin": _positive(_param(p, "margin", "gamma"), "margin"),
        "margin_neg": _positive(_param(p, "margin_neg", "gamma_neg"), "margin_neg", True),
        "regularizer": p.get("regularizer"),
        "kernel": p.get("kernel"),
    }
    if out["regularizer"] not in ("hs", "trace"):
        raise VerificationError(
            "The 'regularizer' parameter of OperatorSimilarity must be "
            f"'hs' or 'trace'; got {out['regularizer']!r}."
        )
    k = out["kernel"]
    if not (k is None or callable(k) or (isinstance(k, str) and k in ("linear", "maurer"))):
        raise VerificationError(f"kernel {k!r} is not one the verifier knows.")
    return out


def _draw_settings(p, n_pairs, oracle, seed):
    """``(n_pairs, oracle, seed)`` of a redraw: the caller's, else the model's."""
    n = p.get("n_pairs") if n_pairs is None else n_pairs
    o = p.get("oracle") if oracle is None else oracle
    s = p.get("random_state") if seed is None else seed
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise VerificationError(f"'n_pairs' must be an int in [1, inf); got {n!r}.")
    if o not in ORACLES:
        raise VerificationError(f"'oracle' must be one of {ORACLES}; got {o!r}.")
    if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
        raise VerificationError(
            f"the pairs were drawn with random_state={s!r}, which cannot be replayed: pass "
            "the pairs the model was fitted on as a Pairs object (for a fit from X, y: "
            "Pairs.from_indices(X, *est.pairs_.T)), or fit with an int random_state."
        )
    return int(n), o, int(s)


def _draw(y, n, oracle, seed):
    """Redraw the estimator's pairs ``(i, j, r)`` for labels ``y`` (module doc)."""
    _, codes = np.unique(np.asarray(y), return_inverse=True)
    rows = len(codes)
    rng = np.random.default_rng(seed)
    if oracle == "labels":
        i, j = rng.integers(0, rows, n), rng.integers(0, rows, n)
        return i, j, np.where(codes[i] == codes[j], 1.0, -1.0)
    members = np.argsort(codes, kind="stable")  # the rows grouped by class
    size = np.bincount(codes)
    first = np.cumsum(size) - size
    i = rng.integers(0, rows, n)
    own = codes[i]
    same = rng.random(n) < 0.5
    pick_same = (rng.random(n) * size[own]).astype(np.int64)
    pick_other = (rng.random(n) * (rows - size[own])).astype(np.int64)
    other = np.where(pick_other < first[own], pick_other, pick_other + size[own])
    j = members[np.where(same, first[own] + pick_same, other)]
    return i, j, np.where(same, 1.0, -1.0)


def _pairs(p, X, y, draw):
    """``(points, i, j, r)`` from the fit arguments: given pairs, or redrawn."""
    if all(hasattr(X, a) for a in ("points", "i", "j", "r")):
        points, i, j = np.asarray(X.points, float), np.asarray(X.i), np.asarray(X.j)
        r = np.asarray(X.r, dtype=float)
        if not (i.shape == j.shape == r.shape and i.ndim == 1 and np.isin(r, (-1.0, 1.0)).all()):
            raise VerificationError(
                "the pairs must be index arrays i, j and labels r = ±1 of one length."
            )
    elif y is None:
        raise VerificationError("OperatorSimilarity verification needs X, y or a Pairs object.")
    else:
        points = np.asarray(X, dtype=float)
        if len(y) != len(points):
            raise VerificationError(f"'y' has {len(y)} labels for {len(points)} points.")
        i, j, r = _draw(y, *_draw_settings(p, **draw))
    n = len(points)
    if points.ndim != 2 or not np.isfinite(points).all():
        raise VerificationError(f"the points must be a finite 2-d array; got {points.shape}.")
    indices = len(i) > 0 and i.dtype.kind in "iu" and j.dtype.kind in "iu"
    if not indices or min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n:
        raise VerificationError(f"the pairs must index the {n} points of the fit.")
    return points, i, j, r


def _kernel(kernel, points):
    """The kernel matrix of the problem (``None``: linear)."""
    if kernel is None or kernel == "linear":
        return None
    if kernel == "maurer":
        return _kernels.maurer(points)
    return _kernels.symmetric(np.asarray(kernel(points, points), dtype=float))


class Refused(Exception):
    """A stored form of the map that is not the map the model applies (the message)."""


#: a stored ``metric_``/``A_`` must be ``coef_ coef_ᵀ`` to this share of ``|coef_||coef_|ᵀ``
#: (a consistency check of a copy: the map verified is ``coef_``)
COPY_RTOL = 1e-10


def _coef(attrs, points, K):
    """The applied map ``coef_``, checked against every other stored form of it."""
    coef = attrs.get("coef_")
    rows = len(points) if K is not None else points.shape[1]
    coef = None if coef is None else np.asarray(coef, dtype=float)
    if coef is None or coef.ndim != 2 or coef.shape[0] != rows or not np.isfinite(coef).all():
        shape = None if coef is None else coef.shape
        raise VerificationError(f"coef_ of shape {shape} does not fit the data ({rows} rows).")
    comp = attrs.get("components_")  # a saved model's applied components.npy is coef_ᵀ
    if comp is not None and not np.array_equal(np.asarray(comp), coef.T):
        raise Refused("components_ is not coef_ᵀ (the map transform applies)")
    for name in ("points_", "saved:kernel_points"):
        pts = attrs.get(name)
        if K is not None and pts is not None and not np.array_equal(np.asarray(pts), points):
            raise Refused(f"{name} (where the model's kernel is evaluated) are not the points")
    for name in ("metric_", "A_"):
        A = attrs.get(name)
        if K is None and A is not None:
            A, scale = np.asarray(A, dtype=float), np.abs(coef) @ np.abs(coef).T
            if A.shape != scale.shape or not (np.abs(A - coef @ coef.T) <= COPY_RTOL * scale).all():
                raise Refused(f"{name} is not coef_ coef_ᵀ")
    return coef


def _evaluate(coef, points, K, pairs, c, mu, regularizer):
    """``(Ω, resolution, problem points)``: the applied map's objective and the hull's
    half-width with its point in the kernel's features (module docstring)."""
    if K is None:
        f, err = T.objective(points, coef, None, pairs, c, mu, regularizer)
        return f, err, points
    f, err = T.objective(K, coef, K, pairs, c, mu, regularizer)
    Phi = _kernels.features(K)
    f_phi, err_phi = T.objective(Phi, Phi.T @ coef, None, pairs, c, mu, regularizer)
    return f, max(err, abs(f_phi - f) + err_phi), Phi


def _problem(cert, regularizer):
    """Why the certificate is not a dual point of this fit ("" if it is)."""
    if cert.get("regularizer") != regularizer:
        return f"certificate for regularizer {cert.get('regularizer')!r}, fit {regularizer!r}"
    radius = cert.get("radius")
    if not isinstance(radius, (int, float, np.floating)) or not np.isfinite(radius):
        return f"radius {radius!r} is not a finite number"
    return ""


def check(fitted, X, y=None, *, tol=None, n_pairs=None, oracle=None, random_state=None):
    """Recompute eq. (5) at the fitted operator and the bound of the certificate.

    Parameters
    ----------
    fitted : Fitted
        An OperatorSimilarity with a ``"maurer"`` certificate.
    X, y
        The arguments of ``fit``: a ``Pairs`` object, or points and labels.
    tol : float in (0, 1), optional
        The certified gap to verify (default: the solver's, :data:`TOLS`).
    n_pairs, oracle, random_state : optional
        The draw of the pairs from ``X, y`` (default: the model's parameters).

    Returns
    -------
    Verification
    """
    t0 = time.perf_counter()
    p, cert = _params(fitted.params), fitted.certificate
    draw = {"n_pairs": n_pairs, "oracle": oracle, "seed": random_state}
    points, i, j, r = _pairs(fitted.params, X, y, draw)
    K = _kernel(p["kernel"], points)
    tol = check_tol(tol, TOLS.get(fitted.params.get("solver"), 1e-6))
    c = T.slopes(r, p["margin"], p["margin_neg"])
    mu = T.weight(p["lam"], len(r))
    zero = float(np.maximum(1.0 - c, 0.0).mean()) * (1.0 - 8.0 * T.UNIT)
    numbers = {"model_tol": model_tol(fitted.params), "zero_value": zero}
    try:
        coef = _coef(fitted.attrs, points, K)
    except Refused as exc:
        v = report("maurer", np.nan, -np.inf, tol, fitted.objective, t0, **numbers)
        return replace(v, verified=False, reason=f"not the fitted map: {exc}")
    f, res, P = _evaluate(coef, points, K, (i, j), c, mu, p["regularizer"])
    numbers["resolution"] = res
    problem = _problem(cert, p["regularizer"])
    alpha, why = T.box(cert.get("alpha"), len(r)) if not problem else (None, "")
    if problem or why:
        return refused(
            "maurer",
            f,
            tol,
            fitted.objective,
            t0,
            f"infeasible certificate: {problem or why}",
            **numbers,
        )
    radius = max(float(cert["radius"]), float(np.nextafter(np.nextafter(f + res, np.inf), np.inf)))
    nu = T.violation_upper(alpha, P, (i, j), c, p["regularizer"])
    lb = T.lower_bound(T.value_lower(alpha, c), nu, mu, radius)
    return report("maurer", f, lb, tol, fitted.objective, t0, **numbers)


KINDS = {"maurer": check}
