"""LMNN's ``time_limit`` honoured within one evaluation's time, in the active-set and the
streaming mode: long steps (full checks, streaming passes, the certificate's ascent)
check the limit between their blocks and stop the drivers with their best point."""

import time

import numpy as np
import pytest

from convexmetric.lmnn import solver as S
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.neighbors import target_neighbors
from convexmetric.optim.deadline import Alarm, TimeUp

STREAM = 1 << 16  # bytes: a budget of a few hundred listed triplets: streaming


@pytest.fixture(scope="module")
def overlapping():
    """8,000 points in 20 dimensions, four overlapping classes: a full check or a
    streaming pass costs a noticeable time, and the unlimited fit hundreds of them."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 8000)
    X = rng.normal(size=(8000, 20)) + 0.7 * rng.normal(size=(4, 20))[y]
    T = target_neighbors(X, y, 3)
    # one evaluation's time at most, measured here (under this machine's load): an exact
    # objective (a full check) and a streamed one (a pass over all triplets)
    stamps = [time.perf_counter()]
    ActiveSetOracle(X, y, T, 0.5).objective(np.eye(20))
    stamps.append(time.perf_counter())
    ActiveSetOracle(X, y, T, 0.5, memory_limit=STREAM).objective(np.eye(20))
    stamps.append(time.perf_counter())
    return X, y, T, max(np.diff(stamps))


@pytest.mark.parametrize("memory_limit", [None, STREAM])
@pytest.mark.parametrize("limit", [0.3, 1.0])
def test_fit_returns_within_one_evaluation_of_the_limit(overlapping, memory_limit, limit):
    X, y, T, evaluation = overlapping
    start = time.perf_counter()
    res = S.solve(X, y, T, 0.5, time_limit=limit, memory_limit=memory_limit)
    took = time.perf_counter() - start
    assert res.status == "user_limit"
    if limit >= 1.0:  # (the switch to streaming comes after the first pass)
        assert res.info["mode"] == ("active_set" if memory_limit is None else "streaming")
    # past the limit: the block under way, the best point's exact objective, the
    # certificate's multipliers (a pass when streaming), and slack for a loaded machine
    assert took <= limit + 3 * evaluation + 1.0, (took, evaluation)
    # the returned objective is the exact eq. (14) at the returned metric
    exact = ActiveSetOracle(X, y, T, 0.5, memory_limit=None).objective(res.matrix)
    assert res.objective == pytest.approx(exact, rel=1e-9)


def test_alarm_rings_once():
    alarm = Alarm(0.0)
    with pytest.raises(TimeUp):
        alarm.check()
    alarm.check()  # off now: the drivers' closing work runs
    assert alarm.remaining() is None and Alarm(None).remaining() is None


def test_full_check_stops_between_blocks():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(600, 3)), rng.integers(0, 3, 600)
    oracle = ActiveSetOracle(X, y, target_neighbors(X, y, 3), 0.5, memory_limit=None)
    oracle.alarm = Alarm(0.0)
    with pytest.raises(TimeUp):
        oracle.full_check(np.eye(3))
    assert oracle.full_checks == 0 and len(oracle) == 0  # nothing merged
    oracle.full_check(np.eye(3))  # the alarm rang: the next check runs
    assert len(oracle) > 0
