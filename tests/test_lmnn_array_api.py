"""LMNN's block functions on the array API: the same triplets, sums and fits as NumPy.

The array-API path runs here on the CPU, through the standard's reference namespace
(``array-api-strict``, in the test extra) and through PyTorch's CPU build where it is
installed; each is skipped with its reason where its package is missing. A GPU is
never needed (``benchmarks/bench_gpu.py`` runs the same code there).
"""

import importlib.util

import numpy as np
import pytest

from convexmetric import LMNN, verify
from convexmetric.lmnn.blocks.data import StreamData, row_blocks
from convexmetric.lmnn.blocks.device import DeviceExecutor, check_device, resolve
from convexmetric.lmnn.blocks.evaluator import StreamingEvaluator
from convexmetric.lmnn.blocks.full_check import terms_block
from convexmetric.lmnn.blocks.stream import hinge_block
from convexmetric.neighbors import target_neighbors
from convexmetric.problems.lmnn import pull_matrix


def _available(device):
    package = {"torch:cpu": "torch", "array_api_strict": "array_api_strict"}[device]
    if importlib.util.find_spec(package) is None:
        return pytest.param(device, marks=pytest.mark.skip(reason=f"{package} is not installed"))
    if importlib.util.find_spec("array_api_compat") is None:
        return pytest.param(device, marks=pytest.mark.skip(reason="array-api-compat missing"))
    return device


DEVICES = [_available("array_api_strict"), _available("torch:cpu")]


def _data(n=500, d=5, classes=4, seed=0, small=None):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    if small is not None:  # class 0 cut to `small` members: fewer targets, padded rows
        y[np.flatnonzero(y == 0)[small:]] = 1
    X = rng.normal(size=(n, d)) + 0.7 * y[:, None]
    T = target_neighbors(X, y, 3)
    return X, y, T, 0.6 * rng.normal(size=(d, d))


def _keys(I, J, L, n):
    return np.sort((np.asarray(I, np.int64) * n + J) * n + L)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("residual", [None, 0.6])
def test_full_check_blocks_find_the_same_triplets(device, residual, monkeypatch):
    """``residual``: the search on a few principal axes of ``Z`` (:mod:`.blocks.screen`),
    on the device as on the host: the same triplets."""
    from convexmetric.lmnn.blocks import screen

    if residual is not None:
        monkeypatch.setattr(screen, "SCREEN_RESIDUAL", residual)
    X, y, T, L = _data()
    host = StreamData(X, y, T)
    dev = DeviceExecutor(device).scatter(host)
    blocks = row_blocks(y, 64)
    assert len(blocks) > 4
    total = 0
    for rows in blocks:
        for margin in (0.0, 1e-3):
            a = terms_block(rows, host, L, margin=margin)
            b = terms_block(rows, dev, L, margin=margin)
            assert a["count"] == b["count"]
            assert isinstance(b["I"], np.ndarray) and b["I"].dtype == a["I"].dtype
            np.testing.assert_array_equal(_keys(a["I"], a["J"], a["L"], len(y)),
                                          _keys(b["I"], b["J"], b["L"], len(y)))  # fmt: skip
            total += a["count"]
    assert total > 1000  # a metric with many violations: the test has something to find
    capped = terms_block(blocks[0], dev, L, max_terms=3)
    assert capped["overflow"] and capped["I"] is None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("sigma", [None, 0.3])
def test_streamed_sums_and_multipliers_agree(device, sigma):
    X, y, T, L = _data(seed=1)
    host = StreamData(X, y, T)
    dev = DeviceExecutor(device).scatter(host)
    for rows in row_blocks(y, 100)[:4]:
        a = hinge_block(rows, host, L, sigma, triplets=True, chunk=700)
        b = hinge_block(rows, dev, L, sigma, triplets=True, chunk=700)
        assert a["count"] == b["count"] > 0
        assert b["value"] == pytest.approx(a["value"], rel=1e-12)
        assert b["lam"] == pytest.approx(a["lam"], rel=1e-12)
        np.testing.assert_allclose(b["G"], a["G"], rtol=1e-11, atol=1e-9 * np.abs(a["G"]).max())
        ka, kb = (_keys(*t[:3], len(y)) for t in (a["triplets"], b["triplets"]))
        np.testing.assert_array_equal(ka, kb)
        la = a["triplets"][3][np.argsort(_keys(*a["triplets"][:3], len(y)))]
        lb = b["triplets"][3][np.argsort(_keys(*b["triplets"][:3], len(y)))]
        np.testing.assert_allclose(lb, la, rtol=0, atol=1e-12)  # λ = clip(z/σ): z to rounding


