"""Hand-written large-scale solvers: the generic projected-subgradient driver."""

from .subgradient import SubgradientSettings, projected_subgradient

__all__ = ["SubgradientSettings", "projected_subgradient"]
