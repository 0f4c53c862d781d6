"""Change sets (issue 73), continued: time windows over a changed graph equal the filtered
fresh ingest; node deletion, undirected graphs, the command line, refusals in one line, one
writer at a time and a crash before the swap."""

from __future__ import annotations

import collections
import fcntl
import os

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys import bsp, cli
from graphsys.errors import GraphsysError
from graphsys.mining import triangle_count
from graphsys.storage import changes
from graphsys.storage.append import append_edges
from graphsys.storage.changes import delete_edges, delete_nodes, update_weights
from graphsys.storage.compact import compact
from graphsys.storage.ingest import EdgeSource
from graphsys.storage.lock import LOCK_FILE
from graphsys.storage.verify import verify_graph

N = 40


def _stamped(seed: int, m: int, t0: int):
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, N, m), rng.integers(0, N, m)
    return s, d, rng.integers(t0, t0 + 50, m)


@pytest.fixture()
def stamped(tmp_path):
    """A timestamped graph, grown by an append, with deletions: and its resulting edges."""
    s1, d1, t1 = _stamped(1, 200, 0)
    s1, d1 = np.r_[np.arange(N), s1], np.r_[(np.arange(N) + 1) % N, d1]  # every node
    t1 = np.r_[np.zeros(N, np.int64), t1]
    g = graphsys.from_arrow(pa.table({"src": s1, "dst": d1, "timestamp": t1}), tmp_path / "g",
                            edge_columns=["timestamp"], partitions=2)
    s2, d2, t2 = _stamped(2, 100, 30)
    pq.write_table(pa.table({"src": s2, "dst": d2, "timestamp": t2}), tmp_path / "d2.parquet")
    append_edges(g.path, [EdgeSource([tmp_path / "d2.parquet"], edge_set="day2",
                                     edge_columns=["timestamp"])])
    edges = list(zip(np.r_[s1, s2].tolist(), np.r_[d1, d2].tolist(), np.r_[t1, t2].tolist()))
    gone = sorted({(a, b) for a, b, _ in edges[N:]})[::6]
    delete_edges(g.path, [a for a, _ in gone], [b for _, b in gone])
    edges = [e for e in edges if (e[0], e[1]) not in set(gone)]
    return graphsys.open_graph(g.path), edges


@pytest.mark.parametrize("since, until", [(None, 20), (10, 45), (40, None), (None, 1000)])
def test_windows_equal_the_filtered_fresh_ingest(stamped, tmp_path, since, until):
    g, edges = stamped
    keep = [e for e in edges if (since is None or e[2] > since) and (until is None or
                                                                    e[2] <= until)]
    view = graphsys.open_graph(g.path, since=since, until=until)
    assert view.num_edges() == sum(b.num_edges for b in view.buckets()) == len(keep)
    got = sorted((int(a), int(b), int(t)) for (s, d, _, _), tt in zip(
        view.iter_edges(), view.edge_column("timestamp"))
        for a, b, t in zip(view.to_original(s), view.to_original(d), tt))
    assert got == sorted(keep)
    fresh = graphsys.from_arrow(pa.table({"src": [e[0] for e in edges],
                                          "dst": [e[1] for e in edges],
                                          "timestamp": [e[2] for e in edges]}),
                                tmp_path / "fresh", edge_columns=["timestamp"], partitions=2)
    fresh_view = graphsys.open_graph(fresh.path, since=since, until=until)
    a = bsp.pagerank(view, tol=1e-10, max_iters=1000).to_dict()
    b = bsp.pagerank(fresh_view, tol=1e-10, max_iters=1000).to_dict()
    assert max(abs(a[k] - b[k]) for k in a) < 1e-12
    assert _groups(bsp.wcc(view).to_dict()) == _groups(bsp.wcc(fresh_view).to_dict())


def _groups(labels: dict) -> list:
    out = collections.defaultdict(list)
    for node, label in labels.items():
        out[label].append(node)
    return sorted(sorted(v) for v in out.values())


def test_a_window_after_compaction_is_the_same(stamped):
    g, edges = stamped
    before = graphsys.open_graph(g.path, since=10, until=45)
    want = sorted(zip(*(np.concatenate(x).tolist() for x in zip(*[
        (s, d, t) for (s, d, _, _), t in zip(before.iter_edges(),
                                             before.edge_column("timestamp"))]))))
    compact(g.path)
    after = graphsys.open_graph(g.path, since=10, until=45)
    got = sorted(zip(*(np.concatenate(x).tolist() for x in zip(*[
        (s, d, t) for (s, d, _, _), t in zip(after.iter_edges(),
                                             after.edge_column("timestamp"))]))))
    assert got == want


