"""Fixtures shared by the command tests."""

from __future__ import annotations

import importlib
import shutil

import numpy as np
import pytest

from graphsys import cli
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def _imports(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


@pytest.fixture
def main(monkeypatch):
    """cli.main over the command modules that import in this checkout (other commands may
    be mid-development)."""
    present = tuple(c for c in cli.COMMANDS if _imports(f"graphsys.commands.{c}"))
    monkeypatch.setattr(cli, "COMMANDS", present)
    return cli.main


@pytest.fixture
def tree_bytes():
    """A function: every regular file under a directory, by relative name, with its bytes
    (to compare a directory before and after a command)."""
    def files(path) -> dict:
        return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*")
                if p.is_file()}
    return files


@pytest.fixture
def push_twins(tmp_path, monkeypatch):
    """Two copies of a 40-node graph without a push index (``g``, ``stored``), on which an
    in-memory PageRank stores one (the size threshold lowered to 0)."""
    pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")
    monkeypatch.setattr(pagerank_module, "PUSH_STORE_MIN_BYTES", 0)
    n = 40
    src = np.repeat(np.arange(n), 5)
    dst = (src * 7 + np.tile(np.arange(1, 6), n)) % n
    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{a}\t{b}\n" for a, b in zip(src, dst)))
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=2))
    shutil.copytree(tmp_path / "g", tmp_path / "stored")
    return tmp_path / "g", tmp_path / "stored"
