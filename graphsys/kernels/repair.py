r"""Weakly connected components and shortest distances repaired after edges were deleted,
re-weighted and inserted, in numba, reading only the part of the graph the change reaches.

Both read the graph after the change as an *overlay*: the adjacency before it (CSR
``oip``/``oix``/``ow`` and CSC ``iip``/``iix``/``iw``; weights empty: 1) with the pairs of
``dkeys`` skipped and those of ``ukeys`` given the weight ``uw`` (keys ``u * n + v`` of
global ids, sorted; looked up only in the rows ``dout``/``din`` flag), plus the inserted
edges (CSR ``nip``/``nix``/``nw``, CSC ``mip``/``mix``/``mw``).

* :func:`wcc_race`: in each old component that lost an edge, a search grows from every
  endpoint of a deleted edge (a *group*), the one that has scanned least first; two groups
  that meet are merged, a group whose search ends is a component of its own. Once a
  component has at most one group still growing, that group and every node not reached
  keep the old component: every deleted edge's ends are then connected, or lie in a closed
  group, so any old path between two such nodes is still one. Where the seeds are many,
  one group starts as the *anchor*: a few nodes of largest degree with their neighbours
  through the edges that remain (connected without a search), so a seed next to a hub
  joins it at once; the anchor's nodes are not searched, so a group holding it never
  closes.
* :func:`distance_repair`: KickStarter-style trimming [1]_ then relaxation. A target of a
  deleted or re-weighted edge keeps its distance when an in-neighbour still valid offers
  it exactly from strictly below; otherwise it is invalidated, and so, in turn, are the
  out-neighbours it offered their distance to. Invalidated nodes take the best offer of
  their valid in-neighbours, the inserted and re-weighted edges are relaxed once, and a
  Dijkstra-ordered relaxation runs from every node so lowered to the fixed point: every
  edge's constraint holds and every value is the length of a path of the new graph, so
  the distances are those of a run from scratch.

The adjacency before the change may be numbered as it was before an append grew the
partitions (a stored index read as built): ``lay`` is ``(old_start, new_start, old_size)``
int64 per partition block, and the kernels translate the rows and ids they touch; empty
arrays where the numbering is the current one. Both stop (returning False) once they have
scanned ``limit`` edges.

References
----------
.. [1] K. Vora, R. Gupta and G. Xu, "KickStarter: Fast and Accurate Computations on
   Streaming Graphs via Trimmed Approximations", ASPLOS 2017.
"""

from __future__ import annotations

import numba
import numpy as np

#: How many of the seeds of largest degree may join :func:`wcc_race`'s anchor: on a graph
#: with hubs, most ends of deleted edges neighbour one, and join the anchor unsearched
ANCHOR_HUBS = 8

#: :func:`wcc_race` builds its anchor (a pass over the old offsets and the hubs' rows) where
#: the seeds are at least this share of the old adjacency's nodes: fewer are searched sooner
ANCHOR_MIN_SEEDS = 1 / 256

#: ... and where the largest degree is at least this many times the mean (a hub): without
#: one, an anchor is a stretch of the graph the searches would have to reach
ANCHOR_HUB_RATIO = 16


@numba.njit(inline="always")
def _has(keys, k):
    """Index of ``k`` in sorted ``keys``, or -1."""
    i = np.searchsorted(keys, k)
    return i if i < keys.shape[0] and keys[i] == k else -1


@numba.njit(inline="always")
def _within(keys, first, last, k):
    """Whether ``k`` is in sorted ``keys[first:last]``."""
    i = first + np.searchsorted(keys[first:last], k)
    return i < last and keys[i] == k


@numba.njit(inline="always")
def _w(weights, e):
    return 1.0 if weights.shape[0] == 0 else np.float64(weights[e])


@numba.njit(inline="always")
def _row(ip, x, lay):
    """The entries ``(lo, hi)`` of node ``x`` (current id) in the old adjacency ``ip``
    numbered by ``lay``: empty for a node added since."""
    old_start, new_start, old_size = lay
    if old_start.shape[0] == 0:
        return ip[x], ip[x + 1]
    b = np.searchsorted(new_start, x, side="right") - 1
    at = x - new_start[b]
    if at >= old_size[b]:
        return 0, 0
    r = old_start[b] + at
    return ip[r], ip[r + 1]


