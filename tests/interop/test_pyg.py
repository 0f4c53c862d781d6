"""PyG round trips, PyG convs on graphsys blocks, and graphsys's GAT/GIN against PyG's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphsys
from graphsys.errors import GraphsysError
from graphsys.gnn.conv import GATConv, GINConv, SAGEConv
from graphsys.sampling import Block, NeighborSampler
from graphsys.sampling.adjacency import homogeneous_adjacency

pyg = pytest.importorskip("torch_geometric")
from torch_geometric import nn as pygnn  # noqa: E402
from torch_geometric.data import Data  # noqa: E402


def _data(n=70, e=400, seed=0):
    g = torch.Generator().manual_seed(seed)
    return Data(x=torch.randn(n, 6, generator=g), y=torch.randint(0, 3, (n,), generator=g),
                edge_index=torch.randint(0, n - 5, (2, e), generator=g),
                train_mask=torch.rand(n, generator=g) > 0.5, num_nodes=n)


def _multiset(ei, w=None):
    cols = [ei[0].tolist(), ei[1].tolist()] + ([np.round(w.numpy(), 5).tolist()] if w is not None
                                               else [])
    return sorted(zip(*cols))


@pytest.mark.parametrize("partitions", [1, 3])
def test_pyg_round_trip(tmp_path, partitions):
    data = _data()
    data.edge_weight = torch.rand(data.num_edges)
    data.graph_name = "toy"                                  # not node-level: dropped
    g = graphsys.from_pyg(data, tmp_path / "g", partitions=partitions)
    assert g.manifest.metadata["dropped"] == ["graph_name"]
    back = graphsys.to_pyg(g)
    assert back.num_nodes == data.num_nodes                   # 5 isolated nodes kept
    assert _multiset(back.edge_index, back.edge_weight) == _multiset(data.edge_index,
                                                                    data.edge_weight)
    for key in ("x", "y", "train_mask"):
        assert torch.equal(back[key], data[key]), key
    assert torch.equal(back.n_id, torch.arange(data.num_nodes))


def test_string_node_attribute_round_trips_as_a_list(tmp_path):
    data = _data(n=8, e=10)
    data.title = [f"node {i}" for i in range(8)]
    g = graphsys.from_pyg(data, tmp_path / "g")
    assert g.node_column("title").tolist() == data.title
    back = graphsys.to_pyg(g)
    assert back.title == data.title and back.is_node_attr("title")


@pytest.mark.parametrize("bad", [-1, 70])
def test_out_of_range_edge_ids_are_refused(tmp_path, bad):
    data = _data()
    data.edge_index[1, 3] = bad
    with pytest.raises(GraphsysError, match=r"^dst ids span .* outside 0\.\.69"):
        graphsys.from_pyg(data, tmp_path / "bad")


def test_to_pyg_size_guard_and_hetero_refusal(tmp_path):
    g = graphsys.from_pyg(_data(), tmp_path / "g")
    with pytest.raises(GraphsysError, match=r"more than max_edges=100 .*pass a larger"):
        graphsys.to_pyg(g, max_edges=100)
    assert graphsys.to_pyg(g, max_edges=None).num_edges == 400


def _block(n=30, seed=0):
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < 0.2, 1)
    dst, src = np.nonzero(a | a.T)
    return Block(torch.arange(n), n, torch.from_numpy(src), torch.from_numpy(dst))


def test_block_edge_index_runs_pyg_sageconv_like_graphsys_sage(tmp_path):
    g = graphsys.from_pyg(_data(n=200, e=1500), tmp_path / "g", partitions=2)
    adj = homogeneous_adjacency(g, symmetric=True)
    blocks = NeighborSampler(adj, [5, 3]).sample_blocks(np.arange(10), 0, parallel=False)
    torch.manual_seed(0)
    ours = SAGEConv(6, 4)
    theirs = pygnn.SAGEConv(6, 4, aggr="mean")
    with torch.no_grad():
        theirs.lin_l.weight.copy_(ours.lin_neigh.weight)
        theirs.lin_l.bias.copy_(ours.lin_self.bias)
        theirs.lin_r.weight.copy_(ours.lin_self.weight)
    b = blocks[0]
    x = torch.randn(b.num_src_nodes, 6)
    want = ours(x, b)
    got = theirs((x, x[:b.num_dst_nodes]), b.edge_index)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    d = b.to_pyg()
    assert torch.equal(d.edge_index, b.edge_index) and torch.equal(d.n_id, b.src_nodes)
    assert d.num_nodes == b.num_src_nodes and d.num_dst_nodes == b.num_dst_nodes


@pytest.mark.parametrize("concat", [True, False])
def test_gat_matches_pyg_gatconv(concat):
    torch.manual_seed(0)
    b = _block()
    ours = GATConv(5, 3, heads=4, concat=concat).double()
    theirs = pygnn.GATConv(5, 3, heads=4, concat=concat).double()
    with torch.no_grad():
        theirs.lin.weight.copy_(ours.lin.weight)
        theirs.att_src.copy_(ours.att_src)
        theirs.att_dst.copy_(ours.att_dst)
        theirs.bias.copy_(torch.randn_like(theirs.bias))
        ours.bias.copy_(theirs.bias)
    x = torch.randn(b.num_src_nodes, 5, dtype=torch.float64)
    torch.testing.assert_close(ours(x, b), theirs(x, b.edge_index))


def test_gin_matches_pyg_ginconv():
    torch.manual_seed(0)
    b = _block(seed=1)
    ours = GINConv(5, 7, eps=0.3).double()
    theirs = pygnn.GINConv(ours.mlp, eps=0.3).double()
    x = torch.randn(b.num_src_nodes, 5, dtype=torch.float64)
    torch.testing.assert_close(ours(x, b), theirs(x, b.edge_index))


def test_edge_weight_is_the_weight_beside_a_1d_edge_attr(tmp_path):
    """A Data holding both a 1-D ``edge_attr`` and ``edge_weight`` stored the edge_attr as
    the weight (5, 6 where edge_weight says 1, 2) and dropped edge_weight, because
    edge_attr came first in ``Data.keys()``; PyG's convolutions read ``edge_weight`` as
    the weight, and from_pyg of a HeteroData already preferred it. One rule now serves
    both."""
    import torch
    from torch_geometric.data import Data

    import graphsys

    # (Data.keys() is built from a set, so its order follows the hash seed: the rule is
    # checked whatever it is, rather than asserting edge_attr comes first)
    data = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), edge_attr=torch.tensor([5.0, 6.0]),
                edge_weight=torch.tensor([1.0, 2.0]))
    g = graphsys.from_pyg(data, tmp_path / "g")
    assert graphsys.to_pyg(g).edge_weight.tolist() == [1.0, 2.0]
    assert g.manifest.metadata["dropped"] == ["edge_attr"]
