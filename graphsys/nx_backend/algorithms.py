"""graphsys's builtin vertex algorithms (:mod:`graphsys.bsp`) behind NetworkX's signatures:
PageRank (personalized too), HITS, BFS and Dijkstra path lengths, connected and weakly
connected components, core numbers. Arguments graphsys declines are filtered before a call
reaches here (:mod:`graphsys.nx_backend.checks`); results are NetworkX's types (dicts of
Python scalars keyed by node, generators of sets) and failures NetworkX's exceptions."""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np

from graphsys.errors import ConvergenceWarning, ParameterError, check_count

#: Products with ``A`` and ``A^T`` in one of ARPACK's iterations for NetworkX's ``svds``
#: call (``ncv = max(2k + 1, 20)`` vectors for ``k = 1``).
ARPACK_NCV = 20

#: The largest ``max_iter`` NetworkX's ARPACK calls (``hits``' ``svds``,
#: ``eigenvector_centrality_numpy``'s ``eigsh``) can pass on: ARPACK counts its iterations
#: in a C int.
ARPACK_MAX_ITER = 2**31 - 1


def check_arpack_iterations(max_iter) -> None:
    """A one-line ``ValueError`` where NetworkX would hand ARPACK a ``max_iter`` above
    :data:`ARPACK_MAX_ITER` (checked where NetworkX calls ARPACK, after its own errors).
    NetworkX fails inside SciPy there: ``SystemError`` beyond 64 bits, else ARPACK's error
    -4 ("must be greater than zero") or a count wrapped modulo 2**32 run as given (2**32 + 5
    runs 5 iterations)."""
    try:
        check_count("max_iter", max_iter, maximum=ARPACK_MAX_ITER)
    except ParameterError as exc:  # a graphsys error would send the call back to NetworkX
        raise ValueError(f"{exc} (NetworkX hands it to ARPACK, whose iteration count is a "
                         "C int)") from None


def _bsp():
    """:mod:`graphsys.bsp`, imported on first use (the functions that need no BSP run do
    without it; torch is imported only by a run that needs the superstep loop)."""
    from graphsys import bsp

    return bsp


def _nx():
    import networkx as nx

    return nx


def _check_node(G, node, what: str = "Source") -> int:
    if node not in G:
        raise _nx().NodeNotFound(f"{what} {node} is not in G" if what == "Source"
                                 else f"{what} {node} not found in graph")
    return int(G.index[node])


def _dense(G, values: dict) -> np.ndarray:
    """``values`` (node -> number) by internal id, 0 for the nodes it leaves out (keys
    that are not nodes ignored, as NetworkX does)."""
    keys = [k for k in values if k in G]
    out = np.zeros(len(G), np.float64)
    out[G.internal(keys)] = [values[k] for k in keys]
    return out


def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None,
             weight="weight", dangling=None):
    """``nx.pagerank``: graphsys's PageRank with NetworkX's iteration: from ``nstart``
    (divided by its sum) or uniform, teleporting to ``personalization`` (divided by its
    sum; dangling mass follows it), stopping when the L1 change is below ``N * tol``
    within ``max_iter`` iterations, else ``PowerIterationFailedConvergence`` (at once
    where ``tol`` is not positive: NetworkX's test can never hold). Arguments NetworkX
    takes and graphsys does not (a ``dangling`` dict, negative or non-finite vectors)
    are declined by the checks."""
    nx = _nx()
    n = len(G)
    if n == 0:
        return {}
    if max_iter <= 0 or not tol > 0:
        raise nx.PowerIterationFailedConvergence(max_iter)
    p = None
    if personalization is not None:
        p = _dense(G, personalization)
        if not p.sum() > 0:
            raise ZeroDivisionError
    weighted = G.weighted(weight)
    start = None
    if nstart is not None:
        start = _dense(G, nstart)
        start = start / start.sum()
    if G.in_memory:
        return _pagerank_in_memory(G, alpha, p, start, max_iter, tol, weighted)
    program = _bsp().PageRank(alpha, n * tol, personalization=p, weighted=weighted)
    if start is not None:
        program.initial = start
    with warnings.catch_warnings():  # unconverged: NetworkX's exception below instead
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = _bsp().run(G.graph, program, max_iters=int(max_iter))
    if not res.stats.converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return G.node_dict(res.values)


