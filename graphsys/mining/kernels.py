"""Numba kernels of pattern mining over oriented rows (:mod:`graphsys.mining.oriented`).

Every kernel loops ``prange`` over *tasks* (contiguous ranges of roots of about equal work,
:func:`graphsys.mining.parallel.tasks_by_work`) and finds each subgraph once, from its
lowest-ranked vertex. Rows are sorted; two rows intersect either by a bitmap probe (the
root's row marked in a per-thread bitset of N bits, each row of a neighbour probed against
it) or by a merge (which also yields the positions of the entries matched, for per-edge
counts). Shared per-vertex or per-edge counters are added atomically
(:func:`graphsys.mining._atomic.atomic_add`); per-thread scratch is a row of an array
indexed by ``numba.get_thread_id()``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from graphsys.mining._atomic import atomic_add

# ---------------------------------------------------------------------------------------------
# triangles


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


@numba.njit(cache=True, nogil=True)
def triangles_lowest_rows(aptr, aidx, a_lo, bptr, bidx, b_lo, b_hi, order, u0, u1, marks,
                          per_vertex, node_counts):
    """Triangles ``u < v < w`` (in the orientation's order) found from their lowest vertex
    ``u``, for the rows ``u`` in ``[u0, u1)`` of block A (rows numbered from ``a_lo``) and
    ``v`` in block B (rows ``[b_lo, b_hi)``): ``u``'s row is marked in ``marks`` (one
    thread's row of :func:`mark_array`; zero, left zero) and the row of each ``v`` in it is
    probed against the marks, up to the largest marked value (rows ascend): ``sum over u ->
    v of d+(v)`` probes. ``order`` maps a value to its row id (empty: values are row ids).
    ``per_vertex``: each triangle adds 1 to ``node_counts`` (by row id) of its three
    vertices (atomically). Returns the triangles found."""
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
        here = 0
        for k in range(lo, hi):
            v = order[aidx[k]] if by_order else aidx[k]
            if v < b_lo or v >= b_hi:
                continue
            c = 0
            q0, q1 = bptr[v - b_lo], bptr[v - b_lo + 1]
            if per_vertex:
                for q in range(q0, q1):
                    w = bidx[q]
                    if w > top:
                        break
                    if _marked(marks, w):
                        c += 1
                        atomic_add(node_counts, order[w] if by_order else w, 1)
                if c:
                    atomic_add(node_counts, v, c)
            else:
                for q in range(q0, q1):
                    w = bidx[q]
                    if w > top:
                        break
                    c += _marked(marks, w)
            here += c
        for k in range(lo, hi):
            _unmark(marks, aidx[k])
        if per_vertex and here:
            atomic_add(node_counts, u, here)
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
                                       per_vertex, node_counts)
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
def inlist_count_rows(aptr, aidx, order, b_lo, b_hi, u0, u1, counts):
    """For the rows ``u`` in ``[u0, u1)`` of block A, count each entry whose vertex
    (``order[value]``: its row id) lies in block B's rows ``[b_lo, b_hi)`` into
    ``counts[row - b_lo]`` (atomically)."""
    for u in range(u0, u1):
        for k in range(aptr[u], aptr[u + 1]):
            v = order[aidx[k]]
            if b_lo <= v < b_hi:
                atomic_add(counts, v - b_lo, 1)


@numba.njit(cache=True, nogil=True, parallel=True)
def inlist_count(aptr, aidx, order, b_lo, b_hi, bounds, counts):
    for t in numba.prange(bounds.shape[0] - 1):
        inlist_count_rows(aptr, aidx, order, b_lo, b_hi, bounds[t], bounds[t + 1], counts)


@numba.njit(cache=True, nogil=True)
def inlist_fill_rows(aptr, aidx, order, b_lo, b_hi, u0, u1, cursor, ipos, irow):
    """The in-lists of block B's rows from block A: each entry ``k`` of row ``u`` whose
    vertex is row ``v`` of B is filed under ``v`` (a slot from ``cursor``, atomically) as
    ``ipos = k``, ``irow = u``."""
    for u in range(u0, u1):
        for k in range(aptr[u], aptr[u + 1]):
            v = order[aidx[k]]
            if b_lo <= v < b_hi:
                slot = atomic_add(cursor, v - b_lo, 1)
                ipos[slot] = k
                irow[slot] = u


@numba.njit(cache=True, nogil=True, parallel=True)
def inlist_fill(aptr, aidx, order, b_lo, b_hi, bounds, cursor, ipos, irow):
    for t in numba.prange(bounds.shape[0] - 1):
        inlist_fill_rows(aptr, aidx, order, b_lo, b_hi, bounds[t], bounds[t + 1], cursor,
                         ipos, irow)


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


@numba.njit(cache=True, nogil=True)
def triangles_middle_rows(aptr, aidx, a_lo, bptr, bidx, b_lo, iptr, ipos, irow, order, v0, v1,
                          marks, per_vertex, node_counts):
    """Triangles ``u < v < w`` (in the orientation's order: rows hold the higher vertices,
    as values sorted ascending) found from their middle vertex ``v``, for the rows ``v`` in
    ``[v0, v1)`` of block B: ``v``'s row is marked in ``marks`` (one thread's row of
    :func:`mark_array`; zero, left zero), and for each in-neighbour ``u`` (block A, row
    ``irow``, ``v`` at position ``ipos``) the rest of ``u``'s row, the candidates ``w > v``,
    is probed against the marks, up to the largest marked value. Each triangle is found
    once, at the wedge ``v - u - w`` it closes: ``C(d+(u), 2)`` probes per ``u`` at most.
    Rows of A and B are numbered from ``a_lo`` and ``b_lo``; ``order`` maps a value to its
    row id. ``per_vertex``: each triangle adds 1 to ``node_counts`` (by row id) of its three
    vertices (atomically). Returns the triangles found."""
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
            end = aptr[irow[i] + 1]
            c = 0
            if per_vertex:
                for q in range(ipos[i] + 1, end):
                    w = aidx[q]
                    if w > top:
                        break
                    if _marked(marks, w):
                        c += 1
                        atomic_add(node_counts, order[w], 1)
                if c:
                    atomic_add(node_counts, a_lo + irow[i], c)
            else:
                for q in range(ipos[i] + 1, end):
                    w = aidx[q]
                    if w > top:
                        break
                    c += _marked(marks, w)
            here += c
        for k in range(lo, hi):
            _unmark(marks, bidx[k])
        if per_vertex and here:
            atomic_add(node_counts, b_lo + v, here)
        found += here
    return found


@numba.njit(cache=True, nogil=True, parallel=True)
def triangles_middle(aptr, aidx, a_lo, bptr, bidx, b_lo, iptr, ipos, irow, order, tasks, marks,
                     per_vertex, node_counts):
    """:func:`triangles_middle_rows` over the middle vertices of ``tasks`` (rows of B) in
    parallel, each thread with its row of ``marks``."""
    total = 0
    for t in numba.prange(tasks.shape[0] - 1):
        total += triangles_middle_rows(aptr, aidx, a_lo, bptr, bidx, b_lo, iptr, ipos, irow,
                                       order, tasks[t], tasks[t + 1],
                                       marks[numba.get_thread_id()], per_vertex, node_counts)
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
                            code = dirs[k] | (dirs[p] << 2) | (dirs[q] << 4)
                            codes[tid, code] += 1
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


# ---------------------------------------------------------------------------------------------
# cliques (kClist on the out-neighbourhood of each root, as bitsets)


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
    no_out = np.zeros((0, k), np.int64)
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


# ---------------------------------------------------------------------------------------------
# 4-cycles (Chiba-Nishizeki wedge counting on the symmetric rows)


@numba.njit(cache=True, nogil=True, parallel=True)
def four_cycles(ptr, idx, tasks, roots, scratch, touched, per_root):
    """4-cycles, each counted once from its highest vertex ``u``: the wedges ``u - v - w``
    with ``v, w < u`` are tallied per ``w`` in the thread's ``scratch`` (int32 (threads, N),
    zero), and ``C(count, 2)`` pairs of them close a cycle. ``ptr``/``idx``: symmetric rows,
    ascending; ``roots`` as :func:`cliques`. ``per_root`` (int64 (N,) or empty): each root's
    cycles. Returns the total."""
    total = 0
    for t in numba.prange(tasks.shape[0] - 1):
        tid = numba.get_thread_id()
        cnt = scratch[tid]
        seen = touched[tid]
        found = 0
        for i in range(tasks[t], tasks[t + 1]):
            u = roots[i] if roots.shape[0] > 0 else i
            m = 0
            for k in range(ptr[u], ptr[u + 1]):
                v = idx[k]
                if v >= u:
                    break
                for q in range(ptr[v], ptr[v + 1]):
                    w = idx[q]
                    if w >= u:
                        break
                    if cnt[w] == 0:
                        seen[m] = w
                        m += 1
                    cnt[w] += 1
            c = 0
            for s in range(m):
                w = seen[s]
                x = np.int64(cnt[w])
                c += x * (x - 1) // 2
                cnt[w] = 0
            if per_root.shape[0] > 0:
                per_root[u] = c
            found += c
        total += found
    return total


@numba.njit(cache=True, nogil=True, parallel=True)
def lower_wedge_work(ptr, idx, out):
    """Per root ``u``: the wedges :func:`four_cycles` walks, bounded by the lengths of the
    rows of ``u``'s lower neighbours."""
    for u in numba.prange(ptr.shape[0] - 1):
        w = ptr[u + 1] - ptr[u]
        for k in range(ptr[u], ptr[u + 1]):
            v = idx[k]
            if v >= u:
                break
            w += ptr[v + 1] - ptr[v]
        out[u] = w


