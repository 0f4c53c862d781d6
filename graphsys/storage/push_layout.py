"""The destination-blocked push layout of a graph's in-edges: built in memory by PageRank's
fused loop for long runs, or once, by ``graphsys index --push``, as the ``push`` index of a
graph directory (:mod:`graphsys.storage.adjacency_index`), which every later run maps.

The vertices are renumbered by descending out-degree (ties by ascending id) and the targets
cut into blocks of about equal in-edge counts; a block's edges are sorted by source, so a
push step reads the sent values in one ascending sweep per block and adds into sums that stay
in L2 (:func:`graphsys.bsp.kernels_pagerank.pagerank_push_step`). The arrays (``order``,
``bounds``, ``edge_ptr``, ``step``, ``dst``, ``runs`` and ``heavy``: heavy sources' runs,
light sources' steps of at most :data:`PUSH_STEP_MAX`, blocks of at most
:data:`PUSH_BLOCK_MAX_NODES` targets) are specified in docs/format.md, "Push index".
"""

from __future__ import annotations

import numba
import numpy as np

#: A destination block holds at most this many vertices: a local offset (or the spare sum's,
#: one past them) is a uint16, and the block's float64 sums (512 KiB) stay in a 1 MiB L2
PUSH_BLOCK_MAX_NODES = (1 << 16) - 1

#: The largest source step of one slot (uint8); a longer gap between a block's sources is
#: crossed by padding slots
PUSH_STEP_MAX = 255

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


@numba.njit(inline="always")
def _count_sources(b, indptr, indices, order, new_id, bounds, at):
    """Add block ``b``'s in-edges per source (new id) into ``at`` (int64 (N,) of zeros)."""
    for k in range(bounds[b], bounds[b + 1]):
        for e in range(indptr[order[k]], indptr[order[k] + 1]):
            at[new_id[indices[e]]] += 1


@numba.njit(parallel=True, cache=True, nogil=True)
def padding_slots(indptr, indices, order, new_id, bounds, heavy):
    """int64 (B,): the padding slots of each block (gaps over :data:`PUSH_STEP_MAX`
    between its successive light sources, from ``heavy``), in parallel over the blocks.
    Memory: 1 byte per vertex per thread (which sources the block has)."""
    n = indptr.shape[0] - 1
    nb = bounds.shape[0] - 1
    pads = np.zeros(nb, np.int64)
    for b in numba.prange(nb):
        seen = np.zeros(n, np.uint8)
        for k in range(bounds[b], bounds[b + 1]):
            for e in range(indptr[order[k]], indptr[order[k] + 1]):
                seen[new_id[indices[e]]] = 1
        prev, got = heavy, 0
        for s in range(heavy, n):
            if seen[s]:
                got += (s - prev - 1) // PUSH_STEP_MAX if s - prev > PUSH_STEP_MAX else 0
                prev = s
        pads[b] = got
    return pads


def slot_offsets(edge_ptr, pads):
    """int64 (B+1,): each block's first slot, from its first edge ``edge_ptr`` (B+1,) and
    its padding slots ``pads`` (B,) (:func:`padding_slots`)."""
    out = np.array(edge_ptr, np.int64)
    out[1:] += np.cumsum(pads)
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def fill_blocks(indptr, indices, order, new_id, bounds, slot_ptr, heavy, step, dst, runs,
                first, last):
    """Write blocks ``first:last`` of the layout's ``step``, ``dst`` and ``runs``
    (preallocated: (S,) uint8, (S,) uint16, (B * (heavy+1),) int64; plain arrays or
    writable maps) from the CSC ``indptr`` / ``indices``, ``order`` and its inverse
    ``new_id`` (:func:`new_ids`), ``slot_ptr`` (:func:`slot_offsets`); see the module
    docstring. Block by block in parallel, a counting sort by source each; every target
    gets its sources in ascending new id. Memory: 8 bytes per vertex per thread while a
    block is sorted."""
    n = indptr.shape[0] - 1
    for b in numba.prange(first, last):
        at = np.zeros(n, np.int64)
        _count_sources(b, indptr, indices, order, new_id, bounds, at)
        size = bounds[b + 1] - bounds[b]
        row = b * (heavy + 1)
        pos = slot_ptr[b]
        for s in range(heavy):  # runs: the source is named by the run, steps unused
            runs[row + s] = pos
            c = at[s]
            at[s] = pos
            for j in range(c):
                step[pos + j] = 0
            pos += c
        runs[row + heavy] = pos
        prev = heavy
        for s in range(heavy, n):
            c = at[s]
            if c == 0:
                continue
            gap = s - prev
            while gap > PUSH_STEP_MAX:  # padding: into the spare sum
                step[pos] = PUSH_STEP_MAX
                dst[pos] = size
                pos += 1
                gap -= PUSH_STEP_MAX
            step[pos] = gap
            for j in range(1, c):
                step[pos + j] = 0
            at[s] = pos
            pos += c
            prev = s
        for k in range(bounds[b], bounds[b + 1]):  # targets ascend within each source
            for e in range(indptr[order[k]], indptr[order[k] + 1]):
                s = new_id[indices[e]]
                dst[at[s]] = k - bounds[b]
                at[s] += 1


