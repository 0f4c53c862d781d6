"""Every task of graphsys.gnn.train resumes from ``out/last``: train N epochs straight, or
k epochs, stop, and rerun the same settings with N: the same weights, history and metrics
(node, held-out-edge link, item, temporal (TGN, TGAT and JODIE) and R-GCN tasks, on tiny
generated graphs)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pyarrow as pa
import pytest
import torch

import graphsys
from graphsys.errors import FormatError, GraphsysError
from graphsys.gnn import TrainConfig, train
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

from .conftest import write_bipartite, write_sbm


def _events(path):
    """600 timestamped events among 30 nodes, 40 recurring pairs."""
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, 30, (40, 2))[rng.integers(0, 40, 600)]
    return graphsys.from_arrow(pa.table({"src": pairs[:, 0], "dst": pairs[:, 1],
                                         "timestamp": np.arange(600)}), path,
                               edge_columns=["timestamp"]).path


def _triples(path):
    """A typed graph of 40 entities and 3 relations with train/valid/test edge sets."""
    path.mkdir(parents=True)
    rows = [(h, h % 3, (h * 7 + h % 3) % 40) for h in range(40)]
    rows += [(h, (h + 1) % 3, (h * 11 + 5) % 40) for h in range(40)]
    parts = [("train", rows[:64]), ("valid", rows[64:72]), ("test", rows[72:])]
    for name, part in parts:
        (path / f"{name}.tsv").write_text("".join(f"e{h}\tr{r}\te{t}\n" for h, r, t in part))
    ingest_sources([EdgeSource([path / f"{n}.tsv"], edge_set=n, src_col=0, rel_col=1,
                               dst_col=2) for n, _ in parts], path / "g", IngestOptions())
    return path / "g"


#: task -> (graph writer, settings); each trains 3 epochs, validating after each
CASES = {
    "node": (lambda p: write_sbm(p, partitions=2),
             dict(model="sage", fanouts=[3, 3], hidden=8, dropout=0.5, seed=5)),
    "link": (lambda p: write_sbm(p),
             dict(task="link", link_split="random", model="sage", fanouts=[3, 3], hidden=8,
                  dropout=0.5, batch_size=64, link_eval_negatives=20, seed=1)),
    "item": (lambda p: write_bipartite(p),
             dict(task="link", model="pinsage", fanouts=[3, 3], hidden=8, dropout=0.5,
                  batch_size=64, seed=2)),
    "temporal": (_events, dict(task="temporal-link", hidden=8, batch_size=100, dropout=0.2,
                               link_eval_negatives=20, seed=3)),
    "tgat": (_events, dict(task="temporal-link", model="tgat", fanouts=[4, 4], hidden=8,
                           batch_size=100, dropout=0.2, link_eval_negatives=20, seed=6)),
    "jodie": (_events, dict(task="temporal-link", model="jodie", hidden=8, batch_size=100,
                            dropout=0.2, link_eval_negatives=20, seed=7)),
    "rgcn": (_triples, dict(task="link", model="rgcn", hidden=8, batch_size=20, seed=4)),
}


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN (a metric of no input)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _timeless(history):
    return [{k: v for k, v in r.items() if "seconds" not in k} for r in history]


@pytest.mark.parametrize("task", sorted(CASES))
def test_a_stopped_run_resumes_to_the_uninterrupted_answer(tmp_path, task):
    write, settings = CASES[task]
    g = write(tmp_path / "g")
    cfg = TrainConfig(**settings, epochs=3)
    straight = train(g, cfg, out=tmp_path / "a")
    first = train(g, TrainConfig(**settings, epochs=1), out=tmp_path / "b")
    assert first.epochs == 1 and (tmp_path / "b" / "last" / "model.json").exists()
    resumed = train(g, cfg, out=tmp_path / "b")
    assert resumed.epochs == straight.epochs == 3
    want, got = straight.model.state_dict(), resumed.model.state_dict()
    assert sorted(want) == sorted(got)
    for k in want:
        assert torch.equal(want[k], got[k]), k
    assert sorted(straight.metrics) == sorted(resumed.metrics)
    assert all(_same(straight.metrics[k], resumed.metrics[k]) for k in straight.metrics), \
        (straight.metrics, resumed.metrics)
    assert _timeless(resumed.history) == _timeless(straight.history)
    lines = (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["epoch"] for x in lines] == [1, 2, 3]


@pytest.mark.parametrize("task", ["item", "rgcn"])
def test_a_finished_run_reruns_to_its_answer_without_training(tmp_path, task):
    """The same settings again on a finished run: nothing trains, the kept model answers."""
    write, settings = CASES[task]
    g = write(tmp_path / "g")
    cfg = TrainConfig(**settings, epochs=2)
    done = train(g, cfg, out=tmp_path / "run")
    again = train(g, cfg, out=tmp_path / "run")
    assert _timeless(again.history) == _timeless(done.history)
    assert all(_same(done.metrics[k], again.metrics[k]) for k in done.metrics)
    for k, v in done.model.state_dict().items():
        assert torch.equal(v, again.model.state_dict()[k]), k


def test_a_node_state_saved_before_the_one_loop_still_resumes(tmp_path):
    """``out/last`` of a node run as written before every task resumed (no
    ``meta.train_seconds``, no ``meta.task_state``) resumes to the same answer."""
    write, settings = CASES["node"]
    g = write(tmp_path / "g")
    straight = train(g, TrainConfig(**settings, epochs=2), out=tmp_path / "a")
    train(g, TrainConfig(**settings, epochs=1), out=tmp_path / "b")
    header_file = tmp_path / "b" / "last" / "model.json"
    header = json.loads(header_file.read_text())
    for key in ("train_seconds", "task_state"):
        del header["meta"][key]
    header_file.write_text(json.dumps(header))
    resumed = train(g, TrainConfig(**settings, epochs=2), out=tmp_path / "b")
    assert resumed.metrics == straight.metrics
    assert _timeless(resumed.history) == _timeless(straight.history)


@pytest.mark.parametrize("task", ["node", "temporal"])
def test_a_damaged_last_state_is_refused_in_one_line(tmp_path, task):
    """``out/last/model.json`` carries no checksum: a value the loop never writes there was
    resumed from (meta.epoch -5 trained 7 more epochs, meta.epoch 10**9 reported 10**9
    epochs, meta.stopped "no" ended the run, a history string became records 'a', 'b', a
    malformed temporal task_state raised AttributeError, a missing rng trained other
    dropout masks); now each is one FormatError before any training."""
    write, settings = CASES[task]
    g = write(tmp_path / "g")
    train(g, TrainConfig(**settings, epochs=1), out=tmp_path / "base")
    header = json.loads((tmp_path / "base" / "last" / "model.json").read_text())
    edits = [("meta", "epoch", -5), ("meta", "epoch", 10**9), ("meta", "epoch", True),
             ("meta", "stopped", "no"), ("meta", "task_state", "x"),
             ("monitor", "bad", -3), ("monitor", "best", "nan"), ("monitor", "best", "inf"),
             ("monitor", "history", "abc"), ("monitor", "history", [1]),
             ("tensors", "rng", None)]
    if task == "temporal":
        edits.append(("task_state", "best_test", "x"))
    # an optimiser tensor missing (torch's KeyError at the first step) or misnamed
    # ('optim.1exp_avg': a raw ValueError)
    moment = min(k for k in header["tensors"] if k.endswith(".exp_avg"))
    edits += [("tensors", moment, None), ("rename", moment, moment.replace(".exp", "exp"))]
    for k, (where, key, value) in enumerate(edits):
        run = tmp_path / f"run{k}"
        shutil.copytree(tmp_path / "base", run)
        h = json.loads(json.dumps(header))
        part = {"meta": h["meta"], "tensors": h["tensors"], "monitor": h["meta"]["monitor"],
                "task_state": h["meta"]["task_state"], "rename": {}}[where]
        if where == "rename":
            h["tensors"][value] = h["tensors"].pop(key)
        elif value is None:
            del part[key]
        else:
            part[key] = value
        (run / "last" / "model.json").write_text(json.dumps(h))
        with pytest.raises(FormatError, match=r"last") as err:
            train(g, TrainConfig(**settings, epochs=2), out=run)
        assert "\n" not in str(err.value), (where, key, value)


def test_a_resume_without_the_kept_model_is_refused(tmp_path):
    """``out/checkpoint`` gone while ``out/last`` records a kept model: the resumed run
    reported the last epoch's model as the best (MRR 0.178 for the kept model's 0.297,
    val_mrr NaN); now refused in one line."""
    write, settings = CASES["node"]
    g = write(tmp_path / "g")
    train(g, TrainConfig(**settings, epochs=1), out=tmp_path / "run")
    shutil.rmtree(tmp_path / "run" / "checkpoint")
    with pytest.raises(FormatError, match="checkpoint: missing, but .* records a kept model"):
        train(g, TrainConfig(**settings, epochs=2), out=tmp_path / "run")


def test_a_rerun_with_fewer_epochs_than_run_is_refused(tmp_path):
    """``epochs`` may grow on a resume; a rerun asking for fewer epochs than ``out`` holds
    returned the longer run's model and reported ``epochs=3`` for ``epochs=2``."""
    write, settings = CASES["node"]
    g = write(tmp_path / "g")
    train(g, TrainConfig(**settings, epochs=3), out=tmp_path / "run")
    with pytest.raises(GraphsysError, match="holds a run of 3 epochs, more than epochs=2"):
        train(g, TrainConfig(**settings, epochs=2), out=tmp_path / "run")


