"""LMNN under a memory budget (issue 11): the streaming mode is exact, certified, chosen
by ``memory_limit``; the scale data sets split by source item."""

import numpy as np
import pytest
from click.testing import CliRunner
from lmnn_verify import lmnn_report, verified_solve

from convexmetric import LMNN, datasets
from convexmetric.cli.main import main
from convexmetric.lmnn import solver as S
from convexmetric.lmnn.blocks.data import StreamData, least_budget, plan_blocks, row_blocks
from convexmetric.lmnn.blocks.evaluator import StreamingEvaluator
from convexmetric.lmnn.blocks.local import LocalExecutor
from convexmetric.lmnn.blocks.stream import hinge_block
from convexmetric.lmnn.constants import BLOCK_BUDGET, BYTES_PER_TERM, DEFAULT_MEMORY_LIMIT
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.lmnn.settings import LMNNSettings
from convexmetric.lmnn.terms import pull_matrix
from convexmetric.neighbors import target_neighbors
from convexmetric.optim.factor import Factored
from convexmetric.optim.subgradient import SubgradientSettings
from convexmetric.problems import lmnn as P

TINY = 1 << 14  # bytes: a budget of 85 listed triplets (the oracle alone: no least plan)
#: the least budget of the iris data sets here (the smallest plan: blocks of 8 rows, about
#: 460 listed triplets), which stream
LEAST = 90_000


def _random_metric(d, seed):
    A = np.random.default_rng(seed).normal(size=(d, d)) * 0.4
    return A.T @ A


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("residual", [None, 0.9])
def test_streaming_equals_active_list(wine_instance, seed, residual, monkeypatch):
    """Both modes give eq. (14) and its gradient; ``residual``: the candidate steps search
    on the few axes of ``Z`` leaving out that much of its spread (:mod:`.blocks.screen`:
    more candidates, the same terms)."""
    if residual is not None:
        from convexmetric.lmnn.blocks import screen

        monkeypatch.setattr(screen, "SCREEN_RESIDUAL", residual)
    X, y, T = wine_instance
    M = _random_metric(X.shape[1], seed)
    active = ActiveSetOracle(X, y, T, 0.5)  # its first call is a full check
    stream = ActiveSetOracle(X, y, T, 0.5, memory_limit=TINY)
    fa, Ga = active(M)
    fs, Gs = stream(M)
    assert active.active.mode == "active_set" and stream.active.mode == "streaming"
    assert abs(fa - fs) <= 1e-10 * abs(fa)
    assert np.abs(Ga - Gs).max() <= 1e-10 * np.abs(Ga).max()
    assert abs(stream.objective(M) - P.objective(M, X, T, y, 0.5)) <= 1e-10 * fa
    # the smoothed objective (prox centre 0) and the certificate's dual matrix
    for sigma in (1.0, 0.01):
        fa, Ga = active.smooth(M, sigma)
        fs, Gs = stream.smooth(M, sigma)
        assert abs(fa - fs) <= 1e-10 * abs(fa)
        assert np.abs(Ga - Gs).max() <= 1e-10 * np.abs(Ga).max()
        Sa, Ss = active.dual_matrix(M, sigma), stream.dual_matrix(M, sigma)
        assert np.abs(Sa - Ss).max() <= 1e-10 * np.abs(Sa).max()
        lb_a, lb_s = active.lower_bound(M, sigma), stream.lower_bound(M, sigma)
        assert abs(lb_a - lb_s) <= 1e-10 * max(abs(lb_a), 1.0)


def test_block_sums_do_not_depend_on_the_blocking(wine_instance):
    X, y, T = wine_instance
    L = np.linalg.cholesky(_random_metric(X.shape[1], 3) + np.eye(X.shape[1])).T
    data, ex = StreamData(X, y, T), LocalExecutor()
    per_class = ex.map_blocks(hinge_block, row_blocks(y, 10**6), data, L, 0.1)
    small_blocks = ex.map_blocks(hinge_block, row_blocks(y, 7), data, L, 0.1, chunk=300)
    assert len(per_class) == 3 and len(small_blocks) > 3
    assert {len(set(y[b])) for b in row_blocks(y, 7)} == {1}
    value = sum(p["value"] for p in per_class)
    assert abs(sum(p["value"] for p in small_blocks) - value) <= 1e-10 * value
    assert sum(p["count"] for p in small_blocks) == sum(p["count"] for p in per_class) > 0
    G, G1 = sum(p["G"] for p in small_blocks), sum(p["G"] for p in per_class)
    assert np.abs(G - G1).max() <= 1e-10 * np.abs(G1).max()


