"""The constants modules: every fixed number has its reason and its evidence beside it."""

import ast
import importlib
import inspect

import pytest

MODULES = [
    "convexmetric.optim.constants",
    "convexmetric.aroma.constants",
    "convexmetric.datasets.constants",
]


@pytest.mark.parametrize("name", MODULES)
def test_every_constant_says_why_and_where_its_evidence_is(name):
    source = inspect.getsource(importlib.import_module(name))
    lines = source.splitlines()
    found = 0
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        found += 1
        above = []  # the `#:` comment block right above the assignment
        for line in reversed(lines[: node.lineno - 1]):
            if not line.startswith("#:"):
                break
            above.append(line)
        targets = ast.unparse(node.targets[0])
        assert len(above) >= 2, f"{name}: {targets} has no reason and evidence above it"
        reason, *rest = reversed(above)
        assert "Evidence: " not in reason, f"{name}: {targets} gives no reason before evidence"
        assert any("Evidence: " in line for line in rest), f"{name}: {targets} has no evidence"
    assert found
