"""``ego_adjacency``: the ego graph in memory, the nodes and induced edges of networkx's
``ego_graph`` (multi-edges and self-loops as stored), without a graph directory."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import graphsys
from graphsys.errors import ParameterError
from graphsys.storage.subgraph import ego_adjacency, ego_mask


@pytest.mark.parametrize("undirected_store", [False, True])
@pytest.mark.parametrize("radius", [0, 1, 2, 3])
@pytest.mark.parametrize("either_way", [False, True])
def test_matches_networkx_ego_graph(tmp_path, undirected_store, radius, either_way):
    rng = np.random.default_rng(radius)
    src, dst = rng.integers(0, 200, 500) * 3, rng.integers(0, 200, 500) * 3
    g = graphsys.from_numpy(src, dst, tmp_path / "g", undirected=undirected_store,
                            partitions=2)
    G = nx.MultiGraph() if undirected_store else nx.MultiDiGraph()
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    for centre in (int(src[0]), int(dst[7])):
        nodes, adj = ego_adjacency(g, centre, radius, undirected=either_way)
        want = nx.ego_graph(G, centre, radius, undirected=either_way)
        ids = g.to_original(nodes)
        assert sorted(ids.tolist()) == sorted(want.nodes) and np.all(np.diff(nodes) > 0)
        assert np.array_equal(nodes, np.nonzero(ego_mask(g, centre, radius,
                                                         undirected=either_way))[0])
        got = sorted((ids[i], ids[j]) for i in range(len(nodes))
                     for j in adj.indices[adj.indptr[i]:adj.indptr[i + 1]])
        pairs = [(u, v) for u, v, _ in want.edges(keys=True)]
        if undirected_store:  # stored both ways (a self-loop once)
            pairs += [(v, u) for u, v in pairs if u != v]
        assert got == sorted(pairs)


def test_several_centres_and_bad_radius(tmp_path):
    g = graphsys.from_numpy([0, 1, 5, 6], [1, 2, 6, 7], tmp_path / "g")
    nodes, adj = ego_adjacency(g, [0, 5], 1)
    assert g.to_original(nodes).tolist() == [0, 1, 5, 6]
    assert adj.indptr.tolist() == [0, 1, 1, 2, 2] and adj.indices.tolist() == [1, 3]
    with pytest.raises(ParameterError, match="radius"):
        ego_adjacency(g, 0, -1)


def test_searches_leave_their_scratch_clean(tmp_path):
    """The bitmap a search borrows from the graph is clear again after it, whatever
    it found or raised: later searches see no stale marks."""
    g = graphsys.from_numpy([0, 1, 2, 3, 10], [1, 2, 3, 4, 11], tmp_path / "g")
    assert g.to_original(ego_adjacency(g, 0, 4)[0]).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ParameterError):
        ego_mask(g, [0, 999], 2, internal=True)
    assert not g._searches["scratch"][1].any()
    assert g.to_original(ego_adjacency(g, 10, 4)[0]).tolist() == [10, 11]
    assert ego_mask(g, 3, 1).sum() == 2
    assert not g._searches["scratch"][1].any()


def test_a_small_ego_graph_of_a_large_indexed_graph_allocates_about_its_ball(tmp_path):
    """With a stored index, an ego search reuses the adjacency it resolved and the graph's
    scratch: a radius-2 ego graph of a 300,000-node path allocates tens of bytes per ball
    node (its result), not an array over every node."""
    import tracemalloc

    from graphsys.storage.adjacency_index import build_index

    n = 300_000
    ids = np.arange(n)
    g = graphsys.from_numpy(ids[:-1], ids[1:], tmp_path / "g", undirected=True)
    build_index(g, ("csr",))
    centre = int(g.to_internal([n // 2])[0])
    ego_adjacency(g, centre, 2, internal=True)  # resolves the adjacency, compiles
    tracemalloc.start()
    try:
        nodes, adj = ego_adjacency(g, centre, 2, internal=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024
    assert g.to_original(nodes).tolist() == list(range(n // 2 - 2, n // 2 + 3))
    assert adj.indptr.tolist() == [0, 1, 3, 5, 7, 8]
    assert adj.indices.tolist() == [1, 0, 2, 1, 3, 2, 4, 3]


@pytest.mark.parametrize("either_way", [False, True])
def test_indexed_directed_graph_and_a_remapped_index(tmp_path, either_way):
    """On a directed graph with stored CSR and CSC indexes (followed either way when
    asked), the ego graph is networkx's; after the graph maps its index again, the next
    search reads the new mapping, not the arrays it resolved before."""
    from graphsys.storage.adjacency_index import build_index
    from graphsys.storage.csr import forget_mapped

    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 300, 900), rng.integers(0, 300, 900)
    g = graphsys.from_numpy(src, dst, tmp_path / "g", partitions=3)
    build_index(g, ("csr", "csc"))
    G = nx.MultiDiGraph()
    G.add_edges_from(zip(src.tolist(), dst.tolist()))

    def check(centre, radius):
        nodes, adj = ego_adjacency(g, centre, radius, undirected=either_way)
        want = nx.ego_graph(G, centre, radius, undirected=either_way)
        ids = g.to_original(nodes)
        assert sorted(ids.tolist()) == sorted(want.nodes)
        got = sorted((ids[i], ids[j]) for i in range(len(nodes))
                     for j in adj.indices[adj.indptr[i]:adj.indptr[i + 1]])
        assert got == sorted((u, v) for u, v, _ in want.edges(keys=True))

    for centre, radius in ((int(src[0]), 2), (int(dst[3]), 3), (int(src[5]), 0)):
        check(centre, radius)
    before = g._searches[(None, either_way)][1]
    forget_mapped(g, "csr")
    check(int(src[0]), 2)
    assert g._searches[(None, either_way)][1] is not before
    assert g._searches[(None, either_way)][1] is g.adjacency_index(None, "csr").indptr


def test_internal_centres_outside_the_graph_are_refused(tmp_path):
    g = graphsys.from_numpy([0, 1, 2], [1, 2, 3], tmp_path / "g")
    for bad in ([0, 4], -1, [7]):
        with pytest.raises(ParameterError, match="^center holds internal id"):
            ego_adjacency(g, bad, 1, internal=True)
    assert not g._searches["scratch"][1].any()
    nodes, adj = ego_adjacency(g, [], 1, internal=True)
    assert nodes.tolist() == [] and adj.indptr.tolist() == [0]
