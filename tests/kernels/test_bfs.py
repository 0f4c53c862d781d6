"""The one breadth-first search (graphsys.kernels.bfs) against scipy.csgraph on random graphs
(hypothesis): along edge direction and over the undirected view (``both``), on 1 and 2
threads, both directions forced; a search's queue level by level and in the same order on
any number of threads; the caller's buffers reused by many searches."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

from graphsys.kernels import bfs as kb
from tests.bsp.conftest import random_digraphs


def _csr(n, src, dst):
    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    a.sum_duplicates()
    return a


def _lists(a):
    t = a.T.tocsr()
    return (a.indptr.astype(np.int64), a.indices.astype(np.int32), t.indptr.astype(np.int64),
            t.indices.astype(np.int32))


def _levels(a, source, max_steps=kb.NO_LIMIT, threads=2, both=False):
    level, queue, last, *steps = kb.levels(*_lists(a), both, source, max_steps, threads)
    assert level.shape == (a.shape[0],) and level.dtype == np.int32
    assert np.all(np.diff(level[queue]) >= 0) and len(set(queue.tolist())) == len(queue)
    return level, queue, last, steps


def _reference(a, source, both=False):
    ref = csgraph.shortest_path(a, unweighted=True, indices=source, directed=not both)
    return np.where(np.isfinite(ref), ref, -1)


@st.composite
def graphs_and_source(draw):
    a = draw(random_digraphs(80, 400))
    return a, draw(st.integers(0, a.shape[0] - 1))


@settings(max_examples=150, deadline=None)
@given(graphs_and_source(), st.sampled_from([1, 2]), st.booleans())
def test_levels_match_scipy(case, threads, both):
    a, source = case
    level, queue, last, (act, scanned, pulled) = _levels(a, source, threads=threads, both=both)
    np.testing.assert_array_equal(level, _reference(a, source, both))
    assert len(act) == len(scanned) == len(pulled) == int(level.max()) + 1  # the last finds none
    assert last == len(queue) == (level >= 0).sum()


def test_dense_middle_goes_bottom_up_and_back():
    rng = np.random.default_rng(3)
    n = 5000  # a dense random graph: the second level covers most of it
    a = _csr(n, rng.integers(0, n, 60_000), rng.integers(0, n, 60_000))
    for both in (False, True):
        level, _, _, (_, scanned, pulled) = _levels(a, 0, both=both)
        np.testing.assert_array_equal(level, _reference(a, 0, both))
        assert pulled[0] == 0 and pulled.any()  # starts top-down, then bottom-up
        assert scanned[pulled == 1].sum() < a.nnz  # bottom-up stops at the first parent


def test_unlisted_bottom_up_levels_keep_levels_count_and_last_level():
    """``listed=False`` (the BSP BFS): the same levels, count, steps and last level on any
    cut, the vertices of bottom-up levels followed by another left unlisted."""
    rng = np.random.default_rng(4)
    n = 20_000  # dense: two bottom-up steps in a row
    a = _csr(n, rng.integers(0, n, 400_000), rng.integers(0, n, 400_000))
    full = kb.levels(*_lists(a), False, 0, kb.NO_LIMIT, 2)
    assert full[5].sum() >= 2 and (full[5][1:] & full[5][:-1]).any()
    for max_steps in (*range(1, len(full[3]) + 1), kb.NO_LIMIT):
        for threads in (1, 2):
            want = kb.levels(*_lists(a), False, 0, max_steps, threads)
            got = kb.levels(*_lists(a), False, 0, max_steps, threads, listed=False)
            np.testing.assert_array_equal(got[0], want[0])
            assert len(got[1]) == len(want[1]) and got[2] == want[2]
            np.testing.assert_array_equal(got[1][got[2]:], want[1][want[2]:])
            for x, y in zip(got[3:], want[3:]):
                np.testing.assert_array_equal(x, y)


def test_no_in_lists_no_bottom_up():
    """Empty in-lists (no CSC at hand): every step top-down, the same levels."""
    rng = np.random.default_rng(3)
    n = 5000
    a = _csr(n, rng.integers(0, n, 60_000), rng.integers(0, n, 60_000))
    out_ptr, out_idx, _, _ = _lists(a)
    level, queue, _, _, _, pulled = kb.levels(out_ptr, out_idx, out_ptr[:0], out_idx[:0],
                                              False, 0, kb.NO_LIMIT, 2)
    np.testing.assert_array_equal(level, _reference(a, 0))
    assert not pulled.any() and len(queue) == (level >= 0).sum()


def test_long_search_tail_stays_top_down():
    n = 3000  # an undirected path from 0: the unexplored edges run out at the far end
    src = np.arange(n - 1)
    a = _csr(n, np.r_[src, src + 1], np.r_[src + 1, src])
    level, _, _, (_, scanned, pulled) = _levels(a, 0)
    np.testing.assert_array_equal(level, np.arange(n))
    # Beamer's edge test alone passes on the last ~15 levels (2 out-edges > left / ALPHA);
    # a frontier of 1 vertex stays top-down while its out-edges are below N / BETA
    assert not pulled.any() and scanned.sum() == a.nnz


@pytest.mark.parametrize("max_steps", [1, 3, 7])
def test_max_steps_cuts_and_returns_the_last_level(max_steps):
    n = 30
    a = _csr(n, np.arange(n - 1), np.arange(1, n))  # a chain 0 -> 1 -> ... -> 29
    level, queue, last, (act, _, _) = _levels(a, 0, max_steps)
    assert len(act) == max_steps and level.max() == max_steps
    np.testing.assert_array_equal(queue[last:], [max_steps])


def test_parallel_top_down_level_in_id_order_on_any_thread_count():
    """A level whose frontier has at least TOP_DOWN_PARALLEL_EDGES entries but too few to go
    bottom-up (a large unreached ring keeps the unexplored edges high) is spread over the
    threads, or run on one; either way its vertices are listed once, in id order."""
    fan = kb.TOP_DOWN_PARALLEL_EDGES // 2 + 100  # level 1; each has two children at level 2
    rng = np.random.default_rng(0)
    kids = rng.permutation(np.arange(fan + 1, 3 * fan + 1))  # found out of id order
    src = [np.zeros(fan, np.int64), np.repeat(np.arange(1, fan + 1), 2), np.arange(1, fan)]
    dst = [np.arange(1, fan + 1), kids, kids[2:2 * fan:2]]  # (repeat targets: races)
    base = 3 * fan + 1  # an unreachable ring holding ALPHA times the frontier's edges
    ring = int(kb.ALPHA * 3 * fan * 1.2)
    src.append(base + np.arange(ring))
    dst.append(base + (np.arange(ring) + 1) % ring)
    a = _csr(base + ring, np.concatenate(src), np.concatenate(dst))
    queues = []
    for threads in (1, 2):
        level, queue, _, (_, scanned, pulled) = _levels(a, 0, threads=threads)
        assert not pulled.any() and scanned[1] >= kb.TOP_DOWN_PARALLEL_EDGES
        np.testing.assert_array_equal(level, _reference(a, 0))
        level2 = queue[level[queue] == 2]
        assert np.all(np.diff(level2) > 0)
        queues.append(queue)
    np.testing.assert_array_equal(*queues)


def test_caller_buffers_serve_many_searches():
    """Searches over one set of buffers, each reset through its queue only: the levels of
    every source, as scipy's, along edge direction and over the undirected view."""
    rng = np.random.default_rng(7)
    n = 2000
    a = _csr(n, rng.integers(0, n, 5000), rng.integers(0, n, 5000))
    lists = _lists(a)
    for both in (False, True):
        deg = np.diff(lists[0]) + (np.diff(lists[2]) if both else 0)
        level, queue, front, nxt = kb.buffers(n, np.int32)
        for source in (0, 5, 77, 1999):
            count, last, *_ = kb.search(*lists, both, int(deg.max()), level, queue, front,
                                        nxt, source, kb.NO_LIMIT, numba.get_num_threads(), True)
            assert last == count
            np.testing.assert_array_equal(level, _reference(a, source, both))
            level[queue[:count]] = -1
        assert (level == -1).all()


def test_writable_and_read_only_lists_share_one_signature():
    """levels hands search read-only views of the lists, so a built (writable) adjacency
    and a mapped (read-only) one of the same dtypes reach one compiled signature."""
    a = _csr(6, np.array([0, 1, 2, 3, 4]), np.array([1, 2, 3, 4, 5]))
    lists = _lists(a)
    kb.levels(*lists, False, 0, kb.NO_LIMIT, 1)
    before = len(kb.search.signatures)
    frozen = []
    for x in lists:
        x = x.copy()
        x.flags.writeable = False
        frozen.append(x)
    level = kb.levels(*frozen, False, 0, kb.NO_LIMIT, 1)[0]
    assert len(kb.search.signatures) == before
    np.testing.assert_array_equal(level, [0, 1, 2, 3, 4, 5])
