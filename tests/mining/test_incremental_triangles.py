"""Triangle counts started from a result before appends and deletions (:mod:`graphsys.mining.
incremental`) equal networkx's ``triangles`` of the resulting edges, a count from scratch
and a count of a fresh ingest of them, after random sequences of changes (parallel edges,
self-loops and both directions included; directed and undirected edge sets, with and
without stored indexes; each result starting the next); they count from scratch where an
update does not apply or pay, saying why; ``graphsys mine triangles --init`` writes and
reads them."""

from __future__ import annotations

import collections
import json

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys import bsp, mining, open_graph
from graphsys.cli import main
from graphsys.errors import GraphsysError
from graphsys.mining import incremental
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.changes import delete_edges


def _write(path, pairs) -> None:
    s, d = zip(*pairs)
    pq.write_table(pa.table({"src": list(s), "dst": list(d)}), path)


def _edges(rng, n, count):
    """``count`` random pairs over ``0..n-1``: repeats, reverses and self-loops included."""
    return [tuple(int(x) for x in rng.integers(0, n, 2)) for _ in range(count)]


def _reference(g, live) -> dict:
    ref = nx.Graph()
    ref.add_nodes_from(g.node_ids().tolist())
    ref.add_edges_from((a, b) for a, b in live if a != b)
    return nx.triangles(ref)


def _check(g, got, live, tmp_path) -> None:
    want = _reference(g, live)
    assert got.triangles.to_dict() == want
    assert got.count == sum(want.values()) // 3
    scratch = mining.triangle_stats(g, per_node=True)
    assert np.array_equal(got.triangles.values, scratch.triangles.values)
    assert np.array_equal(got.degree.values, scratch.degree.values)
    assert got.transitivity == pytest.approx(scratch.transitivity)
    fresh = tmp_path / f"fresh{len(list(tmp_path.glob('fresh*')))}"
    _write(fresh.with_suffix(".parquet"), sorted(live.elements()))
    fresh = graphsys.ingest(fresh.with_suffix(".parquet"), fresh)
    assert got.count == mining.triangle_count(fresh)


@pytest.fixture
def _any_share(monkeypatch):
    """Update whatever share of the edges changed and however much it scans (the small
    graphs change a lot)."""
    monkeypatch.setattr(incremental, "REPAIR_MAX_FRACTION", 1.0)
    monkeypatch.setattr(incremental, "SCAN_SWEEPS", 1000)


@pytest.mark.usefixtures("_any_share")
@pytest.mark.parametrize(("undirected", "indexed", "seed"), [
    (False, False, 0), (True, False, 1), (False, True, 2), (True, True, 3)])
def test_random_change_sequences_equal_networkx_scratch_and_fresh(tmp_path, undirected,
                                                                 indexed, seed):
    rng = np.random.default_rng(seed)
    first = _edges(rng, 60, 400)
    _write(tmp_path / "day0.parquet", first)
    g = graphsys.ingest(tmp_path / "day0.parquet", tmp_path / "g", partitions=3,
                        undirected=undirected)
    if indexed:  # read as built: the numbering moves as new nodes are appended
        build_index(g, ("csr", "csc"))
        g = open_graph(tmp_path / "g")
    live = collections.Counter((min(e), max(e)) if undirected else e for e in first)
    prev = mining.triangle_stats(g, per_node=True).to_table()
    # appends come before deletions (a deletion does not reach edges appended after it)
    for day, (append, delete) in enumerate([(1, 0), (1, 1), (0, 1), (0, 1)], 1):
        added = _edges(rng, 60 + 5 * day, 40) if append else []
        if added:
            _write(tmp_path / f"day{day}.parquet", added)
            graphsys.ingest(tmp_path / f"day{day}.parquet", tmp_path / "g", append=True,
                            edge_set=f"day{day}", undirected=undirected)
        live.update((min(e), max(e)) if undirected else e for e in added)
        gone = [e for e in sorted(live) if rng.random() < 0.08] if delete else []
        if gone:
            delete_edges(tmp_path / "g", [a for a, _ in gone], [b for _, b in gone])
        for e in gone:
            del live[e]
        g = open_graph(tmp_path / "g")
        got = mining.triangle_stats(g, per_node=True, init=prev)
        assert got.method.startswith("updated"), got.method
        _check(g, got, live, tmp_path)
        prev = got.to_table()


