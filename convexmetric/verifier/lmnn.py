r"""The LMNN family's checks: eq. (14) of Weinberger & Saul (2009) and its dual bound,
recomputed from the data.

**Eq. (14).** With target neighbours ``j ⇝ i`` (the ``k`` nearest points of ``i``'s class)
and ``D(i, j) = (x_i − x_j)ᵀM(x_i − x_j)``,

.. math::

    f(M) = (1 − μ)\sum_{i, j⇝i} D(i, j)
         + μ \sum_{i, j⇝i} \sum_{l: y_l ≠ y_i} [1 + D(i, j) − D(i, l)]_+ .

Every ``λ ∈ [0, 1]`` per triplet ``t = (i, j, l)`` gives ``f(M) ≥ μΣλ + ⟨S(λ), M⟩`` for
all ``M ⪰ 0``, with ``S(λ) = (1 − μ)P + μΣλ_t(C_ij − C_il)``, ``P = Σ C_ij`` the pull
matrix and ``C_ab = (x_a − x_b)(x_a − x_b)ᵀ``. If ``S(λ) − ν(1 − μ)P ⪰ 0`` on the whole
space (``ν ≤ 0``), then since ``(1 − μ)⟨P, M*⟩ ≤ f*`` both ``f* ≥ μΣλ/(1 − ν)`` and
``f* ≥ μΣλ + νF`` hold, for any ``F ≥ f*``; the verifier takes
``F = max(F_certificate, f(M_fitted))`` rounded up and the larger bound, proving the
matrix inequality with its rounding accounted for (:mod:`._lmnn_bound`). Several metrics
(§5.2): the pair ``(a, b)`` under the metric ``M^{g(b)}`` of ``b``'s cluster, one such
inequality per cluster, ``ν`` the least.

**What is the user's** (never taken from the fit on trust, :mod:`._lmnn_problem`):

* ``k`` and ``μ`` in their domains (``μ ∈ [0, 1)``), the tolerance the caller's;
* the map: ``components_`` (``L``, ``M = LᵀL``: what ``transform`` and ``predict``
  apply), every stored copy (``metric_``, ``metrics_``, ``A_``) equal to ``LᵀL``;
* the target neighbours: ``targets_`` must be the ``k`` nearest same-class points up
  to the rounding of their distances (a rigorous bound, relative to the data's scale),
  in the input distance (pass 1), in the previous pass's learned distance (``n_passes >
  1``, §5.1: that pass is stored with the model and verified first, in turn), or the
  user's own targets given to :func:`~convexmetric.verify` as to ``fit``; a class of
  ``m ≤ k`` points gives its points the ``m − 1`` others (padding: the point itself;
  a class of one point gives it none: it enters eq. (14) only as an impostor ``l``);
* the clusters (``MultiMetricLMNN``): the classes with ``n_clusters=None``, else checked
  to be a k-means partition (:func:`._lmnn_problem.clusters`);
* the kernel (``KernelLMNN``): recomputed from ``X`` and the parameters. The objective
  is that of the map applied, ``L`` on the kernel rows (what ``transform`` does). The
  bound is proved over the problem's documented features, computed here: the
  empirical map ``Φ`` of the centred kernel ``HKH`` (``HKH = ΦΦᵀ``; distances do not
  move) over its eigenvalues above :data:`KERNEL_RTOL` ``·λ_max``. "Verified" then
  says that no map on those features does better than ``tol`` (relative) below the
  model's — the kernel at its numerical rank is the problem, to the rounding of its
  eigendecomposition.

**Resolution.** The objective's float64 error is bounded rigorously from the quantities
computed (:mod:`._lmnn_objective`: componentwise in ``|x̃||L|``, so a direction in which the data
do not vary adds nothing however large the map is there). The verdict uses it
(:func:`._report.report`).

**Certificates** (``result_.certificate``; indices int32, or int64 past 2³¹ points):

============  ==========  ===============================================================
kind          key         meaning
============  ==========  ===============================================================
lmnn          ``i``       (m,) int: the triplets' points, with ``λ_t > 0`` only
              ``j``       (m,) int: a target neighbour of ``i``
              ``l``       (m,) int: an impostor candidate, ``y_l ≠ y_i``
              ``lam``     (m,) float64 in ``[0, 1]``: the multipliers ``λ_t``
              ``F``       float: the attained value of the trace bound (NaN: not used)
lmnn_multi    (same)      the same keys, for the multi-metric objective (§5.2)
lmnn_kernel   (same)      the same dual point of eq. (14) over the rows of ``Φ``
============  ==========  ===============================================================

Cost: ``O(n²(d + k))`` for the targets and the objective (float64 row blocks; under one
metric each differently labelled pair is formed once, for the hinges of both its
orientations), ``O(pd²)`` for the bound's scatters over the ``p`` distinct pairs of the
certificate and of the targets.
"""

