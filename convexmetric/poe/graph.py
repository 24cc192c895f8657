"""Graph processing of relative comparisons (McFee & Lanckriet 2011, §2 and App. A).

A set of comparisons is a directed graph over *pair-vertices*: the comparison
``(i, j, k, l)`` is an edge from the unordered pair ``{i, j}`` to ``{k, l}``
("``d(i, j) < d(k, l)``"). A cycle can never be embedded; an edge implied by a path is
redundant. :func:`filter_comparisons` runs the paper's stages in order:

1. ``duplicates`` — repeated edges (also ``(j, i, l, k)`` repeating ``(i, j, k, l)``);
2. ``length2_cycles`` — both ``(a, b)`` and ``(b, a)`` are dropped (§5.2.4);
3. ``acyclic`` — Algorithm 1, the greedy ½-approximate maximum acyclic subgraph: edges
   in a seeded random order, each kept if the graph stays acyclic. The test is an
   incremental topological order (Pearce & Kelly 2006): an edge ``u → v`` with
   ``ord(u) < ord(v)`` is accepted at once; otherwise only the vertices ordered between
   ``v`` and ``u`` are searched, and reordered if no cycle is found;
4. ``transitive_reduction`` — the minimal graph with the same transitive closure
   (Aho et al. 1972; equal to ``networkx.transitive_reduction``, faster on sparse data).

Every stage reports the indices (into the input) of the comparisons it removed, so
results map back to the raw data. :func:`total_order_embedding` is the constructive
proof of App. A: points satisfying every comparison of an acyclic set.

>>> from convexmetric.comparisons import Comparisons
>>> C = Comparisons.from_array([[0, 1, 0, 2], [0, 2, 0, 1], [0, 1, 1, 2], [1, 2, 0, 2]])
>>> report = filter_comparisons(C, random_state=0)
>>> [(s.name, s.removed.tolist()) for s in report.stages]
[('duplicates', []), ('length2_cycles', [0, 1]), ('acyclic', []), ('transitive_reduction', [])]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ..comparisons import Comparisons

STAGES = ("duplicates", "length2_cycles", "acyclic", "transitive_reduction")


@dataclass
class FilterStage:
    """One stage of :func:`filter_comparisons`: ``removed`` indexes the input comparisons."""

    name: str
    removed: np.ndarray
    remaining: int


@dataclass
class FilterReport:
    """The filtered comparisons, the kept input indices and the per-stage removals."""

    comparisons: Comparisons
    kept: np.ndarray
    n_input: int
    stages: list = field(default_factory=list)

    def summary(self):
        """A JSON-ready dict: input size, per-stage removal counts, output size."""
        return {
            "input": self.n_input,
            "stages": [
                {"stage": s.name, "removed": len(s.removed), "remaining": s.remaining}
                for s in self.stages
            ],
            "output": len(self.kept),
        }

    def removed(self, stage):
        """Input indices removed by ``stage`` (one of :data:`STAGES`)."""
        for s in self.stages:
            if s.name == stage:
                return s.removed
        raise ValueError(
            f"no stage {stage!r}; the stages run were {[s.name for s in self.stages]}."
        )


def _vertices(C):
    """Compact vertex ids of the left and right pairs, and the number of vertices."""
    left, right = C.pair_keys()
    keys, inv = np.unique(np.concatenate([left, right]), return_inverse=True)
    m = len(C)
    return inv[:m], inv[m:], len(keys)


def comparison_graph(C):
    """The directed graph over pair-vertices ``(min, max)``; edge attribute ``index``.

    Duplicate edges keep the index of their first occurrence.
    """
    G = nx.DiGraph()
    n_edges = 0
    for t, (i, j, k, l) in enumerate(C.to_array().tolist()):
        u, v = (min(i, j), max(i, j)), (min(k, l), max(k, l))
        if not G.has_edge(u, v):
            G.add_edge(u, v, index=t)
            n_edges += 1
    return G


def drop_duplicates(C):
    """Indices of the first occurrence of every distinct (unordered-pair) edge."""
    left, right = C.pair_keys()
    n = max(C.n_items, 1) ** 2
    _, first = np.unique(left * n + right, return_index=True)
    return np.sort(first)


def remove_length2_cycles(C):
    """Indices of the comparisons whose reverse edge is absent (§5.2.4)."""
    left, right = C.pair_keys()
    n = max(C.n_items, 1) ** 2
    fwd, rev = left * n + right, right * n + left
    return np.flatnonzero(~np.isin(fwd, rev))


def acyclic_subgraph(C, *, random_state=None):
    """Algorithm 1: indices of a maximal acyclic subset (greedy, seeded random order).

    Each edge is kept iff it closes no cycle with the edges kept so far; the test uses
    an incremental topological order, so a typical edge costs a search over the few
    vertices ordered between its endpoints, not a cycle search over the whole graph.
    """
    u_all, v_all, n_v = _vertices(C)
    rng = np.random.default_rng(random_state)
    order = rng.permutation(len(C))
    out_adj = [[] for _ in range(n_v)]
    in_adj = [[] for _ in range(n_v)]
    pos = list(range(n_v))  # the topological position of each vertex
    keep = []
    for t, u, v in zip(order.tolist(), u_all[order].tolist(), v_all[order].tolist()):
        lo, hi = pos[v], pos[u]
        if lo < hi:  # u is after v: search the affected region [lo, hi]
            fwd, stack, seen, cycle = [], [v], {v}, False
            while stack and not cycle:
                w = stack.pop()
                fwd.append(w)
                for x in out_adj[w]:
                    if x == u:
                        cycle = True
                        break
                    if x not in seen and pos[x] < hi:
                        seen.add(x)
                        stack.append(x)
            if cycle:
                continue
            back, stack, seen_b = [], [u], {u}
            while stack:
                w = stack.pop()
                back.append(w)
                for x in in_adj[w]:
                    if x not in seen_b and pos[x] > lo:
                        seen_b.add(x)
                        stack.append(x)
            back.sort(key=pos.__getitem__)
            fwd.sort(key=pos.__getitem__)
            moved = back + fwd
            slots = sorted(pos[w] for w in moved)
            for w, p in zip(moved, slots):
                pos[w] = p
        out_adj[u].append(v)
        in_adj[v].append(u)
        keep.append(t)
    return np.sort(np.asarray(keep, dtype=np.int64))


def _topological_positions(u_all, v_all, n_v):
    """Kahn's algorithm: the position of each vertex, or ``None`` if there is a cycle."""
    out_adj = [[] for _ in range(n_v)]
    indeg = [0] * n_v
    for u, v in zip(u_all.tolist(), v_all.tolist()):
        out_adj[u].append(v)
        indeg[v] += 1
    stack = [w for w in range(n_v) if indeg[w] == 0]
    pos, p = [0] * n_v, 0
    while stack:
        w = stack.pop()
        pos[w], p = p, p + 1
        for x in out_adj[w]:
            indeg[x] -= 1
            if indeg[x] == 0:
                stack.append(x)
    return (pos, out_adj) if p == n_v else (None, out_adj)


