"""The ``oriented`` view (:func:`graphsys.views.view`): the undirected simple view of an
edge set, oriented by degree, as pattern mining reads it.

The undirected simple view joins ``u`` and ``v`` when any stored edge joins them, in
either direction; self-loops are dropped (as networkx's ``triangles`` does). A directed
edge set keeps, per adjacent pair, which directions are stored (:attr:`Oriented.dirs`).
:class:`Oriented` renumbers the vertices by ascending simple degree (ties by global id) and
keeps each edge once, in the row of its lower endpoint: short sorted rows where the work
is. :func:`oriented` filters it from the mapped ``sym`` index (or an undirected,
deduplicated edge set's CSR index), else builds it from the buckets, after sizing the
build (:func:`build_bytes`) against the budget (:mod:`graphsys.views.limits`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from graphsys.errors import GraphsysError
from graphsys.kernels.arrays import read_only
from graphsys.kernels.atomic import atomic_add
from graphsys.memory import budget
from graphsys.storage.graph import Graph
from graphsys.units import format_size
from graphsys.views.limits import check, one_type

#: Anonymous bytes per node of an oriented view: offsets (8), order (8), degree (8), the
#: global-to-new map while it is built (8) and the counting pass's row lengths (8).
BYTES_PER_NODE = 40
#: Anonymous bytes per kept (undirected) edge of the oriented view: its int32 entry; the
#: directions add one byte.
BYTES_PER_EDGE = 4
#: Anonymous bytes per *stored* edge of a build from the buckets: the raw entry (int32, or
#: int64 packed with its direction bits), the deduplicated upper view (4 + 1) and the
#: oriented rows (4 + 1).
EDGES_BYTES_PER_EDGE = 18
_INT32_MAX = 2**31 - 1
#: Below this much estimated work a pass runs in the calling thread: waking a thread team
#: and waiting at its barrier costs more than the work (and, on a loaded machine, a
#: scheduler time slice).
SERIAL_WORK = 1 << 21


@dataclass(frozen=True)
class Oriented:
    """The undirected simple view of an edge set, renumbered and oriented.

    New ids ``0..N-1`` follow a total order of the vertices (by default ascending simple
    degree, ties by global id); row ``u`` of the DAG holds the neighbours of ``u`` with a
    higher new id, ascending. Every undirected edge is in exactly one row; self-loops are
    gone.

    Attributes
    ----------
    indptr : numpy.ndarray
        int64 (N+1,) row offsets.
    indices : numpy.ndarray
        int32 (int64 past 2**31 nodes) (M,) higher neighbours, ascending per row.
    order : numpy.ndarray
        int64 (N,): new id -> global (internal) id.
    degree : numpy.ndarray
        int64 (N,) simple undirected degree by new id (self-loops not counted).
    dirs : numpy.ndarray or None
        uint8 (M,): bit 1 when the stored edges hold ``row -> col``, bit 2 when they hold
        ``col -> row`` (3: both); None when not asked for.
    source : str
        Where the view came from: ``"sym index"``, ``"csr index"`` or ``"buckets"``.
    sorted : bool
        Whether each row ascends (asked for by the kernels that merge rows; a bitmap probe
        needs no order).
    memo : dict
        Figures derived from the arrays once, for the passes that read the view again
        while it is cached (:func:`graphsys.mining.triangle.count_oriented`'s kernel and
        work per root); a copy of the view starts without them.

    Examples
    --------
    From :func:`oriented`, a triangle 10-20-30 with a tail 30-40 (stored directed):

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.views import oriented
    >>> g = graphsys.from_numpy(np.array([10, 20, 30, 30]), np.array([20, 30, 10, 40]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> view = oriented(g)
    >>> g.to_original(view.order).tolist()  # ascending degree: the tail's end first
    [40, 10, 20, 30]
    >>> view.indptr.tolist(), view.indices.tolist(), view.num_edges
    ([0, 1, 3, 4, 4], [3, 2, 3, 3], 4)
    """

    indptr: np.ndarray
    indices: np.ndarray
    order: np.ndarray
    degree: np.ndarray
    dirs: np.ndarray | None = None
    source: str = "buckets"
    sorted: bool = True
    memo: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    @property
    def num_edges(self) -> int:
        """Undirected edges (each once)."""
        return int(self.indptr[-1])

    @property
    def nbytes(self) -> int:
        """Bytes its arrays hold."""
        arrays = (self.indptr, self.indices, self.order, self.degree, self.dirs)
        return int(sum(a.nbytes for a in arrays if a is not None))

    def out_degree(self) -> np.ndarray:
        """Row lengths: int64 (N,) higher neighbours of each vertex."""
        return np.diff(self.indptr)

    def wedge_work(self) -> np.ndarray:
        """Per root ``u``, an estimate of the entries a triangle pass reads from it,
        ``d+(u) (d+(u) + 1)`` (its row, and rows about as long as its own: degree order
        keeps a row's neighbours' rows short): int64 (N,)."""
        d = self.out_degree()
        return d * (d + 1)

    def by_global(self, values: np.ndarray) -> np.ndarray:
        """Per-vertex ``values`` by new id, reordered by global id."""
        out = np.empty_like(values)
        out[self.order] = values
        return out

    def full(self) -> tuple[np.ndarray, np.ndarray]:
        """The symmetric rows over new ids (every neighbour, ascending): ``(indptr, indices)``,
        int64 (N+1,) and the DAG's index type (2M,). 8 more bytes per edge and per node."""
        if not self.sorted:
            raise GraphsysError("the symmetric rows of an oriented view are built from its "
                                "sorted rows (oriented(..., sort=True))")
        ptr = np.zeros(self.num_nodes + 1, np.int64)
        np.cumsum(self.degree, out=ptr[1:])
        idx = np.empty(int(ptr[-1]), self.indices.dtype)
        _fill_full(self.indptr, self.indices, ptr, idx)
        return ptr, idx


def mapped_symmetric(graph: Graph, edge_set: str | None = None):
    """``(indptr, indices, kind)`` of a stored index that holds the undirected simple view's
    rows (sorted, each neighbour once, a self-loop at most once), or None: the ``sym``
    index, else the CSR index of an undirected, deduplicated edge set of one relation.

    Parameters
    ----------
    graph : Graph
        An opened graph (None for a graph of several entity types).
    edge_set : str, optional
        The edge set (default: the default one).

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray, str) or None
        The index's mapped ``indptr`` and ``indices``, and ``"sym index"`` or
        ``"csr index"``; None when no stored index holds the view.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.storage.adjacency_index import build_index
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g",
    ...                         undirected=True, dedupe=True)
    >>> _ = build_index(g, ("csr",))
    >>> indptr, indices, kind = mapped_symmetric(g)
    >>> indptr.tolist(), indices.tolist(), kind
    ([0, 1, 3, 4], [1, 0, 2, 1], 'csr index')
    >>> h = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/h")
    >>> _ = build_index(h, ("csr",))
    >>> mapped_symmetric(h) is None  # a directed edge set's CSR holds one direction
    True
    """
    es = graph.edge_set(edge_set)
    if len(graph.entity_types) != 1:
        return None
    sym = graph.adjacency_index(es.name, "sym")
    if sym is not None:
        return sym.indptr, sym.indices, "sym index"
    if es.undirected and es.dedupe and not es.has_rel:
        csr = graph.adjacency_index(es.name, "csr")
        if csr is not None:
            return csr.indptr, csr.indices, "csr index"
    return None


def build_bytes(graph: Graph, edge_set: str | None = None, *, directions: bool = False,
                mapped: bool | None = None) -> int:
    """Anonymous bytes the in-RAM :class:`Oriented` build of an edge set needs at its peak.

    From a stored ``sym`` index (``mapped``; None: whether the graph has one the view can
    use): :data:`BYTES_PER_EDGE` per kept edge (half the index's entries) and
    :data:`BYTES_PER_NODE` per node; from the buckets: :data:`EDGES_BYTES_PER_EDGE` per
    stored edge and the same per node.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> build_bytes(g) == 2 * EDGES_BYTES_PER_EDGE + 3 * BYTES_PER_NODE
    True
    """
    es = graph.edge_set(edge_set)
    n = graph.num_nodes()
    use_index = (mapped_symmetric(graph, es.name) is not None) if mapped is None else mapped
    if use_index and not (directions and not es.undirected):
        entries = graph.manifest.indexes.get(es.name, {})
        info = entries.get("sym") or entries.get("csr")
        kept = (info.num_edges if info is not None else 2 * es.num_edges) // 2
        return kept * (BYTES_PER_EDGE + (1 if directions else 0)) + n * BYTES_PER_NODE
    return es.num_edges * EDGES_BYTES_PER_EDGE + n * BYTES_PER_NODE


def refuse_build(graph, edge_set: str | None, need: int, memory_limit, *,
                 triangles: bool = False, directions: bool = False, beside: int = 0) -> int:
    """:func:`~graphsys.views.limits.check` of an oriented build of ``need`` bytes. The
    way out it names, where the graph has no ``sym`` index, is that undirected index when
    it helps what runs: a triangle count (``triangles``) then runs out of core; anything
    else (cliques, motifs, a census) still orders the graph in RAM, from the index, so the
    index is named only where that smaller build and the ``beside`` bytes the call
    derives from it fit the budget (their size said)."""
    then, kinds = "", None
    if mapped_symmetric(graph, edge_set) is None and len(graph.entity_types) == 1:
        from_index = build_bytes(graph, edge_set, directions=directions, mapped=True) + beside
        if triangles:
            then, kinds = ", and triangles run out of core", ("sym",)
        elif from_index <= budget(memory_limit):
            then = f" (the call then needs about {format_size(from_index)})"
            kinds = ("sym",)
    return check(graph, edge_set, "the oriented graph", need, memory_limit, kinds, then)


def oriented(graph, edge_set: str | None = None, *, directions: bool = False,
             memory_limit: int | None = None, sort: bool = True, beside: int = 0) -> Oriented:
    """The degree-ordered :class:`Oriented` view of an edge set, in RAM.

    Parameters
    ----------
    graph : Graph
        An opened graph of one entity type.
    edge_set : str, optional
        The edge set (default: the graph's default).
    directions : bool, default False
        Also keep which directions each adjacent pair's stored edges hold
        (:attr:`Oriented.dirs`); on a directed edge set this reads the buckets (the
        ``sym`` index has no directions).
    memory_limit : int, optional
        Anonymous bytes the build may take (default: the RAM available now).
    sort : bool, default True
        Sort each row (False: rows in no order, for kernels that only probe them).
    beside : int, default 0
        Bytes the caller derives beside the view: a refusal names the ``sym`` index only
        where the view built from it fits the budget with them (:func:`refuse_build`).

    Returns
    -------
    Oriented

    Raises
    ------
    GraphsysError
        The build needs more than the budget (one line, naming ``graphsys index
        --undirected`` when the graph has no ``sym`` index), or the graph has several
        entity types.

    Examples
    --------
    A triangle 10-20-30 with a tail 30-40 (stored directed):

    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([10, 20, 30, 30]), np.array([20, 30, 10, 40]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> view = oriented(g)
    >>> view.num_nodes, view.num_edges, view.degree.tolist()
    (4, 4, [1, 2, 2, 3])
    >>> g.to_original(view.order).tolist()  # new id -> original id
    [40, 10, 20, 30]
    """
    g = one_type(graph, "the oriented view")
    es = g.edge_set(edge_set)
    sym = mapped_symmetric(g, es.name)
    from_index = sym is not None and not (directions and not es.undirected)
    refuse_build(g, es.name, build_bytes(g, es.name, directions=directions, mapped=from_index),
                 memory_limit, directions=directions, beside=beside)
    if from_index:
        indptr, indices, kind = sym
        view = _from_symmetric(indptr, indices, sort)
        dirs = np.full(view.num_edges, 3, np.uint8) if directions else None
        return Oriented(view.indptr, view.indices, view.order, view.degree, dirs, kind, sort)
    return _from_edges(g, es.name, directions, sort)


def _index_dtype(n: int) -> np.dtype:
    return np.dtype(np.int32 if n <= _INT32_MAX else np.int64)


def _order_by(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, rank)``: vertices by ascending ``key``, ties by id (a stable sort)."""
    order = np.argsort(key, kind="stable").astype(np.int64)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return order, rank


def _from_symmetric(indptr: np.ndarray, indices: np.ndarray, sort: bool = True) -> Oriented:
    """Orient symmetric sorted rows (a self-loop at most once per row) by degree."""
    n = len(indptr) - 1
    degree = np.empty(n, np.int64)
    _simple_degree(indptr, indices, degree)
    order, rank = _order_by(degree)
    dptr, didx = higher_rows(indptr, indices, rank, sort)
    return Oriented(dptr, didx, order, degree[order], None, "sym index", sort)


def higher_rows(indptr, indices, rank, sort: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The DAG of symmetric rows ordered by ``rank``: ``(dptr, didx)``, row ``rank[u]``
    holding the ranks of ``u``'s higher-ranked neighbours (:func:`_fill_higher`)."""
    n = len(indptr) - 1
    counts = np.empty(n, np.int64)
    _count_higher(indptr, indices, rank, counts)
    dptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dptr[1:])
    del counts
    didx = np.empty(int(dptr[-1]), _index_dtype(n))
    _fill_higher(indptr, indices, rank, dptr, didx, sort)
    return dptr, didx


def _from_edges(graph: Graph, edge_set: str, directions: bool, sort: bool = True) -> Oriented:
    """Orient the stored edges: both endpoints into the row of the lower global id, each row
    sorted and deduplicated (directions OR-ed), then re-oriented by degree."""
    n = graph.num_nodes()
    counts = np.zeros(n + 1, np.int64)
    for s, d, _, _ in graph.iter_edges(edge_set):
        _count_lower(s, d, counts[1:])
    np.cumsum(counts, out=counts)
    raw = int(counts[-1])
    cursor = counts[:-1].copy()
    packed = np.empty(raw, np.int64 if directions else _index_dtype(n))
    for s, d, _, _ in graph.iter_edges(edge_set):
        _scatter_lower(s, d, cursor, packed, directions)
    del cursor
    uptr = np.zeros(n + 1, np.int64)
    kept = int(_dedupe_rows(counts, packed, uptr[1:], directions))
    np.cumsum(uptr, out=uptr)
    del counts
    uidx = np.empty(kept, _index_dtype(n))
    ubits = np.empty(kept if directions else 0, np.uint8)
    _unpack(packed, kept, uidx, ubits, directions)
    del packed
    degree = np.zeros(n, np.int64)
    _upper_degree(uptr, uidx, degree)
    order, rank = _order_by(degree)
    counts = np.zeros(n, np.int64)
    _count_reoriented(uptr, uidx, rank, counts)
    dptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=dptr[1:])
    cursor = dptr[:-1].copy()
    didx = np.empty(kept, _index_dtype(n))
    dbits = np.empty(kept if directions else 0, np.uint8)
    _fill_reoriented(uptr, uidx, ubits, rank, cursor, didx, dbits, directions)
    if sort:
        _sort_rows(dptr, didx, dbits, directions)
    return Oriented(dptr, didx, order, degree[order], dbits if directions else None,
                    "buckets", sort)


