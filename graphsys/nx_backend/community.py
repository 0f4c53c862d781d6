"""graphsys's community detection, quality and census behind NetworkX's signatures:
``is_partition``, ``modularity`` (:func:`graphsys.bsp.modularity`: NetworkX's directed
modularity on a directed graph, self-loops counted as NetworkX counts them),
``louvain_communities`` (graphsys's Louvain levels on that modularity),
``label_propagation_communities`` (NetworkX's semi-synchronous label propagation, step
for step, in numba), ``asyn_lpa_communities`` (NetworkX's asynchronous one with
Python's random draws, in numba) and ``triadic_census`` (:func:`graphsys.mining.triad_census`)."""

from __future__ import annotations

import numbers

import numba
import numpy as np

from graphsys import mining
from graphsys.bsp.kernels_components import _count_labels


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
    if G.null or len(G.edges()[0]) == 0:
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
    tests run (small graphs with weights and self-loops, SNAP's email-Eu-core as a
    ``DiGraph`` and undirected) the modularity NetworkX computes for graphsys's partition
    is at least NetworkX's own Louvain's minus 0.01. ``resolution`` not positive and
    ``max_level`` not a positive integer are declined (:mod:`graphsys.nx_backend.checks`).
    """
    if G.null or len(G.edges()[0]) == 0:
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
    k = _count_labels(indptr, indices, u, labels, count, touched, 0)
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
    if G.null:
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
    return _groups(G, _semi_synchronous(indptr, indices, order)).values()


#: Mersenne Twister MT19937's constants (the generator of Python's ``random.Random``)
_MT_N, _MT_M, _MT_MATRIX = 624, 397, 0x9908B0DF


@numba.njit(cache=True)
def _mt_uint32(mt, pos):
    """The next 32 random bits of the MT19937 state ``mt`` (624 words, int64) at
    ``pos[0]``, as CPython's ``genrand_uint32`` draws them (twisting the state first when
    it is used up)."""
    if pos[0] >= _MT_N:
        for kk in range(_MT_N):
            y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % _MT_N] & 0x7FFFFFFF)
            mt[kk] = mt[(kk + _MT_M) % _MT_N] ^ (y >> 1) ^ (_MT_MATRIX if y & 1 else 0)
        pos[0] = 0
    y = mt[pos[0]]
    pos[0] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


@numba.njit(cache=True)
def _randbelow(n, mt, pos):
    """CPython's ``Random._randbelow(n)`` (n < 2**32): ``getrandbits(n.bit_length())``
    until it is below ``n``."""
    k = 0
    while (n >> k) > 0:
        k += 1
    r = _mt_uint32(mt, pos) >> (32 - k)
    while r >= n:
        r = _mt_uint32(mt, pos) >> (32 - k)
    return r


@numba.njit(cache=True)
def _asynchronous(indptr, indices, w, mt, pos):
    """NetworkX's ``asyn_lpa_communities`` loop with ``random.Random``'s draws: rounds
    until no label changes, each over the nodes in ``G``'s order shuffled
    (``Random.shuffle``); a node with neighbours (``G[node]``, in ``indices``' order)
    sums its neighbours' labels' weights (``w``, empty: 1 each) and, unless its own
    label is one of the heaviest, takes ``Random.choice`` of them in first-seen order."""
    n = indptr.shape[0] - 1
    labels = np.arange(n)
    freq = np.zeros(n, np.float64)
    mark = np.full(n, -1, np.int64)
    touched = np.empty(n, np.int64)
    best = np.empty(n, np.int64)
    nodes = np.empty(n, np.int64)
    weighted = w.shape[0] > 0
    visit = 0
    changed = True
    while changed:
        changed = False
        for i in range(n):
            nodes[i] = i
        for i in range(n - 1, 0, -1):
            j = _randbelow(i + 1, mt, pos)
            nodes[i], nodes[j] = nodes[j], nodes[i]
        for u in nodes:
            if indptr[u + 1] == indptr[u]:
                continue
            k = 0
            for e in range(indptr[u], indptr[u + 1]):
                c = labels[indices[e]]
                if mark[c] != visit:
                    mark[c] = visit
                    freq[c] = 0.0
                    touched[k] = c
                    k += 1
                freq[c] += w[e] if weighted else 1.0
            visit += 1
            top = freq[touched[0]]
            for i in range(1, k):
                top = max(top, freq[touched[i]])
            count, own = 0, False
            for i in range(k):
                if freq[touched[i]] == top:
                    best[count] = touched[i]
                    count += 1
                    own = own or touched[i] == labels[u]
            if not own:
                labels[u] = best[_randbelow(count, mt, pos)]
                changed = True
    return labels


def _nx_order(G, weight) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``G``'s out-neighbours (``G[node]``) by internal id, each node's in the order
    NetworkX iterates them (its source graph's adjacency; a stored graph's: ascending),
    and, given ``weight``, the weights as NetworkX reads them (its source's values,
    float64; empty without)."""
    source = G._source.graph() if G.converted else None
    if source is None:
        indptr, indices = G.adjacency()
        w = np.zeros(0)
        if weight is not None and G.weight is not None:
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


def _groups(G, labels: np.ndarray) -> dict:
    """``networkx.utils.groups`` of the labelling: label -> set of nodes, labels in the
    order of their first node in ``G``."""
    out: dict = {}
    for key, label in zip(G.keys, labels.tolist()):
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
    version, state, gauss = rng.getstate()
    mt = np.array(state[:_MT_N], np.int64)
    pos = np.array([state[_MT_N]], np.int64)
    labels = _asynchronous(indptr, indices, w, mt, pos)
    rng.setstate((version, (*mt.tolist(), int(pos[0])), gauss))
    yield from _groups(G, labels).values()
