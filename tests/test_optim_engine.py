"""The engine on tiny problems with known optima, independent of any paper.

The toy formulation is a hinge-loss SVM without offset,

    f(x) = ½‖x‖² + Σ_t max(0, 1 − a_tᵀx)     (optionally over x ≥ 0),

whose dual value ``Σλ − ½‖[Aᵀλ]‖²`` at any ``λ ∈ [0, 1]^m`` is a lower bound (over
``x ≥ 0`` the bracket is the positive part): the oracle's bound is exact weak duality,
so the engine's certificate can be checked against CVXPY's optimum.
"""

import cvxpy as cp
import numpy as np
import pytest

from convexmetric.cones import FullSpace, NonnegativeOrthant
from convexmetric.optim.escape import grown_factors
from convexmetric.optim.factor import Factored, trimmed
from convexmetric.optim.fista import FISTA
from convexmetric.optim.lbfgs import LBFGS
from convexmetric.optim.linesearch import bracket_search, golden_section, interval_search
from convexmetric.optim.oracle import Oracle, StageHooks
from convexmetric.optim.smoothing import SmoothingSettings, smoothed_descent
from convexmetric.optim.stages import StageSettings, run_stages
from convexmetric.optim.subgradient import SubgradientSettings, projected_subgradient

rng = np.random.default_rng(3)
A = rng.normal(size=(40, 5)) * np.where(rng.random((40, 1)) < 0.5, 1.0, -1.0)
A[:, 0] += 1.0


class SVM(Oracle):
    """The toy formulation through the oracle protocol."""

    def __init__(self, A, nonneg=False):
        self.A, self.nonneg = A, nonneg
        self.center = np.zeros(len(A))

    def _lam(self, x, sigma):
        return np.clip(self.center + (1.0 - self.A @ x) / sigma, 0.0, 1.0)

    def __call__(self, x):
        z = 1.0 - self.A @ x
        return self.objective(x), x - self.A.T @ (z > 0)

    def smooth(self, x, sigma, grad=True):
        z, lam = 1.0 - self.A @ x, self._lam(x, sigma)
        f = 0.5 * x @ x + float(np.sum(lam * z - 0.5 * sigma * (lam - self.center) ** 2))
        return (f, x - self.A.T @ lam) if grad else f

    def objective(self, x):
        return 0.5 * float(x @ x) + float(np.maximum(1.0 - self.A @ x, 0.0).sum())

    def dual(self, lam):
        v = self.A.T @ lam
        v = np.maximum(v, 0.0) if self.nonneg else v
        return float(lam.sum() - 0.5 * v @ v)

    def bound(self, stage):
        return self.dual(self._lam(stage.x, stage.sigma))

    def recenter(self, x, sigma, components=None):
        self.center = self._lam(x, sigma)


def exact(nonneg=False):
    x = cp.Variable(A.shape[1], nonneg=nonneg)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x) + cp.sum(cp.pos(1 - A @ x))))
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return prob.value


def stages(**kw):
    return StageSettings(
        **{
            "sigma0": 0.1,
            "sigma_factor": 0.3,
            "tol": 1e-8,
            "max_stages": 60,
            "stalls": None,
            **kw,
        }
    )


def test_staged_lbfgs_certifies_the_exact_optimum():
    f_star = exact()
    res = run_stages(SVM(A), np.zeros(5), LBFGS(), stages())
    assert res.status == "optimal" and res.certified_gap <= 1e-8
    assert res.lower_bound <= f_star * (1 + 1e-7)  # CLARABEL's own accuracy
    assert res.objective == pytest.approx(f_star, rel=1e-6)
    assert res.objective == pytest.approx(SVM(A).objective(res.matrix), rel=1e-14)
    assert min(res.history) >= res.lower_bound  # exact values only


def test_a_certified_run_ends_without_the_final_check():
    class Unsure(SVM):  # its final check always finds something new
        checks = 0

        def check(self, x, components=None):
            self.checks += 1
            return False

    oracle = Unsure(A)
    res = run_stages(oracle, np.zeros(5), LBFGS(), stages(tol=1e-6))
    assert res.status == "optimal" and res.certified_gap <= 1e-6
    assert oracle.checks == 0
    # uncertified (stalls end the run), the check decides: never passing, the run goes on
    # to its last stage
    oracle = Unsure(A)
    res = run_stages(oracle, np.zeros(5), LBFGS(), stages(tol=None, stalls=1, max_stages=6))
    assert oracle.checks > 0 and res.info["stages"] == 6


