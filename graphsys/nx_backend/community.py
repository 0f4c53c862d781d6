"""graphsys's community detection, quality and census behind NetworkX's signatures:
``is_partition``, ``modularity`` (the kernel of :func:`graphsys.bsp.modularity`:
NetworkX's directed modularity on a directed graph, self-loops counted as NetworkX counts
them), ``louvain_communities`` (graphsys's Louvain levels on that modularity),
``label_propagation_communities`` (NetworkX's semi-synchronous label propagation, step
for step, in numba), ``asyn_lpa_communities`` (NetworkX's asynchronous one with
Python's random draws, in numba) and ``triadic_census`` (:func:`graphsys.mining.triad_census`)."""

from __future__ import annotations

import numbers

import numpy as np

from graphsys import mining
from graphsys.kernels.arrays import read_only
from graphsys.nx_backend.algorithms import _nx


def is_partition(G, communities):
    """``nx.community.is_partition``: every node of ``G`` in exactly one community
    (members not in ``G`` count towards the sizes, as NetworkX counts them)."""
    if not isinstance(communities, list):
        communities = list(communities)
    nodes = {n for c in communities for n in c if n in G}
    return len(G) == len(nodes) == sum(len(c) for c in communities)


def modularity(G, communities, weight="weight", resolution=1):
    """``nx.community.modularity`` (``ZeroDivisionError`` without edges or where every
    weight is 0, as NetworkX's). Weights float32 does not hold exactly (0.1) are declined
    (:func:`~graphsys.nx_backend.algorithms.check_exact`): the kernel reads float32
    weights, and its sums would not be NetworkX's float64 ones."""
    from graphsys.nx_backend.algorithms import check_exact

    check_exact(G, weight)
    nx = _nx()
    if not isinstance(communities, list):
        communities = list(communities)
    if not is_partition(G, communities):
        raise nx.algorithms.community.quality.NotAPartition(G, communities)
    if G.null or len(G.edges()[0]) == 0:
        raise ZeroDivisionError("division by zero")
    labels = np.empty(len(G), np.int64)
    for i, community in enumerate(communities):
        labels[G.internal(community)] = i
    level = _level(G, G.weighted(weight), visit_order=False)
    if level.m == 0:  # every weight 0: NetworkX divides by the total weight
        raise ZeroDivisionError("division by zero")
    return level.modularity(labels, float(resolution))


def triadic_census(G, nodelist=None):
    """``nx.triadic_census`` of a directed graph, every node (``nodelist`` is declined
    by the checks)."""
    if G.null:
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


