"""LMNN's full searches: every violated triplet at a metric, remembered between searches.

One search on large data costs hundreds of evaluations, so :class:`FullSearch` keeps
what its last brute-force search found: the triplets with ``z > −m`` (``m``, the
search's :attr:`~FullSearch.margin`). At a nearby ``M'`` they decide every pair but
those of the points they may miss, which are searched again (:mod:`.memo`, a *partial
check*). Brute-force searches run as the streaming evaluator's block map
(:meth:`.blocks.evaluator.StreamingEvaluator.terms`, through its executor), tree searches
(:mod:`.balltree`) in this process, remembered at ``M`` itself. Each search's duration
sets what the fit's alarm keeps for its closing work (:data:`.constants.CLOSING_SEARCHES`).
"""

from __future__ import annotations

import time

import numpy as np

from ..linalg import Spread
from ..optim.deadline import NEVER
from .constants import CLOSING_SEARCHES, MEMO_MARGIN
from .memo import SearchMemo, violated
from .terms import TooManyTerms, hinge_terms


class FullSearch:
    """The violated triplets of ``(X, y, targets)`` at a metric (:meth:`__call__`).

    ``kind``: ``"brute"`` (by blocks through ``streamer()``, the fit's
    :class:`~.blocks.evaluator.StreamingEvaluator`), a tree (``"balltree"``, ``"kdtree"``,
    ``"auto"``: :class:`.balltree.ImpostorSearch`, rows by ``block_size``) or a callable;
    ``threads``: the lanes of the rechecks of remembered triplets."""

    def __init__(self, X, y, targets, kind, block_size, streamer, threads):
        self.X, self.y, self.T = X, y, targets
        if kind == "auto":
            from .balltree import ImpostorSearch

            kind = ImpostorSearch("auto")
        self.kind, self.block_size, self.streamer, self.threads = (
            kind,
            block_size,
            streamer,
            threads,
        )
        self.margin = MEMO_MARGIN  #: the margin of the brute-force searches
        self.memo = None  #: the last search's :class:`.memo.SearchMemo`
        self.alarm = NEVER  #: the fit's alarm (each search reserves its duration on it)
        self._spread = None  #: the data's :class:`~convexmetric.linalg.Spread` (made once)

    def __call__(self, M, Lc, limit):
        """The violated triplets ``(I, J, L)`` at ``M = LcᵀLc``, from the memo where it
        decides them; more than ``limit`` raise :class:`~.terms.TooManyTerms`."""
        start = time.perf_counter()
        out = self._recall(M, Lc, limit)
        if out is None:
            if self.kind in (None, "brute"):
                margin, near = self._near(Lc, limit)
                self.memo = SearchMemo(M, Lc, near, margin)
                out = self.violated(near, Lc) if margin else near
            else:
                out = hinge_terms(
                    M,
                    self.X,
                    self.T,
                    self.y,
                    block_size=self.block_size,
                    components=Lc,
                    search=self.kind,
                    max_terms=limit,
                )[:3]
                self.memo = SearchMemo(M, Lc, out, 0.0)
        self.alarm.reserve_for(CLOSING_SEARCHES * (time.perf_counter() - start))
        if limit is not None and len(out[0]) > limit:
            raise TooManyTerms(f"more than {limit} candidate hinge terms")
        return out

    def _near(self, Lc, limit):
        """``(margin, terms)`` of a brute-force search: the triplets with ``z > −margin``,
        or (when those are more than ``limit``) the violated ones alone (``margin = 0``)."""
        try:
            return self.margin, self.streamer().terms(Lc, limit, margin=self.margin)
        except TooManyTerms:
            return 0.0, self.streamer().terms(Lc, limit)

    def _recall(self, M, Lc, limit):
        """The violated triplets at ``M`` from the last search and, where it may miss some,
        a partial search (:mod:`.memo`); None when a full search is due."""
        memo = self.memo
        if memo is None:
            return None
        if memo.at(M):
            return self.violated(memo.terms, Lc) if memo.margin else memo.terms
        kept = memo.answer(M)
        if kept is not None:
            return kept
        if self._spread is None:
            self._spread = Spread(self.X)
        stale, Z = memo.stale(M, Lc, self.X, self.T, self._spread)
        if stale is None:
            return None
        out = self.violated(memo.outside(stale), Lc, Z)
        if stale.any():
            more = self.streamer().partial_terms(Lc, stale, limit)
            out = tuple(np.concatenate(p) for p in zip(out, more))
        return memo.remember(M, out)

    def violated(self, terms, Lc, Z=None):
        """The triplets of ``terms`` with ``z > 0`` at ``M = LcᵀLc`` (:func:`.memo.violated`)."""
        return violated(terms, self.X @ Lc.T if Z is None else Z, self.T, self.threads)