def test_fista_continuation_over_a_cone():
    f_star = exact(nonneg=True)
    s = SmoothingSettings(sigma0=0.1, sigma_min=1e-9, tol=1e-7, stalls=10)
    res = smoothed_descent(SVM(A, nonneg=True), -np.ones(5), NonnegativeOrthant(), s)
    assert np.all(res.matrix >= 0)
    assert res.status == "optimal" and res.lower_bound <= f_star * (1 + 1e-7)
    assert res.objective == pytest.approx(f_star, rel=1e-5)


@pytest.mark.parametrize("inner", [LBFGS(), FISTA(cone=NonnegativeOrthant())])
def test_max_iterations_is_a_cap_on_the_whole_run(inner):
    res = run_stages(SVM(A, nonneg=True), np.zeros(5), inner, stages(max_iter=7))
    assert res.iterations <= 7 and res.status == "optimal_inaccurate"


def test_time_limit_and_callback_stop_as_user_limit():
    res = run_stages(SVM(A), np.zeros(5), LBFGS(), stages(time_limit=0.0))
    assert res.status == "user_limit"
    seen = []
    res = run_stages(
        SVM(A), np.zeros(5), LBFGS(), stages(callback=lambda *a: seen.append(a) or len(seen) >= 2)
    )
    assert res.status == "user_limit" and len(seen) == 2 and res.info["stages"] == 2


def test_a_better_point_known_to_the_caller_is_kept():
    good = run_stages(SVM(A), np.zeros(5), LBFGS(), stages())
    res = run_stages(
        SVM(A), np.zeros(5), LBFGS(), stages(max_stages=1), best=(good.matrix, good.objective)
    )
    assert res.objective <= good.objective


def test_projected_subgradient_stalls_above_the_optimum_and_history_is_exact():
    f_star = exact()
    settings = SubgradientSettings(max_iter=2000, patience=50)
    res = projected_subgradient(SVM(A), np.zeros(5), FullSpace(), settings)
    assert res.objective >= f_star * (1 - 1e-7)
    assert res.objective <= f_star * 1.05  # the paper's solvers: close, not certified
    assert res.history[0] == pytest.approx(SVM(A).objective(np.zeros(5)))


class _HiddenWall(Oracle):
    """``f(x) = |x − 5| + 100·max(0, x − 1)`` on the line, known to the oracle only as
    ``|x − 5|`` until a check (every third call) at a point past the wall lists the wall
    (a new version) and refuses that point (``inf``, as LMNN's list refuses a trial past
    its budget); a checked value is exact, and the least one is ``best_seen``."""

    psd = False

    def __init__(self):
        self.version, self.best_seen, self.calls, self.points = 0, None, 0, []
        self.listed = None  #: the call that listed the wall

    def __call__(self, x, components=None):
        checked, self.calls = self.calls % 3 == 0, self.calls + 1
        if checked and self.listed is None and x[0] > 1:
            self.listed, self.version = len(self.points), self.version + 1
            self.points.append(float(x[0]))
            return np.inf, np.zeros(1)
        self.points.append(float(x[0]))
        wall = 100.0 if self.listed is not None and x[0] > 1 else 0.0
        f = abs(x[0] - 5) + wall * (x[0] - 1)
        if checked and (self.best_seen is None or f < self.best_seen[0]):
            self.best_seen = (f, x.copy())
        return f, np.array([np.sign(x[0] - 5) + wall])

    def objective(self, x, components=None):
        return abs(x[0] - 5) + 100.0 * max(0.0, x[0] - 1)


def test_subgradient_goes_back_to_the_best_exact_point_when_the_list_hid_a_rise():
    """Steps past the wall look downhill on the list; once a check lists the wall, the
    accepted point's value (93.1 at x = 1.9) rises above the checked start's (4.5): the
    driver goes back there instead of descending the wall from beyond it."""
    oracle = _HiddenWall()
    settings = SubgradientSettings(max_iter=60, step=0.7, grow=1.0, patience=1000)
    res = projected_subgradient(oracle, np.array([0.5]), FullSpace(), settings)
    # after the re-evaluations of the accepted and best points, the next is the start
    assert oracle.listed is not None and 0.5 in oracle.points[oracle.listed + 1 :]
    assert res.objective == pytest.approx(4.0, abs=0.75)  # at the wall x = 1, f = 4


