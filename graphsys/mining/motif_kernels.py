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
        out[s] = 1.0 if _contains(idx, ptr[x], ptr[x + 1], common[j]) else 0.0


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
        _esu_level2(ptr, idx, v, ext, b2, n2, mark, adj, pos, acc)
        for q in range(s1, ptr[w1 + 1]):
            u = idx[q]
            adj[u] &= 1
            if mark[u] == 2:
                mark[u] = 0
    for k in range(n1):
        mark[ext[k]] = 0
        adj[ext[k]] = 0


@numba.njit(cache=True, nogil=True)
def _cell(code3, a, b):
    """The adjacency code of a triple (``code3``) and two more vertices of masks ``a``,
    ``b`` to it, not adjacent (the lower mask in position 3)."""
    return code3 | (min(a, b) << 3) | (max(a, b) << 6)


@numba.njit(cache=True, nogil=True)
def _ext2_rows(ptr, idx, v, ext, b2, n2, mark, pos, alone, lptr):
    """For the extension ``ext[b2:n2]`` of a connected pair: each member's higher
    neighbours outside the marked set (``alone``) and its neighbours inside the extension,
    as rows of extension positions (``lptr`` filled; the rows returned)."""
    size = n2 - b2
    lptr[0] = 0
    for p in range(size):
        w = ext[b2 + p]
        a = 0
        d = 0
        for q in range(_row_from(idx, ptr[w], ptr[w + 1], v), ptr[w + 1]):
            u = idx[q]
            if mark[u] == 0:
                a += 1
            elif pos[u] >= 0:
                d += 1
        alone[p] = a
        lptr[p + 1] = lptr[p] + d
    rows = np.empty(lptr[size], np.int64)
    for p in range(size):
        w = ext[b2 + p]
        k = lptr[p]
        for q in range(_row_from(idx, ptr[w], ptr[w + 1], v), ptr[w + 1]):
            u = idx[q]
            if mark[u] != 0 and pos[u] >= 0:
                rows[k] = pos[u]
                k += 1
    return rows


@numba.njit(cache=True, nogil=True)
def _edges_at_w2(inside, t, j, lptr, rows, ext, b2, m2, adj, e3):
    """Move the edges inside ``S`` (positions after ``j``) with an end among
    ``inside[:t]`` (the members adjacent to ``w2``) to the cells of their masks with
    ``w2``'s bit, each edge once."""
    for i in range(t):
        p = inside[i]
        for k in range(lptr[p], lptr[p + 1]):
            x = rows[k]
            if x <= j:
                continue
            both = (adj[ext[b2 + x]] & 4) != 0
            if both and x < p:
                continue
            e3[min(m2[p], m2[x]), max(m2[p], m2[x])] -= 1
            mx = m2[x] | 4 if both else m2[x]
            e3[min(m2[p] | 4, mx), max(m2[p] | 4, mx)] += 1


@numba.njit(cache=True, nogil=True)
def _new_rows(ptr, idx, v, ext, n2, n3, j, mark, adj, pos, a3, e3):
    """The rows of ``w2``'s exclusive neighbours ``ext[n2:n3]`` (mask 4): their lone
    neighbours, their edges to ``S`` (taken from those members' lone counts) and among
    themselves."""
    for k in range(n2, n3):
        u = ext[k]
        lone = 0
        for q in range(_row_from(idx, ptr[u], ptr[u + 1], v), ptr[u + 1]):
            x = idx[q]
            if mark[x] == 0:
                lone += 1
            elif pos[x] > j:
                mx = np.int64(adj[x] & 7)
                e3[min(mx, 4), max(mx, 4)] += 1
                a3[mx] -= 1
            elif mark[x] == 3 and x > u:
                e3[4, 4] += 1
        a3[4] += lone


