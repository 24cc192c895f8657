"""A class of one point (issue 65): accepted with a ``SmallClassWarning``, as in the paper.

Eq. (14) sums over each point's own target neighbours ``j ⇝ i`` and, for the hinge, over
every ``l`` of another class. A point alone in its class has no target: no pull term and
no triplet ``(i, j, l)`` with it as ``i``; it is still an impostor ``l`` for the points of
every other class. Its row of ``targets_`` is padding only (the point itself). Here eq.
(14) is written with plain loops over that definition, never through the padding; the
exact problems (CVXPY), the large-scale solvers and the independent verifier agree on it.
"""

import warnings

import numpy as np
import pytest
from lmnn_verify import verified_solve
from sklearn.exceptions import ConvergenceWarning
from test_lmnn_ragged import own_targets  # none for a class of one

from convexmetric import LMNN, KernelLMNN, MultiMetricLMNN, verify
from convexmetric.lmnn import solver as S
from convexmetric.lmnn.base import SmallClassWarning
from convexmetric.lmnn.energy import energy_scores
from convexmetric.lmnn.multi import solver as SM
from convexmetric.neighbors import target_counts, target_neighbors
from convexmetric.problems import lmnn as P
from convexmetric.problems import lmnn_kernel as PK
from convexmetric.problems import lmnn_multi as PM
from convexmetric.verifier import VerificationError
from convexmetric.verifier._lmnn_problem import euclidean
from convexmetric.verifier._lmnn_problem import targets as verified_targets

MU = 0.5


def lonely(n_big=8, d=3, seed=0):
    """Classes of ``n_big`` and ``n_big`` points and one of a single point (the last)."""
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(size=(n_big, d)), rng.normal(size=(n_big, d)) + 1.5,
              rng.normal(size=(1, d)) - 1.0]  # fmt: skip
    return X, np.repeat([0, 1, 2], [n_big, n_big, 1])


def eq14(X, y, targets, D, mu=MU):
    """Eq. (14) by loops: ``targets`` a list of lists, ``D(a, b)`` the learned distance."""
    pull = push = 0.0
    for i, tj in enumerate(targets):
        for j in tj:
            pull += D(i, j)
            push += sum(max(0.0, 1.0 + D(i, j) - D(i, l)) for l in np.flatnonzero(y != y[i]))
    return (1 - mu) * pull + mu * push


def under(X, M):
    return lambda a, b: (X[a] - X[b]) @ M @ (X[a] - X[b])


def _fit(est, X, y):
    with pytest.warns(SmallClassWarning) as record:
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    return est, [str(w.message) for w in record if w.category is SmallClassWarning]


ESTIMATORS = {
    "LMNN": lambda: LMNN(k=3),
    "LMNN-exact": lambda: LMNN(k=3, solver="exact"),
    "LMNN-passes": lambda: LMNN(k=3, n_passes=2),
    "LMNN-S": lambda: LMNN(k=3, n_components=2),
    "LMNN-R": lambda: LMNN(k=3, n_components=2, reduction="R"),
    "KernelLMNN": lambda: KernelLMNN(k=3, kernel="linear"),
    "MultiMetricLMNN": lambda: MultiMetricLMNN(k=3),
    "MultiMetricLMNN-kmeans": lambda: MultiMetricLMNN(k=3, n_clusters=2, random_state=0),
}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_estimator_fits_with_a_warning_and_a_row_of_padding(name):
    X, y = lonely()
    m, messages = _fit(ESTIMATORS[name](), X, y)
    assert len(messages) == 1
    assert "class 2 of 'y' has a single member: it has no target neighbour" in messages[0]
    assert "impostor for the other classes" in messages[0] and "class 0" not in messages[0]
    T = m.targets_
    assert T.shape == (17, 3) and T[16].tolist() == [16, 16, 16]
    assert target_counts(T).tolist() == [3] * 16 + [0]
    assert m.predict(X).shape == m.energy_predict(X).shape == y.shape
    assert 0.0 <= m.loo_error() <= 1.0


def test_the_lone_point_is_an_impostor_of_the_others():
    X, y = lonely()
    T = target_neighbors(X, y, 3)
    I, _, L = P.all_triplets(y, T)
    assert not np.any(I == 16) and np.sum(L == 16) == 16 * 3  # every (i, j) meets it
    m, _ = _fit(LMNN(k=3), X, y)
    want = own_targets(X, y, 3)
    assert m.objective_ == pytest.approx(eq14(X, y, want, under(X, m.metric_)), rel=1e-12)
    # without it as an impostor the objective is another one: the test can tell
    y_in = y.copy()
    y_in[16] = 0  # the same targets for 0..15; the point no longer an impostor of class 0
    lost = eq14(X, y_in, [*want[:16], []], under(X, m.metric_))
    assert m.objective_ - lost > 1e-3 * m.objective_


def test_exact_sdp_and_large_scale_solver_agree_and_verify():
    X, y = lonely()
    T = target_neighbors(X, y, 3)
    M, value, status, _ = P.solve(X, y, T, MU, solver="CLARABEL")
    assert status == "optimal"
    assert abs(eq14(X, y, own_targets(X, y, 3), under(X, M)) - value) <= 1e-7 * abs(value)
    res = S.solve(X, y, T, MU)
    assert res.status == "optimal"
    verified_solve(res, X, y, T)
    # within the certified tol plus CLARABEL's own accuracy (1e-8 relative)
    assert -1e-7 <= (res.objective - value) / value <= 1e-4 + 1e-7
    for solver in ("subgradient", "exact"):
        est, _ = _fit(LMNN(k=3, solver=solver), X, y)
        assert np.array_equal(est.targets_, T)
        assert -1e-6 <= (est.objective_ - value) / value <= 1e-4 + 1e-7
        v = verify(est, X, y)
        assert v.verified, v.reason