# ---------------------------------------------------------------------------------------------
# kernels


def _by_rows(indptr, serial, parallel) -> None:
    """Run a row kernel over the rows of ``indptr`` (offsets of ``len(indptr) - 1`` rows):
    ``serial(0, rows)`` in the calling thread for a small graph
    (:data:`SERIAL_WORK` entries), else ``parallel(bounds)`` over
    row ranges of about equal entries (int64 bounds, from 0 to ``rows``)."""
    n = len(indptr) - 1
    first, last = int(indptr[0]), int(indptr[-1])
    threads = numba.get_num_threads()
    if last - first + n < SERIAL_WORK or threads == 1:
        serial(0, n)
        return
    cuts = np.searchsorted(indptr, np.linspace(first, last, 8 * threads + 1))
    parallel(np.unique(np.clip(np.concatenate([[0], cuts, [n]]), 0, n)).astype(np.int64))


@numba.njit(cache=True, nogil=True)
def _simple_degree_rows(indptr, indices, out, r0, r1):
    for u in range(r0, r1):
        lo, hi = indptr[u], indptr[u + 1]
        k = np.searchsorted(indices[lo:hi], u)
        out[u] = hi - lo - (1 if k < hi - lo and indices[lo + k] == u else 0)


@numba.njit(cache=True, nogil=True, parallel=True)
def _simple_degree_par(indptr, indices, out, bounds):
    for t in numba.prange(bounds.shape[0] - 1):
        _simple_degree_rows(indptr, indices, out, bounds[t], bounds[t + 1])


