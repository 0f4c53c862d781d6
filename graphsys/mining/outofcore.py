"""Triangles over row blocks of the mapped ``sym`` index: the whole graph as one block in
RAM, or out of core, two blocks at a time, for a graph whose oriented adjacency does not fit.

**Orientation.** Vertices are ranked by (degree, global id), the degree as the index stores
it (a self-loop counts one); each edge goes from its lower- to its higher-ranked endpoint,
compared by key (:func:`degree_key`) without a sort of the vertices. A vertex's *row* holds
its higher-ranked neighbours, ascending (at most ``sqrt(2M)``).

**Count.** Each triangle ``u < v < w`` is counted once, by the kernel :func:`from_middle`
picks by a cost model: from its *lowest* vertex ``u`` (``u``'s row marked per thread, the
rows of its out-neighbours probed: :func:`~graphsys.mining.kernels.triangles_lowest`) or
from its *middle* vertex ``v`` (``v``'s row marked, the rest of each in-neighbour's row
probed, rows renumbered by rank: :func:`~graphsys.mining.kernels.triangles_middle`).

**Row blocks.** For every *outer* block A of consecutive rows (three quarters of the budget
left after the per-node arrays), every *inner* block B (a quarter) is read in turn and the
kernel counts the triangles whose lowest vertex's row is in A and middle vertex's in B; in
RAM, A = B = the whole graph. The index is read sequentially once per outer block; across
ranks, rank ``r`` of ``W`` takes the outer blocks ``r, r + W, ...`` (in RAM, a range of
vertices of about equal work). ``docs/mining.md`` gives the memory per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from graphsys.errors import GraphsysError
from graphsys.mining import kernels
from graphsys.mining.parallel import SERIAL_WORK, Ranks, run_tasks
from graphsys.progress import display
from graphsys.storage.adjacency_index import build_command
from graphsys.storage.time_view import TimeView
from graphsys.units import format_size
from graphsys.views import budget, mapped_symmetric
from graphsys.views.limits import time_view_note
from graphsys.views.orient import (
    _by_rows,
    _count_higher,
    _fill_higher,
    _index_dtype,
    _order_by,
    _simple_degree,
)

#: Anonymous bytes per node out of core: the order and its inverse (16), the oriented row
#: offsets (8).
OOC_BYTES_PER_NODE = 24
#: Anonymous bytes per oriented entry of an outer block: its value (4), its inner block's
#: tag (1, :func:`tag_entries`) and, at most, its place in an inner block's in-lists
#: (position and row, 8).
OUTER_BYTES_PER_ENTRY = 13
#: Anonymous bytes per oriented entry of an inner block (its value), and per row (offsets
#: and in-list offsets) counted with it.
INNER_BYTES_PER_ENTRY = 8
#: Fixed part of the budget: the interpreter, one batch of conversions.
OOC_FIXED_BYTES = 64 << 20


def plan_blocks(dptr: np.ndarray, max_entries: int) -> list[tuple[int, int]]:
    """Row blocks ``[lo, hi)`` of at most ``max_entries`` oriented entries each, consecutive
    rows taken while they fit; a row longer than ``max_entries`` is a block of its own.
    Global ids are partition-major, so a block is a run of partitions (the first and last
    possibly in part), one contiguous range of the index: blocks cut at partition ends
    instead would leave most blocks part empty (more of them: more passes over the index).

    Examples
    --------
    >>> dptr = np.array([0, 2, 4, 6, 8, 10])  # 5 rows of 2 entries
    >>> plan_blocks(dptr, 4)
    [(0, 2), (2, 4), (4, 5)]
    >>> plan_blocks(np.array([0, 1, 7, 8]), 4)  # the row of 6 entries alone
    [(0, 1), (1, 2), (2, 3)]
    """
    blocks: list[tuple[int, int]] = []
    lo = 0
    n = len(dptr) - 1
    while lo < n:
        hi = int(np.searchsorted(dptr, dptr[lo] + max_entries, side="right")) - 1
        hi = min(max(hi, lo + 1), n)
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
    if sym is None and isinstance(graph, TimeView):
        raise GraphsysError(f"counting triangles out of core reads an undirected index: "
                            f"count the view in RAM (mode memory), or "
                            f"{time_view_note(graph)}")
    if sym is None:
        raise GraphsysError(f"counting triangles out of core reads the undirected index, "
                            f"which the graph has not: "
                            f"{build_command(graph, ('sym',), edge_set)}")
    indptr, indices, _ = sym
    n = len(indptr) - 1
    if whole:
        rows = orient_whole(indptr, indices, threads)
        total, counts = count_whole(rows, per_vertex=per_vertex, threads=threads,
                                    ranks=ranks, progress=progress)
        return total, counts, rows.degree
    limit = budget(memory_limit)
    marks = 1 if n <= kernels.BYTE_MARKS_UP_TO else 1 / 8
    per_node = OOC_BYTES_PER_NODE + (8 if per_vertex else 0) + threads * marks
    left = limit - OOC_FIXED_BYTES - per_node * n - 16 * n  # + the degree while ranking
    min_block = 4 * int(np.max(np.diff(indptr))) if n else 0
    if left < 2 * max(min_block, 1 << 20):
        need = OOC_FIXED_BYTES + (per_node + 16) * n + 2 * max(min_block, 1 << 20)
        raise GraphsysError(f"counting triangles out of core needs at least "
                            f"{format_size(need)} of memory_limit for {n:,} nodes, got "
                            f"{format_size(limit)}")
    key, stored = degree_key(indptr)
    values = _index_dtype(n)
    degree = np.empty(n, np.int64)
    dptr = _oriented_offsets(indptr, indices, key, degree)
    counts = np.zeros(n if per_vertex else 0, np.int64)
    marks = kernels.mark_array(threads, n)
    middle = from_middle(degree, np.diff(dptr))
    order = rank = None
    if middle:  # rows of ranks, sorted: the order itself (in place of the keys)
        key = None
        order, rank = _order_by(stored)
    del stored
    if block_entries is None:
        outer = plan_blocks(dptr, max(int(left * 0.75) // OUTER_BYTES_PER_ENTRY,
                                      min_block // 4, 1))
        inner = plan_blocks(dptr, max(int(left * 0.25) // INNER_BYTES_PER_ENTRY,
                                      min_block // 4, 1))
    else:
        outer = inner = plan_blocks(dptr, int(block_entries))
    mine = outer[ranks.rank::ranks.world_size]
    total = 0
    with display(progress, total=len(mine) * len(inner), unit="block pair",
                 desc="triangles out of core") as bar:
        for a_lo, a_hi in mine:
            a_rows = load_block(indptr, indices, rank if middle else key, dptr, a_lo,
                                a_hi, values, middle)
            where = tag_entries(a_rows, order, inner) if middle else None
            for b, (b_lo, b_hi) in enumerate(inner):
                if a_lo <= b_lo and b_hi <= a_hi:  # inside the outer block: use it
                    b_rows = (a_rows[0][b_lo - a_lo:b_hi - a_lo + 1], a_rows[1])
                else:
                    b_rows = load_block(indptr, indices, rank if middle else key, dptr,
                                        b_lo, b_hi, values, middle)
                total += count_pair(a_rows, a_lo, b_rows, b_lo,
                                    order if middle else None, marks, per_vertex,
                                    counts, threads, where=where, b=b)
                bar.update(1)
    total = int(ranks.sum(np.array([total], np.int64))[0])
    return total, (ranks.sum(counts) if per_vertex else None), degree


@dataclass(frozen=True)
class Whole:
    """The whole oriented graph in RAM as the in-memory triangle count reads it (from the
    mapped ``sym`` index): what :func:`orient_whole` builds and :func:`count_whole` counts;
    the structure kept between counts on one opened graph (:mod:`graphsys.views.cache`).

    Attributes
    ----------
    rows : tuple of numpy.ndarray
        ``(dptr, didx)``: each row's higher-ranked neighbours; with ``order``, row ``r`` is
        the vertex of rank ``r`` and holds ranks ascending, else row ``u`` is the vertex
        ``u`` and holds ids ascending.
    order : numpy.ndarray or None
        int64 (N,) rank -> id, for the kernel from the middle vertex; None for the kernel
        from the lowest one.
    degree : numpy.ndarray
        int64 (N,) simple degree by id.
    inlists : tuple of numpy.ndarray or None
        ``(iptr, ipos, irow, work, iend)`` by rank: the in-lists of :func:`inlists`, the
        per-vertex work of the kernel from the middle vertex and the end of each in-list
        entry's row (None for the other kernel).
    memo : dict
        Figures derived from the arrays once, for the counts that read the structure
        again while it is kept (:func:`count_whole`'s work per root, whether
        :func:`ranked_again` pays, the triples of the transitivity).
    """

    rows: tuple
    order: np.ndarray | None
    degree: np.ndarray
    inlists: tuple | None = None
    memo: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def nbytes(self) -> int:
        """Bytes the arrays hold."""
        arrays = [*self.rows, self.degree, *(self.inlists or ())]
        arrays += [self.order] if self.order is not None else []
        return int(sum(a.nbytes for a in arrays))


def orient_whole(indptr, indices, threads: int) -> Whole:
    """The :class:`Whole` oriented graph of the symmetric rows ``(indptr, indices)``: the
    kernel picked by :func:`from_middle`, the rows it reads (and its in-lists)."""
    n = len(indptr) - 1
    key, stored = degree_key(indptr)
    values = _index_dtype(n)
    degree = np.empty(n, np.int64)
    rows = None
    if int(indptr[-1]) + n < SERIAL_WORK or threads == 1:
        rows = orient_serial(indptr, indices, key, degree, values)  # one pass, ids
        dptr = rows[0]
    else:
        dptr = _oriented_offsets(indptr, indices, key, degree)
    out_degree = np.diff(dptr)
    if not from_middle(degree, out_degree):
        if rows is None:
            rows = load_block(indptr, indices, key, dptr, 0, n, values, False)
        return Whole(rows, None, degree)
    rows = dptr = None  # the rows of ids go before the rows of ranks are built
    del key
    order, rank = rank_order(stored, values)
    del stored
    return ranked_whole(indptr, indices, order, rank, degree, out_degree)


def ranked_again(whole: Whole, indptr, indices) -> Whole | None:
    """The :class:`Whole` graph of the kernel from the middle vertex, for a graph counted
    again on the ``whole`` of the kernel from the lowest one, when :func:`from_middle`
    finds the middle kernel's count alone cheaper (its build then pays for itself over the
    counts that reuse it); else None. ``(indptr, indices)``: the symmetric rows ``whole``
    was built from."""
    if whole.order is not None:
        return None
    if "middle alone" not in whole.memo:  # the rows do not change: asked once
        whole.memo["middle alone"] = from_middle(whole.degree, np.diff(whole.rows[0]),
                                                 False)
    if not whole.memo["middle alone"]:
        return None
    out_degree = np.diff(whole.rows[0])
    order, rank = rank_order(np.diff(indptr), _index_dtype(len(out_degree)))
    return ranked_whole(indptr, indices, order, rank, whole.degree, out_degree)


def rank_order(length: np.ndarray, rank_dtype) -> tuple[np.ndarray, np.ndarray]:
    """``(order, rank)`` of the vertices by (``length``, id), ``length`` the stored row
    lengths (int64 (N,), each at most N): int64 (N,) and ``rank_dtype`` (N,), by a counting
    sort (one pass over the vertices and one over the lengths)."""
    n = len(length)
    order, rank = np.empty(n, np.int64), np.empty(n, rank_dtype)
    _counting_order(length, int(length.max()) if n else 0, order, rank)
    return order, rank


@numba.njit(cache=True, nogil=True)
def _counting_order(key, top, order, rank):
    start = np.zeros(top + 2, np.int64)
    for u in range(key.shape[0]):
        start[key[u] + 1] += 1
    for d in range(top + 1):
        start[d + 1] += start[d]
    for u in range(key.shape[0]):
        r = start[key[u]]
        start[key[u]] = r + 1
        order[r] = u
        rank[u] = r


def ranked_bytes(whole: Whole) -> int:
    """Bytes :func:`ranked_again` adds up to at its peak for a graph whose ``whole`` has
    ``M`` entries and ``N`` nodes: ``16 M`` (rows, in-list positions, row ends and rows),
    ``12 M`` more while the in-lists are cut to their entries, and ``48 N`` (offsets,
    in-list offsets, work, order, rank and the build's cursors)."""
    return 28 * len(whole.rows[1]) + 48 * len(whole.degree)


def ranked_whole(indptr, indices, order, rank, degree, out_degree) -> Whole:
    """The :class:`Whole` graph of the kernel from the middle vertex, renumbered by rank,
    built in one pass over the vertices in rank order (:func:`_ranked_rows`): each vertex
    ``u`` of rank ``r`` appends ``r`` to the row of each lower-ranked neighbour, so every
    row fills in ascending order (no sort), and ``u``'s in-list (where ``r`` went) is
    written in the same step, with the kernel's work of ``r``. An entry last in its row
    (nothing after it to probe) is left out of the in-lists. ``degree`` and
    ``out_degree``: int64 (N,) simple degree and higher neighbours, by id."""
    n = len(order)
    dptr = np.zeros(n + 1, np.int64)
    np.cumsum(out_degree[order], out=dptr[1:])
    m = int(dptr[-1])
    didx = np.empty(m, _index_dtype(n))
    iptr = np.zeros(n + 1, np.int64)
    ipos, iend = np.empty(m, _index_dtype(m)), np.empty(m, _index_dtype(m))
    irow = np.empty(m, _index_dtype(n))
    work = np.empty(n, np.int64)
    kept = _ranked_rows(indptr, indices, order, rank, dptr, didx, iptr, ipos, iend, irow,
                        work)
    if kept < 0:
        raise GraphsysError("the undirected (sym) index is not symmetric: a neighbour is "
                            "missing from its neighbour's row; rebuild the index")
    ipos, iend, irow = (a[:kept].copy() for a in (ipos, iend, irow))
    return Whole((dptr, didx), order, degree, (iptr, ipos, irow, work, iend))


@numba.njit(cache=True, nogil=True)
def _ranked_rows(indptr, indices, order, rank, dptr, didx, iptr, ipos, iend, irow, work):
    """Fill the rows of ranks (``dptr``, ``didx``), the in-lists (``iptr``, ``ipos``,
    ``iend``, ``irow``) and the work of :func:`ranked_whole`; returns the in-list entries,
    or -1 where the index is not symmetric (a row would take more or fewer entries than
    its offsets hold)."""
    n = order.shape[0]
    cursor = np.empty((n, 2), np.int64)  # per row: the next slot, the end (one line)
    for r in range(n):
        cursor[r, 0] = dptr[r]
        cursor[r, 1] = dptr[r + 1]
    fill = 0
    for r in range(n):
        u = order[r]
        tails = 0
        for k in range(indptr[u], indptr[u + 1]):
            s = rank[indices[k]]
            if s >= r:
                continue
            pos, end = cursor[s, 0], cursor[s, 1]
            if pos >= end:
                return -1
            didx[pos] = r
            cursor[s, 0] = pos + 1
            if pos + 1 < end:  # entries after it: candidates to probe
                ipos[fill] = pos
                iend[fill] = end
                irow[fill] = s
                fill += 1
                tails += end - pos - 1
        iptr[r + 1] = fill
        own = dptr[r + 1] - dptr[r]
        work[r] = own + tails if own else 0
    for r in range(n):
        if cursor[r, 0] != dptr[r + 1]:
            return -1
    return fill


def count_whole(whole: Whole, *, per_vertex: bool, threads: int, ranks: Ranks,
                progress: bool = False) -> tuple[int, np.ndarray | None]:
    """Triangles of a :class:`Whole` graph: the total over ranks and, with ``per_vertex``,
    int64 (N,) counts by id (summed over ranks)."""
    n = len(whole.degree)
    counts = np.zeros(n if per_vertex else 0, np.int64)
    ranked = whole.order is not None
    # rows of ranks: a value is its row's id (an empty map: the kernel counts by value)
    ids = np.zeros(0, np.int64) if ranked else None
    if not ranked and "work" not in whole.memo:
        whole.memo["work"] = lowest_work(whole.rows[0])
    total = count_pair(whole.rows, 0, whole.rows, 0, ids,
                       kernels.mark_array(threads, n), per_vertex, counts, threads,
                       ranks=ranks, progress=progress, ready=whole.inlists,
                       work=whole.memo.get("work"))
    total = int(ranks.sum(np.array([total], np.int64))[0])
    if per_vertex and ranked:
        by_id = np.empty_like(counts)
        by_id[whole.order] = counts
        counts = by_id
    return total, (ranks.sum(counts) if per_vertex else None)


#: Below this much estimated work (entries read) a triangle pass runs in the calling thread:
#: a pass this short takes a few milliseconds in one thread, and a numba thread team idle
#: since the last parallel call (asleep after the caller did other work) takes up to
#: milliseconds to wake on a busy machine, about what a second thread saves. Above it (a
#: repeated count on soc-Slashdot0902 from the middle vertex, 5 M entries) the threads
#: share the pass.
TRIANGLE_SERIAL_WORK = 1 << 22


#: The cost model that picks the triangle kernel (nanoseconds, measured on the results
#: page's machine): a probe from the lowest vertex (a sequential row, an L1/L2 mark); a
#: probe from the middle vertex and the jump to the in-neighbour's row before its probes
#: (one per in-list entry); and the middle kernel's extra build per entry (the vertices
#: ordered by rank, the rows of ranks and the in-lists written, :func:`ranked_whole`).
LOWEST_PROBE_NS = 1.5
MIDDLE_PROBE_NS = 1.2
MIDDLE_ENTRY_NS = 10.0
MIDDLE_BUILD_NS = 24.0


def from_middle(degree: np.ndarray, out_degree: np.ndarray, build: bool = True) -> bool:
    """Whether counting from the middle vertex is cheaper than from the lowest one, by
    :data:`LOWEST_PROBE_NS` and its siblings: the lowest-vertex kernel probes ``sum over
    v of in(v) d+(v)`` entries (``in(v) = d(v) - d+(v)`` edges point at ``v``), the middle
    one ``sum over u of C(d+(u), 2)`` (every wedge of every row) from one in-list entry per
    edge, after (``build``) a pass per entry that builds them; without ``build``, the
    count alone (its structure built already, or to be kept for later counts)."""
    d_out = out_degree.astype(np.float64)
    lowest = float(((degree - out_degree) * d_out).sum())
    middle = float((d_out * (d_out - 1) / 2).sum())
    per_entry = MIDDLE_ENTRY_NS + (MIDDLE_BUILD_NS if build else 0.0)
    return LOWEST_PROBE_NS * lowest > MIDDLE_PROBE_NS * middle + per_entry * float(
        out_degree.sum())


def lowest_work(indptr: np.ndarray) -> np.ndarray:
    """The work per row of the kernel from the lowest vertex, ``d+(u) (d+(u) + 1)`` (its
    row, and rows about as long as its own): int64 (N,)."""
    work = np.diff(indptr)
    return work * (work + 1)


def count_pair(a_rows, a_lo: int, b_rows, b_lo: int, order: np.ndarray | None,
               marks: np.ndarray, per_vertex: bool, counts: np.ndarray, threads: int, *,
               ranks: Ranks | None = None, progress: bool = False,
               in_degree: np.ndarray | None = None, where: np.ndarray | None = None,
               b: int = 0, ready: tuple | None = None, work: np.ndarray | None = None
               ) -> int:
    """Triangles whose lowest vertex's row is in block A and whose middle vertex's row is in
    block B (``(ptr, values)`` pairs, rows numbered from ``a_lo`` and ``b_lo``).

    With ``order`` (values are positions in the orientation's order, ``order`` maps them to
    row ids; rows ascend by them), from the middle vertex: B's in-lists from A (from
    ``in_degree`` when A and B are the whole graph; ``where``, ``b``: A's entries tagged
    by inner block, B being block ``b``, see :func:`tag_entries`), then
    :func:`~graphsys.mining.kernels.triangles_middle` over B's rows. Without (values are row
    ids, rows ascend by id), from the lowest vertex:
    :func:`~graphsys.mining.kernels.triangles_lowest` over A's rows. With ``ranks``, this
    rank's share of the rows, by work. ``ready``: B's in-lists, work and row ends, built
    before (:attr:`Whole.inlists`); ``work``: A's :func:`lowest_work`, computed before
    (for the kernel from the lowest vertex)."""
    aptr, aidx = a_rows
    bptr, bidx = b_rows
    na, nb = len(aptr) - 1, len(bptr) - 1
    if order is None:
        work = lowest_work(aptr) if work is None else work
        lo, hi = ranks.roots(work) if ranks is not None else (0, na)
        args = (aptr, aidx, a_lo, bptr, bidx, b_lo, b_lo + nb, np.zeros(0, np.int64))
        return run_tasks(
            lambda tasks: kernels.triangles_lowest(*args, tasks + a_lo, marks, per_vertex,
                                                   counts),
            work, lo, hi, threads, progress=progress, desc="triangles",
            serial=lambda u0, u1: kernels.triangles_lowest_rows(*args, u0 + a_lo, u1 + a_lo,
                                                                marks[0], per_vertex,
                                                                counts, True),
            serial_work=TRIANGLE_SERIAL_WORK)
    if ready is None:
        iptr, ipos, irow = inlists(aptr, aidx, order, b_lo, b_lo + nb, in_degree, where, b)
        work = np.empty(nb, np.int64)
        kernels.middle_work(aptr, bptr, iptr, ipos, irow, work)
        iend = np.zeros(0, np.int64)
    else:
        iptr, ipos, irow, work, iend = ready
    lo, hi = ranks.roots(work) if ranks is not None else (0, nb)
    args = (aptr, aidx, a_lo, bptr, bidx, b_lo, iptr, ipos, irow, iend, order)
    return run_tasks(
        lambda tasks: kernels.triangles_middle(*args, tasks, marks, per_vertex, counts),
        work, lo, hi, threads, progress=progress, desc="triangles",
        serial=lambda v0, v1: kernels.triangles_middle_rows(*args, v0, v1, marks[0],
                                                            per_vertex, counts, True),
        serial_work=TRIANGLE_SERIAL_WORK)


def inlists(aptr, aidx, order, b_lo: int, b_hi: int, in_degree: np.ndarray | None = None,
            where: np.ndarray | None = None, b: int = 0):
    """``(iptr, ipos, irow)``: for every row ``v`` of block B (``[b_lo, b_hi)``), the
    entries of block A's rows that hold it: ``ipos`` (the entry's position) and ``irow``
    (its row, from 0), grouped by ``v`` (``iptr``, from 0). ``in_degree``: their number
    per row of B when known (else counted). ``where``: A's entries tagged by inner block
    (:func:`tag_entries`), B being block ``b``: only B's entries are looked up."""
    nb = b_hi - b_lo
    where = np.zeros(0, np.uint8) if where is None else where
    if in_degree is None:
        counts = np.zeros(nb, np.int64)
        _by_rows(aptr, lambda r0, r1: kernels.inlist_count_rows(
                     aptr, aidx, order, b_lo, b_hi, where, b, r0, r1, counts),
                 lambda bounds: kernels.inlist_count(aptr, aidx, order, b_lo, b_hi, where, b,
                                                     bounds, counts))
    else:
        counts = in_degree
    iptr = np.zeros(nb + 1, np.int64)
    np.cumsum(counts, out=iptr[1:])
    cursor = iptr[:-1].copy()
    m = int(iptr[-1])
    ipos = np.empty(m, _index_dtype(len(aidx)))
    irow = np.empty(m, _index_dtype(len(aptr)))
    _by_rows(aptr, lambda r0, r1: kernels.inlist_fill_rows(
                 aptr, aidx, order, b_lo, b_hi, where, b, r0, r1, cursor, ipos, irow),
             lambda bounds: kernels.inlist_fill(aptr, aidx, order, b_lo, b_hi, where, b,
                                                bounds, cursor, ipos, irow))
    return iptr, ipos, irow


#: Most inner blocks whose entries are tagged (one byte an entry of the outer block).
MAX_TAGGED_BLOCKS = 255


def tag_entries(a_rows, order: np.ndarray, inner: list[tuple[int, int]]) -> np.ndarray:
    """For every entry of the outer block ``a_rows`` (ranks), the inner block (an index
    into ``inner``, uint8) holding its vertex: one lookup in ``order`` an entry, after which
    each inner block's in-lists read only its own entries (:func:`inlists`) instead of
    looking every entry up again. Empty (nothing tagged) for one inner block or more than
    :data:`MAX_TAGGED_BLOCKS`."""
    if not 1 < len(inner) <= MAX_TAGGED_BLOCKS:
        return np.zeros(0, np.uint8)
    aptr, aidx = a_rows
    starts = np.array([lo for lo, _ in inner] + [inner[-1][1]], np.int64)
    where = np.empty(len(aidx), np.uint8)
    _by_rows(aptr, lambda r0, r1: kernels.tag_entries_rows(aptr, aidx, order, starts, where,
                                                           r0, r1),
             lambda bounds: kernels.tag_entries(aptr, aidx, order, starts, where, bounds))
    return where


def degree_key(indptr) -> tuple[np.ndarray, np.ndarray]:
    """``(key, length)``: a key that ranks the vertices as the orientation does, by (stored
    row length, id), ``length * N + id`` (int64 (N,); the ranks themselves where that could
    overflow), and the row lengths (int64 (N,)). Comparing keys orients an edge without
    sorting the vertices."""
    n = len(indptr) - 1
    key = np.empty(n, np.int64)
    length = np.empty(n, np.int64)
    longest = _degree_key(indptr, key, length)
    if n and longest >= (np.iinfo(np.int64).max - n) // n:
        key = _order_by(length)[1]
    return key, length


@numba.njit(cache=True, nogil=True)
def _degree_key(indptr, key, length):
    n = indptr.shape[0] - 1
    longest = 0
    for u in range(n):
        d = indptr[u + 1] - indptr[u]
        length[u] = d
        key[u] = d * n + u
        if d > longest:
            longest = d
    return longest


def orient_serial(indptr, indices, key, degree, values: np.dtype):
    """The whole oriented graph in one pass in the calling thread: ``(dptr, didx)``, each
    row ``u``'s neighbours keyed above it (ids, ascending as the index holds them); the
    rows are written back to back, each entry stored and kept only when its key is higher.
    ``degree`` (int64 (N,)) gets the simple degrees (the row lengths less a self-loop)."""
    n = len(indptr) - 1
    stored = int(indptr[-1]) - int(indptr[0])
    dptr = np.empty(n + 1, np.int64)
    # room for one row past the kept entries: a dropped entry is written, then overwritten
    didx = np.empty(stored // 2 + (int(np.max(np.diff(indptr))) if n else 0) + 1, values)
    kept = _orient_rows(indptr, indices, key, dptr, didx, degree)
    if kept < 0 or 2 * kept != int(degree.sum()):
        raise GraphsysError("the undirected (sym) index is not symmetric: a neighbour is "
                            "missing from its neighbour's row; rebuild the index")
    return dptr, didx[:kept]


@numba.njit(cache=True, nogil=True)
def _orient_rows(indptr, indices, key, dptr, didx, degree):
    """Returns the entries kept, or -1 where a row would run past ``didx``."""
    pos = 0
    room = didx.shape[0]
    for u in range(indptr.shape[0] - 1):
        dptr[u] = pos
        ku = key[u]
        lo, hi = indptr[u], indptr[u + 1]
        if pos + hi - lo > room:
            return -1
        d = hi - lo
        for k in range(lo, hi):
            v = indices[k]
            didx[pos] = v
            pos += 1 if key[v] > ku else 0
            d -= 1 if v == u else 0
        degree[u] = d
    dptr[indptr.shape[0] - 1] = pos
    return pos


def load_block(indptr, indices, rank, dptr, lo: int, hi: int, values: np.dtype,
               ranked: bool = True):
    """The oriented rows ``[lo, hi)`` in RAM: offsets (from 0) and, per row, its
    higher-ranked neighbours: their ranks, ascending (``ranked``), or their ids, ascending
    as the index holds them (``rank`` then any key that orders the vertices as the ranks
    do, :func:`degree_key`)."""
    bptr = np.asarray(dptr[lo:hi + 1] - dptr[lo])
    bidx = np.empty(int(bptr[-1]), values)
    _fill_higher(indptr, indices, rank, bptr, bidx, ranked, ids=not ranked, block=(lo, hi))
    return bptr, bidx


def _oriented_offsets(indptr, indices, key, degree) -> np.ndarray:
    """Fill ``degree`` with each vertex's simple degree and return the oriented rows'
    offsets (int64 (N+1,)): the prefix sums of each vertex's higher neighbours by ``key``."""
    n = len(indptr) - 1
    _simple_degree(indptr, indices, degree)
    lengths = np.empty(n, np.int64)
    _count_higher(indptr, indices, key, lengths, False)
    dptr = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=dptr[1:])
    return dptr
