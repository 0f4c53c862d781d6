"""Hostile inputs through the NetworkX backend: every dispatched function, on graphs and
arguments chosen to break it (the null graph, missing nodes, self pairs, self-loops,
multigraphs, both directions; NaN, infinite, negative, huge, tiny, zero and non-numeric
weights; NetworkX's argument edge cases), once in NetworkX alone and once under automatic
dispatch to graphsys (``backend_priority = ["graphsys"]``, no size threshold). Both must give
the same answer (floats allclose) or raise the same exception type: what graphsys cannot
represent is declined, so NetworkX runs it, and no graphsys exception reaches a NetworkX
user."""

from __future__ import annotations

import math
from fractions import Fraction
from types import GeneratorType

import networkx as nx
import numpy as np
import pytest

from _nx_graphsys import FUNCTIONS
from tests.nx_backend.test_backend import needs_entry_point

pytestmark = [needs_entry_point,  # NetworkX's own numpy warnings on its hostile inputs
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

NAN, INF = float("nan"), float("inf")

#: Weights of one edge of :func:`weighted` (the others are plain): each either stored by
#: graphsys as NetworkX reads it or declined.
WEIGHTS = [1.5, 0.0, -0.0, 0.1, 3e38, 1e-30, 1e-40, 1e-50, 1e39, -1.0, -1e39, INF, -INF, NAN,
           "a", "2", None, True, 2**70, 10**400, 1 + 2j, np.float32(2.5), np.int64(3),
           Fraction(1, 3)]


def weighted(w, directed: bool) -> nx.Graph:
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_weighted_edges_from([(0, 1, 1.0), (1, 2, w), (2, 0, 2.0), (2, 3, 1.0),
                               (3, 4, 0.5), (4, 2, 1.0), (4, 5, 3.0)])
    return G


def structures() -> dict[str, nx.Graph]:
    loops = nx.Graph([(0, 0), (0, 1), (1, 2), (2, 2), (2, 3)])
    two = nx.Graph([(0, 1), (1, 2), (2, 0), (3, 4)])
    star = nx.star_graph(4)  # a tree: NetworkX's center takes its tree path
    out = {"null": nx.Graph(), "one node": nx.empty_graph(1),
           "two isolated": nx.empty_graph(2), "loops": loops, "two parts": two,
           "star": star, "cycle": nx.cycle_graph(5), "karate": nx.karate_club_graph(),
           "multi": nx.MultiGraph([(0, 1), (0, 1), (1, 2)])}
    for name in ("null", "one node", "loops", "two parts", "multi"):
        G = out[name]
        out[f"{name} (directed)"] = G.to_directed() if name != "multi" else nx.MultiDiGraph(G)
    out["directed path"] = nx.path_graph(5, create_using=nx.DiGraph)
    out["directed cycle + tail"] = nx.DiGraph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 3)])
    return out


GRAPHS = structures()

#: Function -> argument variants ``(args, kwargs)`` tried on every graph.
PAIRS = [(0, 0), (1, 1), (0, 1), (0, 2)]
LINK_SCORES = ("jaccard_coefficient", "adamic_adar_index", "resource_allocation_index",
               "preferential_attachment")
