r"""The graph filter of McFee & Lanckriet (JMLR 2011, §2.2 and Alg. 1), re-derived for the
verifier from the paper and from the documented seeded order of the solver package's
filter (nothing of it is imported): with ``filter_graph=True`` the kept comparisons are
part of the problem, so the verifier recomputes them instead of reading them.

**The graph.** Comparison ``(i, j, k, l)`` ("``d(i, j) < d(k, l)``") is an edge from the
unordered pair ``{i, j}`` to the unordered pair ``{k, l}``. The stages run in order, each
on the survivors of the previous one, and every index names an input comparison:

1. *duplicates*: the first occurrence of every edge ``u → v`` is kept;
2. *length-2 cycles*: an edge whose reverse ``v → u`` is present is dropped, with its
   reverse (a self-loop ``u → u`` is its own reverse);
3. *Alg. 1* (the greedy ½-approximate maximum acyclic subgraph): the survivors ``E₂``,
   in increasing input order, are visited in the order
   ``numpy.random.default_rng(random_state).permutation(len(E₂))``; an edge is kept iff
   it closes no cycle with the edges kept before it (tested here on an incremental
   topological order: Pearce & Kelly, JEA 11, 2006);
4. *transitive reduction*: a kept edge ``u → v`` is dropped iff ``v`` is reachable from
   ``u`` along two or more kept edges (Aho, Garey & Ullman 1972).

The result (:func:`filtered`) is the sorted array of the kept input indices.

**Without a replayable seed** (``random_state`` ``None`` or a generator) the order of
Alg. 1 is unknown, and :func:`alg1_possible` checks instead that the kept list ``T`` is a
possible output: ``T ⊆ E₂``, ``T`` acyclic and transitively reduced, and every edge
``a → b`` of ``E₂`` has ``b`` reachable from ``a`` in ``T`` (kept by Alg. 1, then
reduced) or ``a`` reachable from ``b`` (rejected: it closes a cycle). *Proof.* Alg. 1
returns a maximal acyclic ``S ⊆ E₂`` (a rejected edge closes a cycle with a subset of
``S``), and every maximal acyclic ``S`` is returned by the order that visits ``S``
first. Given ``T = TR(S)``, ``S`` has the closure of ``T``, so an edge of ``E₂`` lies in
``S`` iff it is implied by ``T`` (an implied edge that Alg. 1 rejected would close a
cycle inside ``S``); maximality is then the condition on the other edges. Conversely,
under the conditions ``S = {e ∈ E₂ : e implied by T}`` is acyclic, maximal, and
``TR(S) = T``.
"""

from __future__ import annotations

import numpy as np


def _edges(C):
    """Vertex ids ``(u, v)`` of the edges of ``C`` (``(m, 4)``) and the vertex count."""
    n = int(C.max()) + 1 if len(C) else 1
    left = np.minimum(C[:, 0], C[:, 1]) * n + np.maximum(C[:, 0], C[:, 1])
    right = np.minimum(C[:, 2], C[:, 3]) * n + np.maximum(C[:, 2], C[:, 3])
    keys, ids = np.unique(np.concatenate([left, right]), return_inverse=True)
    return ids[: len(C)], ids[len(C) :], len(keys)


def survivors(C):
    """Stages 1 and 2: the sorted input indices ``E₂``."""
    u, v, _ = _edges(C)
    _, first = np.unique(np.column_stack([u, v]), axis=0, return_index=True)
    first = np.sort(first)
    present = set(zip(u[first].tolist(), v[first].tolist()))
    return np.asarray([t for t in first.tolist() if (v[t], u[t]) not in present], np.int64)


def _reach(adj, start, inside):
    """``start`` and the vertices reachable from it through vertices ``inside``."""
    seen, stack = {start}, [start]
    while stack:
        for x in adj[stack.pop()]:
            if x not in seen and inside(x):
                seen.add(x)
                stack.append(x)
    return seen


