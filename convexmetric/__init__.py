"""convexmetric: learning metrics and similarities from supervision.

Every convex formulation exists twice — an exact CVXPY problem (``convexmetric.problems``)
and a large-scale solver in the paper's package (an oracle driven by the engine of
``convexmetric.optim``) — and the two are held against each other.
"""

from . import datasets
from ._threads import config_context, get_config, set_config
from .aroma import OASIS, DiagonalAROMA, FactoredAROMA
from .lmnn import LMNN, KernelLMNN, MultiMetricLMNN
from .maurer import HyperbolicPCA, OperatorSimilarity
from .poe import MKPOE, POE
from .result import SolveResult
from .ssne import SSNE
from .validation import validate
from .verifier import Verification, verify

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
