"""The graph as of a time (graphsys.storage.time_view): every engine that reads the view
sees exactly the edges stamped <= until, checked against networkx/scipy on those edges."""

from __future__ import annotations

import dataclasses
import datetime

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest

import graphsys
from graphsys.errors import GraphsysError, ParameterError
from graphsys.storage.ingest_inputs import IngestOptions
from graphsys.storage.time_view import TimeView, parse_time

#: the partition-count option's name (renamed by the storage API)
PARTS = "partitions" if "partitions" in {f.name for f in dataclasses.fields(IngestOptions)} \
    else "num_partitions"


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    rng = np.random.default_rng(3)
    n, m = 60, 700
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    ts = rng.integers(0, 50, m)                      # many equal stamps
    w = rng.random(m).astype(np.float32) + 0.5
    edges = pa.table({"src": src * 7 + 3, "dst": dst * 7 + 3, "w": w, "timestamp": ts})
    d = tmp_path_factory.mktemp("tv")
    g = graphsys.from_arrow(edges, d / "g", weight_col="w", edge_columns=["timestamp"],
                            **{PARTS: 3})
    return g, (src * 7 + 3, dst * 7 + 3, w, ts)


@pytest.mark.parametrize("t", [-1, 0, 17, 17.9, 49, 1000])
def test_view_edges_are_the_ones_stamped_until(timed, t):
    g, (src, dst, w, ts) = timed
    view = graphsys.open_graph(g.path, until=t)
    keep = ts <= t
    assert view.num_nodes() == g.num_nodes() and view.num_edges() == int(keep.sum())
    assert view.bucket_counts().sum() == keep.sum()
    got = sorted(zip(*[np.concatenate(x).tolist() if x else [] for x in zip(*[
        (view.to_original(s), view.to_original(d), ww, tt)
        for (s, d, _, ww), tt in zip(view.iter_edges(), view.edge_column("timestamp"))])]))
    want = sorted(zip(src[keep].tolist(), dst[keep].tolist(), w[keep].tolist(),
                      ts[keep].tolist()))
    assert got == want
    # the CSR (built from the view: no stored index serves it) against scipy's
    import scipy.sparse as sp

    ids = view.to_internal(src[keep]), view.to_internal(dst[keep])
    ref = sp.csr_matrix((w[keep].astype(np.float64), ids), shape=(g.num_nodes(),) * 2)
    assert abs(view.csr().to_scipy() - ref).max() < 1e-5 if keep.any() else \
        view.csr().indices.size == 0
    np.testing.assert_array_equal(view.degrees(direction="in"), np.bincount(ids[1], minlength=60))


def test_pagerank_on_the_view_equals_networkx(timed):
    from graphsys.bsp.algorithms.pagerank import pagerank
    from graphsys.storage.adjacency_index import build_index

    g, (src, dst, _, ts) = timed
    build_index(g, ("csr", "csc"))          # a stored index covers every edge: never used
    view = graphsys.open_graph(g.path, until=20)
    res = pagerank(view, weighted=False, tol=1e-12, max_iters=1000)
    keep = ts <= 20
    ref = nx.MultiDiGraph()                 # parallel edges count, as stored
    ref.add_nodes_from(np.unique(np.r_[src, dst]).tolist())
    ref.add_edges_from(zip(src[keep].tolist(), dst[keep].tolist()))
    for node, value in nx.pagerank(ref, tol=1e-13, max_iter=1000).items():
        assert res.value(node) == pytest.approx(value, abs=1e-7)


def test_samplers_and_gnn_read_the_view(timed):
    from graphsys.sampling import NeighborSampler

    g, (src, dst, _, ts) = timed
    view = graphsys.open_graph(g.path, until=10)
    keep = ts <= 10
    allowed = {(int(a), int(b)) for a, b in zip(view.to_internal(src[keep]),
                                                view.to_internal(dst[keep]))}
    blocks = NeighborSampler(view, [-1], symmetric=False).sample_blocks(np.arange(60), 0)
    b = blocks[0]
    pairs = {(int(b.src_nodes[s]), int(b.src_nodes[d])) for s, d in
             zip(b.edge_src.tolist(), b.edge_dst.tolist())}
    assert pairs == allowed     # in-neighbours: (source, destination) of every view edge


