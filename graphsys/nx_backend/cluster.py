"""graphsys's triangle counts (:mod:`graphsys.mining`) behind NetworkX's signatures:
``triangles``, ``clustering``, ``average_clustering`` and ``transitivity`` of an undirected
graph, self-loops ignored as NetworkX ignores them.

One triangle pass (:func:`graphsys.mining.triangle_stats`) gives each node's triangles
``T`` and simple degree ``d`` (neighbours other than itself); every figure is then
NetworkX's formula over those integers, in NetworkX's order of operations, so the values
equal NetworkX's to the last bit: a clustering coefficient is ``2T / (d (d - 1))`` and the
integer 0 where ``T == 0``, the average clustering a left-to-right sum over the nodes in
order divided by their count, the transitivity ``6 sum(T) / sum d (d - 1)`` (0 without a
triangle). Directed graphs (NetworkX's directed clustering, its successors' transitivity)
and ``weight`` are declined by the checks (:mod:`graphsys.nx_backend.checks`)."""

from __future__ import annotations

from graphsys import mining
from graphsys.nx_backend.measures import _ids


def _per_node(G) -> tuple[list, list]:
    """Each node's triangles and simple degree, by internal id, as Python ints."""
    if G.null:
        return [], []
    stats = mining.triangle_stats(G.graph, per_node=True)
    return stats.triangles.values.tolist(), stats.degree.values.tolist()


def _answer(G, nodes, value) -> object:
    """``value(i)`` of one node (``nodes`` a node of ``G``), else a dict over ``nodes``
    (every node when None)."""
    ids = _ids(G, nodes)
    if nodes is not None and nodes in G:
        return value(ids[0])
    return {G.keys[i]: value(i) for i in ids}


def triangles(G, nodes=None):
    """``nx.triangles``: of one node (an int), or a dict over ``nodes`` (every node by
    default)."""
    t, _ = _per_node(G)
    return _answer(G, nodes, lambda i: t[i])


def clustering(G, nodes=None, weight=None):
    """``nx.clustering`` of an undirected graph, unweighted: of one node, or a dict over
    ``nodes``."""
    t, d = _per_node(G)
    return _answer(G, nodes, lambda i: 0 if t[i] == 0 else 2 * t[i] / (d[i] * (d[i] - 1)))


def average_clustering(G, nodes=None, weight=None, count_zeros=True):
    """``nx.average_clustering`` of an undirected graph, unweighted
    (``ZeroDivisionError`` where no node is averaged over, as NetworkX's)."""
    c = clustering(G, nodes).values()  # one node's float: AttributeError, as NetworkX's
    if not count_zeros:
        c = [v for v in c if abs(v) > 0]
    return sum(c) / len(c)


def transitivity(G):
    """``nx.transitivity`` of an undirected graph (0 without a triangle)."""
    t, d = _per_node(G)
    triangles = 2 * sum(t)
    return 0 if triangles == 0 else triangles / sum(x * (x - 1) for x in d)
