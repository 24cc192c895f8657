"""LMNN's block work in several threads of this process (``n_jobs``): the lanes give
the blocks' results of one thread, in the same order, and stop together."""

import numpy as np
import pytest
from click.testing import CliRunner

from convexmetric import LMNN, datasets
from convexmetric._input_checks import check_n_jobs
from convexmetric.cli.main import main
from convexmetric.lmnn.blocks.data import (
    StreamData,
    Workspace,
    least_budget,
    plan_blocks,
    row_blocks,
)
from convexmetric.lmnn.blocks.full_check import terms_block
from convexmetric.lmnn.blocks.local import LocalExecutor, _omp_bound, default_lanes
from convexmetric.lmnn.blocks.stream import hinge_block
from convexmetric.lmnn.constants import LANES_FROM_ROWS
from convexmetric.neighbors import target_neighbors
from convexmetric.optim.deadline import Alarm, TimeUp
from convexmetric.problems.lmnn import TooManyTerms


@pytest.fixture(scope="module")
def digits_blocks():
    Xtr, _, ytr, _ = datasets.load_split("digits")
    _, y = np.unique(ytr, return_inverse=True)
    X = Xtr / 16.0
    T = target_neighbors(X, y, 3)
    A = np.random.default_rng(0).normal(size=(12, X.shape[1]))
    return StreamData(X, y, T), row_blocks(y, 40), 0.6 * A / np.sqrt(X.shape[1])


@pytest.fixture(scope="module")
def wine():
    Xtr, _, ytr, _ = datasets.load_split("wine")
    return Xtr, ytr


@pytest.mark.parametrize("threads", [2, 3])
def test_lanes_find_the_same_triplets_in_the_same_order(digits_blocks, threads):
    data, blocks, L = digits_blocks
    assert len(blocks) > 2 * threads
    (one,) = LocalExecutor().map_terms(terms_block, blocks, data, L, margin=0.1)
    (many,) = LocalExecutor(threads).map_terms(terms_block, blocks, data, L, margin=0.1)
    assert one["count"] == many["count"] > 1000
    for key in ("I", "J", "L"):
        np.testing.assert_array_equal(one[key], many[key])


def test_lanes_add_the_same_sums_bit_for_bit(digits_blocks):
    data, blocks, L = digits_blocks
    one = LocalExecutor().map_blocks(hinge_block, blocks, data, L, 0.05)
    many = LocalExecutor(2).map_blocks(hinge_block, blocks, data, L, 0.05)
    assert len(one) == len(many) == len(blocks)
    for a, b in zip(one, many):
        assert (a["value"], a["lam"], a["count"]) == (b["value"], b["lam"], b["count"])
        np.testing.assert_array_equal(a["G"], b["G"])


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_folded_sums_are_the_mapped_sums_in_block_order(digits_blocks, threads):
    from convexmetric.lmnn.blocks.evaluator import _add_sums

    data, blocks, L = digits_blocks
    parts = LocalExecutor().map_blocks(hinge_block, blocks, data, L, 0.05)
    order = []  # the order the fold sees the blocks in: theirs, whatever the lanes'

    def fold(total, part):
        order.append(part["count"])
        return _add_sums(total, part)

    start = {"value": 0.0, "lam": 0.0, "count": 0, "G": None}
    got = LocalExecutor(threads).fold_blocks(fold, start, hinge_block, blocks, data, L, 0.05)
    assert order == [p["count"] for p in parts]
    want = {"value": 0.0, "lam": 0.0, "count": 0, "G": None}
    for p in parts:
        want = _add_sums(want, p)
    assert (got["value"], got["lam"], got["count"]) == (want["value"], want["lam"], want["count"])
    np.testing.assert_array_equal(got["G"], want["G"])


def test_lanes_overflow_exactly_where_one_thread_does(digits_blocks):
    data, blocks, L = digits_blocks
    (part,) = LocalExecutor().map_terms(terms_block, blocks, data, L)
    count = part["count"]
    (same,) = LocalExecutor(2).map_terms(terms_block, blocks, data, L, max_terms=count)
    assert same["count"] == count and not same["overflow"]
    for ex in (LocalExecutor(), LocalExecutor(2)):
        with pytest.raises(TooManyTerms):
            ex.map_terms(terms_block, blocks, data, L, max_terms=count - 1)


def test_a_lane_error_or_the_alarm_stops_every_lane(digits_blocks):
    data, blocks, L = digits_blocks
    seen = []

    def failing(rows, data, L, ws=None):
        seen.append(len(seen))
        if len(seen) == 3:
            raise FloatingPointError("block 3")
        return {}

    with pytest.raises(FloatingPointError, match="block 3"):
        LocalExecutor(2).map_blocks(failing, blocks, data, L)
    assert len(seen) < len(blocks)
    ex = LocalExecutor(2)
    ex.alarm = Alarm(0.0)
    with pytest.raises(TimeUp):
        ex.map_terms(terms_block, blocks, data, L)


def test_forks_read_one_projection_and_keep_their_own_buffers(digits_blocks):
    data, _, L = digits_blocks
    ws = Workspace()
    fork = ws.fork()
    P = fork.project(data, L)
    assert ws.project(data, L) is P and fork.screen(P) is ws.screen(P)
    assert fork.scratch("G", (2, 3), np.float32) is not ws.scratch("G", (2, 3), np.float32)


