"""The delta push is taken only where its estimated work costs less than a warm start
(:mod:`graphsys.bsp.incremental_pagerank`'s cost model): on a grid, where a change's
residual spreads slowly, one deleted pair is pushed and 150 are not (the warm start, which
says why); either way the ranks equal networkx's on the changed edges and a run from
scratch, to the tolerance."""

from __future__ import annotations

import networkx as nx
import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import graphsys
from graphsys import bsp, open_graph
from graphsys.bsp import incremental_pagerank
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.changes import delete_edges

TOL = 1e-8
SIDE = 150


@pytest.fixture(autouse=True)
def _costs(monkeypatch):
    """A unit of push work costs 20 superstep edges whatever the thread count; the change's
    reach is left to the cost model."""
    monkeypatch.setattr(incremental_pagerank, "PUSH_WORK_COST", 20.0 / numba.get_num_threads())
    monkeypatch.setattr(incremental_pagerank, "LOCAL_MAX_SHARE", 1.0)


def _grid(tmp_path):
    ids = np.arange(SIDE * SIDE).reshape(SIDE, SIDE)
    a, b = [ids[:, :-1], ids[:-1]], [ids[:, 1:], ids[1:]]
    src = np.concatenate([x.ravel() for x in a + b])
    dst = np.concatenate([x.ravel() for x in b + a])
    pq.write_table(pa.table({"src": src, "dst": dst}), tmp_path / "e.parquet")
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    build_index(g, ("csr",))
    return g, list(zip(src.tolist(), dst.tolist()))


@pytest.mark.parametrize(("pairs", "start"), [(1, "delta"), (150, "warm")])
def test_the_cheaper_start_is_taken_and_answers_as_networkx(tmp_path, pairs, start):
    g, edges = _grid(tmp_path)
    before = bsp.pagerank(g, tol=TOL).to_table()
    gone = [edges[k] for k in np.random.default_rng(1).choice(len(edges), pairs,
                                                               replace=False)]
    delete_edges(g.path, [a for a, _ in gone], [b for _, b in gone])
    g = open_graph(g.path)
    got = bsp.pagerank(g, tol=TOL, init=before)
    assert got.stats.start == start, got.stats.method
    if start == "warm":
        assert "would cost more than 0.5 of a warm start's layout" in got.stats.method
    ref = nx.DiGraph()
    ref.add_nodes_from(range(SIDE * SIDE))
    ref.add_edges_from(set(edges) - set(gone))
    pr = nx.pagerank(ref, tol=1e-14, max_iter=2000)
    values = got.to_dict()
    assert sum(abs(values[k] - pr[k]) for k in pr) < 20 * TOL
    assert np.abs(got.values - bsp.pagerank(g, tol=TOL).values).sum() < 20 * TOL


def test_the_warm_start_after_a_costly_push_reads_no_bucket(tmp_path, monkeypatch):
    """Where the push does not pay, the warm start reads the changed view through the
    stored CSR and CSC (the old edges' indexes through the deletions, mapped once for the
    decision and the run), starting one power step on; the ranks equal a run from
    scratch's."""
    from graphsys.storage import edge_changes

    g, edges = _grid(tmp_path)
    build_index(g, ("csc",))
    before = bsp.pagerank(g, tol=TOL).to_table()
    gone = [edges[k] for k in np.random.default_rng(1).choice(len(edges), 150, replace=False)]
    delete_edges(g.path, [a for a, _ in gone], [b for _, b in gone])
    scratch = bsp.pagerank(open_graph(g.path), tol=TOL)
    read = []
    keep = edge_changes.apply
    monkeypatch.setattr(edge_changes, "apply", lambda *a, **k: read.append(1) or keep(*a, **k))
    got = bsp.pagerank(open_graph(g.path), tol=TOL, init=before)
    assert got.stats.start == "warm" and not read, got.stats.method
    assert np.abs(got.values - scratch.values).sum() < 20 * TOL


def test_a_change_that_reaches_too_far_is_refused_before_its_residual(tmp_path, monkeypatch):
    """The nodes the change can reach (the changed sources' out-neighbours) are counted
    from the stored CSR's rows of those sources alone: above LOCAL_MAX_SHARE the warm start
    is taken before any array over the nodes is made."""
    monkeypatch.setattr(incremental_pagerank, "LOCAL_MAX_SHARE", 0.02)
    monkeypatch.setattr(incremental_pagerank, "_edits", lambda *a: pytest.fail("computed"))
    g, edges = _grid(tmp_path)
    before = bsp.pagerank(g, tol=TOL).to_table()
    gone = [edges[k] for k in np.random.default_rng(1).choice(len(edges), 300, replace=False)]
    delete_edges(g.path, [a for a, _ in gone], [b for _, b in gone])
    g = open_graph(g.path)
    got = bsp.pagerank(g, tol=TOL, init=before)
    assert got.stats.start == "warm" and "residual reaches" in got.stats.method
    assert np.abs(got.values - bsp.pagerank(g, tol=TOL).values).sum() < 20 * TOL