from __future__ import annotations

import time

import numpy as np

from . import _lmnn_bound as B
from . import _lmnn_problem as P
from ._lmnn_objective import Mapped, objective, zero_value
from ._report import VerificationError, check_tol, model_tol, refused, report
from ._rigor import sum_upper

#: the certified gap verified when the caller gives no ``tol`` (the estimators' default)
DEFAULT_TOL = 1e-4
#: ``KernelLMNN``'s empirical features keep the kernel's eigenvalues above this share of
#: the largest (the problem's definition: the kernel at its numerical rank)
KERNEL_RTOL = 1e-10


def check_lmnn(fitted, X, y, targets=None, *, tol=None):
    """Verify an ``LMNN`` fit (kind ``"lmnn"``) from its training data (``targets``:
    the user's own, as given to ``fit``)."""
    t0 = time.perf_counter()
    for name in ("pca", "n_components"):
        if fitted.params.get(name) is not None:
            raise VerificationError(
                f"LMNN with {name}={fitted.params[name]!r}: the certificate is that of the "
                "reduced problem; only full-dimensional fits are verified."
            )
    X, y = _data(X, y)
    k, mu = P.problem_params(fitted.params)
    tol = check_tol(tol, DEFAULT_TOL)
    L = P.applied_map(fitted, X.shape[1], "metric_")
    base, why = _pass_distance(fitted, X, y, targets, tol)
    if why:
        return refused("lmnn", np.nan, tol, fitted.objective, t0, why)
    T = _targets(fitted, base, y, k, targets)
    P.saved_arrays(fitted, X, y, X, L)
    return _check("lmnn", fitted, (X, y, T, mu, tol), [L], np.zeros(len(y), np.int64), t0)


def check_multi(fitted, X, y, targets=None, *, tol=None):
    """Verify a ``MultiMetricLMNN`` fit (kind ``"lmnn_multi"``) from its training data."""
    t0 = time.perf_counter()
    X, y = _data(X, y)
    k, mu = P.problem_params(fitted.params)
    tol = check_tol(tol, DEFAULT_TOL)
    g, c = P.clusters(fitted, X, y)
    Ls = fitted.attrs.get("components_")
    Ls = None if Ls is None else np.asarray(Ls, dtype=np.float64)
    if Ls is None or Ls.ndim != 3 or Ls.shape[0] != c or Ls.shape[2] != X.shape[1]:
        raise VerificationError(f"components_ must be ({c}, r, {X.shape[1]}): one map a cluster.")
    if not np.isfinite(Ls).all():
        raise VerificationError("components_ holds NaN or infinite values.")
    if "metrics_" in fitted.attrs:
        Ms = np.asarray(fitted.attrs["metrics_"])
        if Ms.shape != (c, X.shape[1], X.shape[1]):
            raise VerificationError(f"metrics_ must be ({c}, {X.shape[1]}, {X.shape[1]}).")
        for M, Lc in zip(Ms, Ls):
            P.same_copy("metrics_", M, Lc)
    T = _targets(fitted, P.euclidean(X), y, k, targets)
    P.saved_arrays(fitted, X, y)
    return _check("lmnn_multi", fitted, (X, y, T, mu, tol), list(Ls), g, t0)


def check_kernel(fitted, X, y, *, tol=None):
    """Verify a ``KernelLMNN`` fit (kind ``"lmnn_kernel"``) from its training data."""
    t0 = time.perf_counter()
    X, y = _data(X, y)
    k, mu = P.problem_params(fitted.params)
    tol = check_tol(tol, DEFAULT_TOL)
    K, gamma = _kernel(fitted.params, X)
    saved = fitted.attrs.get("saved:kernel_gamma")
    if saved is not None and not abs(saved - gamma) <= 1e-12 * gamma:
        raise VerificationError(f"the saved model applies gamma={saved!r}; the data: {gamma!r}.")
    T = _targets(fitted, P.kernel_distances(K), y, k)
    L = P.applied_map(fitted, K.shape[0], "A_")
    P.saved_arrays(fitted, X, y, K, L)
    return _check(
        "lmnn_kernel",
        fitted,
        (K, y, T, mu, tol),
        [L],
        np.zeros(len(y), np.int64),
        t0,
        bound_features=_features(K),
    )


