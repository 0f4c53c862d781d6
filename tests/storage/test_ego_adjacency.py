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
    """The hop counts a search borrows from the graph are all -1 again after it, whatever
    it found or raised: later searches see no stale marks."""
    from graphsys.storage import subgraph

    g = graphsys.from_numpy([0, 1, 2, 3, 10], [1, 2, 3, 4, 11], tmp_path / "g")
    assert g.to_original(ego_adjacency(g, 0, 4)[0]).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ParameterError):
        ego_mask(g, [0, 999], 2, internal=True)
    assert np.all(subgraph._HOPS[g][1] == -1)
    assert g.to_original(ego_adjacency(g, 10, 4)[0]).tolist() == [10, 11]
    assert ego_mask(g, 3, 1).sum() == 2
    assert np.all(subgraph._HOPS[g][1] == -1)
