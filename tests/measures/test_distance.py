"""Eccentricity and diameter against NetworkX on random graphs (several components,
directed ones in their undirected view) and against breadth-first searches of scipy on the
real graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy.sparse import csgraph

from graphsys.errors import ParameterError
from graphsys.measures import diameter, eccentricity
from tests.measures.conftest import _ingest, small_graph


def nx_eccentricities(U) -> dict:
    out = {}
    for comp in nx.connected_components(U):
        out.update(nx.eccentricity(U.subgraph(comp)))
    return out


@pytest.mark.parametrize("directed", [False, True])
def test_small_graphs_match_networkx(tmp_path, directed):
    for seed in range(8):
        t = small_graph(tmp_path, seed, directed, dedupe=seed % 2 == 0)
        ref = nx_eccentricities(t.U)
        ids = t.graph.node_ids().tolist()
        assert eccentricity(t.graph).values.tolist() == [ref[v] for v in ids]
        assert eccentricity(t.graph, ids[:3]).tolist() == [ref[v] for v in ids[:3]]
        diam = max(ref.values())
        for exact in (True, False):
            d = diameter(t.graph, exact=exact)
            assert d.lower <= diam <= d.upper and d.value == d.lower
            assert nx.shortest_path_length(t.U, *d.endpoints) == d.value
            assert d.components == nx.number_connected_components(t.U)
        assert d.exact or d.upper > d.lower
        assert diameter(t.graph, exact=True).value == diam


@pytest.mark.parametrize("directed", [False, True])
def test_diameter_does_not_depend_on_the_partitions(tmp_path, directed):
    """Ties of degree and distance go by original id: the estimate, its bounds and its
    endpoints are the same for 1, 3 and 5 partitions (they went by internal id, and the
    estimate of one graph in three layouts was 6, 6 and 7)."""
    for seed in range(6):
        runs = set()
        for p in (1, 3, 5):
            (tmp_path / f"{seed}-{p}").mkdir()
            g = small_graph(tmp_path / f"{seed}-{p}", seed, directed, partitions=p, n=50,
                            m=80).graph
            d = diameter(g)
            runs.add((d.value, d.lower, d.upper, d.endpoints, diameter(g, exact=True).value))
        assert len(runs) == 1, (seed, runs)


@pytest.mark.parametrize("seed", [1, 2, 50])
def test_exact_endpoints_follow_original_ids(tmp_path, seed):
    """Several pairs at the diameter: the exact diameter's endpoints were iFUB's farthest
    node by internal id (and its first source in search order), so one graph ingested in
    other orders and partitions gave other pairs ((675, 563) and (1935, 675) at 15). Now
    each layout gives the same pair: a node of eccentricity ``value`` and the smallest
    original id ``value`` hops from it (NetworkX's distances)."""
    rng = np.random.default_rng(seed)
    G = (nx.gnm_random_graph(300, 330, seed=seed) if seed % 2
         else nx.watts_strogatz_graph(200, 4, 0.05, seed=seed))
    G = nx.relabel_nodes(G, dict(zip(G, (rng.permutation(len(G)) * 7 + 3).tolist())))
    edges = np.array(list(G.edges()))
    ids = np.array(sorted(G))
    for exact in (True, False):
        found = set()
        for p in (1, 2, 3, 5):
            order = np.random.default_rng(p).permutation(len(edges))
            g = _ingest(tmp_path / f"{exact}-{p}", edges[order, 0], edges[order, 1],
                        ids[::-1] if p % 2 else ids, False, p, True)
            d = diameter(g, exact=exact)
            found.add((d.value, d.endpoints))
        assert len(found) == 1, found
        (value, (a, b)), = found
        dist = nx.single_source_shortest_path_length(G, a)
        assert max(dist.values()) == value  # a's eccentricity
        assert b == min(v for v, k in dist.items() if k == value)
    exact_value = max(nx.diameter(G.subgraph(c)) for c in nx.connected_components(G))
    assert diameter(g, exact=True).value == exact_value


@pytest.mark.parametrize("directed", [False, True])
def test_many_sources_at_once_match_networkx(tmp_path, directed):
    # one source, a word of sources searched together (repeats, other components) and more
    # than a word (the searches spread over threads)
    t = small_graph(tmp_path, 3, directed, n=90, m=110)
    ref = nx_eccentricities(t.U)
    ids = np.array(t.graph.node_ids().tolist())
    rng = np.random.default_rng(1)
    for k in (1, 2, 64, 65):
        nodes = rng.choice(ids, k).tolist()
        assert eccentricity(t.graph, nodes).tolist() == [ref[v] for v in nodes]


def test_path_cycle_and_isolated_nodes(tmp_path):
    import graphsys

    g = graphsys.from_numpy(np.arange(9), np.arange(1, 10), tmp_path / "p", num_nodes=12)
    d = diameter(g, exact=True)
    assert (d.value, d.exact, sorted(d.endpoints), d.components) == (9, True, [0, 9], 3)
    assert eccentricity(g, [10, 11, 4]).tolist() == [0, 0, 5]
    c = graphsys.from_numpy(np.arange(10), (np.arange(10) + 1) % 10, tmp_path / "c")
    assert diameter(c, exact=True).value == 5
    with pytest.raises(ParameterError, match="exact"):
        diameter(c, exact="yes")


@pytest.mark.parametrize("partitions", [1, 3])
def test_string_ids_match_networkx(tmp_path, partitions):
    """Nodes with string ids (a knowledge graph's entities): the original-id order that
    breaks ties was an unsigned array, joined with int64 into float64, and eccentricity,
    diameter and the triad census failed with an IndexError."""
    import pyarrow as pa

    from graphsys import mining, open_graph
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    t = small_graph(tmp_path, 5, True, n=30, m=50)
    edges = [(f"/m/{u:03d}", f"/m/{v:03d}") for u, v in t.G.edges()]
    src, dst = (list(c) for c in zip(*edges))
    ingest_sources([EdgeSource(table=pa.table({"src": src, "dst": dst}))], tmp_path / "s",
                   IngestOptions(partitions=partitions))
    g = open_graph(tmp_path / "s")
    D = nx.DiGraph(edges)
    ref = nx_eccentricities(D.to_undirected())
    assert eccentricity(g).to_dict() == ref
    assert eccentricity(g, ["/m/003", "/m/010"]).tolist() == [ref["/m/003"], ref["/m/010"]]
    assert diameter(g, exact=True).value == max(ref.values())
    assert mining.triad_census(g) == nx.triadic_census(D)


@pytest.mark.parametrize("name", ["email-enron", "soc-slashdot0902", "luxembourg-osm"])
def test_real_graphs(real, name):
    r = real[name]
    d = diameter(r.graph, exact=True)
    assert d.exact and d.lower == d.upper == d.value
    a, b = r.graph.to_internal(list(d.endpoints)).tolist()
    dist = csgraph.shortest_path(r.sym, unweighted=True, indices=[a, b])
    assert dist[0, b] == d.value  # the endpoints are that far apart
    assert np.nanmax(np.where(np.isinf(dist), np.nan, dist)) == d.value
    est = diameter(r.graph)
    assert est.lower <= d.value <= est.upper
    rng = np.random.default_rng(0)
    nodes = rng.integers(0, r.sym.shape[0], 8)
    ref = csgraph.shortest_path(r.sym, unweighted=True, indices=nodes)
    ref[np.isinf(ref)] = -1
    assert eccentricity(r.graph, nodes, internal=True).tolist() == ref.max(axis=1).tolist()


def test_enron_eccentricities_bound_the_diameter(real):
    r = real["email-enron"]
    ecc = eccentricity(r.graph).values
    assert ecc.max() == diameter(r.graph, exact=True).value
    labels = csgraph.connected_components(r.sym)[1]
    giant = np.flatnonzero(labels == np.bincount(labels).argmax())
    assert ecc[giant].min() * 2 >= ecc.max()  # radius >= diameter / 2


@pytest.mark.parametrize("directed", [False, True])
def test_threaded_search_matches_scipy_on_any_thread_count(tmp_path, directed):
    # the same distances as scipy, and the same queue on 1 and 2 threads
    import numba

    from graphsys.measures.distance import _Searcher
    from graphsys.measures.view import undirected_view

    t = small_graph(tmp_path, 5, directed, n=3000, m=9000)
    view = undirected_view(t.graph)
    sym = nx.to_scipy_sparse_array(t.U, nodelist=t.graph.node_ids().tolist())
    ref = csgraph.shortest_path(sym, unweighted=True, indices=[0, 7])
    before = numba.get_num_threads()
    try:
        for source, row in zip((0, 7), ref):
            queues = []
            for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
                numba.set_num_threads(threads)
                s = _Searcher(view)
                count = s.bfs(source)
                assert count == np.isfinite(row).sum()
                assert np.array_equal(np.where(np.isfinite(row), row, -1), s.dist)
                assert np.all(np.diff(s.dist[s.queue[:count]]) >= 0)  # level by level
                queues.append(s.queue[:count].copy())
            assert all(np.array_equal(queues[0], q) for q in queues)
    finally:
        numba.set_num_threads(before)


def test_sweep_choices_are_keys_of_the_node():
    """The 4-sweep's farthest node: the largest eccentricity bound, then the longest rows,
    then the smallest rank (original-id order), whatever order the level is listed in; a
    step back goes to the neighbour with the longest rows, then the smallest rank."""
    from graphsys.measures.kernels_distance import last_level, peripheral, step_back
    from graphsys.measures.kernels_view import UNIQUE

    # rows of a path 0-1-2-3 with 2 also joined to 4, 5 and 4 to 5 (sorted, no repeats)
    rows = {0: [1], 1: [0, 2], 2: [1, 3, 4, 5], 3: [2], 4: [2, 5], 5: [2, 4]}
    ptr = np.cumsum([0] + [len(rows[v]) for v in range(6)]).astype(np.int64)
    idx = np.concatenate([rows[v] for v in range(6)]).astype(np.int32)
    upper = np.full(6, 9, np.int32)
    rank = np.arange(6)
    for order in ([3, 4, 5], [5, 4, 3], [4, 3, 5]):
        nodes = np.array(order, np.int64)
        assert peripheral(nodes, upper, ptr, ptr, UNIQUE, rank) == 4  # two entries; 4 < 5
        assert peripheral(nodes, upper, ptr, ptr, UNIQUE, rank[::-1].copy()) == 5
        upper[3] = 10
        assert peripheral(nodes, upper, ptr, ptr, UNIQUE, rank) == 3  # least bounded first
        upper[3] = 9
    dist = np.array([0, 1, 2, 3, 3, 3], np.int32)
    queue = np.array([0, 1, 2, 5, 3, 4], np.int64)
    assert last_level(dist, queue, 6) == 3
    assert last_level(dist, queue, 1) == 0
    # 0-1, 0-2, 1-3, 2-3, 2-4, from 0: 3 reached through 1 (listed first) and 2 (more rows)
    rows = {0: [1, 2], 1: [0, 3], 2: [0, 3, 4], 3: [1, 2], 4: [2]}
    ptr = np.cumsum([0] + [len(rows[v]) for v in range(5)]).astype(np.int64)
    idx = np.concatenate([rows[v] for v in range(5)]).astype(np.int32)
    dist = np.array([0, 1, 1, 2, 2], np.int32)
    rank = np.arange(5)
    assert step_back(3, ptr, idx, ptr, idx, UNIQUE, dist, rank) == 2
    assert step_back(4, ptr, idx, ptr, idx, UNIQUE, dist, rank) == 2
    assert step_back(1, ptr, idx, ptr, idx, UNIQUE, dist, rank) == 0
    # 1 and 2 both with two rows from 3 in 0-1, 0-2, 1-3, 2-3: the smaller rank
    rows = {0: [1, 2], 1: [0, 3], 2: [0, 3], 3: [1, 2]}
    ptr = np.cumsum([0] + [len(rows[v]) for v in range(4)]).astype(np.int64)
    idx = np.concatenate([rows[v] for v in range(4)]).astype(np.int32)
    dist = np.array([0, 1, 1, 2], np.int32)
    assert step_back(3, ptr, idx, ptr, idx, UNIQUE, dist, np.arange(4)) == 1
    assert step_back(3, ptr, idx, ptr, idx, UNIQUE, dist, np.array([0, 2, 1, 3])) == 2


def test_farthest_is_the_smallest_id_of_the_last_level():
    """A search's farthest node does not depend on the order its last level was listed in
    (top-down as found, bottom-up by id): the diameter's sweeps start from the same nodes
    whichever direction each level ran in, on any number of threads."""
    from graphsys.measures.kernels_distance import farthest

    dist = np.array([0, 1, 1, 2, 2, 2, -1], np.int32)
    queue = np.array([0, 2, 1, 5, 3, 4, 0])
    assert farthest(dist, queue, 6) == 3
    assert farthest(dist, queue, 1) == 0
