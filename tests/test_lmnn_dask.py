"""LMNN on Dask (issue 12): "local" and "dask" are two executors of one block map.

A module-scoped LocalCluster of two worker processes of two threads each (several block
tasks run at once in one worker, as with `dask worker` defaults); fits on the wine
standard split, a digits subsample and a 60-point iris instance that CLARABEL solves
exactly."""

import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from lmnn_verify import verified_solve  # noqa: E402

from convexmetric import LMNN, datasets  # noqa: E402
from convexmetric.lmnn import solver as S  # noqa: E402
from convexmetric.lmnn.blocks import data as block_data  # noqa: E402
from convexmetric.lmnn.blocks.dask_executor import DaskBackendError, DaskExecutor  # noqa: E402
from convexmetric.lmnn.blocks.data import (  # noqa: E402
    StreamData,
    least_budget,
    row_blocks,
)
from convexmetric.lmnn.blocks.full_check import terms_block  # noqa: E402
from convexmetric.lmnn.blocks.local import LocalExecutor  # noqa: E402
from convexmetric.lmnn.blocks.stream import hinge_block  # noqa: E402
from convexmetric.neighbors import target_neighbors  # noqa: E402
from convexmetric.problems import lmnn as P  # noqa: E402
from convexmetric.problems.lmnn import TooManyTerms  # noqa: E402


@pytest.fixture(scope="module")
def wine():
    Xtr, _, ytr, _ = datasets.load_split("wine")
    _, y = np.unique(ytr, return_inverse=True)
    return Xtr, ytr, y, target_neighbors(Xtr, y, 3)


def test_no_client_is_a_clear_error(wine):
    # defined first: the module's cluster does not exist yet
    with pytest.raises(ValueError):
        distributed.get_client()
    with pytest.raises(ValueError, match="'backend' parameter of LMNN is 'dask' but no"):
        LMNN(backend="dask").fit(wine[0], wine[1])
    with pytest.raises(ValueError, match=r"'backend' parameter of LMNN must be .*'spark'"):
        LMNN(backend="spark").fit(wine[0], wine[1])


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            processes=True, n_workers=2, threads_per_worker=2, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.mark.parametrize("sigma", [None, 0.05])
def test_block_map_is_the_same_on_dask(client, wine, sigma, monkeypatch):

    monkeypatch.setattr(block_data, "TASK_CELLS", 0)  # a task per block
    X, _, y, T = wine
    data = StreamData(X, y, T)
    blocks = row_blocks(y, 16)
    ex = DaskExecutor(client)
    handle = ex.scatter(data)
    L = np.random.default_rng(0).normal(size=(X.shape[1], X.shape[1])) * 0.3
    local = LocalExecutor().map_blocks(hinge_block, blocks, data, L, sigma, chunk=64)
    remote = ex.map_blocks(hinge_block, blocks, handle, L, sigma, chunk=64)
    assert len(remote) == len(blocks)
    for a, b in zip(local, remote):  # same function, same inputs: the same numbers
        assert a["value"] == b["value"] and a["lam"] == b["lam"] and a["count"] == b["count"]
        np.testing.assert_array_equal(a["G"], b["G"])

    # and they add up to eq. (14)'s push term
    M = L.T @ L
    f = 0.5 * np.sum(S.pull_matrix(X, T) * M) + 0.5 * sum(p["value"] for p in remote)
    if sigma is None:
        assert abs(f - P.objective(M, X, T, y, 0.5)) <= 1e-10 * f


