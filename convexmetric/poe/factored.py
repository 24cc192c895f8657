r"""Full-matrix POE at scale: low-rank factors, smoothed L-BFGS, certified by the SDP dual.

In whitened coordinates (:func:`convexmetric.linalg.whitening`; for kernels the empirical
kernel map ``Φ``) every block has ``R = I`` and features ``F̂ᵖ`` (``n × rᵖ``). With
``Ŵᵖ = LᵖLᵖᵀ`` (``Lᵖ`` is ``rᵖ × kᵖ``) the smoothed objective

.. math::

    φ_σ(L) = \sum_p \|L^p\|_F^2 + s \sum_c φ_σ(z_c), \qquad
    z_c = 1 + \sum_p \|Z^p_i - Z^p_j\|^2 - \|Z^p_k - Z^p_l\|^2,\quad Z^p = \hat F^p L^p,

(each hinge smoothed around the prox centre ``ū``: ``max_{u∈[0,1]} uz − σ(u − ū)²/2``)
has the gradient ``2 Sᵖ(λ) Lᵖ = 2Lᵖ + 2s F̂ᵖᵀ L(w) Zᵖ`` with ``w = clip(ū + z/σ, 0, 1)``
and ``L(w)`` the sparse signed Laplacian: one evaluation costs ``O(n r k)`` (no
``n × n`` eigendecomposition). :class:`WhitenedPOE` is this objective over the ``Ŵᵖ``;
the engine's factor adapter (:class:`convexmetric.optim.factor.Factored`, by columns)
presents it in the ``Lᵖ``, and the staged driver (:mod:`convexmetric.optim.stages`)
runs L-BFGS stages for ``σ = σ₀, σ₀/10, …`` down to ``σ_min``, then at a fixed σ with the
prox centre moved to each stage's multipliers (an augmented Lagrangian on the dual).

The factorisation is not convex: a stationary ``L`` with ``Sᵖ(λ)Lᵖ = 0`` is optimal iff
every ``Sᵖ(λ) ⪰ 0``. After each stage the certificate of :mod:`.certificate` is computed
from the full eigendecomposition of the ``rᵖ × rᵖ`` matrices ``Sᵖ`` (once per stage,
not per step). If it does not close and some ``Sᵖ`` has a negative eigenvalue whose
repair dominates the open gap, its eigenvectors ``v`` are descent directions
``W + t vvᵀ`` that stay PSD: they are appended as new columns of ``Lᵖ`` (scaled by a
line search on ``φ_σ``) and the next stage starts there (the rank-increase step of
low-rank SDP methods; the engine's one escape path, :meth:`WhitenedPOE.escape` with
:func:`convexmetric.optim.escape.grown_factors`, which LMNN's refinement takes too).
Status "optimal" only when the certified relative gap is within ``tol``; an uncertified
run ends with the crossover bound at the best point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..linalg import components_from_metric, row_distances
from ..optim.escape import grown_factors
from ..optim.factor import Factored
from ..optim.lbfgs import LBFGS
from ..optim.oracle import Oracle, StageHooks
from ..optim.stages import StageSettings, run_stages
from . import constants as const
from .certificate import Certificate


@dataclass(kw_only=True)
class FactoredSettings:
    """Settings of :func:`solve_factored` (documented defaults)."""

    rank: int = const.RANK  #: initial columns of each factor (grown by the escape steps)
    tol: float = const.TOL  #: stop when the certified relative gap is at most this
    sigma0: float = const.SIGMA0  #: first smoothing width (the margin is 1)
    sigma_factor: float = const.SIGMA_FACTOR  #: σ ← σ·factor after each stage, down to sigma_min
    sigma_min: float = const.FACTORED_SIGMA_MIN  #: then σ stays and the prox centre moves
    #: escape when λ_min(Sᵖ) < −mu_tol and its repair dominates the gap
    mu_tol: float = const.ESCAPE_MU_TOL
    ftol: float = const.FACTORED_FTOL  #: L-BFGS-B's relative-reduction tolerance within a stage
    stage_iter: int = const.FACTORED_STAGE_ITER  #: L-BFGS iterations per stage
    max_stages: int = const.FACTORED_MAX_STAGES  #: stages (escapes included) at most
    max_iter: int | None = None  #: L-BFGS iterations at most, over all stages
    #: negative-curvature directions appended per block and escape
    max_new: int = const.ESCAPE_MAX_NEW
    time_limit: float | None = None  #: seconds (status "user_limit")
    callback: object = None  #: ``callback(evaluations, objective, sigma)``; True stops
    random_state: int = 0  #: seed of the small random initial factors (L = 0 is a saddle)


class WhitenedPOE(Oracle, StageHooks):
    """The smoothed POE objective over whitened blocks ``[Ŵᵖ]`` (the engine's protocol),
    with the stage hooks of its escape and its final crossover bound.

    The solver drives it in factors through :class:`~convexmetric.optim.factor.Factored`
    (``columns=True``): ``Ŵᵖ = LᵖLᵖᵀ`` with ``Lᵖ`` (``rᵖ × kᵖ``) grown by columns, seen here
    as ``components = [Lᵖᵀ]``; distances come from ``Zᵖ = F̂ᵖLᵖ`` and no ``rᵖ × rᵖ``
    matrix is formed (``needs_metric`` is false). Without ``components`` the factors
    come from an eigendecomposition.
    """

    needs_metric = False

    def __init__(self, oracle, cert, settings):
        self.o, self.cert, self.feats, self.s = oracle, cert, cert.feats, settings
        self.center = np.zeros(len(oracle.left))
        self._stage = None  #: (u, μ, eigenpairs, bound) of the last bound

    @staticmethod
    def _factors(Ws, components):
        """``[Lᵖ]`` (``Ŵᵖ = LᵖLᵖᵀ``) from the engine's factors ``components = [Lᵖᵀ]``."""
        if components is None:
            components = [components_from_metric(W) for W in Ws]
        return [Lt.T for Lt in components]

    def z(self, Ls):
        o, d = self.o, np.zeros(self.o.P)
        for Fh, L in zip(self.feats, Ls):
            d += row_distances(Fh @ L, o.pa, o.pb)  # in cache-sized chunks
        return 1.0 + d[o.left] - d[o.right]

    def objective(self, Ws, components=None):
        Ls = self._factors(Ws, components)
        reg = sum(float(np.vdot(L, L)) for L in Ls)
        return reg + self.o.scale * float(np.maximum(self.z(Ls), 0.0).sum())

    def _value(self, Ls, sigma):
        """``(φ_σ, w)``: the hinge smoothed around the prox centre ``ū``,
        ``max_{u ∈ [0, 1]} uz − σ(u − ū)²/2``, maximised at ``w = clip(ū + z/σ, 0, 1)``."""
        z = self.z(Ls)
        w = np.clip(self.center + z / sigma, 0.0, 1.0)
        hub = w * z - 0.5 * sigma * (w - self.center) ** 2
        return sum(float(np.vdot(L, L)) for L in Ls) + self.o.scale * float(hub.sum()), w

    def smooth(self, Ws, sigma, grad=True, components=None):
        """``φ_σ`` and its gradient in ``Ŵ``: ``I + s F̂ᵖᵀ L(w) F̂ᵖ`` (``grad=False``: the
        value only)."""
        f, w = self._value(self._factors(Ws, components), sigma)
        if not grad:
            return f
        Lap, s = self.o.laplacian(w), self.o.scale
        return f, [np.eye(Fh.shape[1]) + s * (Fh.T @ (Lap @ Fh)) for Fh in self.feats]

    def smooth_factor(self, Ws, sigma, components):
        """``φ_σ`` and ``Lᵖᵀ`` times its gradient: ``(Lᵖ + s F̂ᵖᵀ L(w) Zᵖ)ᵀ``, one sparse
        product with ``kᵖ`` columns per block."""
        Ls = self._factors(Ws, components)
        f, w = self._value(Ls, sigma)
        Lap, s = self.o.laplacian(w), self.o.scale
        return f, [(L + s * (Fh.T @ (Lap @ (Fh @ L)))).T for Fh, L in zip(self.feats, Ls)]

    def bound(self, stage):
        """The certificate from the stage's multipliers ``s·clip(ū + z/σ, 0, 1)``."""
        Ls = self._factors(stage.x, stage.factor)
        u = np.clip(self.center + self.z(Ls) / stage.sigma, 0.0, 1.0)
        lb, mu, pairs = self.cert.bound(self.o.scale * u, stage.best_f, eigvecs=True)
        self._stage = (u, mu, pairs, lb)
        return lb

    def recenter(self, Ws, sigma, components=None):
        """The prox centre moves to the multipliers of the last :meth:`bound` (the staged
        driver bounds every stage before it recentres)."""
        self.center = self._stage[0]

    def escape(self, stage):
        """New factor rows along negative curvature when its repair dominates the open gap."""
        _, mu, pairs, lb = self._stage
        curvature = -mu * stage.best_f > const.ESCAPE_SHARE * (stage.best_f - lb)
        if not (mu < -self.s.mu_tol and curvature):
            return None
        Ls = grown_factors(
            self._factors(stage.x, stage.factor),
            pairs,
            lambda Ls: self._value(Ls, stage.sigma)[0],
            self.s.max_new,
            bracket=True,
        )
        return None if Ls is None else [L.T for L in Ls]

    def final_bound(self, stage):
        """The crossover of :meth:`.Certificate.crossover` at the best point (costly)."""
        Ls = self._factors(stage.best_x, stage.best_factor)
        return self.cert.crossover([L @ L.T for L in Ls], self.z(Ls), stage.best_f)


def solve_factored(blocks, oracle, settings=None, **overrides):
    """Solve full-matrix POE over ``blocks`` (each ``(F, R)``, ``R ⪰ 0``); a SolveResult.

    ``oracle`` is the :class:`.oracle.POEOracle` over ``blocks`` (its pair structure and
    ``s``); ``settings``/``overrides``: :class:`FactoredSettings`. The result's
    ``matrices`` are ``Wᵖ = TᵖŴᵖTᵖᵀ`` in the coordinates of ``blocks``; ``info`` holds
    ``ranks``, ``escapes``, ``sigma`` and ``features_W``; ``certificate`` the multipliers
    of the reported bound (:class:`.certificate.BestDual`).
    """
    from dataclasses import replace

    s = replace(settings or FactoredSettings(), **overrides)
    cert = Certificate(blocks, oracle)
    if not cert.valid:
        raise ValueError(
            "method='factored' needs every block's features in the range of its regulariser "
            "R (true for LPOE with R = I and for kernel blocks); use method='subgradient'."
        )
    rng = np.random.default_rng(s.random_state)
    L0 = [
        rng.standard_normal((Fh.shape[1], min(s.rank, Fh.shape[1])))
        * (const.INIT_SCALE / np.sqrt(Fh.shape[1]))
        for Fh in cert.feats
    ]
    stages = StageSettings(
        sigma0=s.sigma0,
        sigma_factor=s.sigma_factor,
        sigma_min=s.sigma_min,
        stage_iter=s.stage_iter,
        stalls=None,
        tol=s.tol,
        max_stages=s.max_stages,
        max_iter=s.max_iter,
        time_limit=s.time_limit,
        callback=s.callback,
        name="factored L-BFGS",
    )
    inner = LBFGS(
        maxcor=const.FACTORED_MAXCOR,
        gtol=const.FACTORED_GTOL,
        ftol=s.ftol,
        maxls=const.FACTORED_MAXLS,
        rescue=True,
    )
    res = run_stages(Factored(WhitenedPOE(oracle, cert, s), columns=True), L0, inner, stages)
    Ls = res.matrices
    Ws = [T @ (L @ L.T) @ T.T for T, L in zip(cert.T, Ls)]
    res.info.update(
        ranks=[L.shape[1] for L in Ls],
        escapes=res.info.get("escapes", 0),
        sigma=res.info["final_sigma"],
        features_W=[L @ L.T for L in Ls],
    )
    res.matrix, res.matrices = Ws[0], Ws
    res.certificate = cert.best.dual_point("full", len(blocks))
    return res
