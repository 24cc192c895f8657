"""LMNN's active list (App. A): the triplets found violated at full checks, and the checks.

The oracle keeps the paper's two sets: the *active list* ``N^(t)`` of every triplet
found violated at a full check (:class:`.compact_list.TermList`), and the current active
set ``N_t ⊆ N^(t)`` of triplets with a positive hinge (:mod:`.oracle`). Between full
checks (every ``check_every`` calls, an interval that adapts: :class:`.schedule.CheckSchedule`)
only the active list is searched; a full check is a remembered search over all triplets
(:class:`.searches.FullSearch`). At apparent convergence the drivers call
:meth:`ActiveList.check`, a full check; new violations reopen the run (the final check of
App. A.1).

Bounded memory. ``memory_limit`` (bytes of working memory) caps the active list at
``memory_limit // BYTES_PER_TERM`` triplets and sizes the blocks of the full checks.
When a full check at an accepted point would exceed the cap, or one at a trial point
below every exact value seen (:meth:`ActiveList.overflow`), the list switches, once and
for good, to the streaming mode of :mod:`.blocks.stream`: the
objective, its (sub)gradient, the smoothed objective and the certificate's dual
matrix are then computed exactly over all triplets by row blocks. The streaming
smoothing keeps its prox centre at λ̄ = 0 (a per-triplet centre would be a triplet
list); the certificate is unchanged. ``SolveResult.info["mode"]`` says which mode ran.
Arrays proportional to the data are not in the budget: ``X`` itself, and per process
``Z = X Lᵀ`` with its float32 search copy (:func:`.blocks.project`), together
about 1.5× the size of ``X``, and the float32 copy of ``X`` of the trial evaluations
(:func:`.blocks.data.data_share` bounds them; ``info["memory_bound"]``: limit + share).

Precision: the drivers' trial evaluations may run in single precision (:data:`SINGLE_TOL`,
:data:`SINGLE_SIZE`; :mod:`.compact_list`); every value reported, compared, bounded or
decided stays in double.
"""

from __future__ import annotations

import numpy as np

from ..linalg import components_from_metric
from ..optim.deadline import NEVER
from .blocks.data import plan_blocks
from .blocks.evaluator import StreamingEvaluator
from .compact_list import ListDistances, TermList
from .constants import (
    BYTES_PER_TERM,
    COLLAPSE_GROWTH,
    COLLAPSE_TERMS,
    MAX_LISTED_N,
    SINGLE_SIZE,
    SINGLE_TOL,
    STABLE_SHARE,
    STREAM_CAP,
    WIDE_MEMO_MARGIN,
)
from .schedule import CheckSchedule, check_cap
from .searches import FullSearch
from .terms import TooManyTerms, pull_matrix