@pytest.mark.parametrize("limit", ["MAX_TASKS", "TASK_CELLS"])
def test_blocks_grouped_per_task_add_up_to_the_same_sums(client, wine, monkeypatch, limit):

    X, _, y, T = wine
    data, blocks = StreamData(X, y, T), row_blocks(y, 16)
    # three tasks: at most 3, or each at least 4 blocks' cells (4 · 16 rows × n)
    monkeypatch.setattr(block_data, "MAX_TASKS", 3 if limit == "MAX_TASKS" else 256)
    monkeypatch.setattr(block_data, "TASK_CELLS", 0 if limit == "MAX_TASKS" else 64 * len(y))
    assert len(blocks) == 10  # (groups of 4, 4 and 2 blocks)
    ex = DaskExecutor(client)
    L = np.random.default_rng(1).normal(size=(X.shape[1], X.shape[1])) * 0.3
    parts = ex.map_blocks(hinge_block, blocks, ex.scatter(data), L, 0.05)
    local = LocalExecutor().map_blocks(hinge_block, blocks, data, L, 0.05)
    assert len(parts) == 3 < len(local)
    assert sum(p["count"] for p in parts) == sum(p["count"] for p in local)
    for key in ("value", "lam", "G"):
        a, b = sum(p[key] for p in parts), sum(p[key] for p in local)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())


def test_only_partial_sums_travel_per_evaluation(client, wine, monkeypatch):
    # the data stays in the workers' stores: Dask's own counter of the bytes workers
    # send (gathered results and worker-to-worker copies) sees only the d×d sums

    monkeypatch.setattr(block_data, "TASK_CELLS", 0)  # a task per block
    X, _, y, _ = wine
    rng = np.random.default_rng(0)
    X = np.vstack([X + 0.1 * rng.normal(size=X.shape) for _ in range(8)])
    y = np.tile(y, 8)
    T = target_neighbors(X, y, 3)
    blocks = row_blocks(y, 128)
    ex = DaskExecutor(client)
    handle = ex.scatter(StreamData(X, y, T))
    L = np.eye(X.shape[1])
    ex.map_blocks(hinge_block, blocks, handle, L, None)

    def outgoing():
        counts = client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total)
        return sum(counts.values())

    before = outgoing()
    for _ in range(3):
        ex.map_blocks(hinge_block, blocks, handle, L, None)
    per_eval = (outgoing() - before) / 3
    assert 0 < per_eval <= len(blocks) * (X.shape[1] ** 2 * 8 + 1024) < X.nbytes / 4
    # the executor's own count of the payload: the d×d sums and three numbers per task
    # back, L per task out; below what Dask counted (its framing on top)
    info = ex.traffic_info()
    d2 = X.shape[1] ** 2 * 8
    assert len(blocks) * d2 <= info["bytes_received_per_evaluation"] <= per_eval
    assert info["bytes_sent_per_evaluation"] >= len(blocks) * d2
    assert info["cluster_evaluations"] == 4 and info["cluster_checks"] == 0  # with the warm-up


def test_full_check_terms_are_the_same_on_dask(client, wine):
    X, _, y, T = wine
    data, blocks = StreamData(X, y, T), row_blocks(y, 16)
    L = np.random.default_rng(2).normal(size=(X.shape[1], X.shape[1])) * 0.3
    ex = DaskExecutor(client)
    handle = ex.scatter(data)
    (local,) = LocalExecutor().map_terms(terms_block, blocks, data, L)
    # the violated triplets are those of the exact (CVXPY-validated) hinge_terms
    I, J, L_, _ = P.hinge_terms(L.T @ L, X, T, y, components=L)
    key = lambda a, b, c: np.sort((np.int64(a) * len(y) + b) * len(y) + c)  # noqa: E731
    np.testing.assert_array_equal(key(local["I"], local["J"], local["L"]), key(I, J, L_))
    # on the cluster: with a budget of exactly the count (the tasks above their share
    # keep their triplets on the worker until the counts are in), then again: the second
    # check moves no keys (each task sends what changed since its last report)
    for budget in (local["count"], None):
        parts = ex.map_terms(terms_block, blocks, handle, L, max_terms=budget)
        got = [np.concatenate([p[k] for p in parts]) for k in ("I", "J", "L")]
        np.testing.assert_array_equal(key(*got), key(I, J, L_))
    assert ex.keys_moved == local["count"]
    # a nearby point: only the difference travels, the client rebuilds the whole set
    L2 = L * 1.02
    (local2,) = LocalExecutor().map_terms(terms_block, blocks, data, L2)
    parts = ex.map_terms(terms_block, blocks, handle, L2)
    got = [np.concatenate([p[k] for p in parts]) for k in ("I", "J", "L")]
    np.testing.assert_array_equal(key(*got), key(local2["I"], local2["J"], local2["L"]))
    assert 0 < ex.keys_moved - local["count"] < local2["count"]
    with pytest.raises(TooManyTerms):
        ex.map_terms(terms_block, blocks, handle, L, max_terms=local["count"] - 1)
    with pytest.raises(TooManyTerms):
        LocalExecutor().map_terms(terms_block, blocks, data, L, max_terms=local["count"] - 1)


