"""Multi-metric LMNN's oracle (§5.2): one PSD block per cluster over an active list.

The variable is a list ``[M^0, …, M^{c−1}]``. As in App. A the oracle keeps an *active
list* of triplets found near violation (``margin``) at full checks; between checks only
the list is evaluated. The checks follow the single metric's
:class:`~convexmetric.lmnn.schedule.CheckSchedule`: every ``check_every`` calls (the
subgradient phase); in a staged run, before every stage and at its stop, and at every
evaluation of the first :attr:`~MultiMetricOracle.exact_stages` stages. The subgradient
of block ``g`` is

    G_g = (1 − μ) Σ_{g(j)=g} C_ij + μ Σ_{active, g(j)=g} C_ij − μ Σ_{active, g(l)=g} C_il,

computed over the distinct pairs of the list (:class:`.pairs.PairGraph`: block
``g`` touches only the points of its own pairs, and every product is over those rows).
:class:`.whitened.WhitenedOracle` is the exact change of variables that equalises the
blocks' curvature. Both implement the engine's protocol
(:mod:`convexmetric.optim.oracle`) over the list of blocks.
"""

from __future__ import annotations

import numpy as np

from ...optim.oracle import Oracle, StageHooks
from ...problems import lmnn_multi as PM
from .._sets import member, union, unique_inverse
from ..constants import ASCENT_PROGRESS, ASCENT_WINDOW, MULTI_MARGIN
from ..schedule import CheckSchedule
from .certificate import RangeCertificate
from .pairs import PairGraph


