r"""Numba kernels of Leiden (Traag, Waltman and van Eck, 2019) on one level (the level's
arrays as in :mod:`graphsys.bsp.kernels_community`): the queue-based local moving
(:func:`move_nodes_fast`), the refinement of each community into well-connected parts
(:func:`refine`) and the connected parts of the communities of a labelling
(:func:`connected_parts`).

Leiden's communities are connected because the nodes of every level are: a refined
community grows only by a node joined to it by an entry of positive weight.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.bsp.kernels_community import _best, _gather, _totals


@numba.njit(cache=True, nogil=True)
def move_nodes_fast(sptr, sidx, sw, kout, kin, m, gamma, comm, order, unit=0.0):
    """Leiden's fast local moving: a queue, first holding every node in ``order``; a node
    popped moves to the community of largest gain among its neighbours' and an empty one
    (gain 0: as the paper's MoveNodesFast and igraph's), staying unless another gains
    strictly more; a node that moved queues its neighbours outside its new community that
    are not queued. ``comm`` int64 (n,), labels below n, updated in place; ``unit`` as in
    :func:`~graphsys.bsp.kernels_community.move_nodes`. Returns (moves, nodes visited)."""
    n = kout.shape[0]
    tout, tin = _totals(comm, kout, kin)
    members = np.zeros(n, np.int64)
    for v in range(n):
        members[comm[v]] += 1
    empty = np.empty(n, np.int64)  # a stack of the labels no node holds
    nempty = 0
    for c in range(n - 1, -1, -1):
        if members[c] == 0:
            empty[nempty] = c
            nempty += 1
    nw = np.zeros(n)
    touched = np.empty(n + 1, np.int64)
    queue = order.copy()
    queued = np.ones(n, np.uint8)
    head, size = 0, n
    gamma_m = gamma / m
    moves = 0
    visits = 0
    while size > 0:
        v = queue[head]
        head = head + 1 if head + 1 < n else 0
        size -= 1
        queued[v] = 0
        visits += 1
        cv = comm[v]
        nt = _gather(v, sptr, sidx, sw, comm, nw, touched, unit)
        tout[cv] -= kout[v]
        tin[cv] -= kin[v]
        members[cv] -= 1
        if members[cv] == 0:
            empty[nempty] = cv
            nempty += 1
        best, best_gain, _ = _best(v, cv, nt, touched, nw, kout, kin, tout, tin, gamma_m)
        if best_gain < 0.0:  # (then ``cv`` holds another node: some label is free)
            best = empty[nempty - 1]
        if nempty > 0 and best == empty[nempty - 1]:
            nempty -= 1
        tout[best] += kout[v]
        tin[best] += kin[v]
        members[best] += 1
        if best != cv:
            comm[v] = best
            moves += 1
            for e in range(sptr[v], sptr[v + 1]):
                u = sidx[e]
                if not queued[u] and comm[u] != best:
                    tail = head + size
                    queue[tail - n if tail >= n else tail] = u
                    size += 1
                    queued[u] = 1
    return moves, visits


@numba.njit(cache=True, nogil=True)
def refine(sptr, sidx, sw, kout, kin, m, gamma, theta, comm, order, draws, ref, unit=0.0):
    """Leiden's refinement: within each community of ``comm``, nodes that are still alone
    in the refined partition and well connected to their community (in ``order``) join a
    refined community of the same community that is well connected too, that they are
    joined to by an entry of positive weight (so every refined community is connected)
    and that they do not make worse, drawn with probability proportional to
    ``exp(gain / theta)`` (staying alone among the choices, at gain 0; the gain in units
    of edge weight, as igraph's ``beta``; ``theta`` 0: the best). ``draws`` float64 (n,):
    the caller's seeded uniforms in [0, 1), one per node of ``order``. ``ref`` int64 (n,)
    written: each node's refined community (a node id); ``unit`` as in
    :func:`~graphsys.bsp.kernels_community.move_nodes`. Returns the merges made."""
    n = kout.shape[0]
    ctout = np.zeros(n)
    ctin = np.zeros(n)
    for v in range(n):
        ctout[comm[v]] += kout[v]
        ctin[comm[v]] += kin[v]
    rtout = kout.copy()
    rtin = kin.copy()
    ext = np.zeros(n)  # symmetrised weight from a refined community to the rest of its own
    for v in range(n):
        ref[v] = v
        cv = comm[v]
        for e in range(sptr[v], sptr[v + 1]):
            if comm[sidx[e]] == cv:
                ext[v] += (unit if unit > 0.0 else sw[e])
    alone = np.ones(n, np.uint8)
    nw = np.zeros(n)
    touched = np.empty(n + 1, np.int64)
    gains = np.empty(n + 1)
    gamma_m = gamma / m
    merges = 0
    for i in range(n):
        v = order[i]
        if not alone[v]:
            continue
        c = comm[v]
        if ext[v] < gamma_m * (kout[v] * (ctin[c] - kin[v]) + kin[v] * (ctout[c] - kout[v])):
            continue  # not well connected to its community
        nt = 0
        for e in range(sptr[v], sptr[v + 1]):
            u = sidx[e]
            if comm[u] != c:
                continue
            r = ref[u]
            w = unit if unit > 0.0 else sw[e]
            if nw[r] == 0.0 and w != 0.0:  # (a zero weight adds nothing: never listed)
                touched[nt] = r
                nt += 1
            nw[r] += w
        best, best_gain = v, 0.0
        total = 0.0
        kept = 0
        for j in range(nt):
            r = touched[j]
            ok = ext[r] >= gamma_m * (rtout[r] * (ctin[c] - rtin[r])
                                      + rtin[r] * (ctout[c] - rtout[r]))
            g = nw[r] - gamma_m * (kout[v] * rtin[r] + kin[v] * rtout[r])
            if ok and g >= 0.0:
                touched[kept] = r
                gains[kept] = g
                kept += 1
                if g > best_gain:
                    best, best_gain = r, g
        if kept > 0 and theta > 0.0:  # draw: exp(gain / theta), staying alone at gain 0
            scale = 0.5 / theta  # the gains here are in symmetrised weight
            for j in range(kept):
                total += np.exp((gains[j] - best_gain) * scale)
            total += np.exp(-best_gain * scale)
            x = draws[i] * total
            best = v
            for j in range(kept):
                x -= np.exp((gains[j] - best_gain) * scale)
                if x < 0.0:
                    best = touched[j]
                    break
        for e in range(sptr[v], sptr[v + 1]):  # (``touched`` now holds the kept ones)
            nw[ref[sidx[e]]] = 0.0
        if best == v:
            continue
        link = 0.0
        for e in range(sptr[v], sptr[v + 1]):
            if ref[sidx[e]] == best:
                link += (unit if unit > 0.0 else sw[e])
        ref[v] = best
        alone[v] = 0
        alone[best] = 0
        rtout[best] += kout[v]
        rtin[best] += kin[v]
        ext[best] += ext[v] - 2.0 * link
        merges += 1
    return merges


@numba.njit(cache=True, nogil=True)
def connected_parts(sptr, sidx, sw, comm, out, unit=0.0):
    """``out`` int64 (n,) = the connected part of its community of ``comm`` that each node
    is in: nodes of one community joined by a path of entries of positive weight (``unit``
    > 0: every entry), numbered 0.. in order of their smallest node; returns the number of
    parts (the number of communities where each is connected)."""
    n = comm.shape[0]
    out[:] = -1
    stack = np.empty(n, np.int64)
    parts = 0
    for s in range(n):
        if out[s] >= 0:
            continue
        c = comm[s]
        out[s] = parts
        stack[0] = s
        top = 1
        while top > 0:
            top -= 1
            v = stack[top]
            for e in range(sptr[v], sptr[v + 1]):
                u = sidx[e]
                if out[u] < 0 and comm[u] == c and (unit > 0.0 or sw[e] > 0.0):
                    out[u] = parts
                    stack[top] = u
                    top += 1
        parts += 1
    return parts
