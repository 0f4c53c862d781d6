"""Numba kernels of the shortest-path centralities (in memory, CPU), parallel over
sources: Brandes' betweenness (:func:`brandes`) and the distance sums of closeness and
harmonic centrality (:func:`distance_sums`); and HITS' power iteration
(:func:`hits_solve`).

Each of the ``T`` threads owns its scratch arrays (row ``t`` of (T, N) arrays) and its row
of the output, summed afterwards (no atomics: a value's last bits depend on which thread
took which sources; unweighted distance sums are exact); sources are handed out one at a
time where the threading layer schedules dynamically. An unweighted closeness or harmonic
search is :func:`graphsys.kernels.bfs.search`; betweenness's is a level-synchronous
breadth-first search that counts paths (top-down or bottom-up, whichever reads fewer
edges), and a weighted search is Dijkstra's with an indexed binary heap. The dependency
pass walks the settled vertices backwards.

Weighted and unweighted runs are kernels of their own (``*_weighted``, ``*_hops``), picked
in Python by :func:`brandes` and :func:`distance_sums`, each search a function called from
the ``prange`` loop, not inlined: a first call compiles in seconds instead of tens.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.bsp.kernels import filled
from graphsys.kernels.arrays import read_only
from graphsys.kernels.bfs import NO_LIMIT, search
from graphsys.kernels.centrality import pull_product


@numba.njit(inline="always")
def _sift_up(heap, hpos, key, i):
    v = heap[i]
    kv = key[v]
    while i > 0:
        parent = (i - 1) >> 1
        p = heap[parent]
        if key[p] <= kv:
            break
        heap[i] = p
        hpos[p] = i
        i = parent
    heap[i] = v
    hpos[v] = i


@numba.njit(inline="always")
def _sift_down(heap, hpos, key, i, size):
    v = heap[i]
    kv = key[v]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        c = heap[child]
        if child + 1 < size and key[heap[child + 1]] < key[c]:
            child += 1
            c = heap[child]
        if key[c] >= kv:
            break
        heap[i] = c
        hpos[c] = i
        i = child
    heap[i] = v
    hpos[v] = i


@numba.njit(inline="always")
def _dijkstra(indptr, indices, weight, s, dist, sigma, order, heap, hpos, count_paths):
    """Shortest paths from ``s`` by Dijkstra's algorithm: ``dist`` (inf where unreached on
    entry) and, when ``count_paths``, ``sigma`` (zeros on entry) the number of shortest
    paths; ``order`` gets the settled vertices by distance. Returns how many were settled
    (``s`` included). (Unweighted searches are breadth-first: :func:`_dependencies_hops`,
    :func:`graphsys.kernels.bfs.search`.)"""
    dist[s] = 0.0
    if count_paths:
        sigma[s] = 1.0
    heap[0] = s
    hpos[s] = 0
    size = 1
    settled = 0
    while size > 0:
        u = heap[0]
        hpos[u] = -2  # settled
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            hpos[heap[0]] = 0
            _sift_down(heap, hpos, dist, 0, size)
        order[settled] = u
        settled += 1
        du = dist[u]
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            nd = du + np.float64(weight[e])
            dv = dist[v]
            if nd < dv:
                dist[v] = nd
                if count_paths:
                    sigma[v] = sigma[u]
                if hpos[v] == -1:
                    heap[size] = v
                    hpos[v] = size
                    size += 1
                    _sift_up(heap, hpos, dist, size - 1)
                else:
                    _sift_up(heap, hpos, dist, hpos[v])
            elif count_paths and nd == dv and hpos[v] != -2:
                sigma[v] += sigma[u]
    return settled


@numba.njit(inline="always")
def _reset(order, count, dist, sigma, delta, hpos):
    for j in range(count):
        v = order[j]
        dist[v] = np.inf
        sigma[v] = 0.0
        delta[v] = 0.0
        hpos[v] = -1


#: Betweenness takes a bottom-up search step (the unreached vertices' in-edges) when the
#: frontier's out-edges outnumber this factor times the unreached vertices' in-edges (path
#: counts read every in-edge, no early exit: the step pays when it reads fewer edges)
PATHS_BOTTOM_UP = 1.0


#: Betweenness records each thread's shortest-path DAG (two index arrays of up to E
#: entries per thread) where they take at most this many bytes in all; above it, its
#: dependency pass reads out-edges instead (:func:`dag_fits`)
DAG_BYTES = 1 << 30


def dag_fits(lanes: int, indices: np.ndarray) -> bool:
    """Whether ``lanes`` threads' DAG buffers over ``indices`` fit :data:`DAG_BYTES`."""
    return 2 * lanes * indices.nbytes <= DAG_BYTES