def test_deleted_node_stays_isolated(tmp_path):
    rng = np.random.default_rng(3)
    s, d = rng.integers(0, N, 300), rng.integers(0, N, 300)
    g = graphsys.from_numpy(s, d, tmp_path / "g", partitions=2)
    report = delete_nodes(g.path, [7, 11])
    g = graphsys.open_graph(g.path)
    ref = nx.MultiDiGraph()
    ref.add_nodes_from(g.to_original(np.arange(g.num_nodes())).tolist())
    ref.add_edges_from((a, b) for a, b in zip(s.tolist(), d.tolist())
                       if not {a, b} & {7, 11})
    assert report.edges == 300 - ref.number_of_edges()
    assert g.num_nodes() == ref.number_of_nodes() and g.num_edges() == ref.number_of_edges()
    got = bsp.pagerank(g, tol=1e-12).to_dict()
    want = nx.pagerank(ref, tol=1e-13)
    assert max(abs(got[k] - want[k]) for k in want) < 1e-9
    assert delete_nodes(g.path, [7]).edge_set == ""        # no edge left: nothing written
    with pytest.raises(GraphsysError, match="node id 999 is not in the graph"):
        delete_nodes(g.path, [999])


@pytest.mark.parametrize("undirected", [False, True])
def test_a_report_counts_each_pair_once(tmp_path, undirected):
    """A pair listed twice is one pair (the command line said 'deleted 1 edge(s) (2
    pair(s))'), and so are its two directions on an undirected graph."""
    g = graphsys.from_numpy([1, 2, 3, 1, 1], [2, 3, 1, 3, 2], tmp_path / "g",
                            weight=[1, 2, 3, 4, 5], undirected=undirected)
    both = 2 if undirected else 1
    gone = delete_edges(g.path, [1, 1, 2 if undirected else 1], [2, 2, 1 if undirected else 2])
    assert (gone.pairs, gone.edges) == (1, 2 * both)
    raised = update_weights(g.path, [3, 3], [1, 1], [5.0, 6.0])
    assert (raised.pairs, raised.edges) == (1, 4 if undirected else 1)  # 3 -> 1, 1 -> 3
    cut = delete_nodes(g.path, [3])
    assert (cut.pairs, cut.edges) == ((2, 6) if undirected else (3, 3))


def test_undirected_deletion_removes_both_directions(tmp_path):
    g = graphsys.from_numpy([1, 2, 3], [2, 3, 1], tmp_path / "g", undirected=True)
    delete_edges(g.path, [2], [1])
    g = graphsys.open_graph(g.path)
    got = sorted((int(a), int(b)) for s, d, _, _ in g.iter_edges()
                 for a, b in zip(g.to_original(s), g.to_original(d)))
    assert got == [(1, 3), (2, 3), (3, 1), (3, 2)]


def test_refusals_are_one_line_and_write_nothing(tmp_path):
    g = graphsys.from_numpy([1, 2, 3, 1], [2, 3, 1, 3], tmp_path / "g", weight=[1, 2, 3, 4])
    before = sorted(os.listdir(g.path))
    with pytest.raises(GraphsysError, match=r"^allow_missing is off and 2 of 3 edges to "
                                            r"delete are not in .* \(first: 2 -> 1\)"):
        delete_edges(g.path, [1, 2, 3], [2, 1, 2])
    with pytest.raises(GraphsysError, match="node id 99 is not in the graph"):
        delete_edges(g.path, [1], [99])
    with pytest.raises(GraphsysError, match="weight inf of pair 1"):
        update_weights(g.path, [1], [2], [float("inf")])
    with pytest.raises(GraphsysError, match=r"1 of 1 edges to update"):
        update_weights(g.path, [2], [1], [1.0])
    # a value for a sequence, a table for a column, text for a weight: not a traceback
    for call, match in [(lambda: delete_edges(g.path, 1, 2), r"^src must be one-dim.*\(\)$"),
                        (lambda: delete_nodes(g.path, 1), r"^nodes must be one-dim"),
                        (lambda: update_weights(g.path, [1], [2], [[5.0]]),
                         r"^weight must be one-dimensional, got shape \(1, 1\)$"),
                        (lambda: update_weights(g.path, [1], [2], ["heavy"]),
                         r"^weights must be numbers \(could not convert")]:
        with pytest.raises(GraphsysError, match=match):
            call()
    assert sorted(os.listdir(g.path)) == before
    with pytest.warns(UserWarning, match="2 of 3 edges to delete are not in"):
        report = delete_edges(g.path, [1, 2, 3], [2, 1, 2], allow_missing=True)
    assert (report.pairs, report.missing, report.edges) == (1, 2, 1)
    plain = graphsys.from_numpy([1], [2], tmp_path / "plain")
    with pytest.raises(GraphsysError, match="has no weights to update"):
        update_weights(plain.path, [1], [2], [2.0])
    g = graphsys.open_graph(g.path)
    with pytest.raises(GraphsysError, match="changes 'default', which the view does not"):
        _view_without_targets(g)


