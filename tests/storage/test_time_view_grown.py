"""A time view of a grown graph (issue 71): after ``graphsys ingest --append-to`` the default
view reads several edge sets as one, and ``--until T`` reads each through the view, so it
equals a fresh ingest of the edges stamped <= T (checked against scipy and networkx) in
``run``, ``export``, ``open_graph`` and GNN training."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

import graphsys
from graphsys import cli
from graphsys.storage.append import append_edges
from graphsys.storage.ingest import EdgeSource

N = 40


def _edges(seed: int, m: int, t0: int):
    rng = np.random.default_rng(seed)
    return rng.integers(0, N, m), rng.integers(0, N, m), rng.integers(t0, t0 + 50, m)


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    d = tmp_path_factory.mktemp("grown")
    s1, d1, t1 = _edges(1, 150, 0)
    s2, d2, t2 = _edges(2, 120, 30)           # overlapping stamps
    g = graphsys.from_arrow(pa.table({"src": s1, "dst": d1, "timestamp": t1}), d / "g",
                            edge_columns=["timestamp"], partitions=2)
    pq.write_table(pa.table({"src": s2, "dst": d2, "timestamp": t2}), d / "day2.parquet")
    append_edges(g.path, [EdgeSource([d / "day2.parquet"], edge_set="day2",
                                     edge_columns=["timestamp"])])
    g = graphsys.open_graph(g.path)
    assert g.edge_set().members == ("default", "day2")
    return g, (np.r_[s1, s2], np.r_[d1, d2], np.r_[t1, t2])


@pytest.mark.parametrize("t", [-1, 20, 45, 70, 1000])
def test_open_graph_until_reads_every_member(grown, t):
    g, (src, dst, ts) = grown
    keep = ts <= t
    view = graphsys.open_graph(g.path, until=t)
    assert view.num_edges() == view.edge_set().num_edges == int(keep.sum())
    got = sorted((int(a), int(b), int(c)) for (s, d, _, _), tt in zip(
        view.iter_edges(), view.edge_column("timestamp"))
        for a, b, c in zip(view.to_original(s), view.to_original(d), tt))
    assert got == sorted(zip(src[keep].tolist(), dst[keep].tolist(), ts[keep].tolist()))
    ids = view.to_internal(src[keep]), view.to_internal(dst[keep])
    ref = sp.csr_matrix((np.ones(int(keep.sum())), ids), shape=(view.num_nodes(),) * 2)
    assert abs(view.csr().to_scipy() - ref).max() == 0 if keep.any() else \
        view.csr().indices.size == 0


def test_run_and_export_until(grown, tmp_path, capsys):
    g, (src, dst, ts) = grown
    keep = ts <= 45
    ref = nx.DiGraph()
    ref.add_nodes_from(range(N))
    ref.add_edges_from(zip(src[keep].tolist(), dst[keep].tolist()))
    source = int(src[keep][0])
    out = tmp_path / "bfs.parquet"
    assert cli.main(["run", "bfs", str(g.path), "--source", str(source), "--until", "45",
                     "--out", str(out), "--quiet"]) == 0
    got = pq.read_table(out).to_pydict()
    want = nx.single_source_shortest_path_length(ref, source)
    assert {n: v for n, v in zip(got["node"], got["value"]) if np.isfinite(v)} == want
    out = tmp_path / "wcc.parquet"
    assert cli.main(["run", "wcc", str(g.path), "--until", "45", "--out", str(out),
                     "--quiet"]) == 0
    labels = pq.read_table(out).to_pydict()
    groups: dict = {}
    for n, lab in zip(labels["node"], labels["value"]):
        groups.setdefault(lab, set()).add(n)
    assert sorted(map(sorted, groups.values())) == sorted(
        map(sorted, nx.weakly_connected_components(ref)))
    out = tmp_path / "e.parquet"
    assert cli.main(["export", str(g.path), "--until", "45", "--out", str(out)]) == 0
    e = pq.read_table(out).to_pydict()
    assert sorted(zip(e["src"], e["dst"], e["timestamp"])) == sorted(
        zip(src[keep].tolist(), dst[keep].tolist(), ts[keep].tolist()))
    capsys.readouterr()


def test_gnn_trains_on_the_grown_view(grown):
    from graphsys.gnn import TrainConfig, train

    g, (src, dst, ts) = grown
    res = train(g.path, TrainConfig(task="link", until=45, epochs=1, fanouts=[3], hidden=8,
                                    link_eval_negatives=5))
    data = res.extra["data"]
    assert data.symmetric and (data.train | data.val | data.test).all()
    # the targets: each unordered pair of the edges stamped <= 45 once, loops left out
    keep = (ts <= 45) & (src != dst)
    a, b = g.to_internal(src[keep]), g.to_internal(dst[keep])
    want = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    got = set(zip(np.minimum(data.head, data.tail).tolist(),
                  np.maximum(data.head, data.tail).tolist()))
    assert got == want

