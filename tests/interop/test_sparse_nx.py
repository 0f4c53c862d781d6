"""SciPy and NetworkX round trips, checked against the libraries themselves."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import graphsys
from graphsys.errors import GraphsysError, InputError, ParameterError


def test_scipy_round_trip_with_weights(tmp_path):
    a = sp.random(60, 60, density=0.05, random_state=0, format="csr", dtype=np.float32)
    g = graphsys.from_scipy(a, tmp_path / "g", partitions=4)
    assert g.num_nodes() == 60 and g.num_edges() == a.nnz and g.edge_set().has_weight
    b = graphsys.to_scipy(g)
    assert (abs(b - a) > 1e-6).nnz == 0


def test_scipy_unweighted_and_not_square(tmp_path):
    a = (sp.random(30, 30, density=0.1, random_state=1, format="coo") > 0).astype(np.float64)
    g = graphsys.from_scipy(a, tmp_path / "g")
    assert not g.edge_set().has_weight
    assert (graphsys.to_scipy(g) != a.tocsr()).nnz == 0
    with pytest.raises(GraphsysError, match="square"):
        graphsys.from_scipy(sp.random(3, 4, density=0.5, format="csr"), tmp_path / "h")


def test_networkx_round_trip_undirected_string_keys(tmp_path):
    G = nx.les_miserables_graph()                   # str node keys, weighted, undirected
    for i, v in enumerate(G.nodes):
        G.nodes[v]["label"] = i % 3
    g = graphsys.from_networkx(G, tmp_path / "g", partitions=2)
    assert g.num_nodes() == G.number_of_nodes()
    assert g.num_edges() == 2 * G.number_of_edges()           # both directions stored
    H = graphsys.to_networkx(g)
    assert isinstance(H, nx.Graph) and not H.is_directed()
    assert nx.utils.graphs_equal(nx.Graph(G.edges), nx.Graph(H.edges))
    for u, v, w in G.edges(data="weight"):
        assert H[u][v]["weight"] == pytest.approx(w)
    assert all(H.nodes[v]["label"] == G.nodes[v]["label"] for v in G.nodes)
    # an algorithm answer is the same on both sides
    assert nx.pagerank(H) == pytest.approx(nx.pagerank(G), abs=1e-6)


def test_networkx_directed_int_keys_and_size_guard(tmp_path):
    G = nx.gnp_random_graph(80, 0.05, seed=0, directed=True)
    G.add_node(500)                                            # isolated, non-contiguous
    g = graphsys.from_networkx(G, tmp_path / "g")
    H = graphsys.to_networkx(g)
    assert H.is_directed() and set(H.nodes) == set(G.nodes) and set(H.edges) == set(G.edges)
    with pytest.raises(GraphsysError, match="max_edges=10"):
        graphsys.to_networkx(g, max_edges=10)
    with pytest.raises(GraphsysError, match="max_edges"):
        graphsys.to_scipy(g, max_edges=1)


def test_networkx_mixed_keys_refused(tmp_path):
    G = nx.Graph([(1, "a")])
    with pytest.raises(GraphsysError, match="all int or all str"):
        graphsys.from_networkx(G, tmp_path / "g")


def test_networkx_default_attributes_are_those_a_column_holds(tmp_path):
    """By default the attributes every node has and a column can hold: ``id`` (read from
    GML, say) no longer replaces the ids, string labels, int pairs and ragged lists are
    left out; named explicitly, an attribute that cannot be held is refused."""
    G = nx.path_graph(4)
    for v in G:
        G.nodes[v].update(id=100 + v, label=f"n{v}", pos=(v, 2 * v), f=(0.5 * v, 1.0),
                          r=[1] * (v + 1), name=f"v{v}")
    g = graphsys.from_networkx(G, tmp_path / "g")
    assert sorted(g.node_columns()) == ["f", "name"]
    assert g.to_original(np.arange(4)).tolist() == [0, 1, 2, 3]
    with pytest.raises(InputError, match="node column 'id'"):
        graphsys.from_networkx(G, tmp_path / "h", node_attrs=("id",))


def test_networkx_nodes_that_are_one_id_are_named(tmp_path):
    """networkx nodes '01' and '1' are one graphsys id (integer text is canonical); the
    refusal said only "node table for 'node': duplicate ids", of a node table the caller
    never gave. It now names the id and the rule."""
    import networkx as nx
    import pytest

    import graphsys
    from graphsys.errors import InputError

    G = nx.DiGraph()
    G.add_edge("01", "1")
    with pytest.raises(InputError, match=r"duplicate ids \(id 1 more than once; integer text "
                                         r"is one id: '01' and '1' are the same node\)$"):
        graphsys.from_networkx(G, tmp_path / "g")


@pytest.mark.parametrize("bad", ["x", -1, 1.5, True])
def test_a_bad_max_edges_is_refused_in_one_line(tmp_path, bad):
    """to_networkx(g, max_edges="x") raised a raw TypeError, and max_edges=-1 refused a
    2-edge graph for having 'more than max_edges=-1' edges; both exports (homogeneous and
    typed) now read max_edges through one check."""
    from graphsys.errors import ParameterError

    g = graphsys.from_numpy([0, 1], [1, 0], tmp_path / "g")
    for export in (graphsys.to_networkx, graphsys.to_scipy, graphsys.to_pyg,
                   lambda g, **kw: graphsys.to_pyg(g, hetero=True, **kw)):
        with pytest.raises(ParameterError, match="max_edges must be a non-negative integer"):
            export(g, max_edges=bad)
    assert graphsys.to_scipy(g, max_edges=2).nnz == 2


def test_conversion_flags_refuse_what_is_no_bool(tmp_path):
    """``hetero="no"`` gave a HeteroData of one type, ``node_columns="no"`` kept the
    columns, ``weighted="no"`` kept the weights: each flag is now checked in one line."""
    g = graphsys.from_numpy([0, 1], [1, 2], tmp_path / "g", weight=[2.0, 3.0])
    m = graphsys.to_scipy(g)
    with pytest.raises(ParameterError, match="^weighted must be True or False"):
        graphsys.from_scipy(m, tmp_path / "s", weighted="no")
    assert not graphsys.from_scipy(m, tmp_path / "s", weighted=np.False_).edge_set().has_weight
    with pytest.raises(ParameterError, match="^node_columns must be True or False"):
        graphsys.to_networkx(g, node_columns="no")
    pytest.importorskip("torch_geometric")
    with pytest.raises(ParameterError, match="^hetero must be True or False"):
        graphsys.to_pyg(g, hetero="no")
    assert type(graphsys.to_pyg(g, hetero=np.False_)).__name__ == "Data"
