"""LMNN extensions (§3.5, §5, §6): energy classification, multi-pass, ball trees,
multi-metric and kernel LMNN, dimensionality reduction, PCA preprocessing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lmnn_verify import certified_kernel_solve, kernel_report

from convexmetric import LMNN, datasets
from convexmetric.lmnn import KernelLMNN, MultiMetricLMNN
from convexmetric.lmnn import kernel as SK
from convexmetric.lmnn.balltree import ImpostorSearch, impostor_pairs_tree
from convexmetric.lmnn.energy import energy_scores
from convexmetric.lmnn.multi import solver as SM
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.lmnn.reduction import leading_components
from convexmetric.neighbors import sqdist, target_neighbors
from convexmetric.problems import lmnn as P
from convexmetric.problems import lmnn_kernel as PK
from convexmetric.problems import lmnn_multi as PM

TOY_X = np.array([[0.0], [1.0], [3.0], [4.0]])
TOY_Y = np.array([0, 0, 1, 1])
TOY_T = np.array([[1], [0], [3], [2]])


def small(per_class=8, name="iris"):
    Xtr, _, ytr, _ = datasets.load_split(name)
    keep = np.concatenate([np.flatnonzero(ytr == c)[:per_class] for c in np.unique(ytr)])
    _, y = np.unique(ytr[keep], return_inverse=True)
    return Xtr[keep], y


# -- energy-based classification (eq. 15) -------------------------------------------
def test_energy_toy_by_hand():
    # x_t = 0.5, M = 1, mu = 1/2, k = 1. Label 0: target x_0 (tie with x_1, lower index),
    # pull 0.25, no hinge; E_0 = 0.125. Label 1: target x_2 (6.25); impostors x_0, x_1
    # give 2 · 7; x_t invades the perimeters of x_0, x_1: 2 · 1.75; E_1 = 3.125 + 8.75.
    E = energy_scores(TOY_X, TOY_Y, TOY_T, np.array([[0.5]]), np.eye(1), 0.5)
    assert E[0].tolist() == pytest.approx([0.125, 11.875])


@pytest.mark.parametrize("multi", [False, True])
def test_energy_is_the_increase_of_eq14(multi):
    """E_c(x_t) = ε(train ∪ {(x_t, c)}) − ε(train), targets of the training points fixed."""
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(18, 2)), np.arange(18) % 3
    T = target_neighbors(X, y, 2)
    Ls = rng.normal(size=(3, 2, 2)) if multi else rng.normal(size=(2, 2))
    Ms = [L.T @ L for L in Ls] if multi else None
    xt = rng.normal(size=(1, 2))
    E = energy_scores(X, y, T, xt, Ls, 0.4, clusters=y if multi else None)
    for c in range(3):
        idx = np.flatnonzero(y == c)
        tt = idx[np.argsort(((X[idx] - xt) ** 2).sum(1), kind="stable")[:2]]
        X2, y2, T2 = np.r_[X, xt], np.r_[y, c], np.r_[T, tt[None]]
        if multi:
            base = PM.objective(Ms, X, T, y, y, 0.4)
            new = PM.objective(Ms, X2, T2, y2, y2, 0.4)
        else:
            M = Ls.T @ Ls
            base, new = P.objective(M, X, T, y, 0.4), P.objective(M, X2, T2, y2, 0.4)
        assert E[0, c] == pytest.approx(new - base, rel=1e-9, abs=1e-9)


# -- multi-pass (§5.1) ---------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_multipass_reselects_targets_under_learned_metric():
    X, y = small(10, "wine")
    one = LMNN(k=2, refine=False, max_iter=200).fit(X, y)
    two = LMNN(k=2, refine=False, max_iter=200, n_passes=2).fit(X, y)
    assert np.array_equal(two.targets_, target_neighbors(one.transform(X), y, 2))
    assert np.array_equal(
        LMNN(k=2, refine=False, max_iter=200, n_passes=1).fit(X, y).metric_, one.metric_
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_multipass_max_iter_and_time_limit_bound_the_whole_fit():
    X, y = small(10, "wine")
    free = LMNN(k=2, n_passes=3).fit(X, y)
    counts = free.result_.info["pass_iterations"]
    assert len(counts) == 3 and free.n_iter_ == sum(counts) and counts[1] > 5
    cap = counts[0] + 5  # per pass, three passes would take ~3 times this
    capped = LMNN(k=2, n_passes=3, max_iter=cap).fit(X, y)
    assert capped.n_iter_ == sum(capped.result_.info["pass_iterations"]) == cap
    assert capped.result_.info["passes"] < 3 and capped.result_.status == "optimal_inaccurate"
    late = LMNN(k=2, n_passes=3, time_limit=1e-9).fit(X, y)  # spent in the first pass
    assert late.result_.info["passes"] == 1 and late.result_.status == "user_limit"


# -- ball trees (§6) -----------------------------------------------------------------
@pytest.mark.parametrize("tree", ["balltree", "kdtree"])
def test_tree_hinge_terms_identical_to_brute(tree):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 3)), rng.integers(0, 3, 300)
    T = target_neighbors(X, y, 3)
    M = np.diag([2.0, 1.0, 0.5])
    a = P.hinge_terms(M, X, T, y, margin=0.5)
    b = P.hinge_terms(M, X, T, y, margin=0.5, search=tree)
    ka, kb = [np.lexsort((t[2], t[1], t[0])) for t in (a, b)]
    for u, v in zip(a[:3], b[:3]):
        np.testing.assert_array_equal(u[ka], v[kb])
    np.testing.assert_allclose(a[3][ka], b[3][kb], rtol=0, atol=1e-12)


def test_active_sets_identical_and_auto_search_measures():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(200, 2)), rng.integers(0, 2, 200)
    T = target_neighbors(X, y, 3)
    oracles = [ActiveSetOracle(X, y, T, 0.5, search=s) for s in ("brute", "balltree", "auto")]
    for o in oracles:
        for M in (np.eye(2), np.diag([3.0, 0.2]), np.eye(2), np.diag([0.5, 2.0])):
            o.active.full_check(M)
    assert all(np.array_equal(o.active.terms.keys, oracles[0].active.terms.keys) for o in oracles)
    auto = oracles[2].active.searcher.kind
    assert auto.choice in ("brute", "balltree") and len(auto.timings["brute"]) >= 1


def test_impostor_tree_toy_and_bad_method():
    I, L = impostor_pairs_tree(
        np.array([[0.0], [1.0], [1.5], [5.0]]), np.array([0, 0, 1, 1]), np.ones(4)
    )
    assert list(zip(I.tolist(), L.tolist())) == [(1, 2), (2, 1)]
    with pytest.raises(ValueError, match="'search'"):
        ImpostorSearch("octree")


# -- multi-metric LMNN (§5.2) ----------------------------------------------------------
@pytest.mark.parametrize("n_clusters", [None, 2])
def test_multi_metric_cvxpy_numpy_and_large_scale(n_clusters, verified):
    X, y = small(8)
    est = MultiMetricLMNN(k=3, n_clusters=n_clusters, random_state=0).fit(X, y)
    g, T, c = est.clusters_, est.targets_, est.metrics_.shape[0]
    Ms, value, status, _ = PM.solve(X, y, T, 0.5, g, c)
    assert status.startswith("optimal")
    assert PM.objective(Ms, X, T, y, g, 0.5) == pytest.approx(value, rel=1e-6, abs=1e-6)
    assert est.result_.status == "optimal"
    verified(est, X, y)
    acc = 1e-7 if status == "optimal" else 1e-6  # CLARABEL's own accuracy
    assert abs(est.objective_ - value) <= (est.tol + acc) * abs(value)
    assert all(np.linalg.eigvalsh(M).min() >= -1e-8 for M in est.metrics_)
    lb = est.result_.lower_bound  # the dual certificate: below the optimum, and informative
    assert lb <= value * (1 + 1e-7) and lb >= (1 - 1e-4) * value  # measured gaps 1e-8–1e-6


def test_multi_metric_with_one_cluster_is_lmnn():
    X, y = small(6)
    T = target_neighbors(X, y, 2)
    _, v1, _, _ = PM.solve(X, y, T, 0.5, np.zeros(len(y), np.int64), 1)
    _, v0, _, _ = P.solve(X, y, T, 0.5)
    assert v1 == pytest.approx(v0, rel=1e-6)


def test_multi_metric_toy_and_gradient():
    _, value, status, _ = PM.solve(TOY_X, TOY_Y, TOY_T, 0.5, TOY_Y)
    assert status == "optimal" and value == pytest.approx(2 / 3, abs=1e-6)
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(15, 2)), np.arange(15) % 3
    T = target_neighbors(X, y, 2)
    o = SM.MultiMetricOracle(X, y, T, 0.5, y, 3)
    M = [np.eye(2) * 0.5 for _ in range(3)]
    o(M)
    f0, G = o(M)
    E = [0.5 * (e + e.T) for e in rng.normal(size=(3, 2, 2))]
    f1, _ = o([m + 1e-7 * e for m, e in zip(M, E)])
    assert (f1 - f0) / 1e-7 == pytest.approx(sum(np.sum(a * b) for a, b in zip(G, E)), rel=1e-4)


def test_circles_multiple_metrics_lower_loo_error():
    """Fig. 7: LOO 1-NN error 100% (one metric) → lower (two) → 0 (three k-means metrics)."""
    from convexmetric.neighbors import loo_error

    X, y = datasets.load("circles")
    assert loo_error(X, y, 1) == 1.0
    assert loo_error(LMNN(k=1).fit(X, y).transform(X), y, 1) >= 0.95  # 1.0 measured
    two = MultiMetricLMNN(k=1, n_clusters=2, random_state=0).fit(X, y).loo_error(1)
    three = MultiMetricLMNN(k=1, n_clusters=3, random_state=0).fit(X, y).loo_error(1)
    assert 0.1 <= two <= 0.6 and three <= 0.02  # 30.6% and 0% measured


def test_full_circles_defeat_three_metrics():
    """The impossibility in concentric_circles: 120° sectors lose ≥ a quarter of points."""
    X, y = datasets.concentric_circles(arc=120.0, random_state=0)
    m = MultiMetricLMNN(k=1, n_clusters=3, random_state=0).fit(X, y)
    assert m.loo_error(1) >= 0.25  # 48.6% measured


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_circles_geometry(seed):
    X, y = datasets.concentric_circles(random_state=seed)
    inner, outer = X[y == 0], X[y == 1]
    r_in, r_out = np.hypot(*inner.T), np.hypot(*outer.T)
    np.testing.assert_allclose(r_in, 1.0)
    s_t = np.deg2rad(40.0) / 12  # inner angular spacing: 40° arc, 12 cells
    np.testing.assert_allclose(r_out, 1.0 + 0.75 * s_t)
    np.testing.assert_allclose(outer / r_out[:, None], inner)  # twins at the same angle
    rot = np.array([[-0.5, -np.sqrt(0.75)], [np.sqrt(0.75), -0.5]])  # +120°
    np.testing.assert_allclose(inner[:12] @ rot.T, inner[12:24], atol=1e-12)
    D = sqdist(X, X)
    np.fill_diagonal(D, np.inf)
    twin = np.r_[np.arange(36, 72), np.arange(36)]
    np.testing.assert_array_equal(D.argmin(axis=1), twin)  # Euclidean LOO error 100%


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"n_per_circle": 35}, "'n_per_circle'"),
        ({"arc": 150.0}, "'arc'"),
        ({"gap": 0.0}, "'gap'"),
        ({"jitter": 0.5}, "'jitter'"),
        ({"n_arcs": 0}, "'n_arcs'"),
    ],
)
def test_circles_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        datasets.concentric_circles(**kw)


def test_zebra_lmnn_lowers_error_pca_lda_raise_it():
    """Fig. 2: LMNN lowers 1-NN test error; the PCA and LDA 1-D directions raise it."""
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    from convexmetric.neighbors import knn_error

    Xtr, Xte, ytr, yte = datasets.split(*datasets.zebra_stripes(random_state=0))
    euclid = knn_error(Xtr, ytr, Xte, yte, 1)
    assert 0.08 <= euclid <= 0.3  # 11.8% measured
    for reducer in (PCA(n_components=1), LinearDiscriminantAnalysis(n_components=1)):
        reducer.fit(Xtr, ytr)
        err = knn_error(reducer.transform(Xtr), ytr, reducer.transform(Xte), yte, 1)
        assert err > euclid + 0.1  # 49.3% (PCA), 45.7% (LDA) measured
    m = LMNN(k=3).fit(Xtr, ytr)
    assert knn_error(m.transform(Xtr), ytr, m.transform(Xte), yte, 1) < 0.75 * euclid  # 6.2%


# -- kernel LMNN (§5.3) ----------------------------------------------------------------
def test_kernel_cvxpy_numpy_large_scale_and_linear_equivalence():
    X, y = small(6)
    K = X @ X.T  # linear kernel: rank 4, solved as the 4×4 SDP of its empirical map
    T = PK.kernel_targets(K, y, 2)
    np.testing.assert_array_equal(T, target_neighbors(X, y, 2))
    A, value, status, _ = PK.solve(K, y, T, 0.5)
    assert status.startswith("optimal")
    assert PK.objective(A, K, T, y, 0.5) == pytest.approx(value, rel=1e-6, abs=1e-6)
    res = SK.solve(K, y, T, 0.5)
    assert res.status == "optimal"
    assert kernel_report(res, K, y, T).verified  # a linear kernel: well conditioned
    acc = 1e-7 if status == "optimal" else 1e-6  # CLARABEL's own accuracy
    assert res.info["rank"] == 4 and abs(res.objective - value) <= (1e-4 + acc) * abs(value)
    # M = Xᵀ A X spans every metric, so the optimum is linear LMNN's
    _, v_lin, _, _ = P.solve(X, y, T, 0.5)
    assert value == pytest.approx(v_lin, rel=1e-6)


def poly_instance(per_class, gamma):
    X, y = small(per_class)
    K = (gamma * X @ X.T + 1.0) ** 2  # degree-2 polynomial kernel: rank 15 on 4 features
    return K, y, PK.kernel_targets(K, y, 2)


def test_kernel_polynomial_exact_numpy_and_large_scale():
    """A non-linear kernel: CLARABEL "optimal" on the reduced 15×15 SDP (n = 18), numpy
    objective equal at its solution, large-scale solver and working-set solver agree."""
    K, y, T = poly_instance(6, 0.1)
    A, value, status, _ = PK.solve(K, y, T, 0.5)
    assert status == "optimal" and value > 0.01  # not the degenerate zero optimum
    assert PK.objective(A, K, T, y, 0.5) == pytest.approx(value, rel=1e-6)
    res = SK.solve(K, y, T, 0.5)
    assert res.status == "optimal"
    certified_kernel_solve(res, K, y, T)
    # the centred kernel's features: the polynomial's constant feature leaves (15 → 14)
    assert res.info["rank"] == 14 and abs(res.objective - value) <= (1e-4 + 1e-7) * value
    # A = T M̂ Tᵀ carries rounding of order κ(K)·eps: 5e-8 measured
    assert PK.objective(res.matrix, K, T, y, 0.5) == pytest.approx(res.objective, rel=1e-6)
    assert res.lower_bound <= value * (1 + 1e-6)
    ws = SK.solve(K, y, T, 0.5, exact=True)
    assert abs(ws.objective - value) <= 1e-5 * value


@pytest.mark.parametrize("per_class, gamma", [(8, 0.1), (8, 0.25), (6, 0.25)])
def test_kernel_large_scale_certified(per_class, gamma):
    """Instances where the factor-L descent used to stop at a non-optimal stationary point
    (12% above at (8, 0.1)): certified to tol (recomputed) and matching the exact solver."""
    K, y, T = poly_instance(per_class, gamma)
    res = SK.solve(K, y, T, 0.5)
    assert res.status == "optimal"
    certified_kernel_solve(res, K, y, T)
    ws = SK.solve(K, y, T, 0.5, exact=True)
    assert ws.status.startswith("optimal")
    acc = 1e-7 if ws.status == "optimal" else 1e-6  # CLARABEL's own accuracy
    assert abs(res.objective - ws.objective) <= (1e-4 + acc) * ws.objective


def test_kernel_exact_reports_the_proven_bound():
    """Two separable rbf clouds (optimum ≈ 3.5e-12): the working set's own multiplier
    bound, 5.7e-11, lay above the objective (a conic solver's duals are accurate to its
    tolerance only) and the fit raised CertificateError; the reported bound is now the
    one the verifier proves, and the fit certifies and verifies."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(8, 2)), rng.normal(size=(8, 2)) + 1.5])
    y = np.repeat([0, 1], 8)
    m = KernelLMNN(solver="exact").fit(X, y)
    res = m.result_
    assert res.status == "optimal" and res.lower_bound <= res.objective
    from convexmetric import verify

    assert verify(m, X, y).verified