def brandes(indptr, indices, weight, weighted, sources, endpoints, acc, in_ptr, in_idx,
            dag=True):
    """Add every source's dependencies to ``acc`` float64 (T, N): for source ``s`` and
    vertex ``v != s`` reached from it, ``delta_s(v) = sum over successors w of v on
    shortest paths of sigma(v) / sigma(w) * (1 + delta_s(w))`` (Brandes 2001), plus 1 with
    ``endpoints`` (``v`` as a path's end), and ``s`` gets the number of other vertices it
    reaches with ``endpoints`` (networkx's ``_accumulate_endpoints``). ``weight`` float32
    (E,), read when ``weighted`` (positive weights). ``in_ptr``/``in_idx``: the in-edges
    (CSC) for bottom-up search steps on an unweighted run, or empty (top-down only).
    ``dag`` (unweighted): each thread records its searches' shortest-path DAG, up to E
    entries each (:func:`dag_fits` says whether that stays within :data:`DAG_BYTES`);
    without it the dependency pass reads out-edges instead. Each thread adds into its row
    (see the module docstring for how the sources are handed out). Returns the edges read,
    int64 (T,). Calls :func:`brandes_weighted` or :func:`brandes_hops` with read-only
    views (one compiled signature for mapped and built adjacencies)."""
    indptr, indices, sources = read_only(indptr, indices, sources.astype(np.int64, copy=False))
    if weighted:
        return brandes_weighted(indptr, indices, read_only(weight)[0], sources,
                                bool(endpoints), acc)
    in_ptr, in_idx = read_only(in_ptr, in_idx)
    return brandes_hops(indptr, indices, sources, bool(endpoints), acc, in_ptr, in_idx,
                        bool(dag))


@numba.njit(parallel=True, cache=True, nogil=True)
def brandes_weighted(indptr, indices, weight, sources, endpoints, acc):
    """:func:`brandes` on a weighted run: a Dijkstra search per source."""
    lanes, n = acc.shape
    read = np.zeros(lanes, np.int64)
    sigma = filled((lanes, n), 0.0)
    coef = filled((lanes, n), 0.0)
    order = np.empty((lanes, n), np.int64)
    dist = filled((lanes, n), np.inf)
    heap = np.empty((lanes, n), np.int64)
    hpos = filled((lanes, n), np.int64(-1))
    for i in numba.prange(sources.shape[0]):
        t = numba.get_thread_id()
        read[t] += _dependencies(indptr, indices, weight, sources[i], endpoints, dist[t],
                                 sigma[t], coef[t], order[t], heap[t], hpos[t], acc[t])
    return read


@numba.njit(parallel=True, cache=True, nogil=True)
def brandes_hops(indptr, indices, sources, endpoints, acc, in_ptr, in_idx, dag):
    """:func:`brandes` on an unweighted run: a breadth-first search per source."""
    lanes, n = acc.shape
    read = np.zeros(lanes, np.int64)
    val = filled((lanes, n), 0.0)
    part = filled((lanes, n), 0.0)
    order = np.empty((lanes, n), indices.dtype)
    starts = np.empty((lanes, n + 2), np.int64)
    dag_at = np.empty((lanes, n + 2), np.int64)
    # the DAG's edges: at most E, pages touched only as far as a search fills them
    dag_from = np.empty((lanes, indices.shape[0] if dag else 0), indices.dtype)
    dag_to = np.empty((lanes, indices.shape[0] if dag else 0), indices.dtype)
    lvl = filled((lanes, 0 if dag else n), np.int32(-1))
    front = filled((lanes, n if in_ptr.shape[0] else 0), np.uint8(0))
    for i in numba.prange(sources.shape[0]):
        t = numba.get_thread_id()
        read[t] += _dependencies_hops(indptr, indices, in_ptr, in_idx, sources[i],
                                      endpoints, val[t], part[t], order[t], starts[t],
                                      dag_at[t], dag_from[t], dag_to[t], front[t],
                                      acc[t], dag, lvl[t])
    return read


