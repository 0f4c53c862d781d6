"""k-core started from a result before appends and deletions (:mod:`graphsys.bsp.
incremental_cores`) equals networkx's ``core_number`` of the resulting edges and a run from
scratch, after random sequences of changes on small graphs (directed and undirected, with
and without stored indexes, each result starting the next) and on ca-GrQc from the dataset
mirror; it runs from scratch where it does not apply or pay, saying why, and refuses a
result it cannot start from in one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys import bsp, open_graph
from graphsys.bsp import incremental_changes
from graphsys.cli import main
from graphsys.errors import GraphsysError
from graphsys.storage import previous
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.changes import delete_edges, update_weights


def _write(path, pairs) -> None:
    s, d = zip(*pairs)
    pq.write_table(pa.table({"src": list(s), "dst": list(d),
                             "w": [1.0] * len(s)}), path)


def _fresh(rng, n, count, live, undirected):
    """``count`` pairs not in ``live`` (nor their reverses, undirected), no self-loops."""
    out = set()
    while len(out) < count:
        a, b = (int(x) for x in rng.integers(0, n, 2))
        if a != b and (a, b) not in live | out and not (
                undirected and (b, a) in live | out):
            out.add((a, b))
    return sorted(out)


def _reference(g, live, undirected) -> dict:
    ref = nx.Graph() if undirected else nx.DiGraph()
    ref.add_nodes_from(g.node_ids().tolist())
    ref.add_edges_from(live)
    return nx.core_number(ref)


def _check_order(table, live) -> None:
    """The ``order`` column is a k-order: core numbers never fall along it, and each node
    has at most its core number of edges to nodes after it."""
    rows = table.to_pydict()
    core = dict(zip(rows["node"], rows["value"]))
    rank = dict(zip(rows["node"], rows["order"]))
    assert sorted(rank.values()) == list(range(len(rank)))
    by_rank = sorted(rank, key=rank.get)
    assert all(core[a] <= core[b] for a, b in zip(by_rank, by_rank[1:]))
    plus = dict.fromkeys(rank, 0)
    for a, b in live:
        plus[a if rank[a] < rank[b] else b] += 1
    assert all(plus[v] <= core[v] for v in rank)


@pytest.fixture
def _any_share(monkeypatch):
    """Update whatever share of the edges changed and however far the traversals reach
    (the small graphs change a lot)."""
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_FRACTION", 1.0)
    monkeypatch.setattr(previous, "REPAIR_MAX_FRACTION", 1.0)  # what --init auto reads
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_SWEEPS", 1000)


@pytest.mark.usefixtures("_any_share")
@pytest.mark.parametrize(("undirected", "indexed", "seed"), [
    (False, False, 0), (True, False, 1), (False, True, 2), (True, True, 3)])
def test_random_change_sequences_equal_networkx_and_scratch(tmp_path, undirected, indexed,
                                                           seed):
    rng = np.random.default_rng(seed)
    live = set(_fresh(rng, 150, 450, set(), undirected))
    _write(tmp_path / "day0.parquet", sorted(live))
    g = graphsys.ingest(tmp_path / "day0.parquet", tmp_path / "g", partitions=3,
                        undirected=undirected, weight_col="w")
    if indexed:  # read as built: the numbering moves as new nodes are appended
        build_index(g, ("csr", "csc"))
        g = open_graph(tmp_path / "g")
    prev = bsp.kcore(g).to_table()
    # appends, then an append and deletions, then deletions: each run starts from the one
    # before (a deletion written before an append does not reach the appended edges, so a
    # run reading both starts from scratch: appends come first)
    for day, (append, delete) in enumerate([(1, 0), (1, 0), (1, 1), (0, 1), (0, 1)], 1):
        added = _fresh(rng, 150 + 10 * day, 30, live, undirected) if append else []
        if added:
            _write(tmp_path / f"day{day}.parquet", added)
            graphsys.ingest(tmp_path / f"day{day}.parquet", tmp_path / "g", append=True,
                            edge_set=f"day{day}", undirected=undirected, weight_col="w")
        live |= set(added)
        gone = [e for e in sorted(live) if rng.random() < 0.04] if delete else []
        if gone:
            delete_edges(tmp_path / "g", [a for a, _ in gone], [b for _, b in gone])
        live -= set(gone)
        g = open_graph(tmp_path / "g")
        got = bsp.kcore(g, init=prev)
        assert got.stats.start == "repair", got.stats.method
        assert np.array_equal(got.values, bsp.kcore(g).values)
        ref = _reference(g, live, undirected)
        assert got.to_dict() == {k: float(v) for k, v in ref.items()}
        prev = got.to_table()
        _check_order(prev, live)


@pytest.mark.usefixtures("_any_share")
def test_parallel_edges_and_self_loops(tmp_path):
    """A pair deleted with its parallel copies, self-loops never counted: as from scratch."""
    pairs = [(0, 1), (0, 1), (0, 1), (1, 2), (2, 0), (2, 2), (3, 3), (1, 3), (3, 1)]
    _write(tmp_path / "e.parquet", pairs)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    prev = bsp.kcore(g).to_table()
    delete_edges(tmp_path / "g", [0, 3], [1, 1])
    _write(tmp_path / "d1.parquet", [(0, 3), (0, 3), (2, 3), (4, 4)])
    graphsys.ingest(tmp_path / "d1.parquet", tmp_path / "g", append=True, edge_set="d1")
    g = open_graph(tmp_path / "g")
    got = bsp.kcore(g, init=prev)
    assert got.stats.start == "repair"
    assert np.array_equal(got.values, bsp.kcore(g).values)


@pytest.mark.usefixtures("_any_share")
def test_weight_updates_change_no_core(tmp_path):
    _write(tmp_path / "e.parquet", [(0, 1), (1, 2), (2, 0), (2, 3)])
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", weight_col="w")
    prev = bsp.kcore(g).to_table()
    update_weights(tmp_path / "g", [0], [1], [7.0])
    got = bsp.kcore(open_graph(tmp_path / "g"), init=prev)
    assert got.stats.start == "repair" and "0 deleted pairs, 0 new edges" in got.stats.method
    assert got.values.tolist() == [2.0, 2.0, 2.0, 1.0]


def test_fallbacks_run_from_scratch_and_say_why(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    live = _fresh(rng, 80, 200, set(), False)
    _write(tmp_path / "e.parquet", live)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    prev = bsp.kcore(g).to_table()
    gone = live[::10]  # 10 % of the edges
    delete_edges(tmp_path / "g", [a for a, _ in gone], [b for _, b in gone])
    g = open_graph(tmp_path / "g")
    scratch = bsp.kcore(g).values
    got = bsp.kcore(g, init=prev)
    assert got.stats.start == "scratch" and "above the repair's 5%" in got.stats.method
    assert np.array_equal(got.values, scratch)
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_FRACTION", 1.0)
    for kwargs, why in [({"mode": "out-of-core"}, "a k-core update runs in memory"),
                        ({"self_loops": "refuse"}, "self_loops='refuse' reads every edge")]:
        got = bsp.kcore(g, init=prev, **kwargs)
        assert got.stats.start == "scratch" and why in got.stats.method
        assert np.array_equal(got.values, scratch)
    monkeypatch.setattr(incremental_changes, "REPAIR_MAX_SWEEPS", 0)
    got = bsp.kcore(g, init=prev)
    assert got.stats.start == "scratch"
    assert "the updates scanned more than" in got.stats.method
    assert np.array_equal(got.values, scratch)


def test_a_result_it_cannot_start_from_is_one_line(tmp_path):
    _write(tmp_path / "e.parquet", [(0, 1), (1, 2), (2, 0)])
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    table = bsp.kcore(g).to_table()
    meta = json.loads(table.schema.metadata[b"graphsys.result"])
    bad = table.set_column(1, "value", pa.array([1.5, 2.0, 2.0]))
    with pytest.raises(GraphsysError, match=r"differ from those it recorded a checksum of"):
        bsp.kcore(g, init=bad)
    bad = previous.tagged(bad, meta)  # its checksum taken again: read, then refused for its values
    with pytest.raises(GraphsysError, match=r"non-negative integers; run kcore from scratch"):
        bsp.kcore(g, init=bad)
    wcc = bsp.wcc(g).to_table()
    with pytest.raises(GraphsysError) as err:
        bsp.kcore(g, init=wcc)
    assert "\n" not in str(err.value)
    garbled = previous.tagged(table.set_column(2, "order", pa.array([0, 0, 1])),  # not a
                              meta)                                               # numbering
    with pytest.raises(GraphsysError, match=r"not a peeling order of its core numbers"):
        bsp.kcore(g, init=garbled)


@pytest.mark.usefixtures("_any_share")
def test_a_result_without_an_order_runs_from_scratch_then_updates(tmp_path):
    """A result written before results kept the k-order (or of an order version this
    release does not know) starts a run from scratch, which keeps one for the next."""
    _write(tmp_path / "e.parquet", [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 2)])
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    table = bsp.kcore(g).to_table()
    assert table.column_names == ["node", "value", "order"]
    meta = json.loads(table.schema.metadata[b"graphsys.result"])
    later = previous.tagged(table, {**meta, "order": 99})
    # as the release before wrote it (with a checksum)
    old = previous.tagged(table.drop_columns(["order"]),
                          {k: v for k, v in meta.items() if k != "order"})
    delete_edges(tmp_path / "g", [0], [1])
    g = open_graph(tmp_path / "g")
    for prev in (old, later):
        got = bsp.kcore(g, init=prev)
        assert got.stats.start == "scratch" and "keeps no k-order" in got.stats.method
        assert np.array_equal(got.values, bsp.kcore(g).values)
    _write(tmp_path / "d1.parquet", [(0, 3), (1, 3)])
    graphsys.ingest(tmp_path / "d1.parquet", tmp_path / "g", append=True, edge_set="d1")
    g2 = open_graph(tmp_path / "g")
    again = bsp.kcore(g2, init=got.to_table())
    assert again.stats.start == "repair"
    assert np.array_equal(again.values, bsp.kcore(g2).values)


@pytest.mark.usefixtures("_any_share")
def test_cli_updates_and_says_so(tmp_path, capsys):
    _write(tmp_path / "e.parquet", [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)])
    graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    out = tmp_path / "k.parquet"
    assert main(["run", "kcore", str(tmp_path / "g"), "--out", str(out)]) == 0
    delete_edges(tmp_path / "g", [0], [1])
    capsys.readouterr()
    assert main(["run", "kcore", str(tmp_path / "g"), "--out", str(out), "--overwrite"]) == 0
    said = capsys.readouterr().out
    assert "incremental: repaired from the changed edges" in said
    rows = pq.read_table(out).to_pydict()
    assert dict(zip(rows["node"], rows["value"])) == {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}
    _check_order(pq.read_table(out), [(1, 2), (2, 0), (2, 3), (3, 4)])


def _mirror_graph() -> Path:
    path = Path(os.environ.get("GRAPHSYS_MIRROR", "/nonexistent")) / "snap" / "ca-GrQc.txt.gz"
    if not path.exists():
        pytest.skip("ca-GrQc not in the dataset mirror")
    return path


@pytest.mark.usefixtures("_any_share")
def test_ca_grqc_after_deletions_and_appends_equals_networkx(tmp_path):
    rng = np.random.default_rng(7)
    ref = nx.read_edgelist(_mirror_graph(), nodetype=int, create_using=nx.Graph)
    ref.remove_edges_from(nx.selfloop_edges(ref))
    edges = sorted((min(a, b), max(a, b)) for a, b in ref.edges)
    _write(tmp_path / "e.parquet", edges)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", undirected=True)
    prev = bsp.kcore(g).to_table()
    nodes = np.array(sorted(ref.nodes))
    for day in range(1, 3):  # 0.5 % appended, then 0.5 % deleted, each day
        listed = sorted((min(a, b), max(a, b)) for a, b in ref.edges)
        added = set()
        while len(added) < len(listed) // 200:
            a, b = (int(x) for x in rng.choice(nodes, 2))
            if a != b and not ref.has_edge(a, b):
                added.add((min(a, b), max(a, b)))
        _write(tmp_path / f"d{day}.parquet", sorted(added))
        graphsys.ingest(tmp_path / f"d{day}.parquet", tmp_path / "g", append=True,
                        edge_set=f"d{day}", undirected=True)
        ref.add_edges_from(added)
        listed = sorted((min(a, b), max(a, b)) for a, b in ref.edges)
        gone = [listed[i] for i in rng.choice(len(listed), len(listed) // 200, replace=False)]
        delete_edges(tmp_path / "g", [a for a, _ in gone], [b for _, b in gone])
        ref.remove_edges_from(gone)
        g = open_graph(tmp_path / "g")
        got = bsp.kcore(g, init=prev)
        assert got.stats.start == "repair", got.stats.method
        assert np.array_equal(got.values, bsp.kcore(g).values)
        ref_core = nx.core_number(ref)  # nodes with a self-loop alone are not ingested
        assert got.to_dict() == {k: float(ref_core[k]) for k in got.to_dict()}
        prev = got.to_table()


@pytest.mark.usefixtures("_any_share")
@pytest.mark.parametrize("undirected", [False, True])
def test_random_multigraphs_equal_runs_from_scratch(tmp_path, undirected):
    """Parallel edges and self-loops among the edges, deleted and appended."""
    rng = np.random.default_rng(11)
    pairs = [tuple(int(x) for x in rng.integers(0, 40, 2)) for _ in range(160)]
    _write(tmp_path / "e.parquet", pairs)
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", undirected=undirected)
    prev = bsp.kcore(g).to_table()
    _write(tmp_path / "d1.parquet", pairs[::9] + [tuple(int(x) for x in rng.integers(0, 45, 2))
                                                  for _ in range(20)])
    graphsys.ingest(tmp_path / "d1.parquet", tmp_path / "g", append=True, edge_set="d1",
                    undirected=undirected)
    gone = sorted(set(pairs[1::6]))
    delete_edges(tmp_path / "g", [a for a, _ in gone], [b for _, b in gone])
    g = open_graph(tmp_path / "g")
    got = bsp.kcore(g, init=prev)
    assert got.stats.start == "repair", got.stats.method
    assert np.array_equal(got.values, bsp.kcore(g).values)