def test_kernel_out_of_sample_and_precomputed():
    X, y = small(6)
    m = KernelLMNN(k=2, kernel="rbf", max_iter=200).fit(X, y)
    np.testing.assert_allclose(m.transform(X), m._K @ m.components_.T, atol=1e-12)
    K = m._K
    p = KernelLMNN(k=2, kernel="precomputed", max_iter=200).fit(K, y)
    assert p.predict(K[:3]).shape == (3,)
    with pytest.raises(ValueError, match="'X' must hold kernel values"):
        p.predict(K[:3, :5])
    with pytest.raises(ValueError, match="'X' must be a square kernel"):
        KernelLMNN(kernel="precomputed").fit(K[:, :5], y)


# -- dimensionality reduction and PCA (§5.4) -------------------------------------------
def test_lmnn_s_r_and_pca():
    X, y = small(10, "wine")
    s = LMNN(k=2, n_components=2, max_iter=300).fit(X, y)
    full = LMNN(k=2, max_iter=300).fit(X, y)
    np.testing.assert_allclose(s.components_, leading_components(full.metric_, 2), atol=1e-8)
    r = LMNN(k=2, n_components=2, reduction="R", max_iter=300).fit(X, y)
    assert r.components_.shape == (2, 13) and r.objective_ <= s.objective_ + 1e-9
    p = LMNN(k=2, pca=4, max_iter=300).fit(X, y)
    assert p.components_.shape == (4, 13) and p.transform(X).shape == (len(y), 4)