def test_a_resume_with_other_features_is_refused(tmp_path):
    """The node task's caller features are no setting of TrainConfig: a run of 1 epoch on
    an array resumed to 2 on another array, on a column, or on the default ``feat``,
    mixing two trainings; the same array still resumes."""
    write, settings = CASES["node"]
    g = write(tmp_path / "g")
    x1, x2 = (np.random.default_rng(s).normal(size=(200, 8)).astype(np.float32) for s in (0, 1))
    train(g, TrainConfig(**settings, epochs=1), out=tmp_path / "a", features=x1)
    for k, other in enumerate([{"features": x2}, {"features": "feat"}, {}]):
        shutil.copytree(tmp_path / "a", tmp_path / f"b{k}")
        with pytest.raises(GraphsysError, match="holds a run with other settings, features"):
            train(g, TrainConfig(**settings, epochs=2), out=tmp_path / f"b{k}", **other)
    assert train(g, TrainConfig(**settings, epochs=2), out=tmp_path / "a",
                 features=x1.copy()).epochs == 2


def test_a_resumed_run_reports_progress_from_the_epochs_done(tmp_path):
    """A resumed run's progress starts at the batches of its epochs done: it reported
    from 0 and ended at 2 of 3 epochs' batches (``done < total`` at its end)."""
    write, settings = CASES["node"]
    g = write(tmp_path / "g")
    train(g, TrainConfig(**settings, epochs=1), out=tmp_path / "run")
    steps = []
    train(g, TrainConfig(**settings, epochs=3), out=tmp_path / "run", progress=steps.append)
    assert steps[-1].done == steps[-1].total and steps[0].done == steps[-1].total // 3 + 1


