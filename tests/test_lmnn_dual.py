"""The LMNN dual certificate of :mod:`convexmetric.solvers.lmnn_dual`: every multiplier
vector gives a bound below CLARABEL's optimum, the crossover tightens the smoothed
multipliers near convergence, and a singular pull matrix is handled on its range."""

import numpy as np
import pytest

from convexmetric.linalg import psd_scaling
from convexmetric.lmnn.certificate import DualCertificate
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.problems import lmnn as P


@pytest.fixture(scope="module")
def exact(iris_instance):
    X, y, T = iris_instance
    M, value = P.solve(X, y, T, 0.5, solver="CLARABEL")[:2]
    I, J, L = P.all_triplets(y, T)
    return X, y, T, M, value, (I, J, L)


def test_every_multiplier_vector_bounds_the_optimum(exact):
    X, _y, T, _M, value, (I, J, L) = exact
    cert = DualCertificate(X, P.pull_matrix(X, T), 0.5)
    assert cert.valid
    rng = np.random.default_rng(0)
    bounds = []
    for scale in (0.01, 0.1, 0.5, 1.0):
        lam = np.clip(scale * rng.random(len(I)) * 3, 0, 1)
        b = cert.bound(cert.scatter(I, J, L, lam), lam.sum(), F=value * 1.01)
        assert b <= value * (1 + 1e-9)
        bounds.append(b)
    assert max(bounds) > 0  # not the trivial bound


def test_scaling_bound_equals_bisection(exact):
    X, _y, T, _M, _value, (I, J, L) = exact
    cert = DualCertificate(X, P.pull_matrix(X, T), 0.5)
    lam = np.random.default_rng(1).random(len(I)) * 0.2
    S1 = cert.scatter(I, J, L, lam)
    exact_scaling = cert.bound(S1, lam.sum())
    bisection = 0.5 * psd_scaling([cert.S0], [S1], steps=60) * lam.sum()
    assert exact_scaling == pytest.approx(bisection, rel=1e-9)


def test_crossover_tightens_a_near_optimal_point(exact):
    X, y, T, M_star, value, (I, J, L) = exact
    # CLARABEL's optimum (interior-point rounding): smoothed multipliers are poor at the kink
    M = M_star
    oracle = ActiveSetOracle(X, y, T, 0.5, prune=None)
    oracle.active.terms.merge(I, J, L)  # every triplet, the kink's slightly negative ones included
    z = oracle.active.hinge_arguments(M)
    F = oracle.objective(M)
    cert = DualCertificate(X, oracle.active.C_pull, 0.5)
    sigma = 1e-2
    lam = np.clip(z / sigma, 0, 1)
    IJL = oracle.active.terms.I, oracle.active.terms.J, oracle.active.terms.L
    smoothed = cert.bound(cert.scatter(*IJL, lam), lam.sum(), F)
    crossed = cert.crossover(M, *IJL, z, lam, F)
    assert crossed <= value * (1 + 1e-9)
    assert crossed > smoothed
    # iris: 1.3e-4 from the smoothed multipliers' 1.7e-2
    assert (F - crossed) / F < min(2e-4, (F - smoothed) / F / 50)


def test_singular_pull_matrix(exact):
    X, y, T, _M, value, (I, J, L) = exact
    X0 = np.hstack([X, np.full((len(X), 1), 3.0)])  # a constant feature: P is singular
    cert = DualCertificate(X0, P.pull_matrix(X0, T), 0.5)
    assert cert.valid
    lam = np.full(len(I), 0.05)
    assert cert.bound(cert.scatter(I, J, L, lam), lam.sum()) <= value * (1 + 1e-9)
    # a feature that differs across classes only: off the range of P, the fallback runs
    X1 = np.hstack([X, y[:, None].astype(float)])
    cert1 = DualCertificate(X1, P.pull_matrix(X1, T), 0.5)
    assert not cert1.valid
    b = cert1.bound(cert1.scatter(I, J, L, lam), lam.sum())
    # that feature separates the classes at no pull cost: the optimum is 0 (to rounding)
    assert 0 <= b <= P.solve(X1, y, T, 0.5, solver="CLARABEL")[1] + 1e-8