def _view_without_targets(g):
    append_edges(g.path, [EdgeSource(table=pa.table({"src": [1], "dst": [2],
                                                     "weight": [1.0]}),
                                     edge_set="apart", weight_col="weight")], join=False)
    return graphsys.open_graph(g.path).edge_set("apart,delete-1")


def test_incremental_runs_after_a_deletion(tmp_path):
    """PageRank starts warm from a result from before a deletion (no stored CSR index to
    push along); WCC takes it too (a repair, or a run from scratch where, as
    here, that many changed)."""
    g = graphsys.from_numpy([1, 2, 3, 4], [2, 3, 1, 5], tmp_path / "g")
    before = {"wcc": bsp.wcc(g).to_table(), "pagerank": bsp.pagerank(g).to_table()}
    delete_edges(g.path, [4], [5])
    g = graphsys.open_graph(g.path)
    ranks = bsp.pagerank(g, tol=1e-10, init=before["pagerank"])
    assert ranks.stats.start == "warm" and "graphsys index --csr" in ranks.stats.method
    assert np.abs(ranks.values - bsp.pagerank(g, tol=1e-10).values).sum() < 1e-8
    after = bsp.wcc(g, init=before["wcc"])
    assert after.stats.start == "scratch" and "above the repair's 5%" in after.stats.method
    assert len(set(after.to_dict().values())) == 3