CALLS: dict[str, list[tuple[tuple, dict]]] = {
    "pagerank": [((), {}), ((), {"tol": 0}), ((), {"tol": -1.0}), ((), {"tol": NAN}),
                 ((), {"max_iter": 0}), ((), {"personalization": {}}),
                 ((), {"personalization": {0: 1, 99: 5}}), ((), {"personalization": {99: 1}}),
                 ((), {"personalization": {0: NAN}}),
                 ((), {"personalization": {0: 1e308, 1: 1e308}}),
                 ((), {"nstart": {0: 1.0}}), ((), {"nstart": {0: 0.0}}),
                 ((), {"weight": None}), ((), {"alpha": 1.0}), ((), {"dangling": {0: 1}}),
                 ((), {"tol": 10**400}),  # (was: numba's TypingError)
                 ((), {"max_iter": 2**63})],  # (was: OverflowError; NetworkX answers)
    "hits": [((), {}), ((), {"tol": 0}), ((), {"tol": -1.0}), ((), {"max_iter": 0}),
             ((), {"max_iter": 1}), ((), {"nstart": {0: 1.0}}),
             ((), {"tol": 10**400})],  # (was: an answer where NetworkX raises TypeError)
    "single_source_shortest_path_length": [((0,), {}), ((99,), {}), ((0,), {"cutoff": 1}),
                                           ((0,), {"cutoff": -1}), ((0,), {"cutoff": 1.5}),
                                           ((0,), {"cutoff": NAN}), ((0,), {"cutoff": 10**400})],
    "single_source_dijkstra_path_length": [((0,), {}), ((99,), {}), ((0,), {"cutoff": 1.0}),
                                           ((0,), {"cutoff": -1}), ((0,), {"cutoff": NAN})],
    "node_connected_component": [((0,), {}), ((99,), {})],
    "eccentricity": [((), {}), ((), {"v": 0}), ((), {"v": 99}), ((), {"v": [99]}),
                     ((), {"v": [0, 99, 1]}), ((), {"v": 3.5j}), ((), {"v": [[0]]})],
    **{name: [((), {}), ((), {"usebounds": True})]  # (was: the null graph's center raised
       for name in ("center", "diameter", "radius", "periphery")},  # the tree test's error)
    "reciprocity": [((), {}), ((), {"nodes": 0}), ((), {"nodes": 99}),
                    ((), {"nodes": [0, 1, 99]}), ((), {"nodes": [[0]]})],
    "betweenness_centrality": [((), {}), ((), {"normalized": False, "endpoints": True})],
    "closeness_centrality": [((), {}), ((), {"wf_improved": False})],
    "eigenvector_centrality": [((), {}), ((), {"max_iter": 0}), ((), {"tol": 0}),
                               ((), {"nstart": {0: 1.0}}), ((), {"nstart": {99: 1.0}}),
                               ((), {"weight": "weight"})],
    "eigenvector_centrality_numpy": [((), {}), ((), {"weight": "weight"}),
                                     ((), {"max_iter": 0}),  # (was: an answer where
                                     ((), {"max_iter": False})],  # NetworkX's ValueError)
    "katz_centrality": [((), {}), ((), {"alpha": 0.9}), ((), {"beta": {0: 2.0}}),
                        ((), {"beta": "a"}), ((), {"beta": INF}), ((), {"alpha": NAN}),
                        ((), {"normalized": False}), ((), {"nstart": {0: 1.0}}),
                        ((), {"max_iter": 0}), ((), {"weight": "weight"})],
    "katz_centrality_numpy": [((), {}), ((), {"alpha": 0.9}), ((), {"beta": {0: 2.0}}),
                              ((), {"beta": "a"}), ((), {"normalized": False})],
    **{name: [((), {}), ((PAIRS,), {}), (([(0, 99)],), {})]
       for name in LINK_SCORES},
    **{name: [((), {}), ((), {"nodes": 0}), ((), {"nodes": 99}), ((), {"nodes": [0, 99, 2]}),
              ((), {"nodes": []}), ((), {"nodes": [[0]]})]
       for name in ("triangles", "clustering", "square_clustering")},
    "average_clustering": [((), {}), ((), {"count_zeros": False}), ((), {"nodes": [0, 1]}),
                           ((), {"nodes": 0}), ((), {"nodes": [99]}),
                           ((), {"weight": "weight"})],
    **{name: [((0, 2), {}), ((0, 99), {}), ((99, 0), {}), ((0, 0), {})]
       for name in ("has_path", "efficiency", "dijkstra_path_length",
                    "bellman_ford_path_length")},
    **{name: [((0,), {}), ((99,), {})] for name in (
        "descendants", "ancestors", "single_target_shortest_path_length",
        "single_source_bellman_ford_path_length", "is_isolate")},
    "descendants_at_distance": [((0, 1), {}), ((0, 0), {}), ((0, -1), {}), ((99, 1), {}),
                                ((0, 10**400), {})],  # (was: an OverflowError)
    "shortest_path_length": [((), {}), ((0,), {}), ((), {"target": 0}), ((0, 2), {}),
                             ((0, 99), {}), ((0,), {"method": "floyd"})],
    "multi_source_dijkstra_path_length": [(([0, 1],), {}), (([],), {}), (([99],), {}),
                                          (([0],), {"cutoff": 1})],
    "all_pairs_shortest_path_length": [((), {}), ((), {"cutoff": 1})],
    "ego_graph": [((0,), {}), ((0,), {"radius": 2, "center": False}), ((99,), {}),
                  ((0,), {"undirected": True})],
    "k_corona": [((1,), {}), ((0,), {})],
    "is_k_regular": [((2,), {})],
    "average_neighbor_degree": [((), {}), ((), {"nodes": [0, 1]}), ((), {"nodes": 0}),
                                ((), {"source": "in", "target": "in+out"})],
    "average_degree_connectivity": [((), {}), ((), {"nodes": [0, 1]}), ((), {"nodes": 0}),
                                    ((), {"source": "out", "target": "in"})],
    **{name: [(([0, 1],), {}), (([0, 99],), {}), (([0],), {"T": [1, 2]}),
              (([0, 1],), {"T": [1, 2]}), (([],), {})]
       for name in ("cut_size", "volume", "normalized_cut_size", "conductance",
                    "edge_expansion", "mixing_expansion", "node_expansion",
                    "boundary_expansion", "node_boundary", "group_degree_centrality",
                    "group_in_degree_centrality", "group_out_degree_centrality")},
    "modularity": [(([{0, 1}, {2, 3, 4, 5}],), {}), (([{0}],), {}),
                   (([{0, 1, 2}, {3, 4, 5}],), {"resolution": 0.5})],
    "is_partition": [(([{0, 1}, {2, 3, 4, 5}],), {}), (([{0}],), {})],
    "louvain_communities": [((), {"seed": 1}), ((), {"seed": 1, "weight": None}),
                            ((), {"resolution": 0.5, "seed": 2}), ((), {"max_level": 0}),
                            ((), {"max_level": 1, "seed": 1}), ((), {"resolution": 0, "seed": 1}),
                            ((), {"threshold": NAN, "seed": 1}),
                            ((), {"threshold": 10**400, "seed": 1}),  # (was: OverflowError)
                            ((), {"max_level": 10**400, "seed": 1}),  # (was: an answer
                            ((), {"max_level": 2**63, "seed": 1})],  # NetworkX's ValueError)
    "asyn_lpa_communities": [((), {"seed": 3}), ((), {"seed": 3, "weight": "weight"})],
}