def test_plan_blocks_respects_the_budget():
    rows, chunk = plan_blocks(100_000, 64, 3, 1 << 30)
    assert rows * 100_000 * 16 <= (1 << 30) // 2 and chunk * 8 * (2 * 64 + 26) <= (1 << 30) // 8
    assert plan_blocks(10, 2, 1, None) == (512, 1 << 18)
    assert plan_blocks(1000, 2, 1, 1)[0] >= 8  # never empty blocks
    # past BLOCK_BUDGET a budget goes to the list, not to larger blocks
    assert plan_blocks(100_000, 64, 3, 8 << 30) == plan_blocks(100_000, 64, 3, BLOCK_BUDGET)
    assert (
        plan_blocks(100_000, 64, 3, BLOCK_BUDGET // 2)[0]
        < plan_blocks(100_000, 64, 3, BLOCK_BUDGET)[0]
    )


def test_default_memory_limit_is_one_fixed_number():
    # the estimator, the solver's settings and the CLI share one default, fixed (not read
    # from the machine: the mode and the blocks, and so the iterates, are the same anywhere)
    assert LMNN().get_params()["memory_limit"] == LMNNSettings().memory_limit
    assert DEFAULT_MEMORY_LIMIT == 2 << 30
    assert (
        LMNN(memory_limit=None).fit(*datasets.load_split("iris")[::2]).result_.info["memory_limit"]
        is None
    )


@pytest.mark.parametrize("memory_limit", [None, "least"])
def test_certificate_is_valid_in_both_modes(iris60_exact, memory_limit):
    X, y, T, value = iris60_exact
    if memory_limit == "least":  # the smallest plan's budget: streaming
        memory_limit = least_budget(*X.shape, T.shape[1])
    res = S.solve(X, y, T, 0.5, memory_limit=memory_limit)
    assert res.info["mode"] == ("streaming" if memory_limit else "active_set")
    assert res.lower_bound <= value * (1 + 1e-7)  # below CLARABEL's optimum
    assert res.objective >= value * (1 - 1e-7)
    assert res.status == "optimal"
    verified_solve(res, X, y, T)
    assert abs(res.objective - value) <= (1e-4 + 1e-7) * value  # tol + CLARABEL's accuracy


def test_switch_mid_run_stays_certified(iris60_exact):
    """A budget between the first list and the final one: the switch happens mid-run."""
    X, y, T, value = iris60_exact
    budget = BYTES_PER_TERM * 340  # (its least budget is 339 terms' worth)
    assert budget >= least_budget(*X.shape, T.shape[1])
    res = S.solve(X, y, T, 0.5, memory_limit=budget)
    assert res.info["mode"] == "streaming" and res.info["switched_after_calls"] > 0
    assert res.info["stream_evaluations"] > 0
    by_map = res.info["block_seconds_by_map"]  # the block work's time, by the map that ran it
    assert by_map["terms"] > 0 and by_map["sums"] > 0 and set(by_map) >= {"partial", "multipliers"}
    assert sum(by_map.values()) == pytest.approx(res.info["block_seconds"], rel=1e-9)
    assert res.lower_bound <= value * (1 + 1e-7) <= res.objective * (1 + 2e-7)
    assert res.status == "optimal"
    verified_solve(res, X, y, T)


def test_streaming_evaluator_runs_on_any_executor(wine_instance):
    class Recording(LocalExecutor):
        calls = 0

        def map_blocks(self, fn, blocks, data, *args, **kwargs):
            Recording.calls += 1
            return super().map_blocks(fn, blocks, data, *args, **kwargs)

        def fold_blocks(self, fold, total, fn, blocks, data, *args, **kwargs):
            Recording.calls += 1
            return super().fold_blocks(fold, total, fn, blocks, data, *args, **kwargs)

    X, y, T = wine_instance
    pull = P.pull_matrix(X, T)
    ev = StreamingEvaluator(X, y, T, 0.5, pull, memory_limit=1 << 20, executor=Recording())
    M = _random_metric(X.shape[1], 4)
    L = P.components_from_metric(M)
    assert abs(ev.objective(M, L) - P.objective(M, X, T, y, 0.5)) <= 1e-10 * ev.objective(M, L)
    assert Recording.calls == 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, 2.0**20, "1G", True])
