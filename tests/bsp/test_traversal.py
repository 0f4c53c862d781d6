"""BFS and SSSP against scipy.sparse.csgraph."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csgraph

from graphsys import bsp
from graphsys.bsp.algorithms import PageRank
from graphsys.errors import ConvergenceWarning, GraphsysError, ParameterError
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

from .conftest import GRAPH_KEYS, MODES, to_global


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
def test_bfs_levels(graphs, key, mode, backend, device):
    tg = graphs[key]
    for source in (0, 5):
        s = to_global(tg, source)
        res = bsp.bfs(tg.graph, source, mode=mode, backend=backend, device=device)
        ref = csgraph.shortest_path(tg.count, method="D", unweighted=True, indices=s)
        np.testing.assert_array_equal(res.values, ref)
        assert np.isinf(res.values).any()  # isolated vertices are unreachable
        assert res.stats.converged


def test_bfs_switches_push_and_pull(graphs):
    tg = graphs["undirected-p3"]
    res = bsp.bfs(tg.graph, 0, schedule="sync")
    dirs = [s.direction for s in res.stats.supersteps]
    assert dirs[0] == "push" and "pull" in dirs  # one source is sparse, the middle is dense
    # a pull with first_message_wins scans fewer edges than the graph has in total
    pull = [s for s in res.stats.supersteps if s.direction == "pull"]
    assert all(s.edges_scanned < tg.graph.num_edges() for s in pull)
    always_push = bsp.bfs(tg.graph, 0, dense_divisor=1e-9, schedule="sync")
    assert {s.direction for s in always_push.stats.supersteps} == {"push"}
    np.testing.assert_array_equal(always_push.values, res.values)


def test_bfs_on_a_long_chain(graphs):
    tg = graphs["chain"]
    res = bsp.bfs(tg.graph, 0, mode="out-of-core")
    s = to_global(tg, 0)
    ref = csgraph.shortest_path(tg.count, unweighted=True, indices=s)
    np.testing.assert_array_equal(res.values, ref)
    assert res.values[to_global(tg, 59)] == 59
    assert res.stats.num_supersteps == 60


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
def test_sssp_distances(graphs, key, mode, backend, device):
    tg = graphs[key]
    s = to_global(tg, 2)
    res = bsp.sssp(tg.graph, 2, mode=mode, backend=backend, device=device)
    # multi-edges collapse to their lightest copy in a shortest path; dedupe=True has none
    ref = csgraph.dijkstra(tg.adj, indices=s)
    np.testing.assert_allclose(res.values, ref, rtol=1e-6)
    assert (np.isinf(res.values) == np.isinf(ref)).all()


def test_sssp_rejects_negative_weights(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\t0.5\n2\t3\t-1.0\n")
    ingest_sources([EdgeSource([f], weight_col=2)], tmp_path / "g", IngestOptions())
    with pytest.raises(GraphsysError, match="non-negative.*-1.0"):
        bsp.sssp(tmp_path / "g", 1)


def test_unknown_source(graphs):
    """The refusal names the parameter that held the id (it named the id alone)."""
    g = graphs["directed-p1"].graph
    with pytest.raises(ParameterError, match="^source must hold ids of the graph's nodes: "
                                             "node id 9999 is not in the graph"):
        bsp.bfs(g, 9999)
    with pytest.raises(ParameterError, match="^source .* are integers; got True"):
        bsp.sssp(g, True)
    with pytest.raises(ParameterError, match="^sources .*node id 9999 is not in the graph"):
        bsp.betweenness(g, sources=[9999])
    with pytest.raises(ParameterError, match="^sources .*node id 9999 is not in the graph"):
        bsp.personalized_pagerank(g, [int(g.node_ids()[0]), 9999])


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("algo", ["bfs", "sssp", "wcc"])
def test_fused_supersteps_match_the_engine_loop(graphs, key, algo):
    """Relaxation programs run inside numba calls: same values, supersteps, frontiers and
    push/pull choices as the superstep-by-superstep engine."""
    tg = graphs[key]
    call = {"bfs": lambda **kw: bsp.bfs(tg.graph, 0, schedule="sync", **kw),
            "sssp": lambda **kw: bsp.sssp(tg.graph, 2, **kw),
            "wcc": lambda **kw: bsp.wcc(tg.graph, schedule="sync", **kw)}[algo]
    for divisor in (20, 1e-9, 1e9):  # Ligra's rule, always push, always pull
        fused = call(dense_divisor=divisor)
        loop = call(dense_divisor=divisor, fuse=False)
        np.testing.assert_array_equal(fused.values, loop.values)
        assert all(s.fused for s in fused.stats.supersteps)
        assert not any(s.fused for s in loop.stats.supersteps)
        assert fused.stats.converged == loop.stats.converged
        key_of = lambda s: (s.superstep, s.active, s.direction)  # noqa: E731
        assert [key_of(s) for s in fused.stats.supersteps] == \
            [key_of(s) for s in loop.stats.supersteps]
        pushes = [(s.edges_scanned, s.messages_sent, s.messages_combined)
                  for s in fused.stats.supersteps if s.direction == "push"]
        assert pushes == [(s.edges_scanned, s.edges_scanned, s.messages_combined)
                          for s in loop.stats.supersteps if s.direction == "push"]


@pytest.mark.parametrize("schedule", ["sync", "auto"])
def test_fused_run_stops_at_max_iters(graphs, schedule):
    tg = graphs["chain"]
    with pytest.warns(ConvergenceWarning, match="within 7 supersteps"):
        res = bsp.bfs(tg.graph, 0, max_iters=7, schedule=schedule)
    assert not res.stats.converged
    assert res.stats.num_supersteps == (7 if schedule == "sync" else 1)  # auto: one phase
    assert np.isfinite(res.values).sum() == 8  # levels 0..7 reached


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_async_schedule_reaches_the_same_fixed_point(graphs, key):
    tg = graphs[key]
    for call in (lambda **kw: bsp.bfs(tg.graph, 0, **kw),
                 lambda **kw: bsp.sssp(tg.graph, 2, **kw),
                 lambda **kw: bsp.wcc(tg.graph, **kw)):
        sync, asyn = call(schedule="sync"), call(schedule="async")
        np.testing.assert_array_equal(asyn.values, sync.values)
        (ss,) = asyn.stats.supersteps
        assert ss.direction == "async" and asyn.stats.converged
        assert asyn.stats.method == "async" and sync.stats.method == "supersteps"
        assert ss.edges_scanned >= ss.messages_combined > 0


def test_async_schedule_refuses_other_programs_and_modes(graphs):
    g = graphs["directed-p1"].graph
    with pytest.raises(GraphsysError, match="async schedule runs min-relaxation"):
        bsp.run(g, PageRank(), schedule="async")
    with pytest.raises(GraphsysError, match="async schedule runs min-relaxation"):
        bsp.bfs(g, 0, schedule="async", mode="out-of-core")
    with pytest.raises(GraphsysError, match="unknown schedule"):
        bsp.bfs(g, 0, schedule="eventually")
