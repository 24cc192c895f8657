r"""Partial order embedding (McFee & Lanckriet 2011): LPOE, KPOE, MKPOE (Alg. 2–4) and
their diagonal LPs (§4.4), recomputed from the comparisons and the items.

**Objective** (the SDP of Alg. 2–4 with the slacks eliminated):
``f(W) = Σ_p tr(Wᵖ Rᵖ) + s Σ_c max(0, 1 + d(i, j) − d(k, l))``, ``s = β/|C|``,
``d(a, b) = Σ_p (Fᵖ_a − Fᵖ_b)ᵀ Wᵖ (Fᵖ_a − Fᵖ_b)``, with the blocks ``(F, R) = (X, I)``
(LPOE, ``kernel=None``), ``(K, K)`` (KPOE; ``K`` recomputed here from ``X``: ``XXᵀ``,
``exp(−γ‖x − x'‖²)`` with ``γ = 1/(D·var X)`` by default, or ``X`` itself when
precomputed) and one ``(Kᵖ, Kᵖ)`` per kernel (MKPOE). Diagonal ``Wᵖ`` are vectors.

**Bound.** ``s·max(0, z) = max_{0≤λ≤s} λz`` makes ``f(W) = max_λ Σλ_c + Σ_p ⟨Wᵖ, Sᵖ(λ)⟩``
with ``Sᵖ(λ) = Rᵖ + Σ_c λ_c [(Fᵖ_i − Fᵖ_j)(·)ᵀ − (Fᵖ_k − Fᵖ_l)(·)ᵀ]``. For any ``λ`` in
the box let ``μ = min_p λ_min(Sᵖ, Rᵖ)`` (generalised, on the range of ``Rᵖ``: in the
coordinates ``Φᵖ = V Λ^{1/2}`` of ``Rᵖ = VΛVᵀ`` it is ``λ_min(I + ΦᵀL(λ)Φ)``; diagonal:
``min_t (Sᵖ_tt/Rᵖ_tt)``). Every minimiser has ``Σ tr(RᵖWᵖ) ≤ f⋆ ≤ F`` for any attained
value ``F``, so ``f⋆ ≥ Σλ + F·min(0, μ)``; and (full) ``λ/(1 − μ)`` is dual feasible,
so ``f⋆ ≥ Σλ/(1 − μ)`` too. The full form reports the larger, the diagonal form the
first. ``F`` is the certificate's ``radius``, raised to the objective recomputed here
when below it (a smaller radius is not proved).

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
                                   (checked: distinct, no repeated edge, acyclic)
=============  ==================  ====================================================

Reads ``params`` ``beta``, ``tol``, ``diagonal``, ``filter_graph``, ``kernel`` and
``gamma`` (POE) and ``attrs`` ``W_``. The comparisons come from the fit arguments
(``Comparisons``, an ``(m, 4)``/``(m, 3)`` array, or ``ItemComparisons`` carrying the
items); the filter's choice is read from the certificate and checked to be what §2.2
guarantees (distinct input comparisons, no repeated edge, no cycle); Alg. 1's seeded
order and the transitive reduction are not re-derived.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ._report import VerificationError, check_tol, model_tol, report

#: the certified gap verified when the caller gives no ``tol`` (the estimators' default)
DEFAULT_TOL = 1e-4
#: rows of a block of comparisons evaluated at once
BLOCK = 4096


def _refuse(v, reason):
    return replace(v, verified=False, reason="; ".join(x for x in (reason, v.reason) if x))


def _comparisons(C):
    """``(m, 4)`` int64 array of ``(i, j, k, l)`` from any accepted form."""
    if all(hasattr(C, a) for a in "ijkl") and not isinstance(C, np.ndarray):
        return np.column_stack([np.asarray(getattr(C, a)) for a in "ijkl"]).astype(np.int64)
    arr = np.asarray(C)
    if arr.ndim != 2 or arr.shape[1] not in (3, 4):
        raise VerificationError(f"comparisons must have shape (m, 4) or (m, 3); got {arr.shape}.")
    if arr.shape[1] == 3:
        arr = arr[:, [0, 1, 0, 2]]
    return arr.astype(np.int64)


def _rbf(X, gamma):
    sq = np.sum(X * X, 1)
    return np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0))


def _blocks(fitted, items):
    """The feature blocks ``[(F, R)]`` of the fitted formulation from the fit's items."""
    p = fitted.params
    if fitted.estimator == "MKPOE":
        ks = [items] if isinstance(items, np.ndarray) and items.ndim == 2 else list(items)
        return [(np.asarray(K, float), np.asarray(K, float)) for K in ks]
    X = np.asarray(items, dtype=float)
    kernel = p.get("kernel")
    if kernel is None:
        return [(X, None)]  # R = I
    if kernel == "linear":
        K = X @ X.T
    elif kernel == "rbf":
        var = float(X.var())
        gamma = p.get("gamma") or (1.0 / (X.shape[1] * var) if var > 0 else 1.0)
        K = _rbf(X, float(gamma))
    elif kernel == "precomputed":
        K = X
    else:
        raise VerificationError(f"POE kernel {kernel!r} is not one the verifier knows.")
    return [(K, K)]


