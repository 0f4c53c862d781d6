"""A checkpoint ties rows to entities by position and records the sha256 of each partition's
ids: growing from it (``init_from``), resuming it and loading it for a graph refuse a graph
whose partitions hold other ids or another order, even when every partition is at least as
large (a re-ingest of old and new triples instead of an append)."""

from __future__ import annotations

import json

import pytest

from graphsys.cli import main
from graphsys.embed import Embeddings
from graphsys.embed.checkpoint_files import CheckpointStorage, id_digests
from graphsys.errors import GraphsysError
from graphsys.storage.graph import open_graph

from .conftest import SMALL, planted_triples


def _write(path, triples, prefix="e"):
    path.write_text("".join(f"{prefix}{h:03d}\tr{r}\t{prefix}{t:03d}\n" for h, r, t in triples))


def _ingest(src, out):
    assert main(["ingest", str(src), "--out", str(out), "--partitions", "1", "--src-col", "0",
                 "--rel-col", "1", "--dst-col", "2"]) == 0


def _train(graph, out, *extra):
    args = ["embed", "train", "--graph", str(graph), "--out", str(out), "--set",
            "num_epochs=1"] + [x for s in SMALL for x in ("--set", s)] + list(extra)
    return main(args)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("ids")
    triples = planted_triples(num_entities=80, num_triples=600)
    _write(root / "old.tsv", triples)
    _ingest(root / "old.tsv", root / "g")
    assert _train(root / "g", root / "ck") == 0
    return root, triples


def test_checkpoint_records_the_id_digests(trained):
    root, _ = trained
    meta = json.loads((root / "ck" / "checkpoint.json").read_text())
    assert meta["entity_types"]["node"]["id_digests"] == id_digests(open_graph(root / "g"),
                                                                    "node")


def test_reingested_graph_is_refused_by_init_from(trained, tmp_path, capsys):
    root, triples = trained
    # new entities whose ids sort before the old ones: every partition grows, and the old
    # entities move to other rows
    new = [(h, r, t) for h, r, t in planted_triples(num_entities=80, num_triples=40, seed=3)]
    (tmp_path / "all.tsv").write_text(
        (root / "old.tsv").read_text()
        + "".join(f"a{h:03d}\tr{r}\te{t:03d}\n" for h, r, t in new))
    _ingest(tmp_path / "all.tsv", tmp_path / "g2")
    g2 = open_graph(tmp_path / "g2")
    assert g2.partition_sizes("node")[0] > open_graph(root / "g").partition_sizes("node")[0]
    capsys.readouterr()
    rc = _train(tmp_path / "g2", tmp_path / "ck2", "--init-from", str(root / "ck"))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1, err
    assert "are not the entities the checkpoint trained" in err[0]
    assert not (tmp_path / "ck2" / "checkpoint.json").exists()


def test_same_sizes_other_order_is_refused_when_loading(trained, tmp_path):
    root, triples = trained
    # the same entities renamed: same partition sizes, other ids
    _write(tmp_path / "renamed.tsv", triples, prefix="x")
    _ingest(tmp_path / "renamed.tsv", tmp_path / "g3")
    with pytest.raises(GraphsysError, match="holds other ids"):
        Embeddings.load(root / "ck", graph=open_graph(tmp_path / "g3"))
    Embeddings.load(root / "ck", graph=open_graph(root / "g"))  # its own graph loads


def test_meta_with_a_malformed_digest_list_is_refused(trained, tmp_path):
    import shutil

    root, _ = trained
    ck = tmp_path / "ck"
    shutil.copytree(root / "ck", ck)
    meta = json.loads((ck / "checkpoint.json").read_text())
    meta["entity_types"]["node"]["id_digests"] = ["x", "y"]
    (ck / "checkpoint.json").write_text(json.dumps(meta))
    with pytest.raises(GraphsysError, match="id_digests"):
        CheckpointStorage(ck).read_meta(check_files=False)


def test_arrow_embeddings_check_the_ids_they_store(tmp_path):
    """An Arrow embedding directory (``gnn embed``) is checked by the ids its files hold:
    a graph of other ids with the same partition sizes, and the graph grown by an append
    that moved its internal ids, are refused in one line; the graph itself is served."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import graphsys
    from graphsys.storage.embedding_files import EmbeddingWriter

    g = graphsys.from_numpy([10, 20, 30, 40], [20, 30, 40, 10], tmp_path / "g", partitions=2)
    writer = EmbeddingWriter(tmp_path / "emb", g, "node")
    for p in range(2):
        ids = g.node_ids(partition=p)
        writer(p, np.stack([ids, -ids], 1).astype(np.float32))
    writer.finish({})
    emb = Embeddings.load(tmp_path / "emb")
    assert emb.vectors([40, 10]).tolist() == [[40, -40], [10, -10]]
    other = graphsys.from_numpy([11, 20, 30, 40], [20, 30, 40, 11], tmp_path / "h",
                                partitions=2)
    assert other.partition_sizes().tolist() == g.partition_sizes().tolist()
    with pytest.raises(GraphsysError, match="holds other ids"):
        Embeddings.load(tmp_path / "emb", graph=other)
    before = g.to_internal([40]).item()
    pq.write_table(pa.table({"src": [10, 50, 60], "dst": [50, 60, 70]}), tmp_path / "d2.pq")
    grown = graphsys.ingest(tmp_path / "d2.pq", tmp_path / "g", append=True, edge_set="day2")
    assert grown.to_internal([40]).item() != before          # internal ids moved
    with pytest.raises(GraphsysError, match="gained nodes by appends.*embed the grown graph"):
        Embeddings.load(tmp_path / "emb").vectors([40])