def test_view_refusals(timed, tmp_path):
    g, _ = timed
    with pytest.raises(ParameterError, match="until must be a time"):
        graphsys.open_graph(g.path, until="yesterday")
    plain = graphsys.from_numpy([0, 1], [1, 0], tmp_path / "plain")
    with pytest.raises(ParameterError, match="needs the edge column 'timestamp'"):
        graphsys.open_graph(plain.path, until=3)
    two = graphsys.ingest_sources if hasattr(graphsys, "ingest_sources") else None
    del two
    view = TimeView(g, 5)
    assert TimeView(view, 7).until == 7 and TimeView(view, 7).stored.manifest is g.manifest
    with pytest.raises(GraphsysError):
        view.bucket(0, 0, "no-such-set")


def test_bounds_beyond_a_float_column_are_infinite(tmp_path):
    """An integer bound past the float range against float stamps (a 400-digit --until)
    raised a raw OverflowError; past float32's range it warned of an overflow. Each is
    now the infinity on its side, as the hand filter ``t <= 10**400`` reads it."""
    import warnings

    from graphsys.gnn.time_split import split_at_times

    for dtype in (pa.float64(), pa.float32()):
        g = graphsys.from_arrow(pa.table({"src": [0, 1], "dst": [1, 2],
                                          "timestamp": pa.array([1.0, 2.0], dtype)}),
                                tmp_path / str(dtype), edge_columns=["timestamp"])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for bounds, kept in (({"until": 10**400}, 2), ({"since": -10**400}, 2),
                                 ({"until": -10**400}, 0), ({"until": 1e300}, 2),
                                 ({"since": 1, "until": "1" + "0" * 400}, 1)):
                assert graphsys.open_graph(g.path, **bounds).num_edges() == kept
    with pytest.raises(ParameterError, match="leaves no test edge"):
        split_at_times(np.array([1.0, 2.0, 3.0]), 2, 10**400)


def test_parse_time():
    assert parse_time("2004-04-15T00:00:00+02:00") == 1081980000
    assert parse_time(datetime.date(1970, 1, 2)) == 86400
    assert parse_time(np.int64(5)) == 5 and parse_time(2.5) == 2.5
    for bad in (True, float("nan"), "2004-13-01", None):
        with pytest.raises(ParameterError):
            parse_time(bad)


def test_embeddings_train_on_the_view(timed, tmp_path):
    from graphsys.embed import train

    g, (_, _, _, ts) = timed
    view = graphsys.open_graph(g.path, until=12)
    res = train(view, {"dimension": 8, "num_epochs": 1}, out=tmp_path / "emb")
    assert res.summary()["epoch_stats"][0]["edges"] == (ts <= 12).sum()


def test_a_view_streams_a_short_run_where_the_stored_graph_has_an_index(tmp_path, timed):
    # a view maps none of the stored graph's indexes: mode "auto" weighs a build for it
    import torch

    from graphsys import bsp
    from graphsys.bsp.engine import choose_mode
    from graphsys.storage.adjacency_index import build_index

    _, (src, dst, w, ts) = timed
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "w": w, "timestamp": ts}),
                            tmp_path / "g", weight_col="w", edge_columns=["timestamp"],
                            **{PARTS: 3})
    build_index(g, ("csc",))
    prog, cpu = bsp.PageRank(), torch.device("cpu")
    prog.expected_supersteps = 3
    assert choose_mode(graphsys.open_graph(g.path), None, prog, cpu) == "memory"
    assert choose_mode(graphsys.open_graph(g.path, until=20), None, prog, cpu) == "out-of-core"


def test_a_view_keeps_its_version_when_the_graph_it_was_made_from_is_written(tmp_path):
    """A view made over ``g`` kept counting the old edges after ``delete_edges(g, ...)``
    while reading g's new version, and after ``compact(g)`` said 3 edges and read 2. It is
    a snapshot of the version it was made from, as a graph opened before a commit is."""
    from graphsys.storage.changes import delete_edges
    from graphsys.storage.compact import compact

    edges = pa.table({"src": [1, 2, 3, 1, 4], "dst": [2, 3, 1, 3, 1],
                      "timestamp": [10, 20, 30, 40, 50]})
    g = graphsys.from_arrow(edges, tmp_path / "g", edge_columns=["timestamp"], partitions=2)
    view = TimeView(g, until=35)

    def pairs(graph):
        return sorted(zip(*(graph.to_original(np.concatenate(x)).tolist() for x in zip(
            *((s, d) for s, d, _, _ in graph.iter_edges())))))

    delete_edges(g, [1], [2])
    assert g.num_edges() == 4
    assert view.num_edges() == 3 and pairs(view) == [(1, 2), (2, 3), (3, 1)]
    assert pairs(TimeView(g, until=35)) == [(2, 3), (3, 1)]
    compact(g)
    assert view.num_edges() == 3
    with pytest.raises(GraphsysError, match="open it again"):
        pairs(view)
