"""Numba kernels of PageRank's fused superstep (in memory, CPU): the all-active copy/sum
of ``rank / out_degree`` and the rank update in one pass, so an iteration reads every vertex
array once and pays one numba call, not an engine superstep. Three layouts of the same
iteration, picked by :meth:`~graphsys.bsp.algorithms.pagerank.PageRank.solve_in_memory`:

* :func:`pagerank_push_step`: a push into destination blocks
  (:mod:`graphsys.storage.push_layout`: built in memory for long runs, or stored as the
  graph's ``push`` index) for graphs with several in-edges per vertex;
* :func:`pagerank_ell_step`: a pull over :data:`ELL_SLOTS` fixed slots per row
  (:func:`ell_layout`) for sparse graphs (road networks, meshes);
* :func:`pagerank_step`: a pull over the CSC as stored (a mapped adjacency index: no copy),
  or with its sources renumbered by frequency (hub order) on graphs over the cache.
"""

from __future__ import annotations

import sys

import numba
import numpy as np

from graphsys.bsp.kernels import filled

#: The fused step runs on one thread below this many targets. Lower than the engine's
#: :data:`~graphsys.bsp.kernels.PARALLEL_MIN_ITEMS`: one pass does the pull and the update,
#: so there is more work per wake-up of the pool, and a road network of some 10^5
#: vertices in breadth-first order already gains from a second thread
FUSED_PARALLEL_MIN_ROWS = 1 << 15


#: Row chunks (or at least this many destination blocks) of one parallel step, whatever
#: the thread count: each sums its L1 change and dangling mass in row order, so the sums
#: (and the next iteration's teleport) do not depend on how many threads ran
FUSED_CHUNKS = 16

#: A push step's work per target of a block (its update: read, write and zero its sum, rank
#: and sent value), in slots (one edge's add): what :func:`push_lanes` weighs blocks by
PUSH_VERTEX_COST = 2

#: Fixed pull slots per row of :func:`ell_layout` (a row's first in-edges; the rest go to
#: an overflow list). Sparse graphs (fewer than 4 in-edges per vertex: luxembourg-osm has
#: 99.98 % of its rows within 4) then sum every row with the same branch-free code instead
#: of a loop whose trip count (1 to 4) the branch predictor misses
ELL_SLOTS = 4


@numba.njit(inline="always")
def settle_vertex(v, at, s, rank, inv_deg, new_send, p, damping, base, scale):
    """Vertex ``v``'s update from its pulled sum ``s``: ``rank[v]`` becomes ``damping * s +
    base`` (uniform teleport; ``p`` empty) or ``damping * s + scale * p[v]``,
    ``new_send[at]`` ``rank[v] * inv_deg[v]`` (``at``: ``v``, or its slot where the sent
    values are renumbered). Returns (|change of rank[v]|, rank[v] if dangling else 0)."""
    new = damping * s + (scale * p[v] if p.shape[0] > 0 else base)
    change = abs(new - rank[v])
    rank[v] = new
    inv = inv_deg[v]
    new_send[at] = new * inv
    return change, (new if inv == 0.0 else 0.0)


@numba.njit(inline="always")
def _in_order(chunks):
    """The sum of float64 ``chunks`` in index order (an array ``.sum()`` in a parallel
    kernel becomes a parallel reduction, whose rounding depends on the thread count)."""
    total = 0.0
    for c in range(chunks.shape[0]):
        total += chunks[c]
    return total


@numba.njit(inline="always")
def _row_sum(a, b, indices, send):
    """The sum of ``send`` over ``indices[a:b]`` (uint64 offsets) in four interleaved
    partial sums, added as ``(s0 + s1) + (s2 + s3)``: four independent chains of float
    additions instead of one, so a row's gathers are not serialised by the latency of
    each addition (the order is fixed: results do not depend on threads)."""
    four = np.uint64(4)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    e = a
    while e + four <= b:
        s0 += send[np.uint64(indices[e])]
        s1 += send[np.uint64(indices[e + np.uint64(1)])]
        s2 += send[np.uint64(indices[e + np.uint64(2)])]
        s3 += send[np.uint64(indices[e + np.uint64(3)])]
        e += four
    while e < b:
        s0 += send[np.uint64(indices[e])]
        e += np.uint64(1)
    return (s0 + s1) + (s2 + s3)


