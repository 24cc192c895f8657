"""The settings of LMNN's large-scale solver (:func:`.solver.solve`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..optim.subgradient import SubgradientSettings
from .constants import DEFAULT_MEMORY_LIMIT


@dataclass(kw_only=True)
class LMNNSettings:
    """Settings of :func:`solve` (documented defaults)."""

    max_iter: int = 3000  #: iterations at most, over App. A, the refinement and the gap closing
    phase1: str = "components"  #: "components" (in L) or "metric" (on M, Alg. 1)
    refine: bool | str = True  #: True: L-BFGS in L; "fista": FISTA on M; False: none
    tol: float = 1e-4  #: the certified relative gap that "optimal" means
    time_limit: float | None = None  #: seconds for the whole solve (status "user_limit")
    precondition: bool = True  #: solve in pull-whitened coordinates
    search: object = "brute"  #: impostor search of the full checks (see ActiveList)
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  #: bytes of working memory
    check_every: int = 10  #: calls between full checks (adaptive)
    prune: float | None = 1.0  #: drop listed terms with hinge argument below −prune
    block_size: int = 512  #: rows per block of the tree searches
    callback: object = None  #: ``callback(iteration, objective, step)``; True stops
    phase1_settings: SubgradientSettings | None = None  #: replaces phase 1's defaults
    refine_settings: object = None  #: StageSettings or a dict of its fields (overrides)
    executor: object = None  #: runs the block functions (local, or Dask)
    rank_tol: float | None = 1e-3  #: refinement: drop factor directions below rank_tol·λ_max