@numba.njit(cache=True)
def _power_iteration(indptr, indices, w, inv_out, dangling, p, x, alpha, limit, max_iter):
    """NetworkX's PageRank iteration, pulled over the in-neighbours (CSC ``indptr``,
    ``indices``, weights ``w``, empty: 1 each): ``x <- alpha (x A + sum(x[dangling]) p)
    + (1 - alpha) p``, ``A`` the adjacency divided by each row's out-strength
    (``inv_out``), until the L1 change is below ``limit`` or ``max_iter`` iterations ran.
    Returns (x, whether it converged)."""
    n = x.shape[0]
    new = np.empty(n)
    weighted = w.shape[0] > 0
    for _ in range(max_iter):
        lost = 0.0
        for u in dangling:
            lost += x[u]
        err = 0.0
        for v in range(n):
            total = 0.0
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                total += x[u] * inv_out[u] * (w[e] if weighted else 1.0)
            new[v] = alpha * (total + lost * p[v]) + (1 - alpha) * p[v]
            err += abs(new[v] - x[v])
        x, new = new, x
        if err < limit:
            return x, True
    return x, False


def _pagerank_in_memory(G, alpha, p, start, max_iter, tol, weighted):
    """PageRank on a conversion still in memory (:attr:`BackendGraph.in_memory`): no
    graph directory written and no BSP engine imported; NetworkX's iteration over the
    conversion's float64 weights (:func:`_power_iteration`)."""
    from graphsys.nx_backend.graph import _csr

    n = len(G)
    key = ("pagerank", weighted)  # kept with the conversion (replaced by a refresh)
    if key not in G._cache:
        indptr, indices, w = _csr(G._pending, n, True, not G.directed, weights=weighted)
        w = np.zeros(0) if w is None else np.asarray(w, np.float64)
        strength = np.bincount(indices, weights=w if len(w) else None, minlength=n)
        inv_out = np.divide(1.0, strength, out=np.zeros(n), where=strength > 0)
        G._cache[key] = indptr, indices, w, inv_out, np.flatnonzero(strength == 0)
    indptr, indices, w, inv_out, dangling = G._cache[key]
    p = np.full(n, 1.0 / n) if p is None else p / p.sum()
    x = np.full(n, 1.0 / n) if start is None else start
    x, converged = _power_iteration(indptr, indices, w, inv_out, dangling, p, x,
                                    float(alpha), n * tol, int(max_iter))
    if not converged:
        raise _nx().PowerIterationFailedConvergence(max_iter)
    return G.node_dict(x)


def _hits_tolerance(tol: float, n: int) -> float:
    """The L1 change of the hub vector (sum 1) :func:`hits` iterates to: ``min(tol, 1e-10)
    / n``, but not below ``sqrt(n)`` float64 epsilons, the rounding noise of one product on
    ``n`` nodes (below it the iteration never settles: on email-Enron's 36,692 nodes
    ``1e-10 / n`` is 2.7e-15, the noise about 4e-14)."""
    return max(min(tol, 1e-10) / n, float(np.finfo(np.float64).eps) * math.sqrt(n))


