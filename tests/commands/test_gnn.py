"""``graphsys gnn``: JSON output, checkpoint + embed, and one-line errors."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from graphsys.commands import gnn
from graphsys.errors import GraphsysError

_spec = importlib.util.spec_from_file_location(
    "graphsys_tests_gnn_sbm", Path(__file__).resolve().parents[1] / "gnn" / "conftest.py")
_sbm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sbm)
write_sbm = _sbm.write_sbm


def run_cli(argv: list[str]) -> int:
    """What graphsys.cli.main does, for the gnn command alone (same error handling)."""
    parser = argparse.ArgumentParser(prog="graphsys")
    gnn.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GraphsysError as exc:
        from graphsys.cli import user_message

        print(f"error: {user_message(exc, parser, args)}", file=sys.stderr)
        return exc.exit_code


def test_cli_registered():
    from graphsys import cli
    assert "gnn" in cli.COMMANDS


@pytest.fixture
def sbm_dir(tmp_path):
    return write_sbm(tmp_path / "sbm")


def test_train_json_then_embed(sbm_dir, tmp_path, capsys):
    out = tmp_path / "run"
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--task", "node", "--model", "gcn",
                  "--fanouts", "5,5", "--epochs", "5", "--hidden", "8", "--out", str(out),
                  "--seed", "2", "--json"])
    assert rc == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"test_accuracy", "epochs", "seconds"} <= set(last)
    assert last["epochs"] == 5 and 0.0 <= last["test_accuracy"] <= 1.0
    rc = run_cli(["gnn", "embed", "--checkpoint", str(out / "checkpoint"), "--out",
                  str(tmp_path / "emb"), "--json"])
    assert rc == 0
    info = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert info["num_nodes"] == 200 and (tmp_path / "emb" / "embeddings.json").is_file()
    # the embedding API and its CLI serve the output
    from graphsys import cli
    from graphsys.embed import Embeddings

    emb = Embeddings.load(tmp_path / "emb")
    ids, scores = emb.nearest(7, 3)
    assert emb.to_numpy().shape == (200, info["dimension"])
    assert cli.main(["embed", "nearest", str(tmp_path / "emb"), "7", "-k", "3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [n["id"] for n in doc["neighbours"]] == [int(i) for i in ids]
    assert [n["score"] for n in doc["neighbours"]] == pytest.approx(scores.tolist())


def test_train_with_each_step_one_graph(sbm_dir, tmp_path, capsys):
    """``--sampler graph``: the steps of a NodeStepGraph (eager on the CPU), a run
    whose checkpoint embeds as any other's."""
    out = tmp_path / "run"
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--task", "node", "--model", "sage",
                  "--fanouts", "5,5", "--epochs", "3", "--hidden", "8", "--out", str(out),
                  "--sampler", "graph", "--json"])
    assert rc == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["epochs"] == 3 and 0.0 <= last["test_accuracy"] <= 1.0
    assert run_cli(["gnn", "embed", "--checkpoint", str(out / "checkpoint"), "--out",
                    str(tmp_path / "emb"), "--json"]) == 0
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--task", "node", "--model",
                  "pinsage", "--sampler", "graph"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "'graph' trains the builtin models sage, gcn" in err[0]


def _tty_stderr(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)


