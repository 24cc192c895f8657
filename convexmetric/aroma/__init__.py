"""AROMA (Crammer & Chechik, ICML 2012) and OASIS: online bilinear similarity learning."""

from .estimators import OASIS, DiagonalAROMA, FactoredAROMA

__all__ = ["OASIS", "DiagonalAROMA", "FactoredAROMA"]
