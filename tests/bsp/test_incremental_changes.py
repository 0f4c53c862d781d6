"""WCC, BFS and SSSP started from a result before deletions, weight updates and appends equal
runs from scratch and networkx; a run says whether it repaired or ran from scratch, and why."""

from __future__ import annotations

import collections
import json

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys import bsp, open_graph
from graphsys.bsp import incremental_changes
from graphsys.cli import main
from graphsys.storage import previous
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.changes import delete_edges, delete_nodes, update_weights


def _edges(seed: int, n: int, m: int) -> list[tuple[int, int, float]]:
    rng = np.random.default_rng(seed)
    return [(int(a), int(b), float(w)) for a, b, w in zip(
        rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(1, 9, m))]


def _write(path, edges) -> None:
    s, d, w = zip(*edges)
    pq.write_table(pa.table({"src": list(s), "dst": list(d), "w": list(w)}), path)


def _changed(tmp_path, *, undirected=False, chain=False, indexed=False):
    """A sparse graph (many components) and its results, then: 30 pairs deleted, a day
    appended (new nodes among its ends), a node's edges deleted, 20 pairs re-weighted (up
    and down). Returns the graph, the source and the networkx graph of the resulting
    edges. ``indexed``: CSR and CSC indexes stored before the changes (read as built, in
    the numbering before the append)."""
    edges = _edges(1, 600, 700)
    _write(tmp_path / "day0.parquet", edges)
    g = graphsys.ingest(tmp_path / "day0.parquet", tmp_path / "g", partitions=3,
                        undirected=undirected, weight_col="w")
    if indexed:
        build_index(g, ("csr", "csc"))
        g = open_graph(tmp_path / "g")
    source = edges[0][0]
    for name, r in {"wcc": bsp.wcc(g), "bfs": bsp.bfs(g, source),
                    "sssp": bsp.sssp(g, source)}.items():
        pq.write_table(r.to_table(), tmp_path / f"{name}.parquet")
    live = list(edges)

    def same(e, a, b):
        return (e[0], e[1]) == (a, b) or undirected and (e[1], e[0]) == (a, b)

    gone = [(a, b) for a, b, _ in edges[1:200:7]]
    delete_edges(tmp_path / "g", [a for a, _ in gone], [b for _, b in gone])
    live = [e for e in live if not any(same(e, a, b) for a, b in gone)]
    if chain:  # a repaired result starts the next repair
        g = open_graph(tmp_path / "g")
        for name, r in {"wcc": bsp.wcc(g, init=tmp_path / "wcc.parquet"),
                        "bfs": bsp.bfs(g, source, init=tmp_path / "bfs.parquet"),
                        "sssp": bsp.sssp(g, source, init=tmp_path / "sssp.parquet")}.items():
            assert r.stats.start == "repair"
            pq.write_table(r.to_table(), tmp_path / f"{name}.parquet")
    day1 = _edges(2, 620, 25)
    _write(tmp_path / "day1.parquet", day1)
    graphsys.ingest(tmp_path / "day1.parquet", tmp_path / "g", append=True, edge_set="day1",
                    undirected=undirected, weight_col="w")
    live += day1
    node = live[3][1]
    delete_nodes(tmp_path / "g", [node])
    live = [e for e in live if node not in e[:2]]
    pick = live[5:100:5]
    new_w = [float(w) for w in np.random.default_rng(3).integers(1, 12, len(pick))]
    update_weights(tmp_path / "g", [e[0] for e in pick], [e[1] for e in pick], new_w)
    weight = dict(((a, b), w) for (a, b, _), w in zip(pick, new_w))
    if undirected:
        weight.update(((b, a), w) for (a, b, _), w in zip(pick, new_w))
    live = [(a, b, weight.get((a, b), w)) for a, b, w in live]
    g = open_graph(tmp_path / "g")
    ref = nx.MultiGraph() if undirected else nx.MultiDiGraph()
    ref.add_nodes_from(g.node_ids().tolist())
    ref.add_weighted_edges_from(live)
    return g, source, ref


@pytest.fixture
def _any_share(monkeypatch):
    """Repair whatever share of the edges changed (the small graphs change a lot)."""
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_FRACTION", 1.0)
    monkeypatch.setattr(previous, "REPAIR_MAX_FRACTION", 1.0)  # what --init auto reads