@numba.njit(inline="always")
def _id(y, lay):
    """The current id of ``y``, an id of the old adjacency numbered by ``lay``."""
    old_start, new_start, _ = lay
    if old_start.shape[0] == 0:
        return np.int64(y)
    b = np.searchsorted(old_start, y, side="right") - 1
    return np.int64(y - old_start[b] + new_start[b])


@numba.njit(inline="always")
def _nbr(ip, ix, e, lay):
    """The current id of old adjacency entry ``e``, checked against the rows of ``ip``: a
    stored index is mapped with its offsets checked and its ids not (O(M) reads a repair
    avoids), so each id read is checked here."""
    y = ix[e]
    if y < 0 or y >= ip.shape[0] - 1:
        raise IndexError("an adjacency index holds a node id out of range (corrupted)")
    return _id(y, lay)


@numba.njit(inline="always")
def _span(ip, x, old, lay):
    """How many entries node ``x`` has in ``ip`` (``old``: numbered by ``lay``)."""
    if old:
        lo, hi = _row(ip, x, lay)
        return hi - lo
    return ip[x + 1] - ip[x]


@numba.njit(cache=True, nogil=True)
def _heap_push(hk, hv, size, key, value):
    """Push ``(key, value)`` on the binary min-heap ``hk``/``hv`` of ``size`` entries;
    returns the arrays (grown when full) and the new size."""
    if size == hk.shape[0]:
        hk2 = np.empty(max(16, 2 * size), np.float64)
        hv2 = np.empty(max(16, 2 * size), np.int64)
        hk2[:size] = hk[:size]
        hv2[:size] = hv[:size]
        hk, hv = hk2, hv2
    i = size
    while i > 0:
        p = (i - 1) // 2
        if hk[p] <= key:
            break
        hk[i], hv[i] = hk[p], hv[p]
        i = p
    hk[i], hv[i] = key, value
    return hk, hv, size + 1


