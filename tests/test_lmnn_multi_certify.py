"""Multi-metric LMNN: saddle escape, pruned list, repaired bound, polish, certified status."""

import numpy as np
import pytest
from lmnn_verify import verified_multi_solve

from convexmetric import datasets
from convexmetric.linalg import psd_scaling
from convexmetric.lmnn.multi import certificate as SP
from convexmetric.lmnn.multi import solver as SM
from convexmetric.neighbors import target_neighbors
from convexmetric.optim.linesearch import bracket_search
from convexmetric.problems import lmnn_multi as PM


def instance(per_class=8, name="iris"):
    Xtr, _, ytr, _ = datasets.load_split(name)
    keep = np.concatenate([np.flatnonzero(ytr == c)[:per_class] for c in np.unique(ytr)])
    _, y = np.unique(ytr[keep], return_inverse=True)
    X = Xtr[keep]
    return X, y, target_neighbors(X, y, 2)


@pytest.fixture(scope="module")
def exact():
    X, y, T = instance()
    Ms, value, status, _ = PM.solve(X, y, T, 0.5, y, 3, solver="CLARABEL")
    assert status.startswith("optimal")  # CLARABEL: "optimal_inaccurate" on some instances
    assert PM.objective(Ms, X, T, y, y, 0.5) == pytest.approx(value, rel=1e-6)
    return X, y, T, value


def test_escape_direction_lowers_the_objective_at_a_rank_one_point(exact):
    X, y, T, _ = exact
    o = SM.MultiMetricOracle(X, y, T, 0.5, y, 3, check_every=None)
    rng = np.random.default_rng(0)
    Ms = [np.outer(v, v) for v in rng.normal(size=(3, X.shape[1]))]  # far from optimal
    o.full_check(Ms, margin=1e9)  # every triplet listed: the list objective is exact
    D, worst = SP.negative_parts(o, Ms, 1.0)
    assert worst < 0
    assert all(np.linalg.eigvalsh(Dg).min() >= -1e-9 for Dg in D)  # PSD direction
    t, ft = bracket_search(lambda t: o([M + t * Dg for M, Dg in zip(Ms, D)])[0], 1e-3)
    assert t > 0 and ft < o.objective(Ms) - 1e-6
    assert o.objective([M + t * Dg for M, Dg in zip(Ms, D)]) == pytest.approx(ft, rel=1e-9)


@pytest.mark.parametrize("precondition", [True, False])
def test_solve_certifies_and_bound_is_valid(exact, precondition):
    X, y, T, value = exact
    r = SM.solve(X, y, T, 0.5, y, 3, precondition=precondition, tol=1e-5)
    assert r.lower_bound <= value * (1 + 1e-7)
    assert r.status == "optimal"
    report = verified_multi_solve(r, X, y, T, y, tol=1e-5)
    # the verifier's bound may lie below the solver's by its proof's raise of κ (≤ 1e-10)
    assert r.info["certified_gap"] == pytest.approx(report.certified_gap, rel=1e-6, abs=1e-9)
    # tol plus CLARABEL's accuracy ("optimal_inaccurate" on this SDP: ~1e-6)
    assert abs(r.objective - value) <= (1e-5 + 1e-6) * value


def test_status_is_never_optimal_with_an_open_gap(exact):
    X, y, T, _ = exact
    r = SM.solve(X, y, T, 0.5, y, 3, subgradient_iter=5, refine=False)  # no refinement, no bound
    assert r.lower_bound is None and r.status == "optimal_inaccurate"
    r = SM.solve(X, y, T, 0.5, y, 3, tol=1e-14)  # a tolerance no bound can meet
    assert r.status == "optimal_inaccurate" and r.info["certified_gap"] > 1e-14


def test_pruning_keeps_the_dual_centre_of_listed_terms(exact):
    X, y, T, _ = exact
    o = SM.MultiMetricOracle(X, y, T, 0.5, y, 3)
    Ms = [np.eye(X.shape[1]) for _ in range(3)]
    o.full_check(Ms, margin=1e9)
    o.lam_bar = np.linspace(0, 1, len(o.keys)) * (np.arange(len(o.keys)) % 2)
    before = dict(zip(o.keys.tolist(), o.lam_bar))
    o.full_check([10 * M for M in Ms], margin=0.0)  # most terms leave the list
    assert len(o.keys) < len(before)
    assert all(before[k] == lam for k, lam in zip(o.keys.tolist(), o.lam_bar))
    assert np.all(np.isin(np.array(list(before))[np.array(list(before.values())) > 0], o.keys))


