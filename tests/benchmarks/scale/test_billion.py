"""benchmarks/scale/billion.py at a CI size: every stage runs and stays inside its memory bound
(peak anonymous RSS; times are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "benchmarks" / "scale" / "billion.py"


def test_every_stage_within_its_memory_bound(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--edges", "2M",
         "--partitions", "4", "--memory-limit", "256MB", "--work", str(tmp_path),
         "--iters", "3", "--sample-batches", "5", "--gnn-batches", "40", "--batch-size", "256",
         "--push", "--symmetric", "--check-bounds"], capture_output=True, text=True, timeout=900)
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    stages = {x["stage"]: x for x in lines[1:]}
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert set(stages) == {"generate", "baseline", "ingest", "index", "pagerank_ooc",
                           "pagerank_memory", "sample", "features", "gnn", "triangles"}
    for stage, line in stages.items():
        assert line["within_bound"], stage
        assert 0 < line["peak_rss_anon_bytes"] <= line["peak_rss_bytes"]
    assert stages["ingest"]["edges"] == 2_000_000
    # --push: the in-memory stage pushes over the stored layout
    assert stages["pagerank_memory"]["method"] == "fused-pagerank (push index, degree order)"
    # the triangles stage counts out of core within the budget, as in memory
    from graphsys import mining, open_graph

    assert stages["triangles"]["triangles"] == mining.triangle_count(
        open_graph(tmp_path / "graph"), mode="memory") > 0
    gnn = stages["gnn"]
    assert gnn["test_accuracy"] > 2 * gnn["chance_accuracy"]
    assert 0 <= gnn["sampler_wait_share"] <= 1


def test_pagerank_stages_rerun_on_an_existing_graph_without_writing_it(tmp_path):
    import numpy as np

    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    rng = np.random.default_rng(1)
    edges = tmp_path / "e.tsv"
    edges.write_text("".join(f"{a}\t{b}\n" for a, b in rng.integers(0, 300, (3000, 2))))
    graph = tmp_path / "g"
    ingest_sources([EdgeSource([edges])], graph, IngestOptions(partitions=2))
    before = {f: (f.stat().st_size, f.stat().st_mtime_ns) for f in graph.rglob("*")}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--graph-dir", str(graph),
         "--work", str(tmp_path / "work"), "--stages", "pagerank", "--iters", "2",
         "--check-bounds"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    header, *lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert [x["stage"] for x in lines] == ["pagerank_ooc", "pagerank_memory"]
    assert header["graph_edges"] == 3000 and header["graph_nodes"] <= 300
    assert all(x["edges"] == 3000 * x["iterations"] and x["within_bound"] for x in lines)
    assert {f: (f.stat().st_size, f.stat().st_mtime_ns) for f in graph.rglob("*")} == before
