"""A NetworkX graph converted for the backend stays in memory (no graph directory) until a
function asks for the stored graph: its adjacency equals the stored graph's, and PageRank
runs on it, equal to NetworkX's."""

from __future__ import annotations

import random
import tempfile

import networkx as nx
import numpy as np
import pytest

from graphsys.nx_backend import BackendInterface as B
from tests.nx_backend.test_backend import convert


def _graph(s: int, directed: bool) -> nx.Graph:
    G = nx.gnp_random_graph(50, 0.08, seed=s, directed=directed)
    G.add_edges_from([(i, i) for i in range(0, 50, 4)])  # self-loops
    G.add_node("alone")
    rng = random.Random(s)
    for u, v in G.edges:
        G[u][v]["weight"] = rng.choice([1, 2, 3, 0.5, 0])
    return G


def _refuse(*args, **kwargs):
    raise AssertionError("a graph directory was written")


@pytest.fixture
def no_directories(monkeypatch):
    """A conversion that writes a graph directory fails the test."""
    monkeypatch.setattr(tempfile, "mkdtemp", _refuse)


@pytest.mark.parametrize("directed", [False, True])
def test_adjacency_in_memory_equals_stored(directed):
    for s in range(4):
        G = _graph(s, directed)
        H = convert(G)
        assert H.in_memory and "in memory" in repr(H)
        memory = [H.adjacency(t) for t in (False, True)]
        edges = H.number_of_edges()
        H._cache.clear()
        assert H.graph is not None and not H.in_memory  # written now
        for (a, b), (c, d) in zip(memory, [H.adjacency(t) for t in (False, True)]):
            assert np.array_equal(a, c) and np.array_equal(b, d)
        assert edges == H.number_of_edges() == G.number_of_edges()


@pytest.mark.parametrize("weight", [None, "weight"])
@pytest.mark.parametrize("directed", [False, True])
def test_pagerank_in_memory_equals_networkx(no_directories, directed, weight):
    """NetworkX's iteration on the conversion's arrays (weights of 0 make dangling nodes):
    personalization, nstart and alpha as NetworkX reads them; no directory written."""
    for s in range(3):
        G = _graph(s, directed)
        H = convert(G, weight)
        for kwargs in ({}, {"personalization": {0: 1, 3: 2}},
                       {"nstart": {k: 1 + i % 3 for i, k in enumerate(G)}},
                       {"alpha": 0.5, "tol": 1e-10}):
            ours = B.pagerank(H, weight=weight, **kwargs)
            theirs = nx.pagerank(G, weight=weight, **kwargs)
            assert ours.keys() == theirs.keys()
            np.testing.assert_allclose(list(ours.values()), list(theirs.values()),
                                       rtol=0, atol=1e-14)
        assert H.in_memory
        with pytest.raises(nx.PowerIterationFailedConvergence):
            B.pagerank(H, max_iter=2)


def test_functions_on_adjacency_stay_in_memory(no_directories):
    G = _graph(1, False)
    H = convert(G, None)
    assert B.number_connected_components(H) == nx.number_connected_components(G)
    assert list(B.label_propagation_communities(H)) == \
        list(nx.community.label_propagation_communities(G))
    assert H.in_memory


@pytest.mark.parametrize("directed", [False, True])
def test_communities_in_memory_equal_stored(no_directories, directed, monkeypatch):
    """Louvain and modularity on the conversion's arrays: the stored graph's answers."""
    G = _graph(2, directed)
    for weight in (None, "weight"):
        H = convert(G, weight)
        parts = B.louvain_communities(H, weight=weight, seed=4)
        q = B.modularity(H, parts, weight=weight, resolution=0.7)
        assert np.isclose(q, nx.community.modularity(G, parts, weight=weight,
                                                     resolution=0.7), rtol=0, atol=1e-6)
        assert H.in_memory
        monkeypatch.undo()  # directories allowed: the same calls on the stored graph
        assert H.graph is not None and not H.in_memory
        assert B.louvain_communities(H, weight=weight, seed=4) == parts
        assert B.modularity(H, parts, weight=weight, resolution=0.7) == q
        monkeypatch.setattr(tempfile, "mkdtemp", _refuse)
