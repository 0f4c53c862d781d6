r"""Numba kernels of modularity-based community detection (in memory, CPU): Louvain's local
moving (:func:`move_nodes`), the aggregation of a level (:func:`aggregate`) and the
modularity of a labelling (:func:`modularity`); Leiden's own kernels are in
:mod:`graphsys.bsp.kernels_leiden`.

A level is a graph of ``n`` nodes held as its *symmetrised* adjacency without self
entries: ``S = A + A^T`` off the diagonal (``sptr`` int64 (n+1,), ``sidx`` (nnz,) of the
stored adjacency's index type, int32 or int64, on every level, ``sw`` float64 (nnz,), or
empty where every entry weighs the same ``unit``, which the kernels take instead),
the arc weight of each node's self-loops ``loops`` (``A_ii``), its out- and in-strengths
``kout``/``kin`` (row and column sums of ``A``, loops included) and
``m``, the total arc weight. Modularity with resolution :math:`\gamma` is Leicht and
Newman's directed form

.. math::
    Q = \frac{1}{m} \sum_c \Big( W_c - \gamma \frac{K^{out}_c K^{in}_c}{m} \Big),

:math:`W_c` the arc weight inside community :math:`c`, :math:`K_c` its summed strengths;
an undirected graph is the special case of symmetric arcs (each edge stored both ways, a
self-loop once with twice its weight), where it is Newman's :math:`\sum_c L_c/M -
\gamma (d_c / 2M)^2` (networkx's :func:`~networkx.algorithms.community.modularity`). The
gain of putting node :math:`v` (taken out of its community) into community :math:`c` is,
times :math:`m`, :math:`S_{vc} - \gamma (k^{out}_v K^{in}_c + k^{in}_v K^{out}_c)/m`
(:math:`S_{vc}` the symmetrised weight between :math:`v` and :math:`c`).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always")
def _gather(v, sptr, sidx, sw, comm, nw, touched, unit=0.0):
    """Sum ``v``'s symmetrised weights per neighbouring community into ``nw`` (zeros on
    entry) and list those communities in ``touched``; returns how many. ``unit`` > 0:
    every weight is ``unit`` (``sw`` is not read)."""
    nt = 0
    for e in range(sptr[v], sptr[v + 1]):
        c = comm[sidx[e]]
        w = unit if unit > 0.0 else sw[e]
        touched[nt] = c  # kept where ``c`` is new: no branch on a hard-to-predict test
        nt += (nw[c] == 0.0) & (w != 0.0)  # (a zero weight adds nothing: never listed)
        nw[c] += w
    return nt


@numba.njit(inline="always")
def _best(v, cv, nt, touched, nw, kout, kin, tout, tin, gamma_m):
    """The community of largest gain for ``v`` (already taken out of ``cv``): ``cv`` unless
    another one gains strictly more; ``nw`` is left zero. Returns (community, its gain, the
    gain of ``cv``)."""
    stay = nw[cv] - gamma_m * (kout[v] * tin[cv] + kin[v] * tout[cv])
    best, best_gain = cv, stay
    for i in range(nt):
        c = touched[i]
        g = nw[c] - gamma_m * (kout[v] * tin[c] + kin[v] * tout[c])
        nw[c] = 0.0
        if g > best_gain:
            best, best_gain = c, g
    nw[cv] = 0.0
    return best, best_gain, stay


@numba.njit(inline="always")
def _totals(comm, kout, kin):
    """Summed out- and in-strengths per community of ``comm``."""
    n = kout.shape[0]
    tout = np.zeros(n)
    tin = np.zeros(n)
    for v in range(n):
        tout[comm[v]] += kout[v]
        tin[comm[v]] += kin[v]
    return tout, tin


@numba.njit(inline="always")
def _move(v, cv, sptr, sidx, sw, comm, nw, touched, kout, kin, tout, tin, gamma_m,
          unit=0.0):
    """Take ``v`` out of ``cv``, put it into its best community (:func:`_best`) and update
    the totals (not ``comm``); ``nw`` is left zero; every symmetrised weight ``unit`` where
    it is positive. Returns :func:`_best`'s answer."""
    nt = _gather(v, sptr, sidx, sw, comm, nw, touched, unit)
    tout[cv] -= kout[v]
    tin[cv] -= kin[v]
    best, best_gain, stay = _best(v, cv, nt, touched, nw, kout, kin, tout, tin, gamma_m)
    tout[best] += kout[v]
    tin[best] += kin[v]
    return best, best_gain, stay


