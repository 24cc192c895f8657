"""Multiple kernel partial order embedding (McFee & Lanckriet, Alg. 4): ``MKPOE``."""

from __future__ import annotations

import numpy as np

from .._input_checks import check_matrix
from .._output import OutputNamesMixin
from ..kernels import check_kernel
from ..problems import poe as formulations
from .base import _POEBase
from .items import unbundle


class MKPOE(OutputNamesMixin, _POEBase):
    """Multiple kernel partial order embedding (Alg. 4), full or diagonal (§4.4).

    ``fit(comparisons, kernels)`` with a list of ``n × n`` PSD kernels; one
    ``Wᵖ`` per kernel; the embedding concatenates ``Nᵖ K_xᵖ`` over kernels.

    Parameters
    ----------
    beta, diagonal, solver, conic_solver, max_iter, tol, time_limit : float, bool, str, str, …
        As in :class:`POE`.
    filter_graph, random_state, verbose : bool, int or None, {0, 1}
        As in :class:`POE`.

    Attributes
    ----------
    W_ : list of ndarray
    components_ : list of ndarray
    kernel_weights_ : ndarray, ``tr(WᵖKᵖ)`` normalised to sum 1 (the share of the
        regulariser, i.e. of the embedding's energy, carried by each kernel)
    embedding_ : ndarray, the training items embedded
    objective_, result_, n_iter_

    Examples
    --------
    >>> import numpy as np
    >>> from convexmetric import MKPOE
    >>> from convexmetric.comparisons import Comparisons
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0], [1.0, 3.0]])
    >>> C = Comparisons(i=[0, 2, 0], j=[1, 3, 1], k=[0, 1, 2], l=[2, 3, 3])
    >>> K = [X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))]  # two kernels
    >>> m = MKPOE(beta=10.0).fit(C, K)
    >>> m.result_.status, m.transform(K).shape, m.score(C, K)  # GAUC of the comparisons
    ('optimal', (4, 2), 1.0)
    """

    _name = "MKPOE"

    def __init__(
        self,
        *,
        beta=1.0,
        diagonal=False,
        solver="subgradient",
        conic_solver="CLARABEL",
        max_iter=None,
        tol=None,
        time_limit=None,
        filter_graph=False,
        random_state=None,
        verbose=0,
    ):
        self.beta = beta
        self.diagonal = diagonal
        self.solver = solver
        self.conic_solver = conic_solver
        self.max_iter = max_iter
        self.tol = tol
        self.time_limit = time_limit
        self.filter_graph = filter_graph
        self.random_state = random_state
        self.verbose = verbose

    def _check_kernels(self, kernels, n=None, square=True):
        if isinstance(kernels, np.ndarray) and kernels.ndim == 2:
            kernels = [kernels]
        kernels = list(kernels)
        if not kernels:
            raise ValueError("'kernels' is empty; MKPOE needs at least one kernel matrix.")
        out = []
        for p, K in enumerate(kernels):
            if square:
                K = check_kernel(K, n, name=f"kernels[{p}]")
                n = K.shape[0]
            else:
                K = check_matrix(K, f"kernels[{p}]")
                rows = out[0].shape[0] if out else K.shape[0]
                if K.shape != (rows, n):
                    raise ValueError(
                        f"'kernels[{p}]' must have shape (n_new, {n}) matching the others; "
                        f"got {K.shape}."
                    )
            out.append(K)
        return out

    def fit(self, comparisons, kernels=None):
        """Learn ``W¹ … Wᵐ`` from ``comparisons`` over the items of ``kernels``.

        Parameters
        ----------
        comparisons : Comparisons or ItemComparisons
            The comparisons; an :class:`ItemComparisons` carries the kernels too.
        kernels : list of arrays of shape (n, n)
            One PSD kernel per feature space.

        Returns
        -------
        self
            The fitted estimator.
        """
        comparisons, kernels = unbundle(comparisons, kernels, "MKPOE", "kernels")
        self._check_common()
        kernels = self._check_kernels(kernels)
        C = self._comparisons(comparisons, kernels[0].shape[0])
        blocks = formulations.kernel_blocks(kernels)
        res = self._solve(blocks, kernels, C)
        self._finish(res, blocks, C)
        self.embedding_ = np.hstack([K @ N.T for K, N in zip(kernels, self.components_)])
        self.n_train_ = kernels[0].shape[0]
        tr = np.array([formulations.regulariser([W], [(K, K)]) for W, K in zip(self.W_, kernels)])
        self.kernel_weights_ = tr / tr.sum() if tr.sum() > 0 else np.full(len(tr), 1 / len(tr))
        return self

    @property
    def _n_features_out(self):
        if not hasattr(self, "components_"):
            raise AttributeError("not fitted")
        return sum(N.shape[0] for N in self.components_)

    def transform(self, kernels):
        """Embed items given their kernel values against the training items.

        Parameters
        ----------
        kernels : list of arrays of shape (n_new, n_train)
            One array of kernel values per kernel.

        Returns
        -------
        ndarray
            The embedding: the blocks ``Nᵖ K_xᵖ`` concatenated.
        """
        self._check_fitted()
        kernels = self._check_kernels(kernels, self.n_train_, square=False)
        if len(kernels) != len(self.W_):
            raise ValueError(f"'kernels' must hold {len(self.W_)} kernels; got {len(kernels)}.")
        return np.hstack([K @ N.T for K, N in zip(kernels, self.components_)])