class MultiMetricOracle(Oracle, StageHooks):
    """Objective, subgradient and smoothed gradient of the multi-metric objective."""

    def __init__(
        self,
        X,
        y,
        targets,
        mu,
        clusters,
        n_clusters,
        *,
        check_every=10,
        margin=MULTI_MARGIN,
        relist=True,
    ):
        self.X, self.y, self.T, self.mu = X, y, targets, mu
        self.g, self.c = clusters, n_clusters
        self.n = X.shape[0]
        self.P = PM.pull_matrices(X, targets, clusters, n_clusters)
        self._tp = PM.target_pairs(X, targets, clusters, n_clusters)  # for every search
        self.check_every, self.margin = check_every, margin
        #: at a full check the list becomes the terms found plus those the dual centre still
        #: weighs (True), or only grows (False); not LMNN's ``prune``, a margin
        self.relist = relist
        self.schedule = CheckSchedule(check_every)  #: which calls check (see the module)
        self._null = self._cert = self._Z = self._last = None
        self.maps = self._pull_diag = None  #: the whitened path's coordinates (whiten)
        self.exact_stages = 0  #: see :meth:`begin_stage`
        self.trace_bound = False  #: :meth:`bound` adds the trace repair (see lower_bound)
        self.tol = None  #: the solve's certified gap (the bound's ascent stops there)
        self._last_best = None  #: the best objective at the last stage's bound
        self.keys = np.empty(0, np.int64)
        self.lam_bar = np.zeros(0)  # dual prox centre of the smoothed stage, aligned with keys
        self._set(self.keys)
        self.calls, self.full_checks, self.version = 0, 0, 0

    def _set(self, keys):
        n = self.n
        lam = np.zeros(len(keys))
        pos = np.minimum(np.searchsorted(keys, self.keys), max(len(keys) - 1, 0))
        kept = (keys[pos] == self.keys) if len(keys) else np.zeros(len(self.keys), bool)
        lam[pos[kept]] = self.lam_bar[kept]  # the centre of terms that stay listed
        self.keys, self.lam_bar = keys, lam
        self.I, self.J, self.L = keys // (n * n), (keys // n) % n, keys % n
        # distances are needed per distinct pair (i, j) / (i, l), far fewer than triplets
        # (each impostor pair serves up to k targets, each target pair many impostors)
        m = len(keys)
        pairs, inv = unique_inverse(np.concatenate([self.I * n + self.J, self.I * n + self.L]))
        self.inv_j, self.inv_l = inv[:m], inv[m:]
        self.pa, self.pb = pairs // n, pairs % n
        # a pair's metric is that of its second point's cluster (see .pairs)
        self.pairs = PairGraph(self.X, self.pa, self.pb, self.g[self.pb], self.c)

    def list_terms(self, keys):
        """List exactly the triplets ``keys`` (sorted ``(i·n + j)·n + l``), e.g. those an
        exact solve gave multipliers (:func:`.certificate.exact_certificate`)."""
        self._set(np.asarray(keys, np.int64))

    def full_check(self, Ms, margin=None, components=None):
        """Search all triplets; merge near-violations; True if no new *violated* ones.

        ``components``: the factors of ``Ms`` if known (the search is then as wide as
        their rows, and needs no eigendecomposition)."""
        m = self.margin if margin is None else margin
        I, J, L, H = self._search(Ms, m, components)
        self.full_checks += 1
        keys = (I * self.n + J) * self.n + L
        new = ~member(keys, self.keys)
        if self.relist:
            merged = union(keys, self.keys[self.lam_bar > 0])
            if len(merged) != len(self.keys) or new.any():
                self._set(merged)
        elif new.any():
            self._set(union(self.keys, keys[new]))
        grew = bool(np.any(new & (H > 0)))
        self.version += grew
        return not grew

    def check(self, Ms, components=None):
        """A full check at the default margin: True if no new violated triplet."""
        return self.full_check(Ms, margin=self.margin, components=components)

    def _search(self, Ms, margin, components):
        """:func:`~convexmetric.problems.lmnn_multi.hinge_terms` at ``margin``. The last
        search is kept with its factors (or its metrics, when no factors were given), and
        a search at the same point and a margin no wider reuses it: the stage's exact
        objective, then the recentring's and the next stage's checks; the subgradient
        start's check, then its objective."""
        kind, point = ("metrics", Ms) if components is None else ("factors", components)
        last = self._last
        if (
            last is not None
            and margin <= last[0]
            and last[1] == kind
            and len(last[2]) == len(point)
            and all(np.array_equal(a, b) for a, b in zip(last[2], point))
        ):
            I, J, L, H = last[3]
            keep = H > -margin
            return I[keep], J[keep], L[keep], H[keep]
        out = PM.hinge_terms(
            Ms, self.X, self.T, self.y, self.g, margin=margin, components=components, pairs=self._tp
        )
        self._last = (margin, kind, [np.array(a) for a in point], out)
        return out

    def hinge_arguments(self, Ms, components=None, whitened=False):
        """``z = 1 + d(i, j) − d(i, l)`` over the active list; with ``components`` (the
        factors ``L_g``, ``M^g = L_gᵀL_g``, possibly of fewer rows than ``d``) the
        distances are ``‖Z_a − Z_b‖²`` with ``Z = U L_gᵀ``, else ``(Y_a − Y_b)·(u_a − u_b)``
        with ``Y = U M^g``. ``whitened``: the factors are in :meth:`whiten`'s coordinates."""
        if whitened and self.schedule.due(self.calls):  # a check searches in the original
            self._due_check(Ms, [L @ S.T for L, S in zip(components, self.maps)])
        else:
            self._due_check(Ms, components)
        self.calls += 1
        d = np.empty(len(self.pa))
        if components is None:
            d[self.pairs.perm] = self.pairs.metric_distances(Ms)
        else:
            self._Z = self.pairs.project(components, self.maps if whitened else None)
            d[self.pairs.perm] = self.pairs.factor_distances(self._Z)
        return 1.0 + d[self.inv_j] - d[self.inv_l]

    def _due_check(self, Ms, components):
        """The full check the schedule asks for at this call, if any."""
        if self.schedule.due(self.calls):
            self.full_check(Ms, components=components)
            self.schedule.checked(self.calls)

    def gradient(self, w):
        """Per-block gradient ``(1 − μ)P_g + μ Σ_{pairs of g} ω_p δ_p δ_pᵀ`` for hinge
        weights ``w`` over the active list (:meth:`.pairs.PairGraph.scatter`)."""
        H = self.pairs.scatter(self._pair_weights(w))
        return [(1 - self.mu) * P + self.mu * Hg for P, Hg in zip(self.P, H)]

    def _pull(self, Ms, components=None, whitened=False):
        """``(1 − μ) Σ_g ⟨P_g, M^g⟩``; from the factors when given (``⟨P, LᵀL⟩`` is the
        sum of ``(L P) ⊙ L``; whitened, ``Σ_j p_j ‖L_{:j}‖²``), and then ``Ms`` may be
        ``None``, as everywhere below: a whitened factor descent's :meth:`smooth_factor`
        forms no metrics."""
        if whitened:
            terms = (
                np.dot(np.einsum("ij,ij->j", L, L), p) for L, p in zip(components, self._pull_diag)
            )
        elif components is not None:
            terms = (np.sum((L @ P) * L) for L, P in zip(components, self.P))
        else:
            terms = (np.sum(P * M) for P, M in zip(self.P, Ms))
        return (1 - self.mu) * float(sum(terms))

    def __call__(self, Ms, components=None):
        z = self.hinge_arguments(Ms, components)
        act = z > 0
        f = self._pull(Ms, components) + self.mu * float(z[act].sum())
        return f, self.gradient(act.astype(float))

    def smooth(self, Ms, sigma, grad=True, components=None):
        """Smoothed objective: each hinge becomes ``max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²``.

        ``grad=False``: the value only (a line search's trial point); ``components``:
        the factors, if known (:meth:`hinge_arguments`)."""
        f, lam = self._smoothed(Ms, sigma, components)
        return (f, self.gradient(lam)) if grad else f

    def _smoothed(self, Ms, sigma, components, whitened=False):
        """``(f_σ, λ)``: the smoothed value and the multipliers that attain it."""
        z = self.hinge_arguments(Ms, components, whitened)
        lam = np.clip(self.lam_bar + z / sigma, 0.0, 1.0)
        phi = lam * z - 0.5 * sigma * (lam - self.lam_bar) ** 2
        return self._pull(Ms, components, whitened) + self.mu * float(phi.sum()), lam

    def _pair_weights(self, w):
        """Per distinct pair (stacked block order): ``Σ w`` as target pair ``− Σ w`` as
        impostor pair."""
        P = len(self.pa)
        return (np.bincount(self.inv_j, w, P) - np.bincount(self.inv_l, w, P))[self.pairs.perm]

    def smooth_factor(self, Ms, sigma, components, whitened=False):
        """:meth:`smooth`'s value and ``[L_g ∇_g f_σ]`` (``L_g = components[g]``), from the
        projection ``Z`` of the distances just computed
        (:meth:`.pairs.PairGraph.factor_scatter`: no ``d × d`` sum). ``whitened``: the
        factors and the result are in :meth:`whiten`'s coordinates."""
        f, lam = self._smoothed(Ms, sigma, components, whitened)
        H = self.pairs.factor_scatter(
            self._pair_weights(lam),
            self._Z,
            [len(Lg) for Lg in components],
            self.maps if whitened else None,
        )
        mu = self.mu
        if whitened:
            return f, [
                (1 - mu) * (Lg * p) + mu * Hg for Lg, p, Hg in zip(components, self._pull_diag, H)
            ]
        return f, [(1 - mu) * (Lg @ P) + mu * Hg for Lg, P, Hg in zip(components, self.P, H)]

    def whiten(self, maps):
        """Let :meth:`smooth_factor` take factors ``L'_g`` in the coordinates
        ``M^g = S_g M'^g S_gᵀ`` (``maps``: the ``S_g``, which must make ``S_gᵀP_gS_g``
        diagonal, as :class:`.whitened.WhitenedOracle`'s do): the listed points are mapped
        by ``S_g`` once per list (:meth:`.pairs.PairGraph.project`) and the pull term is
        ``Σ_j p_j ‖L'_{:j}‖²``, ``p = diag(S_gᵀP_gS_g)``. An evaluation then forms no
        original factor and maps no gradient back."""
        self.maps, self._pull_diag = [np.asarray(S, dtype=float) for S in maps], []
        for S, P in zip(self.maps, self.P):
            Pw = S.T @ P @ S
            p = np.diag(Pw).copy()
            if np.abs(Pw - np.diag(p)).max() > 1e-6 * max(float(np.abs(p).max()), 1e-300):
                raise ValueError("whiten: the maps must diagonalise the pull matrices")
            self._pull_diag.append(p)

    def recenter(self, Ms, sigma, components=None):
        """Move the prox centre to the current dual estimate (augmented-Lagrangian step).

        ``components``: the factors of ``Ms``, if known: a check due here (every call of
        the exact stages) then reuses the search of the stage's exact objective at the
        same factors (:meth:`_search`); the multipliers come from ``Ms`` either way."""
        self._due_check(Ms, components)
        z = self.hinge_arguments(Ms)
        self.lam_bar = np.clip(self.lam_bar + z / sigma, 0.0, 1.0)

    def objective(self, Ms, components=None):
        """The multi-metric objective over all triplets (exact), from a search at the
        list's margin, which the next full check at the same point reuses (and which
        reuses the last check's, :meth:`_search`)."""
        H = self._search(Ms, max(self.margin, 0.0), components)[3]
        return self._pull(Ms, components) + self.mu * float(H[H > 0].sum())

    def lower_bound(self, Ms, sigma, F=None, ascend=True):
        """A certified lower bound on the optimum from the dual estimate at ``Ms``.

        Lagrange duality with ``λ ∈ [0, 1]`` per triplet (0 off the list): the dual
        function is ``μ Σ λ`` when every block
        ``S_g(λ) = (1 − μ)P_g + μ Σ λ_t (C_ij[g(j)=g] − C_il[g(l)=g])`` is PSD (``S_g(λ)``
        is exactly :meth:`gradient`'s block) and ``−∞`` otherwise.

        *Range restriction.* The target differences of block ``g`` span ``range(P_g)``,
        so on ``null(P_g)`` the block is ``−μ Σ λ_t C_il`` (impostors ``l`` of cluster
        ``g``), which is PSD only if every such triplet with an impostor difference
        outside ``range(P_g)`` has ``λ_t = 0``. The optimal multipliers satisfy this
        (such a hinge can be switched off for free, by growing ``M^g`` along the
        null space, where the pull term does not see it), so the estimate is
        projected onto it: those ``λ_t`` are set to 0. Without it one such triplet
        makes every ``θ > 0`` infeasible (digits: constant pixels within a class; the
        bound was 1.2e-5 against an optimum of 211). The remaining ``λ`` is repaired
        exactly by :class:`.certificate.RangeCertificate`
        (scaling by ``1/(1 − ν)``, ``ν`` the smallest generalised eigenvalue of
        ``(S_g(λ), (1 − μ)P_g)`` over the blocks), so the bound is valid for any estimate.
        ``F`` (an attained objective value) adds the trace repair, and when the gap is
        above :attr:`tol` and within :data:`ASCENT_WINDOW` the multipliers near the kink
        climb the trace bound first, if ``ascend``
        (:meth:`.certificate.RangeCertificate.ascend`).
        """
        cert = self.range_certificate()
        lam, z = cert.multipliers(Ms, sigma)
        bound = cert.record(cert.bound(lam, F)[0], lam, F)
        tol = self.tol or 0.0
        if ascend and F is not None and tol * abs(F) < F - bound <= ASCENT_WINDOW * abs(F):
            lam = cert.ascend(lam, z, F, tol=tol)
            bound = max(bound, cert.record(cert.bound(lam, F)[0], lam, F))
        return bound

    def range_certificate(self):
        """The :class:`.certificate.RangeCertificate` of this oracle (made once)."""
        if self._cert is None:
            self._cert = RangeCertificate(self)
        return self._cert

    def base_oracle(self):
        """The oracle in the original coordinates (itself)."""
        return self

    # -- the engine's protocol (convexmetric.optim.oracle) -------------------------
    def bound(self, stage):
        """:meth:`lower_bound` at the stage's point (``F``: its best value when
        :attr:`trace_bound`; none at the first :attr:`exact_stages`), with the ascent once
        the primal settles (:data:`ASCENT_PROGRESS`) at a stage that did not run off (its
        point is the best one: a stage whose list went stale and ran off gains nothing,
        and its multipliers are no dual estimate)."""
        if stage.index < self.exact_stages:
            return None  # the large first move: far from a proof, and a bound there costs
            # a full check (the schedule checks every evaluation) and the blocks' spectra
        F, last, self._last_best = stage.best_f, self._last_best, stage.best_f
        settled = last is not None and last - F <= ASCENT_PROGRESS * (self.tol or 0.0) * abs(F)
        settled = settled and _same(stage.x, stage.best_x)
        return self.lower_bound(stage.x, stage.sigma, F if self.trace_bound else None, settled)

    def begin_stage(self, Ms, index, components=None):
        """A full check before every stage; the first :attr:`exact_stages` stages search
        all triplets at every evaluation (the list is rebuilt each time, so the large
        first move sees the real objective), the others check only between stages (the
        list stays fixed while the inner method runs; the driver checks at its stop)."""
        self.full_check(Ms, components=components)
        self.schedule.period(1 if index < self.exact_stages else None, self.calls)

    def finish(self):
        """After a staged run: back to a check every :attr:`check_every` calls."""
        self.schedule.period(self.check_every, self.calls)

    def outside_range(self, rtol=1e-10, atol=1e-12):
        """Listed triplets whose impostor difference leaves ``range(P_{g(l)})``.

        Cached for the current list (``_set`` replaces ``keys``)."""
        cached = getattr(self, "_out_cache", None)
        if cached is not None and cached[0] is self.keys:
            return cached[1].copy()
        if self._null is None:
            self._null = []
            for P in self.P:
                w, V = np.linalg.eigh(0.5 * (P + P.T))
                self._null.append(V[:, w <= rtol * max(float(w[-1]), 1e-300)])
        out = np.zeros(len(self.keys), bool)
        gl = self.g[self.L]
        for g, N in enumerate(self._null):
            rows = np.flatnonzero(gl == g)
            if N.shape[1] == 0 or len(rows) == 0:
                continue
            U = self.X[self.I[rows]] - self.X[self.L[rows]]
            out[rows] = ((U @ N) ** 2).sum(1) > atol * np.maximum((U**2).sum(1), 1e-300)
        self._out_cache = (self.keys, out.copy())
        return out


def _same(a, b):
    """Whether two lists of blocks are equal (the stage's point is its best point)."""
    return a is b or all(np.array_equal(x, y) for x, y in zip(a, b))