def singular_instance():
    """iris plus a feature constant (0) within class 0: ``P_0`` is singular."""
    X, y, T = instance()
    extra = np.where(y == 0, 0.0, np.random.default_rng(0).uniform(0.5, 1.5, len(y)))
    return np.column_stack([X, extra]), y, T


@pytest.fixture(scope="module")
def exact_singular():
    """A constant feature within a class: the range restriction is exercised."""
    X, y, T = singular_instance()
    Ms, value, status, _ = PM.solve(X, y, T, 0.5, y, 3, solver="CLARABEL")
    assert status.startswith("optimal")
    assert PM.objective(Ms, X, T, y, y, 0.5) == pytest.approx(value, rel=1e-5)
    assert value > 0.1
    return X, y, T, value


@pytest.mark.parametrize("which", ["exact", "exact_singular"])
def test_repaired_bound_is_below_the_exact_optimum_for_any_multipliers(which, request):
    X, y, T, value = request.getfixturevalue(which)
    o = SM.MultiMetricOracle(X, y, T, 0.5, y, 3, check_every=None)
    Ms = [np.eye(X.shape[1]) for _ in range(3)]
    o.full_check(Ms, margin=1e9)  # every triplet listed
    cert = SP.RangeCertificate(o)
    assert o.outside_range().any() == (which == "exact_singular")
    rng = np.random.default_rng(1)
    F = o.objective(Ms)  # an attained value, ≥ the optimum
    assert F >= value
    bounds = []
    for _ in range(20):
        lam = rng.uniform(size=len(o.keys)) * (rng.uniform(size=len(o.keys)) < 0.5)
        lb, _ = cert.bound(lam, F)
        assert lb <= value * (1 + 1e-7)
        bounds.append(lb)
        # the scaling repair is the exact θ of the bisection in psd_scaling
        lam[o.outside_range()] = 0.0
        S0 = [(1 - o.mu) * P for P in o.P]
        theta = psd_scaling(S0, o.gradient(lam), steps=60)
        scaled = cert.bound(lam)[0]
        assert scaled == pytest.approx(0.5 * theta * lam.sum(), rel=1e-6, abs=1e-9)
        assert lb >= scaled
    assert max(bounds) > 0  # informative, not trivially -inf
    # at the exact solution's smoothed multipliers the bound is nearly tight
    Mx, _, _, _ = PM.solve(X, y, T, 0.5, y, 3, solver="CLARABEL")
    lam = np.clip(o.hinge_arguments(list(Mx)) / 1e-6, 0.0, 1.0)
    lb, _ = cert.bound(lam, value)
    assert lb <= value * (1 + 1e-7)


@pytest.mark.parametrize("which", ["exact", "exact_singular"])
def test_polish_certifies_from_a_rough_point(which, request):
    X, y, T, value = request.getfixturevalue(which)
    o = SM.WhitenedOracle(SM.MultiMetricOracle(X, y, T, 0.5, y, 3))
    x0 = o.from_original([np.eye(X.shape[1]) for _ in range(3)])
    # the gap reaches 1e-4 slowly at the end (singular: 360 stages, or 450 with the
    # Laplacian's sums in another order): a budget with room for the rounding
    r = SM.polish(o, x0, tol=1e-4, sigma=0.3, max_stages=600)
    assert r.lower_bound <= value * (1 + 1e-7)
    assert r.objective >= value * (1 - 1e-7)
    assert r.status == "optimal"
    Ms = o.to_original(r.matrices)
    verified_multi_solve(r, X, y, T, y, matrices=Ms)
    assert PM.objective(Ms, X, T, y, y, 0.5) == pytest.approx(r.objective, rel=1e-9)


