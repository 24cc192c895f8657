"""Partial order embedding (McFee & Lanckriet, JMLR 2011): graph filtering of relative
comparisons, the LPOE/KPOE/MKPOE estimators, their oracles, solvers and certificates."""

from .estimators import MKPOE, POE, ItemComparisons

__all__ = ["MKPOE", "POE", "ItemComparisons"]
