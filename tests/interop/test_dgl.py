"""DGL round trip where a working DGL imports (its wheels need torch <= 2.2: see the
``dgl`` extra); elsewhere the one-line refusal is what is tested."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import graphsys
from graphsys.errors import GraphsysError
from graphsys.interop.dgl import import_dgl


def _dgl_or_reason():
    try:
        return import_dgl(), None
    except GraphsysError as exc:
        return None, str(exc)


DGL, WHY = _dgl_or_reason()


def test_to_dgl_without_dgl_is_one_line(tmp_path, monkeypatch):
    g = graphsys.from_numpy([0, 1], [1, 2], tmp_path / "g", num_nodes=3)
    monkeypatch.setitem(sys.modules, "dgl", None)            # import dgl -> ImportError
    with pytest.raises(GraphsysError, match="needs a working dgl") as info:
        graphsys.to_dgl(g)
    assert "\n" not in str(info.value)


@pytest.mark.skipif(DGL is None, reason=f"dgl does not import here: {WHY}")
def test_dgl_round_trip(tmp_path):
    dg = DGL.graph((torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 3])), num_nodes=5)
    dg.ndata["feat"] = torch.randn(5, 3)
    dg.ndata["label"] = torch.tensor([0, 1, 0, 1, 1])
    dg.edata["weight"] = torch.rand(4)
    g = graphsys.from_dgl(dg, tmp_path / "g", partitions=2)
    back = graphsys.to_dgl(g)
    assert back.num_nodes() == 5 and back.num_edges() == 4
    assert torch.equal(back.ndata["feat"], dg.ndata["feat"])
    s, d = back.edges()
    got = sorted(zip(s.tolist(), d.tolist(), np.round(back.edata["weight"].numpy(), 5)))
    s0, d0 = dg.edges()
    assert got == sorted(zip(s0.tolist(), d0.tolist(), np.round(dg.edata["weight"].numpy(), 5)))


def _typed_graph(path):
    """A user -> item graph with a user -> user relation, built without DGL."""
    import pyarrow as pa

    from graphsys.storage.format import RelationType
    from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources

    edges = pa.table({"src": [0, 1, 1, 0], "dst": [2, 0, 1, 1],
                      "rel": ["rates", "rates", "rates", "follows"],
                      "weight": [5.0, 3.0, 4.0, 1.0]})
    ingest_sources([EdgeSource(table=edges, rel_col="rel", weight_col="weight")], path,
                   IngestOptions(relation_types=[RelationType("rates", "user", "item"),
                                                 RelationType("follows", "user", "user")]),
                   nodes=[NodeSource(pa.table({"id": [0, 1]}), "user"),
                          NodeSource(pa.table({"id": [0, 1, 2]}), "item")])
    return graphsys.open_graph(path)


def test_to_dgl_hetero_without_dgl_is_one_line(tmp_path, monkeypatch):
    g = _typed_graph(tmp_path / "g")
    monkeypatch.setitem(sys.modules, "dgl", None)
    with pytest.raises(GraphsysError, match="needs a working dgl") as info:
        graphsys.to_dgl(g)
    assert "\n" not in str(info.value)


def _hetero(seed=0):
    g = torch.Generator().manual_seed(seed)
    hg = DGL.heterograph({
        ("user", "rates", "item"): (torch.tensor([0, 1, 1, 2, 3]), torch.tensor([4, 0, 1, 1, 2])),
        ("item", "rated_by", "user"): (torch.tensor([4, 0, 1]), torch.tensor([0, 1, 1])),
        ("user", "follows", "user"): (torch.tensor([0, 2]), torch.tensor([3, 3])),
    }, num_nodes_dict={"user": 6, "item": 5})              # users 4 and 5 have no edges
    hg.nodes["user"].data["train_mask"] = torch.tensor([True, False, True, False, False, True])
    hg.nodes["item"].data["feat"] = torch.randn(5, 3, generator=g)
    hg.nodes["item"].data["label"] = torch.tensor([0, 1, 2, 1, 0])
    hg.nodes["item"].data["pairs"] = torch.zeros(5, 2, dtype=torch.int64)  # listed as dropped
    for cet in hg.canonical_etypes:
        hg.edges[cet].data["weight"] = torch.rand(hg.num_edges(cet), generator=g)
    return hg


def _canon(hg, cet):
    s, d = hg.edges(etype=cet)
    w = hg.edges[cet].data["weight"].tolist()
    return sorted(zip(s.tolist(), d.tolist(), np.round(w, 5).tolist(), strict=True))


@pytest.mark.skipif(DGL is None, reason=f"dgl does not import here: {WHY}")
@pytest.mark.parametrize("partitions", [1, 3])
def test_dgl_hetero_round_trip(tmp_path, partitions):
    hg = _hetero()
    g = graphsys.from_dgl(hg, tmp_path / "g", partitions=partitions)
    assert sorted(g.entity_types) == ["item", "user"]
    assert [(r.lhs, r.name, r.rhs) for r in g.relation_types] == list(hg.canonical_etypes)
    assert g.num_nodes("user") == 6 and g.num_nodes("item") == 5
    assert g.manifest.metadata["dropped"] == ["item.pairs"]
    back = graphsys.to_dgl(g)
    assert sorted(back.canonical_etypes) == sorted(hg.canonical_etypes)
    assert back.num_nodes("user") == 6 and back.num_nodes("item") == 5
    for cet in hg.canonical_etypes:
        assert _canon(back, cet) == _canon(hg, cet)
    assert torch.equal(back.nodes["user"].data["train_mask"], hg.nodes["user"].data["train_mask"])
    assert torch.equal(back.nodes["item"].data["feat"], hg.nodes["item"].data["feat"])
    assert torch.equal(back.nodes["item"].data["label"], hg.nodes["item"].data["label"])
    assert back.nodes["item"].data["n_id"].tolist() == list(range(5))


@pytest.mark.skipif(DGL is None, reason=f"dgl does not import here: {WHY}")
def test_dgl_hetero_matches_pyg_hetero(tmp_path):
    """The same stored typed graph read out by to_dgl and by to_pyg (when PyG imports)."""
    pytest.importorskip("torch_geometric.data")
    g = _typed_graph(tmp_path / "g")
    hg, hd = graphsys.to_dgl(g), graphsys.to_pyg(g)
    for lhs, name, rhs in hg.canonical_etypes:
        s, d = hg.edges(etype=(lhs, name, rhs))
        assert torch.equal(torch.stack([s, d]), hd[lhs, name, rhs].edge_index)
        assert torch.equal(hg.edges[(lhs, name, rhs)].data["weight"],
                           hd[lhs, name, rhs].edge_weight)


@pytest.mark.skipif(DGL is None, reason=f"dgl does not import here: {WHY}")
def test_dgl_kg_one_node_type_and_partial_weights(tmp_path):
    hg = DGL.heterograph({("e", "r0", "e"): ([0, 1], [1, 2]), ("e", "r1", "e"): ([3], [0])},
                         num_nodes_dict={"e": 4})
    hg.edges["r0"].data["weight"] = torch.tensor([1.0, 2.0])  # r1 has none: weight 1.0
    g = graphsys.from_dgl(hg, tmp_path / "kg")
    assert g.entity_types == ["e"] and len(g.relation_types) == 2
    assert g.edge_set().has_weight and g.manifest.metadata["dropped"] == []
    assert g.manifest.metadata["filled"] == ["('e', 'r1', 'e').weight=1.0"]
    plain = graphsys.to_dgl(g)                    # one type: a homogeneous graph unless asked
    assert plain.canonical_etypes == [("_N", "_E", "_N")] and plain.num_edges() == 3
    back = graphsys.to_dgl(g, hetero=True)
    assert [t.tolist() for t in back.edges(etype="r0")] == [[0, 1], [1, 2]]
    assert [t.tolist() for t in back.edges(etype="r1")] == [[3], [0]]


@pytest.mark.skipif(DGL is None, reason=f"dgl does not import here: {WHY}")
def test_dgl_refusals_are_one_line(tmp_path):
    hg = DGL.heterograph({("a", "to", "b"): ([0], [1]), ("b", "to", "a"): ([0], [1])})
    with pytest.raises(GraphsysError, match="relation name 'to' is used by edge types"):
        graphsys.from_dgl(hg, tmp_path / "bad")
    block = DGL.to_block(DGL.graph(([0, 1], [1, 2])), torch.tensor([1, 2]))
    with pytest.raises(GraphsysError, match="not a message-flow block") as info:
        graphsys.from_dgl(block, tmp_path / "block")
    assert "\n" not in str(info.value)
    g = graphsys.from_dgl(_hetero(), tmp_path / "g")
    with pytest.raises(GraphsysError, match="one entity type"):
        graphsys.to_dgl(g, hetero=False)
    with pytest.raises(GraphsysError, match="more than max_edges=3"):
        graphsys.to_dgl(g, max_edges=3)
