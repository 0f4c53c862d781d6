"""Numba kernels of the link scores (:mod:`graphsys.measures.similarity`), over the
undirected view of :mod:`graphsys.measures.kernels_view`.

A pair ``(u, v)`` gathers the neighbours of the endpoint with the shorter rows and looks
each up in the other's sorted rows by binary search: ``O(d_small log d_large)``, no pass
over the graph. Top-k expands ``u``'s neighbours' neighbours into a per-thread dense
accumulator (zeroed pages: only the rows touched are faulted in) and keeps the best ``k``
in a heap. Method codes: :data:`CN`, :data:`JACCARD`, :data:`ADAMIC_ADAR`,
:data:`RESOURCE_ALLOCATION`, :data:`PREFERENTIAL_ATTACHMENT`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from graphsys.measures.kernels_view import (
    DIRECTED,
    UNIQUE,
    gallop,
    gather,
    nx_degree,
    row_bound,
    view_code,
)

CN, JACCARD, ADAMIC_ADAR, RESOURCE_ALLOCATION, PREFERENTIAL_ATTACHMENT = 0, 1, 2, 3, 4
#: A pair's rows are merged when the longer is at most this many times the shorter, else
#: the shorter's entries gallop through the longer
MERGE_RATIO = 8


@numba.njit(inline="always")
def _weight(method, d):
    """A common neighbour's term: 1 (counts), ``1/d`` (RA) or ``1/log d`` (AA)."""
    if method == RESOURCE_ALLOCATION:
        return 1.0 / d
    if method == ADAMIC_ADAR:
        return 1.0 / math.log(d) if d != 1 else math.inf
    return 1.0


@numba.njit(inline="always")
def _seek(idx, lo, hi, x, linear):
    """The first position in ``idx[lo:hi]`` holding a value >= ``x``: a merge's step when
    ``linear``, else a gallop."""
    if linear:
        while lo < hi and idx[lo] < x:
            lo += 1
        return lo
    return gallop(idx, lo, hi, x)


@numba.njit(inline="always")
def _score(mine, k, u, v, b, optr, oidx, iptr, iidx, sym, method, memo):
    """The score of ``(u, v)`` from ``mine[:k]`` (the neighbours of one end, ascending,
    unique) looked up in the rows of the other end ``b``: a merge when the rows are of
    comparable length (at most :data:`MERGE_RATIO` times), else each cursor gallops forward
    from its last hit."""
    common = 0  # N(u) & N(v) - {u, v}
    both = 0  # N(u) & N(v)
    s = 0.0
    oc = optr[b]
    oe = optr[b + 1]
    ic = iptr[b]
    ie = iptr[b + 1] if sym == DIRECTED else ic
    linear = (oe - oc) + (ie - ic) <= MERGE_RATIO * k
    for i in range(k):
        w = np.int64(mine[i])
        oc = _seek(oidx, oc, oe, w, linear)
        found = oc < oe and oidx[oc] == w
        if not found and ic < ie:
            ic = _seek(iidx, ic, ie, w, linear)
            found = ic < ie and iidx[ic] == w
        if found:
            both += 1
            if w != u and w != v:
                common += 1
                if method == ADAMIC_ADAR or method == RESOURCE_ALLOCATION:
                    s += _weight(method, nx_degree(w, optr, oidx, iptr, iidx, sym, memo))
    if method == CN:
        return float(common)
    if method == JACCARD:
        # |N(b)|: the row's length where rows hold no repeats (no memo to read)
        nb = optr[b + 1] - optr[b] if sym == UNIQUE else (
            view_code(b, optr, oidx, iptr, iidx, sym, memo) >> 1)
        union = k + nb - both
        return common / union if union > 0 else 0.0
    return s


