"""LMNN's large-scale solver: active-set projected subgradient (App. A, Alg. 1).

The oracle keeps the paper's two sets: the *active list* ``N^(t)`` of every triplet
found violated at a full check, and the current active set ``N_t ⊆ N^(t)`` of
triplets with a positive hinge. Between full checks (every ``check_every`` calls)
only the active list is searched; a full check is a blocked impostor search (no n×n
matrix). The gradient

    G_t = (1 − μ) Σ C_ij + μ Σ_{(i,j,l) ∈ N_t} (C_ij − C_il)

is updated incrementally from the change of the active set (eq. 19), and every sum
of outer products is one product ``Xᵀ (D − S) X`` with ``S`` the symmetrised sparse
matrix of pair weights, never one outer product per triplet. At apparent convergence
the driver calls :meth:`ActiveSetOracle.check`, a full check; new violations reopen
the run (the final check of App. A.1).

Bounded memory. ``memory_limit`` (bytes of working memory) caps the active list at
``memory_limit // BYTES_PER_TERM`` triplets and sizes the blocks of the full checks.
When a full check at an accepted point (or any check) would exceed the cap, the
oracle switches, once and for good, to the streaming mode of :mod:`.lmnn_stream`:
the objective, its (sub)gradient, the smoothed objective and the certificate's dual
matrix are then computed exactly over all triplets by row blocks. The streaming
smoothing keeps its prox centre at λ̄ = 0 (a per-triplet centre would be a triplet
list); the certificate is unchanged. ``SolveResult.info["mode"]`` says which mode ran.
Arrays proportional to the data are not in the budget: ``X`` itself, and per process
``Z = X Lᵀ`` with its float32 search copy (:func:`.lmnn_stream.project`), together
about 1.5× the size of ``X`` (augmented_digits: 32 MB; 10⁶ × 64 points: 0.8 GB).
"""

from __future__ import annotations

import functools
import time

import numpy as np

from .._threads import one_blas_thread
from ..cones import FullSpace, PSDCone
from ..linalg import components_from_metric, triplet_scatter
from ..optim.smoothing import SmoothingSettings, smoothed_descent
from ..optim.subgradient import SubgradientSettings, projected_subgradient
from ..problems.lmnn import TooManyTerms, hinge_terms, pull_matrix
from ..result import SolveResult
from .close_gap import certified_gap, close_gap
from .refine import refine_components
from .stream import StreamingEvaluator, plan_blocks

#: default working-memory budget of the solver (bytes)
DEFAULT_MEMORY_LIMIT = 1 << 30
#: bytes per listed triplet, counting the temporaries of a merge and a gradient update
BYTES_PER_TERM = 256
#: the active list's pruning margin during the refinement (see :class:`ActiveSetOracle`)
REFINE_PRUNE = 0.3
#: streaming trial evaluations above this multiple of the best value seen return inf
STREAM_CAP = 4.0


def check_memory_limit(value, owner="LMNN"):
    """Validate a ``memory_limit``: a positive int (bytes) or None; return it."""
    import numbers

    if value is None or (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                         and value >= 1):  # fmt: skip
        return None if value is None else int(value)
    raise ValueError(
        f"The 'memory_limit' parameter of {owner} must be an int in the range [1, inf) "
        f"(bytes) or None. Got {value!r} instead."
    )


