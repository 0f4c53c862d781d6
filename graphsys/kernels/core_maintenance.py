"""Core numbers kept up to date under edge insertions and deletions, one edge at a time, by
the traversal of the *subcore* around the changed edge (Sarıyüce et al., "Streaming
algorithms for k-core decomposition", VLDB 2013, its traversal algorithm without the
degree bounds that prune the search).

Adding (or removing) one edge changes a core number by at most one, and only of the nodes
whose core number is ``K``, the smaller of the two ends', that are connected to the end
of core ``K`` through nodes of core ``K`` (its subcore). After an insertion, a node of
the subcore rises to ``K + 1`` exactly when it keeps more than ``K`` neighbours of core
above ``K`` or still in the subcore, once every node that has not is removed (repeatedly);
after a deletion, a node falls to ``K - 1`` when it keeps fewer than ``K`` neighbours of
core ``K`` or more once every such node is removed (repeatedly). The degree is
networkx's ``core_number``'s: every edge listed counts once at each end (in + out on a
directed graph, parallel edges each time; an undirected graph lists each edge once),
self-loops never.

The graph is an overlay of the stored adjacency before the change and the change itself
(below); a batch is applied as deletions first, then insertions, one edge at a time,
which ends at the core numbers of the final graph whatever the order.
:func:`graphsys.bsp.kcore` with ``init=`` runs it (:mod:`graphsys.bsp.incremental_cores`),
and its tests check it against networkx's ``core_number`` after random change sequences.
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
def _above(ov, n, core, w, k):
    """Live edges of ``w`` to other nodes of core ``k`` or more (its max-core degree) and
    the entries scanned."""
    c = 0
    scanned = 0
    for s in range(4):
        lo, hi = _segment(ov, s, w)
        scanned += hi - lo
        for e in range(lo, hi):
            x, m = _entry(ov, s, e, w, n)
            if x != w and core[x] >= k:
                c += m
    return c, scanned


@numba.njit(cache=True, nogil=True)
def _rise(ov, n, core, u, v, k, stamp, mark, queue, cd, out):
    """After an insertion between ``u`` and ``v`` (``k`` the smaller core): the nodes of
    core ``k`` reached from an end of core ``k`` through nodes of core ``k`` with more
    than ``k`` live edges to nodes of core ``k`` or more (only those can rise: a superset
    of the nodes that do), marked ``stamp`` (the others seen ``stamp + 2``); then a
    peeling counting neighbours of core above ``k`` or in the set, and the survivors rise
    to ``k + 1``. Returns the entries scanned."""
    size = 0
    scanned = 0
    for r in (u, v):
        if core[r] == k and mark[r] != stamp and mark[r] != stamp + 2:
            c, work = _above(ov, n, core, r, k)
            scanned += work
            mark[r] = stamp if c > k else stamp + 2
            if c > k:
                queue[size] = r
                size += 1
    head = 0
    while head < size:
        w = queue[head]
        head += 1
        for s in range(3):
            lo, hi = _segment(ov, s, w)
            scanned += hi - lo
            for e in range(lo, hi):
                x, c = _entry(ov, s, e, w, n)
                if c > 0 and core[x] == k and mark[x] != stamp and mark[x] != stamp + 2:
                    c, work = _above(ov, n, core, x, k)
                    scanned += work
                    mark[x] = stamp if c > k else stamp + 2
                    if c > k:
                        queue[size] = x
                        size += 1
    for t in range(size):
        w = queue[t]
        c = 0
        for s in range(4):
            lo, hi = _segment(ov, s, w)
            scanned += hi - lo
            for e in range(lo, hi):
                x, m = _entry(ov, s, e, w, n)
                if x != w and (core[x] > k or mark[x] == stamp):
                    c += m
        cd[w] = c
    top = 0
    for t in range(size):
        w = queue[t]
        if cd[w] <= k:
            mark[w] = stamp + 1
            out[top] = w
            top += 1
    while top > 0:
        top -= 1
        w = out[top]
        for s in (3, 0, 1, 2):  # a removed node's -1 entries first: counts only fall
            lo, hi = _segment(ov, s, w)
            scanned += hi - lo
            for e in range(lo, hi):
                x, m = _entry(ov, s, e, w, n)
                if m != 0 and mark[x] == stamp:
                    cd[x] -= m
                    if m > 0 and cd[x] <= k:
                        mark[x] = stamp + 1
                        out[top] = x
                        top += 1
    for t in range(size):
        if mark[queue[t]] == stamp:
            core[queue[t]] = k + 1
    return scanned


@numba.njit(cache=True, nogil=True)
def _fall(ov, n, core, u, v, k, stamp, mark, cd, out, fresh, seq):
    """After a deletion between ``u`` and ``v`` (``k`` the smaller core): peeling from
    the ends of core ``k``, a node of core ``k`` falls to ``k - 1`` once fewer than ``k``
    of its live edges lead to nodes of core ``k`` or more not fallen; each node's count is
    taken when it is first reached (``mark`` ``stamp``; fallen ``stamp + 1``), without
    the fallen nodes already lowered to ``k - 1``, and lowered as each other falls. Returns
    the entries scanned and the next ``seq``."""
    top = 0
    scanned = 0
    for r in (u, v):
        if core[r] == k and mark[r] != stamp and mark[r] != stamp + 1:
            c, work = _above(ov, n, core, r, k)
            scanned += work
            cd[r] = c
            mark[r] = stamp
            if c < k:
                mark[r] = stamp + 1
                out[top] = r
                top += 1
    while top > 0:
        top -= 1
        w = out[top]
        core[w] = k - 1
        seq += 1
        for s in range(4):  # first reached: counted without w (fallen)
            lo, hi = _segment(ov, s, w)
            scanned += hi - lo
            for e in range(lo, hi):
                x, m = _entry(ov, s, e, w, n)
                if m != 0 and core[x] == k and mark[x] != stamp and mark[x] != stamp + 1:
                    c, work = _above(ov, n, core, x, k)
                    scanned += work
                    cd[x] = c
                    mark[x] = stamp
                    fresh[x] = seq
        for s in (3, 0, 1, 2):  # a fallen node's -1 entries first: counts only fall
            lo, hi = _segment(ov, s, w)
            scanned += hi - lo
            for e in range(lo, hi):
                x, m = _entry(ov, s, e, w, n)
                if m != 0 and mark[x] == stamp and fresh[x] != seq:
                    cd[x] -= m
                if m != 0 and mark[x] == stamp and cd[x] < k:
                    mark[x] = stamp + 1
                    out[top] = x
                    top += 1
    return scanned, seq


@numba.njit(cache=True, nogil=True)
def overlay_update(ov, n, core, d_u, d_v, d_slot_u, d_slot_v, i_u, i_v, i_slot_u, i_slot_v,
                   limit):
    """Core numbers ``core`` int64 (N,) (changed in place) after the copies ``d_u[t] -
    d_v[t]`` (entries ``d_slot_u/v`` of ``dgone``) are deleted one at a time, then the
    edges ``i_u - i_v`` (entries of ``nalive``) inserted one at a time, over the overlay
    ``ov`` (see above). Returns (entries scanned, False when that passed ``limit`` and the
    update stopped)."""
    _, _, _, _, _, _, _, _, _, _, nalive, _, _, dgone, _ = ov
    mark = np.zeros(n, np.int64)
    queue = np.empty(n, np.int64)
    out = np.empty(n, np.int64)
    cd = np.zeros(n, np.int64)
    fresh = np.zeros(n, np.int64)
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
            if u == v or (not insert and k == 0):
                continue
            if insert:
                scanned += _rise(ov, n, core, u, v, k, stamp, mark, queue, cd, out)
            else:
                work, seq = _fall(ov, n, core, u, v, k, stamp, mark, cd, out, fresh, seq)
                scanned += work
            stamp += 3
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
