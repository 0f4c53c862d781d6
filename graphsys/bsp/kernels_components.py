"""Numba kernels of the whole-graph component and peeling methods (in memory, CPU):
strongly connected components (:func:`scc_pivot`, :func:`scc_tarjan`, :func:`reach`), k-core
peeling (:func:`core_numbers`: the bucket queue; :func:`core_levels`: level by level), the
greedy colouring (:func:`greedy_coloring`) and semi-synchronous
label propagation (:func:`lpa_semi_sync`).

Every kernel reads an adjacency as (``indptr`` int64 (N+1,), ``indices`` int32/int64 (E,));
a directed graph passes both its CSR (out-neighbours) and CSC (in-neighbours), an
undirected one (both directions stored) its CSR twice with ``two_ways`` False.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def reach(indptr, indices, start, alive, mark, stamp, queue):
    """Mark every vertex reachable from ``start`` along ``indptr``/``indices`` among those
    with ``alive[v]`` (uint8) with ``mark[v] = stamp`` (int64 (N,)); ``queue`` int64 (N,)
    scratch. Returns the number marked."""
    mark[start] = stamp
    queue[0] = start
    head, tail = 0, 1
    while head < tail:
        u = queue[head]
        head += 1
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if alive[v] and mark[v] != stamp:
                mark[v] = stamp
                queue[tail] = v
                tail += 1
    return tail


@numba.njit(parallel=True, cache=True, nogil=True)
def _reach_both(out_ptr, out_idx, in_ptr, in_idx, pivot, alive, fwd, bwd, qa, qb):
    """The forward and the backward closure of ``pivot`` at once, one per thread."""
    for side in numba.prange(2):
        if side == 0:
            reach(out_ptr, out_idx, pivot, alive, fwd, 1, qa)
        else:
            reach(in_ptr, in_idx, pivot, alive, bwd, 1, qb)


@numba.njit(cache=True, nogil=True)
def _tarjan(indptr, indices, alive, comp):
    """Tarjan's algorithm (iterative) over the vertices with ``alive[v]`` (uint8): writes
    ``comp[v]`` = the smallest id of ``v``'s strongly connected component for each of
    them. Returns the edges read."""
    n = indptr.shape[0] - 1
    index = np.full(n, -1, np.int64)
    low = np.empty(n, np.int64)
    on_stack = np.zeros(n, np.uint8)
    stack = np.empty(n, np.int64)
    call_v = np.empty(n, np.int64)
    call_e = np.empty(n, np.int64)
    sp = 0
    counter = 0
    read = 0
    for root in range(n):
        if not alive[root] or index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack[sp] = root
        sp += 1
        on_stack[root] = 1
        call_v[0] = root
        call_e[0] = indptr[root]
        depth = 1
        while depth > 0:
            v = call_v[depth - 1]
            e = call_e[depth - 1]
            end = indptr[v + 1]
            descended = False
            while e < end:
                w = indices[e]
                e += 1
                read += 1
                if not alive[w]:
                    continue
                if index[w] == -1:
                    call_e[depth - 1] = e
                    index[w] = low[w] = counter
                    counter += 1
                    stack[sp] = w
                    sp += 1
                    on_stack[w] = 1
                    call_v[depth] = w
                    call_e[depth] = indptr[w]
                    depth += 1
                    descended = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if descended:
                continue
            depth -= 1
            if low[v] == index[v]:  # v roots a component: the stack down to v
                top = sp
                smallest = v
                while True:
                    sp -= 1
                    w = stack[sp]
                    on_stack[w] = 0
                    if w < smallest:
                        smallest = w
                    if w == v:
                        break
                for i in range(sp, top):
                    comp[stack[i]] = smallest
            if depth > 0:
                u = call_v[depth - 1]
                if low[v] < low[u]:
                    low[u] = low[v]
    return read


@numba.njit(cache=True, nogil=True)
def scc_tarjan(indptr, indices, comp):
    """Strongly connected components of the CSR graph: ``comp`` int64 (N,) written with
    each vertex's smallest component member. Returns the edges read."""
    alive = np.ones(indptr.shape[0] - 1, np.uint8)
    return _tarjan(indptr, indices, alive, comp)


def scc_pivot(out_ptr, out_idx, in_ptr, in_idx, comp) -> tuple[int, int]:
    """Strongly connected components by one forward-backward split, then Tarjan: the
    component of the vertex of largest in x out degree (on power-law graphs the giant one)
    is the intersection of its forward and backward closures, found by two breadth-first
    searches on two threads; Tarjan labels the vertices outside it. ``comp`` int64 (N,)
    is written with each vertex's smallest component member. Returns (edges read, size of
    the pivot's component)."""
    n = len(out_ptr) - 1
    if n == 0:
        return 0, 0
    deg = np.diff(out_ptr) * np.diff(in_ptr)
    pivot = int(np.argmax(deg))
    alive = np.ones(n, np.uint8)
    fwd = np.zeros(n, np.int64)
    bwd = np.zeros(n, np.int64)
    _reach_both(out_ptr, out_idx, in_ptr, in_idx, pivot, alive, fwd, bwd,
                np.empty(n, np.int64), np.empty(n, np.int64))
    giant = (fwd == 1) & (bwd == 1)
    members = np.flatnonzero(giant)
    comp[members] = members[0]
    alive = (~giant).astype(np.uint8)
    read = _tarjan(out_ptr, out_idx, alive, comp)
    reached = np.flatnonzero((fwd == 1) | (bwd == 1))
    return int(read + (out_ptr[reached + 1] - out_ptr[reached]).sum()
               + (in_ptr[reached + 1] - in_ptr[reached]).sum()), len(members)


