"""Typed graphs round-trip through PyG's HeteroData."""

from __future__ import annotations

import re

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


def test_partial_edge_weights_are_filled_and_recorded(tmp_path):
    """Only some edge types carry a weight: the others get 1.0 (what PyG's convs read for
    a missing edge_weight), listed in ``filled``; an unused edge_attr is listed in
    ``dropped``."""
    hd = hetero_data()
    del hd["user", "follows", "user"].edge_weight
    hd["user", "rates", "item"].edge_attr = torch.rand(5, 4)  # 2-D: not a weight
    g = graphsys.from_pyg(hd, tmp_path / "g")
    assert g.edge_set().has_weight
    meta = g.manifest.metadata
    assert meta["filled"] == ["('user', 'follows', 'user').weight=1.0"]
    assert meta["dropped"] == ["('user', 'rates', 'item').edge_attr"]
    back = graphsys.to_pyg(g)
    for et in [("user", "rates", "item"), ("item", "rated_by", "user")]:
        assert canon(back[et]) == canon(hd[et])
    assert back["user", "follows", "user"].edge_weight.tolist() == [1.0, 1.0]


def test_one_dimensional_edge_attr_is_the_weight(tmp_path):
    hd = hetero_data()
    for et in hd.edge_types:
        hd[et].edge_attr = hd[et].edge_weight * 2
        del hd[et].edge_weight
    g = graphsys.from_pyg(hd, tmp_path / "g")
    back = graphsys.to_pyg(g)
    want = sorted(w * 2 for w in [5.0, 3.0, 4.0, 1.0, 2.0])
    assert sorted(back["user", "rates", "item"].edge_weight.tolist()) == want
    assert g.manifest.metadata["dropped"] == [] and "filled" not in g.manifest.metadata


@pytest.mark.parametrize("et,row,ids,match", [
    (("user", "rates", "item"), 1, [4, 0, 1, 1, 5], r"destination ids 0\.\.5, outside "
                                                    r"0\.\.4 \('item' has 5 nodes\)"),
    (("user", "rates", "item"), 0, [0, -1, 1, 2, 3], r"source ids -1\.\.3, outside 0\.\.5"),
    (("user", "follows", "user"), 0, [0, 6], r"source ids 0\.\.6, outside 0\.\.5"),
])
def test_out_of_range_edge_ids_are_refused(tmp_path, et, row, ids, match):
    hd = hetero_data()
    hd[et].edge_index[row] = torch.tensor(ids)
    with pytest.raises(GraphsysError, match=rf"^from_pyg: edge type {re.escape(str(et))} "
                                            rf"has {match}"):
        graphsys.from_pyg(hd, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_string_node_columns_round_trip(tmp_path):
    hd = hetero_data()
    hd["item"].title = ["a", "b", "c", "d", "é"]
    g = graphsys.from_pyg(hd, tmp_path / "g")
    assert g.node_column("title", "item").tolist() == ["a", "b", "c", "d", "é"]
    back = graphsys.to_pyg(g)
    assert back["item"].title == ["a", "b", "c", "d", "é"]


def test_movielens_exports_its_titles(mirror, tmp_path):
    """MovieLens-100k (users and movies, a string ``title`` column) exports as HeteroData,
    the titles as a Python list aligned with the movies' n_id."""
    from graphsys.gnn.data import open_source

    g = open_source("movielens-100k", mirror=mirror, cache=tmp_path / "cache")
    data = graphsys.to_pyg(g)
    item = next(t for t in g.entity_types if "title" in g.node_columns(t))
    titles = data[item].title
    assert isinstance(titles, list) and len(titles) == data[item].num_nodes == 1682
    ids = g.node_ids(item)
    want = dict(zip(ids.tolist(), g.node_column("title", item).tolist()))
    assert titles == [want[i] for i in data[item].n_id.tolist()]
    assert titles[0] == "Toy Story (1995)"
