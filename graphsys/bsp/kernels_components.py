"""Numba kernels of the whole-graph component methods (in memory, CPU): strongly connected
components (:func:`scc_multistep`), the greedy colouring (:func:`greedy_coloring`) and
semi-synchronous label propagation (:func:`lpa_semi_sync`); core numbers are
:mod:`graphsys.kernels.cores`'.

Every kernel reads an adjacency as (``indptr`` int64 (N+1,), ``indices`` int32/int64 (E,));
a directed graph passes both its CSR (out-neighbours) and CSC (in-neighbours), an
undirected one (both directions stored) its CSR twice with ``two_ways`` False.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.kernels.bfs import first_marked

#: Direction-optimizing closure (Beamer, Asanovic, Patterson): the top-down steps turn
#: bottom-up when the frontier's out-entries exceed 1/ALPHA of those not yet scanned, and
#: back when a bottom-up sweep finds fewer than 1/BETA of the vertices (the GAP
#: benchmark's constants), at most BOTTOM_UP_RUNS times: a sweep costs a pass over the
#: vertices, so at most BETA + BOTTOM_UP_RUNS sweeps run, whatever the graph
ALPHA, BETA, BOTTOM_UP_RUNS = 15, 18, 4


@numba.njit(cache=True, nogil=True)
def _closure(ptr, idx, rptr, ridx, pivot, vis, queue, entries):
    """Mark ``vis[v] = 1`` for every vertex reachable from ``pivot`` along ``ptr``/``idx``
    through vertices with ``vis[v] == 0`` (uint8 (N,); 2: left out). ``rptr``/``ridx``:
    the reverse lists, for the bottom-up sweeps; ``queue`` (N,) scratch; ``entries``: the
    forward entries of the vertices left in. Bottom-up sweeps mark a vertex as soon as one
    in-neighbour is marked (marked in any earlier step or earlier in the same sweep), so
    after a sweep that marks the set F every unmarked vertex with a marked in-neighbour has
    one in F: the top-down steps resume from F, and a sweep that marks nothing ends the
    closure. Returns the entries read (a sweep rereads the in-entries of the vertices it
    does not reach)."""
    n = vis.shape[0]
    vis[pivot] = 1
    queue[0] = pivot
    lo, hi = 0, 1  # the frontier: queue[lo:hi]
    scout = ptr[pivot + 1] - ptr[pivot]
    left = entries - scout
    read = 0
    runs = 0
    while lo < hi:
        if scout > left // ALPHA and runs < BOTTOM_UP_RUNS:
            runs += 1
            while True:
                first = hi
                for v in range(n):
                    if vis[v] != 0:
                        continue
                    found, scanned = first_marked(rptr, ridx, v, vis, 1)
                    read += scanned
                    if found:
                        vis[v] = 1
                        queue[hi] = v
                        hi += 1
                if hi == first:
                    return read
                if (hi - first) * BETA < n:
                    break
            lo = first
            scout = 0
            for i in range(lo, hi):
                u = queue[i]
                scout += ptr[u + 1] - ptr[u]
        end = hi
        nxt = 0
        for i in range(lo, end):
            u = queue[i]
            for e in range(ptr[u], ptr[u + 1]):
                v = idx[e]
                if vis[v] == 0:
                    vis[v] = 1
                    queue[hi] = v
                    hi += 1
                    nxt += ptr[v + 1] - ptr[v]
        read += scout
        left -= nxt
        lo = end
        scout = nxt
    return read


@numba.njit(parallel=True, cache=True, nogil=True)
def _closures(out_ptr, out_idx, in_ptr, in_idx, pivot, fwd, bwd, qa, qb, entries, read):
    """The forward and the backward closure of ``pivot`` at once, one per thread;
    ``read`` int64 (2,) written with the entries each read."""
    for side in numba.prange(2):
        if side == 0:
            read[0] = _closure(out_ptr, out_idx, in_ptr, in_idx, pivot, fwd, qa, entries[0])
        else:
            read[1] = _closure(in_ptr, in_idx, out_ptr, out_idx, pivot, bwd, qb, entries[1])


@numba.njit(cache=True, nogil=True)
def _trim(out_ptr, in_ptr, comp, fwd, bwd, entries):
    """Multistep's first trim: a vertex without in- or without out-entries is a component
    of its own (``comp[v] = v``, ``fwd[v] = bwd[v] = 2``: left out of the closures; else
    0). ``entries`` int64 (2,) written with the out- and in-entries of the vertices left
    in. Returns the pivot: the vertex left in of largest in x out degree (the first such),
    -1 when none is left."""
    best, pivot = -1, -1
    n = comp.shape[0]
    out_left = 0
    in_left = 0
    for v in range(n):
        do = out_ptr[v + 1] - out_ptr[v]
        di = in_ptr[v + 1] - in_ptr[v]
        if do == 0 or di == 0:
            comp[v] = v
            fwd[v] = 2
            bwd[v] = 2
            continue
        fwd[v] = 0
        bwd[v] = 0
        out_left += do
        in_left += di
        if do * di > best:
            best, pivot = do * di, v
    entries[0] = out_left
    entries[1] = in_left
    return pivot


@numba.njit(cache=True, nogil=True)
def _tarjan_parts(indptr, indices, part, comp, index, low, stack, call_v, call_e):
    """Tarjan's algorithm (iterative) over the vertices with ``part[v] != 0`` (uint8),
    following only edges within a part (a strongly connected component never spans two):
    writes ``comp[v]`` = the smallest id of ``v``'s component. ``index`` (N,) -1 where
    ``part`` is set, ``low``, ``stack``, ``call_v`` (N,) and ``call_e`` int64 (N,): scratch.
    Returns the edges read."""
    n = indptr.shape[0] - 1
    sp = 0
    counter = 0
    read = 0
    for root in range(n):
        if part[root] == 0 or index[root] != -1:
            continue
        p = part[root]
        index[root] = low[root] = counter
        counter += 1
        stack[sp] = root
        sp += 1
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
                if part[w] != p:
                    continue
                iw = index[w]
                if iw == -1:
                    call_e[depth - 1] = e
                    index[w] = low[w] = counter
                    counter += 1
                    stack[sp] = w
                    sp += 1
                    call_v[depth] = w
                    call_e[depth] = indptr[w]
                    depth += 1
                    descended = True
                    break
                if 0 <= iw < low[v]:  # on the stack (-2: its component is done)
                    low[v] = iw
            if descended:
                continue
            read += end - indptr[v]
            depth -= 1
            if low[v] == index[v]:  # v roots a component: the stack down to v
                top = sp
                smallest = v
                while True:
                    sp -= 1
                    w = stack[sp]
                    if w < smallest:
                        smallest = w
                    if w == v:
                        break
                for i in range(sp, top):
                    w = stack[i]
                    comp[w] = smallest
                    index[w] = -2  # done: never lowers a low-link again
            if depth > 0:
                u = call_v[depth - 1]
                if low[v] < low[u]:
                    low[u] = low[v]
    return read


@numba.njit(cache=True, nogil=True)
def _split(fwd, bwd, comp, index):
    """After the closures: label the pivot's component (``fwd == bwd == 1``) with its
    smallest member and turn ``fwd`` into Tarjan's parts: 0 done (trimmed or the pivot's
    component), 1 reached forward only, 2 backward only, 3 neither; ``index`` -1 in the
    parts, -2 elsewhere. Returns the size of the pivot's component."""
    first, size = -1, 0
    for v in range(fwd.shape[0]):
        f, b = fwd[v], bwd[v]
        if f == 1 and b == 1:
            if first < 0:
                first = v
            comp[v] = first
            size += 1
            fwd[v] = 0
            index[v] = -2
        elif f == 2:
            fwd[v] = 0
            index[v] = -2
        else:
            fwd[v] = 1 if f == 1 else (2 if b == 1 else 3)
            index[v] = -1
    return size


