"""Numba kernels of triangle counting over oriented rows (:mod:`graphsys.views.orient`);
the clique, motif and matching kernels sit beside it (``clique_kernels``, ``motif_kernels``,
``match_kernels``).

Every kernel loops ``prange`` over *tasks* (contiguous ranges of roots of about equal work,
:func:`graphsys.mining.parallel.tasks_by_work`) and finds each subgraph once, from its
lowest-ranked vertex. Rows are sorted; two rows intersect either by a bitmap probe (the
root's row marked in a per-thread bitset of N bits, each row of a neighbour probed against
it) or by a merge (which also yields the positions of the entries matched, for per-edge
counts). Shared per-vertex or per-edge counters are added atomically
(:func:`graphsys.kernels.atomic.atomic_add`); per-thread scratch is a row of an array
indexed by ``numba.get_thread_id()``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from graphsys.kernels.atomic import atomic_add
from graphsys.prefetch import prefetch_read as prefetch


def _mark(marks, v):
    """Set ``v`` in a mark array: a byte per vertex (uint8) or a bit (uint64 words)."""


def _unmark(marks, v):
    """Clear ``v`` (a bit array clears the whole word: every bit set in it is cleared in
    the same pass)."""


def _marked(marks, w):
    """1 when ``w`` is set, else 0."""


@overload(_mark, jit_options={"cache": True})
def _mark_impl(marks, v):
    if marks.dtype == types.uint8:
        return lambda marks, v: _set_byte(marks, v)
    return lambda marks, v: _set_bit(marks, v)


@overload(_unmark, jit_options={"cache": True})
def _unmark_impl(marks, v):
    if marks.dtype == types.uint8:
        return lambda marks, v: _clear_byte(marks, v)
    return lambda marks, v: _clear_word(marks, v)


@overload(_marked, jit_options={"cache": True})
def _marked_impl(marks, w):
    if marks.dtype == types.uint8:
        return lambda marks, w: np.int64(marks[w])
    return lambda marks, w: np.int64((marks[w >> 6] >> np.uint64(w & 63)) & np.uint64(1))


@numba.njit(cache=True, nogil=True, inline="always")
def _set_byte(marks, v):
    marks[v] = 1


@numba.njit(cache=True, nogil=True, inline="always")
def _clear_byte(marks, v):
    marks[v] = 0


@numba.njit(cache=True, nogil=True, inline="always")
def _set_bit(marks, v):
    marks[v >> 6] |= np.uint64(1) << np.uint64(v & 63)


@numba.njit(cache=True, nogil=True, inline="always")
def _clear_word(marks, v):
    marks[v >> 6] = np.uint64(0)


def mark_array(threads: int, num_nodes: int) -> np.ndarray:
    """Zeroed per-thread marks for :func:`triangles_bitmap`: a byte per vertex (uint8
    (threads, N)) up to :data:`BYTE_MARKS_UP_TO` vertices, else a bit (uint64 words): a
    byte is one load to test, a bit keeps a large graph's marks in cache."""
    if num_nodes <= BYTE_MARKS_UP_TO:
        return np.zeros((threads, max(num_nodes, 1)), np.uint8)
    return np.zeros((threads, (num_nodes + 63) >> 6), np.uint64)


#: The most vertices whose marks are bytes (:func:`mark_array`).
BYTE_MARKS_UP_TO = 1 << 22


@numba.njit(nogil=True, inline="always")
def _count_at(node_counts, i, c, alone):
    """``node_counts[i] += c``: plainly when ``alone``, else atomically."""
    if alone:
        node_counts[i] += c
    else:
        atomic_add(node_counts, i, c)