def test_factored_gradient_matches_finite_differences():
    class Quad(Oracle):  # f(M) = ⟨C, M⟩ + ½‖M‖², C symmetric (a gradient over Sⁿ)
        C = rng.normal(size=(3, 3))
        C = C + C.T

        def smooth(self, M, sigma, grad=True, components=None):
            f = float(np.sum(self.C * M) + 0.5 * np.sum(M * M))
            return (f, self.C + M) if grad else f

    L, E = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    f, G = Factored(Quad()).smooth(L, 1.0)
    h = 1e-6
    fd = (Factored(Quad()).smooth(L + h * E, 1.0, grad=False) - f) / h
    assert fd == pytest.approx(float(np.sum(G * E)), rel=1e-4)


def test_trimmed_factor_keeps_the_metric_and_sheds_negligible_directions():
    V = np.linalg.qr(rng.normal(size=(5, 5)))[0]
    w = np.array([0.0, 1e-12, 1e-3, 0.5, 2.0])
    L = (V * np.sqrt(w)).T  # five rows, numerical rank 3
    out = trimmed(L, 1e-8)
    assert out.shape == (3, 5)
    assert np.allclose(out.T @ out, L.T @ L, atol=1e-11)
    blocks = trimmed([L, np.zeros((5, 5))], 1e-8)  # lists per block; never empty
    assert [b.shape[0] for b in blocks] == [3, 1]
    assert np.allclose(blocks[1], 0.0)
    assert trimmed(out, 1e-8) is out  # no row to shed: the same factor, bit for bit


class Recording(Oracle, StageHooks):
    """``f(M) = ⟨C, M⟩ + ½‖M‖²`` (optimum ``max(−C, 0)``), recording the factor that
    every exact objective and every ``begin_stage`` sees."""

    def __init__(self, C):
        self.C, self.calls = C, []

    def smooth(self, M, sigma, grad=True, components=None):
        f = float(np.sum(self.C * M) + 0.5 * np.sum(M * M))
        return (f, self.C + M) if grad else f

    def objective(self, M, components=None):
        self.calls.append(("objective", components))
        return self.smooth(M, 1.0, grad=False)

    def begin_stage(self, M, index, components=None):
        self.calls.append(("begin", components))


def recorded_stages(C):
    """Three stages on :class:`Recording` (``rank_tol`` 1e-8): the result, the calls and
    the indices of the ``begin_stage`` calls among them."""
    oracle = Recording(C)
    res = run_stages(
        Factored(oracle, rank_tol=1e-8),
        np.eye(3),
        LBFGS(),
        StageSettings(stage_iter=200, max_stages=3, stalls=None),
    )
    calls = oracle.calls
    return res, calls, [i for i, (what, _) in enumerate(calls) if what == "begin"]


def test_a_factor_that_sheds_nothing_reaches_begin_stage_as_it_is():
    # the objective after a stage and the next stage's begin_stage see the same factor
    # (so LMNN's full check there reuses the objective's search); optimum of full rank
    _, calls, stages = recorded_stages(np.diag([-1.0, -2.0, -3.0]))
    for i in stages[1:]:  # the previous call is the last stage's objective, same factor
        assert calls[i - 1][0] == "objective" and calls[i - 1][1] is calls[i][1]
    assert calls[stages[-1]][1].shape == (3, 3)


def test_the_stage_objective_is_at_the_trimmed_factor():
    # with an optimum of rank 2, diag(1, 2, 0), the stage's exact objective is taken at the
    # factor the next stage starts from (trimmed at the stage's end: end_stage), so LMNN's
    # full check there reuses the objective's search even when the factor sheds rows
    res, calls, stages = recorded_stages(np.diag([-1.0, -2.0, 3.0]))
    assert len(stages) == 3
    for i in stages[1:]:
        assert calls[i - 1][0] == "objective" and calls[i - 1][1] is calls[i][1]
    assert calls[stages[-1]][1].shape == (2, 3)
    assert res.objective == pytest.approx(-2.5, abs=1e-8)


