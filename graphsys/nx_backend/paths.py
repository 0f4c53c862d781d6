"""graphsys's BFS and SSSP (:mod:`graphsys.bsp`) behind NetworkX's reachability, path
length and distance-sum functions: ``has_path``, ``descendants``,
``descendants_at_distance``, ``shortest_path_length`` and its single-source, single-target,
Dijkstra, Bellman-Ford and all-pairs variants, the average shortest path length, the
Wiener, hyper-Wiener, Schultz and Gutman indices, the barycenter, harmonic centrality and
diameter, and efficiency.

Each source is one graphsys BFS (SSSP where a stored weight is asked for: non-negative,
float32-exact weights; others are declined, so NetworkX runs the call); results are
NetworkX's types, nearest nodes first, and sums run in NetworkX's order (per source in the
graph's order, nearest first) so the floats equal NetworkX's. Paths as node lists, predecessor
maps and reversed directed searches stay in NetworkX."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from graphsys.nx_backend.algorithms import (
    _check_node,
    _is_connected,
    _nx,
    _scc_labels,
    _within,
    check_exact,
    distances,
    single_source_dijkstra_path_length,
    single_source_shortest_path_length,
)


def _reached(G, source, weight=None) -> np.ndarray:
    return distances(G, _check_node(G, source), weight)


def has_path(G, source, target):
    """``nx.has_path``."""
    _check_node(G, target, "Target")
    return bool(np.isfinite(_reached(G, source)[G.index[target]]))


def descendants(G, source):
    """``nx.descendants``: the nodes reachable from ``source``, itself excluded (and
    ``nx.ancestors`` of an undirected graph)."""
    dist = _reached(G, source)
    return {G.keys[i] for i in np.flatnonzero(np.isfinite(dist) & (dist > 0)).tolist()}


def descendants_at_distance(G, source, distance):
    """``nx.descendants_at_distance``: the nodes exactly ``distance`` hops away."""
    if source not in G:
        raise _nx().NetworkXError(f"The node {source} is not in the graph.")
    return {G.keys[i] for i in np.flatnonzero(_reached(G, source) == distance).tolist()}


def _one_pair(G, source, target, weight):
    _check_node(G, target, "Target")
    d = _reached(G, source, weight)[G.index[target]]
    if not np.isfinite(d):
        raise _nx().NetworkXNoPath(f"No path between {source} and {target}.")
    return G.length_type(weight)(d)


def shortest_path_length(G, source=None, target=None, weight=None, method="dijkstra"):
    """``nx.shortest_path_length``: of one pair, from a source, to a target (undirected
    graphs; a directed one's reversed search is declined) or of every pair."""
    if method not in ("dijkstra", "bellman-ford"):
        raise ValueError(f"method not supported: {method}")
    if source is None and target is None:
        return all_pairs_dijkstra_path_length(G, weight=weight)
    if source is None:
        source = target
    elif target is not None:
        return _one_pair(G, source, target, weight)
    return single_source_dijkstra_path_length(G, source, weight=weight)


def single_target_shortest_path_length(G, target, cutoff=None):
    """``nx.single_target_shortest_path_length`` of an undirected graph."""
    if target not in G:
        raise _nx().NodeNotFound(f"Target {target} is not in G")
    return single_source_shortest_path_length(G, target, cutoff)


def all_pairs_shortest_path_length(G, cutoff=None):
    """``nx.all_pairs_shortest_path_length``: a generator of ``(node, lengths)``."""
    for n in G.keys:
        yield n, single_source_shortest_path_length(G, n, cutoff)


def dijkstra_path_length(G, source, target, weight="weight"):
    """``nx.dijkstra_path_length``."""
    _check_node(G, source, "Node")
    return 0 if source == target else _one_pair(G, source, target, weight)


def all_pairs_dijkstra_path_length(G, cutoff=None, weight="weight"):
    """``nx.all_pairs_dijkstra_path_length``: a generator of ``(node, lengths)``; weights
    graphsys declines are declined here, before the generator (NetworkX then runs the
    call: a decline raised while the generator is read would reach its reader)."""
    check_exact(G, weight)
    return ((n, single_source_dijkstra_path_length(G, n, cutoff, weight)) for n in G.keys)


def single_source_bellman_ford_path_length(G, source, weight="weight"):
    """``nx.single_source_bellman_ford_path_length`` (non-negative weights: Dijkstra's
    answer)."""
    return single_source_dijkstra_path_length(G, source, weight=weight)


def bellman_ford_path_length(G, source, target, weight="weight"):
    """``nx.bellman_ford_path_length``."""
    _check_node(G, source)
    return 0 if source == target else _one_pair(G, source, target, weight)


def all_pairs_bellman_ford_path_length(G, weight="weight"):
    """``nx.all_pairs_bellman_ford_path_length``."""
    return all_pairs_dijkstra_path_length(G, weight=weight)


def multi_source_dijkstra_path_length(G, sources, cutoff=None, weight="weight"):
    """``nx.multi_source_dijkstra_path_length``: each node's distance from the nearest
    of ``sources``."""
    sources = list(sources)
    if not sources:
        raise ValueError("sources must not be empty")
    for s in sources:
        if s not in G:
            raise _nx().NodeNotFound(f"Node {s} not found in graph")
    ids = G.internal(sources)
    dist = np.min([distances(G, s, weight) for s in ids.tolist()], axis=0)
    kind = G.length_type(weight)
    out = dict.fromkeys(sources, 0)
    for k, v in _within(G, dist, cutoff, kind, int(ids[0])).items():
        out.setdefault(k, v)
    return out


def _all_lengths(G, weight) -> Iterator[dict]:
    """Every node's distances (NetworkX's ``shortest_path_length`` of every pair), in the
    graph's order, one source at a time: all of them at once would hold ``N**2`` entries
    (email-Enron's 36,692 nodes: over 23 GB)."""
    return (dict(lengths) for _, lengths in all_pairs_dijkstra_path_length(G, weight=weight))


def _connected(G) -> bool:
    """Strongly connected (directed) or connected; the null graph raises NetworkX's
    ``NetworkXPointlessConcept``."""
    return _is_connected(G, _scc_labels(G) if G.directed and len(G) else None)


def average_shortest_path_length(G, weight=None, method=None):
    """``nx.average_shortest_path_length`` (unweighted, Dijkstra or Bellman-Ford;
    ``method="unweighted"`` counts hops whatever ``weight``, as NetworkX's)."""
    nx = _nx()
    if method == "unweighted":
        weight = None
    n = len(G)
    if n == 0:
        raise nx.NetworkXPointlessConcept("the null graph has no paths, thus there is no "
                                          "average shortest path length")
    if n == 1:
        return 0
    if not _connected(G):
        raise nx.NetworkXError("Graph is not strongly connected." if G.directed
                               else "Graph is not connected.")
    s = sum(x for lengths in _all_lengths(G, weight) for x in lengths.values())
    return s / (n * (n - 1))


def _index_sum(G, weight, term) -> float:
    """Half the sum of ``term(u, v, d)`` over ordered pairs (inf when disconnected)."""
    if not _connected(G):
        return float("inf")
    keys = G.keys
    return sum(term(keys[i], v, d) for i, lengths in enumerate(_all_lengths(G, weight))
               for v, d in lengths.items()) / 2


def wiener_index(G, weight=None):
    """``nx.wiener_index``: the sum of all distances (each unordered pair once on an
    undirected graph)."""
    if not _connected(G):
        return float("inf")
    total = sum(d for lengths in _all_lengths(G, weight) for d in lengths.values())
    return total if G.directed else total / 2


def hyper_wiener_index(G, weight=None):
    """``nx.hyper_wiener_index`` of an undirected graph."""
    return _index_sum(G, weight, lambda u, v, d: d + d**2)


def schultz_index(G, weight=None):
    """``nx.schultz_index`` of an undirected graph, unweighted degrees."""
    d = G.node_dict(G.degree())
    return _index_sum(G, weight, lambda u, v, dist: dist * (d[u] + d[v]))


def gutman_index(G, weight=None):
    """``nx.gutman_index`` of an undirected graph, unweighted degrees."""
    d = G.node_dict(G.degree())
    return _index_sum(G, weight, lambda u, v, dist: dist * d[u] * d[v])


def barycenter(G, weight=None, attr=None, sp=None):
    """``nx.barycenter``: the nodes of least total distance, unweighted (``weight``,
    ``attr`` and ``sp`` are declined by the checks, and so is an undirected tree, whose
    centroid NetworkX lists in its own order)."""
    if not G.directed:
        from graphsys.nx_backend.structure import is_tree

        if is_tree(G):  # the null graph: NetworkX's exception
            raise NotImplementedError("graphsys: a tree's barycenter stays in NetworkX "
                                      "(its centroid rule orders the two centres)")
    smallest, out, n = float("inf"), [], len(G)
    for v, dists in zip(G.keys, _all_lengths(G, weight)):
        if len(dists) < n:
            raise _nx().NetworkXNoPath("Input graph is disconnected, so every induced "
                                       "subgraph has infinite barycentricity.")
        total = sum(dists.values())
        if total < smallest:
            smallest, out = total, [v]
        elif total == smallest:
            out.append(v)
    return out


def _inverse_sum(G, weight) -> float:
    """The sum of ``1 / d`` over every pair's distance ``d`` but 0, added one at a time in
    NetworkX's order (``sum`` compensates from Python 3.12 on); the int 0 without one."""
    total = 0
    for lengths in _all_lengths(G, weight):
        for d in lengths.values():
            if d != 0:
                total += 1 / d
    return total


def harmonic_diameter(G, sp=None, *, weight=None):
    """``nx.harmonic_diameter``."""
    order = len(G)
    sum_invd = _inverse_sum(G, weight)
    if sum_invd != 0:
        return order * (order - 1) / sum_invd
    return math.inf if order > 1 else math.nan


def global_efficiency(G):
    """``nx.global_efficiency`` of an undirected graph."""
    n = len(G)
    denom = n * (n - 1)
    return 0 if denom == 0 else _inverse_sum(G, None) / denom


def efficiency(G, u, v):
    """``nx.efficiency`` of an undirected graph: ``1 / d(u, v)``, 0 without a path."""
    try:
        return 1 / _one_pair(G, u, v, None)
    except _nx().NetworkXNoPath:
        return 0


def harmonic_centrality(G, nbunch=None, distance=None, sources=None):
    """``nx.harmonic_centrality`` of every node: the sum of ``1 / d`` over the nodes
    that reach it (``nbunch`` and ``sources`` are declined by the checks), keyed and
    summed over the sources in NetworkX's order, that of ``set(G)``, so the floats are
    NetworkX's to the last bit."""
    check_exact(G, distance)
    centrality = {u: 0 for u in set(G.keys)}
    for v in list(centrality):
        for u, d in single_source_dijkstra_path_length(G, v, weight=distance).items():
            if d != 0:
                centrality[u] += 1 / d
    return centrality