@numba.njit(inline="always")
def _peel(ptr, idx, v, dv, deg, pos, vert, bins):
    """Lower the degree of each neighbour ``u`` of ``v`` in the list ``ptr``/``idx``
    whose degree exceeds ``dv``, moving ``u`` one bucket down. Returns the entries read."""
    for e in range(ptr[v], ptr[v + 1]):
        u = idx[e]
        du = deg[u]
        if u == v or du <= dv:
            continue
        pu = pos[u]
        pw = bins[du]
        w = vert[pw]
        if u != w:  # swap u to the front of its bucket, then shrink the bucket
            pos[u] = pw
            vert[pu] = w
            pos[w] = pu
            vert[pw] = u
        bins[du] += 1
        deg[u] = du - 1
    return ptr[v + 1] - ptr[v]


@numba.njit(cache=True, nogil=True)
def core_numbers(out_ptr, out_idx, in_ptr, in_idx, two_ways, deg, core):
    """Batagelj-Zaversnik's O(m) bucket-queue peeling: ``core`` int64 (N,) written with
    every vertex's core number. ``deg`` int32 or int64 (N,) (consumed): the degree each
    vertex starts with (self-loops left out: the kernel skips entries ``v -> v``);
    neighbours are the out-list, plus the in-list when ``two_ways``. The bucket arrays take
    ``deg``'s dtype (int32 halves the random accesses' cache footprint). Returns the edges
    read."""
    n = deg.shape[0]
    if n == 0:
        return 0
    top = 0
    for v in range(n):
        if deg[v] > top:
            top = deg[v]
    bins = np.zeros(top + 2, deg.dtype)
    for v in range(n):
        bins[deg[v]] += 1
    start = 0
    for d in range(top + 1):
        count = bins[d]
        bins[d] = start
        start += count
    pos = np.empty(n, deg.dtype)
    vert = np.empty(n, deg.dtype)
    for v in range(n):
        pos[v] = bins[deg[v]]
        vert[pos[v]] = v
        bins[deg[v]] += 1
    for d in range(top, 0, -1):
        bins[d] = bins[d - 1]
    bins[0] = 0
    read = 0
    for i in range(n):
        v = vert[i]
        dv = deg[v]
        core[v] = dv
        read += _peel(out_ptr, out_idx, v, dv, deg, pos, vert, bins)
        if two_ways:
            read += _peel(in_ptr, in_idx, v, dv, deg, pos, vert, bins)
    return read


@numba.njit(cache=True, nogil=True)
def peel_degrees(out_ptr, out_idx, in_ptr, two_ways, loops, count_loops, deg):
    """The degrees k-core peeling starts from, in one pass: ``deg[v]`` (int32 or
    int64 (N,), written) = the out-entries of ``v`` (plus its in-entries when
    ``two_ways``) less its self-loops, once per list they are in. ``loops`` int64 (N,):
    each vertex's stored entries ``v -> v``, counted here from the CSR when
    ``count_loops`` (written), else read."""
    for v in range(deg.shape[0]):
        lo, hi = out_ptr[v], out_ptr[v + 1]
        if count_loops:
            c = 0
            for e in range(lo, hi):
                if out_idx[e] == v:
                    c += 1
            loops[v] = c
        d = hi - lo - loops[v]
        if two_ways:
            d += in_ptr[v + 1] - in_ptr[v] - loops[v]
        deg[v] = d


@numba.njit(inline="always")
def _mark_colors(ptr, idx, v, color, used):
    for e in range(ptr[v], ptr[v + 1]):
        c = color[idx[e]]
        if c >= 0:
            used[c] = v


@numba.njit(cache=True, nogil=True)
def greedy_coloring(out_ptr, out_idx, in_ptr, in_idx, two_ways, order, color):
    """Greedy colouring in ``order`` (int64 (N,)): each vertex takes the smallest colour
    none of its already coloured neighbours holds (networkx's ``greedy_color``).
    ``color`` int64 (N,) written. Returns the number of colours."""
    n = order.shape[0]
    for v in range(n):
        color[v] = -1
    used = np.full(n + 1, -1, np.int64)  # used[c] == v: colour c taken by a neighbour of v
    ncolors = 0
    for i in range(n):
        v = order[i]
        _mark_colors(out_ptr, out_idx, v, color, used)
        if two_ways:
            _mark_colors(in_ptr, in_idx, v, color, used)
        c = 0
        while used[c] == v:
            c += 1
        color[v] = c
        if c + 1 > ncolors:
            ncolors = c + 1
    return ncolors


