"""Figures: every plotting function returns a Figure; --plot writes PNGs; the example
scripts write their figures on small instances."""

from __future__ import annotations

import glob
import json
import os
import runpy
import sys
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.figure import Figure

from convexmetric import plotting
from convexmetric.cli._plot import Trace
from convexmetric.cli.main import main as cli
from convexmetric.result import SolveResult

PNG = b"\x89PNG\r\n\x1a\n"
EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def assert_png(path, min_bytes=5000):
    with open(path, "rb") as fh:
        head = fh.read(8)
    assert head == PNG, f"{path} is not a PNG"
    assert os.path.getsize(path) >= min_bytes, f"{path} is only {os.path.getsize(path)} bytes"


def _xy(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), np.arange(n) % 3


# --- the plotting functions -------------------------------------------------------------


def test_convergence_accepts_results_traces_and_report_entries():
    res = SolveResult(None, 1.0, "optimal", seconds=0.5, history=[3.0, 2.0, 1.2, 1.0])
    res.lower_bound = 0.98
    runs = {
        "subgradient": res,
        "recorded": {"times": [0.0, 0.1, 0.2], "objectives": [2.0, 1.1, 1.001]},
        "plain-SCS": {"objective": 1.0001, "seconds": 0.3},
    }
    fig = plotting.plot_convergence(runs, optimum=0.999, title="LMNN eq. (14)")
    assert isinstance(fig, Figure)
    top, bottom = fig.axes
    assert bottom.get_yscale() == "log"
    labels = top.get_legend_handles_labels()[1]
    assert "subgradient (≈ time)" in labels  # history spread over the solve time
    assert "recorded" in labels  # real time stamps
    assert "subgradient: certified lower bound" in labels
    assert "exact optimum" in labels


def test_convergence_gap_panel_is_relative_to_the_optimum():
    fig = plotting.plot_convergence(
        {"s": {"times": [0.0, 1.0], "objectives": [2.0, 1.01]}}, optimum=1.0
    )
    gap = fig.axes[1].get_lines()[0].get_ydata()
    np.testing.assert_allclose(gap, [1.0, 0.01])


def test_convergence_rejects_no_runs():
    with pytest.raises(ValueError, match="'runs'"):
        plotting.plot_convergence({})


def test_embeddings_scatter_1d_2d_and_projected_panels():
    X, y = _xy()
    fig = plotting.plot_embeddings({"input": X, "2-D": X[:, :2], "1-D": X[:, 0]}, y, title="t")
    assert isinstance(fig, Figure)
    assert [ax.get_title() for ax in fig.axes] == ["input", "2-D", "1-D"]
    assert fig.axes[2].get_xlabel() == "projection"
    with pytest.raises(ValueError, match="'y' has 40 labels"):
        plotting.plot_embeddings({"bad": X[:5]}, y)


def test_local_metrics_and_taxonomy_embedding():
    X, y = _xy(d=2)
    fig = plotting.plot_local_metrics(
        X,
        y,
        {
            "Euclidean": None,
            "two metrics": {
                "metrics": np.stack([np.eye(2), np.diag([1.0, 4.0])]),
                "clusters": (X[:, 0] > 0).astype(int),
            },
        },
    )
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    with pytest.raises(ValueError, match="shape \\(n, 2\\)"):
        plotting.plot_local_metrics(np.ones((4, 3)), [0, 1, 0, 1], {"a": None})
    Z, y = _xy(d=5)
    fig = plotting.plot_taxonomy_embedding(Z[:30], y[:30], Z[30:], y[30:], title="POE")
    assert isinstance(fig, Figure)
    assert "out-of-sample" in fig.axes[0].get_legend_handles_labels()[1]


def test_roc_precision_and_bars():
    X, y = _xy()
    fig = plotting.plot_roc({"input": X, "first axis": X[:, :1]}, y, title="ROC")
    assert isinstance(fig, Figure)
    fpr, tpr = plotting.pair_roc(X, y)
    assert fpr[0] == 0 and tpr[-1] == 1 and np.all(np.diff(fpr) >= 0)
    ks = [1, 5, 10]
    fig = plotting.plot_precision_at_k(
        {"OASIS": np.full((2, 3), 0.5), "d-AROMA": [0.6, 0.5, 0.4]},
        ks,
        trace={"OASIS": [(10, 5, 0.3), (20, 9, 0.4)]},
    )
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    with pytest.raises(ValueError, match="'ks' has 3"):
        plotting.plot_precision_at_k({"x": [0.1, 0.2]}, ks)
    fig = plotting.plot_bars({"iris": {"a": 0.1, "b": 0.2}}, errors={"iris": {"a": 0.01}})
    assert isinstance(fig, Figure)


