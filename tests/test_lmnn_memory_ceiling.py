"""``memory_limit`` bounds what an LMNN fit allocates (issue 67, case 13).

Measured with tracemalloc (NumPy reports its buffers to it): every allocation of the
fit, the data's copies included (the caller's ``X`` is allocated before tracing starts).
The fit allocates at most ``memory_limit`` plus its data's share
(:func:`convexmetric.lmnn.blocks.data.data_share`: copies of ``X`` and its projections,
the solver's d × d state), the bound it reports as ``result_.info["memory_bound"]``; a
limit below the smallest plan is refused, naming ``memory_limit``. Before: blocks
clamped to 8 rows past any limit with no word said, and one d × d sum kept per row block
until the map's end (600 digits at 64 KiB: 5.1 MiB).
"""

import tracemalloc

import numpy as np
import pytest
from sklearn.datasets import load_digits

from convexmetric import LMNN, datasets
from convexmetric.lmnn.blocks.data import data_share, least_budget


def _data(name):
    if name == "digits300":
        X, y = load_digits(return_X_y=True)
        return np.ascontiguousarray(X[:300]), y[:300]
    return datasets.load(name)


def _peak(est, X, y):
    tracemalloc.start()
    try:
        est.fit(X, y)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("times", [1, 4, 32])
@pytest.mark.parametrize("name", ["iris", "wine", "digits300"])
def test_the_fit_allocates_within_its_reported_bound(name, times):
    X, y = _data(name)
    limit = times * least_budget(*X.shape, 3)
    est = LMNN(memory_limit=limit, max_iter=60)
    peak = _peak(est, X, y)
    bound = est.result_.info["memory_bound"]
    assert bound == limit + data_share(*X.shape, 3)
    assert peak <= bound, f"peak {peak / 2**20:.2f} MiB above the bound {bound / 2**20:.2f} MiB"
    if times == 1:  # the smallest plan streams
        assert est.result_.info["mode"] == "streaming"


def test_a_limit_below_the_smallest_plan_is_refused():
    X, y = datasets.load("wine")
    least = least_budget(*X.shape, 3)
    for limit in (1, least - 1):
        with pytest.raises(ValueError, match=rf"memory_limit={limit} bytes is below the {least}"):
            LMNN(memory_limit=limit).fit(X, y)
    with pytest.raises(ValueError, match=f"below the {2 * least} bytes .* each of 2 lanes"):
        LMNN(memory_limit=2 * least - 1, n_jobs=2).fit(X, y)
    assert LMNN(memory_limit=least).fit(X, y).result_.status == "optimal"