def _components(result) -> list[list]:
    comps = collections.defaultdict(list)
    for node, label in result.to_dict().items():
        comps[label].append(node)
    return sorted(sorted(c) for c in comps.values())


@pytest.mark.usefixtures("_any_share")
@pytest.mark.parametrize(("undirected", "chain", "indexed"), [
    (False, False, False), (True, False, False), (False, True, False), (True, True, False),
    (False, False, True), (True, True, True)])
def test_repairs_equal_runs_from_scratch_and_networkx(tmp_path, undirected, chain, indexed):
    g, source, ref = _changed(tmp_path, undirected=undirected, chain=chain, indexed=indexed)
    if indexed:  # the indexes were built before the append: their numbering moved since
        assert g.manifest.indexes["default"]["csr"].layout != tuple(g.partition_sizes())
    wcc = bsp.wcc(g, init=tmp_path / "wcc.parquet")
    assert wcc.stats.start == "repair" and "repaired" in wcc.stats.method
    assert np.array_equal(wcc.values, bsp.wcc(g).values)
    parts = nx.connected_components(ref) if undirected else nx.weakly_connected_components(ref)
    assert _components(wcc) == sorted(sorted(c) for c in parts)
    bfs = bsp.bfs(g, source, init=tmp_path / "bfs.parquet")
    assert bfs.stats.start == "repair"
    assert np.array_equal(bfs.values, bsp.bfs(g, source).values)
    hops = nx.single_source_shortest_path_length(ref, source)
    assert all(bfs.value(k) == hops.get(k, np.inf) for k in ref.nodes)
    sssp = bsp.sssp(g, source, init=tmp_path / "sssp.parquet")
    assert sssp.stats.start == "repair" and sssp.stats.weighted
    assert np.array_equal(sssp.values, bsp.sssp(g, source).values)
    dist = nx.single_source_dijkstra_path_length(ref, source)
    assert all(sssp.value(k) == dist.get(k, np.inf) for k in ref.nodes)


@pytest.mark.usefixtures("_any_share")
def test_mapped_and_built_adjacencies_reach_one_signature(tmp_path, monkeypatch):
    """The repairs hand their kernels read-only adjacencies with a stored index's id dtype,
    whether mapped from a stored CSR/CSC index or built from the buckets, with or without
    weights: each repair kernel compiles once for all of them (the WCC anchor's too, built
    here whatever the degrees)."""
    from graphsys.kernels import repair

    monkeypatch.setattr(repair, "ANCHOR_MIN_SEEDS", 0.0)
    monkeypatch.setattr(repair, "ANCHOR_HUB_RATIO", 0.0)

    for indexed in (False, True):
        (tmp_path / str(indexed)).mkdir()
        g, source, _ = _changed(tmp_path / str(indexed), indexed=indexed)
        for run in (bsp.wcc(g, init=tmp_path / str(indexed) / "wcc.parquet"),
                    bsp.bfs(g, source, init=tmp_path / str(indexed) / "bfs.parquet"),
                    bsp.sssp(g, source, init=tmp_path / str(indexed) / "sssp.parquet")):
            assert run.stats.start == "repair"
    for kernel in (repair._anchor, repair._next_to, repair._race, repair.distance_repair):
        assert len(kernel.signatures) == 1


def test_a_deleted_bridge_and_a_raised_weight(tmp_path):
    """Two cliques joined by one edge: deleting it splits the component and cuts the far
    clique from the source; raising a weight on the shortest path moves the distances
    behind it (a case where trimming must invalidate a subtree)."""
    a = [(i, j, 1.0) for i in range(20) for j in range(20) if i != j]
    b = [(i + 20, j + 20, 1.0) for i in range(20) for j in range(20) if i != j]
    chain = [(100 + k, 101 + k, 1.0) for k in range(60)]
    edges = a + b + [(0, 20, 1.0), (0, 100, 1.0)] + chain
    _write(tmp_path / "e.parquet", edges)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", weight_col="w")
    before = {"wcc": bsp.wcc(g).to_table(), "bfs": bsp.bfs(g, 0).to_table(),
              "sssp": bsp.sssp(g, 0).to_table()}
    delete_edges(tmp_path / "g", [0], [20])
    update_weights(tmp_path / "g", [110], [111], [5.0])
    g = open_graph(tmp_path / "g")
    wcc = bsp.wcc(g, init=before["wcc"])
    assert wcc.stats.start == "repair" and len(set(wcc.values)) == 2
    assert np.array_equal(wcc.values, bsp.wcc(g).values)
    bfs = bsp.bfs(g, 0, init=before["bfs"])
    assert bfs.value(25) == np.inf and bfs.value(160) == 61
    sssp = bsp.sssp(g, 0, init=before["sssp"])
    assert sssp.value(111) == 16 and sssp.value(160) == 65 and sssp.value(25) == np.inf
    assert np.array_equal(sssp.values, bsp.sssp(g, 0).values)


