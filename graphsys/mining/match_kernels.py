"""Numba kernels of user-pattern matching (:mod:`graphsys.mining.pattern`): depth-first
extension along a compiled plan, with symmetry breaking."""

from __future__ import annotations

import numba
import numpy as np


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
def _directions_ok(have, need, exact):
    """Whether a pair's stored directions ``have`` hold the pattern's ``need`` (bit 1: the
    row's vertex to the entry, bit 2: back); ``exact``: and no other (induced)."""
    return have == need if exact else (have & need) == need


@numba.njit(cache=True, nogil=True)
def _edge_labels_ok(lptr, lval, lbit, q, want, directed):
    """Whether the stored edges of symmetric row entry ``q`` hold the pattern's edge labels
    ``want`` (int64 (2,), -1: any): ``want[0]`` on an edge from the row's vertex to the
    entry (undirected pattern: in either direction), ``want[1]`` on one back (directed
    patterns). ``lval[lptr[q]:lptr[q + 1]]``: the entry's labels, ``lbit``: the directions
    each is stored in (bit 1: from the row's vertex, bit 2: back)."""
    for s in range(2):
        lab = want[s]
        if lab < 0:
            continue
        need = s + 1 if directed else 0
        found = False
        for t in range(lptr[q], lptr[q + 1]):
            if lval[t] == lab and (lbit[t] & need) == need:
                found = True
                break
        if not found:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _candidates(ptr, idx, labels, level, adj, nonadj, greater, less, plabel, m, cand, bits,
                dreq, dexact, elab, lptr, lval, lbit):
    """Fill ``cand[level]`` with the candidates of ``level`` given the vertices ``m`` of the
    earlier levels: the neighbours of its adjacent earlier level with the shortest row
    (the *anchor*), within the ids its conditions bound, adjacent to its other adjacent
    levels, non-adjacent to its ``nonadj`` ones, distinct, of its label. A directed
    pattern (``bits``: each row entry's stored directions, non-empty) also needs, to each
    adjacent level ``j``, the directions ``dreq[level, j]`` (bit 1: from level ``j``'s
    vertex to the candidate, bit 2: back). An edge-labelled pattern (``lptr`` non-empty)
    also needs, to each adjacent level ``j``, stored edges of the labels ``elab[level, j]``
    (:func:`_edge_labels_ok`). Returns how many."""
    has_labels = labels.shape[0] > 0
    has_dirs = bits.shape[0] > 0
    has_elabs = lptr.shape[0] > 0
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
        if ok and has_dirs and not _directions_ok(bits[q], dreq[level, anchor], dexact):
            ok = False
        if ok and has_elabs and not _edge_labels_ok(lptr, lval, lbit, q, elab[level, anchor],
                                                    has_dirs):
            ok = False
        j = 0
        while ok and j < level:
            if m[j] == y:
                ok = False
            elif adj[level, j] and j != anchor:
                z = m[j]
                if has_dirs or has_elabs:
                    at = _lower_bound(idx, ptr[z], ptr[z + 1], y)
                    if at == ptr[z + 1] or idx[at] != y:
                        ok = False
                    elif has_dirs and not _directions_ok(bits[at], dreq[level, j], dexact):
                        ok = False
                    elif has_elabs and not _edge_labels_ok(lptr, lval, lbit, at,
                                                           elab[level, j], has_dirs):
                        ok = False
                elif not _contains(idx, ptr[z], ptr[z + 1], y):
                    ok = False
            elif nonadj[level, j]:
                z = m[j]
                if _contains(idx, ptr[z], ptr[z + 1], y):
                    ok = False
            j += 1
        if ok:
            cand[level, c] = y
            c += 1
    return c


@numba.njit(cache=True, nogil=True)
def _match_root(ptr, idx, labels, r, adj, nonadj, greater, less, plabel, bits, dreq, dexact,
                elab, lptr, lval, lbit, cand, ncand, pos, m, out, out_count, limit):
    """Matches of the plan with level 0 mapped to root ``r``. ``adj[i, j]``: level ``i``'s
    vertex must be adjacent to level ``j``'s (``j < i``), ``nonadj`` must not be (induced
    matching), ``greater``/``less``: its id must be above/below level ``j``'s (symmetry
    breaking); ``plabel[i]``: its label (-1: any); ``elab``, ``lptr``, ``lval``, ``lbit``:
    edge labels. Candidates: :func:`_candidates`.
    Writes up to ``limit`` matches into ``out`` (levels' ids; ``out`` empty: count only).
    Returns the count."""
    k = adj.shape[0]
    listing = out.shape[0] > 0
    if labels.shape[0] > 0 and plabel[0] >= 0 and labels[r] != plabel[0]:
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
            c = _candidates(ptr, idx, labels, level, adj, nonadj, greater, less, plabel, m,
                            cand, bits, dreq, dexact, elab, lptr, lval, lbit)
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
def match_count(ptr, idx, labels, tasks, adj, nonadj, greater, less, plabel, bits, dreq,
                dexact, elab, lptr, lval, lbit, max_row, per_root):
    """The matches of a plan (see :func:`_match_root`) over every root of ``tasks``
    (``per_root``: each root's count, or empty). Returns the total."""
    k = adj.shape[0]
    total = 0
    no_out = np.empty((0, k), np.int64)  # np.zeros here would be a parallel loop of its own
    for t in numba.prange(tasks.shape[0] - 1):
        cand = np.empty((k, max(max_row, 1)), np.int64)
        ncand = np.empty(k, np.int64)
        pos = np.empty(k, np.int64)
        m = np.empty(k, np.int64)
        one = np.zeros(1, np.int64)
        found = 0
        for r in range(tasks[t], tasks[t + 1]):
            c = _match_root(ptr, idx, labels, r, adj, nonadj, greater, less, plabel, bits,
                            dreq, dexact, elab, lptr, lval, lbit, cand, ncand, pos, m, no_out,
                            one, 0)
            if per_root.shape[0] > 0:
                per_root[r] = c
            found += c
        total += found
    return total