def hits(G, max_iter=100, tol=1.0e-8, nstart=None, normalized=True):
    """``nx.hits``: power iteration to a tolerance tighter than NetworkX's ARPACK one (the
    hub vector's L1 change below ``min(tol, 1e-10) / N``, or the rounding noise of ``N``
    nodes where that is larger: :func:`_hits_tolerance`), at most :data:`ARPACK_NCV` power
    iterations per ``max_iter``, from a uniform start (a given ``nstart``, ``tol <= 0`` and
    one-node graphs are declined by the checks: NetworkX runs them). Unconverged on a
    converted NetworkX graph, the call is declined too (NetworkX's ARPACK, a Krylov
    method, may converge where power iteration did not); on a stored graph
    ``PowerIterationFailedConvergence``. Weights float32 does not hold exactly (0.1) are
    declined (:func:`check_exact`): the stored graph's float32 weights moved the scores by
    about 1e-7 of their value, where NetworkX's ARPACK answer is exact to 1e-15. A
    ``max_iter`` beyond ARPACK's C int is a ``ValueError`` (:func:`check_arpack_iterations`)."""
    nx = _nx()
    n = len(G)
    if n == 0:
        return {}, {}
    check_exact(G, "weight")  # NetworkX's HITS reads the "weight" attribute
    if max_iter <= 0:
        raise nx.PowerIterationFailedConvergence(max_iter)
    check_arpack_iterations(max_iter)
    # NetworkX's max_iter counts ARPACK restarts, each up to ncv = 20 products with A and
    # A^T for k = 1: the same budget of power iterations (two supersteps each)
    with warnings.catch_warnings():  # unconverged: NetworkX's exception below instead
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = _bsp().hits(G.graph, tol=_hits_tolerance(tol, n),
                          max_iters=2 * ARPACK_NCV * max_iter, weighted=G.weighted("weight"))
    if not res.stats.converged and G.converted:  # ARPACK may converge where it did not
        raise NotImplementedError("graphsys: HITS's power iteration did not converge within "
                                  "max_iter's budget (NetworkX's ARPACK may)")
    if not res.stats.converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return G.node_dict(res.values[:, 0]), G.node_dict(res.values[:, 1])


def single_source_shortest_path_length(G, source, cutoff=None):
    """``nx.single_source_shortest_path_length``: graphsys's BFS, levels up to ``cutoff``."""
    s = _check_node(G, source)
    if G.null or len(G) == 1:
        return {source: 0}
    return _within(G, distances(G, s), cutoff, int, s, levels=True)


def _within(G, dist: np.ndarray, cutoff, kind, source: int, levels: bool = False) -> dict:
    """``{key: distance}`` of the nodes reached within ``cutoff``, nearest first, the
    source always (as NetworkX's). ``levels``: NetworkX's breadth-first rule, a level
    expanded while ``cutoff`` exceeds it (levels up to ``ceil(cutoff)``)."""
    reach = np.isfinite(dist)
    if cutoff is not None:
        near = dist - 1 < cutoff if levels else ~(dist > cutoff)  # NaN: as NetworkX
        near[source] = True
        reach &= near
    idx = np.flatnonzero(reach)
    order = idx[np.argsort(dist[idx], kind="stable")]
    out = {G.keys[i]: kind(dist[i]) for i in order.tolist()}
    out[G.keys[source]] = 0  # NetworkX's int 0, whatever the weights
    return out


def single_source_dijkstra_path_length(G, source, cutoff=None, weight="weight"):
    """``nx.single_source_dijkstra_path_length``: graphsys's SSSP over the weights."""
    s = _check_node(G, source, "Node")
    if G.null or len(G) == 1:
        return {source: 0}
    return _within(G, distances(G, s, weight), cutoff,
                   G.length_type(weight), s)


def distances(G, s: int, weight=None) -> np.ndarray:
    """Every node's distance from internal id ``s`` (inf where unreached): graphsys's
    BFS, or its SSSP over the stored weights when ``weight`` names them. An undirected
    graph is searched by the distance measures' breadth-first kernel
    (:func:`graphsys.kernels.bfs.levels`) over its adjacency, with no BSP run;
    a directed one by the BSP's."""
    if len(G) == 1:
        return np.zeros(1)
    if not G.weighted(weight) and not G.directed:
        return _hops(G, s)
    if not G.weighted(weight):
        return _bsp().bfs(G.graph, _stored_id(G, s)).values
    check_exact(G, weight)
    for _, _, _, w in G.graph.iter_edges():
        if w is not None and (w < 0).any():
            raise ValueError("Contradictory paths found: negative weights?")
    return _bsp().sssp(G.graph, _stored_id(G, s)).values


def check_exact(G, weight) -> None:
    """Decline (``NotImplementedError``: NetworkX runs the call) sums over weights float32
    does not hold exactly (path lengths, modularity): they would not be NetworkX's float64
    ones. A function returning a generator calls it before it returns one, so that the
    decline reaches NetworkX's dispatcher and not the loop reading the generator."""
    if G.weighted(weight) and not G.exact_weights:
        raise NotImplementedError("graphsys: these weights need float64 sums (graphsys "
                                  "stores float32 weights)")