def test_distances_from_factors_of_fewer_rows_match_the_metrics(exact):
    """The factor path (``Z = U Lᵀ``, factors trimmed to their rank) gives the same hinge
    arguments, objective and gradient as the metric path, also through the whitening."""
    from convexmetric.optim.factor import Factored, metric, trimmed

    X, y, T, _ = exact
    rng = np.random.default_rng(1)
    Ls = trimmed([rng.normal(size=(r, X.shape[1])) for r in (1, 2, 4)], 1e-8)
    assert [len(L) for L in Ls] == [1, 2, 4]
    for o in (SM.MultiMetricOracle(X, y, T, 0.5, y, 3, check_every=None),):
        o.full_check(metric(Ls), margin=1e9)
        z_m, z_f = o.hinge_arguments(metric(Ls)), o.hinge_arguments(metric(Ls), Ls)
        assert np.allclose(z_m, z_f, rtol=1e-10, atol=1e-10)
    # the factor gradient (smooth_factor: pair differences, no d × d sum) equals 2 L ∇_M
    base = SM.MultiMetricOracle(X, y, T, 0.5, y, 3, check_every=None)
    for w in (base, SM.WhitenedOracle(base)):
        w.full_check(metric(Ls), margin=1e9)
        f_m, G_m = w.smooth(metric(Ls), 0.1)
        f_f, G_f = Factored(w).smooth(Ls, 0.1)
        assert f_f == pytest.approx(f_m, rel=1e-10)
        assert all(np.allclose(2 * L @ g, gf, rtol=1e-8, atol=1e-10 * np.abs(gf).max())
                   for L, g, gf in zip(Ls, G_m, G_f))  # fmt: skip


def test_objective_at_factors_is_exact_and_its_search_serves_the_next_check(exact, monkeypatch):
    """The objective from factors (one search at the list's margin) equals the exact
    objective; a full check at the same factors reuses that search and lists what a
    fresh search lists; other factors search again."""
    from convexmetric.optim.factor import Factored, metric

    X, y, T, _ = exact
    rng = np.random.default_rng(2)
    Ls = [rng.normal(size=(2, X.shape[1])) for _ in range(3)]
    calls = []
    search = PM.hinge_terms
    monkeypatch.setattr(PM, "hinge_terms", lambda *a, **k: calls.append(1) or search(*a, **k))
    for oracle in (SM.MultiMetricOracle(X, y, T, 0.5, y, 3),):
        fresh = SM.MultiMetricOracle(X, y, T, 0.5, y, 3)
        f = Factored(SM.WhitenedOracle(oracle)).objective(Ls)
        want = PM.objective(SM.WhitenedOracle(oracle).to_original(metric(Ls)), X, T, y, y, 0.5)
        assert f == pytest.approx(want, rel=1e-10)
        n = len(calls)
        Factored(SM.WhitenedOracle(oracle)).begin_stage(Ls, 5)
        assert len(calls) == n  # reused
        fresh.full_check(SM.WhitenedOracle(fresh).to_original(metric(Ls)))
        assert np.array_equal(np.sort(oracle.keys), np.sort(fresh.keys))
        Factored(SM.WhitenedOracle(oracle)).begin_stage([2 * L for L in Ls], 5)
        assert len(calls) == n + 2  # (and the fresh oracle's own search)


@pytest.mark.parametrize("which", ["exact", "exact_singular"])
def test_ascent_raises_the_bound_below_the_exact_optimum(which, request):
    X, y, T, value = request.getfixturevalue(which)
    o = SM.MultiMetricOracle(X, y, T, 0.5, y, 3, check_every=None)
    Mx, _, _, _ = PM.solve(X, y, T, 0.5, y, 3, solver="CLARABEL")
    o.full_check(list(Mx), margin=1e9)  # every triplet listed
    cert = SP.RangeCertificate(o)
    F = o.objective(list(Mx))
    z = o.hinge_arguments(list(Mx))
    out = o.outside_range()
    for sigma in (0.3, 0.03):
        lam = np.clip(z / sigma, 0.0, 1.0)
        before = cert.bound(lam, F)[0]
        up = cert.ascend(lam, z, F, tau=0.1)
        assert up.min() >= 0 and up.max() <= 1 and not up[out].any()
        assert np.array_equal(up[(np.abs(z) >= 0.1) & ~out], lam[(np.abs(z) >= 0.1) & ~out])
        after = cert.bound(up, F)[0]
        assert before < after <= value * (1 + 1e-7)