@numba.njit(cache=True, nogil=True)
def triangles_lowest_rows(aptr, aidx, a_lo, bptr, bidx, b_lo, b_hi, order, u0, u1, marks,
                          per_vertex, node_counts, alone):
    """Triangles ``u < v < w`` (in the orientation's order) found from their lowest vertex
    ``u``, for the rows ``u`` in ``[u0, u1)`` of block A (rows numbered from ``a_lo``) and
    ``v`` in block B (rows ``[b_lo, b_hi)``): ``u``'s row is marked in ``marks`` (one
    thread's row of :func:`mark_array`; zero, left zero) and the row of each ``v`` in it is
    probed against the marks, up to the largest marked value (rows ascend): ``sum over u ->
    v of d+(v)`` probes. ``order`` maps a value to its row id (empty: values are row ids).
    ``per_vertex``: each triangle adds 1 to ``node_counts`` (by row id) of its three
    vertices: atomically, or with ``alone`` (this thread the only one counting) plainly.
    Returns the triangles found."""
    by_order = order.shape[0] > 0
    found = 0
    for u in range(u0, u1):
        lo, hi = aptr[u - a_lo], aptr[u - a_lo + 1]
        if hi - lo < 2:
            continue
        top = aidx[lo]
        for k in range(lo, hi):
            x = aidx[k]
            _mark(marks, x)
            if x > top:
                top = x
            if not by_order and b_lo <= x < b_hi:
                prefetch(bptr, x - b_lo)  # the offsets of the rows probed next
        here = 0
        for k in range(lo, hi):
            v = order[aidx[k]] if by_order else aidx[k]
            if v < b_lo or v >= b_hi:
                continue
            if k + 1 < hi:  # the next probed row's first entries, while this one is read
                nxt = order[aidx[k + 1]] if by_order else aidx[k + 1]
                if b_lo <= nxt < b_hi:
                    prefetch(bidx, bptr[nxt - b_lo])
            c = 0
            q0, q1 = bptr[v - b_lo], bptr[v - b_lo + 1]
            if per_vertex:
                for q in range(q0, q1):
                    w = bidx[q]
                    if w > top:
                        break
                    if _marked(marks, w):
                        c += 1
                        _count_at(node_counts, order[w] if by_order else w, 1, alone)
            else:
                for q in range(q0, q1):
                    w = bidx[q]
                    if w > top:
                        break
                    c += _marked(marks, w)
            if per_vertex and c:
                _count_at(node_counts, v, c, alone)
            here += c
        for k in range(lo, hi):
            _unmark(marks, aidx[k])
        if per_vertex and here:
            _count_at(node_counts, u, here, alone)
        found += here
    return found


@numba.njit(cache=True, nogil=True, parallel=True)
def triangles_lowest(aptr, aidx, a_lo, bptr, bidx, b_lo, b_hi, order, tasks, marks, per_vertex,
                     node_counts):
    """:func:`triangles_lowest_rows` over the roots of ``tasks`` in parallel, each thread
    with its row of ``marks``."""
    total = 0
    for t in numba.prange(tasks.shape[0] - 1):
        total += triangles_lowest_rows(aptr, aidx, a_lo, bptr, bidx, b_lo, b_hi, order,
                                       tasks[t], tasks[t + 1], marks[numba.get_thread_id()],
                                       per_vertex, node_counts, False)
    return total


@numba.njit(cache=True, nogil=True)
def probe_work(indptr, indices, middle, out):
    """Per vertex, the entries a triangle kernel reads on its behalf over sorted oriented
    rows (no early stop): from the lowest vertex ``u``, ``d+(u) + sum of d+(v)`` over its
    row; from the middle vertex ``v``, ``d+(v)`` plus, for every row ``u`` holding ``v`` at
    position ``j``, the ``d+(u) - j - 1`` entries after it."""
    n = indptr.shape[0] - 1
    for u in range(n):
        out[u] = indptr[u + 1] - indptr[u]
    for u in range(n):
        lo, hi = indptr[u], indptr[u + 1]
        for k in range(lo, hi):
            v = indices[k]
            if middle:
                out[v] += hi - k - 1
            else:
                out[u] += indptr[v + 1] - indptr[v]


@numba.njit(cache=True, nogil=True)
def inlist_count_rows(aptr, aidx, order, b_lo, b_hi, where, b, u0, u1, counts):
    """For the rows ``u`` in ``[u0, u1)`` of block A, count each entry whose vertex
    (``order[value]``: its row id) lies in block B's rows ``[b_lo, b_hi)`` into
    ``counts[row - b_lo]`` (atomically). ``where`` (one per entry, or empty): the inner
    block of each entry's vertex (:func:`tag_entries`), B being block ``b``: only the
    entries tagged ``b`` are looked up in ``order``."""
    tagged = where.shape[0] > 0
    for u in range(u0, u1):
        for k in range(aptr[u], aptr[u + 1]):
            if tagged and where[k] != b:
                continue
            v = order[aidx[k]]
            if b_lo <= v < b_hi:
                atomic_add(counts, v - b_lo, 1)


@numba.njit(cache=True, nogil=True, parallel=True)
def inlist_count(aptr, aidx, order, b_lo, b_hi, where, b, bounds, counts):
    for t in numba.prange(bounds.shape[0] - 1):
        inlist_count_rows(aptr, aidx, order, b_lo, b_hi, where, b, bounds[t], bounds[t + 1],
                          counts)


