r"""Partial order embedding (McFee & Lanckriet 2011): LPOE, KPOE, MKPOE (Alg. 2–4) and
their diagonal LPs (§4.4), recomputed from the comparisons and the items.

**Objective** (the SDP of Alg. 2–4 with the slacks eliminated):
``f(W) = Σ_p tr(Wᵖ Rᵖ) + s Σ_c max(0, 1 + d(i, j) − d(k, l))``, ``s = β/|C|``,
``d(a, b) = Σ_p (Fᵖ_a − Fᵖ_b)ᵀ Wᵖ (Fᵖ_a − Fᵖ_b)``, over ``Wᵖ ⪰ 0`` (diagonal: ``wᵖ ≥ 0``).
The problems, as this verifier defines them from the fit's arguments and parameters:

* LPOE (``kernel=None``): ``(F, R) = (X, I)``;
* full KPOE and MKPOE: the kernel problem on the verifier's empirical features
  (:mod:`._kernels`, where the truncation of the float kernel is derived and part of the
  definition): ``(F, R) = (Φᵖ, I)``, ``Φᵖ`` from ``Kᵖ`` recomputed here (``XXᵀ``,
  ``exp(−γ‖x − x'‖²)`` with ``γ = 1/(D·var X)`` by default, ``X`` itself for
  ``"precomputed"``, or MKPOE's kernels; each symmetrised);
* the diagonal LPs: ``(F, R) = (X, I)`` or ``(Kᵖ, Kᵖ)`` with ``Kᵖ`` itself (no truncation:
  ``Σ_t K_tt w_t`` is bounded below for ``w ≥ 0`` when ``diag K > 0``, which the bound
  checks).

The objective is evaluated at every stored form of the learned map, with a rigorous
float64 error bound, and the report's resolution is the hull of those intervals
(:mod:`._poe_maps`: feasibility of ``W_``, ``components_`` against ``W_``, the kernel
point in ``Φ``). ``f(0) = β`` (every hinge at 1) is the problem's scale (``zero_value``).

**Bound.** ``s·max(0, z) = max_{0≤λ≤s} λz`` makes ``f(W) = max_λ Σλ_c + Σ_p ⟨Wᵖ, Sᵖ(λ)⟩``
with ``Sᵖ(λ) = Rᵖ + Σ_c λ_c [(Fᵖ_i − Fᵖ_j)(·)ᵀ − (Fᵖ_k − Fᵖ_l)(·)ᵀ]``. For any ``λ`` in
the box let ``μ = min_p λ_min(Sᵖ)`` (``Rᵖ = I``), or ``min_{p,t} Sᵖ_tt/Rᵖ_tt`` (diagonal).
Every minimiser has ``Σ tr(RᵖWᵖ) ≤ f⋆ ≤ F`` for any ``F ≥ f⋆`` (the hinge is ≥ 0), and
``⟨Wᵖ, Sᵖ⟩ ≥ μ tr(RᵖWᵖ)``, so ``f⋆ ≥ Σλ + F·min(0, μ)``; and (full)
``Sᵖ(λ/(1 − μ)) = (Sᵖ(λ) − μI)/(1 − μ) ⪰ 0``, so ``λ/(1 − μ)`` is dual feasible and
``f⋆ ≥ Σλ/(1 − μ)`` too. The full form reports the larger, the diagonal form the first.
``F`` is the certificate's ``radius``, raised to the objective's upper end
``objective + resolution`` (an attained value of a feasible point) when below it.
Both formulas increase with ``μ``, so a rigorous lower bound on ``μ`` gives a rigorous
bound (:mod:`._poe_bound`): no tolerance enters, and multipliers within
:data:`._poe_bound.BOX_RTOL` above ``β/m`` are clipped into the box, not trusted.

=============  ==================  ====================================================
key            type                meaning
=============  ==================  ====================================================
kind           ``"poe"``
form           ``"full"`` or       the SDPs (Alg. 2–4) or their diagonal LPs (§4.4)
               ``"diagonal"``
blocks         int                 the number of ``Wᵖ``: 1 (LPOE, KPOE) or the
                                   number of kernels (MKPOE)
lam            float (m,)          ``λ_c ∈ [0, β/m]``, one per comparison
radius         float               ``F``, an attained objective value
comparisons    int (m,), optional  with ``filter_graph=True``: the input comparisons
                                   kept by the filter (§2.2), whose problem was solved
=============  ==================  ====================================================

**The kept comparisons** (``filter_graph=True``) are recomputed by the verifier's own
filter (:mod:`._graph`) with the int ``random_state`` and must equal the certificate's
list; without a replayable seed the list must be a possible output of the filter for
some order of Alg. 1 (:func:`._graph.alg1_possible`).

Reads ``params`` ``beta``, ``diagonal``, ``filter_graph``, ``random_state``, ``kernel``
and ``gamma`` (POE; each checked in its domain: a problem outside it is unbounded or
undefined, and not verified) and ``attrs`` ``components_``, ``W_`` and, where present,
``embedding_``, ``X_fit_`` and ``gamma_`` (the kernel the model applies; a saved model's
``saved:kernel_points`` and ``saved:kernel_gamma`` likewise). The
comparisons come from the fit arguments (``Comparisons``, an ``(m, 4)``/``(m, 3)``
array, or ``ItemComparisons`` carrying the items).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from . import _graph, _kernels
from . import _poe_bound as B
from ._poe_maps import Block, Refused, check_factor, check_metric, evaluate
from ._poe_maps import _embedding_problem as embedding_problem
from ._report import VerificationError, check_tol, model_tol, refused, report

#: the certified gap verified when the caller gives no ``tol`` (the estimators' default)
DEFAULT_TOL = 1e-4
KERNELS = (None, "linear", "rbf", "precomputed")


def _comparisons(C):
    """``(m, 4)`` int64 array of ``(i, j, k, l)`` from any accepted form."""
    if all(hasattr(C, a) for a in "ijkl") and not isinstance(C, np.ndarray):
        return np.column_stack([np.asarray(getattr(C, a)) for a in "ijkl"]).astype(np.int64)
    arr = np.asarray(C)
    integral = arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and np.all(arr == np.round(arr)))
    if arr.ndim != 2 or arr.shape[1] not in (3, 4) or not integral:
        raise VerificationError(
            f"comparisons must be integer indices of shape (m, 4) or (m, 3); got {arr.shape}."
        )
    if arr.shape[1] == 3:
        arr = arr[:, [0, 1, 0, 2]]
    return arr.astype(np.int64)


def _number(p, name, owner, *, optional=False):
    """A parameter that must be a finite float in ``(0, inf)`` (or ``None``)."""
    v = p.get(name)
    if optional and v is None:
        return None
    ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    if not ok or not np.isfinite(v) or v <= 0:
        raise VerificationError(
            f"The '{name}' parameter of {owner} must be a float in the range (0, inf); got "
            f"{v!r}: the problem is unbounded or undefined outside it."
        )
    return float(v)


def _params(fitted):
    """The problem's parameters, each checked in its domain."""
    p, owner = fitted.params, fitted.estimator
    out = {"beta": _number(p, "beta", owner)}
    for name in ("diagonal", "filter_graph"):
        v = p.get(name, False)
        if not isinstance(v, (bool, np.bool_)):
            raise VerificationError(f"The '{name}' parameter of {owner} must be a bool; got {v!r}.")
        out[name] = bool(v)
    out["kernel"] = p.get("kernel") if owner == "POE" else "mkpoe"
    if owner == "POE" and out["kernel"] not in KERNELS:
        raise VerificationError(
            f"The 'kernel' parameter of POE must be one of {KERNELS}; got {out['kernel']!r}."
        )
    out["gamma"] = _number(p, "gamma", owner, optional=True) if owner == "POE" else None
    seed = p.get("random_state")
    replay = isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
    out["seed"] = int(seed) if replay else None
    return out


