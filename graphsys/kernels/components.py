"""Weakly connected components by union-find in numba: a one-pass union-find and Afforest
(Sutton, Ben-Nun, Barak, IPDPS 2018; the GAP benchmark's reference CC). The one
components kernel of every engine (the BSP WCC, the distance measures, the NetworkX
backend through both); :func:`numbered` turns its roots into component numbers.

Both hook the larger root under the smaller (so a component's root is its smallest vertex
id, the label the BSP WCC program defines) and halve paths while finding roots. Afforest
first links every vertex to its first :data:`NEIGHBOR_ROUNDS` neighbours, compresses,
estimates the largest component from :data:`SAMPLES` random vertices, then links only the
remaining edges of vertices outside it: their out-edges past the sampled ones, and their
in-edges on a directed graph (an edge from the big component reaches a vertex outside it
only as an in-edge). On power-law graphs most vertices sit in the big component and most
edges are never read; on a sparse road graph there is little to skip, and the one-pass
union-find reads every edge once without the extra passes (see :func:`choose`).
"""

from __future__ import annotations

import numba
import numpy as np

NEIGHBOR_ROUNDS = 2
SAMPLES = 1024
#: Afforest when edges per vertex (out-edges, plus in-edges on a directed graph) exceed this
AFFOREST_MIN_DEGREE = 4.0


def choose(num_nodes: int, num_edges: int, directed: bool) -> str:
    """``afforest`` or ``union-find`` for a graph of ``num_edges`` stored edges (each
    undirected edge stored both ways): Afforest pays off where most edges can be skipped,
    i.e. where the average degree is well above the :data:`NEIGHBOR_ROUNDS` sampled."""
    per_vertex = num_edges * (2 if directed else 1) / max(num_nodes, 1)
    return "afforest" if per_vertex > AFFOREST_MIN_DEGREE else "union-find"


@numba.njit(inline="always")
def _find(comp, x):
    while comp[x] != x:
        comp[x] = comp[comp[x]]  # path halving
        x = comp[x]
    return x


@numba.njit(inline="always")
def _link(comp, u, v):
    a = _find(comp, u)
    b = _find(comp, v)
    if a < b:
        comp[b] = a
    elif b < a:
        comp[a] = b


@numba.njit(cache=True, nogil=True)
def _compress(comp):
    for v in range(comp.shape[0]):
        comp[v] = comp[comp[v]]  # parents precede children: roots are smallest ids


@numba.njit(cache=True, nogil=True)
def union_find(indptr, indices, comp, both_ways):
    """Component of every vertex (its smallest id) over the edges of CSR ``indptr`` int64
    (N+1,) / ``indices`` (E,) (edge direction ignored); ``comp`` (N,) int, written.
    ``both_ways``: the CSR stores every edge both ways (an undirected edge set), so each is
    linked once, from its larger end (half the finds). Returns edges read."""
    n = comp.shape[0]
    for v in range(n):
        comp[v] = v
    for u in range(n):
        _link_row(indptr, indices, comp, both_ways, u)
    _compress(comp)
    return indptr[n] - indptr[0]


@numba.njit(cache=True, nogil=True)
def union_find_outside(indptr, indices, done, comp, both_ways):
    """:func:`union_find` over the rows of the vertices not ``done`` (bool (N,)) only: where
    ``done`` is a union of components (a search's), the others are found in the time of
    their own rows. ``comp[v] = v`` for a done vertex."""
    n = comp.shape[0]
    for v in range(n):
        comp[v] = v
    for u in range(n):
        if not done[u]:
            _link_row(indptr, indices, comp, both_ways, u)
    _compress(comp)


@numba.njit(inline="always")
def _link_row(indptr, indices, comp, both_ways, u):
    for e in range(indptr[u], indptr[u + 1]):
        w = indices[e]
        if not both_ways or w < u:
            _link(comp, u, w)


@numba.njit(cache=True, nogil=True)
def afforest(indptr, indices, in_indptr, in_indices, directed, seed, comp):
    """Afforest over the out-edges CSR (``indptr``, ``indices``) and, when ``directed``, the
    in-edges CSC (``in_*``; ignored otherwise); ``comp`` (N,) int, written with each
    vertex's smallest component id. Returns (edges read, the skipped component's id)."""
    n = comp.shape[0]
    for v in range(n):
        comp[v] = v
    read = 0
    if n == 0:
        return read, -1
    for r in range(NEIGHBOR_ROUNDS):
        for u in range(n):
            e = indptr[u] + r
            if e < indptr[u + 1]:
                _link(comp, u, indices[e])
                read += 1
        _compress(comp)
    np.random.seed(seed)
    sample = np.empty(SAMPLES, comp.dtype)
    for i in range(SAMPLES):
        sample[i] = comp[np.random.randint(0, n)]
    sample.sort()
    big, best, run = sample[0], 0, 0
    for i in range(SAMPLES):
        run = run + 1 if i > 0 and sample[i] == sample[i - 1] else 1
        if run > best:
            best, big = run, sample[i]
    for u in range(n):
        if comp[u] == big:
            continue
        for e in range(indptr[u] + NEIGHBOR_ROUNDS, indptr[u + 1]):
            _link(comp, u, indices[e])
            read += 1
        if directed:
            for e in range(in_indptr[u], in_indptr[u + 1]):
                _link(comp, u, in_indices[e])
                read += 1
    _compress(comp)
    return read, big


def roots(indptr, indices, in_indptr, in_indices, directed: bool) -> np.ndarray:
    """Each vertex's component root (its smallest id), int64 (N,), by the method
    :func:`choose` picks: over the out-edges CSR and, when ``directed``, the in-edges CSC
    (``in_*``; on an undirected edge set, stored both ways, they are ignored)."""
    n = len(indptr) - 1
    comp = np.empty(n, np.int64)
    if choose(n, int(indptr[n] - indptr[0]), directed) == "afforest":
        afforest(indptr, indices, in_indptr, in_indices, directed, 0, comp)
    else:
        union_find(indptr, indices, comp, not directed)
    return comp


def numbered(comp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Component numbers from roots ``comp`` (each vertex's smallest id): (label int64 (N,),
    components numbered 0, 1, ... in order of their smallest id; sizes int64)."""
    rank = np.cumsum(comp == np.arange(len(comp))) - 1
    label = rank[comp]
    return label, np.bincount(label, minlength=int(rank[-1]) + 1 if len(comp) else 0)
