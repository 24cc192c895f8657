"""Shared fixtures: the standard splits of the small data sets, computed once."""

import signal

import numpy as np
import pytest

from convexmetric import datasets
from convexmetric.neighbors import target_neighbors

# A shell that starts the tests in the background (``cmd &`` without job control) starts
# them with SIGINT ignored, which Python and its child processes then keep: the tests of
# Ctrl-C (test_interrupt.py, test_faults_frontend.py) would see no KeyboardInterrupt.
# Python's own handler here, and SIG_DFL (so Python's handler) in every child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _instance(name, k=3):
    Xtr, _Xte, ytr, _yte = datasets.load_split(name)
    _, y = np.unique(ytr, return_inverse=True)
    return Xtr, y, target_neighbors(Xtr, y, k)


@pytest.fixture
def verified():
    """``verified(estimator, *fit_args)``: the independent verifier's report
    (:func:`convexmetric.verify`), asserted verified. Every "optimal" of the test suite
    goes through it."""
    from convexmetric import verify

    def check(estimator, *fit_args, **fit_kwargs):
        # the test is the user: it verifies against the tolerance it fitted with
        tol = getattr(estimator, "tol", None)
        report = verify(estimator, *fit_args, tol=tol, **fit_kwargs)
        assert report.verified, report.reason
        return report

    return check


@pytest.fixture(scope="session")
def iris_instance():
    return _instance("iris")


@pytest.fixture(scope="session")
def wine_instance():
    return _instance("wine")


def poe_instance(n, m, D=4, seed=0, flip=0.0):
    """Items in R^D; triadic comparisons oriented by a hidden 2-d geometry, a fraction
    ``flip`` of them reversed (so some hinges stay active at the optimum)."""
    from convexmetric.comparisons import Comparisons

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    H = X[:, :2] * [2.0, 1.0] + 0.3 * rng.normal(size=(n, 2))
    i, j, k = rng.integers(0, n, (3, 4 * m))
    ok = (i != j) & (i != k) & (j != k)
    i, j, k = i[ok][:m], j[ok][:m], k[ok][:m]
    far = ((H[i] - H[j]) ** 2).sum(1) > ((H[i] - H[k]) ** 2).sum(1)
    if flip:
        far ^= rng.random(m) < flip
    return X, Comparisons.triadic(i, np.where(far, k, j), np.where(far, j, k), n_items=n)


@pytest.fixture(scope="session")
def iris60_exact():
    """iris, 60 points, 2 target neighbours (a few thousand triplets): CLARABEL solves
    eq. (14) exactly. Returns ``(X, y, T, optimum)``."""
    from convexmetric.problems import lmnn as P

    X, y = datasets.load("iris")
    keep = np.sort(np.random.default_rng(0).choice(len(y), 60, replace=False))
    X = (X[keep] - X[keep].mean(0)) / X[keep].std(0)
    _, y = np.unique(y[keep], return_inverse=True)
    T = target_neighbors(X, y, 2)
    _, value, status, _ = P.solve(X, y, T, 0.5, solver="CLARABEL")
    assert status == "optimal"
    return X, y, T, value
