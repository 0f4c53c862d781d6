"""Runs started from a stored result after an append equal runs from scratch and networkx
(PageRank to the tolerance; WCC, BFS, SSSP exactly); results of other edges, algorithms or
sources are refused in one line."""

from __future__ import annotations

import collections
import json

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import graphsys
from graphsys import bsp, open_graph
from graphsys.bsp import incremental, incremental_pagerank
from graphsys.bsp.engine import STREAM_MAX_SUPERSTEPS, choose_mode
from graphsys.cli import main
from graphsys.errors import FormatError, GraphsysError, ParameterError
from graphsys.plugins import ALGORITHMS
from graphsys.storage import previous
from graphsys.storage.adjacency_index import build_index


@pytest.fixture(autouse=True)
def _warm_pagerank(monkeypatch):
    """PageRank started from a previous result takes the warm start here (the power
    iteration from the old ranks); the delta push and the choice between them are
    tests/bsp/test_incremental_pagerank.py's."""
    monkeypatch.setattr(incremental_pagerank, "_no_delta", lambda *a: "tested apart")
    monkeypatch.setattr(incremental_pagerank, "DELTA_MAX_FRACTION", 1.0)


def _day(seed: int, n: int, m: int, weighted: bool = False) -> pa.Table:
    rng = np.random.default_rng(seed)
    cols = {"src": rng.integers(0, n, m) * 2, "dst": rng.integers(0, n, m) * 2}
    if weighted:
        cols["w"] = rng.integers(1, 9, m).astype(np.float64)  # sums exact in float32
    return pa.table(cols)


def _grow(tmp_path, *, undirected=False, weighted=False):
    """A graph of day 1 and the results of every algorithm on it, then days 2 and 3
    appended (new nodes); returns (graph, results, the networkx graph of all days)."""
    days = [_day(1, 400, 1500, weighted), _day(2, 460, 40, weighted), _day(3, 470, 30, weighted)]
    for k, t in enumerate(days):
        pq.write_table(t, tmp_path / f"day{k}.parquet")
    opts = {"weight_col": "w"} if weighted else {}
    g = graphsys.ingest(tmp_path / "day0.parquet", tmp_path / "g", partitions=3,
                        undirected=undirected, **opts)
    src = int(days[0]["src"][0].as_py())
    results = {"pagerank": bsp.pagerank(g, tol=1e-10), "wcc": bsp.wcc(g),
               "bfs": bsp.bfs(g, src), "sssp": bsp.sssp(g, src)}
    for name, r in results.items():
        pq.write_table(r.to_table(), tmp_path / f"{name}.parquet")
    for k in (1, 2):
        graphsys.ingest(tmp_path / f"day{k}.parquet", tmp_path / "g", append=True,
                        edge_set=f"day{k}", undirected=undirected, **opts)
    ref = nx.MultiGraph() if undirected else nx.MultiDiGraph()
    g = open_graph(tmp_path / "g")
    ref.add_nodes_from(g.node_ids().tolist())
    for t in days:
        w = t["w"].to_pylist() if weighted else [1.0] * len(t)
        ref.add_weighted_edges_from(zip(t["src"].to_pylist(), t["dst"].to_pylist(), w))
    return g, src, ref


@pytest.mark.parametrize("undirected", [False, True])
def test_started_runs_equal_runs_from_scratch_and_networkx(tmp_path, undirected):
    g, src, ref = _grow(tmp_path, undirected=undirected)
    cold = bsp.pagerank(g, tol=1e-10)
    warm = bsp.pagerank(g, tol=1e-10, init=tmp_path / "pagerank.parquet")
    assert "warm start" in warm.stats.method
    assert warm.stats.num_supersteps < cold.stats.num_supersteps
    assert np.abs(warm.values - cold.values).sum() < 1e-8
    if not undirected:
        pr = nx.pagerank(ref, tol=1e-12, weight=None)
        got = warm.to_dict()
        assert max(abs(got[k] - pr[k]) for k in pr) < 1e-9
    wcc = bsp.wcc(g, init=tmp_path / "wcc.parquet")
    assert wcc.stats.method == "union-find over the new edges"
    assert np.array_equal(wcc.values, bsp.wcc(g).values)
    comps = collections.defaultdict(set)
    for node, label in wcc.to_dict().items():
        comps[label].add(node)
    parts = (nx.connected_components(ref) if undirected
             else nx.weakly_connected_components(ref))
    assert sorted(map(sorted, comps.values())) == sorted(map(sorted, parts))
    lengths = nx.single_source_shortest_path_length(ref, src)
    bfs = bsp.bfs(g, src, init=tmp_path / "bfs.parquet")
    assert "repaired" in bfs.stats.method
    assert np.array_equal(bfs.values, bsp.bfs(g, src).values)
    assert all(bfs.value(k) == lengths.get(k, np.inf) for k in ref.nodes)


