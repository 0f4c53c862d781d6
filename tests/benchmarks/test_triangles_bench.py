"""The triangle benchmark's sides on a small graph: every GraphBLAS method and presort,
both ways, and every other peer count what graphsys counts (the benchmark asserts it)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import harness  # noqa: E402
from benchmarks.mining import triangles as bench  # noqa: E402


def test_every_side_counts_the_same(tmp_path):
    import graphsys

    pytest.importorskip("igraph")
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 60, 400), rng.integers(0, 60, 400)
    src[:40], dst[:40] = 0, rng.integers(1, 60, 40)  # a hub: presorts differ
    graphsys.from_numpy(src, dst, tmp_path / "g", partitions=3)
    bench.sym_index(tmp_path / "g")
    run = harness.Run("mining/triangles")
    row = bench.compare(run, "small", tmp_path / "g", list(bench.PEERS), 2, 1)
    want = len({frozenset(t) for t in _triangles(src, dst)})
    assert row["triangles"] == want
    ran = [v for p in row["peers"].values() for v in p["variants_s"]]
    if "graphblas" in row["peers"]:
        assert len([v for v in ran if v.startswith(("LL/", "LUT/", "UL/"))]) == 14
    assert row["ratio_prebuilt"] > 0 and row["fastest_prebuilt"]


def _triangles(src, dst):
    adj: dict[int, set[int]] = {}
    for a, b in zip(src.tolist(), dst.tolist()):
        if a != b:
            adj.setdefault(a, set()).add(b)
            adj.setdefault(b, set()).add(a)
    for u, nu in adj.items():
        for v in nu:
            for w in nu & adj[v]:
                yield (u, v, w)


def test_graph500_scale():
    assert bench.graph500_nodes(2_000_000) == 1 << 17
    assert bench.graph500_nodes(100_000_000) == 1 << 23
