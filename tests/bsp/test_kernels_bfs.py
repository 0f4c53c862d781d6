"""The BSP BFS's in-memory call (bfs_solve: the one search of graphsys.kernels.bfs, its float
levels and phases) and the ``schedule="auto"`` front-end."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

from graphsys import bsp
from graphsys.bsp.kernels_bfs import bfs_solve, phase_totals
from graphsys.kernels.bfs import levels

from .conftest import GRAPH_KEYS, to_global


def _csr(n, src, dst):
    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    a.sum_duplicates()
    return a


def test_phase_totals_sum_runs_of_one_direction():
    act = np.array([1, 3, 10, 40, 5, 2])
    scanned = np.array([2, 6, 30, 90, 12, 4])
    pulled = np.array([0, 0, 1, 1, 0, 0])
    rows = phase_totals(act, scanned, pulled, 7)
    # (first step, end step, expanded, scanned, reached: the next step's frontier)
    np.testing.assert_array_equal(rows, [[0, 2, 4, 8, 13], [2, 4, 50, 120, 45],
                                         [4, 6, 7, 16, 9]])
    assert phase_totals(act[:0], scanned[:0], pulled[:0], 0).shape == (0, 5)


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_auto_schedule_matches_sync(graphs, key):
    tg = graphs[key]
    for source in (0, 5):
        auto = bsp.bfs(tg.graph, source)
        sync = bsp.bfs(tg.graph, source, schedule="sync")
        np.testing.assert_array_equal(auto.values, sync.values)
        st_ = auto.stats
        assert st_.method == "direction-optimizing-bfs" and st_.converged
        assert sync.stats.method == "supersteps"
        # phases: consecutive supersteps alternate direction; levels add up
        dirs = [s.direction for s in st_.supersteps]
        assert all(x != y for x, y in itertools.pairwise(dirs))
        assert sum(s.messages_combined for s in st_.supersteps) == int(
            np.isfinite(auto.values).sum()) - 1
        s = to_global(tg, source)
        assert auto.values[s] == 0


def test_auto_falls_back_to_supersteps_out_of_core(graphs):
    res = bsp.bfs(graphs["directed-p3"].graph, 0, mode="out-of-core")
    assert res.stats.method == "supersteps"


@pytest.mark.parametrize("n", [1_000, 300_000])  # below and above PARALLEL_MIN_ITEMS
def test_solve_writes_float_levels_and_phases(n):
    """bfs_solve's float levels (inf = unreached, both conversion loops) and phase rows are
    those of the search; the levels' buffer is the caller's, overwritten everywhere."""
    rng = np.random.default_rng(n)
    a = _csr(n, rng.integers(0, n, 2 * n), rng.integers(0, n, 2 * n))
    t = a.T.tocsr()
    args = (a.indptr.astype(np.int64), a.indices.astype(np.int32), t.indptr.astype(np.int64),
            t.indices.astype(np.int32), 0)
    out = np.full(n, -7.0)
    rows, pulled, num_left = bfs_solve(*args, out, 10**9, 2)
    np.testing.assert_array_equal(out, csgraph.shortest_path(a, unweighted=True, indices=0))
    assert np.isinf(out).any() and num_left == 0
    level, queue, last, act, scanned, pulled_ref = levels(*args[:4], False, 0, 10**9, 2)
    np.testing.assert_array_equal(rows, phase_totals(act, scanned, pulled_ref, 0))
    np.testing.assert_array_equal(pulled, pulled_ref)
    rows, _, num_left = bfs_solve(*args, out, 2, 2)  # cut short: the third level is left
    assert num_left == (level == 2).sum() > 0
    assert rows[:, 4].sum() == ((level >= 1) & (level <= 2)).sum()  # levels 1 and 2 reached
