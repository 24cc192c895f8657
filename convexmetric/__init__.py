"""convexmetric: learning metrics and similarities from supervision.

Every convex formulation exists twice — an exact CVXPY problem (``convexmetric.problems``)
and a hand-written large-scale solver (``convexmetric.solvers``) — and the two are held
against each other.
"""

from . import datasets
from .lmnn import LMNN
from .result import SolveResult

__version__ = "0.1.0"
__all__ = ["LMNN", "SolveResult", "datasets"]
from .aroma import OASIS, DiagonalAROMA, FactoredAROMA  # noqa: F401
from .maurer import HyperbolicPCA, OperatorSimilarity  # noqa: F401
from .poe import MKPOE, POE  # noqa: F401
from .ssne import SSNE  # noqa: F401
