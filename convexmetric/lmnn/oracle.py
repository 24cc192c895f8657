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
from ..problems.lmnn import TooManyTerms
from .active_list import ActiveList
from .certificate import DualCertificate
from .constants import STOP_WIDTHS, TIGHTEN_WINDOW, TIGHTEN_WINDOW_TOLS, TRIAL_RTOL


class ActiveSetOracle(ActiveList, Oracle, StageHooks):
    """Objective, subgradient, smoothing and bounds of eq. (14) over an active list.

    The parameters are those of :class:`.active_list.ActiveList`.
    """

    _cert = None
    _last_F = None  #: the attained value at the last bound (see :meth:`lower_bound`)
    _cross_skip, _cross_wait = 0, 1  #: the crossover's back-off (see :meth:`_crossover`)

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
            return self._capped(self.stream.evaluate(M, self._components(M, components),
                                                     cap=self._cap()))  # fmt: skip
        act = z > 0
        G_hinge = self._counted("sub", act)
        f = (1 - self.mu) * float(np.sum(self.C_pull * M)) + self.mu * float(z[act].sum())
        return f, (1 - self.mu) * self.C_pull + self.mu * G_hinge

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
            out = self._capped(self.stream.evaluate(M, self._components(M, components), sigma,
                                                    cap=self._cap()))  # fmt: skip
            return self._times(out, grad, left)
        lam_bar = self.mask["lam"]
        lam = np.clip(lam_bar + z / sigma, 0.0, 1.0)
        phi = lam * z - 0.5 * sigma * (lam - lam_bar) ** 2
        f = (1 - self.mu) * float(np.sum(self.C_pull * M)) + self.mu * float(phi.sum())
        if not grad:
            return f
        sat = lam >= 1.0
        G = (1 - self.mu) * self.C_pull + self.mu * self._counted("smooth", sat)
        part = np.flatnonzero((lam > 0) & ~sat)
        I, J, L = self.I[part], self.J[part], self.L[part]
        if left is None:
            return f, G + self.mu * triplet_scatter(self.X, I, J, L, lam[part],
                                                     threads=self.threads)  # fmt: skip
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

    def lower_bound(self, M, sigma, F=None):
        """A certified lower bound on the optimum of eq. (14) from the dual estimate
        (with ``F``, extrapolated along the proximal step, :meth:`_extrapolated`).

        For λ ∈ [0, 1]^T, ``S(λ) = (1−μ)ΣC_ij + μ Σ λ_t (C_ij − C_il)`` gives ``f* ≥
        μΣλ/(1 − ν)`` with ``ν = min(0, λ_min(S(λ), S(0)))`` (:mod:`.certificate`). ``F``
        (an attained objective value) enables the trace bound (in both modes) and, when the gap
        ``(F − bound)/F`` is above :attr:`tol` (and below ``max(30·tol, 1e-3)``: farther
        from convergence the primal gap dominates) and ``F`` fell by at most ``tol·F``
        since the previous bound, the tightening of :meth:`_tightened`: the ascent of
        :mod:`.certificate` on the trace bound over the multipliers at the kink, and if it
        falls short the crossover (those multipliers fitted to complementarity,
        warm-started from the last fit; backed off while it gains little,
        :meth:`_crossover`).
        """
        z = None if self.mode == "streaming" else self.hinge_arguments(M, accepted=True)
        cert = self._certificate()
        if z is None:  # streaming: λ = clip(z/σ, 0, 1) over all triplets, by blocks
            Lc = components_from_metric(M)
            S1, lam_sum = self.stream.dual(Lc, sigma)
            bound = cert.bound(S1, lam_sum, F)
            cert.keep(bound, F, stream=(Lc, sigma))
            return bound
        bound, lam = self._extrapolated(cert, z, sigma, F)
        # the tightening (an ascent; a K×K quadratic programme) pays only near convergence:
        # within max(30·tol, 1e-3) and once the attained value has settled (it fell by at most
        # tol since the last bound: while it still falls by more, F − f* > tol·F is likely
        # and no bound can certify; the next stage's bound tries again)
        tol = self.tol or 0.0
        settled = F is not None and self._last_F is not None and self._last_F - F <= tol * abs(F)
        self._last_F = F
        if settled and tol * abs(F) < F - bound <= max(
            TIGHTEN_WINDOW_TOLS * tol, TIGHTEN_WINDOW
        ) * abs(F):
            self.alarm.check()  # (the ascent is long: not past the time limit)
            bound = self._tightened(cert, M, z, lam, F, bound, tol)
        return bound

    def bound_at(self, M, F):
        """The best certified bound so far, or when there is none one at ``M`` (a fit that
        stopped before its refinement bounded it: the time limit, or ``refine=False``).

        Weak duality holds for every ``λ ∈ [0, 1]`` on any set of triplets, so the listed
        terms alone give a bound, with no full check: ``λ = clip(z/σ, 0, 1)`` at ``M`` for
        the widths :data:`STOP_WIDTHS` (in the streaming mode one pass, at the widest).
        ``F`` (an attained value) enables the trace bound. ``None`` when the list is
        empty and no pass can be made (no bound computed)."""
        cert = self._certificate()
        if cert.best is None:
            Lc = components_from_metric(M)
            if self.mode == "streaming":
                S1, lam_sum = self.stream.dual(Lc, STOP_WIDTHS[0])
                cert.keep(cert.bound(S1, lam_sum, F), F, stream=(Lc, STOP_WIDTHS[0]))
            else:
                Dt, d_il = self._list_distances(Lc)
                z = Dt[self.I, self.slot] + 1.0 - d_il[self._pair_of]
                self._widths_bound(self.I, self.J, self.L, z, F)
        return None if cert.best is None else cert.best["bound"]

    def _widths_bound(self, I, J, L, z, F):
        """Keep the best bound over ``λ = clip(z/σ, 0, 1)``, σ in :data:`STOP_WIDTHS`."""
        cert = self._certificate()
        for sigma in STOP_WIDTHS:
            cert.certified(I, J, L, np.clip(z / sigma, 0.0, 1.0), F)

    def _extrapolated(self, cert, z, sigma, F):
        """``(bound, λ)``: the best bound over ``λ(t) = clip(λ̄ + t·z/σ, 0, 1)`` for ``t = 1``,
        then, given ``F`` (a solve's stage bound), ``t = 2, 4, …, 32`` while the bound
        improves (else ``t = 1/2, 1/4``).

        ``t = 1`` is the smoothed stage's own estimate; the proximal iterations move λ̄ by
        ``z/σ`` a stage, so near convergence a longer step anticipates the next stages'
        multipliers (every ``λ ∈ [0, 1]`` gives a valid bound). On the MNIST sample the
        tail's best step was 4: the gap 1.5e-4 of the stage's own multipliers was 9.7e-5.
        Each try costs one scatter over the listed triplets and one ``d × d`` eigenvalue."""

        def at(t):
            lam = np.clip(self.mask["lam"] + (t / sigma) * z, 0.0, 1.0)
            return cert.certified(self.I, self.J, self.L, lam, F), lam

        best = at(1.0)
        if F is None:  # a bare bound (the streaming mode's, compared in the tests)
            return best
        for steps in ((2.0, 4.0, 8.0, 16.0, 32.0), (0.5, 0.25)):
            improved = False
            for t in steps:
                cand = at(t)
                if not cand[0] > best[0]:
                    break
                best, improved = cand, True
            if improved:
                break
        return best

    def _tightened(self, cert, M, z, lam, F, bound, tol):
        """The bound after the ascent of :meth:`.DualCertificate.ascend` from ``lam``, and
        after the crossover from there when the ascent closed under half the gap it had to
        close (the ascent repairs ``ν`` of nearly right multipliers: on the MNIST sample a
        stage's 1.5e-3 became 1.5e-4; the crossover fits the kink's multipliers to
        complementarity, for a near-optimal point with poor ones)."""
        needed = (F - bound) - tol * abs(F)
        lam = cert.ascend(self.I, self.J, self.L, z, lam, F, tol=tol)
        ascended = cert.certified(self.I, self.J, self.L, lam, F)
        if ascended - bound >= 0.5 * needed:
            return max(bound, ascended)
        return self._crossover(cert, M, z, lam, F, max(bound, ascended), tol)

    def _crossover(self, cert, M, z, lam, F, bound, tol):
        """The crossover's bound, with a back-off: when a crossover closed under a quarter
        of the gap it had to close, the next 1, 2, 4 (at most 8) eligible bounds skip it,
        except within ``2·tol`` (on the MNIST sample the crossovers added little each and
        cost much of every tail stage; on small data one crossover certifies)."""
        if self._cross_skip > 0 and F - bound > 2 * tol * abs(F):
            self._cross_skip -= 1
            return bound
        crossed = cert.crossover(M, self.I, self.J, self.L, z, lam, F)
        needed = (F - bound) - tol * abs(F)
        if crossed - bound < 0.25 * needed:
            self._cross_skip, self._cross_wait = self._cross_wait, min(2 * self._cross_wait, 8)
        else:
            self._cross_skip, self._cross_wait = 0, 1
        return max(bound, crossed)

    def certificate(self, lower_bound):
        """The dual point of ``lower_bound`` (the best bound this oracle computed) as
        ``SolveResult.certificate`` (kind ``"lmnn"``; the format is documented in
        :mod:`convexmetric.verifier.lmnn`), or ``None`` without a bound. A bound of 0
        (the trivial one) has no multipliers. In the streaming mode the multipliers are
        listed here, by one more pass over the blocks."""
        if lower_bound is None or not np.isfinite(lower_bound):
            return None
        best = self._certificate().best
        if best is None or best["bound"] < lower_bound:
            if lower_bound > 0:
                return None  # (not this oracle's bound)
            best = {"F": None, "triplets": (np.empty(0, np.int64),) * 3 + (np.empty(0),)}
        I, J, L, lam = best["triplets"] if "stream" not in best else (
            self._streamer().multipliers(*best["stream"]))  # fmt: skip
        index = np.int32 if self.X.shape[0] < 2**31 else np.int64
        F = best["F"]
        return {"kind": "lmnn", "i": np.asarray(I, index), "j": np.asarray(J, index),
                "l": np.asarray(L, index), "lam": np.asarray(lam, np.float64),
                "F": float("nan") if F is None else float(F)}  # fmt: skip

    def _certificate(self):
        if self._cert is None:
            self._cert = DualCertificate(self.X, self.C_pull, self.mu, self.threads)
        return self._cert

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
        G = triplet_scatter(self.X, self.I[nz], self.J[nz], self.L[nz], lam[nz],
                            threads=self.threads)  # fmt: skip
        return (1 - self.mu) * self.C_pull + self.mu * G

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
        ``bound``: also a certified bound from the searched terms (as :meth:`bound_at`;
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
            cert = self._certificate()
            cert.keep(cert.bound(S1, lam_sum, f), f, stream=(Lc, None))
            return self._seen(M, f)
        f = (1 - self.mu) * float(np.sum(self.C_pull * M)) + self.mu * float(h.sum())
        if bound:
            self._widths_bound(I, J, L, h, f)
        return self._seen(M, f)


def _full_rank(L):
    """A factor of ``LᵀL`` with as many rows as its rank (:func:`trimmed`: directions
    below ``1e-14·λ_max`` dropped), so that a new row fits (at most ``d`` rows)."""
    return trimmed(L, 1e-14) if L.shape[0] >= L.shape[1] else L