def test_begin_stage_may_replace_the_point_and_the_run_goes_on_from_it():
    seen = []

    class Shrinking(Oracle):  # f(M) = ⟨C, M⟩ + ½‖M‖² over M = LᵀL; records factor shapes
        C = np.diag([-1.0, -2.0, 3.0])

        def smooth(self, M, sigma, grad=True, components=None):
            seen.append(None if components is None else components.shape)
            f = float(np.sum(self.C * M) + 0.5 * np.sum(M * M))
            return (f, self.C + M) if grad else f

        def objective(self, M, components=None):
            return self.smooth(M, 1.0, grad=False)

    L0 = np.eye(3)
    res = run_stages(
        Factored(Shrinking(), rank_tol=1e-8),
        L0,
        LBFGS(),
        StageSettings(stage_iter=200, max_stages=3, stalls=None),
    )
    # the optimum diag(1, 2, 0) has rank 2: after the first stage the factor has 2 rows
    shapes = [sh for sh in seen if sh is not None]
    assert shapes[0] == (3, 3) and shapes[-1] == (2, 3)
    assert np.allclose(res.matrix.T @ res.matrix, np.diag([1.0, 2.0, 0.0]), atol=1e-6)


def test_line_searches():
    t, f = golden_section(lambda t: (t - 0.3) ** 2, 0.0, 1.0, 60)
    assert t == pytest.approx(0.3, abs=1e-8) and f <= 1e-15
    assert bracket_search(lambda t: (t - 40.0) ** 2, 1e-3)[0] == pytest.approx(40.0, rel=1e-4)
    assert interval_search(lambda t: t, 1.0)[0] == 0.0  # nothing decreases: no step


class Nearest(Oracle, StageHooks):
    """``f(M) = ½‖M − A‖²_F`` over ``M ⪰ 0``, ``A = diag(1, 2, −1)``: the optimum
    ``diag(1, 2, 0)`` has rank 2, ``f* = ½``. Weak duality with ``Λ ⪰ 0`` gives the bound
    ``−½‖Λ‖² − ⟨Λ, A⟩`` (exact at ``Λ = max(M − A, 0)`` of the optimum); the escape is the
    engine's (:func:`grown_factors` on the eigenpairs of the gradient ``M − A``)."""

    A = np.diag([1.0, 2.0, -1.0])

    def smooth(self, M, sigma, grad=True, components=None):
        f = self.objective(M)
        return (f, M - self.A) if grad else f

    def objective(self, M, components=None):
        return 0.5 * float(np.sum((M - self.A) ** 2))

    def bound(self, stage):
        w, V = np.linalg.eigh(stage.x - self.A)
        Lam = (V * np.maximum(w, 0.0)) @ V.T
        return -0.5 * float(np.sum(Lam**2)) - float(np.sum(Lam * self.A))

    def escape(self, stage):
        if not stage.stopping:
            return None
        pairs = [np.linalg.eigh(stage.best_x - self.A)]
        value = lambda Ls: self.objective(Ls[0] @ Ls[0].T)  # noqa: E731
        grown = grown_factors([stage.best_factor.T], pairs, value, 1, bracket=True)
        return None if grown is None else grown[0].T


@pytest.mark.parametrize("max_escapes", [0, 2])
def test_the_staged_run_escapes_a_rank_one_saddle_and_certifies(max_escapes):
    """A rank-1 factor keeps its row space under descent in ``L`` (``∇_L = 2L∇_M``): the run
    stalls at ``diag(1, 0, 0)``; the escape at the stall appends a row along the negative
    curvature and the restarted run certifies the rank-2 optimum."""
    settings = StageSettings(
        stage_iter=100, stalls=1, tol=1e-8, max_stages=20, max_escapes=max_escapes
    )
    res = run_stages(Factored(Nearest()), np.array([[1.0, 0.0, 0.0]]), LBFGS(), settings)
    M = res.matrix.T @ res.matrix
    if max_escapes == 0:  # the saddle, exposed by the certificate
        assert "escapes" not in res.info and res.status == "optimal_inaccurate"
        assert np.allclose(M, np.diag([1.0, 0.0, 0.0]), atol=1e-6) and res.certified_gap > 0.5
        return
    assert res.info["escapes"] == 1 and res.matrix.shape == (2, 3)
    assert res.status == "optimal" and res.certified_gap <= 1e-8
    assert np.allclose(M, np.diag([1.0, 2.0, 0.0]), atol=1e-4)
    assert res.lower_bound <= 0.5 + 1e-12 and abs(res.objective - 0.5) <= 1e-8