def _simple_degree(indptr, indices, out) -> None:
    """``out[u]``: row ``u``'s length less its self-loop (at most one, rows ascend)."""
    _by_rows(indptr, lambda a, b: _simple_degree_rows(indptr, indices, out, a, b),
             lambda bounds: _simple_degree_par(indptr, indices, out, bounds))


@numba.njit(cache=True, nogil=True)
def _count_higher_rows(indptr, indices, rank, out, by_rank, r0, r1):
    for u in range(r0, r1):
        ru = rank[u]
        c = 0
        for k in range(indptr[u], indptr[u + 1]):
            if rank[indices[k]] > ru:
                c += 1
        if by_rank:
            out[ru] = c
        else:
            out[u] = c


@numba.njit(cache=True, nogil=True, parallel=True)
def _count_higher_par(indptr, indices, rank, out, by_rank, bounds):
    for t in numba.prange(bounds.shape[0] - 1):
        _count_higher_rows(indptr, indices, rank, out, by_rank, bounds[t], bounds[t + 1])


def _count_higher(indptr, indices, rank, out, by_rank: bool = True) -> None:
    """``out[rank[u]]`` (``by_rank``; else ``out[u]``): the neighbours of ``u`` ranked
    above it."""
    indptr, indices = read_only(indptr, indices)  # mapped or built: one signature
    _by_rows(indptr, lambda a, b: _count_higher_rows(indptr, indices, rank, out, by_rank, a, b),
             lambda bounds: _count_higher_par(indptr, indices, rank, out, by_rank, bounds))


