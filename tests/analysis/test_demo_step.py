"""``graphsys.analysis.profile.demo_step``: the report the demo writes."""

from __future__ import annotations

import json

import numpy as np

from graphsys.analysis.profile import demo_step
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def test_demo_step_writes_report(tmp_path):
    rng = np.random.default_rng(2)
    f = tmp_path / "e.tsv"
    f.write_text("".join(f"{s}\t{d}\n" for s, d in rng.integers(0, 80, (300, 2))))
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=2))
    out = demo_step(tmp_path / "g", tmp_path / "out")
    assert (tmp_path / "out" / "profile.html").is_file()
    doc = json.loads((tmp_path / "out" / "profile.json").read_text())
    assert doc["workload"]["supersteps"] == 5
    assert out["invocations"] == doc["kernels"]["invocations"] > 0
    assert set(out["simt"]) == {"thread-per-vertex", "warp-per-vertex", "cta-per-vertex",
                                "edge-balanced"}
    assert out["advice"]
