"""PageRank after an append by a delta push equals networkx's and a run from scratch to the
tolerance (dangling nodes, new nodes, personalized, weighted, one delta run after another);
a run decides between the push, a run from scratch and a warm start, and says which."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys import bsp, open_graph
from graphsys.bsp import incremental_pagerank
from graphsys.cli import main
from graphsys.plugins import ALGORITHMS
from graphsys.storage.adjacency_index import build_index

TOL = 1e-10


@pytest.fixture(autouse=True)
def _push_to_the_end(monkeypatch):
    """The push runs to the tolerance here, whatever it costs (its work limit is tested
    apart)."""
    monkeypatch.setattr(incremental_pagerank, "PUSH_WORK_COST", 0.0)
    monkeypatch.setattr(incremental_pagerank, "LOCAL_MAX_SHARE", 1.0)  # tiny graphs


def _edges(seed, n, m, weighted=False):
    rng = np.random.default_rng(seed)
    cols = {"src": rng.integers(0, n, m), "dst": rng.integers(0, n - 20, m)}  # dangling
    if weighted:
        cols["w"] = rng.integers(1, 9, m).astype(np.float64)
    return pa.table(cols)


def _grow(tmp_path, *, weighted=False, index=True, added=12, ppr=None):
    """Day 1 (400 ids, 2000 edges) and its PageRank, day 2 (``added`` edges over 430 ids:
    new nodes) appended; returns (graph, previous result path, networkx graph)."""
    days = [_edges(1, 400, 2000, weighted), _edges(2, 430, added, weighted)]
    for k, t in enumerate(days):
        pq.write_table(t, tmp_path / f"day{k}.parquet")
    opts = {"weight_col": "w"} if weighted else {}
    g = graphsys.ingest(tmp_path / "day0.parquet", tmp_path / "g", partitions=2, **opts)
    prev = bsp.pagerank(g, tol=TOL) if ppr is None else _ppr(g, ppr)
    pq.write_table(prev.to_table(), tmp_path / "prev.parquet")
    if index:
        build_index(g, ("csr",), edge_sets=["default"])
    graphsys.ingest(tmp_path / "day1.parquet", tmp_path / "g", append=True, edge_set="day2",
                    **opts)
    ref = nx.MultiDiGraph()
    g = open_graph(tmp_path / "g")
    ref.add_nodes_from(g.node_ids().tolist())
    for t in days:
        w = t["w"].to_pylist() if weighted else [1.0] * len(t)
        ref.add_weighted_edges_from(zip(t["src"].to_pylist(), t["dst"].to_pylist(), w))
    return g, tmp_path / "prev.parquet", ref


def _ppr(g, source, **kwargs):
    return ALGORITHMS.get("ppr").run(g, source, tol=TOL, **kwargs)


def _l1(result, pr):
    got = result.to_dict()
    return sum(abs(got[k] - pr[k]) for k in pr)


@pytest.mark.parametrize("weighted", [False, True])
def test_delta_push_equals_networkx_and_a_run_from_scratch(tmp_path, weighted):
    g, prev, ref = _grow(tmp_path, weighted=weighted)
    assert g.num_nodes() > 400 and (g.degrees() == 0).any()  # new and dangling nodes
    delta = bsp.pagerank(g, tol=TOL, init=prev)
    assert delta.stats.start == "delta" and delta.stats.method.startswith("delta push")
    assert delta.stats.residual < TOL and delta.stats.weighted == weighted
    pr = nx.pagerank(ref, tol=1e-15, max_iter=1000, weight="weight" if weighted else None)
    scratch = bsp.pagerank(g, tol=TOL)
    assert _l1(delta, pr) < 10 * TOL and _l1(scratch, pr) < 10 * TOL
    assert abs(delta.values.sum() - 1.0) < 1e-12
    # its result, with its bound, starts the next delta run after one more append
    pq.write_table(delta.to_table(), tmp_path / "delta.parquet")
    build_index(g, ("csr",), edge_sets=["day2"])
    day3 = _edges(3, 440, 10, weighted)
    pq.write_table(day3, tmp_path / "day3.parquet")
    graphsys.ingest(tmp_path / "day3.parquet", tmp_path / "g", append=True, edge_set="day3",
                    **({"weight_col": "w"} if weighted else {}))
    g = open_graph(tmp_path / "g")
    again = bsp.pagerank(g, tol=TOL, init=tmp_path / "delta.parquet")
    assert again.stats.start == "delta" and again.stats.residual < TOL
    assert np.abs(again.values - bsp.pagerank(g, tol=TOL).values).sum() < 10 * TOL


def test_personalized_delta_push_equals_networkx(tmp_path):
    g, prev, ref = _grow(tmp_path, ppr=7)
    got = _ppr(g, 7, init=prev)
    assert got.stats.start == "delta"
    pr = nx.pagerank(ref, tol=1e-15, max_iter=1000, weight=None, personalization={7: 1.0})
    assert _l1(got, pr) < 10 * TOL


def test_the_run_decides_and_says_which(tmp_path, capsys, monkeypatch):
    g, prev, ref = _grow(tmp_path, added=60)  # 3 % new edges: the warm start
    big = bsp.pagerank(g, tol=TOL, init=prev)
    assert big.stats.start == "warm" and "above the delta push's 1%" in big.stats.method
    assert _l1(big, nx.pagerank(ref, tol=1e-15, max_iter=1000, weight=None)) < 10 * TOL
    monkeypatch.setattr(incremental_pagerank, "DELTA_MAX_FRACTION", 0.05)
    assert bsp.pagerank(g, tol=TOL, init=prev).stats.start == "delta"
    # the summary line and --json say it
    out = tmp_path / "pr.parquet"
    assert main(["run", "pagerank", str(g.path), "--tol", str(TOL), "--init", str(prev),
                 "--out", str(out)]) == 0
    assert "(incremental: delta push)" in capsys.readouterr().out
    assert main(["run", "pagerank", str(g.path), "--tol", str(TOL), "--init", str(prev),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["start"] == "delta"
    # on another device or mode: the warm start
    warm = bsp.pagerank(g, tol=TOL, init=prev, mode="out-of-core")
    assert warm.stats.start == "warm" and "delta push runs in memory" in warm.stats.method


def test_without_a_stored_csr_it_starts_warm_naming_the_index(tmp_path):
    g, prev, _ = _grow(tmp_path, index=False)
    got = bsp.pagerank(g, tol=TOL, init=prev)
    assert got.stats.start == "warm"
    assert "graphsys index --csr --edge-set default" in got.stats.method


def test_a_push_past_its_work_limit_hands_over_to_the_iteration(tmp_path, monkeypatch):
    g, prev, ref = _grow(tmp_path)
    monkeypatch.setattr(incremental_pagerank, "PUSH_SPREAD", 0.0)  # estimated as free
    monkeypatch.setattr(incremental_pagerank, "PUSH_WORK_COST", 1e12)  # a budget of 0
    got = bsp.pagerank(g, tol=TOL, init=prev)
    assert got.stats.start == "delta" and "stopped at" in got.stats.method
    pr = nx.pagerank(ref, tol=1e-15, max_iter=1000, weight=None)
    assert _l1(got, pr) < 10 * TOL


def test_a_change_that_reaches_many_nodes_starts_warm(tmp_path, monkeypatch):
    """New edges whose first residual reaches more than LOCAL_MAX_SHARE of the nodes (not a
    local change) take the warm start, and say so; the answer is scratch's to the
    tolerance."""
    monkeypatch.setattr(incremental_pagerank, "LOCAL_MAX_SHARE", 0.0)
    g, prev, _ = _grow(tmp_path)
    got = bsp.pagerank(g, tol=TOL, init=str(prev))
    assert got.stats.start == "warm" and "of the nodes, above the delta push" in \
        got.stats.method
    ref = bsp.pagerank(g, tol=TOL)
    assert np.abs(got.values - ref.values).sum() < 10 * TOL
