"""Frequent subgraph mining over a node-labelled graph, its edges labelled or not, with MNI
support.

The *MNI support* (Bringmann and Nijssen [1]_, the measure of GraMi [2]_) of a labelled
pattern is the least, over its nodes, of the distinct graph nodes that node is mapped to
by some (non-induced) embedding. It is anti-monotone, so :func:`frequent_subgraphs` grows
patterns one edge at a time from frequent ones (Apriori style), each candidate tried once
in a canonical form and dropped unless every connected pattern one edge smaller is
frequent; its support comes from the matcher's streamed matches
(:mod:`graphsys.mining.stream`), the images of each orbit marked in one bitmap.
``docs/mining.md`` ("Frequent subgraph mining") describes the steps.

References
----------
.. [1] B. Bringmann, S. Nijssen, "What Is Frequent in a Single Graph?", PAKDD 2008.
.. [2] M. Elseidy, E. Abdelhamid, S. Skiadopoulos, P. Kalnis, "GraMi: Frequent Subgraph
   and Pattern Mining in a Single Large Graph", PVLDB 7(7), 2014.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from graphsys import views
from graphsys.errors import ParameterError, check_count, check_flag
from graphsys.execution import Execution
from graphsys.mining import stream
from graphsys.mining._docs import document
from graphsys.mining.edge_labels import NO_LISTS, label_lists
from graphsys.mining.pattern import MAX_NODES, Pattern, _node_labels
from graphsys.mining.results import as_graph, check_beside

#: Matches per chunk of a support computation.
SUPPORT_CHUNK = 4096
#: Row entries per chunk of the pass that finds the one-edge patterns.
KINDS_CHUNK = 1 << 16


@dataclass(frozen=True)
class FrequentPattern:
    """A frequent pattern and its MNI support.

    Attributes
    ----------
    pattern : Pattern
        In canonical form: nodes numbered by the canonical order, every node labelled.
    support : int
        Its MNI support (a lower bound, at least the threshold, when mined with
        ``exact=False``).

    Examples
    --------
    The most frequent pattern of :func:`frequent_subgraphs`, two triangles with one node of
    kind 1 each:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([0, 1, 2, 3, 4, 5, 0]), np.array([1, 2, 0, 4, 5, 3, 3])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", num_nodes=6,
    ...                         node_columns={"kind": np.array([0, 0, 1, 0, 0, 1])})
    >>> best = mining.frequent_subgraphs(g, "kind", 2, max_edges=1)[0]
    >>> best.support, best.num_edges, best.to_dict()
    (4, 1, {'edges': [[0, 1]], 'labels': [0, 0], 'support': 4})
    """

    pattern: Pattern
    support: int

    @property
    def num_edges(self) -> int:
        return len(self.pattern.edges)

    def to_dict(self) -> dict:
        """Plain JSON types: edges, labels, edge labels (when mined with them), support."""
        out = {"edges": [list(e) for e in self.pattern.edges],
               "labels": list(self.pattern.labels)}
        if self.pattern.edge_labelled:
            out["edge_labels"] = list(self.pattern.edge_labels)
        return out | {"support": self.support}


def canonical(edges, labels, edge_labels=None) -> tuple[tuple, tuple]:
    """The canonical form of a labelled graph: ``(labels, edges)`` renumbered by the
    ordering, among those that sort nodes by (label, degree), whose sorted edge list is
    smallest, each edge as ``(a, b, edge label)`` (``edge_labels``: one per edge; None:
    -1 each). Two labelled graphs are isomorphic exactly when their forms are equal."""
    k = len(labels)
    elabs = [-1] * len(edges) if edge_labels is None else [int(x) for x in edge_labels]
    deg = [0] * k
    for a, b in edges:
        deg[a] += 1
        deg[b] += 1
    groups: dict[tuple, list[int]] = {}
    for v in range(k):
        groups.setdefault((labels[v], deg[v]), []).append(v)
    keys = sorted(groups)
    best = None
    for parts in itertools.product(*(itertools.permutations(groups[key]) for key in keys)):
        new = {v: i for i, v in enumerate(itertools.chain.from_iterable(parts))}
        code = tuple(sorted((min(new[a], new[b]), max(new[a], new[b]), lab)
                            for (a, b), lab in zip(edges, elabs)))
        if best is None or code < best:
            best = code
    return tuple(key[0] for key in keys for _ in groups[key]), best


def _orbits(p: Pattern) -> list[list[int]]:
    group = p.automorphism_group()
    seen, out = set(), []
    for v in range(p.num_nodes):
        if v not in seen:
            orbit = sorted({g[v] for g in group})
            seen.update(orbit)
            out.append(orbit)
    return out


def _pattern(form) -> Pattern:
    """The pattern of a canonical form."""
    labels, code = form
    return Pattern([(a, b) for a, b, _ in code], labels, edge_labels=[x for *_, x in code])


def _form(code, labels) -> tuple[tuple, tuple]:
    """:func:`canonical` of edges ``(a, b, edge label)``."""
    return canonical([(a, b) for a, b, _ in code], labels, [x for *_, x in code])


def mni_support(g, view, node_labels, p: Pattern, stop_at: int | None = None,
                rows: tuple | None = None) -> int:
    """The MNI support of ``p`` (see the module's notes); with ``stop_at``, the search ends
    once every node has that many images and a value at least ``stop_at`` is returned.
    ``rows``: the matcher's rows (:func:`graphsys.mining.stream.chunks`)."""
    orbits = _orbits(p)
    marks = np.zeros((len(orbits), view.num_nodes), bool)
    for block in stream.chunks(g, view, node_labels, p.plan(False), SUPPORT_CHUNK,
                               internal=True, rows=rows):
        for i, orbit in enumerate(orbits):
            marks[i, block[:, orbit].ravel()] = True
        if stop_at is not None and int(marks.sum(1).min()) >= stop_at:
            break
    return int(marks.sum(1).min()) if len(orbits) else 0


def _extensions(p: Pattern, frequent_labels, frequent_edges, edge_values) -> list[tuple]:
    """``(edges, labels)`` of every pattern one edge larger than ``p`` whose new edge is a
    frequent one-edge pattern (``frequent_edges``: ``(label, label, edge label)``, the
    node labels ascending), edges as ``(a, b, edge label)``."""
    k, labels = p.num_nodes, list(p.labels)
    edges = [(a, b, x) for (a, b), x in zip(p.edges, p.edge_labels)]

    def frequent(la, lb, x):
        return (min(la, lb), max(la, lb), x) in frequent_edges

    out = [(edges + [(a, b, x)], labels) for a, b in itertools.combinations(range(k), 2)
           if (a, b) not in p.edges for x in edge_values if frequent(labels[a], labels[b], x)]
    if k < MAX_NODES:
        for v in range(k):
            out += [(edges + [(v, k, x)], labels + [lab]) for lab in frequent_labels
                    for x in edge_values if frequent(labels[v], lab, x)]
    return out


def _sub_patterns(code, labels):
    """Canonical forms of the connected patterns one edge smaller (a node left alone by
    the removed edge dropped)."""
    for e in code:
        rest = [x for x in code if x != e]
        used = sorted({v for x in rest for v in x[:2]})
        if not rest:
            continue
        new = {v: i for i, v in enumerate(used)}
        try:
            sub = Pattern([(new[a], new[b]) for a, b, _ in rest], [labels[v] for v in used],
                          edge_labels=[x for *_, x in rest])
        except ParameterError:  # not connected
            continue
        yield canonical(sub.edges, sub.labels, sub.edge_labels)


@document
def frequent_subgraphs(graph, labels, support: int, *, max_edges: int = 3,
                       exact: bool = True, edge_labels: str | None = None,
                       edge_set: str | None = None,
                       memory_limit: int | None = None,
                       execution: Execution | None = None) -> list[FrequentPattern]:
    """The connected labelled patterns of up to ``max_edges`` edges whose MNI support in
    the graph is at least ``support`` (GraMi's and Peregrine's frequent subgraph mining).

    Parameters
    ----------
    %(graph)s
    labels : str or array-like
        The node labels: a node column of non-negative integers, or one per node by
        internal id.
    support : int
        The threshold: a pattern is frequent when each of its nodes is mapped to at least
        this many distinct graph nodes over all its embeddings (non-induced).
    max_edges : int, default 3
        The largest patterns, in edges (at most 8 nodes).
    exact : bool, default True
        Compute each frequent pattern's support exactly (every match); False: stop each
        search once the threshold is met (the support reported is then a lower bound).
    edge_labels : str, optional
        An integer edge column of non-negative labels: every pattern edge then carries
        one, matched on a stored edge of that label between its nodes (in either
        direction).
    %(edge_set)s
    %(memory_options)s

    Returns
    -------
    list of FrequentPattern
        By number of edges, then support (highest first), then canonical form.

    Examples
    --------
    Two triangles labelled 0, 0, 1, joined by an edge between two 0s: the 0-0 edges reach
    four nodes, every other pattern two (a 0-0-0 path's middle is node 0 or 3).

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import mining
    >>> src, dst = np.array([0, 1, 2, 3, 4, 5, 0]), np.array([1, 2, 0, 4, 5, 3, 3])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", num_nodes=6,
    ...                         node_columns={"kind": np.array([0, 0, 1, 0, 0, 1])})
    >>> for f in mining.frequent_subgraphs(g, "kind", 2, max_edges=2):
    ...     print(f.support, f.pattern)
    4 Pattern([(0, 1)], labels=[0, 0])
    2 Pattern([(0, 1)], labels=[0, 1])
    2 Pattern([(0, 1), (1, 2)], labels=[0, 0, 1])
    2 Pattern([(0, 2), (1, 2)], labels=[0, 0, 0])
    2 Pattern([(0, 2), (1, 2)], labels=[0, 0, 1])
    >>> [f.pattern for f in mining.frequent_subgraphs(g, "kind", 3)]
    [Pattern([(0, 1)], labels=[0, 0])]
    """
    check_count("support", support)
    check_count("max_edges", max_edges)
    exact = check_flag("exact", exact)
    memory_limit = Execution.of(execution, memory_limit=memory_limit).in_memory(
        "frequent subgraph mining", "distributed", "progress").memory_limit
    g = as_graph(graph)
    view = views.view(g, "oriented", edge_set=edge_set, memory_limit=memory_limit)
    node_labels = _node_labels(g, labels, view)
    if len(node_labels) and node_labels.min() < 0:
        raise ParameterError("labels", "must be non-negative integers")
    check_beside(g, edge_set, view, "frequent subgraph mining's symmetric rows",
                 2 * view.indices.itemsize * view.num_edges + (24 + MAX_NODES)
                 * view.num_nodes + 96 * KINDS_CHUNK, memory_limit)
    rows = _rows(g, view, edge_labels, edge_set, memory_limit)
    stop_at = None if exact else int(support)
    values, counts = np.unique(node_labels, return_counts=True)
    frequent_labels = [int(x) for x, c in zip(values, counts) if c >= support]
    edge_values = [-1] if edge_labels is None else np.unique(rows[3][1]).tolist()
    level = {_form([(0, 1, x)], [a, b]): None for a, b, x in _edge_kinds(view, node_labels, rows)
             if a in frequent_labels and b in frequent_labels}
    found: list[FrequentPattern] = []
    frequent_edges: set = set()
    for size in range(1, int(max_edges) + 1):
        kept = {}
        for form in level:
            p = _pattern(form)
            s = mni_support(g, view, node_labels, p, stop_at, rows)
            if s >= support:
                kept[form] = FrequentPattern(p, s)
        if size == 1:
            frequent_edges = {(*form[0], form[1][0][2]) for form in kept}
        found += sorted(kept.values(), key=lambda f: (-f.support, f.pattern.edges,
                                                      f.pattern.labels, f.pattern.edge_labels))
        level = {}
        for f in kept.values():
            for code, labs in _extensions(f.pattern, frequent_labels, frequent_edges,
                                          edge_values):
                form = _form(code, labs)
                if form not in level and all(sub in kept for sub in _sub_patterns(*form[::-1])):
                    level[form] = None
        if not level:
            break
    return found


def _rows(g, view, edge_labels, edge_set, memory_limit) -> tuple:
    """The matcher's rows (:func:`graphsys.mining.stream.chunks`), built once for every
    pattern: the symmetric rows and, with ``edge_labels``, their edge-label lists (labels
    refused when negative)."""
    ptr, idx, bits = stream.symmetric_rows(view, False)
    if edge_labels is None:
        return ptr, idx, bits, NO_LISTS
    elists = label_lists(g, view, ptr, idx, edge_labels, edge_set, memory_limit)
    if len(elists[1]) and elists[1].min() < 0:
        raise ParameterError("edge_labels", "must be non-negative integers")
    return ptr, idx, bits, elists


def _edge_kinds(view, node_labels, rows, chunk: int = KINDS_CHUNK) -> list[tuple]:
    """The distinct ``(label, label, edge label)`` of the graph's adjacent pairs (node
    labels ascending; edge label -1 without edge labels), sorted; read ``chunk`` row
    entries (or edge-label list entries) at a time."""
    ptr, idx, _, (lptr, lval, _) = rows
    labelled = len(lptr) > 0
    total = len(lval) if labelled else len(idx)
    kinds: set[tuple] = set()
    for lo in range(0, total, chunk):
        at = np.arange(lo, min(lo + chunk, total), dtype=np.int64)
        entry = np.searchsorted(lptr, at, side="right") - 1 if labelled else at
        la = node_labels[np.searchsorted(ptr, entry, side="right") - 1]
        lb = node_labels[idx[entry]]
        x = lval[at] if labelled else np.full(len(at), -1, np.int64)
        block = np.stack([np.minimum(la, lb), np.maximum(la, lb), x], 1)
        kinds.update(map(tuple, np.unique(block, axis=0).tolist()))
    return sorted(kinds)