def test_more_changed_than_pays_runs_from_scratch(tmp_path, monkeypatch):
    g, source, _ = _changed(tmp_path)
    wcc = bsp.wcc(g, init=tmp_path / "wcc.parquet")  # about 10 % of the edges changed
    assert wcc.stats.start == "scratch"
    assert "from scratch: changed edges" in wcc.stats.method and "above the repair's 5%" \
        in wcc.stats.method
    assert np.array_equal(wcc.values, bsp.wcc(g).values)
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_FRACTION", 1.0)
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_SWEEPS", 0)
    bfs = bsp.bfs(g, source, init=tmp_path / "bfs.parquet")
    assert bfs.stats.start == "scratch" and "the repair scanned more than" in bfs.stats.method
    assert np.array_equal(bfs.values, bsp.bfs(g, source).values)


@pytest.mark.usefixtures("_any_share")
def test_other_modes_run_from_scratch_and_pagerank_starts_warm(tmp_path):
    g, source, ref = _changed(tmp_path)
    got = bsp.sssp(g, source, init=tmp_path / "sssp.parquet", mode="out-of-core")
    assert got.stats.start == "scratch" and "a repair runs in memory" in got.stats.method
    assert np.array_equal(got.values, bsp.sssp(g, source).values)
    # the edges before every change: deletions, an append, a node, updates since
    before = bsp.pagerank(g, tol=1e-10, edge_set="default").to_table()
    ranks = bsp.pagerank(g, tol=1e-10, init=before)
    assert ranks.stats.start == "warm"
    pr = nx.pagerank(ref, tol=1e-15, max_iter=1000)
    got = ranks.to_dict()
    assert sum(abs(got[k] - pr[k]) for k in pr) < 1e-8


