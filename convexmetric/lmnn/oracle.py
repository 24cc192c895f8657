"""LMNN's oracle: eq. (14), its subgradient, its smoothing and its certificate (App. A).

Over the active list of :mod:`.active_list`, the subgradient

    G_t = (1 − μ) Σ C_ij + μ Σ_{(i,j,l) ∈ N_t} (C_ij − C_il)

is updated incrementally from the change of the active set (eq. 19), and every sum of
outer products is one product ``Xᵀ (D − S) X`` with ``S`` the symmetrised sparse matrix
of pair weights (:func:`convexmetric.linalg.triplet_scatter`), never one outer product
per triplet. The smoothed objective replaces each hinge by
``φ(z) = max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²`` around the prox centre ``λ̄``; its
multipliers give the certified lower bound of :mod:`.certificate`. The oracle implements
the engine's protocol (:mod:`convexmetric.optim.oracle`) over ``M``; the drivers see it
in the factor ``L`` through :class:`convexmetric.optim.factor.Factored`.
"""

from __future__ import annotations

import numpy as np

from ..linalg import components_from_metric, row_distances, triplet_scatter
from ..optim.escape import grown_factors
from ..optim.factor import trimmed
from ..optim.oracle import Oracle, StageHooks
from .active_list import ActiveList
from .bounds import ListBounds
from .certificate import DualCertificate
from .constants import TRIAL_RTOL
from .terms import TooManyTerms