#: Functions of :data:`_nx_graphsys.FUNCTIONS` NetworkX dispatches (``nx.density`` is not
#: a dispatchable function in every NetworkX release).
DISPATCHED = sorted(name for name in FUNCTIONS if "graphsys" in getattr(
    getattr(nx, name, getattr(nx.community, name, None)), "backends", ()))


@pytest.fixture
def automatic():
    """Automatic dispatch to graphsys, for every graph size."""
    config = nx.config
    saved = list(config.backend_priority.algos), config.backends.graphsys.min_edges
    ignored = set(config.warnings_to_ignore)
    config.backend_priority.algos = ["graphsys"]
    config.backends.graphsys.min_edges = 0
    config.warnings_to_ignore.add("cache")
    yield
    config.backend_priority.algos, config.backends.graphsys.min_edges = saved
    config.warnings_to_ignore = ignored


def outcome(name: str, G, args, kwargs, backend=None):
    """``(value, None)`` or ``(None, exception type)``; generators and dict views read
    out."""
    try:
        value = getattr(nx, name, getattr(nx.community, name, None))(
            G, *args, backend=backend, **kwargs)
        if isinstance(value, (GeneratorType, type({}.values()))):  # (values never compare)
            value = list(value)
        return value, None
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return None, type(exc)


def same(a, b, tol: float) -> bool:
    """Whether two results agree: dicts key by key, tuples and lists item by item, sets
    of nodes in any order, numbers within ``tol`` (NaN equal to NaN)."""
    if isinstance(a, nx.Graph) and isinstance(b, nx.Graph):  # attributes included
        return (type(a) is type(b) and a.graph == b.graph and dict(a.nodes(data=True))
                == dict(b.nodes(data=True)) and a.adj == b.adj)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if a and all(isinstance(x, (set, frozenset)) for x in (*a, *b)):
            return sorted(map(sorted, a)) == sorted(map(sorted, b))
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, (set, frozenset)) or isinstance(b, (set, frozenset)):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return bool(np.isclose(a, b, rtol=tol, atol=tol, equal_nan=True))
    return a == b


def well_posed_hits(G) -> bool:
    """False where HITS has no unique answer (the largest singular value of the weighted
    adjacency repeated: ARPACK's answer then depends on its random start)."""
    try:
        s = np.linalg.svd(nx.to_numpy_array(G), compute_uv=False)
    except Exception:  # noqa: BLE001 - weights NetworkX refuses: its error is compared
        return True
    return not np.isfinite(s).all() or len(s) < 2 or s[0] - s[1] > 1e-6 * s[0]


