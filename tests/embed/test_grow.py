"""Growing a trained model: new entities start at their old neighbours' mean (else random),
old rows stay fixed with freeze_old or fine-tune without it; another shape is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphsys.cli import main
from graphsys.embed import load_config, train
from graphsys.embed.checkpoint import CheckpointStorage, load_npy
from graphsys.embed.trainer import Trainer
from graphsys.errors import ConfigError, GraphsysError
from graphsys.storage.append import append_edges
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

from .conftest import SMALL, planted_triples

HELD = set(range(180, 200))


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """(graph grown by an edge set ``grow`` of the held-out entities' triples, checkpoint
    trained before the append, the new triples)."""
    import torch

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("grow")
    triples = planted_triples()
    old = [t for t in triples if t[0] not in HELD and t[2] not in HELD]
    new = [t for t in triples if t[0] in HELD or t[2] in HELD]
    for name, part in (("old", old), ("new", new)):
        (root / f"{name}.tsv").write_text("".join(f"e{h}\tr{r}\te{t}\n" for h, r, t in part))
    g = root / "g"
    ingest_sources([EdgeSource([root / "old.tsv"], edge_set="train", src_col=0, rel_col=1,
                               dst_col=2)], g, IngestOptions(partitions=2))
    ck = root / "ck0"
    train(g, load_config(None, SMALL + ["num_epochs=2"]), out=ck)
    append_edges(g, [EdgeSource([root / "new.tsv"], edge_set="grow", src_col=0, rel_col=1,
                                dst_col=2)])
    return g, ck, new


def _rows(ck, version=None):
    st = CheckpointStorage(ck)
    v = st.read_meta()["version"] if version is None else version
    return [np.array(load_npy(st.emb_path("node", p, v))) for p in range(2)]


def test_initial_rows(grown, tmp_path):
    g, ck, new = grown
    graph = open_graph(g)
    cfg = load_config(None, SMALL + ["num_epochs=1", "edges=\"grow\"", f"init_from=\"{ck}\""])
    Trainer(cfg, graph, tmp_path / "ck1")._prepare()
    init, before = _rows(tmp_path / "ck1", 0), _rows(ck)
    where = {}
    for p in range(2):
        for k, v in enumerate(graph.node_ids("node", p).to_pylist()):
            where[v] = (p, k)
    old_n = [len(b) for b in before]
    for p in range(2):
        np.testing.assert_array_equal(init[p][:old_n[p]], before[p])
    # independent reference: the mean of the old neighbours' trained rows
    neigh: dict[str, list[str]] = {}
    for h, _, t in new:
        for a, b in ((f"e{h}", f"e{t}"), (f"e{t}", f"e{h}")):
            if int(a[1:]) in HELD and int(b[1:]) not in HELD:
                neigh.setdefault(a, []).append(b)
    assert neigh
    for v in (f"e{x}" for x in HELD):
        p, k = where[v]
        assert k >= old_n[p]
        if v in neigh:
            want = np.mean([before[where[u][0]][where[u][1]] for u in neigh[v]], axis=0)
            np.testing.assert_allclose(init[p][k], want, rtol=1e-5, atol=1e-7)


def test_freeze_old_trains_only_new_rows(grown, tmp_path):
    g, ck, _ = grown
    out = tmp_path / "ck1"
    train(g, load_config(None, SMALL + ["num_epochs=2", "edges=\"grow\"", f"init_from=\"{ck}\"",
                                     "freeze_old=true"]), out=out)
    after, before = _rows(out), _rows(ck)
    for p in range(2):
        n = len(before[p])
        np.testing.assert_array_equal(after[p][:n], before[p])
        assert np.abs(after[p][n:]).sum() > 0
    st_old, st_new = CheckpointStorage(ck), CheckpointStorage(out)
    v_old, v_new = st_old.read_meta()["version"], st_new.read_meta()["version"]
    for f in sorted((ck / "model").glob(f"*.v{v_old:06d}.npy")):
        key = f.name.split(".v")[0]
        np.testing.assert_array_equal(load_npy(f), load_npy(st_new.model_path(key, v_new)))
    meta = json.loads((out / "checkpoint.json").read_text())
    assert meta["grown_from"]["checkpoint"] == str(ck.absolute())
    # a resume keeps the boundary (read from grown_from) and the old rows fixed
    resumed = _rows(out)
    train(g, load_config(None, SMALL + ["num_epochs=3", "edges=\"grow\"", f"init_from=\"{ck}\"",
                                     "freeze_old=true"]), out=out)
    again = _rows(out)
    for p in range(2):
        n = len(before[p])
        np.testing.assert_array_equal(again[p][:n], before[p])
        assert not np.array_equal(again[p][n:], resumed[p][n:])


def test_fine_tune_moves_old_rows(grown, tmp_path):
    g, ck, _ = grown
    out = tmp_path / "ck1"
    train(g, load_config(None, SMALL + ["num_epochs=1", "edges=\"grow\"", f"init_from=\"{ck}\""]),
          out=out)
    after, before = _rows(out), _rows(ck)
    assert any(not np.array_equal(after[p][:len(before[p])], before[p]) for p in range(2))


def test_other_shape_refused_naming_the_key(grown, tmp_path, capsys):
    g, ck, _ = grown
    with pytest.raises(GraphsysError, match="init_from .*: dimension is 32 in the checkpoint, "
                                            "16 in this run"):
        train(g, load_config(None, SMALL + ["dimension=16", "edges=\"grow\"",
                                         f"init_from=\"{ck}\""]), out=tmp_path / "a")
    rc = main(["embed", "train", "--graph", str(g), "--edges", "grow", "--out",
               str(tmp_path / "b"), "--init-from", str(ck), "--set", "operator=\"diagonal\""]
              + [x for s in SMALL if not s.startswith("operator") for x in ("--set", s)])
    assert rc != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "relations[0]" in err[0] and "another model shape" in err[0]
    assert not (tmp_path / "b" / "checkpoint.json").exists()


def test_freeze_old_without_init_from_refused(grown, tmp_path):
    g, _, _ = grown
    with pytest.raises(ConfigError, match="freeze_old: needs init_from"):
        train(g, load_config(None, SMALL + ["freeze_old=true"]), out=tmp_path / "a")


def test_change_sets_are_not_edges_to_take_means_from(tmp_path):
    import graphsys
    from graphsys.embed.grow import new_edge_sets
    from graphsys.storage.changes import delete_edges

    g = graphsys.from_numpy([1, 2, 3], [2, 3, 1], tmp_path / "g")
    (tmp_path / "d2.tsv").write_text("4\t1\n")
    append_edges(g.path, [EdgeSource([tmp_path / "d2.tsv"], edge_set="day2")])
    delete_edges(g.path, [1], [2])
    assert new_edge_sets(open_graph(g.path), "default") == ["day2"]
