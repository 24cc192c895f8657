"""LMNN (Weinberger & Saul, JMLR 2009): estimators, oracles, solvers and certificates.

The estimators are :class:`LMNN` (single metric, with multi-pass, dimensionality
reduction, PCA and the Dask backend), :class:`KernelLMNN` and
:class:`MultiMetricLMNN` (§5.2).
"""

from .estimator import LMNN
from .kernel import KernelLMNN
from .multi.estimator import MultiMetricLMNN

__all__ = ["LMNN", "KernelLMNN", "MultiMetricLMNN"]