def _modularity(G, parts, kwargs) -> float:
    return nx.community.modularity(G, parts, weight=kwargs.get("weight", "weight"),
                                   resolution=kwargs.get("resolution", 1))


def compare(name: str, G, variants) -> list[str]:
    """The variants where dispatch to graphsys and NetworkX alone disagree."""
    tol = 1e-5 if name in ("pagerank", "hits") else 1e-9
    bad = []
    for args, kwargs in variants:
        want, want_exc = outcome(name, G, args, kwargs, backend="networkx")
        got, got_exc = outcome(name, G, args, kwargs)
        if want_exc is not None or got_exc is not None:
            ok = want_exc is got_exc
        elif name in LINK_SCORES and not args:  # every non-edge, in no defined order
            ok = same(*({frozenset(t[:2]): t[2] for t in r} for r in (got, want)), tol)
        elif name == "louvain_communities" and G.number_of_edges():  # the contract: quality
            ok = nx.community.is_partition(G, got) and _modularity(G, got, kwargs) >= \
                _modularity(G, want, kwargs) - 0.01
        else:
            ok = same(got, want, tol)
        if not ok:
            bad.append(f"{name}{args}{kwargs}: networkx {want_exc or want!r:.150}, "
                       f"graphsys {got_exc or got!r:.150}")
    return bad


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("name", DISPATCHED)
def test_structures(automatic, name, graph):
    G = GRAPHS[graph]
    if name == "hits" and not well_posed_hits(G):
        pytest.skip("HITS has no unique answer here (ARPACK's is its random start's)")
    assert compare(name, G, CALLS.get(name, [((), {})])) == []


def test_start_and_beta_values_beyond_float_are_networkxs(automatic):
    """The checks' math.isfinite(10**400) raised OverflowError: eigenvector_centrality with
    such an nstart failed where NetworkX answers."""
    huge = dict.fromkeys(GRAPHS["karate"], 10**400)
    assert compare("eigenvector_centrality", GRAPHS["karate"], [((), {"nstart": huge})]) == []


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("w", WEIGHTS, ids=repr)
def test_weights(automatic, w, directed):
    """The functions that read weights, on a graph with one hostile weight."""
    G = weighted(w, directed)
    bad = []
    for name, variants in [("pagerank", [((), {}), ((), {"personalization": {3: 1}})]),
                           ("hits", [((), {})] if well_posed_hits(G) else []),
                           ("single_source_dijkstra_path_length", [((0,), {})]),
                           ("eccentricity", [((), {"weight": "weight"})]),
                           ("betweenness_centrality", [((), {"weight": "weight"})]),
                           ("clustering", [((), {}), ((), {"weight": "weight"})]),
                           ("eigenvector_centrality", [((), {"weight": "weight"})]),
                           ("katz_centrality", [((), {"weight": "weight"})]),
                           ("triangles", [((), {})] if not directed else []),
                           ("transitivity", [((), {})])]:
        bad += compare(name, G, variants)
    assert bad == []


@pytest.mark.parametrize("name", ["hits", "eigenvector_centrality_numpy"])
def test_arpack_iteration_counts_beyond_a_c_int_are_a_value_error(automatic, name):
    """NetworkX hands ``max_iter`` to ARPACK, a C int: beyond it NetworkX fails inside SciPy
    (``SystemError``, or ARPACK's error -4), where graphsys answered; graphsys now refuses
    it in one line, and answers as NetworkX up to it."""
    G = GRAPHS["karate"]
    for huge in (2**31, 2**63, 10**400):
        failed = outcome(name, G, (), {"max_iter": huge}, backend="networkx")[1]
        assert failed is not None and issubclass(failed, (SystemError, RuntimeError))
        with pytest.raises(ValueError, match=r"^max_iter must be a positive integer <= "
                                             r"2147483647, got \d+.* \(NetworkX hands it"):
            getattr(nx, name)(G, max_iter=huge)
    assert compare(name, G, [((), {"max_iter": 2**31 - 1})]) == []


def test_cases_cover_every_dispatched_function():
    assert {"pagerank", "hits", "center", "adamic_adar_index"} <= set(DISPATCHED)
    assert set(CALLS) <= set(DISPATCHED)
    assert math.isnan(NAN)
