"""Numba helpers over the undirected view of an edge set: the neighbours of ``u`` are the
union of its out-row (CSR) and in-row (CSC), each sorted, duplicates (parallel edges,
reciprocal pairs) counted once. ``sym`` says what the rows are: :data:`DIRECTED` (0) the
CSR and CSC of a directed edge set, merged as they are read; :data:`SYMMETRIC` (1) a CSR
holding both directions of every edge (an edge set ingested ``undirected``), whose rows may
repeat a neighbour (parallel edges), the in-arrays unused; :data:`UNIQUE` (2) such a CSR
without repeats (ingested with ``dedupe``, or the stored ``sym`` index), so a row's length
is the neighbourhood's size.

``memo`` int64 (N,) caches, per node, ``2 * |N(w)| + loop + 1`` (``loop`` = 1 when ``w`` is
its own neighbour), 0 until first asked (so a fresh memo is zeroed pages, faulted in only
where written); NetworkX's degree of ``w`` in ``G.to_undirected()`` is
``|N(w)| + loop`` (a self-loop counts twice). Writes to it from several threads store the
same value, so they need no atomics.
"""

from __future__ import annotations

import numba
import numpy as np

DIRECTED, SYMMETRIC, UNIQUE = 0, 1, 2


@numba.njit(inline="always")
def row_bound(u, optr, iptr, sym):
    """An upper bound of ``|N(u)|``: its out-row plus (directed) its in-row."""
    d = optr[u + 1] - optr[u]
    if not sym:
        d += iptr[u + 1] - iptr[u]
    return d


@numba.njit(inline="always")
def _rows(u, optr, iptr, sym):
    """Cursors of ``u``'s out-row and in-row (an empty in-row when ``sym``)."""
    if sym:
        return optr[u], optr[u + 1], optr[u], optr[u]
    return optr[u], optr[u + 1], iptr[u], iptr[u + 1]


@numba.njit(inline="always")
def _pick(a, ae, b, be, oidx, iidx):
    """The smaller head of two sorted rows, and the cursors past it."""
    if b >= be or (a < ae and oidx[a] <= iidx[b]):
        return np.int64(oidx[a]), a + 1, b
    return np.int64(iidx[b]), a, b + 1


@numba.njit(inline="always")
def gather(u, optr, oidx, iptr, iidx, sym, buf):
    """Write ``N(u)``, ascending and unique, into ``buf``; return its size."""
    a, ae, b, be = _rows(u, optr, iptr, sym)
    k = 0
    last = np.int64(-1)
    while a < ae or b < be:
        x, a, b = _pick(a, ae, b, be, oidx, iidx)
        if x != last:
            buf[k] = x
            k += 1
            last = x
    return k


@numba.njit(inline="always")
def gallop(idx, lo, hi, x):
    """The first position in ``idx[lo:hi]`` (ascending) holding a value >= ``x`` (``hi`` if
    none): exponential steps from ``lo``, then a binary search, so a run of ascending
    lookups in one row costs ``O(k log(d / k))`` in all, and never more than a merge."""
    step = 1
    prev = lo
    cur = lo
    while cur < hi and idx[cur] < x:
        prev = cur + 1
        cur = lo + step
        step <<= 1
    if cur > hi:
        cur = hi
    while prev < cur:
        mid = (prev + cur) >> 1
        if idx[mid] < x:
            prev = mid + 1
        else:
            cur = mid
    return prev


@numba.njit(inline="always")
def view_code(w, optr, oidx, iptr, iidx, sym, memo):
    """``2 * |N(w)| + loop`` (see the module docstring), computed once per node."""
    c = memo[w]
    if c > 0:
        return c - 1
    a, ae, b, be = _rows(w, optr, iptr, sym)
    size = 0
    loop = 0
    last = np.int64(-1)
    if sym == UNIQUE:  # the row's length; a self-loop found by binary search
        size = ae - a
        k = gallop(oidx, a, ae, w)
        loop = 1 if k < ae and oidx[k] == w else 0
        a = ae
    while a < ae or b < be:
        x, a, b = _pick(a, ae, b, be, oidx, iidx)
        if x != last:
            size += 1
            last = x
            if x == w:
                loop = 1
    c = 2 * size + loop
    memo[w] = c + 1
    return c


@numba.njit(inline="always")
def nx_degree(w, optr, oidx, iptr, iidx, sym, memo):
    """NetworkX's degree of ``w`` in the undirected view (a self-loop counts twice)."""
    c = view_code(w, optr, oidx, iptr, iidx, sym, memo)
    return (c >> 1) + (c & 1)


@numba.njit(cache=True, nogil=True)
def max_row_bound(optr, iptr, sym):
    """The largest :func:`row_bound` over all nodes (the size of a gather buffer)."""
    best = 0
    for u in range(optr.shape[0] - 1):
        d = row_bound(u, optr, iptr, sym)
        if d > best:
            best = d
    return best
