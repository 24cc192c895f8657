"""The ascent on the trace bound of LMNN's certificates (:mod:`convexmetric.lmnn.trace_ascent`):
it never lowers the bound, keeps the multipliers in the box, computes its rays exactly (the
incremental matrices equal the ones built afresh) and stops at the tolerance."""

import numpy as np
import pytest

from convexmetric.lmnn import trace_ascent as TA


def problem(seed, blocks=2, d=5, k=40, mu=0.5):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(blocks):
        A = rng.normal(size=(k, d)).astype(np.float32) * 0.3
        B = rng.normal(size=(k, d)).astype(np.float32) * 0.3
        ia, ib = rng.integers(0, k, k), rng.integers(0, k, k)
        out.append(TA.Block(np.eye(d) * 0.5, A, ia, B, ib))
    x = rng.uniform(size=k)
    for blk in out:
        blk.S = blk.S + blk.scatter(x, mu)
    return out, x, mu


@pytest.mark.parametrize("seed", range(4))
def test_ascent_never_lowers_the_bound(seed):
    blocks, x0, mu = problem(seed)
    S_zero = [blk.S - blk.scatter(x0, mu) for blk in blocks]  # the blocks at x = 0
    F, const, scale = 50.0, 1.0, 0.5

    def value(x):
        nu = min(np.linalg.eigvalsh(S + blk.scatter(x, mu))[0] for S, blk in zip(S_zero, blocks))
        return const + mu * x.sum() + F * min(nu / scale, 0.0)

    x = TA.ascend(blocks, x0, mu, F, const, scale=scale, iterations=30)
    assert x.min() >= 0 and x.max() <= 1
    assert value(x) > value(x0)
    # tolerance: the same path, stopped at the first iterate within it of F
    target = 0.5 * ((F - value(x)) + (F - value(x0))) / F  # between start and end
    early = TA.ascend(blocks, x0, mu, F, const, scale=scale, iterations=30, tol=target)
    assert value(x0) < value(early) <= value(x) + 1e-9
    assert F - value(early) <= target * F * (1 + 1e-9)


def test_clipped_rays_match_matrices_built_afresh():
    blocks, x0, mu = problem(7)
    g = np.random.default_rng(0).normal(size=len(x0))
    S = [blk.S for blk in blocks]
    seen = []

    def value(S_t, y):
        fresh = [blk.S - blk.scatter(x0, mu) + blk.scatter(y, mu) for blk in blocks]
        for a, b in zip(S_t, fresh):
            assert np.allclose(a, b, atol=1e-5)
        seen.append(1)
        return float(np.sum(y)) - 100.0 * float(np.sum((y - 0.5) ** 2))

    TA._step(blocks, S, x0, g, -np.inf, 0.8, mu, value)  # t up to 4: many clipped rows
    assert len(seen) >= 2


def dual_optimum(blocks, x0, mu, F, const, scale):
    """``max B(x)`` over the box by CVXPY (Clarabel): ``S_g(x) ⪰ t·I``, ``t ≤ 0``."""
    return dual_solution(blocks, x0, mu, F, const, scale)[0]


def dual_solution(blocks, x0, mu, F, const, scale):
    """``(max B(x), argmax)`` (:func:`dual_optimum`): Clarabel's own linear algebra, not
    the BLAS, so the point is the same on every machine to the solver's accuracy."""
    cp = pytest.importorskip("cvxpy")
    x, t = cp.Variable(len(x0)), cp.Variable()
    cons = [x >= 0, x <= 1, t <= 0]
    for blk in blocks:
        A, B = blk.A.astype(float), blk.B.astype(float)
        S = blk.S - blk.scatter(x0, mu)
        Sx = S + mu * (A.T @ cp.diag(x[blk.ia]) @ A - B.T @ cp.diag(x[blk.ib]) @ B)
        cons.append(0.5 * (Sx + Sx.T) >> t * np.eye(len(S)))
    problem_ = cp.Problem(cp.Maximize(const + mu * cp.sum(x) + F * t / scale), cons)
    problem_.solve(solver="CLARABEL")
    assert problem_.status == "optimal"
    return problem_.value, np.clip(x.value, 0.0, 1.0)


@pytest.mark.parametrize("seed", range(3))
def test_smooth_ascent_closes_what_the_supergradient_ascent_leaves(seed):
    blocks, x0, mu = problem(seed)
    F, const, scale = 50.0, 1.0, 0.5
    model = TA._SoftModel.of(blocks, x0, mu, F, const, scale)
    first = TA.ascend(blocks, x0, mu, F, const, scale=scale, iterations=30)
    x = TA.smooth_ascend(blocks, x0, mu, F, const, scale=scale, start=first)
    best = dual_optimum(blocks, x0, mu, F, const, scale)
    assert x.min() >= 0 and x.max() <= 1
    assert model.exact(first) < model.exact(x) <= best + 1e-6
    # the supergradient steps stall 7-10 below the optimum; the smooth ascent gets within 1%
    assert best - model.exact(x) <= 0.05 * (best - model.exact(first))


