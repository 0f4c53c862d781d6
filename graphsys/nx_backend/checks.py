"""Which calls the graphsys backend takes (:meth:`BackendInterface.can_run`,
:meth:`~BackendInterface.should_run`), and the NetworkX tests whose expectations differ by
design (:data:`KNOWN_DIFFERENCES`)."""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import sys
from collections.abc import Iterator, Mapping

from graphsys.errors import ParameterError, check_count, check_real

#: Functions on undirected graphs only here (NetworkX's directed versions measure directed
#: distances).
UNDIRECTED_ONLY = {"diameter", "eccentricity", "radius", "center", "periphery"}

#: NetworkX test (node id substring) -> why its expectation differs by design. Marked
#: ``xfail`` (not strict) when NetworkX's suite runs against the backend.
KNOWN_DIFFERENCES: dict[str, str] = {
    **{f"test_louvain.py::{name}": (
        "compares the exact partition of NetworkX's Louvain for a seed (its own random "
        "node orders and tie-breaks); graphsys's Louvain is a deterministic function of the "
        "seed with NetworkX's modularity within 0.02 of NetworkX's, not the same partition")
       for name in ("test_karate_club_partition", "test_undirected_selfloops",
                    "test_directed_partition", "test_none_weight_param", "test_max_level")},
    "test_louvain.py::test_multigraph": (
        "compares graphsys's partition of a Graph with NetworkX's of the same MultiGraph "
        "(multigraphs stay in NetworkX): equal partitions only from one implementation"),
}


@functools.cache
def _signature(name: str) -> inspect.Signature:
    """NetworkX's signature of ``name`` (read once: every dispatched call binds it twice,
    in :func:`can_run` and again in the backend's function wrapper)."""
    from networkx.utils.backends import _registered_algorithms

    return inspect.signature(_registered_algorithms[name])


def _arguments(name: str, args, kwargs) -> dict:
    """The call's arguments by parameter name, defaults filled (NetworkX's signature)."""
    try:
        bound = _signature(name).bind(*args, **kwargs)
    except TypeError:
        return {}
    bound.apply_defaults()
    return dict(bound.arguments)


def _real(x) -> bool:
    return isinstance(x, numbers.Real)


def _finite(x) -> bool:
    """Whether ``x`` is a finite number by :func:`~graphsys.errors.check_real`'s rule (an
    int beyond float's range is not: ``math.isfinite(10**400)`` raised OverflowError)."""
    try:
        check_real("x", x)
    except ParameterError:
        return False
    return True


def _vector(G, values: dict, what: str) -> str | None:
    """Why graphsys cannot take ``values`` (node -> number: a personalization or start
    vector, divided by its sum over ``G``'s nodes as NetworkX does), or None."""
    if not isinstance(values, Mapping):
        return f"{what} must be a dict"
    if not all(_finite(v) and v >= 0 for v in values.values()):
        return f"{what} values must be finite non-negative numbers"
    total = sum(float(v) for k, v in values.items() if k in G)  # inf on overflow
    if not total < math.inf:
        return f"{what} values must have a finite sum"
    if what == "nstart" and total == 0:
        return "nstart values must not sum to 0"
    return None


def _pagerank(G, a: dict) -> str | None:
    alpha, tol = a.get("alpha", 0.85), a.get("tol", 1e-6)  # (max_iter: COUNTS)
    if a.get("dangling") is not None:
        return "a dangling distribution other than the personalization is not supported"
    if not _real(alpha) or not 0 < alpha < 1:
        return "alpha must be in (0, 1)"
    if not _finite(tol):
        return "tol must be a finite number"
    if not tol * max(len(G), 1) < math.inf:
        return "tol times the number of nodes must be finite"
    for what in ("personalization", "nstart"):
        if a.get(what) is not None:
            reason = _vector(G, a[what], what)
            if reason:
                return reason
    return None