@pytest.mark.usefixtures("_any_share")
def test_cli_repairs_and_says_so(tmp_path, capsys):
    edges = _edges(1, 600, 700)
    _write(tmp_path / "day0.parquet", edges)
    g = graphsys.ingest(tmp_path / "day0.parquet", tmp_path / "g", weight_col="w")
    out = tmp_path / "wcc.parquet"
    assert main(["run", "wcc", str(g.path), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    delete_edges(tmp_path / "g", [edges[0][0]], [edges[0][1]])
    assert main(["run", "wcc", str(g.path), "--out", str(out), "--overwrite",
                 "--json"]) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert stats["start"] == "repair" and "repaired" in stats["method"]
    assert main(["run", "wcc", str(g.path), "--out", str(out), "--overwrite",
                 "--quiet"]) == 0  # nothing changed since: the result is repaired again
    line = capsys.readouterr().out
    assert "(incremental: repaired from the changed edges)" in line
    scratch = tmp_path / "scratch.parquet"
    assert main(["run", "wcc", str(g.path), "--out", str(scratch), "--quiet"]) == 0
    assert pq.read_table(out)["value"].equals(pq.read_table(scratch)["value"])


def test_a_time_view_after_an_append_keeps_the_engines_repair(tmp_path):
    """The in-memory repair does not read time views; after an append, BFS there is still
    repaired from the new edges by the engine's supersteps (not run from scratch)."""
    rng = np.random.default_rng(0)
    day = pa.table({"src": rng.integers(0, 300, 2000), "dst": rng.integers(0, 300, 2000),
                    "timestamp": rng.integers(0, 100, 2000)})
    graphsys.from_arrow(day, tmp_path / "g", edge_columns=["timestamp"])
    source = int(day["src"][0].as_py())
    before = bsp.bfs(open_graph(tmp_path / "g", until=50), source).to_table()
    pq.write_table(pa.table({"src": rng.integers(0, 320, 30), "dst": rng.integers(0, 320, 30),
                             "timestamp": rng.integers(0, 100, 30)}), tmp_path / "d2.parquet")
    graphsys.ingest(tmp_path / "d2.parquet", tmp_path / "g", append=True, edge_set="day2",
                    edge_columns=["timestamp"])
    view = open_graph(tmp_path / "g", until=50)
    got = bsp.bfs(view, source, init=before)
    assert got.stats.start == "repair" and "repaired from the new edges" in got.stats.method
    assert np.array_equal(got.values, bsp.bfs(view, source).values)


def test_cli_auto_decides_from_the_manifest_before_reading_the_values(tmp_path, capsys,
                                                                       monkeypatch):
    """``--init auto`` with more changed than a repair pays for runs from scratch without
    reading the previous values (its footer says enough), and says so."""
    from graphsys.bsp import incremental

    g, source, _ = _changed(tmp_path)  # about 10 % of the edges changed
    reads = []
    monkeypatch.setattr(incremental, "read_previous", lambda *a, **k: reads.append(a))
    out = tmp_path / "wcc.parquet"
    assert main(["run", "wcc", str(g.path), "--out", str(out), "--overwrite"]) == 0
    line = capsys.readouterr().out
    assert "from scratch (changed edges" in line and f"{out} not read" in line
    assert not reads
    assert np.array_equal(pq.read_table(out)["value"].to_numpy(), bsp.wcc(g).values)
    assert main(["run", "bfs", str(g.path), "--source", str(source), "--out",
                 str(tmp_path / "bfs.parquet"), "--overwrite", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert stats["start"] == "scratch" and "above the repair's 5%" in stats["method"]


def test_wcc_repairs_of_many_random_deletions_equal_networkx(tmp_path, monkeypatch):
    """Up to a third of a small graph's edges deleted, the repair's limits lifted so that it
    always repairs: groups meet, close and split components as networkx counts them."""
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_FRACTION", 1.0)
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_SWEEPS", 10**6)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(5, 60))
        m = int(rng.integers(n // 2, 3 * n))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        g = graphsys.from_numpy(src, dst, tmp_path / f"g{seed}", num_nodes=n,
                                partitions=int(rng.integers(1, 4)))
        if seed % 2:
            build_index(g, ("csr", "csc"))
        before = bsp.wcc(g).to_table()
        pick = rng.choice(m, int(rng.integers(1, max(2, m // 3))), replace=False)
        delete_edges(g.path, src[pick], dst[pick])
        g = open_graph(g.path)
        run = bsp.wcc(g, init=before)
        assert run.stats.start == "repair"
        np.testing.assert_array_equal(run.values, bsp.wcc(g).values)
        gone = set(zip(src[pick].tolist(), dst[pick].tolist()))
        ref = nx.Graph()
        ref.add_nodes_from(range(n))
        ref.add_edges_from(e for e in zip(src.tolist(), dst.tolist()) if e not in gone)
        assert len(set(run.values.tolist())) == nx.number_connected_components(ref)


@pytest.mark.usefixtures("_any_share")
@pytest.mark.parametrize("run", ["wcc", "bfs"])
def test_a_stored_index_id_out_of_range_is_refused(tmp_path, run):
    """A repair reads a stored index's ids unchecked in bulk and checks each one it reads:
    an id out of range is a one-line FormatError, never an answer."""
    from graphsys.errors import FormatError

    g, source, _ = _changed(tmp_path, indexed=True)
    for kind in ("csr", "csc"):
        path = tmp_path / "g" / "index" / "default" / f"{kind}-indices.arrow"
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        ids = np.full(table.num_rows, 10**6, table.column(0).type.to_pandas_dtype())
        bad = pa.table({table.column_names[0]: ids}, schema=table.schema)
        with pa.ipc.new_file(str(path), bad.schema) as out:
            out.write_table(bad)
    g = open_graph(tmp_path / "g")
    with pytest.raises(FormatError, match="out of range"):
        if run == "wcc":
            bsp.wcc(g, init=tmp_path / "wcc.parquet")
        else:
            bsp.bfs(g, source, init=tmp_path / "bfs.parquet")
