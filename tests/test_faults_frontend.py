"""Issue 67, the front end's faults: nothing lost, nothing hung, nothing silently wrong.

Each test is one case of the issue, failing before its fix: ``--out`` into a directory of
the user's files (1), columns checked by name (2), Maurer's SGD diverging (3), BLAS
thread limits of concurrent fits (5), an ``.npy`` header too large to allocate (11) and
Ctrl-C (12).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from click.testing import CliRunner

from convexmetric.cli.main import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line_failure(res):
    assert res.exit_code not in (0, None), res.output
    assert "Traceback" not in res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


# ---- 1. --out never deletes or overwrites the user's files -----------------------------


def _users_files(d):
    (d / "src").mkdir(parents=True)
    (d / "report.json").write_text('{"mine": true}')
    (d / "src" / "code.py").write_text("print('mine')\n")
    (d / "NOTES.txt").write_text("my notes\n")


def _snapshot(d):
    return {
        os.path.relpath(os.path.join(root, f), d): open(os.path.join(root, f), "rb").read()
        for root, _, files in os.walk(d)
        for f in files
    }


@pytest.mark.parametrize(
    "args",
    [
        ["solve", "lmnn", "--dataset", "iris", "--max-iter", "5"],
        ["solve", "ssne", "--dataset", "iris", "--max-iter", "1"],
        ["solve", "oasis", "--dataset", "bow", "--max-iter", "5"],
    ],
)
def test_out_keeps_a_users_directory_intact(tmp_path, args):
    d = tmp_path / "results"
    _users_files(d)
    before = _snapshot(d)
    line = one_line_failure(run(*args, "--out", d))
    assert "--out" in line and str(d) in line and "NOTES.txt" in line
    assert "refusing to replace" in line
    assert _snapshot(d) == before
    assert sorted(os.listdir(tmp_path)) == ["results"]  # no temporary leftovers


def test_out_replaces_only_its_own_previous_output(tmp_path):
    d = tmp_path / "m"
    assert run("solve", "lmnn", "--dataset", "iris", "--max-iter", "5", "--out", d).exit_code == 0
    assert "convexmetric-output.json" in os.listdir(d)
    again = run("solve", "lmnn", "--dataset", "iris", "--max-iter", "5", "--out", d)
    assert again.exit_code == 0, again.output  # ours: replaced
    (d / "NOTES.txt").write_text("added by the user")
    line = one_line_failure(run("solve", "lmnn", "--dataset", "iris", "--out", d))
    assert "NOTES.txt" in line
    assert (d / "NOTES.txt").read_text() == "added by the user"


def test_library_save_refuses_a_lookalike_directory(tmp_path):
    from convexmetric.model_io import write_directory

    d = tmp_path / "d"
    d.mkdir()
    (d / "report.json").write_text("{}")
    (d / "metric.npy").write_bytes(b"not ours")
    with pytest.raises(ValueError, match="refusing to replace"):
        write_directory(d, {"metric.npy": np.eye(2)})
    assert (d / "metric.npy").read_bytes() == b"not ours"


def test_file_outputs_never_overwrite_their_inputs(tmp_path):
    d = tmp_path / "m"
    assert run("solve", "lmnn", "--dataset", "iris", "--max-iter", "5", "--out", d).exit_code == 0
    new = tmp_path / "new.csv"
    np.savetxt(new, np.ones((3, 4)), delimiter=",")
    before = new.read_bytes()
    for cmd in ("transform", "predict"):
        line = one_line_failure(run(cmd, "--model", d, new, "--out", new))
        assert "--out" in line and "input" in line
        assert new.read_bytes() == before
        line = one_line_failure(run(cmd, "--model", d, new, "--out", d / "metric.npy"))
        assert "input directory" in line
    assert run("transform", "--model", d, new, "--out", tmp_path / "z.csv").exit_code == 0
    assert run("transform", "--model", d, new, "--out", tmp_path / "z.csv").exit_code == 0
    comparisons = tmp_path / "c.csv"
    comparisons.write_text("i,j,k,l\n0,1,0,2\n1,2,0,3\n")
    before = comparisons.read_bytes()
    line = one_line_failure(run("filter", comparisons, "--out", comparisons))
    assert comparisons.read_bytes() == before and "--out" in line


# ---- 2. columns checked by name, as scikit-learn does ---------------------------------


def _estimators():
    from convexmetric import (
        LMNN,
        OASIS,
        SSNE,
        DiagonalAROMA,
        KernelLMNN,
        MultiMetricLMNN,
        OperatorSimilarity,
    )
    from convexmetric.preprocessing import DiameterScaler

    return [
        (LMNN(max_iter=30), "predict"),
        (KernelLMNN(max_iter=20), "transform"),
        (MultiMetricLMNN(max_iter=4), "predict"),
        (OperatorSimilarity(max_iter=50, n_pairs=100, random_state=0), "transform"),
        (SSNE(max_iter=2, random_state=0), "transform"),
        (OASIS(max_iter=100, random_state=0), "similarity"),
        (DiagonalAROMA(max_iter=100, random_state=0), "similarity"),
        (DiameterScaler(), "transform"),
    ]


@pytest.fixture(scope="module")
def wine_frame():
    pd = pytest.importorskip("pandas")
    from convexmetric import datasets

    X, y = datasets.load("wine")
    X = (X - X.mean(0)) / X.std(0)
    return pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]), y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "est, method", _estimators(), ids=[type(e).__name__ for e, _ in _estimators()]
)
def test_reordered_or_renamed_columns_raise(wine_frame, est, method):
    import warnings

    X, y = wine_frame
    cols = list(X.columns)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*feature names")  # none at fit
        est.fit(X, y)
    assert est.feature_names_in_.dtype == object
    np.testing.assert_array_equal(est.feature_names_in_, cols)
    assert est.n_features_in_ == len(cols)
    apply = getattr(est, method)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*feature names")
        np.testing.assert_array_equal(apply(X), apply(X.to_numpy()))  # same columns: fine
    with pytest.raises(ValueError, match="another order"):
        apply(X[cols[::-1]])
    with pytest.raises(ValueError, match="unseen at fit: 'g0'"):
        apply(X.rename(columns={"f0": "g0"}))
    if hasattr(est, "score"):
        with pytest.raises(ValueError, match="another order"):
            est.score(X[cols[::-1]], y)
    est.fit(X.to_numpy(), y)
    assert not hasattr(est, "feature_names_in_")  # an array fit forgets earlier names
    with pytest.warns(UserWarning, match="fitted without feature names"):
        apply(X)


def test_poe_records_item_names(wine_frame):
    from convexmetric import POE
    from convexmetric.comparisons import Comparisons

    X, _ = wine_frame
    X = X.iloc[:12, :4]
    C = Comparisons.from_array(np.array([[0, 1, 0, 2], [1, 2, 0, 3], [3, 4, 0, 5]]), n_items=12)
    m = POE(max_iter=50).fit(C, X)
    np.testing.assert_array_equal(m.feature_names_in_, list(X.columns))
    with pytest.raises(ValueError, match="another order"):
        m.transform(X[list(X.columns)[::-1]])


# ---- 3. Maurer's SGD: no divergence at the defaults, a clear error when it diverges ----


@pytest.fixture(scope="module")
def digits_standardised():
    from convexmetric import datasets

    X, y = datasets.load("digits")
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0), y


@pytest.mark.parametrize("seed", [0, 1])
def test_sgd_defaults_learn_on_standardised_digits(digits_standardised, seed):
    import warnings

    from convexmetric import OperatorSimilarity

    X, y = digits_standardised
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy overflow
        m = OperatorSimilarity(random_state=seed, max_iter=40_000).fit(X, y)
    res = m.result_
    assert res.status == "completed", res.status  # SGD: no certified claim here
    assert res.info["diverged_at"] is None
    assert res.info["step_size"] < res.info["learning_rate"]  # scaled to the data
    # from ~0.93 at the start; the certified optimum of seed 0's pairs is 0.3065
    assert m.objective_ < 0.4 * res.history[0]
    assert m.train_risk_ < 0.2


def test_sgd_that_diverges_says_so(digits_standardised):
    import warnings

    from convexmetric import OperatorSimilarity

    X, y = digits_standardised
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=r"diverged.*Lower 'learning_rate'"):
            OperatorSimilarity(learning_rate=5.0, random_state=0, max_iter=10_000).fit(X, y)


def test_sgd_step_is_tables_on_the_papers_scale():
    """On inputs of diameter ≤ 1 the step is θ itself (Table 1, unchanged)."""
    from convexmetric import OperatorSimilarity, datasets

    X, y = datasets.load("iris")
    X = X / (2 * np.linalg.norm(X - X.mean(0), axis=1).max())
    m = OperatorSimilarity(random_state=0, max_iter=2000).fit(X, y)
    assert m.result_.info["step_size"] == m.learning_rate


# ---- 5. BLAS thread limits: shared by concurrent fits, never leaked ---------------------


def _blas_threads():
    from threadpoolctl import threadpool_info

    return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_concurrent_fits_keep_their_limit_and_restore_the_process(digits_standardised):
    import threading

    pytest.importorskip("threadpoolctl")
    from threadpoolctl import threadpool_limits

    from convexmetric import LMNN
    from convexmetric.progress import observe

    X, y = digits_standardised
    X, y = X[:600], y[:600]

    def fit():
        return LMNN(max_iter=40, tol=1e-9).fit(X, y).metric_

    with threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        if outside in ([], [1]):
            pytest.skip("no BLAS library that takes two threads")
        alone = fit()
        a_running, b_running, a_done = threading.Event(), threading.Event(), threading.Event()
        out, seen = {}, []

        def first():
            def hold(*_):  # stay inside the fit until the second one has started
                a_running.set()
                b_running.wait(30)

            with observe(hold):
                out["a"] = fit()
            a_done.set()

        def second():
            def watch(*_):  # from its first iteration on, while the first fit ends
                b_running.set()
                a_done.wait(30)
                seen.append(_blas_threads())

            a_running.wait(30)
            with observe(watch):
                out["b"] = fit()

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert a_done.is_set() and seen
        assert all(s == [1] for s in seen), seen  # one BLAS thread to its end
        np.testing.assert_array_equal(out["a"], alone)
        np.testing.assert_array_equal(out["b"], alone)
        assert _blas_threads() == outside  # the process's limit is back


def test_a_fit_with_another_limit_waits_for_the_lease():
    import threading

    pytest.importorskip("threadpoolctl")
    import convexmetric
    from convexmetric._threads import one_blas_thread

    inside, order = threading.Event(), []

    def other():
        inside.wait(30)
        with convexmetric.config_context(blas_threads=None), one_blas_thread():
            order.append("None")

    t = threading.Thread(target=other)
    t.start()
    with one_blas_thread():
        inside.set()
        t.join(0.3)  # it cannot enter while this limit holds
        order.append("1")
    t.join(30)
    assert order == ["1", "None"]


# ---- 11. an .npy header that claims more than the file holds ---------------------------


def _lying_npy(path, shape=(10**6, 10**6)):
    with open(path, "wb") as fh:
        header = {"descr": "<f8", "fortran_order": False, "shape": shape}
        np.lib.format.write_array_header_1_0(fh, header)
        fh.write(np.zeros(4).tobytes())


def test_huge_npy_header_as_features_is_refused(tmp_path):
    x, y = tmp_path / "x.npy", tmp_path / "y.csv"
    _lying_npy(x)
    y.write_text("0\n1\n")
    for cmd in (["solve", "lmnn"], ["validate", "lmnn"]):
        line = one_line_failure(run(*cmd, "--features", x, "--labels", y))
        assert str(x) in line and "(1000000, 1000000)" in line and "truncated" in line
    import zipfile

    with zipfile.ZipFile(tmp_path / "lie.npz", "w") as zf:  # the same lie inside an .npz
        zf.writestr("X.npy", x.read_bytes())
    line = one_line_failure(run("solve", "lmnn", "--features", tmp_path / "lie.npz", "--labels", y))
    assert "lie.npz" in line and "truncated" in line


def test_huge_npy_header_in_a_model_is_refused(tmp_path):
    from convexmetric.model_io import load_model

    d = tmp_path / "m"
    assert run("solve", "lmnn", "--dataset", "iris", "--max-iter", "5", "--out", d).exit_code == 0
    _lying_npy(d / "metric.npy")
    with pytest.raises(ValueError, match=r"metric\.npy.*\(1000000, 1000000\).*truncated"):
        load_model(d)
    new = tmp_path / "new.csv"
    np.savetxt(new, np.ones((2, 4)), delimiter=",")
    line = one_line_failure(run("transform", "--model", d, new, "--out", tmp_path / "z.csv"))
    assert "metric.npy" in line and "truncated" in line
    _lying_npy(tmp_path / "q.npy")
    d2 = tmp_path / "m2"
    assert run("solve", "lmnn", "--dataset", "iris", "--max-iter", "5", "--out", d2).exit_code == 0
    line = one_line_failure(run("predict", "--model", d2, tmp_path / "q.npy"))
    assert "q.npy" in line and "truncated" in line


def test_npy_larger_than_memory_is_refused(tmp_path):
    """A consistent file (sparse on disk) whose array exceeds the machine's memory."""
    from convexmetric._npy import _memory, load_npy

    memory = _memory()
    if memory is None:
        pytest.skip("the platform does not report its memory")
    rows = 2 * memory // (8 * 1024) + 1
    path = tmp_path / "big.npy"
    with open(path, "wb") as fh:
        header = {"descr": "<f8", "fortran_order": False, "shape": (rows, 1024)}
        np.lib.format.write_array_header_1_0(fh, header)
        try:
            fh.truncate(fh.tell() + rows * 1024 * 8)
        except OSError:
            pytest.skip("no sparse file that large here")
    with pytest.raises(ValueError, match="more than this machine's"):
        load_npy(path, f"file {str(path)!r}")


