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
from .constants import STREAM_STAGE, TRIAL_RTOL
from .terms import TooManyTerms


class ActiveSetOracle(Oracle, StageHooks):
    """Objective, subgradient, smoothing and bounds of eq. (14) over an active list.

    The parameters are those of :class:`.active_list.ActiveList`, which the oracle holds
    (:attr:`active`: the list, its checks and the streaming mode); the oracle holds the
    evaluations' incremental sums and the certificate piece (:attr:`bounds`).
    """

    def __init__(self, X, y, targets, mu, **options):
        self.active = ActiveList(X, y, targets, mu, **options)
        d = X.shape[1]
        # incremental gradient state (eq. 19): the sum over the triplets a mask counts
        self.G_part = {"sub": np.zeros((d, d)), "smooth": np.zeros((d, d))}
        self._bounds = None

    # -- the list's state the drivers and the solver read ------------------------
    @property
    def version(self):
        """:attr:`.ActiveList.version` (the engine's protocol)."""
        return self.active.version

    @property
    def best_seen(self):
        """:attr:`.ActiveList.best_seen` (the engine's protocol)."""
        return self.active.best_seen

    @property
    def seen_factor(self):
        """:attr:`.ActiveList.seen_factor`: the factor of ``best_seen``'s point, if given
        (:class:`~convexmetric.optim.factor.Factored` returns it, not a square root)."""
        return self.active.seen_factor

    def check(self, M, components=None):
        """:meth:`.ActiveList.check`: the final check of App. A.1."""
        return self.active.check(M, components)

    def limit(self, tol, alarm):
        """The fit's certified tolerance (single-precision trials, the bounds' crossover)
        and its time limit (:attr:`.ActiveList.alarm`)."""
        self.active.tol, self.active.alarm = tol, alarm

    def reset_centre(self):
        """The smoothed stages' prox centre λ̄ back to 0 (a restart of the refinement)."""
        mask = self.active.terms.mask
        mask["lam"] = np.zeros_like(mask["lam"])

    @property
    def trial_rtol(self):
        """The relative rounding of trial values: :data:`TRIAL_RTOL` when they are in
        single precision (:data:`.constants.SINGLE_TOL`), else 0."""
        a = self.active
        return TRIAL_RTOL if a.mode == "active_set" and a.single() else 0.0

    def _counted(self, name, new_mask):
        """Update the incrementally maintained sum over ``new_mask`` (eq. 19)."""
        t = self.active.terms
        old = t.mask[name]
        changed = np.flatnonzero(new_mask != old)
        if len(changed):
            sign = np.where(new_mask[changed], 1.0, -1.0)
            I, J, L = t.I[changed], t.J[changed], t.L[changed]
            X, threads = self.active.X, self.active.threads
            self.G_part[name] += triplet_scatter(X, I, J, L, sign, threads=threads)
            t.mask[name] = new_mask
        return self.G_part[name]

    def _value(self, M, push):
        """Eq. (14): ``(1 − μ)⟨C, M⟩ + μ Σ push`` (``push``: the hinge terms' values)."""
        a = self.active
        return (1 - a.mu) * float(np.sum(a.C_pull * M)) + a.mu * float(push.sum())

    def _gradient(self, G_push):
        """Eq. (14)'s gradient from the push terms' sum ``G_push``."""
        return (1 - self.active.mu) * self.active.C_pull + self.active.mu * G_push

    def __call__(self, M, components=None):
        """Eq. (14) over the active list and its subgradient (with respect to M).

        At a collapsed metric (see :meth:`.ActiveList.full_check`) the value is ``inf``,
        so the step rule rejects the step.
        """
        a = self.active
        z, streamed = a.arguments_or_streamed(M, components)
        if z is None:
            return streamed
        act = z > 0
        G_hinge = self._counted("sub", act)
        f = self._value(M, z[act])
        if a.exact_here:  # a full check listed every violated term at M: f is exact
            exact = f if a.distances.Z.dtype == np.float64 else self._exact(M, components)
            a.seen(M, exact, components)
        return f, self._gradient(G_hinge)

    def _exact(self, M, components):
        """Eq. (14) at ``M`` over the list in double precision (a trial value was single)."""
        z = self.active.listed_arguments(self.active.components(M, components))
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
        a = self.active
        z, streamed = a.arguments_or_streamed(M, components, sigma)
        if z is None:
            return self._times(streamed, grad, left)
        t = a.terms
        lam_bar = t.mask["lam"]
        lam = np.clip(lam_bar + z / sigma, 0.0, 1.0)
        phi = lam * z - 0.5 * sigma * (lam - lam_bar) ** 2
        f = self._value(M, phi)
        if not grad:
            return f
        sat = lam >= 1.0
        G = self._gradient(self._counted("smooth", sat))
        part = np.flatnonzero((lam > 0) & ~sat)
        I, J, L = t.I[part], t.J[part], t.L[part]
        if left is None:
            return f, G + a.mu * triplet_scatter(a.X, I, J, L, lam[part], threads=a.threads)
        Z = a.distances.Z  # X Lᵀ, from hinge_arguments at this very factor (float32 if single)
        H = triplet_scatter(a.distances.rows(Z.dtype), I, J, L, lam[part], Z, a.threads)
        return f, left @ G + a.mu * H

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
        z = self.active.accepted_arguments(M)
        if z is None:
            return
        mask = self.active.terms.mask
        mask["lam"] = np.clip(mask["lam"] + z / sigma, 0.0, 1.0)

    @property
    def bounds(self):
        """The certificate piece (:class:`.bounds.ListBounds`): bounds, best dual point."""
        if self._bounds is None:
            a = self.active
            self._bounds = ListBounds(a, DualCertificate(a.X, a.C_pull, a.mu, a.threads))
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
        a = self.active
        z = a.accepted_arguments(M)
        if z is None:
            return a.stream.dual(components_from_metric(M), sigma)[0]
        t = a.terms
        lam = np.clip(t.mask["lam"] + z / sigma, 0.0, 1.0)
        nz = np.flatnonzero(lam > 0)
        G = triplet_scatter(a.X, t.I[nz], t.J[nz], t.L[nz], lam[nz], threads=a.threads)
        return self._gradient(G)

    def mode_info(self):
        """``SolveResult.info``'s entries on the list, the mode and the block work."""
        a = self.active
        search = a.searcher.kind
        info = {
            "active_list": len(a.terms),
            "active": int(np.count_nonzero(a.terms.mask["sub"])),
            "list_terms_evaluated": a.terms.evaluated,
            "full_checks": a.full_checks,
            "search": str(getattr(search, "choice", search)),
            "mode": a.mode,
            "memory_limit": a.memory_limit,
        }
        stream = a.stream
        if a.mode == "streaming":  # (in the active-set mode the evaluator only searches)
            info.update(
                stream_evaluations=stream.evaluations,
                stream_block_rows=stream.block_rows,
                switched_after_calls=a.switched_at,
            )
        if stream is not None:  # the block work's wall time (full checks, streamed sums)
            info.update(
                block_seconds=stream.seconds,
                block_seconds_by_map=dict(stream.seconds_by),
                block_executor=stream.executor.name,
                threads=getattr(stream.executor, "threads", 1),
                searches=stream.checks,
                partial_checks=stream.partial_checks,
                rows_searched=stream.rows_searched,
            )
            traffic = getattr(stream.executor, "traffic_info", None)  # (Dask: bytes moved)
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
        self.active.full_check(M, components)

    def stage_plan(self, sigma_factor, iterations):
        """Streaming has no prox centre (λ̄ = 0): σ must shrink there
        (:data:`.constants.STREAM_STAGE`); over the active list the settings hold."""
        return STREAM_STAGE if self.active.mode == "streaming" else (sigma_factor, iterations)

    def objective(self, M, components=None, bound=False):
        """Eq. (14) at M over all triplets (exact); streamed when the terms overflow.
        ``bound``: also a certified bound from the searched terms (as :meth:`.ListBounds.at`;
        a fit stopped before its first check: its one search gives both)."""
        a = self.active
        Lc, h = a.components(M, components), None
        if a.mode == "active_set":
            try:
                I, J, L = a.search(M, Lc, a.term_budget)
            except TooManyTerms:
                pass
            else:  # the terms' values, in double precision from Z = X Lᵀ
                Z, t = a.X @ Lc.T, a.threads
                h = 1.0 + row_distances(Z, I, J, threads=t) - row_distances(Z, I, L, threads=t)
        if h is None and not bound:
            return a.seen(M, a.streamer().objective(M, Lc))
        if h is None:  # streamed: the bound at λ = 1[z > 0] from the same pass
            f, S1, lam_sum = a.streamer().objective(M, Lc, dual=True)
            cert = self.bounds.cert
            cert.record(cert.bound(S1, lam_sum, f), f, stream=(Lc, None))
            return a.seen(M, f)
        f = self._value(M, h)
        if bound:
            self.bounds.widths(I, J, L, h, f)
        return a.seen(M, f)


def _full_rank(L):
    """A factor of ``LᵀL`` with as many rows as its rank (:func:`trimmed`: directions
    below ``1e-14·λ_max`` dropped), so that a new row fits (at most ``d`` rows)."""
    return trimmed(L, 1e-14) if L.shape[0] >= L.shape[1] else L