@numba.njit(inline="always")
def _move_sym(v, cv, sptr, sidx, sw, unit, comm, nw, touched, k, tot, gamma2_m):
    """:func:`_move` where ``kout`` is ``kin`` (an undirected level): one array of
    strengths ``k`` and of totals ``tot``, the gain ``S_vc - 2 gamma k_v K_c / m`` (the
    same floating-point value as :func:`_best`'s: a doubling is exact); every
    symmetrised weight ``unit`` where it is positive (unweighted: ``sw`` not read)."""
    nt = _gather(v, sptr, sidx, sw, comm, nw, touched, unit)
    kv = k[v]
    tot[cv] -= kv
    stay = nw[cv] - gamma2_m * (kv * tot[cv])
    best, best_gain = cv, stay
    for i in range(nt):
        c = touched[i]
        g = nw[c] - gamma2_m * (kv * tot[c])
        nw[c] = 0.0
        if g > best_gain:
            best, best_gain = c, g
    nw[cv] = 0.0
    tot[best] += kv
    return best, best_gain, stay


@numba.njit(inline="always")
def _move_count(v, cv, sptr, sidx, unit, comm, count, touched, k, tot, gamma2_m):
    """:func:`_move_sym` on an unweighted level: the entries to each neighbouring
    community counted in ``count`` (int32, zeros on entry and left so), the weight
    between ``v`` and a community ``unit`` times the count (the same floating-point value
    as the sum of that many ``unit`` weights: both are exact; an integer add is the
    shorter step where consecutive entries hit one community)."""
    nt = 0
    for e in range(sptr[v], sptr[v + 1]):
        c = comm[sidx[e]]
        touched[nt] = c
        nt += count[c] == 0
        count[c] += 1
    kv = k[v]
    tot[cv] -= kv
    stay = unit * count[cv] - gamma2_m * (kv * tot[cv])
    best, best_gain = cv, stay
    for i in range(nt):
        c = touched[i]
        g = unit * count[c] - gamma2_m * (kv * tot[c])
        count[c] = 0
        if g > best_gain:
            best, best_gain = c, g
    count[cv] = 0
    tot[best] += kv
    return best, best_gain, stay


@numba.njit(cache=True, nogil=True)
def move_nodes(sptr, sidx, sw, kout, kin, m, gamma, comm, order, tol, share, max_sweeps,
               boundary_only, unit, sym):
    """Louvain's local moving: sweeps over the nodes in ``order``, each node moving to the
    neighbouring community of largest modularity gain (staying unless another gains
    strictly more), until a sweep moves no node, gains at most ``tol`` in modularity or
    less than ``share`` times what the sweeps before it gained, or ``max_sweeps`` ran.
    A sweep visits only the nodes a neighbour of which moved since their last visit, less
    those in the community moved into (Ozaki, Tezuka and Inaba's pruning, with Leiden's
    rule). ``comm`` int64 (n,) updated in place. ``boundary_only``: the first sweep visits
    only the nodes with a neighbour in another community. ``sym``: ``kout`` equals ``kin`` (an
    undirected level; one array of totals is kept); ``unit`` > 0: every entry of ``sw``
    equals it (an unweighted level 0; ``sw`` is not read). Returns (moves, sweeps,
    modularity gained, nodes visited)."""
    n = kout.shape[0]
    tout, tin = _totals(comm, kout, kin)
    counted = sym and unit > 0.0 and sptr[n] < 2**31  # (:func:`_move_count`: int32)
    nw = np.zeros(0 if counted else n)
    count = np.zeros(n if counted else 0, np.int32)
    touched = np.empty(n + 1, np.int64)
    stale = np.ones(n, np.uint8)
    if boundary_only:
        for v in range(n):
            stale[v] = 0
            cv = comm[v]
            for e in range(sptr[v], sptr[v + 1]):
                if comm[sidx[e]] != cv:
                    stale[v] = 1
                    break
    gamma_m = gamma / m
    moves = 0
    visits = 0
    gained = 0.0
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        moved = 0
        sweep_gain = 0.0
        for i in range(n):
            v = order[i]
            if not stale[v]:
                continue
            stale[v] = 0
            visits += 1
            cv = comm[v]
            if counted:
                best, best_gain, stay = _move_count(v, cv, sptr, sidx, unit, comm, count,
                                                    touched, kout, tout, 2.0 * gamma_m)
            elif sym:
                best, best_gain, stay = _move_sym(v, cv, sptr, sidx, sw, unit, comm, nw,
                                                  touched, kout, tout, 2.0 * gamma_m)
            else:
                best, best_gain, stay = _move(v, cv, sptr, sidx, sw, comm, nw, touched,
                                              kout, kin, tout, tin, gamma_m, unit)
            if best != cv:
                comm[v] = best
                moved += 1
                sweep_gain += best_gain - stay
                for e in range(sptr[v], sptr[v + 1]):
                    u = sidx[e]
                    stale[u] |= comm[u] != best  # (no branch: hard to predict)
        moves += moved
        before = gained
        gained += sweep_gain / m
        if moved == 0 or sweep_gain / m <= tol or sweep_gain / m < share * before:
            break
    return moves, sweeps, gained, visits


