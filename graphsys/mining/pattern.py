"""User patterns: count and list the matches of a small connected graph, labelled or not,
induced or not.

A :class:`Pattern` (``k <= 8`` nodes, optional node and edge labels, anti-edges and arcs)
is compiled once into a :class:`Plan` (Peregrine's pattern-aware matching [1]_): a matching
order that keeps each step connected, and symmetry-breaking conditions ``id(a) < id(b)``
from its automorphisms (Grochow and Kellis [2]_), so every subgraph matches exactly once.
The matcher (:func:`graphsys.mining.match_kernels.match_count`) extends a match level by
level from the shortest row of a placed neighbour, parallel over roots; listing runs in
one thread, in root order, and streaming (:func:`iter_matches`) resumes the same search a
chunk at a time (:mod:`graphsys.mining.stream`). :meth:`Pattern.explain` prints the plan.
An unlabelled complete pattern goes to the clique kernel, and the induced count of an
unlabelled 3- or 4-node pattern to the motif census. ``docs/mining.md`` ("Your own
patterns") describes the plan and the checks of each level.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from graphsys import views
from graphsys.errors import ParameterError, check_count, check_flag
from graphsys.execution import Execution
from graphsys.mining import match_kernels, stream
from graphsys.mining._docs import document
from graphsys.mining.census import SHAPES, small_census
from graphsys.mining.edge_labels import NO_LISTS, label_column, label_lists
from graphsys.mining.parallel import Ranks, run_tasks, scheduled
from graphsys.mining.results import as_graph, check_beside, check_limit, listed_rows, original_ids

#: The most nodes a pattern may have.
MAX_NODES = 8

#: Rows :func:`matches` returns when no ``limit`` is given.
DEFAULT_LIMIT = 10_000
#: Anonymous bytes per node of a match call beside its oriented view and symmetric rows:
#: the rows' offsets, the labels, the work per root and its split.
MATCH_BYTES_PER_NODE = 40


def _whole(x, none: bool = False) -> int:
    """``x`` as an int: an integer, or a float with no fractional part (None as -1 where
    ``none``); anything else (a bool, a string, 1.5, a value past int64, which the label
    arrays hold) is a ``ValueError``, where ``int`` would truncate or parse it. ``none``
    (a label): a value below -1 too, since the matcher reads every negative label as any."""
    if none and x is None:
        return -1
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer, float,
                                                               np.floating)):
        raise ValueError(f"not an integer: {x!r}")
    if isinstance(x, (float, np.floating)) and not float(x).is_integer():
        raise ValueError(f"not an integer: {x!r}")
    if not -2**63 <= int(x) < 2**63:
        raise ValueError(f"not an int64: {x!r}")
    if none and int(x) < -1:
        raise ValueError(f"{x!r} is below -1; -1 or None matches any label")
    return int(x)


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
    # the other connected 5-node graphs (the 5-node motif census, with 5-clique)
    "4-star": [(0, 1), (0, 2), (0, 3), (0, 4)],
    "fork": [(0, 1), (0, 2), (0, 3), (3, 4)],                        # a 3-star, one arm longer
    "5-path": [(0, 1), (1, 2), (2, 3), (3, 4)],
    "cricket": [(0, 1), (1, 2), (2, 0), (0, 3), (0, 4)],            # two tails on one node
    "bull": [(0, 1), (1, 2), (2, 0), (0, 3), (1, 4)],               # tails on two nodes
    "lollipop": [(0, 1), (1, 2), (2, 0), (0, 3), (3, 4)],           # a tail of two edges
    "banner": [(0, 1), (1, 2), (2, 3), (3, 0), (0, 4)],             # a 4-cycle with a tail
    "dart": [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (0, 4)],       # diamond, tail on a hub
    "kite": [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 4)],       # diamond, tail on a tip
    "butterfly": [(0, 1), (1, 2), (2, 0), (0, 3), (3, 4), (4, 0)],  # two triangles, one node
    "k2-3": [(0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4)],
    "tailed-4-clique": [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (3, 4)],
    "book": [(0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (0, 4), (1, 4)],   # 3 triangles, 1 edge
    "gem": [(0, 1), (1, 2), (2, 3), (4, 0), (4, 1), (4, 2), (4, 3)],    # a 4-path and a hub
    "k2-3-plus-edge": [(0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3)],
    "k5-minus-wedge": [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (0, 4), (1, 4)],
    "wheel": [(0, 1), (1, 2), (2, 3), (3, 0), (4, 0), (4, 1), (4, 2), (4, 3)],
    "k5-minus-edge": [(a, b) for a in range(5) for b in range(a + 1, 5) if (a, b) != (3, 4)],
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
    dreq: np.ndarray       # uint8 (k, k): directions needed to an earlier level (directed)
    elab: np.ndarray       # int64 (k, k, 2): edge labels to an earlier level, -1: any
    directed: bool = False
    dexact: bool = False   # directions exactly dreq (directed and induced)

    def constraints(self, bits: np.ndarray, elists: tuple = NO_LISTS) -> tuple:
        """The matcher kernels' arguments after the data graph's labels: the plan's
        arrays, ``bits``, the data rows' directions (empty: undirected), and ``elists``,
        the rows' edge-label lists (:func:`~graphsys.mining.edge_labels.label_lists`;
        empty: not checked)."""
        return (self.adj, self.nonadj, self.greater, self.less, self.labels, bits,
                self.dreq, self.dexact, self.elab, *elists)


class Pattern:
    """A small connected graph to match: edges over nodes ``0..k-1``, labels optional.

    Parameters
    ----------
    edges : sequence of (int, int)
        Undirected edges between pattern nodes ``0..k-1`` (each once; no self-loop); every
        node must lie on an edge and the pattern must be connected.
    labels : sequence of int or None, optional
        One label per node (a value of the graph's label column), or None/-1 for a node
        that matches any label; a label below -1 is refused.
    anti_edges : sequence of (int, int), optional
        Pairs of pattern nodes whose graph nodes must not be adjacent (anti-edges, per
        pair; ``induced=True`` makes every non-edge one).
    directed : bool, default False
        Each edge ``(a, b)`` needs a stored edge from ``a``'s graph node to ``b``'s (both
        ``(a, b)`` and ``(b, a)``: both directions); induced, the stored directions of
        each matched pair are exactly the pattern's.
    edge_labels : sequence of int or None, or dict, optional
        One label per edge of ``edges``, in its order (None/-1: any label), or a dict
        ``{(a, b): label}``: the matched pair needs a stored edge with that value in the
        graph's edge-label column (undirected: in either direction; directed: ``a -> b``);
        a label below -1 is refused.

    Attributes
    ----------
    num_nodes : int
    edges : tuple of (int, int)
        Sorted, each as ``(a, b)`` with ``a < b``.
    labels : tuple of int
        ``-1`` where any label matches.
    anti_edges : tuple of (int, int)
        Sorted, each as ``(a, b)`` with ``a < b``.
    arcs : tuple of (int, int)
        A directed pattern's edges as given, sorted (empty when undirected).
    edge_labels : tuple of int
        The label of each of ``edges`` (undirected) or ``arcs`` (directed); ``-1``: any.

    Examples
    --------
    >>> p = Pattern.named("diamond")
    >>> p.num_nodes, len(p.edges), p.automorphisms()
    (4, 5, 4)
    >>> Pattern([(0, 1), (1, 2)], labels=[7, None, 7]).labels
    (7, -1, 7)
    >>> Pattern([(0, 1), (1, 2)], anti_edges=[(2, 0)])    # an open wedge, not a triangle
    Pattern([(0, 1), (1, 2)], anti_edges=[(0, 2)])
    >>> Pattern([(0, 1), (2, 1)], directed=True).automorphisms()   # 0 -> 1 <- 2
    2
    >>> Pattern([(0, 1), (1, 2)], edge_labels=[5, 6]).automorphisms()  # ends told apart
    1
    """

    def __init__(self, edges, labels=None, anti_edges=None, directed: bool = False,
                 edge_labels=None):
        try:
            pairs = [(_whole(a), _whole(b)) for a, b in edges]
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
        self.directed = check_flag("directed", directed)
        self.arcs = tuple(sorted(set(pairs))) if self.directed else ()
        self._dir = np.zeros((k, k), bool)
        for a, b in self.arcs:
            self._dir[a, b] = True
        if labels is None:
            labels = [-1] * k
        labels = list(labels)
        if len(labels) != k:
            raise ParameterError("pattern", f"has {k} nodes but {len(labels)} labels")
        try:
            self.labels = tuple(_whole(x, none=True) for x in labels)
        except ValueError as exc:
            raise ParameterError("pattern", f"labels must be integers or None ({exc})") \
                from None
        self._adj = np.zeros((k, k), bool)
        for a, b in self.edges:
            self._adj[a, b] = self._adj[b, a] = True
        if not self._connected():
            raise ParameterError("pattern", "must be connected")
        self.anti_edges = self._anti_edges(anti_edges)
        self._anti = np.zeros((k, k), bool)
        for a, b in self.anti_edges:
            self._anti[a, b] = self._anti[b, a] = True
        self._elab = self._edge_label_matrix(pairs, edge_labels)
        keys = self.arcs if self.directed else self.edges
        self.edge_labels = tuple(int(self._elab[a, b]) for a, b in keys)

    def _edge_label_matrix(self, pairs, given) -> np.ndarray:
        """int64 (k, k): the label of edge ``a - b`` at ``[a, b]`` and ``[b, a]`` (directed:
        of arc ``a -> b`` at ``[a, b]``), -1: any label or no edge."""
        k = self.num_nodes
        out = np.full((k, k), -1, np.int64)
        if given is None:
            return out
        if isinstance(given, dict):
            try:
                items = [((_whole(a), _whole(b)), lab) for (a, b), lab in given.items()]
            except (TypeError, ValueError):
                raise ParameterError("pattern", "edge_labels' keys must be edges (a, b)") \
                    from None
            if any(e not in pairs and (self.directed or e[::-1] not in pairs)
                   for e, _ in items):
                raise ParameterError("pattern", "edge_labels name a pair that is not an edge")
        else:
            given = list(given)
            if len(given) != len(pairs):
                raise ParameterError("pattern", f"has {len(pairs)} edges but {len(given)} "
                                                f"edge labels")
            items = list(zip(pairs, given))
        for (a, b), lab in items:
            try:
                lab = _whole(lab, none=True)
            except ValueError as exc:
                raise ParameterError("pattern", f"edge labels must be integers or None "
                                                f"({exc})") from None
            for x, y in ((a, b),) if self.directed else ((a, b), (b, a)):
                if out[x, y] >= 0 and lab >= 0 and out[x, y] != lab:
                    raise ParameterError("pattern", f"edge {a}-{b} has two labels")
                out[x, y] = max(out[x, y], lab)
        return out

    def _anti_edges(self, pairs) -> tuple:
        try:
            pairs = [(_whole(a), _whole(b)) for a, b in (pairs or ())]
        except (TypeError, ValueError):
            raise ParameterError("pattern", "anti-edges must be pairs of node numbers") \
                from None
        out = {(min(a, b), max(a, b)) for a, b in pairs}
        for a, b in out:
            if a == b or a < 0 or b >= self.num_nodes:
                raise ParameterError("pattern", f"anti-edge {a}-{b} must join two of its "
                                                f"nodes 0..{self.num_nodes - 1}")
            if self._adj[a, b]:
                raise ParameterError("pattern", f"{a}-{b} is both an edge and an anti-edge")
        return tuple(sorted(out))

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
        anti = f", anti_edges={list(self.anti_edges)}" if self.anti_edges else ""
        elab = f", edge_labels={list(self.edge_labels)}" if self.edge_labelled else ""
        if self.directed:
            return f"Pattern({list(self.arcs)}{lab}{anti}, directed=True{elab})"
        return f"Pattern({list(self.edges)}{lab}{anti}{elab})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Pattern) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return self.edges, self.labels, self.anti_edges, self.arcs, self.edge_labels

    @property
    def labelled(self) -> bool:
        """Whether some node has a label."""
        return any(x >= 0 for x in self.labels)

    @property
    def edge_labelled(self) -> bool:
        """Whether some edge has a label."""
        return any(x >= 0 for x in self.edge_labels)

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
        """Every permutation of the nodes that keeps the edges (and their directions), the
        anti-edges, the labels and the edge labels (identity included), found by
        backtracking."""
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
                if all(self._adj[i, j] == self._adj[c, perm[j]]
                       and self._anti[i, j] == self._anti[c, perm[j]]
                       and self._dir[i, j] == self._dir[c, perm[j]]
                       and self._dir[j, i] == self._dir[perm[j], c]
                       and self._elab[i, j] == self._elab[c, perm[j]]
                       and self._elab[j, i] == self._elab[perm[j], c] for j in range(i)):
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
        order = [max(range(k), key=lambda v: (deg[v], self.labels[v] >= 0, -v))]
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
                nonadj[i, j] = (induced and not self._adj[v, w]) or self._anti[v, w]
        for a, b in self.conditions():  # id(a) < id(b): checked at the later level
            la, lb = level[a], level[b]
            if la < lb:
                greater[lb, la] = True
            else:
                less[la, lb] = True
        dreq = np.zeros((k, k), np.uint8)
        elab = np.full((k, k, 2), -1, np.int64)
        for i, v in enumerate(order):
            for j, w in enumerate(order[:i]):  # bit 1: w -> v (earlier to later), bit 2: back
                dreq[i, j] = (1 if self._dir[w, v] else 0) | (2 if self._dir[v, w] else 0)
                elab[i, j, 0] = self._elab[w, v]
                if self.directed:
                    elab[i, j, 1] = self._elab[v, w]
        return Plan(np.array(order, np.int64), adj, nonadj, greater, less,
                    np.array([self.labels[v] for v in order], np.int64), dreq, elab,
                    self.directed, self.directed and bool(induced))

    def explain(self, induced: bool = False) -> str:
        """The plan the matcher follows, as text: the matching order, what each level's
        candidates are and must satisfy, and the symmetry-breaking conditions.

        Level ``i`` places one pattern node; its candidates are the neighbours of the
        vertex matched to one earlier node it is adjacent to (at run time, the one of
        those with the shortest row), filtered by the other conditions listed. ``id`` is
        the vertex's rank in the matcher's order (ascending degree, ties by id), and the
        conditions ``id(a) < id(b)`` make each subgraph match once, not once per
        automorphism.

        Parameters
        ----------
        induced : bool, default False
            The plan of induced matching (non-adjacency checks added).

        Returns
        -------
        str

        Examples
        --------
        >>> print(Pattern.named("4-cycle").explain())
        Pattern([(0, 1), (0, 3), (1, 2), (2, 3)]): 4 nodes, 4 edges, 8 automorphisms
        non-induced; matching order: 0, 1, 2, 3
        symmetry breaking: id(0) < id(1), id(0) < id(2), id(0) < id(3), id(1) < id(3)
        level 0: node 0: every vertex
        level 1: node 1: neighbours of node 0; id > id(0)
        level 2: node 2: neighbours of node 1; id > id(0)
        level 3: node 3: neighbours of node 0 or 2; adjacent to 0, 2; id > id(0), id > id(1)
        """
        plan = self.plan(bool(induced))
        order = plan.order.tolist()
        conds = self.conditions()
        lines = [f"{self!r}: {self.num_nodes} nodes, {len(self.edges)} edges, "
                 f"{self.automorphisms()} automorphisms",
                 f"{'induced' if induced else 'non-induced'}; matching order: "
                 + ", ".join(map(str, order)),
                 "symmetry breaking: " + (", ".join(f"id({a}) < id({b})" for a, b in conds)
                                          or "none (no automorphism but the identity)")]
        if self.is_clique and not (self.labelled or self.edge_labelled) \
                and self.num_nodes > 2:
            lines.append("count uses the clique kernel; matches and iter_matches this plan")
        for i, v in enumerate(order):
            lines.append(f"level {i}: node {v}: " + "; ".join(self._level_text(plan, i)))
        return "\n".join(lines)

    def _level_text(self, plan: Plan, i: int) -> list[str]:
        """What level ``i``'s candidates are and the checks they pass."""
        order = plan.order.tolist()
        earlier = [order[j] for j in range(i)]
        adj = [w for j, w in enumerate(earlier) if plan.adj[i, j]]
        parts = ["every vertex" if i == 0 else
                 "neighbours of node " + " or ".join(map(str, adj))]
        if len(adj) > 1:
            parts.append("adjacent to " + ", ".join(map(str, adj)))
        non = [w for j, w in enumerate(earlier) if plan.nonadj[i, j]]
        if non:
            parts.append("not adjacent to " + ", ".join(map(str, non)))
        bounds = [f"id > id({w})" for j, w in enumerate(earlier) if plan.greater[i, j]]
        bounds += [f"id < id({w})" for j, w in enumerate(earlier) if plan.less[i, j]]
        if bounds:
            parts.append(", ".join(bounds))
        if plan.directed and i > 0:
            parts.append(("exactly " if plan.dexact else "") + ", ".join(
                _arrows(plan, i, j, w, order[i]) for j, w in enumerate(earlier)
                if plan.adj[i, j]))
        if plan.labels[i] >= 0:
            parts.append(f"label {int(plan.labels[i])}")
        elabs = [f"edge {min(w, order[i])}-{max(w, order[i])} label {plan.elab[i, j, 0]}"
                 for j, w in enumerate(earlier) if plan.elab[i, j, 0] >= 0]
        if elabs and not plan.directed:
            parts.append(", ".join(elabs))
        return parts


def _arrows(plan: Plan, i: int, j: int, w: int, v: int) -> str:
    """The arcs of a directed plan between level ``i``'s node ``v`` and earlier level
    ``j``'s node ``w``, with their edge labels: ``w -> v label 3, v -> w``."""
    need, (fwd, back) = int(plan.dreq[i, j]), plan.elab[i, j].tolist()
    if need == 3 and fwd < 0 and back < 0:
        return f"{w} <-> {v}"
    arcs = []
    if need & 1:
        arcs.append(f"{w} -> {v}" + (f" label {fwd}" if fwd >= 0 else ""))
    if need & 2:
        arcs.append(f"{v} -> {w}" + (f" label {back}" if back >= 0 else ""))
    return ", ".join(arcs)


def census_class(p: Pattern) -> str | None:
    """The class of the 3- and 4-node census an unlabelled pattern without anti-edges is
    (its induced count is then read from :func:`~graphsys.mining.census.small_census`),
    or None. A connected graph of 3 or 4 nodes is known by its edges and degrees."""
    if p.labelled or p.edge_labelled or p.anti_edges or p.directed \
            or p.num_nodes not in (3, 4) or p.is_clique:
        return None
    return SHAPES[(len(p.edges), tuple(sorted(p._adj.sum(1).tolist())))]


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
    values = g.node_column(labels) if isinstance(labels, str) else np.asarray(labels)
    if values.ndim != 1 or len(values) != g.num_nodes():
        raise ParameterError("labels", f"must be a node column name or one integer per node "
                                       f"({g.num_nodes()}), got shape {values.shape}")
    if not np.issubdtype(values.dtype, np.integer):
        raise ParameterError("labels", f"must be integers, got {values.dtype}")
    return np.ascontiguousarray(values.astype(np.int64)[view.order])


def _prepare(graph, pattern, labels, edge_set, memory_limit, elabels=None, induced=False):
    check_flag("induced", induced)  # "no" is truthy: an induced count reported as asked
    g = as_graph(graph)
    p = as_pattern(pattern)
    if p.labelled and labels is None:
        raise ParameterError("labels", "must name a node column: the pattern has labels")
    if p.edge_labelled and elabels is None:
        raise ParameterError("edge_labels", "must name an integer edge column: the pattern "
                                            "has edge labels")
    if elabels is not None:
        label_column(g, elabels, edge_set)
    view = views.view(g, "oriented", edge_set=edge_set, memory_limit=memory_limit,
                      directions=p.directed)
    return g, p, view, _node_labels(g, labels, view)


def match_rows(g, p: Pattern, view, elabels, edge_set, memory_limit) -> tuple:
    """``(ptr, idx, bits, elists)``: the symmetric rows the matcher walks, their
    directions (directed patterns) and their edge-label lists (edge-labelled patterns;
    :func:`~graphsys.mining.edge_labels.label_lists`, kept on the opened graph for the
    next call, :mod:`graphsys.views.cache`)."""
    check_beside(g, edge_set, view, "the matcher's symmetric rows", view.num_edges * (
        2 * view.indices.itemsize + p.directed) + MATCH_BYTES_PER_NODE * view.num_nodes,
                 memory_limit)
    ptr, idx, bits = stream.symmetric_rows(view, p.directed)
    if not p.edge_labelled:
        return ptr, idx, bits, NO_LISTS
    elists = views.cached(   # kept on the opened graph beside its oriented view
        g, (g.edge_set(edge_set).name, "edge labels", elabels, p.directed),
        lambda: label_lists(g, view, ptr, idx, elabels, edge_set, memory_limit),
        nbytes=lambda lists: sum(a.nbytes for a in lists), budget=views.cache_budget(memory_limit))
    return ptr, idx, bits, elists


@document
def count(graph, pattern, *, induced: bool = False, labels=None, edge_labels=None,
          edge_set: str | None = None, threads: int | None = None,
          memory_limit: int | None = None, distributed: bool = False,
          progress: bool = False, execution: Execution | None = None) -> int:
    """The number of subgraphs of the graph that match ``pattern``.

    Non-induced (default): subgraphs whose edges include a copy of the pattern (other edges
    among the matched nodes allowed), each copy counted once. Induced: node sets whose
    induced subgraph is exactly the pattern.

    Parameters
    ----------
    %(graph)s
    %(match)s
    %(edge_labels)s
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

    Edge labels from an integer edge column (here ``kind``: 1 on the cycle, 2 on the chord):

    >>> import pyarrow as pa
    >>> t = pa.table({"src": [1, 2, 3, 4, 1], "dst": [2, 3, 4, 1, 3],
    ...               "kind": [1, 1, 1, 1, 2]})
    >>> h = graphsys.from_arrow(t, tempfile.mkdtemp() + "/h", edge_columns=["kind"])
    >>> mining.count(h, mining.Pattern([(0, 1), (1, 2)], edge_labels=[1, 2]),
    ...              edge_labels="kind")
    4
    """
    induced = check_flag("induced", induced)  # "no" was read as True
    ex = Execution.of(execution, threads=threads, memory_limit=memory_limit,
                      distributed=distributed, progress=progress).in_memory("pattern counting")
    g, p, view, node_labels = _prepare(graph, pattern, labels, edge_set, ex.memory_limit,
                                       edge_labels, induced)
    census = census_class(p) if induced else None
    if census is not None:
        return int(small_census(g, p.num_nodes, "exact", 0, 0, edge_set, ex)[census])
    ranks = Ranks.of(ex.distributed, g, ("pattern", repr(p), bool(induced), labels,
                                         edge_labels, g.edge_set(edge_set).name))
    if p.is_clique and not (p.labelled or p.edge_labelled or p.directed):
        if p.num_nodes == 2:
            return view.num_edges
        from graphsys.mining.clique import clique_count

        return clique_count(g, p.num_nodes, edge_set=edge_set, execution=ex)
    plan = p.plan(bool(induced))
    ptr, idx, bits, elists = match_rows(g, p, view, edge_labels, edge_set, ex.memory_limit)
    deg = view.degree
    work = deg * np.minimum(deg, 1 << 20) if p.num_nodes > 2 else deg.copy()
    lo, hi = ranks.roots(work)
    max_row = int(deg.max()) if len(deg) else 0
    none = np.zeros(0, np.int64)
    with scheduled(ex.threads) as nthreads:
        total = run_tasks(lambda tasks: match_kernels.match_count(
            ptr, idx, node_labels, tasks, *plan.constraints(bits, elists), max_row, none),
                          work, lo, hi, nthreads, progress=ex.progress, desc="matches")
    return int(ranks.sum(np.array([total], np.int64))[0])


@document
def matches(graph, pattern, *, induced: bool = False, labels=None, edge_labels=None,
            limit: int | None = DEFAULT_LIMIT, callback=None, edge_set: str | None = None,
            memory_limit: int | None = None,
            execution: Execution | None = None) -> np.ndarray | int:
    """List matches of ``pattern``: one row per matched subgraph, the graph node of each
    pattern node; or hand each to ``callback`` as it is found.

    Matches come in a fixed order (by their node placed first, in ascending degree, then
    depth first), so the first ``limit`` are the same on every run. With ``callback``,
    nothing is kept: the search runs a chunk ahead (:func:`graphsys.mining.iter_matches`)
    and stops when the callback returns False or ``limit`` matches were delivered.

    Parameters
    ----------
    %(graph)s
    %(match)s
    %(edge_labels)s
    limit : int or None, default 10000
        The most rows (or callback calls); None: all matches (counted first, to size the
        answer, when no callback is given, as a limit past 65,536 rows is).
    callback : callable, optional
        ``callback(row)`` per match, ``row`` a tuple of original ids (``row[i]``: pattern
        node ``i``); returning False stops the search.
    %(edge_set)s
    %(memory_options)s

    Returns
    -------
    numpy.ndarray or int
        (C, k) original node ids (int64, or ``object`` for string ids); column ``i`` is the
        graph node matched to pattern node ``i``. With ``callback``: the matches delivered.

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

    Is there a 4-cycle? Stop at the first one:

    >>> found = []
    >>> mining.matches(g, "4-cycle", callback=lambda row: found.append(row) or False)
    1
    >>> sorted(found[0])
    [1, 2, 3, 4]
    """
    check_limit(limit)
    induced = check_flag("induced", induced)
    ex = Execution.of(execution, memory_limit=memory_limit).in_memory(
        "pattern matching", "distributed", "progress")
    if callback is not None:
        if not callable(callback):
            raise ParameterError("callback", f"must be callable, got "
                                             f"{type(callback).__name__}")
        chunk = stream.DEFAULT_CHUNK if limit is None else max(1, min(int(limit),
                                                                       stream.DEFAULT_CHUNK))
        return stream.deliver(iter_matches(graph, pattern, induced=induced, labels=labels,
                                           edge_labels=edge_labels, edge_set=edge_set,
                                           execution=ex, chunk=chunk),
                              callback, limit)
    g, p, view, node_labels = _prepare(graph, pattern, labels, edge_set, ex.memory_limit,
                                       edge_labels, induced)
    limit = listed_rows(g, edge_set, limit, p.num_nodes, lambda: count(
        g, p, induced=induced, labels=labels, edge_labels=edge_labels, edge_set=edge_set,
        execution=ex), "matches", ex.memory_limit)
    plan = p.plan(bool(induced))
    ptr, idx, bits, elists = match_rows(g, p, view, edge_labels, edge_set, ex.memory_limit)
    max_row = int(view.degree.max()) if view.num_nodes else 0
    out = np.empty((limit, p.num_nodes), np.int64)
    got = int(match_kernels.match_list(ptr, idx, node_labels, *plan.constraints(bits, elists),
                                       max_row, int(limit), out)) \
        if limit else 0
    rows = np.empty((got, p.num_nodes), np.int64)
    rows[:, plan.order] = view.order[out[:got]]
    return original_ids(g, rows)


@document
def iter_matches(graph, pattern, *, induced: bool = False, labels=None, edge_labels=None,
                 edge_set: str | None = None, memory_limit: int | None = None,
                 chunk: int = stream.DEFAULT_CHUNK,
                 execution: Execution | None = None) -> Iterator[tuple]:
    """The matches of ``pattern``, one tuple of original node ids per matched subgraph,
    found as they are taken.

    The search runs ``chunk`` matches ahead of the consumer and keeps its stack between
    chunks; stop iterating (or ``close()`` the iterator) and it stops. The order is
    :func:`graphsys.mining.matches`' (by the node placed first, in ascending degree, then
    depth first), the same on every run.

    Parameters
    ----------
    %(graph)s
    %(match)s
    %(edge_labels)s
    %(edge_set)s
    %(memory_options)s
    chunk : int, default 1024
        Matches the search writes at a time: the memory of the matches in flight
        (counted against the budget with the matcher's rows).

    Yields
    ------
    tuple
        The graph node of each pattern node (``t[i]`` for pattern node ``i``).

    Examples
    --------
    Every triangle of a 4-clique, taken until one holds node 4:

    >>> import tempfile, itertools, numpy as np, graphsys
    >>> pairs = np.array(list(itertools.combinations([1, 2, 3, 4], 2)))
    >>> k4 = graphsys.from_numpy(pairs[:, 0], pairs[:, 1], tempfile.mkdtemp() + "/k4")
    >>> it = graphsys.mining.iter_matches(k4, "triangle")
    >>> next(t for t in it if 4 in t) is not None
    True
    >>> it.close()                                   # the search stops here
    >>> sum(1 for _ in graphsys.mining.iter_matches(k4, "4-cycle", chunk=1))
    3
    """
    chunk, induced = check_count("chunk", chunk), check_flag("induced", induced)
    limit = Execution.of(execution, memory_limit=memory_limit).in_memory(
        "pattern matching", "distributed", "progress").memory_limit
    g, p, view, node_labels = _prepare(graph, pattern, labels, edge_set, limit, edge_labels,
                                       induced)
    # a chunk's buffer, its rows by original id and their tuples: 24 bytes per id
    check_beside(g, edge_set, view, f"a chunk of {chunk:,} matches", 24 * p.num_nodes * chunk,
                 limit)
    rows = match_rows(g, p, view, edge_labels, edge_set, limit)
    return stream.rows_of(stream.chunks(g, view, node_labels, p.plan(bool(induced)), chunk,
                                        rows=rows))