def _blocks(fitted, items, p):
    """The problem's blocks from the fit's items (module docstring)."""
    if p["kernel"] == "mkpoe":
        ks = [items] if isinstance(items, np.ndarray) and items.ndim == 2 else list(items)
        ks = [_square(K) for K in ks]
        if not ks or len({len(K) for K in ks}) != 1:
            raise VerificationError("MKPOE's kernels must be square matrices over the same items.")
        return [Block(K, K) for K in ks]
    X = np.asarray(items, dtype=float)
    if X.ndim != 2 or not np.isfinite(X).all():
        raise VerificationError(f"the items X must be a finite 2-d array; got shape {X.shape}.")
    if p["kernel"] is None:
        return [Block(X)]
    if p["kernel"] == "precomputed":
        K = _square(X)
        return [Block(K, K)]
    for name in ("X_fit_", "saved:kernel_points"):  # where the applied kernel is taken
        fit_x = fitted.attrs.get(name)
        if fit_x is not None and not np.array_equal(np.asarray(fit_x), X):
            raise Refused(f"{name} (the points the model's kernel applies to) is not the items X")
    if p["kernel"] == "linear":
        K = _kernels.symmetric(X @ X.T)
    else:
        width = _kernels.rbf_width(X, p["gamma"])
        for name in ("gamma_", "saved:kernel_gamma"):  # the width the model applies
            applied = fitted.attrs.get(name)
            if applied is not None and float(applied) != width:
                raise Refused(
                    f"the model applies {name} = {applied!r}, the problem's rbf width is {width!r}"
                )
        K = _kernels.rbf(X, width)
    return [Block(K, K)]


