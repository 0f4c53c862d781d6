"""graphsys's community detection, quality and census behind NetworkX's signatures:
``is_partition``, ``modularity`` (:func:`graphsys.bsp.modularity`: NetworkX's directed
modularity on a directed graph, self-loops counted as NetworkX counts them),
``louvain_communities`` (graphsys's Louvain levels on that modularity),
``label_propagation_communities`` (NetworkX's semi-synchronous label propagation, step
for step, in numba) and ``triadic_census`` (:func:`graphsys.mining.triad_census`)."""

from __future__ import annotations

import numbers

import numba
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


def _seed(seed) -> int:
    """An integer seed for graphsys's random orders from NetworkX's ``seed``: an int as
    given; a random state (what NetworkX's ``py_random_state`` hands a backend: a
    ``random.Random`` made from the user's int, or the global one for None) one draw from
    it, so the same seed gives the same communities."""
    if isinstance(seed, numbers.Integral):
        return int(seed)
    if seed is None:
        import random

        seed = random
    return int(seed.randint(0, 2**31 - 1))


def _level(G, weighted: bool):
    """Level 0 of Louvain over ``G`` as NetworkX's Louvain reads it: a ``DiGraph``'s
    directed modularity, a ``Graph``'s undirected one, self-loops in the degrees."""
    from graphsys.bsp.algorithms.community_level import Level
    from graphsys.bsp.edges import build_adjacency

    es = G.graph.edge_set(None).name

    def arrays(kind: str) -> tuple:
        indptr, indices, w = build_adjacency(G.graph, es, kind, weighted)
        if not weighted:
            w = np.zeros(0, np.float32)
        elif w is None:
            w = np.ones(len(indices), np.float32)
        return indptr, indices, w

    return Level.from_adjacency(arrays("csr"), arrays("csc") if G.directed else None,
                                G.directed, visit_order=True)


def louvain_communities(G, weight="weight", resolution=1, threshold=0.0000001,
                        max_level=None, seed=None):
    """``nx.community.louvain_communities``: graphsys's Louvain
    (:func:`graphsys.bsp.louvain`'s levels, one pass) on the modularity NetworkX's
    optimises: Leicht and Newman's directed form on a ``DiGraph``, Newman's on a
    ``Graph``, each edge once, a self-loop counted in its node's degree (twice in a
    ``Graph``), ``weight`` (None: every edge 1), ``resolution``; levels until one gains at
    most ``threshold`` or ``max_level`` ran.

    The partition is a deterministic function of ``seed`` (an int, or one draw from
    NetworkX's random state) but not NetworkX's partition for that seed: graphsys's local
    moving visits the first level's nodes by degree and the later ones in its own random
    order, and ends a level's sweeps when they gain less than 1e-3, then refines the
    communities level by level back down. The contract is the quality: on the graphs the
    tests run (small graphs and SNAP's email-Eu-core, wiki-Vote, ca-GrQc, email-Enron) the
    modularity NetworkX computes for graphsys's partition is at least NetworkX's own
    Louvain's minus 0.01. ``resolution`` not positive and ``max_level`` not a positive
    integer are declined (:mod:`graphsys.nx_backend.checks`).
    """
    if G.graph is None or len(G.edges()[0]) == 0:
        return [{u} for u in G]
    weighted = weight is not None and G.weight is not None
    level = _level(G, weighted)
    from graphsys.bsp.algorithms.community import optimise

    member, _, _ = optimise(level, float(resolution), _seed(seed), iterations=1,
                            threshold=float(threshold), max_levels=max_level)
    if level.ids is not None:  # back to internal ids
        stored = np.empty_like(member)
        stored[level.ids] = member
        member = stored
    _, labels = np.unique(member, return_inverse=True)
    from graphsys.nx_backend.algorithms import _parts

    return _parts(G, labels.reshape(-1))