def test_padded_targets_give_the_same_triplets_and_sums_on_dask(client, wine, monkeypatch):
    """A class cut to two members at k = 3: its rows are padded with the point itself
    (no target); the workers list hinge_terms' triplets and the local sums."""

    monkeypatch.setattr(block_data, "TASK_CELLS", 0)  # a task per block: the blocks' sums
    X, _, y, _ = wine
    keep = (y != 2) | (np.cumsum(y == 2) <= 2)
    X, y = X[keep], y[keep]
    T = target_neighbors(X, y, 3)
    assert (T == np.arange(len(y))[:, None]).sum() == 4
    data, blocks = StreamData(X, y, T), row_blocks(y, 16)
    L = np.random.default_rng(3).normal(size=(X.shape[1], X.shape[1])) * 0.3
    ex = DaskExecutor(client)
    handle = ex.scatter(data)
    I, J, L_, _ = P.hinge_terms(L.T @ L, X, T, y, components=L)
    assert np.any(y[I] == 2) and not np.any(I == J)
    parts = ex.map_terms(terms_block, blocks, handle, L)
    got = [np.concatenate([p[k] for p in parts]) for k in ("I", "J", "L")]
    key = lambda a, b, c: np.sort((np.int64(a) * len(y) + b) * len(y) + c)  # noqa: E731
    np.testing.assert_array_equal(key(*got), key(I, J, L_))
    for sigma in (None, 0.05):
        local = LocalExecutor().map_blocks(hinge_block, blocks, data, L, sigma)
        remote = ex.map_blocks(hinge_block, blocks, handle, L, sigma)
        for a, b in zip(local, remote):
            assert np.isfinite(b["value"]) and a["value"] == b["value"]
            np.testing.assert_array_equal(a["G"], b["G"])


def test_partial_check_terms_are_the_same_on_dask(client, wine, monkeypatch):
    """A partial check (the pairs with a stale end) on the cluster: the local executor's
    blocks of stale rows travel with the tasks, at least two tasks a worker; the
    triplets are the local executor's in its order, and a full check after it still
    sends its deltas against the last full one."""
    from convexmetric.lmnn.blocks.evaluator import StreamingEvaluator

    X, _, y, T = wine
    monkeypatch.setattr(block_data, "MAX_TASKS", 3)
    L = np.random.default_rng(5).normal(size=(X.shape[1], X.shape[1])) * 0.3
    stale = np.random.default_rng(5).uniform(size=len(y)) < 0.3
    pull = P.pull_matrix(X, T)
    local = StreamingEvaluator(X, y, T, 0.5, pull, memory_limit=None)
    ev = StreamingEvaluator(X, y, T, 0.5, pull, executor=DaskExecutor(client))
    key = lambda a, b, c: np.sort((np.int64(a) * len(y) + b) * len(y) + c)  # noqa: E731
    full = ev.terms(L)
    want = local.partial_terms(L, stale)
    assert 0 < len(want[0]) < len(full[0]) and np.all(stale[want[0]] | stale[want[2]])
    for got, expected in zip(ev.partial_terms(L, stale), want):
        np.testing.assert_array_equal(got, expected)  # in the same order
    with pytest.raises(TooManyTerms):
        ev.partial_terms(L, stale, max_terms=len(want[0]) - 1)
    moved = ev.executor.keys_moved
    np.testing.assert_array_equal(key(*ev.terms(L)), key(*full))
    assert ev.executor.keys_moved == moved  # nothing changed since the last full check
    info = ev.executor.traffic_info()
    assert info["cluster_partial_checks"] == 1 and info["cluster_checks"] == 2  # (completed)
    assert info["bytes_sent_per_partial_check"] >= len(y)  # the stale mask
    assert info["tasks_per_partial_check"] >= min(2 * 2, len(local.blocks))  # two workers