def _objective(Ws, blocks, C, s):
    """``f(W)`` by row blocks of comparisons (float64)."""
    z = np.ones(len(C))
    reg = 0.0
    for W, (F, R) in zip(Ws, blocks):
        W = np.asarray(W, dtype=float)
        diag = W.ndim == 1
        if diag:
            reg += float(W.sum() if R is None else np.diag(R) @ W)
        else:
            reg += float(np.trace(W) if R is None else np.sum(W * R))
        for a in range(0, len(C), BLOCK):
            c = C[a : a + BLOCK]
            U, V = F[c[:, 0]] - F[c[:, 1]], F[c[:, 2]] - F[c[:, 3]]
            if diag:
                z[a : a + BLOCK] += (U * U) @ W - (V * V) @ W
            else:
                z[a : a + BLOCK] += np.sum((U @ W) * U, 1) - np.sum((V @ W) * V, 1)
    return reg + s * float(np.maximum(z, 0.0).sum())


def _range_coordinates(F, R):
    """``Φ`` with ``Φ_a = coordinates of F_a`` in the orthonormal basis where ``R = I``."""
    if R is None:
        return F
    w, V = np.linalg.eigh(0.5 * (R + R.T))
    keep = w > 1e-12 * max(float(w[-1]), 1e-300)
    # F = R for kernel blocks: rows of K in the basis V Λ^{-1/2} are V Λ^{1/2}
    return (F @ V[:, keep]) / np.sqrt(w[keep])


def _mu_full(lam, blocks, C):
    """``min_p λ_min(I + Φᵖᵀ L(λ) Φᵖ)``."""
    mu = np.inf
    for F, R in blocks:
        Phi = _range_coordinates(F, R)
        S = np.eye(Phi.shape[1])
        for a in range(0, len(C), BLOCK):
            c, lb = C[a : a + BLOCK], lam[a : a + BLOCK]
            U, V = Phi[c[:, 0]] - Phi[c[:, 1]], Phi[c[:, 2]] - Phi[c[:, 3]]
            S += (U.T * lb) @ U - (V.T * lb) @ V
        mu = min(mu, float(np.linalg.eigvalsh(0.5 * (S + S.T))[0]))
    return mu


def _mu_diagonal(lam, blocks, C):
    """``min_t (r_t − (Aᵀλ)_t)/r_t`` over every block's coordinates (``r = diag R``)."""
    mu = np.inf
    for F, R in blocks:
        r = np.ones(F.shape[1]) if R is None else np.diag(R).astype(float)
        if not np.all(r > 0):
            return -np.inf
        g = r.copy()
        for a in range(0, len(C), BLOCK):
            c, lb = C[a : a + BLOCK], lam[a : a + BLOCK]
            U, V = F[c[:, 0]] - F[c[:, 1]], F[c[:, 2]] - F[c[:, 3]]
            g -= lb @ (V * V - U * U)
        mu = min(mu, float((g / r).min()))
    return mu


def _dual_problems(cert, fitted, n_input, n_blocks):
    """Why the certificate is not a dual point of this fit ("" if it is)."""
    form = "diagonal" if fitted.params.get("diagonal") else "full"
    if cert.get("form") != form:
        return f"certificate form {cert.get('form')!r} but the estimator is {form}"
    if cert.get("blocks") != n_blocks:
        return f"certificate has {cert.get('blocks')!r} blocks; the data give {n_blocks}"
    radius = cert.get("radius")
    if not isinstance(radius, (int, float, np.floating)) or not np.isfinite(radius):
        return f"radius {radius!r} is not a finite number"
    kept = cert.get("comparisons")
    if (kept is not None) != bool(fitted.params.get("filter_graph")):
        return "the filtered comparisons are missing or given without filter_graph"
    if kept is not None:
        kept = np.asarray(kept)
        if kept.ndim != 1 or kept.dtype.kind not in "iu":
            return "'comparisons' must be a 1-d integer array"
        if len(kept) and (kept.min() < 0 or kept.max() >= n_input):
            return f"'comparisons' holds indices outside [0, {n_input})"
        if len(np.unique(kept)) != len(kept):
            return "'comparisons' repeats an input comparison"
    return ""


