"""``Graph.degrees`` reads the stored CSR/CSC row offsets where the graph has them, with the
degrees the bucket stream counts."""

from __future__ import annotations

import numpy as np
import pytest

import graphsys
from graphsys.storage import edges
from graphsys.storage.adjacency_index import build_index


@pytest.mark.parametrize("undirected", [False, True])
def test_degrees_from_the_index_equal_the_streamed_ones(tmp_path, monkeypatch, undirected):
    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, 300, 2000), rng.integers(0, 300, 2000)
    g = graphsys.from_numpy(src, dst, tmp_path / "g", num_nodes=320, partitions=3,
                            undirected=undirected)
    streamed = {d: g.degrees(direction=d) for d in ("out", "in", "both")}
    build_index(g, ("csr", "csc"))
    g = graphsys.open_graph(tmp_path / "g")

    def no_stream(*a, **k):
        raise AssertionError("streamed the buckets")
    monkeypatch.setattr(edges, "degrees", no_stream)
    for d, want in streamed.items():
        got = g.degrees(direction=d)
        assert got.dtype == np.int64 and np.array_equal(got, want)


def test_one_index_missing_streams(tmp_path):
    g = graphsys.from_numpy([0, 1, 2], [1, 2, 0], tmp_path / "g")
    build_index(g, ("csr",))
    g = graphsys.open_graph(tmp_path / "g")
    assert g.degrees(direction="both").tolist() == [2, 2, 2]
    with pytest.raises(graphsys.errors.GraphsysError, match="direction"):
        g.degrees(direction="sideways")