def _digits_subsample():
    """The first 300 training points of the digits split on their 16 principal axes
    (the full 64 dimensions cost a minute of Dask round trips under load)."""
    Xtr, _, ytr, _ = datasets.load_split("digits")
    X = Xtr[:300] - Xtr[:300].mean(0)
    return X @ np.linalg.svd(X, full_matrices=False)[2][:16].T, ytr[:300]


@pytest.mark.parametrize("name", ["wine", "digits"])
def test_lmnn_dask_runs_the_local_algorithm(client, wine, name, verified, monkeypatch):
    from convexmetric.lmnn import memo

    monkeypatch.setattr(memo, "PARTIAL_MIN_N", 0)  # partial checks on small data too
    X, ylab = (wine[0], wine[1]) if name == "wine" else _digits_subsample()
    local = LMNN(backend="local").fit(X, ylab)
    dask_fit = LMNN(backend="dask").fit(X, ylab)  # the default tol
    a, b = local.result_, dask_fit.result_
    assert a.info["mode"] == b.info["mode"] == "active_set"
    assert a.info["full_checks"] == b.info["full_checks"] > 0
    # bytes per evaluation and per check, reported for the Dask fit only
    assert b.info["bytes_received_per_check"] > 0 and "bytes_sent_per_check" not in a.info
    # a round trip to the cluster per search over all triplets (the cost model's count;
    # a full check the last search's memo answers makes none)
    assert a.info["searches"] == b.info["searches"] >= b.info["cluster_checks"] > 0
    assert b.info["cluster_evaluations"] == 0  # (the list's evaluations run in the client)
    # the searches of the stale rows alone, on the cluster as in this process
    assert a.info["partial_checks"] == b.info["partial_checks"]
    assert b.info.get("cluster_partial_checks", 0) == b.info["partial_checks"]
    assert name == "wine" or b.info["partial_checks"] > 0
    # the cost model's work counts (benchmarks/model_dask.py), the same on both executors
    searched = len(X) * a.info["searches"]
    assert a.info["rows_searched"] == b.info["rows_searched"] >= searched
    assert name == "wine" or b.info["rows_searched"] > searched  # (the stale rows)
    assert a.info["list_terms_evaluated"] == b.info["list_terms_evaluated"] > 0
    assert b.info["tasks_per_check"] >= 1 and "tasks_per_check" not in a.info
    # the same iterates up to the order of the exact objective's block sums
    assert abs(a.objective - b.objective) <= 1e-6 * a.objective
    assert b.status == "optimal"
    verified(dask_fit, X, ylab)
    assert abs(a.lower_bound - b.lower_bound) <= 1e-6 * a.objective
    scale = np.abs(local.metric_).max()
    np.testing.assert_allclose(dask_fit.metric_, local.metric_, rtol=0, atol=1e-6 * scale)


def test_lmnn_dask_client_lanes_are_the_same_fit(client, wine):
    """``n_jobs`` on Dask: the lanes of the client's list work, the fit unchanged."""
    X, y = wine[0], wine[1]
    one = LMNN(backend="dask", n_jobs=1).fit(X, y)
    two = LMNN(backend="dask", n_jobs=2).fit(X, y)
    assert (one.result_.info["threads"], two.result_.info["threads"]) == (1, 2)
    assert one.result_.status == two.result_.status == "optimal"
    assert one.objective_ == two.objective_
    np.testing.assert_array_equal(one.metric_, two.metric_)


