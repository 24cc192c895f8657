"""Large-scale kernel LMNN (§5.3): the App. A solver on the empirical kernel map.

By :mod:`convexmetric.problems.lmnn_kernel`, eq. (14) in ``A ⪰ 0`` (n×n) is linear LMNN
on the rows of ``Φ`` (``K = ΦΦᵀ``, ``Φ`` n×r) with metric ``M̂ = ΦᵀAΦ`` (r×r), and
``A = T M̂ Tᵀ``. The active-set subgradient solver with its smoothed refinement (or the
working-set exact solver) therefore applies verbatim, with ``O(r²)`` unknowns instead of
the ``O(n²)`` the paper warns about.
"""

from __future__ import annotations

import numpy as np

from ..kernels import empirical_features
from ..linalg import components_from_metric
from ..problems.lmnn import hinge_terms
from ..result import certified_status
from .exact import solve_working_set
from .solver import solve as _solve_linear


def solve(K, y, targets, mu, *, exact=False, rtol=1e-10, **options):
    """Minimise eq. (14) over ``A ⪰ 0`` (n×n); ``result.matrix`` is ``A``.

    ``exact`` selects :func:`~convexmetric.lmnn.exact.solve_working_set` (exact
    SDPs on a working set) instead of :func:`convexmetric.lmnn.solver.solve`; ``options``
    are that function's. ``result.info`` gains ``"rank"`` (r), ``"features_M"`` (``M̂``)
    and ``"components"``: the factor ``L`` (``A = LᵀL``, ``r × n``, on kernel rows) that
    a model applies, formed from ``M̂``'s factor ``L̂`` as ``L̂Tᵀ`` (never by factoring
    ``A``, whose rounding grows with κ(K)). ``result.objective`` is eq. (14) at that map
    (on the rows of ``Φ``, through ``LΦ ≈ L̂``), evaluated from the differences: the
    objective of what is applied, which the verifier recomputes.
    """
    Phi, T = empirical_features(K, rtol)
    res = (solve_working_set if exact else _solve_linear)(Phi, y, targets, mu, **options)
    M = res.matrix
    L = components_from_metric(0.5 * (M + M.T)) @ T.T
    res.info.update(rank=Phi.shape[1], features_M=M, components=L)
    res.matrix = L.T @ L
    res.matrices = [res.matrix]
    res.objective = applied_objective(Phi, L @ Phi, targets, y, mu)
    res.info["zero_value"] = zero_value(y, targets, mu)
    if res.status == "optimal" and "tol" in options:
        res.status = certified_status(res.objective, res.lower_bound, options["tol"],
                                      zero_value=res.info["zero_value"])  # fmt: skip
    res.solver = ("kernel-" + res.solver) if res.solver else "kernel"
    if res.certificate is not None:  # the same dual point, over the rows of Φ
        res.certificate = {**res.certificate, "kind": "lmnn_kernel"}
    return res


def applied_objective(X, L, targets, y, mu):
    """Eq. (14) at the map ``L`` (``M = LᵀL``) from the differences ``L(x_i − x_j)``:
    accurate for a map of any norm (the pull as ``Σ P∘M`` loses ``u‖M‖``)."""
    Z = X @ L.T
    diff = Z[:, None, :] - Z[targets]
    pull = float(np.einsum("ijk,ijk->", diff, diff))  # a padded slot adds D(i, i) = 0
    _, _, _, h = hinge_terms(None, X, targets, y, components=L)
    return (1.0 - mu) * pull + mu * float(h.sum())


def zero_value(y, targets, mu):
    """Eq. (14) at ``M = 0``: ``μ`` times the hinge terms of real targets (each at its
    margin 1): the problem's scale, the floor of the certified gap's denominator."""
    real = np.count_nonzero(targets != np.arange(len(y))[:, None], axis=1)
    _, inv, counts = np.unique(y, return_inverse=True, return_counts=True)
    return float(mu) * float(real @ (len(y) - counts[inv.ravel()]))