@numba.njit(inline="always")
def _rows(lo, hi, indptr, indices, slot, send, new_send, rank, inv_deg, p, damping, base,
          scale):
    """Pull and update rows ``lo:hi``; returns their (L1 change, dangling mass). Each row's
    end offset is read once and carried as the next row's start, and every array is
    indexed by an unsigned integer (numba adds a negative-index test to each signed access
    whose sign it cannot prove): both take work out of the innermost loop."""
    renumbered = slot.shape[0] > 0
    delta = 0.0
    dangling = 0.0
    a = np.uint64(indptr[lo])
    for r in range(lo, hi):
        v = np.uint64(r)  # unsigned indices: no negative-index test on any access
        b = np.uint64(indptr[v + np.uint64(1)])
        s = _row_sum(a, b, indices, send)
        a = b
        at = np.uint64(slot[v]) if renumbered else v
        c, d = settle_vertex(v, at, s, rank, inv_deg, new_send, p, damping, base, scale)
        delta += c
        dangling += d
    return delta, dangling


@numba.njit(parallel=True, cache=True, nogil=True)
def pagerank_step(indptr, indices, slot, send, new_send, rank, inv_deg, p, damping, base,
                  scale):
    """One PageRank iteration pulled over a CSC. ``indptr`` int64 (N+1,) / ``indices`` int32
    (E,): in-edges of every target; ``send`` float64 (or float32: ``sum_dtype``) (N,):
    ``rank / out_degree`` of every vertex; ``new_send`` (N,), of the same dtype, receives
    the next one; ``rank``, ``inv_deg`` (0 on dangling vertices), ``p`` (teleport weights,
    or empty for uniform ``base``) float64 (N,) by vertex, updated as in :func:`settle_vertex`.
    ``slot`` (N,) of ``indices``' dtype, or empty: where the sources are renumbered (hub
    order: ``indices`` in the new numbering), vertex ``v``'s sent value is ``send[slot[v]]``;
    the rows keep the engine's order.
    From :data:`FUSED_PARALLEL_MIN_ROWS` targets, the rows are split into
    :data:`FUSED_CHUNKS` runs of equal in-edge counts, run in parallel. Returns (L1 change
    of ``rank``, rank mass on dangling vertices)."""
    n = indptr.shape[0] - 1
    if n < FUSED_PARALLEL_MIN_ROWS:
        return _rows(0, n, indptr, indices, slot, send, new_send, rank, inv_deg, p, damping,
                     base, scale)
    m = indptr[n] - indptr[0]
    bounds = np.empty(FUSED_CHUNKS + 1, np.int64)
    for c in range(FUSED_CHUNKS + 1):
        bounds[c] = np.searchsorted(indptr, indptr[0] + m * c // FUSED_CHUNKS)
    bounds[0], bounds[FUSED_CHUNKS] = 0, n
    deltas = filled(FUSED_CHUNKS, 0.0)
    masses = filled(FUSED_CHUNKS, 0.0)
    for c in numba.prange(FUSED_CHUNKS):
        deltas[c], masses[c] = _rows(bounds[c], bounds[c + 1], indptr, indices, slot, send,
                                     new_send, rank, inv_deg, p, damping, base, scale)
    return _in_order(deltas), _in_order(masses)


def ell_bytes(indptr: np.ndarray, dtype: np.dtype, renumbered: bool) -> int:
    """Anonymous bytes at the peak of :func:`ell_layout`'s build over the CSC ``indptr``
    (int64 (N+1,)) with ``dtype`` ids: its slots, offsets and overflow; ``renumbered``:
    first :func:`bfs_order` and :func:`renumber`'s copy of the adjacency, which the layout
    is built from (all held until the run ends)."""
    n, size = indptr.shape[0] - 1, np.dtype(dtype).itemsize
    m = int(indptr[-1] - indptr[0])
    overflow = m - int(np.minimum(np.diff(indptr), ELL_SLOTS).sum())
    ell = 4 * ELL_SLOTS * n + 8 * (n + 1) + 4 * overflow
    return ell + (9 * n + 8 * (n + 1) + size * (n + m) if renumbered else 0)


@numba.njit(cache=True, nogil=True)
def ell_layout(indptr, indices):
    """The CSC ``indptr`` int64 (N+1,) / ``indices`` (E,) as :data:`ELL_SLOTS` slots per
    row: ``slots`` int32 (N * ELL_SLOTS,) holds each row's first in-edges in order, padded
    with N (a source whose sent value is always 0); a row's further in-edges are
    ``overflow[over_ptr[v]:over_ptr[v + 1]]`` (int64 (N+1,) / int32). Sums read the
    entries in the CSC's order, so they equal the plain pull's."""
    n = indptr.shape[0] - 1
    slots = np.full(n * ELL_SLOTS, n, np.int32)
    over_ptr = np.zeros(n + 1, np.int64)
    for v in range(n):
        d = indptr[v + 1] - indptr[v]
        for j in range(min(d, ELL_SLOTS)):
            slots[v * ELL_SLOTS + j] = indices[indptr[v] + j]
        over_ptr[v + 1] = over_ptr[v] + max(d - ELL_SLOTS, 0)
    overflow = np.empty(over_ptr[n], np.int32)
    for v in range(n):
        for j in range(ELL_SLOTS, indptr[v + 1] - indptr[v]):
            overflow[over_ptr[v] + j - ELL_SLOTS] = indices[indptr[v] + j]
    return slots, over_ptr, overflow


@numba.njit(inline="always")
def ell_sum(v, slots, over_ptr, overflow, send):
    """Row ``v``'s (uint64) pulled sum of ``send`` over the slots of :func:`ell_layout`
    (``ELL_SLOTS`` = 4 loads, no trip-count branch) and its overflow (a loop the rare long
    rows only take), in the CSC's order."""
    one = np.uint64(1)
    k = v * np.uint64(ELL_SLOTS)
    s = 0.0 + send[np.uint64(slots[k])]
    s += send[np.uint64(slots[k + one])]
    s += send[np.uint64(slots[k + np.uint64(2)])]
    s += send[np.uint64(slots[k + np.uint64(3)])]
    for e in range(over_ptr[v], over_ptr[v + one]):
        s += send[np.uint64(overflow[np.uint64(e)])]
    return s


@numba.njit(inline="always")
def _ell_rows(lo, hi, slots, over_ptr, overflow, send, new_send, rank, inv_deg, p, damping,
              base, scale):
    """:func:`_rows` over the slots of :func:`ell_layout` (:func:`ell_sum`)."""
    delta = 0.0
    dangling = 0.0
    for r in range(lo, hi):
        v = np.uint64(r)
        s = ell_sum(v, slots, over_ptr, overflow, send)
        c, d = settle_vertex(v, v, s, rank, inv_deg, new_send, p, damping, base, scale)
        delta += c
        dangling += d
    return delta, dangling


@numba.njit(parallel=True, cache=True, nogil=True)
def pagerank_ell_step(slots, over_ptr, overflow, send, new_send, rank, inv_deg, p, damping,
                      base, scale):
    """One PageRank iteration pulled over :func:`ell_layout`'s slots. ``send`` and
    ``new_send`` hold N + 1 values, the last 0 (the padding source; never written); the
    rest as in :func:`pagerank_step`. From :data:`FUSED_PARALLEL_MIN_ROWS` rows, they are
    split into :data:`FUSED_CHUNKS` equal runs, run in parallel. Returns (L1 change of
    ``rank``, rank mass on dangling vertices)."""
    n = rank.shape[0]
    if n < FUSED_PARALLEL_MIN_ROWS:
        return _ell_rows(0, n, slots, over_ptr, overflow, send, new_send, rank, inv_deg, p,
                         damping, base, scale)
    deltas = np.zeros(FUSED_CHUNKS)
    masses = np.zeros(FUSED_CHUNKS)
    for c in numba.prange(FUSED_CHUNKS):
        deltas[c], masses[c] = _ell_rows(n * c // FUSED_CHUNKS, n * (c + 1) // FUSED_CHUNKS,
                                         slots, over_ptr, overflow, send, new_send, rank,
                                         inv_deg, p, damping, base, scale)
    return _in_order(deltas), _in_order(masses)


@numba.njit(inline="always")
def _light_slot(k, source, step, dst, sums, send):
    """Add light slot ``k`` (uint64) into ``sums``; returns its source."""
    source += np.uint64(step[k])
    sums[np.uint64(dst[k])] += send[source]
    return source


@numba.njit(inline="always")
def _push_block(b, bounds, edge_ptr, step, dst, step_words, dst_words, runs, heavy, acc,
                send, new_send, rank, inv_deg, p, damping, base, scale):
    """Block ``b`` of :func:`pagerank_push_step`: add its edges into its sums
    (``acc[bounds[b] + b:]``, its targets' then its spare one), then update its targets
    (and zero the sums). Returns (L1 change, dangling mass). The light slots are read 8 at
    a time where aligned (one uint64 of steps, two of target offsets: ``step_words`` /
    ``dst_words``, the same bytes): 2 loads for 8 slots instead of 16, in a loop bound by
    its loads."""
    lo = bounds[b]
    hi = bounds[b + 1]
    sums = acc[lo + b:hi + b + 1]
    row = b * (heavy + 1)
    four = np.uint64(4)
    half = np.uint64(0xFFFF)
    for s in range(heavy):  # heavy sources: one read of the sent value per run
        x = send[np.uint64(s)]
        e = np.uint64(runs[row + s])
        stop = np.uint64(runs[row + s + 1])
        while e < stop and e % four != 0:
            sums[np.uint64(dst[e])] += x
            e += np.uint64(1)
        while e + four <= stop and dst_words.shape[0] > 0:
            offsets = dst_words[e // four]
            sums[offsets & half] += x
            sums[(offsets >> np.uint64(16)) & half] += x
            sums[(offsets >> np.uint64(32)) & half] += x
            sums[offsets >> np.uint64(48)] += x
            e += four
        while e < stop:
            sums[np.uint64(dst[e])] += x
            e += np.uint64(1)
    source = np.uint64(heavy)  # light sources: each slot steps past the previous one's
    e = np.uint64(runs[row + heavy])
    end = np.uint64(edge_ptr[b + 1])
    eight = np.uint64(8)
    byte = np.uint64(0xFF)
    while e < end and e % eight != 0:
        source = _light_slot(e, source, step, dst, sums, send)
        e += np.uint64(1)
    while e + eight <= end and step_words.shape[0] > 0:
        steps = step_words[e // eight]
        for w in range(2):
            offsets = dst_words[e // np.uint64(4) + np.uint64(w)]
            for j in range(4):
                source += (steps >> np.uint64(32 * w + 8 * j)) & byte
                sums[(offsets >> np.uint64(16 * j)) & half] += send[source]
        e += eight
    while e < end:
        source = _light_slot(e, source, step, dst, sums, send)
        e += np.uint64(1)
    delta = 0.0
    dangling = 0.0
    for i in range(hi - lo):
        v = np.uint64(lo + i)
        c, d = settle_vertex(v, v, sums[i], rank, inv_deg, new_send, p, damping, base, scale)
        sums[i] = 0.0
        delta += c
        dangling += d
    sums[hi - lo] = 0.0  # the padding slots' spare sum
    return delta, dangling


@numba.njit(cache=True, nogil=True)
def push_lanes(bounds, edge_ptr, lanes):
    """int64 (B,): the lane (thread) of each block of a push layout, out of ``lanes``: in
    block order, each to the lane with the least work so far (ties: the lowest), the work
    of a block counted as its slots plus :data:`PUSH_VERTEX_COST` per target."""
    nb = bounds.shape[0] - 1
    lane_of = np.zeros(nb, np.int64)
    load = np.zeros(lanes, np.int64)
    for b in range(nb):
        best = 0
        for t in range(1, lanes):
            if load[t] < load[best]:
                best = t
        lane_of[b] = best
        load[best] += (edge_ptr[b + 1] - edge_ptr[b]
                       + PUSH_VERTEX_COST * (bounds[b + 1] - bounds[b]))
    return lane_of


def pagerank_push_step(bounds, edge_ptr, step, dst, runs, heavy, acc, send, new_send, rank,
                       inv_deg, p, damping, base, scale):
    """One PageRank iteration pushed over a push layout's blocks
    (:mod:`graphsys.storage.push_layout`, in its numbering: ``step`` / ``dst`` its slots),
    in parallel over the blocks from :data:`FUSED_PARALLEL_MIN_ROWS` targets. ``acc``
    float64 of zeros, of :func:`~graphsys.storage.push_layout.sums_length` (the sums and a
    spare per block; left zero); the rest as in :func:`pagerank_step`. Every target sums in
    float64 whatever ``send``'s dtype. Returns (L1 change of ``rank``, rank mass on
    dangling vertices). Each thread takes the blocks :func:`push_lanes` gives it (balanced
    by their work: hub blocks first, vertex-heavy ones last); each block keeps its own L1
    change and dangling mass, added in block order, so results do not depend on the
    thread count."""
    if acc.shape[0] != rank.shape[0] + bounds.shape[0] - 1:
        raise ValueError("acc must hold a sum per vertex and a spare one per block")
    lanes = numba.get_num_threads() if rank.shape[0] >= FUSED_PARALLEL_MIN_ROWS else 1
    return _push_step(bounds, edge_ptr, step, dst, _words(step), _words(dst), runs, heavy,
                      acc, send, new_send, rank, inv_deg, p, damping, base, scale,
                      push_lanes(bounds, edge_ptr, lanes), lanes)


def _words(a: np.ndarray) -> np.ndarray:
    """The whole uint64 words of a contiguous array's bytes (the same memory; a copy only
    where its start is not 8-byte aligned, which mapped columns and NumPy arrays are).
    Empty on a big-endian machine, where a word's low byte is not the first one: the step
    then reads every slot alone."""
    if sys.byteorder != "little":
        return np.zeros(0, np.uint64)
    if a.ctypes.data % 8:
        a = a.copy()
    whole = a.shape[0] * a.itemsize // 8 * 8 // a.itemsize
    return a[:whole].view(np.uint64)


@numba.njit(parallel=True, cache=True, nogil=True)
def _push_step(bounds, edge_ptr, step, dst, step_words, dst_words, runs, heavy, acc, send,
               new_send, rank, inv_deg, p, damping, base, scale, lane_of, lanes):
    """:func:`pagerank_push_step`'s kernel: lane ``t`` (one thread each) updates the blocks
    ``b`` with ``lane_of[b] == t``."""
    nb = bounds.shape[0] - 1
    deltas = filled(nb, 0.0)
    masses = filled(nb, 0.0)
    for t in numba.prange(lanes):
        for b in range(nb):
            if lane_of[b] == t:
                deltas[b], masses[b] = _push_block(b, bounds, edge_ptr, step, dst,
                                                   step_words, dst_words, runs, heavy, acc,
                                                   send, new_send, rank, inv_deg, p,
                                                   damping, base, scale)
    return _in_order(deltas), _in_order(masses)


@numba.njit(cache=True, nogil=True)
def bfs_order(indptr, indices):
    """A locality order of the vertices of an adjacency (``indptr`` int64 (N+1,),
    ``indices`` (E,)): breadth-first, each component from its smallest unvisited id (like
    Cuthill-McKee without the degree sort), so neighbours get nearby numbers on mesh-like
    graphs. Returns int64 (N,): new id -> old id."""
    n = indptr.shape[0] - 1
    order = np.empty(n, np.int64)
    seen = np.zeros(n, np.uint8)
    tail = 0
    for s in range(n):
        if seen[s]:
            continue
        seen[s] = 1
        order[tail] = s
        head = tail
        tail += 1
        while head < tail:
            u = order[head]
            head += 1
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e]
                if not seen[v]:
                    seen[v] = 1
                    order[tail] = v
                    tail += 1
    return order


@numba.njit(parallel=True, cache=True, nogil=True)
def renumber(indptr, indices, order):
    """The adjacency with rows and columns renumbered by ``order`` (int64 (N,), new ->
    old): row ``k`` holds old row ``order[k]``, its entries mapped to new ids. Returns
    (indptr int64 (N+1,), indices of the input dtype (E,))."""
    n = indptr.shape[0] - 1
    new_id = np.empty(n, indices.dtype)
    new_indptr = np.zeros(n + 1, np.int64)
    for k in range(n):
        new_id[order[k]] = k
        new_indptr[k + 1] = new_indptr[k] + indptr[order[k] + 1] - indptr[order[k]]
    new_indices = np.empty(new_indptr[n], indices.dtype)
    for k in numba.prange(n):
        lo = indptr[order[k]]
        out = new_indptr[k]
        for j in range(indptr[order[k] + 1] - lo):
            new_indices[out + j] = new_id[indices[lo + j]]
    return new_indptr, new_indices
