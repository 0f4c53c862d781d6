"""Crash-safe writing helpers: creating an output directory, writing a file beside a temp."""

from __future__ import annotations

import pytest
import torch

from graphsys.errors import GraphsysError
from graphsys.gnn.checkpoint import save_checkpoint
from graphsys.storage.atomic import atomic_path, make_directory


def test_make_directory_creates_parents_and_accepts_an_existing_one(tmp_path):
    out = tmp_path / "a" / "b"
    make_directory(out, "the run directory")
    make_directory(out, "the run directory")
    assert out.is_dir()


def test_make_directory_refuses_in_one_line_under_a_file(tmp_path):
    (tmp_path / "FILE").write_text("")
    with pytest.raises(GraphsysError, match=r"/FILE/sub: cannot create the run directory \("):
        make_directory(tmp_path / "FILE" / "sub", "the run directory")


def test_a_checkpoint_under_a_file_is_refused_naming_it(tmp_path):
    (tmp_path / "FILE").write_text("")
    with pytest.raises(GraphsysError, match="cannot create the checkpoint directory"):
        save_checkpoint(tmp_path / "FILE" / "ckpt", {"w": torch.zeros(2)}, {})


@pytest.mark.parametrize("parent", ["missing", "FILE"])
def test_atomic_path_refuses_a_missing_directory_in_one_line(tmp_path, parent):
    (tmp_path / "FILE").write_text("")
    with pytest.raises(GraphsysError, match=r"/out.parquet: cannot write in .* \(no such dir"):
        with atomic_path(tmp_path / parent / "out.parquet"):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]