@numba.njit(cache=True, nogil=True)
def by_degree(sptr, order):
    """``order`` (int64 (n,)) stably sorted by the nodes' entry counts in ``sptr``, fewest
    first (a counting sort)."""
    n = order.shape[0]
    top = 0
    for v in range(n):
        top = max(top, sptr[v + 1] - sptr[v])
    start = np.zeros(top + 2, np.int64)
    for v in range(n):
        start[sptr[v + 1] - sptr[v] + 1] += 1
    for d in range(top + 1):
        start[d + 1] += start[d]
    out = np.empty(n, np.int64)
    for i in range(n):
        v = order[i]
        d = sptr[v + 1] - sptr[v]
        out[start[d]] = v
        start[d] += 1
    return out


@numba.njit(cache=True, nogil=True)
def relabel(comm, out):
    """``out`` int64 (n,) = ``comm`` renumbered 0..C-1 in order of first appearance;
    returns C."""
    n = comm.shape[0]
    new = np.full(n, -1, np.int64)
    c = 0
    for v in range(n):
        x = comm[v]
        if new[x] == -1:
            new[x] = c
            c += 1
        out[v] = new[x]
    return c


@numba.njit(cache=True, nogil=True)
def smallest_member(comm, out):
    """``out`` (n,) = each node's group in ``comm`` (labels 0..n-1) named by the group's
    smallest node id, in one pass (the first node met with a label is its smallest);
    returns the number of groups."""
    n = comm.shape[0]
    first = np.full(n, -1, np.int64)
    groups = 0
    for v in range(n):
        c = comm[v]
        if first[c] < 0:
            first[c] = v
            groups += 1
        out[v] = first[c]
    return groups


#: :func:`aggregate` groups a level's entries by community in a buffer (the rows then read
#: in storage order) where the buffer takes at most this many bytes; past it, it reads
#: each community's members' rows in turn and writes no buffer
AGGREGATE_BUFFER_BYTES = 1 << 30


@numba.njit(inline="always")
def _tally(c, d, w, unit, acc, count, touched, nt, inside):
    """:func:`aggregate`'s step for one entry of community ``c`` to community ``d`` of
    weight ``w``: inside weight, or the weight to ``d`` (``unit`` > 0: counted) and ``d``
    listed in ``touched`` the first time (a zero weight adds nothing: not listed).
    Returns (listed, inside)."""
    if d == c:
        return nt, inside + w
    if unit > 0.0:
        touched[nt] = d
        nt += count[d] == 0
        count[d] += 1
    elif w != 0.0:
        if acc[d] == 0.0:
            touched[nt] = d
            nt += 1
        acc[d] += w
    return nt, inside