def _hinge_impostors(Z, y, i, targets):
    """Points of other classes with a positive hinge of eq. (14) for some target of ``i``."""
    d2 = ((Z - Z[i]) ** 2).sum(1)
    return {l for l in range(len(y)) for j in targets if y[l] != y[i] and 1 + d2[j] - d2[l] > 0}


def test_lmnn_margin_marks_the_impostors_of_eq_14():
    from convexmetric.neighbors import target_neighbors
    from convexmetric.plotting.margins import neighborhood

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(30, 2)), np.arange(30) % 3
    L = np.array([[2.0, 0.5], [0.0, 0.3]])
    T = target_neighbors(X, y, 3)
    for i in range(30):
        for Z in (X, X @ L.T):
            assert set(neighborhood(Z, y, i, T[i])[1]) == _hinge_impostors(Z, y, i, T[i])
    fig = plotting.plot_lmnn_margin(X, y, L, point=4, k=3, title="Fig. 1")
    before, after = (ax.get_title() for ax in fig.axes)
    assert before.startswith(f"before (Euclidean): {len(_hinge_impostors(X, y, 4, T[4]))} ")
    n_after = len(_hinge_impostors(X @ L.T, y, 4, T[4]))
    assert after.startswith(f"after (learned metric): {n_after} ")
    # drawn in M^(1/2) coordinates: a rotated L (the same metric) gives the same picture
    R = np.array([[0.0, -1.0], [1.0, 0.0]])
    turned = plotting.plot_lmnn_margin(X, y, R @ L, point=4, k=3)
    assert [ax.get_title() for ax in turned.axes] == [before, after]
    assert np.allclose(turned.axes[1].get_xlim(), fig.axes[1].get_xlim())
    assert len(plotting.plot_lmnn_margin(X, y, point=4).axes) == 1  # input panel only


def test_lmnn_guide_figure_shows_what_its_caption_says():
    """The guide's Fig. 1 snippet (docs/guide/lmnn.rst, ``library-figure``) runs without a
    warning, and its caption's claims hold: the learned metric shrinks the noisy second
    axis, and the drawn point has impostors before learning and fewer after."""
    import re

    page = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "guide", "lmnn.rst")
    with open(page, encoding="utf-8") as fh:
        text = fh.read()
    block = re.search(r"\.\. library-figure:: lmnn_margin\.png\n(.*?)\n(?=\S)", text, re.S)
    code = "\n".join(
        line[3:]
        for line in block.group(1).splitlines()
        if line.startswith("   ")
        and not line.lstrip().startswith(":")
        and not line.startswith("      ")
    )
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(code, namespace)
    m, fig = namespace["m"], namespace["fig"]
    assert m.result_.status == "optimal"
    M = m.metric_
    assert M[1, 1] < 0.1 * M[0, 0]  # the noisy axis is shrunk
    counts = [int(ax.get_title().split(": ")[1].split()[0]) for ax in fig.axes]
    assert counts[0] >= 3 and counts[1] < counts[0], counts


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"X": np.zeros((5, 3))}, "'X'"),
        ({"point": 9}, "'point'"),
        ({"components": np.eye(3)}, "'components'"),
        ({"y": np.array([0, 1, 1, 1, 1])}, "alone in its class"),
    ],
)
def test_lmnn_margin_names_bad_input(kwargs, name):
    args = {"X": np.arange(10.0).reshape(5, 2), "y": np.array([0, 0, 1, 1, 1])} | kwargs
    with pytest.raises(ValueError, match=name):
        plotting.plot_lmnn_margin(args.pop("X"), args.pop("y"), **args)


def test_project_2d_is_deterministic_and_keeps_2d():
    X, _ = _xy(d=4)
    np.testing.assert_array_equal(plotting.project_2d(X[:, :2]), X[:, :2])
    P = plotting.project_2d(X)
    assert P.shape == (40, 2)
    np.testing.assert_allclose(P, plotting.project_2d(X.copy()))
    np.testing.assert_allclose(P.mean(0), 0, atol=1e-12)


def test_save_figure_is_atomic_png(tmp_path):
    X, y = _xy()
    path = plotting.save_figure(plotting.plot_embeddings({"a": X}, y), tmp_path / "sub" / "a.png")
    assert_png(path)
    assert sorted(os.listdir(tmp_path / "sub")) == ["a.png"]  # no temporary file left