@pytest.mark.parametrize("device", DEVICES)
def test_padded_targets_give_the_same_triplets_and_sums(device):
    """A class of two members at k = 3: its rows are padded with the point itself; the
    device's full check and streamed sums (hinge and smoothed) match NumPy's, and no
    triplet goes through a padded slot."""
    X, y, T, L = _data(seed=3, small=2)
    assert (T == np.arange(len(y))[:, None]).sum() == 4
    host = StreamData(X, y, T)
    dev = DeviceExecutor(device).scatter(host)
    small = [rows for rows in row_blocks(y, 64) if y[rows[0]] == 0]
    for rows in small + row_blocks(y, 64)[1:3]:
        a, b = terms_block(rows, host, L), terms_block(rows, dev, L)
        np.testing.assert_array_equal(_keys(a["I"], a["J"], a["L"], len(y)),
                                      _keys(b["I"], b["J"], b["L"], len(y)))  # fmt: skip
        assert not np.any(a["I"] == a["J"])
        for sigma in (None, 0.3):
            a = hinge_block(rows, host, L, sigma, triplets=True)
            b = hinge_block(rows, dev, L, sigma, triplets=True)
            assert a["count"] == b["count"] and np.isfinite(b["value"])
            assert b["value"] == pytest.approx(a["value"], rel=1e-12)
            np.testing.assert_allclose(b["G"], a["G"], rtol=1e-11,
                                       atol=1e-9 * max(np.abs(a["G"]).max(), 1.0))  # fmt: skip
            assert not np.any(b["triplets"][0] == b["triplets"][1])
    assert hinge_block(small[0], host, L)["count"] > 0  # the padded rows have hinge terms


@pytest.mark.parametrize("device", DEVICES)
def test_streaming_evaluator_on_a_device_matches_numpy(device):
    X, y, T, L = _data(seed=2)
    pull = pull_matrix(X, T)
    cpu = StreamingEvaluator(X, y, T, 0.5, pull)
    gpu = StreamingEvaluator(X, y, T, 0.5, pull, executor=DeviceExecutor(device))
    M = L.T @ L
    assert gpu.objective(M, L) == pytest.approx(cpu.objective(M, L), rel=1e-12)
    f1, G1 = cpu.evaluate(M, L, 0.2)
    f2, G2 = gpu.evaluate(M, L, 0.2)
    assert f2 == pytest.approx(f1, rel=1e-12)
    np.testing.assert_allclose(G2, G1, rtol=1e-10, atol=1e-10 * np.abs(G1).max())
    for a, b in zip(cpu.terms(L), gpu.terms(L)):
        np.testing.assert_array_equal(np.sort(a), np.sort(b))
    assert gpu.seconds > 0 and gpu.executor.name == "device"


@pytest.mark.parametrize("device", DEVICES)
def test_partial_check_on_a_device_matches_numpy(device):
    """A partial check (the pairs with a stale end) finds the host's triplets."""
    X, y, T, L = _data(seed=4)
    pull = pull_matrix(X, T)
    stale = np.random.default_rng(4).uniform(size=len(y)) < 0.2
    cpu = StreamingEvaluator(X, y, T, 0.5, pull).partial_terms(L, stale)
    gpu = StreamingEvaluator(X, y, T, 0.5, pull, executor=DeviceExecutor(device))
    got = gpu.partial_terms(L, stale)
    assert len(cpu[0]) > 0 and np.all(stale[cpu[0]] | stale[cpu[2]])
    np.testing.assert_array_equal(_keys(*got, len(y)), _keys(*cpu, len(y)))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("memory_limit", [None, 1 << 20])
def test_lmnn_on_a_device_fits_the_cpu_optimum_and_verifies(device, memory_limit):
    X, y, _, _ = _data(n=240, d=4, seed=3)
    kw = dict(memory_limit=memory_limit, random_state=0)
    cpu = LMNN(**kw).fit(X, y)
    dev = LMNN(device=device, **kw).fit(X, y)
    mode = dev.result_.info["mode"]
    assert mode == cpu.result_.info["mode"] == ("active_set" if memory_limit is None
                                                else "streaming")  # fmt: skip
    assert dev.result_.status == "optimal"
    assert dev.objective_ == pytest.approx(cpu.objective_, rel=dev.tol)
    assert dev.result_.info["block_executor"] == "device"
    v = verify(dev, X, y)
    assert v.verified, v.reason


