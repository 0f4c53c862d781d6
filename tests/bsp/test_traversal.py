"""BFS and SSSP against scipy.sparse.csgraph."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csgraph

from graphsys import bsp
from graphsys.errors import GraphsysError
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest

from .conftest import GRAPH_KEYS, MODES, to_global


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
def test_bfs_levels(graphs, key, mode, backend):
    tg = graphs[key]
    for source in (0, 5):
        s = to_global(tg, source)
        res = bsp.bfs(tg.graph, source, mode=mode, backend=backend)
        ref = csgraph.shortest_path(tg.count, method="D", unweighted=True, indices=s)
        np.testing.assert_array_equal(res.values, ref)
        assert np.isinf(res.values).any()  # isolated vertices are unreachable
        assert res.stats.converged


def test_bfs_switches_push_and_pull(graphs):
    tg = graphs["undirected-p3"]
    res = bsp.bfs(tg.graph, 0)
    dirs = [s.direction for s in res.stats.supersteps]
    assert dirs[0] == "push" and "pull" in dirs  # one source is sparse, the middle is dense
    # a pull with first_message_wins scans fewer edges than the graph has in total
    pull = [s for s in res.stats.supersteps if s.direction == "pull"]
    assert all(s.edges_scanned < tg.graph.num_edges() for s in pull)
    always_push = bsp.bfs(tg.graph, 0, dense_divisor=1e-9)
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
def test_sssp_distances(graphs, key, mode, backend):
    tg = graphs[key]
    s = to_global(tg, 2)
    res = bsp.sssp(tg.graph, 2, mode=mode, backend=backend)
    # multi-edges collapse to their lightest copy in a shortest path; dedupe=True has none
    ref = csgraph.dijkstra(tg.adj, indices=s)
    np.testing.assert_allclose(res.values, ref, rtol=1e-6)
    assert (np.isinf(res.values) == np.isinf(ref)).all()


def test_sssp_rejects_negative_weights(tmp_path):
    f = tmp_path / "e.tsv"
    f.write_text("1\t2\t0.5\n2\t3\t-1.0\n")
    ingest([EdgeSource([f], weight_col=2)], tmp_path / "g", IngestOptions())
    with pytest.raises(GraphsysError, match="non-negative.*-1.0"):
        bsp.sssp(tmp_path / "g", 1)


def test_unknown_source(graphs):
    with pytest.raises(GraphsysError, match="node id 9999 is not in the graph"):
        bsp.bfs(graphs["directed-p1"].graph, 9999)