@numba.njit(cache=True)
def _greedy_colors(indptr, indices, order):
    """NetworkX's ``greedy_color``: each node of ``order`` in turn takes the smallest
    colour none of its coloured neighbours has."""
    n = indptr.shape[0] - 1
    colors = np.full(n, -1, np.int64)
    seen = np.full(n + 1, -1, np.int64)  # colour -> the last node that saw it
    for u in order:
        for e in range(indptr[u], indptr[u + 1]):
            c = colors[indices[e]]
            if c >= 0:
                seen[c] = u
        c = 0
        while seen[c] == u:
            c += 1
        colors[u] = c
    return colors


@numba.njit(cache=True)
def _frequent(u, indptr, indices, labels, count, touched):
    """Among ``u``'s neighbours' labels (a self-loop: its own once), those of highest
    frequency: (how many, the largest, whether ``u``'s own label is one). ``count`` is
    left all zero."""
    k = 0
    for e in range(indptr[u], indptr[u + 1]):
        c = labels[indices[e]]
        if count[c] == 0:
            touched[k] = c
            k += 1
        count[c] += 1
    best, high, largest, own = 0, 0, -1, False
    for i in range(k):
        best = max(best, count[touched[i]])
    for i in range(k):
        c = touched[i]
        if count[c] == best:
            high += 1
            largest = max(largest, c)
            own = own or c == labels[u]
        count[c] = 0
    return high, largest, own


@numba.njit(cache=True)
def _semi_synchronous(indptr, indices, order):
    """NetworkX's ``label_propagation_communities`` loop: every node its own label (its
    id); until each node with neighbours holds one of its most frequent neighbour labels,
    the nodes in ``order`` (by colour) take their most frequent neighbour label, on a tie
    keeping their own where it is one, else the largest (Prec-Max)."""
    n = indptr.shape[0] - 1
    labels = np.arange(n)
    count = np.zeros(n, np.int64)
    touched = np.empty(n, np.int64)
    while True:
        done = True
        for u in range(n):
            if indptr[u + 1] > indptr[u]:
                own = _frequent(u, indptr, indices, labels, count, touched)[2]
                if not own:
                    done = False
                    break
        if done:
            return labels
        for u in order:
            high, largest, own = _frequent(u, indptr, indices, labels, count, touched)
            if high == 1 or (high > 1 and not own):
                labels[u] = largest


def label_propagation_communities(G):
    """``nx.community.label_propagation_communities`` of an undirected graph (NetworkX
    refuses a directed one before dispatching): NetworkX's semi-synchronous label
    propagation, step for step, so the communities are NetworkX's own.

    NetworkX's colouring (``greedy_color``, largest degree first, a self-loop counting
    twice, ties in node order) is computed by graphsys's kernel; the nodes of each colour
    are then gathered into Python sets in NetworkX's order, so the nodes are updated in
    the order NetworkX's loop updates them; the labels (every node's position in ``G`` at
    first) move as NetworkX's do: each node takes its neighbours' most frequent label (a
    self-loop counts the node's own once), on a tie keeping its own where it is one, else
    the largest, until every node with neighbours holds a most frequent one. The result is
    NetworkX's: a ``dict_values`` of node sets, in the order of each community's first
    node in ``G``.
    """
    if G.graph is None:
        return {}.values()
    indptr, indices = G.adjacency()
    degree = G.degree()
    by_degree = np.argsort(-degree, kind="stable")  # NetworkX's sorted(..., reverse=True)
    colors = _greedy_colors(indptr, indices, by_degree)
    coloring: dict = {}  # colour -> set of nodes, built as NetworkX builds it
    keys = G.keys
    for i, c in zip(by_degree.tolist(), colors[by_degree].tolist()):
        members = coloring.get(c)
        if members is None:
            coloring[c] = {keys[i]}
        else:
            members.add(keys[i])
    order = G.internal([k for members in coloring.values() for k in members])
    labels = _semi_synchronous(indptr, indices, order)
    clusters: dict = {}
    for key, label in zip(keys, labels.tolist()):
        members = clusters.get(label)
        if members is None:
            clusters[label] = {key}
        else:
            members.add(key)
    return clusters.values()