@numba.njit(cache=True, nogil=True)
def _heap_pop(hk, hv, size):
    """Remove the smallest entry; returns it and the new size."""
    key, value = hk[0], hv[0]
    size -= 1
    lk, lv = hk[size], hv[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and hk[c + 1] < hk[c]:
            c += 1
        if hk[c] >= lk:
            break
        hk[i], hv[i] = hk[c], hv[c]
        i = c
    if size > 0:
        hk[i], hv[i] = lk, lv
    return key, value, size


@numba.njit(cache=True, nogil=True)
def _root(parent, g):
    while parent[g] != g:
        parent[g] = parent[parent[g]]
        g = parent[g]
    return g


@numba.njit(cache=True, nogil=True)
def _cost(oip, iip, lay, head, spent, g):
    """A group's priority: the edges it scanned plus those its next node has, rounded up
    to a power of two, then its next node's id (rows read in id order where the costs are
    alike: they lie near one another in the adjacency)."""
    v = head[g]
    cost = spent[g] + _span(oip, v, True, lay) + _span(iip, v, True, lay)
    bits = 0
    while cost > 0:
        cost >>= 1
        bits += 1
    return float(bits * (1 << 40) + v)  # exact: ids below 2**31


@numba.njit(cache=True, nogil=True)
def _meet(x, g, c, ip, ix, lay, flagged, keys, n, owner, group, head, tail, nxt, spent,
          growing, counted):
    """Scan one side of ``x``'s old edges for group ``g``: queue the unreached neighbours
    in it, merge the groups met (their queues joined). ``keys``: the deleted pairs of that
    side as ``x * n + y`` (``y`` the neighbour), sorted, so that ``x``'s lie in one range,
    found once (``flagged``: ``x`` has some). Returns the group."""
    lo, hi = _row(ip, x, lay)
    first = last = 0
    if flagged:
        first, last = np.searchsorted(keys, x * n), np.searchsorted(keys, x * n + n)
    for e in range(lo, hi):
        y = _nbr(ip, ix, e, lay)
        if last > first and _within(keys, first, last, x * n + y):
            continue
        if owner[y] < 0:
            owner[y] = g
            if tail[g] < 0:
                head[g] = y
            else:
                nxt[tail[g]] = y
            tail[g] = y
            continue
        h = _root(group, owner[y])
        if h != g:  # two groups meet: one fewer growing (an anchor holding no seed is none)
            lo, hi = min(g, h), max(g, h)
            group[hi] = lo
            if tail[lo] < 0:
                head[lo], tail[lo] = head[hi], tail[hi]
            elif tail[hi] >= 0:
                nxt[tail[lo]] = head[hi]
                tail[lo] = tail[hi]
            spent[lo] += spent[hi]
            if counted[g] and counted[h]:
                growing[c] -= 1
            counted[lo] = counted[g] or counted[h]
            g = lo
    return g


@numba.njit(inline="always")
def _side(side, x, n, oip, oix, iip, iix, lay, dkeys, tkeys, dout, din):
    """Node ``x``'s old out-row (``side`` 0) or in-row (1): ``(ip, ix, deleted keys of that
    side, lo, hi, first, last)``, its deleted pairs ``keys[first:last]`` (found only where
    ``x`` has some)."""
    ip, ix = (oip, oix) if side == 0 else (iip, iix)
    keys = dkeys if side == 0 else tkeys
    lo, hi = _row(ip, x, lay)
    first = last = 0
    if dout[x] if side == 0 else din[x]:
        first, last = np.searchsorted(keys, x * n), np.searchsorted(keys, x * n + n)
    return ip, ix, keys, lo, hi, first, last


@numba.njit(cache=True, nogil=True)
def _anchor(n, oip, oix, iip, iix, lay, dkeys, tkeys, dout, din, comp, owner, mark,
            hub_ratio):
    """Mark ``owner[x] = mark`` for the *anchor* of :func:`wcc_race`: the node of the
    largest degree (old edges, both sides), the hub, with its neighbours through the edges
    that remain, then each other of the :data:`ANCHOR_HUBS` largest that is already marked,
    in degree order, with its neighbours: nodes connected after the change without a search
    of them, all in the hub's old component. Returns ``(hub, entries scanned)``; hub -1
    (nothing marked) where the largest degree is below ``hub_ratio`` times the mean (no
    hub) or the hub is in no old component."""
    rows = oip.shape[0] - 1
    k = min(ANCHOR_HUBS, rows)
    top = np.full(k, -1, np.int64)  # old rows by degree, descending
    span = np.zeros(k, np.int64)
    for r in range(rows):  # one pass over the offsets, in order
        s = oip[r + 1] - oip[r] + iip[r + 1] - iip[r]
        if k == 0 or s <= span[k - 1] and top[k - 1] >= 0:
            continue
        j = k - 1
        while j > 0 and (top[j - 1] < 0 or span[j - 1] < s):
            top[j], span[j] = top[j - 1], span[j - 1]
            j -= 1
        top[j], span[j] = r, s
    mean = (oip[rows] - oip[0] + iip[rows] - iip[0]) / max(rows, 1)
    if k == 0 or span[0] < hub_ratio * mean or comp[_id(top[0], lay)] < 0:
        return -1, 0  # no hub (a road graph, a path), or one the old result does not list
    hub = _id(top[0], lay)
    owner[hub] = mark
    work = 0
    for j in range(k):
        h = _id(top[j], lay)
        if owner[h] != mark:
            continue  # not known connected to the hub
        for side in range(2):
            ip, ix, keys, lo, hi, first, last = _side(side, h, n, oip, oix, iip, iix, lay,
                                                      dkeys, tkeys, dout, din)
            for e in range(lo, hi):
                y = _nbr(ip, ix, e, lay)
                if owner[y] < 0 and not (last > first and _within(keys, first, last,
                                                                  h * n + y)):
                    owner[y] = mark
            work += hi - lo
    return hub, work


def wcc_race(n, oip, oix, iip, iix, lay, dkeys, tkeys, dout, din, comp, num_comps, seeds,
             limit):
    """Split the old components that lost an edge (module docstring): each group searches
    breadth-first, the group that has scanned the fewest edges (counting its next node's;
    within a factor of two, :func:`_cost`) first, so the searches from the ends of one
    deleted edge meet at about the cost of the smaller.

    ``comp`` int64 (N,): each node's old component (0..``num_comps``-1; -1 for a node the
    old result does not list); ``seeds`` int64: distinct ends of deleted edges, each in an
    old component. Returns ``(key, work, done)``: ``key`` int64 (N,) the node's component
    after the deletions (alone, without the inserted edges): ``comp``, or ``num_comps``
    plus the group's first seed for a node of a group that closed. ``dkeys``/``tkeys``: the
    deleted pairs as ``u * n + v`` and as ``v * n + u``, each sorted."""
    owner = np.full(n, -1, np.int32)  # int32: a repair reads fewer than 2**31 nodes
    ns = seeds.shape[0]
    hub, work = -1, 0
    if ns >= ANCHOR_MIN_SEEDS * (oip.shape[0] - 1):
        hub, work = _anchor(n, oip, oix, iip, iix, lay, dkeys, tkeys, dout, din, comp,
                            owner, ns, float(ANCHOR_HUB_RATIO))
    if hub >= 0:  # the seeds next to the anchor join it (in parallel: most of them)
        joined, bad = np.zeros(ns, np.bool_), np.zeros(ns, np.bool_)
        work += _next_to(n, oip, oix, iip, iix, lay, dkeys, tkeys, dout, din, seeds, owner,
                         ns, joined, bad)
        if bad.any():
            raise IndexError("an adjacency index holds a node id out of range (corrupted)")
        owner[seeds[joined]] = ns
    return _race(n, oip, oix, iip, iix, lay, dkeys, tkeys, dout, din, comp, num_comps, seeds,
                 limit, owner, hub, work)


@numba.njit(cache=True, nogil=True, parallel=True)
def _next_to(n, oip, oix, iip, iix, lay, dkeys, tkeys, dout, din, seeds, owner, mark, out,
             bad):
    """``out[i]``: whether seed ``i`` is marked or has a neighbour marked ``mark`` in
    ``owner`` through an edge that remains (``bad[i]``: its rows hold an id out of range);
    returns the entries scanned."""
    work = 0
    for i in numba.prange(seeds.shape[0]):
        x = seeds[i]
        if owner[x] == mark:
            out[i] = True
            continue
        scanned = 0
        for side in range(2):
            ip, ix, keys, lo, hi, first, last = _side(side, x, n, oip, oix, iip, iix, lay,
                                                      dkeys, tkeys, dout, din)
            for e in range(lo, hi):
                scanned += 1
                y = ix[e]
                if y < 0 or y >= ip.shape[0] - 1:
                    bad[i] = True  # checked as _nbr does, without a raise (which is serial)
                    break
                y = _id(y, lay)
                if owner[y] == mark and not (last > first and _within(keys, first, last,
                                                                      x * n + y)):
                    out[i] = True
                    break
            if out[i] or bad[i]:
                break
        work += scanned
    return work


@numba.njit(cache=True, nogil=True)
def _race(n, oip, oix, iip, iix, lay, dkeys, tkeys, dout, din, comp, num_comps, seeds, limit,
          owner, hub, work):
    """:func:`wcc_race` once the anchor is marked in ``owner`` (``hub``: -1, none)."""
    ns = seeds.shape[0]
    nxt = np.full(n, -1, np.int32)
    group = np.arange(ns + 1).astype(np.int32)  # group ns: the anchor
    head = np.full(ns + 1, -1, np.int64)
    head[:ns] = seeds
    tail = head.copy()
    spent = np.zeros(ns + 1, np.int64)
    queued = np.full(ns + 1, np.inf)
    closed = np.zeros(ns + 1, np.bool_)
    growing = np.zeros(num_comps, np.int64)
    hk, hv, size = np.empty(16, np.float64), np.empty(16, np.int64), 0
    # the anchor counts as a growing group once it holds a seed: one holding none only
    # joins the groups that reach it, and leaves the last of them settled as before
    counted = np.ones(ns + 1, np.bool_)
    counted[ns] = False
    for i in range(ns):
        if owner[seeds[i]] == ns:
            group[i] = ns  # next to a hub: joined to the anchor without a search
            if not counted[ns]:
                counted[ns] = True
                growing[comp[hub]] += 1
            continue
        owner[seeds[i]] = i
        growing[comp[seeds[i]]] += 1
        queued[i] = _cost(oip, iip, lay, head, spent, i)
    # the groups' first turns in one sorted list, their later turns in a heap: the smaller
    # of the two heads goes next
    searching = np.flatnonzero(queued[:ns] < np.inf)  # not joined to the anchor
    first = searching[np.argsort(queued[searching], kind="mergesort")]
    at = 0
    while at < first.shape[0] or size > 0:
        if size > 0 and (at == first.shape[0] or hk[0] < queued[first[at]]):
            key, g, size = _heap_pop(hk, hv, size)
        else:
            g = first[at]
            key = queued[g]
            at += 1
        if group[g] != g or closed[g] or key != queued[g]:
            continue  # merged into another group, or queued again since
        c = comp[seeds[g]]
        if growing[c] <= 1:
            continue  # settled: the last growing group keeps the old component
        x = head[g]
        head[g] = nxt[x]
        if head[g] < 0:
            tail[g] = -1
        g = _meet(x, g, c, oip, oix, lay, dout[x], dkeys, n, owner, group, head, tail, nxt,
                  spent, growing, counted)
        g = _meet(x, g, c, iip, iix, lay, din[x], tkeys, n, owner, group, head, tail, nxt,
                  spent, growing, counted)
        scanned = _span(oip, x, True, lay) + _span(iip, x, True, lay)
        spent[g] += scanned
        work += scanned
        if work > limit:
            return comp, work, False
        if head[g] < 0:
            if hub >= 0 and _root(group, owner[hub]) == g:
                continue  # holds the anchor, whose nodes were not searched: stays open
            if growing[c] > 1:  # its search ended: a component of its own
                closed[g] = True
                growing[c] -= 1
        else:
            queued[g] = _cost(oip, iip, lay, head, spent, g)
            hk, hv, size = _heap_push(hk, hv, size, queued[g], g)
    key = comp.copy()
    for v in range(n):
        if owner[v] >= 0:
            g = _root(group, owner[v])
            if closed[g]:
                key[v] = num_comps + g
    return key, work, True


@numba.njit(inline="always")
def _old_edge(dkeys, ukeys, uw, flagged, k, w):
    """The weight of an old edge with key ``k`` after the change (-1: deleted)."""
    if flagged:
        if _has(dkeys, k) >= 0:
            return -1.0
        i = _has(ukeys, k)
        if i >= 0:
            return np.float64(uw[i])
    return w


@numba.njit(inline="always")
def _step(ws, e, old, dkeys, ukeys, uw, flagged, k, offset, use_w):
    """The step along adjacency entry ``e`` of key ``k`` (``old``: an old edge, read through
    the change; -1: deleted)."""
    w = _w(ws, e)
    if old:
        w = _old_edge(dkeys, ukeys, uw, flagged, k, w)
        if w < 0:
            return -1.0
    return offset + (w if use_w else 0.0)


@numba.njit(cache=True, nogil=True)
def _offers(v, n, d, invalid, offset, use_w, ip, ix, ws, old, lay, dkeys, ukeys, uw, flagged,
            below):
    """The smallest ``d[u] + step`` over one adjacency of ``v``'s in-edges from valid
    ``u`` (``old``: the old edges, through the change); with ``below``, only offers from
    ``d[u] < d[v]``, returning at the first that equals ``d[v]``, and an old edge looked up
    in the change only where its stored weight makes such an offer (a re-weighted edge
    offers at most what it did: where it does not, ``v`` is invalidated and takes its
    best offer, the same distance where nothing moved it)."""
    best = np.inf
    lo, hi = _row(ip, v, lay) if old else (ip[v], ip[v + 1])
    for e in range(lo, hi):
        u = _nbr(ip, ix, e, lay) if old else np.int64(ix[e])
        if invalid[u] or d[u] == np.inf or below and (
                d[u] >= d[v] or d[u] + offset + (_w(ws, e) if use_w else 0.0) != d[v]):
            continue
        step = _step(ws, e, old, dkeys, ukeys, uw, flagged, u * n + v, offset, use_w)
        if step < 0:
            continue
        c = d[u] + step
        if below:
            if d[u] < d[v] and c == d[v]:
                return c
        elif c < best:
            best = c
    return best


@numba.njit(cache=True, nogil=True)
def _dependants(v, n, d, invalid, offset, use_w, ip, ix, ws, old, lay, dkeys, ukeys, uw,
                flagged, stack, top):
    """Push on ``stack`` the valid out-neighbours of ``v`` whose distance ``v`` offered
    exactly; returns the stack and its top."""
    lo, hi = _row(ip, v, lay) if old else (ip[v], ip[v + 1])
    for e in range(lo, hi):
        x = _nbr(ip, ix, e, lay) if old else np.int64(ix[e])
        step = _step(ws, e, old, dkeys, ukeys, uw, flagged, v * n + x, offset, use_w)
        if step >= 0 and not invalid[x] and d[x] == d[v] + step:
            if top == stack.shape[0]:
                grown = np.empty(2 * top + 16, np.int64)
                grown[:top] = stack[:top]
                stack = grown
            stack[top] = x
            top += 1
    return stack, top


@numba.njit(cache=True, nogil=True)
def _relax(u, n, d, offset, use_w, ip, ix, ws, old, lay, dkeys, ukeys, uw, flagged, hk, hv,
           size):
    """Lower ``u``'s out-neighbours through one adjacency; returns the heap."""
    lo, hi = _row(ip, u, lay) if old else (ip[u], ip[u + 1])
    for e in range(lo, hi):
        x = _nbr(ip, ix, e, lay) if old else np.int64(ix[e])
        step = _step(ws, e, old, dkeys, ukeys, uw, flagged, u * n + x, offset, use_w)
        c = d[u] + step
        if step >= 0 and c < d[x]:
            d[x] = c
            hk, hv, size = _heap_push(hk, hv, size, c, x)
    return hk, hv, size


@numba.njit(cache=True, nogil=True)
def distance_repair(n, d, offset, use_w, oip, oix, ow, nip, nix, nw, iip, iix, iw, mip, mix,
                    mw, lay, dkeys, ukeys, uw, dout, din, checks, es, ed, estep, source,
                    limit):
    """Repair the distances ``d`` float64 (N,) (module docstring) in place: ``checks`` are
    the targets of deleted and re-weighted edges, ``es -> ed`` the inserted and re-weighted
    edges (``estep`` float64: the step along each); an edge's step is ``offset`` plus its
    weight where ``use_w``. Returns ``(invalidated, relaxed, work, done)``."""
    invalid = np.zeros(n, np.bool_)
    stack, top, work, gone = checks.copy(), checks.shape[0], 0, 0
    while top > 0:
        top -= 1
        v = stack[top]
        if v == source or invalid[v] or d[v] == np.inf:
            continue
        work += _span(iip, v, True, lay) + mip[v + 1] - mip[v]
        if _offers(v, n, d, invalid, offset, use_w, iip, iix, iw, True, lay, dkeys, ukeys, uw,
                   din[v], True) == d[v] or _offers(
                v, n, d, invalid, offset, use_w, mip, mix, mw, False, lay, dkeys, ukeys, uw,
                False, True) == d[v]:
            continue  # still offered its distance from below
        invalid[v] = True
        gone += 1
        work += _span(oip, v, True, lay) + nip[v + 1] - nip[v]
        stack, top = _dependants(v, n, d, invalid, offset, use_w, oip, oix, ow, True, lay, dkeys,
                                 ukeys, uw, dout[v], stack, top)
        stack, top = _dependants(v, n, d, invalid, offset, use_w, nip, nix, nw, False, lay, dkeys,
                                 ukeys, uw, False, stack, top)
        if work > limit:
            return gone, 0, work, False
    lost = np.flatnonzero(invalid)
    for v in lost:
        d[v] = np.inf
    hk, hv, size = np.empty(16, np.float64), np.empty(16, np.int64), 0
    for v in lost:
        d[v] = min(_offers(v, n, d, invalid, offset, use_w, iip, iix, iw, True, lay, dkeys, ukeys,
                           uw, din[v], False),
                   _offers(v, n, d, invalid, offset, use_w, mip, mix, mw, False, lay, dkeys, ukeys,
                           uw, False, False))
        work += _span(iip, v, True, lay) + mip[v + 1] - mip[v]
    for v in lost:  # offers between invalidated nodes are relaxed below
        if d[v] < np.inf:
            hk, hv, size = _heap_push(hk, hv, size, d[v], v)
    for k in range(es.shape[0]):  # an unchanged node's other edges hold already
        c = d[es[k]] + estep[k]
        if c < d[ed[k]]:
            d[ed[k]] = c
            hk, hv, size = _heap_push(hk, hv, size, c, ed[k])
    relaxed = 0
    while size > 0:
        k, u, size = _heap_pop(hk, hv, size)
        if k > d[u]:
            continue  # lowered since it was pushed
        relaxed += 1
        work += _span(oip, u, True, lay) + nip[u + 1] - nip[u]
        hk, hv, size = _relax(u, n, d, offset, use_w, oip, oix, ow, True, lay, dkeys, ukeys, uw,
                              dout[u], hk, hv, size)
        hk, hv, size = _relax(u, n, d, offset, use_w, nip, nix, nw, False, lay, dkeys, ukeys, uw,
                              False, hk, hv, size)
        if work > limit:
            return gone, relaxed, work, False
    return gone, relaxed, work, True