class ActiveList:
    """The active list of eq. (14)'s hinge terms and its full checks.

    Parameters
    ----------
    X, y, targets : arrays
        Inputs (n, d), encoded labels and target neighbours (n, k).
    mu : float
    check_every : int
        Calls between full checks; doubled while checks find nothing new (the paper:
        every 10–20 iterations, depending on fluctuations of the active set; the
        schedule is :class:`.schedule.CheckSchedule`, shared with multi-metric LMNN).
    prune : float or None
        At a full check, listed triplets whose hinge argument is below ``−prune`` are
        dropped from the active list (they are re-found by later full checks if they
        come back). ``None`` keeps the list growing as in the paper.
    block_size : int
        Rows per block of the tree searches.
    search : {"brute", "balltree", "kdtree", "auto"} or callable, default="brute"
        Impostor search of the full checks (§6); ``"auto"`` measures brute force and
        ball trees on the first checks and keeps the faster (same results either way).
    memory_limit : int or None
        Bytes of working memory (see the module docstring); ``None``: unbounded.
    executor : object, optional
        Runs the block functions of :mod:`.blocks.stream` (full checks, streaming sums).
    """

    def __init__(
        self,
        X,
        y,
        targets,
        mu,
        *,
        check_every=10,
        prune=1.0,
        block_size=512,
        search="brute",
        memory_limit=None,
        executor=None,
    ):
        self.X, self.y, self.T, self.mu = X, y, targets, mu
        self.n, self.k = targets.shape
        self.check_every, self.prune = check_every, prune
        self.memory_limit, self.executor = memory_limit, executor
        self.term_budget = None if memory_limit is None else memory_limit // BYTES_PER_TERM
        self.C_pull = pull_matrix(X, targets)
        self.mode, self.stream, self._f_seen, self.last_checked = "active_set", None, None, None
        self.terms = TermList(targets)  #: the listed triplets
        self.distances = ListDistances(X, targets, executor, lambda: self.streamer().data)
        rows = min(block_size, plan_blocks(self.n, X.shape[1], self.k, memory_limit)[0])
        self.searcher = FullSearch(X, y, targets, search, rows, self.streamer, self.threads)
        self._new_terms = 0  #: triplets the last full check added to the list
        self.handover = 0.0  #: see :meth:`check`
        self.calls = 0
        self.switched_at = None  #: :attr:`calls` when the list switched to streaming
        # the interval ramps up 1, 2, 4, ... at the start (a collapsed step is costly on
        # large data), then doubles and halves (see hinge_arguments)
        self.schedule = CheckSchedule(check_every, adaptive=True)
        self.full_checks = 0
        self.version = 0  #: bumped whenever the active list gains violated triplets
        self.tol = None  #: certified gap below which the bounds skip the crossover
        self._alarm = NEVER
        self.best_seen = None  #: ``(f, M)``: the least exact objective computed (:meth:`seen`)
        self.seen_factor = None  #: the factor ``L`` of ``best_seen``'s point, if given
        self.exact_here = False  #: the last :meth:`hinge_arguments` followed a full check
        if self.n >= MAX_LISTED_N:  # triplet keys (i·n + j)·n + l would overflow int64
            self._go_streaming()

    @property
    def threads(self):
        """The executor's lanes (:class:`.blocks.local.LocalExecutor`), which the list's
        own distances and sums share too; 1 for the others."""
        return self.distances.threads

    def start_refinement(self, prune):
        """Before a smoothed refinement: prune at ``prune``, search at the wide margin
        (:data:`WIDE_MEMO_MARGIN`) and check at the next call.

        The smoothed stages count only ``z > 0`` at first (λ̄ starts at 0), so the list
        keeps the terms near the kink; dropped terms come back at the checks once violated.
        """
        self.prune = prune
        self.searcher.margin = WIDE_MEMO_MARGIN
        self.schedule.now(self.calls)

    def full_check(self, M, components=None, accepted=True):
        """Search all triplets at ``M``; merge violations; return True if none were new.

        At a trial point (``accepted=False``), more than ``max(COLLAPSE_TERMS,
        COLLAPSE_GROWTH × list size)`` candidate terms (:mod:`.constants`), or more than
        the memory budget allows, make :class:`TooManyTerms` propagate (nothing is
        merged): the caller evaluates the point by streaming, capped (:meth:`overflow`).
        At an accepted point an overflow switches the oracle to the streaming mode
        (then the check returns True: every evaluation covers all triplets).
        """
        if self.mode == "streaming":
            return True
        size = len(self.terms)
        budget = None if self.term_budget is None else max(self.term_budget - size, 0)
        collapse = max(COLLAPSE_TERMS, COLLAPSE_GROWTH * size)
        limit = budget if accepted else collapse if budget is None else min(budget, collapse)
        try:
            I, J, L = self.search(M, components, limit)
        except TooManyTerms:
            self.full_checks += 1
            if accepted:
                self._go_streaming()
                return True
            raise
        self.full_checks += 1
        self.last_checked = (M, components)  # its terms fit in the list
        changed = self.terms.merge(I, J, L)
        self._new_terms = len(self.terms) - size
        self.version += changed
        return not changed

    def search(self, M, components, limit):
        """The violated triplets ``(I, J, L)`` at ``M`` (all of them: a full search,
        :class:`.searches.FullSearch`)."""
        return self.searcher(M, self.components(M, components), limit)

    def check(self, M, components=None):
        """The final check of App. A.1 (called by the driver at apparent convergence).

        While :attr:`handover` is set (phase 1 before a refinement, whose own final
        check is strict), a check adding under that fraction of the list passes: on
        large data each check of a converged subgradient run finds a few new near-kink
        terms, and every restart costs a full search.
        """
        s = self.searcher
        narrow, s.margin = s.margin, max(s.margin, WIDE_MEMO_MARGIN)
        try:
            if self.full_check(M, components):
                return True
        finally:
            s.margin = narrow
        return self._new_terms <= self.handover * len(self.terms)

    def seen(self, M, f, components=None):
        """Keep the least exact value of eq. (14) computed, its point and factor (a fit its
        time limit stops returns it; the engine's protocol: :attr:`best_seen`); ``f``."""
        if self.best_seen is None or f < self.best_seen[0]:
            self.best_seen = (float(f), np.array(M, copy=True))
            self.seen_factor = None if components is None else np.array(components, copy=True)
        return f

    @property
    def alarm(self):
        """The fit's time limit (:class:`convexmetric.optim.deadline.Alarm`), checked at
        every evaluation over the list and between the blocks of full checks and streamed
        sums: past it they raise :class:`~convexmetric.optim.deadline.TimeUp` (once)."""
        return self._alarm

    @alarm.setter
    def alarm(self, alarm):
        self._alarm = self.searcher.alarm = alarm
        if self.stream is not None:
            self.stream.executor.alarm = alarm

    def streamer(self):
        """The :class:`~.blocks.evaluator.StreamingEvaluator` of the data (made once)."""
        if self.stream is None:
            data = (self.X, self.y, self.T, self.mu, self.C_pull)
            limit, executor = self.memory_limit, self.executor
            self.stream = StreamingEvaluator(*data, memory_limit=limit, executor=executor)
            self.stream.executor.alarm = self._alarm
        return self.stream

    def overflow(self, M, components, sigma=None):
        """A trial point whose full check overflowed: evaluate it by streaming, capped by
        the least exact value seen (:meth:`_reference`; the list's values underestimate).

        Below it, the iterates head where the list cannot hold the terms: switch to
        streaming for good (the drivers re-evaluate their points). Above it (a collapse
        past the cap included), a step too far, and the list may have hidden a rise at
        the accepted point too: ``inf``, a new :attr:`version` and the checks' ramp again,
        so that the drivers re-check their points and go back to :attr:`best_seen`."""
        self._f_seen = self._reference() if self._f_seen is None else self._f_seen
        cap = None if self._f_seen is None else self._f_seen + 1.0  # (past it: rejected)
        f, G = self.streamer().evaluate(M, self.components(M, components), sigma, cap=cap)
        if self._f_seen is None or f <= self._f_seen:
            if self.term_budget is not None:
                self._go_streaming()
            return self.capped((f, G))
        self.version += 1
        self.schedule.ramp(self.calls)
        return np.inf, np.zeros_like(G)

    def _reference(self):
        """The least exact value seen, else one pass at the last point that passed a check."""
        if self.best_seen is not None or self.last_checked is None:
            return None if self.best_seen is None else self.best_seen[0]
        M_ok, L_ok = self.last_checked
        return self.seen(M_ok, self.streamer().objective(M_ok, self.components(M_ok, L_ok)))

    def _go_streaming(self):
        """Switch to exact evaluation over all triplets by row blocks (:mod:`.blocks.stream`)."""
        self.streamer()
        self.mode, self.switched_at = "streaming", self.calls
        # the drivers re-evaluate their points right after the switch, capped (a collapsed
        # accepted point would otherwise cost a pass over all n²k triplets)
        self._f_seen = self._reference()
        self.terms.clear()
        self.version += 1  # the approximation changed: drivers re-evaluate

    def streamed(self, M, components, sigma=None):
        """``(f, G)`` of eq. (14) (its smoothing with width σ) over all triplets, in the
        streaming mode: given up past ``STREAM_CAP ×`` the best streamed (exact or
        smoothed) value seen, since a collapsed metric would otherwise cost a pass over
        all n²k triplets."""
        cap = None if self._f_seen is None else STREAM_CAP * self._f_seen + 1.0
        return self.capped(self.stream.evaluate(M, self.components(M, components), sigma, cap=cap))

    def capped(self, fg):
        """``fg``, its finite value kept as the least streamed value seen."""
        if np.isfinite(fg[0]):
            self._f_seen = fg[0] if self._f_seen is None else min(self._f_seen, fg[0])
        return fg

    @staticmethod
    def components(M, components):
        """``components`` if given, else a factor ``L`` of ``M = LᵀL``."""
        return components_from_metric(M) if components is None else components

    def hinge_arguments(self, M, components=None, accepted=False):
        """``z = 1 + d_M(i, j) − d_M(i, l)`` over the active list (full check first if due).

        ``accepted``: ``M`` is an accepted point, where a check that overflows the list
        switches to streaming (``None`` is returned) instead of raising."""
        self._alarm.check()
        Lc = self.components(M, components)
        checked = self.schedule.due(self.calls)
        if checked:
            stable = self.full_check(M, Lc, accepted=accepted)
            if self.mode == "streaming":
                return None
            size = len(self.terms)
            stable = stable or self._new_terms <= STABLE_SHARE * size
            # App. A.1: re-check every 10–20 iterations, "depending on fluctuations"; the
            # interval doubles while checks find nothing new, up to a cap that keeps the
            # checks' flops at most about those of the evaluations between them (on large
            # data a check costs hundreds of evaluations); new violations halve it (not
            # below check_every; the start-up ramp 1, 2, 4, ... goes on up to it)
            cap = check_cap(*self.X.shape, size, self.check_every)
            self.schedule.checked(self.calls, stable, cap)
        self.calls += 1
        self.exact_here = checked and self.mode == "active_set"  # every violated term listed
        z = self.terms.arguments(*self.distances(Lc, self.terms, not accepted and self.single()))
        if checked and self.prune is not None:
            z = self.terms.prune(z, self.prune)
        return z

    def arguments_or_streamed(self, M, components, sigma=None):
        """``(z, None)``: the hinge arguments over the list (:meth:`hinge_arguments` at a
        trial point); ``(None, (f, G))``: eq. (14) (its smoothing with width σ) over all
        triplets instead, in the streaming mode or where the check overflowed
        (:meth:`overflow`)."""
        if self.mode == "active_set":
            try:
                return self.hinge_arguments(M, components), None
            except TooManyTerms:
                return None, self.overflow(M, components, sigma)
        return None, self.streamed(M, components, sigma)

    def accepted_arguments(self, M):
        """:meth:`hinge_arguments` at an accepted ``M``; None in the streaming mode."""
        return None if self.mode == "streaming" else self.hinge_arguments(M, accepted=True)

    def listed_arguments(self, Lc):
        """``z`` over the listed terms at ``M = LcᵀLc`` in double precision, with no check
        (a bound of the listed multipliers is valid whatever the list misses)."""
        return self.terms.arguments(*self.distances(Lc, self.terms))

    def single(self):
        """Whether trial evaluations run in single precision (:data:`SINGLE_TOL`)."""
        return self.tol is not None and self.tol >= SINGLE_TOL and self.X.size >= SINGLE_SIZE
