"""Numba kernels of the spectral centralities and square clustering: a weighted sparse
matrix-vector product over an adjacency (the pull of PageRank's mat-vec,
:func:`graphsys.bsp.kernels.pull_copy_sum`, with an edge weight) that eigenvector and Katz
centrality iterate, and each node's square counts (Lind et al. 2005, as NetworkX's
``square_clustering`` counts them).

The iterations themselves stay in Python over these kernels (their stopping rules, norms and
exceptions are NetworkX's)."""

from __future__ import annotations

import numba
import numpy as np

#: Row passes over fewer rows than this run on one thread (waking numba's pool costs more).
PARALLEL_MIN_ROWS = 1 << 18


@numba.njit(inline="always")
def _row(indptr, indices, weight, weighted, x, y, r):
    v = np.uint64(r)
    s = 0.0
    for e in range(indptr[v], indptr[v + np.uint64(1)]):
        u = np.uint64(indices[np.uint64(e)])
        s += x[u] * weight[np.uint64(e)] if weighted else x[u]
    y[v] = s


@numba.njit(parallel=True, cache=True, nogil=True)
def pull_product(indptr, indices, weight, x, y):
    """``y[v] = sum(weight[e] * x[indices[e]])`` over row ``v``'s entries
    ``indptr[v]:indptr[v+1]`` (``weight`` float64 per entry, or empty for all ones): over
    the in-adjacency (CSC) the product ``A^T x``. Parallel over rows from
    :data:`PARALLEL_MIN_ROWS` of them."""
    n = indptr.shape[0] - 1
    weighted = weight.shape[0] > 0
    if n < PARALLEL_MIN_ROWS:
        for v in range(n):
            _row(indptr, indices, weight, weighted, x, y, v)
    else:
        for v in numba.prange(n):
            _row(indptr, indices, weight, weighted, x, y, v)


@numba.njit(cache=True, nogil=True)
def square_counts(indptr, indices, nodes, squares, potential):
    """For each node ``v = nodes[k]`` of an undirected adjacency (self-loops skipped):
    ``squares[k]``, the squares ``v-u-y-w`` through ``v`` (pairs of neighbours ``u, w`` with
    a common neighbour ``y != v``), and ``potential[k]``, NetworkX's denominator
    ``sum_u d_u (d_v - 1) - d_v (d_v - 1) - T - squares`` (integers):
    ``d`` simple degrees and ``T`` the triangles through ``v`` counted twice."""
    n = indptr.shape[0] - 1
    deg = np.zeros(n, np.int64)
    for v in range(n):
        for e in range(indptr[v], indptr[v + 1]):
            if indices[e] != v:
                deg[v] += 1
    common = np.zeros(n, np.int64)  # |N(v) & N(y)| for the y reached from v
    mark = np.zeros(n, np.uint8)  # v's neighbours
    touched = np.empty(n, np.int64)
    for k in range(nodes.shape[0]):
        v = nodes[k]
        dv = deg[v]
        if dv < 2:
            continue
        for e in range(indptr[v], indptr[v + 1]):
            mark[indices[e]] = 1
        mark[v] = 0
        count = 0
        uw = 0
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            if u == v:
                continue
            uw += deg[u] * (dv - 1)
            for f in range(indptr[u], indptr[u + 1]):
                y = indices[f]
                if y == u or y == v:
                    continue
                if common[y] == 0:
                    touched[count] = y
                    count += 1
                common[y] += 1
        tri = 0
        sq = 0
        for j in range(count):
            y = touched[j]
            c = common[y]
            sq += c * (c - 1)
            if mark[y]:
                tri += c
            common[y] = 0
        for e in range(indptr[v], indptr[v + 1]):
            mark[indices[e]] = 0
        sq //= 2
        squares[k] = sq
        potential[k] = uw - dv * (dv - 1) - tri - sq
