"""Numba kernel of PageRank's fused superstep (in memory, CPU): the all-active copy/sum
pull of ``rank / out_degree`` and the rank update in one pass over the targets, so an
iteration reads every vertex array once and pays one numba call, not an engine superstep.
"""

from __future__ import annotations

import numba
import numpy as np

#: The fused step runs on one thread below this many targets. Lower than the engine's
#: :data:`~graphsys.bsp.kernels.PARALLEL_MIN_ITEMS`: one pass does the pull and the update,
#: so there is more work per wake-up of the pool (luxembourg-osm, 114,599 targets in
#: breadth-first order, quiet machine, alternated in one process: 0.27 ms per iteration on
#: 2 threads against 0.45 ms on one)
FUSED_PARALLEL_MIN_ROWS = 1 << 15


#: Row chunks of one parallel step, whatever the thread count: each chunk sums its L1
#: change and dangling mass in row order, so the sums (and the next iteration's teleport)
#: do not depend on how many threads ran
FUSED_CHUNKS = 16


@numba.njit(inline="always")
def _rows(lo, hi, indptr, indices, send, new_send, rank, inv_deg, p, damping, base, scale):
    """Pull and update rows ``lo:hi``; returns their (L1 change, dangling mass). A road
    graph has ~2 in-edges per row, so the row loop, not the edge loop, is the work: each
    row's end offset is read once and carried as the next row's start, and every array is
    indexed by an unsigned integer (numba adds a negative-index test to each signed access
    whose sign it cannot prove). On luxembourg-osm, one thread, alternated in one process:
    0.58 ms per iteration before, 0.45 ms after (GraphBLAS's bare ``mxv``: 0.45 ms)."""
    delta = 0.0
    dangling = 0.0
    a = indptr[lo]
    for r in range(lo, hi):
        v = np.uint64(r)  # unsigned indices: no negative-index test on any access
        b = indptr[v + np.uint64(1)]
        s = 0.0
        for e in range(a, b):
            s += send[np.uint64(indices[np.uint64(e)])]
        a = b
        new = damping * s + (scale * p[v] if p.shape[0] > 0 else base)
        delta += abs(new - rank[v])
        rank[v] = new
        inv = inv_deg[v]
        new_send[v] = new * inv
        dangling += new if inv == 0.0 else 0.0
    return delta, dangling


@numba.njit(parallel=True, cache=True, nogil=True)
def pagerank_step(indptr, indices, send, new_send, rank, inv_deg, p, damping, base, scale):
    """One PageRank iteration. ``indptr`` int64 (N+1,) / ``indices`` int32 (E,): in-edges of
    every target (CSC); ``send`` float64 (or float32: ``sum_dtype``) (N,): ``rank /
    out_degree`` of every vertex;
    ``new_send`` (N,), of the same dtype, receives the next one;
    ``rank``, ``inv_deg`` (0 on dangling vertices), ``p`` (teleport weights, or empty for
    uniform ``base``) float64 (N,) by vertex. ``rank`` becomes ``damping * pull + base``
    (or ``+ scale * p``) in place. From :data:`FUSED_PARALLEL_MIN_ROWS` targets, the rows
    are split into :data:`FUSED_CHUNKS` runs of equal in-edge counts, run in parallel.
    Returns (L1 change of ``rank``, rank mass on dangling vertices)."""
    n = indptr.shape[0] - 1
    if n < FUSED_PARALLEL_MIN_ROWS:
        return _rows(0, n, indptr, indices, send, new_send, rank, inv_deg, p, damping, base,
                     scale)
    m = indptr[n] - indptr[0]
    bounds = np.empty(FUSED_CHUNKS + 1, np.int64)
    for c in range(FUSED_CHUNKS + 1):
        bounds[c] = np.searchsorted(indptr, indptr[0] + m * c // FUSED_CHUNKS)
    bounds[0], bounds[FUSED_CHUNKS] = 0, n
    deltas = np.zeros(FUSED_CHUNKS)
    masses = np.zeros(FUSED_CHUNKS)
    for c in numba.prange(FUSED_CHUNKS):
        deltas[c], masses[c] = _rows(bounds[c], bounds[c + 1], indptr, indices, send,
                                     new_send, rank, inv_deg, p, damping, base, scale)
    return deltas.sum(), masses.sum()


@numba.njit(cache=True, nogil=True)
def bfs_order(indptr, indices):
    """A locality order of the vertices of an adjacency (``indptr`` int64 (N+1,),
    ``indices`` (E,)): breadth-first, each component from its smallest unvisited id (like
    Cuthill-McKee without the degree sort), so neighbours get nearby numbers on mesh-like
    graphs. Returns int64 (N,): new id -> old id."""
    n = indptr.shape[0] - 1
    order = np.empty(n, np.int64)
    seen = np.zeros(n, np.uint8)
    tail = 0
    for s in range(n):
        if seen[s]:
            continue
        seen[s] = 1
        order[tail] = s
        head = tail
        tail += 1
        while head < tail:
            u = order[head]
            head += 1
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e]
                if not seen[v]:
                    seen[v] = 1
                    order[tail] = v
                    tail += 1
    return order


@numba.njit(parallel=True, cache=True, nogil=True)
def renumber(indptr, indices, order):
    """The adjacency with rows and columns renumbered by ``order`` (int64 (N,), new ->
    old): row ``k`` holds old row ``order[k]``, its entries mapped to new ids. Returns
    (indptr int64 (N+1,), indices of the input dtype (E,))."""
    n = indptr.shape[0] - 1
    new_id = np.empty(n, indices.dtype)
    new_indptr = np.zeros(n + 1, np.int64)
    for k in range(n):
        new_id[order[k]] = k
        new_indptr[k + 1] = new_indptr[k] + indptr[order[k] + 1] - indptr[order[k]]
    new_indices = np.empty(new_indptr[n], indices.dtype)
    for k in numba.prange(n):
        lo = indptr[order[k]]
        out = new_indptr[k]
        for j in range(indptr[order[k] + 1] - lo):
            new_indices[out + j] = new_id[indices[lo + j]]
    return new_indptr, new_indices
