"""Numba kernels of the distance measures (:mod:`graphsys.measures.distance`): breadth-first
searches over the undirected view (:mod:`graphsys.measures.kernels_view`), one per call or
many at once (one per thread), components, and Takes and Kosters' bounds on
eccentricities.

``dist`` arrays are int32 (N,) and -1 outside a search; a search leaves its visited nodes in
``queue[:count]`` (BFS order), so the caller resets only those (no O(N) pass per search).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always")
def _visit(v, d, dist, queue, tail):
    if dist[v] < 0:
        dist[v] = d
        queue[tail] = v
        return tail + 1
    return tail


@numba.njit(cache=True, nogil=True)
def bfs(source, optr, oidx, iptr, iidx, sym, dist, queue):
    """Breadth-first search from ``source``: fills ``dist`` for the reached nodes, lists them
    in ``queue[:count]``; returns ``count`` (the last one is at the largest distance)."""
    dist[source] = 0
    queue[0] = source
    head = 0
    tail = 1
    while head < tail:
        u = queue[head]
        head += 1
        d = dist[u] + 1
        for e in range(optr[u], optr[u + 1]):
            tail = _visit(oidx[e], d, dist, queue, tail)
        if not sym:
            for e in range(iptr[u], iptr[u + 1]):
                tail = _visit(iidx[e], d, dist, queue, tail)
    return tail


@numba.njit(cache=True, nogil=True)
def reset(dist, queue, count):
    for i in range(count):
        dist[queue[i]] = -1


@numba.njit(parallel=True, cache=True, nogil=True)
def eccentricities(sources, optr, oidx, iptr, iidx, sym, dists, queues, out, far):
    """``out[i]`` = the eccentricity of ``sources[i]`` in its component and ``far[i]`` a
    node at that distance; one search per source, sources spread over threads
    (``dists``/``queues``: one (N,) row per thread, ``dists`` all -1)."""
    for i in numba.prange(sources.shape[0]):
        t = numba.get_thread_id()
        dist = dists[t]
        queue = queues[t]
        count = bfs(sources[i], optr, oidx, iptr, iidx, sym, dist, queue)
        far[i] = queue[count - 1]
        out[i] = dist[far[i]]
        reset(dist, queue, count)


@numba.njit(cache=True, nogil=True)
def components(optr, oidx, iptr, iidx, sym, label, dist, queue):
    """Label every node with its component (0, 1, ... in order of smallest node id);
    ``label`` int64 (N,) -1 and ``dist`` int32 (N,) -1 on entry (``dist`` is -1 again on
    return). Returns the component sizes, int64."""
    n = optr.shape[0] - 1
    sizes = np.zeros(n, np.int64)
    c = 0
    for s in range(n):
        if label[s] >= 0:
            continue
        count = bfs(s, optr, oidx, iptr, iidx, sym, dist, queue)
        for i in range(count):
            label[queue[i]] = c
        reset(dist, queue, count)
        sizes[c] = count
        c += 1
    return sizes[:c]


@numba.njit(cache=True, nogil=True)
def step_back(v, optr, oidx, iptr, iidx, sym, dist):
    """A neighbour of ``v`` one step closer to the search's source."""
    want = dist[v] - 1
    for e in range(optr[v], optr[v + 1]):
        if dist[oidx[e]] == want:
            return np.int64(oidx[e])
    if not sym:
        for e in range(iptr[v], iptr[v + 1]):
            if dist[iidx[e]] == want:
                return np.int64(iidx[e])
    return np.int64(-1)


@numba.njit(cache=True, nogil=True)
def bounding_eccentricities(members, optr, oidx, iptr, iidx, sym, dist, queue, ecc):
    """Exact eccentricities of the nodes of one component (``members``), by Takes and
    Kosters' bounds: after a search from ``v``, every ``w`` has
    ``max(ecc(v) - d(v, w), d(v, w)) <= ecc(w) <= ecc(v) + d(v, w)``; the next source
    alternates between the candidate with the largest upper and the smallest lower bound,
    until every bound meets. Writes ``ecc[members]``; returns the searches made."""
    m = members.shape[0]
    lower = np.zeros(m, np.int64)
    upper = np.full(m, np.iinfo(np.int64).max, np.int64)
    done = np.zeros(m, np.bool_)
    left = m
    searches = 0
    pick_upper = False
    # the first source: the member of largest degree (a hub, near the centre)
    best = 0
    bestd = -1
    for i in range(m):
        u = members[i]
        d = optr[u + 1] - optr[u]
        if not sym:
            d += iptr[u + 1] - iptr[u]
        if d > bestd:
            bestd = d
            best = i
    v = best
    while left > 0:
        count = bfs(members[v], optr, oidx, iptr, iidx, sym, dist, queue)
        searches += 1
        e = dist[queue[count - 1]]
        for i in range(m):
            if done[i]:
                continue
            d = dist[members[i]]
            lo = e - d if e - d > d else d
            if lo > lower[i]:
                lower[i] = lo
            if e + d < upper[i]:
                upper[i] = e + d
            if lower[i] == upper[i]:
                done[i] = True
                ecc[members[i]] = lower[i]
                left -= 1
        reset(dist, queue, count)
        # next: alternate the largest upper and the smallest lower bound (ties: the first)
        v = -1
        for i in range(m):
            if done[i]:
                continue
            if v < 0:
                v = i
            elif pick_upper:
                if upper[i] > upper[v]:
                    v = i
            elif lower[i] < lower[v]:
                v = i
        pick_upper = not pick_upper
    return searches
