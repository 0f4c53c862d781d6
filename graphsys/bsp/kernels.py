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
"""

from __future__ import annotations

import numba
import numpy as np

MSG_COPY, MSG_ADD_WEIGHT, MSG_MUL_WEIGHT = 0, 1, 2
COMB_SUM, COMB_MIN, COMB_MAX = 0, 1, 2


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
    scanned = np.zeros(n, np.int64)
    sent = np.zeros(n, np.int64)
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
        scanned[v] = k
        sent[v] = m
    return scanned.sum(), sent.sum()


@numba.njit(parallel=True, cache=True, nogil=True)
def pull_copy_sum(indptr, indices, x, acc, received):
    """The all-active ``copy``/``sum`` pull (PageRank's sparse mat-vec) without the
    per-edge frontier and operation checks of :func:`pull`. Returns edges scanned."""
    n = indptr.shape[0] - 1
    for v in numba.prange(n):
        s = 0.0
        lo = indptr[v]
        hi = indptr[v + 1]
        for e in range(lo, hi):
            s += x[indices[e]]
        acc[v] += s
        if hi > lo:
            received[v] = 1
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
def stream(src, dst, src_base, dst_base, weight, x, active, use_active, accept, use_accept,
           msg, comb, acc, received):
    """One edge list (a bucket's record batch): ``src``/``dst`` int32 local offsets, global
    ids ``src_base + src`` / ``dst_base + dst``; messages flow ``src -> dst`` (swap the
    arguments for reverse messages). Sequential and GIL-free, so threads can run buckets of
    different target partitions side by side.

    Returns the number of messages (int64)."""
    sent = 0
    for e in range(src.shape[0]):
        u = src_base + src[e]
        if use_active and active[u] == 0:
            continue
        v = dst_base + dst[e]
        if use_accept and accept[v] == 0:
            continue
        acc[v] = _comb(comb, acc[v], _msg(msg, x[u], weight, e))
        received[v] = 1
        sent += 1
    return sent


@numba.njit(cache=True, nogil=True)
def touch_pages(buf, stride):
    """Read one byte per ``stride`` bytes of ``buf`` (uint8) so a mapped file is faulted in
    (the read-ahead thread calls this outside the GIL). Returns the byte sum (unused)."""
    s = 0
    for k in range(0, buf.shape[0], stride):
        s += buf[k]
    return s


@numba.njit(parallel=True, cache=True)
def frontier_degree(indptr, frontier):
    """Sum of ``indptr[u+1] - indptr[u]`` over ``frontier`` (int64 ids): Ligra's outdeg(F)."""
    total = 0
    for k in numba.prange(frontier.shape[0]):
        u = frontier[k]
        total += indptr[u + 1] - indptr[u]
    return total