def _square(K):
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or not np.isfinite(K).all():
        raise VerificationError(f"a kernel must be a finite square matrix; got shape {K.shape}.")
    return _kernels.symmetric(K)


def _kept(cert, C_in, p):
    """``(kept input indices or None, problem)`` (module docstring)."""
    kept = cert.get("comparisons")
    if not p["filter_graph"]:
        return None, (
            "the certificate names filtered comparisons without filter_graph"
            if kept is not None
            else ""
        )
    if kept is None:
        return None, "filter_graph=True but the certificate names no kept comparisons"
    kept = np.asarray(kept)
    if kept.ndim != 1 or kept.dtype.kind not in "iu" or (len(kept) and kept.min() < 0):
        return None, "'comparisons' must be a 1-d array of input indices"
    if p["seed"] is not None:
        mine = _graph.filtered(C_in, p["seed"])
        if not np.array_equal(kept, mine):
            return None, (
                f"the kept comparisons are not the filter's with random_state="
                f"{p['seed']} ({len(mine)} recomputed, {len(kept)} claimed)"
            )
        return mine, ""
    if len(kept) and (np.any(np.diff(kept) <= 0) or kept.max() >= len(C_in)):
        return None, "'comparisons' must be increasing indices of the input comparisons"
    why = _graph.alg1_possible(C_in, kept)
    return (None, f"the kept comparisons are no output of the filter: {why}") if why else (kept, "")


def _maps(fitted, blocks, diagonal):
    """Every block's ``components_`` and ``W_`` (``None`` where not stored), checked."""
    multi = fitted.estimator == "MKPOE"
    found = []
    for name, check in (("components_", check_factor), ("W_", check_metric)):
        value = fitted.attrs.get(name)
        if value is None:
            found.append(None)
            continue
        values = list(value) if multi else [value]
        if len(values) != len(blocks):
            raise Refused(f"{name} holds {len(values)} maps for {len(blocks)} blocks")
        found.append([check(v, b.rows.shape[1], diagonal, name) for v, b in zip(values, blocks)])
    if found == [None, None]:
        raise VerificationError(f"{fitted.estimator} verification needs components_ or W_.")
    emb = fitted.attrs.get("embedding_")
    if emb is not None and found[0] is not None and embedding_problem(emb, blocks, found[0]):
        raise Refused("embedding_ is not the training items mapped by components_")
    return found