def _level(G, weighted: bool, visit_order: bool = True):
    """Level 0 of Louvain over ``G`` as NetworkX's Louvain and modularity read it: a
    ``DiGraph``'s directed modularity, a ``Graph``'s undirected one, self-loops in the
    degrees (the adjacency as :func:`graphsys.bsp.modularity` reads a stored graph's; a
    conversion still in memory as the same arrays, without writing it)."""
    from graphsys.bsp.algorithms.community_level import Level

    def arrays(transpose: bool) -> tuple:
        if G.in_memory:
            from graphsys.nx_backend.graph import _csr

            indptr, indices, w = _csr(G._pending, len(G), transpose, not G.directed,
                                      weights=weighted)
            if len(G) < 2**31:  # the stored adjacency's index type
                indices = indices.astype(np.int32)
        else:
            from graphsys.bsp.edges import build_adjacency

            indptr, indices, w = build_adjacency(G.graph, G.graph.edge_set(None).name,
                                                 "csc" if transpose else "csr", weighted)
        # read-only, as the engine's adjacency is: one signature of the symmetrising kernels
        if not weighted:
            return read_only(indptr, indices, np.zeros(0, np.float32))
        return read_only(indptr, indices, np.ones(len(indices), np.float32) if w is None
                         else np.asarray(w, np.float32))

    return Level.from_adjacency(arrays(False), arrays(True) if G.directed else None,
                                G.directed, visit_order=visit_order)


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
    communities level by level back down. The contract is the quality: the modularity
    NetworkX computes for graphsys's partition is at least NetworkX's own Louvain's minus
    0.02 (docs/from-networkx.md has the graphs measured; the tests hold small graphs with
    weights and self-loops and SNAP's email-Eu-core, as a ``DiGraph`` and undirected, to
    0.01). ``resolution`` not positive and ``max_level`` not a positive integer are declined
    (:mod:`graphsys.nx_backend.checks`).
    """
    if G.null or len(G.edges()[0]) == 0:
        return [{u} for u in G]
    level = _level(G, G.weighted(weight))
    if level.m == 0:  # every weight 0: NetworkX's modularity divides by the total weight
        raise ZeroDivisionError("division by zero")
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
    if G.null:
        return {}.values()
    from graphsys.bsp.kernels_components import greedy_coloring
    from graphsys.nx_backend import propagation as kernels

    indptr, indices = G.adjacency()
    by_degree = np.argsort(-G.degree(), kind="stable")  # NetworkX's sorted(..., reverse=True)
    colors = np.empty(len(G), np.int64)
    # the arrays of the BSP's call (int32 neighbours, read-only): one compiled colouring
    out = read_only(indptr, indices.astype(np.int32) if len(G) < 2**31 else indices)
    greedy_coloring(*out, *out, False, by_degree, colors)
    # colour -> set of nodes, built as NetworkX builds it
    coloring = _groups([G.keys[i] for i in by_degree.tolist()], colors[by_degree])
    order = G.internal([k for members in coloring.values() for k in members])
    return _groups(G.keys, kernels.semi_synchronous(indptr, indices, order)).values()


def _nx_order(G, weight) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``G``'s out-neighbours (``G[node]``) by internal id, each node's in the order
    NetworkX iterates them (its source graph's adjacency; a stored graph's: ascending),
    and, given ``weight``, the weights as NetworkX reads them (its source's values,
    float64; empty without)."""
    source = G._source.graph() if G.converted else None
    if source is None:
        indptr, indices = G.adjacency()
        w = np.zeros(0)
        if G.weighted(weight):
            from graphsys.bsp.edges import build_adjacency

            w = build_adjacency(G.graph, G.graph.edge_set(None).name, "csr", True)[2]
            w = np.asarray(w if w is not None else np.ones(len(indices)), np.float64)
        return indptr, indices, w
    index = G.index.__getitem__
    adj = source.adj
    indptr = np.zeros(len(G) + 1, np.int64)
    np.cumsum([len(adj[u]) for u in G.keys], out=indptr[1:])
    indices = np.fromiter((index(v) for u in G.keys for v in adj[u]), np.int64,
                          int(indptr[-1]))
    w = np.zeros(0)
    if weight is not None:
        w = np.fromiter((d.get(weight, 1) for u in G.keys for d in adj[u].values()),
                        np.float64, int(indptr[-1]))
    return indptr, indices, w


def _groups(keys, labels: np.ndarray) -> dict:
    """``networkx.utils.groups`` of the labelling of ``keys``: label -> set of keys, labels
    in the order of their first key, each set filled in the order of ``keys``."""
    out: dict = {}
    for key, label in zip(keys, labels.tolist()):
        members = out.get(label)
        if members is None:
            out[label] = {key}
        else:
            members.add(key)
    return out


def asyn_lpa_communities(G, weight=None, seed=None):
    """``nx.community.asyn_lpa_communities``: NetworkX's asynchronous label propagation,
    draw for draw, so the communities are NetworkX's for the same ``seed``.

    NetworkX's loop runs in numba with Python's own random generator: the state of the
    ``random.Random`` NetworkX hands the backend (made from an int ``seed``; Python's
    global one for None) is copied into a Mersenne Twister kernel that draws as
    ``Random.shuffle`` and ``Random.choice`` draw, and copied back when the
    communities are read, so the generator ends where NetworkX's loop leaves it. Each
    round shuffles the nodes in ``G``'s order; a node takes, unless its own label is
    among them, one of its neighbours' (a ``DiGraph``'s successors') most frequent labels
    (``weight``: summed weights), chosen in the order NetworkX's neighbour iteration first
    sees them (the source graph's adjacency order). A generator, as NetworkX's: nothing
    is drawn before it is iterated. Another kind of random state is declined
    (:mod:`graphsys.nx_backend.checks`).
    """
    import random

    rng = random._inst if seed is None else (
        random.Random(seed) if isinstance(seed, numbers.Integral) else seed)
    if type(rng) is not random.Random:
        raise NotImplementedError("graphsys: only random.Random seeds are reproduced")
    indptr, indices, w = _nx_order(G, weight)
    from graphsys.nx_backend import propagation as kernels

    version, state, gauss = rng.getstate()
    mt = np.array(state[:kernels.MT_N], np.int64)
    pos = np.array([state[kernels.MT_N]], np.int64)
    labels = kernels.asynchronous(indptr, indices, w, mt, pos)
    rng.setstate((version, (*mt.tolist(), int(pos[0])), gauss))
    yield from _groups(G.keys, labels).values()