@numba.njit(cache=True, nogil=True)
def _fill_higher_rows(indptr, indices, rank, dptr, didx, sort, ids, by_rank, first, r0, r1):
    for u in range(r0, r1):
        ru = rank[u]
        row = ru if by_rank else u - first
        lo = dptr[row]
        pos = lo
        small = sort and dptr[row + 1] - lo <= 32
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            r = rank[v]
            if r > ru:
                x = v if ids else r
                q = pos
                if small:
                    while q > lo and didx[q - 1] > x:
                        didx[q] = didx[q - 1]
                        q -= 1
                didx[q] = x
                pos += 1
        if sort and not small:
            didx[lo:pos].sort()


@numba.njit(cache=True, nogil=True, parallel=True)
def _fill_higher_par(indptr, indices, rank, dptr, didx, sort, ids, by_rank, first, bounds):
    for t in numba.prange(bounds.shape[0] - 1):
        _fill_higher_rows(indptr, indices, rank, dptr, didx, sort, ids, by_rank, first,
                          bounds[t], bounds[t + 1])


def _fill_higher(indptr, indices, rank, dptr, didx, sort: bool = True, *, ids: bool = False,
                 block: tuple[int, int] | None = None) -> None:
    """Row ``rank[u]`` of the DAG: the ranks of ``u``'s higher-ranked neighbours (``sort``:
    ascending; rows of up to 32 by insertion as they are written). ``ids``: their ids
    instead, as the index holds them (with ``sort`` False). ``block`` ``(lo, hi)``: only
    the vertices ``lo..hi-1``, vertex ``u``'s row at ``dptr[u - lo]`` (a block of the
    oriented rows by vertex id, as the out-of-core triangle count loads them)."""
    by_rank = block is None
    lo, hi = (0, len(indptr) - 1) if by_rank else block
    indptr, indices = read_only(indptr, indices)  # mapped or built: one signature
    args = (indptr, indices, rank, dptr, didx, sort, ids, by_rank, lo)
    _by_rows(indptr[lo:hi + 1], lambda a, b: _fill_higher_rows(*args, lo + a, lo + b),
             lambda bounds: _fill_higher_par(*args, bounds + lo))