@numba.njit(nogil=True)
def _dependencies_hops(indptr, indices, in_ptr, in_idx, s, endpoints, val, part, order,
                       starts, dag_at, dag_from, dag_to, front, row, dag, lvl):
    """One source's level-synchronous breadth-first search with path counts and its
    dependency pass (see :func:`brandes`), added into ``row``. ``val`` float64 holds a
    reached vertex's path count ``sigma`` (negated while its level is being found), then
    ``-(1 + delta) / sigma`` once its dependency is done; ``part`` float64 sums a vertex's
    successors' ``(1 + delta) / sigma`` (both zeros on entry and on return). The search
    records the shortest-path DAG's edges (``dag_from``/``dag_to``, those into level ``L``
    from ``dag_at[L]``), which the dependency pass walks down. A search step is top-down
    or, with ``in_ptr``, bottom-up (from ``front``-marked frontier vertices), whichever
    reads fewer edges. Without ``dag`` nothing is recorded: ``lvl`` int32 (all -1 on entry
    and on return) takes each reached vertex's level and the pass reads out-edges instead.
    Returns the edges read."""
    n = val.shape[0]
    bottom_up = in_ptr.shape[0] > 0
    unreached_in = in_ptr[n] - in_ptr[s + 1] + in_ptr[s] if bottom_up else 0
    val[s] = 1.0
    order[0] = s
    starts[0], starts[1] = 0, 1
    dag_at[0], dag_at[1] = 0, 0
    depth, tail, scanned, m = 0, 1, 0, 0
    while starts[depth + 1] > starts[depth]:
        lo, hi = starts[depth], starts[depth + 1]
        out_edges = 0
        for j in range(lo, hi):
            u = order[j]
            out_edges += indptr[u + 1] - indptr[u]
        if bottom_up and out_edges > PATHS_BOTTOM_UP * unreached_in:
            for j in range(lo, hi):
                front[order[j]] = 1
            for v in range(n):
                if val[v] == 0.0:
                    a = 0.0
                    for e in range(in_ptr[v], in_ptr[v + 1]):
                        u = in_idx[e]
                        if front[u]:
                            a += val[u]
                            if dag:
                                dag_from[m] = u
                                dag_to[m] = v
                                m += 1
                    scanned += in_ptr[v + 1] - in_ptr[v]
                    if a > 0.0:
                        val[v] = a
                        order[tail] = v
                        tail += 1
            for j in range(lo, hi):
                front[order[j]] = 0
        else:
            scanned += out_edges
            for j in range(lo, hi):
                u = order[j]
                su = val[u]
                for e in range(indptr[u], indptr[u + 1]):
                    v = indices[e]
                    x = val[v]
                    if x <= 0.0:
                        if x == 0.0:
                            order[tail] = v
                            tail += 1
                        val[v] = x - su
                        if dag:
                            dag_from[m] = u
                            dag_to[m] = v
                            m += 1
            for j in range(hi, tail):
                v = order[j]
                val[v] = -val[v]
        if bottom_up:
            for j in range(hi, tail):
                v = order[j]
                unreached_in -= in_ptr[v + 1] - in_ptr[v]
        depth += 1
        starts[depth + 1] = tail
        dag_at[depth + 1] = m
    scanned += m
    if not dag:  # each reached vertex's level, for the pass over out-edges
        for level in range(depth):
            for j in range(starts[level], starts[level + 1]):
                lvl[order[j]] = level
    for level in range(depth - 1, -1, -1):
        for j in range(starts[level], starts[level + 1]):
            v = order[j]
            sv = val[v]
            if dag:
                d = sv * part[v]
                part[v] = 0.0
            else:  # the successors' coefficients, over v's out-edges into the next level
                c = 0.0
                if level + 1 < depth:
                    for e in range(indptr[v], indptr[v + 1]):
                        w = indices[e]
                        if lvl[w] == level + 1:
                            c -= val[w]
                    scanned += indptr[v + 1] - indptr[v]
                d = sv * c
            val[v] = -((1.0 + d) / sv)
            if v != s:
                row[v] += d + 1.0 if endpoints else d
        for p in range(dag_at[level], dag_at[level + 1]):
            part[dag_from[p]] -= val[dag_to[p]]
    if not dag:
        for j in range(tail):
            lvl[order[j]] = -1
    if endpoints:
        row[s] += tail - 1
    if 4 * tail > n:
        val[:] = 0.0
    else:
        for j in range(tail):
            val[order[j]] = 0.0
    return scanned


