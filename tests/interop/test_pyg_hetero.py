"""Typed graphs round-trip through PyG's HeteroData."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphsys
from graphsys.errors import GraphsysError

pyg_data = pytest.importorskip("torch_geometric.data")


def hetero_data(seed=0):
    g = torch.Generator().manual_seed(seed)
    hd = pyg_data.HeteroData()
    hd["user"].num_nodes = 6                       # users 4 and 5 have no edges
    hd["user"].train_mask = torch.tensor([True, False, True, False, False, True])
    hd["item"].x = torch.randn(5, 3, generator=g)
    hd["item"].y = torch.tensor([0, 1, 2, 1, 0])
    hd["user", "rates", "item"].edge_index = torch.tensor([[0, 1, 1, 2, 3], [4, 0, 1, 1, 2]])
    hd["user", "rates", "item"].edge_weight = torch.tensor([5.0, 3.0, 4.0, 1.0, 2.0])
    hd["item", "rated_by", "user"].edge_index = torch.tensor([[4, 0, 1], [0, 1, 1]])
    hd["item", "rated_by", "user"].edge_weight = torch.tensor([5.0, 3.0, 4.0])
    hd["user", "follows", "user"].edge_index = torch.tensor([[0, 2], [3, 3]])
    hd["user", "follows", "user"].edge_weight = torch.tensor([1.0, 1.0])
    return hd


def canon(store):
    ei = store.edge_index
    w = store.get("edge_weight")
    rows = list(zip(ei[0].tolist(), ei[1].tolist(),
                    w.tolist() if w is not None else [None] * ei.shape[1], strict=True))
    return sorted(rows)


@pytest.mark.parametrize("partitions", [1, 3])
def test_hetero_roundtrip(tmp_path, partitions):
    hd = hetero_data()
    g = graphsys.from_pyg(hd, tmp_path / "g", partitions=partitions)
    assert sorted(g.entity_types) == ["item", "user"]
    assert [(r.lhs, r.name, r.rhs) for r in g.relation_types] == list(hd.edge_types)
    assert g.num_nodes("user") == 6 and g.num_nodes("item") == 5
    back = graphsys.to_pyg(g)
    assert isinstance(back, pyg_data.HeteroData)
    assert sorted(back.edge_types) == sorted(hd.edge_types)
    for et in hd.edge_types:
        assert canon(back[et]) == canon(hd[et])
    assert back["user"].num_nodes == 6
    assert torch.equal(back["user"].train_mask, hd["user"].train_mask)
    torch.testing.assert_close(back["item"].x, hd["item"].x)
    assert torch.equal(back["item"].y, hd["item"].y)
    assert back["item"].n_id.tolist() == list(range(5))


def test_kg_as_hetero_one_node_type(tmp_path):
    hd = pyg_data.HeteroData()
    hd["e"].num_nodes = 4
    hd["e", "r0", "e"].edge_index = torch.tensor([[0, 1], [1, 2]])
    hd["e", "r1", "e"].edge_index = torch.tensor([[3], [0]])
    g = graphsys.from_pyg(hd, tmp_path / "kg")
    assert g.entity_types == ["e"] and len(g.relation_types) == 2
    plain = graphsys.to_pyg(g)                    # one type: a Data unless asked
    assert not isinstance(plain, pyg_data.HeteroData) and plain.edge_index.shape == (2, 3)
    back = graphsys.to_pyg(g, hetero=True)
    assert back["e", "r0", "e"].edge_index.tolist() == [[0, 1], [1, 2]]
    assert back["e", "r1", "e"].edge_index.tolist() == [[3], [0]]
    # the stored typed graph is what the hetero sampler reads
    from graphsys.sampling import HeteroNeighborSampler

    s = HeteroNeighborSampler(g, [-1], reverse=False)
    (b,) = s.sample_blocks([1])
    assert b.src_nodes[b.edge_src].tolist() == [0] and b.edge_type.tolist() == [0]


def test_repeated_relation_name_is_refused(tmp_path):
    hd = pyg_data.HeteroData()
    hd["a"].num_nodes = 2
    hd["b"].num_nodes = 2
    hd["a", "to", "b"].edge_index = torch.tensor([[0], [1]])
    hd["b", "to", "a"].edge_index = torch.tensor([[0], [1]])
    with pytest.raises(GraphsysError, match="relation name 'to' is used by edge types"):
        graphsys.from_pyg(hd, tmp_path / "bad")


def test_two_types_without_hetero_still_refused(tmp_path):
    g = graphsys.from_pyg(hetero_data(), tmp_path / "g")
    with pytest.raises(GraphsysError, match="one entity type"):
        graphsys.to_pyg(g, hetero=False)
    assert np.asarray(g.num_edges()) > 0