@numba.njit(cache=True, nogil=True)
def _count_lower(src, dst, counts):
    for k in range(src.shape[0]):
        s, d = src[k], dst[k]
        if s != d:
            counts[s if s < d else d] += 1


@numba.njit(cache=True, nogil=True)
def _scatter_lower(src, dst, cursor, out, directions):
    """Row ``min(s, d)`` gets ``max(s, d)`` (packed with its direction bit: 1 when the edge
    runs from the lower id, 2 when from the higher)."""
    for k in range(src.shape[0]):
        s, d = src[k], dst[k]
        if s == d:
            continue
        lo, hi = (s, d) if s < d else (d, s)
        pos = cursor[lo]
        if directions:
            out[pos] = hi * 4 + (1 if s < d else 2)
        else:
            out[pos] = hi
        cursor[lo] = pos + 1


@numba.njit(cache=True, nogil=True)
def _dedupe_rows(ptr, vals, out_len, directions):
    """Sort each row of ``vals`` and keep each neighbour once (direction bits OR-ed),
    compacting rows to the front; ``out_len[r]``: the row's kept count. Returns the total."""
    out = 0
    for r in range(ptr.shape[0] - 1):
        lo, hi = ptr[r], ptr[r + 1]
        start = out
        if hi > lo:
            vals[lo:hi].sort()
            prev = -1
            for k in range(lo, hi):
                v = vals[k]
                key = v >> 2 if directions else v
                if key != prev:
                    vals[out] = v
                    out += 1
                    prev = key
                elif directions:
                    vals[out - 1] |= v & 3
        out_len[r] = out - start
    return out