def check(fitted, comparisons, items=None, *, tol=None, **kwargs):
    """Recompute (MK)POE's objective at the fitted map and the bound of the certificate.

    Parameters
    ----------
    fitted : Fitted
        A POE or MKPOE with a ``"poe"`` certificate.
    comparisons, items
        The arguments of ``fit``: the comparisons and ``X`` (POE) or the kernels (MKPOE);
        ``items`` may be omitted when ``comparisons`` carries them (``.items``).
    tol : float in (0, 1), optional
        The certified gap to verify (default :data:`DEFAULT_TOL`; never the model's).

    Returns
    -------
    Verification
    """
    t0 = time.perf_counter()
    if items is None:
        items = kwargs.pop("X", kwargs.pop("kernels", getattr(comparisons, "items", None)))
    if items is None:
        raise VerificationError(f"{fitted.estimator} verification needs the items of the fit.")
    p, cert = _params(fitted), fitted.certificate
    tol = check_tol(tol, DEFAULT_TOL)
    numbers = {"model_tol": model_tol(fitted.params), "zero_value": p["beta"]}
    C_in = _comparisons(comparisons)
    try:
        blocks = _blocks(fitted, items, p)
        n = blocks[0].rows.shape[0]
        if len(C_in) == 0 or C_in.min() < 0 or C_in.max() >= n:
            raise VerificationError(f"the comparisons must index the {n} items of the fit.")
        kept, problem = _kept(cert, C_in, p)
        C = C_in if kept is None else C_in[kept]
        if len(C) == 0:
            raise VerificationError("no comparison is left to verify after the graph filter.")
        Ns, Ws = _maps(fitted, blocks, p["diagonal"])
        f, res, note = evaluate(blocks, Ns, Ws, C, p["beta"], p["diagonal"])
    except Refused as exc:
        return _unmapped(str(exc), tol, fitted, t0, numbers)
    numbers["resolution"] = res
    problem = problem or _dual_problems(cert, p, len(blocks))
    lam, why = B.box(cert.get("lam"), p["beta"], len(C)) if not problem else (None, "")
    problem = problem or why
    if problem:
        return refused(
            "poe", f, tol, fitted.objective, t0, f"infeasible certificate: {problem}", **numbers
        )
    radius = max(float(cert["radius"]), B.above(f + res))  # f(map) ≤ f + res, and f⋆ ≤ f(map)
    if p["diagonal"]:
        mu = B.mu_diagonal(lam, [b.rows for b in blocks], [b.reg(True) for b in blocks], C)
    else:
        mu = B.mu_full(lam, [b.features() for b in blocks], C)
    lb = B.lower_bound(lam, mu, radius, cert["form"])
    v = report("poe", f, lb, tol, fitted.objective, t0, **numbers)
    if not v.verified and note:
        v.reason += f"; the objective at {note} differs from the applied map's (± {res:.3g})"
    return v


def _unmapped(why, tol, fitted, t0, numbers):
    """The report of a fit whose stored map is infeasible or not one map: nothing is
    recomputed (the objective is NaN), the reason says why."""
    v = report("poe", np.nan, -np.inf, tol, fitted.objective, t0, **numbers)
    return replace(v, verified=False, reason=f"not the fitted map: {why}")


def _dual_problems(cert, p, n_blocks):
    """Why the certificate is not a dual point of this problem ("" if it is)."""
    form = "diagonal" if p["diagonal"] else "full"
    if cert.get("form") != form:
        return f"certificate form {cert.get('form')!r} but the estimator is {form}"
    if cert.get("blocks") != n_blocks:
        return f"certificate has {cert.get('blocks')!r} blocks; the data give {n_blocks}"
    radius = cert.get("radius")
    if not isinstance(radius, (int, float, np.floating)) or not np.isfinite(radius):
        return f"radius {radius!r} is not a finite number"
    return ""


KINDS = {"poe": check}