def test_a_grown_patience_trains_on_after_an_early_stop(tmp_path):
    """``patience`` may grow on a resume: a run stopped by patience 1 after 4 of 6 epochs,
    rerun with patience 4, returned at once (4 epochs); it now trains on, to the answer of
    a patience-4 run from the start (6 epochs)."""
    write, settings = CASES["link"]
    g = write(tmp_path / "g")
    s = {**settings, "lr": 0.05, "epochs": 6}
    assert train(g, TrainConfig(**s, patience=1), out=tmp_path / "b").epochs == 4
    resumed = train(g, TrainConfig(**s, patience=4), out=tmp_path / "b")
    straight = train(g, TrainConfig(**s, patience=4), out=tmp_path / "a")
    assert resumed.epochs == straight.epochs == 6
    assert _timeless(resumed.history) == _timeless(straight.history)
    assert resumed.metrics == straight.metrics


def test_a_resume_on_another_device_type_is_refused(tmp_path, monkeypatch):
    """``out/last`` holds the generators of the run's device type (CPU, plus CUDA's on
    CUDA): a CUDA run resumed on the CPU took the CPU part and went on with other
    numerics, and a CPU run resumed on CUDA was called a damaged file. Simulated here with
    a CUDA-length row written by a CPU run."""
    import graphsys.gnn.fit as fit

    write, settings = CASES["node"]
    g = write(tmp_path / "g")
    cpu = fit.rng_state
    monkeypatch.setattr(fit, "rng_state", lambda device: torch.cat(
        [cpu(device), torch.zeros(16, dtype=torch.uint8)]))
    train(g, TrainConfig(**settings, epochs=1), out=tmp_path / "run")
    monkeypatch.setattr(fit, "rng_state", cpu)
    with pytest.raises(GraphsysError, match="saved by a run on another device type than cpu"):
        train(g, TrainConfig(**settings, epochs=2), out=tmp_path / "run")