@numba.njit(inline="always")
def _count_labels(ptr, idx, v, label, count, touched, nt):
    for e in range(ptr[v], ptr[v + 1]):
        lab = label[idx[e]]
        if count[lab] == 0:
            touched[nt] = lab
            nt += 1
        count[lab] += 1
    return nt


@numba.njit(inline="always")
def _prec_max(v, out_ptr, out_idx, in_ptr, in_idx, two_ways, label, count, touched):
    """Vertex ``v``'s label under the Prec-Max rule: the most frequent label among its
    neighbour entries, its own label where that is among the most frequent, else the
    largest of them. ``count`` int64 (N,) zeros on entry and exit."""
    nt = _count_labels(out_ptr, out_idx, v, label, count, touched, 0)
    if two_ways:
        nt = _count_labels(in_ptr, in_idx, v, label, count, touched, nt)
    if nt == 0:
        return label[v]
    best = 0
    for i in range(nt):
        c = count[touched[i]]
        if c > best:
            best = c
    own = label[v]
    keep = count[own] == best
    top = -1
    for i in range(nt):
        lab = touched[i]
        if count[lab] == best and lab > top:
            top = lab
        count[lab] = 0
    return own if keep else top


@numba.njit(cache=True, nogil=True)
def lpa_semi_sync(out_ptr, out_idx, in_ptr, in_idx, two_ways, color, ncolors, label,
                  max_rounds, changes):
    """Semi-synchronous label propagation (Cordasco and Gargano): rounds over the colour
    classes in order, each vertex of a class taking its Prec-Max label (:func:`_prec_max`;
    a class holds no two neighbours, so updating it in place is updating it at once).
    ``label`` int64 (N,) updated in place; ``changes`` int64 (max_rounds,) written with the
    labels changed per round. Stops after a round that changes nothing. Returns the rounds
    run."""
    n = label.shape[0]
    bins = np.zeros(ncolors + 1, np.int64)
    for v in range(n):
        bins[color[v] + 1] += 1
    for c in range(ncolors):
        bins[c + 1] += bins[c]
    members = np.empty(n, np.int64)
    fill = bins[:-1].copy()
    for v in range(n):
        members[fill[color[v]]] = v
        fill[color[v]] += 1
    count = np.zeros(n, np.int64)
    touched = np.empty(n, np.int64)
    for r in range(max_rounds):
        changed = 0
        for c in range(ncolors):
            for i in range(bins[c], bins[c + 1]):
                v = members[i]
                new = _prec_max(v, out_ptr, out_idx, in_ptr, in_idx, two_ways, label, count,
                                touched)
                if new != label[v]:
                    label[v] = new
                    changed += 1
        changes[r] = changed
        if changed == 0:
            return r + 1
    return max_rounds


@numba.njit(inline="always")
def _drop(ptr, idx, v, k, deg, done, queue, tail):
    """Lower the degree of ``v``'s neighbours not yet removed; queue those that fall to
    ``k``. Returns the new queue tail."""
    for e in range(ptr[v], ptr[v + 1]):
        u = idx[e]
        if done[u]:
            continue
        d = deg[u] - 1
        deg[u] = d
        if d <= k:
            done[u] = 1
            queue[tail] = u
            tail += 1
    return tail


@numba.njit(cache=True, nogil=True)
def core_levels(out_ptr, out_idx, in_ptr, in_idx, two_ways, deg, core):
    """Core numbers by peeling level by level (the order of Kabir and Madduri's PKC, run
    on one thread): for k = 0, 1, ..., remove every vertex of degree at most k, and those
    whose degree falls to k as their neighbours go, with core number k. Per edge one
    read-modify-write of ``deg`` and a test of ``done`` (BZ's bucket queue touches four
    arrays); the vertices left are compacted after each level, which also gives the next
    level (their smallest degree). ``deg`` int32/int64 (N,) consumed (self-loops left
    out; entries ``v -> v`` are skipped since ``v`` is removed first); ``core`` int64 (N,)
    written. Returns the edges read."""
    n = deg.shape[0]
    done = np.zeros(n, np.uint8)
    left = np.arange(n)
    queue = np.empty(n, np.int64)
    nleft = n
    read = 0
    k = 0
    if n:
        k = deg[0]
        for v in range(n):
            if deg[v] < k:
                k = deg[v]
    while nleft > 0:
        tail = 0
        for i in range(nleft):
            v = left[i]
            if not done[v] and deg[v] <= k:
                done[v] = 1
                queue[tail] = v
                tail += 1
        head = 0
        while head < tail:
            v = queue[head]
            head += 1
            core[v] = k
            tail = _drop(out_ptr, out_idx, v, k, deg, done, queue, tail)
            read += out_ptr[v + 1] - out_ptr[v]
            if two_ways:
                tail = _drop(in_ptr, in_idx, v, k, deg, done, queue, tail)
                read += in_ptr[v + 1] - in_ptr[v]
        kept = 0
        low = -1
        for i in range(nleft):
            v = left[i]
            if not done[v]:
                left[kept] = v
                kept += 1
                if low < 0 or deg[v] < low:
                    low = deg[v]
        nleft = kept
        k = max(k + 1, low)
    return read
