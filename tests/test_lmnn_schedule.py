"""The active lists' one check schedule (lmnn/schedule.py), for one metric and several."""

import numpy as np
from test_lmnn_multi_certify import instance

from convexmetric.lmnn.multi import solver as SM
from convexmetric.lmnn.schedule import CheckSchedule


def checks(schedule, calls, stable=True, cap=None):
    """The calls of ``range(calls)`` that check (each check recorded as ``stable``)."""
    out = []
    for c in range(calls):
        if schedule.due(c):
            out.append(c)
            schedule.checked(c, stable, cap)
    return out


def test_fixed_period_none_and_now():
    assert checks(CheckSchedule(4), 13) == [0, 4, 8, 12]
    assert checks(CheckSchedule(None), 50) == []  # only the checks the drivers ask for
    s = CheckSchedule(None)
    s.period(1, 5)  # every call from call 5 on
    assert [c for c in range(9) if s.due(c) and s.checked(c) is None] == [5, 6, 7, 8]


def test_adaptive_interval_ramps_doubles_to_its_cap_and_halves_at_new_terms():
    s = CheckSchedule(10, adaptive=True)
    assert checks(s, 60, stable=True, cap=16) == [0, 2, 6, 14, 30, 46]  # 2, 4, 8, 16, 16
    s.checked(60, stable=False, cap=16)  # new violations: half the interval, not below 10
    assert s.next == 60 + 10
    s.now(61)
    assert s.due(61)


def test_multi_oracle_checks_before_stages_every_call_while_exact_and_after_the_run():
    """In a staged run the list is fixed between the stage checks (after the exact
    stages); during them every evaluation checks; after the run, ``check_every``."""
    X, y, T = instance()
    o = SM.MultiMetricOracle(X, y, T, 0.5, y, 3, check_every=10)
    Ms = [np.eye(X.shape[1]) for _ in range(3)]
    o.exact_stages = 1
    o.begin_stage(Ms, 0)
    before = o.full_checks
    for _ in range(3):
        o(Ms)
    assert o.full_checks == before + 3  # an exact stage: every evaluation
    o.begin_stage(Ms, 1)
    before = o.full_checks
    for _ in range(25):
        o(Ms)
    assert o.full_checks == before  # no check between the driver's
    o.finish()
    before = o.full_checks
    for _ in range(11):
        o(Ms)
    assert o.full_checks == before + 2  # back to every 10 calls