def test_started_runs_on_the_device(tmp_path, device):
    g, src, ref = _grow(tmp_path, weighted=True)
    got = bsp.sssp(g, src, init=tmp_path / "sssp.parquet", device=device)
    assert np.array_equal(got.values, bsp.sssp(g, src).values)
    dist = nx.single_source_dijkstra_path_length(ref, src)
    assert all(got.value(k) == dist.get(k, np.inf) for k in ref.nodes)
    # the result of a started run starts the next one (its provenance is recorded)
    again = bsp.sssp(g, src, init=got, device=device)
    assert np.array_equal(again.values, got.values)
    ranks = bsp.pagerank(g, tol=1e-10, init=tmp_path / "pagerank.parquet", device=device)
    assert np.abs(ranks.values - bsp.pagerank(g, tol=1e-10).values).sum() < 1e-8


def test_a_result_whose_graph_grew_since_is_refused(tmp_path):
    pq.write_table(_day(1, 50, 100), tmp_path / "a.parquet")
    pq.write_table(_day(2, 60, 10), tmp_path / "b.parquet")
    g = graphsys.ingest(tmp_path / "a.parquet", tmp_path / "g")
    kept = bsp.wcc(g)  # its graph's files are replaced by the append
    graphsys.ingest(tmp_path / "b.parquet", tmp_path / "g", append=True, edge_set="b")
    with pytest.raises(GraphsysError, match="changed on disk since it was computed"):
        bsp.wcc(open_graph(tmp_path / "g"), init=kept)


def test_results_of_other_runs_are_refused(tmp_path):
    g, src, _ = _grow(tmp_path)
    with pytest.raises(GraphsysError, match="holds a pagerank result, not wcc"):
        bsp.wcc(g, init=tmp_path / "pagerank.parquet")
    with pytest.raises(GraphsysError, match="was computed from source"):
        bsp.bfs(g, src + 2, init=tmp_path / "bfs.parquet")
    with pytest.raises(GraphsysError, match="computed on edge set 'default', which this run "
                                            "does not read \\(it reads day1\\)"):
        bsp.wcc(g, edge_set="day1", init=tmp_path / "wcc.parquet")
    other = graphsys.from_numpy([0, 2], [2, 4], tmp_path / "other")
    with pytest.raises(GraphsysError, match="edge set 'default' changed since"):
        bsp.wcc(other, init=tmp_path / "wcc.parquet")
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"node": [0], "value": [0.0]}), plain)
    with pytest.raises(FormatError, match="no graphsys run recorded"):
        bsp.wcc(g, init=plain)
    with pytest.raises(ParameterError, match="not a regular file"):
        bsp.wcc(g, init=tmp_path / "missing.parquet")
    with pytest.raises(ParameterError, match="scc does not start from a previous result"):
        ALGORITHMS.get("scc").run(g, init=tmp_path / "wcc.parquet")


def test_cli_starts_from_the_result_it_replaces(tmp_path, capsys):
    g, src, _ = _grow(tmp_path)
    out = tmp_path / "pr.parquet"
    (tmp_path / "pagerank.parquet").rename(out)
    assert main(["run", "pagerank", str(g.path), "--out", str(out), "--overwrite",
                 "--tol", "1e-10", "--quiet"]) == 0
    assert f"started from {out}" in capsys.readouterr().out
    warm = pq.read_table(out)
    cold = tmp_path / "cold.parquet"
    assert main(["run", "pagerank", str(g.path), "--out", str(cold), "--init", "none",
                 "--tol", "1e-10", "--quiet"]) == 0
    assert "started from" not in capsys.readouterr().out
    assert np.abs(np.asarray(warm["value"]) - np.asarray(pq.read_table(cold)["value"])
                  ).sum() < 1e-8
    # another algorithm's result in --out is replaced from scratch, not started from
    assert main(["run", "wcc", str(g.path), "--out", str(cold), "--overwrite"]) == 0
    assert "started from" not in capsys.readouterr().out
    assert main(["run", "wcc", str(g.path), "--init", str(out)]) != 0
    assert "holds a pagerank result, not wcc" in capsys.readouterr().err


