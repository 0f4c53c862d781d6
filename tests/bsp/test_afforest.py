"""Afforest and the one-pass union-find against scipy.csgraph (hypothesis), the method
choice, and WCC's ``schedule="auto"`` front-end."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

from graphsys import bsp
from graphsys.kernels import components as afforest

from .conftest import GRAPH_KEYS, keeps_numba_generator, random_digraphs


def _min_labels(a):
    """Each vertex's smallest vertex id in its weak component (scipy)."""
    n = a.shape[0]
    k, lab = csgraph.connected_components(a, directed=True, connection="weak")
    low = np.full(k, n)
    np.minimum.at(low, lab, np.arange(n))
    return low[lab]


@settings(max_examples=150, deadline=None)
@given(random_digraphs(120, 300), st.integers(0, 3), st.sampled_from([np.int32, np.int64]))
def test_afforest_and_union_find_match_scipy(a, seed, dtype):
    ref = _min_labels(a)
    ip, idx = a.indptr.astype(np.int64), a.indices.astype(np.int32)
    t = a.T.tocsr()
    comp = np.empty(a.shape[0], dtype)
    afforest.afforest(ip, idx, t.indptr.astype(np.int64), t.indices.astype(np.int32), True,
                      seed, comp)
    np.testing.assert_array_equal(comp, ref)
    afforest.union_find(ip, idx, comp, False)
    np.testing.assert_array_equal(comp, ref)
    sym = (a + a.T).tocsr()  # symmetric storage: out-edges alone suffice
    afforest.afforest(sym.indptr.astype(np.int64), sym.indices.astype(np.int32),
                      sym.indptr.astype(np.int64), sym.indices.astype(np.int32), False, seed,
                      comp)
    np.testing.assert_array_equal(comp, ref)
    comp[:] = -1  # and each stored pair linked once
    afforest.union_find(sym.indptr.astype(np.int64), sym.indices.astype(np.int32), comp, True)
    np.testing.assert_array_equal(comp, ref)


def _random_digraph(n: int, m: int):
    rng = np.random.default_rng(0)
    return sp.csr_matrix((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))),
                         shape=(n, n))


def test_afforest_skips_the_big_component():
    n, m = 20_000, 200_000
    a = _random_digraph(n, m)
    t = a.T.tocsr()
    comp = np.empty(n, np.int32)
    read, big = afforest.afforest(a.indptr.astype(np.int64), a.indices.astype(np.int32),
                                  t.indptr.astype(np.int64), t.indices.astype(np.int32),
                                  True, 0, comp)
    np.testing.assert_array_equal(comp, _min_labels(a))
    assert big == 0 and read < a.nnz // 2  # most vertices sit in component 0


def test_choose_by_average_degree():
    assert afforest.choose(1000, 2400, directed=False) == "union-find"  # a road graph
    assert afforest.choose(1000, 17_000, directed=True) == "afforest"  # R-MAT-like
    assert afforest.choose(0, 0, directed=True) == "union-find"


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_wcc_auto_matches_sync(graphs, key):
    g = graphs[key].graph
    auto, sync = bsp.wcc(g), bsp.wcc(g, schedule="sync")
    np.testing.assert_array_equal(auto.values, sync.values)
    assert auto.stats.method in ("afforest", "union-find") and auto.stats.converged
    assert auto.stats.supersteps[0].direction == auto.stats.method


def _afforest(a, directed=True):
    t = a.T.tocsr()
    comp = np.empty(a.shape[0], np.int64)
    read, _ = afforest.afforest(a.indptr.astype(np.int64), a.indices.astype(np.int32),
                                t.indptr.astype(np.int64), t.indices.astype(np.int32),
                                directed, 0, comp)
    np.testing.assert_array_equal(comp, _min_labels(a))
    return read


def test_afforest_samples_the_direction_with_fewer_empty_rows():
    n = 5000  # an out-star: every leaf's out-row is empty, its in-row names the hub
    a = sp.csr_matrix((np.ones(n - 1), (np.zeros(n - 1, int), np.arange(1, n))), shape=(n, n))
    assert _afforest(a) == n - 1  # one round of in-edges links every leaf; nothing more
    assert _afforest(a.T.tocsr()) == n - 1  # an in-star: out-edges sampled first


def test_afforest_stops_sampling_once_one_round_connects_the_graph():
    k = 60  # a complete graph stored both ways: one round links every vertex to vertex 0
    a = sp.csr_matrix(np.ones((k, k)) - np.eye(k))
    assert _afforest(a, directed=False) == k
    rng = np.random.default_rng(1)  # and a graph one round cannot connect still matches
    m = 600
    s, d = rng.integers(0, 2000, m), rng.integers(0, 2000, m)
    _afforest(sp.csr_matrix((np.ones(m), (s, d)), shape=(2000, 2000)))



def test_afforest_leaves_numba_s_generator_alone():
    """Afforest sampled its vertices with np.random.seed(seed) and np.random.randint in the
    kernel: every WCC call reset the calling thread's numba generator to seed 0. The
    samples now come from their own stream."""
    a = _random_digraph(3000, 30_000)
    t, comp = a.T.tocsr(), np.empty(3000, np.int64)
    assert keeps_numba_generator(lambda: afforest.afforest(
        a.indptr.astype(np.int64), a.indices.astype(np.int32), t.indptr.astype(np.int64),
        t.indices.astype(np.int32), True, 0, comp))
    np.testing.assert_array_equal(comp, _min_labels(a))
