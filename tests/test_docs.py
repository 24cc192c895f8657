"""The API reference (docs/api.rst) documents the whole public API, and nothing stale."""

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


def test_every_public_name_is_in_the_reference():
    with open(os.path.join(DOCS, "api.rst"), encoding="utf-8") as fh:
        text = fh.read()
    for name in convexmetric.__all__:
        if name == "datasets":
            continue
        if name in FUNCTIONS:
            assert f".. autofunction:: {name}\n" in text, name
            continue
        assert f".. autoclass:: {name}\n" in text, name
        assert name in MEMBERS, name
    for name in DATASETS:
        assert f".. autofunction:: {name}\n" in text, name


def test_every_public_method_is_listed():
    for name, members in MEMBERS.items():
        cls = getattr(convexmetric, name)
        if name in ("SolveResult", "Verification"):
            continue  # a dataclass: its fields are documented in the class docstring
        # properties holding fitted state (metric_, Lambda_, average_loss_) are attributes
        methods = {m for m in _public_methods(cls) if not m.endswith("_")}
        assert methods == set(members), (name, methods ^ set(members))