def _hits(G, a: dict) -> str | None:
    tol = a.get("tol", 1e-8)  # (max_iter: COUNTS)
    if a.get("nstart") is not None:
        return ("a start vector is not supported (ARPACK's answer may depend on it where "
                "the largest singular value is repeated)")
    if not a.get("normalized", True):
        return "normalized=False is not supported"
    if not _finite(tol) or not tol > 0:
        return "tol must be a positive number"
    if len(G) == 1:
        return "a graph of one node stays in NetworkX (ARPACK needs two)"
    return None


def _start(G, a: dict) -> str | None:
    """Why graphsys declines ``nstart`` (read by NetworkX's eigenvector and Katz
    iterations as a dict over exactly ``G``'s nodes), or None."""
    nstart = a.get("nstart")
    if nstart is None:
        return None
    if not isinstance(nstart, Mapping) or not all(_has(G, k) for k in nstart) or \
            len(nstart) != len(G):
        return "nstart must be a dict over exactly the nodes of G"
    if not all(_finite(v) for v in nstart.values()):
        return "nstart values must be finite numbers"
    if any(nstart.values()) and sum(nstart.values()) == 0 and "alpha" not in a:
        return "nstart values must not sum to 0"
    return None


def _iteration(G, a: dict) -> str | None:
    """Why graphsys declines an eigenvector or Katz call's numbers, or None."""
    tol, max_iter = a.get("tol", 0), a.get("max_iter", 0)
    if not _real(tol) or not isinstance(max_iter, numbers.Integral):
        return "tol must be a number and max_iter an integer"
    if not _finite(a.get("alpha", 0)):
        return "alpha must be a finite number"
    beta = a.get("beta", 1)
    if isinstance(beta, Mapping) and not all(_finite(v) for v in beta.values()):
        return "beta values must be finite numbers"
    if _real(beta) and not _finite(beta):  # not a number: NetworkX's error, here
        return "beta must be a finite number or a dict"
    return _start(G, a) or _narrow_weights(G, a)


def _narrow_weights(G, a: dict) -> str | None:
    """Why graphsys declines the weights of a NetworkX graph whose Python iteration
    (eigenvector, Katz) NetworkX runs in a float type narrower than float64 (a numpy
    float32 weight makes its sums float32), or None."""
    import numpy as np

    weight = a.get("weight")
    if weight is None or getattr(G, "__networkx_backend__", None) == "graphsys":
        return None
    for *_, w in G.edges(data=weight):
        if isinstance(w, np.floating) and np.finfo(w).bits < 64:
            return "weights of a float type narrower than float64 are not supported"
    return None


def _distances(G, a: dict) -> str | None:
    if G is not None and G.is_directed():
        return "directed distances are not supported"
    if a.get("e") is not None or a.get("sp") is not None:
        return "precomputed eccentricities or paths are not supported"
    return None


def _clustering(G, a: dict) -> str | None:
    if G is not None and G.is_directed():
        return "directed clustering and transitivity are not supported"
    if a.get("weight") is not None:
        return "weighted clustering is not supported"
    return None


def _assortativity(G, a: dict) -> str | None:
    if a.get("weight") is not None or a.get("nodes") is not None:
        return "weighted degrees and node subsets are not supported"
    if a.get("x") not in ("in", "out") or a.get("y") not in ("in", "out"):
        return "x and y must be 'in' or 'out'"
    return None


def _pearson(G, a: dict) -> str | None:
    if G is not None and G.number_of_edges() == 0:
        return "a graph without edges stays in NetworkX (its Pearson coefficient raises)"
    return _assortativity(G, a)


def _reciprocity(G, a: dict) -> str | None:
    if a.get("nodes") is not None and G is not None and not G.is_directed():
        return "the reciprocity of nodes of an undirected graph stays in NetworkX"
    return None


def _read_twice(name: str):
    """A check declining an iterator as argument ``name``, which NetworkX reads twice
    (its second read finds it spent): NetworkX runs the call, and gives its answer."""
    return lambda G, a: (f"an iterator as {name} (NetworkX reads it twice) stays in NetworkX"
                         if isinstance(a.get(name), Iterator) else None)


