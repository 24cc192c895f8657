"""The certificate piece of LMNN's large-scale oracle: bounds from the active list's multipliers.

Every ``λ ∈ [0, 1]`` on any set of triplets bounds eq. (14) from below
(:mod:`.certificate`). :class:`ListBounds` chooses the multipliers — the smoothed
stage's own ``clip(λ̄ + z/σ, 0, 1)`` over the listed terms, extrapolated along the
proximal step, then near convergence the ascent and the crossover of
:class:`.certificate.DualCertificate` — keeps the best bound with its dual point, and
gives that point as a result's certificate. It reads the list through its public
parts (``mode``, the listed ``terms``, :meth:`~.active_list.ActiveList.accepted_arguments`,
:meth:`~.active_list.ActiveList.listed_arguments`, the streaming evaluator ``stream``)
and holds its own state: the best dual point and the tightening's schedule.
"""

from __future__ import annotations

import numpy as np

from ..linalg import components_from_metric
from .constants import (
    ASCENT_ENOUGH,
    CROSSOVER_ENOUGH,
    CROSSOVER_MAX_SKIP,
    STOP_WIDTHS,
    TIGHTEN_WINDOW,
    TIGHTEN_WINDOW_TOLS,
)
from .terms import dual_point


class ListBounds:
    """Certified lower bounds over an :class:`~.active_list.ActiveList` ``active``, from
    the :class:`~.certificate.DualCertificate` ``cert`` on the same data."""

    def __init__(self, active, cert):
        self.active, self.cert = active, cert
        self.last_F = None  #: the attained value at the last bound (see :meth:`lower_bound`)
        self.cross_skip, self.cross_wait = 0, 1  #: the crossover's back-off

    def lower_bound(self, M, sigma, F=None):
        """A certified lower bound on the optimum of eq. (14) from the dual estimate
        (with ``F``, extrapolated along the proximal step, :meth:`_extrapolated`).

        For λ ∈ [0, 1]^T, ``S(λ) = (1−μ)ΣC_ij + μ Σ λ_t (C_ij − C_il)`` gives ``f* ≥
        μΣλ/(1 − ν)`` with ``ν = min(0, λ_min(S(λ), S(0)))`` (:mod:`.certificate`). ``F``
        (an attained objective value) enables the trace bound (in both modes) and, when
        the gap ``(F − bound)/F`` is above the list's ``tol`` (and within the window of
        :data:`~.constants.TIGHTEN_WINDOW`: farther from convergence the primal gap
        dominates) and ``F`` fell by at most ``tol·F`` since the previous bound, the
        tightening of :meth:`_tightened`: the ascent on the trace bound over the
        multipliers at the kink, and if it falls short the crossover (backed off while it
        gains little, :meth:`_crossover`).
        """
        active, cert = self.active, self.cert
        z = active.accepted_arguments(M)
        if z is None:  # streaming: λ = clip(z/σ, 0, 1) over all triplets, by blocks
            Lc = components_from_metric(M)
            S1, lam_sum = active.stream.dual(Lc, sigma)
            bound = cert.bound(S1, lam_sum, F)
            cert.record(bound, F, stream=(Lc, sigma))
            return bound
        bound, lam = self._extrapolated(z, sigma, F)
        # the tightening (an ascent; a K×K quadratic programme) pays only near convergence,
        # once the attained value has settled (it fell by at most tol since the last bound:
        # while it still falls by more, F − f* > tol·F is likely and no bound can certify)
        tol = active.tol or 0.0
        settled = F is not None and self.last_F is not None and self.last_F - F <= tol * abs(F)
        self.last_F = F
        window = max(TIGHTEN_WINDOW_TOLS * tol, TIGHTEN_WINDOW)
        if settled and tol * abs(F) < F - bound <= window * abs(F):
            active.alarm.check()  # (the ascent is long: not past the time limit)
            bound = self._tightened(M, z, lam, F, bound, tol)
        return bound

    def at(self, M, F):
        """The best certified bound so far, or when there is none one at ``M`` (a fit that
        stopped before its refinement bounded it: the time limit, or ``refine=False``).

        The listed terms alone give a bound, with no full check: ``λ = clip(z/σ, 0, 1)``
        at ``M`` for the widths :data:`~.constants.STOP_WIDTHS` (in the streaming mode one
        pass, at the widest). ``F`` (an attained value) enables the trace bound. ``None``
        when nothing is listed and no pass can be made."""
        if self.cert.best is None:
            Lc = components_from_metric(M)
            if self.active.mode == "streaming":
                S1, lam_sum = self.active.stream.dual(Lc, STOP_WIDTHS[0])
                self.cert.record(self.cert.bound(S1, lam_sum, F), F, stream=(Lc, STOP_WIDTHS[0]))
            else:
                t = self.active.terms
                self.widths(t.I, t.J, t.L, self.active.listed_arguments(Lc), F)
        return None if self.cert.best is None else self.cert.best["bound"]

    def widths(self, I, J, L, z, F):
        """Keep the best bound of ``λ = clip(z/σ, 0, 1)``, σ in :data:`.constants.STOP_WIDTHS`."""
        for sigma in STOP_WIDTHS:
            self.cert.certified(I, J, L, np.clip(z / sigma, 0.0, 1.0), F)

    def _extrapolated(self, z, sigma, F):
        """``(bound, λ)``: the best bound over ``λ(t) = clip(λ̄ + t·z/σ, 0, 1)`` for ``t = 1``,
        then, given ``F`` (a solve's stage bound), ``t = 2, 4, …, 32`` while the bound
        improves (else ``t = 1/2, 1/4``).

        ``t = 1`` is the smoothed stage's own estimate; the proximal iterations move λ̄ by
        ``z/σ`` a stage, so near convergence a longer step anticipates the next stages'
        multipliers (every ``λ ∈ [0, 1]`` gives a valid bound). Each try costs one scatter
        over the listed triplets and one ``d × d`` eigenvalue."""
        t_ = self.active.terms

        def at(t):
            lam = np.clip(t_.prox_centre + (t / sigma) * z, 0.0, 1.0)
            return self.cert.certified(t_.I, t_.J, t_.L, lam, F), lam

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

    def _tightened(self, M, z, lam, F, bound, tol):
        """The bound after the ascent of :meth:`.DualCertificate.ascend` from ``lam``, and
        after the crossover from there when the ascent closed under
        :data:`~.constants.ASCENT_ENOUGH` of the gap it had to close (the ascent repairs
        ``ν`` of nearly right multipliers; the crossover fits the kink's multipliers to
        complementarity, for a near-optimal point with poor ones)."""
        t = self.active.terms
        needed = (F - bound) - tol * abs(F)
        lam = self.cert.ascend(t.I, t.J, t.L, z, lam, F, tol=tol)
        ascended = self.cert.certified(t.I, t.J, t.L, lam, F)
        if ascended - bound >= ASCENT_ENOUGH * needed:
            return max(bound, ascended)
        return self._crossover(M, z, lam, F, max(bound, ascended), tol)

    def _crossover(self, M, z, lam, F, bound, tol):
        """The crossover's bound, with a back-off: when a crossover closed under
        :data:`~.constants.CROSSOVER_ENOUGH` of the gap it had to close, the next 1, 2, 4
        (at most :data:`~.constants.CROSSOVER_MAX_SKIP`) eligible bounds skip it, except
        within ``2·tol`` (on large data the crossovers add little each and cost much of a
        tail stage; on small data one crossover certifies)."""
        if self.cross_skip > 0 and F - bound > 2 * tol * abs(F):
            self.cross_skip -= 1
            return bound
        t = self.active.terms
        crossed = self.cert.crossover(M, t.I, t.J, t.L, z, lam, F)
        needed = (F - bound) - tol * abs(F)
        if crossed - bound < CROSSOVER_ENOUGH * needed:
            self.cross_skip = self.cross_wait
            self.cross_wait = min(2 * self.cross_wait, CROSSOVER_MAX_SKIP)
        else:
            self.cross_skip, self.cross_wait = 0, 1
        return max(bound, crossed)

    def dual_point(self, lower_bound):
        """The dual point of ``lower_bound`` (the best bound kept) as
        ``SolveResult.certificate`` (kind ``"lmnn"``; the format is documented in
        :mod:`convexmetric.verifier.lmnn`), or ``None`` without a bound. A bound of 0
        (the trivial one) has no multipliers. In the streaming mode the multipliers are
        listed here, by one more pass over the blocks."""
        if lower_bound is None or not np.isfinite(lower_bound):
            return None
        best = self.cert.best
        if best is None or best["bound"] < lower_bound:
            if lower_bound > 0:
                return None  # (not this oracle's bound)
            best = {"F": None, "triplets": (np.empty(0, np.int64),) * 3 + (np.empty(0),)}
        if "stream" in best:
            I, J, L, lam = self.active.stream.multipliers(*best["stream"])
        else:
            I, J, L, lam = best["triplets"]
        return dual_point("lmnn", self.active.n, (I, J, L), lam, best["F"])
