"""Every formulation's oracle speaks the protocol as the engine calls it.

:class:`~convexmetric.optim.factor.Factored` passes ``components=`` to ``__call__``,
``smooth``, ``objective`` and ``check``, and calls ``smooth_factor``: the oracles over PSD
matrices (POE's, Maurer's) accept it and give the factor gradient ``∇_L = 2L∇_M``; those
whose points are not PSD matrices (POE's diagonal LP and its diagonal oracle, the factored
POE oracle) are refused with a ``ValueError`` that says so.
"""

import numpy as np
import pytest
from conftest import poe_instance

from convexmetric.maurer.solver import HingeOracle
from convexmetric.optim.factor import Factored
from convexmetric.optim.lbfgs import LBFGS
from convexmetric.optim.stages import StageSettings, run_stages
from convexmetric.poe.certificate import Certificate
from convexmetric.poe.diagonal import DiagonalLP, DiagonalSettings
from convexmetric.poe.factored import FactoredSettings, WhitenedPOE
from convexmetric.poe.oracle import POEOracle
from convexmetric.problems import poe as P


def maurer_oracle():
    rng = np.random.default_rng(0)
    U = rng.normal(size=(40, 3))
    r = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    return HingeOracle(U, r, lam=0.1), rng.normal(size=(2, 3))


def poe_oracle(diagonal=False):
    X, C = poe_instance(12, 30, D=3)
    rng = np.random.default_rng(1)
    blocks = P.lpoe_blocks(X)
    return POEOracle(blocks, C, 1.0, diagonal=diagonal), [rng.normal(size=(2, 3))], blocks


def flat(x):
    return np.concatenate([a.ravel() for a in x]) if isinstance(x, list) else x.ravel()


@pytest.mark.parametrize("make", [maurer_oracle, lambda: poe_oracle()[:2]])
def test_factored_oracle_over_psd_matrices(make):
    oracle, L = make()
    F = Factored(oracle)
    M = [B.T @ B for B in L] if isinstance(L, list) else L.T @ L
    # values are those of the oracle at M = LᵀL, through every entry the engine uses
    assert F.objective(L) == oracle.objective(M)
    assert F.smooth(L, 0.1, grad=False) == pytest.approx(oracle.smooth(M, 0.1, grad=False))
    f, G = F.smooth(L, 0.1)
    assert f == pytest.approx(oracle.smooth(M, 0.1, grad=False))
    assert np.isfinite(F(L)[0]) and F.check(L)
    f_m, LG = oracle.smooth_factor(M, 0.1, L)
    assert f_m == f
    np.testing.assert_allclose(flat(G), 2.0 * flat(LG))
    # the factor gradient against a central difference
    rng = np.random.default_rng(2)
    E = [rng.normal(size=B.shape) for B in L] if isinstance(L, list) else rng.normal(size=L.shape)
    h = 1e-6

    def at(t):
        return [B + t * D for B, D in zip(L, E)] if isinstance(L, list) else L + t * E

    fd = (F.smooth(at(h), 0.1, grad=False) - F.smooth(at(-h), 0.1, grad=False)) / (2 * h)
    assert fd == pytest.approx(float(flat(G) @ flat(E)), rel=1e-5, abs=1e-9)


def test_the_engine_runs_a_factored_maurer_oracle():
    oracle, L = maurer_oracle()
    res = run_stages(
        Factored(oracle),
        L,
        LBFGS(),
        StageSettings(sigma0=0.1, sigma_factor=0.1, stage_iter=100, max_stages=3, stalls=None),
    )
    assert res.objective < oracle.objective(L.T @ L)
    assert res.objective == pytest.approx(oracle.objective(res.matrix.T @ res.matrix))


def test_oracles_whose_points_are_not_psd_matrices_are_refused():
    diag, _, blocks = poe_oracle(diagonal=True)
    full, _, _ = poe_oracle()
    lp = DiagonalLP(np.ones((3, 2)), np.ones(2), 1.0, DiagonalSettings())
    whitened = WhitenedPOE(full, Certificate(blocks, full), FactoredSettings())
    assert Factored(whitened).psd is False  # POE's factored solver runs through it
    for oracle in (diag, lp, Factored(maurer_oracle()[0])):
        with pytest.raises(ValueError, match="oracle over PSD matrices"):
            Factored(oracle)
    # they still take the protocol's components= (ignored: they have no factor)
    w = np.ones(2)
    assert lp.objective(w, components=None) == lp.smooth(w, 1e-9, grad=False, components=None)


def test_factor_by_columns_is_the_transposed_factor_by_rows():
    oracle, L = maurer_oracle()
    rows, cols = Factored(oracle), Factored(oracle, columns=True)
    f, G = cols.smooth(L.T, 0.1)
    f_r, G_r = rows.smooth(L, 0.1)
    assert f == f_r and np.array_equal(G, G_r.T)
    assert cols.objective(L.T) == rows.objective(L)
    np.testing.assert_allclose(cols(L.T)[1], rows(L)[1].T)


def test_poe_whitened_oracle_reads_the_factor_alone():
    full, _, blocks = poe_oracle()
    whitened = WhitenedPOE(full, Certificate(blocks, full), FactoredSettings())
    F = Factored(whitened, columns=True)
    rng = np.random.default_rng(3)
    Ls = [rng.normal(size=(Fh.shape[1], 2)) for Fh in whitened.feats]  # Ŵ = LLᵀ
    f, G = F.smooth(Ls, 0.1)
    # the same value from the metric alone (its factor by an eigendecomposition)
    assert whitened.smooth([L @ L.T for L in Ls], 0.1, grad=False) == pytest.approx(f)
    _, GW = whitened.smooth([L @ L.T for L in Ls], 0.1)  # the gradient in Ŵ: ∇_L = 2∇_Ŵ L
    np.testing.assert_allclose(flat(G), flat([2 * g @ L for g, L in zip(GW, Ls)]), rtol=1e-8)
    E = [rng.normal(size=L.shape) for L in Ls]
    h = 1e-6
    plus = F.smooth([L + h * D for L, D in zip(Ls, E)], 0.1, grad=False)
    minus = F.smooth([L - h * D for L, D in zip(Ls, E)], 0.1, grad=False)
    assert (plus - minus) / (2 * h) == pytest.approx(float(flat(G) @ flat(E)), rel=1e-5)
