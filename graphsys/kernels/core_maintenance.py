"""Core numbers and their k-order kept up to date under edge insertions and deletions, one
edge at a time, by the order-based core maintenance of Zhang, Yu, Zhang and Qin ("A Fast
Order-Based Approach for Core Maintenance", ICDE 2017).

One edge changes a core number by at most one, and only of nodes of core ``K``, the
smaller of its ends'. The *k-order* is a peeling order: each node has at most its core
number of edges to nodes after it (its ``deg+``). An insertion scans, in order, the nodes
of core ``K`` after its earlier end that the candidates' edges reach, and raises the
candidates left to ``K + 1`` (first among those nodes in the order); a deletion peels the
nodes of core ``K`` left with fewer than ``K`` neighbours of core ``K`` or more down to
``K - 1`` (last among those nodes, in the order they fell). The degree is networkx's
``core_number``'s: every edge listed counts once at each end (in + out on a directed graph,
parallel edges each time), self-loops never.

The graph is an overlay of the stored adjacency before the change and the change itself
(below); a batch is applied as deletions first, then insertions, one edge at a time, which
ends at the core numbers of the final graph and at a k-order of it.
:func:`graphsys.bsp.kcore` with ``init=`` runs it (:mod:`graphsys.bsp.incremental_cores`).
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.kernels.arrays import flags, old_adjacency
from graphsys.kernels.repair import _has, _id, _row


def positions(n: int, src: np.ndarray, dst: np.ndarray):
    """The adjacency of the edges ``src -> dst`` with each edge in both rows: (``indptr``
    int64 (N+1,), ``nbr`` int64 (2E,), the entry of each edge in its source's row and in
    its target's row, int64 (E,) each)."""
    m = len(src)
    rows = np.concatenate([src, dst]).astype(np.int64)
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    nbr = np.concatenate([dst, src]).astype(np.int64)[order]
    where = np.empty(2 * m, np.int64)
    where[order] = np.arange(2 * m)
    return indptr, nbr, where[:m], where[m:]


def overlay(graph, change, two: bool):
    """The overlay (below) of ``change`` (a :class:`~graphsys.storage.previous.Change`)
    over the adjacency the previous result read; ``two``: a directed edge set (its in-rows
    read too). Returns ``(ov, deleted, inserted, pairs)``: each copy deleted since and each
    edge appended, as ``(u, v, slot_u, slot_v)`` int64 (the arguments of
    :func:`overlay_update`), self-loops and an undirected edge set's second direction left
    out, and the deleted pairs."""
    n = graph.num_nodes()
    oip, oix, _, lay = old_adjacency(graph, change.old, "csr", False)
    iip, iix = old_adjacency(graph, change.old, "csc", False)[:2] if two else (oip, oix)
    bkeys = change.before_deleted
    bout, bin_ = flags(n, bkeys)
    # an undirected edge set stores both directions of an edge: one of them is the edge
    src, dst = change.src, change.dst
    new = (src != dst) & ((src < dst) if not two else True)
    iu, iv = src[new].astype(np.int64), dst[new].astype(np.int64)
    nip, nix, i_slot_u, i_slot_v = positions(n, iu, iv)
    du, dv = change.changed_deleted // n, change.changed_deleted % n
    pairs = (du != dv) & ((du < dv) if not two else True)
    count = copies(oip, oix, lay, bkeys, bout, n, change.changed_deleted[pairs])
    du, dv = np.repeat(du[pairs], count), np.repeat(dv[pairs], count)
    dip, dix, d_slot_u, d_slot_v = positions(n, du, dv)
    ov = (oip, oix, iip, iix, lay, bkeys, bout, bin_, nip, nix, np.zeros(len(nix), np.bool_),
          dip, dix, np.zeros(len(dix), np.bool_), two)
    return ov, (du, dv, d_slot_u, d_slot_v), (iu, iv, i_slot_u, i_slot_v), int(pairs.sum())


# -- over a stored adjacency ------------------------------------------------------------------
# The graph is an overlay (as in :mod:`graphsys.kernels.repair`): the adjacency before the
# change, its out-rows (CSR ``oip``/``oix``) and, directed, its in-rows (CSC ``iip``/``iix``),
# numbered by ``lay``, less the pairs ``bkeys`` deleted before it (rows flagged ``bout``/
# ``bin_``); the inserted edges (``nip``/``nix``, each edge in both ends' rows, counted once
# flipped ``nalive``); and one entry per copy of each pair deleted since in both ends' rows
# (``dip``/``dix``), counted -1 once flipped ``dgone``. A neighbour's weight in a row is the
# sum over its entries: the live edges between the two.
@numba.njit(inline="always")
def _segment(ov, s, w):
    """Entries ``(lo, hi)`` of node ``w`` in segment ``s`` (0 old out, 1 old in, 2 new,
    3 deleted since)."""
    oip, _, iip, _, lay, _, _, _, nip, _, _, dip, _, _, two = ov
    if s == 0:
        return _row(oip, w, lay)
    if s == 1:
        return _row(iip, w, lay) if two else (0, 0)
    if s == 2:
        return nip[w], nip[w + 1]
    return dip[w], dip[w + 1]


@numba.njit(inline="always")
def _entry(ov, s, e, w, n):
    """The neighbour of entry ``e`` of segment ``s`` in ``w``'s row and its count (1, 0 or
    -1)."""
    _, oix, _, iix, lay, bkeys, bout, bin_, _, nix, nalive, _, dix, dgone, _ = ov
    if s == 0:
        y = _id(oix[e], lay)
        return y, 0 if bout[w] and _has(bkeys, w * n + y) >= 0 else 1
    if s == 1:
        y = _id(iix[e], lay)
        return y, 0 if bin_[w] and _has(bkeys, y * n + w) >= 0 else 1
    if s == 2:
        return np.int64(nix[e]), 1 if nalive[e] else 0
    return np.int64(dix[e]), -1 if dgone[e] else 0


@numba.njit(inline="always")
def _tally(count, mark, seen, k, stamp, x, m):
    """Add ``m`` to ``count[x]`` (reset first where ``mark[x]`` is not ``stamp``, then
    listed in ``seen``); returns the neighbours listed."""
    if mark[x] != stamp:
        mark[x] = stamp
        count[x] = 0
        seen[k] = x
        k += 1
    count[x] += m
    return k


@numba.njit(cache=True, nogil=True)
def live_row(ov, n, w, stamp, count, mark, seen):
    """The live edges of ``w`` to each neighbour, read once: ``count[x]`` for each ``x``
    listed in ``seen`` (``mark[x] == stamp``), the segments of :func:`_segment` and the
    counts of :func:`_entry` read one segment after the other (the tuple unpacked once).
    Returns (neighbours listed, entries scanned)."""
    oip, oix, iip, iix, lay, bkeys, bout, bin_, nip, nix, nalive, dip, dix, dgone, two = ov
    k = 0
    lo, hi = _row(oip, w, lay)
    scanned = hi - lo
    for e in range(lo, hi):
        y = _id(oix[e], lay)
        k = _tally(count, mark, seen, k, stamp, y,
                   0 if bout[w] and _has(bkeys, w * n + y) >= 0 else 1)
    if two:
        lo, hi = _row(iip, w, lay)
        scanned += hi - lo
        for e in range(lo, hi):
            y = _id(iix[e], lay)
            k = _tally(count, mark, seen, k, stamp, y,
                       0 if bin_[w] and _has(bkeys, y * n + w) >= 0 else 1)
    for e in range(nip[w], nip[w + 1]):
        k = _tally(count, mark, seen, k, stamp, nix[e], 1 if nalive[e] else 0)
    for e in range(dip[w], dip[w + 1]):
        k = _tally(count, mark, seen, k, stamp, dix[e], -1 if dgone[e] else 0)
    return k, scanned + nip[w + 1] - nip[w] + dip[w + 1] - dip[w]


@numba.njit(cache=True, nogil=True)
def _count(ov, n, core, label, w, k, lab):
    """Live edges of ``w`` to other nodes of core above ``k``, or ``k`` with a label above
    ``lab`` (:data:`_ANY`: of core ``k`` or more, its max-core degree), and the entries
    scanned."""
    c = 0
    scanned = 0
    for s in range(4):
        lo, hi = _segment(ov, s, w)
        scanned += hi - lo
        for e in range(lo, hi):
            x, m = _entry(ov, s, e, w, n)
            if x != w and (core[x] > k or (core[x] == k and label[x] > lab)):
                c += m
    return c, scanned


#: A label below every other (:func:`_count`)
_ANY = np.iinfo(np.int64).min


@numba.njit(cache=True, nogil=True)
def _fall(ov, n, core, od, kept, u, v, k, stamp, mark, cd, out, fresh, seq, fell, budget):
    """After a deletion between ``u`` and ``v`` (``k`` the smaller core): peeling from
    the ends of core ``k``, a node of core ``k`` falls to ``k - 1`` once fewer than ``k``
    of its live edges lead to nodes of core ``k`` or more not fallen; each node's count is
    taken when it is first reached (``mark`` ``stamp``; fallen ``stamp + 1``), without
    the fallen nodes already lowered to ``k - 1``, and lowered as each other falls. The
    fallen go last in the list of core ``k - 1`` in the order they fell (``fell``): each
    had fewer than ``k`` edges to nodes of core ``k`` or more not fallen before it, and
    comes before the nodes of core ``k`` it came after, whose known ``deg+`` it leaves
    (its own is counted anew when needed). Returns the entries scanned (stopping, the
    lists and ``kept`` left as they are, once they pass ``budget``) and the next
    ``seq``."""
    label = od[0]
    deg, has = kept
    top = 0
    scanned = 0
    nf = 0
    for r in (u, v):
        if core[r] == k and mark[r] != stamp and mark[r] != stamp + 1:
            c, work = _count(ov, n, core, label, r, k, _ANY)
            scanned += work
            cd[r] = c
            mark[r] = stamp
            if c < k:
                mark[r] = stamp + 1
                out[top] = r
                top += 1
    while top > 0 and scanned <= budget:
        top -= 1
        w = out[top]
        core[w] = k - 1
        has[w] = False
        fell[nf] = w
        nf += 1
        seq += 1
        # a fallen node's -1 entries first: a count only falls after them, so one below
        # k at any entry stays below once the row is read
        for s in (3, 0, 1, 2):
            lo, hi = _segment(ov, s, w)
            scanned += hi - lo
            for e in range(lo, hi):
                x, m = _entry(ov, s, e, w, n)
                if m == 0 or core[x] != k:
                    continue
                if has[x] and label[x] < label[w]:
                    deg[x] -= m
                if mark[x] != stamp and mark[x] != stamp + 1:  # first reached: counted
                    c, work = _count(ov, n, core, label, x, k, _ANY)  # without w
                    scanned += work
                    cd[x] = c
                    mark[x] = stamp
                    fresh[x] = seq
                elif mark[x] == stamp and fresh[x] != seq:
                    cd[x] -= m
                if mark[x] == stamp and cd[x] < k:
                    mark[x] = stamp + 1
                    out[top] = x
                    top += 1
    for i in range(nf):
        _unlink(od, k, fell[i])
    _place(od, k - 1, od[4][k - 1], fell[:nf])
    return scanned, seq


# -- the k-order --------------------------------------------------------------------------------
# The k-order (Zhang, Yu, Zhang and Qin, ICDE 2017) is a peeling order consistent with the
# core numbers: nodes by core number, those of one core in an order in which each has at
# most its core number of live edges to nodes after it (its ``deg+``). It is kept as one
# doubly linked list per core number ``od = (label, nxt, prv, head, tail, gap)``: ``label``
# int64 (N,) increases along each list (so ``x`` is after ``w`` when its core is larger or
# equal with a larger label), ``nxt``/``prv`` int64 (N,) link a list (-1 at its ends),
# ``head``/``tail`` int64 (levels,) its ends (-1 when empty); labels are spaced ``gap`` apart
# when a list is relabelled, which happens when nodes moved between two leave no room.
_LABEL_LIMIT = 1 << 62


@numba.njit(cache=True, nogil=True)
def order_lists(core, rank, levels, gap):
    """(valid, ``od``): the lists ``od`` (above) of the order in which ``rank`` int64 (N,)
    numbers the nodes (0, 1, ... over the nodes it lists; -1: a node it does not list, of
    core 0, first in that list), ``levels`` lists; ``valid`` False when ``rank`` is not
    such a numbering or ``core`` int64 (N,) falls along it."""
    n = core.shape[0]
    seq = np.full(n, -1, np.int64)
    label, nxt, prv = np.empty(n, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    head, tail = np.full(levels, -1, np.int64), np.full(levels, -1, np.int64)
    od = (label, nxt, prv, head, tail, gap)
    first = 0
    for v in range(n):
        first += rank[v] < 0
    at = 0
    for v in range(n):
        if rank[v] < 0:
            if core[v] != 0:
                return False, od
            seq[at] = v
            at += 1
        elif rank[v] >= n - first or seq[first + rank[v]] >= 0:
            return False, od
        else:
            seq[first + rank[v]] = v
    for i in range(n):
        v = seq[i]
        k = core[v]
        if k >= levels or (i > 0 and k < core[seq[i - 1]]):
            return False, od
        if tail[k] < 0:
            head[k] = v
            label[v] = 0
        else:
            nxt[tail[k]] = v
            prv[v] = tail[k]
            label[v] = label[tail[k]] + gap
        tail[k] = v
    return True, od


@numba.njit(cache=True, nogil=True)
def order_ranks(od, n):
    """Each node's position in the k-order ``od``, int64 (N,)."""
    _, nxt, _, head, _, _ = od
    rank = np.empty(n, np.int64)
    at = 0
    for k in range(head.shape[0]):
        v = head[k]
        while v >= 0:
            rank[v] = at
            at += 1
            v = nxt[v]
    return rank


@numba.njit(cache=True, nogil=True)
def _unlink(od, k, x):
    """Take ``x`` out of the list of core ``k``."""
    _, nxt, prv, head, tail, _ = od
    a, b = prv[x], nxt[x]
    if a >= 0:
        nxt[a] = b
    else:
        head[k] = b
    if b >= 0:
        prv[b] = a
    else:
        tail[k] = a


@numba.njit(cache=True, nogil=True)
def _place(od, k, a, xs):
    """Link the nodes ``xs`` (out of every list), in order, into the list of core ``k``
    right after ``a`` (-1: first), labelled evenly in the room between ``a`` and the node
    after it (the list relabelled first where there is too little)."""
    label, nxt, prv, head, tail, gap = od
    c = xs.shape[0]
    for _ in range(2):
        b = nxt[a] if a >= 0 else head[k]
        lo = label[a] if a >= 0 else (label[b] if b >= 0 else 0) - (c + 1) * gap
        hi = label[b] if b >= 0 else lo + (c + 1) * gap
        if hi - lo > c and -_LABEL_LIMIT < lo and hi < _LABEL_LIMIT:
            break
        x = head[k]
        at = 0
        while x >= 0:
            label[x] = at * gap
            at += 1
            x = nxt[x]
    step = (hi - lo) // (c + 1)
    for i in range(c):
        x = xs[i]
        label[x] = lo + step * (i + 1)
        prv[x] = a
        if a >= 0:
            nxt[a] = x
        else:
            head[k] = x
        a = x
    if c:
        nxt[a] = b
        if b >= 0:
            prv[b] = a
        else:
            tail[k] = a


@numba.njit(inline="always")
def _after(core, label, x, w):
    """Whether ``x`` is after ``w`` in the k-order."""
    return core[x] > core[w] or (core[x] == core[w] and label[x] > label[w])


@numba.njit(cache=True, nogil=True)
def _plus(ov, n, core, label, kept, w):
    """``w``'s live edges to nodes after it in the k-order (its ``deg+``), counted once
    per update and kept (``kept = (deg, has)``: the count, whether it is known; the
    update keeps a known count exact as edges and nodes move), and the entries scanned."""
    deg, has = kept
    if has[w]:
        return deg[w], 0
    c, scanned = _count(ov, n, core, label, w, core[w], label[w])
    deg[w], has[w] = c, True
    return c, scanned


@numba.njit(inline="always")
def _push(heap, size, key, x):
    """Add ``x`` to the binary min-heap ``heap[:size]`` by ``key``; the new size."""
    i = size
    while i > 0:
        p = (i - 1) // 2
        if key[heap[p]] <= key[x]:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = x
    return size + 1


@numba.njit(inline="always")
def _pop(heap, size, key):
    """The smallest of ``heap[:size]`` by ``key``, taken out; the new size."""
    top = heap[0]
    size -= 1
    x = heap[size]
    i = 0
    while 2 * i + 1 < size:
        c = 2 * i + 1
        if c + 1 < size and key[heap[c + 1]] < key[heap[c]]:
            c += 1
        if key[heap[c]] >= key[x]:
            break
        heap[i] = heap[c]
        i = c
    if size > 0:
        heap[i] = x
    return top, size


# states of a node during one insertion, added to its stamp in ``mark``
_QUEUED, _CANDIDATE, _KEPT, _LEAVING, _LEFT = 0, 1, 2, 3, 4


@numba.njit(cache=True, nogil=True)
def _backward(ov, n, label, kept, w, k, st, mark, dstar, dplus, stack, drops, after, nd):
    """A node ``w`` of the scan stays at core ``k`` (before the candidates now, so each
    candidate neighbour loses one of its edges after it): the candidates left with ``k``
    or fewer edges to candidates or nodes after them leave the candidates, one after
    another (written to ``drops``, each to be linked right after ``after``: ``w``, then
    the one before), and take that edge from their candidate neighbours in turn. Returns
    the entries scanned and the new count of ``drops``."""
    scanned = 0
    top = 0
    prev = w
    x = w
    while True:
        for s in (3, 0, 1, 2):  # the -1 entries first: counts only fall after them
            lo, hi = _segment(ov, s, x)
            scanned += hi - lo
            for e in range(lo, hi):
                y, m = _entry(ov, s, e, x, n)
                if m == 0 or y == x:
                    continue
                if mark[y] == st + _CANDIDATE or mark[y] == st + _LEAVING:
                    if x != w and label[y] > label[x]:
                        dstar[y] -= m
                    else:
                        dplus[y] -= m
                    if m > 0 and mark[y] == st + _CANDIDATE and dstar[y] + dplus[y] <= k:
                        mark[y] = st + _LEAVING
                        stack[top] = y
                        top += 1
                elif x != w and mark[y] == st + _QUEUED:
                    dstar[y] -= m
        if top == 0:
            return scanned, nd
        top -= 1
        x = stack[top]
        mark[x] = st + _LEFT
        kept[0][x] = dstar[x] + dplus[x]  # its edges to the candidates, then after it
        drops[nd] = x
        after[nd] = prev
        nd += 1
        prev = x


@numba.njit(cache=True, nogil=True)
def _insert(ov, n, core, od, kept, u, v, st, mark, dstar, dplus, heap, stack, cand, drops,
            after, budget):
    """OrderInsert (Zhang et al.) of the live edge ``u - v``: where the earlier end ``u``
    (core ``k``) now has more than ``k`` edges after it, the nodes of core ``k`` after it
    that its edges reach are scanned in k-order (a heap by label); a node with more than
    ``k`` edges to candidates before it (``dstar``) or to nodes after it (``dplus``)
    becomes a candidate, else it stays (:func:`_backward`). The candidates left rise to
    ``k + 1``, first in that list in their order; those that left follow the node that
    made them leave. Returns the entries scanned (stopping, with nothing moved, once they
    pass ``budget``)."""
    label = od[0]
    if _after(core, label, u, v):
        u, v = v, u
    k = core[u]
    kept[0][u] += kept[1][u]  # the new edge, where u's count is known
    dp, scanned = _plus(ov, n, core, label, kept, u)
    if dp <= k:
        return scanned
    size = _push(heap, 0, label, u)
    mark[u], dstar[u] = st, 0
    nc = nd = 0
    while size > 0:
        if scanned > budget:
            return scanned
        w, size = _pop(heap, size, label)
        if w != u:
            dp, work = _plus(ov, n, core, label, kept, w)
            scanned += work
        if dstar[w] + dp > k:
            mark[w], dplus[w] = st + _CANDIDATE, dp
            cand[nc] = w
            nc += 1
            for s in range(4):
                lo, hi = _segment(ov, s, w)
                scanned += hi - lo
                for e in range(lo, hi):
                    x, m = _entry(ov, s, e, w, n)
                    if m == 0 or core[x] != k or label[x] <= label[w]:
                        continue
                    if mark[x] < st:
                        mark[x], dstar[x] = st, 0
                        size = _push(heap, size, label, x)
                    dstar[x] += m
        else:
            mark[w] = st + _KEPT
            kept[0][w] = dp + dstar[w]  # its candidate neighbours follow it now
            if dstar[w] > 0:
                work, nd = _backward(ov, n, label, kept, w, k, st, mark, dstar, dplus,
                                     stack, drops, after, nd)
                scanned += work
    i = 0
    while i < nd:  # each run of leaving nodes, after the node that made the first leave
        j = i + 1
        while j < nd and after[j] == drops[j - 1]:
            j += 1
        for t in range(i, j):
            _unlink(od, k, drops[t])
        _place(od, k, after[i], drops[i:j])
        i = j
    up = 0
    for t in range(nc):
        if mark[cand[t]] == st + _CANDIDATE:
            _unlink(od, k, cand[t])
            core[cand[t]] = k + 1
            kept[0][cand[t]] = dplus[cand[t]]
            cand[up] = cand[t]
            up += 1
    _place(od, k + 1, -1, cand[:up])
    return scanned


@numba.njit(cache=True, nogil=True)
def overlay_update(ov, n, core, od, d_u, d_v, d_slot_u, d_slot_v, i_u, i_v, i_slot_u,
                   i_slot_v, limit):
    """Core numbers ``core`` int64 (N,) and their k-order ``od`` (changed in place) after
    the copies ``d_u[t] - d_v[t]`` (entries ``d_slot_u/v`` of ``dgone``) are deleted one at
    a time (the nodes that fall, last in the list below in the order they fall), then the
    edges ``i_u - i_v`` (entries of ``nalive``) inserted one at a time (:func:`_insert`),
    over the overlay ``ov`` (see above). Returns (entries scanned, False when that passed
    ``limit`` and the update stopped)."""
    _, _, _, _, _, _, _, _, _, _, nalive, _, _, dgone, _ = ov
    mark = np.zeros(n, np.int64)
    work_a, work_b, work_c = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    work_d, work_e = np.empty(n, np.int64), np.empty(n, np.int64)
    cd, fresh, dplus = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    kept = (np.zeros(n, np.int64), np.zeros(n, np.bool_))
    stamp = 1
    seq = 0
    scanned = 0
    for phase in range(2):
        insert = phase == 1
        ends_u, ends_v = (i_u, i_v) if insert else (d_u, d_v)
        for t in range(ends_u.shape[0]):
            if insert:
                nalive[i_slot_u[t]] = True
                nalive[i_slot_v[t]] = True
            else:
                dgone[d_slot_u[t]] = True
                dgone[d_slot_v[t]] = True
            u, v = ends_u[t], ends_v[t]
            k = min(core[u], core[v])
            if u == v:
                continue
            if insert:
                scanned += _insert(ov, n, core, od, kept, u, v, stamp, mark, cd, dplus,
                                   work_a, work_b, work_c, work_d, work_e, limit - scanned)
            else:
                first = v if _after(core, od[0], u, v) else u
                kept[0][first] -= kept[1][first]  # the deleted edge led after it
                if k > 0:
                    work, seq = _fall(ov, n, core, od, kept, u, v, k, stamp, mark, cd,
                                      work_a, fresh, seq, work_b, limit - scanned)
                    scanned += work
            stamp += 5
            if scanned > limit:
                return scanned, False
    return scanned, True


@numba.njit(cache=True, nogil=True)
def copies(oip, oix, lay, bkeys, bout, n, keys):
    """How many entries of each pair ``keys`` (``u * n + v``) the old out-rows hold, 0 for
    a pair deleted before (``bkeys``)."""
    out = np.zeros(keys.shape[0], np.int64)
    for t in range(keys.shape[0]):
        u, v = keys[t] // n, keys[t] % n
        if bout[u] and _has(bkeys, keys[t]) >= 0:
            continue
        lo, hi = _row(oip, u, lay)
        for e in range(lo, hi):
            if _id(oix[e], lay) == v:
                out[t] += 1
    return out
