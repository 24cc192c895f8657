"""The certificate's tail: extrapolated multipliers and the crossover's back-off keep every
bound below CLARABEL's optimum, and the extrapolation never loses to the stage's own."""

import numpy as np
import pytest
from lmnn_verify import verified_solve

from convexmetric.lmnn import solver as S
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.problems import lmnn as P


@pytest.fixture(scope="module")
def exact(iris_instance):
    X, y, T = iris_instance
    M, value = P.solve(X, y, T, 0.5, solver="CLARABEL")[:2]
    return X, y, T, M, value


def listed(oracle):
    """The oracle's listed triplets ``(I, J, L)``."""
    t = oracle.active.terms
    return t.I, t.J, t.L


def oracle_at(X, y, T):
    oracle = ActiveSetOracle(X, y, T, 0.5, prune=None)
    oracle.active.tol = 1e-4
    return oracle


@pytest.mark.parametrize("shrink", [0.9, 0.99, 1.0])
def test_extrapolated_bounds_stay_below_the_optimum(exact, shrink):
    X, y, T, M_star, value = exact
    oracle = oracle_at(X, y, T)
    rng = np.random.default_rng(0)
    M = shrink * M_star + (1 - shrink) * np.eye(X.shape[1])
    F = oracle.objective(M)
    for sigma in (0.3, 0.03, 0.003):
        plain = oracle.lower_bound(M, sigma)  # no F: the stage's own multipliers
        with_F = oracle.lower_bound(M, sigma, F)
        assert with_F <= value * (1 + 1e-9)
        assert with_F >= plain - 1e-9 * abs(value)
        # a prox centre off the optimum: still valid
        oracle.active.terms.mask["lam"] = rng.random(len(oracle.active.terms))
        assert oracle.lower_bound(M, sigma, F) <= value * (1 + 1e-9)
        oracle.active.terms.mask["lam"] = np.zeros(len(oracle.active.terms))


def test_crossover_backs_off_and_retries_near_the_tolerance(exact, monkeypatch):
    X, y, T, M_star, _ = exact
    oracle = oracle_at(X, y, T)
    F = oracle.objective(M_star)
    calls = []
    cert = oracle.bounds.cert
    monkeypatch.setattr(cert, "crossover", lambda *a, **k: calls.append(1) or -np.inf)
    z = oracle.active.hinge_arguments(M_star, accepted=True)
    lam = np.zeros(len(z))
    far = F * (1 - 1e-3)  # a bound 1e-3 below F: eligible, the crossover gains nothing
    for _ in range(8):
        oracle.bounds._crossover(M_star, z, lam, F, far, 1e-4)
    assert len(calls) == 3  # tried at bounds 1, 3 and 6: it skipped 1, then 2, then 4
    near = F * (1 - 1.5e-4)  # within 2·tol: always tried
    for _ in range(3):
        oracle.bounds._crossover(M_star, z, lam, F, near, 1e-4)
    assert len(calls) == 6


def test_solve_certifies_below_the_optimum(exact):
    X, y, T, _M, value = exact
    res = S.solve(X, y, T, 0.5)
    assert res.status == "optimal"
    report = verified_solve(res, X, y, T)  # the bound recomputed from the certificate
    assert report.lower_bound <= value * (1 + 1e-8) <= report.objective * (1 + 1e-8)


def every_triplet_at_optimum(exact):
    """An oracle listing every triplet, at the exact optimum: ``(oracle, z, F, cert,
    bound)``, ``bound(λ)`` the certificate's bound of multipliers ``λ`` with ``F``."""
    X, y, T, M_star, _ = exact
    oracle = oracle_at(X, y, T)
    oracle.active.terms.merge(*P.all_triplets(y, T))
    z = oracle.active.hinge_arguments(M_star)
    F = oracle.objective(M_star)
    cert = oracle.bounds.cert

    def bound(lam):
        return cert.bound(cert.scatter(*listed(oracle), lam), lam.sum(), F)

    return oracle, z, F, cert, bound


@pytest.mark.parametrize("sigma", [0.1, 0.01])
def test_ascent_raises_the_bound_and_stays_below_the_optimum(exact, sigma):
    oracle, z, F, cert, bound = every_triplet_at_optimum(exact)
    value = exact[4]
    lam = np.clip(z / sigma, 0, 1)
    up = cert.ascend(*listed(oracle), z, lam, F)
    assert up.min() >= 0 and up.max() <= 1 and not np.shares_memory(up, lam)
    assert np.array_equal(up[np.abs(z) >= 0.03], lam[np.abs(z) >= 0.03])  # the kink only
    assert bound(lam) < bound(up) <= value * (1 + 1e-9)
    assert (F - bound(up)) < 0.7 * (F - bound(lam))
    # with a tolerance it stops as soon as the bound is within it
    loose = (F - bound(up)) / F * 3
    early = cert.ascend(*listed(oracle), z, lam, F, tol=loose)
    assert bound(up) >= bound(early) >= F * (1 - loose) * (1 - 1e-12)


def test_crossover_only_when_the_ascent_falls_short(exact, monkeypatch):
    X, y, T, M_star, _ = exact
    oracle = oracle_at(X, y, T)
    F = oracle.objective(M_star)
    z = oracle.active.hinge_arguments(M_star, accepted=True)
    lam = np.clip(z / 0.03, 0, 1)
    cert = oracle.bounds.cert
    crossed = []
    monkeypatch.setattr(oracle.bounds, "_crossover", lambda *a: crossed.append(1) or a[-2])
    low = F * (1 - 1e-3)
    for gain, calls in ((0.9, 0), (0.2, 1)):  # the ascent closes 90% / 20% of what it must
        monkeypatch.setattr(cert, "ascend", lambda *a, **k: lam)
        monkeypatch.setattr(cert, "bound", lambda *a, g=gain: low + g * (F * 1e-3 - F * 1e-4))
        out = oracle.bounds._tightened(M_star, z, lam, F, low, 1e-4)
        assert len(crossed) == calls
        assert out >= low + gain * (F * 1e-3 - F * 1e-4) - 1e-9


@pytest.mark.parametrize("sigma", [0.1, 0.01])
def test_smooth_ascent_goes_on_where_the_steps_stall(exact, sigma, monkeypatch):
    """Given a tolerance the supergradient steps do not reach, within ``SOFT_WINDOW`` of
    it, the smooth ascent raises the bound further (still below the optimum); outside
    the window it does not run."""
    from convexmetric.lmnn import certificate as CE

    oracle, z, F, cert, bound = every_triplet_at_optimum(exact)
    value = exact[4]
    lam = np.clip(z / sigma, 0, 1)
    steps = cert.ascend(*listed(oracle), z, lam, F)  # no tol: the steps alone
    gap = (F - bound(steps)) / F
    assert gap > 0
    smooth = cert.ascend(*listed(oracle), z, lam, F, tol=gap / 2)
    assert bound(steps) < bound(smooth) <= value * (1 + 1e-9)
    monkeypatch.setattr(CE, "SOFT_WINDOW", 1.5)  # the gap is 2 tol: outside
    assert np.array_equal(cert.ascend(*listed(oracle), z, lam, F, tol=gap / 2), steps)
