"""Time windows ``since=``/``until=`` (graphsys.storage.time_view): the view of the edges
stamped in ``(since, until]`` equals a fresh ingest of those edges, on one timestamped edge
set and on a graph grown by ``graphsys ingest --append-to`` (a view of two edge sets), in
``open_graph``, ``run`` (BFS, WCC, PageRank against networkx), ``export`` and GNN training;
consecutive windows tile time; a window running backwards or over an edge set with no
timestamp is refused in one line."""

from __future__ import annotations

import collections

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

import graphsys
from graphsys import cli
from graphsys.errors import ParameterError

N = 45


def _edges(seed: int, m: int, t0: int):
    rng = np.random.default_rng(seed)
    return rng.integers(0, N, m), rng.integers(0, N, m), rng.integers(t0, t0 + 60, m)


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    src, dst, ts = _edges(5, 500, 0)
    d = tmp_path_factory.mktemp("single")
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": ts}), d / "g",
                            edge_columns=["timestamp"], partitions=3)
    return g, (src, dst, ts)


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    d = tmp_path_factory.mktemp("grown")
    s1, d1, t1 = _edges(6, 300, 0)
    s2, d2, t2 = _edges(7, 250, 40)               # day 2 overlaps day 1's last stamps
    g = graphsys.from_arrow(pa.table({"src": s1, "dst": d1, "timestamp": t1}), d / "g",
                            edge_columns=["timestamp"], partitions=2)
    pq.write_table(pa.table({"src": s2, "dst": d2, "timestamp": t2}), d / "day2.parquet")
    assert cli.main(["ingest", str(d / "day2.parquet"), "--append-to", str(g.path),
                     "--edge-set", "day2", "--edge-columns", "timestamp", "--quiet"]) == 0
    g = graphsys.open_graph(g.path)
    assert g.edge_set().members == ("default", "day2")
    return g, (np.r_[s1, s2], np.r_[d1, d2], np.r_[t1, t2])


def _keep(ts, since, until):
    keep = np.ones(len(ts), dtype=bool)
    if since is not None:
        keep &= ts > since
    if until is not None:
        keep &= ts <= until
    return keep


def _view_edges(view):
    return sorted((int(a), int(b), int(c)) for (s, d, _, _), tt in zip(
        view.iter_edges(), view.edge_column("timestamp"))
        for a, b, c in zip(view.to_original(s), view.to_original(d), tt))


def _flags(since, until):
    return ([] if since is None else ["--since", str(since)]) + \
        ([] if until is None else ["--until", str(until)])


WINDOWS = [(None, 30), (10, None), (10, 30), (29.5, 45), (30, 30), (-5, 1000), (59, None)]
GROWN_WINDOWS = [(None, 45), (20, 70), (45, None), (60, 90), (99, 200)]


def _check_open_graph(graph, edges, since, until, tmp_path):
    src, dst, ts = edges
    keep = _keep(ts, since, until)
    view = graphsys.open_graph(graph.path, since=since, until=until)
    assert (view.since, view.until) == (since, until)
    assert view.num_nodes() == graph.num_nodes()
    assert view.num_edges() == view.edge_set().num_edges == int(keep.sum())
    want = sorted(zip(src[keep].tolist(), dst[keep].tolist(), ts[keep].tolist()))
    assert _view_edges(view) == want
    if keep.any():                       # a fresh ingest of the filtered edges reads the same
        fresh = graphsys.from_arrow(pa.table({"src": src[keep], "dst": dst[keep],
                                              "timestamp": ts[keep]}), tmp_path / "fresh",
                                    edge_columns=["timestamp"])
        assert fresh.num_edges() == view.num_edges() and _view_edges(fresh) == want
    ids = view.to_internal(src[keep]), view.to_internal(dst[keep])
    ref = sp.csr_matrix((np.ones(int(keep.sum())), ids), shape=(view.num_nodes(),) * 2)
    if keep.any():
        assert abs(view.csr().to_scipy() - ref).max() == 0
    else:
        assert view.csr().indices.size == 0


@pytest.mark.parametrize("since, until", WINDOWS)
def test_open_graph_window_is_the_filtered_edges(single, since, until, tmp_path):
    _check_open_graph(*single, since, until, tmp_path)


@pytest.mark.parametrize("since, until", GROWN_WINDOWS)
def test_open_graph_window_reads_every_member_of_a_grown_view(grown, since, until, tmp_path):
    _check_open_graph(*grown, since, until, tmp_path)


@pytest.mark.parametrize("which", ["single", "grown"])
def test_consecutive_windows_tile_time(request, which):
    g, (src, dst, ts) = request.getfixturevalue(which)
    cuts = [None, 12, 30, 44, 61, None]
    parts = [graphsys.open_graph(g.path, since=a, until=b)
             for a, b in zip(cuts[:-1], cuts[1:]) if (a, b) != (None, None)]
    assert sum(p.num_edges() for p in parts) == len(src)
    got = sorted(e for p in parts for e in _view_edges(p))
    assert got == sorted(zip(src.tolist(), dst.tolist(), ts.tolist()))


def _reference(src, dst, keep):
    ref = nx.MultiDiGraph()                 # parallel edges count, as stored
    ref.add_nodes_from(range(N))
    ref.add_edges_from(zip(src[keep].tolist(), dst[keep].tolist()))
    return ref


def _run(argv, out):
    assert cli.main(argv + ["--out", str(out), "--quiet"]) == 0
    t = pq.read_table(out).to_pydict()
    return dict(zip(t["node"], t["value"]))


@pytest.mark.parametrize("which, since, until", [
    ("single", 10, 30), ("single", 25, None), ("grown", 20, 70), ("grown", 45, None)])