def test_dask_certificate_is_below_the_exact_optimum(client, iris60_exact):
    X, y, T, value = iris60_exact
    res = S.solve(X, y, T, 0.5, executor=DaskExecutor(client))
    assert res.info["mode"] == "active_set" and res.status == "optimal"
    verified_solve(res, X, y, T)
    assert res.lower_bound <= value * (1 + 1e-7) and res.objective >= value * (1 - 1e-7)
    assert abs(res.objective - value) <= (1e-4 + 1e-7) * value  # tol + CLARABEL's accuracy
    assert P.objective(res.matrix, X, T, y, 0.5) == pytest.approx(res.objective, rel=1e-10)


def test_streaming_mode_on_dask_when_the_budget_says_so(client, iris60_exact):
    X, y, T, value = iris60_exact
    budget = least_budget(*X.shape, T.shape[1])  # the active list cannot hold the terms
    ref = S.solve(X, y, T, 0.5, memory_limit=budget, tol=1e-3)
    res = S.solve(X, y, T, 0.5, memory_limit=budget, tol=1e-3, executor=DaskExecutor(client))
    assert ref.info["mode"] == res.info["mode"] == "streaming"
    # one block function, the same partial sums added in the same order: bit for bit
    assert res.objective == ref.objective and res.lower_bound == ref.lower_bound
    np.testing.assert_array_equal(res.matrix, ref.matrix)
    for key in ("i", "j", "l", "lam"):  # the certificate's multipliers, listed on the workers
        np.testing.assert_array_equal(res.certificate[key], ref.certificate[key])
    assert res.lower_bound <= value * (1 + 1e-7) <= res.objective * (1 + 1e-7)
    assert res.status == "optimal"
    verified_solve(res, X, y, T, tol=1e-3)


def _short_fit(executor, X, y, T, on_call=None):
    """Three callback calls (phase 1, then σ-stages of 15 L-BFGS steps), deterministic."""
    calls = []

    def callback(*args):
        calls.append(args)
        if on_call is not None:
            on_call(len(calls))
        return len(calls) >= 3

    return S.solve(
        X, y, T, 0.5, executor=executor, callback=callback, refine_settings={"stage_iter": 15}
    )


def test_restart_and_killed_worker_mid_fit(client, wine):
    X, _, y, T = wine
    ref = _short_fit(None, X, y, T)
    ex = DaskExecutor(client, timeout=60)

    done = []

    def fault(calls):
        if calls == 1:  # every worker restarted: the workers' data is lost
            done.append("restart")
            client.restart()
        elif calls == 2:  # one worker process killed mid-evaluation
            done.append("kill")
            pid = next(iter(client.run(os.getpid).values()))
            threading.Timer(0.005, os.kill, (pid, signal.SIGKILL)).start()

    try:
        res = _short_fit(ex, X, y, T, fault)
    except DaskBackendError as exc:  # allowed: one clear error, never a wrong metric
        assert "Dask cluster" in str(exc)
        return
    assert done == ["restart", "kill"] and ex.rescatters >= 1
    assert res.objective == pytest.approx(ref.objective, rel=1e-12)
    np.testing.assert_allclose(res.matrix, ref.matrix, rtol=0, atol=1e-10)