@pytest.mark.parametrize("strings", [False, True])
def test_previous_rows_matched_by_id_in_any_order(tmp_path, strings):
    """Rows in the stored order are placed by the grown layout (checked by id); rows in
    another order, or string ids, are looked up by id: the same answer either way."""
    days = [_day(1, 300, 700), _day(2, 330, 40)]
    if strings:
        days = [pa.table({c: pa.array([f"n{x}" for x in t[c].to_pylist()]) for c in t.column_names})
                for t in days]
    for k, t in enumerate(days):
        pq.write_table(t, tmp_path / f"d{k}.parquet")
    g = graphsys.ingest(tmp_path / "d0.parquet", tmp_path / "g", partitions=3)
    before = bsp.wcc(g).to_table()
    g = graphsys.ingest(tmp_path / "d1.parquet", tmp_path / "g", append=True, edge_set="d1")
    shuffled = before.take(np.random.default_rng(0).permutation(before.num_rows))
    assert shuffled.schema.metadata == before.schema.metadata
    want = bsp.wcc(g).values
    for prev in (before, shuffled):
        assert np.array_equal(bsp.wcc(g, init=prev).values, want)
    sizes = incremental.result_provenance(before)[1]["partition_sizes"]
    placed = previous._appended_layout(g, before.column("node").combine_chunks(), sizes)
    assert np.array_equal(placed, g.to_internal(before.column("node").to_pylist()))
    assert previous._appended_layout(g, shuffled.column("node").combine_chunks(),
                                     sizes) is None


def _expecting(path, supersteps: int):
    """The result file at ``path`` with its recorded superstep count set to
    ``supersteps``."""
    table, meta, _ = incremental.result_provenance(path)
    meta["supersteps"] = supersteps
    return previous.tagged(table, meta)


def test_a_short_started_run_streams_and_equals_networkx(tmp_path):
    g, _, ref = _grow(tmp_path)
    # the previous run's superstep count is what a started run expects: a short one
    # streams the edges (mode "auto"), a long one builds the adjacency as a cold run does
    assert incremental.result_provenance(tmp_path / "pagerank.parquet")[1]["supersteps"] > \
        STREAM_MAX_SUPERSTEPS
    long = bsp.pagerank(g, tol=1e-10, init=tmp_path / "pagerank.parquet")
    short = bsp.pagerank(g, tol=1e-10, init=_expecting(tmp_path / "pagerank.parquet", 5))
    assert long.stats.mode == "memory" and short.stats.mode == "out-of-core"
    assert "streamed (the previous run took 5 supersteps)" in short.stats.method
    assert bsp.pagerank(g, tol=1e-10).stats.mode == "memory"  # from scratch: unknown count
    pr = nx.pagerank(ref, tol=1e-12, weight=None)
    got = short.to_dict()
    assert max(abs(got[k] - pr[k]) for k in pr) < 1e-9
    assert np.abs(short.values - long.values).sum() < 1e-8
    assert short.provenance["supersteps"] == short.stats.num_supersteps
    # to a tighter tolerance than the previous run's, its count says nothing: no streaming
    table, meta, _ = incremental.result_provenance(tmp_path / "pagerank.parquet")
    meta["supersteps"], meta["params"]["tol"] = 5, 1e-3
    loose = previous.tagged(table, meta)
    assert bsp.pagerank(g, tol=1e-10, init=loose).stats.mode == "memory"
    # an explicit mode is kept
    kept = bsp.pagerank(g, tol=1e-10, init=_expecting(tmp_path / "pagerank.parquet", 5),
                        mode="memory")
    assert kept.stats.mode == "memory" and "streamed" not in kept.stats.method