def _filter_problems(C):
    """What the filter of §2.2 guarantees and ``C`` (the kept comparisons) breaks: an
    edge repeated between the same unordered pairs, or a cycle of pair-vertices."""
    n = int(C.max()) + 1
    left = np.minimum(C[:, 0], C[:, 1]) * n + np.maximum(C[:, 0], C[:, 1])
    right = np.minimum(C[:, 2], C[:, 3]) * n + np.maximum(C[:, 2], C[:, 3])
    keys, vert = np.unique(np.concatenate([left, right]), return_inverse=True)
    u, v = vert[: len(C)], vert[len(C) :]
    if len(np.unique(u * len(keys) + v)) != len(C):
        return "the kept comparisons repeat an edge"
    alive, indeg = np.ones(len(C), bool), np.bincount(v, minlength=len(keys))
    while alive.any():  # Kahn: peel the vertices without incoming edges
        source = indeg == 0
        out = alive & source[u]
        if not out.any():
            return "the kept comparisons contain a cycle"
        alive &= ~out
        indeg = np.bincount(v[alive], minlength=len(keys))
    return ""


def _lam_problems(lam, m, s):
    if not isinstance(lam, np.ndarray) or lam.ndim != 1 or lam.dtype.kind != "f":
        return "'lam' must be a 1-d float array"
    if len(lam) != m:
        return f"'lam' has {len(lam)} multipliers for {m} comparisons"
    if not np.all(np.isfinite(lam)) or lam.min() < 0.0 or lam.max() > s * (1 + 1e-12):
        return f"'lam' leaves the box [0, β/m = {s:.6g}]"
    return ""


def check(fitted, comparisons, items=None, *, tol=None, **kwargs):
    """Recompute (MK)POE's objective at ``W_`` and the bound of the certificate.

    Parameters
    ----------
    fitted : Fitted
        A POE or MKPOE with a ``"poe"`` certificate.
    comparisons, items
        The arguments of ``fit``: the comparisons and ``X`` (POE) or the kernels (MKPOE);
        ``items`` may be omitted when ``comparisons`` carries them (``.items``).

    Returns
    -------
    Verification
    """
    t0 = time.perf_counter()
    if items is None:
        items = kwargs.pop("X", kwargs.pop("kernels", getattr(comparisons, "items", None)))
    if items is None:
        raise VerificationError(f"{fitted.estimator} verification needs the items of the fit.")
    cert, p = fitted.certificate, fitted.params
    C_in = _comparisons(comparisons)
    blocks = _blocks(fitted, items)
    n = blocks[0][0].shape[0]
    if len(C_in) == 0 or C_in.min() < 0 or C_in.max() >= n:
        raise VerificationError(f"the comparisons must index the {n} items of the fit.")
    W = fitted.attrs.get("W_")
    Ws = list(W) if fitted.estimator == "MKPOE" else [W]
    if W is None or len(Ws) != len(blocks):
        raise VerificationError(f"W_ does not hold one matrix per block ({len(blocks)}).")
    problem = _dual_problems(cert, fitted, len(C_in), len(blocks))
    kept = cert.get("comparisons") if not problem else None
    C = C_in if kept is None else C_in[np.asarray(kept)]
    problem = problem or (_filter_problems(C) if kept is not None else "")
    s = float(p["beta"]) / len(C)
    f = _objective(Ws, blocks, C, s)
    tol = check_tol(tol, DEFAULT_TOL)
    numbers = {"model_tol": model_tol(p)}
    lam = cert.get("lam")
    problem = problem or _lam_problems(lam, len(C), s)
    if problem:
        v = report("poe", f, -np.inf, tol, fitted.objective, t0, **numbers)
        return _refuse(v, f"infeasible certificate: {problem}")
    radius = max(float(cert["radius"]), f)
    total = float(lam.sum())
    if cert["form"] == "diagonal":
        mu = _mu_diagonal(lam, blocks, C)
        lb = total + radius * min(0.0, mu)
    else:
        mu = _mu_full(lam, blocks, C)
        lb = total if mu >= 0 else max(total + radius * mu, total / (1.0 - mu))
    return report("poe", f, lb, tol, fitted.objective, t0, **numbers)


KINDS = {"poe": check}
