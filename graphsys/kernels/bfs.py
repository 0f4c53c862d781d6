"""Direction-optimizing breadth-first search (Beamer, Asanovic, Patterson, SC 2012), the one
BFS kernel of every engine: the BSP BFS (:func:`graphsys.bsp.kernels_bfs.bfs_solve`), the
searches of closeness and harmonic centrality and of the distance measures and, through
them, the NetworkX backend.

Top-down steps expand the frontier's *out-lists* (CSR ``out_ptr``/``out_idx``); bottom-up
steps let every unreached vertex look for one neighbour of a bitmap frontier in its
*in-lists* (the CSC; the CSR again on a symmetric graph; empty arrays: top-down only); with
``both``, every step reads both lists (the undirected view of a directed graph). The switch
rules are Beamer's (:data:`ALPHA`, :data:`BETA`), and the first switch also needs the
frontier's entries to reach N / :data:`BETA`: without it the last levels of a long search
(a road network's) go bottom-up and each scans every vertex. No atomics are needed: a
top-down race only lists a vertex twice (the level's bitmap drops the repeat), and a
bottom-up word of 64 vertices is written by one thread.

The buffers are the caller's (:func:`buffers`), so that many searches reuse them: ``level``
int32 (N,), -1 = unreached, a ``queue`` (N+1,) and two bitmaps. A search lists the
vertices it reached in ``queue[:count]`` level by level (the same order on any number of
threads), so that the caller resets only those.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from graphsys.kernels.arrays import read_only
from graphsys.prefetch import prefetch

ALPHA = 15.0
BETA = 18.0
#: a top-down step whose frontier has at least this many list entries is spread over the
#: threads (waking the pool costs more below; a road graph's ~1,000 levels are all smaller)
TOP_DOWN_PARALLEL_EDGES = 1 << 15
#: queue entries between a vertex's prefetch and its expansion (:func:`_top_down_serial`)
PREFETCH_AHEAD = 16
#: a serial top-down step tests each entry with a branch where the last one found fewer new
#: vertices per entry read than this share, or more than 1 minus it (the branch predictor
#: then guesses right: on a dense graph's middle levels most entries lead back), else
#: branch-free (:func:`_push`)
PREDICTABLE = 0.2
#: ``max_steps`` of a search run to its end (an int64, not a Python int: a kernel passing
#: it on passes a run-time value, not a literal that numba would compile a search apart for)
NO_LIMIT = np.int64(np.iinfo(np.int64).max)
_ONE = np.uint64(1)


def buffers(n: int, dtype=np.int64) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The scratch of :func:`search` over ``n`` vertices: (level int32 (N,) all -1, queue
    (N+1,) of ``dtype`` (the neighbour ids': int32 halves its cache), front and next
    bitmaps uint64 ((N+63) // 64,))."""
    words = (n + 63) // 64
    return (np.full(n, -1, np.int32), np.empty(n + 1, dtype), np.zeros(words, np.uint64),
            np.zeros(words, np.uint64))


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
def entries(u, out_ptr, in_ptr, both):
    """The list entries a top-down step reads at ``u``."""
    d = out_ptr[u + 1] - out_ptr[u]
    if both:
        d += in_ptr[u + 1] - in_ptr[u]
    return d


@numba.njit(cache=True, nogil=True)
def unreached(out_ptr, in_ptr, both):
    """int32 (N,) levels, all -1, and the most entries :func:`entries` counts at a vertex,
    in one pass over the pointers (``np.full`` and a degree pass of their own read the
    vertex arrays twice, which a short search on a large graph notices)."""
    n = out_ptr.shape[0] - 1
    level = np.empty(n, np.int32)
    most = 0
    for u in range(n):
        level[u] = -1
        most = max(most, entries(u, out_ptr, in_ptr, both))
    return level, most


@numba.njit(cache=True, nogil=True)
def frontier_entries(q, lo, hi, out_ptr, in_ptr, both):
    """The list entries of the vertices ``q[lo:hi]``."""
    total = 0
    for i in range(lo, hi):
        total += entries(q[i], out_ptr, in_ptr, both)
    return total


@numba.njit(inline="always")
def _claim(ptr, idx, u, level, depth, buf, k):
    for e in range(ptr[u], ptr[u + 1]):
        v = idx[e]
        if level[v] < 0:
            level[v] = depth
            buf[k] = v
            k += 1
    return k


