"""A checkpoint serves the graph grown by an append since training: old entities keep their
trained rows (by original id), new ones get the rows ``init_from`` starts them from (their
old neighbours' mean, else the seeded random draw); a re-ingested graph whose entities moved
is refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphsys.cli import main
from graphsys.embed import Embeddings, load_config, train
from graphsys.embed.checkpoint import CheckpointStorage, load_npy
from graphsys.embed.trainer import Trainer
from graphsys.errors import GraphsysError
from graphsys.storage.append import append_edges
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

from .conftest import SMALL, planted_triples

HELD = set(range(100, 120))


def _source(path, edge_set):
    return EdgeSource([path], edge_set=edge_set, src_col=0, rel_col=1, dst_col=2)


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """(root, grown graph, checkpoint trained before the append, the new triples)."""
    return _grow(tmp_path_factory.mktemp("serve"), join=True)


def _grow(root, join: bool):
    """:func:`grown`'s graph, its new edges appended into the default view or apart."""
    import torch

    torch.set_num_threads(1)
    triples = planted_triples(num_entities=120, num_triples=1200)
    old = [t for t in triples if t[0] not in HELD and t[2] not in HELD]
    new = [t for t in triples if t[0] in HELD or t[2] in HELD]
    new.append((118, 0, 119))  # e118 and e119 only: at least one new entity without old
    new = [t for t in new if not ({t[0], t[2]} & {118, 119}) or t == (118, 0, 119)]
    for name, part in (("old", old), ("new", new)):
        (root / f"{name}.tsv").write_text("".join(f"e{h}\tr{r}\te{t}\n" for h, r, t in part))
    g = root / "g"
    ingest_sources([_source(root / "old.tsv", "train")], g, IngestOptions(partitions=2))
    ck = root / "ck"
    train(g, load_config(None, SMALL + ["num_epochs=1"]), out=ck)
    before = open_graph(g)
    trained = {}
    st = CheckpointStorage(ck)
    v = st.read_meta()["version"]
    for p in range(2):
        rows = load_npy(st.emb_path("node", p, v))
        for k, node in enumerate(before.node_ids("node", p).to_pylist()):
            trained[node] = np.array(rows[k])
    append_edges(g, [_source(root / "new.tsv", "grow")], join=join)
    return root, g, ck, new, trained


@pytest.fixture(scope="module")
def grown_apart(tmp_path_factory):
    """:func:`grown` with the new edges appended apart (``--no-join``)."""
    return _grow(tmp_path_factory.mktemp("serve-apart"), join=False)


@pytest.mark.parametrize("which", ["grown", "grown_apart"])
def test_old_rows_kept_new_rows_as_init_from(which, request, tmp_path):
    """Joined or not (an edge set appended apart is appended since training too: it used
    to leave its new entities a random row although their old neighbours are in it)."""
    root, g, ck, new, trained = request.getfixturevalue(which)
    emb = Embeddings.load(ck)  # the recorded graph, grown since
    graph = open_graph(g)
    assert emb.num_entities() == graph.num_nodes() == len(trained) + len(HELD)
    assert emb.grown == {"node": len(HELD)}
    for node, row in trained.items():
        np.testing.assert_array_equal(emb.vector(node), row)
    # independent reference: the mean of the trained rows of old neighbours in new triples
    neigh: dict[str, list[str]] = {}
    for h, _, t in new:
        for a, b in ((f"e{h}", f"e{t}"), (f"e{t}", f"e{h}")):
            if int(a[1:]) in HELD and int(b[1:]) not in HELD:
                neigh.setdefault(a, []).append(b)
    assert neigh and "e118" not in neigh
    for node, olds in neigh.items():
        np.testing.assert_allclose(emb.vector(node), np.mean([trained[u] for u in olds], 0),
                                   rtol=1e-5, atol=1e-7)
    # every new row, random ones included, is the row init_from starts training from
    Trainer(load_config(None, SMALL + ["num_epochs=1", "edges=\"grow\"",
                                       f"init_from=\"{ck}\""]), graph, tmp_path / "ck1")._prepare()
    st = CheckpointStorage(tmp_path / "ck1")
    for p in range(2):
        np.testing.assert_array_equal(emb.partitions()[p], load_npy(st.emb_path("node", p, 0)))
    ids, scores = emb.nearest("e118", k=5)
    assert len(ids) == 5 and np.isfinite(scores).all()
    tails, _ = emb.predict_tails("e105", "r1", k=3)
    assert len(tails) == 3


def test_cli_serves_new_entities(grown, capsys):
    _, g, ck, _, _ = grown
    assert main(["embed", "nearest", str(ck), "e110", "-k", "3", "--graph", str(g),
                 "--json"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert len(line["neighbours"]) == 3, line


def test_moved_entities_are_refused_in_one_line(grown, tmp_path, capsys):
    root, _, ck, _, _ = grown
    # old and new triples ingested afresh: partitions grow, old entities move
    (tmp_path / "all.tsv").write_text((root / "new.tsv").read_text()
                                      + (root / "old.tsv").read_text())
    ingest_sources([_source(tmp_path / "all.tsv", "train")], tmp_path / "g2",
                   IngestOptions(partitions=2))
    with pytest.raises(GraphsysError, match="are not the entities it was trained on .* the "
                                            "entities moved"):
        Embeddings.load(ck, graph=tmp_path / "g2").vector("e1")
    capsys.readouterr()
    assert main(["embed", "nearest", str(ck), "e1", "--graph", str(tmp_path / "g2")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "entities moved" in err[0], err