def test_command_line(tmp_path, capsys):
    g = graphsys.from_numpy([1, 2, 3, 1], [2, 3, 1, 3], tmp_path / "g", weight=[1, 2, 3, 4])
    (tmp_path / "del.tsv").write_text("# pairs\n1 2\n")
    (tmp_path / "w.tsv").write_text("2\t3\t9.5\n")
    (tmp_path / "bad.tsv").write_text("2 1\n")
    assert cli.main(["delete", str(g.path), "--edges", str(tmp_path / "del.tsv")]) == 0
    assert "deleted 1 edge(s) (1 pair(s))" in capsys.readouterr().out
    assert cli.main(["update", str(g.path), "--weights", str(tmp_path / "w.tsv")]) == 0
    assert cli.main(["delete", str(g.path), "--edges", str(tmp_path / "bad.tsv")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --allow-missing is off and 1 of 1 edges to delete")
    assert len(err.splitlines()) == 1
    assert cli.main(["delete", str(g.path), "--node", "42"]) != 0
    assert capsys.readouterr().err.strip() == \
        "error: node id 42 is not in the graph (entity type 'node')"
    assert cli.main(["export", str(g.path), "--out", str(tmp_path / "e.tsv")]) == 0
    rows = (tmp_path / "e.tsv").read_text().splitlines()[1:]
    assert sorted(rows) == ["1\t3\t4", "2\t3\t9.5", "3\t1\t3"]
    assert cli.main(["compact", str(g.path)]) == 0
    assert "3 edge sets into 'default' (3 edges)" in capsys.readouterr().out
    assert cli.main(["export", str(g.path), "--out", str(tmp_path / "f.tsv")]) == 0
    assert (tmp_path / "f.tsv").read_text() == (tmp_path / "e.tsv").read_text()


def test_one_writer_at_a_time(tmp_path):
    g = graphsys.from_numpy([1, 2], [2, 3], tmp_path / "g")
    stale = graphsys.open_graph(g.path)
    delete_edges(g.path, [1], [2])
    with pytest.raises(GraphsysError, match="changed by another writer"):
        delete_edges(stale, [2], [3])
    with open(g.path / LOCK_FILE, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        with pytest.raises(GraphsysError, match="another writer holds"):
            delete_edges(g.path, [2], [3])
        with pytest.raises(GraphsysError, match="another writer holds"):
            compact(g.path)


def test_writes_through_an_opened_graph_leave_it_reading_them(tmp_path):
    # a write through an opened Graph was not seen by it (triangle_count still 1, its
    # views kept) and a second write through it was refused as another writer's
    g = graphsys.from_numpy([1, 2, 3, 3], [2, 3, 1, 4], tmp_path / "g", undirected=True)
    other = graphsys.open_graph(g.path)
    assert triangle_count(g) == 1 and g.degrees().tolist() == [2, 2, 3, 1]
    delete_edges(g, [1], [2])
    assert triangle_count(g) == 0 and g.num_edges() == 6
    assert g.degrees().tolist() == [1, 1, 3, 1]
    delete_nodes(g, [4])
    assert g.edge_set().name == "default,delete-1,delete-2" and g.num_edges() == 4
    assert compact(g).edges == 4 and g.edge_sets == ["default"]
    assert g.num_edges() == 4 and g.change_sets == []
    verify_graph(g.path)
    with pytest.raises(GraphsysError, match="changed by another writer"):
        delete_edges(other, [2], [3])                 # another object: refused as before
    assert graphsys.open_graph(g.path).num_edges() == 4


def test_a_crash_before_the_swap_leaves_the_graph_as_it_was(tmp_path, monkeypatch):
    g = graphsys.from_numpy([1, 2, 3], [2, 3, 1], tmp_path / "g")

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    delete_edges(g.path, [3], [1])
    manifest = (g.path / "manifest.json").read_bytes()
    monkeypatch.setattr(changes, "write_manifest", crash)
    with pytest.raises(KeyboardInterrupt):
        delete_edges(g.path, [1], [2])
    with pytest.raises(KeyboardInterrupt):
        compact(g.path)
    assert (g.path / "manifest.json").read_bytes() == manifest
    assert sorted(os.listdir(tmp_path)) == ["g"]            # the staging directory is gone
    assert graphsys.open_graph(g.path).num_edges() == 2
    monkeypatch.undo()
    compact(g.path)
    assert graphsys.open_graph(g.path).num_edges() == 2


def test_edges_appended_after_a_deletion_stay(tmp_path):
    stamped = pa.table({"src": [1, 2, 3], "dst": [2, 3, 1], "timestamp": [1, 2, 3]})
    g = graphsys.from_arrow(stamped, tmp_path / "g", edge_columns=["timestamp"])
    delete_edges(g.path, [1], [2])
    pq.write_table(pa.table({"src": [1], "dst": [2], "timestamp": [4]}), tmp_path / "a.parquet")
    append_edges(g.path, [EdgeSource([tmp_path / "a.parquet"], edge_set="again",
                                     edge_columns=["timestamp"])])
    g = graphsys.open_graph(g.path)
    assert g.edge_set().members == ("default", "delete-1", "again") and g.num_edges() == 3
    got = sorted((int(a), int(b)) for s, d, _, _ in g.iter_edges()
                 for a, b in zip(g.to_original(s), g.to_original(d)))
    assert got == [(1, 2), (2, 3), (3, 1)]
    pq.write_table(pa.table({"src": [1], "dst": [3]}), tmp_path / "b.parquet")
    with pytest.raises(GraphsysError, match="edge columns timestamp"):
        append_edges(g.path, [EdgeSource([tmp_path / "b.parquet"], edge_set="bare")])


def test_stored_indexes_do_not_bring_deleted_edges_back(tmp_path):
    from graphsys.storage.adjacency_index import build_index

    src, dst = [1, 2, 3, 1, 3], [2, 3, 1, 4, 4]
    g = graphsys.from_numpy(src, dst, tmp_path / "g", partitions=2)
    build_index(g, ("csr", "csc", "sym"))
    delete_edges(g.path, [2], [3])
    g = graphsys.open_graph(g.path)
    build_index(g, ("csr", "csc", "sym"))        # the change set gets none
    assert set(g.manifest.indexes) == {"default"}
    fresh = graphsys.from_numpy([1, 3, 1, 3], [2, 1, 4, 4], tmp_path / "fresh", partitions=2)
    assert abs(g.csr().to_scipy() - fresh.csr().to_scipy()).max() == 0
    assert abs(g.csr(transpose=True).to_scipy() - fresh.csr(transpose=True).to_scipy()
               ).max() == 0
    assert triangle_count(g) == triangle_count(fresh) == 1
    assert bsp.bfs(g, 2).to_dict() == bsp.bfs(fresh, 2).to_dict()


def test_verify_recounts_what_a_delete_set_removes(tmp_path):
    import json

    from graphsys.errors import FormatError

    g = graphsys.from_numpy([1, 2, 3, 1], [2, 3, 1, 2], tmp_path / "g")
    delete_edges(g.path, [1], [2])
    assert verify_graph(g.path)["changes"] == 1
    data = json.loads((g.path / "manifest.json").read_text())
    data["edge_sets"]["delete-1"]["change"]["removed"] = {"0-0": 1}   # 2 parallel edges
    (g.path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match="delete set 'delete-1' records 1 edges removed, "
                                          "its targets' buckets give 2"):
        verify_graph(g.path)


@pytest.mark.parametrize("removed, match", [
    (1, "bucket 0-0 of .* holds 2 edges after its delete sets, their records give 3"),
    (0, "bucket 0-0 of .* holds 2 edges after its delete sets, their records give 4"),
    (2 ** 40, "delete set 'delete-1' records more edges removed from bucket 0-0 than"),
])
def test_readers_refuse_a_delete_set_whose_counts_were_edited(tmp_path, removed, match):
    """An edited ``removed`` count (manifest.json has no checksum) made the view's counts
    wrong: a CSR with stale trailing indices and a wrong edge count returned as valid, or
    NumPy's ``negative dimensions`` error; every edge reader now refuses it in one line."""
    import json

    from graphsys.errors import FormatError

    g = graphsys.from_numpy([1, 2, 3, 1], [2, 3, 1, 2], tmp_path / "g")
    delete_edges(g.path, [1], [2])
    data = json.loads((g.path / "manifest.json").read_text())
    data["edge_sets"]["delete-1"]["change"]["removed"] = {"0-0": removed}
    (g.path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match=match):
        graphsys.open_graph(g.path).csr()


def test_relations_of_a_deleted_pair_all_go(tmp_path):
    from graphsys.storage.ingest import IngestOptions, ingest_sources
    from graphsys.storage.verify import verify_graph

    (tmp_path / "t.tsv").write_text("a\tr1\tb\na\tr2\tb\nb\tr1\tc\nc\tr2\ta\n")
    ingest_sources([EdgeSource([tmp_path / "t.tsv"], src_col=0, rel_col=1, dst_col=2)],
                   tmp_path / "g", IngestOptions(partitions=2))
    assert delete_edges(tmp_path / "g", ["a"], ["b"]).edges == 2
    g = graphsys.open_graph(tmp_path / "g")
    got = sorted((str(a), int(r), str(b)) for s, d, rel, _ in g.iter_edges()
                 for a, b, r in zip(g.to_original(s).to_pylist(), g.to_original(d).to_pylist(),
                                    rel))
    assert got == [("b", 0, "c"), ("c", 1, "a")]
    compact(g.path)
    g = graphsys.open_graph(g.path)
    assert g.num_edges() == 2 and g.edge_set().has_rel and verify_graph(g.path)["edges"] == 2


def test_a_subgraph_of_a_changed_graph_holds_the_remaining_edges(tmp_path):
    g = graphsys.from_numpy([1, 2, 3, 1, 4], [2, 3, 1, 3, 1], tmp_path / "g")
    delete_edges(g.path, [1], [2])
    g = graphsys.open_graph(g.path)
    assert (g.edge_sets, g.change_sets) == (["default"], ["delete-1"])
    h = g.subgraph([1, 2, 3], out=tmp_path / "h")
    assert h.edge_sets == ["default"]
    got = sorted((int(a), int(b)) for s, d, _, _ in h.iter_edges()
                 for a, b in zip(h.to_original(s), h.to_original(d)))
    assert got == [(1, 3), (2, 3), (3, 1)]