def test_device_strings_are_checked_naming_the_argument():
    assert check_device(None) is None and check_device("cpu") is None
    for ok in ("cuda", "cuda:1", "torch:cpu", "torch:cuda:0", "cupy", "cupy:2"):
        assert check_device(ok) == ok
    for bad in ("gpu", "cuda:x", "torch", 3):
        with pytest.raises(ValueError, match="'device' parameter of LMNN"):
            check_device(bad)
    with pytest.raises(ValueError, match="'device' parameter of LMNN"):
        LMNN(device="tpu").fit(*_data(n=60)[:2])


def test_device_with_dask_is_refused():
    X, y = _data(n=60)[:2]
    with pytest.raises(ValueError, match="'backend' must be 'local' with a device"):
        LMNN(device="array_api_strict", backend="dask").fit(X, y)


def _gpu_here():
    return importlib.util.find_spec("torch") is not None and __import__("torch").cuda.is_available()


@pytest.mark.skipif(_gpu_here(), reason="a GPU is here")
def test_no_gpu_gives_a_clear_error():
    with pytest.raises((ImportError, RuntimeError), match=r"device='cuda'.*(CuPy|CUDA|cupy)"):
        resolve("cuda")
    X, y = _data(n=60)[:2]
    with pytest.raises((ImportError, RuntimeError), match="device='cuda"):
        LMNN(device="cuda:0").fit(X, y)


@pytest.mark.parametrize("device", DEVICES)
def test_active_list_distances_on_a_device(device):
    from convexmetric.linalg import row_distances, target_distances

    X, y, T, L = _data(seed=4)
    ex = DeviceExecutor(device)
    data = ex.scatter(StreamData(X, y, T))
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(y), 300), rng.integers(0, len(y), 300)
    Z, Dt, d = ex.list_distances(data, L, a, b)
    Zh = X @ L.T
    np.testing.assert_allclose(Z, Zh, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Dt, target_distances(Zh, T), rtol=1e-12)
    np.testing.assert_allclose(d, row_distances(Zh, a, b), rtol=1e-12)
    kept = ex._pairs
    ex.list_distances(data, 2 * L, a, b)
    assert ex._pairs is kept  # the same list: its device copies are reused


@pytest.mark.parametrize("device", DEVICES)
def test_target_neighbours_screened_on_a_device_are_the_hosts(device):
    # the float32 screen runs on the device (its own rounding, small blocks), the
    # exact decision on the host: the same targets, duplicates and small classes included
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(300, 6)), rng.integers(0, 3, 300)
    X[rng.integers(0, 300, 60)] = X[rng.integers(0, 300, 60)]
    y[np.flatnonzero(y == 2)[2:]] = 1  # class 2: two members, one target, padded rows
    screen = DeviceExecutor(device, block_memory=1 << 15).screen_targets
    for k in (1, 3, 5):
        assert np.array_equal(target_neighbors(X, y, k, screen=screen), target_neighbors(X, y, k))
    m = LMNN(k=3, device=device, max_iter=5)
    with pytest.warns(Warning):  # the small class, then max_iter
        m.fit(X, y)
    assert np.array_equal(m.targets_, target_neighbors(X, y, 3))


@pytest.mark.parametrize("device", [_available("array_api_strict")])
def test_transform_returns_the_inputs_namespace(device):
    """``transform`` of an array-API array is one of its namespace (the fit accepts them
    and stays there); NumPy arrays and lists give NumPy arrays (issue 65)."""
    import array_api_strict as xps

    from convexmetric import KernelLMNN
    from convexmetric.metric_learn import LMNN as MetricLearnLMNN

    X, y = _data(n=40, d=3)[:2]
    Xs = xps.asarray(X)
    for est in (LMNN(k=2), KernelLMNN(k=2), MetricLearnLMNN(n_neighbors=2)):
        est.fit(Xs, xps.asarray(y))
        Z = est.transform(Xs)
        assert isinstance(Z, type(Xs)) and Z.dtype == xps.float64
        assert isinstance(est.transform(X), np.ndarray)
        assert isinstance(est.transform(X.tolist()), np.ndarray)
        np.testing.assert_allclose(np.asarray(Z), est.transform(X), rtol=1e-12)
        assert isinstance(est.fit_transform(Xs, xps.asarray(y)), type(Xs))
