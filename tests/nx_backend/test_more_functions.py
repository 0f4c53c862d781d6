"""The backend's functions over degrees, cuts, paths, structure and communities against
NetworkX's own (called directly on converted graphs, so these run without the installed
entry point), the sampled betweenness NetworkX draws, the docs' list of dispatched
functions, and first calls that import no torch."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from _nx_graphsys import FUNCTIONS
from graphsys.nx_backend import BackendInterface as B
from tests.nx_backend.test_backend import close, convert, needs_entry_point

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "from-networkx.md"


def _graphs() -> dict[str, nx.Graph]:
    U = nx.relabel_nodes(nx.karate_club_graph(), {i: f"n{i}" for i in range(34)})
    D = nx.gnp_random_graph(40, 0.08, seed=7, directed=True)
    D.add_edges_from([(0, 0), (1, 2), (2, 1)])  # a self-loop and a reciprocal pair
    parts = nx.Graph([(0, 1), (1, 2), (2, 0), (3, 4), (4, 4)])
    parts.add_node(9)
    dag = nx.DiGraph([(0, 1), (1, 2), (0, 2), (2, 3), (4, 3)])
    return {"karate": U, "directed": D, "parts": parts, "dag": dag,
            "tree": nx.balanced_tree(2, 3), "cycle": nx.cycle_graph(7, nx.DiGraph)}


GRAPHS = _graphs()


def _same(a, b) -> bool:
    if hasattr(a, "__next__") or hasattr(b, "__next__"):
        a, b = list(a), list(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list) and all(
            isinstance(x, (set, frozenset)) for x in (*a, *b)):
        return sorted(map(sorted, a)) == sorted(map(sorted, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return bool(np.isclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True))
    return a == b


def _run(name: str, G, args=(), kwargs=None):
    """(graphsys's answer or exception type, NetworkX's)."""
    kwargs = kwargs or {}
    out = []
    for f, H in ((getattr(B, name), convert(G)),
                 (getattr(nx, name, None) or getattr(nx.community, name), G)):
        try:
            value = f(H, *args, **kwargs)
            out.append(list(value) if hasattr(value, "__next__") else value)
        except Exception as exc:  # noqa: BLE001 - the type is compared
            out.append(type(exc))
    return out


#: Function -> argument variants, run on every graph of :data:`GRAPHS` where NetworkX
#: runs them (its ``not_implemented_for`` decorators refuse the others first).
UNDIRECTED = ("is_k_regular", "single_target_shortest_path_length", "hyper_wiener_index",
              "schultz_index", "gutman_index", "global_efficiency", "efficiency")
DIRECTED = ("in_degree_centrality", "out_degree_centrality", "attracting_components",
            "number_attracting_components", "is_attracting_component", "is_semiconnected",
            "triadic_census", "group_in_degree_centrality", "group_out_degree_centrality",
            "kosaraju_strongly_connected_components")
CASES = {
    "degree_centrality": [()], "in_degree_centrality": [()], "out_degree_centrality": [()],
    "isolates": [()], "number_of_isolates": [()], "number_of_selfloops": [()],
    "is_empty": [()], "is_regular": [()], "is_k_regular": [(2,), (3,)], "s_metric": [()],
    "average_neighbor_degree": [(), ({"source": "in", "target": "in+out"},)],
    "average_degree_connectivity": [(), ({"source": "out", "target": "in"},)],
    "volume": [("S",)], "cut_size": [("S",), ("S", "T")], "normalized_cut_size": [("S",)],
    "conductance": [("S",)], "edge_expansion": [("S",)], "mixing_expansion": [("S", "T")],
    "node_boundary": [("S",)], "node_expansion": [("S",)], "boundary_expansion": [("S",)],
    "group_degree_centrality": [("S",)], "group_in_degree_centrality": [("S",)],
    "group_out_degree_centrality": [("S",)],
    "has_path": [("a", "b")], "descendants": [("a",)],
    "descendants_at_distance": [("a", 2)], "shortest_path_length": [(), ("a",), ("a", "b")],
    "single_target_shortest_path_length": [("a",)], "all_pairs_shortest_path_length": [()],
    "dijkstra_path_length": [("a", "b")], "all_pairs_dijkstra_path_length": [()],
    "multi_source_dijkstra_path_length": [(["a", "b"],)],
    "average_shortest_path_length": [(), ({"weight": "weight", "method": "unweighted"},)],
    "wiener_index": [()],
    "hyper_wiener_index": [()], "schultz_index": [()], "gutman_index": [()],
    "barycenter": [()], "harmonic_diameter": [()], "global_efficiency": [()],
    "efficiency": [("a", "b")], "harmonic_centrality": [()],
    "is_directed_acyclic_graph": [()], "is_tree": [()], "is_forest": [()],
    "attracting_components": [()], "number_attracting_components": [()],
    "is_attracting_component": [()], "kosaraju_strongly_connected_components": [()],
    "is_semiconnected": [()], "flow_hierarchy": [()], "triadic_census": [()],
    "is_bipartite": [()], "degree_mixing_dict": [(), ({"normalized": True},),
                                                 ({"x": "in", "y": "out"},)],
}


def _arguments(G, spec: tuple) -> tuple[tuple, dict]:
    nodes = list(G)
    named = {"a": nodes[0], "b": nodes[-1], "S": nodes[:3], "T": nodes[5:9]}
    kwargs = spec[-1] if spec and isinstance(spec[-1], dict) else {}
    args = tuple([named[y] for y in x] if isinstance(x, list) else
                 named.get(x, x) if isinstance(x, str) else x
                 for x in (spec[:-1] if kwargs else spec))
    return args, kwargs


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_functions_equal_networkx(name, graph):
    G = GRAPHS[graph]
    if name in UNDIRECTED and G.is_directed() or name in DIRECTED and not G.is_directed():
        pytest.skip("NetworkX refuses this kind of graph before dispatch")
    for spec in CASES[name]:
        args, kwargs = _arguments(G, spec)
        if B.can_run(name, (G, *args), kwargs) is not True:
            continue  # declined: NetworkX runs it
        ours, theirs = _run(name, G, args, kwargs)
        if ours is NotImplementedError:  # declined inside (a tree's barycenter)
            continue
        assert _same(ours, theirs), (name, spec, ours, theirs)


def test_graph_results_equal_networkx_with_attributes():
    G = nx.karate_club_graph()
    nx.set_node_attributes(G, {n: n % 3 for n in G}, "colour")
    g = convert(G, None)
    for name, args in (("k_core", ()), ("k_core", (3,)), ("k_shell", ()), ("k_crust", ()),
                       ("k_corona", (2,)), ("ego_graph", (0,)), ("ego_graph", (5, 2))):
        ours, theirs = getattr(B, name)(g, *args), getattr(nx, name)(G, *args)
        assert dict(ours.nodes(data=True)) == dict(theirs.nodes(data=True)), name
        assert ours.adj == theirs.adj and ours.graph == theirs.graph, name
    H = B.ego_graph(g, 0, radius=2, center=False)
    assert set(H) == set(nx.ego_graph(G, 0, radius=2, center=False))


def test_modularity_directed_and_self_loops_equal_networkx():
    """NetworkX's directed modularity on a DiGraph with reciprocal edges and self-loops
    (not the undirected view's), and its undirected one with self-loops."""
    D = nx.gnp_random_graph(50, 0.1, seed=3, directed=True)
    D.add_edges_from([(v, v) for v in range(0, 50, 3)] + [(1, 0), (0, 1)])
    U = D.to_undirected()
    for G in (D, U):
        parts = [set(range(0, 50, 2)), set(range(1, 50, 2))]
        for resolution in (1, 0.5, 2):
            assert np.isclose(B.modularity(convert(G, None), parts, weight=None,
                                           resolution=resolution),
                              nx.community.modularity(G, parts, weight=None,
                                                      resolution=resolution), atol=1e-12)
        with pytest.raises(nx.NetworkXError):
            B.modularity(convert(G, None), [set(range(10))], weight=None)
    assert B.is_partition(convert(U, None), [set(range(50))]) is True
    assert B.is_partition(convert(U, None), [set(range(49))]) is False


def test_modularity_declines_weights_float32_rounds():
    """Weights float32 rounds (0.1, 0.3) are declined: the kernel's float32 weights gave
    0.38194444069 where NetworkX gives 0.38194444444; exact ones (0.5, 0.25) equal
    NetworkX's."""
    parts = [{0, 1}, {2}]
    for a, b, exact in ((0.1, 0.3, False), (0.5, 0.25, True)):
        G = nx.DiGraph()
        G.add_weighted_edges_from([(0, 1, a), (1, 0, 1.0), (1, 2, b), (2, 2, 1.0)])
        if not exact:
            with pytest.raises(NotImplementedError):
                B.modularity(convert(G), parts)
            continue
        assert B.modularity(convert(G), parts) == pytest.approx(
            nx.community.modularity(G, parts), abs=1e-15)
    assert B.modularity(convert(G), parts, weight=None) == pytest.approx(
        nx.community.modularity(G, parts, weight=None), abs=1e-15)


def test_bipartite_density_equals_networkx():
    """NetworkX dispatches ``bipartite.density(B, nodes)`` by the name ``density``."""
    for G in (nx.complete_bipartite_graph(3, 4), nx.DiGraph([(0, 3), (1, 3), (3, 2)]),
              nx.empty_graph(4)):
        for nodes in ([0, 1, 2], [0]):
            assert B.density(convert(G, None), nodes) == nx.bipartite.density(G, nodes)


def test_sampled_betweenness_equals_networkx():
    """``k`` sources drawn as NetworkX draws them (the same ``seed``, the same sample),
    scaled as NetworkX scales a sample."""
    for G in (nx.karate_club_graph(), nx.gnp_random_graph(40, 0.1, seed=1, directed=True)):
        g = convert(G, None)
        for kwargs in ({"k": 5, "seed": 3}, {"k": 10, "seed": 1, "normalized": False},
                       {"k": 7, "seed": 2, "endpoints": True}, {"k": len(G), "seed": 0}):
            assert B.can_run("betweenness_centrality", (G,), kwargs) is True
            close(B.betweenness_centrality(g, **kwargs),
                  nx.betweenness_centrality(G, **kwargs), 1e-12)
    assert B.can_run("betweenness_centrality", (G,), {"k": 99}) is not True


@needs_entry_point
@pytest.mark.filterwarnings("ignore:Note. conversions to backend graphs:UserWarning")
def test_sampled_betweenness_takes_every_seed_networkx_takes():
    """A NumPy RandomState seed (NetworkX hands the backend its PythonRandomInterface
    wrapper) raised TypeError from random.Random(seed); a Generator, an int and a
    random.Random give NetworkX's sample too."""
    G = nx.karate_club_graph()
    for make in (lambda: np.random.RandomState(3), lambda: np.random.default_rng(3),
                 lambda: random.Random(3), lambda: 3):
        close(nx.betweenness_centrality(G, k=5, seed=make(), backend="graphsys"),
              nx.betweenness_centrality(G, k=5, seed=make(), backend="networkx"), 1e-12)


def test_harmonic_centrality_is_networkx_to_the_last_bit():
    """NetworkX sums over the sources in the order of set(G) and keys its dict so; graphsys
    summed in the graph's order: on Les Miserables and the Florentine families values 1
    ulp apart, and the keys in another order."""
    for G in (nx.les_miserables_graph(), nx.florentine_families_graph(),
              nx.gnp_random_graph(30, 0.1, seed=1, directed=True)):
        assert list(B.harmonic_centrality(convert(G, None)).items()) == \
            list(nx.harmonic_centrality(G).items())


def test_all_pairs_sums_hold_one_source_at_a_time():
    """The distance sums (barycenter, Wiener, average length, efficiency) read one
    source's distances at a time: all at once are ``N**2`` entries."""
    from graphsys.nx_backend import paths

    rows = paths._all_lengths(convert(GRAPHS["karate"], None), None)
    assert not isinstance(rows, list | tuple) and len(next(rows)) == 34


def test_weighted_cut_ratios_read_the_weights():
    """The cut ratios pass ``weight`` on to the cut and the volumes (they ignored it and
    gave the unweighted ratio): weights other than 1 are declined, so NetworkX answers."""
    G = nx.Graph([(0, 1, {"weight": 3.0}), (1, 2, {"weight": 0.5}), (2, 3, {})])
    H = convert(G)
    for name in ("normalized_cut_size", "conductance", "edge_expansion",
                 "mixing_expansion"):
        with pytest.raises(NotImplementedError):
            getattr(B, name)(H, [0, 1], [2, 3], weight="weight")
        assert getattr(B, name)(H, [0, 1], [2, 3], weight=None) == \
            getattr(nx, name)(G, [0, 1], [2, 3], weight=None)


def test_all_pairs_lengths_decline_before_their_generator():
    """Weights float32 does not hold (0.1) are declined when the call is made, so that
    NetworkX runs it: declined while the generator was read, the NotImplementedError
    reached the loop reading it under automatic dispatch."""
    G = nx.DiGraph()
    G.add_weighted_edges_from([(0, 1, 0.1), (1, 2, 0.2), (2, 0, 0.3)])
    for name in ("all_pairs_dijkstra_path_length", "all_pairs_bellman_ford_path_length",
                 "shortest_path_length"):
        with pytest.raises(NotImplementedError):
            getattr(B, name)(convert(G), weight="weight")  # not a generator first
    assert dict(B.all_pairs_dijkstra_path_length(convert(G), weight=None)) == \
        dict(nx.all_pairs_dijkstra_path_length(G, weight=None))


def test_directed_searches_of_a_stored_graph_with_string_ids(tmp_path):
    """A directed stored graph with string ids (``from_graph``): its searches name their
    source by its id, not by a one-item Arrow array (a GraphsysError escaped)."""
    import pyarrow as pa

    import graphsys
    from graphsys.nx_backend import from_graph

    g = graphsys.from_arrow(pa.table({"src": ["a", "b", "c"], "dst": ["b", "c", "a"]}),
                            tmp_path / "g")
    want = dict(nx.all_pairs_shortest_path_length(nx.DiGraph([("a", "b"), ("b", "c"),
                                                              ("c", "a")])))
    assert dict(B.all_pairs_shortest_path_length(from_graph(g))) == want
    assert B.single_source_shortest_path_length(from_graph(g), "c") == want["c"]


def test_declined_arguments():
    U, D = GRAPHS["karate"], GRAPHS["directed"]
    for name, G, args, kwargs in [
            ("cut_size", U, (iter(["n0"]),), {}),  # an iterator NetworkX reads twice
            ("jaccard_coefficient", U, (iter([("n0", "n1")]),), {}),  # the same
            ("preferential_attachment", U, (), {"ebunch": (p for p in [("n0", "n1")])}),
            # NetworkX checks the sources, then searches from none: {} (graphsys searched)
            ("multi_source_dijkstra_path_length", U, (iter(["n0", "n5"]),), {}),
            ("cut_size", U, (["n0", "n1"], ["n1"]), {}),  # overlapping sets
            ("cut_size", D, ([0, 1],), {}),  # NetworkX's directed cut needs T
            ("volume", U, ("n0",), {}),  # a node, not a set of nodes
            ("group_degree_centrality", U, (["n0", "x"],), {}),
            ("ancestors", D, (0,), {}), ("has_path", U, ("x", "n0"), {}),
            ("shortest_path_length", D, (), {"target": 0}),
            ("barycenter", U, (), {"weight": "weight"}),
            ("triadic_census", D, (), {"nodelist": [0, 1, 2]}),
            ("k_core", U, (), {"core_number": {}}),
            ("ego_graph", D, (0,), {"undirected": True})]:
        assert B.can_run(name, (G, *args), kwargs) is not True, name
    with pytest.raises(NotImplementedError):  # a tree's centroid order stays NetworkX's
        B.barycenter(convert(GRAPHS["tree"], None))


def _listed() -> set[str]:
    text = GUIDE.read_text()
    section = text.split("### The functions graphsys runs", 1)[1].split("\nLouvain", 1)[0]
    return set(re.findall(r"`(\w+)`", section)) - {"FUNCTIONS", "seed", "k", "weight",
                                                   "u", "distance", "nbunch", "sources",
                                                   "nodelist", "DiGraph", "NotImplementedError"}


def test_docs_list_every_dispatched_function():
    assert len(FUNCTIONS) >= 100
    listed = _listed()
    assert listed == set(FUNCTIONS), (sorted(listed - set(FUNCTIONS)),
                                      sorted(set(FUNCTIONS) - listed))


@needs_entry_point
def test_bsp_first_calls_do_not_import_torch():
    """PageRank, betweenness, closeness and the strong components dispatched to graphsys
    (conversion included) run the BSP engine on NumPy state: torch stays unimported, and
    the answers are NetworkX's."""
    root = str(Path(__file__).resolve().parents[2])
    code = ("import sys, networkx as nx\n"
            "G = nx.gnp_random_graph(40, 0.1, seed=1)\n"
            "D = nx.gnp_random_graph(40, 0.05, seed=2, directed=True)\n"
            "got = [nx.pagerank(G, backend='graphsys'),\n"
            "       nx.betweenness_centrality(G, backend='graphsys'),\n"
            "       nx.closeness_centrality(G, backend='graphsys')]\n"
            "scc = sorted(map(sorted, nx.strongly_connected_components(D, "
            "backend='graphsys')))\n"
            "print('torch' in sys.modules, 'graphsys.bsp' in sys.modules)\n"
            "want = [nx.pagerank(G), nx.betweenness_centrality(G), nx.closeness_centrality(G)]\n"
            "print(all(abs(g[k] - w[k]) < 1e-6 for g, w in zip(got, want) for k in G) and "
            "scc == sorted(map(sorted, nx.strongly_connected_components(D))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": root})
    assert out.stdout.split() == ["False", "True", "True"]


