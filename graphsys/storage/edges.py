"""Reading a graph's edges: the ``P x P`` bucket files and the streams over them.

:class:`Bucket` maps one bucket's Arrow file and yields its record batches as zero-copy
:class:`EdgeBatch` views, each checked on first touch (:mod:`graphsys.storage.structure`);
:func:`iter_edges`, :func:`edge_column` and :func:`degrees` stream an edge set in internal
ids one record batch at a time. :class:`~graphsys.storage.graph.Graph`'s edge methods
(``bucket``, ``buckets``, ``iter_edges``, ``edge_column``, ``degrees``) are thin calls into
this module and hold the contract.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage import kernels
from graphsys.storage.format import EdgeSet, bucket_file
from graphsys.storage.structure import check_bucket_file


def _to_torch(arr: np.ndarray):
    import torch

    with warnings.catch_warnings():  # read-only mapped memory: torch warns, we never write
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(arr)


@dataclass(frozen=True)
class EdgeBatch:
    """One Arrow record batch of a bucket, as zero-copy NumPy views of the mapped file.

    Attributes
    ----------
    i, j : int
        Source and destination partition of the bucket.
    start : int
        Row of the batch's first edge within the bucket.
    src, dst : numpy.ndarray
        int32 local offsets into partitions ``i`` and ``j``.
    rel : numpy.ndarray or None
        int32 relation indices, or None (one relation).
    weight : numpy.ndarray or None
        float32 edge weights, or None.
    columns : dict of str to numpy.ndarray
        The edge set's edge columns (``timestamp``, ``rating``, ...), row for row with
        ``src``.
    """

    i: int
    j: int
    start: int
    src: np.ndarray
    dst: np.ndarray
    rel: np.ndarray | None
    weight: np.ndarray | None
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.src)


class Bucket:
    """The edges from partition ``i`` to partition ``j`` of one edge set.

    Sorted by ``(src, dst, rel)``. Opening maps the file; columns are NumPy views of the
    mapping (no copy) when the bucket is one record batch, as every bucket of at most
    ``manifest.max_batch_rows`` edges is; larger buckets are iterated with :meth:`batches`.
    Obtained from :meth:`Graph.bucket` and :meth:`Graph.buckets`.

    Attributes
    ----------
    edge_set : str
        Name of the edge set.
    i, j : int
        Source and destination partition.
    num_edges : int
        Edges in the bucket (also ``len(bucket)``).
    """

    def __init__(self, graph, edge_set: str, i: int, j: int, num_edges: int):
        self.graph, self.edge_set, self.i, self.j = graph, edge_set, i, j
        self.num_edges = num_edges
        self.file_name = bucket_file(edge_set, i, j)
        self.path = graph.location.file(self.file_name)

    def __len__(self) -> int:
        return self.num_edges

    def __repr__(self) -> str:
        return f"Bucket({self.edge_set!r}, {self.i}, {self.j}, edges={self.num_edges})"

    @cached_property
    def _mapping(self) -> pa.NativeFile:
        if self.num_edges == 0:
            raise GraphsysError("empty bucket has no file")
        self.graph.check_hash(self.file_name)
        try:
            return self.graph.location.open(self.file_name)
        except (OSError, pa.ArrowException) as exc:
            raise FormatError(f"{self.path}: cannot open bucket ({exc})") from None

    @cached_property
    def _reader(self) -> paipc.RecordBatchFileReader:
        try:
            reader = paipc.open_file(self._mapping)
        except (OSError, pa.ArrowException) as exc:
            raise FormatError(f"{self.path}: cannot open bucket ({exc})") from None
        key = (self.edge_set, self.i, self.j)
        if key not in self.graph._checked_files:
            check_bucket_file(reader, self.graph._stored(self.edge_set), self.num_edges,
                              self.path)
            self.graph._checked_files.add(key)
        return reader

    @property
    def mapped_region(self) -> tuple[int, int]:
        """(start, end) addresses of the bucket file's mapping in this process: the columns
        of :meth:`batches` lie inside it (for paging advice, :mod:`graphsys.storage.pages`);
        ``(0, 0)``, which no advice touches, for a remote graph (its batches are heap)."""
        m = self._mapping
        if not isinstance(m, pa.MemoryMappedFile):
            return 0, 0
        m.seek(0)  # the reader reads at explicit offsets: the position is free to move
        buf = m.read_buffer(m.size())  # zero copy: a view of the mapping
        return buf.address, buf.address + buf.size

    def batches(self) -> Iterator[EdgeBatch]:
        """Yield the bucket's record batches as zero-copy :class:`EdgeBatch` views."""
        if self.num_edges == 0:
            return
        reader = self._reader
        checked = self.graph._checked_batches
        names = [c.name for c in self.graph._stored(self.edge_set).columns]
        start = 0
        for k in range(reader.num_record_batches):
            try:
                rb = reader.get_batch(k)
                col = {n: rb.column(n).to_numpy(zero_copy_only=True) for n in rb.schema.names}
            except (pa.ArrowException, UnicodeDecodeError) as exc:  # e.g. nulls, bad buffers
                raise FormatError(f"{self.path}: unreadable record batch {k} ({exc})") from None
            key = (self.edge_set, self.i, self.j, k)
            if key not in checked:  # bounds-checked first touch: never an index past a row
                if any(len(v) != rb.num_rows for v in col.values()):
                    raise FormatError(f"{self.path}: record batch {k}: a column's length "
                                      f"differs from the batch's {rb.num_rows} rows")
                self.graph.bucket_bounds(self.i, self.j).check(
                    col["src"], col["dst"], col.get("rel"), self.path, start)
                checked.add(key)
            yield EdgeBatch(self.i, self.j, start, col["src"], col["dst"], col.get("rel"),
                            col.get("weight"), {c: col[c] for c in names})
            start += rb.num_rows

    def _column(self, name: str) -> np.ndarray | None:
        if self.num_edges == 0:
            return np.zeros(0, np.float32 if name == "weight" else np.int32)
        parts = [getattr(b, name) for b in self.batches()]
        if parts[0] is None:
            return None
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def src(self) -> np.ndarray:
        """Local source offsets, int32 (num_edges,)."""
        return self._column("src")

    @property
    def dst(self) -> np.ndarray:
        """Local destination offsets, int32 (num_edges,)."""
        return self._column("dst")

    @property
    def rel(self) -> np.ndarray | None:
        """Relation indices into ``graph.relation_types``, int32, or None (one relation)."""
        return self._column("rel")

    @property
    def weight(self) -> np.ndarray | None:
        """Edge weights, float32, or None."""
        return self._column("weight")

    def column(self, name: str) -> np.ndarray:
        """The edge column ``name`` (see :meth:`Graph.edge_column`), row for row with
        :attr:`src`: a view of the mapping when the bucket is one record batch."""
        dtype = np.dtype(self.graph._stored(self.edge_set).column(name).dtype)
        if self.num_edges == 0:
            return np.zeros(0, dtype)
        parts = [b.columns[name] for b in self.batches()]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def to_torch(self) -> dict[str, object]:
        """The bucket's columns as torch tensors sharing memory with the mapping."""
        out = {"src": self.src, "dst": self.dst, "rel": self.rel, "weight": self.weight}
        return {k: _to_torch(v) for k, v in out.items() if v is not None}