@numba.njit(cache=True, nogil=True)
def _fold(acc, code3, h3, a3, e3):
    """Add a triple's completions to ``acc``: pairs of its extension by masks (``h3``,
    the histogram; ``e3``, the adjacent pairs) and lone neighbours by mask (``a3``)."""
    for a in range(1, 8):
        acc[code3 | (a << 3) | 512] += a3[a]
        if h3[a] == 0:
            continue
        acc[_cell(code3, a, a)] += h3[a] * (h3[a] - 1) // 2 - e3[a, a]
        acc[_cell(code3, a, a) | 512] += e3[a, a]
        for b in range(a + 1, 8):
            acc[_cell(code3, a, b)] += h3[a] * h3[b] - e3[a, b]
            acc[_cell(code3, a, b) | 512] += e3[a, b]


@numba.njit(cache=True, nogil=True)
def _esu_level2(ptr, idx, v, ext, b2, n2, mark, adj, pos, acc):
    """Every connected induced 5-node set grown from the connected pair ``{v, w1}`` with
    extension ``ext[b2:n2]`` (marks and adjacency bits 0, 1 set), by ESU's third vertex
    ``w2`` (each extension member in turn) and the pairs completing the triple, counted by
    masks: the extension's later members ``S`` and ``w2``'s exclusive neighbours ``N3``
    make the triple's extension; their pairs come from a histogram of masks, corrected per
    edge inside it (edges inside ``S`` kept per mask pair as ``S`` shrinks, moved when an
    end is adjacent to ``w2``; edges from ``N3`` by a scan of its rows), and each
    member's neighbours outside the marked set (kept per member for ``S``, less its edges
    to ``N3``) as single completions."""
    size = n2 - b2
    for p in range(size):
        pos[ext[b2 + p]] = p
    alone = np.empty(size, np.int64)
    lptr = np.empty(size + 1, np.int64)
    rows = _ext2_rows(ptr, idx, v, ext, b2, n2, mark, pos, alone, lptr)
    m2 = np.empty(size, np.int64)
    hs = np.zeros(4, np.int64)      # S's members by mask
    als = np.zeros(4, np.int64)     # their lone neighbours by mask
    es = np.zeros((4, 4), np.int64)  # edges inside S by masks (lower first)
    for p in range(size):
        m2[p] = adj[ext[b2 + p]] & 3
    for p in range(size):
        hs[m2[p]] += 1
        als[m2[p]] += alone[p]
        for k in range(lptr[p], lptr[p + 1]):
            x = rows[k]
            if x > p:
                es[min(m2[p], m2[x]), max(m2[p], m2[x])] += 1
    h3 = np.empty(8, np.int64)
    a3 = np.empty(8, np.int64)
    e3 = np.empty((8, 8), np.int64)
    inside = np.empty(size, np.int64)
    for j in range(size):
        # S: the positions after j
        mj = m2[j]
        hs[mj] -= 1
        als[mj] -= alone[j]
        for k in range(lptr[j], lptr[j + 1]):
            x = rows[k]
            if x > j:
                es[min(mj, m2[x]), max(mj, m2[x])] -= 1
        w2 = ext[b2 + j]
        code3 = 1 | (mj << 1)
        h3[:] = 0
        a3[:] = 0
        e3[:, :] = 0
        for a in range(4):
            h3[a] = hs[a]
            a3[a] = als[a]
            for b in range(a, 4):
                e3[a, b] = es[a, b]
        n3 = n2
        t = 0
        s2 = _row_from(idx, ptr[w2], ptr[w2 + 1], v)
        for q in range(s2, ptr[w2 + 1]):
            u = idx[q]
            adj[u] |= 4
            if mark[u] == 0:
                mark[u] = 3
                ext[n3] = u
                n3 += 1
            elif pos[u] > j:
                p = pos[u]
                h3[m2[p]] -= 1
                h3[m2[p] | 4] += 1
                a3[m2[p]] -= alone[p]
                a3[m2[p] | 4] += alone[p]
                inside[t] = p
                t += 1
        _edges_at_w2(inside, t, j, lptr, rows, ext, b2, m2, adj, e3)
        h3[4] += n3 - n2
        _new_rows(ptr, idx, v, ext, n2, n3, j, mark, adj, pos, a3, e3)
        _fold(acc, code3, h3, a3, e3)
        for q in range(s2, ptr[w2 + 1]):
            u = idx[q]
            adj[u] &= 3
            if mark[u] == 3:
                mark[u] = 0
    for p in range(size):
        pos[ext[b2 + p]] = -1


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
