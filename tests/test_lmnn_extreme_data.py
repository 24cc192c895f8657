"""Issue 67, cases 4, 9 and 10: degenerate and extreme-scale data give a correct certified
answer or a clear error naming ``X``, never a crash deep in the library or a wrong
"verified". Eq. (14) is scale-covariant (``cX`` with ``M/c²``): the LMNN solvers solve at
unit scale by an exact power of two, and refuse a spread whose metric float64 cannot
hold."""

import numpy as np
import pytest
from click.testing import CliRunner

from convexmetric import LMNN, MultiMetricLMNN, datasets, verify
from convexmetric.cli.main import main


@pytest.fixture(scope="module")
def wine():
    X, _, y, _ = datasets.load_split("wine")
    return X, y, LMNN().fit(X, y).objective_


@pytest.mark.parametrize("estimator", [LMNN, MultiMetricLMNN])
@pytest.mark.parametrize("scale", [1e-100, 1e19, 1e100])
def test_extreme_scales_are_solved_and_verified(wine, estimator, scale):
    X, y, f = wine
    m = estimator().fit(X * scale, y)
    assert m.result_.status == "optimal" and verify(m, X * scale, y).verified
    if estimator is LMNN:
        assert m.objective_ == pytest.approx(f, rel=1e-4)  # the same problem, to tol


@pytest.mark.parametrize("scale", [1e-200, 1e-155])
def test_a_spread_float64_cannot_learn_is_refused_naming_X(wine, scale):
    X, y, _ = wine
    with pytest.raises(ValueError, match="'X' has a spread"):
        LMNN().fit(X * scale, y)


def test_all_points_equal_is_a_certified_answer():
    X, y = np.ones((30, 4)), np.arange(30) % 3
    m = LMNN().fit(X, y)
    assert m.result_.status == "optimal" and m.objective_ == 0.5 * 30 * 3 * 20
    assert verify(m, X, y).verified


def test_the_cli_prints_one_line_for_all_equal_points(tmp_path):
    features, labels = tmp_path / "x.csv", tmp_path / "y.csv"
    np.savetxt(features, np.ones((30, 4)), delimiter=",")
    np.savetxt(labels, np.arange(30) % 3, fmt="%d")
    r = CliRunner().invoke(main, ["solve", "lmnn", "--features", str(features),
                                  "--labels", str(labels)])  # fmt: skip
    assert r.exit_code == 0 and "Traceback" not in r.output