def _check(kind, fitted, problem, Ls, g, t0, bound_features=None):
    """Eq. (14) at the maps ``Ls`` (pair ``(a, b)`` under ``Ls[g[b]]``) and the
    certificate's bound; ``problem = (X, y, T, mu, tol)``; ``bound_features``: the
    points the bound is proved on, when not ``X`` (a kernel's features)."""
    X, y, T, mu, tol = problem
    Xc = X - X.mean(axis=0)  # distances do not move; the error scale shrinks to the spread
    maps = [Mapped(Xc, L) for L in Ls]
    f, resolution = objective(maps, g, y, T, mu)
    numbers = {
        "resolution": resolution,
        "zero_value": zero_value(y, T, mu),
        "model_tol": model_tol(fitted.params),
    }
    try:
        F = sum_upper(f + resolution, 2)
        Xb = X if bound_features is None else bound_features
        bound = B.bound(Xb, y, T, mu, fitted.certificate, F, g, len(Ls))
    except B.Infeasible as exc:
        return refused(kind, f, tol, fitted.objective, t0, str(exc), **numbers)
    return report(kind, f, bound, tol, fitted.objective, t0, **numbers)


def _pass_distance(fitted, X, y, targets, tol):
    """The distance whose nearest same-class points are this pass's targets, and why the
    chain of passes is refused ("" when it holds): the input distance for the first pass,
    the previous pass's learned one after it (that pass verified first, §5.1)."""
    previous = getattr(fitted, "previous", None)
    if previous is None:
        return P.euclidean(X), ""
    v = check_lmnn(previous, X, y, targets, tol=tol)
    if not v.verified:
        return None, f"the previous pass (§5.1) is not verified: {v.reason}"
    L = P.applied_map(previous, X.shape[1])
    return P.distances(Mapped(X - X.mean(axis=0), L)), ""


def _targets(fitted, dist, y, k, given=None):
    """The targets eq. (14) uses: the user's (``given``) or the fit's ``targets_``,
    checked to be the ``k`` nearest under ``dist`` (:func:`._lmnn_problem.targets`)."""
    if given is not None and getattr(fitted, "previous", None) is None:
        return P.targets(dist, y, k, given, given=True)
    T = fitted.attrs.get("targets_")
    if T is None:
        raise VerificationError(f"the fitted {fitted.estimator} has no 'targets_'.")
    return P.targets(dist, y, k, T)


def _features(K):
    """The problem's features of a kernel: the empirical map of the centred kernel
    ``HKH`` (distances unchanged; a feature common to every point leaves) over its
    eigenvalues above :data:`KERNEL_RTOL` ``·λ_max``."""
    row = K.mean(axis=0)
    Kc = K - row[None] - row[:, None] + row.mean()
    w, V = np.linalg.eigh(0.5 * (Kc + Kc.T))
    keep = w > KERNEL_RTOL * max(float(w[-1]), 1e-300)
    return V[:, keep] * np.sqrt(w[keep])


def _data(X, y):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).ravel()
    if X.ndim != 2 or len(y) != X.shape[0]:
        raise VerificationError(f"X must be (n, d) with n labels; got {X.shape} and {y.shape}.")
    if not np.isfinite(X).all():
        raise VerificationError("'X' contains NaN or infinite values.")
    return X, y


def _kernel(params, X):
    """The training kernel as :class:`KernelLMNN` defines it, and the RBF width (or None)."""
    kind = params.get("kernel", "rbf")
    if kind == "precomputed":
        scale = float(np.abs(X).max(initial=0.0))
        if X.shape[0] != X.shape[1] or float(np.abs(X - X.T).max(initial=0.0)) > 1e-8 * scale:
            raise VerificationError("a precomputed kernel must be a symmetric (n, n) matrix.")
        return 0.5 * (X + X.T), None
    if kind == "linear":
        return X @ X.T, None
    if kind != "rbf":
        raise VerificationError(f"unknown kernel {kind!r}.")
    gamma = params.get("gamma")
    if gamma is not None and not (np.isfinite(gamma) and gamma > 0):
        raise VerificationError(f"the model's 'gamma' must be a positive number; got {gamma!r}.")
    var = float(X.var())
    gamma = gamma or (1.0 / (X.shape[1] * var) if var > 0 else 1.0)
    sq = np.einsum("ij,ij->i", X, X)
    return np.exp(-gamma * np.maximum(sq[:, None] + sq[None] - 2.0 * X @ X.T, 0.0)), float(gamma)


KINDS = {"lmnn": check_lmnn, "lmnn_multi": check_multi, "lmnn_kernel": check_kernel}

__all__ = ["KINDS", "check_kernel", "check_lmnn", "check_multi"]