class ActiveSetOracle(ActiveList, Oracle, StageHooks):
    """Objective, subgradient, smoothing and bounds of eq. (14) over an active list.

    The parameters are those of :class:`.active_list.ActiveList`.
    """

    _bounds = None

    @property
    def trial_rtol(self):
        """The relative rounding of trial values: :data:`TRIAL_RTOL` when they are in
        single precision (:data:`.constants.SINGLE_TOL`), else 0."""
        return TRIAL_RTOL if self.mode == "active_set" and self._single() else 0.0

    def _counted(self, name, new_mask):
        """Update the incrementally maintained sum over ``new_mask`` (eq. 19)."""
        old = self.mask[name]
        changed = np.flatnonzero(new_mask != old)
        if len(changed):
            sign = np.where(new_mask[changed], 1.0, -1.0)
            I, J, L = self.I[changed], self.J[changed], self.L[changed]
            self.G_part[name] += triplet_scatter(self.X, I, J, L, sign, threads=self.threads)
            self.mask[name] = new_mask
        return self.G_part[name]

    def _value(self, M, push):
        """Eq. (14): ``(1 − μ)⟨C, M⟩ + μ Σ push`` (``push``: the hinge terms' values)."""
        return (1 - self.mu) * float(np.sum(self.C_pull * M)) + self.mu * float(push.sum())

    def _gradient(self, G_push):
        """Eq. (14)'s gradient from the push terms' sum ``G_push``."""
        return (1 - self.mu) * self.C_pull + self.mu * G_push

    def __call__(self, M, components=None):
        """Eq. (14) over the active list and its subgradient (with respect to M).

        At a collapsed metric (see :meth:`full_check`) the value is ``inf``, so the
        step rule rejects the step.
        """
        if self.mode == "active_set":
            try:
                z = self.hinge_arguments(M, components)
            except TooManyTerms:
                return self._overflow(M, components)
        if self.mode == "streaming":
            return self._capped(
                self.stream.evaluate(M, self._components(M, components), cap=self._cap())
            )
        act = z > 0
        G_hinge = self._counted("sub", act)
        f = self._value(M, z[act])
        if self.exact_here:  # a full check listed every violated term at M: f is exact
            exact = f if self._Z.dtype == np.float64 else self._exact(M, components)
            self._seen(M, exact, components)
        return f, self._gradient(G_hinge)

    def _exact(self, M, components):
        """Eq. (14) at ``M`` over the list in double precision (a trial value was single)."""
        z = self.listed_arguments(self._components(M, components))
        return self._value(M, z[z > 0])

    def smooth(self, M, sigma, grad=True, components=None):
        """Smoothed eq. (14) around the dual centre λ̄, and its gradient.

        Each hinge is replaced by ``φ(z) = max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²`` (a Huber
        function when λ̄ = 0; see :mod:`convexmetric.optim.smoothing`), whose gradient is
        ``λ(z) = clip(λ̄ + z/σ, 0, 1)``. Saturated terms (λ = 1) are summed
        incrementally as in eq. (19); only the terms with 0 < λ < 1 afresh. In the
        streaming mode λ̄ = 0. ``components``: ``L`` with ``M = LᵀL`` if known;
        ``grad=False``: the value only (a line search's trial point).
        """
        return self._smoothed(M, sigma, grad, components, None)

    def smooth_factor(self, M, sigma, components):
        """:meth:`smooth`'s value and ``L ∇f_σ`` (``L = components``): the terms strictly
        inside the smoothing enter as ``Zᵀ(D − S)X`` with ``Z = X Lᵀ`` (``n·r·d`` flops,
        not the ``n·d²`` of their ``d × d`` sum, a large part of the refinement's time on the raw
        MNIST sample)."""
        return self._smoothed(M, sigma, True, components, components)

    def _smoothed(self, M, sigma, grad, components, left):
        if self.mode == "active_set":
            try:
                z = self.hinge_arguments(M, components)
            except TooManyTerms:
                return self._times(self._overflow(M, components, sigma), grad, left)
        if self.mode == "streaming":
            out = self._capped(
                self.stream.evaluate(M, self._components(M, components), sigma, cap=self._cap())
            )
            return self._times(out, grad, left)
        lam_bar = self.mask["lam"]
        lam = np.clip(lam_bar + z / sigma, 0.0, 1.0)
        phi = lam * z - 0.5 * sigma * (lam - lam_bar) ** 2
        f = self._value(M, phi)
        if not grad:
            return f
        sat = lam >= 1.0
        G = self._gradient(self._counted("smooth", sat))
        part = np.flatnonzero((lam > 0) & ~sat)
        I, J, L = self.I[part], self.J[part], self.L[part]
        if left is None:
            return f, G + self.mu * triplet_scatter(
                self.X, I, J, L, lam[part], threads=self.threads
            )
        Z = self._Z  # X Lᵀ, from hinge_arguments at this very factor (float32 if single)
        H = triplet_scatter(self.rows(Z.dtype), I, J, L, lam[part], Z, self.threads)
        return f, left @ G + self.mu * H

    @staticmethod
    def _times(out, grad, left):
        """A dense ``(f, G)`` as :meth:`_smoothed` returns it."""
        if not grad:
            return out[0]
        return out if left is None else (out[0], left @ out[1])

    def recenter(self, M, sigma, components=None):
        """Move the prox centre to the current dual estimate (augmented-Lagrangian step).

        A no-op in the streaming mode (its prox centre stays at 0). ``components``: unused
        (the listed distances come from ``M``)."""
        z = None if self.mode == "streaming" else self.hinge_arguments(M, accepted=True)
        if z is None:
            return
        self.mask["lam"] = np.clip(self.mask["lam"] + z / sigma, 0.0, 1.0)

    @property
    def bounds(self):
        """The certificate piece (:class:`.bounds.ListBounds`): bounds, best dual point."""
        if self._bounds is None:
            cert = DualCertificate(self.X, self.C_pull, self.mu, self.threads)
            self._bounds = ListBounds(self, cert)
        return self._bounds

    def lower_bound(self, M, sigma, F=None):
        """:meth:`.bounds.ListBounds.lower_bound` (the engine's protocol)."""
        return self.bounds.lower_bound(M, sigma, F)

    def dual_point(self, lower_bound):
        """:meth:`.bounds.ListBounds.dual_point`: ``lower_bound``'s dual point as a
        result's certificate (the alarm off: streaming lists it by one more pass)."""
        return self.bounds.dual_point(lower_bound)

    def dual_matrix(self, M, sigma):
        """``S(λ) = (1 − μ)P + μ Σ λ_t C_t`` at ``M`` with the dual estimate
        ``λ = clip(λ̄ + z/σ, 0, 1)`` (in the streaming mode, λ̄ = 0 over all triplets, by
        row blocks): the Lagrangian's gradient in ``M``, whose negative eigenvectors are
        the escape directions of a factor saddle."""
        z = None if self.mode == "streaming" else self.hinge_arguments(M, accepted=True)
        if z is None:
            return self.stream.dual(components_from_metric(M), sigma)[0]
        lam = np.clip(self.mask["lam"] + z / sigma, 0.0, 1.0)
        nz = np.flatnonzero(lam > 0)
        G = triplet_scatter(
            self.X, self.I[nz], self.J[nz], self.L[nz], lam[nz], threads=self.threads
        )
        return self._gradient(G)

    def mode_info(self):
        """``SolveResult.info``'s entries on the mode (and the block work's time)."""
        info = {"mode": self.mode, "memory_limit": self.memory_limit}
        if self.mode == "streaming":  # (in the active-set mode the evaluator only searches)
            info.update(
                stream_evaluations=self.stream.evaluations,
                stream_block_rows=self.stream.block_rows,
                switched_after_calls=getattr(self, "switched_at", None),
            )
        if self.stream is not None:  # the block work's wall time (full checks, streamed sums)
            info.update(
                block_seconds=self.stream.seconds,
                block_seconds_by_map=dict(self.stream.seconds_by),
                block_executor=self.stream.executor.name,
                threads=getattr(self.stream.executor, "threads", 1),
                searches=self.stream.checks,
                partial_checks=self.stream.partial_checks,
            )
            traffic = getattr(self.stream.executor, "traffic_info", None)  # (Dask: bytes moved)
            info.update(traffic() if traffic is not None else {})
        return info

    # -- the engine's protocol (convexmetric.optim.oracle) -------------------------
    def bound(self, stage):
        """:meth:`lower_bound` at the stage's point with its best value as ``F``."""
        return self.lower_bound(stage.x, stage.sigma, F=stage.best_f)

    def escape(self, stage):
        """At a stall without a certificate (``stage.stopping``): the best factor ``L`` with
        the row ``√t vᵀ`` appended (``M + t vvᵀ``), ``v`` the most negative eigenvector of
        :meth:`dual_matrix` at the best point and ``t`` from a line search on eq. (14)
        (:func:`convexmetric.optim.escape.grown_factors`); else ``None``. Through
        :class:`convexmetric.optim.factor.Factored` only (it needs the factor)."""
        if not stage.stopping or stage.best_factor is None:
            return None
        L, S = stage.best_factor, self.dual_matrix(stage.best_x, stage.sigma)
        pairs = [np.linalg.eigh(0.5 * (S + S.T))]

        def value(Ls):
            return float(self.objective(Ls[0] @ Ls[0].T, components=Ls[0].T))

        grown = grown_factors([_full_rank(L).T], pairs, value, 1, bracket=True)
        return None if grown is None else grown[0].T

    def begin_stage(self, M, index, components=None):
        """A full check before every stage: the list is fixed while L-BFGS runs."""
        self.full_check(M, components)

    def stage_plan(self, sigma_factor, iterations):
        """Streaming has no prox centre (λ̄ = 0): σ must shrink there (0.3 per stage of
        300 iterations); over the active list the settings hold."""
        return (0.3, 300) if self.mode == "streaming" else (sigma_factor, iterations)

    def objective(self, M, components=None, bound=False):
        """Eq. (14) at M over all triplets (exact); streamed when the terms overflow.
        ``bound``: also a certified bound from the searched terms (as :meth:`.ListBounds.at`;
        a fit stopped before its first check: its one search gives both)."""
        Lc, h = self._components(M, components), None
        if self.mode == "active_set":
            try:
                I, J, L = self._search(M, Lc, self.term_budget)
            except TooManyTerms:
                pass
            else:  # the terms' values, in double precision from Z = X Lᵀ
                Z, t = self.X @ Lc.T, self.threads
                h = 1.0 + row_distances(Z, I, J, threads=t) - row_distances(Z, I, L, threads=t)
        if h is None and not bound:
            return self._seen(M, self._streamer().objective(M, Lc))
        if h is None:  # streamed: the bound at λ = 1[z > 0] from the same pass
            f, S1, lam_sum = self._streamer().objective(M, Lc, dual=True)
            cert = self.bounds.cert
            cert.record(cert.bound(S1, lam_sum, f), f, stream=(Lc, None))
            return self._seen(M, f)
        f = self._value(M, h)
        if bound:
            self.bounds.widths(I, J, L, h, f)
        return self._seen(M, f)


def _full_rank(L):
    """A factor of ``LᵀL`` with as many rows as its rank (:func:`trimmed`: directions
    below ``1e-14·λ_max`` dropped), so that a new row fits (at most ``d`` rows)."""
    return trimmed(L, 1e-14) if L.shape[0] >= L.shape[1] else L
