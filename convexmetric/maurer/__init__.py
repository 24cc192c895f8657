"""Operator-valued large-margin similarity (Maurer, JMLR 2008): pairs, the hinge oracle,
the SGD of Table 1, hyperbolic PCA and the dual certificate."""

from .estimators import HyperbolicPCA, OperatorSimilarity
from .pairs import Pairs, balanced_pairs, label_pairs

__all__ = ["HyperbolicPCA", "OperatorSimilarity", "Pairs", "balanced_pairs", "label_pairs"]