def test_smooth_minorant_gradient_and_value():
    blocks, x0, mu = problem(3)
    model = TA._SoftModel.of(blocks, x0, mu, 50.0, 1.0, 0.5, dtype=np.float64)
    x = np.random.default_rng(1).uniform(size=len(x0))
    for eps in (1.0, 0.1, 0.01):
        f, g = model.negative(x, eps)
        assert -f <= model.exact(x) + 1e-9  # a minorant of the trace bound
        h, e = 1e-5, np.zeros(len(x))
        for i in range(6):
            e[:] = 0.0
            e[i] = h
            num = (model.negative(x + e, eps)[0] - model.negative(x - e, eps)[0]) / (2 * h)
            assert g[i] == pytest.approx(num, rel=1e-5, abs=1e-6)


def test_single_precision_model_is_the_double_one_to_rounding():
    """The model's stacked products in single precision (the default: it only proposes)
    give the double-precision matrices, value and gradient to float32 rounding."""
    blocks, x0, mu = problem(3)
    lo = TA._SoftModel.of(blocks, x0, mu, 50.0, 1.0, 0.5)
    hi = TA._SoftModel.of(blocks, x0, mu, 50.0, 1.0, 0.5, dtype=np.float64)
    x = np.random.default_rng(2).uniform(size=len(x0))
    for a, b in zip(lo.matrices(x), hi.matrices(x)):
        assert a.dtype == np.float64 and np.abs(a - b).max() <= 1e-5 * np.abs(b).max()
    f32, g32 = lo.negative(x, 0.1)
    f64, g64 = hi.negative(x, 0.1)
    assert f32 == pytest.approx(f64, rel=1e-5) and np.allclose(g32, g64, rtol=1e-4, atol=1e-4)


def test_smooth_ascent_window_and_tolerance():
    blocks, x0, mu = problem(1)
    F, const, scale = 50.0, 1.0, 0.5
    model = TA._SoftModel.of(blocks, x0, mu, F, const, scale)
    gap = (F - model.exact(x0)) / F
    far = TA.smooth_ascend(blocks, x0, mu, F, const, scale=scale, tol=gap / 10, window=5.0)
    assert np.array_equal(far, x0)  # outside the window: the start as it is
    x = TA.smooth_ascend(blocks, x0, mu, F, const, scale=scale, tol=gap / 10, window=20.0)
    assert F - model.exact(x) < F - model.exact(x0)


def test_restricted_model_is_the_full_one_on_all_directions_and_above_it_on_fewer():
    blocks, x0, mu = problem(2)
    for blk in blocks:  # symmetric (the single-precision scatter is, to rounding)
        blk.S = 0.5 * (blk.S + blk.S.T)
    model = TA._SoftModel.of(blocks, x0, mu, 50.0, 1.0, 0.5, dtype=np.float64)
    x = np.random.default_rng(3).uniform(size=len(x0))
    whole = model.restricted(x0, np.inf)
    for eps in (0.1, 0.01):
        f, g = model.negative(x, eps)
        h, e = whole.negative(x, eps)
        assert h == pytest.approx(f, rel=1e-9)
        np.testing.assert_allclose(e, g, rtol=1e-7, atol=1e-9)
    w = np.linalg.eigvalsh(model.matrices(x0)[0])
    part = model.restricted(x0, w[2])  # two directions of the first block, fewer elsewhere
    assert part.S0[0].shape == (2, 2)
    # Ritz values on a subspace lie above the eigenvalues: the restriction only proposes
    assert part.lowest(x) >= model.lowest(x) - 1e-12
    lowest = min(np.linalg.eigvalsh(S)[0] for S in model.matrices(x0))
    assert model.restricted(x0, lowest - 1e-9) is None


def test_a_proposal_that_loses_is_cut_back_along_its_segment():
    # one impostor row b = (2, 0): S(x) = I/2 − μx bbᵀ, λ_min = 1/2 − 2x, so
    # B(x) = μx + F·min(0, 1/2 − 2x)/s peaks at x = 1/4 and falls steeply beyond
    empty = np.zeros((0, 2), np.float32)
    blk = TA.Block(0.5 * np.eye(2), empty, np.zeros(0, int), np.array([[2.0, 0.0]], np.float32),
                   np.zeros(1, int))  # fmt: skip
    model = TA._SoftModel.of([blk], np.zeros(1), 0.5, 50.0, 0.0, 0.5)
    b0 = model.exact(np.zeros(1))
    assert model.exact(np.ones(1)) < b0  # the whole step loses
    x, value = TA._back(model, np.zeros(1), np.ones(1), b0)
    np.testing.assert_allclose(x, [0.25])  # halved twice: the first point that gains
    assert value == pytest.approx(0.125) and value > b0
    assert TA._back(model, np.zeros(1), np.zeros(1), b0)[1] == -np.inf  # no gain: said so
