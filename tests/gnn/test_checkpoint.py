"""Issue 13, defects 1 and 4: GNN checkpoints commit atomically, carry a sha256 per tensor
checked on load, and never hold (or accept) non-finite values; a diverged run stops."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from graphsys.errors import FormatError, GraphsysError
from graphsys.gnn import TrainConfig, train
from graphsys.gnn.checkpoint import load_checkpoint, save_checkpoint

from .conftest import sbm_graph

#: A builtin model's config as GNN.config() writes it (load_checkpoint checks it)
CFG = {"model": "sage", "in_dim": 4, "hidden_dim": 8, "out_dim": 2, "num_layers": 2,
       "dropout": 0.5, "heads": 8}


def _state(value: float) -> dict[str, torch.Tensor]:
    return {"w": torch.full((3, 4), value), "b": torch.arange(5, dtype=torch.float32)}


def test_save_load_round_trip_and_old_versions_removed(tmp_path):
    ck = tmp_path / "ck"
    save_checkpoint(ck, _state(1.0), CFG, {"k": 1})
    save_checkpoint(ck, _state(2.0), CFG, {"k": 2})
    state, config, meta = load_checkpoint(ck)
    assert float(state["w"][0, 0]) == 2.0 and meta == {"k": 2} and config == CFG
    assert sorted(p.name for p in ck.iterdir()) == ["model.json", "tensors.v000002"]


def test_flipped_tensor_byte_is_refused(tmp_path):
    ck = tmp_path / "ck"
    save_checkpoint(ck, _state(1.0), CFG, {})
    f = next((ck / "tensors.v000001").glob("*.npy"))
    raw = bytearray(f.read_bytes())
    raw[-1] ^= 0x01
    f.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=r"\.npy: sha256 mismatch"):
        load_checkpoint(ck)


def test_non_finite_tensors_are_never_saved_or_loaded(tmp_path):
    ck = tmp_path / "ck"
    save_checkpoint(ck, _state(1.0), CFG, {})
    with pytest.raises(GraphsysError, match="NaN or infinity; not saved"):
        save_checkpoint(ck, _state(float("nan")), CFG, {})
    assert float(load_checkpoint(ck)[0]["w"][0, 0]) == 1.0  # the last good one
    # a NaN written with a matching hash (not by graphsys) is refused on load too
    header = json.loads((ck / "model.json").read_text())
    import hashlib
    import io

    entry = header["tensors"]["w"]
    buf = io.BytesIO()
    np.save(buf, np.full((3, 4), np.nan, np.float32), allow_pickle=False)
    (ck / entry["file"]).write_bytes(buf.getvalue())
    entry["sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()
    (ck / "model.json").write_text(json.dumps(header))
    with pytest.raises(FormatError, match="NaN or infinity"):
        load_checkpoint(ck)


@pytest.mark.parametrize("file", ["/etc/passwd", "../x.npy", "tensors.v000001/../../x.npy"])
def test_tensor_paths_stay_inside(tmp_path, file):
    ck = tmp_path / "ck"
    save_checkpoint(ck, _state(1.0), CFG, {})
    header = json.loads((ck / "model.json").read_text())
    header["tensors"]["w"]["file"] = file
    (ck / "model.json").write_text(json.dumps(header))
    with pytest.raises(FormatError, match="inside the checkpoint"):
        load_checkpoint(ck)


_KILLED_SAVE = """
import os, sys, torch
from graphsys.gnn import checkpoint
from graphsys.storage import atomic

calls = {"n": 0}
real = atomic.write_bytes_atomic
def dying(path, data):
    calls["n"] += 1
    if calls["n"] == 2:          # after the first tensor of the second save
        os._exit(9)              # as kill -9 would: no cleanup runs
    real(path, data)
checkpoint.write_bytes_atomic = dying
checkpoint.save_checkpoint(sys.argv[1], {"a": torch.full((2,), 2.0),
                                         "b": torch.full((2,), 2.0)},
                           {"model": "sage", "in_dim": 4, "hidden_dim": 8, "out_dim": 2,
                            "num_layers": 2, "dropout": 0.5, "heads": 8}, {"save": 2})
