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
def square_counts(optr, oidx, iptr, iidx, directed, nodes, squares, potential):
    """For each node ``v = nodes[k]``, NetworkX's square clustering terms over its
    neighbours ``N(x)`` (self-loops skipped): of an undirected adjacency (``optr, oidx``,
    and again as ``iptr, iidx``) every neighbour; of a directed graph (``directed``) the
    successors, ``optr, oidx`` the out-lists and ``iptr, iidx`` the in-lists.
    ``c(x) = |N(v) & N(x)|`` is counted from the in-lists of ``v``'s neighbours (``x``
    precedes ``u``); ``squares[k]`` is half the sum of ``c(x) (c(x) - 1)`` over ``v``'s
    neighbours and the nodes two steps out (neither those nor ``v``), and ``potential[k]``
    is ``sum_u d_u (d_v - 1) - d_v (d_v - 1) - T - squares``, ``d`` the (out-)degrees and
    ``T`` the sum of ``c(u)`` over ``v``'s neighbours (the triangles through ``v``, twice
    when undirected). Undirected, every node reached from a neighbour other than ``v`` is
    one of these, so the sum runs over the nodes reached."""
    n = optr.shape[0] - 1
    deg = np.zeros(n, np.int64)
    for v in range(n):
        for e in range(optr[v], optr[v + 1]):
            if oidx[e] != v:
                deg[v] += 1
    common = np.zeros(n, np.int64)
    mark = np.zeros(n, np.uint8)  # 1: a neighbour of v; 2: two steps out, neither
    touched = np.empty(n, np.int64)
    hops = np.empty(n if directed else 0, np.int64)
    for k in range(nodes.shape[0]):
        v = nodes[k]
        dv = deg[v]
        if dv < 2:
            continue
        for e in range(optr[v], optr[v + 1]):
            mark[oidx[e]] = 1
        mark[v] = 0
        count = 0
        far = 0
        uw = 0
        for e in range(optr[v], optr[v + 1]):
            u = oidx[e]
            if u == v:
                continue
            uw += deg[u] * (dv - 1)
            for f in range(iptr[u], iptr[u + 1]):
                x = iidx[f]
                if x == u or x == v:
                    continue
                if common[x] == 0:
                    touched[count] = x
                    count += 1
                common[x] += 1
            for f in range(optr[u], optr[u + 1] if directed else optr[u]):
                x = oidx[f]
                if x != u and x != v and mark[x] == 0:
                    mark[x] = 2
                    hops[far] = x
                    far += 1
        tri = 0
        sq = 0
        for e in range(optr[v], optr[v + 1]):
            u = oidx[e]
            if u != v and mark[u] == 1:
                c = common[u]
                tri += c
                if directed:
                    sq += c * (c - 1)
        for j in range(far):
            c = common[hops[j]]
            sq += c * (c - 1)
            mark[hops[j]] = 0
        for j in range(count):
            c = common[touched[j]]
            if not directed:
                sq += c * (c - 1)
            common[touched[j]] = 0
        for e in range(optr[v], optr[v + 1]):
            mark[oidx[e]] = 0
        sq //= 2
        squares[k] = sq
        potential[k] = uw - dv * (dv - 1) - tri - sq