def test_auto_mode_rule(tmp_path):
    g, _, _ = _grow(tmp_path)
    prog = bsp.PageRank()
    cpu = torch.device("cpu")
    assert choose_mode(g, None, prog, cpu) == "memory"  # no expected count
    for expected, mode in ((1, "out-of-core"), (STREAM_MAX_SUPERSTEPS, "out-of-core"),
                           (STREAM_MAX_SUPERSTEPS + 1, "memory")):
        prog.expected_supersteps = expected
        assert choose_mode(g, None, prog, cpu) == mode
    prog.expected_supersteps = 3
    assert choose_mode(g, None, prog, torch.device("cuda")) == "memory"
    # an edge set with a stored index maps it with no build; a view merges its members'
    # on read (about a build), so it still streams
    build_index(g, ("csc",), edge_sets=["default"])
    g = open_graph(tmp_path / "g")
    assert choose_mode(g, "default", prog, cpu) == "memory"
    assert choose_mode(g, None, prog, cpu) == "out-of-core"
    assert choose_mode(g, "day1", prog, cpu) == "out-of-core"


def test_a_result_that_did_not_converge_is_never_repaired_from(tmp_path, capsys):
    """``--allow-unconverged`` results: WCC, BFS and SSSP repair only a fixed point, so
    ``--init PREV`` is refused in one line naming ``--init none``, and ``--init auto`` runs
    from scratch (issue 71: BFS left reachable nodes at inf, WCC 7 components for 2)."""
    (tmp_path / "d1.tsv").write_text("0\t1\n1\t2\n2\t3\n3\t4\n5\t6\n6\t7\n")
    (tmp_path / "d2.tsv").write_text("4\t5\n")
    g = tmp_path / "g"
    assert main(["ingest", str(tmp_path / "d1.tsv"), "--out", str(g), "--quiet"]) == 0
    runs = {"bfs": ["--source", "0"], "wcc": ["--schedule", "sync"], "sssp": ["--source", "0"]}
    for algo, extra in runs.items():
        assert main(["run", algo, str(g), *extra, "--max-iters", "1", "--allow-unconverged",
                     "--out", str(tmp_path / f"{algo}.parquet"), "--quiet"]) == 0
        meta = incremental.result_provenance(tmp_path / f"{algo}.parquet")[1]
        assert meta["converged"] is False
    assert main(["ingest", str(tmp_path / "d2.tsv"), "--append-to", str(g), "--edge-set",
                 "day2", "--quiet"]) == 0
    capsys.readouterr()
    for algo, extra in runs.items():
        prev = tmp_path / f"{algo}.parquet"
        assert main(["run", algo, str(g), *extra, "--init", str(prev)]) != 0
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "did not converge" not in err
        assert err.startswith(f"error: --init {prev}: its {algo} run stopped at max_iters "
                              f"before converging") and "from scratch" in err
        # auto: the --out being replaced is not a fixed point: from scratch
        assert main(["run", algo, str(g), *extra, "--out", str(prev), "--overwrite",
                     "--quiet"]) == 0
        assert "started from" not in capsys.readouterr().out
    bfs = pq.read_table(tmp_path / "bfs.parquet").to_pydict()
    assert dict(zip(bfs["node"], bfs["value"])) == {k: float(k) for k in range(8)}
    assert len(set(pq.read_table(tmp_path / "wcc.parquet")["value"].to_pylist())) == 1
    # PageRank iterates to --tol from any start: an unconverged PREV is taken
    pr = bsp.pagerank(open_graph(g), max_iters=2, tol=1e-10)
    assert not pr.stats.converged
    warm = bsp.pagerank(open_graph(g), tol=1e-10, init=pr.to_table())
    assert np.abs(warm.values - bsp.pagerank(open_graph(g), tol=1e-10).values).sum() < 1e-8


