"""Property-based bad-input tests (issue 14, item 3).

Every public estimator and every CLI command is driven with generated bad input:
NaN/inf, empty, one sample, 3-D, complex and object arrays, mismatched lengths, a
single class, out-of-range or negative indices, non-symmetric / non-PSD / NaN kernels,
bad hyperparameters, malformed CSV and pickled ``.npy`` files. The library must answer
with a ``ValueError``/``TypeError`` whose first line names the argument; the CLI with a
non-zero exit, one clean ``Error:`` line and no traceback, and no output written.

Inputs are tiny, so a case that slips through validation still finishes quickly and
fails the test instead of hanging it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convexmetric
from convexmetric import (
    LMNN,
    MKPOE,
    OASIS,
    POE,
    SSNE,
    DiagonalAROMA,
    FactoredAROMA,
    HyperbolicPCA,
    KernelLMNN,
    MultiMetricLMNN,
    OperatorSimilarity,
)
from convexmetric.cli.main import main as cli_main

#: Deterministic in CI; ``BAD_INPUT_EXPLORE=10`` runs ten times the examples, randomised.
EXPLORE = int(os.environ.get("BAD_INPUT_EXPLORE", "0"))
FAST = settings(
    max_examples=50 * max(EXPLORE, 1),
    deadline=None,
    derandomize=not EXPLORE,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

N, D = 12, 3


def _data(seed, n=N, d=D):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.repeat([0, 1], n // 2)
    X[y == 1] += 2.0
    return X, y


def rejected(call, *names):
    """``call()`` raises ValueError/TypeError whose first line quotes one of ``names``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError)) as info:
            call()
    first = str(info.value).splitlines()[0] if str(info.value) else ""
    quoted = [f"'{n}" for n in names]
    kind = type(info.value).__name__
    assert any(q in first for q in quoted), f"{kind}: {first!r} names none of {names}"


# --- estimators fitted from labelled data X, y ------------------------------------------
def _iter_param(est_cls):
    """The iteration-cap parameter of AROMA/OASIS (``n_iter`` or, renamed, ``max_iter``)."""
    names = est_cls().get_params()
    return "max_iter" if "max_iter" in names else "n_iter"


LABELLED = {
    "LMNN": lambda **p: LMNN(**{"k": 1, "max_iter": 30, "refine": False, **p}),
    "MultiMetricLMNN": lambda **p: MultiMetricLMNN(**{"k": 1, "max_iter": 10, **p}),
    "KernelLMNN": lambda **p: KernelLMNN(**{"k": 1, "max_iter": 30, **p}),
    "SSNE": lambda **p: SSNE(**{"n_components": 2, "max_iter": 1, **p}),
    "DiagonalAROMA": lambda **p: DiagonalAROMA(**{_iter_param(DiagonalAROMA): 50, **p}),
    "FactoredAROMA": lambda **p: FactoredAROMA(**{_iter_param(FactoredAROMA): 50, **p}),
    "OASIS": lambda **p: OASIS(**{_iter_param(OASIS): 50, **p}),
    "OperatorSimilarity": lambda **p: OperatorSimilarity(
        **{"max_iter": 50, "n_pairs": 20, "random_state": 0, **p}
    ),
    "HyperbolicPCA": lambda **p: HyperbolicPCA(**{"n_pairs": 20, "random_state": 0, **p}),
}


def _corrupt_X(kind, X, y, draw):
    """A corrupted copy of ``(X, y)`` and the argument names the error may quote."""
    X = X.copy()
    n, d = X.shape
    r, c = draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))
    if kind == "nan":
        X[r, c] = np.nan
    elif kind == "inf":
        X[r, c] = draw(st.sampled_from([np.inf, -np.inf]))
    elif kind == "empty":
        X, y = X[:0], y[:0]
    elif kind == "one_sample":
        X, y = X[:1], y[:1]
    elif kind == "three_d":
        X = X.reshape(n, d, 1)
    elif kind == "one_d":
        X = X[:, 0]
    elif kind == "no_columns":
        X = X[:, :0]
    elif kind == "complex":
        X = X.astype(complex)
        X[r, c] += 1j * draw(st.floats(0.5, 2.0))
    elif kind == "object":
        X = X.astype(object)
        X[r, c] = draw(st.sampled_from(["a", None, "1,5", [1.0, 2.0]]))
    elif kind == "ragged":
        X = [list(row) for row in X]
        X[r] = X[r][:-1]
    # one sample is a valid matrix; the labels then admit no pair or triplet
    return X, y, ("X", "pairs", "y") if kind == "one_sample" else ("X", "pairs")


def _corrupt_y(kind, X, y, draw):
    y = y.copy()
    if kind == "short":
        y = y[: draw(st.integers(0, len(y) - 1))]
    elif kind == "long":
        y = np.concatenate([y, y[: draw(st.integers(1, 3))]])
    elif kind == "single_class":
        y = np.full_like(y, draw(st.integers(-3, 3)))
    elif kind == "nan_labels":
        y = y.astype(float)
        y[draw(st.integers(0, len(y) - 1))] = np.nan
    elif kind == "two_d":
        y = np.column_stack([y, y])
    elif kind == "missing":
        y = None
    return X, y, ("X", "y")


