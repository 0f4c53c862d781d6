"""NetworkX's degree measures over graphsys's adjacency (:meth:`BackendGraph.degree`,
:meth:`BackendGraph.adjacency`: the stored graph's CSR and its transpose): degree
centralities, isolates, self-loops, regularity, neighbour degrees, the s-metric, group
degree centralities, cuts, volumes and boundaries.

Degrees are NetworkX's: a self-loop counts twice in an undirected graph, once each way in
a directed one. Every figure is NetworkX's formula over those integers in its order of
operations, so values equal NetworkX's. Weighted variants (a ``weight`` naming stored
weights other than all ones), a single node where NetworkX wants a container, and
iterators read more than once are declined by the checks
(:mod:`graphsys.nx_backend.checks`)."""

from __future__ import annotations

import numpy as np

from graphsys.nx_backend.algorithms import _nx
from graphsys.nx_backend.measures import _nbunch, _unweighted


def _centrality(G, deg: np.ndarray) -> dict:
    if len(G) <= 1:
        return {n: 1 for n in G}
    return G.node_dict(deg * (1.0 / (len(G) - 1.0)))


def degree_centrality(G):
    """``nx.degree_centrality``: degree / (N - 1)."""
    return _centrality(G, G.degree())


def in_degree_centrality(G):
    """``nx.in_degree_centrality`` of a directed graph."""
    return _centrality(G, G.degree("in"))


def out_degree_centrality(G):
    """``nx.out_degree_centrality`` of a directed graph."""
    return _centrality(G, G.degree("out"))


def isolates(G):
    """``nx.isolates``: a generator of the nodes of degree 0, in the graph's order."""
    return (G.keys[i] for i in np.flatnonzero(G.degree() == 0).tolist())


def number_of_isolates(G):
    """``nx.number_of_isolates``."""
    return int((G.degree() == 0).sum())


def is_isolate(G, n):
    """``nx.is_isolate`` of a node of ``G`` (others are declined by the checks)."""
    return bool(G.degree()[G.index[n]] == 0)


def number_of_selfloops(G):
    """``nx.number_of_selfloops``."""
    rows, cols = G.edges()
    return int((rows == cols).sum())


def is_empty(G):
    """``nx.is_empty``: whether the graph has no edge."""
    return len(G.adjacency()[1]) == 0


def is_regular(G):
    """``nx.is_regular``: every node of the same degree (in- and out-degree apart on a
    directed graph)."""
    if len(G) == 0:
        raise _nx().NetworkXPointlessConcept("Graph has no nodes.")
    if not G.directed:
        d = G.degree()
        return bool((d == d[0]).all())
    return all(bool((d == d[0]).all()) for d in (G.degree("in"), G.degree("out")))


def is_k_regular(G, k):
    """``nx.is_k_regular`` of an undirected graph."""
    return bool((G.degree() == k).all())