@numba.njit(inline="always")
def _pair(u, v, optr, oidx, iptr, iidx, sym, method, memo, mine):
    """The score of ``(u, v)``; ``mine``: a gather buffer (unused for UNIQUE rows)."""
    if method == PREFERENTIAL_ATTACHMENT:
        return float(nx_degree(u, optr, oidx, iptr, iidx, sym, memo)) * float(
            nx_degree(v, optr, oidx, iptr, iidx, sym, memo))
    a, b = u, v
    if row_bound(v, optr, iptr, sym) < row_bound(u, optr, iptr, sym):
        a, b = v, u
    if sym == UNIQUE:
        lo = optr[a]
        hi = optr[a + 1]
        return _score(oidx[lo:hi], hi - lo, u, v, b, optr, oidx, iptr, iidx, sym, method,
                      memo)
    k = gather(a, optr, oidx, iptr, iidx, sym, mine)
    return _score(mine, k, u, v, b, optr, oidx, iptr, iidx, sym, method, memo)


@numba.njit(cache=True, nogil=True)
def pair_work(us, vs, optr, iptr, sym, step):
    """``(bound, work)`` over every ``step``-th pair ``(us[p], vs[p])``: the longest endpoint
    row bound (with ``step`` 1, the size of :func:`pair_scores`'s gather buffer) and the
    sum of the shorter row bound plus one (the lookups a pair takes), times ``step``."""
    bound = 0
    work = 0
    for p in range(0, us.shape[0], step):
        a = row_bound(us[p], optr, iptr, sym)
        b = row_bound(vs[p], optr, iptr, sym)
        if a > b:
            a, b = b, a
        if b > bound:
            bound = b
        work += a + 1
    return bound, work * step


@numba.njit(cache=True, nogil=True)
def pair_columns(pairs, n):
    """The two columns of an int64 (P, 2) array of internal ids as contiguous arrays, and
    whether every id lies in ``0..n-1`` (when not, the columns are not all written)."""
    us = np.empty(pairs.shape[0], np.int64)
    vs = np.empty(pairs.shape[0], np.int64)
    for p in range(pairs.shape[0]):
        u = pairs[p, 0]
        v = pairs[p, 1]
        if u < 0 or u >= n or v < 0 or v >= n:
            return us, vs, False
        us[p] = u
        vs[p] = v
    return us, vs, True


@numba.njit(parallel=True, cache=True, nogil=True)
def pair_scores(us, vs, optr, oidx, iptr, iidx, sym, method, memo, buf, out):
    """``out[p]`` = the score of ``(us[p], vs[p])`` (NetworkX's definitions). ``buf``: int64
    (threads, B), a gather buffer per thread of at least the longer endpoint row bound
    (unused when the rows are :data:`~graphsys.measures.kernels_view.UNIQUE`: a row is
    then read in place)."""
    for p in numba.prange(us.shape[0]):
        out[p] = _pair(us[p], vs[p], optr, oidx, iptr, iidx, sym, method, memo,
                       buf[numba.get_thread_id()])


@numba.njit(inline="always")
def _worse(s1, x1, s2, x2):
    """Whether candidate (s1, x1) ranks below (s2, x2): lower score, then larger id."""
    return s1 < s2 or (s1 == s2 and x1 > x2)


@numba.njit(inline="always")
def _sift_down(hs, hx, n, i):
    while True:
        c = 2 * i + 1
        if c >= n:
            return
        if c + 1 < n and _worse(hs[c + 1], hx[c + 1], hs[c], hx[c]):
            c += 1
        if _worse(hs[c], hx[c], hs[i], hx[i]):
            hs[i], hs[c] = hs[c], hs[i]
            hx[i], hx[c] = hx[c], hx[i]
            i = c
        else:
            return