@pytest.mark.usefixtures("_any_share")
def test_a_batch_closing_triangles_together_and_one_direction_of_a_pair(tmp_path):
    """Edges of one batch closing the same triangles are counted once; deleting one
    direction of a pair stored both ways, or one of parallel copies' pairs, keeps it."""
    _write(tmp_path / "e.parquet", [(0, 1), (1, 0), (1, 2), (2, 2), (3, 4), (3, 4)])
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    prev = mining.triangle_stats(g, per_node=True).to_table()
    _write(tmp_path / "d1.parquet", [(0, 2), (2, 0), (0, 3), (1, 3), (2, 3), (4, 0), (4, 0)])
    graphsys.ingest(tmp_path / "d1.parquet", tmp_path / "g", append=True, edge_set="d1")
    delete_edges(tmp_path / "g", [1], [0])
    g = open_graph(tmp_path / "g")
    got = mining.triangle_stats(g, per_node=True, init=prev)
    assert got.method.startswith("updated")
    live = collections.Counter([(0, 1), (1, 2), (2, 2), (3, 4), (3, 4), (0, 2), (2, 0),
                                (0, 3), (1, 3), (2, 3), (4, 0), (4, 0)])
    _check(g, got, live, tmp_path)
    assert got.count == 5


def test_fallbacks_count_from_scratch_and_say_why(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    edges = _edges(rng, 50, 300)
    _write(tmp_path / "e.parquet", edges)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    prev = mining.triangle_stats(g, per_node=True)
    gone = sorted(set(edges))[::10]  # 10 % of the pairs
    delete_edges(tmp_path / "g", [a for a, _ in gone], [b for _, b in gone])
    g = open_graph(tmp_path / "g")
    scratch = mining.triangles(g).values
    got = mining.triangle_stats(g, per_node=True, init=prev)
    assert "from scratch: changed edges" in got.method and "above the update's 5%" in \
        got.method
    assert np.array_equal(got.triangles.values, scratch)
    monkeypatch.setattr(incremental, "REPAIR_MAX_FRACTION", 1.0)
    monkeypatch.setattr(incremental, "SCAN_SWEEPS", 0)
    got = mining.triangle_stats(g, per_node=True, init=prev)
    assert "from scratch: the update reads more than 0x" in got.method
    assert np.array_equal(got.triangles.values, scratch)
    with pytest.raises(GraphsysError, match="not triangles"):
        mining.triangle_stats(g, init=bsp.wcc(g).to_table())
    with pytest.raises(GraphsysError, match="without per-node counts"):
        mining.triangle_stats(g).to_table()


def test_an_update_reading_past_its_limit_stops(tmp_path, monkeypatch):
    """Parallel edges make rows longer than the degrees the update is judged by before it
    starts: it stops at its limit and counts from scratch."""
    path = [(k, k + 1) for k in range(10, 210)]
    _write(tmp_path / "e.parquet", [(0, 1)] * 30 + [(1, 2), (2, 0)] + path)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    prev = mining.triangle_stats(g, per_node=True)
    table = prev.to_table()
    _write(tmp_path / "d1.parquet", [(0, 3), (1, 3)])
    graphsys.ingest(tmp_path / "d1.parquet", tmp_path / "g", append=True, edge_set="d1")
    g = open_graph(tmp_path / "g")
    with pytest.raises(GraphsysError, match="changed on disk since it was computed"):
        mining.triangle_stats(g, init=prev)  # node 3 was appended: its table, taken before
    # stats without per-node counts: said to be of a graph changed on disk
    with pytest.raises(GraphsysError, match=r"gives no table \(triangle stats without per-n"):
        mining.triangle_stats(g, per_node=True, init=mining.triangle_stats(g))
    monkeypatch.setattr(incremental, "SCAN_SWEEPS", 0.05)  # 23 entries: past the first row
    got = mining.triangle_stats(g, per_node=True, init=table)
    assert "from scratch: the update reads more than 0.05x" in got.method
    assert got.count == 2
    monkeypatch.setattr(incremental, "SCAN_SWEEPS", 1)
    assert mining.triangle_stats(g, per_node=True, init=table).method.startswith("updated")


def test_cli_init_reads_the_out_file(tmp_path, capsys):
    rng = np.random.default_rng(7)
    edges = sorted(set(_edges(rng, 400, 3000)))
    _write(tmp_path / "e.parquet", edges)
    graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    out = tmp_path / "tri.parquet"
    assert main(["mine", "triangles", str(tmp_path / "g"), "--out", str(out)]) == 0
    capsys.readouterr()
    delete_edges(tmp_path / "g", [edges[0][0]], [edges[0][1]])
    assert main(["mine", "triangles", str(tmp_path / "g"), "--init", str(out),
                 "--out", str(tmp_path / "tri2.parquet"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["method"].startswith("updated (1 deleted pairs")
    g = open_graph(tmp_path / "g")
    assert report["triangles"] == mining.triangle_count(g)
    table = pq.read_table(tmp_path / "tri2.parquet")
    assert table.column_names == ["node", "triangles", "clustering", "degree"]
    assert table.column("triangles").to_pylist() == mining.triangles(g).values.tolist()

    # a result with rows cut (its provenance kept) is refused, not read as new nodes
    table = pq.read_table(out)
    pq.write_table(table.slice(0, 10), tmp_path / "cut.parquet")
    with pytest.raises(GraphsysError, match="lists 10 nodes, the graph it was computed on"):
        mining.triangle_stats(g, per_node=True, init=tmp_path / "cut.parquet")


@pytest.mark.usefixtures("_any_share")
@pytest.mark.parametrize("readd", [False, True])
def test_appends_and_deletions_alternate(tmp_path, readd):
    """A deletion, an append after it, then the previous result (read after both) starts
    the next count: updated where the append lists none of the deleted pairs; where it
    re-adds one (its edge set is not a target of the deletion the previous result read,
    ``Change.readded``), the overlay would lack the edge the previous counts hold: counted
    from scratch, saying why."""
    first = [(0, 1), (1, 2), (2, 0), (2, 3), (1, 3), (3, 4), (4, 5)]
    _write(tmp_path / "e.parquet", first)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    delete_edges(tmp_path / "g", [1], [2])
    added = [(0, 3), (3, 5)] + ([(1, 2)] if readd else [])
    _write(tmp_path / "d2.parquet", added)
    graphsys.ingest(tmp_path / "d2.parquet", tmp_path / "g", append=True, edge_set="day2")
    prev = mining.triangle_stats(open_graph(tmp_path / "g"), per_node=True).to_table()
    delete_edges(tmp_path / "g", [4], [5])
    _write(tmp_path / "d4.parquet", [(2, 4), (0, 4)])
    graphsys.ingest(tmp_path / "d4.parquet", tmp_path / "g", append=True, edge_set="day4")
    g = open_graph(tmp_path / "g")
    got = mining.triangle_stats(g, per_node=True, init=prev)
    if readd:
        assert got.method == ("counted in memory (from scratch: 1 edges appended after a "
                              "change set the previous result read list its pairs)")
    else:
        assert got.method.startswith("updated (1 deleted pairs, 2 new edges"), got.method
    live = collections.Counter(first + added + [(2, 4), (0, 4)])
    del live[(1, 2)], live[(4, 5)]
    if readd:
        live[(1, 2)] = 1
    _check(g, got, live, tmp_path)


@pytest.mark.usefixtures("_any_share")
def test_a_pair_re_added_then_deleted_again(tmp_path):
    """A triangle loses 1 -> 2, an append re-adds it, the count then starts the count after
    1 -> 2 is deleted again: the previous count holds the re-added edge, which the overlay
    of the edges before the change lacks (it once answered 1 triangle for 0): counted from
    scratch, saying why."""
    _write(tmp_path / "e.parquet", [(0, 1), (1, 2), (2, 0), (2, 3)])
    graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    delete_edges(tmp_path / "g", [1], [2])
    _write(tmp_path / "d2.parquet", [(1, 2)])
    graphsys.ingest(tmp_path / "d2.parquet", tmp_path / "g", append=True, edge_set="day2")
    prev = mining.triangle_stats(open_graph(tmp_path / "g"), per_node=True).to_table()
    delete_edges(tmp_path / "g", [1], [2])
    g = open_graph(tmp_path / "g")
    got = mining.triangle_stats(g, per_node=True, init=prev)
    assert got.method == ("counted in memory (from scratch: 1 edges appended after a "
                          "change set the previous result read list its pairs)")
    _check(g, got, collections.Counter([(0, 1), (2, 0), (2, 3)]), tmp_path)
