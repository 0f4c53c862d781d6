"""Numba kernels of the 4-node motif census (:mod:`graphsys.mining.motif`): 4-cycles by
Chiba and Nishizeki's wedge count, and the sampled estimator's draws."""

from __future__ import annotations

import numba
import numpy as np

from graphsys.mining.match_kernels import _contains, _lower_bound


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
    none = np.empty(0, idx.dtype)  # np.zeros here would be a parallel loop of its own
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