@numba.njit(nogil=True)
def _dependencies(indptr, indices, weight, s, endpoints, dist, sigma, coef, order, heap,
                  hpos, row):
    """One source's Dijkstra search and dependency pass (see :func:`brandes`), added into
    ``row``; ``coef`` as in :func:`_dependencies_hops`. Scratch left as found. Returns the
    edges read."""
    count = _dijkstra(indptr, indices, weight, s, dist, sigma, order, heap, hpos, True)
    for j in range(count - 1, -1, -1):
        v = order[j]
        dv = dist[v]
        c = 0.0
        for e in range(indptr[v], indptr[v + 1]):
            w = indices[e]
            if dist[w] == dv + np.float64(weight[e]):
                c += coef[w]
        d = sigma[v] * c
        coef[v] = (1.0 + d) / sigma[v]
        if v != s:
            row[v] += d + 1.0 if endpoints else d
    if endpoints:
        row[s] += count - 1
    scanned = 0
    for j in range(count):
        v = order[j]
        scanned += indptr[v + 1] - indptr[v]
    _reset(order, count, dist, sigma, coef, hpos)
    return 2 * scanned


def distance_sums(indptr, indices, weight, weighted, sources, total, reached, harmonic,
                  in_ptr, in_idx):
    """For every source ``s`` and every vertex ``v != s`` it reaches at distance ``d``:
    ``total[t, v] += d``, ``reached[t, v] += 1``, ``harmonic[t, v] += 1 / d`` (float64,
    int64, float64 (T, N)), ``t`` the thread that took ``s`` (one source at a time, as
    :func:`brandes`); ``in_ptr``/``in_idx`` as there. Returns the edges read, int64
    (T,). A weighted run calls :func:`distance_sums_weighted`, an unweighted one
    :func:`distance_sums_hops` (read-only views, as :func:`brandes`)."""
    indptr, indices, sources = read_only(indptr, indices, sources.astype(np.int64, copy=False))
    if weighted:
        return distance_sums_weighted(indptr, indices, read_only(weight)[0], sources, total,
                                      reached, harmonic)
    in_ptr, in_idx = read_only(in_ptr, in_idx)
    degree = int(np.diff(indptr).max(initial=0))
    return distance_sums_hops(indptr, indices, sources, total, reached, harmonic, in_ptr,
                              in_idx, degree)


@numba.njit(parallel=True, cache=True, nogil=True)
def distance_sums_weighted(indptr, indices, weight, sources, total, reached, harmonic):
    """:func:`distance_sums` on a weighted run: a Dijkstra search per source."""
    lanes, n = total.shape
    read = np.zeros(lanes, np.int64)
    order = np.empty((lanes, n), np.int64)
    dist = filled((lanes, n), np.inf)
    sigma = np.zeros((lanes, 0))
    heap = np.empty((lanes, n), np.int64)
    hpos = filled((lanes, n), np.int64(-1))
    for i in numba.prange(sources.shape[0]):
        t = numba.get_thread_id()
        read[t] += _distances(indptr, indices, weight, sources[i], dist[t], sigma[t],
                              order[t], heap[t], hpos[t], total[t], reached[t], harmonic[t])
    return read


