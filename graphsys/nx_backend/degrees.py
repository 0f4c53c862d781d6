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
from graphsys.nx_backend.measures import _ids, _unweighted


def _degree_centrality(direction: str):
    """NetworkX's ``nx.<direction>_degree_centrality(G)``: the degree (``"both"``, ``"in"``
    or ``"out"``: :meth:`BackendGraph.degree`) over ``N - 1``."""

    def centrality(G):
        if len(G) <= 1:
            return {n: 1 for n in G}
        return G.node_dict(G.degree(direction) * (1.0 / (len(G) - 1.0)))

    return centrality


degree_centrality = _degree_centrality("both")
in_degree_centrality = _degree_centrality("in")
out_degree_centrality = _degree_centrality("out")


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
        if side in sides:
            rows, cols = _rows(G, transpose)
            total += np.bincount(rows, weights=t_deg[cols], minlength=len(G)).astype(np.int64)
    return total


def _neighbour_degrees(G, source, target, default: str, message: str, sides: str
                       ) -> tuple[list, list]:
    """NetworkX's ``source`` degree of each node and its sum of its neighbours' ``target``
    degrees (over ``sides`` of a directed graph, its successors of an undirected one), as
    Python ints by internal id; ``source`` and ``target`` checked as NetworkX checks them:
    ``message`` (with ``{what}`` and ``{name}``) for one not 'in', 'out' or 'in+out', and
    any but ``default`` refused on an undirected graph."""
    nx = _nx()
    if not G.directed:
        if source != default or target != default:
            raise nx.NetworkXError("source and target arguments are only supported for "
                                   "directed graphs")
        deg = G.degree()
        return deg.tolist(), _neighbour_sums(G, "out", deg).tolist()
    for what, name in (("source", source), ("target", target)):
        if name not in ("in", "out", "in+out"):
            raise nx.NetworkXError(message.format(what=what, name=name))
    s_deg, t_deg = (G.degree("both" if x == "in+out" else x) for x in (source, target))
    return s_deg.tolist(), _neighbour_sums(G, sides, t_deg).tolist()


def average_neighbor_degree(G, source="out", target="out", nodes=None, weight=None):
    """``nx.average_neighbor_degree``, unweighted."""
    _unweighted(G, weight)
    d, s = _neighbour_degrees(G, source, target, "out",
                              "{what} argument {name} must be 'in', 'out' or 'in+out'", source)
    return {G.keys[i]: (0.0 if d[i] == 0 else s[i] / d[i]) for i in _ids(G, nodes)}


def average_degree_connectivity(G, source="in+out", target="in+out", nodes=None,
                                weight=None):
    """``nx.average_degree_connectivity``, unweighted: per source degree ``k``, the sum
    of the neighbours' target degrees over ``k`` times the count of such nodes."""
    _unweighted(G, weight)
    d, s = _neighbour_degrees(G, source, target, "in+out",
                              '{what} must be one of "in", "out", or "in+out"',
                              "in" if source == "in" else "out")
    dsum: dict = {}
    dnorm: dict = {}
    for i in _ids(G, nodes):
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


def _group_centrality(transpose: bool):
    """NetworkX's group degree centrality ``f(G, S)``: the nodes adjacent to ``S`` outside
    it (successors, or predecessors with ``transpose``), over ``N - len(S)``."""

    def centrality(G, S):
        members = G.internal(S)
        outside = np.setdiff1d(_neighbourhood(G, members, transpose), members)
        return len(outside) / (len(G) - len(S))

    return centrality


# nx.group_degree_centrality, and nx.group_out_degree_centrality of a directed graph
group_degree_centrality = _group_centrality(False)
group_in_degree_centrality = _group_centrality(True)


def volume(G, S, weight=None):
    """``nx.volume``: the sum of the (out-)degrees of ``S``'s nodes in ``G`` (repeats
    counted as NetworkX counts them)."""
    _unweighted(G, weight)
    return sum(G.degree("out")[_ids(G, S)].tolist())


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
