"""Direction-optimizing BFS (Beamer, Asanovic, Patterson, SC 2012) in one numba call.

Top-down steps expand a queue frontier along out-edges while it is small; bottom-up steps
let every unreached vertex look for one in-neighbour in a bitmap frontier (uint64 words,
bit ``v & 63`` of word ``v >> 6``) while it is large, stopping at the first hit. The switch
rules are Beamer's: go bottom-up when the frontier's out-edges exceed the unexplored edges
/ :data:`ALPHA`, back top-down when the frontier shrinks below N / :data:`BETA` vertices.
One more condition on the first switch: the frontier's out-edges must also reach N /
:data:`BETA`, because a bottom-up step reads the level of every vertex. Without it, the
last levels of a long search go bottom-up once the unexplored edges run out: on
luxembourg-osm (952 levels), levels 879 and 880, with frontiers of 24 and 26 vertices,
each scanned all 114,599 vertices.
Levels are int32 (N,), -1 = unreached. No atomics are needed: a top-down race only puts a
vertex twice in the next queue (both writers store the same level), and a bottom-up word
of 64 vertices is written by one thread.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.bsp.kernels import PARALLEL_MIN_ITEMS
from graphsys.prefetch import prefetch
from graphsys.storage.kernels import bitmap_ids

ALPHA = 15.0
BETA = 18.0
#: top-down steps whose frontier has fewer out-edges than this run on one thread (waking
#: the pool costs more; a road graph's ~1,000 levels are all this small)
TOP_DOWN_PARALLEL_EDGES = 1 << 15
#: queue entries between a vertex's prefetch and its expansion (:func:`_top_down_serial`)
PREFETCH_AHEAD = 16
_ONE = np.uint64(1)


@numba.njit(inline="always")
def first_marked(ptr, idx, v, mark, target):
    """A bottom-up step's scan of ``v``'s list ``ptr``/``idx``: whether an entry ``u`` with
    ``mark[u] == target`` (a frontier vertex) is in it, and the entries read up to the
    first one (all of them where none is)."""
    e, end = ptr[v], ptr[v + 1]
    while e < end:
        if mark[idx[e]] == target:
            return True, e + 1 - ptr[v]
        e += 1
    return False, end - ptr[v]


@numba.njit(inline="always")
def _top_down_chunk(c, nchunks, frontier, nf, indptr, indices, level, depth, buf, starts,
                    counts):
    """Expand frontier[nf*c//nchunks : nf*(c+1)//nchunks] into buf[starts[c]:]."""
    k = starts[c]
    for i in range(nf * c // nchunks, nf * (c + 1) // nchunks):
        u = frontier[i]
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if level[v] < 0:
                level[v] = depth
                buf[k] = v
                k += 1
    counts[c] = k - starts[c]


@numba.njit(cache=True, nogil=True)
def _chunk_starts(frontier, nf, indptr, nchunks):
    """Offsets int64 (nchunks+1,) of each frontier chunk's out-edges in one buffer."""
    starts = np.zeros(nchunks + 1, np.int64)
    for c in range(nchunks):
        s = 0
        for i in range(nf * c // nchunks, nf * (c + 1) // nchunks):
            u = frontier[i]
            s += indptr[u + 1] - indptr[u]
        starts[c + 1] = starts[c] + s
    return starts


@numba.njit(cache=True, nogil=True)
def _concat(buf, starts, counts):
    out = np.empty(counts.sum(), np.int64)
    k = 0
    for c in range(counts.shape[0]):
        for i in range(starts[c], starts[c] + counts[c]):
            out[k] = buf[i]
            k += 1
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _top_down_parallel(frontier, nf, indptr, indices, level, depth, nchunks):
    """One top-down step over ``nchunks`` frontier chunks in parallel; returns (next queue
    int64, edges scanned)."""
    starts = _chunk_starts(frontier, nf, indptr, nchunks)
    buf = np.empty(starts[nchunks], np.int64)
    counts = np.zeros(nchunks, np.int64)
    for c in numba.prange(nchunks):
        _top_down_chunk(c, nchunks, frontier, nf, indptr, indices, level, depth, buf, starts,
                        counts)
    return _concat(buf, starts, counts), starts[nchunks]


@numba.njit(cache=True, nogil=True)
def _top_down_serial(q, lo, hi, indptr, indices, level, depth):
    """Expand the frontier ``q[lo:hi]`` into ``q[hi:]`` on this thread (a plain queue BFS
    level); returns (end of the next frontier, edges scanned). Branch-free: whether ``v``
    is new is a coin flip to the branch predictor on sparse graphs (about half the edges
    of a road graph lead back), so ``v`` is always written to the queue tail and the tail
    advances by the test's result (``q`` has room: one slot per vertex plus one).

    The queue says which vertices come next, so their ``indptr`` entries are prefetched
    :data:`PREFETCH_AHEAD` vertices early and their first ``indices`` line half as early
    (the queue entries already written, this level's or the next's): the random reads of
    consecutive vertices then overlap instead of each waiting on the last, which matters
    most on long serial searches (road networks: hundreds of small levels)."""
    tail = hi
    scanned = 0
    for i in range(lo, hi):
        if i + PREFETCH_AHEAD < tail:
            prefetch(indptr, q[i + PREFETCH_AHEAD])
        if i + PREFETCH_AHEAD // 2 < tail:
            prefetch(indices, indptr[q[i + PREFETCH_AHEAD // 2]])
        u = q[i]
        a, b = indptr[u], indptr[u + 1]
        scanned += b - a
        for e in range(a, b):
            v = indices[e]
            lv = level[v]
            new = lv < 0
            q[tail] = v
            tail += new
            level[v] = depth if new else lv
    return tail, scanned


@numba.njit(cache=True, nogil=True)
def _out_edges(q, lo, hi, indptr):
    total = 0
    for i in range(lo, hi):
        total += indptr[q[i] + 1] - indptr[q[i]]
    return total


@numba.njit(cache=True, nogil=True)
def _bottom_up_word(indptr, indices, level, depth, front, w):
    """Bottom-up for the 64 vertices of bitmap word ``w``; returns (their bits in the next
    frontier, uint64; vertices reached; edges scanned)."""
    n = level.shape[0]
    word = np.uint64(0)
    base = w * 64
    cnt = 0
    sc = 0
    for v in range(base, min(base + 64, n)):
        if level[v] < 0:
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                sc += 1
                if (front[u >> 6] >> np.uint64(u & 63)) & _ONE:
                    level[v] = depth
                    word |= _ONE << np.uint64(v - base)
                    cnt += 1
                    break
    return word, cnt, sc


@numba.njit(parallel=True, cache=True, nogil=True)
def _bottom_up(indptr, indices, level, depth, front, nxt):
    """One bottom-up step over in-edges; returns (vertices reached, edges scanned). The
    word's loop is a function of its own: inside the ``prange`` body, beside the sums,
    numba's parfor pass fails on it under Python 3.12 ("unexpected cycle in lookup()",
    numba issue #10132; numba 0.68)."""
    awake = 0
    scanned = 0
    for w in numba.prange(front.shape[0]):
        # int64 as the loop index is typed before the parfor pass makes it unsigned: one
        # compilation of the callee, not two
        word, cnt, sc = _bottom_up_word(indptr, indices, level, depth, front, np.int64(w))
        nxt[w] = word
        awake += cnt
        scanned += sc
    return awake, scanned


@numba.njit(cache=True, nogil=True)
def _queue_to_bitmap(frontier, nf, front):
    front[:] = 0
    for i in range(nf):
        u = frontier[i]
        front[u >> 6] |= _ONE << np.uint64(u & 63)


@numba.njit(cache=True, nogil=True)
def _grow(a, size):
    """``a`` (int64) with room for index ``size``: itself, or a copy of twice the length."""
    if size < a.shape[0]:
        return a
    b = np.zeros(2 * a.shape[0], np.int64)
    for i in range(a.shape[0]):
        b[i] = a[i]
    return b


@numba.njit(cache=True, nogil=True)
def _queue(frontier, n, like):
    """A queue holding ``frontier`` with room for every vertex after it, of ``like``'s
    dtype (the neighbour ids': int32 below 2**31 vertices, half the cache of int64)."""
    q = np.empty(frontier.shape[0] + n, like.dtype)
    for i in range(frontier.shape[0]):
        q[i] = frontier[i]
    return q


@numba.njit(cache=True, nogil=True)
def _at_level(level, depth):
    """The vertices whose level is ``depth``, ascending, int64."""
    k = 0
    for v in range(level.shape[0]):
        k += level[v] == depth
    out = np.empty(k, np.int64)
    k = 0
    for v in range(level.shape[0]):
        if level[v] == depth:
            out[k] = v
            k += 1
    return out


@numba.njit(cache=True, nogil=True)
def _unreached_levels(out_indptr):
    """int32 (N,) levels, all -1, and the largest out-degree, in one pass over ``indptr``
    (``np.full`` and a pass of its own for the degree would read the vertex arrays
    twice, a cost a short search on a large graph notices)."""
    n = out_indptr.shape[0] - 1
    level = np.empty(n, np.int32)
    max_degree = 0
    for u in range(n):
        level[u] = -1
        max_degree = max(max_degree, out_indptr[u + 1] - out_indptr[u])
    return level, max_degree


@numba.njit(cache=True, nogil=True)
def bfs_levels(out_indptr, out_indices, in_indptr, in_indices, source, max_steps, nthreads):
    """BFS from ``source`` over out-edges (CSR ``out_*``; ``in_*`` the CSC, or the CSR again
    on a symmetric graph); at most ``max_steps`` steps (levels 1..max_steps); ``nthreads``:
    numba threads to use. Returns (levels int32 (N,), -1 = unreached; steps run; then per
    step int64 arrays: frontier size, edges scanned, 1 = bottom-up; and the vertices of the
    last level when ``max_steps`` cut the search short, int64, else empty). The frontier
    is ``q[lo:hi]`` top-down (serial steps append to ``q``)."""
    level, max_degree = _unreached_levels(out_indptr)
    n = level.shape[0]
    m = out_indptr[n]
    level[source] = 0
    # counters start as int64 values, not literal constants: a callee typed with a literal
    # argument would be compiled once more for it (every call below takes them)
    zero, one = np.int64(0), np.int64(1)
    first = np.empty(1, np.int64)
    first[0] = source
    q = _queue(first, n, out_indices)
    lo, hi = zero, one
    nf = one
    front = np.zeros((n + 63) // 64, np.uint64)
    nxt = np.zeros((n + 63) // 64, np.uint64)
    act = np.zeros(64, np.int64)
    scanned = np.zeros(64, np.int64)
    pulled = np.zeros(64, np.int64)
    to_check = m  # out-edges of vertices not yet expanded
    bottom_up = False
    step = zero
    while nf > 0 and step < max_steps:
        if step == act.shape[0]:  # not reassigned every level: spares reference counts
            act, scanned, pulled = _grow(act, step), _grow(scanned, step), _grow(pulled, step)
        act[step] = nf
        # Beamer's test (and the N / BETA floor of a bottom-up step's vertex scan) needs
        # the frontier's out-edges m_f; skip the pass when even nf * max_degree cannot
        # pass it (every level of a road graph)
        bottom_up_edges = max(to_check / ALPHA, n / BETA)
        if not bottom_up and nf * max_degree > bottom_up_edges and (
                _out_edges(q, lo, hi, out_indptr) > bottom_up_edges):
            _queue_to_bitmap(q[lo:hi], nf, front)
            bottom_up = True
        if bottom_up:
            old = nf
            nf, sc = _bottom_up(in_indptr, in_indices, level, step + 1, front, nxt)
            front, nxt = nxt, front
            pulled[step] = 1
            if nf < n / BETA and nf < old:
                q = _queue(bitmap_ids(front, nf), n, out_indices)
                lo, hi = zero, nf
                bottom_up = False
        elif nf * max_degree >= TOP_DOWN_PARALLEL_EDGES and nthreads > 1 and (
                _out_edges(q, lo, hi, out_indptr) >= TOP_DOWN_PARALLEL_EDGES):
            frontier, sc = _top_down_parallel(q[lo:hi], nf, out_indptr, out_indices, level,
                                              step + 1, min(nf, 8 * nthreads))
            q = _queue(frontier, n, out_indices)
            lo, hi = zero, np.int64(frontier.shape[0])
            nf = hi
            to_check -= sc
        else:
            tail, sc = _top_down_serial(q, lo, hi, out_indptr, out_indices, level, step + 1)
            lo, hi = hi, tail
            nf = hi - lo
            to_check -= sc
        scanned[step] = sc
        step += 1
    if nf == 0:
        left = np.zeros(0, np.int64)
    elif bottom_up:
        left = bitmap_ids(front, nf)
    else:
        left = _at_level(level, step)  # q[lo:hi], without a parallel step's repeats
    return level, step, act[:step], scanned[:step], pulled[:step], left


@numba.njit(cache=True, nogil=True)
def phase_totals(act, scanned, pulled, num_left):
    """Per-step counts of :func:`bfs_levels` (``act``, ``scanned``, ``pulled`` int64 (S,))
    summed per *phase* (a run of steps in one direction); ``num_left``: vertices of the
    last level when the search was cut short. Returns int64 (P, 5) rows of (first step,
    end step, vertices expanded, edges scanned, vertices reached: step s reached the
    frontier of step s + 1)."""
    steps = act.shape[0]
    rows = np.zeros((steps, 5), np.int64)
    p = -1
    for s in range(steps):
        if s == 0 or pulled[s] != pulled[s - 1]:
            p += 1
            rows[p, 0] = s
        rows[p, 1] = s + 1
        rows[p, 2] += act[s]
        rows[p, 3] += scanned[s]
        rows[p, 4] += act[s + 1] if s + 1 < steps else num_left
    return rows[:p + 1]


@numba.njit(inline="always")
def _level_to_float(level, out, v):
    out[v] = level[v] if level[v] >= 0 else np.inf


@numba.njit(cache=True, nogil=True)
def _levels_to_float_serial(level, out):
    for v in range(level.shape[0]):
        _level_to_float(level, out, v)


@numba.njit(parallel=True, cache=True, nogil=True)
def _levels_to_float_parallel(level, out):
    for v in numba.prange(level.shape[0]):
        _level_to_float(level, out, v)


@numba.njit(cache=True, nogil=True)
def bfs_solve(out_indptr, out_indices, in_indptr, in_indices, source, out, max_steps,
              nthreads):
    """:func:`bfs_levels` and what the engine keeps of it, in one call: ``out[v]`` (float64
    (N,)) = the level of ``v``, ``inf`` where unreached (in parallel from
    :data:`~graphsys.bsp.kernels.PARALLEL_MIN_ITEMS` vertices: below it, a parallel loop,
    even one that runs serially, slowed the next search's serial kernel on luxembourg-osm);
    returns (:func:`phase_totals` rows, int64 (P, 5); 1 = bottom-up per step, int64 (S,);
    vertices of the last level when ``max_steps`` cut the search short). One call instead
    of four saves their dispatches and the levels' own allocation from Python."""
    level, _, act, scanned, pulled, left = bfs_levels(out_indptr, out_indices, in_indptr,
                                                      in_indices, source, max_steps, nthreads)
    if level.shape[0] < PARALLEL_MIN_ITEMS:
        _levels_to_float_serial(level, out)
    else:
        _levels_to_float_parallel(level, out)
    return phase_totals(act, scanned, pulled, left.shape[0]), pulled, left.shape[0]
