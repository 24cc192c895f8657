"""The independent verifier on the LMNN family: every certified fit verifies, its objective
is eq. (14) as written here, and a changed metric or a tampered certificate does not."""

import dataclasses
import warnings

import numpy as np
import pytest

from convexmetric import LMNN, KernelLMNN, MultiMetricLMNN, datasets, verify
from convexmetric.lmnn.base import SmallClassWarning
from convexmetric.verifier import Fitted, verify_fitted


def eq14(X, y, T, mu, metric_of):
    """Eq. (14) by plain loops: ``metric_of(b)`` is the matrix of pairs ``(a, b)``."""
    pull = push = 0.0
    for i in range(len(y)):
        for j in T[i][T[i] != i]:  # a slot naming i itself pads a short row: no target
            u = X[i] - X[j]
            dij = u @ metric_of(j) @ u
            pull += dij
            for l in range(len(y)):
                if y[l] != y[i]:
                    v = X[i] - X[l]
                    push += max(0.0, 1.0 + dij - v @ metric_of(l) @ v)
    return (1 - mu) * pull + mu * push


def _split(name):
    if name == "iris-small":  # a class of two members at k = 3: its points get one target
        X, y = _split("iris")
        keep = (y != 2) | (np.cumsum(y == 2) <= 2)
        return X[keep], y[keep]
    X, _, y, _ = datasets.load_split(name)
    return X, y


