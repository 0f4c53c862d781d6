"""The spectral centralities' kernels (graphsys.kernels.centrality): the weighted pull
product against scipy's sparse product, and the square counts against a brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from graphsys.kernels import centrality as kc


@pytest.mark.parametrize("n,m", [(1, 0), (30, 80), (200, 1500)])
def test_pull_product_is_the_transpose_product(n, m):
    rng = np.random.default_rng(n)
    s, d, w = rng.integers(0, n, m), rng.integers(0, n, m), rng.random(m)
    a = sp.csr_matrix((w, (s, d)), shape=(n, n))
    t = a.T.tocsr()
    x = rng.random(n)
    for weight, want in ((t.data, a.T @ x), (np.zeros(0), (a != 0).T.astype(float) @ x)):
        y = np.empty(n)
        kc.pull_product(t.indptr.astype(np.int64), t.indices.astype(np.int64),
                        np.asarray(weight, np.float64), x, y)
        np.testing.assert_allclose(y, want, rtol=1e-12)


def _brute(adj: list[set], v: int) -> tuple[int, int]:
    """NetworkX's count for ``v``: squares through ``v`` and the potential, by pairs."""
    squares = potential = 0
    for u, w in itertools.combinations(sorted(adj[v]), 2):
        q = len((adj[u] & adj[w]) - {v})
        t = int(w in adj[u])
        squares += q
        potential += (len(adj[u]) - (1 + q + t)) + (len(adj[w]) - (1 + q + t)) + q
    return squares, potential


def test_square_counts_match_a_brute_force():
    rng = np.random.default_rng(5)
    n = 40
    s, d = rng.integers(0, n, 150), rng.integers(0, n, 150)
    a = sp.csr_matrix((np.ones(300), (np.r_[s, d], np.r_[d, s])), shape=(n, n))
    a.data[:] = 1
    adj = [set(a.indices[a.indptr[v]:a.indptr[v + 1]].tolist()) - {v} for v in range(n)]
    nodes = np.arange(n, dtype=np.int64)
    squares, potential = np.zeros(n, np.int64), np.zeros(n, np.int64)
    ptr, idx = a.indptr.astype(np.int64), a.indices.astype(np.int64)
    kc.square_counts(ptr, idx, ptr, idx, False, nodes, squares, potential)
    for v in range(n):
        assert (squares[v], potential[v]) == (_brute(adj, v) if len(adj[v]) > 1 else (0, 0))
