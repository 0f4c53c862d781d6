"""Degree statistics, density, reciprocity and assortativity against NetworkX (random
graphs) and igraph / scipy (real graphs)."""

from __future__ import annotations

import warnings

import networkx as nx
import numpy as np
import pytest

from graphsys.errors import ParameterError
from graphsys.measures import degree_assortativity, degree_stats, density, reciprocity
from tests.measures.conftest import small_graph


@pytest.mark.parametrize("directed", [False, True])
def test_small_graphs_match_networkx(tmp_path, directed):
    for seed in range(6):
        t = small_graph(tmp_path, seed, directed)
        g, G = t.graph, t.G
        views = {"both": G.degree, "out": getattr(G, "out_degree", G.degree),
                 "in": getattr(G, "in_degree", G.degree)}
        for direction, view in views.items():
            s = degree_stats(g, direction)
            deg = np.array([d for _, d in view])
            assert (s.min, s.max, s.isolated) == (deg.min(), deg.max(), int((deg == 0).sum()))
            assert s.mean == pytest.approx(deg.mean()) and s.std == pytest.approx(deg.std())
            assert s.median == np.median(deg)
            assert s.histogram.tolist() == np.bincount(deg).tolist()
        assert degree_stats(g).histogram.tolist() == nx.degree_histogram(G)
        assert s.num_edges == G.number_of_edges()
        assert s.self_loops == nx.number_of_selfloops(G)
        assert density(g) == pytest.approx(nx.density(G))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NaN where the degrees do not vary
            pairs = [("out", "in"), ("in", "out"), ("out", "out"), ("in", "in")]
            for x, y in pairs if directed else pairs[:1]:
                ref = nx.degree_assortativity_coefficient(G, x=x, y=y)
                got = degree_assortativity(g, x, y)
                assert got == pytest.approx(ref, nan_ok=True, abs=1e-12)
        if directed and G.number_of_edges():
            assert reciprocity(g) == pytest.approx(nx.overall_reciprocity(G))
            nodes = [v for v in G if G.degree(v)]
            ref = nx.reciprocity(G, nodes)
            np.testing.assert_allclose(reciprocity(g, nodes), [ref[v] for v in nodes])


def test_distribution_and_json(tmp_path):
    import graphsys

    g = graphsys.from_numpy([0, 0, 0, 1, 4], [1, 2, 3, 2, 4], tmp_path / "g", num_nodes=6,
                            undirected=True)
    s = degree_stats(g)
    d, c = s.distribution()
    assert d.tolist() == [0, 1, 2, 3] and c.tolist() == [1, 1, 3, 1]
    j = s.to_dict()
    assert j["distribution"] == [[0, 1], [1, 1], [2, 3], [3, 1]] and j["self_loops"] == 1
    assert j["edges"] == 5 and reciprocity(g) == 1.0
    with pytest.raises(ParameterError, match="direction must be"):
        degree_stats(g, "up")


def test_real_graphs_match_igraph(real):
    ig = pytest.importorskip("igraph")
    r = real["soc-slashdot0902"]
    coo = r.adj.tocoo()
    G = ig.Graph(n=r.adj.shape[0], edges=np.column_stack([coo.row, coo.col]),
                 directed=True)
    assert degree_assortativity(r.graph) == pytest.approx(
        G.assortativity_degree(directed=True), abs=1e-10)
    loops = int(r.adj.diagonal().sum())
    m = r.adj.nnz
    # NetworkX counts self-loops as unreciprocated edges; igraph can leave them out
    assert reciprocity(r.graph) == pytest.approx(
        G.reciprocity(ignore_loops=True) * (m - loops) / m)
    s = degree_stats(r.graph, "out")
    assert s.histogram.tolist() == np.bincount(G.outdegree()).tolist()
    assert density(r.graph) == pytest.approx(m / (G.vcount() * (G.vcount() - 1)))
    e = real["email-enron"]
    coo = e.sym.tocoo()
    keep = coo.row < coo.col
    H = ig.Graph(n=e.sym.shape[0], edges=np.column_stack([coo.row[keep], coo.col[keep]]))
    assert degree_stats(e.graph).histogram.tolist() == np.bincount(H.degree()).tolist()
    assert degree_assortativity(e.graph) == pytest.approx(H.assortativity_degree(), abs=1e-10)
    assert density(e.graph) == pytest.approx(H.density())


def test_reciprocity_of_a_directed_edge_set_with_a_stored_sym_index(tmp_path):
    """A directed edge set's undirected (sym) index has every edge both ways: reciprocity
    read from it said 1.0 (``graphsys info --degrees`` after ``graphsys index
    --undirected``); it reads the directed rows."""
    import graphsys
    from graphsys.storage.adjacency_index import build_index

    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 25, 80), rng.integers(0, 25, 80)
    G = nx.DiGraph(list(zip(src.tolist(), dst.tolist())))
    g = graphsys.from_numpy(src, dst, tmp_path / "g")
    build_index(g, ("sym",))
    g = graphsys.open_graph(tmp_path / "g")
    assert g.adjacency_index(None, "sym") is not None
    assert reciprocity(g) == pytest.approx(nx.overall_reciprocity(G))
    nodes = sorted(G)
    want = nx.reciprocity(G, nodes)
    assert reciprocity(g, nodes).tolist() == pytest.approx([want[v] for v in nodes])
