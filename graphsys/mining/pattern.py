"""User patterns: count and list the matches of a small connected graph, labelled or not,
induced or not.

A :class:`Pattern` is an edge list over nodes ``0..k-1`` (``k <= 8``), with an optional
label per node. It is compiled, once, into a *plan* (Peregrine's pattern-aware matching
[1]_): a matching order (a node of most edges first, then repeatedly the node with most
edges to the nodes already placed, so every step extends a connected match), and
symmetry-breaking conditions ``id(a) < id(b)`` derived from the pattern's automorphisms
(Grochow and Kellis [2]_: while the group is not trivial, take the first node in matching
order with a non-trivial orbit, require it below every other node of its orbit, and keep
its stabiliser), so every subgraph is matched exactly once instead of once per
automorphism.

The matcher (:func:`graphsys.mining.match_kernels.match_count`) extends a match level by level:
a level's candidates are the neighbours of its placed neighbour with the shortest row,
kept when they are adjacent to its other placed neighbours (binary searches in sorted rows),
non-adjacent to the others (induced matching), above/below the ids its conditions name
(which also bounds the scan of the row), distinct, and of the right label. Roots are split
into tasks of about equal work, ``prange`` with dynamic scheduling; listing runs in one
thread, in root order, so the first ``limit`` matches are the same run to run.

An unlabelled complete pattern is counted by the clique kernel instead
(:mod:`graphsys.mining.clique`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from graphsys import views
from graphsys.errors import ParameterError
from graphsys.mining import match_kernels
from graphsys.mining._docs import document
from graphsys.mining.parallel import Ranks, run_tasks, scheduled
from graphsys.mining.results import as_graph, original_ids

#: The most nodes a pattern may have.
MAX_NODES = 8
#: Rows :func:`matches` returns when no ``limit`` is given.
DEFAULT_LIMIT = 10_000

#: Named patterns: edge lists over ``0..k-1``.
NAMED = {
    "edge": [(0, 1)],
    "wedge": [(0, 1), (1, 2)],
    "triangle": [(0, 1), (1, 2), (0, 2)],
    "4-path": [(0, 1), (1, 2), (2, 3)],
    "3-star": [(0, 1), (0, 2), (0, 3)],
    "4-cycle": [(0, 1), (1, 2), (2, 3), (3, 0)],
    "tailed-triangle": [(0, 1), (1, 2), (0, 2), (2, 3)],
    "diamond": [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)],
    "4-clique": [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)],
    "5-cycle": [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)],
    "house": [(0, 1), (1, 2), (2, 3), (3, 0), (0, 4), (1, 4)],
}


@dataclass(frozen=True)
class Plan:
    """A pattern compiled for the matcher: per level (matching order), which earlier levels
    it must be adjacent / non-adjacent to, above / below, and its label."""

    order: np.ndarray      # int64 (k,): level -> pattern node
    adj: np.ndarray        # bool (k, k)
    nonadj: np.ndarray     # bool (k, k)
    greater: np.ndarray    # bool (k, k)
    less: np.ndarray       # bool (k, k)
    labels: np.ndarray     # int64 (k,), -1: any


class Pattern:
    """A small connected graph to match: edges over nodes ``0..k-1``, labels optional.

    Parameters
    ----------
    edges : sequence of (int, int)
        Undirected edges between pattern nodes ``0..k-1`` (each once; no self-loop); every
        node must lie on an edge and the pattern must be connected.
    labels : sequence of int or None, optional
        One label per node (a value of the graph's label column), or None/-1 for a node
        that matches any label.

    Attributes
    ----------
    num_nodes : int
    edges : tuple of (int, int)
        Sorted, each as ``(a, b)`` with ``a < b``.
    labels : tuple of int
        ``-1`` where any label matches.

    Examples
    --------
    >>> p = Pattern.named("diamond")
    >>> p.num_nodes, len(p.edges), p.automorphisms()
    (4, 5, 4)
    >>> Pattern([(0, 1), (1, 2)], labels=[7, None, 7]).labels
    (7, -1, 7)
    """

    def __init__(self, edges, labels=None):
        try:
            pairs = [(int(a), int(b)) for a, b in edges]
        except (TypeError, ValueError):
            raise ParameterError("pattern", "edges must be pairs of node numbers") from None
        if not pairs:
            raise ParameterError("pattern", "needs at least one edge")
        nodes = sorted({x for e in pairs for x in e})
        k = len(nodes)
        if nodes != list(range(k)):
            raise ParameterError("pattern", f"nodes must be numbered 0..k-1 with every one on "
                                            f"an edge, got {nodes}")
        if k > MAX_NODES:
            raise ParameterError("pattern", f"has {k} nodes, more than {MAX_NODES}")
        if any(a == b for a, b in pairs):
            raise ParameterError("pattern", "has a self-loop")
        self.num_nodes = k
        self.edges = tuple(sorted({(min(a, b), max(a, b)) for a, b in pairs}))
        if labels is None:
            labels = [-1] * k
        labels = list(labels)
        if len(labels) != k:
            raise ParameterError("pattern", f"has {k} nodes but {len(labels)} labels")
        self.labels = tuple(-1 if x is None else int(x) for x in labels)
        self._adj = np.zeros((k, k), bool)
        for a, b in self.edges:
            self._adj[a, b] = self._adj[b, a] = True
        if not self._connected():
            raise ParameterError("pattern", "must be connected")

    @classmethod
    def named(cls, name: str, labels=None) -> Pattern:
        """A pattern by name: one of :data:`NAMED`, or ``"K-clique"`` for ``K`` in 2..8.

        Examples
        --------
        >>> Pattern.named("5-clique").num_nodes
        5
        """
        if name in NAMED:
            return cls(NAMED[name], labels)
        head, _, tail = name.partition("-")
        if tail == "clique" and head.isdigit() and 2 <= int(head) <= MAX_NODES:
            return cls(itertools.combinations(range(int(head)), 2), labels)
        known = ", ".join([*NAMED, "K-clique"])
        raise ParameterError("pattern", f"unknown pattern {name!r} (known: {known})")

    def __repr__(self) -> str:
        lab = "" if all(x < 0 for x in self.labels) else f", labels={list(self.labels)}"
        return f"Pattern({list(self.edges)}{lab})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Pattern) and (self.edges, self.labels) == (other.edges,
                                                                          other.labels)

    def __hash__(self) -> int:
        return hash((self.edges, self.labels))

    @property
    def labelled(self) -> bool:
        return any(x >= 0 for x in self.labels)

    @property
    def is_clique(self) -> bool:
        k = self.num_nodes
        return len(self.edges) == k * (k - 1) // 2

    def _connected(self) -> bool:
        seen, todo = {0}, [0]
        while todo:
            a = todo.pop()
            for b in np.flatnonzero(self._adj[a]).tolist():
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return len(seen) == self.num_nodes

    def automorphism_group(self) -> list[tuple[int, ...]]:
        """Every permutation of the nodes that keeps the edges and the labels (identity
        included), found by backtracking."""
        k = self.num_nodes
        deg = self._adj.sum(1)
        out: list[tuple[int, ...]] = []
        perm = [-1] * k
        used = [False] * k

        def extend(i: int) -> None:
            if i == k:
                out.append(tuple(perm))
                return
            for c in range(k):
                if used[c] or deg[c] != deg[i] or self.labels[c] != self.labels[i]:
                    continue
                if all(self._adj[i, j] == self._adj[c, perm[j]] for j in range(i)):
                    perm[i], used[c] = c, True
                    extend(i + 1)
                    perm[i], used[c] = -1, False

        extend(0)
        return out

    def automorphisms(self) -> int:
        """The size of the automorphism group: how many times an unbroken matcher would
        find each subgraph."""
        return len(self.automorphism_group())

    def matching_order(self) -> list[int]:
        """Pattern nodes in the order the matcher places them."""
        k = self.num_nodes
        deg = self._adj.sum(1)
        first = max(range(k), key=lambda v: (deg[v], self.labels[v] >= 0, -v))
        order = [first]
        while len(order) < k:
            rest = [v for v in range(k) if v not in order]
            order.append(max(rest, key=lambda v: (int(self._adj[v, order].sum()), deg[v],
                                                  self.labels[v] >= 0, -v)))
        return order

    def conditions(self) -> list[tuple[int, int]]:
        """Symmetry-breaking conditions ``(a, b)``: a match maps ``a`` below ``b``."""
        group = self.automorphism_group()
        conds = []
        for v in self.matching_order():
            if len(group) == 1:
                break
            orbit = sorted({p[v] for p in group})
            if len(orbit) == 1:
                continue
            conds += [(v, w) for w in orbit if w != v]
            group = [p for p in group if p[v] == v]
        return conds

    def plan(self, induced: bool) -> Plan:
        """The compiled plan (see the module's notes)."""
        order = self.matching_order()
        k = self.num_nodes
        level = {v: i for i, v in enumerate(order)}
        adj = np.zeros((k, k), bool)
        nonadj = np.zeros((k, k), bool)
        greater = np.zeros((k, k), bool)
        less = np.zeros((k, k), bool)
        for i, v in enumerate(order):
            for j, w in enumerate(order[:i]):
                adj[i, j] = self._adj[v, w]
                nonadj[i, j] = induced and not self._adj[v, w]
        for a, b in self.conditions():  # id(a) < id(b): checked at the later level
            la, lb = level[a], level[b]
            if la < lb:
                greater[lb, la] = True
            else:
                less[la, lb] = True
        return Plan(np.array(order, np.int64), adj, nonadj, greater, less,
                    np.array([self.labels[v] for v in order], np.int64))


def as_pattern(pattern) -> Pattern:
    """A :class:`Pattern`, a pattern name, or an edge list."""
    if isinstance(pattern, Pattern):
        return pattern
    if isinstance(pattern, str):
        return Pattern.named(pattern)
    return Pattern(pattern)


def _node_labels(g, labels, view) -> np.ndarray:
    """The data graph's labels by new id (int64), or an empty array."""
    if labels is None:
        return np.zeros(0, np.int64)
    if isinstance(labels, str):
        values = g.node_column(labels)
    else:
        values = np.asarray(labels)
    if values.ndim != 1 or len(values) != g.num_nodes():
        raise ParameterError("labels", f"must be a node column name or one integer per node "
                                       f"({g.num_nodes()}), got shape {values.shape}")
    if not np.issubdtype(values.dtype, np.integer):
        raise ParameterError("labels", f"must be integers, got {values.dtype}")
    return np.ascontiguousarray(values.astype(np.int64)[view.order])


def _prepare(graph, pattern, labels, edge_set, memory_limit):
    g = as_graph(graph)
    p = as_pattern(pattern)
    if p.labelled and labels is None:
        raise ParameterError("labels", "must name a node column: the pattern has labels")
    view = views.view(g, "oriented", edge_set=edge_set, memory_limit=memory_limit)
    return g, p, view, _node_labels(g, labels, view)


@document
def count(graph, pattern, *, induced: bool = False, labels=None, edge_set: str | None = None,
          threads: int | None = None, memory_limit: int | None = None,
          distributed: bool = False, progress: bool = False) -> int:
    """The number of subgraphs of the graph that match ``pattern``.

    Non-induced (default): subgraphs whose edges include a copy of the pattern (other edges
    among the matched nodes allowed), each copy counted once. Induced: node sets whose
    induced subgraph is exactly the pattern.

    Parameters
    ----------
    %(graph)s
    pattern : Pattern or str or sequence of (int, int)
        The pattern, a name (:meth:`Pattern.named`) or an edge list.
    induced : bool, default False
        Count induced matches.
    labels : str or array-like, optional
        The graph's node labels (a node column of integers, or one integer per node by
        internal id), required when the pattern has labels.
    %(edge_set)s
    %(options)s

    Returns
    -------
    int

    References
    ----------
    .. [1] K. Jamshidi, R. Mahadasa, K. Vora, "Peregrine: A Pattern-Aware Graph Mining
       System", EuroSys 2020.
    .. [2] J. A. Grochow, M. Kellis, "Network Motif Discovery Using Subgraph Enumeration
       and Symmetry-Breaking", RECOMB 2007.

    Examples
    --------
    A 4-cycle 1-2-3-4 with the chord 1-3, labels 0 on odd nodes and 1 on even ones:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> g = graphsys.from_numpy(np.array([1, 2, 3, 4, 1]), np.array([2, 3, 4, 1, 3]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> mining.count(g, "4-cycle"), mining.count(g, "4-cycle", induced=True)
    (1, 0)
    >>> mining.count(g, "wedge", induced=True)
    2
    >>> labels = g.node_ids() % 2
    >>> mining.count(g, mining.Pattern([(0, 1), (1, 2)], labels=[0, 1, 0]), labels=labels)
    2
    """
    g, p, view, node_labels = _prepare(graph, pattern, labels, edge_set, memory_limit)
    ranks = Ranks.of(distributed, g)
    if p.is_clique and not p.labelled:
        if p.num_nodes == 2:
            return view.num_edges
        from graphsys.mining.clique import clique_count

        return clique_count(g, p.num_nodes, edge_set=edge_set, threads=threads,
                            memory_limit=memory_limit, distributed=distributed,
                            progress=progress)
    plan = p.plan(bool(induced))
    ptr, idx = view.full()
    deg = view.degree
    work = deg * np.minimum(deg, 1 << 20) if p.num_nodes > 2 else deg.copy()
    lo, hi = ranks.roots(work)
    max_row = int(deg.max()) if len(deg) else 0
    none = np.zeros(0, np.int64)
    with scheduled(threads) as nthreads:
        total = run_tasks(lambda tasks: match_kernels.match_count(ptr, idx, node_labels, tasks,
                                                            plan.adj, plan.nonadj,
                                                            plan.greater, plan.less,
                                                            plan.labels, max_row, none),
                          work, lo, hi, nthreads, progress=progress, desc="matches")
    return int(ranks.sum(np.array([total], np.int64))[0])


@document
def matches(graph, pattern, *, induced: bool = False, labels=None,
            limit: int | None = DEFAULT_LIMIT, edge_set: str | None = None,
            memory_limit: int | None = None) -> np.ndarray:
    """List matches of ``pattern``: one row per matched subgraph, the graph node of each
    pattern node.

    Matches come in a fixed order (by their node placed first, in ascending degree, then
    depth first), so the first ``limit`` are the same on every run.

    Parameters
    ----------
    %(graph)s
    pattern : Pattern or str or sequence of (int, int)
        The pattern, a name or an edge list.
    induced : bool, default False
        Induced matches only.
    labels : str or array-like, optional
        The graph's node labels, required when the pattern has labels (see :func:`count`).
    limit : int or None, default 10000
        The most rows; None: all matches (counted first, to size the answer).
    %(edge_set)s
    %(memory_limit)s

    Returns
    -------
    numpy.ndarray
        (C, k) original node ids (int64, or ``object`` for string ids); column ``i`` is the
        graph node matched to pattern node ``i``.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> g = graphsys.from_numpy(np.array([1, 2, 3, 4, 1]), np.array([2, 3, 4, 1, 3]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> rows = mining.matches(g, "triangle")
    >>> sorted(sorted(r) for r in rows.tolist())
    [[1, 2, 3], [1, 3, 4]]
    >>> mining.matches(g, [(0, 1), (1, 2)], induced=True).shape
    (2, 3)
    """
    g, p, view, node_labels = _prepare(graph, pattern, labels, edge_set, memory_limit)
    if limit is None:
        limit = count(g, p, induced=induced, labels=labels, edge_set=edge_set,
                      memory_limit=memory_limit)
    elif isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
        raise ParameterError("limit", f"must be a non-negative integer or None, got {limit!r}")
    plan = p.plan(bool(induced))
    ptr, idx = view.full()
    max_row = int(view.degree.max()) if view.num_nodes else 0
    out = np.empty((int(limit), p.num_nodes), np.int64)
    got = int(match_kernels.match_list(ptr, idx, node_labels, plan.adj, plan.nonadj, plan.greater,
                                 plan.less, plan.labels, max_row, int(limit), out)) \
        if limit else 0
    rows = np.empty((got, p.num_nodes), np.int64)
    rows[:, plan.order] = view.order[out[:got]]
    return original_ids(g, rows)
