"""Numba kernels of the BSP edge phase (CPU): pull over an adjacency, push from a sparse
frontier, and a streaming pass over one bucket's edge list.

Operation codes (shared with :mod:`graphsys.bsp.program`):

* message ``msg``: 0 = ``copy`` (``x[u]``), 1 = ``add_weight`` (``x[u] + w``),
  2 = ``mul_weight`` (``x[u] * w``);
* combiner ``comb``: 0 = ``sum``, 1 = ``min``, 2 = ``max``.

Every kernel combines into ``acc`` float64 (N,) (pre-filled with the combiner's identity) and
marks ``received`` uint8 (N,) for each target that got at least one message. ``x`` is the
float64 (N,) value each source sends; ``active`` uint8 (N,) the sending frontier (ignored when
``use_active`` is False); ``accept`` uint8 (N,) Ligra's ``cond(d)``, the targets that may still
take messages (ignored when ``use_accept`` is False); ``weight`` float32 (E,) or empty.
The ``*_rows`` kernels are the same passes for vector programs: ``x``/``acc`` float64
(N, d), one message per edge and column.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.prefetch import PREFETCH_EDGES, prefetch
from graphsys.storage.kernels import gather  # noqa: F401 (the one gather kernel)

MSG_COPY, MSG_ADD_WEIGHT, MSG_MUL_WEIGHT = 0, 1, 2
COMB_SUM, COMB_MIN, COMB_MAX = 0, 1, 2
#: Vertex passes over fewer items than this run on one thread: below it, waking numba's
#: thread pool (passive after a short spin: :mod:`graphsys.openmp`) costs more than the
#: work it shares.
PARALLEL_MIN_ITEMS = 1 << 18


@numba.njit(inline="always")
def _msg(op, xv, weight, e):
    if op == MSG_COPY:
        return xv
    if op == MSG_ADD_WEIGHT:
        return xv + weight[e]
    return xv * weight[e]


@numba.njit(inline="always")
def _comb(op, a, b):
    if op == COMB_SUM:
        return a + b
    if op == COMB_MIN:
        return min(a, b)
    return max(a, b)


@numba.njit(parallel=True, cache=True, nogil=True)
def pull(indptr, indices, weight, x, active, use_active, accept, use_accept, msg, comb,
         first_wins, acc, received):
    """Dense pull: for every target ``v`` (parallel over ``v``), combine the messages of its
    sources ``indices[indptr[v]:indptr[v+1]]``. ``first_wins`` stops a row at its first
    message (valid when all messages of a superstep are equal, e.g. BFS levels).

    Returns (edges scanned, messages) as int64."""
    n = indptr.shape[0] - 1
    scanned = 0  # scalar reductions: one parfor (arrays and their sums would be three)
    sent = 0
    for v in numba.prange(n):
        if use_accept and accept[v] == 0:
            continue
        a = acc[v]
        got = received[v]
        k = 0
        m = 0
        for e in range(indptr[v], indptr[v + 1]):
            k += 1
            u = indices[e]
            if use_active and active[u] == 0:
                continue
            a = _comb(comb, a, _msg(msg, x[u], weight, e))
            m += 1
            got = 1
            if first_wins:
                break
        acc[v] = a
        received[v] = got
        scanned += k
        sent += m
    return scanned, sent


@numba.njit(inline="always")
def _row_sum(indptr, indices, x, acc, received, r):
    # every index unsigned: numba tests each signed one for a negative value (a prange
    # chunk starts at a variable row), a branch per edge in the innermost loop
    v = np.uint64(r)
    s = 0.0
    lo = indptr[v]
    hi = indptr[v + np.uint64(1)]
    for e in range(lo, hi):
        s += x[np.uint64(indices[np.uint64(e)])]
    acc[v] += s
    if hi > lo:
        received[v] = 1


@numba.njit(parallel=True, cache=True, nogil=True)
def pull_copy_sum(indptr, indices, x, acc, received):
    """The all-active ``copy``/``sum`` pull (PageRank's sparse mat-vec) without the
    per-edge frontier and operation checks of :func:`pull`; parallel over targets from
    :data:`PARALLEL_MIN_ITEMS` of them. Returns edges scanned."""
    n = indptr.shape[0] - 1
    if n < PARALLEL_MIN_ITEMS:
        for v in range(n):
            _row_sum(indptr, indices, x, acc, received, v)
    else:
        for v in numba.prange(n):
            _row_sum(indptr, indices, x, acc, received, v)
    return indptr[n] - indptr[0]


@numba.njit(cache=True, nogil=True)
def push(indptr, indices, weight, x, frontier, accept, use_accept, msg, comb, acc, received):
    """Sparse push: for every source ``u`` in ``frontier`` (int64 ids), combine its message
    into each out-neighbour. Sequential (a sparse frontier is small by construction).

    Returns (edges scanned, messages) as int64."""
    scanned = 0
    sent = 0
    for k in range(frontier.shape[0]):
        u = frontier[k]
        xv = x[u]
        for e in range(indptr[u], indptr[u + 1]):
            scanned += 1
            v = indices[e]
            if use_accept and accept[v] == 0:
                continue
            acc[v] = _comb(comb, acc[v], _msg(msg, xv, weight, e))
            received[v] = 1
            sent += 1
    return scanned, sent


@numba.njit(cache=True, nogil=True)
def stream(src, dst, weight, x, active, use_active, msg, comb, acc, received):
    """One edge list (a bucket's record batch): messages flow ``src -> dst`` (swap the
    arguments for reverse messages), both int32 local offsets; ``x``/``active`` start at
    the source partition's first vertex, ``acc``/``received`` at the target partition's
    (the caller slices them). Sequential and GIL-free, so threads can run buckets of
    different target partitions side by side. Offsets index as unsigned (they are never
    negative), which spares numba's negative-index test on every access.

    Returns the number of messages (int64)."""
    sent = 0
    for e in range(src.shape[0]):
        u = np.uint32(src[e])
        if use_active and active[u] == 0:
            continue
        v = np.uint32(dst[e])
        acc[v] = _comb(comb, acc[v], _msg(msg, x[u], weight, e))
        received[v] = 1
        sent += 1
    return sent


@numba.njit(cache=True, nogil=True)
def stream_copy_sum(src, dst, x, acc, received, mark):
    """:func:`stream` for the all-active ``copy``/``sum`` pass (PageRank) without the
    frontier and operation tests. ``x`` and ``acc`` float64, or float32 (a
    ``sum_dtype="float32"`` program: half the cache footprint of the random ``acc``
    updates). ``received`` is written only when ``mark`` (the targets of an all-active pass
    are the same every superstep, so the caller marks them once and keeps them). The
    target row :data:`PREFETCH_EDGES` edges ahead is prefetched. Returns the number of
    messages (int64)."""
    m = src.shape[0]
    for e in range(m):
        if e + PREFETCH_EDGES < m:
            prefetch(acc, np.uint32(dst[e + PREFETCH_EDGES]))
        v = np.uint32(dst[e])
        acc[v] += x[np.uint32(src[e])]
        if mark:
            received[v] = 1
    return m


@numba.njit(inline="always")
def _pull_row(indptr, indices, weight, x, active, use_active, msg, comb, acc, received, v):
    """Combine the rows of ``v``'s sources into ``acc[v]``; returns the messages."""
    m = 0
    for e in range(indptr[v], indptr[v + 1]):
        u = np.uint64(indices[e])  # unsigned: no negative-index test
        if use_active and active[u] == 0:
            continue
        for c in range(x.shape[1]):
            acc[v, c] = _comb(comb, acc[v, c], _msg(msg, x[u, c], weight, e))
        m += 1
    if m:
        received[v] = 1
    return m


@numba.njit(parallel=True, cache=True, nogil=True)
def pull_rows(indptr, indices, weight, x, active, use_active, accept, use_accept, msg, comb,
              acc, received):
    """:func:`pull` for vector programs: ``x`` and ``acc`` float64 (N, d), every column
    messaged and combined on its own; parallel over targets from
    :data:`PARALLEL_MIN_ITEMS` of them. Returns (edges scanned, messages) as int64."""
    n = indptr.shape[0] - 1
    scanned = 0
    sent = 0
    if n < PARALLEL_MIN_ITEMS:
        for v in range(n):
            if not use_accept or accept[v] != 0:
                scanned += indptr[v + 1] - indptr[v]
                sent += _pull_row(indptr, indices, weight, x, active, use_active, msg, comb,
                                  acc, received, v)
    else:
        for v in numba.prange(n):
            if not use_accept or accept[v] != 0:
                scanned += indptr[v + 1] - indptr[v]
                sent += _pull_row(indptr, indices, weight, x, active, use_active, msg, comb,
                                  acc, received, v)
    return scanned, sent


@numba.njit(inline="always")
def _row_sum_rows(indptr, indices, x, acc, received, v):
    lo = indptr[v]
    hi = indptr[v + 1]
    for e in range(lo, hi):
        u = np.uint64(indices[e])
        for c in range(x.shape[1]):
            acc[v, c] += x[u, c]
    if hi > lo:
        received[v] = 1


@numba.njit(parallel=True, cache=True, nogil=True)
def pull_copy_sum_rows(indptr, indices, x, acc, received):
    """:func:`pull_copy_sum` for vector programs (``x``, ``acc`` float64 (N, d)): the
    all-active copy/sum pull without frontier and operation tests. Returns edges scanned."""
    n = indptr.shape[0] - 1
    if n < PARALLEL_MIN_ITEMS:
        for v in range(n):
            _row_sum_rows(indptr, indices, x, acc, received, v)
    else:
        for v in numba.prange(n):
            _row_sum_rows(indptr, indices, x, acc, received, v)
    return indptr[n] - indptr[0]


@numba.njit(cache=True, nogil=True)
def push_rows(indptr, indices, weight, x, frontier, accept, use_accept, msg, comb, acc,
              received):
    """:func:`push` for vector programs (``x``, ``acc`` float64 (N, d)). Returns (edges
    scanned, messages) as int64."""
    scanned = 0
    sent = 0
    for k in range(frontier.shape[0]):
        u = frontier[k]
        for e in range(indptr[u], indptr[u + 1]):
            scanned += 1
            v = indices[e]
            if use_accept and accept[v] == 0:
                continue
            for c in range(x.shape[1]):
                acc[v, c] = _comb(comb, acc[v, c], _msg(msg, x[u, c], weight, e))
            received[v] = 1
            sent += 1
    return scanned, sent


@numba.njit(cache=True, nogil=True)
def stream_rows(src, dst, weight, x, active, use_active, msg, comb, acc, received):
    """:func:`stream` for vector programs (``x``, ``acc`` float64 (rows, d), sliced at the
    partitions' first vertices by the caller). Returns the number of messages (int64)."""
    sent = 0
    for e in range(src.shape[0]):
        u = np.uint32(src[e])
        if use_active and active[u] == 0:
            continue
        v = np.uint32(dst[e])
        for c in range(x.shape[1]):
            acc[v, c] = _comb(comb, acc[v, c], _msg(msg, x[u, c], weight, e))
        received[v] = 1
        sent += 1
    return sent


@numba.njit(cache=True, nogil=True)
def stream_copy_sum_rows(src, dst, x, acc, received, mark):
    """:func:`stream_copy_sum` for vector programs (``x``, ``acc`` float64 (rows, d),
    C-contiguous): the same ``mark`` and the same prefetch of the target row. Returns the
    number of messages (int64)."""
    m = src.shape[0]
    d = x.shape[1]
    flat = acc.reshape(acc.size)  # the prefetch addresses rows of the flat view
    for e in range(m):
        if e + PREFETCH_EDGES < m:
            prefetch(flat, np.uint32(dst[e + PREFETCH_EDGES]) * d)
        u = np.uint32(src[e])
        v = np.uint32(dst[e])
        for c in range(d):
            acc[v, c] += x[u, c]
        if mark:
            received[v] = 1
    return m


@numba.njit(parallel=True, cache=True)
def frontier_degree(indptr, frontier):
    """Sum of ``indptr[u+1] - indptr[u]`` over ``frontier`` (int64 ids): Ligra's outdeg(F)."""
    total = 0
    for k in numba.prange(frontier.shape[0]):
        u = frontier[k]
        total += indptr[u + 1] - indptr[u]
    return total


@numba.njit(cache=True, nogil=True)
def _relax_pass(indptr, indices, weight, use_weight, first_wins, frontier, sent_value,
                value, stamp, recv, improved, nxt, count):
    """Push ``sent_value[k]`` (+ ``weight[e]``) from ``frontier[k]`` along one adjacency,
    lowering ``value``; appends first-time-improved targets to ``nxt`` from ``count``.
    Returns (new count, edges scanned, receivers): distinct receivers, or for
    ``first_wins`` programs (BFS) the receivers that accept the message, i.e. that it
    improves, as the engine loop counts them (so no receiver stamp is written per edge)."""
    scanned = 0
    combined = 0
    for k in range(frontier.shape[0]):
        u = frontier[k]
        xv = sent_value[k]
        scanned += indptr[u + 1] - indptr[u]
        for e in range(indptr[u], indptr[u + 1]):
            v = np.uint64(indices[e])  # unsigned: no negative-index test
            m = xv + weight[e] if use_weight else xv
            if not first_wins and recv[v] != stamp:
                recv[v] = stamp
                combined += 1
            if m < value[v]:
                value[v] = m
                if improved[v] != stamp:
                    improved[v] = stamp
                    nxt[count] = v
                    count += 1
                    if first_wins:
                        combined += 1
    return count, scanned, combined


@numba.njit(parallel=True, cache=True, nogil=True)
def _relax_pull(indptr_a, indices_a, weight_a, indptr_b, indices_b, weight_b, two_ways,
                use_weight, old, value, in_frontier, fstamp, offset, floor, first_wins,
                improved, stamp):
    """One dense superstep (parallel over targets ``v``): the minimum message of ``v``'s
    frontier in-neighbours (``in_frontier[u] == fstamp``), ``old[u] + offset`` (+ weight),
    lowers ``value[v]``; targets already at or below ``floor`` (the smallest message of the
    superstep; ``-inf`` when weights vary the messages) are skipped, a target stops reading
    once it reaches ``floor``, and ``first_wins`` stops at the first message (all equal).
    Returns (edges scanned, distinct receivers, improved count)."""
    n = value.shape[0]
    scanned = 0
    combined = 0
    count = 0
    for v in numba.prange(n):
        best = value[v]
        if best <= floor:
            continue
        k = 0
        got = 0
        for side in range(2 if two_ways else 1):
            indptr = indptr_a if side == 0 else indptr_b
            indices = indices_a if side == 0 else indices_b
            weight = weight_a if side == 0 else weight_b
            for e in range(indptr[v], indptr[v + 1]):
                k += 1
                u = indices[e]
                if in_frontier[u] != fstamp:
                    continue
                m = old[u] + offset
                if use_weight:
                    m += weight[e]
                got = 1
                if m < best:
                    best = m
                if first_wins or best <= floor:  # nothing can lower it further
                    break
            if got and (first_wins or best <= floor):
                break
        scanned += k
        combined += got
        if best < value[v]:
            value[v] = best
            improved[v] = stamp
            count += 1
    return scanned, combined, count


@numba.njit(cache=True, nogil=True)
def relax_run(push_a, push_b, pull_a, pull_b, two_ways, have_pull, use_weight, first_wins,
              value, frontier, offset, max_steps, threshold, recv, improved, stamp0,
              active_out, scanned_out, combined_out, pulled_out):
    """Consecutive supersteps of a min-relaxation program in one call (see
    :attr:`graphsys.bsp.program.VertexProgram.relax_state`), push or pull by Ligra's rule.

    Superstep ``s`` is the engine's synchronous superstep (same results and counts): the
    frontier sends ``value[u] + offset`` (plus the edge weight when ``use_weight``) as at
    the superstep's start, targets keep the minimum, and those whose value dropped are the
    next frontier. A sparse frontier (``|F| + outdeg(F) <= threshold``) pushes along
    ``push_a`` (and ``push_b`` when ``two_ways``); a dense one pulls along ``pull_a``
    (``pull_b``) in parallel. Adjacencies:
    ``(indptr int64 (N+1,), indices int32/int64, weight float32)``. ``value`` float64 (N,)
    is lowered in place; ``recv``/``improved`` int64 (N,) stamp arrays, fresh stamps from
    ``stamp0`` (two per superstep).

    Stops before a superstep whose frontier is empty, or dense while ``have_pull`` is False
    (the caller builds the pull adjacency and calls again), or after ``max_steps``. Per run
    superstep ``s``: ``active_out``, ``scanned_out``, ``combined_out`` (distinct receivers),
    ``pulled_out`` (1 = pull). Returns (supersteps run, next frontier int64 ids)."""
    n = value.shape[0]
    cur = np.empty(n, np.int64)  # frontier ids in cur[:k_front]
    nxt = np.empty(n, np.int64)
    sent_value = np.empty(n, np.float64)
    k_front = frontier.shape[0]
    for k in range(k_front):  # a loop: a slice copy compiles numba's shape-error message
        cur[k] = frontier[k]
    steps = 0
    while steps < max_steps and k_front > 0:
        front = cur[:k_front]
        outdeg = 0
        for k in range(k_front):
            u = front[k]
            outdeg += push_a[0][u + 1] - push_a[0][u]
            if two_ways:
                outdeg += push_b[0][u + 1] - push_b[0][u]
        dense = k_front == n or k_front + outdeg > threshold
        if dense and not have_pull:
            break
        fstamp = stamp0 + 2 * steps
        stamp = fstamp + 1
        floor = np.inf
        for k in range(k_front):
            sent_value[k] = value[front[k]] + offset
            floor = min(floor, sent_value[k])
        if dense:
            for k in range(k_front):
                recv[front[k]] = fstamp  # recv doubles as the frontier mark here
            old = value.copy()
            scanned, combined, count = _relax_pull(
                pull_a[0], pull_a[1], pull_a[2], pull_b[0], pull_b[1], pull_b[2], two_ways,
                use_weight, old, value, recv, fstamp, offset,
                floor if not use_weight else -np.inf, first_wins, improved, stamp)
            count = 0
            for v in range(n):
                if improved[v] == stamp:
                    nxt[count] = v
                    count += 1
        else:
            count, scanned, combined = _relax_pass(push_a[0], push_a[1], push_a[2],
                                                   use_weight, first_wins, front,
                                                   sent_value, value, stamp, recv,
                                                   improved, nxt, np.int64(0))
            if two_ways:
                count, s2, c2 = _relax_pass(push_b[0], push_b[1], push_b[2], use_weight,
                                            first_wins, front, sent_value, value, stamp,
                                            recv, improved, nxt, count)
                scanned += s2
                combined += c2
        active_out[steps] = k_front
        scanned_out[steps] = scanned
        combined_out[steps] = combined
        pulled_out[steps] = dense
        cur, nxt = nxt, cur
        k_front = count
        steps += 1
    return steps, cur[:k_front].copy()


@numba.njit(cache=True, nogil=True)
def relax_async(push_a, push_b, two_ways, use_weight, value, frontier, offset, queued):
    """A min-relaxation program run asynchronously to its fixed point (label correcting
    with a FIFO work list, as SPFA / GraphLab's asynchronous engine). The start vertices
    ``frontier`` (int64 ids) are taken in ascending order of their value, and the work
    list is drained before the next one is taken, so the smallest value floods first (WCC
    then lowers every vertex once, to its final label). A popped vertex ``u`` sends its
    *current* ``value[u] + offset`` (+ weight) along ``push_a`` (and ``push_b``); every
    lowered target not already queued is appended; a start vertex an earlier flood already
    popped is skipped. Same final values as the synchronous supersteps for BFS, SSSP
    (non-negative weights) and WCC. Unweighted programs with ``offset == 0`` or a single
    start vertex *settle* a vertex when it is first lowered (a FIFO flood reaches it first
    by a shortest hop path), kept in a bitmap an edge tests before it reads ``value``.

    ``queued`` uint8 (N,) all zero (scratch: 1 = queued, 2 = popped). Returns (vertices
    popped, edges scanned, values lowered) as int64."""
    n = value.shape[0]
    ring = np.empty(n, np.int64)  # at most n vertices are queued at once
    seeds = frontier
    for k in range(1, frontier.shape[0]):
        if value[frontier[k]] < value[frontier[k - 1]]:  # not yet ascending: sort
            seeds = frontier[np.argsort(value[frontier], kind="mergesort")]
            break
    settle = not use_weight and (offset == 0.0 or seeds.shape[0] == 1)
    settled = np.zeros((n + 63) // 64 if settle else 0, np.uint64)
    one = np.uint64(1)
    popped = 0
    scanned = 0
    lowered = 0
    for k in range(seeds.shape[0]):
        if queued[seeds[k]] == 2:
            continue
        head = 0
        size = 1
        ring[0] = seeds[k]
        queued[seeds[k]] = 1
        if settle:
            settled[seeds[k] >> 6] |= one << np.uint64(seeds[k] & 63)
        while size > 0:
            u = ring[head]
            head = head + 1 if head + 1 < n else 0
            size -= 1
            queued[u] = 2
            popped += 1
            xv = value[u] + offset
            for side in range(2 if two_ways else 1):
                adj = push_a if side == 0 else push_b
                indptr, indices, weight = adj[0], adj[1], adj[2]
                scanned += indptr[u + 1] - indptr[u]
                for e in range(indptr[u], indptr[u + 1]):
                    v = np.uint64(indices[e])
                    if settle:
                        word, bit = v >> np.uint64(6), one << (v & np.uint64(63))
                        if settled[word] & bit:
                            continue
                    m = xv + weight[e] if use_weight else xv
                    if m < value[v]:
                        value[v] = m
                        lowered += 1
                        if settle:
                            settled[word] |= bit
                        if queued[v] != 1:
                            queued[v] = 1
                            tail = head + size
                            ring[tail if tail < n else tail - n] = v
                            size += 1
    return popped, scanned, lowered


@numba.njit(cache=True, nogil=True)
def add_into(idx, w, out):
    """``out[idx[e]] += w[e]`` for every ``e`` (a weighted count: float64 ``out``)."""
    for e in range(idx.shape[0]):
        out[idx[e]] += w[e]


@numba.njit(cache=True, nogil=True)
def filled(shape, value):
    """``np.full(shape, value)`` filled serially, for a parallel kernel's scratch: there an
    array initialisation of the kernel's own (``np.zeros``, ``np.ones``) is lowered to a
    parallel loop, a parallel region launched of its own, which
    ``numba.set_parallel_chunksize(1)`` would split into one task per element."""
    return np.full(shape, value)


@numba.njit(cache=True, nogil=True)
def pack_offsets(src, dst, word, side, low, hd):
    """A batch's local offsets packed for the device (:mod:`graphsys.bsp.device_stream`):
    ``word[e] = (src[e] & m) << low | (dst[e] & m)`` with ``m = 2**low - 1`` (uint32), and
    where ``side`` is not empty (uint8 or uint16) the higher bits, ``side[e] = (src[e] >>
    low) << hd | dst[e] >> low``; ``hd`` is the bits of ``dst``'s higher part."""
    m = (1 << low) - 1
    wide = side.shape[0] > 0
    for e in range(src.shape[0]):
        s, d = src[e], dst[e]
        word[e] = ((s & m) << low) | (d & m)
        if wide:
            side[e] = ((s >> low) << hd) | (d >> low)