class ActiveSetOracle:
    """Objective and subgradient of eq. (14) with the active-set scheme of App. A.

    Parameters
    ----------
    check_every : int
        Calls between full checks; doubled while checks find nothing new (the paper:
        every 10–20 iterations, depending on fluctuations of the active set).
    prune : float or None
        At a full check, listed triplets whose hinge argument is below ``−prune`` are
        dropped from the active list (they are re-found by later full checks if they
        come back). ``None`` keeps the list growing as in the paper.
    search : {"brute", "balltree", "kdtree", "auto"} or callable, default="brute"
        Impostor search of the full checks (§6); ``"auto"`` measures brute force and
        ball trees on the first checks and keeps the faster (same results either way).
    memory_limit : int or None
        Bytes of working memory (see the module docstring); ``None``: unbounded.
    executor : object, optional
        Runs the streaming mode's block functions (:mod:`.lmnn_stream`).
    """

    def __init__(
        self, X, y, targets, mu, *, check_every=10, prune=1.0, block_size=512, search="brute",
        memory_limit=None, executor=None,
    ):  # fmt: skip
        self.X, self.y, self.T, self.mu = X, y, targets, mu
        self.n, self.k = targets.shape
        self.check_every = check_every
        self.prune = prune
        self.memory_limit, self.executor = memory_limit, executor
        rows = plan_blocks(self.n, X.shape[1], self.k, memory_limit)[0]
        self.block_size = min(block_size, rows)
        self.term_budget = None if memory_limit is None else memory_limit // BYTES_PER_TERM
        self.mode, self.stream, self._f_seen, self._last_ok = "active_set", None, None, None
        self._overflows = 0  #: consecutive trial points past the budget rejected as collapsed
        self._new_terms = 0  #: triplets the last full check added to the list
        self.handover = 0.0  #: see :meth:`check`
        self._memo = None  #: (M, terms) of the last search (see :meth:`_search`)
        if search == "auto":
            from ..balltree import ImpostorSearch

            search = ImpostorSearch("auto")
        self.search = search
        self.C_pull = pull_matrix(X, targets)
        d = X.shape[1]
        self._set_list(np.empty(0, np.int64), {})
        # incremental gradient state (eq. 19): the mask of counted triplets and their sum
        # and the dual estimate λ̄ (the prox centre of the smoothed stage)
        self.mask = {"sub": np.zeros(0, bool), "smooth": np.zeros(0, bool), "lam": np.zeros(0)}
        self.G_part = {"sub": np.zeros((d, d)), "smooth": np.zeros((d, d))}
        self.calls = 0
        self._next_check = 0
        # on large data the interval ramps up 1, 2, 4, ... at the start (a collapsed
        # step is costly there); on small data App. A's 10-20 from the start
        self._interval = 1
        self.full_checks = 0
        self.max_terms = 5_000_000  #: see full_check
        self.version = 0  #: bumped whenever the active list gains violated triplets
        self.tol = None  #: certified gap below which :meth:`lower_bound` skips the crossover

    # -- active list ------------------------------------------------------------
    def _set_list(self, keys, keep_masks):
        n = self.n
        self.keys = keys
        self.mask = {name: m for name, m in keep_masks.items()}
        self.L = keys % n
        self.J = (keys // n) % n
        self.I = keys // (n * n)
        self.slot = np.argmax(self.T[self.I] == self.J[:, None], axis=1)
        # the k targets of a point share its impostors: d(i, l) once per listed pair
        pairs, self._pair_of = np.unique(self.I * n + self.L, return_inverse=True)
        self._pair_I, self._pair_L = pairs // n, pairs % n

    def _merge(self, I, J, L):
        """Add triplets to the active list; return True if any were new."""
        keys = (I * self.n + J) * self.n + L
        keys = np.unique(keys[~np.isin(keys, self.keys)])
        if len(keys) == 0:
            return False
        all_keys = np.concatenate([self.keys, keys])
        order = np.argsort(all_keys, kind="stable")
        masks = {
            k: np.concatenate([m, np.zeros(len(keys), m.dtype)])[order]
            for k, m in self.mask.items()
        }
        self._set_list(all_keys[order], masks)
        return True

    def _prune(self, z):
        """Drop listed triplets far from violation and not counted in any gradient."""
        drop = z < -self.prune
        for m in self.mask.values():
            drop &= m == 0
        if drop.any():
            keep = ~drop
            self._set_list(self.keys[keep], {k: m[keep] for k, m in self.mask.items()})
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
        budget = None if self.term_budget is None else max(self.term_budget - len(self.keys), 0)
        collapse = max(self.max_terms, 4 * len(self.keys))
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
        self._last_ok, self._overflows = (M, components), 0  # its terms fit in the list
        size = len(self.keys)
        changed = self._merge(I, J, L)
        self._new_terms = len(self.keys) - size
        self.version += changed
        return not changed

    def _search(self, M, components, limit):
        """The violated triplets ``(I, J, L)`` at ``M`` (all of them: a full search),
        remembered: the drivers often ask for the exact objective and then a full check
        at the same point (one search on large data costs hundreds of evaluations).
        Brute-force searches run as the executor's block map (:mod:`.lmnn_stream`), tree
        searches in this process."""
        memo = self._memo
        if memo is not None and np.array_equal(memo[0], M):
            if limit is not None and len(memo[1][0]) > limit:
                raise TooManyTerms(f"more than {limit} candidate hinge terms")
            return memo[1]
        if self.search in (None, "brute"):
            out = self._streamer().terms(self._components(M, components), limit)
        else:
            out = hinge_terms(M, self.X, self.T, self.y, block_size=self.block_size,
                              components=components, search=self.search,
                              max_terms=limit)[:3]  # fmt: skip
        self._memo = (np.array(M, copy=True), out)
        return out

    def check(self, M, components=None):
        """The final check of App. A.1 (called by the driver at apparent convergence).

        While :attr:`handover` is set (phase 1 before a refinement, whose own final
        check is strict), a check adding under that fraction of the list passes: on
        large data each check of a converged subgradient run finds a few new near-kink
        terms, and every restart costs a full search.
        """
        if self.full_check(M, components):
            return True
        return self._new_terms <= self.handover * len(self.keys)

    def _streamer(self):
        if self.stream is None:
            self.stream = StreamingEvaluator(self.X, self.y, self.T, self.mu, self.C_pull,
                                             memory_limit=self.memory_limit,
                                             executor=self.executor)  # fmt: skip
        return self.stream

    def _overflow(self, M, components, sigma=None):
        """A trial point whose full check overflowed: evaluate it by streaming, capped.

        Past the cap (a collapsed metric: every point an impostor) the value is inf and
        the step is rejected; a finite value means the iterates have entered the region
        where the active list cannot hold the terms: switch to streaming for good. So do
        three such rejections in a row (the accepted point itself may be over budget, its
        list value an underestimate: the drivers then re-evaluate it exactly).
        """
        if self._f_seen is None and self._last_ok is not None:
            # the active list's values underestimate eq. (14) (it may miss terms): the
            # cap's reference is the exact value at the last point that passed a check
            M_ok, L_ok = self._last_ok
            self._f_seen = self._streamer().objective(M_ok, self._components(M_ok, L_ok))
        f, G = self._streamer().evaluate(M, self._components(M, components), sigma,
                                         cap=self._cap())  # fmt: skip
        self._overflows += 1
        if self.term_budget is not None and (np.isfinite(f) or self._overflows >= 3):
            self._go_streaming()
        return self._capped((f, G))

    def _go_streaming(self):
        """Switch to exact evaluation over all triplets by row blocks (:mod:`.lmnn_stream`)."""
        self._streamer()
        self.mode, self.switched_at = "streaming", self.calls
        # the drivers re-evaluate their points right after the switch, capped by the exact
        # value at the last point that passed a check (an accepted point whose list value
        # underestimated a collapse would otherwise cost a pass over all n²k triplets)
        self._f_seen = None
        if self._last_ok is not None:
            M_ok, L_ok = self._last_ok
            self._f_seen = self.stream.objective(M_ok, self._components(M_ok, L_ok))
            self._ok_value = self._f_seen
        e = np.empty(0, np.int64)
        self._set_list(e, {"sub": np.zeros(0, bool), "smooth": np.zeros(0, bool),
                           "lam": np.zeros(0)})  # fmt: skip
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

    # -- evaluation -------------------------------------------------------------
    def _hinge_args(self, M, components=None, accepted=False):
        """``z = 1 + d_M(i, j) − d_M(i, l)`` over the active list (full check first if due).

        ``accepted``: ``M`` is an accepted point, where a check that overflows the list
        switches to streaming (``None`` is returned) instead of raising."""
        Lc = components_from_metric(M) if components is None else components
        checked = self.calls >= self._next_check
        if checked:
            stable = self.full_check(M, Lc, accepted=accepted)
            if self.mode == "streaming":
                return None
            # for the schedule, new terms under 1% of a long list count as stable (the
            # final check at convergence still asks for none)
            stable = stable or self._new_terms <= 1e-2 * len(self.keys)
            # App. A.1: re-check every 10–20 iterations, "depending on fluctuations"; the
            # interval doubles while checks find nothing new, up to a cap that keeps the
            # checks' flops at most about those of the evaluations between them (on large
            # data a check costs hundreds of evaluations); new violations halve it (not
            # below check_every; the start-up ramp 1, 2, 4, ... goes on up to it)
            if stable:
                self._interval = min(2 * self._interval, self._check_cap())
            else:
                self._interval = min(2 * self._interval, max(self._interval // 2, self.check_every))
            self._next_check = self.calls + self._interval
        self.calls += 1
        Z = self.X @ Lc.T
        diff = Z[:, None, :] - Z[self.T]  # n × k target differences, then gathers
        Dt = np.einsum("ijk,ijk->ij", diff, diff)
        P_I, P_L = self._pair_I, self._pair_L
        d_il = np.empty(len(P_I))
        step = 1 << 19  # bounded temporaries for long active lists
        for s in range(0, len(P_I), step):
            b = Z[P_I[s : s + step]] - Z[P_L[s : s + step]]
            d_il[s : s + step] = np.einsum("ij,ij->i", b, b)
        z = 1.0 + Dt[self.I, self.slot] - d_il[self._pair_of]
        if checked and self.prune is not None:
            z = self._prune(z)
        return z

    def _check_cap(self):
        """The largest check interval: ``max(2·check_every, flops(check)/flops(evaluation))``
        (a deterministic cost model: ``n²d`` for a check, ``nd² + 3|list|d`` for an
        evaluation), so the result never depends on the machine's speed."""
        n, d = self.X.shape
        ratio = n * n * d / (n * d * d + 3 * len(self.keys) * d + 1)
        return int(max(2 * self.check_every, min(ratio, 10_000)))

    def _counted(self, name, new_mask):
        """Update the incrementally maintained sum over ``new_mask`` (eq. 19)."""
        old = self.mask[name]
        changed = np.flatnonzero(new_mask != old)
        if len(changed):
            sign = np.where(new_mask[changed], 1.0, -1.0)
            I, J, L = self.I[changed], self.J[changed], self.L[changed]
            self.G_part[name] += triplet_scatter(self.X, I, J, L, sign)
            self.mask[name] = new_mask
        return self.G_part[name]

    def __call__(self, M, components=None):
        """Eq. (14) over the active list and its subgradient (with respect to M).

        At a collapsed metric (see :meth:`full_check`) the value is ``inf``, so the
        step rule rejects the step.
        """
        if self.mode == "active_set":
            try:
                z = self._hinge_args(M, components)
            except TooManyTerms:
                return self._overflow(M, components)
        if self.mode == "streaming":
            return self._capped(self.stream.evaluate(M, self._components(M, components),
                                                     cap=self._cap()))  # fmt: skip
        act = z > 0
        G_hinge = self._counted("sub", act)
        f = (1 - self.mu) * float(np.sum(self.C_pull * M)) + self.mu * float(z[act].sum())
        return f, (1 - self.mu) * self.C_pull + self.mu * G_hinge

    def smooth(self, M, sigma, components=None):
        """Smoothed eq. (14) around the dual centre λ̄, and its gradient.

        Each hinge is replaced by ``φ(z) = max_{λ∈[0,1]} λz − (σ/2)(λ − λ̄)²`` (a Huber
        function when λ̄ = 0; see :mod:`.smoothing`), whose gradient is
        ``λ(z) = clip(λ̄ + z/σ, 0, 1)``. Saturated terms (λ = 1) are summed
        incrementally as in eq. (19); only the terms with 0 < λ < 1 afresh. In the
        streaming mode λ̄ = 0. ``components``: ``L`` with ``M = LᵀL`` if known.
        """
        if self.mode == "active_set":
            try:
                z = self._hinge_args(M, components)
            except TooManyTerms:
                return self._overflow(M, components, sigma)
        if self.mode == "streaming":
            return self._capped(self.stream.evaluate(M, self._components(M, components), sigma,
                                                     cap=self._cap()))  # fmt: skip
        lam_bar = self.mask["lam"]
        lam = np.clip(lam_bar + z / sigma, 0.0, 1.0)
        sat = lam >= 1.0
        G = self._counted("smooth", sat).copy()
        part = np.flatnonzero((lam > 0) & ~sat)
        G += triplet_scatter(self.X, self.I[part], self.J[part], self.L[part], lam[part])
        phi = lam * z - 0.5 * sigma * (lam - lam_bar) ** 2
        self._lam, self._lam_keys = lam, self.keys
        f = (1 - self.mu) * float(np.sum(self.C_pull * M)) + self.mu * float(phi.sum())
        return f, (1 - self.mu) * self.C_pull + self.mu * G

    def recenter(self, M, sigma):
        """Move the prox centre to the current dual estimate (augmented-Lagrangian step).

        A no-op in the streaming mode (its prox centre stays at 0)."""
        z = None if self.mode == "streaming" else self._hinge_args(M, accepted=True)
        if z is None:
            return
        self.mask["lam"] = np.clip(self.mask["lam"] + z / sigma, 0.0, 1.0)

    def lower_bound(self, M, sigma, F=None):
        """A certified lower bound on the optimum of eq. (14) from the dual estimate.

        For λ ∈ [0, 1]^T, ``S(λ) = (1−μ)ΣC_ij + μ Σ λ_t (C_ij − C_il)`` gives ``f* ≥
        μΣλ/(1 − ν)`` with ``ν = min(0, λ_min(S(λ), S(0)))`` (:mod:`.lmnn_dual`). ``F``
        (an attained objective value) enables the trace bound (in both modes) and, when the gap
        ``(F − bound)/F`` is above :attr:`tol` (and below ``max(30·tol, 1e-3)``: farther
        from convergence the primal gap dominates), the crossover of :mod:`.lmnn_dual`
        (multipliers of the triplets at the kink fitted to complementarity).
        """
        z = None if self.mode == "streaming" else self._hinge_args(M, accepted=True)
        cert = self._certificate()
        if z is None:  # streaming: λ = clip(z/σ, 0, 1) over all triplets, by blocks
            S1, lam_sum = self.stream.dual(components_from_metric(M), sigma)
            return cert.bound(S1, lam_sum, F)
        lam = np.clip(self.mask["lam"] + z / sigma, 0.0, 1.0)
        bound = cert.bound(cert.scatter(self.I, self.J, self.L, lam), lam.sum(), F)
        # the crossover (a K×K quadratic programme) pays only near convergence
        tol = self.tol or 0.0
        if F is not None and tol * abs(F) < F - bound <= max(30 * tol, 1e-3) * abs(F):
            bound = max(bound, cert.crossover(M, self.I, self.J, self.L, z, lam, F))
        return bound

    def _certificate(self):
        if getattr(self, "_cert", None) is None:
            from .certificate import DualCertificate

            self._cert = DualCertificate(self.X, self.C_pull, self.mu)
        return self._cert

    def objective(self, M, components=None):
        """Eq. (14) at M over all triplets (exact); streamed when the terms overflow."""
        Lc, h = self._components(M, components), None
        if self.mode == "active_set":
            try:
                I, J, L = self._search(M, Lc, self.term_budget)
            except TooManyTerms:
                pass
            else:  # the terms' values, in double precision from Z = X Lᵀ
                Z = self.X @ Lc.T
                a, b = Z[I] - Z[J], Z[I] - Z[L]
                h = 1.0 + np.einsum("ij,ij->i", a, a) - np.einsum("ij,ij->i", b, b)
        if h is None:
            return self._streamer().objective(M, Lc)
        return (1 - self.mu) * float(np.sum(self.C_pull * M)) + self.mu * float(h.sum())


class ComponentsOracle:
    """The same oracle in the factor ``L`` (``M = LᵀL``): gradient ``2 L G``.

    Descent in ``L`` is not convex but is well scaled; LMNN's solver used
    subgradient steps "in both the matrices L and M" (§3.4), L for speed, M to certify.
    """

    def __init__(self, oracle):
        self.oracle = oracle

    @property
    def version(self):
        return self.oracle.version

    def __call__(self, L):
        f, G = self.oracle(L.T @ L, components=L)
        return f, 2.0 * (L @ G)

    def check(self, L):
        return self.oracle.check(L.T @ L, L)

    def objective(self, L):
        return self.oracle.objective(L.T @ L, components=L)


def pull_whitening(X, targets, rtol=1e-8):
    """``S`` (and ``S⁻¹``) with ``Sᵀ P S = I``, ``P`` the pull matrix of :func:`pull_matrix`.

    ``P = Σ (x_i − x_j)(x_i − x_j)ᵀ`` over target pairs; eigenvalues of ``P`` below
    ``rtol·λ_max`` are raised to that
    floor (directions in which no target pair differs).
    """
    P = pull_matrix(X, targets)
    w, V = np.linalg.eigh(0.5 * (P + P.T))
    w = np.maximum(w, rtol * max(float(w[-1]), 1e-300))
    return V / np.sqrt(w), (V * np.sqrt(w)).T


def _one_blas_thread(f):
    """Run ``f`` with one BLAS thread: the d×d and gather-sized products of LMNN are too
    small to gain from threads (digits: App. A phase 1.5 s vs 1.9 s, with the refinement
    12 s vs 39 s on this 2-core machine)."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return f(*args, **kwargs)

    return wrapper


@_one_blas_thread
def solve(
    X,
    y,
    targets,
    mu,
    *,
    M0=None,
    phase1="components",
    max_iter=3000,
    refine=True,
    time_limit=None,
    check_every=10,
    prune=1.0,
    block_size=512,
    callback=None,
    phase1_settings=None,
    refine_settings=None,
    search="brute",
    precondition=True,
    tol=1e-4,
    memory_limit=DEFAULT_MEMORY_LIMIT,
    executor=None,
):
    """Minimise eq. (14) with the large-scale solver; return a :class:`SolveResult`.

    Phase 1 is App. A's active-set subgradient descent with the paper's step rule
    (×1.01 after a decrease, ×0.5 and undo after an increase), by default in the
    factor ``L`` (``phase1="components"``, fast and well scaled) or on ``M`` with
    projection onto the PSD cone (``phase1="metric"``, Alg. 1 verbatim). It stalls
    about 1e-3 (relative) above the optimum, at the kinks of the hinge. Phase 2
    (``refine=True``) minimises the smoothed objective by L-BFGS in ``L`` at a fixed σ
    with dual recentring (σ shrinks at stalls, and when streaming; :mod:`.lmnn_refine`;
    ``refine="fista"`` runs the first-order stage of :mod:`.smoothing` on ``M``
    instead) and certifies a lower bound from the dual estimate. ``refine_settings``:
    keyword arguments of :func:`.lmnn_refine.refine_components` (or a
    ``SmoothingSettings`` for "fista").
    ``search`` selects the impostor search of the full checks (see
    :class:`ActiveSetOracle`).

    ``precondition=True`` solves in coordinates where the pull term is ``tr M``
    (:func:`pull_whitening`): eq. (14) depends on ``M`` only through distances, so
    ``x ↦ Sᵀx`` with ``M = S M' Sᵀ`` is an exact change of variables, and it equalises
    the curvature that badly scaled features give the factor ``L`` (breast_cancer: the
    solver ended 3.2e-3 above the optimum without it, 3e-8 with it). ``M0``, the result
    and the lower bound are in the original coordinates either way.

    ``tol`` is the certified relative gap ``(objective − lower_bound)/|objective|`` that
    "optimal" means. When the refinement ends with a larger gap, :mod:`.lmnn_certify`
    continues (escape steps along negative curvature, then FISTA on ``M ⪰ 0``); the
    status is "optimal_inaccurate" if the gap stays open. ``info["certified_gap"]``
    reports it.

    ``memory_limit`` (bytes, or ``None`` for no bound) caps the working memory: past
    it the oracle streams over row blocks (:mod:`.lmnn_stream`) instead of keeping a
    triplet list, and ``info["mode"]`` is ``"streaming"`` (else ``"active_set"``).
    ``executor`` runs the streaming block functions (default: in this process).
    """
    memory_limit = check_memory_limit(memory_limit, owner="solve")
    if precondition:
        S, S_inv = pull_whitening(X, targets)
        M0 = np.eye(X.shape[1]) if M0 is None else np.asarray(M0, dtype=float)
        res = solve.__wrapped__(
            X @ S,
            y,
            targets,
            mu,
            M0=S_inv @ M0 @ S_inv.T,
            phase1=phase1,
            max_iter=max_iter,
            refine=refine,
            time_limit=time_limit,
            check_every=check_every,
            prune=prune,
            block_size=block_size,
            callback=callback,
            phase1_settings=phase1_settings,
            refine_settings=refine_settings,
            search=search,
            precondition=False,
            tol=tol,
            memory_limit=memory_limit,
            executor=executor,
        )
        res.matrix = S @ res.matrix @ S.T
        res.matrices = [res.matrix]
        res.info["preconditioned"] = True
        return res
    res, oracle = _solve(X, y, targets, mu, M0, phase1, max_iter, refine, time_limit,
                         check_every, prune, block_size, callback, phase1_settings,
                         refine_settings, search, memory_limit, executor, tol)  # fmt: skip
    if not refine or res.status == "user_limit":
        return res
    # Burer–Monteiro caveat: phase 1 and the refinement descend in the factor L, where a
    # rank-deficient L can be stationary without M being optimal, and which such point
    # the descent meets depends on rounding (the BLAS kernel). The certificate exposes
    # it; :func:`.lmnn_certify.close_gap` escapes along negative curvature and falls
    # back to a convex method on M, and the status follows the certificate.
    if certified_gap(res) > tol:
        remaining = None if time_limit is None else time_limit - res.seconds
        res2 = close_gap(oracle, res, tol=tol, time_limit=remaining, callback=callback,
                         refine_settings=refine_settings if refine is True else None)  # fmt: skip
        info = dict(res.info)
        info.update(escapes=res2.info["escapes"], fallback=res2.info["fallback"])
        res2.info, res2.solver = info, res.solver
        res2.iterations += res.iterations
        res2.seconds += res.seconds
        res2.history = res.history + res2.history
        res = res2
    if res.status != "user_limit":
        res.status = "optimal" if certified_gap(res) <= tol else "optimal_inaccurate"
    res.info["certified_gap"] = certified_gap(res)
    res.info.update(_mode_info(oracle))
    return res


def _mode_info(oracle):
    info = {"mode": oracle.mode, "memory_limit": oracle.memory_limit}
    if oracle.mode == "streaming":  # (in the active-set mode the evaluator only searches)
        info.update(stream_evaluations=oracle.stream.evaluations,
                    stream_block_rows=oracle.stream.block_rows,
                    switched_after_calls=getattr(oracle, "switched_at", None))  # fmt: skip
    return info


def _solve(X, y, targets, mu, M0, phase1, max_iter, refine, time_limit, check_every,
           prune, block_size, callback, phase1_settings, refine_settings, search,
           memory_limit=None, executor=None, tol=None):  # fmt: skip
    t0 = time.perf_counter()
    d = X.shape[1]
    oracle = ActiveSetOracle(
        X,
        y,
        targets,
        mu,
        check_every=check_every,
        prune=prune,
        block_size=block_size,
        search=search,
        memory_limit=memory_limit,
        executor=executor,
    )
    oracle.tol = tol
    M0 = np.eye(d) if M0 is None else M0
    ps = phase1_settings or SubgradientSettings(
        max_iter=max_iter, rtol=1e-4, patience=20, step_scale=0.3
    )
    ps.time_limit = time_limit
    switched = []

    def phase1_callback(*args):
        # once the oracle streams, every subgradient step costs a pass over the data:
        # hand over to the refinement (L-BFGS needs far fewer evaluations)
        if callback is not None and callback(*args):
            return True
        if refine and oracle.mode == "streaming":
            switched.append(True)
            return True
        return False

    ps.callback = phase1_callback
    oracle.handover = 1e-3 if refine else 0.0
    if phase1 == "components":
        res = projected_subgradient(
            ComponentsOracle(oracle), components_from_metric(M0), FullSpace(), ps
        )
        M1 = res.matrix.T @ res.matrix
    elif phase1 == "metric":
        res = projected_subgradient(oracle, M0, PSDCone(), ps)
        M1 = res.matrix
    else:
        raise ValueError(f"phase1 must be 'components' or 'metric'; got {phase1!r}.")
    oracle.handover = 0.0
    if refine and prune is not None:
        # the smoothed stages count only z > 0 (λ̄ starts at 0): keep the list near the
        # kink; a check at the first evaluation prunes it (dropped terms come back at the
        # checks once violated)
        oracle.prune, oracle._next_check = min(prune, REFINE_PRUNE), oracle.calls
    history, status, lower = list(res.history), res.status, None
    if switched and res.status == "user_limit":
        status = "optimal_inaccurate"  # phase 1 ended at the switch, not by the user
    ok_value = getattr(oracle, "_ok_value", None)
    if switched and ok_value is not None and not res.objective <= ok_value:
        # the descent's point was accepted on an incomplete list: restart the refinement
        # from the last point whose terms were all known (its value is exact)
        M_ok, L_ok = oracle._last_ok
        L_ok = components_from_metric(M_ok) if L_ok is None else L_ok
        M1 = M_ok if phase1 == "metric" else L_ok.T @ L_ok
        res.matrix, res.objective = (M1 if phase1 == "metric" else L_ok), ok_value
    iterations, best_M, best_f = res.iterations, M1, res.objective
    info = {"phase1_objective": res.objective, "phase1_iterations": res.iterations}
    remaining = None if time_limit is None else time_limit - (time.perf_counter() - t0)
    if refine and status != "user_limit" and (remaining is None or remaining > 0):
        if refine == "fista":  # first-order smoothed stage on M (see .smoothing)
            rs = refine_settings or SmoothingSettings()
            rs.time_limit, rs.callback = remaining, callback
            res2 = smoothed_descent(oracle, M1, PSDCone(), rs)
        else:  # smoothed L-BFGS in the factor L (default)
            res2 = refine_components(
                oracle,
                components_from_metric(M1),
                time_limit=remaining,
                callback=callback,
                **{"gap_tol": tol, **(refine_settings or {})},
            )
        history += res2.history
        iterations += res2.iterations
        status, lower = res2.status, res2.lower_bound
        info["refine_evaluations"] = res2.iterations
        info["final_sigma"] = res2.info.get("final_sigma")
        if res2.objective < best_f:
            best_M, best_f = res2.matrix, res2.objective
    info.update(
        active_list=len(oracle.keys),
        active=int(np.count_nonzero(oracle.mask["sub"])),
        full_checks=oracle.full_checks,
        search=str(getattr(oracle.search, "choice", oracle.search)),
        **_mode_info(oracle),
    )
    res = SolveResult(
        matrix=best_M,
        objective=float(best_f),
        status=status,
        iterations=iterations,
        seconds=time.perf_counter() - t0,
        solver="subgradient",
        history=history,
        lower_bound=lower,
        info=info,
    )
    return res, oracle
