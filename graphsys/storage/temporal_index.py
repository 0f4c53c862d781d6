"""The temporal adjacency index: every node's events in time order, built once, mapped.

An index of kind ``temporal`` lists, for every node ``v`` (global ids), the edges that touch
it, as ``(neighbour, time, edge id)`` rows sorted by ``(time, edge id)``: an edge ``u -> w``
stamped ``t`` is in row ``u`` and in row ``w``, once for a self-loop (an undirected edge
set's stored edge in its source's row only, so each event is in a row once). The edge id is
the edge's position in the bucket stream (as :meth:`Graph.iter_edges
<graphsys.storage.graph.Graph.iter_edges>` yields them), so an edge column's values gather by
it. Each column is one Arrow IPC file that memory-maps with no copy::

    index/{edge_set}/temporal-indptr.arrow    int64 (N+1,)
    index/{edge_set}/temporal-indices.arrow   int32 (M,) while N < 2**31, else int64
    index/{edge_set}/temporal-time.arrow      (M,) the ``timestamp`` column's dtype
    index/{edge_set}/temporal-eid.arrow       int64 (M,)

``M`` is twice the edges less the self-loops (of an undirected edge set: its stored edges).
The events of ``v`` strictly before ``t`` are a prefix of its row (one binary search), what
:class:`graphsys.sampling.TemporalNeighborSampler` draws from. Building (``graphsys index
DIR --temporal``): a counting pass into the mapped ``indptr``, a scatter through a per-node
cursor into the mapped columns, then a parallel stable sort of each row by time; without the
index the same arrays are built in RAM (:func:`temporal_adjacency`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit, prange

from graphsys.errors import FormatError, GraphsysError
from graphsys.progress import progress_bar
from graphsys.storage.column_file import allocate_column, map_column
from graphsys.storage.format import IndexInfo, index_file
from graphsys.storage.index_merge import sort_rows
from graphsys.storage.kernels import count_into

#: The kind name of the index in the manifest.
KIND = "temporal"
#: The edge column whose stamps the index holds.
TIME_COLUMN = "timestamp"
#: Anonymous bytes per entry of a build in RAM (neighbour, time, edge id, the sort's
#: permutation), and per node (offsets, cursor).
RAM_BYTES_PER_ENTRY = 32
RAM_BYTES_PER_NODE = 16


@dataclass(frozen=True)
class TemporalAdjacency:
    """Every node's events in time order (see the module docstring).

    Attributes
    ----------
    indptr : numpy.ndarray
        int64 (N+1,): row ``v`` is ``indptr[v]:indptr[v + 1]``.
    indices : numpy.ndarray
        int32 or int64 (M,): the neighbour of each event.
    time : numpy.ndarray
        (M,) the event's stamp, the time column's dtype; ascending within a row.
    eid : numpy.ndarray
        int64 (M,): the edge's position in the bucket stream; ascending among equal stamps.
    mapped : bool
        Views of the stored index (page cache) rather than arrays built in RAM.
    """

    indptr: np.ndarray
    indices: np.ndarray
    time: np.ndarray
    eid: np.ndarray
    mapped: bool = False

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    @property
    def num_entries(self) -> int:
        return int(self.indptr[-1])


@njit(cache=True)
def _scatter(src, dst, t, pos, cursor, indices, time, eid, both):
    """Each edge ``k`` into its source's row, and for ``both`` into its destination's too
    (but a self-loop's, once)."""
    for k in range(src.shape[0]):
        s, d = src[k], dst[k]
        c = cursor[s]
        indices[c] = d
        time[c] = t[k]
        eid[c] = pos + k
        cursor[s] = c + 1
        if both and d != s:
            c = cursor[d]
            indices[c] = s
            time[c] = t[k]
            eid[c] = pos + k
            cursor[d] = c + 1


@njit(parallel=True, cache=True)
def _row_problem(indptr, indices, time, eid, n, m):
    """0 when every entry is in range and every row sorted by (time, eid); else 1 + the
    first bad row."""
    bad = n + 1
    for v in prange(n):
        lo, hi = indptr[v], indptr[v + 1]
        for k in range(lo, hi):
            if (indices[k] < 0 or indices[k] >= n or eid[k] < 0 or eid[k] >= m
                    or (k > lo and (time[k] < time[k - 1] or
                                    (time[k] == time[k - 1] and eid[k] <= eid[k - 1])))):
                bad = min(bad, v)
                break
    return 0 if bad == n + 1 else bad + 1


def time_dtype(graph, edge_set: str) -> np.dtype:
    es = graph.edge_set(edge_set)
    cols = {c.name: c.dtype for c in es.columns}
    if TIME_COLUMN not in cols:
        raise GraphsysError(f"edge set {es.name!r} of {graph.path} has no {TIME_COLUMN!r} edge "
                            f"column (edge columns: {', '.join(cols) or 'none'}): the "
                            f"temporal index and samplers need one (keep it at ingest)")
    return np.dtype(cols[TIME_COLUMN])


def fill_temporal(graph, edge_set: str, alloc, progress: bool = False):
    """Build the four columns with ``alloc(name, dtype, length)`` (mapped files or RAM);
    returns ``(indptr, indices, time, eid, index dtype)``."""
    es = graph.edge_set(edge_set)
    tdtype = time_dtype(graph, es.name)
    n = graph.num_nodes()
    deg = np.zeros(n, np.int64)
    both = not es.undirected      # stored in both directions: each copy in one row
    for s, d, _, _ in graph.iter_edges(es.name):
        count_into(s, deg)
        if both:
            count_into(d[d != s], deg)
    indptr = alloc("indptr", np.dtype(np.int64), n + 1)
    np.cumsum(deg, out=indptr[1:])
    m = int(indptr[-1])
    idx_dtype = np.dtype(np.int32 if n < 2**31 else np.int64)
    indices = alloc("indices", idx_dtype, m)
    time = alloc("time", tdtype, m)
    eid = alloc("eid", np.dtype(np.int64), m)
    cursor = indptr[:-1].copy()
    pos = 0
    bar = progress_bar(total=es.num_edges, unit="edge", unit_scale=True, desc="index temporal",
                       disable=not progress)
    with bar:
        for (s, d, _, _), t in zip(graph.iter_edges(es.name),
                                   graph.edge_column(TIME_COLUMN, es.name)):
            _scatter(s, d, np.ascontiguousarray(t), pos, cursor, indices, time, eid, both)
            pos += len(s)
            bar.update(len(s))
    # by time, stably: entries arrive in edge-id order, so equal stamps stay in that order
    sort_rows(indptr, time, indices, eid)
    return indptr, indices, time, eid, idx_dtype


def build_temporal(graph, edge_set: str, directory: Path, digest: str,
                   progress: bool = False) -> IndexInfo:
    """Write the ``temporal`` index files of ``edge_set`` into ``directory`` (flat names,
    ``temporal-<column>.arrow``) and return its manifest entry (``digest``: the edge set's
    bucket digest it is built from); what
    :func:`~graphsys.storage.adjacency_index.build_index` runs for kind ``temporal``."""

    def alloc(name, dtype, length):
        return allocate_column(directory / f"{KIND}-{name}.arrow", name, dtype, length)

    indptr, indices, time, eid, idx_dtype = fill_temporal(graph, edge_set, alloc, progress)
    for arr in (indptr, indices, time, eid):
        if isinstance(arr, np.memmap):
            arr.flush()
    return IndexInfo(KIND, str(idx_dtype), graph.num_nodes(), int(indptr[-1]), False, digest)


def map_temporal(graph, edge_set: str | None = None) -> TemporalAdjacency | None:
    """The stored ``temporal`` index of an edge set, mapped and checked once per Graph
    (entries in range, rows sorted by time), or None when the graph has none.

    Raises
    ------
    FormatError
        A stale (built for other edges), truncated or corrupted index, naming its file.
    """
    es = graph.edge_set(edge_set)
    cache = graph._mapped_indexes
    key = (es.name, KIND, "events")
    if key in cache:
        return cache[key]
    # offsets, neighbour ids and staleness checked, each file hash-checked when asked
    base = graph.adjacency_index(es.name, KIND)
    if base is None:
        cache[key] = None
        return None
    info = base.info
    for column in ("time", "eid"):
        graph.check_hash(index_file(es.name, KIND, column))
    loc = graph.location

    def column(name: str, dtype) -> np.ndarray:
        rel = index_file(es.name, KIND, name)
        return map_column(loc.file(rel), np.dtype(dtype), info.num_edges,
                          what="index column", location=loc, rel=rel)

    time, eid = column("time", time_dtype(graph, es.name)), column("eid", np.int64)
    bad = _row_problem(base.indptr, base.indices, time, eid, info.num_nodes, es.num_edges)
    if bad:
        raise FormatError(f"{loc.file(index_file(es.name, KIND, 'time'))}: row {bad - 1} is "
                          f"not in time order or holds an id out of range (corrupted)")
    cache[key] = TemporalAdjacency(base.indptr, base.indices, time, eid, mapped=True)
    return cache[key]
