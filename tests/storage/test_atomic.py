"""Crash-safe writing helpers: creating an output directory, writing a file beside a temp."""

from __future__ import annotations

import os

import pytest
import torch

from graphsys.errors import GraphsysError
from graphsys.gnn.checkpoint import save_checkpoint
from graphsys.storage.atomic import atomic_path, make_directory, write_bytes_atomic


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


def test_temp_files_of_killed_writers_are_removed_by_the_next_write(tmp_path):
    """A writer killed between writing its temp file and the rename left
    ``.NAME.tmp-PID-HEX`` beside the file for good: one more per crash."""
    import subprocess
    import sys

    from graphsys.storage.atomic import write_bytes_atomic

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f".model.json.tmp-{dead}-0a1b2c3d"
    live = tmp_path / f".model.json.tmp-{os.getpid()}-0a1b2c3d"  # a writer still at work
    other = tmp_path / f".other.json.tmp-{dead}-0a1b2c3d"  # another file's: left alone
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    write_bytes_atomic(tmp_path / "model.json", b"{}")
    assert not stale.exists() and live.exists() and other.exists()
    with atomic_path(tmp_path / "other.json") as tmp:
        tmp.write_bytes(b"{}")
    assert not other.exists() and (tmp_path / "other.json").read_bytes() == b"{}"


def test_a_file_another_writer_created_meanwhile_is_kept_without_overwrite(tmp_path):
    # two exports (or generates) to one new --out at once: both passed the check up front
    # and the second rename replaced the first's file, though neither had --overwrite
    out = tmp_path / "e.tsv"
    with pytest.raises(GraphsysError, match=r"e.tsv: was created by another process while "
                                            r"this one wrote; nothing written"):
        with atomic_path(out) as tmp:
            tmp.write_text("mine\n")
            out.write_text("theirs\n")                 # the other writer finished first
    assert out.read_text() == "theirs\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.tsv"]
    with atomic_path(out, overwrite=True) as tmp:     # asked for: replaced
        tmp.write_text("mine\n")
    assert out.read_text() == "mine\n"
    # profile's --report and its JSON, written by write_bytes_atomic, the same way
    with pytest.raises(GraphsysError, match="was created by another process"):
        write_bytes_atomic(out, b"report", overwrite=False)
    assert out.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.tsv"]