def test_a_result_whose_values_were_edited_is_refused(tmp_path, capsys):
    """Values edited in a result file that kept its metadata (SSSP all 0, WCC [0,1,2,3] on a
    path, k-core all 5) were started from and answered wrongly; the checksum of its columns
    and provenance refuses them (and an edited provenance) in one line, as it does a result
    written before results recorded one (``--init auto`` then runs from scratch and writes
    one that does). Rows in another order, string ids or a Parquet round trip keep it."""
    g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 3]), tmp_path / "g",
                            weight=np.ones(3))
    for algo, source, edited in (("sssp", 0, [0.0] * 4), ("wcc", None, [0.0, 1, 2, 3]),
                                 ("kcore", None, [5.0] * 4), ("bfs", 0, [0.0, 1, 1, 1]),
                                 ("pagerank", None, [0.25] * 4)):
        spec = ALGORITHMS.get(algo)
        table = spec.run(g, source).to_table()
        want = spec.run(g, source).values
        pq.write_table(table, tmp_path / f"{algo}.parquet")
        for prev in (table, tmp_path / f"{algo}.parquet", table.take([2, 0, 3, 1]),
                     table.select(table.column_names[::-1])):
            np.testing.assert_allclose(spec.run(g, source, init=prev).values, want, atol=1e-6)
        swapped = table.set_column(0, "node", pa.array([1, 0, 2, 3]))  # the same if 0 == 1
        meta = json.loads(table.schema.metadata[b"graphsys.result"])
        for bad in (table.set_column(1, "value", pa.array(edited)),
                    table.replace_schema_metadata({"graphsys.result": json.dumps(
                        {**meta, "converged": not meta["converged"]})}),
                    table.set_column(1, "value", table["value"].cast(pa.float32())),
                    *([swapped] if want[0] != want[1] else [])):
            with pytest.raises(FormatError, match="differ from those it recorded a checksum"):
                spec.run(g, source, init=bad)
        old = table.replace_schema_metadata({"graphsys.result": json.dumps(
            {k: v for k, v in meta.items() if k != "checksum"})})
        with pytest.raises(FormatError, match="records no checksum .* from scratch"):
            spec.run(g, source, init=old)
    pq.write_table(old, tmp_path / "old.parquet")
    assert main(["run", "pagerank", str(g.path), "--out", str(tmp_path / "old.parquet"),
                 "--overwrite", "--init", "auto"]) == 0
    assert "started from" not in capsys.readouterr().out
    assert "checksum" in previous.result_provenance(tmp_path / "old.parquet")[1]
    # params that are not an object: a traceback from --init auto's footer check
    pq.write_table(table.replace_schema_metadata({"graphsys.result": json.dumps(
        {**meta, "params": [1]})}), tmp_path / "p.parquet")
    with pytest.raises(FormatError, match="params are not an object"):
        bsp.pagerank(g, init=tmp_path / "p.parquet")
    assert main(["run", "pagerank", str(g.path), "--out", str(tmp_path / "p.parquet"),
                 "--overwrite", "--init", "auto"]) == 0
    s = pa.table({"node": pa.array(["a", "bb", ""]), "value": [1.0, 2.0, 3.0]})
    assert previous.columns_digest(s, {}) == previous.columns_digest(pa.Table.from_batches(
        s.cast(pa.schema([("node", pa.large_string()), ("value", pa.float64())]))
        .to_batches(max_chunksize=1)), {})
    assert previous.columns_digest(s, {}) != previous.columns_digest(
        s.set_column(0, "node", pa.array(["ab", "b", ""])), {})


def test_a_result_table_with_a_column_twice_is_refused(tmp_path):
    """A table with ``node`` (or ``value``) twice raised KeyError from Arrow; one line."""
    g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 3]), tmp_path / "g")
    t = bsp.wcc(g).to_table()
    for cols in (["node", "node", "value"], ["node", "value", "value"]):
        twice = pa.Table.from_arrays([t[c] for c in cols], names=cols)
        with pytest.raises(FormatError, match="expected columns node and value"):
            bsp.wcc(g, init=twice.replace_schema_metadata(t.schema.metadata))


def test_a_result_whose_metadata_nests_deeply_is_refused(tmp_path):
    """Metadata of 200,000 nested arrays raised RecursionError from json; one line."""
    g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 3]), tmp_path / "g")
    deep = bsp.wcc(g).to_table().replace_schema_metadata(
        {"graphsys.result": "[" * 200_000 + "]" * 200_000})
    with pytest.raises(FormatError, match="metadata is not JSON"):
        bsp.wcc(g, init=deep)


def test_recorded_numbers_beyond_float_are_not_read(tmp_path):
    """A provenance whose tol or residual is an int beyond float's range (10**400) raised
    OverflowError or TypeError from the reading of a previous result: not recorded."""
    g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 0]), tmp_path / "g")
    table = bsp.pagerank(g).to_table()
    _, meta, _ = incremental.result_provenance(table)
    meta["params"]["tol"] = meta["residual"] = 10**400
    prev = previous.read_previous(g, previous.tagged(table, meta), "pagerank")
    assert prev.tol is None and prev.residual is None