@numba.njit(cache=True, nogil=True)
def _unpack(packed, kept, idx, bits, directions):
    for k in range(kept):
        v = packed[k]
        if directions:
            idx[k] = v >> 2
            bits[k] = v & 3
        else:
            idx[k] = v


@numba.njit(cache=True, nogil=True)
def _upper_degree(uptr, uidx, degree):
    for u in range(uptr.shape[0] - 1):
        degree[u] += uptr[u + 1] - uptr[u]
        for k in range(uptr[u], uptr[u + 1]):
            degree[uidx[k]] += 1


@numba.njit(cache=True, nogil=True)
def _count_reoriented(uptr, uidx, rank, counts):
    for u in range(uptr.shape[0] - 1):
        ru = rank[u]
        for k in range(uptr[u], uptr[u + 1]):
            rv = rank[uidx[k]]
            counts[ru if ru < rv else rv] += 1


@numba.njit(cache=True, nogil=True, parallel=True)
def _fill_reoriented(uptr, uidx, ubits, rank, cursor, didx, dbits, directions):
    """Each upper edge ``u - v`` into the row of its lower rank (slots taken from the
    row's cursor atomically); a flipped edge swaps its direction bits."""
    for u in numba.prange(uptr.shape[0] - 1):
        ru = rank[u]
        for k in range(uptr[u], uptr[u + 1]):
            rv = rank[uidx[k]]
            row, col = (ru, rv) if ru < rv else (rv, ru)
            pos = atomic_add(cursor, row, 1)
            didx[pos] = col
            if directions:
                b = ubits[k]
                dbits[pos] = b if ru < rv else ((b & 1) << 1) | ((b & 2) >> 1)


@numba.njit(cache=True, nogil=True, parallel=True)
def _sort_rows(dptr, didx, dbits, directions):
    for r in numba.prange(dptr.shape[0] - 1):
        lo, hi = dptr[r], dptr[r + 1]
        if hi - lo < 2:
            continue
        if directions:
            order = np.argsort(didx[lo:hi])
            vals = didx[lo:hi][order]
            bits = dbits[lo:hi][order]
            didx[lo:hi] = vals
            dbits[lo:hi] = bits
        else:
            didx[lo:hi].sort()


@numba.njit(cache=True, nogil=True)
def _fill_full(dptr, didx, ptr, idx):
    """Symmetric rows: each row's lower neighbours (in ascending order, by scanning the
    rows in order), then its DAG row (its higher neighbours, ascending)."""
    n = dptr.shape[0] - 1
    cursor = ptr[:-1].copy()
    for u in range(n):
        for k in range(dptr[u], dptr[u + 1]):
            v = didx[k]
            idx[cursor[v]] = u
            cursor[v] += 1
    for u in range(n):
        c = cursor[u]
        for k in range(dptr[u], dptr[u + 1]):
            idx[c] = didx[k]
            c += 1