#: Function name -> ``check(G, arguments)``: why graphsys declines the call, or None.
CHECKS = {
    "pagerank": _pagerank,
    "hits": _hits,
    "betweenness_centrality": lambda G, a: (
        "weighted paths are not supported" if a.get("weight") is not None
        else "k must be an integer from 0 to the number of nodes"
        if a.get("k") is not None and not (isinstance(a["k"], numbers.Integral)
                                           and 0 <= a["k"] <= len(G)) else None),
    "closeness_centrality": lambda G, a: (
        "one node's closeness and weighted distances are not supported"
        if a.get("u") is not None or a.get("distance") is not None else None),
    "degree_assortativity_coefficient": _assortativity,
    "degree_pearson_correlation_coefficient": _pearson,
    "reciprocity": _reciprocity,
    **{name: _iteration for name in ("eigenvector_centrality", "katz_centrality")},
    "katz_centrality_numpy": lambda G, a: (
        "a graph of one node stays in NetworkX (its solve returns no vector)"
        if len(G) == 1 else _iteration(G, a)),
    "eigenvector_centrality_numpy": lambda G, a: (
        "a graph of one or two nodes stays in NetworkX (its ARPACK call needs three)"
        if 0 < len(G) < 3 else None),
    **{name: _distances for name in UNDIRECTED_ONLY},
    **{name: _clustering for name in ("triangles", "clustering", "average_clustering",
                                      "transitivity")},
    # NetworkX checks the pairs' nodes in one loop and scores them in a second: an
    # iterator is spent by the first, and NetworkX scores no pair
    **{name: _read_twice("ebunch") for name in (
        "jaccard_coefficient", "adamic_adar_index", "resource_allocation_index",
        "preferential_attachment")},
    # (the same for the sources: NetworkX's answer is then {})
    "multi_source_dijkstra_path_length": _read_twice("sources"),
}


def _missing(*names: str):
    """A check declining calls whose node arguments ``names`` (those given) are not
    nodes of ``G``: NetworkX raises its own exception for each."""

    def check(G, a: dict) -> str | None:
        for n in names:
            node = a.get(n)
            if node is not None and not _has(G, node):
                return f"{n} is not a node of G"
        return None

    return check


def _has(G, node) -> bool:
    try:
        return node in G
    except TypeError:  # unhashable
        return False


def _given(*names: str, why: str = "is not supported"):
    """A check declining calls that give any of the arguments ``names``."""

    def check(G, a: dict) -> str | None:
        given = [n for n in names if a.get(n) is not None]
        return f"{', '.join(given)} {why}" if given else None

    return check


def _node_sets(*names: str, members: bool = False, disjoint: bool = False,
               pair: bool = False):
    """A check declining node-set arguments ``names`` that NetworkX reads in ways
    graphsys does not copy: an iterator (read more than once), a single node, items
    not in ``G`` (``members``), overlapping sets (``disjoint``), or one set of a directed
    graph where NetworkX's cut needs two (``pair``)."""
    from collections.abc import Collection

    def check(G, a: dict) -> str | None:
        sets = [a.get(n) for n in names if a.get(n) is not None]
        for value in sets:
            if not isinstance(value, Collection) or isinstance(value, str) or _has(G, value):
                return "node sets must be collections of nodes"
            if members and not all(_has(G, v) for v in value):
                return "node sets must hold nodes of G"
        try:
            if disjoint and len(sets) == 2 and set(sets[0]) & set(sets[1]):
                return "overlapping node sets are not supported"
        except TypeError:
            return "node sets must hold hashable nodes"
        if pair and len(sets) == 1 and G.is_directed():
            return "a directed cut needs both node sets"
        return None

    return check


def _both(*checks):
    def check(G, a: dict) -> str | None:
        return next((r for r in (c(G, a) for c in checks) if r), None)

    return check


