"""graphsys's community quality and census behind NetworkX's signatures:
``is_partition``, ``modularity`` (:func:`graphsys.bsp.modularity`: NetworkX's directed
modularity on a directed graph, self-loops counted as NetworkX counts them) and
``triadic_census`` (:func:`graphsys.mining.triad_census`)."""

from __future__ import annotations

import numpy as np

from graphsys import mining


def _nx():
    import networkx as nx

    return nx


def is_partition(G, communities):
    """``nx.community.is_partition``: every node of ``G`` in exactly one community
    (members not in ``G`` count towards the sizes, as NetworkX counts them)."""
    if not isinstance(communities, list):
        communities = list(communities)
    nodes = {n for c in communities for n in c if n in G}
    return len(G) == len(nodes) == sum(len(c) for c in communities)


def modularity(G, communities, weight="weight", resolution=1):
    """``nx.community.modularity`` (``ZeroDivisionError`` without edges, as
    NetworkX's)."""
    nx = _nx()
    if not isinstance(communities, list):
        communities = list(communities)
    if not is_partition(G, communities):
        raise nx.algorithms.community.quality.NotAPartition(G, communities)
    if G.graph is None or len(G.edges()[0]) == 0:
        raise ZeroDivisionError("division by zero")
    labels = np.empty(len(G), np.int64)
    for i, community in enumerate(communities):
        labels[G.internal(community)] = i
    weighted = weight is not None and G.weight is not None
    from graphsys import bsp

    return float(bsp.modularity(G.graph, labels, resolution=resolution, weighted=weighted,
                                directed=G.directed))


def triadic_census(G, nodelist=None):
    """``nx.triadic_census`` of a directed graph, every node (``nodelist`` is declined
    by the checks)."""
    if G.graph is None:
        return {name: 0 for name in _nx().algorithms.triads.TRIAD_NAMES}
    return {k: int(v) for k, v in mining.triad_census(G.graph).items()}
