"""The optimization engine shared by every formulation."""

from .subgradient import SubgradientSettings, projected_subgradient

__all__ = ["SubgradientSettings", "projected_subgradient"]