@numba.njit(parallel=True, cache=True, nogil=True)
def _top_down_parallel(q, lo, hi, out_ptr, out_idx, in_ptr, in_idx, both, level, depth,
                       nchunks, front):
    """One top-down step over ``nchunks`` chunks of the frontier ``q[lo:hi]`` in parallel:
    each chunk's new vertices go to its stretch of a buffer, then into the bitmap ``front``
    (zeroed here). Returns the entries read."""
    nf = hi - lo
    starts = np.zeros(nchunks + 1, np.int64)
    for c in range(nchunks):
        starts[c + 1] = starts[c] + frontier_entries(q, lo + nf * c // nchunks,
                                                     lo + nf * (c + 1) // nchunks,
                                                     out_ptr, in_ptr, both)
    buf = np.empty(starts[nchunks], np.int64)
    ends = np.zeros(nchunks, np.int64)
    for c in numba.prange(nchunks):
        k = starts[c]
        for i in range(lo + nf * c // nchunks, lo + nf * (c + 1) // nchunks):
            k = _claim(out_ptr, out_idx, q[i], level, depth, buf, k)
            if both:
                k = _claim(in_ptr, in_idx, q[i], level, depth, buf, k)
        ends[c] = k
    front[:] = 0
    for c in range(nchunks):
        _mark(front, buf, starts[c], ends[c])
    return starts[nchunks]


@numba.njit(inline="always")
def _push(q, tail, ptr, idx, u, level, depth):
    """Branch-free: ``v`` is always written at the queue's tail, which advances by whether
    ``v`` is new (a coin flip to the branch predictor on sparse graphs: about half the
    edges of a road graph lead back)."""
    for e in range(ptr[u], ptr[u + 1]):
        v = idx[e]
        lv = level[v]
        new = lv < 0
        q[tail] = v
        tail += new
        level[v] = depth if new else lv
    return tail


@numba.njit(inline="always")
def _prefetch_ahead(q, i, tail, ptr, idx):
    """Prefetch the ``ptr`` entry of the vertex :data:`PREFETCH_AHEAD` places after ``q[i]``
    in the queue, and the first ``idx`` line of the one half as far."""
    if i + PREFETCH_AHEAD < tail:
        prefetch(ptr, q[i + PREFETCH_AHEAD])
    if i + PREFETCH_AHEAD // 2 < tail:
        prefetch(idx, ptr[q[i + PREFETCH_AHEAD // 2]])


@numba.njit(cache=True, nogil=True)
def _top_down_serial(q, lo, hi, out_ptr, out_idx, in_ptr, in_idx, both, level, depth,
                     branch):
    """Expand the frontier ``q[lo:hi]`` into ``q[hi:]`` on this thread (a plain queue BFS
    level; ``q`` has one slot per vertex plus one); returns (end of the next frontier,
    entries read). The queue says which vertices come next, so their ``out_ptr`` entries
    are prefetched :data:`PREFETCH_AHEAD` vertices early and their first ``out_idx`` line
    half as early: the random reads of consecutive vertices then overlap instead of each
    waiting on the last, which matters most on long serial searches (road networks:
    hundreds of small levels). ``branch``: :func:`_claim` (a branch per entry, stores only
    for the new vertices) instead of :func:`_push`."""
    tail = hi
    scanned = 0
    for i in range(lo, hi):
        _prefetch_ahead(q, i, tail, out_ptr, out_idx)
        u = q[i]
        scanned += entries(u, out_ptr, in_ptr, both)
        if branch:
            tail = _claim(out_ptr, out_idx, u, level, depth, q, tail)
            if both:
                tail = _claim(in_ptr, in_idx, u, level, depth, q, tail)
        else:
            tail = _push(q, tail, out_ptr, out_idx, u, level, depth)
            if both:
                tail = _push(q, tail, in_ptr, in_idx, u, level, depth)
    return tail, scanned


@numba.njit(cache=True, nogil=True)
def _top_down_push(q, lo, hi, ptr, idx, level, depth):
    """:func:`_top_down_serial` over the out-lists alone, branch-free (:func:`_push`): the
    step of every level of a long search on a sparse graph (a road graph's ~1,000), written
    out as a loop of its own: in the general step, numba leaves the tests of ``both`` and
    ``branch`` (fixed for a step) in the loop over the frontier, a cost per vertex that
    such searches, a few vertices a level, notice."""
    tail = hi
    scanned = 0
    for i in range(lo, hi):
        _prefetch_ahead(q, i, tail, ptr, idx)
        u = q[i]
        scanned += ptr[u + 1] - ptr[u]
        tail = _push(q, tail, ptr, idx, u, level, depth)
    return tail, scanned


@numba.njit(inline="always")
def _pull(ptr, idx, v, front):
    """Whether ``v``'s list ``ptr``/``idx`` holds a vertex of the bitmap ``front``, and the
    entries read up to the first one."""
    a, b = ptr[v], ptr[v + 1]
    for e in range(a, b):
        u = idx[e]
        if (front[u >> 6] >> np.uint64(u & 63)) & _ONE:
            return True, e + 1 - a
    return False, b - a


@numba.njit(cache=True, nogil=True)
def _bottom_up_word(in_ptr, in_idx, out_ptr, out_idx, both, level, depth, front, nxt, w):
    """Bottom-up for the 64 vertices of bitmap word ``w``: their bits of the next frontier
    go to ``nxt[w]``; returns (vertices reached, entries read)."""
    n = level.shape[0]
    word = np.uint64(0)
    base = w * 64
    cnt = 0
    sc = 0
    for v in range(base, min(base + 64, n)):
        if level[v] < 0:
            found, read = _pull(in_ptr, in_idx, v, front)
            sc += read
            if both and not found:
                found, read = _pull(out_ptr, out_idx, v, front)
                sc += read
            if found:
                level[v] = depth
                word |= _ONE << np.uint64(v - base)
                cnt += 1
    nxt[w] = word
    return cnt, sc


@numba.njit(parallel=True, cache=True, nogil=True)
def _bottom_up_parallel(in_ptr, in_idx, out_ptr, out_idx, both, level, depth, front, nxt):
    """One bottom-up step, words spread over the threads; returns (vertices reached,
    entries read). The word's loop is a function of its own: inside the ``prange`` body,
    beside the sums, numba's parfor pass fails on it under Python 3.12 ("unexpected cycle
    in lookup()", numba issue #10132; numba 0.68)."""
    awake = 0
    scanned = 0
    for w in numba.prange(front.shape[0]):
        # int64 as the loop index is typed before the parfor pass makes it unsigned: one
        # compilation of the callee, not two
        cnt, sc = _bottom_up_word(in_ptr, in_idx, out_ptr, out_idx, both, level, depth,
                                  front, nxt, np.int64(w))
        awake += cnt
        scanned += sc
    return awake, scanned


@numba.njit(cache=True, nogil=True)
def _bottom_up_serial(in_ptr, in_idx, out_ptr, out_idx, both, level, depth, front, nxt):
    """:func:`_bottom_up_parallel` on this thread (a search inside a parallel loop)."""
    awake = 0
    scanned = 0
    for w in range(front.shape[0]):
        cnt, sc = _bottom_up_word(in_ptr, in_idx, out_ptr, out_idx, both, level, depth,
                                  front, nxt, w)
        awake += cnt
        scanned += sc
    return awake, scanned


@numba.njit(inline="always")
def _mark(front, ids, lo, hi):
    for i in range(lo, hi):
        u = ids[i]
        front[u >> 6] |= _ONE << np.uint64(u & 63)


@numba.njit(cache=True, nogil=True)
def _ids_into(front, q, at):
    """Write the ids set in ``front`` into ``q[at:]``, ascending; returns the end. One
    pass per set bit (its position: the word's trailing zeros; then cleared), not per bit
    below the word's highest."""
    for w in range(front.shape[0]):
        word = front[w]
        while word:
            q[at] = w * 64 + np.int64(trailing_zeros(word))
            at += 1
            word &= word - _ONE
    return at


@numba.njit(cache=True, nogil=True)
def _grow(a, size):
    """``a`` (int64) with room for index ``size``: itself, or a copy of twice the length."""
    if size < a.shape[0]:
        return a
    b = np.zeros(2 * a.shape[0], np.int64)
    b[:a.shape[0]] = a
    return b


@numba.njit(cache=True, nogil=True)
def search(out_ptr, out_idx, in_ptr, in_idx, both, max_degree, level, queue, front, nxt,
           source, max_steps, nthreads, listed):
    """BFS from ``source`` over the lists (see the module docstring; ``max_degree``: the
    most entries :func:`entries` counts at a vertex) with the caller's buffers
    (:func:`buffers`); at most ``max_steps`` steps (levels 1..max_steps; :data:`NO_LIMIT`);
    ``nthreads``: numba threads to use (1 inside a parallel loop). Returns (count: the
    vertices reached, in ``queue[:count]`` level by level; ``last``: where the last level
    starts, ``queue[last:count]`` the vertices left to expand when ``max_steps`` cut the
    search short, else ``last == count``; then per step int64 arrays: frontier size,
    entries read, 1 = bottom-up). ``listed`` False: a caller that reads only ``level``,
    ``count`` and ``queue[last:count]`` lets the levels of bottom-up steps followed by
    another bottom-up step go unlisted (their stretch of ``queue[:count]`` is then not
    written), sparing a pass over the bitmap and the writes of those levels, the largest."""
    n = level.shape[0]
    to_check = out_ptr[n] - out_ptr[0]  # entries of vertices not yet expanded
    if both:
        to_check += in_ptr[n] - in_ptr[0]
    level[source] = 0
    queue[0] = source
    # counters and flags start as int64 / bool values, not literal constants: a callee typed
    # with a literal argument would be compiled once more for it
    lo, hi, step = np.int64(0), np.int64(1), np.int64(0)
    act = np.zeros(64, np.int64)
    scanned = np.zeros(64, np.int64)
    pulled = np.zeros(64, np.int64)
    bottom_up = False
    branch = np.bool_(True)  # the source's entries all lead to new vertices
    while hi > lo and step < max_steps:
        if step == act.shape[0]:  # not reassigned every level: spares reference counts
            act, scanned, pulled = _grow(act, step), _grow(scanned, step), _grow(pulled, step)
        nf = hi - lo
        act[step] = nf
        # Beamer's test (and the N / BETA floor of a bottom-up step's vertex scan) and the
        # parallel top-down step need the frontier's entries: skipped when even
        # nf * max_degree cannot pass them (every level of a road graph)
        bottom_up_edges = max(to_check / ALPHA, n / BETA)
        fe = 0
        if not bottom_up and nf * max_degree >= min(bottom_up_edges, TOP_DOWN_PARALLEL_EDGES):
            fe = frontier_entries(queue, lo, hi, out_ptr, in_ptr, both)
        if fe > bottom_up_edges and in_ptr.shape[0] > 0:
            front[:] = 0
            _mark(front, queue, lo, hi)
            bottom_up = True
        if bottom_up:
            args = (in_ptr, in_idx, out_ptr, out_idx, both, level, step + 1, front, nxt)
            found, sc = (_bottom_up_parallel(*args) if nthreads > 1 else
                         _bottom_up_serial(*args))
            front, nxt = nxt, front
            pulled[step] = 1
            bottom_up = not (found < n / BETA and found < nf)
            if listed or not bottom_up or found == 0 or step + 1 >= max_steps:
                tail = _ids_into(front, queue, hi)
            else:  # the next step reads the bitmap, not the queue
                tail = hi + found
        elif fe >= TOP_DOWN_PARALLEL_EDGES:  # gathered in id order on any number of threads
            if nthreads > 1:
                sc = _top_down_parallel(queue, lo, hi, out_ptr, out_idx, in_ptr, in_idx, both,
                                        level, step + 1, min(nf, 8 * nthreads), front)
            else:
                tail, sc = _top_down_serial(queue, lo, hi, out_ptr, out_idx, in_ptr, in_idx,
                                            both, level, step + 1, branch)
                front[:] = 0
                _mark(front, queue, hi, tail)
            tail = _ids_into(front, queue, hi)
            to_check -= sc
        elif both or branch:
            tail, sc = _top_down_serial(queue, lo, hi, out_ptr, out_idx, in_ptr, in_idx, both,
                                        level, step + 1, branch)
            to_check -= sc
        else:
            tail, sc = _top_down_push(queue, lo, hi, out_ptr, out_idx, level, step + 1)
            to_check -= sc
        if not pulled[step]:  # a top-down step: the share of its entries that were new
            share = (tail - hi) / max(sc, 1)
            branch = share < PREDICTABLE or share > 1.0 - PREDICTABLE
        lo, hi = hi, tail
        scanned[step] = sc
        step += 1
    return hi, lo, act[:step], scanned[:step], pulled[:step]


def levels(out_ptr, out_idx, in_ptr, in_idx, both, source, max_steps, nthreads,
           listed=True):
    """One :func:`search` on buffers of its own: (level int32 (N,), -1 = unreached; the
    vertices reached, level by level, of ``out_idx``'s dtype (with ``listed`` False, as
    :func:`search` leaves them: only the last level is sure to be there); then
    :func:`search`'s returns after ``count``).

    A Python function, not a kernel: a cached kernel that calls :func:`search` (whose
    parallel steps are cached kernels of their own), compiled by a process that loaded
    :func:`search` from the cache, was saved without numba's hook that starts its threads
    before the code is linked, and crashed the next process that loaded it first (the
    cache now adds the hook, :func:`graphsys.jit_cache.with_thread_start`).

    The lists reach :func:`search` as read-only views (numba types a read-only array apart
    from a writable one): a mapped index and a built adjacency of the same dtypes share one
    compiled signature of it and of its steps."""
    out_ptr, out_idx, in_ptr, in_idx = read_only(out_ptr, out_idx, in_ptr, in_idx)
    level, most = unreached(out_ptr, in_ptr, both)
    words = (len(level) + 63) // 64
    queue, front, nxt = (np.empty(len(level) + 1, out_idx.dtype), np.zeros(words, np.uint64),
                         np.zeros(words, np.uint64))
    count, last, act, scanned, pulled = search(out_ptr, out_idx, in_ptr, in_idx, both, most,
                                               level, queue, front, nxt, source, max_steps,
                                               nthreads, listed)
    return level, queue[:count], last, act, scanned, pulled