class Stale(Oracle, StageHooks):
    """The toy SVM whose smoothed model sees only its listed rows (an active list), as
    LMNN's list-only stages do: thirty short rows along ``+e₁`` listed at the start,
    twenty long ones along ``−e₁`` not listed until the first check, before the second
    stage. The first stage's model pulls ``x`` to about ``5e₁``, where each unlisted hinge
    is about 26: its exact objective ends about ten times above the start's (50)."""

    def __init__(self):
        self.A = np.r_[np.tile([0.2, 0.0], (30, 1)), np.tile([-5.0, 0.05], (20, 1))]
        self.listed = np.arange(len(self.A)) < 30
        self.center = np.zeros(len(self.A))

    def _lam(self, x, sigma):
        lam = np.clip(self.center + (1.0 - self.A @ x) / sigma, 0.0, 1.0)
        return np.where(self.listed, lam, 0.0)

    def smooth(self, x, sigma, grad=True):
        z, lam = 1.0 - self.A @ x, self._lam(x, sigma)
        phi = np.where(self.listed, lam * z - 0.5 * sigma * (lam - self.center) ** 2, 0.0)
        f = 0.5 * x @ x + float(phi.sum())
        return (f, x - self.A.T @ lam) if grad else f

    def objective(self, x):
        return 0.5 * float(x @ x) + float(np.maximum(1.0 - self.A @ x, 0.0).sum())

    def bound(self, stage):  # the SVM's dual at the listed multipliers (0 elsewhere)
        lam = self._lam(stage.x, stage.sigma)
        v = self.A.T @ lam
        return float(lam.sum() - 0.5 * v @ v)

    def recenter(self, x, sigma, components=None):
        self.center = self._lam(x, sigma)

    def check(self, x, components=None):
        return not np.any(~self.listed & (1.0 - self.A @ x > 0))

    def begin_stage(self, x, index, components=None):
        if index > 0:  # a full check: the rows near violation, and those the centre weighs
            self.listed = (1.0 - self.A @ x > -0.1) | (self.center > 0)
            self.center = np.where(self.listed, self.center, 0.0)


def svm_optimum(A):
    x = cp.Variable(A.shape[1])
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x) + cp.sum(cp.pos(1 - A @ x))))
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return prob.value


@pytest.mark.parametrize("backoff", [None, 2.0, 4.0])
def test_a_stage_that_runs_off_its_stale_list_ends_backed_off(backoff):
    """The first stage runs off to about ten times the start's objective; backed off, it
    ends at a halving of its step within ``backoff``·best. (With 8, just above
    the halving to 5.4 times, this toy's list, which drops every slack row, then takes
    turns between two stale lists for as long as it may run: a property of the list, which
    its other starts do not meet, and not of the back-off; the multi-metric solver's stalls
    end such a run and its convex polish takes over.)"""
    oracle = Stale()
    f_star = svm_optimum(oracle.A)
    res = run_stages(
        oracle, np.zeros(2), LBFGS(), stages(sigma_factor=1.0, backoff=backoff, tol=1e-7)
    )
    f0, f1 = res.history[:2]  # the start, the first stage's end
    if backoff is None:
        assert f1 > 8 * f0 and "backoffs" not in res.info  # the run-off, as it is
    else:  # the first halving of its step within backoff·best, and counted
        assert f1 <= backoff * f0 and f1 != f0 and res.info["backoffs"] == 1
    # either way the run goes on to the certified optimum
    assert res.status == "optimal" and res.lower_bound <= f_star * (1 + 1e-7)
    assert res.objective == pytest.approx(f_star, rel=1e-6)


def test_backoff_changes_nothing_when_no_stage_runs_off():
    plain = run_stages(SVM(A), np.zeros(5), LBFGS(), stages())
    guarded = run_stages(SVM(A), np.zeros(5), LBFGS(), stages(backoff=1.5))
    assert guarded.history == plain.history and "backoffs" not in guarded.info
    assert np.array_equal(guarded.matrix, plain.matrix)


@pytest.mark.parametrize("backoff", [1.0, 0.5, -2.0, float("nan"), float("inf"), "8", True])
def test_backoff_must_be_a_finite_float_above_one(backoff):
    with pytest.raises(ValueError, match="'backoff' parameter of StageSettings"):
        StageSettings(backoff=backoff)
