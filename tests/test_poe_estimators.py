"""POE / MKPOE estimators, bad input, GAUC, and the two reproductions (small versions)."""

import numpy as np
import pytest

from convexmetric import MKPOE, POE
from convexmetric.comparisons import Comparisons
from convexmetric.datasets.taxonomy import make_taxonomy, survey_comparisons
from convexmetric.kernels import linear_kernel, noise_kernels, rbf_kernel
from convexmetric.metrics import gauc
from convexmetric.poe.graph import filter_comparisons

rng = np.random.default_rng(0)
X = rng.normal(size=(12, 3))
C = Comparisons.triadic(*np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11], [0, 5, 9]]).T)
K = rbf_kernel(X, gamma=0.5)


def test_gauc_eq18_ties_are_errors():
    Z = np.array([[0.0], [1.0], [1.0], [3.0]])
    assert gauc(Z, [[0, 1, 0, 3]]) == 1.0
    assert gauc(Z, [[0, 1, 0, 2]]) == 0.0  # tie
    assert gauc(Z, [[0, 3, 1, 2]]) == 0.0


@pytest.mark.parametrize("kernel", [None, "linear", "rbf"])
def test_poe_fit_transform_out_of_sample(kernel):
    m = POE(beta=50.0, kernel=kernel).fit(C, X)
    Z = m.transform(X)
    assert Z.shape[0] == 12 and m.result_.success
    assert m.objective_ == pytest.approx(m.result_.objective, rel=1e-8)
    # the embedding reproduces the learned distances: d(i, j) = ‖g(x_i) − g(x_j)‖²
    F = X if kernel is None else (linear_kernel(X) if kernel == "linear" else m._kernel(X))
    u = F[0] - F[1]
    assert ((Z[0] - Z[1]) ** 2).sum() == pytest.approx(u @ m.W_ @ u, rel=1e-6, abs=1e-9)
    # an out-of-sample point equal to a training point lands on it
    assert np.allclose(m.transform(X[:1]), Z[:1])


def test_precomputed_kernel_and_diagonal_components():
    m = POE(beta=50.0, kernel="precomputed", diagonal=True).fit(C, K)
    assert m.W_.ndim == 1 and np.all(m.W_ >= 0)
    assert np.allclose(m.components_.T @ m.components_, np.diag(m.W_))
    assert m.transform(K[:3]).shape == (3, m.components_.shape[0])


def test_mkpoe_weights_and_concatenated_embedding():
    kernels = [K, linear_kernel(X), *noise_kernels(12, 2, random_state=0)]
    m = MKPOE(beta=50.0).fit(C, kernels)
    assert len(m.W_) == 4 and m.kernel_weights_.sum() == pytest.approx(1.0)
    Z = m.transform(kernels)
    assert Z.shape[1] == sum(N.shape[0] for N in m.components_)
    assert m.score(C, kernels) >= 0.8


def test_exact_and_subgradient_estimators_agree(verified):
    a = POE(beta=20.0, kernel="precomputed", solver="exact").fit(C, K)
    b = POE(beta=20.0, kernel="precomputed").fit(C, K)
    assert b.result_.status == "optimal"
    verified(b, C, K)
    # the default solver's certified tol plus CLARABEL's accuracy (1e-8 gap, to 1e-6 here)
    assert -1e-6 <= (b.objective_ - a.objective_) / a.objective_ <= 1e-4 + 1e-6


def test_determinism():
    a = MKPOE(beta=20.0, diagonal=True).fit(C, [K, linear_kernel(X)])
    b = MKPOE(beta=20.0, diagonal=True).fit(C, [K, linear_kernel(X)])
    assert all(np.array_equal(u, v) for u, v in zip(a.W_, b.W_))


