"""Values that used to be truncated, wrapped around or silently dropped are refused in one
line: ids that are not integers or lie outside the graph, non-numeric or complex weights,
node keys beyond int64, and float targets passed off as class labels."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import graphsys
from graphsys.errors import GraphsysError, InputError


@pytest.fixture(scope="module")
def g(tmp_path_factory):
    return graphsys.from_numpy([10, 20, 30], [20, 30, 10], tmp_path_factory.mktemp("g") / "g")


@pytest.mark.parametrize("value, message", [
    (-1, "internal id -1 is outside 0..2"), (3, "internal id 3 is outside 0..2"),
    ([0, 5], "internal id 5 is outside"), (np.array([0.5]), "internal ids are integers; got 0.5"),
    (True, "internal ids are integers; got True"),
    (np.uint64(2**64 - 1), "beyond int64")])
def test_to_original_refuses(g, value, message):
    with pytest.raises(GraphsysError, match=message):
        g.to_original(value)


@pytest.mark.parametrize("value, message", [
    (30.7, "are integers; got 30.7"), ([True], "got True"), ("x", "got 'x'"),
    (float("nan"), "got nan"), (2**64, "got 18446744073709551616"),
    ([[10, 20]], "one per item; got nested values of shape")])  # was numpy's broadcast error
def test_to_internal_refuses(g, value, message):
    with pytest.raises(GraphsysError, match=message):
        g.to_internal(value)


def test_exact_integers_still_map(g):
    assert g.to_internal(30.0).tolist() == g.to_internal(30).tolist()
    assert g.to_internal(np.array([30], np.float16)).tolist() == g.to_internal(30).tolist()
    assert g.to_original(g.to_internal([10, 30])).tolist() == [10, 30]
    assert g.to_original(int(g.to_internal(20)[0])) == 20


def test_a_float_id_from_2_to_the_53_is_refused(tmp_path):
    """float(2**53 + 1) is 2**53: the id 2**53 + 1 passed as a float (a pandas column with a
    missing value) read node 2**53, another node of the graph. Floats from 2**53 on hold no
    exact integer and are refused; the ids as ints still map."""
    big = graphsys.from_numpy([2**53, 2**53 + 1], [2**53 + 1, 0], tmp_path / "g")
    with pytest.raises(GraphsysError, match=r"got 9007199254740992\.0 \(from 2\*\*53 on"):
        big.to_internal(np.array([2**53 + 1, 0], np.float64))
    assert big.to_original(big.to_internal([2**53 + 1])).tolist() == [2**53 + 1]


def test_from_networkx_refuses_bad_weights_and_big_keys(tmp_path):
    G = nx.Graph()
    G.add_edge(1, 2, weight="heavy")
    with pytest.raises(InputError, match=r"edge \(1, 2\) has weight='heavy', not a number"):
        graphsys.from_networkx(G, tmp_path / "a")
    assert graphsys.from_networkx(G, tmp_path / "b", weight=None).num_edges() == 2
    H = nx.Graph()
    H.add_edge(1, 2**64)
    with pytest.raises(InputError, match="does not fit int64"):
        graphsys.from_networkx(H, tmp_path / "c")


def test_from_scipy_refuses_complex(tmp_path):
    m = sp.csr_matrix(np.array([[0, 1 + 2j], [0, 0]]))
    with pytest.raises(InputError, match="complex values"):
        graphsys.from_scipy(m, tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_from_pyg_float_targets_are_not_labels(tmp_path):
    torch = pytest.importorskip("torch")
    data_mod = pytest.importorskip("torch_geometric.data")
    ei = torch.tensor([[0, 1], [1, 2]])
    g1 = graphsys.from_pyg(data_mod.Data(edge_index=ei, y=torch.tensor([0.5, 1.5, 2.5]),
                                         num_nodes=3), tmp_path / "a")
    assert g1.node_columns() == ["y"]
    g2 = graphsys.from_pyg(data_mod.Data(edge_index=ei, y=torch.tensor([0.0, 1.0, 2.0]),
                                         num_nodes=3), tmp_path / "b")
    assert g2.node_columns() == ["label"] and g2.node_column("label").tolist() == [0, 1, 2]