@numba.njit(parallel=True, cache=True, nogil=True)
def distance_sums_hops(indptr, indices, sources, total, reached, harmonic, in_ptr, in_idx,
                       degree):
    """:func:`distance_sums` on an unweighted run: per source one search of the one
    breadth-first search (:func:`graphsys.kernels.bfs.search`, on this thread; bottom-up
    steps over ``in_ptr``/``in_idx`` when they are not empty), on each thread's buffers;
    ``degree``: the largest out-degree."""
    lanes, n = total.shape
    read = np.zeros(lanes, np.int64)
    queue = np.empty((lanes, n + 1), indices.dtype)
    level = filled((lanes, n), np.int32(-1))
    words = (n + 63) // 64
    front = np.zeros((lanes, words), np.uint64)
    nxt = np.zeros((lanes, words), np.uint64)
    for i in numba.prange(sources.shape[0]):
        t = numba.get_thread_id()
        count, _, _, scanned, _ = search(indptr, indices, in_ptr, in_idx, np.bool_(False),
                                         degree, level[t], queue[t], front[t], nxt[t],
                                         sources[i], NO_LIMIT, np.int64(1), np.bool_(True))
        _add_levels(level[t], queue[t], count, total[t], reached[t], harmonic[t])
        read[t] += scanned.sum()
    return read


@numba.njit(nogil=True)
def _add_levels(level, queue, count, total, reached, harmonic):
    """A search's hop counts (``level``, its ``count`` vertices in ``queue``, the source
    first) added into the rows (see :func:`distance_sums`): in node order when it reached a
    quarter of the nodes, else in the order reached; ``level`` reset to -1."""
    n = level.shape[0]
    if 4 * count > n:
        for v in range(n):
            lv = level[v]
            if lv > 0:
                d = np.float64(lv)
                total[v] += d
                reached[v] += 1
                harmonic[v] += 1.0 / d
            level[v] = -1
    else:
        for j in range(1, count):
            v = queue[j]
            d = np.float64(level[v])
            total[v] += d
            reached[v] += 1
            harmonic[v] += 1.0 / d
        for j in range(count):
            level[queue[j]] = -1


@numba.njit(nogil=True)
def _distances(indptr, indices, weight, s, dist, sigma, order, heap, hpos, total, reached,
               harmonic):
    """One source's Dijkstra search, its distances added into the rows (see
    :func:`distance_sums`). Returns the edges read."""
    count = _dijkstra(indptr, indices, weight, s, dist, sigma, order, heap, hpos, False)
    for j in range(1, count):
        v = order[j]
        d = dist[v]
        total[v] += d
        reached[v] += 1
        harmonic[v] += 1.0 / d
    scanned = 0
    for j in range(count):
        v = order[j]
        scanned += indptr[v + 1] - indptr[v]
        dist[v] = np.inf
        hpos[v] = -1
    return scanned


@numba.njit(cache=True, nogil=True)
def _change_and_max(hub, last, scaled):
    """(L1 distance of ``hub`` to ``last``, max of ``scaled``)."""
    change = 0.0
    top = 0.0
    for v in range(hub.shape[0]):
        change += abs(hub[v] - last[v])
        if scaled[v] > top:
            top = scaled[v]
    return change, top


def hits_solve(csc_ptr, csc_idx, csc_w, csr_ptr, csr_idx, csr_w, weighted, tol, max_steps,
               hub, auth):
    """HITS' power iteration as :class:`~graphsys.bsp.algorithms.hits.HITS` runs it, two
    supersteps per iteration (authorities pulled over the CSC, hubs over the CSR, scaled by
    their max), stopping after the authorities of a hub vector whose L1 change is below
    ``tol`` or at ``max_steps`` supersteps; ``hub``/``auth`` float64 (N,) written (hub
    starts at 1). Each pull is the shared weighted product
    (:func:`graphsys.kernels.centrality.pull_product`, rows in parallel on a large graph),
    called from Python: a cached kernel calling another module's parallel kernels could be
    saved linked to one process's copy of them. Returns (supersteps run, converged)."""
    none = np.zeros(0)
    csc_w, csr_w = (csc_w, csr_w) if weighted else (none, none)
    last = np.zeros_like(hub)
    fresh = np.empty_like(hub)
    hub[:] = 1.0
    steps = 0
    while steps < max_steps:
        pull_product(csc_ptr, csc_idx, csc_w, hub, auth)
        steps += 1
        change, _ = _change_and_max(hub, last, hub)
        if change < tol:
            return steps, True
        if steps == max_steps:
            break
        pull_product(csr_ptr, csr_idx, csr_w, auth, fresh)
        steps += 1
        _, top = _change_and_max(hub, last, fresh)
        last[:] = hub
        np.divide(fresh, top if top != 0.0 else 1.0, out=hub)
    return steps, False
