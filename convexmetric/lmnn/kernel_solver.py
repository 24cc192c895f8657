"""Large-scale kernel LMNN (§5.3): the App. A solver on the empirical kernel map.

By :mod:`convexmetric.problems.lmnn_kernel`, eq. (14) in ``A ⪰ 0`` (n×n) is linear LMNN
on the rows of ``Φ`` (``K = ΦΦᵀ``, ``Φ`` n×r) with metric ``M̂ = ΦᵀAΦ`` (r×r), and
``A = T M̂ Tᵀ``. The active-set subgradient solver with its smoothed refinement (or the
working-set exact solver) therefore applies verbatim, with ``O(r²)`` unknowns instead of
the ``O(n²)`` the paper warns about.

The features are those of the centred kernel ``HKH`` (``H = I − 11ᵀ/n``): distances do
not move (``H(k_i − k_j) = HKH(e_i − e_j)``), and a feature that is the same for every
point (the constant of a polynomial kernel) leaves the features instead of staying as
a direction in which the points differ by rounding only — a direction a certificate
cannot tell from one a metric of huge norm may use. The map applied to kernel rows is
``L = L̂TᵀH`` (``L̂`` the factor of ``M̂``): ``L(k_i − k_j) = L̂(φ_i − φ_j)``.
"""

from __future__ import annotations

import numpy as np

from ..kernels import empirical_features
from ..linalg import components_from_metric
from .exact import solve_working_set
from .proof import applied
from .settings import LMNNSettings
from .solver import solve as _solve_linear


def solve(K, y, targets, mu, *, exact=False, rtol=1e-10, **options):
    """Minimise eq. (14) over ``A ⪰ 0`` (n×n); ``result.matrix`` is ``A``.

    ``exact`` selects :func:`~convexmetric.lmnn.exact.solve_working_set` (exact
    SDPs on a working set) instead of :func:`convexmetric.lmnn.solver.solve`; ``options``
    are that function's. ``result.info`` gains ``"rank"`` (r), ``"features_M"`` (``M̂``)
    and ``"components"``: the factor ``L`` (``A = LᵀL``, ``r × n``, on kernel rows) that
    a model applies, formed from ``M̂``'s factor ``L̂`` as ``L̂TᵀH`` (module docstring;
    never by factoring ``A``, whose rounding grows with κ(K)). ``result.objective`` is
    eq. (14) at that map: the solver's value, or where the factor's rounding could move it
    by 1e-9 (:func:`.proof.applied`) the value on the kernel rows from the differences
    (the objective of what is applied, which the verifier recomputes).
    """
    Phi, T = empirical_features(centred(K), rtol)
    res = (solve_working_set if exact else _solve_linear)(Phi, y, targets, mu, **options)
    M = res.matrix
    TH = T.T - np.outer(T.T.mean(axis=1), np.ones(len(K)))  # TᵀH
    L = components_from_metric(0.5 * (M + M.T)) @ TH
    res.info.update(rank=Phi.shape[1], features_M=M, components=L)
    res.matrix = L.T @ L
    res.matrices = [res.matrix]
    # the objective of the applied map where its rounding can matter (a factor of large
    # norm, from a kernel's small eigenvalues): recomputed on the kernel rows
    res = applied(res, K, y, targets, mu, options.get("tol", LMNNSettings.tol), L)
    res.solver = ("kernel-" + res.solver) if res.solver else "kernel"
    if res.certificate is not None:  # the same dual point, over the rows of Φ
        res.certificate = {**res.certificate, "kind": "lmnn_kernel"}
    return res


def centred(K):
    """``HKH``: the kernel of the features less their mean (distances unchanged)."""
    K = 0.5 * (K + K.T)
    row = K.mean(axis=0)
    return K - row[None] - row[:, None] + row.mean()