def test_missing_matplotlib_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r'pip install "convexmetric\[plot\]"'):
        plotting.plot_bars({"a": {"b": 1.0}})


def test_trace_records_and_chains():
    seen = []
    trace = Trace(lambda it, f, step: seen.append(it) or it >= 2)
    assert [trace(i, 10.0 - i, 0.1) for i in range(3)] == [False, False, True]
    assert trace.objectives == [10.0, 9.0, 8.0] and seen == [0, 1, 2]
    assert trace.times == sorted(trace.times)


# --- validate --plot -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["lmnn", "--dataset", "wine"],
        ["lmnn", "--variant", "multi", "--per-class", "5"],
        ["maurer"],
        ["aroma", "--n-items", "30", "--n-triplets", "40", "--epochs", "2"],
        ["poe", "--diagonal", "--n-comparisons", "100"],
    ],
    ids=["lmnn-wine", "lmnn-multi", "maurer", "aroma", "poe"],
)
def test_validate_plot_writes_png(tmp_path, args):
    out = tmp_path / "conv.png"
    result = CliRunner().invoke(cli, ["validate", *args, "--json", "--plot", str(out)])
    assert result.exit_code == 0, result.output
    json.loads(result.output)  # --json still prints exactly one JSON object
    assert_png(out, min_bytes=10000)


def test_validate_plot_unwritable_path_is_one_clean_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(cli, ["validate", "maurer", "--plot", str(blocker / "conv.png")])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "cannot write the figure" in result.output


def test_validate_plot_without_matplotlib_is_one_clean_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    result = CliRunner().invoke(cli, ["validate", "maurer", "--plot", str(tmp_path / "c.png")])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert 'pip install "convexmetric[plot]"' in result.output


# --- the example scripts ---------------------------------------------------------------

SCRIPTS = [
    ("lmnn_zebra", ["--seeds", "1", "--n-samples", "400"], ["lmnn_fig2_zebra.png"]),
    ("lmnn_circles", ["--quick"], ["lmnn_fig7_circles.png"]),
    ("lmnn_table1", ["--splits", "1", "--datasets", "iris"], ["lmnn_table1.png"]),
    ("lmnn_energy", ["--datasets", "wine"], ["lmnn_energy.png"]),
    (
        "poe_taxonomy",
        ["--quick"],
        ["poe_taxonomy_embedding.png", "poe_kernel_weights.png"],
    ),
    ("poe_graph_noise", ["--quick"], ["poe_graph_noise.png"]),
    (
        "maurer_transfer",
        ["--quick"],
        ["maurer_roc_rotation.png", "maurer_roc_rotation_scale.png"],
    ),
    ("aroma_retrieval", ["--quick"], ["aroma_precision_at_k.png"]),
    (
        "ssne_table1",
        ["--datasets", "iris", "--repeats", "1", "--grid", "100", "--no-lmnn"],
        ["ssne_table1.png", "ssne_embedding_iris.png"],
    ),
]


@pytest.mark.parametrize("script,args,files", SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_example_writes_its_figures(tmp_path, capsys, script, args, files):
    with warnings.catch_warnings():  # some scripts silence warnings at import
        path = os.path.join(EXAMPLES, script.split("_")[0], f"{script}.py")  # one folder per paper
        module = runpy.run_path(path, run_name="example")
        module["main"]([*args, "--plot", str(tmp_path)])
    printed = capsys.readouterr().out
    for name in files:
        assert_png(tmp_path / name)
        assert f"figure written to {tmp_path / name}" in printed


def test_every_figure_script_is_tested():
    scripts = {os.path.basename(f)[:-3] for f in glob.glob(os.path.join(EXAMPLES, "*", "*.py"))}
    assert scripts == {s[0] for s in SCRIPTS}


def test_convergence_never_draws_below_the_certified_bound():
    """A trace of approximate values (an active list's) under the certified lower bound
    was drawn through the optimum."""
    run = {
        "times": [0.1, 0.2, 0.3, 0.4],
        "objectives": [200.0, 124.0, 151.0, 150.0],
        "lower_bound": 149.8,
    }
    fig = plotting.plot_convergence({"lmnn": run}, optimum=149.9)
    drawn = fig.axes[0].lines[0].get_ydata()
    assert min(drawn) >= 149.8 and list(drawn) == [200.0, 151.0, 150.0]