# ---- 12. Ctrl-C: KeyboardInterrupt in Python, one line and 130 on the command line -----


def _ctrl_c_at(n):
    """A progress observer pressing Ctrl-C at the solvers' ``n``-th iteration report."""
    seen = [0]

    def observer(*_):
        seen[0] += 1
        if seen[0] == n:
            raise KeyboardInterrupt

    return observer


def _interruptible():
    from convexmetric import LMNN, SSNE, KernelLMNN, MultiMetricLMNN, OperatorSimilarity

    return [
        LMNN(),
        KernelLMNN(),
        MultiMetricLMNN(),
        OperatorSimilarity(random_state=0),
        OperatorSimilarity(solver="subgradient", random_state=0),
        SSNE(random_state=0),
    ]


@pytest.mark.parametrize("n", [1, 5])
@pytest.mark.parametrize(
    "est", _interruptible(), ids=["LMNN", "KernelLMNN", "MultiMetric", "SGD", "subgradient", "SSNE"]
)
def test_ctrl_c_during_a_fit_raises(wine_frame, est, n):
    from convexmetric.progress import observe

    X, y = wine_frame
    with pytest.raises(KeyboardInterrupt), observe(_ctrl_c_at(n)):
        est.fit(X.to_numpy(), y)
    assert not hasattr(est, "result_")  # no half-fitted estimator


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ctrl_c_stops_cross_val_score(wine_frame):
    from sklearn.model_selection import cross_val_score

    from convexmetric import LMNN
    from convexmetric.progress import observe

    X, y = wine_frame
    with pytest.raises(KeyboardInterrupt), observe(_ctrl_c_at(40)):  # in a later fold
        cross_val_score(LMNN(max_iter=30), X.to_numpy(), y, cv=3)


