"""Fewer target neighbours for a small class only (issue 37): a point of a class with
``m ≤ k`` members has the ``m − 1`` others as targets, every other point keeps ``k``.

``targets`` stays ``(n, k)``; a short row is padded with the point itself, which is no
target (``convexmetric.neighbors.target_neighbors``). Eq. (14) here is written with
plain loops over each point's own targets, never through the padding."""

import warnings

import numpy as np
import pytest
from lmnn_verify import verified_solve
from sklearn.exceptions import ConvergenceWarning

from convexmetric import LMNN, KernelLMNN, MultiMetricLMNN, verify
from convexmetric.lmnn import solver as S
from convexmetric.lmnn.base import SmallClassWarning
from convexmetric.lmnn.blocks.evaluator import StreamingEvaluator
from convexmetric.lmnn.energy import energy_scores
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.neighbors import padding, target_counts, target_neighbors
from convexmetric.problems import lmnn as P
from convexmetric.problems import lmnn_kernel as PK
from convexmetric.problems import lmnn_multi as PM

MU = 0.5


def ragged(n_big=10, d=3, seed=0):
    """Classes of ``n_big``, ``n_big`` and 2 points: at k = 3 the last gets one target."""
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(size=(n_big, d)), rng.normal(size=(n_big, d)) + 1.5,
              rng.normal(size=(2, d)) - 1.0]  # fmt: skip
    return X, np.repeat([0, 1, 2], [n_big, n_big, 2])


def own_targets(X, y, k):
    """Each point's ``min(k, m − 1)`` nearest same-class points, written out here."""
    out = []
    for i in range(len(y)):
        same = np.flatnonzero((y == y[i]) & (np.arange(len(y)) != i))
        d = ((X[same] - X[i]) ** 2).sum(axis=1)
        out.append(same[np.argsort(d, kind="stable")][: min(k, len(same))])
    return out


def eq14(X, y, targets, M, mu=MU):
    """Eq. (14) by loops over each point's own target list (``targets``: a list of lists)."""
    pull = push = 0.0
    for i, tj in enumerate(targets):
        for j in tj:
            u = X[i] - X[j]
            dij = u @ M @ u
            pull += dij
            for l in np.flatnonzero(y != y[i]):
                v = X[i] - X[l]
                push += max(0.0, 1.0 + dij - v @ M @ v)
    return (1 - mu) * pull + mu * push


def _fit(cls, X, y):
    kw = {"kernel": "linear"} if cls is KernelLMNN else {}  # feature distance = Euclidean
    with pytest.warns(SmallClassWarning) as record:
        warnings.simplefilter("ignore", ConvergenceWarning)  # (one metric per class: slow)
        m = cls(k=3, **kw).fit(X, y)
    return m, [str(w.message) for w in record if w.category is SmallClassWarning]


@pytest.mark.parametrize("cls", [LMNN, KernelLMNN, MultiMetricLMNN])
def test_only_the_small_class_gets_fewer_targets(cls):
    X, y = ragged()
    m, messages = _fit(cls, X, y)
    assert len(messages) == 1
    assert "class 2 of 'y' has 2 members" in messages[0]
    assert "its points get 1 target neighbour" in messages[0]
    assert "k=3" in messages[0] and "class 0" not in messages[0]
    T = m.targets_
    assert m.k_ == 3 and T.shape == (len(y), 3)
    assert target_counts(T).tolist() == [3] * 20 + [1] * 2
    assert T[20].tolist() == [21, 20, 20] and T[21].tolist() == [20, 21, 21]  # padded
    want = own_targets(X, y, 3)
    for i in range(len(y)):
        assert T[i][~padding(T)[i]].tolist() == want[i].tolist()


def test_lmnn_objective_is_eq14_over_each_points_own_targets():
    X, y = ragged()
    m, _ = _fit(LMNN, X, y)
    want = own_targets(X, y, 3)
    assert m.objective_ == pytest.approx(eq14(X, y, want, m.metric_), rel=1e-12)
    # the former rule (every point at k = 1) is another objective: the test can tell
    every_one = [t[:1] for t in want]
    assert abs(eq14(X, y, every_one, m.metric_) - m.objective_) > 1e-3 * m.objective_


def test_exact_sdp_and_large_scale_solver_agree_on_a_ragged_instance():
    X, y = ragged()
    T = target_neighbors(X, y, 3)
    want = own_targets(X, y, 3)
    I, J, _ = P.all_triplets(y, T)
    assert len(I) == sum(len(t) * int(np.sum(y != y[i])) for i, t in enumerate(want))
    assert not np.any(I == J)  # no triplet through a padded slot
    M, value, status, _ = P.solve(X, y, T, MU, solver="CLARABEL")
    assert status == "optimal"
    assert abs(P.objective(M, X, T, y, MU) - value) <= 1e-7 * abs(value)
    assert abs(eq14(X, y, want, M) - value) <= 1e-7 * abs(value)
    res = S.solve(X, y, T, MU)
    assert res.status == "optimal"
    verified_solve(res, X, y, T)
    # within the certified tol plus CLARABEL's own accuracy (1e-8 relative)
    assert -1e-7 <= (res.objective - value) / value <= 1e-4 + 1e-7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallClassWarning)
        est = LMNN(k=3).fit(X, y)
        exact = LMNN(k=3, solver="exact").fit(X, y)
    assert np.array_equal(est.targets_, T)
    assert -1e-7 <= (est.objective_ - value) / value <= 1e-4 + 1e-7
    assert exact.objective_ == pytest.approx(value, rel=1e-6)
    assert verify(est, X, y).verified