def _stored_id(G, s: int):
    """The stored graph's original id of internal id ``s``, as one value (an int, or a
    str for a graph with string ids, where ``to_original`` gives an Arrow array)."""
    ids = G.graph.to_original([s])
    return ids[0].item() if isinstance(ids, np.ndarray) else ids[0].as_py()


def _hops(G, s: int) -> np.ndarray:
    """An undirected graph's hop distances from internal id ``s`` (inf where
    unreached)."""
    from graphsys.kernels import bfs

    indptr, indices = G.adjacency()
    dist = bfs.levels(indptr, indices, indptr, indices, False, s, bfs.NO_LIMIT, 1)[0]
    return np.where(dist < 0, np.inf, dist.astype(np.float64))


def _labels(G) -> np.ndarray:
    """Each node's (weakly) connected component, as its smallest internal id: graphsys's
    union-find kernel (:func:`graphsys.kernels.components.roots`) over the adjacency,
    with no BSP run (and no torch import)."""
    if G.null:
        return np.zeros(0, np.int64)
    from graphsys.kernels.components import roots

    return roots(*G.adjacency(), *G.adjacency(transpose=True), G.directed)


def _scc_labels(G) -> np.ndarray:
    return _bsp().scc(G.graph).values if not G.null else np.zeros(0)


def connected_components(G):
    """``nx.connected_components`` (and ``weakly_connected_components``): a generator of
    node sets (graphsys's WCC)."""
    yield from _parts(G, _labels(G))


def _count(G, labels=None) -> int:
    labels = _labels(G) if labels is None else labels
    return int(len(np.unique(labels)))


def number_connected_components(G):
    """``nx.number_connected_components`` (and ``number_weakly_connected_components``)."""
    return _count(G)


def _is_connected(G, labels=None) -> bool:
    if len(G) == 0:
        raise _nx().NetworkXPointlessConcept("Connectivity is undefined for the null graph.")
    return _count(G, labels) == 1


def is_connected(G):
    """``nx.is_connected`` (and ``is_weakly_connected``)."""
    return _is_connected(G)


@numba.njit(cache=True)
def _sinks_first(rptr, preds, out_deg):
    """The components in reverse topological order of the condensation (sinks first, as
    Tarjan's algorithm yields them): Kahn's order over the reversed component edges
    (``rptr``, ``preds``: each component's predecessors; ``out_deg`` int64, consumed)."""
    count = out_deg.shape[0]
    order = np.empty(count, np.int64)
    tail = 0
    for c in range(count):
        if out_deg[c] == 0:
            order[tail] = c
            tail += 1
    head = 0
    while head < tail:
        c = order[head]
        head += 1
        for e in range(rptr[c], rptr[c + 1]):
            p = preds[e]
            out_deg[p] -= 1
            if out_deg[p] == 0:
                order[tail] = p
                tail += 1
    return order


def condensation(G) -> tuple[np.ndarray, np.ndarray]:
    """Each node's strongly connected component, numbered sinks first (a component
    after every component it reaches, NetworkX's order), and the condensation's edges
    ``(2, k)`` between those numbers (each once, no loops)."""
    from graphsys.views.rows import from_pairs

    _, comp = np.unique(_scc_labels(G), return_inverse=True)
    count = int(comp.max()) + 1
    pairs = [np.stack([comp[s], comp[d]]) for s, d, *_ in G.graph.iter_edges()]
    edges = np.concatenate(pairs, axis=1) if pairs else np.zeros((2, 0), np.int64)
    edges = np.unique(edges[:, edges[0] != edges[1]], axis=1)
    rank = np.empty(count, np.int64)
    rptr, preds = from_pairs(count, edges[1], edges[0])  # each one's predecessors, in order
    out_deg = np.bincount(edges[0], minlength=count).astype(np.int64)
    rank[_sinks_first(rptr, preds, out_deg)] = np.arange(count)
    return rank[comp], rank[edges]


