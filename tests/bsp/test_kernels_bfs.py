"""The direction-optimizing BFS kernel against scipy.csgraph on random graphs (hypothesis),
both directions forced, and the ``schedule="auto"`` front-end."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

from graphsys import bsp
from graphsys.bsp.kernels_bfs import bfs_levels, bfs_solve, phase_totals

from .conftest import GRAPH_KEYS, random_digraphs, to_global


def _csr(n, src, dst):
    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    a.sum_duplicates()
    return a


def _levels(a, source, max_steps=10**9, threads=2):
    n = a.shape[0]
    t = a.T.tocsr()
    level, *out = bfs_levels(a.indptr.astype(np.int64), a.indices.astype(np.int32),
                             t.indptr.astype(np.int64), t.indices.astype(np.int32), source,
                             max_steps, threads)
    assert level.shape == (n,) and level.dtype == np.int32
    return level, out


@st.composite
def graphs_and_source(draw):
    a = draw(random_digraphs(80, 400))
    return a, draw(st.integers(0, a.shape[0] - 1))


@settings(max_examples=150, deadline=None)
@given(graphs_and_source(), st.sampled_from([1, 2]))
def test_levels_match_scipy(case, threads):
    a, source = case
    n = a.shape[0]
    level, (steps, act, scanned, pulled, left) = _levels(a, source, threads=threads)
    ref = csgraph.shortest_path(a, unweighted=True, indices=source)
    np.testing.assert_array_equal(np.where(level >= 0, level, np.inf), ref)
    assert steps == len(act) == len(scanned) == len(pulled)
    assert steps == (int(level.max()) + 1 if n else 0)  # the last step finds nothing
    assert len(left) == 0


def test_dense_middle_goes_bottom_up_and_back():
    rng = np.random.default_rng(3)
    n = 5000  # a dense random graph: the second level covers most of it
    src, dst = rng.integers(0, n, 60_000), rng.integers(0, n, 60_000)
    a = _csr(n, src, dst)
    level, (_, _, scanned, pulled, _) = _levels(a, 0)
    np.testing.assert_array_equal(np.where(level >= 0, level, np.inf),
                                  csgraph.shortest_path(a, unweighted=True, indices=0))
    assert pulled[0] == 0 and pulled.any()  # starts top-down, then bottom-up
    assert scanned[pulled == 1].sum() < a.nnz  # bottom-up stops at the first parent


def test_long_search_tail_stays_top_down():
    n = 3000  # an undirected path from 0: the unexplored edges run out at the far end
    src = np.arange(n - 1)
    a = _csr(n, np.r_[src, src + 1], np.r_[src + 1, src])
    level, (steps, act, scanned, pulled, _) = _levels(a, 0)
    np.testing.assert_array_equal(level, np.arange(n))
    # Beamer's edge test alone passes on the last ~15 levels (2 out-edges > left / ALPHA);
    # a frontier of 1 vertex stays top-down while its out-edges are below N / BETA
    assert not pulled.any() and scanned.sum() == a.nnz


@pytest.mark.parametrize("max_steps", [1, 3, 7])
def test_max_steps_cuts_and_returns_the_last_level(max_steps):
    n = 30
    a = _csr(n, np.arange(n - 1), np.arange(1, n))  # a chain 0 -> 1 -> ... -> 29
    level, (steps, *_, left) = _levels(a, 0, max_steps)
    assert steps == max_steps and level.max() == max_steps
    np.testing.assert_array_equal(left, [max_steps])


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


def test_parallel_top_down_level_keeps_the_queue():
    """A level whose frontier has at least TOP_DOWN_PARALLEL_EDGES out-edges but too few to
    go bottom-up (a large unreached component keeps the unexplored edges high) runs the
    parallel top-down step; its int64 next frontier joins the int32 queue."""
    from graphsys.bsp.kernels_bfs import ALPHA, TOP_DOWN_PARALLEL_EDGES

    fan = TOP_DOWN_PARALLEL_EDGES // 2 + 100  # level 1; each has two children at level 2
    src = [np.zeros(fan, np.int64), np.repeat(np.arange(1, fan + 1), 2)]
    dst = [np.arange(1, fan + 1), np.arange(fan + 1, 3 * fan + 1)]
    base = 3 * fan + 1  # an unreachable ring holding ALPHA times the frontier's edges
    ring = int(ALPHA * 2 * fan * 1.2)
    src.append(base + np.arange(ring))
    dst.append(base + (np.arange(ring) + 1) % ring)
    a = _csr(base + ring, np.concatenate(src), np.concatenate(dst))
    level, (_, act, scanned, pulled, _) = _levels(a, 0)
    assert not pulled.any() and scanned[1] == 2 * fan >= TOP_DOWN_PARALLEL_EDGES
    np.testing.assert_array_equal(np.where(level >= 0, level, np.inf),
                                  csgraph.shortest_path(a, unweighted=True, indices=0))


@pytest.mark.parametrize("n", [1_000, 300_000])  # below and above PARALLEL_MIN_ITEMS
def test_solve_writes_float_levels_and_phases(n):
    """bfs_solve's float levels (inf = unreached, both conversion loops) and phase rows are
    those of bfs_levels; the levels' buffer is the caller's, overwritten everywhere."""
    rng = np.random.default_rng(n)
    a = _csr(n, rng.integers(0, n, 2 * n), rng.integers(0, n, 2 * n))
    t = a.T.tocsr()
    args = (a.indptr.astype(np.int64), a.indices.astype(np.int32), t.indptr.astype(np.int64),
            t.indices.astype(np.int32), 0)
    out = np.full(n, -7.0)
    rows, pulled, num_left = bfs_solve(*args, out, 10**9, 2)
    np.testing.assert_array_equal(out, csgraph.shortest_path(a, unweighted=True, indices=0))
    assert np.isinf(out).any() and num_left == 0
    level, _, act, scanned, pulled_ref, left = bfs_levels(*args, 10**9, 2)
    np.testing.assert_array_equal(rows, phase_totals(act, scanned, pulled_ref, len(left)))
    np.testing.assert_array_equal(pulled, pulled_ref)
    rows, _, num_left = bfs_solve(*args, out, 2, 2)  # cut short: the third level is left
    assert num_left == (level == 2).sum() > 0
    assert rows[:, 4].sum() == ((level >= 1) & (level <= 2)).sum()  # levels 1 and 2 reached
