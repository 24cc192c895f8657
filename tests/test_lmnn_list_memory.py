"""LMNN's compact active list: indices in the narrowest type, keys computed, not kept, and
the bytes per listed term within ``BYTES_PER_TERM`` (measured with tracemalloc)."""

import tracemalloc

import numpy as np

from convexmetric.lmnn.active_list import ActiveList
from convexmetric.lmnn.constants import BYTES_PER_TERM, MAX_LISTED_N
from convexmetric.lmnn.oracle import ActiveSetOracle
from convexmetric.neighbors import target_neighbors


def _long_list_instance(n=1200, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(n, d)), rng.integers(0, 3, n)
    return X, y, target_neighbors(X, y, 3)


def test_list_holds_int32_indices_and_sorted_keys():
    X, y, T = _long_list_instance(300)
    o = ActiveSetOracle(X, y, T, 0.5, prune=None)
    o.active.full_check(np.eye(X.shape[1]) * 0.3)
    t = o.active.terms
    assert len(t) > 1000
    assert {a.dtype for a in (t.I, t.J, t.L, t.pair_of, t.pair_I, t.pair_L)} == {np.dtype(np.int32)}
    assert t.slot.dtype == np.uint8 and "keys" not in vars(t)
    keys = t.keys
    assert keys.dtype == np.int64 and np.all(np.diff(keys) > 0)
    n = len(X)
    assert np.array_equal(keys, (t.I.astype(np.int64) * n + t.J) * n + t.L)
    assert np.array_equal(T[t.I, t.slot], t.J)
    assert np.array_equal(t.pair_I[t.pair_of], t.I)
    assert np.array_equal(t.pair_L[t.pair_of], t.L)
    # the list's own arrays: 12 bytes of indices, 1 of slot, 4 of pair index, pairs, masks
    own = sum(a.nbytes for a in (t.I, t.J, t.L, t.slot, t.pair_of, t.pair_I, t.pair_L))
    assert own <= 25 * len(t)


def test_keys_exact_past_int32_products():
    # n² > 2³¹: the pair keys i·n + l and the triplet keys overflow in int32 arithmetic
    n = 50_000
    X = np.arange(n, dtype=float)[:, None]
    y = np.arange(n) % 2
    T = np.stack([(np.arange(n) + 2) % n, (np.arange(n) + 4) % n], axis=1)
    lst = ActiveList(X, y, T, 0.5)
    I = np.array([n - 1, n - 1, 40_000, 3], np.int32)
    J = T[I, np.array([0, 1, 1, 0])]
    L = np.array([n - 2, 4, 39_999, n - 2], np.int32)
    assert lst.terms.merge(I, J, L)
    order = np.lexsort((L, J, I))
    assert np.array_equal(lst.terms.I, I[order]) and np.array_equal(lst.terms.L, L[order])
    assert np.array_equal(lst.terms.pair_I[lst.terms.pair_of], lst.terms.I)
    assert np.array_equal(lst.terms.pair_L[lst.terms.pair_of], lst.terms.L)
    assert np.array_equal(lst.terms.keys, np.sort((I.astype(np.int64) * n + J) * n + L))
    assert not lst.terms.merge(I[:2], J[:2], L[:2])  # nothing new


def _peak(fn):
    tracemalloc.reset_peak()
    fn()
    return tracemalloc.get_traced_memory()[1]


def test_bytes_per_listed_term_within_the_budget():
    X, y, T = _long_list_instance()
    o = ActiveSetOracle(X, y, T, 0.5, memory_limit=None, prune=None)
    L = np.eye(X.shape[1]) * 0.25
    M = L.T @ L
    tracemalloc.start()
    try:
        peaks = [_peak(lambda: o.active.full_check(M, L))]
        o.active.schedule.next = 10**9  # evaluations over the list only
        peaks.append(_peak(lambda: o(M, L)))
        o.active.terms.mask["lam"] = np.full(len(o.active.terms), 0.5)
        peaks.append(_peak(lambda: o.smooth(M, 0.03, components=L)))
        peaks.append(_peak(lambda: o.lower_bound(M, 0.03)))
    finally:
        tracemalloc.stop()
    assert len(o.active.terms) > 200_000  # the list, not the data, fills the memory
    assert max(peaks) / len(o.active.terms) <= BYTES_PER_TERM


def test_keys_that_would_overflow_stream_from_the_start():
    n = MAX_LISTED_N
    X = np.zeros((n, 1))
    X[::2] = 1.0
    y = np.arange(n) % 2
    T = ((np.arange(n) + 2) % n)[:, None]
    assert ActiveList(X, y, T, 0.5).mode == "streaming"
    assert ActiveList(X[:-2], y[:-2], T[:-2] % (n - 2), 0.5).mode == "active_set"