def _parts(G, labels: np.ndarray) -> list[set]:
    """The node sets of ``labels``, in label order (none without nodes)."""
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    return [{G.keys[i] for i in part.tolist()} for part in np.split(order, bounds)
            if len(part)]


def strongly_connected_components(G):
    """``nx.strongly_connected_components``: a generator of node sets (graphsys's SCC), in
    NetworkX's order: a component after every component it reaches."""
    if G.null:
        return
    yield from _parts(G, condensation(G)[0])


def number_strongly_connected_components(G):
    """``nx.number_strongly_connected_components``."""
    return _count(G, _scc_labels(G))


def is_strongly_connected(G):
    """``nx.is_strongly_connected``."""
    return _is_connected(G, _scc_labels(G) if len(G) else None)


def node_connected_component(G, n):
    """``nx.node_connected_component``: the set of nodes in ``n``'s component (KeyError
    for a node not in ``G``, as NetworkX's)."""
    if n not in G:
        raise KeyError(n)
    i = int(G.index[n])
    labels = _labels(G)  # G has a node: not null
    return {G.keys[j] for j in np.flatnonzero(labels == labels[i]).tolist()}


def core_number(G):
    """``nx.core_number``: graphsys's k-core peeling kernel
    (:func:`graphsys.kernels.cores.core_levels`, the BSP k-core's in-memory method, run
    here without the engine) over NetworkX's degrees: a directed graph's in- plus
    out-neighbours. Self-loops are refused, as NetworkX refuses them."""
    from graphsys.kernels.cores import core_levels, peel_degrees

    nx = _nx()
    if G.null:
        return {}
    rows, cols = G.edges()
    if (rows == cols).any():
        raise nx.NetworkXNotImplemented(
            "Input graph has self loops which is not permitted; "
            "Consider using G.remove_edges_from(nx.selfloop_edges(G)).")
    n = len(G)
    out = G.adjacency()
    into = G.adjacency(transpose=True) if G.directed else out
    deg = np.empty(n, np.int64)
    peel_degrees(*out, into[0], G.directed, np.empty(0, np.int64), True, deg)
    core = np.zeros(n, np.float64)
    core_levels(*out, *into, G.directed, deg, core, np.empty(n, np.int64),
                np.empty(n, np.int64))
    return G.node_dict(core.astype(np.int64))


def betweenness_centrality(G, k=None, normalized=True, weight=None, endpoints=False,
                           seed=None):
    """``nx.betweenness_centrality``, unweighted (graphsys's Brandes; ``weight`` is
    declined: NetworkX's float64 path lengths stay in NetworkX). ``k`` sources are drawn
    as NetworkX draws them, ``seed.sample(list(G), k)`` from the random state NetworkX
    hands its backends (NetworkX's ``create_py_random_state`` of ``seed``: a
    ``random.Random`` or its wrappers of a NumPy generator), and scaled as NetworkX scales
    a sample."""
    if G.null:
        return {}
    sources = None
    if k is not None and k != len(G):
        rng = _nx().utils.create_py_random_state(seed)
        sources = G.graph.to_original(G.internal(rng.sample(list(G.keys), k)))
    res = _bsp().betweenness(G.graph, sources=sources, normalized=normalized,
                          endpoints=endpoints)
    return G.node_dict(res.values)


def closeness_centrality(G, u=None, distance=None, wf_improved=True):
    """``nx.closeness_centrality`` of every node, unweighted (incoming distances on a
    directed graph, as NetworkX; ``u`` and ``distance`` are declined). With
    ``wf_improved`` graphsys runs twice, with and without the scaling, to read each node's
    reach and scale in NetworkX's order of operations: the values equal NetworkX's to the
    last bit, as its own tests compare them."""
    if G.null:
        return {}
    base = _bsp().closeness(G.graph, wf_improved=False).values  # (r - 1) / total, as NetworkX
    if not wf_improved or len(G) < 2:
        return G.node_dict(base)
    scaled = _bsp().closeness(G.graph).values  # base * (r - 1) / (N - 1)
    others = len(G) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(base > 0, np.rint(scaled * others / base), 0.0)
    # NetworkX's order of operations, so the values equal its own to the last bit
    return G.node_dict(base * (reach / others))