@needs_entry_point
def test_first_calls_without_bsp_do_not_import_torch():
    """Conversion and a first call of a function that needs no BSP run leave torch (and
    the BSP engine) unimported."""
    code = ("import sys, networkx as nx\n"
            "G = nx.karate_club_graph(); D = nx.gnp_random_graph(30, 0.1, seed=1, "
            "directed=True)\n"
            "nx.degree_centrality(G, backend='graphsys')\n"
            "nx.core_number(G, backend='graphsys')\n"
            "nx.average_shortest_path_length(G, backend='graphsys')\n"
            "nx.is_bipartite(D, backend='graphsys')\n"
            "list(nx.connected_components(G, backend='graphsys'))\n"
            "nx.is_forest(G, backend='graphsys')\n"
            "nx.average_neighbor_degree(G, backend='graphsys')\n"
            "nx.cut_size(G, [0, 1], backend='graphsys')\n"
            "nx.triadic_census(D, backend='graphsys')\n"
            "nx.number_weakly_connected_components(D, backend='graphsys')\n"
            "nx.eigenvector_centrality(D, backend='graphsys')\n"
            "nx.katz_centrality(G, backend='graphsys')\n"
            "nx.square_clustering(G, backend='graphsys')\n"
            "print('torch' in sys.modules, 'graphsys.bsp' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False False"