def scc_multistep(out_ptr, out_idx, in_ptr, in_idx, comp) -> tuple[int, int]:
    """Strongly connected components after Slota, Rajamanickam and Madduri's Multistep:
    trim the vertices without in- or out-entries (components of their own), split off the
    component of the vertex of largest in x out degree (on power-law graphs the giant one)
    as the intersection of its forward and backward closures (two direction-optimizing
    searches, one per thread), then Tarjan's algorithm on the rest, within each of the
    three parts the closures leave (reached forward only, backward only, neither), which
    no component spans. ``comp`` float64 (N,) is written with each vertex's smallest
    component member. Returns (entries read, size of the pivot's component)."""
    n = len(out_ptr) - 1
    if n == 0:
        return 0, 0
    fwd, bwd = np.empty(n, np.uint8), np.empty(n, np.uint8)
    entries = np.empty(2, np.int64)
    pivot = _trim(out_ptr, in_ptr, comp, fwd, bwd, entries)
    if pivot < 0:
        return 0, 0
    vid = np.int32 if n < 2**31 else np.int64
    qa, qb = np.empty(n, vid), np.empty(n, vid)
    read = np.zeros(2, np.int64)
    _closures(out_ptr, out_idx, in_ptr, in_idx, pivot, fwd, bwd, qa, qb, entries, read)
    index, low = np.empty(n, vid), np.empty(n, vid)
    size = _split(fwd, bwd, comp, index)
    read_rest = _tarjan_parts(out_ptr, out_idx, fwd, comp, index, low, qa, qb,
                              np.empty(n, np.int64))
    return int(read.sum() + read_rest), size


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