def transitive_reduction(C):
    """Indices of the comparisons that form the transitive reduction of an acyclic set.

    Duplicate edges keep their first occurrence. An edge ``u → v`` is redundant iff
    ``v`` is reachable from ``u`` by a path of two or more edges; only vertices with at
    least two successors can have one, and the search from them stops at vertices
    ordered after their last successor. The result equals
    ``networkx.transitive_reduction`` (checked in the tests) but is much faster on the
    sparse graphs of comparison data.
    """
    first = drop_duplicates(C)
    u_all, v_all, n_v = _vertices(C[first])
    pos, out_adj = _topological_positions(u_all, v_all, n_v)
    if pos is None:
        raise ValueError(
            "Acyclic comparisons required for transitive_reduction; run acyclic_subgraph "
            "(or filter_comparisons) first."
        )
    redundant = set()
    for u in range(n_v):
        children = out_adj[u]
        if len(children) < 2:
            continue
        limit = max(pos[c] for c in children)
        seen, stack = set(), []
        for c in children:
            stack.extend(x for x in out_adj[c] if pos[x] <= limit)
        while stack:
            w = stack.pop()
            if w in seen:
                continue
            seen.add(w)
            stack.extend(x for x in out_adj[w] if pos[x] <= limit and x not in seen)
        redundant.update((u, c) for c in children if c in seen)
    keep = [
        t
        for t, u, v in zip(first.tolist(), u_all.tolist(), v_all.tolist())
        if (u, v) not in redundant
    ]
    return np.asarray(keep, dtype=np.int64)