@numba.njit(cache=True, nogil=True)
def aggregate(sptr, sidx, sw, loops, kout, kin, comm, ncomm, unit,
              buffer_bytes=AGGREGATE_BUFFER_BYTES):
    """The level whose nodes are the communities ``comm`` (int64 (n,), 0..ncomm-1): the
    symmetrised weights between communities summed, the weight inside each one its
    self-loop arcs, strengths summed; ``unit`` > 0: every entry of ``sw`` equals it (not
    read; the entries to each community are counted). Returns (sptr, sidx, sw, loops,
    kout, kin). Where the entries' communities (and weights) fit ``buffer_bytes`` the rows
    are read in storage order into a buffer grouped by community, else each community's
    members' rows in turn; the same level either way."""
    n = kout.shape[0]
    start = np.zeros(ncomm + 1, np.int64)
    nloops = np.zeros(ncomm)
    nkout = np.zeros(ncomm)
    nkin = np.zeros(ncomm)
    for v in range(n):
        c = comm[v]
        start[c + 1] += sptr[v + 1] - sptr[v]
        nloops[c] += loops[v]
        nkout[c] += kout[v]
        nkin[c] += kin[v]
    for c in range(ncomm):
        start[c + 1] += start[c]
    nnz = sidx.shape[0]
    buffered = nnz * (sidx.itemsize + (0 if unit > 0.0 else 8)) <= buffer_bytes
    other = np.empty(nnz if buffered else 0, sidx.dtype)  # neighbour communities, by
    weight = np.empty(nnz if buffered and unit <= 0.0 else 0)  # community, and weights
    mstart = np.zeros(1 if buffered else ncomm + 1, np.int64)  # or the nodes, by
    members = np.empty(0 if buffered else n, np.int64)  # community
    if buffered:
        fill = start[:-1].copy()
        for v in range(n):
            c = comm[v]
            f = fill[c]
            for e in range(sptr[v], sptr[v + 1]):
                other[f] = comm[sidx[e]]
                if unit <= 0.0:
                    weight[f] = sw[e]
                f += 1
            fill[c] = f
    else:
        for v in range(n):
            mstart[comm[v] + 1] += 1
        for c in range(ncomm):
            mstart[c + 1] += mstart[c]
        fill = mstart[:-1].copy()
        for v in range(n):
            members[fill[comm[v]]] = v
            fill[comm[v]] += 1
    nptr = np.zeros(ncomm + 1, np.int64)
    nidx = np.empty(nnz, sidx.dtype)
    nsw = np.empty(nnz)
    acc = np.zeros(0 if unit > 0.0 else ncomm)  # summed weights, or
    count = np.zeros(ncomm if unit > 0.0 else 0, np.int64)  # entries of weight ``unit``
    touched = np.empty(ncomm, np.int64)
    k = 0
    for c in range(ncomm):
        nt = 0
        inside = 0.0
        if buffered and unit > 0.0:  # (the hot loops written out: through _tally they
            for i in range(start[c], start[c + 1]):  # run slower)
                d = other[i]
                if d == c:
                    inside += unit
                    continue
                touched[nt] = d
                nt += count[d] == 0
                count[d] += 1
        elif buffered:
            for i in range(start[c], start[c + 1]):
                d = other[i]
                w = weight[i]
                if d == c:
                    inside += w
                    continue
                if acc[d] == 0.0 and w != 0.0:  # (a zero weight adds nothing: not listed)
                    touched[nt] = d
                    nt += 1
                acc[d] += w
        else:
            for i in range(mstart[c], mstart[c + 1]):  # the members' rows in turn
                v = members[i]
                for e in range(sptr[v], sptr[v + 1]):
                    nt, inside = _tally(c, comm[sidx[e]], unit if unit > 0.0 else sw[e],
                                        unit, acc, count, touched, nt, inside)
        nloops[c] += 0.5 * inside  # each arc inside is in S twice, once per end
        for j in range(nt):
            d = touched[j]
            nidx[k] = d
            if unit > 0.0:
                nsw[k] = unit * count[d]
                count[d] = 0
            else:
                nsw[k] = acc[d]
                acc[d] = 0.0
            k += 1
        nptr[c + 1] = k
    return nptr, nidx[:k], nsw[:k], nloops, nkout, nkin  # (pages past k never touched)


@numba.njit(cache=True, nogil=True)
def modularity(sptr, sidx, sw, loops, kout, kin, m, gamma, comm, unit=0.0):
    """Modularity of ``comm`` (int64 (n,), labels 0..n-1) at resolution ``gamma``;
    ``unit`` > 0: every entry of ``sw`` equals it (not read)."""
    n = kout.shape[0]
    inside = 0.0
    tout = np.zeros(n)
    tin = np.zeros(n)
    for v in range(n):
        c = comm[v]
        tout[c] += kout[v]
        tin[c] += kin[v]
        inside += loops[v]
        half = 0.0
        for e in range(sptr[v], sptr[v + 1]):
            if comm[sidx[e]] == c:
                half += unit if unit > 0.0 else sw[e]
        inside += 0.5 * half
    expected = 0.0
    for c in range(n):
        expected += tout[c] * tin[c]
    return inside / m - gamma * expected / (m * m)


@numba.njit(inline="always")
def _weight(w, e):
    return np.float64(w[e]) if w.shape[0] > 0 else 1.0


#: :func:`symmetrise` writes ``S`` in visit order (``visit_order``) where the largest
#: degree is at least this many times the mean: the hubs of a social graph
VISIT_ORDER_SKEW = 32.0