def bucket_pairs(order: str | Iterable[tuple[int, int]], p: int) -> list[tuple[int, int]]:
    """The ``(i, j)`` pairs of :meth:`Graph.buckets <graphsys.storage.graph.Graph.buckets>`'
    ``order`` over ``p`` partitions; an unknown order name is a one-line
    :class:`GraphsysError`."""
    if order == "row-major":
        return [(i, j) for i in range(p) for j in range(p)]
    if order == "col-major":
        return [(i, j) for j in range(p) for i in range(p)]
    if isinstance(order, str):
        raise GraphsysError(f"unknown bucket order {order!r} (row-major, col-major, or a "
                            f"list of (i, j) pairs)")
    return [(int(i), int(j)) for i, j in order]


def rel_bases(graph, es: EdgeSet) -> tuple[np.ndarray, np.ndarray]:
    """Per relation and partition, the global id base of source / destination nodes:
    int64 arrays (R, P)."""
    toff = graph.type_offsets
    rels = graph.relation_types
    src = np.stack([toff[r.lhs] + graph.partition_offsets(r.lhs)[:-1] for r in rels])
    dst = np.stack([toff[r.rhs] + graph.partition_offsets(r.rhs)[:-1] for r in rels])
    return src, dst


#: Most rows of one item of :func:`iter_edges` and :func:`edge_column`: a record batch (up
#: to the manifest's ``max_batch_rows``, millions of rows) is handed on in runs of this
#: many, so what a stream derives per item (int64 ids, an export's columns) is bounded
#: whatever the graph's size.
STREAM_ROWS = 1 << 18


def _runs(graph, es: EdgeSet) -> Iterator[tuple[EdgeBatch, slice]]:
    """Every record batch of ``es`` in row-major bucket order, cut into runs of at most
    :data:`STREAM_ROWS` rows: ``(batch, rows)``."""
    for b in graph.buckets("row-major", es.name):
        for eb in b.batches():
            for lo in range(0, len(eb), STREAM_ROWS):
                yield eb, slice(lo, lo + STREAM_ROWS)


def iter_edges(graph, es: EdgeSet) -> Iterator[tuple[np.ndarray, ...]]:
    """``(src, dst, rel, weight)`` of every run of :func:`_runs`, ids made global with
    :func:`rel_bases` (:meth:`Graph.iter_edges
    <graphsys.storage.graph.Graph.iter_edges>`)."""
    src_base, dst_base = rel_bases(graph, es)
    for eb, rows in _runs(graph, es):
        rel = None if eb.rel is None else eb.rel[rows]
        if rel is None:
            s = src_base[0][eb.i] + eb.src[rows]
            d = dst_base[0][eb.j] + eb.dst[rows]
        else:
            s = src_base[rel, eb.i] + eb.src[rows]
            d = dst_base[rel, eb.j] + eb.dst[rows]
        yield s, d, rel, None if eb.weight is None else eb.weight[rows]


def edge_column(graph, name: str, es: EdgeSet) -> Iterator[np.ndarray]:
    """The edge column ``name`` of ``es``, run for run with :func:`iter_edges`; a column
    the edge set lacks is refused before the first run."""
    es.column(name)
    for eb, rows in _runs(graph, es):
        yield eb.columns[name][rows]


def degrees(graph, edge_set: str | None, direction: str) -> np.ndarray:
    """Out-, in- or total degree of every node (int64 (N,)), counted over
    :func:`iter_edges` (:meth:`Graph.degrees <graphsys.storage.graph.Graph.degrees>`)."""
    if direction not in ("out", "in", "both"):
        raise GraphsysError(f"direction must be out, in or both, got {direction!r}")
    deg = np.zeros(graph.num_nodes(), np.int64)
    for s, d, _, _ in iter_edges(graph, graph.edge_set(edge_set)):
        if direction in ("out", "both"):
            kernels.count_into(s, deg)
        if direction in ("in", "both"):
            kernels.count_into(d, deg)
    return deg
