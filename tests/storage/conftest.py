"""Shared fixture of the storage tests: a small 2-partition graph."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


@pytest.fixture
def graph_dir(tmp_path):
    rng = np.random.default_rng(0)
    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{a}\t{b}\n" for a, b in rng.integers(0, 100, (2000, 2))))
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=2))
    return tmp_path / "g"