@numba.njit(cache=True, nogil=True)
def direction_counts(indptr, indices, dirs, out):
    """Per vertex, how many of its neighbours it only sends to (``out[:, 0]``), only
    receives from (``out[:, 1]``), and both (``out[:, 2]``); ``dirs`` as
    :attr:`~graphsys.mining.oriented.Oriented.dirs`."""
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


# ---------------------------------------------------------------------------------------------
# user patterns: depth-first matching along a plan, with symmetry breaking


@numba.njit(cache=True, nogil=True)
def _contains(idx, lo, hi, x):
    """Whether the sorted ``idx[lo:hi]`` holds ``x`` (binary search)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        y = idx[mid]
        if y < x:
            lo = mid + 1
        elif y > x:
            hi = mid
        else:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _lower_bound(idx, lo, hi, x):
    while lo < hi:
        mid = (lo + hi) >> 1
        if idx[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def _match_root(ptr, idx, labels, r, adj, nonadj, greater, less, plabel, cand, ncand, pos,
                m, out, out_count, limit):
    """Matches of the plan with level 0 mapped to root ``r``. ``adj[i, j]``: level ``i``'s
    vertex must be adjacent to level ``j``'s (``j < i``), ``nonadj`` must not be (induced
    matching), ``greater``/``less``: its id must be above/below level ``j``'s (symmetry
    breaking); ``plabel[i]``: its label (-1: any). Candidates of level ``i`` are the
    neighbours of its first adjacent earlier level, filtered. Writes up to ``limit``
    matches into ``out`` (levels' ids; ``out`` empty: count only). Returns the count."""
    k = adj.shape[0]
    has_labels = labels.shape[0] > 0
    listing = out.shape[0] > 0
    if has_labels and plabel[0] >= 0 and labels[r] != plabel[0]:
        return 0
    m[0] = r
    if k == 1:
        if listing:
            slot = out_count[0]
            if slot < limit:
                out[slot, 0] = r
            out_count[0] = slot + 1
        return 1
    total = 0
    level = 1
    ncand[1] = -1
    while level >= 1:
        if ncand[level] < 0:  # fill the candidates of this level
            anchor = -1
            best = 1 << 62
            for j in range(level):
                if adj[level, j]:
                    x = m[j]
                    dlen = ptr[x + 1] - ptr[x]
                    if dlen < best:
                        best = dlen
                        anchor = j
            x = m[anchor]
            lo_id = -1
            hi_id = 1 << 62
            for j in range(level):
                if greater[level, j] and m[j] > lo_id:
                    lo_id = m[j]
                if less[level, j] and m[j] < hi_id:
                    hi_id = m[j]
            start = _lower_bound(idx, ptr[x], ptr[x + 1], lo_id + 1)
            c = 0
            for q in range(start, ptr[x + 1]):
                y = idx[q]
                if y >= hi_id:
                    break
                ok = True
                if has_labels and plabel[level] >= 0 and labels[y] != plabel[level]:
                    ok = False
                j = 0
                while ok and j < level:
                    if m[j] == y:
                        ok = False
                    elif adj[level, j] and j != anchor:
                        z = m[j]
                        if not _contains(idx, ptr[z], ptr[z + 1], y):
                            ok = False
                    elif nonadj[level, j]:
                        z = m[j]
                        if _contains(idx, ptr[z], ptr[z + 1], y):
                            ok = False
                    j += 1
                if ok:
                    cand[level, c] = y
                    c += 1
            ncand[level] = c
            pos[level] = 0
            if level == k - 1:  # the last level: every candidate is a match
                if listing:
                    for s in range(c):
                        slot = out_count[0]
                        if slot >= limit:
                            return total
                        for j in range(level):
                            out[slot, j] = m[j]
                        out[slot, level] = cand[level, s]
                        out_count[0] = slot + 1
                total += c
                level -= 1
                continue
        if pos[level] >= ncand[level]:
            level -= 1
            continue
        m[level] = cand[level, pos[level]]
        pos[level] += 1
        level += 1
        ncand[level] = -1
    return total


@numba.njit(cache=True, nogil=True, parallel=True)
def match_count(ptr, idx, labels, tasks, adj, nonadj, greater, less, plabel, max_row,
                per_root):
    """The matches of a plan (see :func:`_match_root`) over every root of ``tasks``
    (``per_root``: each root's count, or empty). Returns the total."""
    k = adj.shape[0]
    total = 0
    no_out = np.zeros((0, k), np.int64)
    for t in numba.prange(tasks.shape[0] - 1):
        cand = np.empty((k, max(max_row, 1)), np.int64)
        ncand = np.empty(k, np.int64)
        pos = np.empty(k, np.int64)
        m = np.empty(k, np.int64)
        one = np.zeros(1, np.int64)
        found = 0
        for r in range(tasks[t], tasks[t + 1]):
            c = _match_root(ptr, idx, labels, r, adj, nonadj, greater, less, plabel, cand,
                            ncand, pos, m, no_out, one, 0)
            if per_root.shape[0] > 0:
                per_root[r] = c
            found += c
        total += found
    return total


@numba.njit(cache=True, nogil=True)
def match_list(ptr, idx, labels, adj, nonadj, greater, less, plabel, max_row, limit, out):
    """The first ``limit`` matches of a plan in root order (then depth-first order) as rows
    of ``out`` (int64 (limit, k), one id per level). Returns how many were written."""
    k = adj.shape[0]
    cand = np.empty((k, max(max_row, 1)), np.int64)
    ncand = np.empty(k, np.int64)
    pos = np.empty(k, np.int64)
    m = np.empty(k, np.int64)
    count = np.zeros(1, np.int64)
    for r in range(ptr.shape[0] - 1):
        _match_root(ptr, idx, labels, r, adj, nonadj, greater, less, plabel, cand, ncand, pos,
                    m, out, count, limit)
        if count[0] >= limit:
            return limit
    return count[0]


# ---------------------------------------------------------------------------------------------
# sampled 4-node motifs


@numba.njit(cache=True, nogil=True)
def _common(idx, a_lo, a_hi, b_lo, b_hi, out):
    """The common entries of two sorted rows into ``out`` (ascending); returns how many.
    The shorter row is searched for in the longer one (binary searches) when it is much
    shorter, else the two are merged: ``O(min(da, db) log max(da, db))`` at worst."""
    if a_hi - a_lo > b_hi - b_lo:
        a_lo, a_hi, b_lo, b_hi = b_lo, b_hi, a_lo, a_hi
    m = 0
    if (a_hi - a_lo) * 16 < b_hi - b_lo:
        lo = b_lo
        for p in range(a_lo, a_hi):
            x = idx[p]
            lo = _lower_bound(idx, lo, b_hi, x)
            if lo == b_hi:
                break
            if idx[lo] == x:
                if out.shape[0] > 0:
                    out[m] = x
                m += 1
        return m
    while a_lo < a_hi and b_lo < b_hi:
        x = idx[a_lo]
        y = idx[b_lo]
        if x < y:
            a_lo += 1
        elif y < x:
            b_lo += 1
        else:
            if out.shape[0] > 0:
                out[m] = x
            m += 1
            a_lo += 1
            b_lo += 1
    return m


@numba.njit(cache=True, nogil=True, parallel=True)
def sample_wedges(ptr, idx, cum, draws, out):
    """For each draw (3 uniforms in ``[0, 1)``), a wedge ``a - c - b`` uniformly at random
    (its centre ``c`` with probability ``C(d(c), 2) / W`` by ``cum``, the prefix sums of
    ``C(d, 2)``; two distinct neighbours of it), and ``out[s]``: the common neighbours of
    ``a`` and ``b`` besides ``c`` (the wedges closing a 4-cycle with it)."""
    total = cum[cum.shape[0] - 1]
    none = np.zeros(0, idx.dtype)
    for s in numba.prange(draws.shape[0]):
        c = np.searchsorted(cum, draws[s, 0] * total, side="right")
        d = ptr[c + 1] - ptr[c]
        i = np.int64(draws[s, 1] * d)
        j = np.int64(draws[s, 2] * (d - 1))
        if j >= i:
            j += 1
        a = idx[ptr[c] + i]
        b = idx[ptr[c] + j]
        out[s] = _common(idx, ptr[a], ptr[a + 1], ptr[b], ptr[b + 1], none) - 1


@numba.njit(cache=True, nogil=True, parallel=True)
def sample_diamonds(dptr, didx, ptr, idx, cum, draws, out):
    """For each draw (3 uniforms in ``[0, 1)``), a DAG edge ``u -> v`` with probability
    ``C(T(e), 2) / D`` by ``cum`` (prefix sums of ``C(T(e), 2)`` over DAG positions), then
    a pair of its common neighbours uniformly; ``out[s]``: 1 when the pair is adjacent
    (it closes a 4-clique on the edge), else 0."""
    total = cum[cum.shape[0] - 1]
    for s in numba.prange(draws.shape[0]):
        e = np.searchsorted(cum, draws[s, 0] * total, side="right")
        u = np.searchsorted(dptr, e, side="right") - 1
        v = didx[e]
        common = np.empty(min(ptr[u + 1] - ptr[u], ptr[v + 1] - ptr[v]), idx.dtype)
        m = _common(idx, ptr[u], ptr[u + 1], ptr[v], ptr[v + 1], common)
        i = np.int64(draws[s, 1] * m)
        j = np.int64(draws[s, 2] * (m - 1))
        if j >= i:
            j += 1
        x = common[i]
        y = common[j]
        out[s] = 1.0 if _contains(idx, ptr[x], ptr[x + 1], y) else 0.0