def test_bad_memory_limit_is_rejected(bad):
    X, y = datasets.load("iris")
    with pytest.raises(ValueError, match=r"'memory_limit' parameter of LMNN .*\[1, inf\)"):
        LMNN(memory_limit=bad).fit(X, y)
    with pytest.raises(ValueError, match="'memory_limit'"):
        S.solve(X, y, np.zeros((len(y), 1), int), 0.5, memory_limit=bad)


def test_estimator_and_cli_report_the_mode():
    X, y = datasets.load("iris")
    assert LMNN(memory_limit=LEAST).fit(X, y).result_.info["mode"] == "streaming"
    assert LMNN().fit(X, y).result_.info["mode"] == "active_set"
    runner = CliRunner()
    out = runner.invoke(main, ["solve", "lmnn", "--dataset", "iris", "--memory-limit", "90K",
                               "--json"])  # fmt: skip
    assert out.exit_code == 0 and '"mode": "streaming"' in out.output
    bad = runner.invoke(main, ["solve", "lmnn", "--dataset", "iris", "--memory-limit", "lots"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output and "--memory-limit" in bad.output
    zero = runner.invoke(main, ["solve", "lmnn", "--dataset", "iris", "--memory-limit", "0"])
    assert zero.exit_code != 0 and "'memory_limit'" in zero.output


def test_split_by_source_keeps_sources_apart():
    rng = np.random.default_rng(0)
    source = np.repeat(np.arange(50), 7)
    y = (source % 5)[:]
    X = rng.normal(size=(len(y), 3))
    Xtr, Xte, ytr, _yte = datasets.split_by_source(X, y, source, scale=False)
    rows_tr = {tuple(r) for r in Xtr}
    src_tr = {s for s, r in zip(source, X) if tuple(r) in rows_tr}
    src_te = set(source) - src_tr
    assert len(Xtr) == 7 * len(src_tr) and len(Xte) == 7 * len(src_te) == 7 * 15
    assert sorted(np.bincount(ytr)) == [7 * 7] * 5  # stratified by the source's label


def test_augmented_digits():
    X, y, source = datasets.augmented_digits()
    assert X.shape == (59301, 64) and X.min() >= 0 and X.max() <= 16
    assert np.array_equal(np.bincount(source), np.full(1797, 33))
    base = datasets.load("digits")[0]
    assert np.array_equal(X[::33], base)  # the first variant of each source is the image
    assert np.array_equal(y[::33], datasets.load("digits")[1])
    again = datasets.augmented_digits()[0]
    assert np.array_equal(X, again)  # deterministic
    Xtr, Xte, _ytr, _yte = datasets.load_split("augmented_digits")
    assert len(Xtr) >= 40_000 and len(Xtr) + len(Xte) == len(X)
    # no source image on both sides: rebuild each side's sources from the raw rows
    from sklearn.preprocessing import StandardScaler

    raw_tr, raw_te, _, _ = datasets.split_by_source(X, y, source, scale=False)
    assert np.allclose(StandardScaler().fit(raw_tr).transform(raw_tr), Xtr)
    key = {r.tobytes(): s for r, s in zip(X, source)}
    src_tr = {key[r.tobytes()] for r in raw_tr}
    src_te = {key[r.tobytes()] for r in raw_te}
    assert not src_tr & src_te and len(src_tr) + len(src_te) == 1797
    assert "augmented_digits" in datasets.names()


def test_the_factored_view_goes_back_to_the_factor_it_evaluated(wine_instance):
    """``best_seen`` in the factor is the factor the oracle was given at that point (the
    subgradient driver goes back to it after a refused step), not a square root of ``M``."""
    X, y, T = wine_instance
    L = np.random.default_rng(0).normal(size=(4, X.shape[1]))
    oracle = ActiveSetOracle(X, y, T, 0.5)
    f, _ = oracle(L.T @ L, components=L)  # a full check first: exact, the least value seen
    seen = Factored(oracle).best_seen
    assert seen[0] == f and np.array_equal(seen[1], L)


def test_collapsed_trial_point_is_rejected_without_switching(wine_instance):
    X, y, T = wine_instance
    d = X.shape[1]
    M = S.solve(X, y, T, 0.5, refine=False, max_iter=100).matrix  # a good metric
    n_terms = len(P.hinge_terms(M, X, T, y)[0])
    oracle = ActiveSetOracle(X, y, T, 0.5, memory_limit=BYTES_PER_TERM * (2 * n_terms))
    f, _ = oracle(M)  # a checked point: its terms fit in the list, its value is exact
    assert oracle.active.mode == "active_set" and np.isfinite(f)
    assert oracle.best_seen[0] == f and np.array_equal(oracle.best_seen[1], M)
    assert f == pytest.approx(P.objective(M, X, T, y, 0.5), rel=1e-10)
    oracle.active.schedule.now(0)  # the next call checks all triplets
    f_collapsed, _ = oracle(1e-9 * np.eye(d))  # every pair an impostor: way past the budget
    assert f_collapsed == np.inf and oracle.active.mode == "active_set"
    # a point whose terms do not fit and whose value is above the best seen: a step too
    # far (the list hid the rise), rejected; the drivers re-evaluate (a new version)
    M_dense = 0.6 * M  # about 3× the terms, objective +40%
    assert len(P.hinge_terms(M_dense, X, T, y)[0]) > 2 * n_terms
    version = oracle.version
    oracle.active.schedule.now(0)
    assert oracle(M_dense)[0] == np.inf and oracle.active.mode == "active_set"
    assert oracle.version > version


def test_a_better_point_whose_terms_do_not_fit_switches_to_streaming(wine_instance):
    """Past the budget at a value below every exact value seen: the iterates have entered
    the region where the list cannot hold the terms, and the oracle streams for good."""
    X, y, T = wine_instance
    M = S.solve(X, y, T, 0.5, refine=False, max_iter=100).matrix
    n_terms = len(P.hinge_terms(M, X, T, y)[0])
    M_far, M_dense = 4.0 * M, 0.6 * M  # fewer terms and a larger value; more terms
    assert P.objective(M_dense, X, T, y, 0.5) < P.objective(M_far, X, T, y, 0.5)
    assert len(P.hinge_terms(M_far, X, T, y)[0]) <= n_terms
    oracle = ActiveSetOracle(X, y, T, 0.5, memory_limit=BYTES_PER_TERM * (2 * n_terms))
    oracle(M_far)
    oracle.active.schedule.now(0)
    f_dense, _ = oracle(M_dense)
    assert oracle.active.mode == "streaming"
    assert abs(f_dense - P.objective(M_dense, X, T, y, 0.5)) <= 1e-10 * f_dense


def test_a_capped_evaluation_past_its_cap_is_inf_though_no_block_is(wine_instance):
    """The cap bounds the whole sum (every block below it, their total above it), and
    the fold stops once its running total passes it."""
    X, y, T = wine_instance
    ev = StreamingEvaluator(X, y, T, 0.5, pull_matrix(X, T), memory_limit=1 << 16)
    assert len(ev.blocks) >= 4
    M = _random_metric(X.shape[1], 0)
    L = np.linalg.cholesky(M).T
    parts = [hinge_block(b, ev.data, L, grad=False)["value"] for b in ev.blocks]
    f = ev.objective(M, L)
    f_pull = f - 0.5 * sum(parts)
    cap = f_pull + 0.5 * (max(parts) + 0.5 * (sum(parts) - max(parts)))
    assert ev.evaluate(M, L, cap=cap)[0] == np.inf
    assert ev.evaluate(M, L, cap=f + 1.0)[0] == pytest.approx(f, rel=1e-12)
    runs = []

    def one(rows, data, ws=None):
        runs.append(rows)
        return 1

    total = LocalExecutor().fold_blocks(
        lambda t, p: t + p, 0, one, list(range(10)), None, until=lambda t: t >= 3
    )
    assert total == 3 and len(runs) == 3


def test_overflow_at_the_bound_switches_instead_of_raising():
    """A check due inside ``lower_bound`` (an accepted point) that overflows the budget
    switches to streaming; it used to raise ``TooManyTerms`` out of the fit (a short phase 1
    hands the refinement a point whose first stage's list outgrows the budget)."""
    Xtr, _, ytr, _ = datasets.load_split("wine")
    X, y = Xtr[:133], ytr[:133]
    T = target_neighbors(X, y, 3)
    short = SubgradientSettings(max_iter=3, rtol=1e-4, patience=20, step_scale=0.3)
    res = S.solve(X, y, T, 0.5, phase1_settings=short, memory_limit=1 << 20)
    assert res.info["mode"] == "streaming"
    assert abs(res.objective - P.objective(res.matrix, X, T, y, 0.5)) <= 1e-9 * res.objective
    report = lmnn_report(res, X, y, T)  # the bound recomputed from the certificate
    assert report.lower_bound == pytest.approx(res.lower_bound, rel=1e-9)
    assert (res.status == "optimal") == report.verified, report.reason