# -- bad input -------------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(r=st.one_of(st.integers(max_value=0), st.integers(min_value=14, max_value=10**6)))
def test_bad_n_components(r):
    X, y = small(5, "wine")
    with pytest.raises(ValueError, match="'n_components' parameter of LMNN"):
        LMNN(k=2, n_components=r).fit(X, y)


@settings(max_examples=10, deadline=None)
@given(c=st.one_of(st.integers(max_value=0), st.integers(min_value=16, max_value=10**6)))
def test_bad_n_clusters(c):
    X, y = small(5)
    with pytest.raises(ValueError, match="'n_clusters' parameter of MultiMetricLMNN"):
        MultiMetricLMNN(k=2, n_clusters=c).fit(X, y)


def test_bad_pca_and_search():
    X, y = small(5)
    with pytest.raises(ValueError, match="'pca' parameter"):
        LMNN(k=2, pca=9).fit(X, y)
    with pytest.raises(ValueError, match="'search' parameter"):
        LMNN(k=2, search="octree").fit(X, y)


@pytest.mark.parametrize("seed", [0, 1])
def test_multi_metric_oracle_matches_a_direct_sum(seed):
    """The oracle's per-block row products (distances over each block's own points) give
    eq. (14)'s multi-metric value and subgradient of a triplet-by-triplet sum, with
    clusters that are not the classes (a pair's metric is its second point's cluster)."""
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(40, 3)), np.arange(40) % 3
    g = rng.integers(0, 4, size=40)
    T = target_neighbors(X, y, 2)
    o = SM.MultiMetricOracle(X, y, T, 0.4, g, 4)
    Ms = [(lambda A: A @ A.T)(rng.normal(size=(3, 3))) for _ in range(4)]
    f, G = o(Ms)  # the first call searches all triplets (margin 0.3): every violated one
    assert f == pytest.approx(PM.objective(Ms, X, T, y, g, 0.4), rel=1e-12)
    I, J, L, H = PM.hinge_terms(Ms, X, T, y, g)
    ref = [0.6 * P for P in PM.pull_matrices(X, T, g, 4)]
    for i, j, l, h in zip(I, J, L, H):
        if h > 0:
            a, b = X[i] - X[j], X[i] - X[l]
            ref[g[j]] += 0.4 * np.outer(a, a)
            ref[g[l]] -= 0.4 * np.outer(b, b)
    for Gg, Rg in zip(G, ref):
        np.testing.assert_allclose(Gg, Rg, rtol=1e-10, atol=1e-10)