def _rows(G, transpose: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(row, neighbour) of every adjacency entry, as internal ids."""
    indptr, indices = G.adjacency(transpose)
    return np.repeat(np.arange(len(G)), np.diff(indptr)), indices


def _neighbour_sums(G, sides: str, t_deg: np.ndarray) -> np.ndarray:
    """Each node's sum of ``t_deg`` over its successors (``"out"`` in ``sides``) and its
    predecessors (``"in"``), exact integers."""
    total = np.zeros(len(G), np.int64)
    for side, transpose in (("out", False), ("in", True)):
        if side in sides or not G.directed and not transpose:
            rows, cols = _rows(G, transpose)
            total += np.bincount(rows, weights=t_deg[cols], minlength=len(G)).astype(np.int64)
        if not G.directed:
            break
    return total


def _direction(G, name: str, what: str, allowed: tuple) -> np.ndarray:
    if name not in allowed:
        raise _nx().NetworkXError(f"{what} argument {name} must be 'in', 'out' or 'in+out'")
    return G.degree({"in+out": "both"}.get(name, name))


def _selected(G, nodes) -> list[int]:
    if nodes is None:
        return list(range(len(G)))
    return [G.index[k] for k in _nbunch(G, nodes)]


def average_neighbor_degree(G, source="out", target="out", nodes=None, weight=None):
    """``nx.average_neighbor_degree``, unweighted."""
    _unweighted(G, weight)
    if G.directed:
        allowed = ("in", "out", "in+out")
        s_deg = _direction(G, source, "source", allowed)
        t_deg = _direction(G, target, "target", allowed)
        sums = _neighbour_sums(G, source, t_deg)
    else:
        if source != "out" or target != "out":
            raise _nx().NetworkXError("source and target arguments are only supported for "
                                      "directed graphs")
        s_deg = t_deg = G.degree()
        sums = _neighbour_sums(G, "out", t_deg)
    ids = _selected(G, nodes)
    s, d = sums.tolist(), s_deg.tolist()
    return {G.keys[i]: (0.0 if d[i] == 0 else s[i] / d[i]) for i in ids}


def average_degree_connectivity(G, source="in+out", target="in+out", nodes=None,
                                weight=None):
    """``nx.average_degree_connectivity``, unweighted: per source degree ``k``, the sum
    of the neighbours' target degrees over ``k`` times the count of such nodes."""
    _unweighted(G, weight)
    nx = _nx()
    if G.directed:
        for what, name in (("source", source), ("target", target)):
            if name not in ("in", "out", "in+out"):
                raise nx.NetworkXError(f'{what} must be one of "in", "out", or "in+out"')
        s_deg = G.degree({"in+out": "both"}.get(source, source))
        t_deg = G.degree({"in+out": "both"}.get(target, target))
        sums = _neighbour_sums(G, "in" if source == "in" else "out", t_deg)
    else:
        if source != "in+out" or target != "in+out":
            raise nx.NetworkXError("source and target arguments are only supported for "
                                   "directed graphs")
        s_deg = t_deg = G.degree()
        sums = _neighbour_sums(G, "out", t_deg)
    ids = [G.index[nodes]] if nodes is not None and nodes in G else _selected(G, nodes)
    s, d = sums.tolist(), s_deg.tolist()
    dsum: dict = {}
    dnorm: dict = {}
    for i in ids:
        dsum[d[i]] = dsum.get(d[i], 0) + s[i]
        dnorm[d[i]] = dnorm.get(d[i], 0) + d[i]
    return {k: avg if dnorm[k] == 0 else avg / dnorm[k] for k, avg in dsum.items()}


def s_metric(G):
    """``nx.s_metric``: the sum over edges of their ends' degrees' product, a float."""
    rows, cols = G.edges()
    deg = G.degree()
    return float(sum((deg[rows] * deg[cols]).tolist()))


def _neighbourhood(G, ids, transpose: bool = False) -> np.ndarray:
    """The internal ids adjacent to ``ids`` (successors, or predecessors with
    ``transpose``), sorted and unique."""
    indptr, indices = G.adjacency(transpose)
    ids = np.asarray(ids, np.int64)
    parts = [indices[indptr[i]:indptr[i + 1]] for i in ids.tolist()]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def _group(G, S, transpose: bool = False) -> float:
    members = G.internal(S)
    centrality = len(np.setdiff1d(_neighbourhood(G, members, transpose), members))
    centrality /= len(G) - len(S)
    return centrality


def group_degree_centrality(G, S):
    """``nx.group_degree_centrality`` (and ``group_out_degree_centrality``): nodes adjacent
    to ``S`` outside it (successors of a directed graph), over ``N - len(S)``."""
    return _group(G, S)


def group_in_degree_centrality(G, S):
    """``nx.group_in_degree_centrality`` of a directed graph."""
    return _group(G, S, transpose=True)


def volume(G, S, weight=None):
    """``nx.volume``: the sum of the (out-)degrees of ``S``'s nodes in ``G`` (repeats
    counted as NetworkX counts them)."""
    _unweighted(G, weight)
    return sum(G.degree("out")[_selected(G, S)].tolist())


def _members(G, nodes) -> np.ndarray:
    mask = np.zeros(len(G), bool)
    mask[[G.index[k] for k in nodes if k in G]] = True
    return mask


def cut_size(G, S, T=None, weight=None):
    """``nx.cut_size``: edges between ``S`` and ``T`` (default: the rest of ``G``), each
    direction of a directed graph counted (``S`` and ``T`` disjoint: the checks)."""
    _unweighted(G, weight)
    a = _members(G, S)
    b = ~a if T is None else _members(G, T)
    rows, cols = G.edges()
    return int(((a[rows] & b[cols]) | (b[rows] & a[cols])).sum())


def _rest(G, S, T) -> list:
    return list(set(G) - set(S)) if T is None else T


def normalized_cut_size(G, S, T=None, weight=None):
    """``nx.normalized_cut_size``."""
    T = _rest(G, S, T)
    return cut_size(G, S, T, weight) * ((1 / volume(G, S, weight)) + (1 / volume(G, T, weight)))


def conductance(G, S, T=None, weight=None):
    """``nx.conductance``."""
    T = _rest(G, S, T)
    return cut_size(G, S, T, weight) / min(volume(G, S, weight), volume(G, T, weight))


def edge_expansion(G, S, T=None, weight=None):
    """``nx.edge_expansion``."""
    T = _rest(G, S, T)
    return cut_size(G, S, T, weight) / min(len(S), len(T))


def mixing_expansion(G, S, T=None, weight=None):
    """``nx.mixing_expansion``."""
    return cut_size(G, S, T, weight) / (2 * len(G.edges()[0]))


def node_boundary(G, nbunch1, nbunch2=None):
    """``nx.node_boundary``: the set of nodes adjacent to ``nbunch1`` outside it (within
    ``nbunch2`` when given)."""
    members = np.flatnonzero(_members(G, nbunch1))
    bdy = {G.keys[i] for i in np.setdiff1d(_neighbourhood(G, members), members).tolist()}
    if nbunch2 is not None:
        bdy &= set(nbunch2)
    return bdy


def node_expansion(G, S):
    """``nx.node_expansion``: the nodes adjacent to ``S`` (its own included) over
    ``len(S)``."""
    return len(_neighbourhood(G, G.internal(S))) / len(S)


def boundary_expansion(G, S):
    """``nx.boundary_expansion``."""
    return len(node_boundary(G, S)) / len(S)


def degree_mixing_dict(G, x="out", y="in", weight=None, nodes=None, normalized=False):
    """``nx.degree_mixing_dict``, unweighted: how often an edge (each direction of an
    undirected one, a self-loop once) joins a node of degree ``a`` (``x``) to one of
    degree ``b`` (``y``), ``{a: {b: count}}`` (fractions when ``normalized``), over the
    edges within ``nodes`` when given."""
    _unweighted(G, weight)
    xdeg = G.degree(x).tolist()
    ydeg = G.degree(y).tolist()
    rows, cols = _rows(G)
    if nodes is not None:
        keep = _members(G, set(nodes))
        inside = keep[rows] & keep[cols]
        rows, cols = rows[inside], cols[inside]
    d: dict = {}
    for u, v in zip(rows.tolist(), cols.tolist()):
        a, b = xdeg[u], ydeg[v]
        d.setdefault(a, {})
        d.setdefault(b, {})
        d[a][b] = d[a].get(b, 0) + 1
    if normalized:
        total = float(len(rows))
        for counts in d.values():
            for b in counts:
                counts[b] /= total
    return d
