"""Numba kernels of k-clique counting and listing: kClist over the out-neighbourhood of each
root, as bitsets (:mod:`graphsys.mining.clique`)."""

from __future__ import annotations

import numba
import numpy as np

from graphsys.kernels.atomic import atomic_add


@numba.njit(cache=True, nogil=True)
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@numba.njit(cache=True, nogil=True)
def _local_graph(indptr, indices, u, adj, words):
    """``adj[i]``: the bitset of the local ids ``j`` (positions in row ``u``) whose vertex is in
    the row of the ``i``-th vertex of row ``u`` (``j > i`` always: rows are oriented).
    Returns the row's length ``d``."""
    lo, hi = indptr[u], indptr[u + 1]
    d = hi - lo
    for i in range(d):
        for w in range(words):
            adj[i, w] = 0
        x = indices[lo + i]
        p = lo + i + 1
        q, qe = indptr[x], indptr[x + 1]
        while p < hi and q < qe:
            a = indices[p]
            b = indices[q]
            if a < b:
                p += 1
            elif b < a:
                q += 1
            else:
                j = p - lo
                adj[i, j >> 6] |= np.uint64(1) << np.uint64(j & 63)
                p += 1
                q += 1
    return d


@numba.njit(cache=True, nogil=True)
def _first_bit(cand, level, words, start):
    """The lowest set bit ``>= start`` of ``cand[level]``, or -1."""
    w = start >> 6
    if w >= words:
        return -1
    x = cand[level, w] & (~np.uint64(0) << np.uint64(start & 63))
    while True:
        if x:
            b = 0
            while not (x >> np.uint64(b)) & np.uint64(1):
                b += 1
            return w * 64 + b
        w += 1
        if w >= words:
            return -1
        x = cand[level, w]


@numba.njit(cache=True, nogil=True)
def _cliques_of_root(indptr, indices, u, k, adj, cand, stack, node_counts, out, out_count,
                     limit):
    """The ``k``-cliques whose lowest vertex is ``u``: ``k - 1`` cliques among row ``u``'s
    local graph, by depth-first extension of a candidate bitset per level. Per vertex
    counts and listing as :func:`cliques`. Returns the count."""
    d = _local_graph(indptr, indices, u, adj, adj.shape[1])
    if d < k - 1:
        return 0
    lo = indptr[u]
    words = (d + 63) >> 6
    per_vertex = node_counts.shape[0] > 0
    listing = out.shape[0] > 0
    if k == 2:
        if per_vertex:
            atomic_add(node_counts, u, d)
            for i in range(d):
                atomic_add(node_counts, indices[lo + i], 1)
        if listing:
            for i in range(d):
                slot = atomic_add(out_count, 0, 1)
                if slot >= limit:
                    return d
                out[slot, 0] = u
                out[slot, 1] = indices[lo + i]
        return d
    for w in range(words):
        cand[0, w] = 0
    for i in range(d):
        cand[0, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    total = 0
    # level l (0-based) picks the (l + 2)-th clique vertex from cand[l]; the last level
    # (k - 3) counts the completions: the candidates after it adjacent to it
    last = k - 3
    level = 0
    stack[0] = -1
    while level >= 0:
        i = _first_bit(cand, level, words, stack[level] + 1)
        if i < 0:
            level -= 1
            continue
        stack[level] = i
        if level == last:
            c = 0
            for w in range(i >> 6, words):
                c += _popcount(adj[i, w] & cand[level, w])
            if c == 0:
                continue
            total += c
            if per_vertex:
                atomic_add(node_counts, u, c)
                for s in range(level + 1):
                    atomic_add(node_counts, indices[lo + stack[s]], c)
            if per_vertex or listing:
                for w in range(i >> 6, words):
                    x = adj[i, w] & cand[level, w]
                    b = 0
                    while x:
                        if x & np.uint64(1):
                            j = w * 64 + b
                            if per_vertex:
                                atomic_add(node_counts, indices[lo + j], 1)
                            if listing:
                                slot = atomic_add(out_count, 0, 1)
                                if slot >= limit:
                                    return total
                                out[slot, 0] = u
                                for s in range(level + 1):
                                    out[slot, 1 + s] = indices[lo + stack[s]]
                                out[slot, k - 1] = indices[lo + j]
                        x >>= np.uint64(1)
                        b += 1
            continue
        nxt = level + 1
        any_bit = False
        for w in range(words):
            x = adj[i, w] & cand[level, w]
            cand[nxt, w] = x
            if x:
                any_bit = True
        if any_bit:
            level = nxt
            stack[level] = -1
    return total


@numba.njit(cache=True, nogil=True, parallel=True)
def cliques(indptr, indices, tasks, roots, k, max_row, node_counts, per_root):
    """``k``-cliques (``k >= 2``) of the oriented rows, each found from its lowest vertex:
    kClist [Danisch et al., WWW 2018] over the out-neighbourhood of each root as bitsets
    (``max_row``: the longest row). Task bounds index ``roots`` (int64, or empty: the
    roots are the task bounds' ids themselves). ``node_counts`` (int64 (N,) or empty): each
    clique adds 1 to its ``k`` vertices; ``per_root`` (int64 (N,) or empty): the count of
    each root, by root id. Returns the total."""
    words = max(1, (max_row + 63) >> 6)
    total = 0
    no_out = np.empty((0, k), np.int64)  # np.zeros here would be a parallel loop of its own
    for t in numba.prange(tasks.shape[0] - 1):
        adj = np.empty((max(max_row, 1), words), np.uint64)
        cand = np.empty((max(k - 2, 1), words), np.uint64)
        stack = np.empty(max(k - 2, 1), np.int64)
        one = np.zeros(1, np.int64)
        found = 0
        for i in range(tasks[t], tasks[t + 1]):
            u = roots[i] if roots.shape[0] > 0 else i
            c = _cliques_of_root(indptr, indices, u, k, adj, cand, stack, node_counts,
                                 no_out, one, 0)
            if per_root.shape[0] > 0:
                per_root[u] = c
            found += c
        total += found
    return total


@numba.njit(cache=True, nogil=True)
def list_cliques(indptr, indices, k, max_row, limit, out):
    """The first ``limit`` ``k``-cliques in root order (then depth-first order), written as
    rows of ``out`` (int64 (limit, k), oriented ids, ascending within a row). Returns how
    many were written."""
    words = max(1, (max_row + 63) >> 6)
    adj = np.empty((max(max_row, 1), words), np.uint64)
    cand = np.empty((max(k - 2, 1), words), np.uint64)
    stack = np.empty(max(k - 2, 1), np.int64)
    count = np.zeros(1, np.int64)
    no_counts = np.zeros(0, np.int64)
    for u in range(indptr.shape[0] - 1):
        _cliques_of_root(indptr, indices, u, k, adj, cand, stack, no_counts, out, count, limit)
        if count[0] >= limit:
            return limit
    return count[0]