def test_lost_cluster_times_out(wine):
    X, _, y, T = wine
    with (
        distributed.LocalCluster(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        ex = DaskExecutor(c, timeout=2, retries=0)
        handle = ex.scatter(StreamData(X, y, T))
        blocks = row_blocks(y, 64)
        ex.map_blocks(hinge_block, blocks, handle, np.eye(X.shape[1]), None)
        cluster.scale(0)
        while c.scheduler_info()["workers"]:
            time.sleep(0.05)
        with pytest.raises(DaskBackendError, match="Dask cluster"):
            ex.map_blocks(hinge_block, blocks, handle, np.eye(X.shape[1]), None)


@pytest.mark.parametrize(
    ("value", "words"),
    [("local:0", "local:N with N an int in the range [1, inf)"), ("host:8786", "an address")],
)
def test_cli_rejects_bad_scheduler(value, words):
    from click.testing import CliRunner

    from convexmetric.cli.main import main

    out = CliRunner().invoke(main, ["solve", "lmnn", "--dataset", "wine", "--scheduler", value])
    assert out.exit_code != 0 and "Traceback" not in out.output
    assert "'--scheduler' option must be" in out.output and words in out.output


def test_cli_scheduler_is_single_metric_only():
    from click.testing import CliRunner

    from convexmetric.cli.main import main

    args = ["solve", "lmnn", "--dataset", "wine", "--scheduler", "local:1", "--pca", "3"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code != 0 and "--scheduler runs single-metric LMNN only" in out.output


def test_dask_client_local_cluster_is_closed():
    from convexmetric.lmnn.blocks.dask_executor import dask_client

    with dask_client("local:1") as c:
        assert len(c.scheduler_info()["workers"]) == 1
        cluster = c.cluster
    assert cluster.status.name == "closed"


def test_prediction_by_test_row_blocks_on_dask(client, wine, monkeypatch):
    from convexmetric.lmnn.blocks import dask_executor as lmnn_dask
    from convexmetric.lmnn.blocks import predict as predict_blocks

    X, ylab, _, _ = wine
    rng = np.random.default_rng(0)
    Xq = np.vstack([X + 0.3 * X.std(0) * rng.normal(size=X.shape) for _ in range(4)])
    local = LMNN(tol=1e-3).fit(X, ylab)
    remote = LMNN(tol=1e-3, backend="dask")  # fitted locally, predicting on the cluster
    for name in ("components_", "metric_", "classes_", "targets_", "_X", "_y", "n_features_in_",
                 "predict_k_"):  # fmt: skip
        setattr(remote, name, getattr(local, name))
    monkeypatch.setattr(predict_blocks, "PREDICT_ROWS", 100)  # 5 blocks of test rows
    calls = []
    real = lmnn_dask.DaskExecutor.map_chunks
    monkeypatch.setattr(lmnn_dask.DaskExecutor, "map_chunks",
                        lambda self, fn, chunks, *a, **k: calls.append(len(chunks))
                        or real(self, fn, chunks, *a, **k))  # fmt: skip
    np.testing.assert_array_equal(remote.predict(Xq), local.predict(Xq))
    np.testing.assert_array_equal(remote.energy_predict(Xq), local.energy_predict(Xq))
    assert calls == [5, 5]
    # the energy rule is eq. (15) of the module that computes it for every estimator
    from convexmetric.lmnn.energy import energy_predict

    ref = energy_predict(X, local._y, local.targets_, Xq[:50], local.components_, 0.5)
    np.testing.assert_array_equal(local.energy_predict(Xq[:50]), local.classes_[ref])


def test_time_limit_ends_the_wait_for_the_workers(client):
    # an evaluation under way when the fit's time is up: the executor stops waiting,
    # cancels its tasks and raises TimeUp (once); the next evaluation runs
    from convexmetric.optim.deadline import Alarm, TimeUp

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(3000, 8)), rng.integers(0, 3, 3000)
    data, blocks = StreamData(X, y, target_neighbors(X, y, 3)), row_blocks(y, 64)
    ex = DaskExecutor(client)
    handle = ex.scatter(data)
    ex.alarm = Alarm(0.0)
    with pytest.raises(TimeUp):
        ex.map_blocks(hinge_block, blocks, handle, np.eye(8), None)
    parts = ex.map_blocks(hinge_block, blocks, handle, np.eye(8), None)
    assert sum(p["count"] for p in parts) > 0
