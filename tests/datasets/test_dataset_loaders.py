"""Parsing of fetched files into ingest inputs (no ingest run here)."""

from __future__ import annotations

import dataclasses
import gzip

import numpy as np
import pytest

from graphsys.datasets.loaders import plan_ingest, read_linqs_content, read_movielens_items
from graphsys.datasets.splits import per_class_split
from graphsys.errors import InputError


def test_cora_content(fetched):
    result = fetched("cora")
    g = result.dataset.graph
    content = read_linqs_content(result.path("content"), result.dataset.file("content"),
                                 feature_dim=g["feature_dim"], id_type=g["id_type"])
    assert content.features.shape == (2708, 1433) and content.features.dtype == np.float32
    assert set(np.unique(content.features)) == {0.0, 1.0}
    assert content.classes == g["classes"]
    assert np.bincount(content.labels).tolist() == [298, 418, 818, 426, 217, 180, 351]
    assert str(content.ids.type) == "int64" and content.ids[0].as_py() == 31336


def test_citeseer_ids_are_strings(fetched):
    result = fetched("citeseer")
    g = result.dataset.graph
    content = read_linqs_content(result.path("content"), result.dataset.file("content"),
                                 feature_dim=g["feature_dim"], id_type=g["id_type"])
    assert str(content.ids.type) == "string" and "zhang01dyda" in content.ids.to_pylist()
    assert content.classes == ["AI", "Agents", "DB", "HCI", "IR", "ML"]
    assert content.features.shape == (3312, 3703)


def test_linqs_plan(fetched):
    plan = plan_ingest(fetched("cora"), "random")
    (source,) = plan.edges
    assert (source.src_col, source.dst_col) == (1, 0)  # citing -> cited
    assert (source.delimiter, source.header, source.comment) == ("\t", False, "")
    table = plan.nodes[0].table
    assert table.schema.field("feat").type.list_size == 1433
    assert str(table.schema.field("feat").type.value_type) == "float"
    masks = [table.column(m).to_numpy(zero_copy_only=False)
             for m in ("train_mask", "val_mask", "test_mask")]
    assert [int(m.sum()) for m in masks] == [140, 500, 1000]
    assert not (masks[0] & masks[1]).any() and not (masks[1] & masks[2]).any()
    assert plan.metadata["labels"]["label"][0] == "Case_Based"
    assert not plan.undirected and plan.relation_types is None


def test_per_class_split_is_seeded():
    labels = np.repeat(np.arange(3), 400)
    a = per_class_split(labels, 3, seed=0, train_per_class=20, val=100, test=200)
    b = per_class_split(labels, 3, seed=0, train_per_class=20, val=100, test=200)
    c = per_class_split(labels, 3, seed=1, train_per_class=20, val=100, test=200)
    assert all((x == y).all() for x, y in zip(a, b))
    assert not (a[0] == c[0]).all()
    assert np.bincount(labels[a[0]]).tolist() == [20, 20, 20]
    assert [int(m.sum()) for m in a] == [60, 100, 200]
    assert int((a[0].astype(int) + a[1] + a[2]).max()) == 1


def test_per_class_split_ignores_unlabelled_and_checks_sizes():
    labels = np.array([0, 0, 1, 1, -1, -1])
    train, val, test = per_class_split(labels, 2, seed=0, train_per_class=1, val=1, test=1)
    assert not (train | val | test)[4:].any()
    with pytest.raises(InputError, match="class 0 has 2 nodes, fewer than train_per_class = 3"):
        per_class_split(labels, 2, seed=0, train_per_class=3, val=0, test=0)
    with pytest.raises(InputError, match="only 2 labelled nodes remain"):
        per_class_split(labels, 2, seed=0, train_per_class=1, val=2, test=1)


def test_bad_content_line_names_file(fetched, tmp_path):
    result = fetched("cora")
    bad = tmp_path / "cora.content"
    lines = gzip.decompress(result.path("content").read_bytes()).splitlines(keepends=True)
    bad.write_bytes(b"".join(lines[:5]) + b"123\t0\t1\tTheory\n")
    with pytest.raises(InputError, match=rf"^{bad}: cannot parse as 1435 "):
        read_linqs_content(bad, result.dataset.file("content"), feature_dim=1433,
                           id_type="int64")


def test_class_names_must_match_registry(fetched):
    result = fetched("cora")
    graph = dict(result.dataset.graph, classes=["A", "B"])
    bad = dataclasses.replace(result, dataset=dataclasses.replace(result.dataset, graph=graph))
    with pytest.raises(InputError, match=r"class names \['Case_Based'.* differ from graph"):
        plan_ingest(bad, "random")


def test_movielens_items_latin1(fetched):
    result = fetched("movielens-100k")
    items = read_movielens_items(result.path("items"), result.dataset.file("items"), 19)
    assert items.num_rows == 1682 and items.column("id").to_pylist()[:2] == [1, 2]
    feat = items.column("feat").combine_chunks()
    assert feat.type.list_size == 19
    flags = feat.flatten().to_numpy().reshape(-1, 19)
    assert flags[0].tolist() == [0, 0, 0, 1, 1, 1] + [0] * 13  # Toy Story
    plan = plan_ingest(result)
    (source,) = plan.edges
    assert (source.src_col, source.dst_col, source.weight_col, source.relation) == (
        0, 1, 2, "rated")
    assert [(r.name, r.lhs, r.rhs) for r in plan.relation_types] == [("rated", "user", "item")]
    assert [n.entity_type for n in plan.nodes] == ["user", "item"]
    assert plan.metadata["features"]["item.feat"][3] == "Animation"


def test_edge_list_plans(fetched):
    grqc = plan_ingest(fetched("ca-grqc"))
    assert (grqc.undirected, grqc.dedupe, grqc.nodes) == (True, True, [])
    assert grqc.edges[0].comment == "#" and grqc.edges[0].delimiter == "\t"
    lux = plan_ingest(fetched("luxembourg-osm"))
    assert (lux.undirected, lux.dedupe) == (True, False)
    ids = lux.nodes[0].table.column("id").to_numpy()
    assert (ids[0], ids[-1], len(ids)) == (1, 114599, 114599)
    eu = plan_ingest(fetched("email-eu-core"))
    assert (eu.undirected, eu.edges[0].delimiter) == (False, " ")
    labels = eu.nodes[0].table.column("label").to_numpy()
    assert len(labels) == 1005 and len(np.unique(labels)) == 42