def _undirected_only(why: str):
    return lambda G, a: why if G.is_directed() else None


def _louvain(G, a: dict) -> str | None:
    resolution, threshold = a.get("resolution", 1), a.get("threshold", 1e-7)
    if not _finite(resolution) or not resolution > 0:
        return "resolution must be a positive number"
    if not _real(threshold) or not (_finite(threshold) or abs(threshold) == math.inf):
        return "threshold must be a number"
    return None


def _asyn_lpa(G, a: dict) -> str | None:
    import random

    seed = a.get("seed")
    if seed is not None and not isinstance(seed, numbers.Integral) and \
            type(seed) is not random.Random:
        return "only an int, None or a random.Random seed is reproduced"
    return _narrow_weights(G, a)


#: Checks of the functions over degrees, paths, structure and communities.
MORE_CHECKS = {
    "is_isolate": _missing("n"),
    "has_path": _missing("source", "target"),
    "descendants": _missing("source"),
    "ancestors": _both(_missing("source"), _undirected_only(
        "a directed graph's ancestors (a reversed search) are not supported")),
    "efficiency": _missing("u", "v"),
    "dijkstra_path_length": _missing("source", "target"),
    "bellman_ford_path_length": _missing("source", "target"),
    "single_source_bellman_ford_path_length": _missing("source"),
    "shortest_path_length": _both(_missing("source", "target"), lambda G, a: (
        "a directed graph's single-target search is not supported"
        if G.is_directed() and a.get("source") is None and a.get("target") is not None
        else "method must be 'dijkstra' or 'bellman-ford'"
        if a.get("method") not in ("dijkstra", "bellman-ford") else None)),
    "single_target_shortest_path_length": _undirected_only(
        "a directed graph's single-target search is not supported"),
    "average_shortest_path_length": lambda G, a: (
        "only the single-source methods are supported"
        if a.get("method") not in (None, "unweighted", "dijkstra", "bellman-ford") else None),
    "barycenter": _given("weight", "attr", "sp"),
    "harmonic_centrality": _given("nbunch", "sources"),
    "harmonic_diameter": _given("sp"),
    "triadic_census": _given("nodelist"),
    "louvain_communities": _louvain,
    "asyn_lpa_communities": _asyn_lpa,
    "kosaraju_strongly_connected_components": _given("source"),
    **{name: _given("core_number") for name in ("k_core", "k_shell", "k_crust", "k_corona")},
    "ego_graph": _both(_missing("n"), _given("distance"), lambda G, a: (
        "an undirected search of a directed graph is not supported"
        if a.get("undirected") and G.is_directed() else None)),
    "average_neighbor_degree": lambda G, a: (
        "a single node is not supported" if _has(G, a.get("nodes")) else None),
    "volume": _node_sets("S"),
    **{name: _node_sets("S", "T", disjoint=True, pair=True)
       for name in ("cut_size", "mixing_expansion")},
    **{name: _node_sets("S", "T", disjoint=True)
       for name in ("normalized_cut_size", "conductance", "edge_expansion")},
    "node_expansion": _node_sets("S", members=True),
    "degree_mixing_dict": _both(_node_sets("nodes"), lambda G, a: (
        "x and y must be 'in' or 'out'" if a.get("x") not in ("in", "out")
        or a.get("y") not in ("in", "out") else None)),
    "boundary_expansion": _node_sets("S"),
    "node_boundary": _node_sets("nbunch1", "nbunch2"),
    **{name: _node_sets("S", members=True) for name in (
        "group_degree_centrality", "group_in_degree_centrality",
        "group_out_degree_centrality")},
}


