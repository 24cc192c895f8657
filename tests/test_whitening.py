"""One whitening (:func:`convexmetric.linalg.whitening`): dropped or floored eigenvalues."""

import numpy as np
import pytest

from convexmetric.linalg import whitening


def _singular(seed, d=5, rank=3):
    U = np.random.default_rng(seed).normal(size=(d, rank))
    return U @ U.T


@pytest.mark.parametrize("seed", [0, 1])
def test_floored_is_the_exact_change_of_variables_the_solvers_used(seed):
    """``floor=True`` is, bit for bit, the multi-metric oracle's former preconditioner: the
    eigenvalues below ``rtol·λ_max`` raised to it, ``T⁻¹`` its inverse, no null space."""
    R, rtol = _singular(seed), 1e-8
    T, null, T_inv = whitening(R, rtol, floor=True)
    w, V = np.linalg.eigh(0.5 * (R + R.T))
    w = np.maximum(w, rtol * float(w[-1]))
    assert np.array_equal(T, V / np.sqrt(w)) and np.array_equal(T_inv, (V * np.sqrt(w)).T)
    assert null.shape == (5, 0) and np.allclose(T @ T_inv, np.eye(5))


def test_floored_and_dropped_agree_on_the_range():
    """Without a null space both forms are the same matrices; with one, the dropped form
    keeps the range (``TᵀRT = I``) and returns the null space."""
    R = _singular(2, rank=5)
    full, dropped = whitening(R, floor=True), whitening(R)
    assert all(np.array_equal(a, b) for a, b in zip(full, dropped))
    T, null, _ = whitening(_singular(3))
    assert np.allclose(T.T @ _singular(3) @ T, np.eye(3)) and null.shape == (5, 2)


def test_floored_without_a_positive_eigenvalue_is_a_rotation():
    T, _, T_inv = whitening(np.zeros((3, 3)), floor=True)
    assert np.allclose(T.T @ T, np.eye(3)) and np.allclose(T @ T_inv, np.eye(3))