def _greedy(u, v, nv, order):
    """Alg. 1 on the edges ``(u[t], v[t])`` visited in ``order``: the kept ``t``."""
    succ, pred = [[] for _ in range(nv)], [[] for _ in range(nv)]
    pos = list(range(nv))  # a topological order of the kept edges
    kept = []
    for t in order:
        a, b = u[t], v[t]
        if pos[a] > pos[b]:  # the order must change: is a reachable from b?
            ahead = _reach(succ, b, lambda x, hi=pos[a]: pos[x] <= hi)
            if a in ahead:
                continue  # a cycle
            behind = _reach(pred, a, lambda x, lo=pos[b]: pos[x] >= lo)
            slots = sorted(pos[x] for x in ahead | behind)
            moved = sorted(behind, key=pos.__getitem__) + sorted(ahead, key=pos.__getitem__)
            for x, p in zip(moved, slots):
                pos[x] = p
        succ[a].append(b)
        pred[b].append(a)
        kept.append(t)
    return kept


def _descendants(u, v, nv):
    """Bit sets of the vertices reachable (by one edge or more) from each vertex of the
    graph ``(u, v)``; ``None`` if it has a cycle."""
    succ, indeg = [[] for _ in range(nv)], [0] * nv
    for a, b in zip(u, v):
        succ[a].append(b)
        indeg[b] += 1
    order, stack = [], [x for x in range(nv) if indeg[x] == 0]
    while stack:  # Kahn
        x = stack.pop()
        order.append(x)
        for b in succ[x]:
            indeg[b] -= 1
            if indeg[b] == 0:
                stack.append(b)
    if len(order) != nv:
        return None, succ
    desc = [0] * nv
    for x in reversed(order):
        bits = 0
        for b in succ[x]:
            bits |= (1 << b) | desc[b]
        desc[x] = bits
    return desc, succ


def _redundant(u, v, desc, succ):
    """Which edges ``(u[t], v[t])`` are implied by a path of two or more edges."""
    through = [0] * len(succ)
    for x, children in enumerate(succ):
        for b in children:
            through[x] |= desc[b]
    return [bool(through[a] >> b & 1) for a, b in zip(u, v)]


def filtered(C, random_state):
    """The four stages with Alg. 1 seeded by the int ``random_state``: the sorted kept
    input indices."""
    C = np.asarray(C, dtype=np.int64)
    u, v, nv = _edges(C)
    E2 = survivors(C)
    order = np.random.default_rng(int(random_state)).permutation(len(E2))
    acyclic = np.sort(E2[_greedy(u[E2].tolist(), v[E2].tolist(), nv, order.tolist())])
    ua, va = u[acyclic].tolist(), v[acyclic].tolist()
    desc, succ = _descendants(ua, va, nv)
    drop = _redundant(ua, va, desc, succ)
    return acyclic[~np.asarray(drop, bool)] if len(acyclic) else acyclic


def alg1_possible(C, kept):
    """Why ``kept`` (sorted input indices) is not a possible output of the four stages for
    any order of Alg. 1 ("" if it is; module docstring)."""
    C = np.asarray(C, dtype=np.int64)
    u, v, nv = _edges(C)
    E2 = survivors(C)
    kept = np.asarray(kept, dtype=np.int64)
    if not np.isin(kept, E2).all():
        return "a kept comparison is a duplicate or part of a length-2 cycle"
    uk, vk = u[kept].tolist(), v[kept].tolist()
    desc, succ = _descendants(uk, vk, nv)
    if desc is None:
        return "the kept comparisons contain a cycle"
    if any(_redundant(uk, vk, desc, succ)):
        return "the kept comparisons are not transitively reduced"
    for a, b in zip(u[E2].tolist(), v[E2].tolist()):
        if not (desc[a] >> b & 1 or desc[b] >> a & 1):
            return "a comparison neither implied by the kept ones nor closing a cycle was dropped"
    return ""
