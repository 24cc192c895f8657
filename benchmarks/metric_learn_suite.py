"""metric-learn's own LMNN tests, run against ``convexmetric.metric_learn.LMNN``.

Usage (needs ``pip install metric-learn pytest`` for the tests' helpers, and a checkout
of metric-learn's repository for the tests themselves)::

    python benchmarks/metric_learn_suite.py PATH/TO/metric-learn [--list]

The test modules are copied into a temporary directory beside a ``conftest.py`` that
puts convexmetric's LMNN in place of metric-learn's (``metric_learn.LMNN``) before they
are imported; pytest then runs the tests whose id names LMNN (``-k "LMNN or lmnn"``:
the LMNN cases of the parametrised suites of test_utils, test_mahalanobis_mixin,
test_sklearn_compat, test_base_metric, test_fit_transform and
test_components_metric_conversion, and metric_learn_test's LMNN tests). It prints the
counts, and every failing test with the last line of its error; ``--list`` prints the
passing ones too.

**Inapplicable** tests are reported apart: those that test metric-learn's private
solver (``_loss_grad``, its gradient check, its printed "LMNN converged" lines) rather
than the interface, as listed in :data:`INAPPLICABLE`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

FILES = [
    "metric_learn_test.py",
    "test_utils.py",
    "test_mahalanobis_mixin.py",
    "test_sklearn_compat.py",
    "test_base_metric.py",
    "test_fit_transform.py",
    "test_components_metric_conversion.py",
]

#: tests of metric-learn's own solver internals, not of the LMNN interface
INAPPLICABLE = (
    "test_loss_grad_lbfgs",  # checks metric-learn's private _loss_grad against a finite diff
    "test_loss_func",  # subclasses metric-learn's private _loss_grad
    "test_toy_ex_lmnn",  # calls the private _prepare_inputs and _loss_grad
    "test_convergence_simple_example",  # greps stdout for metric-learn's print
    "test_no_twice_same_objective",  # parses metric-learn's printed iterations
)

CONFTEST = '''
import metric_learn
import metric_learn.lmnn
from convexmetric.metric_learn import LMNN

metric_learn.LMNN = LMNN
metric_learn.lmnn.LMNN = LMNN
'''


class Tally:
    """A pytest plugin counting the outcomes of the test calls."""

    def __init__(self):
        self.outcomes = {}

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            msg = ""
            if report.failed:
                text = str(report.longrepr).strip().splitlines()
                msg = text[-1] if text else ""
            self.outcomes[report.nodeid] = (report.outcome, msg)


def run(source, listing=False):
    """Copy the tests, run the LMNN ones, print the counts; return them."""
    import pytest

    tally = Tally()
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "test")
        os.makedirs(target)
        for name in [*FILES, "__init__.py"]:
            path = os.path.join(source, "test", name)
            if os.path.exists(path):
                shutil.copy(path, target)
        with open(os.path.join(target, "conftest.py"), "w", encoding="utf-8") as fh:
            fh.write(CONFTEST)
        pytest.main([target, "-q", "-p", "no:cacheprovider", "-k", "LMNN or lmnn",
                     "-W", "ignore", "--rootdir", tmp], plugins=[tally])  # fmt: skip
    return report(tally.outcomes, listing)


def report(outcomes, listing):
    """Print the counts (applicable and not) and the failures; return the counts."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "inapplicable": 0}
    for nodeid, (outcome, msg) in sorted(outcomes.items()):
        if any(name in nodeid for name in INAPPLICABLE):
            counts["inapplicable"] += 1
            continue
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "failed" or (listing and outcome == "passed"):
            print(f"{outcome.upper():7s} {nodeid}  {msg[:160]}")
    applicable = counts["passed"] + counts["failed"]
    print(f"\nmetric-learn's LMNN tests on convexmetric.metric_learn.LMNN: "
          f"{counts['passed']} of {applicable} applicable passed "
          f"({counts['skipped']} skipped, {counts['inapplicable']} inapplicable)")  # fmt: skip
    return counts


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="a checkout of metric-learn's repository")
    parser.add_argument("--list", action="store_true", help="list the passing tests too")
    args = parser.parse_args()
    counts = run(args.source, args.list)
    sys.exit(0)
