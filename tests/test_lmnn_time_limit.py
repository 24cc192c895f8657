"""LMNN's ``time_limit`` honoured within one evaluation's time, in the active-set and the
streaming mode: long steps (full checks, streaming passes, the certificate's ascent)
check the limit between their blocks and stop the drivers with their best point."""

import time

import numpy as np
import pytest

from convexmetric.lmnn import solver as S
from convexmetric.lmnn.constants import CLOSING_SEARCHES, STOP_WIDTHS
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.neighbors import target_neighbors
from convexmetric.optim.deadline import Alarm, TimeUp

STREAM = 1 << 20  # bytes: a budget of 5,000 listed triplets (the least is 0.9 MB): streaming


@pytest.fixture(scope="module")
def overlapping():
    """6,000 points in 20 dimensions, four overlapping classes: a full check or a
    streaming pass costs a noticeable time, the unlimited fit many (20 s or more)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 6000)
    X = rng.normal(size=(6000, 20)) + 0.5 * rng.normal(size=(4, 20))[y]
    return X, y, target_neighbors(X, y, 3)


@pytest.mark.parametrize(("limit", "memory_limit"), [(0.3, None), (1.0, None), (1.0, STREAM)])
def test_fit_returns_within_one_evaluation_of_the_limit(overlapping, memory_limit, limit):
    X, y, T = overlapping
    start = time.perf_counter()
    res = S.solve(X, y, T, 0.5, time_limit=limit, memory_limit=memory_limit)
    took = time.perf_counter() - start
    assert res.status == "user_limit"
    if memory_limit is None:  # (streaming: the switch comes after the first pass, if in time)
        assert res.info["mode"] == "active_set"
    # one evaluation's time near the returned point, measured now (under this machine's
    # load): an exact objective, by a full check or a streamed pass over all triplets
    start = time.perf_counter()
    exact = ActiveSetOracle(X, y, T, 0.5, memory_limit=memory_limit).objective(res.matrix)
    evaluation = time.perf_counter() - start
    # past the limit: the block under way, the best point's exact objective, the stop's
    # bound (a scatter of the listed terms per width, or a pass when streaming), the
    # certificate's multipliers (a pass when streaming), and slack for a loaded machine
    widths = len(STOP_WIDTHS)
    assert took <= limit + (3 + widths) * evaluation + 1.5, (took, evaluation)
    # the returned objective is the exact eq. (14) at the returned metric
    assert res.objective == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("memory_limit", [None, STREAM])
def test_a_limit_already_past_costs_one_exact_objective(overlapping, memory_limit):
    # the alarm rings at the first evaluation: the fit returns its start, whose exact
    # objective and certified bound are its one search (no step, no second check)
    X, y, T = overlapping
    res = S.solve(X, y, T, 0.5, time_limit=1e-9, memory_limit=memory_limit)
    assert res.status == "user_limit" and res.iterations == 0
    assert res.info["full_checks"] + res.info.get("stream_evaluations", 0) <= 1
    assert np.allclose(res.matrix, np.eye(20), rtol=0, atol=1e-12)  # (whitened and back)
    exact = ActiveSetOracle(X, y, T, 0.5).objective(res.matrix)
    assert res.objective == pytest.approx(exact, rel=1e-9)
    # the bound of its terms' multipliers, proved by the verifier's code: finite, positive
    assert 0 < res.lower_bound < res.objective and res.certified_gap < 1
    assert res.certificate is not None and len(res.certificate["lam"]) > 0


def test_a_stopped_estimator_is_verified_at_its_finite_gap(overlapping):
    """The time limit returns the best certified bound so far, never none: the
    verifier recomputes the same gap from the data (and calls it unverified: it is
    not within tol)."""
    from convexmetric import LMNN, verify

    X, y, _ = overlapping
    model = LMNN(k=3, time_limit=0.5).fit(X, y)
    res = model.result_
    assert res.status == "user_limit" and np.isfinite(res.certified_gap)
    check = verify(model, X, y)
    assert check.certified_gap == pytest.approx(res.certified_gap, rel=1e-6, abs=1e-9)
    assert check.lower_bound <= check.objective and not check.verified


def test_phase_one_alone_reports_a_bound():
    """``refine=False`` (App. A's subgradient phase only) ends with a certified bound
    from its listed terms, not an infinite gap."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 300)
    X = rng.normal(size=(300, 4)) + rng.normal(size=(3, 4))[y]
    res = S.solve(X, y, target_neighbors(X, y, 3), 0.5, refine=False, max_iter=200)
    assert res.lower_bound is not None and 0 < res.lower_bound <= res.objective
    assert res.certified_gap < 1


@pytest.mark.parametrize("max_iter", [1, 3, 8])
def test_a_stopped_bound_stays_below_the_exact_optimum(max_iter):
    """The stop's trace bound takes an attained value ``F ≥ f*`` (a driver's value between
    checks counts listed terms only): against the exact optimum (CLARABEL, working set)."""
    from convexmetric.lmnn.exact import solve_working_set

    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 60)
    X = rng.normal(size=(60, 3)) + 0.8 * rng.normal(size=(3, 3))[y]
    T = target_neighbors(X, y, 3)
    value = solve_working_set(X, y, T, 0.5).objective
    res = S.solve(X, y, T, 0.5, refine=False, max_iter=max_iter)
    assert res.info["attained_value"] >= value * (1 - 1e-9)
    assert res.lower_bound <= value * (1 + 1e-9) <= res.objective * (1 + 1e-9)


