"""Numba kernels of the distance measures (:mod:`graphsys.measures.distance`) over the
undirected view (:mod:`graphsys.measures.kernels_view`): many searches of the one
breadth-first search (:mod:`graphsys.kernels.bfs`), one per thread
(:func:`eccentricities`), or up to 64 at once, a bit per source
(:func:`multi_eccentricities`), and Takes and Kosters' bounds on eccentricities.

A view's lists as the search reads them are ``lists`` = (``optr``, ``oidx``, ``iptr``,
``iidx``, ``both``, ``bound``): ``both`` on a directed view (the undirected neighbours are
the out-row and the in-row), ``bound`` its largest out-row plus in-row. ``dist`` arrays
are int32 (N,) and -1 outside a search; a search leaves its reached nodes in
``queue[:count]`` (level by level), so the caller resets only those (no O(N) pass per
search).
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.kernels.bfs import ALPHA, BETA, NO_LIMIT, frontier_entries, search
from graphsys.measures.kernels_view import row_bound

#: A frontier of fewer than N / SMALL_FRONTIER nodes stays top-down without reading its rows
SMALL_FRONTIER = 256


@numba.njit(cache=True, nogil=True)
def farthest(dist, queue, count):
    """A node farthest from a search's source: the smallest id of its last level
    (``queue[:count]``, level by level), whatever order the search listed the level in."""
    far = queue[count - 1]
    i = count - 2
    while i >= 0 and dist[queue[i]] == dist[far]:
        far = min(far, queue[i])
        i -= 1
    return far


@numba.njit(cache=True, nogil=True)
def settle(upper, dist, queue, count, ecc, label, levels):
    """After a search of eccentricity ``ecc``, in one pass over the reached nodes ``x``:
    ``upper[x] = min(upper[x], dist[x] + ecc)`` (an upper bound of ``x``'s eccentricity),
    ``label[x] = True`` (when ``label`` is not empty), ``levels[i] = dist[queue[i]]`` (when
    ``levels`` is not empty), and :func:`reset` ``dist``."""
    mark = label.shape[0] > 0
    keep = levels.shape[0] > 0
    for i in range(count):
        x = queue[i]
        d = dist[x]
        if d + ecc < upper[x]:
            upper[x] = d + ecc
        if mark:
            label[x] = True
        if keep:
            levels[i] = d
        dist[x] = -1


@numba.njit(cache=True, nogil=True)
def reset(dist, queue, count):
    for i in range(count):
        dist[queue[i]] = -1


@numba.njit(parallel=True, cache=True, nogil=True)
def eccentricities(sources, optr, oidx, iptr, iidx, both, bound, dists, queues, fronts, nxts,
                   out, far):
    """``out[i]`` = the eccentricity of ``sources[i]`` in its component and ``far[i]`` a
    node at that distance; one search per source, sources spread over threads (the
    :func:`~graphsys.kernels.bfs.buffers` of each thread as rows of ``dists`` (all -1),
    ``queues``, ``fronts``, ``nxts``)."""
    for i in numba.prange(sources.shape[0]):
        t = numba.get_thread_id()
        dist, queue = dists[t], queues[t]
        count = search(optr, oidx, iptr, iidx, both, bound, dist, queue, fronts[t], nxts[t],
                       np.int64(sources[i]), NO_LIMIT, np.int64(1), np.bool_(True))[0]
        far[i] = farthest(dist, queue, count)
        out[i] = dist[far[i]]
        reset(dist, queue, count)


#: Sources one :func:`multi_eccentricities` call searches from at once (bits of a word)
WORD = 64


@numba.njit(cache=True, nogil=True)
def multi_eccentricities(sources, optr, oidx, iptr, iidx, sym, seen, cur, nxt, queue,
                         touched, out, far):
    """``out[i]`` = the eccentricity of ``sources[i]`` in its component and ``far[i]`` a
    node at that distance, for up to :data:`WORD` sources in one direction-optimizing
    search on one thread: each node holds a word with a bit per source (Then et al., "The
    more the merrier: efficient multi-source graph traversal", VLDB 2014), so a node that
    several sources reach at the same level is expanded once for all of them. ``seen``/``cur``/
    ``nxt`` uint64 (N,), all 0 on entry and on return; ``queue`` int64 (2N,) and
    ``touched`` int64 (N,) scratch."""
    n = optr.shape[0] - 1
    one = np.uint64(1)
    zero = np.uint64(0)
    front = queue[:n]
    nfront = queue[n:]
    fc = np.int64(0)  # not a literal: frontier_entries is compiled once
    reached = 0
    for i in range(sources.shape[0]):
        s = sources[i]
        if seen[s] == zero:
            touched[reached] = s
            reached += 1
            front[fc] = s
            fc += 1
        seen[s] |= one << np.uint64(i)
        cur[s] |= one << np.uint64(i)
        out[i] = 0
        far[i] = s
    full = zero
    for i in range(sources.shape[0]):
        full |= one << np.uint64(i)
    unexplored = optr[n] - optr[0]
    if not sym:
        unexplored += iptr[n] - iptr[0]
    bottom_up = False
    level = 0
    while fc > 0:
        # Beamer's rule, as :func:`graphsys.kernels.bfs.search`
        if bottom_up:
            bottom_up = fc >= n / BETA
        elif fc * SMALL_FRONTIER >= n:
            frontier_rows = frontier_entries(front, np.int64(0), fc, optr, iptr, not sym)
            unexplored -= frontier_rows
            bottom_up = frontier_rows > unexplored / ALPHA
        nc = 0
        if bottom_up:
            # every node that some source has not reached gathers the sources of its
            # neighbours in the frontier, stopping once it has all it lacks
            for v in range(n):
                sv = seen[v]
                want = full & ~sv
                if want == zero:
                    continue
                got = zero
                for k in range(2 if not sym else 1):
                    ptr, idx = (optr, oidx) if k == 0 else (iptr, iidx)
                    for e in range(ptr[v], ptr[v + 1]):
                        got |= cur[idx[e]]
                        if got & want == want:
                            break
                got &= want
                if got != zero:
                    if sv == zero:
                        touched[reached] = v
                        reached += 1
                    nfront[nc] = v
                    nc += 1
                    nxt[v] = got
                    seen[v] = sv | got
        else:
            for j in range(fc):
                u = front[j]
                bits = cur[u]
                # (written out: a helper taking the swapped frontier arrays would count
                # references on every edge)
                for k in range(2 if not sym else 1):
                    ptr, idx = (optr, oidx) if k == 0 else (iptr, iidx)
                    for e in range(ptr[u], ptr[u + 1]):
                        v = idx[e]
                        sv = seen[v]
                        new = bits & ~sv
                        if new != zero:  # sources that had not reached v: next level
                            if sv == zero:
                                touched[reached] = v
                                reached += 1
                            if nxt[v] == zero:
                                nfront[nc] = v
                                nc += 1
                            nxt[v] |= new
                            seen[v] = sv | new
        for j in range(fc):
            cur[front[j]] = zero
        level += 1
        # the next frontier's words; the sources it holds are this far at least
        pending = zero
        for j in range(nc):
            v = nfront[j]
            cur[v] = nxt[v]
            nxt[v] = zero
            pending |= cur[v]
        for j in range(nc):
            if pending == zero:
                break
            hit = cur[nfront[j]] & pending
            if hit != zero:
                for i in range(sources.shape[0]):
                    if (hit >> np.uint64(i)) & one:
                        out[i] = level
                        far[i] = nfront[j]
                pending &= ~hit
        front, nfront = nfront, front
        fc = nc
    for j in range(reached):
        seen[touched[j]] = zero


@numba.njit(cache=True, nogil=True)
def hubs(label, count, optr, iptr, sym, rank):
    """The node of largest row length (the smallest ``rank`` of ties) of each component
    ``0..count-1`` of ``label``, int64."""
    best = np.full(count, -1, np.int64)
    most = np.full(count, -1, np.int64)
    for v in range(label.shape[0]):
        c = label[v]
        d = row_bound(v, optr, iptr, sym)
        if d > most[c] or (d == most[c] and rank[v] < rank[best[c]]):
            most[c] = d
            best[c] = v
    return best


@numba.njit(cache=True, nogil=True)
def step_back(v, optr, oidx, iptr, iidx, sym, dist, rank):
    """A neighbour of ``v`` one step closer to the search's source: of those, the one with
    the longest rows (:func:`~graphsys.measures.kernels_view.row_bound`: the degree where
    rows hold no repeats), then the smallest ``rank`` (a key of the node alone)."""
    want = dist[v] - 1
    best = np.int64(-1)
    most = -1
    for e in range(optr[v], optr[v + 1]):
        best, most = _closer(np.int64(oidx[e]), want, best, most, optr, iptr, sym, dist, rank)
    if not sym:
        for e in range(iptr[v], iptr[v + 1]):
            best, most = _closer(np.int64(iidx[e]), want, best, most, optr, iptr, sym, dist,
                                 rank)
    return best


@numba.njit(cache=True, nogil=True)
def _closer(w, want, best, most, optr, iptr, sym, dist, rank):
    """``(best, most)`` of :func:`step_back` after looking at the neighbour ``w``."""
    if dist[w] != want:
        return best, most
    d = row_bound(w, optr, iptr, sym)
    if d > most or (d == most and rank[w] < rank[best]):
        return w, d
    return best, most


@numba.njit(cache=True, nogil=True)
def last_level(dist, queue, count):
    """Where the last level of a search (``queue[:count]``, level by level) starts."""
    i = count - 1
    while i > 0 and dist[queue[i - 1]] == dist[queue[count - 1]]:
        i -= 1
    return i


@numba.njit(cache=True, nogil=True)
def peripheral(nodes, upper, optr, iptr, sym, rank):
    """The node of ``nodes`` with the largest eccentricity bound ``upper``, then the longest
    rows (:func:`~graphsys.measures.kernels_view.row_bound`), then the smallest ``rank``: a
    key of the node alone, so the same node whatever order ``nodes`` lists them in."""
    best = np.int64(nodes[0])
    for i in range(1, nodes.shape[0]):
        x = np.int64(nodes[i])
        if upper[x] != upper[best]:
            better = upper[x] > upper[best]
        else:
            dx, db = row_bound(x, optr, iptr, sym), row_bound(best, optr, iptr, sym)
            better = dx > db or (dx == db and rank[x] < rank[best])
        if better:
            best = x
    return best


@numba.njit(cache=True, nogil=True)
def bounding_eccentricities(members, optr, oidx, iptr, iidx, both, bound, dist, queue, front,
                            nxt, nthreads, ecc):
    """Exact eccentricities of the nodes of one component (``members``), by Takes and
    Kosters' bounds: after a search from ``v``, every ``w`` has
    ``max(ecc(v) - d(v, w), d(v, w)) <= ecc(w) <= ecc(v) + d(v, w)``; the next source
    alternates between the candidate with the largest upper and the smallest lower bound,
    until every bound meets. Searches on ``nthreads`` threads with the buffers ``dist``
    ... ``nxt``; writes ``ecc[members]``; returns the searches made."""
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
        d = row_bound(members[i], optr, iptr, not both)
        if d > bestd:
            bestd = d
            best = i
    v = best
    while left > 0:
        count = search(optr, oidx, iptr, iidx, both, bound, dist, queue, front, nxt,
                       members[v], NO_LIMIT, nthreads, np.bool_(True))[0]
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
