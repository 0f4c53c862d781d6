"""The edge providers (memory, out-of-core) against the Graph API: same adjacency, same
degrees, with and without the graph's adjacency index, and the engine's protocol fields."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.bsp.edges import MemoryEdges, build_adjacency
from graphsys.bsp.engine import open_edges
from graphsys.bsp.stream import StreamEdges

from .conftest import GRAPH_KEYS


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_one_pass_adjacency_equals_graph_csr(graphs, key, kind):
    g = graphs[key].graph
    indptr, indices, weight = build_adjacency(g, g.edge_set().name, kind, True)
    ref = g.csr(transpose=(kind == "csc"))
    np.testing.assert_array_equal(indptr, ref.indptr)
    np.testing.assert_array_equal(indices, ref.indices)  # same order: sums agree bitwise
    np.testing.assert_array_equal(weight, ref.weight)
    assert indices.dtype == np.int32


@pytest.mark.parametrize("with_index", [False, True])
@pytest.mark.parametrize("provider", ["memory-numba", "memory-torch", "out-of-core"])
@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_degrees_match_the_graph(graphs, indexed, with_index, provider, direction):
    from graphsys.bsp.algorithms.pagerank import PageRank

    g = indexed["directed-p3"] if with_index else graphs["directed-p3"].graph
    mode, _, backend = provider.partition("-")
    edges = open_edges(g, g.edge_set().name, PageRank(0.85, 1e-6), torch.device("cpu"),
                       backend or "numba", mode=mode)
    try:
        np.testing.assert_array_equal(edges.degrees(direction), g.degrees(None, direction))
    finally:
        edges.close()


def test_degrees_after_hub_sorting(graphs, monkeypatch):
    """Hub sorting renumbers the pulled adjacency's sources: degrees map them back."""
    from graphsys.bsp import edges as edges_module
    from graphsys.bsp.algorithms.pagerank import PageRank

    monkeypatch.setattr(edges_module, "HUB_SORT_BYTES", 0)
    g = graphs["directed-p3"].graph
    edges = MemoryEdges(g, None, PageRank(0.85, 1e-6), torch.device("cpu"), "numba")
    edges.hot_adjacency("csc")
    np.testing.assert_array_equal(edges.degrees("out"), g.degrees(None, "out"))
    np.testing.assert_array_equal(edges.degrees("in"), g.degrees(None, "in"))


def test_providers_share_the_protocol_fields(graphs):
    from graphsys.bsp.algorithms.pagerank import PageRank

    g = graphs["directed-p3"].graph
    n = g.num_nodes()
    for mode, cls, streams in (("memory", MemoryEdges, False),
                               ("out-of-core", StreamEdges, True)):
        edges = open_edges(g, g.edge_set().name, PageRank(0.85, 1e-6), torch.device("cpu"),
                           "numba", mode=mode)
        assert isinstance(edges, cls) and edges.mode == mode and edges.streams is streams
        assert (edges.lo, edges.hi, edges.comm.world_size) == (0, n, 1)
        assert edges.bounds.tolist() == [0, n] and edges.build_seconds >= 0.0
        assert edges.relaxes is False  # PageRank is no min-relaxation program
        edges.close()


@pytest.mark.parametrize(("mode", "backend", "relaxes"), [("memory", "numba", True),
                                                          ("memory", "torch", False),
                                                          ("out-of-core", "numba", False)])
def test_relaxation_is_a_declared_capability(graphs, mode, backend, relaxes):
    """Fused and async supersteps run where the provider declares ``relaxes``."""
    from graphsys.bsp.algorithms.traversal import BFS

    g = graphs["directed-p3"].graph
    edges = open_edges(g, g.edge_set().name, BFS(0), torch.device("cpu"), backend, mode=mode)
    assert edges.relaxes is relaxes
    edges.close()