def ascents_recorded(exact, monkeypatch):
    """A three-block oracle at the identity, every pair listed, whose certificate's
    ascents only record their ``F`` (in ``calls``): ``(oracle, Ms, calls)``."""
    X, y, T, _ = exact
    o = SM.MultiMetricOracle(X, y, T, 0.5, y, 3)
    o.tol, o.trace_bound = 1e-4, True
    Ms = [np.eye(X.shape[1]) for _ in range(3)]
    o.full_check(Ms, margin=1e9)
    calls = []

    def ascend(cert, lam, z, F, tol):
        calls.append(F)
        return lam

    monkeypatch.setattr(SP.RangeCertificate, "ascend", ascend)
    return o, Ms, calls


def test_the_bound_ascends_only_once_the_primal_settles(exact, monkeypatch):
    from convexmetric.lmnn.multi import oracle as MO
    from convexmetric.optim.oracle import Stage

    o, Ms, calls = ascents_recorded(exact, monkeypatch)
    monkeypatch.setattr(MO, "ASCENT_WINDOW", np.inf)  # every gap in the window
    F = o.objective(Ms)

    def stage(best):
        return Stage(Ms, 0.03, Ms, best, -np.inf, 0)

    o.bound(stage(1.1 * F))  # the first stage: no progress known yet
    o.bound(stage(F))  # the best objective fell by 9%: still moving
    assert calls == []
    o.bound(stage(F * (1 - 1e-4)))  # by 1e-4 ≤ ASCENT_PROGRESS·tol: settled
    assert calls == [F * (1 - 1e-4)]


def test_no_ascent_after_a_run_off_and_no_bound_at_the_exact_stages(exact, monkeypatch):
    """A stage whose point is not its best (its list went stale and the objective ran
    off) does not ascend, however settled the best objective; the exact stages (the
    large first move, a search at every evaluation) ask for no bound at all."""
    from convexmetric.lmnn.multi import oracle as MO
    from convexmetric.optim.oracle import Stage

    o, Ms, calls = ascents_recorded(exact, monkeypatch)
    off = [2.0 * M for M in Ms]  # the stage's point: not the best one
    monkeypatch.setattr(MO, "ASCENT_WINDOW", np.inf)
    F = o.objective(Ms)
    o.bound(Stage(Ms, 0.03, Ms, F, -np.inf, 0))
    assert o.bound(Stage(off, 0.03, Ms, F, -np.inf, 1)) is not None
    assert calls == []  # settled (no progress), but ran off
    o.bound(Stage(Ms, 0.03, Ms, F, -np.inf, 2))
    assert calls == [F]  # settled at its best point
    o.exact_stages = 4
    assert o.bound(Stage(Ms, 0.03, Ms, F, -np.inf, 3)) is None
    assert calls == [F]


def test_the_whitened_bound_passes_the_ascent_flag_through(exact, monkeypatch):
    X, y, T, _ = exact
    base = SM.MultiMetricOracle(X, y, T, 0.5, y, 3)
    base.tol = 1e-4
    Ms = [np.eye(X.shape[1]) for _ in range(3)]
    base.full_check(Ms, margin=1e9)
    seen = []
    original = SM.MultiMetricOracle.lower_bound

    def spy(self, Ms, sigma, F=None, ascend=True):
        seen.append(ascend)
        return original(self, Ms, sigma, F, ascend)

    monkeypatch.setattr(SM.MultiMetricOracle, "lower_bound", spy)
    w = SM.WhitenedOracle(base)
    F = base.objective(Ms)
    w.lower_bound(w.from_original(Ms), 0.03, F, ascend=False)
    w.lower_bound(w.from_original(Ms), 0.03, F)
    assert seen == [False, True]


def test_a_backoff_override_at_or_below_one_is_refused():
    X, y, T = instance(per_class=4)
    with pytest.raises(ValueError, match="'backoff' parameter of StageSettings"):
        SM.solve(X, y, T, 0.5, y, 3, refine_settings={"backoff": 1.0})
