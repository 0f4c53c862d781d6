"""The destination-blocked push layout of a graph's in-edges: built in memory by PageRank's
fused loop for long runs, or once, by ``graphsys index --push``, as the ``push`` index of a
graph directory (:mod:`graphsys.storage.adjacency_index`), which every later run maps.

The vertices are renumbered by descending out-degree (ties by ascending id) and the targets
cut into blocks of about equal in-edge counts; a block's edges are sorted by source, so a
push step reads the sent values in one ascending sweep per block and adds into sums that stay
in L2 (:func:`graphsys.bsp.kernels_pagerank.pagerank_push_step`). Arrays, in the new
numbering:

* ``order`` int64 (N,): new id -> global id;
* ``bounds`` int64 (B+1,): block b's targets are ``bounds[b]:bounds[b+1]``, at most
  :data:`PUSH_BLOCK_MAX_NODES` of them;
* ``edge_ptr`` int64 (B+1,): block b's edges are ``edge_ptr[b]:edge_ptr[b+1]``;
* ``src`` uint32 (E,), ``dst`` uint16 (E,): each edge's source id and target offset in its
  block (6 bytes per edge);
* ``runs`` int64 (B * (heavy+1),) and ``heavy``: sources ``0:heavy`` have at least
  :data:`PUSH_HEAVY_RUN` edges per block on average; in block b, heavy source s's edges start
  at ``runs[b * (heavy+1) + s]`` and the light sources' at ``runs[b * (heavy+1) + heavy]``.
"""

from __future__ import annotations

import numba
import numpy as np

#: A destination block holds at most this many vertices: a local offset is a uint16, and the
#: block's float64 sums (512 KiB) stay in a 1 MiB L2
PUSH_BLOCK_MAX_NODES = 1 << 16

#: A source whose out-edges average at least this many per destination block is *heavy*:
#: its edges of each block are stored as one run (offsets, no source ids), so the step reads
#: its value once per block, and the run's offsets replace a source id per edge (see
#: docs/benchmarks.md)
PUSH_HEAVY_RUN = 32

#: From this many vertices the targets are cut into blocks of about E / :data:`PUSH_MIN_BLOCKS`
#: in-edges (the step then runs its blocks in parallel; below it, one block, one thread)
PUSH_PARALLEL_MIN_NODES = 1 << 15
#: Blocks a parallel layout aims for, whatever the thread count (fewer where hub targets
#: hold more than E / 16 in-edges each; more where the vertex cap cuts): each block sums its
#: L1 change and dangling mass, added in block order, so results do not depend on threads
PUSH_MIN_BLOCKS = 16


def min_blocks(num_nodes: int) -> int:
    """The block count a layout over ``num_nodes`` vertices aims for (:func:`plan_blocks`'s
    ``min_blocks``)."""
    return 1 if num_nodes < PUSH_PARALLEL_MIN_NODES else PUSH_MIN_BLOCKS


def degree_order(out_degree: np.ndarray) -> np.ndarray:
    """int64 (N,): the vertices by descending ``out_degree`` ((N,) integer or float64
    counts), ties by ascending id (new id -> old id)."""
    return np.argsort(-np.asarray(out_degree, np.float64), kind="stable")


@numba.njit(inline="always")
def _cut_here(k, start, edges, target):
    """Whether a block ends before target ``k`` (its first is ``start``, with ``edges``
    in-edges so far)."""
    return k > start and (k - start >= PUSH_BLOCK_MAX_NODES or edges >= target)