def test_multi_and_kernel_objectives_equal_cvxpy_on_a_ragged_instance():
    X, y = ragged(n_big=7)
    T = target_neighbors(X, y, 3)
    want = own_targets(X, y, 3)
    # two metrics: classes 0 and 2, class 1 (a metric of the two-point class alone would
    # be free off its one pull direction: an optimum at infinity)
    g = (y == 1).astype(np.int64)
    Ms, value, status, _ = PM.solve(X, y, T, MU, g, 2, solver="CLARABEL")
    assert status == "optimal"
    assert abs(PM.objective(Ms, X, T, y, g, MU) - value) <= 1e-6 * abs(value)
    D = lambda a, b: (X[a] - X[b]) @ Ms[g[b]] @ (X[a] - X[b])  # noqa: E731 (eq. 16)
    pull = sum(D(i, j) for i, t in enumerate(want) for j in t)
    triplets = [(i, j, l) for i, t in enumerate(want) for j in t for l in np.flatnonzero(y != y[i])]
    push = sum(max(0.0, 1 + D(i, j) - D(i, l)) for i, j, l in triplets)
    assert abs((1 - MU) * pull + MU * push - value) <= 1e-6 * abs(value)
    K = X @ X.T  # linear kernel: eq. (14) over the kernel columns
    A, value, status, _ = PK.solve(K, y, T, MU, solver="CLARABEL")
    assert status == "optimal"
    assert abs(PK.objective(A, K, T, y, MU) - value) <= 1e-6 * abs(value)
    assert abs(eq14(K, y, want, A) - value) <= 1e-6 * abs(value)


def test_streamed_and_listed_evaluations_agree_on_a_ragged_instance():
    X, y = ragged(n_big=40, d=4, seed=1)
    T = target_neighbors(X, y, 3)
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4)) * 0.4
    M = A.T @ A
    active = ActiveSetOracle(X, y, T, MU)
    stream = ActiveSetOracle(X, y, T, MU, memory_limit=1 << 14)
    fa, Ga = active(M)
    fs, Gs = stream(M)
    assert stream.active.mode == "streaming"
    assert fa == pytest.approx(eq14(X, y, own_targets(X, y, 3), M), rel=1e-10)
    assert abs(fa - fs) <= 1e-10 * fa and np.abs(Ga - Gs).max() <= 1e-10 * np.abs(Ga).max()
    for sigma in (1.0, 0.01):
        (fa, Ga), (fs, Gs) = active.smooth(M, sigma), stream.smooth(M, sigma)
        assert np.isfinite(fs) and abs(fa - fs) <= 1e-10 * abs(fa)
        assert np.abs(Ga - Gs).max() <= 1e-10 * np.abs(Ga).max()
    listed = StreamingEvaluator(X, y, T, MU, P.pull_matrix(X, T)).multipliers(A, 0.5)
    assert len(listed[0]) > 0 and not np.any(listed[0] == listed[1])


def test_energy_of_a_padded_row_has_no_term():
    X, y = ragged(n_big=6, d=2, seed=2)
    T = target_neighbors(X, y, 3)
    Xq = np.random.default_rng(4).normal(size=(5, 2))
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


def test_given_targets_may_be_padded():
    X, y = ragged()
    T = target_neighbors(X, y, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallClassWarning)  # given targets: no warning
        m = LMNN(k=3).fit(X, y, targets=T)
    assert np.array_equal(m.targets_, T)
    bad = T.copy()
    bad[21] = 21  # no target at all
    with pytest.raises(ValueError, match="at least one target neighbour per row"):
        LMNN(k=3).fit(X, y, targets=bad)
    bad = T.copy()
    bad[0, 2] = bad[0, 1]
    with pytest.raises(ValueError, match="twice"):
        LMNN(k=3).fit(X, y, targets=bad)


def test_a_class_of_one_member_has_no_target():
    X, y = ragged()
    T = target_neighbors(X[:21], y[:21], 3)  # class 2 keeps one point: a row of padding
    assert T[20].tolist() == [20, 20, 20] and target_counts(T).tolist() == [3] * 20 + [0]
    with pytest.raises(ValueError, match="no class of 'y' has two members"):
        LMNN(k=3).fit(X[[0, 10, 20]], y[[0, 10, 20]])