def test_a_real_sigint_during_a_fit_raises(digits_standardised):
    import signal
    import threading

    from convexmetric import LMNN
    from convexmetric.progress import observe

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    X, y = digits_standardised
    started = threading.Event()
    timer = threading.Timer(0.05, lambda: started.wait(30) and signal.raise_signal(signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt), observe(lambda *_: started.set()):
            LMNN(max_iter=100_000, tol=1e-12).fit(X, y)
    finally:
        timer.cancel()


def test_import_convexmetric_is_light():
    """The console script takes Ctrl-C from its start because this import is light."""
    import subprocess
    import sys

    code = "import sys, convexmetric; print('sklearn' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"], out.stderr


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("delay", [0.3, 0.8])
def test_ctrl_c_in_the_first_second_prints_one_line(tmp_path, delay):
    import signal
    import subprocess
    import sys
    import time

    args = [sys.executable, "-m", "convexmetric", "solve", "lmnn", "--dataset", "digits"]
    proc = subprocess.Popen(
        [*args, "--out", str(tmp_path / "m")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    time.sleep(delay)  # importing numpy, scipy, scikit-learn and the commands
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()
    assert err.decode().strip() == "Error: interrupted (Ctrl-C).", err.decode()
    assert out == b"" and os.listdir(tmp_path) == []


_CTRL_C_IN_SET_NAME = """
import importlib.abc, importlib.util, os, signal, sys, time

class Hook(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "convexmetric.cli.main":
            return importlib.util.spec_from_loader(name, self)
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        class Slow:
            def __set_name__(self, owner, name):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
        class Owner:  # the Ctrl-C reaches the import as a RuntimeError here
            attribute = Slow()

sys.meta_path.insert(0, Hook())
from convexmetric.cli.launch import main
main()
"""


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_inside_a_set_name_during_the_import_prints_one_line(tmp_path):
    """A Ctrl-C that Python wraps in another exception is still one line and 130."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_SET_NAME], capture_output=True, cwd=tmp_path
    )
    assert proc.returncode == 130, proc.stderr.decode()
    assert proc.stderr.decode().strip() == "Error: interrupted (Ctrl-C).", proc.stderr.decode()
