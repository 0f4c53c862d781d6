"""Eigenvector and Katz centrality and square clustering through the backend
(graphsys.nx_backend.spectral) against NetworkX's own, called directly on converted graphs
(so these run without the installed entry point): random graphs, directed and undirected,
weighted and not, to 1e-9 relative; NetworkX's iteration counts, exceptions and
declines."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest

from graphsys.nx_backend import BackendInterface as B
from tests.nx_backend.test_backend import convert


def rel_close(a: dict, b: dict, rel: float = 1e-9) -> None:
    assert a.keys() == b.keys()
    scale = max(abs(v) for v in b.values()) or 1.0
    np.testing.assert_allclose([a[k] for k in b], list(b.values()), rtol=0,
                               atol=rel * scale)


def random_graph(seed: int, directed: bool, n: int = 50) -> nx.Graph:
    """A random graph with a self-loop, an isolated node and float32-exact weights."""
    G = nx.gnp_random_graph(n, 0.08, seed=seed, directed=directed)
    G.add_edge(1, 1)
    G.add_node("lonely")
    rng = random.Random(seed)
    for u, v in G.edges():
        G[u][v]["weight"] = rng.randint(1, 12) / 4
    return G


CASES = [(seed, directed, weight) for seed in (1, 2) for directed in (False, True)
         for weight in (None, "weight")]


@pytest.mark.parametrize("seed,directed,weight", CASES)
def test_eigenvector_centrality_matches_networkx(seed, directed, weight):
    G = random_graph(seed, directed)
    g = convert(G, weight)
    rel_close(B.eigenvector_centrality(g, max_iter=2000, weight=weight),
              nx.eigenvector_centrality(G, max_iter=2000, weight=weight))
    start = {k: 1.0 + i % 3 for i, k in enumerate(G)}
    rel_close(B.eigenvector_centrality(g, max_iter=2000, nstart=start, weight=weight),
              nx.eigenvector_centrality(G, max_iter=2000, nstart=start, weight=weight))


@pytest.mark.parametrize("seed,directed,weight", CASES)
def test_katz_centrality_matches_networkx(seed, directed, weight):
    G = random_graph(seed, directed)
    g = convert(G, weight)
    beta = {k: 0.5 + i % 4 for i, k in enumerate(G)}
    for kwargs in ({}, {"beta": beta}, {"normalized": False},
                   {"nstart": {k: 1.0 for k in G}, "alpha": 0.05}):
        rel_close(B.katz_centrality(g, weight=weight, **kwargs),
                  nx.katz_centrality(G, weight=weight, **kwargs))
        kwargs.pop("nstart", None)
        rel_close(B.katz_centrality_numpy(g, weight=weight, **kwargs),
                  nx.katz_centrality_numpy(G, weight=weight, **kwargs))


@pytest.mark.parametrize("seed,directed,weight", CASES)
def test_eigenvector_centrality_numpy_matches_networkx(seed, directed, weight):
    G = random_graph(seed, directed, n=40)
    parts = nx.strongly_connected_components(G) if directed else nx.connected_components(G)
    H = G.subgraph(max(parts, key=len)).copy()
    rel_close(B.eigenvector_centrality_numpy(convert(H, weight), weight=weight),
              nx.eigenvector_centrality_numpy(H, weight=weight))
    with pytest.raises(nx.AmbiguousSolution):  # not connected, as NetworkX's
        B.eigenvector_centrality_numpy(convert(G, weight), weight=weight)


def _outcome(f, *args, **kwargs):
    try:
        return f(*args, **kwargs)
    except nx.PowerIterationFailedConvergence:
        return "failed"


@pytest.mark.parametrize("directed", [False, True])
def test_iteration_counts_and_failures_are_networkx(directed):
    """For each ``max_iter``, graphsys converges exactly where NetworkX does."""
    G = random_graph(3, directed)
    g = convert(G)
    for k in range(0, 30, 3):
        want = _outcome(nx.eigenvector_centrality, G, max_iter=k)
        got = _outcome(B.eigenvector_centrality, g, max_iter=k)
        assert (got == "failed") == (want == "failed"), k
        want = _outcome(nx.katz_centrality, G, max_iter=k, alpha=0.05)
        got = _outcome(B.katz_centrality, g, max_iter=k, alpha=0.05)
        assert (got == "failed") == (want == "failed"), k


def test_errors_are_networkx():
    g = convert(nx.path_graph(4))
    with pytest.raises(nx.NetworkXPointlessConcept):
        B.eigenvector_centrality(convert(nx.Graph()))
    with pytest.raises(nx.NetworkXError):
        B.eigenvector_centrality(g, nstart=dict.fromkeys(range(4), 0))
    with pytest.raises(nx.NetworkXError):
        B.katz_centrality(g, beta={0: 1.0})
    with pytest.raises(nx.NetworkXError):
        B.katz_centrality_numpy(g, beta="a")
    assert B.katz_centrality(convert(nx.Graph())) == {}


def test_square_clustering_equals_networkx():
    for seed in range(4):
        G = random_graph(seed, False, n=60)
        G.add_edges_from([(2, 2), (0, 3), (3, 5), (5, 7), (7, 0)])  # a square
        g = convert(G, None)
        assert B.square_clustering(g) == nx.square_clustering(G)
        nodes = [0, 3, "lonely", 99]
        assert B.square_clustering(g, nodes) == nx.square_clustering(G, nodes)
        assert B.square_clustering(g, 0) == nx.square_clustering(G, 0)
    grid = nx.grid_2d_graph(4, 5)
    assert B.square_clustering(convert(grid, None)) == nx.square_clustering(grid)


def test_directed_square_clustering_equals_networkx():
    """On a DiGraph NetworkX's neighbours are the successors: the same figures to the last
    bit, self-loops and reciprocal pairs included."""
    for seed in range(5):
        G = nx.gnp_random_graph(50, 0.08 + 0.03 * seed, seed=seed, directed=True)
        G.add_edges_from([(2, 2), (0, 3), (3, 0), (3, 5), (5, 7), (7, 0), (0, 9), (9, 7)])
        g = convert(G, None)
        assert B.square_clustering(g) == nx.square_clustering(G)
        nodes = [0, 3, 7, 49]
        assert B.square_clustering(g, nodes) == nx.square_clustering(G, nodes)
        assert B.square_clustering(g, 3) == nx.square_clustering(G, 3)
    for G in (nx.DiGraph([(0, 1), (1, 2), (2, 3), (3, 0)]), nx.DiGraph(), nx.path_graph(
            4, create_using=nx.DiGraph), nx.complete_graph(5, create_using=nx.DiGraph)):
        assert B.square_clustering(convert(G, None)) == nx.square_clustering(G)
    assert nx.square_clustering(G, backend="graphsys") == nx.square_clustering(G)


def test_declines():
    D = nx.gnp_random_graph(10, 0.3, seed=1, directed=True)
    U = nx.path_graph(5)
    f32 = nx.Graph([(0, 1), (1, 2)])
    nx.set_edge_attributes(f32, np.float32(0.1), "weight")
    for name, G, kwargs in [
            ("square_clustering", nx.MultiDiGraph(D), {}),
            ("eigenvector_centrality", U, {"nstart": {0: 1.0}}),
            ("eigenvector_centrality", U, {"nstart": dict.fromkeys(range(5), float("nan"))}),
            ("katz_centrality", U, {"nstart": {0: 1.0}}),
            ("katz_centrality", U, {"beta": float("inf")}),
            ("katz_centrality", U, {"beta": {k: "a" for k in range(5)}}),
            ("katz_centrality", f32, {"weight": "weight"}),
            ("eigenvector_centrality", f32, {"weight": "weight"}),
            ("eigenvector_centrality_numpy", nx.path_graph(2), {}),
            ("katz_centrality_numpy", nx.empty_graph(1), {})]:
        assert B.can_run(name, (G,), kwargs) is not True, (name, kwargs)
    assert B.can_run("katz_centrality", (U,), {"beta": {k: 1.0 for k in range(5)}}) is True
    inexact = nx.Graph([(0, 1, {"weight": 0.1}), (1, 2, {"weight": 1.0})])
    with pytest.raises(NotImplementedError):  # float32 would round 0.1
        B.eigenvector_centrality(convert(inexact), weight="weight")
    zero = nx.cycle_graph(4)  # every weight 0: was 0.5 each, where NetworkX's ARPACK raises
    nx.set_edge_attributes(zero, 0, "weight")
    with pytest.raises(NotImplementedError, match="eigenvalue is 0"):
        B.eigenvector_centrality_numpy(convert(zero), weight="weight")
    with pytest.raises(NotImplementedError):  # alpha beyond the series' radius
        B.katz_centrality_numpy(convert(nx.complete_graph(5), None), alpha=0.5)
