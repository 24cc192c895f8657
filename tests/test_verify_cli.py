"""``convexmetric verify --model DIR`` (issue 36): a saved certified model re-checked
from its data by the independent verifier; the exit status says whether it holds."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from convexmetric.cli.main import main


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    out = tmp_path_factory.mktemp("verify") / "m"
    r = CliRunner().invoke(main, ["solve", "lmnn", "--dataset", "wine", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


def _verify(model, *args):
    return CliRunner().invoke(main, ["verify", "--model", str(model), *args, "--json"])


def test_verify_a_saved_model_from_its_data(saved):
    r = _verify(saved, "--dataset", "wine")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["verified"] is True and rep["reason"] == ""
    assert rep["certified_gap"] <= rep["tol"] == 1e-4
    assert rep["objective"] == pytest.approx(rep["reported_objective"], rel=1e-9)
    text = CliRunner().invoke(main, ["verify", "--model", str(saved), "--dataset", "wine"])
    assert text.exit_code == 0 and ": verified" in text.output


def test_other_data_are_refused_or_not_verified(saved):
    r = _verify(saved, "--dataset", "iris")  # 4 features, not 13
    assert r.exit_code != 0 and "features" in r.output and "Traceback" not in r.output
    r = _verify(saved, "--dataset", "wine", "--split", "none")  # other training rows
    assert r.exit_code != 0 and "standardisation" in r.output


def test_a_tampered_model_is_not_verified(saved, tmp_path):
    import shutil

    bad = tmp_path / "m"
    shutil.copytree(saved, bad)
    for name, factor in (("fitted__metric_", 1.01**2), ("fitted__components_", 1.01)):
        path = bad / f"{name}.npy"
        np.save(path, np.load(path) * factor)
    r = _verify(bad, "--dataset", "wine")
    assert r.exit_code == 1
    rep = json.loads(r.output)
    assert rep["verified"] is False and rep["reason"]


@pytest.mark.parametrize(
    "solve, data",
    [
        (["maurer", "--dataset", "wine", "--solver", "subgradient", "--n-pairs", "300"],
         ["--dataset", "wine", "--n-pairs", "300"]),
        (["poe", "--kind", "linear", "--n-comparisons", "300", "--seed", "2"],
         ["--n-comparisons", "300", "--seed", "2"]),
        (["poe", "--kind", "linear", "--diagonal", "--n-comparisons", "300", "--seed", "2"],
         ["--n-comparisons", "300", "--seed", "2"]),
    ],
)  # fmt: skip
def test_maurer_and_poe_models_verified_from_solves_data_options(tmp_path, solve, data):
    out = tmp_path / "m"
    r = CliRunner().invoke(main, ["solve", *solve, "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(_verify(out, *data).output)
    assert rep["verified"] is True, rep["reason"]
    assert rep["objective"] == pytest.approx(rep["reported_objective"], rel=1e-9)
    # other data options: another draw, so another objective and not verified
    other = [*data[:-1], str(int(data[-1]) + 1)]
    r = _verify(out, *other)
    assert r.exit_code == 1 and json.loads(r.output)["verified"] is False