@numba.njit(cache=True, nogil=True)
def inlist_fill_rows(aptr, aidx, order, b_lo, b_hi, where, b, u0, u1, cursor, ipos, irow):
    """The in-lists of block B's rows from block A: each entry ``k`` of row ``u`` whose
    vertex is row ``v`` of B is filed under ``v`` (a slot from ``cursor``, atomically) as
    ``ipos = k``, ``irow = u``; ``where`` and ``b`` as in :func:`inlist_count_rows`."""
    tagged = where.shape[0] > 0
    for u in range(u0, u1):
        for k in range(aptr[u], aptr[u + 1]):
            if tagged and where[k] != b:
                continue
            v = order[aidx[k]]
            if b_lo <= v < b_hi:
                slot = atomic_add(cursor, v - b_lo, 1)
                ipos[slot] = k
                irow[slot] = u


@numba.njit(cache=True, nogil=True, parallel=True)
def inlist_fill(aptr, aidx, order, b_lo, b_hi, where, b, bounds, cursor, ipos, irow):
    for t in numba.prange(bounds.shape[0] - 1):
        inlist_fill_rows(aptr, aidx, order, b_lo, b_hi, where, b, bounds[t], bounds[t + 1],
                         cursor, ipos, irow)


@numba.njit(cache=True, nogil=True)
def tag_entries_rows(aptr, aidx, order, starts, where, u0, u1):
    """``where[k]``: the block of ``starts`` (first rows of consecutive blocks, ascending,
    then the end) that holds entry ``k``'s vertex ``order[aidx[k]]``, for the entries of
    rows ``[u0, u1)``."""
    for k in range(aptr[u0], aptr[u1]):
        where[k] = np.searchsorted(starts, order[aidx[k]], side="right") - 1


@numba.njit(cache=True, nogil=True, parallel=True)
def tag_entries(aptr, aidx, order, starts, where, bounds):
    for t in numba.prange(bounds.shape[0] - 1):
        tag_entries_rows(aptr, aidx, order, starts, where, bounds[t], bounds[t + 1])


@numba.njit(cache=True, nogil=True, parallel=True)
def middle_work(aptr, bptr, iptr, ipos, irow, out):
    """Per middle vertex ``v`` of block B: the entries its pass reads, its row plus the rest
    of each in-neighbour's row after ``v``."""
    for v in numba.prange(bptr.shape[0] - 1):
        w = bptr[v + 1] - bptr[v]
        if w:
            for i in range(iptr[v], iptr[v + 1]):
                w += aptr[irow[i] + 1] - ipos[i] - 1
        out[v] = w


#: How many in-neighbours ahead the kernel from the middle vertex prefetches the rest of a
#: row (each in-neighbour's row is a jump elsewhere: a cache miss that the prefetch
#: overlaps with the scans of the rows before it).
MIDDLE_PREFETCH = 4


@numba.njit(cache=True, nogil=True)
def triangles_middle_rows(aptr, aidx, a_lo, bptr, bidx, b_lo, iptr, ipos, irow, iend, order,
                          v0, v1, marks, per_vertex, node_counts, alone):
    """Triangles ``u < v < w`` (in the orientation's order: rows hold the higher vertices,
    as values sorted ascending) found from their middle vertex ``v``, for the rows ``v`` in
    ``[v0, v1)`` of block B: ``v``'s row is marked in ``marks`` (one thread's row of
    :func:`mark_array`; zero, left zero), and for each in-neighbour ``u`` (block A, row
    ``irow``, ``v`` at position ``ipos``) the rest of ``u``'s row, the candidates ``w > v``,
    is probed against the marks, up to the largest marked value. Each triangle is found
    once, at the wedge ``v - u - w`` it closes: ``C(d+(u), 2)`` probes per ``u`` at most.
    ``iend`` (one per in-list entry, or empty): the end of each entry's row, kept beside
    its position (else read from ``aptr``: one more jump per entry). The rest of the row of
    the in-neighbour :data:`MIDDLE_PREFETCH` places ahead (and its end) is prefetched while
    the current one is probed.
    Rows of A and B are numbered from ``a_lo`` and ``b_lo``; ``order`` maps a value to its
    row id (empty: values are row ids). ``per_vertex``: each triangle adds 1 to
    ``node_counts`` (by row id) of its three vertices: atomically per triangle, or with
    ``alone`` (this thread the only one counting) plainly at every probe, the mark's 0 or
    1 (a branch per probe mispredicts about as often as a wedge closes). Returns the
    triangles found."""
    ends = iend.shape[0] > 0
    by_order = order.shape[0] > 0
    found = 0
    for v in range(v0, v1):
        lo, hi = bptr[v], bptr[v + 1]
        i0, i1 = iptr[v], iptr[v + 1]
        if hi == lo or i0 == i1:
            continue
        top = bidx[hi - 1]
        for k in range(lo, hi):
            _mark(marks, bidx[k])
        here = 0
        for i in range(i0, i1):
            if i + MIDDLE_PREFETCH < i1:  # a later in-neighbour's rest (and its row end)
                prefetch(aidx, ipos[i + MIDDLE_PREFETCH] + 1)
                if not ends:
                    prefetch(aptr, irow[i + MIDDLE_PREFETCH] + 1)
            end = iend[i] if ends else aptr[irow[i] + 1]
            c = 0
            if not per_vertex:
                for q in range(ipos[i] + 1, end):
                    w = aidx[q]
                    if w > top:
                        break
                    c += _marked(marks, w)
            elif alone:  # every probe adds its mark, 0 or 1: no branch to mispredict
                for q in range(ipos[i] + 1, end):
                    w = aidx[q]
                    if w > top:
                        break
                    m = _marked(marks, w)
                    c += m
                    node_counts[order[w] if by_order else w] += m
            else:
                for q in range(ipos[i] + 1, end):
                    w = aidx[q]
                    if w > top:
                        break
                    if _marked(marks, w):
                        c += 1
                        atomic_add(node_counts, order[w] if by_order else w, 1)
            if per_vertex and c:
                _count_at(node_counts, a_lo + irow[i], c, alone)
            here += c
        for k in range(lo, hi):
            _unmark(marks, bidx[k])
        if per_vertex and here:
            _count_at(node_counts, b_lo + v, here, alone)
        found += here
    return found


