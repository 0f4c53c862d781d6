"""The one connected-components kernel (graphsys.kernels.components) against scipy, and the
measures' components (which run it) numbered as before: by smallest node id."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from graphsys.kernels import components as kc


def _random(n, m, seed, directed):
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, n, m), rng.integers(0, n, m)
    if not directed:
        s, d = np.concatenate([s, d]), np.concatenate([d, s])
    a = sp.csr_matrix((np.ones(len(s)), (s, d)), shape=(n, n))
    return a


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("n,m", [(1, 0), (50, 20), (300, 250), (400, 3000)])
def test_numbered_components_match_scipy(directed, n, m):
    for seed in range(3):
        a = _random(n, m, seed, directed)
        t = a.T.tocsr()
        comp = kc.roots(a.indptr.astype(np.int64), a.indices.astype(np.int32),
                        t.indptr.astype(np.int64), t.indices.astype(np.int32), directed)
        label, sizes = kc.numbered(comp)
        count, ref = connected_components(a, directed=True, connection="weak")
        # scipy numbers by the smallest id too: the labels themselves agree
        assert len(sizes) == count and np.array_equal(label, ref)
        assert np.array_equal(sizes, np.bincount(ref))
        assert np.array_equal(comp, np.array([np.flatnonzero(ref == ref[v])[0]
                                              for v in range(n)]))


def test_numbered_of_no_vertex():
    label, sizes = kc.numbered(np.zeros(0, np.int64))
    assert len(label) == 0 and len(sizes) == 0


def test_measures_components_and_the_diameter_numbering(tmp_path):
    import graphsys
    from graphsys.measures.distance import _hub_first, components
    from graphsys.measures.view import undirected_view

    rng = np.random.default_rng(1)
    s, d = rng.integers(0, 200, 150), rng.integers(0, 200, 150)
    g = graphsys.from_numpy(s, d, tmp_path / "g")
    view = undirected_view(g)
    members, starts, sizes = components(view)
    n = view.num_nodes
    a = sp.csr_matrix((np.ones(len(view.oidx)), view.oidx, view.optr), shape=(n, n))
    count, ref = connected_components(a, directed=True, connection="weak")
    assert len(sizes) == count and np.array_equal(sizes, np.bincount(ref))
    for c in range(count):
        assert np.array_equal(np.sort(members[starts[c]:starts[c + 1]]),
                              np.flatnonzero(ref == c))
    h = count // 2
    label, sz = _hub_first(view, ref == h)
    # the searched component first, the others after it by smallest id, found from their
    # own rows
    order = [h] + [c for c in range(count) if c != h]
    assert np.array_equal(sz, np.bincount(ref)[order])
    assert np.array_equal(label, np.argsort(order)[ref])
