"""Weakly connected components by union-find in numba: a one-pass union-find and Afforest
(Sutton, Ben-Nun, Barak, IPDPS 2018; the GAP benchmark's reference CC). The one
components kernel of every engine (the BSP WCC, the distance measures, the NetworkX
backend through both); :func:`numbered` turns its roots into component numbers.

Both hook the larger root under the smaller (so a component's root is its smallest vertex
id, the label the BSP WCC program defines) and halve paths while finding roots. Afforest
first links every vertex to its first neighbour, compresses, estimates the largest
component from :data:`SAMPLES` random vertices, and repeats with the next neighbour (up to
:data:`NEIGHBOR_ROUNDS` rounds; on a directed graph alternating between out- and in-edges)
while the edges left to read exceed what a round reads; then it links only the remaining
edges of vertices outside the largest component: their out-edges past the sampled ones,
and their in-edges on a directed graph (an edge from the big component reaches a vertex
outside it only as an in-edge). On power-law graphs most vertices sit in the big component and most
edges are never read; on a sparse road graph there is little to skip, and the one-pass
union-find reads every edge once without the extra passes (see :func:`choose`).
"""

from __future__ import annotations

import numba
import numpy as np

NEIGHBOR_ROUNDS = 2
SAMPLES = 1024
#: splitmix64's increment and multipliers: the sampled vertices' own stream (numba's
#: generator, the calling thread's, is neither read nor reseeded)
_GOLDEN, _MIX1, _MIX2 = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9),
                         np.uint64(0x94D049BB133111EB))
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
def labelled_forest(ids, labels, comp, first):
    """One tree per label in ``comp``, rooted at its smallest id (``ids`` int64 ascend,
    ``labels`` int64 below ``len(first)``; ``first`` int64 all -1, written): a component
    labelling made a union-find forest that :func:`union_edges` grows."""
    for k in range(ids.shape[0]):
        lab = labels[k]
        if first[lab] < 0:
            first[lab] = ids[k]
        comp[ids[k]] = first[lab]


@numba.njit(cache=True, nogil=True)
def union_edges(comp, src, dst):
    """Union of the ends of every edge ``src[k] -> dst[k]`` (int64) in the forest ``comp``
    whose parents precede their children; returns the merges made."""
    merged = 0
    for k in range(src.shape[0]):
        a = _find(comp, src[k])
        b = _find(comp, dst[k])
        if a != b:                 # as _link, counting the merges
            comp[max(a, b)] = min(a, b)
            merged += 1
    return merged


def forest_labels(comp: np.ndarray) -> np.ndarray:
    """Every vertex's root (its component's smallest id) in the forest ``comp`` of
    :func:`labelled_forest` and :func:`union_edges`, in place: ``comp`` itself."""
    _compress(comp)
    return comp


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


@numba.njit(inline="always")
def _link_round(indptr, indices, comp, r):
    """Link every vertex to the ``r``-th entry of its row (where it has one); edges read."""
    read = 0
    for u in range(comp.shape[0]):
        e = indptr[u] + r
        if e < indptr[u + 1]:
            _link(comp, u, indices[e])
            read += 1
    return read


@numba.njit(inline="always")
def _splitmix(z):
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@numba.njit(inline="always")
def _largest_sampled(comp, sample, key):
    """The root most of ``sample.shape[0]`` random vertices share (after a compression):
    vertex ``i`` of the sample is splitmix64's ``i``-th output from ``key``, modulo N."""
    n = np.uint64(comp.shape[0])
    for i in range(sample.shape[0]):
        sample[i] = comp[np.int64(_splitmix(key + np.uint64(i + 1) * _GOLDEN) % n)]
    sample.sort()
    big, best, run = sample[0], 0, 0
    for i in range(sample.shape[0]):
        run = run + 1 if i > 0 and sample[i] == sample[i - 1] else 1
        if run > best:
            best, big = run, sample[i]
    return big


@numba.njit(inline="always")
def _left_to_read(indptr, in_indptr, comp, big, skip_out, skip_in, directed):
    """Entries the finishing pass would read: the unsampled rows' tails of the vertices
    outside component ``big``."""
    left = 0
    for u in range(comp.shape[0]):
        if comp[u] != big:
            left += max(indptr[u + 1] - indptr[u] - skip_out, 0)
            if directed:
                left += max(in_indptr[u + 1] - in_indptr[u] - skip_in, 0)
    return left


@numba.njit(cache=True, nogil=True)
def afforest(indptr, indices, in_indptr, in_indices, directed, seed, comp):
    """Afforest over the out-edges CSR (``indptr``, ``indices``) and, when ``directed``, the
    in-edges CSC (``in_*``; ignored otherwise); ``comp`` (N,) int, written with each
    vertex's smallest component id; ``seed`` (a non-negative int) keys the sampled
    vertices. Returns (edges read, the skipped component's id).

    Up to :data:`NEIGHBOR_ROUNDS` sampling rounds; on a directed graph they alternate
    directions, starting with the one with fewer empty rows (a vertex with an empty row is
    not linked by its own row). After each round the largest component is sampled, and the
    rounds stop once the finishing pass has fewer entries left to read than the
    ``N`` a further round would."""
    n = comp.shape[0]
    for v in range(n):
        comp[v] = v
    read = 0
    if n == 0:
        return read, -1
    out_first = True
    if directed:
        empty_out, empty_in = 0, 0
        for u in range(n):
            empty_out += indptr[u + 1] == indptr[u]
            empty_in += in_indptr[u + 1] == in_indptr[u]
        out_first = empty_out <= empty_in
    sample = np.empty(SAMPLES, comp.dtype)
    skip_out, skip_in, big = 0, 0, comp[0]
    for r in range(NEIGHBOR_ROUNDS):
        if not directed or (r % 2 == 0) == out_first:
            read += _link_round(indptr, indices, comp, skip_out)
            skip_out += 1
        else:
            read += _link_round(in_indptr, in_indices, comp, skip_in)
            skip_in += 1
        _compress(comp)
        big = _largest_sampled(comp, sample, _splitmix(np.uint64(seed) + np.uint64(r) * _GOLDEN))
        left = _left_to_read(indptr, in_indptr, comp, big, skip_out, skip_in, directed)
        if left == 0:
            return read, big  # comp is compressed and no edge is left to link
        if left < n:
            break
    for u in range(n):
        if comp[u] == big:
            continue
        for e in range(indptr[u] + skip_out, indptr[u + 1]):
            _link(comp, u, indices[e])
            read += 1
        if directed:
            for e in range(in_indptr[u] + skip_in, in_indptr[u + 1]):
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
