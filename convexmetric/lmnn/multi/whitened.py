"""Multi-metric LMNN's oracle in per-block whitened coordinates (an exact change of
variables over :class:`.oracle.MultiMetricOracle`)."""

from __future__ import annotations

from dataclasses import replace

from ...linalg import whitening
from ...optim.oracle import Oracle, StageHooks


class WhitenedOracle(Oracle, StageHooks):
    """A multi-metric oracle in per-block whitened coordinates ``M^g = S_g M'^g S_gᵀ``.

    With ``S_gᵀ P_g S_g = I`` (eigenvalues of ``P_g`` floored at ``rtol·λ_max``) the
    pull term is ``Σ tr M'^g``: the curvature that uneven feature scales and nearly
    singular pull matrices give the factor descent is equalised block by block, as
    :func:`convexmetric.lmnn.solver.pull_whitening` does for one metric. The objective
    depends on each ``M^g`` only through distances, so this is an exact change of
    variables; gradients map as ``G'_g = S_gᵀ G_g S_g``, values and bounds unchanged.
    Given factors it forms the metrics from them (``needs_metric`` is false: a factor
    descent passes the factors alone); :meth:`smooth_factor` reads the factors alone.
    """

    needs_metric = False

    def __init__(self, oracle, rtol=1e-8):
        self.base = oracle
        self.S, self.S_inv = [], []
        for P in oracle.P:
            S, _, S_inv = whitening(P, rtol, floor=True)
            self.S.append(S)
            self.S_inv.append(S_inv)
        oracle.whiten(self.S)  # factor evaluations in these coordinates (smooth_factor)

    def base_oracle(self):
        """The oracle in the original coordinates."""
        return self.base

    def to_original(self, Ms):
        return [S @ M @ S.T for S, M in zip(self.S, Ms)]

    def from_original(self, Ms):
        return [Si @ M @ Si.T for Si, M in zip(self.S_inv, Ms)]

    def _grads(self, G):
        return [S.T @ Gg @ S for S, Gg in zip(self.S, G)]

    @property
    def version(self):
        return self.base.version

    def _factors(self, components):
        """Factors of the original blocks: ``S M Sᵀ = (L Sᵀ)ᵀ(L Sᵀ)``."""
        return None if components is None else [L @ S.T for S, L in zip(self.S, components)]

    def _metrics(self, Ms, components):
        """The original blocks at ``Ms`` (these coordinates), or at the factors."""
        return self.to_original([L.T @ L for L in components] if Ms is None else Ms)

    def _args(self, Ms, components):
        """The base's ``(Ms, components)``: the original blocks and their factors."""
        return self._metrics(Ms, components), self._factors(components)

    def __call__(self, Ms, components=None):
        f, G = self.base(*self._args(Ms, components))
        return f, self._grads(G)

    def smooth(self, Ms, sigma, grad=True, components=None):
        M0, Ls = self._args(Ms, components)
        if not grad:
            return self.base.smooth(M0, sigma, grad=False, components=Ls)
        f, G = self.base.smooth(M0, sigma, components=Ls)
        return f, self._grads(G)

    def smooth_factor(self, Ms, sigma, components):
        """``L'_g ∇'_g = L'_g S_gᵀ ∇_g S_g = (L_g ∇_g) S_g`` with ``L_g = L'_g S_gᵀ``: the
        base evaluates it in these coordinates itself
        (:meth:`.oracle.MultiMetricOracle.whiten`)."""
        return self.base.smooth_factor(None, sigma, components, whitened=True)

    def recenter(self, Ms, sigma, components=None):
        self.base.recenter(self._metrics(Ms, components), sigma, self._factors(components))

    def objective(self, Ms, components=None):
        return self.base.objective(*self._args(Ms, components))

    def lower_bound(self, Ms, sigma, F=None, ascend=True):
        return self.base.lower_bound(self.to_original(Ms), sigma, F, ascend)

    def bound(self, stage):
        x = self._metrics(stage.x, stage.factor)
        best = self._metrics(stage.best_x, stage.best_factor)
        return self.base.bound(replace(stage, x=x, best_x=best))

    def full_check(self, Ms, margin=None):
        return self.base.full_check(self.to_original(Ms), margin)

    def check(self, Ms, components=None):
        return self.base.check(*self._args(Ms, components))

    def begin_stage(self, Ms, index, components=None):
        M0, Ls = self._args(Ms, components)
        self.base.begin_stage(M0, index, Ls)

    def finish(self):
        self.base.finish()