def test_run_and_export_on_a_window_equal_networkx(request, tmp_path, capsys, which, since,
                                                   until):
    g, (src, dst, ts) = request.getfixturevalue(which)
    keep = _keep(ts, since, until)
    ref = _reference(src, dst, keep)
    window = _flags(since, until)
    source = int(src[keep][0])
    got = _run(["run", "bfs", str(g.path), "--source", str(source)] + window,
               tmp_path / "bfs.parquet")
    assert {n: v for n, v in got.items() if np.isfinite(v)} == \
        nx.single_source_shortest_path_length(ref, source)
    labels = _run(["run", "wcc", str(g.path)] + window, tmp_path / "wcc.parquet")
    groups = collections.defaultdict(set)
    for node, label in labels.items():
        groups[label].add(node)
    assert sorted(map(sorted, groups.values())) == sorted(
        map(sorted, nx.weakly_connected_components(ref)))
    ranks = _run(["run", "pagerank", str(g.path), "--tol", "1e-12", "--max-iters", "1000"]
                 + window, tmp_path / "pr.parquet")
    for node, value in nx.pagerank(ref, tol=1e-13, max_iter=1000).items():
        assert ranks[node] == pytest.approx(value, abs=1e-7)
    out = tmp_path / "e.parquet"
    assert cli.main(["export", str(g.path), "--out", str(out)] + window) == 0
    e = pq.read_table(out).to_pydict()
    assert sorted(zip(e["src"], e["dst"], e["timestamp"])) == sorted(
        zip(src[keep].tolist(), dst[keep].tolist(), ts[keep].tolist()))
    capsys.readouterr()


def test_gnn_trains_on_a_window_of_the_grown_view(grown):
    from graphsys.gnn import TrainConfig, train

    g, (src, dst, ts) = grown
    res = train(g.path, TrainConfig(task="link", since=20, until=70, epochs=1, fanouts=[3],
                                    hidden=8, link_eval_negatives=5))
    data = res.extra["data"]
    keep = _keep(ts, 20, 70) & (src != dst)  # each unordered pair once, loops left out
    a, b = g.to_internal(src[keep]), g.to_internal(dst[keep])
    want = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    got = set(zip(np.minimum(data.head, data.tail).tolist(),
                  np.maximum(data.head, data.tail).tolist()))
    assert got == want


def test_gnn_train_passes_since_to_its_config(grown, capsys):
    # the flag reaches TrainConfig: a backwards window is refused before any training
    argv = ["gnn", "train", "--graph", str(grown[0].path), "--task", "link", "--since", "71",
            "--until", "70"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: --since is after until (71 > 70)")


def test_backwards_window_is_refused(single, capsys):
    g, _ = single
    with pytest.raises(ParameterError, match=r"since is after until \(31 > 30\)"):
        graphsys.open_graph(g.path, since=31, until=30)
    with pytest.raises(ParameterError, match="since must be a time"):
        graphsys.open_graph(g.path, since="last week")
    assert cli.main(["export", str(g.path), "--since", "31", "--until", "30", "--out",
                     "unused.parquet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --since is after until")
    from graphsys.gnn import TrainConfig

    with pytest.raises(ParameterError, match="since is after until"):
        TrainConfig(since="2004-06-02", until="2004-06-01")


def test_window_over_an_unstamped_edge_set_is_refused(tmp_path, capsys):
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    s1, d1, t1 = _edges(8, 50, 0)
    pq.write_table(pa.table({"src": s1, "dst": d1, "timestamp": t1}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"src": s1[:10], "dst": d1[:10]}), tmp_path / "b.parquet")
    ingest_sources([EdgeSource([tmp_path / "a.parquet"], edge_set="stamped",
                                   edge_columns=["timestamp"]),
                    EdgeSource([tmp_path / "b.parquet"], edge_set="plain")],
                   tmp_path / "g", IngestOptions(partitions=2))
    g = graphsys.open_graph(tmp_path / "g")
    out = tmp_path / "e.parquet"
    for edges in ("plain", "stamped,plain"):
        assert cli.main(["export", str(g.path), "--edges", edges, "--since", "10",
                         "--out", str(out)]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "edge set 'plain'" in err[0] and \
            "no edge column 'timestamp'" in err[0] and "since 10" in err[0]
        assert not out.exists()
    # the stamped set alone is a window
    view = graphsys.open_graph(g.path, since=10)
    assert view.edge_set("stamped").num_edges == int((t1 > 10).sum())


def test_an_incremental_start_from_another_window_is_refused(single, tmp_path, capsys):
    g, _ = single
    prev = tmp_path / "wcc.parquet"
    assert cli.main(["run", "wcc", str(g.path), "--since", "10", "--out", str(prev),
                     "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["run", "wcc", str(g.path), "--since", "20", "--init", str(prev),
                     "--out", str(tmp_path / "again.parquet"), "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "since 10" in err[0] and "since 20" in err[0]


@pytest.mark.parametrize("since, until, want", [
    (None, -1, []), (-1, None, [0, 3, 7]), (-10, 3, [0, 3]), (0, 6.5, [3]),
    (2**40, None, []), (None, 2**40, [0, 3, 7])])
def test_bounds_out_of_an_unsigned_columns_range(tmp_path, since, until, want):
    path = tmp_path / "u"
    graphsys.from_arrow(pa.table({"src": [0, 1, 2], "dst": [1, 2, 0],
                                  "timestamp": pa.array([0, 3, 7], pa.uint32())}),
                        path, edge_columns=["timestamp"])
    view = graphsys.open_graph(path, since=since, until=until)
    assert sorted(int(t) for c in view.edge_column("timestamp") for t in c) == want