@numba.njit(cache=True, nogil=True, parallel=True)
def triangles_middle(aptr, aidx, a_lo, bptr, bidx, b_lo, iptr, ipos, irow, iend, order, tasks,
                     marks, per_vertex, node_counts):
    """:func:`triangles_middle_rows` over the middle vertices of ``tasks`` (rows of B) in
    parallel, each thread with its row of ``marks``."""
    total = 0
    for t in numba.prange(tasks.shape[0] - 1):
        total += triangles_middle_rows(aptr, aidx, a_lo, bptr, bidx, b_lo, iptr, ipos, irow,
                                       iend, order, tasks[t], tasks[t + 1],
                                       marks[numba.get_thread_id()], per_vertex, node_counts,
                                       False)
    return total


@numba.njit(cache=True, nogil=True, parallel=True)
def triangles_merge(indptr, indices, tasks, edge_counts, node_counts, codes, dirs):
    """Triangles by merging sorted rows: for each DAG edge ``u -> v`` (row ``u``, position
    ``k``), row ``u`` after ``k`` merged with row ``v``. Counts each triangle in
    ``edge_counts`` at its three DAG positions and in ``node_counts`` at its three vertices
    (atomically; either may be empty), and, when ``dirs`` is not empty, in ``codes``
    (int64 (threads, 64)) at its direction code ``b_uv | b_uw << 2 | b_vw << 4``. Returns
    the triangles found."""
    per_edge = edge_counts.shape[0] > 0
    per_vertex = node_counts.shape[0] > 0
    coded = dirs.shape[0] > 0
    total = 0
    for t in numba.prange(tasks.shape[0] - 1):
        tid = numba.get_thread_id()
        found = 0
        for u in range(tasks[t], tasks[t + 1]):
            hi = indptr[u + 1]
            for k in range(indptr[u], hi):
                v = indices[k]
                p = k + 1
                q = indptr[v]
                qe = indptr[v + 1]
                c = 0
                while p < hi and q < qe:
                    a = indices[p]
                    b = indices[q]
                    if a < b:
                        p += 1
                    elif b < a:
                        q += 1
                    else:
                        c += 1
                        if per_edge:
                            atomic_add(edge_counts, p, 1)
                            atomic_add(edge_counts, q, 1)
                        if per_vertex:
                            atomic_add(node_counts, a, 1)
                        if coded:
                            codes[tid, dirs[k] | (dirs[p] << 2) | (dirs[q] << 4)] += 1
                        p += 1
                        q += 1
                if c:
                    if per_edge:
                        atomic_add(edge_counts, k, c)
                    if per_vertex:
                        atomic_add(node_counts, u, c)
                        atomic_add(node_counts, v, c)
                    found += c
        total += found
    return total


@numba.njit(cache=True, nogil=True)
def direction_counts(indptr, indices, dirs, out):
    """Per vertex, how many of its neighbours it only sends to (``out[:, 0]``), only
    receives from (``out[:, 1]``), and both (``out[:, 2]``); ``dirs`` as
    :attr:`~graphsys.views.orient.Oriented.dirs`."""
    for u in range(indptr.shape[0] - 1):
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            b = dirs[k]
            if b == 3:
                out[u, 2] += 1
                out[v, 2] += 1
            elif b == 1:
                out[u, 0] += 1
                out[v, 1] += 1
            else:
                out[u, 1] += 1
                out[v, 0] += 1
