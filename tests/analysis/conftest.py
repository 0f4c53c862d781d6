"""Shared fixtures of the workload-profiling tests."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A seeded 300-node, 1,000-edge graph in 3 partitions whose first 300 edges leave
    nodes 0..3 (hubs: skewed out-degrees for the load-balance models), ingested from a
    TSV file."""
    tmp = tmp_path_factory.mktemp("workloads")
    rng = np.random.default_rng(3)
    src = np.concatenate([rng.integers(0, 4, 300), rng.integers(0, 300, 700)])
    dst = rng.integers(0, 300, len(src))
    f = tmp / "e.tsv"
    f.write_text("".join(f"{s}\t{d}\n" for s, d in zip(src, dst)))
    ingest_sources([EdgeSource([f])], tmp / "g", IngestOptions(partitions=3))
    return open_graph(tmp / "g")