@numba.njit(inline="always")
def _push(hs, hx, n, k, s, x):
    """Offer (s, x) to the min-heap of the best ``k`` (worst at the root); new size."""
    if n < k:
        i = n
        hs[i] = s
        hx[i] = x
        while i > 0:
            parent = (i - 1) >> 1
            if _worse(hs[i], hx[i], hs[parent], hx[parent]):
                hs[i], hs[parent] = hs[parent], hs[i]
                hx[i], hx[parent] = hx[parent], hx[i]
                i = parent
            else:
                break
        return n + 1
    if _worse(hs[0], hx[0], s, x):
        hs[0] = s
        hx[0] = x
        _sift_down(hs, hx, n, 0)
    return n


def top_k_scratch(threads: int, n: int, k: int, bufsize: int) -> tuple:
    """The per-thread scratch of :func:`top_k`, allocated zeroed (pages fault in as they are
    touched) and reusable across calls: accumulators, marks, touched lists, stamps, two
    gather buffers and the heap."""
    size = max(bufsize, 1)
    return (np.zeros((threads, n), np.float64), np.zeros((threads, n), np.int64),
            np.zeros((threads, n), np.int64), np.zeros(threads, np.int64),
            np.empty((threads, size), np.int64), np.empty((threads, size), np.int64),
            np.empty((threads, max(k, 1)), np.float64), np.empty((threads, max(k, 1)), np.int64))


@numba.njit(parallel=True, cache=True, nogil=True)
def top_k(queries, k, optr, oidx, iptr, iidx, sym, method, memo, scratch,
          out_nodes, out_scores, counts):
    """For each query ``u``, the ``k`` best-scoring nodes two hops away (not ``u``, not its
    neighbours), best first, ties to the smaller id: ``out_nodes``/``out_scores`` (Q, k)
    padded with -1 / NaN, ``counts`` (Q,) how many were found. ``scratch``:
    :func:`top_k_scratch` for at least ``numba.get_num_threads()`` threads."""
    acc, mark, touched, stamps, nbrs, second, hs_all, hx_all = scratch
    for q in numba.prange(queries.shape[0]):
        t = numba.get_thread_id()
        u = queries[q]
        stamps[t] += 1
        stamp = stamps[t]
        a = acc[t]
        mk = mark[t]
        tl = touched[t]
        mine = nbrs[t]
        theirs = second[t]
        ku = gather(u, optr, oidx, iptr, iidx, sym, mine)
        for i in range(ku):
            mk[mine[i]] = stamp
        mk[u] = stamp
        nt = 0
        for i in range(ku):
            w = mine[i]
            if w == u:
                continue
            f = 1.0
            if method == ADAMIC_ADAR or method == RESOURCE_ALLOCATION:
                f = _weight(method, nx_degree(w, optr, oidx, iptr, iidx, sym, memo))
            kw = gather(w, optr, oidx, iptr, iidx, sym, theirs)
            for j in range(kw):
                x = theirs[j]
                if mk[x] == stamp:
                    continue
                if a[x] == 0.0:
                    tl[nt] = x
                    nt += 1
                a[x] += f
        hs = hs_all[t]
        hx = hx_all[t]
        h = 0
        du = 0
        if method == PREFERENTIAL_ATTACHMENT:
            du = nx_degree(u, optr, oidx, iptr, iidx, sym, memo)
        for i in range(nt):
            x = tl[i]
            s = a[x]
            a[x] = 0.0
            if method == JACCARD:
                union = ku + (view_code(x, optr, oidx, iptr, iidx, sym, memo) >> 1) - s
                s = s / union
            elif method == PREFERENTIAL_ATTACHMENT:
                s = float(du) * float(nx_degree(x, optr, oidx, iptr, iidx, sym, memo))
            if k > 0:
                h = _push(hs, hx, h, k, s, x)
        counts[q] = h
        # pop worst-first into the row's tail: best first
        for r in range(h - 1, -1, -1):
            out_scores[q, r] = hs[0]
            out_nodes[q, r] = hx[0]
            last = r
            hs[0] = hs[last]
            hx[0] = hx[last]
            _sift_down(hs, hx, last, 0)