def test_progress_bars_on_a_terminal(sbm_dir, tmp_path, capsys, monkeypatch):
    _tty_stderr(monkeypatch)
    out = tmp_path / "run"
    assert run_cli(["gnn", "train", "--graph", str(sbm_dir), "--model", "sage", "--epochs", "3",
                    "--hidden", "8", "--batch-size", "16", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "train sage epoch 3/3" in err and "9/9" in err and "batch" in err   # 40 seeds / 16
    assert "epoch    3  loss" in err                  # the epoch lines still print
    assert run_cli(["gnn", "embed", "--checkpoint", str(out / "checkpoint"), "--out",
                    str(tmp_path / "emb")]) == 0
    err = capsys.readouterr().err
    assert "embed layer 2/2" in err and "400/400" in err      # 2 layers x 200 nodes


@pytest.mark.parametrize("flag", ["--json", "--quiet"])
def test_no_progress_bars_with_json_or_quiet(sbm_dir, tmp_path, capsys, monkeypatch, flag):
    _tty_stderr(monkeypatch)
    out = tmp_path / "run"
    assert run_cli(["gnn", "train", "--graph", str(sbm_dir), "--epochs", "2", "--hidden", "8",
                    "--out", str(out), flag]) == 0
    assert run_cli(["gnn", "embed", "--checkpoint", str(out / "checkpoint"), "--out",
                    str(tmp_path / "emb"), flag]) == 0
    assert capsys.readouterr().err == ""


def test_no_progress_bars_when_stderr_is_not_a_terminal(sbm_dir, tmp_path, capsys,
                                                        monkeypatch):
    assert not sys.stderr.isatty()
    # off a terminal progress is a line every GRAPHSYS_PROGRESS_SECONDS, never a bar
    monkeypatch.setenv("GRAPHSYS_PROGRESS_SECONDS", "3600")
    assert run_cli(["gnn", "train", "--graph", str(sbm_dir), "--epochs", "2", "--hidden",
                    "8"]) == 0
    err = capsys.readouterr().err
    assert "epoch    2  loss" in err and "batch" not in err and "it/s" not in err


@pytest.mark.parametrize("extra,message", [
    (["--fanouts", "10,x"], "fanouts"),
    (["--fanouts", "0"], "fanouts"),
    (["--epochs", "0"], "--epochs"),
])
def test_bad_options(sbm_dir, capsys, extra, message):
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--json"] + extra)
    err = capsys.readouterr().err.strip()
    assert rc != 0 and err.startswith("error:") and message in err and "\n" not in err


def test_node_task_without_labels(tmp_path, capsys):
    d = write_sbm(tmp_path / "nolabel", labels=False)
    rc = run_cli(["gnn", "train", "--graph", str(d), "--task", "node", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "label" in err and "\n" not in err


def test_link_task_needs_bipartite(sbm_dir, capsys):
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--task", "link", "--link-split",
                  "user", "--quiet"])
    err = capsys.readouterr().err
    assert rc != 0 and err.startswith("error: --link-split 'user' needs a bipartite") and (
        err.count("\n") == 1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu(sbm_dir, capsys):
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--device", "cuda"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "CUDA" in err and "\n" not in err


def test_missing_source_and_checkpoint(tmp_path, capsys):
    assert run_cli(["gnn", "train"]) != 0
    assert "exactly one" in capsys.readouterr().err
    rc = run_cli(["gnn", "embed", "--checkpoint", str(tmp_path), "--out", str(tmp_path / "e")])
    assert rc != 0 and "checkpoint" in capsys.readouterr().err


def test_train_user_model_factory_and_gat(sbm_dir, tmp_path, capsys, monkeypatch):
    (tmp_path / "cli_models.py").write_text(
        "from torch import nn\n"
        "from graphsys.gnn import GNN\n"
        "class Sage(nn.Module):\n"
        "    def __init__(self, **dims):\n"
        "        super().__init__()\n"
        "        self.gnn = GNN('sage', **dims)\n"
        "    def forward(self, blocks, x):\n"
        "        return self.gnn(blocks, x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "run"
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--model", "cli_models:Sage",
                  "--fanouts", "5,5", "--epochs", "3", "--hidden", "8", "--out", str(out),
                  "--json"])
    assert rc == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["model"] == "cli_models:Sage" and last["epochs"] == 3
    rc = run_cli(["gnn", "embed", "--checkpoint", str(out / "checkpoint"), "--out",
                  str(tmp_path / "emb")])
    assert rc == 2 and "user model" in capsys.readouterr().err
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--model", "gat", "--heads", "2",
                  "--fanouts", "5,5", "--epochs", "2", "--hidden", "8", "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["model"] == "gat"
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--model", "nope:Nope", "--json"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "cannot import 'nope'" in err
    sys.modules.pop("cli_models", None)


def test_train_defaults_are_the_configs():
    """One set of defaults: gnn train's flags left out read None, leaving every value to
    TrainConfig (or a --config file): the task-dependent ones (node: 200 epochs, patience
    50, as the documented Planetoid runs use; link: 20 / 5) and its fields' defaults;
    --help shows them."""
    from graphsys.gnn.config import TrainConfig

    parser = argparse.ArgumentParser(prog="graphsys")
    gnn.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["gnn", "train", "--graph", "g"])
    for name in ("task", "model", "hidden", "heads", "num_workers", "prefetch", "seed",
                 "batches_per_epoch", "epochs", "lr", "weight_decay", "dropout",
                 "batch_size", "patience", "eval_every", "metrics_k", "full_graph",
                 "link_keep_targets"):
        assert getattr(args, name) is None, name
    node, link = TrainConfig(), TrainConfig(task="link")
    assert (node.epochs, node.patience, node.lr, node.batch_size) == (200, 50, 0.01, 256)
    assert (link.epochs, link.patience, link.lr, link.dropout) == (20, 5, 0.003, 0.0)
    gat = TrainConfig(model="gat")
    assert (gat.lr, gat.dropout, gat.weight_decay) == (0.005, 0.6, 5e-4)
    assert TrainConfig(epochs=7).epochs == 7
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    gnn_parser = sub.choices["gnn"]
    train_help = next(a for a in gnn_parser._actions
                      if isinstance(a, argparse._SubParsersAction)).choices["train"].format_help()
    assert "default 200 node, 20 link" in " ".join(train_help.split())


def test_train_flags_given_override_the_config_file(sbm_dir, tmp_path, capsys):
    """A flag given overrides the --config file's value, at its default too: ``--seed 0``
    over ``seed = 3`` trained seed 3, ``--eval-every 1`` over ``eval_every = 2`` evaluated
    once in 2 epochs (only flags away from their defaults overrode the file)."""
    (tmp_path / "c.toml").write_text("hidden = 8\nepochs = 2\nfanouts = [3, 3]\nseed = 3\n"
                                     "eval_every = 2\nnum_workers = 0\n")
    rc = run_cli(["gnn", "train", "--graph", str(sbm_dir), "--config", str(tmp_path / "c.toml"),
                  "--seed", "0", "--eval-every", "1", "--out", str(tmp_path / "run"),
                  "--json"])
    assert rc == 0, capsys.readouterr().err
    ran = json.loads((tmp_path / "run" / "run.json").read_text())["train_config"]
    assert (ran["seed"], ran["eval_every"], ran["hidden"], ran["num_workers"]) == (0, 1, 8, 0)
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2


@pytest.fixture
def timed_dir(tmp_path):
    """1,000 events over 90 recurring pairs of 60 nodes, stamped 1..999: the pairs are all
    seen early, so their first stamps end long before the events do."""
    import numpy as np
    import pyarrow as pa

    import graphsys

    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 60, 90), rng.integers(0, 60, 90)
    k = rng.integers(0, 90, 1000)
    stamps = np.sort(rng.integers(1, 1000, 1000))
    stamps[[0, -1]] = 1, 999
    graphsys.from_arrow(pa.table({"src": a[k], "dst": b[k], "timestamp": stamps}),
                        tmp_path / "timed", edge_columns=["timestamp"])
    return tmp_path / "timed"