def test_alarm_rings_once():
    alarm = Alarm(0.0)
    with pytest.raises(TimeUp):
        alarm.check()
    alarm.check()  # off now: the drivers' closing work runs
    assert alarm.remaining() is None and Alarm(None).remaining() is None


def test_alarm_reserves_the_closing_works_time():
    alarm = Alarm(60.0)
    alarm.check()  # a minute left, nothing reserved
    alarm.reserve_for(59.0)
    alarm.check()
    alarm.reserve_for(61.0)  # the closing work would end past the limit: ring now
    with pytest.raises(TimeUp):
        alarm.check()
    alarm.reserve_for(1e9)  # off: nothing reserved, nothing rings again
    assert alarm.reserve == 61.0
    alarm.check()
    never = Alarm(None)
    never.reserve_for(1e9)  # no limit: nothing to reserve
    assert never.reserve == 0.0
    never.check()


def test_a_search_sets_what_the_alarm_reserves():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(600, 3)), rng.integers(0, 3, 600)
    oracle = ActiveSetOracle(X, y, target_neighbors(X, y, 3), 0.5, memory_limit=None)
    oracle.active.alarm = Alarm(3600.0)
    start = time.perf_counter()
    oracle.active.full_check(np.eye(3))
    took = time.perf_counter() - start
    assert 0.0 < oracle.active.alarm.reserve <= CLOSING_SEARCHES * took


def test_full_check_stops_between_blocks():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(600, 3)), rng.integers(0, 3, 600)
    oracle = ActiveSetOracle(X, y, target_neighbors(X, y, 3), 0.5, memory_limit=None)
    oracle.active.alarm = Alarm(0.0)
    with pytest.raises(TimeUp):
        oracle.active.full_check(np.eye(3))
    assert oracle.active.full_checks == 0 and len(oracle.active.terms) == 0  # nothing merged
    oracle.active.full_check(np.eye(3))  # the alarm rang: the next check runs
    assert len(oracle.active.terms) > 0


def test_streaming_pass_stops_between_blocks():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(300, 3)), rng.integers(0, 3, 300)
    oracle = ActiveSetOracle(X, y, target_neighbors(X, y, 3), 0.5, memory_limit=STREAM)
    oracle.active._go_streaming()
    oracle.active.alarm = Alarm(0.0)
    with pytest.raises(TimeUp):
        oracle(np.eye(3))
    assert oracle.active.stream.evaluations == 1
    f, _ = oracle(np.eye(3))  # rang once: the next pass runs to its end
    assert np.isfinite(f)


def test_the_estimators_limit_counts_the_target_neighbours(overlapping, monkeypatch):
    """``LMNN(time_limit=...)`` bounds the whole fit: time spent choosing the target
    neighbours (47 s at 240,000 points) is not given to the solver again."""
    import convexmetric.lmnn.estimator as E
    from convexmetric import LMNN

    X, y, _ = overlapping
    real = E.target_neighbors

    def slow(*args, **kwargs):
        time.sleep(3.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(E, "target_neighbors", slow)
    start = time.perf_counter()
    model = LMNN(time_limit=3.3).fit(X, y)
    took = time.perf_counter() - start
    assert model.result_.status == "user_limit"
    start = time.perf_counter()
    ActiveSetOracle(X, y, model.targets_, 0.5).objective(model.metric_)
    evaluation = time.perf_counter() - start
    # the solver had the 0.3 s left, not 3.3 s more (the old code took 6.3 s and over)
    assert took <= 3.3 + 3 * evaluation + 1.0, (took, evaluation)
