"""convexmetric: learning metrics and similarities from supervision.

Every convex formulation exists twice — an exact CVXPY problem (``convexmetric.problems``)
and a large-scale solver in the paper's package (an oracle driven by the engine of
``convexmetric.optim``) — and the two are held against each other.
"""

import importlib

#: public name -> the submodule that defines it; imported on first use (PEP 562), so that
#: ``import convexmetric`` is light and the command line can take Ctrl-C from its start
_EXPORTS = {
    "LMNN": ".lmnn",
    "KernelLMNN": ".lmnn",
    "MultiMetricLMNN": ".lmnn",
    "MKPOE": ".poe",
    "POE": ".poe",
    "OASIS": ".aroma",
    "DiagonalAROMA": ".aroma",
    "FactoredAROMA": ".aroma",
    "HyperbolicPCA": ".maurer",
    "OperatorSimilarity": ".maurer",
    "SSNE": ".ssne",
    "SolveResult": ".result",
    "Verification": ".verifier",
    "verify": ".verifier",
    "validate": ".validation",
    "config_context": "._threads",
    "get_config": "._threads",
    "set_config": "._threads",
}


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    elif name == "datasets":
        value = importlib.import_module(".datasets", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"
__all__ = [
    "LMNN",
    "MKPOE",
    "OASIS",
    "POE",
    "SSNE",
    "DiagonalAROMA",
    "FactoredAROMA",
    "HyperbolicPCA",
    "KernelLMNN",
    "MultiMetricLMNN",
    "OperatorSimilarity",
    "SolveResult",
    "Verification",
    "config_context",
    "datasets",
    "get_config",
    "set_config",
    "validate",
    "verify",
]