def test_factor_gradient_is_the_factor_times_the_gradient(wine_instance):
    """``smooth_factor`` (the terms inside the smoothing through ``Z = X Lᵀ``) gives the
    value of :meth:`smooth` and ``L`` times its gradient, with a prox centre, and the
    factor refinement in ``L`` (``∇_L = 2 L ∇_M``) sees exactly that."""
    from convexmetric.optim.factor import Factored

    X, y, T = wine_instance
    oracle = ActiveSetOracle(X, y, T, 0.5)
    rng = np.random.default_rng(0)
    L = rng.standard_normal((5, X.shape[1])) / np.abs(X).max()
    M = L.T @ L
    oracle.active.full_check(M, L)
    oracle.active.terms.mask["lam"] = rng.uniform(0, 1, len(oracle.active.terms)) * (
        rng.uniform(size=len(oracle.active.terms)) < 0.5
    )
    f, G = oracle.smooth(M, 0.1, components=L)
    lam = np.clip(oracle.active.terms.mask["lam"] + oracle.active.hinge_arguments(M, L) / 0.1, 0, 1)
    assert ((lam > 0) & (lam < 1)).sum() > 10  # terms inside the smoothing enter
    f2, LG = oracle.smooth_factor(M, 0.1, L)
    assert f2 == f
    np.testing.assert_allclose(LG, L @ G, rtol=1e-9, atol=1e-9 * np.abs(L @ G).max())
    f3, gL = Factored(oracle).smooth(L, 0.1)
    assert f3 == f
    np.testing.assert_allclose(gL, 2 * (L @ G), rtol=1e-9, atol=1e-9 * np.abs(L @ G).max())


def test_trial_evaluations_in_single_precision_only_steer():
    """With a tolerance of at least ``SINGLE_TOL`` on data of ``SINGLE_SIZE`` entries or
    more, a trial evaluation projects in float32: its hinge arguments and its factor
    gradient are the double ones to float32 rounding, while the hinge arguments at an
    accepted point (bounds, prox centres) and the exact objective stay in double."""
    from convexmetric import datasets
    from convexmetric.lmnn import active_list as A
    from convexmetric.neighbors import target_neighbors

    X, _, y, _ = datasets.load_split("digits")
    X = X[:1200]
    y = np.unique(y[:1200], return_inverse=True)[1]
    assert X.size >= A.SINGLE_SIZE
    T = target_neighbors(X, y, 3)
    rng = np.random.default_rng(0)
    L = rng.standard_normal((20, X.shape[1])) / np.abs(X).max()
    M = L.T @ L
    oracles = [ActiveSetOracle(X, y, T, 0.5) for _ in range(2)]
    oracles[0].active.tol = 1e-4  # single-precision trials
    for o in oracles:
        o.active.full_check(M, L)
        o.active.schedule.period(None, o.active.calls)  # no check between the calls compared
    lam_bar = np.clip(rng.uniform(-1, 1, len(oracles[0].active.terms)), 0, 1)
    for o in oracles:
        o.active.terms.mask["lam"] = lam_bar.copy()
    single, double = oracles
    z1, z2 = single.active.hinge_arguments(M, L), double.active.hinge_arguments(M, L)
    assert (
        single.active.distances.Z.dtype == np.float32
        and double.active.distances.Z.dtype == np.float64
    )
    assert z1.dtype == np.float64 and not np.array_equal(z1, z2)
    scale = float(np.abs(z2).max())
    np.testing.assert_allclose(z1, z2, rtol=0, atol=1e-5 * scale)
    np.testing.assert_array_equal(single.active.hinge_arguments(M, L, accepted=True), z2)
    (f1, G1), (f2, G2) = (o.smooth_factor(M, 0.1, L) for o in oracles)
    assert G1.dtype == np.float64 and f1 == pytest.approx(f2, rel=1e-6)
    np.testing.assert_allclose(G1, G2, rtol=0, atol=1e-5 * np.abs(G2).max())
    assert single.objective(M, L) == double.objective(M, L)
    double.active.tol = 1e-6  # below SINGLE_TOL: double again
    assert (
        double.active.hinge_arguments(M, L).dtype == np.float64
        and double.active.distances.Z.dtype == np.float64
    )


def test_single_precision_trials_certify_the_double_paths_optimum(monkeypatch, verified):
    """The default fit on digits (its trials in float32) and the same fit with every
    evaluation in double both certify, and their objectives agree within ``tol``: the
    single precision changes the path, not the optimum it proves."""
    from convexmetric import LMNN, datasets
    from convexmetric.lmnn import active_list as A

    X, _, y, _ = datasets.load_split("digits")
    assert X.size >= A.SINGLE_SIZE
    fits = [LMNN(k=3, mu=0.5).fit(X, y)]
    monkeypatch.setattr(A, "SINGLE_SIZE", X.size + 1)
    fits.append(LMNN(k=3, mu=0.5).fit(X, y))
    (f1, f2), tol = (est.objective_ for est in fits), fits[0].tol
    assert all(est.result_.status == "optimal" for est in fits)
    assert f1 != f2 and abs(f1 - f2) <= tol * max(f1, f2)
    for est in fits:
        verified(est, X, y)