"""


def test_kill_during_save_leaves_the_previous_checkpoint_whole(tmp_path):
    ck = tmp_path / "ck"
    save_checkpoint(ck, {"a": torch.full((2,), 1.0), "b": torch.full((2,), 1.0)}, CFG,
                    {"save": 1})
    proc = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(ck)],
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 9
    state, _, meta = load_checkpoint(ck)  # never a mix of two saves
    assert meta == {"save": 1}
    assert float(state["a"][0]) == 1.0 and float(state["b"][0]) == 1.0
    save_checkpoint(ck, _state(3.0), CFG, {"save": 3})  # the torn version is cleared
    assert load_checkpoint(ck)[2] == {"save": 3}
    assert [p.name for p in ck.glob("tensors.v*")] == ["tensors.v000003"]


def test_diverged_gnn_training_stops_with_one_line(tmp_path):
    g = sbm_graph(tmp_path)
    with pytest.raises(GraphsysError, match=r"training diverged: .*epoch \d+.* keeps the"):
        train(g, TrainConfig(model="sage", fanouts=[3, 3], hidden=8, epochs=3, lr=1e30,
                             seed=0), out=tmp_path / "run")


def test_a_non_finite_optimiser_state_stops_training_with_one_line(tmp_path):
    """Features of 1e30 (finite) square to infinity in Adam's second moment: every
    parameter stayed finite, and frozen (its update 0), so the run reported success
    without an ``out`` and failed at the save of ``out/last`` with one; it now stops
    after the epoch as a diverged run."""
    g = sbm_graph(tmp_path)
    x = np.full((g.num_nodes(), 8), 1e30, np.float32)
    with pytest.raises(GraphsysError, match="^training diverged: optimiser state exp_avg_sq "
                                            "of parameter 0 non-finite after epoch 1"):
        train(g, TrainConfig(model="sage", fanouts=[3, 3], hidden=8, epochs=2), features=x)
    # before its first evaluation the run has no checkpoint: the line no longer says it has
    with pytest.raises(GraphsysError, match=r"epoch 1 \(lower lr\?\)$"):
        train(g, TrainConfig(model="sage", fanouts=[3, 3], hidden=8, epochs=2), features=x,
              out=tmp_path / "run")


def test_full_disk_during_save_is_one_line_and_leaves_the_old_save(tmp_path, monkeypatch):
    import errno

    from graphsys.gnn import checkpoint

    ck = tmp_path / "ck"
    save_checkpoint(ck, _state(1.0), CFG, {"save": 1})
    real = checkpoint.write_bytes_atomic

    def full(path, data):
        if path.name.endswith(".npy") and "v000002" in str(path) and path.name != "0000.npy":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data)

    monkeypatch.setattr(checkpoint, "write_bytes_atomic", full)
    with pytest.raises(GraphsysError, match="No space left on device.*previous one"):
        save_checkpoint(ck, _state(2.0), CFG, {"save": 2})
    assert sorted(p.name for p in ck.iterdir()) == ["model.json", "tensors.v000001"]
    assert load_checkpoint(ck)[2] == {"save": 1}


@pytest.mark.parametrize("field,value,says", [
    ("config.dropout", float("nan"), "config.dropout must be a finite number in [0, 1), got nan"),
    ("config.hidden_dim", 0, "config.hidden_dim must be a positive integer, got 0"),
    ("config.hidden_dim", "64", "config.hidden_dim must be a positive integer, got '64'"),
    ("config.model", "mlp", "config.model is 'mlp', not one of"),
    ("config.extra", 1, "config.extra: not a field of a sage model"),
    ("meta.train_config.weight_decay", -1.0,
     "meta.train_config.weight_decay must be a finite number >= 0, got -1.0"),
    ("meta.train_config.lr", "fast", "meta.train_config.lr must be a finite number > 0"),
    ("meta.train_config.bogus", 3, "meta.train_config.bogus is not a GNN training setting"),
    ("config.num_layers", 10 ** 5, "config.num_layers is 100000, more than the 2 tensors"),
    ("meta.train_config.model", "gat", "meta.train_config.model is 'gat', config.model "
                                       "'sage'"),
])
def test_hand_edited_model_json_is_refused_naming_the_field(tmp_path, field, value, says):
    """model.json's config and training settings are checked field by field on load: a
    hand edit is one line naming the file and the field, never a traceback later."""
    from graphsys.gnn.loop import config_json

    ck = tmp_path / "ck"
    save_checkpoint(ck, _state(1.0), CFG, {"train_config": config_json(TrainConfig())})
    load_checkpoint(ck)
    header = json.loads((ck / "model.json").read_text())
    where = header
    *path, last = field.split(".")
    for key in path:
        where = where[key]
    where[last] = value
    (ck / "model.json").write_text(json.dumps(header))
    with pytest.raises(FormatError) as err:
        load_checkpoint(ck)
    assert str(err.value).startswith(f"{ck / 'model.json'}: ") and says in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("shape", [[float("inf")], [2.5], [True], ["3"], [-1]])
def test_a_tensor_shape_of_other_than_counts_is_refused(tmp_path, shape):
    # infinity raised a raw OverflowError; 2.5 was read as 2
    ck = tmp_path / "ck"
    save_checkpoint(ck, _state(1.0), CFG, {})
    header = json.loads((ck / "model.json").read_text())
    name = next(iter(header["tensors"]))
    header["tensors"][name]["shape"] = shape
    (ck / "model.json").write_text(json.dumps(header))
    with pytest.raises(FormatError, match=re.escape(f"tensor {name!r} has shape {shape!r}, "
                                                    f"not a list of non-negative integers")):
        load_checkpoint(ck)


@pytest.mark.parametrize("field", ["hidden_dim", "in_dim"])
def test_dimensions_the_tensors_lack_are_refused_before_the_model_is_built(field):
    """An edited ``hidden_dim`` of 10**8 (model.json carries no checksum) had the readers
    build the model at that size (gigabytes, tens of seconds) before comparing it with the
    stored tensors; :func:`build_to_fit` compares a shape-only (``meta``) build first."""
    from graphsys.gnn.checkpoint import build_to_fit
    from graphsys.gnn.model import GNN

    state = {f"model.{k}": v for k, v in GNN(**CFG).state_dict().items()}
    assert build_to_fit(lambda: GNN(**CFG), state, "model.", "ck").config() == CFG
    built = []

    def big():
        built.append(torch.empty(0).device.type)
        return GNN(**{**CFG, field: 10 ** 8})
    with pytest.raises(FormatError, match=f"the model rebuilt from its config has .*{10 ** 8}"):
        build_to_fit(big, state, "model.", "ck")
    assert built == ["meta"]      # never built with memory
    with pytest.raises(FormatError, match="ck: the model cannot be built from its config"):
        build_to_fit(lambda: GNN(**{**CFG, field: 10 ** 19}), state, "model.", "ck")


def test_training_settings_the_tensors_lack_are_refused_before_a_task_is_built():
    """A link checkpoint's meta.train_config.hidden of 3*10**7 sized the LinkTask that
    recommend and evaluate rebuild (8 GB of RSS, then torch's raw allocation error): the
    settings must now agree with config.hidden_dim, and the config with the tensors."""
    from graphsys.gnn.checkpoint import check_task_dimensions
    from graphsys.gnn.model import GNN

    state = {f"model.{k}": v for k, v in GNN(**CFG).state_dict().items()}
    check_task_dimensions("ck", CFG, TrainConfig(hidden=8), state)
    big = 3 * 10 ** 7
    with pytest.raises(FormatError, match=f"hidden is {big}, config.hidden_dim 8"):
        check_task_dimensions("ck", CFG, TrainConfig(hidden=big), state)
    with pytest.raises(FormatError, match="the model rebuilt from its config has"):
        check_task_dimensions("ck", {**CFG, "hidden_dim": big}, TrainConfig(hidden=big), state)


def test_an_rgcn_checkpoint_without_its_graph_is_one_line(tmp_path):
    """meta.graph missing (or not a path) was a KeyError or AttributeError in load_rgcn."""
    from graphsys.gnn.rgcn_link import load_rgcn

    config = {"model": "rgcn", "num_nodes": {"node": 4}, "num_relations": 1, "hidden": 8,
              "num_layers": 1, "num_blocks": 0, "num_bases": 0, "dropout": 0.0}
    for meta in ({}, {"graph": 3}):
        save_checkpoint(tmp_path / "ck", _state(1.0), config, meta)
        with pytest.raises(FormatError, match="model.json: meta.graph is (missing|3), not a "
                                              "string"):
            load_rgcn(tmp_path / "ck")


# -- which graph a checkpoint's rows belong to ---------------------------------------------

def _kg(root, partitions):
    """A small typed graph with train/valid/test edge sets, for R-GCN."""
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    rows = [(h, h % 3, (h * 7 + h % 3) % 40) for h in range(40)]
    root.mkdir(parents=True, exist_ok=True)
    for name, part in [("train", rows[:30]), ("valid", rows[30:35]), ("test", rows[35:])]:
        (root / f"{name}.tsv").write_text("".join(f"e{h}\tr{r}\te{t}\n" for h, r, t in part))
    ingest_sources([EdgeSource([root / f"{n}.tsv"], edge_set=n, src_col=0, rel_col=1, dst_col=2)
            for n in ("train", "valid", "test")], root / "g",
           IngestOptions(partitions=partitions))
    return root / "g"


def _use(kind, ckpt, out):
    """Every reader of a checkpoint of ``kind`` on its recorded graph."""
    from graphsys.gnn import embed_checkpoint
    from graphsys.gnn.recommendation import evaluate, recommend
    from graphsys.gnn.rgcn_link import evaluate as evaluate_rgcn

    if kind in ("item", "pairs"):
        return [lambda: recommend(ckpt, [0, 1], k=3).to_pylist(),
                lambda: evaluate(ckpt, ks=[5])]
    if kind == "rgcn":
        return [lambda: evaluate_rgcn(ckpt), lambda: embed_checkpoint(ckpt, out)]
    return [lambda: embed_checkpoint(ckpt, out)]


@pytest.mark.parametrize("kind", ["item", "pairs", "node", "rgcn"])
def test_rows_never_attach_to_a_reingested_graph_with_other_partitions(tmp_path, kind):
    """The same edges ingested again at the checkpoint's graph path into another partition
    count: the same node counts, other nodes at each row. Every reader of the checkpoint
    (recommending, evaluating, embedding) refuses it in one line; re-ingested as before, it
    gives the same answers."""
    import shutil

    from .conftest import write_bipartite, write_sbm

    def build(partitions):
        if kind in ("item", "pairs"):
            return write_bipartite(tmp_path / "g", partitions=partitions, edge_sets=True)
        if kind == "rgcn":
            return _kg(tmp_path / "kg", partitions)
        return write_sbm(tmp_path / "sbm", partitions=partitions)

    cfg = {"item": dict(task="link", model="pinsage", hidden=8, epochs=1, fanouts=[3, 3]),
           "pairs": dict(task="link", model="sage", link_split="random", hidden=8,
                         epochs=1, fanouts=[3, 3]),
           "node": dict(model="sage", fanouts=[3, 3], hidden=8, epochs=1),
           "rgcn": dict(task="link", model="rgcn", hidden=8, epochs=1, batch_size=20)}[kind]
    g = build(2)
    train(g, TrainConfig(**cfg), out=tmp_path / "run")
    ckpt = tmp_path / "run" / "checkpoint"
    first = [call() for call in _use(kind, ckpt, tmp_path / "e1")]
    shutil.rmtree(g)
    build(3)
    for call in _use(kind, ckpt, tmp_path / "e2"):
        with pytest.raises(GraphsysError, match=r"in 2 partitions .* has .* in 3 ") as err:
            call()
        assert "\n" not in str(err.value)
    shutil.rmtree(g)
    build(2)                                    # as before: the same nodes in each row
    again = [call() for call in _use(kind, ckpt, tmp_path / "e3")]
    same = [(a, b) for a, b in zip(first, again) if not (isinstance(a, dict) and "out" in a)]
    assert all(a == b for a, b in same)


def test_losses_held_on_the_device_read_the_same_and_name_the_diverged_batch(tmp_path,
                                                                               monkeypatch):
    """Off the CPU the step losses are read once an epoch (no host sync a step): the epoch's
    loss is the per-step one, and a diverged run still names its first bad batch."""
    from graphsys.gnn import fit

    g = sbm_graph(tmp_path)
    cfg = TrainConfig(model="sage", fanouts=[3, 3], hidden=8, epochs=2, seed=0)
    each = train(g, cfg, out=tmp_path / "each")
    monkeypatch.setattr(fit, "READ_EACH_STEP", ())
    held = train(g, cfg, out=tmp_path / "held")
    assert [r["loss"] for r in held.history] == [r["loss"] for r in each.history]
    with pytest.raises(GraphsysError, match=r"training diverged: loss nan in epoch \d+, "
                                            r"batch \d+.* keeps the"):
        train(g, TrainConfig(model="sage", fanouts=[3, 3], hidden=8, epochs=3, lr=1e30,
                             seed=0), out=tmp_path / "run")


def test_a_failed_flush_after_the_commit_keeps_the_tensors_model_json_names(tmp_path,
                                                                             monkeypatch):
    """The directory fsync after model.json's rename failing once made the save delete the
    tensors the new model.json already named: the checkpoint no longer loaded."""
    from graphsys.storage import atomic

    ck = tmp_path / "ck"
    save_checkpoint(ck, _state(1.0), CFG)
    real = atomic.fsync_path

    def fail_on_the_checkpoint_directory(path):
        if path == ck:
            raise OSError(5, "Input/output error")
        real(path)

    monkeypatch.setattr(atomic, "fsync_path", fail_on_the_checkpoint_directory)
    with pytest.raises(GraphsysError, match="it holds the previous save or this one"):
        save_checkpoint(ck, _state(2.0), CFG)
    monkeypatch.setattr(atomic, "fsync_path", real)
    assert float(load_checkpoint(ck)[0]["w"][0, 0]) == 2.0
    save_checkpoint(ck, _state(3.0), CFG)  # the next save removes the older versions
    assert sorted(p.name for p in ck.iterdir()) == ["model.json", "tensors.v000003"]
