"""Numba kernels of the distance measures (:mod:`graphsys.measures.distance`): breadth-first
searches over the undirected view (:mod:`graphsys.measures.kernels_view`), one per call or
many at once (one per thread), and Takes and Kosters' bounds on
eccentricities.

A search is direction-optimizing (Beamer, Asanovic and Patterson, SC 2012), on one thread:
top-down steps expand the frontier's rows; once those rows hold more than the unvisited
nodes' rows / :data:`ALPHA` entries, bottom-up steps let every unvisited node look for one
neighbour in the frontier (the level just set) and stop at the first, until the frontier
holds fewer than N / :data:`BETA` nodes. On a small-world graph the middle levels then read
a fraction of the edges; on a road network every step is top-down.

:func:`bfs_levels` and :func:`level_threads` make the same search with its large levels
spread over numba's threads (the middle levels of a small-world graph).
:func:`multi_eccentricities` searches from up to 64 sources at once, a bit per source.

``dist`` arrays are int32 (N,) and -1 outside a search; a search leaves its visited nodes in
``queue[:count]`` (BFS order, level by level), so the caller resets only those (no O(N)
pass per search).
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.measures.kernels_view import row_bound

# Lower than Beamer et al.'s 14 and 24: a bottom-up step here passes over every node and
# reads whole rows of the nodes the frontier does not reach, so it pays only once the
# frontier's rows are about half of what is left (email-Enron, soc-Slashdot0902)
ALPHA = 2.0
BETA = 8.0
#: A frontier of fewer than N / SMALL_FRONTIER nodes stays top-down without reading its rows
SMALL_FRONTIER = 256


@numba.njit(inline="always")
def _visit(v, d, dist, queue, tail):
    if dist[v] < 0:
        dist[v] = d
        queue[tail] = v
        return tail + 1
    return tail


@numba.njit(inline="always")
def _in_frontier(v, level, optr, oidx, iptr, iidx, sym, dist):
    """Whether a neighbour of ``v`` is at distance ``level``."""
    for e in range(optr[v], optr[v + 1]):
        if dist[oidx[e]] == level:
            return True
    if not sym:
        for e in range(iptr[v], iptr[v + 1]):
            if dist[iidx[e]] == level:
                return True
    return False


@numba.njit(cache=True, nogil=True)
def _top_down_step(lo, hi, tail, d, optr, oidx, iptr, iidx, sym, dist, queue):
    """Expand ``queue[lo:hi]`` (the frontier) to distance ``d``; returns the new tail."""
    for i in range(lo, hi):
        u = queue[i]
        for e in range(optr[u], optr[u + 1]):
            tail = _visit(oidx[e], d, dist, queue, tail)
        if not sym:
            for e in range(iptr[u], iptr[u + 1]):
                tail = _visit(iidx[e], d, dist, queue, tail)
    return tail


@numba.njit(cache=True, nogil=True)
def _bottom_up_step(tail, level, optr, oidx, iptr, iidx, sym, dist, queue):
    """Every unreached node with a neighbour at ``level`` joins at ``level + 1``."""
    for v in range(optr.shape[0] - 1):
        if dist[v] < 0 and _in_frontier(v, level, optr, oidx, iptr, iidx, sym, dist):
            dist[v] = level + 1
            queue[tail] = v
            tail += 1
    return tail


@numba.njit(cache=True, nogil=True)
def _rows_of(lo, hi, optr, iptr, sym, queue):
    total = 0
    for i in range(lo, hi):
        total += row_bound(queue[i], optr, iptr, sym)
    return total


@numba.njit(cache=True, nogil=True)
def bfs(source, optr, oidx, iptr, iidx, sym, dist, queue):
    """Direction-optimizing breadth-first search from ``source``: fills ``dist`` for the
    reached nodes, lists them in ``queue[:count]`` level by level; returns ``count`` (the
    last one is at the largest distance)."""
    state = np.empty(6, np.int64)
    bfs_levels(source, optr, oidx, iptr, iidx, sym, dist, queue, state, NO_THREADS)
    return state[1]


#: Nodes per block of a level spread over threads: a block's new nodes go to its own stretch
#: of the scratch array, then to the queue in block order (the same order on any number of
#: threads)
BLOCK = 1024
#: A level is spread over numba's threads once it reads this many row entries (top-down) or
#: passes over this many nodes (bottom-up); smaller ones stay on one thread
THREADS_FROM = 1 << 14
#: ``threads_from`` of a search all on one thread
NO_THREADS = np.iinfo(np.int64).max


@numba.njit(cache=True, nogil=True)
def bfs_levels(source, optr, oidx, iptr, iidx, sym, dist, queue, state, threads_from):
    """:func:`bfs`, stopping before each level large enough to spread over threads: a
    bottom-up level once N >= ``threads_from``, a top-down one reading at least
    ``threads_from`` row entries and N / 8. Starts from ``source`` (>= 0), else resumes from
    ``state`` (int64 (6,): frontier start and end, its level, the unexplored row entries,
    bottom-up, and the mode returned). Returns 0 when the search is done (``state[1]``
    nodes reached), else the level to run with :func:`level_threads`: 1 bottom-up, 2
    top-down."""
    n = optr.shape[0] - 1
    if source >= 0:
        unexplored = optr[n] - optr[0]
        if not sym:
            unexplored += iptr[n] - iptr[0]
        dist[source] = 0
        queue[0] = source
        head, tail, level, bottom_up = 0, 1, 0, False
    else:
        head, tail, level = state[0], state[1], state[2]
        unexplored, bottom_up = state[3], state[4] != 0
    while head < tail:
        lo = head
        hi = tail
        frontier_rows = 0
        if bottom_up:
            bottom_up = hi - lo >= n / BETA
        elif (hi - lo) * SMALL_FRONTIER >= n:
            frontier_rows = _rows_of(lo, hi, optr, iptr, sym, queue)
            unexplored -= frontier_rows
            bottom_up = frontier_rows > unexplored / ALPHA
        mode = 0
        if bottom_up:
            if n >= threads_from:
                mode = 1
            else:
                tail = _bottom_up_step(tail, level, optr, oidx, iptr, iidx, sym, dist, queue)
        elif frontier_rows >= threads_from and 8 * frontier_rows >= n:
            mode = 2  # (gathering the new nodes passes over every node)
        else:
            tail = _top_down_step(lo, hi, tail, level + 1, optr, oidx, iptr, iidx, sym, dist,
                                  queue)
        if mode:
            state[0], state[1], state[2] = lo, hi, level
            state[3], state[4], state[5] = unexplored, bottom_up, mode
            return mode
        head = hi
        level += 1
    state[0], state[1], state[2], state[5] = head, tail, level, 0
    return 0


@numba.njit(parallel=True, cache=True, nogil=True)
def level_threads(optr, oidx, iptr, iidx, sym, dist, queue, state, buf, counts, threads):
    """The level :func:`bfs_levels` stopped at, spread over ``threads`` parts (numba's
    threads; read in here, ``numba.get_num_threads()`` would keep numba from caching the
    kernel). Top-down, the frontier's parts set the new nodes' ``dist`` (two threads may
    both store the same value); bottom-up, every unreached node looks for a neighbour in
    the frontier. Then blocks of :data:`BLOCK` ids gather their new nodes into their own
    stretch of ``buf`` (int64 (N,)) and from there, in block order, into the queue
    (``counts`` int64 (N / BLOCK + 1,) scratch): the same order on any number of threads.
    Advances ``state`` to the next level."""
    n = optr.shape[0] - 1
    nt = threads
    lo, hi, level, top_down = state[0], state[1], state[2], state[5] == 2
    d = level + 1
    if top_down:
        fblocks = (hi - lo + BLOCK - 1) // BLOCK
        for t in numba.prange(nt):
            for b in range(t, fblocks, nt):
                for i in range(lo + b * BLOCK, min(hi, lo + (b + 1) * BLOCK)):
                    u = queue[i]
                    for e in range(optr[u], optr[u + 1]):
                        if dist[oidx[e]] < 0:
                            dist[oidx[e]] = d
                    if not sym:
                        for e in range(iptr[u], iptr[u + 1]):
                            if dist[iidx[e]] < 0:
                                dist[iidx[e]] = d
    # blocks interleave over the threads: unreached nodes cluster by id
    blocks = (n + BLOCK - 1) // BLOCK
    for t in numba.prange(nt):
        for b in range(t, blocks, nt):
            k = b * BLOCK
            for v in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
                if top_down:
                    if dist[v] == d:
                        buf[k] = v
                        k += 1
                elif dist[v] < 0 and _in_frontier(v, level, optr, oidx, iptr, iidx, sym,
                                                  dist):
                    dist[v] = d
                    buf[k] = v
                    k += 1
            counts[b] = k - b * BLOCK
    tail = hi
    for b in range(blocks):  # each block's place in the queue
        c = counts[b]
        counts[b] = tail
        tail += c
    for t in numba.prange(nt):
        for b in range(t, blocks, nt):
            stop = counts[b + 1] if b + 1 < blocks else tail
            at = b * BLOCK
            for i in range(counts[b], stop):
                queue[i] = buf[at]
                at += 1
    state[0], state[1], state[2] = hi, tail, d


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
    fc = 0
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
        # the rule of :func:`bfs`
        if bottom_up:
            bottom_up = fc >= n / BETA
        elif fc * SMALL_FRONTIER >= n:
            frontier_rows = _rows_of(0, fc, optr, iptr, sym, front)
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
def hubs(label, count, optr, iptr, sym):
    """The node of largest row length (the smallest id of ties) of each component
    ``0..count-1`` of ``label``, int64."""
    best = np.full(count, -1, np.int64)
    most = np.full(count, -1, np.int64)
    for v in range(label.shape[0]):
        c = label[v]
        d = row_bound(v, optr, iptr, sym)
        if d > most[c]:
            most[c] = d
            best[c] = v
    return best


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

