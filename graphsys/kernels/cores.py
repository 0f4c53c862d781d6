"""Core numbers, written once for every engine: peeling level by level (:func:`core_levels`,
the BSP k-core's in-memory method) from the degrees :func:`peel_degrees` counts. The
removal order it leaves in its queue is a degeneracy ordering (the mining engine's clique
orientation).

An adjacency is (``indptr`` int64 (N+1,), ``indices`` int32/int64 (E,)); a directed graph
passes both its CSR (out-neighbours) and CSC (in-neighbours) with ``two_ways`` True, an
undirected one (both directions stored) its CSR twice with ``two_ways`` False.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.prefetch import prefetch

#: How many queued vertices ahead the k-core peel prefetches a list (:func:`core_levels`)
PEEL_AHEAD = 8


@numba.njit(cache=True, nogil=True)
def peel_degrees(out_ptr, out_idx, in_ptr, two_ways, loops, count_loops, deg):
    """The degrees k-core peeling starts from, in one pass: ``deg[v]`` (int32 or
    int64 (N,), written) = the out-entries of ``v`` (plus its in-entries when
    ``two_ways``) less its self-loops, once per list they are in. The self-loops are
    counted here from the CSR when ``count_loops`` (``loops`` then unread), else read from
    ``loops`` int64 (N,) (each vertex's stored entries ``v -> v``)."""
    for v in range(deg.shape[0]):
        lo, hi = out_ptr[v], out_ptr[v + 1]
        if count_loops:
            c = 0
            for e in range(lo, hi):
                c += out_idx[e] == v
        else:
            c = loops[v]
        d = hi - lo - c
        if two_ways:
            d += in_ptr[v + 1] - in_ptr[v] - c
        deg[v] = d


@numba.njit(inline="always")
def _lower(ptr, idx, v, k, deg, queue, tail):
    """Lower the degree of each neighbour of ``v`` in the list ``ptr``/``idx``; queue
    those it takes from ``k + 1`` to ``k``. Returns the new queue tail."""
    for e in range(ptr[v], ptr[v + 1]):
        u = idx[e]
        d = deg[u] - 1
        deg[u] = d
        if d == k:
            queue[tail] = u
            tail += 1
    return tail


@numba.njit(cache=True, nogil=True)
def core_levels(out_ptr, out_idx, in_ptr, in_idx, two_ways, deg, core, left, queue):
    """Core numbers by peeling level by level (the order of Kabir and Madduri's PKC, run
    on one thread): for k = 0, 1, ..., remove every vertex of degree at most k, and those
    whose degree falls to k as their neighbours go, with core number k. A removed vertex
    is never queued again without a mark of its own: degrees only fall, and a vertex is
    queued when a neighbour's removal takes it from k + 1 to k, or by the scan that starts
    its level, where its degree is k, so it ends the level below k. Per neighbour entry
    one read-modify-write of ``deg``; the vertices left (``left``, in id order) are
    compacted after each level, which writes the core numbers of those it drops (degree
    at most k: the level's removals, in id order rather than at random), queues the next
    level's (degree k + 1) and finds the smallest degree where none has it; the scans
    branch only where a vertex is dropped. O(N + E): a vertex is scanned once per level up
    to its core number, which is at most its degree.

    ``deg`` int32/int64 (N,) consumed: the starting degrees (self-loops left out; entries
    ``v -> v`` lower only ``v``'s own degree, after its removal); ``core`` float64 (N,)
    written; ``left`` (N,) int32/int64 scratch; ``queue`` (N,) int32/int64, written: every
    vertex queued once, so that it ends as the vertices in the order they were removed, a
    degeneracy ordering (each vertex has at most its core number of neighbours after it),
    at no cost beyond the queue. Returns the entries read."""
    n = deg.shape[0]
    k = deg[0] if n else 0
    for v in range(n):
        left[v] = v
        k = min(k, deg[v])
    tail = 0
    for v in range(n):
        queue[tail] = v
        tail += deg[v] == k
    nleft = n
    top = np.iinfo(deg.dtype).max
    head = 0  # the queue is never rewound: a level's queue follows the one before it
    while nleft > 0:
        while head < tail:
            # the lists of the vertices queued PEEL_AHEAD places on, and their ptr entries
            # twice as far: a queue of cascading removals visits the lists in no order the
            # hardware prefetcher can follow (written out: as an inlined helper it runs
            # slower)
            if head + 2 * PEEL_AHEAD < tail:
                w = queue[head + 2 * PEEL_AHEAD]
                prefetch(out_ptr, w)
                if two_ways:
                    prefetch(in_ptr, w)
            if head + PEEL_AHEAD < tail:
                w = queue[head + PEEL_AHEAD]
                prefetch(out_idx, out_ptr[w])
                if two_ways:
                    prefetch(in_idx, in_ptr[w])
            v = queue[head]
            head += 1
            tail = _lower(out_ptr, out_idx, v, k, deg, queue, tail)
            if two_ways:
                tail = _lower(in_ptr, in_idx, v, k, deg, queue, tail)
        kept = 0  # every vertex left has degree > k now
        low = top
        for i in range(nleft):
            v = left[i]
            d = deg[v]
            live = d > k
            if not live:
                core[v] = k
            left[kept] = v
            kept += live
            low = min(low, d if live else top)
            if tail < n:  # (the queued and the removed may fill it: the rest are dropped)
                queue[tail] = v
            tail += d == k + 1
        nleft = kept
        if nleft > 0 and low > k + 1:  # no vertex of degree k + 1: the next level is
            k = low  # the smallest
            for i in range(nleft):
                v = left[i]
                queue[tail] = v
                tail += deg[v] == k
        else:
            k += 1
    return out_ptr[n] + (in_ptr[n] if two_ways else 0)  # every list is read once
