"""The API reference (docs/api.rst) documents the whole public API, and nothing stale.

docs/api.rst lists every public name in an ``autosummary`` table; each gets a page of
its own (docs/_templates/autosummary/), the classes with the methods of
``api_members.MEMBERS`` and ``datasets`` with the functions of ``api_members.DATASETS``.
"""

import inspect
import os
import sys

import convexmetric

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
sys.path.insert(0, os.path.join(DOCS, "_ext"))
from api_members import DATASETS, FUNCTIONS, MEMBERS  # noqa: E402


def _public_methods(cls):
    """Public callables and properties defined in convexmetric (not scikit-learn)."""
    names = set()
    for name in dir(cls):
        if name.startswith("_") or (name.startswith("set_") and name.endswith("_request")):
            continue
        owner = next(k for k in cls.__mro__ if name in vars(k))
        value = vars(owner)[name]
        if owner.__module__.startswith("convexmetric") and (
            inspect.isfunction(value) or isinstance(value, property)
        ):
            names.add(name)
    return names


def _autosummary_entries(text):
    """The names listed under the ``.. autosummary::`` directives of a page."""
    names, inside = set(), False
    for line in text.splitlines():
        if line.startswith(".. autosummary::"):
            inside = True
        elif inside and line.strip() and not line.startswith("   "):
            inside = False
        elif inside and line.startswith("   ") and not line.strip().startswith(":"):
            names.add(line.strip())
    return names


def test_every_public_name_is_in_the_reference():
    with open(os.path.join(DOCS, "api.rst"), encoding="utf-8") as fh:
        entries = _autosummary_entries(fh.read())
    for name in convexmetric.__all__:
        assert name in entries or f"convexmetric.{name}" in entries, name
        if name not in FUNCTIONS and name != "datasets":
            assert name in MEMBERS, name
    # the public helpers and the exact side have pages too
    for module in (
        "convexmetric.model_io",
        "convexmetric.plotting",
        "convexmetric.problems",
        "convexmetric.comparisons",
        "convexmetric.result",
    ):
        assert module.removeprefix("convexmetric.") in entries, module


def test_dataset_functions_are_the_modules_public_names():
    from convexmetric import datasets

    for name in DATASETS:
        assert callable(getattr(datasets, name)), name


def test_autosummary_parser_reads_the_entries():
    text = ".. autosummary::\n   :toctree: generated\n\n   LMNN\n   POE\n\nProse\n"
    assert _autosummary_entries(text) == {"LMNN", "POE"}


def test_every_public_method_is_listed():
    import importlib

    for name, members in MEMBERS.items():
        module, _, short = name.rpartition(".")
        cls = getattr(importlib.import_module(module) if module else convexmetric, short)
        if name in ("SolveResult", "Verification"):
            continue  # a dataclass: its fields are documented in the class docstring
        # properties holding fitted state (metric_, Lambda_, average_loss_) are attributes
        methods = {m for m in _public_methods(cls) if not m.endswith("_")}
        assert methods == set(members), (name, methods ^ set(members))