def test_multi_metric_sdp_and_solver_agree_and_verify():
    """The lone class's metric has no pull term (``P_g = 0``): it grows until its point
    leaves every perimeter, where the hinges it was in are switched off for free."""
    X, y = lonely()
    T = target_neighbors(X, y, 3)
    Ms, value, status, _ = PM.solve(X, y, T, MU, y, 3, solver="CLARABEL")
    assert status == "optimal"
    D = lambda a, b: (X[a] - X[b]) @ Ms[y[b]] @ (X[a] - X[b])  # noqa: E731 (eq. 16)
    assert abs(eq14(X, y, own_targets(X, y, 3), D) - value) <= 1e-6 * abs(value)
    res = SM.solve(X, y, T, MU, y, 3)
    assert res.status == "optimal" and np.all(np.isfinite(res.matrix))
    assert -1e-6 <= (res.objective - value) / value <= 1e-4 + 1e-6
    for solver in ("subgradient", "exact"):
        est, _ = _fit(MultiMetricLMNN(k=3, solver=solver), X, y)
        assert -1e-6 <= (est.objective_ - value) / value <= 1e-4 + 1e-6
        v = verify(est, X, y)
        assert v.verified, v.reason


def test_kernel_sdp_and_solver_agree_and_verify():
    X, y = lonely()
    T = target_neighbors(X, y, 3)
    K = X @ X.T  # linear kernel: eq. (14) over the kernel columns
    A, value, status, _ = PK.solve(K, y, T, MU, solver="CLARABEL")
    assert status == "optimal"
    assert abs(eq14(K, y, own_targets(X, y, 3), under(K, A)) - value) <= 1e-6 * abs(value)
    est, _ = _fit(KernelLMNN(k=3, kernel="linear"), X, y)
    assert -1e-6 <= (est.objective_ - value) / value <= 1e-4 + 1e-6
    v = verify(est, X, y)
    assert v.verified, v.reason


def test_energy_of_a_lone_class():
    """Eq. (15): as a hypothetical label, the lone class offers its one point as the test
    point's target; as training data, the lone point has no hinge of its own."""
    X, y = lonely(n_big=5, d=2, seed=2)
    T = target_neighbors(X, y, 3)
    Xq = np.random.default_rng(4).normal(size=(4, 2))
    L = np.array([[1.0, 0.3], [0.0, 0.7]])
    M = L.T @ L
    D = lambda a, b: (a - b) @ M @ (a - b)  # noqa: E731
    want = own_targets(X, y, 3)
    E = energy_scores(X, y, T, Xq, L, MU)
    for t, x in enumerate(Xq):
        for c in range(3):
            idx = np.flatnonzero(y == c)
            near = idx[np.argsort(((X[idx] - x) ** 2).sum(1), kind="stable")[:3]]
            others = np.flatnonzero(y != c)
            pull = sum(D(x, X[j]) for j in near)
            out = sum(max(0.0, 1 + D(x, X[j]) - D(x, X[l])) for j in near for l in others)
            inn = sum(max(0.0, 1 + D(X[i], X[j]) - D(X[i], x)) for i in others for j in want[i])
            assert E[t, c] == pytest.approx((1 - MU) * pull + MU * (out + inn), rel=1e-12)


def test_no_class_of_two_is_refused_naming_y():
    X, y = lonely()
    rows = [0, 8, 16]  # one point per class: no target anywhere, eq. (14) has no term
    for est in (LMNN(k=3), KernelLMNN(k=3), MultiMetricLMNN(k=3)):
        with pytest.raises(ValueError, match="no class of 'y' has two members"):
            est.fit(X[rows], y[rows])
    with pytest.raises(VerificationError, match="no class has two points"):
        verified_targets(euclidean(X[rows]), y[rows], 1, np.arange(3)[:, None])


def test_given_targets_and_the_verifier_keep_the_rule():
    X, y = lonely()
    T = target_neighbors(X, y, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallClassWarning)  # given targets: no warning
        m = LMNN(k=3).fit(X, y, targets=T)
    assert np.array_equal(m.targets_, T)
    assert verify(m, X, y, targets=T).verified
    bad = T.copy()
    bad[15] = 15  # a point of a class of eight with no target: refused
    with pytest.raises(ValueError, match="at least one target neighbour per row"):
        LMNN(k=3).fit(X, y, targets=bad)
    with pytest.raises(VerificationError, match="at least one per row"):
        verified_targets(euclidean(X), y, 3, bad)
    bad = T.copy()
    bad[16] = [16, 16, 0]  # the lone point given a target of another class
    with pytest.raises(VerificationError, match="same-class points"):
        verified_targets(euclidean(X), y, 3, bad)
    assert np.array_equal(verified_targets(euclidean(X), y, 3, T), T)


def test_multi_metric_bound_ascent_skips_the_lone_class_block():
    """The ascents of the multi-metric bound (iris, 10 points a class, one point alone
    in a fourth class): the lone class's block has an empty range (``P_g = 0``) and is left
    out of the ascent, which stopped there with an IndexError before."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    rows = np.r_[1:11, 50:60, 100:110, 0]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X, y = X[rows], np.r_[y[rows[:-1]], 3]
    m, _ = _fit(MultiMetricLMNN(k=3), X, y)
    assert m.result_.status == "optimal"
    v = verify(m, X, y)
    assert v.verified, v.reason