def test_bad_input_messages():
    with pytest.raises(ValueError, match=r"'comparisons'.*refers to item 12, but 'X' has only 12"):
        POE().fit([[0, 1, 0, 12]], X)
    with pytest.raises(ValueError, match="'comparisons' of POE is empty"):
        POE().fit(np.zeros((0, 4), int), X)
    with pytest.raises(ValueError, match="'comparisons' of MKPOE is empty"):
        MKPOE().fit(np.zeros((0, 4), int), [K])
    with pytest.raises(ValueError, match="'X' must be a square kernel"):
        POE(kernel="precomputed").fit(C, K[:, :5])
    with pytest.raises(ValueError, match="'X' must be symmetric"):
        POE(kernel="precomputed").fit(C, K + np.triu(np.ones_like(K), 1))
    with pytest.raises(ValueError, match="'kernels\\[1\\]' must be positive semidefinite"):
        MKPOE().fit(C, [K, K - 2 * np.eye(12)])
    with pytest.raises(ValueError, match="'kernels\\[1\\]' must be 12×12"):
        MKPOE().fit(C, [K, K[:10, :10]])
    with pytest.raises(ValueError, match="'kernels' is empty"):
        MKPOE().fit(C, [])
    with pytest.raises(ValueError, match="The 'beta' parameter of POE must be a float"):
        POE(beta=-1.0).fit(C, X)
    with pytest.raises(ValueError, match="The 'kernel' parameter of POE"):
        POE(kernel="poly").fit(C, X)
    with pytest.raises(RuntimeError, match="not fitted"):
        POE().transform(X)
    m = MKPOE(beta=5.0, diagonal=True).fit(C, [K, K])
    with pytest.raises(ValueError, match="'kernels\\[0\\]' must have shape"):
        m.transform([K[:, :3], K[:, :3]])


def test_taxonomy_reproduction_small():
    """§5.1 in spirit: MKPOE beats the sum kernel and matches the best single kernel;
    the five noise kernels get under 5% of the weight (diagonal W, as in the paper)."""
    T = make_taxonomy(10, n_train_comparisons=800, n_test_comparisons=800, random_state=0)
    Ktr, Kte = T.train_kernels(), T.test_kernels()

    def held_out(model, a, b):
        return gauc(T.embed(model.transform(a), model.transform(b)), T.test_comparisons)

    beta = 1000.0
    mk = MKPOE(beta=beta, diagonal=True).fit(T.train_comparisons, Ktr)
    sum_kernel = POE(beta=beta, kernel="precomputed", diagonal=True)
    sum_kernel.fit(T.train_comparisons, sum(Ktr))
    singles = [
        held_out(
            POE(beta=beta, kernel="precomputed", diagonal=True).fit(T.train_comparisons, k), k, t
        )
        for k, t in zip(Ktr[:5], Kte[:5])
    ]
    g_mk = held_out(mk, Ktr, Kte)
    assert g_mk > held_out(sum_kernel, sum(Ktr), sum(Kte)) + 0.1
    assert g_mk >= max(singles)
    assert mk.kernel_weights_[5:].sum() < 0.05


def test_graph_processing_on_noisy_comparisons():
    """Table 5 in spirit: flip 15% of a consistent survey-style set; the processed set
    is much smaller and the held-out GAUC is no worse (diagonal KPOE)."""
    T = make_taxonomy(10, n_train_comparisons=10, n_test_comparisons=800, random_state=0)
    clean = survey_comparisons(T.y[T.train], np.arange(len(T.train)), 150, random_state=0)
    flip = np.random.default_rng(0).random(len(clean)) < 0.15
    a = clean.to_array()
    a[flip] = a[flip][:, [0, 3, 2, 1]]
    noisy = Comparisons.from_array(a, n_items=clean.n_items)
    processed = filter_comparisons(noisy, random_state=0).comparisons
    assert len(processed) < 0.5 * len(noisy)
    Ktr, Kte = T.train_kernels()[3], T.test_kernels()[3]
    scores = []
    for comps in (noisy, processed):
        m = POE(beta=1000.0, kernel="precomputed", diagonal=True).fit(comps, Ktr)
        scores.append(gauc(T.embed(m.transform(Ktr), m.transform(Kte)), T.test_comparisons))
    assert scores[1] >= scores[0] - 0.005


@pytest.mark.parametrize("diagonal", [False, True])
def test_caps_keep_the_default_method_and_cap_the_iterations(diagonal, verified):
    """A cap (max_iter, tol, time_limit) must not switch the solver: before, any cap sent
    full W to App. B's subgradient path (another algorithm, another accuracy)."""
    default = POE(beta=50.0, diagonal=diagonal).fit(C, X).result_
    capped = POE(beta=50.0, diagonal=diagonal, max_iter=3).fit(C, X)
    tight_est = POE(beta=50.0, diagonal=diagonal, tol=1e-6, time_limit=60.0).fit(C, X)
    tight = tight_est.result_
    assert capped.result_.solver == tight.solver == default.solver
    assert "subgradient" not in default.solver
    assert capped.n_iter_ <= 3 < default.iterations
    assert tight.status == "optimal"
    assert verified(tight_est, C, X).certified_gap <= 1e-6