def filter_comparisons(C, *, random_state=None, stages=STAGES):
    """Run the graph-processing stages of §2.2 in order; return a :class:`FilterReport`.

    Parameters
    ----------
    C : Comparisons
    random_state : int or Generator, optional
        Seeds the random edge order of Algorithm 1.
    stages : sequence of str
        A subset of :data:`STAGES` (run in the canonical order).
    """
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; choose from {list(STAGES)}.")
    funcs = {
        "duplicates": drop_duplicates,
        "length2_cycles": remove_length2_cycles,
        "acyclic": lambda c: acyclic_subgraph(c, random_state=random_state),
        "transitive_reduction": transitive_reduction,
    }
    if "transitive_reduction" in stages and not {"duplicates", "acyclic"} <= set(stages):
        raise ValueError("the transitive_reduction stage needs the duplicates and acyclic stages.")
    kept = np.arange(len(C))
    current = C
    report = FilterReport(comparisons=C, kept=kept, n_input=len(C))
    for name in STAGES:
        if name not in stages:
            continue
        local = funcs[name](current)
        mask = np.ones(len(current), bool)
        mask[local] = False
        report.stages.append(FilterStage(name, kept[mask], len(local)))
        kept = kept[local]
        current = current[local]
    report.comparisons, report.kept = current, kept
    return report


def total_order_dissimilarities(C, n_items=None):
    """Algorithm 5: a dissimilarity matrix ``Δ`` with ``Δ_kl ≥ Δ_ij + 1`` on every edge.

    Pair-vertices are visited in topological order; a source gets 1, any other pair
    ``1 + max`` over its predecessors. Pairs outside the graph get 1.
    """
    n = C.n_items if n_items is None else int(n_items)
    G = comparison_graph(C)
    if not nx.is_directed_acyclic_graph(G):
        raise ValueError(
            "Acyclic comparisons required for the total-order embedding (App. A); "
            "run filter_comparisons first."
        )
    Delta = np.ones((n, n))
    np.fill_diagonal(Delta, 0.0)
    for a, b in nx.topological_sort(G):
        preds = [Delta[p] for p in G.predecessors((a, b))]
        Delta[a, b] = Delta[b, a] = 1.0 + max(preds, default=0.0)
    return Delta


def total_order_embedding(C, n_items=None):
    """App. A: points whose squared distances satisfy every comparison of an acyclic set.

    Classical MDS of Algorithm 5's ``Δ`` (``A = −½ HΔH``) and the constant shift
    ``Â = A − λ_min(A) I`` (Roth et al. 2003): squared distances become
    ``Δ_ij − 2λ_min`` for ``i ≠ j``, a constant shift, so each unit margin of ``Δ``
    survives. Returns an ``(n, r)`` array, ``r ≤ n − 1``.

    >>> from convexmetric.comparisons import Comparisons
    >>> Z = total_order_embedding(Comparisons.from_array([[0, 1, 0, 2], [0, 2, 1, 2]]))
    >>> d = lambda a, b: float(((Z[a] - Z[b]) ** 2).sum())
    >>> d(0, 1) + 1 <= d(0, 2) + 1e-9 and d(0, 2) + 1 <= d(1, 2) + 1e-9
    True
    """
    Delta = total_order_dissimilarities(C, n_items)
    n = Delta.shape[0]
    H = np.eye(n) - 1.0 / n
    A = -0.5 * H @ Delta @ H
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    w = w - w[0]  # the constant shift: the smallest eigenvalue becomes 0
    keep = w > 1e-12 * max(1.0, w[-1])
    w, V = w[keep][::-1], V[:, keep][:, ::-1]
    return V * np.sqrt(w)