CASES = {
    "iris": (lambda: LMNN(), "iris"),
    "wine": (lambda: LMNN(), "wine"),
    "streaming": (lambda: LMNN(memory_limit=90_000), "iris"),
    "two-passes": (lambda: LMNN(n_passes=2), "wine"),
    "multi": (lambda: MultiMetricLMNN(), "iris"),
    "multi-kmeans": (lambda: MultiMetricLMNN(n_clusters=2, random_state=0), "iris"),
    "kernel": (lambda: KernelLMNN(kernel="linear"), "wine"),
    "exact": (lambda: LMNN(solver="exact"), "iris"),  # the working-set SDPs' duals
    "multi-exact": (lambda: MultiMetricLMNN(solver="exact"), "iris"),  # the SDP's duals
    "ragged": (lambda: LMNN(), "iris-small"),  # fewer targets for a small class
    "ragged-multi": (lambda: MultiMetricLMNN(n_clusters=2, random_state=0), "iris-small"),
    "ragged-kernel": (lambda: KernelLMNN(kernel="linear"), "iris-small"),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    make, name = CASES[request.param]
    X, y = _split(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallClassWarning)  # (its own test: test_lmnn_ragged)
        return request.param, make().fit(X, y), X, y


def _reference(est, X, y):
    """Eq. (14) at the fitted matrices, written here (not the verifier's code)."""
    T, mu = est.targets_, est.mu
    if isinstance(est, MultiMetricLMNN):
        return eq14(X, y, T, mu, lambda b: est.metrics_[est.clusters_[b]])
    if isinstance(est, KernelLMNN):  # linear kernel: k_i = X x_i, D = (k_i − k_j)ᵀA(…)
        return eq14(X @ X.T, y, T, mu, lambda b: est.A_)
    return eq14(X, y, T, mu, lambda b: est.metric_)


def test_certified_fit_is_verified_and_its_objective_is_eq14(case, verified):
    name, est, X, y = case
    report = verified(est, X, y)
    # the exact side's status is its conic solver's (CLARABEL may say "optimal_inaccurate"
    # on the multi-metric SDP); the duals it returns still certify within tol
    assert est.result_.status == "optimal" or name == "multi-exact"
    assert report.certified_gap <= est.tol
    assert report.objective == pytest.approx(_reference(est, X, y), rel=1e-9)
    if name == "streaming":
        assert est.result_.info["mode"] == "streaming"


def test_bound_recomputed_from_the_certificate_is_the_reported_one(case):
    _, est, X, y = case
    report = verify(est, X, y)
    assert report.lower_bound == pytest.approx(est.result_.lower_bound, rel=1e-9)


def test_stored_lower_bound_is_never_read(case):
    _, est, X, y = case
    before = verify(est, X, y)
    stored = est.result_.lower_bound
    try:
        est.result_.lower_bound = est.result_.objective
        after = verify(est, X, y)
    finally:
        est.result_.lower_bound = stored
    assert (after.lower_bound, after.objective, after.verified) == (
        before.lower_bound,
        before.objective,
        before.verified,
    )


def _scaled(fitted, factor=1.01):
    attrs = dict(fitted.attrs)
    for key in ("metric_", "metrics_", "A_"):
        if key in attrs:
            attrs[key] = attrs[key] * factor
    if "components_" in attrs:
        attrs["components_"] = attrs["components_"] * np.sqrt(factor)
    return dataclasses.replace(fitted, attrs=attrs)


def test_metric_scaled_after_the_fit_is_not_verified(case):
    _, est, X, y = case
    report = verify_fitted(_scaled(Fitted.from_estimator(est)), X, y)
    assert not report.verified
    assert "stored objective" in report.reason


def _tampered(fitted, how, y):
    cert = dict(fitted.certificate)
    lam, i, l = cert["lam"].copy(), cert["i"].copy(), cert["l"].copy()
    if how == "scaled":
        lam = 0.9 * lam
    elif how == "pushed":
        lam[np.argmax(lam)] = 1.5
    elif how == "negative":
        lam[np.argmax(lam)] = -0.5
    elif how == "same-class":
        t = int(np.argmax(lam))
        l[t] = np.flatnonzero((y == y[i[t]]) & (np.arange(len(y)) != i[t]))[0]
    elif how == "out-of-range":
        i[0] = len(y)
    elif how == "padding":  # a triplet (i, i, l): through a padded slot where i has one
        T = np.asarray(fitted.attrs["targets_"])
        padded = (T[i] == i[:, None]).any(axis=1)
        t = int(np.argmax(padded)) if padded.any() else int(np.argmax(lam))
        cert["j"] = cert["j"].copy()
        cert["j"][t] = i[t]
    elif how == "twice":
        cert = {key: np.r_[v, v[:1]] if isinstance(v, np.ndarray) else v for key, v in cert.items()}
        return dataclasses.replace(fitted, certificate=cert)
    cert.update(lam=lam, i=i, l=l)
    return dataclasses.replace(fitted, certificate=cert)


@pytest.mark.parametrize(
    "how", ["scaled", "pushed", "negative", "same-class", "out-of-range", "twice", "padding"]
)
def test_tampered_certificate_is_not_verified(case, how):
    _, est, X, y = case
    report = verify_fitted(_tampered(Fitted.from_estimator(est), how, np.asarray(y)), X, y)
    assert not report.verified
    assert report.reason
    if how != "scaled":  # an infeasible dual point proves nothing
        assert report.lower_bound == -np.inf


def test_certificate_is_compact(case):
    _, est, _X, y = case
    cert = est.result_.certificate
    assert cert["kind"] == {"LMNN": "lmnn", "MultiMetricLMNN": "lmnn_multi",
                            "KernelLMNN": "lmnn_kernel"}[type(est).__name__]  # fmt: skip
    assert all(cert[key].dtype in (np.int32, np.int64) for key in "ijl")
    assert cert["lam"].dtype == np.float64 and np.all(cert["lam"] > 0)
    assert len(cert["lam"]) < 3 * len(y) * len(y)  # listed triplets, never a dense n×n


def test_targets_that_are_not_the_nearest_are_refused():
    X, y = _split("iris")
    est = LMNN().fit(X, y)
    fitted = Fitted.from_estimator(est)
    attrs = dict(fitted.attrs)
    T = attrs["targets_"].copy()
    far = np.argmax(((X - X[0]) ** 2).sum(1) * (y == y[0]))
    T[0, 0] = far
    attrs["targets_"] = T
    from convexmetric.verifier import VerificationError

    with pytest.raises(VerificationError, match="nearest"):
        verify_fitted(Fitted("LMNN", fitted.params, attrs, fitted.certificate, 0.0), X, y)


def test_unrefined_fit_is_checked_at_its_own_gap_and_a_bare_one_refused():
    from convexmetric.verifier import VerificationError

    X, y = _split("iris")
    est = LMNN(refine=False).fit(X, y)  # App. A alone: the bound of its listed multipliers
    report = verify(est, X, y)
    gap = est.result_.certified_gap
    assert 0 < gap < 1 and report.certified_gap == pytest.approx(gap, rel=1e-6)
    assert report.verified == (gap <= report.tol)
    est.result_.certificate = None  # a result that carries none: nothing to verify
    with pytest.raises(VerificationError, match="no certificate"):
        verify(est, X, y)


def test_an_optimum_at_zero_is_verified_to_an_absolute_gap():
    # unscaled wine under the RBF kernel: a metric separates the classes with no target
    # distance left, so f* = 0, approached by metrics of norm ~1e8: no relative gap can
    # be met, and the gap's denominator is floored at FLOOR_SHARE of the objective at the
    # zero point (the problem's scale), so the claim is f − f* ≤ tol·1e-6·f(0)
    from convexmetric.result import FLOOR_SHARE

    X, y = _split("wine")
    est = KernelLMNN(kernel="rbf").fit(X, y)
    report = verify(est, X, y)
    assert est.result_.status == "optimal" and report.verified, report.reason
    at_zero = eq14(est._K, y, est.targets_, est.mu, lambda b: 0 * est.A_)
    assert report.zero_value == pytest.approx(at_zero, rel=1e-12)
    assert 0 < report.objective <= est.tol * FLOOR_SHARE * at_zero
    assert report.resolution < 1e-3 * report.objective  # rigorous, and far below it
    # the stored objective is the applied map's (from its factor, not from A_ = LᵀL)
    assert report.reported_objective == pytest.approx(report.objective, rel=1e-6)
    # a metric 1e-7 the size no longer separates the classes with room: not verified
    shrunk = verify_fitted(_scaled(Fitted.from_estimator(est), 1e-7), X, y)
    assert not shrunk.verified and "certified gap" in shrunk.reason
    assert shrunk.objective > 1e3 * shrunk.resolution


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_resolution_bounds_the_float64_error_of_eq14(seed):
    # classes apart along one direction only, a metric of norm 1e8 along it (`small`
    # elsewhere), uncentred points: f is a few 1e-4·small/1e-6, all of it pull; the same
    # sums in extended precision must be within the rigorous `resolution` of the
    # verifier's, and `resolution` far below f (it is componentwise in the data: the
    # large direction, along which no target pair differs, adds nothing)
    rng = np.random.default_rng(seed)
    n, d = 60, 5
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    y = np.repeat([0, 1, 2], n // 3)
    Z = rng.normal(size=(n, d))
    Z[:, 0] = 3.0 * y
    X = Z @ Q.T + 30.0
    T = np.array([_nearest_two(Z, y, i) for i in range(n)])
    params = LMNN(k=2).get_params()
    cert = {"kind": "lmnn", "F": np.nan, "lam": np.zeros(0)}
    cert.update({key: np.zeros(0, np.int64) for key in "ijl"})
    at_zero = eq14(X, y, T, 0.5, lambda b: np.zeros((d, d)))  # f(0): every hinge at 1
    for small, verified in ((1e-6, False), (1e-16, True)):
        L = (Q * np.sqrt(np.r_[1e8, np.full(d - 1, small)])).T
        M = L.T @ L
        # the exact objective at the map L (not at M = fl(LᵀL), which rounds by u‖L‖²)
        Xl = X.astype(np.longdouble) @ L.T.astype(np.longdouble)
        exact = float(eq14(Xl, y, T, np.longdouble(0.5), lambda b: np.eye(d, dtype=np.longdouble)))
        attrs = {"metric_": M, "components_": L, "targets_": T}
        report = verify_fitted(Fitted("LMNN", params, attrs, cert, exact), X, y)
        assert abs(report.objective - exact) <= report.resolution
        assert report.resolution < 1e-2 * exact and report.resolution < 1e-14 * at_zero
        assert report.zero_value == pytest.approx(at_zero)
        # f* = 0 (the `small` directions at 0): an absolute gap of f; verified only where
        # f ≤ tol·FLOOR_SHARE·f(0) (f ≈ 5e-4 is not: 2e-7 of f(0), above 1e-10 of it)
        assert report.verified is verified, report.reason


def _nearest_two(Z, y, i):
    same = np.flatnonzero((y == y[i]) & (np.arange(len(y)) != i))
    return same[np.argsort(((Z[same] - Z[i]) ** 2).sum(1), kind="stable")[:2]]


def test_a_block_without_impostor_multipliers_needs_no_pull():
    # a k-means cluster with fewer target pairs than varying coordinates: its pull is
    # singular, and with no impostor of the block carrying a multiplier H_h(1) is a sum of
    # Gram matrices (PSD exactly); one impostor difference in the pull's null space is not
    from convexmetric.verifier._lmnn_bound import block_kappa

    X = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 1.0], [3.0, 1.0, 5.0]])
    pull = (np.array([0]), np.array([1]))  # varies in the first coordinate only
    plus = (np.array([2, 3]), np.array([0, 1]), np.array([0.5, 1.0]))
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    assert block_kappa(X, 0.5, pull, plus, none) == 1.0
    assert block_kappa(X, 0.5, (pull[0][:0], pull[1][:0]), plus, none) == 1.0
    minus = (np.array([2]), np.array([3]), np.array([0.25]))
    assert block_kappa(X, 0.5, pull, plus, minus) == np.inf
    zero = (np.array([2]), np.array([3]), np.array([0.0]))  # a zero multiplier: not a term
    assert block_kappa(X, 0.5, pull, plus, zero) == 1.0


def test_multi_metric_kmeans_clusters_certify_and_verify():
    # digits in 5 k-means clusters: one cluster has 46 target pairs over 47 varying pixels
    # and no impostor multipliers; its block proved nothing before (bound 0, not certified)
    X, _, y, _ = datasets.load_split("digits")
    est = MultiMetricLMNN(k=3, mu=0.5, tol=1e-4, n_clusters=5, random_state=0).fit(X, y)
    assert est.result_.status == "optimal"
    assert verify(est, X, y, tol=1e-4).verified