def push_layout(indptr, indices, order, out_degree, num_min_blocks):
    """The in-edges of a CSC (``indptr`` int64 (N+1,), ``indices`` (E,)) renumbered by
    ``order`` (int64 (N,), new id -> old; :func:`degree_order` of ``out_degree``, (N,) by
    old id, integer or float64 counts) as a push into destination blocks of about E /
    ``num_min_blocks`` in-edges (:func:`plan_blocks`), in RAM (3 bytes per edge). Returns
    ``(bounds, edge_ptr, step, dst, runs, heavy)`` as docs/format.md ("Push index") specifies."""
    bounds, edge_ptr = plan_blocks(indptr, order, num_min_blocks)
    nb = len(bounds) - 1
    heavy = int(count_heavy(order, out_degree, nb))
    new_id = new_ids(order)
    slot_ptr = slot_offsets(edge_ptr, padding_slots(indptr, indices, order, new_id, bounds,
                                                    heavy))
    slots = int(slot_ptr[-1])
    step, dst = np.empty(slots, np.uint8), np.empty(slots, np.uint16)
    runs = np.empty(nb * (heavy + 1), np.int64)
    fill_blocks(indptr, indices, order, new_id, bounds, slot_ptr, heavy, step, dst, runs,
                0, nb)
    return bounds, slot_ptr, step, dst, runs, heavy


def layout_bytes(num_nodes: int, num_edges: int, num_min_blocks: int, threads: int) -> int:
    """Anonymous bytes at the peak of :func:`push_layout`'s build, at most: 3 per slot
    (the edges and the padding, at most one per :data:`PUSH_STEP_MAX` vertices per
    block), the runs of the heavy sources (each has :data:`PUSH_HEAVY_RUN` edges per block
    or more), the inverse order, and per thread the marks and counts of the block it
    fills (9 bytes per vertex); ``num_min_blocks`` as :func:`min_blocks` gives (a vertex
    cap can cut more blocks: each holds at most :data:`PUSH_BLOCK_MAX_NODES`)."""
    n, m = num_nodes, num_edges
    nb = num_min_blocks + n // PUSH_BLOCK_MAX_NODES + 1
    slots = m + nb * (n // PUSH_STEP_MAX + 1)
    runs = 8 * (m // PUSH_HEAVY_RUN + nb)
    return 3 * slots + runs + 16 * (nb + 1) + 4 * n + 9 * n * max(threads, 1)


def sums_length(num_nodes: int, bounds: np.ndarray) -> int:
    """The length of a push step's ``acc`` over a layout's ``bounds``: every target's sum
    and one spare per block (its padding slots' target)."""
    return num_nodes + len(bounds) - 1


@numba.njit(parallel=True, cache=True, nogil=True)
def _edges_problem(bounds, edge_ptr, step, dst, runs, heavy, n):
    """Per block, in parallel (blocks hold disjoint targets): 0 if every light source
    (``heavy`` plus the steps so far) is < ``n`` and every target offset at most the
    block's size (its spare sum), else 5 (``step``) or 6 (``dst``); and how many of the
    block's targets have an in-edge. Returns (first problem, receivers)."""
    nb = bounds.shape[0] - 1
    problems = np.zeros(nb, np.int64)
    counts = np.zeros(nb, np.int64)
    hit = np.zeros(n, np.uint8)  # targets with an in-edge
    for b in numba.prange(nb):
        size = bounds[b + 1] - bounds[b]
        got = 0
        source = heavy
        light = runs[b * (heavy + 1) + heavy]
        for e in range(edge_ptr[b], edge_ptr[b + 1]):
            if e >= light:
                source += step[e]
                if source >= n:
                    problems[b] = 5
                    break
            t = dst[e]
            if t > size:
                problems[b] = 6
                break
            if t < size and not hit[bounds[b] + t]:
                hit[bounds[b] + t] = 1
                got += 1
        counts[b] = got
    for b in range(nb):
        if problems[b]:
            return problems[b], 0
    return 0, counts.sum()


@numba.njit(cache=True, nogil=True)
def layout_problem(order, bounds, edge_ptr, step, dst, runs, heavy):
    """Check a stored layout over ``order.shape[0]`` vertices and ``step.shape[0]`` slots
    before a step indexes arrays with it: 0 if every offset and id is in range (a push step
    over it reads and writes only inside its arrays), else a code naming the first bad
    array: 1 ``order`` (not a permutation), 2 ``bounds``, 3 ``edge_ptr``, 4 ``runs``, 5
    ``step``, 6 ``dst``. Also returns how many targets have an in-edge (0 when bad). The
    per-slot checks run in parallel over the blocks: one pass over the mapped arrays."""
    n = order.shape[0]
    m = step.shape[0]
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
    return _edges_problem(bounds, edge_ptr, step, dst, runs, heavy, n)
