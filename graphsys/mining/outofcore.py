"""Triangles of a graph whose oriented adjacency does not fit in RAM: row blocks of the
mapped ``sym`` index, two at a time.

Global ids are partition-major, so the rows of a group of consecutive partitions of the
``P x P`` bucket layout are one contiguous range of the ``sym`` index (a *row block*). The
orientation is the in-RAM one without the renumbering: ``u -> v`` when ``(degree(u), u) <
(degree(v), v)``, rows kept in global id order (a filtered sorted row stays sorted).

A triangle ``u < v < w`` (in that order) is found from the block ``A`` holding ``u``'s row
and the block ``B`` holding ``v``'s: for every *outer* block ``A`` (its oriented rows in
RAM), every *inner* block ``B`` is filtered from the index in turn, and the rows of ``v``
in ``B`` are probed against the row of ``u``, marked in a per-thread bitset, for every
``u -> v`` with ``v`` in ``B``: the in-RAM kernel on a pair of blocks, so every triangle is
counted once, at the pair (block of its lowest vertex, block of its middle one).

Memory (anonymous): 16 bytes per node (the order's rank and the oriented row offsets; 8
more for per-node counts), N/8 bytes per thread (the bitsets), and the two blocks' oriented
rows (4 bytes per entry), sized so that the whole fits ``memory_limit``: the outer block
takes three quarters of what is left, the inner one a quarter. The index is read
sequentially, once per outer block (its pages are page cache, dropped under pressure):
with ``q`` outer blocks, ``q`` passes over the index, ``q ~ 1.33 * 4 M / (budget - 16 N)``
for ``M`` kept edges.

Across ranks, rank ``r`` of ``W`` takes the outer blocks ``r, r + W, ...``; the counts are
summed with ``all_reduce``.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.errors import GraphsysError
from graphsys.mining import kernels
from graphsys.mining.oriented import (
    _by_rows,
    _count_higher,
    _order_by,
    _simple_degree,
    check_budget,
    mapped_symmetric,
)
from graphsys.mining.parallel import Ranks, run_tasks
from graphsys.progress import progress_bar
from graphsys.storage.adjacency_index import build_command

#: Anonymous bytes per node out of core: the rank (8) and the oriented row offsets (8).
OOC_BYTES_PER_NODE = 16
#: Fixed part of the budget: the interpreter, one batch of conversions.
OOC_FIXED_BYTES = 64 << 20


def plan_blocks(dptr: np.ndarray, partition_offsets: np.ndarray, max_entries: int
                ) -> list[tuple[int, int]]:
    """Row blocks ``[lo, hi)`` of at most ``max_entries`` oriented entries each: whole
    partitions (consecutive ones together while they fit), a partition too large for one
    block cut by rows; a row longer than ``max_entries`` is a block of its own.

    Examples
    --------
    >>> dptr = np.array([0, 2, 4, 6, 8, 10])  # 5 rows of 2 entries
    >>> plan_blocks(dptr, np.array([0, 2, 5]), 4)
    [(0, 2), (2, 4), (4, 5)]
    """
    blocks: list[tuple[int, int]] = []
    lo = 0
    n = len(dptr) - 1
    parts = [int(x) for x in partition_offsets[1:]]
    while lo < n:
        # the furthest partition end that fits, else the furthest row that fits
        hi = lo
        for end in parts:
            if end > lo and dptr[end] - dptr[lo] <= max_entries:
                hi = end
        if hi == lo:
            hi = int(np.searchsorted(dptr, dptr[lo] + max_entries, side="right")) - 1
            hi = max(hi, lo + 1)
            nxt = next((e for e in parts if e > lo), n)
            hi = min(hi, nxt)
        blocks.append((lo, hi))
        lo = hi
    return blocks


def triangles_by_blocks(graph, edge_set: str, *, per_vertex: bool, memory_limit,
                        threads: int, ranks: Ranks, progress: bool = False,
                        whole: bool = False, block_entries: int | None = None):
    """``(total, counts by global id or None, simple degree by global id)`` over row blocks
    of the mapped ``sym`` index (see the module's notes). ``whole``: the whole oriented
    graph is one block, in RAM (the in-memory path; the roots are then split across ranks
    by work). ``block_entries``: the oriented entries of a block (outer and inner), instead
    of sizes derived from the budget.

    Raises
    ------
    GraphsysError
        The graph has no ``sym`` index (one line naming the command that builds it), or the
        budget is below the per-node arrays plus room for two blocks.
    """
    sym = mapped_symmetric(graph, edge_set)
    if sym is None:
        raise GraphsysError(f"counting triangles out of core reads the undirected index, "
                            f"which the graph has not: "
                            f"{build_command(graph, ('sym',), edge_set)}")
    indptr, indices, _ = sym
    n = len(indptr) - 1
    if not whole:
        limit = check_budget(memory_limit)
        per_node = OOC_BYTES_PER_NODE + (8 if per_vertex else 0) + threads / 8
        left = limit - OOC_FIXED_BYTES - per_node * n - 16 * n  # + the degree while ranking
        min_block = 4 * int(np.max(np.diff(indptr))) if n else 0
        if left < 2 * max(min_block, 1 << 20):
            need = (OOC_FIXED_BYTES + (per_node + 16) * n + 2 * max(min_block, 1 << 20)) / 1e9
            raise GraphsysError(f"counting triangles out of core needs at least {need:.2f} "
                                f"GB of memory_limit for {n:,} nodes, got {limit / 1e9:.2f} "
                                f"GB")
    degree = np.empty(n, np.int64)
    _simple_degree(indptr, indices, degree)
    _, rank = _order_by(degree)
    lengths = np.empty(n, np.int64)
    _count_higher(indptr, indices, rank, lengths, False)
    dptr = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=dptr[1:])
    del lengths
    counts = np.zeros(n if per_vertex else 0, np.int64)
    marks = np.zeros((threads, max(1, (n + 63) >> 6)), np.uint64)
    if whole:
        bptr, bidx = _load_block(indptr, indices, rank, dptr, 0, n)
        d = np.diff(bptr)
        work = d * (d + 1)
        lo, hi = ranks.roots(work)
        total = _pair(bptr, bidx, 0, bptr, bidx, 0, n, work, lo, hi, marks, per_vertex,
                      counts, threads, progress)
    else:
        offsets = graph.partition_offsets()
        if block_entries is None:
            outer = plan_blocks(dptr, offsets, max(int(left * 0.75) // 4, min_block // 4, 1))
            inner = plan_blocks(dptr, offsets, max(int(left * 0.25) // 4, min_block // 4, 1))
        else:
            outer = inner = plan_blocks(dptr, offsets, int(block_entries))
        mine = outer[ranks.rank::ranks.world_size]
        total = 0
        with progress_bar(total=len(mine) * len(inner), unit="block pair",
                          desc="triangles out of core", disable=not progress) as bar:
            for a_lo, a_hi in mine:
                aptr, aidx = _load_block(indptr, indices, rank, dptr, a_lo, a_hi)
                for b_lo, b_hi in inner:
                    if a_lo <= b_lo and b_hi <= a_hi:  # inside the outer block: use it
                        bptr, bidx = aptr[b_lo - a_lo:b_hi - a_lo + 1], aidx
                    else:
                        bptr, bidx = _load_block(indptr, indices, rank, dptr, b_lo, b_hi)
                    work = np.zeros(a_hi - a_lo, np.int64)
                    _pair_work(aptr, aidx, bptr, b_lo, b_hi, work)
                    total += _pair(aptr, aidx, a_lo, bptr, bidx, b_lo, b_hi, work, 0,
                                   a_hi - a_lo, marks, per_vertex, counts, threads, False)
                    bar.update(1)
    total = int(ranks.sum(np.array([total], np.int64))[0])
    return total, (ranks.sum(counts) if per_vertex else None), degree


def _pair(aptr, aidx, a_lo, bptr, bidx, b_lo, b_hi, work, lo, hi, marks, per_vertex, counts,
          threads, progress) -> int:
    """Triangles from the roots ``a_lo + [lo, hi)`` of block A with their middle vertex in
    block B (``work``: per root of A, its estimate)."""
    rows = (aptr, aidx, a_lo, bptr, bidx, b_lo, b_hi)
    return run_tasks(
        lambda tasks: kernels.triangles_bitmap(*rows, tasks + a_lo, marks, per_vertex, counts,
                                               True),
        work, lo, hi, threads, progress=progress, desc="triangles",
        serial=lambda a, b: kernels.triangles_bitmap_rows(*rows, a + a_lo, b + a_lo, marks[0],
                                                          per_vertex, counts, True))


def _load_block(indptr, indices, rank, dptr, lo: int, hi: int):
    """The oriented rows ``[lo, hi)`` in RAM: offsets (from 0) and global ids, each row
    ascending (a filtered sorted row of the index)."""
    bptr = np.asarray(dptr[lo:hi + 1] - dptr[lo])
    bidx = np.empty(int(bptr[-1]), indices.dtype)
    _by_rows(indptr[lo:hi + 1],
             lambda a, b: _fill_block_rows(indptr, indices, rank, lo, bptr, bidx, lo + a, lo + b),
             lambda bounds: _fill_block_par(indptr, indices, rank, lo, bptr, bidx, bounds + lo))
    return bptr, bidx


@numba.njit(cache=True, nogil=True)
def _fill_block_rows(indptr, indices, rank, lo, bptr, bidx, r0, r1):
    for u in range(r0, r1):
        ru = rank[u]
        pos = bptr[u - lo]
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            if rank[v] > ru:
                bidx[pos] = v
                pos += 1


@numba.njit(cache=True, nogil=True, parallel=True)
def _fill_block_par(indptr, indices, rank, lo, bptr, bidx, bounds):
    for t in numba.prange(bounds.shape[0] - 1):
        _fill_block_rows(indptr, indices, rank, lo, bptr, bidx, bounds[t], bounds[t + 1])


@numba.njit(cache=True, nogil=True, parallel=True)
def _pair_work(aptr, aidx, bptr, b_lo, b_hi, out):
    """Per root of the outer block: its row's length plus the rows of its neighbours in the
    inner block ``[b_lo, b_hi)``."""
    for r in numba.prange(aptr.shape[0] - 1):
        w = aptr[r + 1] - aptr[r]
        for k in range(aptr[r], aptr[r + 1]):
            v = aidx[k]
            if b_lo <= v < b_hi:
                w += bptr[v - b_lo + 1] - bptr[v - b_lo]
        out[r] = w