@numba.njit(cache=True, nogil=True)
def match_list(ptr, idx, labels, adj, nonadj, greater, less, plabel, bits, dreq, dexact,
               elab, lptr, lval, lbit, max_row, limit, out):
    """The first ``limit`` matches of a plan in root order (then depth-first order) as rows
    of ``out`` (int64 (limit, k), one id per level). Returns how many were written."""
    k = adj.shape[0]
    cand = np.empty((k, max(max_row, 1)), np.int64)
    ncand = np.empty(k, np.int64)
    pos = np.empty(k, np.int64)
    m = np.empty(k, np.int64)
    count = np.zeros(1, np.int64)
    for r in range(ptr.shape[0] - 1):
        _match_root(ptr, idx, labels, r, adj, nonadj, greater, less, plabel, bits, dreq,
                    dexact, elab, lptr, lval, lbit, cand, ncand, pos, m, out, count, limit)
        if count[0] >= limit:
            return limit
    return count[0]


@numba.njit(cache=True, nogil=True)
def match_resume(ptr, idx, labels, adj, nonadj, greater, less, plabel, bits, dreq, dexact,
                 elab, lptr, lval, lbit, state, cand, ncand, pos, m, out):
    """Continue a depth-first listing where the last call stopped, until ``out`` (int64
    (C, k), one id per level) is full or every root is done. ``state``: int64 (2,), the
    next root and the current level (0: between roots; ``[0, 0]`` to start); ``cand``,
    ``ncand``, ``pos``, ``m``: the search's stack, kept between calls. Matches come in
    :func:`match_list`'s order. Returns the rows written (fewer than C: the end)."""
    k = adj.shape[0]
    n = ptr.shape[0] - 1
    cap = out.shape[0]
    root = state[0]
    level = state[1]
    got = 0
    while got < cap:
        if level == 0:
            if root >= n:
                break
            r = root
            root += 1
            if labels.shape[0] > 0 and plabel[0] >= 0 and labels[r] != plabel[0]:
                continue
            m[0] = r
            if k == 1:
                out[got, 0] = r
                got += 1
                continue
            level = 1
            ncand[1] = -1
            continue
        if ncand[level] < 0:
            ncand[level] = _candidates(ptr, idx, labels, level, adj, nonadj, greater, less,
                                       plabel, m, cand, bits, dreq, dexact, elab, lptr, lval,
                                       lbit)
            pos[level] = 0
        if pos[level] >= ncand[level]:
            level -= 1
            continue
        if level == k - 1:  # the last level: every candidate is a match
            while pos[level] < ncand[level] and got < cap:
                for j in range(level):
                    out[got, j] = m[j]
                out[got, level] = cand[level, pos[level]]
                pos[level] += 1
                got += 1
            continue
        m[level] = cand[level, pos[level]]
        pos[level] += 1
        level += 1
        ncand[level] = -1
    state[0] = root
    state[1] = level
    return got


@numba.njit(cache=True, nogil=True)
def full_directions(dptr, didx, dbits, ptr, bits):
    """The stored directions of every entry of the symmetric rows
    (:meth:`~graphsys.views.Oriented.full`, which writes each row's lower neighbours,
    then its DAG row) from the DAG's ``dbits``: in row ``v``, entry ``u`` of the DAG edge
    ``u -> v`` has that edge's bits swapped."""
    n = dptr.shape[0] - 1
    at = ptr[:-1].copy()
    for u in range(n):
        for e in range(dptr[u], dptr[u + 1]):
            b = dbits[e]
            bits[at[didx[e]]] = ((b & 1) << 1) | ((b & 2) >> 1)
            at[didx[e]] += 1
    for u in range(n):
        c = at[u]
        for e in range(dptr[u], dptr[u + 1]):
            bits[c] = dbits[e]
            c += 1
