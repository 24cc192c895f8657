"""LMNN's active list (App. A): the triplets found violated at full checks, and the checks.

The oracle keeps the paper's two sets: the *active list* ``N^(t)`` of every triplet
found violated at a full check, and the current active set ``N_t ⊆ N^(t)`` of triplets
with a positive hinge (:mod:`.oracle`). Between full checks (every ``check_every`` calls,
an interval that adapts) only the active list is searched; a full check is a blocked
impostor search (no n×n matrix, :mod:`.blocks.stream`) or a tree search (:mod:`..balltree`).
At apparent convergence the drivers call :meth:`ActiveList.check`, a full check; new
violations reopen the run (the final check of App. A.1).

Bounded memory. ``memory_limit`` (bytes of working memory) caps the active list at
``memory_limit // BYTES_PER_TERM`` triplets and sizes the blocks of the full checks.
When a full check at an accepted point would exceed the cap, or one at a trial point
below every exact value seen (:meth:`ActiveList._overflow`), the list switches, once and
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

import time

import numpy as np

from ..linalg import Spread, components_from_metric
from ..optim.deadline import NEVER
from .blocks.data import plan_blocks
from .blocks.evaluator import StreamingEvaluator
from .compact_list import CompactList
from .constants import (
    BYTES_PER_TERM,
    CLOSING_SEARCHES,
    MAX_LISTED_N,
    MEMO_MARGIN,
    SINGLE_SIZE,
    SINGLE_TOL,
    STREAM_CAP,
    WIDE_MEMO_MARGIN,
)
from .memo import SearchMemo, violated
from .schedule import CheckSchedule, check_cap
from .terms import TooManyTerms, hinge_terms, index_dtype, pull_matrix


class ActiveList(CompactList):
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
        self.check_every = check_every
        self.prune = prune
        self.memory_limit, self.executor = memory_limit, executor
        rows = plan_blocks(self.n, X.shape[1], self.k, memory_limit)[0]
        self.block_size = min(block_size, rows)
        self.term_budget = None if memory_limit is None else memory_limit // BYTES_PER_TERM
        self.mode, self.stream, self._f_seen, self.last_checked = "active_set", None, None, None
        self._new_terms = 0  #: triplets the last full check added to the list
        self.handover = 0.0  #: see :meth:`check`
        self._memo = None  #: the last search's :class:`.memo.SearchMemo` (see :meth:`_search`)
        self._Z = None  #: ``X Lᵀ`` of the last evaluation (one of ``_buffers``: :meth:`_project`)
        self._buffers, self._Xs = {}, None  #: ``Z`` buffers by dtype; ``X`` in float32
        self._spread = None  #: the data's :class:`~convexmetric.linalg.Spread` (made once)
        self.memo_margin = MEMO_MARGIN  #: the margin of the searches (see :meth:`_search`)
        if search == "auto":
            from .balltree import ImpostorSearch

            search = ImpostorSearch("auto")
        self.search = search
        self.C_pull = pull_matrix(X, targets)
        d = X.shape[1]
        self._index = index_dtype(self.n)  #: the list's index type
        e = np.empty(0, self._index)
        self._set_list(e, e, e, {})
        # incremental gradient state (eq. 19): the mask of counted triplets and their sum
        # and the dual estimate λ̄ (the prox centre of the smoothed stage)
        self.mask = {"sub": np.zeros(0, bool), "smooth": np.zeros(0, bool), "lam": np.zeros(0)}
        self.G_part = {"sub": np.zeros((d, d)), "smooth": np.zeros((d, d))}
        self.calls = 0
        # the interval ramps up 1, 2, 4, ... at the start (a collapsed step is costly on
        # large data), then doubles and halves (see hinge_arguments)
        self.schedule = CheckSchedule(check_every, adaptive=True)
        self.full_checks = 0
        self.max_terms = 5_000_000  #: see full_check
        self.version = 0  #: bumped whenever the active list gains violated triplets
        self.tol = None  #: certified gap below which :meth:`lower_bound` skips the crossover
        self._alarm = NEVER
        self.best_seen = None  #: ``(f, M)``: the least exact objective computed (:meth:`_seen`)
        self.seen_factor = None  #: the factor ``L`` of ``best_seen``'s point, if given
        self.exact_here = False  #: the last :meth:`hinge_arguments` followed a full check
        if self.n >= MAX_LISTED_N:  # triplet keys (i·n + j)·n + l would overflow int64
            self._go_streaming()

    def start_refinement(self, prune):
        """Before a smoothed refinement: prune at ``prune``, search at the wide margin
        (:data:`WIDE_MEMO_MARGIN`) and check at the next call.

        The smoothed stages count only ``z > 0`` at first (λ̄ starts at 0), so the list
        keeps the terms near the kink; dropped terms come back at the checks once violated.
        """
        self.prune = prune
        self.memo_margin = WIDE_MEMO_MARGIN
        self.schedule.now(self.calls)

    def _prune(self, z):
        """Drop listed triplets far from violation and not counted in any gradient."""
        drop = z < -self.prune
        for m in self.mask.values():
            drop &= m == 0
        if drop.any():
            keep = ~drop
            self._set_list(
                self.I[keep], self.J[keep], self.L[keep], {k: m[keep] for k, m in self.mask.items()}
            )
            return z[keep]
        return z

    def full_check(self, M, components=None, accepted=True):
        """Search all triplets at ``M``; merge violations; return True if none were new.

        At a trial point (``accepted=False``), more than ``max(max_terms, 4 × list
        size)`` candidate terms, or more than the memory budget allows, make
        :class:`TooManyTerms` propagate (nothing is merged): the caller evaluates the
        point by streaming, capped (:meth:`_overflow`). At an accepted point an
        overflow switches the oracle to the streaming mode (then the check returns
        True: every evaluation covers all triplets).
        """
        if self.mode == "streaming":
            return True
        budget = None if self.term_budget is None else max(self.term_budget - len(self.I), 0)
        collapse = max(self.max_terms, 4 * len(self.I))
        limit = budget if accepted else collapse if budget is None else min(budget, collapse)
        try:
            I, J, L = self._search(M, components, limit)
        except TooManyTerms:
            self.full_checks += 1
            if accepted:
                self._go_streaming()
                return True
            raise
        self.full_checks += 1
        self.last_checked = (M, components)  # its terms fit in the list
        size = len(self.I)
        changed = self._merge(I, J, L)
        self._new_terms = len(self.I) - size
        self.version += changed
        return not changed

    def _search(self, M, components, limit):
        """The violated triplets ``(I, J, L)`` at ``M`` (all of them: a full search).

        Remembered: one search on large data costs hundreds of evaluations. A brute-force
        search keeps the triplets with ``z > −m`` (``m =`` :attr:`memo_margin`); at a
        nearby ``M'`` they decide every pair but those of the points they may miss, which
        are searched again (:mod:`.memo`). Brute-force searches run as the executor's
        block map (:mod:`.blocks.stream`), tree searches in this process (remembered at
        ``M`` itself). Its duration sets what the alarm keeps for the closing work of a fit
        its time limit stops (:data:`.constants.CLOSING_SEARCHES`)."""
        start, Lc = time.perf_counter(), self._components(M, components)
        out = self._recall(M, Lc, limit)
        if out is None:
            if self.search in (None, "brute"):
                margin, near = self._near(Lc, limit)
                self._memo = SearchMemo(M, Lc, near, margin)
                out = self._violated(near, Lc) if margin else near
            else:
                out = hinge_terms(
                    M,
                    self.X,
                    self.T,
                    self.y,
                    block_size=self.block_size,
                    components=Lc,
                    search=self.search,
                    max_terms=limit,
                )[:3]
                self._memo = SearchMemo(M, Lc, out, 0.0)
        self._alarm.reserve_for(CLOSING_SEARCHES * (time.perf_counter() - start))
        if limit is not None and len(out[0]) > limit:
            raise TooManyTerms(f"more than {limit} candidate hinge terms")
        return out

    def _near(self, Lc, limit):
        """``(margin, terms)`` of a brute-force search: the triplets with ``z > −margin``,
        or (when those are more than ``limit``) the violated ones alone (``margin = 0``)."""
        try:
            m = self.memo_margin
            return m, self._streamer().terms(Lc, limit, margin=m)
        except TooManyTerms:
            return 0.0, self._streamer().terms(Lc, limit)

    def _recall(self, M, Lc, limit):
        """The violated triplets at ``M`` from the last search and, where it may miss some,
        a partial search (:mod:`.memo`); None when a full search is due."""
        memo = self._memo
        if memo is None:
            return None
        if memo.at(M):
            return self._violated(memo.terms, Lc) if memo.margin else memo.terms
        kept = memo.answer(M)
        if kept is not None:
            return kept
        if self._spread is None:
            self._spread = Spread(self.X)
        stale, Z = memo.stale(M, Lc, self.X, self.T, self._spread)
        if stale is None:
            return None
        out = self._violated(memo.outside(stale), Lc, Z)
        if stale.any():
            more = self.stream.partial_terms(Lc, stale, limit)
            out = tuple(np.concatenate(p) for p in zip(out, more))
        return memo.remember(M, out)

    def _violated(self, terms, Lc, Z=None):
        """The triplets of ``terms`` with ``z > 0`` at ``M = LcᵀLc`` (:func:`.memo.violated`)."""
        return violated(terms, self.X @ Lc.T if Z is None else Z, self.T, self.threads)

    def check(self, M, components=None):
        """The final check of App. A.1 (called by the driver at apparent convergence).

        While :attr:`handover` is set (phase 1 before a refinement, whose own final
        check is strict), a check adding under that fraction of the list passes: on
        large data each check of a converged subgradient run finds a few new near-kink
        terms, and every restart costs a full search.
        """
        narrow, self.memo_margin = self.memo_margin, max(self.memo_margin, WIDE_MEMO_MARGIN)
        try:
            if self.full_check(M, components):
                return True
        finally:
            self.memo_margin = narrow
        return self._new_terms <= self.handover * len(self.I)

    def _seen(self, M, f, components=None):
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
        self._alarm = alarm
        if self.stream is not None:
            self.stream.executor.alarm = alarm

    def _streamer(self):
        if self.stream is None:
            data = (self.X, self.y, self.T, self.mu, self.C_pull)
            limit, executor = self.memory_limit, self.executor
            self.stream = StreamingEvaluator(*data, memory_limit=limit, executor=executor)
            self.stream.executor.alarm = self._alarm
        return self.stream

    def _overflow(self, M, components, sigma=None):
        """A trial point whose full check overflowed: evaluate it by streaming, capped by
        the least exact value seen (:meth:`_reference`; the list's values underestimate).

        Below it, the iterates head where the list cannot hold the terms: switch to
        streaming for good (the drivers re-evaluate their points). Above it (a collapse
        past the cap included), a step too far, and the list may have hidden a rise at
        the accepted point too: ``inf``, a new :attr:`version` and the checks' ramp again,
        so that the drivers re-check their points and go back to :attr:`best_seen`."""
        self._f_seen = self._reference() if self._f_seen is None else self._f_seen
        cap = None if self._f_seen is None else self._f_seen + 1.0  # (past it: rejected)
        f, G = self._streamer().evaluate(M, self._components(M, components), sigma, cap=cap)
        if self._f_seen is None or f <= self._f_seen:
            if self.term_budget is not None:
                self._go_streaming()
            return self._capped((f, G))
        self.version += 1
        self.schedule.ramp(self.calls)
        return np.inf, np.zeros_like(G)

    def _reference(self):
        """The least exact value seen, else one pass at the last point that passed a check."""
        if self.best_seen is not None or self.last_checked is None:
            return None if self.best_seen is None else self.best_seen[0]
        M_ok, L_ok = self.last_checked
        return self._seen(M_ok, self._streamer().objective(M_ok, self._components(M_ok, L_ok)))

    def _go_streaming(self):
        """Switch to exact evaluation over all triplets by row blocks (:mod:`.blocks.stream`)."""
        self._streamer()
        self.mode, self.switched_at = "streaming", self.calls
        # the drivers re-evaluate their points right after the switch, capped (a collapsed
        # accepted point would otherwise cost a pass over all n²k triplets)
        self._f_seen = self._reference()
        e = np.empty(0, self._index)
        self._set_list(
            e, e, e, {"sub": np.zeros(0, bool), "smooth": np.zeros(0, bool), "lam": np.zeros(0)}
        )
        self.version += 1  # the approximation changed: drivers re-evaluate

    def _cap(self):
        """Streaming trial evaluations give up past ``STREAM_CAP ×`` the best streamed
        (exact or smoothed over all triplets) value seen: a collapsed metric would
        otherwise cost a pass over all n²k triplets."""
        return None if self._f_seen is None else STREAM_CAP * self._f_seen + 1.0

    def _capped(self, fg):
        if np.isfinite(fg[0]):
            self._f_seen = fg[0] if self._f_seen is None else min(self._f_seen, fg[0])
        return fg

    def _components(self, M, components):
        return components_from_metric(M) if components is None else components

    def hinge_arguments(self, M, components=None, accepted=False):
        """``z = 1 + d_M(i, j) − d_M(i, l)`` over the active list (full check first if due).

        ``accepted``: ``M`` is an accepted point, where a check that overflows the list
        switches to streaming (``None`` is returned) instead of raising."""
        self._alarm.check()
        Lc = components_from_metric(M) if components is None else components
        checked = self.schedule.due(self.calls)
        if checked:
            stable = self.full_check(M, Lc, accepted=accepted)
            if self.mode == "streaming":
                return None
            # for the schedule, new terms under 1% of a long list count as stable (the
            # final check at convergence still asks for none)
            stable = stable or self._new_terms <= 1e-2 * len(self.I)
            # App. A.1: re-check every 10–20 iterations, "depending on fluctuations"; the
            # interval doubles while checks find nothing new, up to a cap that keeps the
            # checks' flops at most about those of the evaluations between them (on large
            # data a check costs hundreds of evaluations); new violations halve it (not
            # below check_every; the start-up ramp 1, 2, 4, ... goes on up to it)
            self.schedule.checked(
                self.calls, stable, check_cap(*self.X.shape, len(self.I), self.check_every)
            )
        self.calls += 1
        self.exact_here = checked and self.mode == "active_set"  # every violated term listed
        Dt, d_il = self._list_distances(Lc, not accepted and self._single())
        z = Dt[self.I, self.slot]  # 1 + d(i, j) − d(i, l), in place: (d(i, j) + 1) − d(i, l)
        z += 1.0
        z -= d_il[self._pair_of]
        if checked and self.prune is not None:
            z = self._prune(z)
        return z

    def _single(self):
        """Whether trial evaluations run in single precision (:data:`SINGLE_TOL`)."""
        return self.tol is not None and self.tol >= SINGLE_TOL and self.X.size >= SINGLE_SIZE
