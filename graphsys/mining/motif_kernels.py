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


@numba.njit(cache=True, nogil=True)
def _row_from(idx, lo, hi, v):
    """The first position of the ascending row ``idx[lo:hi]`` holding an entry above ``v``."""
    return _lower_bound(idx, lo, hi, v + 1)


@numba.njit(cache=True, nogil=True)
def _esu_root(ptr, idx, v, c_lo, c_hi, mark, adj, pos, ext, acc):
    """The connected induced 5-node subsets whose lowest vertex is ``v`` and whose second
    vertex (in ESU's order) is one of ``v``'s higher neighbours ``c_lo..c_hi-1``, tallied
    into ``acc`` (int64 (1024,), by the 10-bit adjacency code of the five; see
    :func:`esu5`). ``mark``, ``adj`` (uint8 (N,), zero), ``pos`` (int64 (N,), -1) and
    ``ext`` (int64, at least 6 times the largest degree) are the thread's scratch, left as
    found."""
    n1 = 0
    for q in range(_row_from(idx, ptr[v], ptr[v + 1], v), ptr[v + 1]):
        u = idx[q]
        mark[u] = 1
        adj[u] = 1
        ext[n1] = u
        n1 += 1
    hist = np.zeros(8, np.int64)
    for i in range(c_lo, min(c_hi, n1)):
        w1 = ext[i]
        # level 2: ext2 = ext1[i+1:] + the higher neighbours of w1 new to N[{v, w1}]
        b2 = n1
        n2 = b2
        for k in range(i + 1, n1):
            ext[n2] = ext[k]
            n2 += 1
        s1 = _row_from(idx, ptr[w1], ptr[w1 + 1], v)
        for q in range(s1, ptr[w1 + 1]):
            u = idx[q]
            adj[u] |= 2
            if mark[u] == 0:
                mark[u] = 2
                ext[n2] = u
                n2 += 1
        for j in range(b2, n2):
            w2 = ext[j]
            code3 = 1 | (np.int64(adj[w2] & 3) << 1)
            # level 3: ext3 = ext2[j+1:] + the higher neighbours of w2 new to N[{v,w1,w2}]
            b3 = n2
            n3 = b3
            for k in range(j + 1, n2):
                ext[n3] = ext[k]
                n3 += 1
            s2 = _row_from(idx, ptr[w2], ptr[w2 + 1], v)
            for q in range(s2, ptr[w2 + 1]):
                u = idx[q]
                adj[u] |= 4
                if mark[u] == 0:
                    mark[u] = 3
                    ext[n3] = u
                    n3 += 1
            _esu_pairs(ptr, idx, v, ext, b3, n3, code3, mark, adj, pos, hist, acc)
            for q in range(s2, ptr[w2 + 1]):
                u = idx[q]
                adj[u] &= 3
                if mark[u] == 3:
                    mark[u] = 0
        for q in range(s1, ptr[w1 + 1]):
            u = idx[q]
            adj[u] &= 1
            if mark[u] == 2:
                mark[u] = 0
    for k in range(n1):
        mark[ext[k]] = 0
        adj[ext[k]] = 0


@numba.njit(cache=True, nogil=True)
def _esu_pairs(ptr, idx, v, ext, b3, n3, code3, mark, adj, pos, hist, acc):
    """Every 5-node completion of the connected triple ``{v, w1, w2}`` (its adjacency
    bits ``code3``) by two more vertices: a pair of its extension ``ext[b3:n3]`` (counted
    by the pair's masks, then corrected per edge inside the extension), or one of it and
    a higher neighbour adjacent to that one only."""
    hist[:] = 0
    for k in range(b3, n3):
        u = ext[k]
        pos[u] = k
        hist[adj[u] & 7] += 1
    for a in range(1, 8):
        ha = hist[a]
        if ha == 0:
            continue
        acc[code3 | (a << 3) | (a << 6)] += ha * (ha - 1) // 2
        for b in range(a + 1, 8):
            acc[code3 | (a << 3) | (b << 6)] += ha * hist[b]
    for k in range(b3, n3):
        w = ext[k]
        a = np.int64(adj[w] & 7)
        alone = 0
        for q in range(_row_from(idx, ptr[w], ptr[w + 1], v), ptr[w + 1]):
            u = idx[q]
            if mark[u] == 0:
                alone += 1
            elif pos[u] > k:
                b = np.int64(adj[u] & 7)
                lo, hi = (a, b) if a <= b else (b, a)
                acc[code3 | (lo << 3) | (hi << 6)] -= 1
                acc[code3 | (lo << 3) | (hi << 6) | 512] += 1
        acc[code3 | (a << 3) | 512] += alone
    for k in range(b3, n3):
        pos[ext[k]] = -1


@numba.njit(cache=True, nogil=True, parallel=True)
def esu5(ptr, idx, roots, lo, hi, marks, adjs, poss, exts, acc):
    """The connected induced 5-node subgraphs by one enumeration (Wernicke's ESU, its
    last two levels counted in bulk). Task ``t`` is root ``roots[t]`` with its ESU
    children ``lo[t]..hi[t]-1`` (positions in its row of higher neighbours); ``acc``
    (int64 (threads, 1024), zero) gets, per thread, the subgraphs by their adjacency code:
    bit ``p`` of the code is the ``p``-th pair of positions in the order (0,1), (0,2),
    (1,2), (0,3), (1,3), (2,3), (0,4), (1,4), (2,4), (3,4). ``ptr``/``idx``: symmetric
    rows, ascending. The thread's scratch, per thread: ``marks``, ``adjs`` (uint8
    (threads, N), zero), ``poss`` (int64 (threads, N), -1), ``exts`` (int64 (threads, at
    least 6 times the largest degree)); left as found."""
    for t in numba.prange(roots.shape[0]):
        tid = numba.get_thread_id()
        _esu_root(ptr, idx, roots[t], lo[t], hi[t], marks[tid], adjs[tid], poss[tid],
                  exts[tid], acc[tid])