X_KINDS = ["nan", "inf", "empty", "one_sample", "three_d", "one_d", "no_columns", "complex",
           "object", "ragged"]  # fmt: skip
Y_KINDS = ["short", "long", "single_class", "nan_labels", "two_d", "missing"]


@FAST
@given(
    name=st.sampled_from(sorted(LABELLED)),
    kind=st.sampled_from(X_KINDS + Y_KINDS),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_labelled_estimators_reject_bad_data(name, kind, seed, data):
    X, y = _data(seed)
    corrupt = _corrupt_X if kind in X_KINDS else _corrupt_y
    X, y, names = corrupt(kind, X, y, data.draw)
    est = LABELLED[name]()
    rejected(lambda: est.fit(X, y), *names)


# --- bad hyperparameters ----------------------------------------------------------------
def _bad_int(lo, hi=None, none_ok=False):
    bad = [
        st.integers(-(10**6), lo - 1),
        st.floats(allow_nan=True),
        st.text(max_size=3),
        st.booleans(),
        st.complex_numbers(max_magnitude=10),
    ]
    if hi is not None:
        bad.append(st.integers(hi + 1, 10**6))
    if not none_ok:
        bad.append(st.none())
    return st.one_of(bad)


def _bad_float(lo=None, hi=None, lo_ok=False, none_ok=False):
    """Bad values of a float parameter in (lo, hi] (``lo_ok``: [lo, hi])."""
    bad = [
        st.sampled_from([np.nan, np.inf, -np.inf, float("nan")]),
        st.text(max_size=3),
        st.booleans(),
        st.complex_numbers(min_magnitude=0.1, max_magnitude=10).filter(lambda z: z.imag != 0),
        st.just([1.0]),
    ]
    if lo is not None:
        bad.append(st.floats(-1e6, lo, exclude_max=lo_ok))
    if hi is not None:
        bad.append(st.floats(hi, 1e6, exclude_min=True))
    if not none_ok:
        bad.append(st.none())
    return st.one_of(bad)


def _bad_choice(choices):
    upper = {str(c).upper() for c in choices}
    return st.one_of(
        st.text(max_size=6).filter(lambda s: s.upper() not in upper),
        st.integers(2, 5),
        st.floats(allow_nan=True).filter(lambda v: v not in (0.0, 1.0)),
        st.just([1]),
    )


_LMNN_COMMON = {
    "k": _bad_int(1),
    "mu": _bad_float(0.0, 1.0, lo_ok=True),
    "max_iter": _bad_int(1),
    "solver": _bad_choice(["subgradient", "exact"]),
    "predict_k": _bad_int(1, none_ok=True),
}
PARAMS = {
    "LMNN": {
        **_LMNN_COMMON,
        "n_passes": _bad_int(1),
        "time_limit": _bad_float(0.0, none_ok=True),
        "conic_solver": _bad_choice(["CLARABEL", "SCS"]),
        "reduction": _bad_choice(["S", "R"]),
        "search": _bad_choice(["brute", "balltree", "kdtree", "auto"]),
        "n_components": _bad_int(1, D, none_ok=True),
        "pca": _bad_int(1, D, none_ok=True),
        "refine": _bad_choice([True, False]),
    },
    "MultiMetricLMNN": {
        **_LMNN_COMMON,
        "max_iter": _bad_int(2),
        "n_clusters": _bad_int(1, N, none_ok=True),
        "time_limit": _bad_float(0.0, none_ok=True),
        "conic_solver": _bad_choice(["CLARABEL", "SCS"]),
    },
    "KernelLMNN": {
        **_LMNN_COMMON,
        "kernel": _bad_choice(["rbf", "linear", "precomputed"]),
        "gamma": _bad_float(0.0, none_ok=True),
    },
    "SSNE": {
        "n_components": _bad_int(1),
        "loss_weight": _bad_float(0.0, lo_ok=True),
        "dissimilar": _bad_float(-1.0, 1.0, lo_ok=True),
        "max_iter": _bad_int(1),
        "batch_size": _bad_int(1),
        "learning_rate": _bad_float(0.0),
        "decay": _bad_float(0.0, lo_ok=True),
        "n_blocks": _bad_int(1, 2),
        "n_restarts": _bad_int(1),
        "init_scale": _bad_float(0.0),
        "max_pairs": _bad_int(1),
    },
    "DiagonalAROMA": {"r": _bad_float(0.0), "mistake_driven": _bad_choice([True, False])},
    "FactoredAROMA": {"r": _bad_float(0.0), "mistake_driven": _bad_choice([True, False])},
    "OASIS": {
        "C": _bad_float(0.0),
        "init": _bad_choice(["identity", "zeros"]),
        "mistake_driven": _bad_choice([True, False]),
    },
    "OperatorSimilarity": {
        "reg_weight": _bad_float(0.0),
        "margin": _bad_float(0.0),
        "margin_neg": _bad_float(0.0, none_ok=True),
        "tol": _bad_float(0.0, none_ok=True),
        "regularizer": _bad_choice(["hs", "trace"]),
        "solver": _bad_choice(["sgd", "subgradient", "exact"]),
        "kernel": _bad_choice(["linear", "maurer", None]),
        "learning_rate": _bad_float(0.0),
        "max_iter": _bad_int(1),
        "block_size": _bad_int(1),
        "reg_every": _bad_int(1),
        "n_components": _bad_int(1, none_ok=True),
        "n_pairs": _bad_int(2),
        "oracle": _bad_choice(["balanced", "labels"]),
    },
    "HyperbolicPCA": {
        "n_components": _bad_int(1),
        "c": _bad_float(1.0),
        "kernel": _bad_choice(["linear", "maurer", None]),
        "n_pairs": _bad_int(2),
        "oracle": _bad_choice(["balanced", "labels"]),
    },
}
for _cls in (DiagonalAROMA, FactoredAROMA, OASIS):
    PARAMS[_cls.__name__][_iter_param(_cls)] = _bad_int(0)

CASES = [(est, p) for est, ps in PARAMS.items() for p in ps]


@settings(FAST, max_examples=200 * max(EXPLORE, 1))
@given(case=st.sampled_from(CASES), data=st.data())
def test_labelled_estimators_reject_bad_hyperparameters(case, data):
    name, param = case
    value = data.draw(PARAMS[name][param], label=param)
    X, y = _data(0)
    est = LABELLED[name](**{param: value})
    rejected(lambda: est.fit(X, y), param)


POE_PARAMS = {
    "beta": _bad_float(0.0),
    "kernel": _bad_choice([None, "linear", "rbf", "precomputed"]),
    "gamma": _bad_float(0.0, none_ok=True),
    "diagonal": _bad_choice([False, True]),
    "solver": _bad_choice(["subgradient", "exact", "CLARABEL", "SCS"]),
}


@FAST
@given(param=st.sampled_from(sorted(POE_PARAMS)), mk=st.booleans(), data=st.data())
def test_poe_rejects_bad_hyperparameters(param, mk, data):
    X, _ = _data(0)
    C = _triadic(N, 0)
    if mk and param in ("kernel", "gamma"):
        mk = False
    value = data.draw(POE_PARAMS[param], label=param)
    if mk:
        rejected(lambda: MKPOE(**{param: value}).fit(C, [X @ X.T]), param)
    else:
        rejected(lambda: POE(**{param: value}).fit(C, X), param)


# --- comparisons, kernels, index pairs, targets ----------------------------------------
def _triadic(n, seed, m=10):
    rng = np.random.default_rng(seed)
    rows = []
    while len(rows) < m:
        i, j, k = rng.choice(n, 3, replace=False)
        rows.append([i, j, i, k])
    return np.array(rows)


def _corrupt_indices(kind, idx, n, draw):
    idx = idx.copy()
    r = draw(st.integers(0, idx.shape[0] - 1))
    c = draw(st.integers(0, idx.shape[1] - 1))
    if kind == "negative":
        idx[r, c] = draw(st.integers(-(10**6), -1))
    elif kind == "too_large":
        idx[r, c] = draw(st.integers(n, 10**6))
    elif kind == "fractional":
        idx = idx.astype(float)
        idx[r, c] += draw(st.floats(0.1, 0.9))
    elif kind == "nan":
        idx = idx.astype(float)
        idx[r, c] = draw(st.sampled_from([np.nan, np.inf]))
    elif kind == "complex":
        idx = idx.astype(complex)
    elif kind == "object":
        idx = idx.astype(object)
        idx[r, c] = "a"
    elif kind == "one_d":
        idx = idx.ravel()
    elif kind == "three_d":
        idx = idx[:, :, None]
    elif kind == "empty":
        idx = idx[:0]
    elif kind == "wrong_columns":
        idx = np.column_stack([idx, idx])
    return idx


INDEX_KINDS = ["negative", "too_large", "fractional", "nan", "complex", "object", "one_d",
               "three_d", "empty", "wrong_columns"]  # fmt: skip


@FAST
@given(
    kind=st.sampled_from(INDEX_KINDS),
    who=st.sampled_from(["POE", "MKPOE", "SSNE", "LMNN"]),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_index_arguments_are_checked(kind, who, seed, data):
    X, y = _data(seed)
    if who in ("POE", "MKPOE"):
        C = _corrupt_indices(kind, _triadic(N, seed), N, data.draw)
        if who == "POE":
            rejected(lambda: POE(solver="exact").fit(C, X), "comparisons")
        else:
            rejected(lambda: MKPOE(solver="exact").fit(C, [X @ X.T]), "comparisons")
    elif who == "SSNE":
        idx = _corrupt_indices(kind, np.array([[0, 1], [2, 7], [3, 9]]), N, data.draw)
        s = np.array([1.0, 0.0, 0.0])
        rejected(lambda: SSNE(max_iter=1).fit(X, s, pairs=idx), "pairs", "s")
    else:
        T = np.array([[(i + 1) % 6 + 6 * (i // 6)] for i in range(N)])
        T = _corrupt_indices(kind, T, N, data.draw)
        rejected(lambda: LMNN(k=1, max_iter=20).fit(X, y, targets=T), "targets")


def _bad_kernel(kind, K, draw):
    K = K.copy()
    n = K.shape[0]
    r, c = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
    if kind == "nan":
        K[r, c] = K[c, r] = draw(st.sampled_from([np.nan, np.inf]))
    elif kind == "non_symmetric":
        if r == c:
            c = (r + 1) % n
        K[r, c] += draw(st.floats(0.5, 5.0))
    elif kind == "non_psd":
        K = K - draw(st.floats(1.5, 5.0)) * np.abs(np.linalg.eigvalsh(K)).max() * np.eye(n)
    elif kind == "non_square":
        K = K[:, :-1]
    elif kind == "wrong_size":
        K = K[:-1, :-1]
    elif kind == "complex":
        K = K.astype(complex)
        K[r, c] += 1j
    return K


KERNEL_KINDS = ["nan", "non_symmetric", "non_psd", "non_square", "complex"]


@FAST
@given(
    kind=st.sampled_from([*KERNEL_KINDS, "wrong_size"]),
    who=st.sampled_from(["POE", "MKPOE", "KernelLMNN"]),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_kernels_are_checked(kind, who, seed, data):
    X, y = _data(seed)
    K = X @ X.T + np.eye(N)
    bad = _bad_kernel(kind, K, data.draw)
    if who == "POE":
        if kind == "wrong_size":  # the comparisons then name item N - 1, beyond the kernel
            C = np.array([[0, 1, 0, N - 1]])
            rejected(lambda: POE(kernel="precomputed").fit(C, bad), "comparisons")
        else:
            rejected(lambda: POE(kernel="precomputed").fit(_triadic(N, seed), bad), "X")
    elif who == "MKPOE":
        rejected(lambda: MKPOE().fit(_triadic(N, seed), [K, bad]), "kernels")
    else:
        if kind == "wrong_size":  # labels then no longer match
            rejected(lambda: KernelLMNN(k=1, kernel="precomputed").fit(bad, y), "X", "y")
        else:
            rejected(lambda: KernelLMNN(k=1, kernel="precomputed").fit(bad, y), "X")


@FAST
@given(
    kind=st.sampled_from(["nan", "range", "short", "three_d_bad", "two_d_s"]),
    value=st.floats(1.0, 10.0, exclude_min=True),
)
def test_ssne_pair_forms_are_checked(kind, value):
    X, _ = _data(0)
    P = np.stack([X[:4], X[4:8]], axis=1)  # (4, 2, d)
    s = np.array([1.0, 0.0, 0.0, 1.0])
    if kind == "nan":
        s[1] = np.nan
        rejected(lambda: SSNE(max_iter=1).fit(P, s), "s")
    elif kind == "range":
        s[2] = -value
        rejected(lambda: SSNE(max_iter=1).fit(P, s), "s")
    elif kind == "short":
        rejected(lambda: SSNE(max_iter=1).fit(P, s[:-1]), "s")
    elif kind == "three_d_bad":
        rejected(lambda: SSNE(max_iter=1).fit(np.concatenate([P, P], axis=1), s), "pairs")
    else:
        rejected(lambda: SSNE(max_iter=1).fit(P, s[:, None]), "s")


@FAST
@given(
    est=st.sampled_from(["DiagonalAROMA", "FactoredAROMA", "OASIS"]),
    kind=st.sampled_from(["nan", "complex", "mismatch", "three_d", "object"]),
    which=st.sampled_from(["q", "p_pos", "p_neg"]),
)
def test_partial_fit_checks_each_argument(est, kind, which):
    X, _ = _data(0)
    args = {"q": X[:3].copy(), "p_pos": X[3:6].copy(), "p_neg": X[6:9].copy()}
    a = args[which]
    if kind == "nan":
        a[0, 0] = np.nan
    elif kind == "complex":
        a = a + 1j
    elif kind == "mismatch":
        a = a[:2]
    elif kind == "three_d":
        a = a[:, :, None]
    else:
        a = a.astype(object)
        a[0, 0] = "x"
    args[which] = a
    model = LABELLED[est]()
    rejected(lambda: model.partial_fit_triplets(**args), "q", "p_pos", "p_neg")


_FITTED = {}


def _fitted(name):
    if name not in _FITTED:
        X, y = _data(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _FITTED[name] = LABELLED[name]().fit(X, y)
    return _FITTED[name]


APPLY = {  # what a fitted model applies to new data, and the argument's name
    "LMNN": ("transform", "predict"),
    "MultiMetricLMNN": ("predict", "distances"),
    "KernelLMNN": ("transform", "predict"),
    "SSNE": ("transform",),
    "DiagonalAROMA": ("similarity",),
    "FactoredAROMA": ("similarity",),
    "OASIS": ("similarity",),
    "OperatorSimilarity": ("transform",),
    "HyperbolicPCA": ("transform",),
}


@FAST
@given(
    name=st.sampled_from(sorted(APPLY)),
    kind=st.sampled_from(
        [*X_KINDS[:2], "three_d", "one_d", "complex", "object", "ragged", "wrong_width"]
    ),
    data=st.data(),
)
def test_fitted_estimators_reject_bad_new_data(name, kind, data):
    model = _fitted(name)
    X, y = _data(2)
    if kind == "wrong_width":
        X = np.hstack([X, X[:, :1]])
    else:
        X, _, _ = _corrupt_X(kind, X, y, data.draw)
    method = data.draw(st.sampled_from(APPLY[name]))
    rejected(lambda: getattr(model, method)(X), "X", "Q")


def test_every_public_estimator_is_driven():
    driven = set(LABELLED) | {"POE", "MKPOE"}
    public = {n for n in convexmetric.__all__ if isinstance(getattr(convexmetric, n), type)}
    assert public - {"SolveResult", "Verification"} <= driven


# --- the command line -------------------------------------------------------------------
def _write_bad_file(folder, kind, draw):
    """A bad features / labels / kernel file; returns its path."""
    X, _ = _data(draw(st.integers(0, 2**16)))
    path = os.path.join(folder, f"bad_{kind}")
    if kind == "pickled":
        path += ".npy"
        obj = np.empty(N, dtype=object)
        obj[:] = [{"row": i} for i in range(N)]
        np.save(path, obj, allow_pickle=True)
    elif kind == "complex":
        path += ".npy"
        np.save(path, X + 1j)
    elif kind == "three_d":
        path += ".npy"
        np.save(path, X[:, :, None])
    elif kind == "nan_csv":
        path += ".csv"
        X[draw(st.integers(0, N - 1)), 0] = np.nan
        np.savetxt(path, X, delimiter=",")
    elif kind == "empty_csv":
        path += ".csv"
        open(path, "w").close()
    elif kind == "header_only":
        path += ".csv"
        with open(path, "w") as fh:
            fh.write("a,b,c\n")
    elif kind == "non_numeric":
        path += ".csv"
        with open(path, "w") as fh:
            fh.write("a,b,c\n" + "1,2,x\n" * 4)
    elif kind == "ragged_csv":
        path += ".csv"
        with open(path, "w") as fh:
            fh.write("1,2,3\n4,5\n6,7,8\n")
    elif kind == "bad_extension":
        path += ".json"
        with open(path, "w") as fh:
            fh.write("[1, 2]")
    elif kind == "garbage_npy":
        path += ".npy"
        with open(path, "wb") as fh:
            fh.write(b"not an npy file")
    elif kind == "empty_npz":
        path += ".npz"
        np.savez(path)
    elif kind == "pickled_npz":
        path += ".npz"
        obj = np.empty(N, dtype=object)
        obj[:] = [[i] for i in range(N)]
        np.savez(path, X=obj, y=obj)
    return path


FILE_KINDS = ["pickled", "complex", "three_d", "nan_csv", "empty_csv", "header_only",
              "non_numeric", "ragged_csv", "bad_extension", "garbage_npy", "empty_npz",
              "pickled_npz"]  # fmt: skip

LABELLED_COMMANDS = [
    ["solve", "lmnn", "--k", "1", "--max-iter", "20"],
    ["solve", "lmnn", "--k", "1", "--max-iter", "20", "--variant", "kernel"],
    ["validate", "lmnn", "--k", "1"],
    ["solve", "ssne", "--max-iter", "1", "--n-components", "2"],
    ["solve", "maurer", "--max-iter", "50", "--n-pairs", "20"],
    ["solve", "maurer", "--solver", "hpca", "--n-pairs", "20"],
    ["validate", "maurer", "--n-pairs", "20"],
    ["solve", "aroma", "--n-iter", "50"],
    ["solve", "oasis", "--n-iter", "50"],
]


def _accepts_out(args):
    return args[0] == "solve"


def check_cli_refuses(args, out_dir):
    """Run the CLI in-process: non-zero exit, one ``Error:`` line, no traceback, no output."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = CliRunner().invoke(cli_main, args)
    assert res.exit_code != 0, f"{args} succeeded:\n{res.output}"
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"{args} raised {type(res.exception).__name__}: {res.exception}"
    )
    err = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in res.output
    errors = [ln for ln in err if ln.startswith("Error:")]
    assert len(errors) == 1, f"{args}: stderr {err}"
    if res.exit_code == 1:  # a library error: exactly that one line
        assert err == errors, f"{args}: stderr {err}"
    if out_dir is not None:
        assert not os.path.exists(out_dir), f"{args} wrote {os.listdir(out_dir)}"
    return errors[0]


@FAST
@given(
    cmd=st.sampled_from(LABELLED_COMMANDS),
    kind=st.sampled_from([*FILE_KINDS, "mismatch", "single_class", "nan_labels"]),
    bad_features=st.booleans(),
    data=st.data(),
)
def test_cli_labelled_commands_refuse_bad_files(cmd, kind, bad_features, data):
    with tempfile.TemporaryDirectory() as tmp:
        X, y = _data(0)
        fx, fy = os.path.join(tmp, "X.npy"), os.path.join(tmp, "y.npy")
        np.save(fx, X)
        if kind == "mismatch":
            y = y[:-2]
        elif kind == "single_class":
            y = np.zeros_like(y)
        elif kind == "nan_labels":
            y = y.astype(float)
            y[3] = np.nan
        np.save(fy, y)
        if kind in FILE_KINDS:
            bad = _write_bad_file(tmp, kind, data.draw)
            fx, fy = (bad, fy) if bad_features else (fx, bad)
        out = os.path.join(tmp, "out") if _accepts_out(cmd) else None
        args = [*cmd, "--features", fx, "--labels", fy] + (["--out", out] if out else [])
        check_cli_refuses(args, out)


_BAD_OPTIONS = {
    ("solve", "lmnn"): {"--k": ["0", "-2"], "--mu": ["1.5", "-0.1", "nan"],
                        "--max-iter": ["0"], "--time-limit": ["-1", "0"], "--tol": ["0", "-1"],
                        "--n-passes": ["0"], "--n-components": ["0", "99"], "--pca": ["0", "99"],
                        "--gamma": ["-1", "nan"], "--n-clusters": ["0", "1000"]},
    ("validate", "lmnn"): {"--k": ["0"], "--mu": ["2", "inf"], "--per-class": ["0", "-1", "-3"],
                           "--gamma": ["0"], "--n-clusters": ["0"]},
    ("solve", "ssne"): {"--n-components": ["0"], "--loss-weight": ["-1", "nan"],
                        "--max-iter": ["0"], "--restarts": ["0"],
                        "--n-neighbors": ["0", "-1"], "--tol": ["0"]},
    ("solve", "maurer"): {"--reg-weight": ["0", "-1", "nan"], "--margin": ["0"],
                          "--margin-neg": ["-1"],
                          "--max-iter": ["0"], "--n-pairs": ["0", "1"],
                          "--learning-rate": ["0", "inf"], "--n-components": ["0"],
                          "--c": ["1", "0.5"]},
    ("validate", "maurer"): {"--reg-weight": ["0"], "--margin": ["-1"], "--n-pairs": ["0"],
                             "--max-iter": ["0"]},
    ("solve", "aroma"): {"--r": ["0", "-1", "nan"], "--C": ["0", "-1"], "--n-iter": ["-1"],
                         "--precision-at": ["0", "-3"]},
    ("solve", "oasis"): {"--C": ["0", "-1", "nan"], "--n-iter": ["-1"], "--precision-at": ["0"]},
    ("validate", "aroma"): {"--n-items": ["0", "1", "-5"], "--n-features": ["0"],
                            "--n-triplets": ["0", "-1"], "--C": ["0", "nan"], "--r": ["0"],
                            "--epochs": ["0"]},
    ("solve", "poe"): {"--beta": ["0", "-1", "nan"], "--n-comparisons": ["0", "-1"],
                       "--time-limit": ["0"]},
    ("validate", "poe"): {"--beta": ["0", "-1", "inf"], "--n-per-class": ["0", "1", "-1"],
                          "--n-comparisons": ["0", "-1"]},
    ("datasets",): {"--bogus": ["1"]},
    ("filter",): {"--seed": ["x"]},
}  # fmt: skip
OPTION_CASES = [(cmd, opt) for cmd, opts in _BAD_OPTIONS.items() for opt in opts]
_DATA_ARGS = {
    "lmnn": ["--dataset", "iris", "--max-iter", "20"],
    "ssne": ["--dataset", "iris", "--max-iter", "1"],
    "maurer": ["--dataset", "iris", "--max-iter", "50", "--n-pairs", "20"],
    "aroma": ["--dataset", "iris", "--n-iter", "50"],
    "oasis": ["--dataset", "iris", "--n-iter", "50"],
    "poe": ["--dataset", "digits_taxonomy", "--n-comparisons", "50"],
}


@settings(FAST, max_examples=100 * max(EXPLORE, 1))
@given(case=st.sampled_from(OPTION_CASES), data=st.data())
def test_cli_refuses_bad_options(case, data):
    cmd, opt = case
    value = data.draw(st.sampled_from(_BAD_OPTIONS[cmd][opt]))
    with tempfile.TemporaryDirectory() as tmp:
        args = list(cmd)
        if cmd[0] == "solve":
            args += _DATA_ARGS[cmd[1]]
        if cmd == ("filter",):
            path = os.path.join(tmp, "c.csv")
            with open(path, "w") as fh:
                fh.write("i,j,k,l\n0,1,0,2\n")
            args.append(path)
        if opt == "--per-class":
            args += ["--variant", "kernel"]
        elif opt == "--n-clusters":
            args += ["--variant", "multi"]
        elif opt == "--gamma" and cmd[1] == "lmnn":
            args += ["--variant", "kernel"]
        elif opt == "--c":  # hyperbolic PCA takes no --max-iter (refused as unused)
            args = [a for a in args if a not in ("--max-iter", "50")] + ["--solver", "hpca"]
        elif opt == "--C" and cmd == ("solve", "aroma"):
            args += ["--variant", "oasis"]
        out = os.path.join(tmp, "out") if _accepts_out(cmd) else None
        check_cli_refuses([*args, opt, value] + (["--out", out] if out else []), out)


def _write_comparisons(folder, kind, draw):
    path = os.path.join(folder, f"c_{kind}.csv")
    rows = _triadic(N, draw(st.integers(0, 2**16)))
    head = "i,j,k,l"
    if kind == "negative":
        rows[0, 1] = -draw(st.integers(1, 100))
    elif kind == "too_large":
        rows[0, 1] = N + draw(st.integers(0, 100))
    elif kind == "self_pair":
        rows[0, 1] = rows[0, 0]
    body = "\n".join(",".join(str(v) for v in r) for r in rows)
    if kind == "missing_header":
        text = body
    elif kind == "wrong_header":
        text = "a,b,c,d\n" + body
    elif kind == "wrong_columns":
        text = "i,j,k,l\n" + "\n".join(",".join(str(v) for v in r[:3]) for r in rows)
    elif kind == "non_numeric":
        text = "i,j,k,l\n" + body + "\n1,x,2,3"
    elif kind == "fractional":
        text = "i,j,k,l\n" + body + "\n1.5,2,1,3"
    elif kind == "header_only":
        text = "i,j,k,l\n"
    elif kind == "empty":
        text = ""
    else:
        text = head + "\n" + body
    with open(path, "w") as fh:
        fh.write(text + "\n")
    return path


COMPARISON_KINDS = ["negative", "too_large", "self_pair", "missing_header", "wrong_header",
                    "wrong_columns", "non_numeric", "fractional", "header_only",
                    "empty"]  # fmt: skip


@FAST
@given(
    target=st.sampled_from(["filter", "kernel", "multi", "linear"]),
    kind=st.sampled_from(COMPARISON_KINDS + ["kernel:" + k for k in KERNEL_KINDS + FILE_KINDS]),
    data=st.data(),
)
def test_cli_comparison_commands_refuse_bad_files(target, kind, data):
    with tempfile.TemporaryDirectory() as tmp:
        X, _ = _data(0)
        K = X @ X.T + np.eye(N)
        out = os.path.join(tmp, "out")
        cpath = _write_comparisons(tmp, "ok" if kind.startswith("kernel:") else kind, data.draw)
        if target == "filter":  # no kernel, and no item count: any index >= 0 is valid
            if kind.startswith("kernel:") or kind == "too_large":
                kind = "missing_header" if kind.startswith("kernel:") else "negative"
                cpath = _write_comparisons(tmp, kind, data.draw)
            check_cli_refuses(["filter", cpath, "--out", out], out)
            return
        kpath = os.path.join(tmp, "K.npy")
        np.save(kpath, K)
        fpath = os.path.join(tmp, "F.npy")
        np.save(fpath, X)
        if kind.startswith("kernel:"):
            sub = kind.split(":")[1]
            if sub in KERNEL_KINDS:
                np.save(kpath, _bad_kernel(sub, K, data.draw))
                # any real matrix is valid features: for --kind linear, make them complex or NaN
                F = X + 1j if sub == "complex" else X.copy()
                F[data.draw(st.integers(0, N - 1)), data.draw(st.integers(0, D - 1))] = np.nan
                np.save(fpath, F)
            else:
                kpath = fpath = _write_bad_file(tmp, sub, data.draw)
        args = ["solve", "poe", "--kind", target, "--comparisons", cpath, "--out", out]
        if target == "linear":
            args += ["--features", fpath]
        else:
            args += ["--kernel", kpath] + (["--kernel", kpath] if target == "multi" else [])
        check_cli_refuses(args, out)


PAIR_KINDS = ["negative", "too_large", "nan_r", "bad_r", "wrong_header", "two_columns",
              "non_numeric", "empty", "header_only"]  # fmt: skip


@FAST
@given(cmd=st.sampled_from(["ssne", "maurer"]), kind=st.sampled_from(PAIR_KINDS))
def test_cli_pairs_files_are_checked(cmd, kind):
    with tempfile.TemporaryDirectory() as tmp:
        X, _ = _data(0)
        fx = os.path.join(tmp, "X.npy")
        np.save(fx, X)
        rows = {
            "negative": "-1,2,1",
            "too_large": f"0,{N + 3},1",
            "nan_r": "0,2,nan",
            "bad_r": "0,2,5",
            "non_numeric": "0,b,1",
        }
        text = "i,j,r\n0,1,1\n3,8,-1\n"
        if kind in rows:
            text += rows[kind] + "\n"
        elif kind == "wrong_header":
            text = "a,b,c\n0,1,1\n3,8,-1\n"
        elif kind == "two_columns":
            text = "i,j\n0,1\n3,8\n"
        elif kind == "empty":
            text = ""
        elif kind == "header_only":
            text = "i,j,r\n"
        pth = os.path.join(tmp, "pairs.csv")
        with open(pth, "w") as fh:
            fh.write(text)
        out = os.path.join(tmp, "out")
        extra = ["--max-iter", "1"] if cmd == "ssne" else ["--max-iter", "50"]
        args = ["solve", cmd, "--features", fx, "--pairs", pth, *extra, "--out", out]
        check_cli_refuses(args, out)


_MODEL = {}


def _saved_model():
    """An LMNN model directory written once by ``solve lmnn --out`` (shared by the cases)."""
    if "dir" not in _MODEL:
        _MODEL["tmp"] = tempfile.TemporaryDirectory()
        path = os.path.join(_MODEL["tmp"].name, "model")
        args = ["solve", "lmnn", "--dataset", "iris", "--max-iter", "20", "--out", path]
        res = CliRunner().invoke(cli_main, args)
        assert res.exit_code == 0, res.output
        _MODEL["dir"] = path
    return _MODEL["dir"]


def _break_model(folder, kind):
    """A copy of the saved model with one defect."""
    import json
    import shutil

    path = os.path.join(folder, "broken_model")
    shutil.copytree(_saved_model(), path)
    meta_path = os.path.join(path, "model.json")
    if kind == "no_meta":
        os.remove(meta_path)
    elif kind == "garbage_meta":
        with open(meta_path, "w") as fh:
            fh.write("{not json")
    elif kind == "pickled_array":
        obj = np.empty(3, dtype=object)
        obj[:] = [{}, {}, {}]
        np.save(os.path.join(path, "components.npy"), obj, allow_pickle=True)
    elif kind == "nan_array":
        C = np.load(os.path.join(path, "components.npy"))
        C[0, 0] = np.nan
        np.save(os.path.join(path, "components.npy"), C)
    elif kind == "missing_array":
        os.remove(os.path.join(path, "components.npy"))
    elif kind == "wrong_shape":
        np.save(os.path.join(path, "components.npy"), np.eye(7))
    elif kind == "unknown_kind":
        with open(meta_path) as fh:
            meta = json.load(fh)
        meta["kind"] = "no-such-kind"
        with open(meta_path, "w") as fh:
            json.dump(meta, fh)
    return path


MODEL_KINDS = ["no_meta", "garbage_meta", "pickled_array", "nan_array", "missing_array",
               "wrong_shape", "unknown_kind"]  # fmt: skip


@FAST
@given(
    command=st.sampled_from(["transform", "predict"]),
    kind=st.sampled_from(
        [*FILE_KINDS, "nan", "complex_csv", "wrong_width", *["model:" + k for k in MODEL_KINDS]]
    ),
    out_ext=st.sampled_from([".npy", ".csv"]),
    data=st.data(),
)
def test_cli_apply_commands_refuse_bad_input(command, kind, out_ext, data):
    with tempfile.TemporaryDirectory() as tmp:
        model = _saved_model()
        X, _ = _data(0, d=4)
        path = os.path.join(tmp, "points.npy")
        if kind in FILE_KINDS:
            path = _write_bad_file(tmp, kind, data.draw)
        elif kind == "nan":
            X[data.draw(st.integers(0, N - 1)), data.draw(st.integers(0, 3))] = np.nan
            np.save(path, X)
        elif kind == "complex_csv":
            path = os.path.join(tmp, "points.csv")
            with open(path, "w") as fh:
                fh.write("\n".join(",".join(f"{v}+1j" for v in row) for row in X) + "\n")
        elif kind == "wrong_width":
            np.save(path, X[:, :3])
        else:
            np.save(path, X)
            model = _break_model(tmp, kind.split(":")[1])
        out = os.path.join(tmp, "result" + out_ext)
        check_cli_refuses([command, "--model", model, path, "--out", out], out)


def test_cli_subprocess_refuses_pickled_npy_without_traceback(tmp_path):
    """A real process: the exit status, stderr's single line, and no output directory."""
    obj = np.empty(N, dtype=object)
    obj[:] = [{"row": i} for i in range(N)]
    np.save(tmp_path / "X.npy", obj, allow_pickle=True)
    np.save(tmp_path / "y.npy", _data(0)[1])
    out = tmp_path / "out"
    args = ["solve", "lmnn", "--features", str(tmp_path / "X.npy")]
    args += ["--labels", str(tmp_path / "y.npy"), "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "convexmetric.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:"), proc.stderr
    assert "pickle" in lines[0].lower() or "object" in lines[0].lower()
    assert not out.exists()