@numba.njit(cache=True, nogil=True)
def plan_blocks(indptr, order, min_blocks):
    """The blocks of the layout of the CSC ``indptr`` (int64 (N+1,)) renumbered by
    ``order``: runs of targets, each cut once it holds E / ``min_blocks`` in-edges or
    :data:`PUSH_BLOCK_MAX_NODES` vertices. Returns ``bounds``, ``edge_ptr`` (int64 (B+1,)).
    Two passes over the targets (count the blocks, then fill), so nothing per node is
    allocated."""
    n = indptr.shape[0] - 1
    target = max((indptr[n] - indptr[0]) // min_blocks, 1)
    nb, start, edges = 1, 0, 0
    for k in range(n):
        if _cut_here(k, start, edges, target):
            nb += 1
            start, edges = k, 0
        edges += indptr[order[k] + 1] - indptr[order[k]]
    bounds = np.zeros(nb + 1, np.int64)
    edge_ptr = np.zeros(nb + 1, np.int64)
    b, start, edges = 0, 0, 0
    for k in range(n):
        if _cut_here(k, start, edges, target):
            b += 1
            bounds[b], edge_ptr[b] = k, edge_ptr[b - 1] + edges
            start, edges = k, 0
        edges += indptr[order[k] + 1] - indptr[order[k]]
    bounds[nb], edge_ptr[nb] = n, edge_ptr[nb - 1] + edges
    return bounds, edge_ptr


@numba.njit(cache=True, nogil=True)
def count_heavy(order, out_degree, num_blocks):
    """How many of the first vertices of ``order`` are heavy sources (out-degree at least
    :data:`PUSH_HEAVY_RUN` per block; ``out_degree`` (N,) by old id)."""
    n = order.shape[0]
    heavy = 0
    while heavy < n and out_degree[order[heavy]] >= PUSH_HEAVY_RUN * num_blocks:
        heavy += 1
    return heavy


@numba.njit(parallel=True, cache=True, nogil=True)
def new_ids(order):
    """uint32 (N,): the new id of every old id (the inverse of ``order``)."""
    n = order.shape[0]
    new_id = np.empty(n, np.uint32)
    for k in numba.prange(n):
        new_id[order[k]] = k
    return new_id


@numba.njit(parallel=True, cache=True, nogil=True)
def fill_blocks(indptr, indices, order, new_id, bounds, edge_ptr, heavy, src, dst, runs,
                first, last):
    """Write blocks ``first:last`` of the layout's ``src``, ``dst`` and ``runs``
    (preallocated: (E,) uint32, (E,) uint16, (B * (heavy+1),) int64; plain arrays or
    writable maps) from the CSC ``indptr`` / ``indices``, ``order`` and its inverse
    ``new_id`` (:func:`new_ids`); see the module docstring. Block by block in parallel, a
    counting sort by source each; every target gets its sources in ascending new id.
    Memory: 8 bytes per vertex per thread while a block is sorted."""
    n = indptr.shape[0] - 1
    for b in numba.prange(first, last):
        at = np.zeros(n + 1, np.int64)
        for k in range(bounds[b], bounds[b + 1]):
            for e in range(indptr[order[k]], indptr[order[k] + 1]):
                at[new_id[indices[e]] + 1] += 1
        at[0] = edge_ptr[b]
        for s in range(n):
            at[s + 1] += at[s]
        for s in range(heavy + 1):
            runs[b * (heavy + 1) + s] = at[s]
        for k in range(bounds[b], bounds[b + 1]):  # targets ascend within each source
            for e in range(indptr[order[k]], indptr[order[k] + 1]):
                s = new_id[indices[e]]
                src[at[s]] = s
                dst[at[s]] = k - bounds[b]
                at[s] += 1


def push_layout(indptr, indices, order, out_degree, num_min_blocks):
    """The in-edges of a CSC (``indptr`` int64 (N+1,), ``indices`` (E,)) renumbered by
    ``order`` (int64 (N,), new id -> old; :func:`degree_order` of ``out_degree``, (N,) by
    old id, integer or float64 counts) as a push into destination blocks of about E /
    ``num_min_blocks`` in-edges (:func:`plan_blocks`), in RAM (6 bytes per edge). Returns
    ``(bounds, edge_ptr, src, dst, runs, heavy)`` as in the module docstring."""
    bounds, edge_ptr = plan_blocks(indptr, order, num_min_blocks)
    nb = len(bounds) - 1
    heavy = int(count_heavy(order, out_degree, nb))
    m = int(edge_ptr[-1])
    src, dst = np.empty(m, np.uint32), np.empty(m, np.uint16)
    runs = np.empty(nb * (heavy + 1), np.int64)
    fill_blocks(indptr, indices, order, new_ids(order), bounds, edge_ptr, heavy, src, dst,
                runs, 0, nb)
    return bounds, edge_ptr, src, dst, runs, heavy


@numba.njit(parallel=True, cache=True, nogil=True)
def _edges_problem(bounds, edge_ptr, src, dst, n):
    """Per block, in parallel (blocks hold disjoint targets): 0 if every source < ``n`` and
    every target offset < the block's size, else 5 (``src``) or 6 (``dst``); and how many
    of the block's targets have an in-edge. Returns (first problem, receivers)."""
    nb = bounds.shape[0] - 1
    problems = np.zeros(nb, np.int64)
    counts = np.zeros(nb, np.int64)
    hit = np.zeros(n, np.uint8)  # targets with an in-edge
    for b in numba.prange(nb):
        size = bounds[b + 1] - bounds[b]
        got = 0
        for e in range(edge_ptr[b], edge_ptr[b + 1]):
            if src[e] >= n:
                problems[b] = 5
                break
            t = dst[e]
            if t >= size:
                problems[b] = 6
                break
            if not hit[bounds[b] + t]:
                hit[bounds[b] + t] = 1
                got += 1
        counts[b] = got
    for b in range(nb):
        if problems[b]:
            return problems[b], 0
    return 0, counts.sum()


@numba.njit(cache=True, nogil=True)
def layout_problem(order, bounds, edge_ptr, src, dst, runs, heavy):
    """Check a stored layout over ``order.shape[0]`` vertices and ``src.shape[0]`` edges
    before a step indexes arrays with it: 0 if every offset and id is in range (a push step
    over it reads and writes only inside its arrays), else a code naming the first bad
    array: 1 ``order`` (not a permutation), 2 ``bounds``, 3 ``edge_ptr``, 4 ``runs``, 5
    ``src``, 6 ``dst``. Also returns how many targets have an in-edge (0 when bad). The
    per-edge checks run in parallel over the blocks: one pass over the mapped arrays."""
    n = order.shape[0]
    m = src.shape[0]
    nb = bounds.shape[0] - 1
    seen = np.zeros(n, np.uint8)
    for k in range(n):
        v = order[k]
        if v < 0 or v >= n or seen[v]:
            return 1, 0
        seen[v] = 1
    if nb < 1 or bounds[0] != 0 or bounds[nb] != n:
        return 2, 0
    for b in range(nb):
        if bounds[b + 1] <= bounds[b] or bounds[b + 1] - bounds[b] > PUSH_BLOCK_MAX_NODES:
            return 2, 0
    if edge_ptr.shape[0] != nb + 1 or edge_ptr[0] != 0 or edge_ptr[nb] != m:
        return 3, 0
    for b in range(nb):
        if edge_ptr[b + 1] < edge_ptr[b]:
            return 3, 0
    if heavy < 0 or heavy > n or runs.shape[0] != nb * (heavy + 1):
        return 4, 0
    for b in range(nb):
        row = b * (heavy + 1)
        if runs[row] != edge_ptr[b] or runs[row + heavy] > edge_ptr[b + 1]:
            return 4, 0
        for s in range(heavy):
            if runs[row + s + 1] < runs[row + s]:
                return 4, 0
    return _edges_problem(bounds, edge_ptr, src, dst, n)