@pytest.mark.parametrize("extra,message", [
    # the temporal task trains TGN, TGAT or JODIE: another model is refused, not swapped
    # for tgn
    (["--task", "temporal-link", "--model", "sage"],
     "--model of task temporal-link must be one of tgn, tgat or jodie, got 'sage'"),
    (["--task", "temporal-link", "--model", "gcn"],
     "must be one of tgn, tgat or jodie, got 'gcn'"),
    (["--task", "temporal-link", "--model", "jodie", "--fanouts", "5"],
     "--fanouts does not apply to model jodie, which reads no neighbours"),
    (["--task", "node", "--model", "tgn"], "tgn is a model of task temporal-link"),
    (["--task", "node", "--model", "rgcn"], "rgcn is a model of task link"),
    (["--task", "link", "--model", "tgn"], "one of gat, gcn, gin, pinsage, sage or rgcn"),
    (["--task", "link", "--model", "mod:Factory"], "got 'mod:Factory'"),
    # empty sides of a split, refused before training
    (["--task", "temporal-link", "--valid-from", "800", "--test-from", "800"],
     "--test-from = 800 with valid_from = 800 leaves no validation edge (the stamps run "
     "from 1 to 999)"),
    (["--task", "temporal-link", "--valid-from", "1", "--test-from", "900"],
     "leaves no training edge"),
    (["--task", "temporal-link", "--valid-from", "800", "--test-from", "1000"],
     "leaves no test edge"),
    (["--task", "temporal-link", "--link-val-fraction", "0"],
     "--link-val-fraction = 0.0 leaves no validation event (the 1,000 events run from 1 "
     "to 999)"),
    (["--task", "link", "--link-split", "time", "--valid-from", "800", "--test-from", "900"],
     "the edges' stamps run from 1 to 999"),
    # the link task reported MRR 0.0 of an empty test side as a result
    (["--task", "link", "--link-split", "time", "--link-test-fraction", "0"],
     "--link-test-fraction = 0.0 holds out no test edge of 87"),
    (["--task", "link", "--link-split", "random", "--link-val-fraction", "0"],
     "--link-val-fraction = 0.0 holds out no validation edge"),
])
def test_temporal_refusals_before_training(timed_dir, capsys, extra, message):
    rc = run_cli(["gnn", "train", "--graph", str(timed_dir), "--epochs", "1", "--quiet"]
                 + extra)
    err = capsys.readouterr().err
    assert rc != 0 and err.startswith("error:") and err.count("\n") == 1, err
    assert message in err and "epoch" not in err


def test_embed_takes_no_seed(tmp_path, capsys):
    """gnn embed draws with the checkpoint's seed: ``--seed 3`` was accepted and ignored;
    argparse now refuses it in one line."""
    with pytest.raises(SystemExit) as exc:
        run_cli(["gnn", "embed", "--checkpoint", str(tmp_path), "--out", str(tmp_path / "e"),
                 "--seed", "3"])
    assert exc.value.code == 2 and "unrecognized arguments: --seed 3" in capsys.readouterr().err


def test_train_json_reports_a_metric_of_no_input_as_null(tmp_path, capsys):
    """A metric of no input is NaN (graphsys.ranking's rule), null in --json as every
    command prints it: gnn train dropped the key (here the AUC of a path graph, whose one
    filtered negative per held-out edge is always a true edge or the head)."""
    import numpy as np

    import graphsys

    graphsys.from_numpy(np.arange(12), np.arange(1, 13), tmp_path / "g")
    rc = run_cli(["gnn", "train", "--graph", str(tmp_path / "g"), "--task", "link",
                  "--link-split", "random", "--fanouts", "2", "--hidden", "4", "--epochs", "1",
                  "--link-eval-negatives", "-1", "--metrics-k", "1", "--json"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and "auc" in out and out["auc"] is None and out["mrr"] > 0
