"""Choosing β by validation on held-out *items*, the protocol of McFee & Lanckriet §5.1.

The paper tunes β by cross-validation inside the training set: the training items are
split into folds; for each fold an embedding is learned from the comparisons among the
other items only, the fold's items are mapped into it out of sample, and the score is the
GAUC of comparisons ``(i, j, i, k)`` with ``i`` in the fold and ``j, k`` among the items
learned from. Splitting the *comparisons* instead (``GridSearchCV`` on
``ItemComparisons``) scores comparisons whose items were all seen
in training: a different question, answered more optimistically.

>>> import numpy as np
>>> from convexmetric import POE
>>> from convexmetric.datasets.taxonomy import make_taxonomy, lca_comparisons
>>> T = make_taxonomy(5, n_train_comparisons=120, n_test_comparisons=10)
>>> K, y = T.train_kernels()[0], T.y[T.train]
>>> def embed(beta, C, fit, held):
...     m = POE(beta=beta, kernel="precomputed", diagonal=True).fit(C, K[np.ix_(fit, fit)])
...     return m.transform(K[np.ix_(fit, fit)]), m.transform(K[np.ix_(held, fit)])
>>> def judge(fit, held, fold):
...     return lca_comparisons(y, fit, 100, queries=held, random_state=fold)
>>> best, scores = select_beta(embed, T.train_comparisons, judge, [1e2, 1e3], labels=y)
>>> best in (1e2, 1e3), sorted(scores) == [1e2, 1e3]
(True, True)
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold

from ..comparisons import Comparisons, check_comparisons
from ..metrics import gauc

__all__ = ["restrict", "select_beta"]


def restrict(C, items):
    """The comparisons of ``C`` among ``items`` only, re-indexed to positions in ``items``.

    Parameters
    ----------
    C : Comparisons
        Comparisons over all the items.
    items : array of int
        The items to keep, in the order that gives their new indices.

    Returns
    -------
    Comparisons
        The comparisons whose four indices all lie in ``items``, over ``len(items)`` items.
    """
    items = np.asarray(items)
    if items.ndim != 1 or not np.issubdtype(items.dtype, np.integer):
        raise ValueError(f"'items' must be a 1-D array of item indices; got {items!r}.")
    if len(items) and (items.min() < 0 or items.max() >= C.n_items):
        raise ValueError(f"'items' must lie in [0, {C.n_items}); got {items.min()}..{items.max()}.")
    if len(np.unique(items)) != len(items):
        raise ValueError("'items' must not repeat an item.")
    pos = np.full(C.n_items, -1)
    pos[items] = np.arange(len(items))
    arr = pos[C.to_array()]
    return Comparisons.from_array(arr[(arr >= 0).all(axis=1)].reshape(-1, 4), n_items=len(items))


def select_beta(embed, comparisons, judge, betas, *, labels, n_splits=3, random_state=0):
    """The β of ``betas`` with the best mean held-out-item GAUC; ``(beta, {beta: score})``.

    Parameters
    ----------
    embed : callable
        ``embed(beta, C, fit, held)`` → ``(Z_fit, Z_held)``: learn from the comparisons
        ``C`` (indexed by position in ``fit``) and embed the items ``fit`` and ``held``
        (arrays of item indices).
    comparisons : Comparisons
        The training comparisons over all the items.
    judge : callable
        ``judge(fit, held, fold)`` → comparisons ``(i, j, i, k)`` over all the items with
        ``i`` in ``held`` and ``j, k`` in ``fit``: the validation comparisons.
    betas : sequence of float
        The grid (the paper: ``10⁻², …, 10⁶``). Ties go to the smaller β.
    labels : array of shape (n_items,)
        Stratifies the folds (``None``: plain shuffled folds).
    n_splits : int
        Folds of the training items.
    random_state : int
        Seeds the folds.

    Returns
    -------
    beta : float
        The best β.
    scores : dict
        Each β of the grid → its mean validation GAUC over the folds.
    """
    C = check_comparisons(comparisons, owner="select_beta")
    grid = np.asarray(betas, dtype=float)
    if grid.ndim != 1 or not len(grid) or not np.all(np.isfinite(grid) & (grid > 0)):
        raise ValueError(f"'betas' must be a non-empty sequence of finite β > 0; got {betas!r}.")
    if labels is not None and len(labels) != C.n_items:
        raise ValueError(f"'labels' must have one label per item ({C.n_items}); got {len(labels)}.")
    n = C.n_items
    folds = (
        KFold(n_splits, shuffle=True, random_state=random_state)
        if labels is None
        else StratifiedKFold(n_splits, shuffle=True, random_state=random_state)
    )
    scores = {float(b): [] for b in betas}
    for f, (fit, held) in enumerate(folds.split(np.zeros(n), labels)):
        local, checks = restrict(C, fit), judge(fit, held, f)
        for b in scores:
            Z_fit, Z_held = embed(b, local, fit, held)
            Z = np.zeros((n, Z_fit.shape[1]))
            Z[fit], Z[held] = Z_fit, Z_held
            scores[b].append(gauc(Z, checks))
    mean = {b: float(np.mean(s)) for b, s in scores.items()}
    return max(sorted(mean), key=mean.__getitem__), mean
