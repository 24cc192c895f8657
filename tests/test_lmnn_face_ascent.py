"""The face steps on a trace bound (:mod:`convexmetric.lmnn.face_ascent`): their linear
model is the blocks' own change (the matrices are affine in the multipliers), a step
solves its equality where nothing is clipped, the steps never lower the bound, keep the
box, stop at the tolerance and get close to the dual optimum CVXPY finds."""

import numpy as np
import pytest
from test_lmnn_trace_ascent import dual_optimum, dual_solution, problem

from convexmetric.lmnn import face_ascent as FA

F, CONST, SCALE = 50.0, 1.0, 0.5


def fresh_value(blocks, x0, x, mu):
    """``B(x)`` from matrices built afresh at ``x`` (double precision)."""
    S = [blk.S - blk.scatter(x0, mu) + blk.scatter(x, mu) for blk in blocks]
    return FA.value(FA.spectra(S), x, mu, F, CONST, SCALE)


def near_optimum(seed):
    """A problem and a point near its dual optimum (CVXPY's, moved by noise), with blocks
    whose ``S`` is taken there: clusters of small eigenvalues, as at a stage's end. (The
    point is not the ascents' of :mod:`.trace_ascent`: where they stop depends on the
    BLAS's rounding, and so would what is left for the face steps.)"""
    blocks, x0, mu = problem(seed)
    _, x = dual_solution(blocks, x0, mu, F, CONST, SCALE)
    x = np.clip(x + np.random.default_rng(seed).normal(scale=0.02, size=len(x)), 0.0, 1.0)
    for blk in blocks:
        blk.S = blk.S + blk.scatter(x - x0, mu)
    return blocks, x, mu


@pytest.mark.parametrize("seed", range(3))
def test_model_is_the_blocks_own_change(seed, monkeypatch):
    monkeypatch.setattr(FA, "LEVEL", 1e9)  # clusters of three directions a block (d = 5)
    monkeypatch.setattr(FA, "MAX_CLUSTER", 3)
    blocks, x, mu = near_optimum(seed)
    eig = FA.spectra([blk.S for blk in blocks])
    model = FA._Cluster.of(blocks, eig, len(x), mu, SCALE)
    assert model is not None and len(model.r) > 0
    rng = np.random.default_rng(seed)
    d = rng.normal(size=len(x))
    lhs, start = model.times(d), 0
    for blk, (w, V) in zip(blocks, eig):
        m = min(int(np.sum(w < FA.LEVEL * SCALE)), FA.MAX_CLUSTER)
        if m == 0:
            continue
        Q = V[:, :m]
        change = Q.T @ blk.scatter(d, mu) @ Q  # S is affine: the model is exact
        p, q = np.triu_indices(m)
        want = change[p, q] * np.where(p == q, 1.0, np.sqrt(2.0))
        got = lhs[start : start + len(p)]
        assert np.allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
        start += len(p)
    assert start == len(model.r)
    y = rng.normal(size=len(model.r))  # the adjoint, and the Gram matrix
    assert model.times(d) @ y == pytest.approx(d @ model.transposed(y), rel=1e-10)
    assert np.allclose(model.G @ y, model.times(model.transposed(y)), rtol=1e-10, atol=1e-10)


def test_step_solves_its_equality_where_nothing_is_clipped():
    blocks, x, mu = near_optimum(1)
    model = FA._Cluster.of(blocks, FA.spectra([blk.S for blk in blocks]), len(x), mu, SCALE)
    x = np.full(len(x), 0.5)  # far from the box's faces
    rho = 1e4 * mu  # a short step: nothing leaves the box
    d = model.step(x, rho)
    assert np.abs(d).max() < 0.5
    assert np.allclose(model.times(d), model.r, atol=1e-8 * max(1.0, np.abs(model.r).max()))
    # the maximiser of μ1ᵀd − ρ/2‖d‖² on the affine set: ρd − μ1 lies in range(Rᵀ)
    y = np.linalg.lstsq(model.G, model.times(rho * d - mu), rcond=None)[0]
    assert np.allclose(model.transposed(y), rho * d - mu, atol=1e-6 * rho)


@pytest.mark.parametrize("seed", range(4))
def test_face_steps_never_lower_the_bound_and_keep_the_box(seed):
    blocks, x, mu = near_optimum(seed)
    x0 = x.copy()
    start = fresh_value(blocks, x0, x0, mu)
    out, b = FA.face_ascend(blocks, x0, mu, F, CONST, SCALE)
    assert out.min() >= 0 and out.max() <= 1
    assert b >= start
    # (the steps' matrices add single-precision scatters, as trace_ascent's do)
    assert b == pytest.approx(fresh_value(blocks, x0, out, mu), rel=1e-5)
    assert np.array_equal(x0, x)  # not modified


@pytest.mark.parametrize("seed", range(6))
def test_face_steps_get_close_to_the_dual_optimum(seed):
    blocks, x, mu = near_optimum(seed)
    best = dual_optimum(blocks, x, mu, F, CONST, SCALE)
    start = fresh_value(blocks, x, x, mu)
    _, b = FA.face_ascend(blocks, x, mu, F, CONST, SCALE)
    assert b <= best + 1e-6  # B is at most the dual SDP's optimum
    # they stall short of it (module docstring), here within 3e-3 of it (relative)
    assert best - b <= 0.2 * (best - start) and best - b <= 3e-3 * abs(best)


def test_tolerance_ends_the_steps():
    blocks, x, mu = near_optimum(0)
    start = fresh_value(blocks, x, x, mu)
    _, full = FA.face_ascend(blocks, x, mu, F, CONST, SCALE, iterations=1)
    assert full > start  # one step gains
    tol = (F - full) / F  # what one step reaches: the tolerance ends the steps there
    _, b = FA.face_ascend(blocks, x, mu, F, CONST, SCALE, tol=tol * (1 + 1e-12))
    assert b == full
    none, b0 = FA.face_ascend(blocks, x, mu, F, CONST, SCALE, tol=(F - start) / F)
    assert np.array_equal(none, x) and b0 == pytest.approx(start)  # already within it


def test_multi_metric_certificate_keeps_what_the_face_steps_reach(monkeypatch):
    """Digits to 1e-3 (multi-metric LMNN): the face steps run at the certifying stage, and
    the certified bound (recomputed exactly by the certificate) is at least theirs; on
    this machine they reach the tolerance there themselves."""
    from convexmetric import MultiMetricLMNN, datasets, verify

    seen, real = [], FA.face_ascend

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append((args[3], kwargs["tol"], out[1]))  # F, tol, B
        return out

    monkeypatch.setattr(FA, "face_ascend", spy)
    X, _, y, _ = datasets.load_split("digits")
    est = MultiMetricLMNN(k=3, mu=0.5, tol=1e-3).fit(X, y)
    res = est.result_
    assert res.status == "optimal" and verify(est, X, y, tol=1e-3).verified
    assert seen, "the certificate did not try the face steps"
    F, _, b = seen[-1]
    assert F == pytest.approx(res.objective, rel=1e-12)
    assert res.lower_bound >= b - 1e-5 * abs(b)  # (the steps' matrices: float32 scatters)