#: Function -> integer argument -> ``(minimum, maximum)`` (no maximum: None) of the values
#: graphsys takes as NetworkX does (None, where NetworkX allows it, is the default). Other
#: values (a bool, a float, a number out of range) are declined, so NetworkX gives its own
#: answer or exception: ``max_level`` is NetworkX's ``islice`` stop (``ValueError`` beyond
#: ``sys.maxsize``); PageRank's ``max_iter`` is an int64 in graphsys's kernels, where
#: NetworkX's Python loop takes any integer (below 1: NetworkX's
#: ``PowerIterationFailedConvergence``, raised by graphsys too, as by its HITS); ARPACK's
#: above a C int is graphsys's error
#: (:func:`graphsys.nx_backend.algorithms.check_arpack_iterations`).
COUNTS: dict[str, dict[str, tuple[int, int | None]]] = {
    "louvain_communities": {"max_level": (1, sys.maxsize)},
    "pagerank": {"max_iter": (-2**63, 2**63 - 1)},
    "hits": {"max_iter": (-2**63, None)},
    "eigenvector_centrality_numpy": {"max_iter": (1, None)},
}


def _count(name: str, value, low: int, high: int | None) -> str | None:
    """Why graphsys declines integer argument ``name`` (the message of
    :func:`~graphsys.errors.check_count`), or None (for None too)."""
    try:
        if value is not None:
            check_count(name, value, minimum=low, maximum=high)
    except ParameterError as exc:
        return str(exc)
    return None


def _declined(name: str, a: dict) -> str | None:
    """Why graphsys does not run this call, or None (arguments that do not bind to
    NetworkX's signature: None, NetworkX raises its own TypeError)."""
    G = a.get("G")
    if G is None:
        return None
    if G.is_multigraph():
        return "multigraphs are not supported"
    if getattr(G, "parallel_edges", bool)():
        return ("the stored graph holds a pair more than once, which NetworkX reads as one "
                "edge (ingest it with dedupe=True)")
    if callable(a.get("weight")):
        return "a weight function is not supported"
    if any(isinstance(a.get(k), numbers.Integral) and not _finite(a[k])  # 10**400: compared
           for k in ("cutoff", "distance")):  # with floats, an OverflowError
        return "an integer beyond float's range stays in NetworkX"
    for arg, (low, high) in COUNTS.get(name, {}).items():
        reason = _count(arg, a.get(arg), low, high)
        if reason:
            return reason
    check = CHECKS.get(name) or MORE_CHECKS.get(name)
    return check(G, a) if check is not None else None


def can_run(name: str, args, kwargs) -> bool | str:
    """True, or the reason graphsys declines the call (``ParameterError`` for a
    ``nx.config.backends.graphsys.tmpdir`` that is no writable directory, as for a bad
    ``min_edges``: a run there would fail later, or fall back to NetworkX unseen)."""
    from graphsys.nx_backend.graph import memory_dir

    memory_dir()
    reason = _declined(name, _arguments(name, args, kwargs))
    return True if reason is None else f"graphsys: {reason}"


def should_run(name: str, args, kwargs) -> bool | str:
    """True for graphsys graphs and NetworkX graphs of at least ``min_edges`` edges."""
    import networkx as nx

    G = _arguments(name, args, kwargs).get("G")
    if G is None or getattr(G, "__networkx_backend__", None) == "graphsys":
        return True
    least = nx.config.backends.graphsys.get("min_edges", 0)
    if least != math.inf:                          # infinity: never by size
        least = check_real("nx.config.backends.graphsys.min_edges", least)
    if G.number_of_edges() < least:
        return (f"graphsys: a graph of fewer than {least} edges is faster in NetworkX "
                f"(nx.config.backends.graphsys.min_edges)")
    return True


def mark_tests(items) -> None:
    """Mark NetworkX's tests listed in :data:`KNOWN_DIFFERENCES` as expected to fail."""
    import pytest

    for item in items:
        for key, reason in KNOWN_DIFFERENCES.items():
            if key in item.nodeid:
                item.add_marker(pytest.mark.xfail(reason=f"graphsys: {reason}", strict=False))


__all__ = ["KNOWN_DIFFERENCES", "can_run", "mark_tests", "should_run"]
