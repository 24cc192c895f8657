"""``memory_limit`` bounds what an LMNN fit allocates (issue 67, case 13).

Measured with tracemalloc (NumPy reports its buffers to it): every allocation of the
fit, the data's copies included. Before, each solve allocated (untouched) a 31 MiB
block to settle glibc's heap (``convexmetric._memory``), whatever the limit: a 32 MB
peak for every limit from 1 byte to 20 MiB.
"""

import tracemalloc

import pytest

from convexmetric import LMNN, datasets


@pytest.mark.parametrize("limit", [2**20, 4 * 2**20])
def test_the_fit_allocates_within_its_memory_limit(limit):
    X, _, y, _ = datasets.load_split("iris")
    tracemalloc.start()
    try:
        m = LMNN(memory_limit=limit).fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert m.result_.status == "optimal"
    assert peak <= limit, f"peak {peak / 2**20:.2f} MiB above memory_limit={limit}"


def test_the_heap_is_settled_at_the_default_limit():
    from convexmetric._memory import SETTLE_BYTES, settle_heap

    tracemalloc.start()
    try:
        settle_heap(SETTLE_BYTES - 1)
        small = tracemalloc.get_traced_memory()[1]
        settle_heap()
        default = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert small < 2**20 <= SETTLE_BYTES <= default
