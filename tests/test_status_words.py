"""One table of status words (``STATUS_MESSAGES``), documented once, and a small run that
produces each word: "optimal" only with a certificate within ``tol``."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import numpy as np

from convexmetric import LMNN, OASIS, SSNE, DiagonalAROMA, HyperbolicPCA, datasets
from convexmetric.cones import NonnegativeOrthant
from convexmetric.optim.subgradient import projected_subgradient
from convexmetric.result import ACCEPTABLE, STATUS_MESSAGES

API = Path(__file__).resolve().parents[1] / "docs" / "api.rst"
#: CVXPY's failure words: no exact path of the toolkit produces them cheaply
CVXPY_ONLY = {"infeasible", "unbounded", "solver_error"}


def _iris():
    X, y = datasets.load("iris")
    return (X - X.mean(0)) / X.std(0), y


def _quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: the point of some cases
        return make()


def test_the_docs_table_lists_exactly_the_status_words():
    """The API reference prints the table from the code (docs/_ext/generated.py)."""
    text = API.read_text(encoding="utf-8")
    section = text[text.index("\nStatus words\n") : text.index("\nData sets")]
    assert ".. status-words::" in section
    sys.path.insert(0, str(API.parent / "_ext"))
    from status_words import status_table

    table = "\n".join(status_table())
    rows = re.findall(r'^   \* - ``"([a-z_]+)"``\n     - (.+)$', table, flags=re.M)
    assert [word for word, _ in rows] == list(STATUS_MESSAGES)
    assert dict(rows) == STATUS_MESSAGES  # the docs say what SolveResult.message says


def test_optimal_is_certified_against_an_independent_optimum(iris60_exact):
    X, y, T, value = iris60_exact  # CLARABEL's optimum of eq. (14)
    m = LMNN(k=2, tol=1e-4).fit(X, y, targets=T)
    r = m.result_
    assert r.status == "optimal" and r.success
    conic = 1e-6 * abs(value)  # the conic solver's own accuracy
    assert r.objective - value <= 1e-4 * abs(r.objective) + conic
    assert r.lower_bound <= value + conic  # the bound is below the true optimum


def test_a_stall_is_optimal_inaccurate_not_optimal():
    # |x - 2| summed, from 0: the adaptive rule stalls close to the minimum (0), with no
    # bound to prove it; "optimal" used to be returned here
    def f(x):
        return float(np.abs(x - 2).sum()), np.sign(x - 2)

    res = projected_subgradient(f, np.zeros(3), NonnegativeOrthant(), max_iter=2000)
    assert res.info["stop"] == "stall" and res.status == "optimal_inaccurate"
    assert res.objective < 1e-3  # it did get there: the word is about the proof


def test_max_iter_without_a_certificate_is_optimal_inaccurate():
    X, y = _iris()
    r = _quiet(lambda: LMNN(k=2, max_iter=3).fit(X, y)).result_
    assert r.status == "optimal_inaccurate" and r.certified_gap > 1e-4


def test_time_limit_is_user_limit():
    X, y = _iris()
    assert LMNN(k=2, time_limit=1e-9).fit(X, y).result_.status == "user_limit"
    r = SSNE(n_components=2, max_iter=50, time_limit=1e-9, random_state=0).fit(X, y).result_
    assert r.status == "user_limit" and not r.success


def test_learners_without_a_certificate_never_say_optimal():
    X, y = _iris()
    ssne = SSNE(n_components=2, max_iter=40, tol=0.5, random_state=0).fit(X, y)
    assert ssne.result_.status == "converged" and ssne.n_iter_ < 40  # the plateau rule
    capped = SSNE(n_components=2, max_iter=2, tol=1e-12, random_state=0).fit(X, y)
    assert capped.result_.status == "iteration_limit"
    hpca = HyperbolicPCA(n_components=2, n_pairs=100, random_state=0).fit(X, y)
    assert hpca.result_.status == "converged"
    for online in (OASIS(max_iter=100, random_state=0), DiagonalAROMA(max_iter=100)):
        assert online.fit(X, y).result_.status == "completed"
    rect = _quiet(lambda: LMNN(k=2, n_components=2, reduction="R", max_iter=200).fit(X, y))
    assert rect.result_.status in ("converged", "iteration_limit")


def test_every_word_is_produced_or_cvxpy_only():
    produced = {"optimal", "optimal_inaccurate", "user_limit", "converged", "completed",
                "iteration_limit"}  # fmt: skip
    assert produced | CVXPY_ONLY == set(STATUS_MESSAGES)
    assert set(ACCEPTABLE) == produced - {"user_limit"}