def symmetrise(out_ptr, out_idx, out_w, in_ptr, in_idx, in_w, two_ways, scale, loop_scale,
               visit_order=False):
    """The level-0 arrays of a stored adjacency: each node's out-entries (and in-entries
    when ``two_ways``) other than self-loops, weights times ``scale``, as ``S``; the
    self-loop entries' weights times ``loop_scale`` as ``loops``; weights ``out_w``/``in_w``
    float32 (E,), or empty for 1. Unweighted (both empty): ``sw`` is empty, every entry of
    ``S`` weighing ``scale`` (a level's ``unit``), and where ``S`` is the stored
    adjacency itself (one way, no self-loop) ``sidx`` is ``out_idx``, not a copy.
    ``visit_order``: where ``S`` is written and its degrees are skewed
    (:data:`VISIT_ORDER_SKEW`), its nodes are renumbered in Louvain's first-level order
    (:func:`by_degree`), so the sweeps read the arrays in storage order; ``ids[i]`` is the
    stored node that node ``i`` is. Returns (sptr, sidx, sw, loops, the row sums of
    ``S``, ids: int64 (n,), or None where the nodes keep their ids)."""
    sptr, loops = _symmetrised_rows(out_ptr, out_idx, out_w, in_ptr, in_idx, two_ways,
                                    loop_scale)
    weighted = out_w.shape[0] > 0 or (two_ways and in_w.shape[0] > 0)
    if not weighted and not two_ways and sptr[-1] == out_ptr[-1]:  # S is the stored rows
        return (out_ptr, out_idx, np.empty(0), loops,
                scale * np.diff(out_ptr).astype(np.float64), None)
    n = len(sptr) - 1
    deg = np.diff(sptr)
    ids = None
    if visit_order and n and deg.max() >= VISIT_ORDER_SKEW * max(deg.mean(), 1.0):
        ids = by_degree(sptr, np.arange(n, dtype=np.int64))
        inv = np.empty(n, np.int64)
        inv[ids] = np.arange(n, dtype=np.int64)
        wptr = np.zeros(n + 1, np.int64)
        np.cumsum(deg[ids], out=wptr[1:])
        loops = loops[ids]
    else:
        ids, inv, wptr = np.empty(0, np.int64), np.empty(0, np.int64), sptr
    sidx, sw, rows = _symmetrised_fill(out_ptr, out_idx, out_w, in_ptr, in_idx, in_w,
                                       two_ways, scale, wptr, weighted, ids, inv)
    if not weighted:
        rows = scale * np.diff(wptr).astype(np.float64)
    for a in (wptr, sidx):  # read-only, as the mapped rows of the branch above: one
        a.flags.writeable = False  # signature of each level-0 kernel, whichever branch
    return wptr, sidx, sw, loops, rows, ids if len(ids) else None


@numba.njit(cache=True, nogil=True, parallel=True)
def _symmetrised_rows(out_ptr, out_idx, out_w, in_ptr, in_idx, two_ways, loop_scale):
    """:func:`symmetrise`'s row pointers and self-loop weights."""
    n = out_ptr.shape[0] - 1
    sptr = np.zeros(n + 1, np.int64)
    loops = np.zeros(n)
    for v in numba.prange(n):
        k = 0
        for e in range(out_ptr[v], out_ptr[v + 1]):
            if out_idx[e] == v:
                loops[v] += loop_scale * _weight(out_w, e)
            else:
                k += 1
        if two_ways:
            for e in range(in_ptr[v], in_ptr[v + 1]):
                if in_idx[e] != v:
                    k += 1
        sptr[v + 1] = k
    for v in range(n):
        sptr[v + 1] += sptr[v]
    return sptr, loops


@numba.njit(cache=True, nogil=True, parallel=True)
def _symmetrised_fill(out_ptr, out_idx, out_w, in_ptr, in_idx, in_w, two_ways, scale, sptr,
                      weighted, ids, inv):
    """:func:`symmetrise`'s entries (``sw`` empty unless ``weighted``) and row sums; row
    ``r`` is stored node ``ids[r]``'s, entries renumbered by ``inv`` (both empty: the
    stored ids)."""
    n = out_ptr.shape[0] - 1
    sidx = np.empty(sptr[n], out_idx.dtype)
    sw = np.empty(sptr[n] if weighted else 0)
    rows = np.empty(n if weighted else 0)
    renumber = ids.shape[0] > 0
    for r in numba.prange(n):
        v = np.int64(ids[r]) if renumber else np.int64(r)
        k = sptr[r]
        total = 0.0
        for e in range(out_ptr[v], out_ptr[v + 1]):
            u = out_idx[e]
            if u != v:
                sidx[k] = inv[u] if renumber else u
                if weighted:
                    sw[k] = scale * _weight(out_w, e)
                    total += sw[k]
                k += 1
        if two_ways:
            for e in range(in_ptr[v], in_ptr[v + 1]):
                u = in_idx[e]
                if u != v:
                    sidx[k] = inv[u] if renumber else u
                    if weighted:
                        sw[k] = scale * _weight(in_w, e)
                        total += sw[k]
                    k += 1
        if weighted:
            rows[r] = total
    return sidx, sw, rows