def test_n_jobs_reads_as_scikit_learn_does(monkeypatch):
    assert check_n_jobs(None) == 1 and check_n_jobs(3) == 3
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert (check_n_jobs(-1), check_n_jobs(-2), check_n_jobs(-9)) == (4, 3, 1)
    for bad in (0, 1.5, "2", True):
        with pytest.raises(ValueError, match="'n_jobs' parameter of LMNN must be None or"):
            check_n_jobs(bad)


def test_default_lanes_are_the_cores_that_keep_one_lanes_blocks(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr("convexmetric.lmnn.blocks.local.OMP_BOUND", None)
    assert default_lanes(60_000, 164, 3, None) == 4
    assert default_lanes(LANES_FROM_ROWS - 1, 164, 3, None) == 1  # too short to pay
    two_gib = 2**31  # one lane plans (288, ...) at 60k rows, (139, ...) at 240k
    assert [default_lanes(n, 164, 3, two_gib) for n in (60_000, 240_000)] == [3, 2]
    for n in (60_000, 240_000):  # the most lanes whose share plans one lane's blocks
        rows = [plan_blocks(n, 164, 3, two_gib // t)[0] for t in (1, 2, 3, 4)]
        lanes = default_lanes(n, 164, 3, two_gib)
        assert rows[lanes - 1] == rows[0] > rows[lanes]
    assert default_lanes(60_000, 164, 3, 3 * least_budget(60_000, 164, 3)) == 1  # tight
    monkeypatch.setattr("convexmetric.lmnn.blocks.local.OMP_BOUND", 2)  # a worker's
    assert default_lanes(60_000, 164, 3, None) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as a LocalCluster sets it in its client
    assert default_lanes(60_000, 164, 3, None) == 2 and _omp_bound() == 1


def test_lmnn_with_lanes_is_the_same_fit(wine):
    X, y = wine
    one = LMNN(n_jobs=1).fit(X, y)
    for lanes in (2, None):  # None: the default lanes
        two = LMNN(n_jobs=lanes).fit(X, y)
        assert one.result_.status == two.result_.status == "optimal"
        assert one.objective_ == two.objective_
        assert one.result_.iterations == two.result_.iterations
        np.testing.assert_array_equal(one.metric_, two.metric_)
        np.testing.assert_array_equal(one.predict(X), two.predict(X))
        assert two.result_.info["threads"] == (2 if lanes else default_lanes(*X.shape, 3, 2**31))
    with pytest.raises(ValueError, match="'n_jobs' parameter of LMNN sets the threads"):
        LMNN(n_jobs=2, device="torch:cpu").fit(X, y)


def test_lanes_in_the_streaming_mode_certify_the_same_optimum(wine):
    X, y = wine
    budget = 2 * least_budget(*X.shape, 3)  # the least for two lanes: streaming
    one = LMNN(memory_limit=budget, n_jobs=1).fit(X, y)
    two = LMNN(memory_limit=budget, n_jobs=2).fit(X, y)
    assert one.result_.info["mode"] == two.result_.info["mode"] == "streaming"
    assert one.result_.status == two.result_.status == "optimal"
    assert abs(one.objective_ - two.objective_) <= 2e-4 * one.objective_


def test_cli_n_jobs(tmp_path):
    args = ["solve", "lmnn", "--dataset", "wine", "--json"]
    out = CliRunner().invoke(main, [*args, "--n-jobs", "2"])
    assert out.exit_code == 0, out.output
    bad = CliRunner().invoke(main, [*args, "--n-jobs", "2", "--variant", "multi"])
    assert bad.exit_code == 2 and "--n-jobs" in bad.output


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_lists_products_in_lanes_are_the_same_values(dtype):
    from convexmetric.linalg import in_lanes, row_distances, target_distances

    rng = np.random.default_rng(1)
    n, d = 3000, 40
    X = rng.normal(size=(n, d)).astype(dtype)
    Z = X @ rng.normal(size=(d, 12)).astype(dtype)
    a, b = rng.integers(0, n, 20000), rng.integers(0, n, 20000)
    T = rng.integers(0, n, (n, 3))
    for threads in (2, 3):
        np.testing.assert_array_equal(row_distances(Z, a, b, threads=threads),
                                      row_distances(Z, a, b))  # fmt: skip
        np.testing.assert_array_equal(target_distances(Z, T, threads=threads),
                                      target_distances(Z, T))  # fmt: skip
        P, out = rng.normal(size=(d, 12)).astype(dtype), np.empty((n, 12), dtype)
        one = np.empty_like(out)
        for lanes, Z in ((threads, out), (1, one)):
            in_lanes(n, 500, lanes, lambda s, e, Z=Z, P=P: np.matmul(X[s:e], P, out=Z[s:e]))
        np.testing.assert_array_equal(out, one)


def test_target_neighbours_in_lanes_are_the_same(digits_blocks):
    from convexmetric.neighbors import target_neighbors

    data, _, _ = digits_blocks
    one = target_neighbors(data.X, data.y, 3, block_size=32)
    np.testing.assert_array_equal(target_neighbors(data.X, data.y, 3, block_size=32, threads=2),
                                  one)  # fmt: skip
    np.testing.assert_array_equal(one, data.targets)
