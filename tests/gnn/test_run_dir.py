"""A GNN run directory holds one run, written by one process (graphsys.gnn.run_dir): a run
on another graph, with other settings or of another task is refused up front, a second run
at once is refused, and no run writes into a graph, checkpoint or embedding directory."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from graphsys import cli
from graphsys.errors import GraphsysError
from graphsys.gnn import TrainConfig, embed_checkpoint, train
from graphsys.gnn.checkpoint import load_checkpoint
from graphsys.storage.lock import writer_lock

from .conftest import write_bipartite, write_sbm

NODE = dict(model="sage", fanouts=[3, 3], hidden=8, epochs=2, seed=0)
LINK = dict(task="link", model="pinsage", hidden=8, epochs=1, fanouts=[3, 3], seed=0)


def one_line(exc) -> str:
    message = str(exc.value)
    assert message and "\n" not in message
    return message


def test_a_node_run_resumes_only_on_its_own_graph(tmp_path):
    """A rerun with the same settings on another graph (same node counts, other edges)
    is refused before it loads anything: it would continue graph A's model and optimiser
    on graph B and pick the best across two label sets."""
    a = write_sbm(tmp_path / "a", seed=0)
    b = write_sbm(tmp_path / "b", seed=1)
    run = tmp_path / "run"
    train(a, TrainConfig(**{**NODE, "epochs": 1}), out=run)
    before = {p.name: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    with pytest.raises(GraphsysError, match=r"holds another run \(trained on another "
                                            r"graph .*/a\), this run's is .*/b") as err:
        train(b, TrainConfig(**NODE), out=run)
    one_line(err)
    assert {p.name: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    res = train(a, TrainConfig(**NODE), out=run)          # its own graph: resumes
    assert [r["epoch"] for r in res.history] == [1, 2]
    meta = load_checkpoint(run / "last")[2]
    assert meta["graph_identity"]["digest"] == json.loads(
        (run / "run.json").read_text())["graph_digest"]


def test_resume_checks_the_graph_of_the_saved_state_too(tmp_path):
    """The state in ``last/`` is checked on its own (copied beside another run.json)."""
    a = write_sbm(tmp_path / "a", seed=0)
    b = write_sbm(tmp_path / "b", seed=1)
    train(a, TrainConfig(**{**NODE, "epochs": 1}), out=tmp_path / "ra")
    train(b, TrainConfig(**{**NODE, "epochs": 1}), out=tmp_path / "rb")
    shutil.rmtree(tmp_path / "rb" / "last")
    shutil.copytree(tmp_path / "ra" / "last", tmp_path / "rb" / "last")
    with pytest.raises(GraphsysError, match="trained on another graph") as err:
        train(b, TrainConfig(**NODE), out=tmp_path / "rb")
    one_line(err)


@pytest.mark.parametrize("second, says", [
    (dict(LINK, seed=1), r"other settings: seed=0, this run has seed=1\)"),
    (dict(LINK, hidden=16), r"other settings: hidden=8, this run has hidden=16\)"),
    (dict(NODE, task="node"), "a link-task run, this one is a node-task run"),
])
def test_a_link_run_never_replaces_another_run(tmp_path, second, says):
    g = write_bipartite(tmp_path / "g")
    run = tmp_path / "run"
    train(g, TrainConfig(**LINK), out=run)
    kept = (run / "checkpoint" / "model.json").read_bytes()
    with pytest.raises(GraphsysError, match=says) as err:
        train(g, TrainConfig(**second), out=run)
    one_line(err)
    assert (run / "checkpoint" / "model.json").read_bytes() == kept
    train(g, TrainConfig(**LINK), out=run)                 # the same run again: allowed


def test_a_link_run_does_not_replace_a_node_runs_checkpoint(tmp_path):
    g = write_sbm(tmp_path / "sbm")
    run = tmp_path / "run"
    train(g, TrainConfig(**NODE), out=run)
    kept = load_checkpoint(run / "checkpoint")
    with pytest.raises(GraphsysError, match="a node-task run, this one is a link-task run"):
        train(g, TrainConfig(task="link", model="sage", hidden=8, epochs=1, fanouts=[3]),
              out=run)
    assert load_checkpoint(run / "checkpoint")[2] == kept[2]


def test_run_files_without_a_record_are_refused(tmp_path):
    g = write_sbm(tmp_path / "sbm")
    run = tmp_path / "run"
    train(g, TrainConfig(**NODE), out=run)
    (run / "run.json").unlink()
    with pytest.raises(GraphsysError, match=r"holds run files \(checkpoint, last, "
                                            r"metrics.jsonl\) but no run.json"):
        train(g, TrainConfig(**NODE), out=run)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")               # unrelated files are left alone
    train(g, TrainConfig(**{**NODE, "epochs": 1}), out=other)
    assert (other / "notes.txt").read_text() == "mine"


def test_a_second_run_at_once_is_refused(tmp_path):
    """While a run holds the directory (its writer lock), another is refused at once and
    writes nothing; the lock of a run that ended is gone."""
    g = write_sbm(tmp_path / "sbm")
    run = tmp_path / "run"
    run.mkdir()
    with writer_lock(run):
        with pytest.raises(GraphsysError, match=f"another writer holds {run} "
                                                f"\\(pid {os.getpid()}\\)") as err:
            train(g, TrainConfig(**NODE), out=run)
        one_line(err)
        assert sorted(p.name for p in run.iterdir()) == [".lock"]
    train(g, TrainConfig(**NODE), out=run)
    assert not (run / ".lock").exists()


def test_hostile_entries_in_a_run_directory_are_refused(tmp_path):
    g = write_sbm(tmp_path / "sbm")
    run = tmp_path / "run"
    run.mkdir()
    outside = tmp_path / "precious.txt"
    outside.write_text("keep")
    os.symlink(outside, run / "metrics.jsonl")             # a write would follow it out
    with pytest.raises(GraphsysError, match="metrics.jsonl: a symlink in the run directory"):
        train(g, TrainConfig(**NODE), out=run)
    assert outside.read_text() == "keep"
    os.unlink(run / "metrics.jsonl")
    os.mkfifo(run / "metrics.jsonl")                       # a write would block
    with pytest.raises(GraphsysError, match="metrics.jsonl: a FIFO"):
        train(g, TrainConfig(**NODE), out=run)


def test_runs_and_embeddings_stay_out_of_graph_and_checkpoint_directories(tmp_path, capsys):
    g = write_sbm(tmp_path / "sbm")
    run = tmp_path / "run"
    train(g, TrainConfig(**{**NODE, "epochs": 1}), out=run)
    manifest = (g / "manifest.json").read_bytes()
    for out, says in ((g, "is the graph directory"), (g / "runs", "lies inside the graph"),
                      (run / "checkpoint", "is the checkpoint directory")):
        with pytest.raises(GraphsysError, match=says) as err:
            train(g, TrainConfig(**NODE), out=out)
        one_line(err)
        with pytest.raises(GraphsysError, match="(is|lies inside) the (graph|checkpoint) "
                                                "directory .*; an embedding directory"):
            embed_checkpoint(run / "checkpoint", out)
    assert (g / "manifest.json").read_bytes() == manifest
    assert not (g / "runs").exists() and not (g / "metrics.jsonl").exists()
    for argv in (["gnn", "train", "--graph", str(g), "--epochs", "1", "--out", str(g)],
                 ["gnn", "embed", "--checkpoint", str(run / "checkpoint"), "--out", str(g)]):
        assert cli.main(argv) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "graph directory" in err[0], err
    assert (g / "manifest.json").read_bytes() == manifest


def test_a_run_that_fails_before_writing_leaves_the_directory_as_it_was(tmp_path):
    """A new run that ends in an error before its first evaluation (here: a temporal task
    on a graph without timestamps) does not claim the directory: a directory it created
    is gone, one that existed is empty again, and the next run may use either."""
    import graphsys
    from graphsys.gnn.run_dir import run_directory

    g = graphsys.from_numpy([0, 1, 2], [1, 2, 0], tmp_path / "g")
    made, kept = tmp_path / "made", tmp_path / "kept"
    kept.mkdir()
    for out in (made, kept):
        with pytest.raises(GraphsysError, match="timestamp"):
            train(g, TrainConfig(task="temporal-link", epochs=1), out=out)
    assert not made.exists() and list(kept.iterdir()) == []
    with pytest.raises(KeyError), run_directory(made, g, TrainConfig(task="link"), 1) as run:
        (run / "metrics.jsonl").write_text('{"epoch": 0}\n')   # a run that wrote: kept
        raise KeyError("stop")
    assert sorted(p.name for p in made.iterdir()) == ["metrics.jsonl", "run.json"]
    with pytest.raises(GraphsysError, match="holds another run"):
        with run_directory(made, g, TrainConfig(task="node"), 1):
            pass
    with run_directory(kept, g, TrainConfig(task="node"), 1):
        pass
    assert sorted(p.name for p in kept.iterdir()) == ["run.json"]
