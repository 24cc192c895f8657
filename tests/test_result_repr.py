"""A result prints in a few lines (status, objective, certified gap, bound, solver, time
and the sizes of what it holds); ``report()`` gives every field in full."""

import numpy as np

from convexmetric import LMNN, datasets
from convexmetric.result import SolveResult


def test_a_fitted_result_prints_in_a_few_lines():
    X, y = datasets.load("iris")
    res = LMNN(max_iter=200).fit((X - X.mean(0)) / X.std(0), y).result_
    text = repr(res)
    assert len(text.splitlines()) <= 5 and max(map(len, text.splitlines())) <= 88, text
    assert f"status={res.status!r}" in text and f"certified_gap={res.certified_gap:.2e}" in text
    assert "matrices=[4×4]" in text and f"history={len(res.history)} values" in text
    assert str(res) == text
    full = res.report()  # everything, the matrix and every entry of info included
    assert len(full) > 10 * len(text)
    assert all(f"info[{k!r}]" in full for k in res.info)
    assert repr(res.matrix) in full


def test_a_result_without_a_bound_says_so():
    res = SolveResult(np.eye(2), 3.0, "converged", history=[4.0, 3.0])
    text = repr(res)
    assert "lower_bound=None" in text and "certified_gap=None" in text
    assert "certificate=None" in text and "matrices=[2×2]" in text
    assert res.report().startswith("matrix = array(")


def test_a_validation_report_prints_its_text_report():
    from convexmetric.validation.report import ValidationReport, exact_entry, instance

    iris = instance("iris", "iris (k=3, mu=0.5)", 105, 4, 22050, "hinge terms")
    report = ValidationReport("lmnn", iris, {}, exact_entry("CLARABEL", "optimal", 197.56, 0.5, {}))
    report.add("subgradient", SolveResult(np.eye(4), 197.57, "optimal", lower_bound=197.55))
    text = repr(report)
    assert text.startswith("<ValidationReport: validate lmnn on iris") and text.endswith(">")
    assert text.count("\n") == 3 and "certified gap 1.01e-04" in text  # two lines a solver
    assert max(len(line) for line in text.splitlines()) <= 88, text
