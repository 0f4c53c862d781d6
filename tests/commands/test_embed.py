"""``graphsys embed train|eval|export|nearest`` end to end on a tiny planted KG."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphsys import cli
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


@pytest.fixture(autouse=True)
def _only_embed(monkeypatch):
    """Sibling commands are developed elsewhere: build the parser with ``embed`` alone."""
    import torch

    monkeypatch.setattr(cli, "COMMANDS", ("embed",))
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    root = tmp_path_factory.mktemp("kg")
    rng = np.random.default_rng(0)
    rows = set()
    while len(rows) < 600:
        h, r = int(rng.integers(60)), int(rng.integers(3))
        rows.add((h, r, ((h // 4 + (1, 3, 5)[r]) % 15) * 4 + int(rng.integers(4))))
    rows = sorted(rows)
    (root / "train.tsv").write_text("".join(f"{h}\tr{r}\t{t}\n" for h, r, t in rows[80:]))
    (root / "test.tsv").write_text("".join(f"{h}\tr{r}\t{t}\n" for h, r, t in rows[:80]))
    out = root / "g"
    ingest_sources([EdgeSource([root / f"{s}.tsv"], edge_set=s, src_col=0, rel_col=1, dst_col=2)
                    for s in ("train", "test")], out, IngestOptions(partitions=2))
    return out


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "c.toml"
    path.write_text('dimension = 16\noperator = "complex_diagonal"\ncomparator = "dot"\n'
                    'loss_fn = "softmax"\nlr = 0.1\nnum_epochs = 30\nbatch_size = 50\n'
                    'num_batch_negs = 10\nnum_uniform_negs = 20\n')
    return path


def test_train_eval_export_nearest(graph, config, tmp_path, capsys):
    ck = tmp_path / "ck"
    assert cli.main(["embed", "train", "--graph", str(graph), "--edges", "train", "--config",
                     str(config), "--set", "seed=3", "--out", str(ck), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epochs"] == 30 and summary["edges_per_s"] > 0
    assert cli.main(["embed", "eval", str(ck), "--graph", str(graph), "--edges", "test",
                     "--filtered", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) >= {"mrr", "hits@1", "hits@3", "hits@10", "mean_rank", "count"}
    assert res["count"] == 80 and res["mrr"] > 0.5
    assert res["protocol"] == "full, filtered, both sides"
    assert cli.main(["embed", "eval", str(ck), "--edges", "test", "--relation-wise",
                     "--json"]) == 0
    raw = json.loads(capsys.readouterr().out)
    assert raw["mrr"] <= res["mrr"] and set(raw["relations"]) == {"r0", "r1", "r2"}
    assert raw["protocol"] == "full, raw, both sides"
    # the text output names the protocol beside the metric names
    assert cli.main(["embed", "eval", str(ck), "--edges", "test", "--candidates", "7"]) == 0
    assert capsys.readouterr().out.startswith("protocol sampled@7, raw, both sides on test "
                                              "(80 triples): MRR ")
    tsv, rel = tmp_path / "e.tsv", tmp_path / "r.tsv"
    assert cli.main(["embed", "export", str(ck), "--format", "tsv", "--out", str(tsv),
                     "--relations-out", str(rel)]) == 0
    lines = tsv.read_text().splitlines()
    assert len(lines) == 60 and all(len(x.split("\t")) == 17 for x in lines)
    assert len(rel.read_text().splitlines()) == 3 * 2 * 2  # relations x sides x (real, imag)
    pq = tmp_path / "e.parquet"
    assert cli.main(["embed", "export", str(ck), "--format", "parquet", "--out", str(pq)]) == 0
    import pyarrow.parquet as papq

    t = papq.read_table(pq)
    assert t.num_rows == 60 and t.schema.field("embedding").type.list_size == 16
    capsys.readouterr()
    assert cli.main(["embed", "nearest", str(ck), "5", "-k", "3", "--json"]) == 0
    near = json.loads(capsys.readouterr().out)
    assert len(near["neighbours"]) == 3 and 5 not in [n["id"] for n in near["neighbours"]]


@pytest.mark.parametrize("args, message", [
    (["--set", "dimention=3"], "error: dimention: unknown key"),
    (["--set", "lr=-2"], "error: lr: must be a finite number > 0"),
    (["--set", "operator=spin"], "error: operator: unknown operator 'spin'"),
    (["--device", "cuda"], "no CUDA device is available"),
    # --set device beat --device while --edges, --init-from, ... beat their --set
    (["--device", "cpu", "--set", "device=\"auto\""],
     "error: --device and --set device=... together: give one"),
    (["--edges", "train", "--set", "edges=\"x\""], "error: --edges and --set edges=..."),
])
def test_train_errors_are_one_line(graph, config, tmp_path, capsys, args, message):
    import torch

    if "cuda" in args and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    rc = cli.main(["embed", "train", "--graph", str(graph), "--config", str(config),
                   "--out", str(tmp_path / "x"), *args])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1


def test_eval_of_a_non_checkpoint_is_an_error(tmp_path, capsys):
    assert cli.main(["embed", "eval", str(tmp_path), "--edges", "test"]) == 2
    assert "not an embedding checkpoint" in capsys.readouterr().err


@pytest.fixture(scope="module")
def other_graph(tmp_path_factory):
    """Another small KG with the same relation names but 30 entities in 1 partition."""
    root = tmp_path_factory.mktemp("other")
    (root / "e.tsv").write_text("".join(f"{h}\tr{h % 3}\t{(h * 7) % 30}\n" for h in range(30)))
    out = root / "g"
    ingest_sources([EdgeSource([root / "e.tsv"], edge_set="train", src_col=0, rel_col=1, dst_col=2),
                    EdgeSource([root / "e.tsv"], edge_set="test", src_col=0, rel_col=1, dst_col=2)],
                   out, IngestOptions(partitions=1))
    return out


def test_another_graph_is_a_one_line_error(graph, other_graph, config, tmp_path, capsys):
    """A checkpoint used with a graph of another shape (eval, nearest, export, resumed
    training) fails with one line naming both, and the checkpoint is left as it was."""
    ck = tmp_path / "ck"
    assert cli.main(["embed", "train", "--graph", str(graph), "--config", str(config),
                     "--set", "num_epochs=1", "--out", str(ck), "--json"]) == 0
    capsys.readouterr()
    before = sorted((p.relative_to(ck), p.stat().st_mtime_ns) for p in ck.rglob("*"))
    for argv in (["eval", str(ck), "--graph", str(other_graph), "--edges", "test", "--json"],
                 ["nearest", str(ck), "5", "--graph", str(other_graph)],
                 ["export", str(ck), "--format", "numpy", "--graph", str(other_graph),
                  "--out", str(tmp_path / "np")],
                 ["train", "--graph", str(other_graph), "--config", str(config), "--set",
                  "num_epochs=2", "--out", str(ck)]):
        assert cli.main(["embed", *argv]) == 2, argv
        cap = capsys.readouterr()
        err = cap.err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("error: "), argv
        assert "60 nodes" in err and "30" in err and str(other_graph) in err, err
        assert cap.out == ""
    assert sorted((p.relative_to(ck), p.stat().st_mtime_ns) for p in ck.rglob("*")) == before
    assert not (tmp_path / "np").exists()


def test_export_creates_missing_directories(graph, config, tmp_path, capsys):
    ck = tmp_path / "ck"
    assert cli.main(["embed", "train", "--graph", str(graph), "--config", str(config),
                     "--set", "num_epochs=1", "--out", str(ck), "--json"]) == 0
    capsys.readouterr()
    for fmt, out in (("tsv", tmp_path / "a" / "b" / "e.tsv"),
                     ("parquet", tmp_path / "c" / "e.parquet")):
        extra = ["--relations-out", str(tmp_path / "d" / "r.tsv")] if fmt == "tsv" else []
        assert cli.main(["embed", "export", str(ck), "--format", fmt, "--out", str(out),
                         "--json", *extra]) == 0
        assert out.stat().st_size > 0
        rep = json.loads(capsys.readouterr().out)
        assert rep["rows"] == 60 and rep["dimension"] == 16 and rep["out"] == str(out)
    assert len((tmp_path / "d" / "r.tsv").read_text().splitlines()) == 12
    # --relations-out is tsv's: with parquet it wrote nothing while --json named the file
    for fmt, extra in (("parquet", ["--relations-out", str(tmp_path / "r2.tsv")]),
                       ("tsv", ["--entity-type", "node"])):
        assert cli.main(["embed", "export", str(ck), "--format", fmt, "--out",
                         str(tmp_path / f"x.{fmt}"), "--json", *extra]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(f"error: {extra[0]} does not go with --format")
    assert not list(tmp_path.glob("x.*")) and not (tmp_path / "r2.tsv").exists()


def test_out_that_is_a_file_is_a_one_line_error(graph, config, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    for out in (afile, afile / "sub"):
        rc = cli.main(["embed", "train", "--graph", str(graph), "--config", str(config),
                       "--out", str(out)])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and err.startswith(f"error: {out}: ") and len(err.splitlines()) == 1
    assert afile.read_text() == "keep me"


def test_eval_of_gnn_node_embeddings_is_a_one_line_error(graph, tmp_path, capsys):
    """``graphsys gnn embed`` output (Arrow, no relation operators) serves nearest; link
    prediction on it is refused in one line."""
    import pyarrow as pa
    import pyarrow.ipc as paipc

    from graphsys import open_graph
    from graphsys.storage.embedding_files import ARROW_FORMAT, ARROW_INDEX

    g = open_graph(graph)
    ids = np.asarray(g.node_ids())
    bounds = np.concatenate([[0], np.cumsum(g.partition_sizes())])
    emb = np.random.default_rng(0).normal(size=(len(ids), 4)).astype(np.float32)
    out = tmp_path / "gnn-emb"
    out.mkdir()
    files = []
    for p in range(g.num_partitions):
        rows = slice(bounds[p], bounds[p + 1])
        t = pa.table({"id": ids[rows], "embedding": pa.FixedSizeListArray.from_arrays(
            pa.array(emb[rows].ravel()), 4)})
        files.append(f"part-{p}.arrow")
        with paipc.new_file(out / files[-1], t.schema) as w:
            w.write_table(t)
    (out / ARROW_INDEX).write_text(json.dumps({
        "format": ARROW_FORMAT, "entity_type": g.entity_types[0], "dimension": 4,
        "num_nodes": len(ids), "partitions": files, "graph": str(graph), "meta": {}}))
    assert cli.main(["embed", "nearest", str(out), "5", "-k", "2", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["neighbours"]) == 2
    assert cli.main(["embed", "eval", str(out), "--edges", "test", "--json"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and len(cap.err.strip().splitlines()) == 1
    assert "needs relation operators" in cap.err


@pytest.fixture(scope="module")
def two_types(tmp_path_factory):
    """A checkpoint of a user -> item graph (two entity types), trained one epoch."""
    from graphsys.embed import train
    from graphsys.storage.format import RelationType

    root = tmp_path_factory.mktemp("bipartite")
    rng = np.random.default_rng(1)
    rows = {(int(rng.integers(30)), 100 + int(rng.integers(12))) for _ in range(200)}
    (root / "rated.tsv").write_text("".join(f"{u}\t{i}\n" for u, i in sorted(rows)))
    ingest_sources([EdgeSource([root / "rated.tsv"], relation="rated")], root / "g",
                   IngestOptions(relation_types=[RelationType("rated", "user", "item")]))
    train(root / "g", {"dimension": 4, "num_epochs": 1, "batch_size": 50},
          out=root / "ck")
    return root / "ck"


def test_nearest_on_two_entity_types_names_the_flag_and_the_types(two_types, capsys):
    rc = cli.main(["embed", "nearest", str(two_types), "3"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    head = "error: --entity-type must be given: these embeddings have entity types "
    assert err.startswith(head) and sorted(err[len(head):].split(", ")) == ["item", "user"]
    assert cli.main(["embed", "nearest", str(two_types), "103", "--entity-type", "item",
                     "-k", "2", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["neighbours"]) == 2
    assert cli.main(["embed", "nearest", str(two_types), "3", "--entity-type", "movie"]) == 2
    assert "error: --entity-type 'movie' is not an entity type" in capsys.readouterr().err
