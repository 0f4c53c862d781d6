"""Resuming a checkpoint may change optimisation keys (recorded in its history), never the
model's shape."""

from __future__ import annotations

import json

import pytest

from graphsys.embed import Embeddings, load_config, train
from graphsys.errors import GraphsysError


@pytest.mark.device
def test_resume_with_another_lr_is_recorded(kg4, tmp_path, small):
    out = tmp_path / "ck"
    train(kg4, load_config(None, small + ["num_epochs=1"]), out=out)
    emb = train(kg4, load_config(None, small + ["num_epochs=2", "lr=0.05", "batch_size=50"]),
                out=out).embeddings
    meta = json.loads((out / "checkpoint.json").read_text())
    assert meta["epochs_done"] == 2
    assert meta["history"] == [{"epochs_done": 1, "version": 1,
                                "changed": {"batch_size": [100, 50], "lr": [0.1, 0.05]}}]
    assert json.loads((out / "config.json").read_text())["lr"] == 0.05
    assert emb.config.lr == 0.05
    # resuming again with the same settings adds nothing; the history survives commits
    train(kg4, load_config(None, small + ["num_epochs=3", "lr=0.05", "batch_size=50"]), out=out)
    assert len(json.loads((out / "checkpoint.json").read_text())["history"]) == 1
    assert Embeddings.load(out).meta["epochs_done"] == 3


@pytest.mark.device
def test_resume_with_another_shape_is_refused(kg4, tmp_path, small):
    out = tmp_path / "ck"
    train(kg4, load_config(None, small + ["num_epochs=1"]), out=out)
    with pytest.raises(GraphsysError, match="dimension=32.*dimension=16.*may change only"):
        train(kg4, load_config(None, small + ["num_epochs=2", "dimension=16"]), out=out)


def test_resume_with_fewer_epochs_than_done_is_refused(kg1, tmp_path):
    # num_epochs=1 on a 2-epoch checkpoint trained nothing and printed "trained 2 epochs":
    # the model asked for was never made; the same count resumes as a no-op
    from graphsys.errors import ConfigError
    out = tmp_path / "ck"
    cfg = ["dimension=8", "batch_size=500"]
    train(kg1, load_config(None, cfg + ["num_epochs=2"]), out=out)
    with pytest.raises(ConfigError, match="^num_epochs: 1 is fewer than the 2 epochs"):
        train(kg1, load_config(None, cfg + ["num_epochs=1"]), out=out)
    assert train(kg1, load_config(None, cfg + ["num_epochs=2"]), out=out).summary()["epochs"] == 2
