"""The Graph API: every engine reads a stored graph through :func:`open_graph`.

Node numbering. Each node has, within its entity type, a partition ``p`` and a local offset
``l`` (its rank among the partition's nodes in sorted-original-id order). Its *type-global*
id is ``partition_offsets(t)[p] + l``; across all types, the *global* id adds
``type_offsets[t]`` (types in manifest order). For a graph with one entity type both are the
same ``0..N-1`` numbering, which is what CSR/CSC, degrees and the BSP engine use.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.ipc as paipc

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage import kernels
from graphsys.storage.format import (
    EdgeSet,
    EntityType,
    Manifest,
    RelationType,
    bucket_file,
    index_file,
    node_file,
    read_manifest,
)
from graphsys.storage.location import GraphLocation
from graphsys.storage.structure import (
    BucketBounds,
    check_bucket_file,
    check_listed,
    check_node_rows,
    check_node_table,
)


def _to_torch(arr: np.ndarray):
    import torch

    with warnings.catch_warnings():  # read-only mapped memory: torch warns, we never write
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(arr)


@dataclass(frozen=True)
class EdgeBatch:
    """One Arrow record batch of a bucket, as zero-copy NumPy views of the mapped file.

    ``src``/``dst``: int32 local offsets into partitions ``i``/``j``; ``rel``: int32 relation
    index or None; ``weight``: float32 or None. ``start`` is the row of the first edge
    within the bucket.
    """

    i: int
    j: int
    start: int
    src: np.ndarray
    dst: np.ndarray
    rel: np.ndarray | None
    weight: np.ndarray | None

    def __len__(self) -> int:
        return len(self.src)


class Bucket:
    """The edges from partition ``i`` to partition ``j`` of one edge set.

    Sorted by (src, dst, rel). Opening maps the file; columns are NumPy views of the mapping
    (no copy) when the bucket is one record batch, as every bucket of at most
    ``manifest.max_batch_rows`` edges is; larger buckets are iterated with :meth:`batches`.
    """

    def __init__(self, graph: Graph, edge_set: str, i: int, j: int, num_edges: int):
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
            check_bucket_file(reader, self.graph.edge_set(self.edge_set), self.num_edges,
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
        start = 0
        for k in range(reader.num_record_batches):
            try:
                rb = reader.get_batch(k)
                col = {n: rb.column(n).to_numpy(zero_copy_only=True) for n in rb.schema.names}
            except (pa.ArrowException, UnicodeDecodeError) as exc:  # e.g. nulls, bad buffers
                raise FormatError(f"{self.path}: unreadable record batch {k} ({exc})") from None
            key = (self.edge_set, self.i, self.j, k)
            if key not in checked:  # bounds-checked first touch: never an index past a row
                self.graph.bucket_bounds(self.i, self.j).check(
                    col["src"], col["dst"], col.get("rel"), self.path, start)
                checked.add(key)
            yield EdgeBatch(self.i, self.j, start, col["src"], col["dst"], col.get("rel"),
                            col.get("weight"))
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

    def to_torch(self) -> dict[str, object]:
        """The bucket's columns as torch tensors sharing memory with the mapping."""
        out = {"src": self.src, "dst": self.dst, "rel": self.rel, "weight": self.weight}
        return {k: _to_torch(v) for k, v in out.items() if v is not None}


@dataclass
class CSR:
    """Compressed sparse rows over global node ids.

    ``indptr`` int64 (N+1,); ``indices`` int64 (E,) neighbours, ascending within a row
    (int32 when mapped from a stored adjacency index of a graph with < 2**31 nodes; then
    every array is a read-only view of page cache);
    ``weight`` float32 (E,) or None; ``edge_ids`` int64 (E,) position of each entry in the
    bucket stream (row-major bucket order), present only when asked for.
    """

    indptr: np.ndarray
    indices: np.ndarray
    weight: np.ndarray | None = None
    edge_ids: np.ndarray | None = None

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    def to_scipy(self):
        import scipy.sparse as sp

        data = self.weight if self.weight is not None else np.ones(len(self.indices), np.float32)
        n = self.num_nodes
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(n, n))


class Graph:
    """A stored graph opened read-only; see the module docstring for node numbering.

    ``location`` says where its files live (:mod:`graphsys.storage.location`); ``path`` is
    the local directory (a Path), or for a graph read through a filesystem URI the URI (a
    str: such a graph has no local path)."""

    def __init__(self, path: str | Path, manifest: Manifest,
                 location: GraphLocation | None = None):
        self.location = location or GraphLocation(path)
        self.path = self.location.root if self.location.local else self.location.uri
        self.manifest = manifest
        #: Bucket files whose schema and rows, and record batches whose offsets, passed the
        #: structural checks of :mod:`graphsys.storage.structure` (each runs once).
        self._checked_files: set[tuple[str, int, int]] = set()
        self._checked_batches: set[tuple[str, int, int, int]] = set()
        self._bounds: dict[tuple[int, int], BucketBounds] = {}
        #: When True, each bucket, index and node file is checked against its manifest
        #: sha256 when first read (:meth:`check_hash`): the hash check of ``graphsys run``,
        #: done on the files a run reads, as it first reads them.
        self.verify_hashes = False
        self._hashed: set[str] = set()

    def __repr__(self) -> str:
        return (f"Graph({str(self.path)!r}, nodes={self.num_nodes()}, edges="
                f"{ {k: v.num_edges for k, v in self.manifest.edge_sets.items()} }, "
                f"partitions={self.num_partitions})")

    # -- schema ------------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        return self.manifest.num_partitions

    @property
    def entity_types(self) -> list[str]:
        return list(self.manifest.entity_types)

    @property
    def relation_types(self) -> list[RelationType]:
        return list(self.manifest.relation_types)

    @property
    def edge_sets(self) -> list[str]:
        return list(self.manifest.edge_sets)

    def entity_type(self, entity_type: str | None = None) -> EntityType:
        """The manifest record of ``entity_type`` (its name, node count, partition sizes and
        columns); None = the only one. An unknown name, or None in a graph of several
        types, is a one-line :class:`GraphsysError`."""
        if entity_type is None:
            if len(self.manifest.entity_types) != 1:
                raise GraphsysError(f"graph has entity types {self.entity_types}: name one")
            return next(iter(self.manifest.entity_types.values()))
        try:
            return self.manifest.entity_types[entity_type]
        except KeyError:
            raise GraphsysError(f"unknown entity type {entity_type!r} (types: "
                                f"{', '.join(self.entity_types)})") from None

    def edge_set(self, name: str | None = None) -> EdgeSet:
        """The edge set ``name``; None = the only one, or ``default``/``train`` if present."""
        sets = self.manifest.edge_sets
        if name is None:
            if len(sets) == 1:
                return next(iter(sets.values()))
            for candidate in ("default", "train"):
                if candidate in sets:
                    return sets[candidate]
            raise GraphsysError(f"graph has edge sets {self.edge_sets}: name one")
        try:
            return sets[name]
        except KeyError:
            raise GraphsysError(f"unknown edge set {name!r} (edge sets: "
                                f"{', '.join(self.edge_sets)})") from None

    # -- counts ------------------------------------------------------------------------------
    def num_nodes(self, entity_type: str | None = None) -> int:
        """Nodes of one type; with ``None``, all nodes of all types."""
        if entity_type is None:
            return sum(e.num_nodes for e in self.manifest.entity_types.values())
        return self.entity_type(entity_type).num_nodes

    def num_edges(self, edge_set: str | None = None) -> int:
        return self.edge_set(edge_set).num_edges

    def partition_sizes(self, entity_type: str | None = None) -> np.ndarray:
        """Nodes per partition, int64 (P,)."""
        return np.asarray(self.entity_type(entity_type).partition_sizes, dtype=np.int64)

    def partition_offsets(self, entity_type: str | None = None) -> np.ndarray:
        """Type-global id of each partition's first node, int64 (P+1,)."""
        out = np.zeros(self.num_partitions + 1, np.int64)
        np.cumsum(self.partition_sizes(entity_type), out=out[1:])
        return out

    @property
    def type_offsets(self) -> dict[str, int]:
        """Global id of each entity type's first node."""
        out, base = {}, 0
        for name, et in self.manifest.entity_types.items():
            out[name] = base
            base += et.num_nodes
        return out

    def bucket_bounds(self, i: int, j: int) -> BucketBounds:
        """Offset bounds of bucket ``(i, j)`` (the node counts of its partitions)."""
        if (i, j) not in self._bounds:
            self._bounds[(i, j)] = BucketBounds(self, i, j)
        return self._bounds[(i, j)]

    def bucket_counts(self, edge_set: str | None = None) -> np.ndarray:
        """Edges per bucket, int64 (P, P): row = source partition."""
        p = self.num_partitions
        counts = np.zeros((p, p), np.int64)
        for (i, j), n in self.edge_set(edge_set).buckets.items():
            counts[i, j] = n
        return counts

    def check_hash(self, rel: str) -> None:
        """With :attr:`verify_hashes`, raise :class:`FormatError` unless the file ``rel``
        (relative to the graph) has its manifest sha256; each file is hashed once (the
        read also brings it into the page cache for the mapping that follows)."""
        if not self.verify_hashes or rel in self._hashed:
            return
        if self.location.sha256(rel) != self.manifest.files.get(rel, {}).get("sha256"):
            raise FormatError(f"{self.location.file(rel)}: sha256 mismatch (corrupted or "
                              f"modified file)")
        self._hashed.add(rel)

    # -- edges -------------------------------------------------------------------------------
    def bucket(self, i: int, j: int, edge_set: str | None = None) -> Bucket:
        p = self.num_partitions
        if not (0 <= i < p and 0 <= j < p):
            raise GraphsysError(f"bucket ({i}, {j}) out of range for {p} partitions")
        es = self.edge_set(edge_set)
        return Bucket(self, es.name, i, j, es.buckets.get((i, j), 0))

    def buckets(self, order: str | Iterable[tuple[int, int]] = "row-major",
                edge_set: str | None = None, *, skip_empty: bool = True) -> Iterator[Bucket]:
        """Iterate buckets in ``row-major`` (by source partition), ``col-major`` order, or
        an explicit sequence of ``(i, j)`` pairs."""
        p = self.num_partitions
        if order == "row-major":
            pairs = [(i, j) for i in range(p) for j in range(p)]
        elif order == "col-major":
            pairs = [(i, j) for j in range(p) for i in range(p)]
        elif isinstance(order, str):
            raise GraphsysError(f"unknown bucket order {order!r} (row-major, col-major, or a "
                                f"list of (i, j) pairs)")
        else:
            pairs = [(int(i), int(j)) for i, j in order]
        es = self.edge_set(edge_set)
        for i, j in pairs:
            b = self.bucket(i, j, es.name)
            if b.num_edges or not skip_empty:
                yield b

    def iter_edges(self, edge_set: str | None = None) -> Iterator[tuple[np.ndarray, ...]]:
        """Yield ``(src, dst, rel, weight)`` chunks in global ids (int64), one per record
        batch, in row-major bucket order; rel/weight None when absent. Memory: one batch."""
        es = self.edge_set(edge_set)
        src_base, dst_base = self._rel_bases(es)
        for b in self.buckets("row-major", es.name):
            for eb in b.batches():
                rel = eb.rel
                if rel is None:
                    s = src_base[0][b.i] + eb.src
                    d = dst_base[0][b.j] + eb.dst
                else:
                    s = src_base[rel, b.i] + eb.src
                    d = dst_base[rel, b.j] + eb.dst
                yield s, d, rel, eb.weight

    def _rel_bases(self, es: EdgeSet) -> tuple[np.ndarray, np.ndarray]:
        """Per relation and partition, the global id base of source / destination nodes:
        int64 arrays (R, P)."""
        toff = self.type_offsets
        rels = self.relation_types
        src = np.stack([toff[r.lhs] + self.partition_offsets(r.lhs)[:-1] for r in rels])
        dst = np.stack([toff[r.rhs] + self.partition_offsets(r.rhs)[:-1] for r in rels])
        return src, dst

    def degrees(self, edge_set: str | None = None, direction: str = "out") -> np.ndarray:
        """Out- or in-degree (``direction`` = ``out``/``in``/``both``) of every global node,
        int64 (N,), streamed over buckets (memory: one batch + N)."""
        if direction not in ("out", "in", "both"):
            raise GraphsysError(f"direction must be out, in or both, got {direction!r}")
        n = self.num_nodes()
        deg = np.zeros(n, np.int64)
        for s, d, _, _ in self.iter_edges(edge_set):
            if direction in ("out", "both"):
                kernels.count_into(s, deg)
            if direction in ("in", "both"):
                kernels.count_into(d, deg)
        return deg

    def csr(self, edge_set: str | None = None, *, transpose: bool = False,
            weights: bool = True, edge_ids: bool = False) -> CSR:
        """Build the CSR (or, with ``transpose``, the CSC as a CSR of the reversed graph) over
        global ids with two streaming passes (degrees, then a numba scatter); memory is the
        output plus one record batch. When the graph directory holds the index (``graphsys
        index``) and ``edge_ids`` is not asked for, the index is mapped instead: no build,
        no anonymous memory."""
        es = self.edge_set(edge_set)
        if not edge_ids:
            mapped = self.adjacency_index(es.name, "csc" if transpose else "csr")
            if mapped is not None:
                return CSR(mapped.indptr, mapped.indices, mapped.weight if weights else None)
        n = self.num_nodes()
        deg = self.degrees(es.name, "in" if transpose else "out")
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(deg, out=indptr[1:])
        m = int(indptr[-1])
        indices = np.empty(m, np.int64)
        weight = np.empty(m, np.float32) if (weights and es.has_weight) else None
        perm = np.empty(m, np.int64) if edge_ids else np.zeros(0, np.int64)
        no_w = np.zeros(0, np.float32)
        cursor = indptr[:-1].copy()
        pos = 0
        for s, d, _, w in self.iter_edges(es.name):
            rows, cols = (d, s) if transpose else (s, d)
            kernels.csr_fill(rows, cols, 0, cursor, indices, w if weight is not None else no_w,
                             weight if weight is not None else no_w, perm, pos)
            pos += len(s)
        return CSR(indptr, indices, weight, perm if edge_ids else None)

    def adjacency_index(self, edge_set: str | None = None, kind: str = "csr"):
        """The stored ``kind`` (``csr``/``csc``/``push``) index of an edge set, mapped and
        checked once per Graph (:func:`graphsys.storage.adjacency_index.map_index`), or None
        if the graph has none."""
        from graphsys.storage.adjacency_index import map_index

        key = (self.edge_set(edge_set).name, kind)
        if key not in self._mapped_indexes:
            info = self.manifest.indexes.get(key[0], {}).get(kind)
            for column in info.columns() if info is not None else ():
                self.check_hash(index_file(key[0], kind, column))
            self._mapped_indexes[key] = map_index(self, key[0], kind)
        return self._mapped_indexes[key]

    def index_offsets(self, edge_set: str | None = None, kind: str = "csr"
                      ) -> np.ndarray | None:
        """Only the row offsets (int64 (N+1,)) of the stored ``kind`` (``csr``/``csc``)
        index, mapped and checked in O(N) once per Graph
        (:func:`graphsys.storage.adjacency_index.map_offsets`): the degrees, without the
        O(M) check of the neighbour ids that :meth:`adjacency_index` makes. None if the
        graph has none."""
        from graphsys.storage.adjacency_index import map_offsets

        key = (self.edge_set(edge_set).name, kind, "offsets")
        if key not in self._mapped_indexes:
            mapped = self._mapped_indexes.get(key[:2])
            if mapped is not None:
                self._mapped_indexes[key] = mapped.indptr
            else:
                if kind in self.manifest.indexes.get(key[0], {}):
                    self.check_hash(index_file(key[0], kind, "indptr"))
                self._mapped_indexes[key] = map_offsets(self, key[0], kind)
        return self._mapped_indexes[key]

    @cached_property
    def _mapped_indexes(self) -> dict:
        return {}

    def csc(self, edge_set: str | None = None, **kwargs) -> CSR:
        """In-neighbour lists: ``csc().indices[indptr[v]:indptr[v+1]]`` are v's sources."""
        return self.csr(edge_set, transpose=True, **kwargs)

    # -- nodes -------------------------------------------------------------------------------
    def _node_table(self, entity_type: str, partition: int) -> pa.Table:
        rel = node_file(entity_type, partition)
        path = self.location.file(rel)
        self.check_hash(rel)
        try:
            table = paipc.open_file(self.location.open(rel)).read_all()
        except (OSError, pa.ArrowException) as exc:
            raise FormatError(f"{path}: cannot read node partition ({exc})") from None
        check_node_table(table, self, entity_type, partition, path)
        return table

    def node_ids(self, entity_type: str | None = None, partition: int | None = None):
        """Original ids in type-global order (or of one partition): int64 NumPy array, or
        a pyarrow string array for string ids."""
        et = self.entity_type(entity_type)
        parts = range(self.num_partitions) if partition is None else [partition]
        cols = [self._node_table(et.name, p).column("id") for p in parts]
        arr = pa.chunked_array([c for col in cols for c in col.chunks],
                               pa.int64() if et.id_type == "int64" else pa.large_string())
        arr = arr.combine_chunks()
        return arr.to_numpy() if et.id_type == "int64" else arr

    @cached_property
    def _id_index(self) -> dict[str, tuple[object, np.ndarray]]:
        return {}

    def to_internal(self, ids, entity_type: str | None = None) -> np.ndarray:
        """Type-global ids (int64) of original ids; raises for an id not in the graph."""
        et = self.entity_type(entity_type)
        if et.name not in self._id_index:
            orig = self.node_ids(et.name)
            if et.id_type == "int64":
                order = np.argsort(orig, kind="stable")
                self._id_index[et.name] = (orig[order], order)
            else:
                order = pc.sort_indices(orig).to_numpy()
                self._id_index[et.name] = (orig.take(pa.array(order)), order)
        sorted_ids, order = self._id_index[et.name]
        scalar = np.isscalar(ids) or isinstance(ids, str)
        if et.id_type == "int64":
            try:
                q = np.atleast_1d(np.asarray(ids, dtype=np.int64))
            except (TypeError, ValueError, OverflowError):
                raise GraphsysError(f"ids of entity type {et.name!r} are integers; got "
                                    f"{ids!r}") from None
            pos = kernels.lookup_ints(sorted_ids, q)
        else:
            q = pa.array([ids] if scalar else list(ids) if not isinstance(ids, pa.Array) else ids,
                         pa.large_string())
            pos = kernels.lookup_strings(sorted_ids, q)
        if (pos < 0).any():
            bad = q[int(np.flatnonzero(pos < 0)[0])]
            bad = bad.as_py() if hasattr(bad, "as_py") else bad.item()
            raise GraphsysError(f"node id {bad!r} is not in the graph (entity type {et.name!r})")
        out = order[pos].astype(np.int64)
        return out

    def to_original(self, internal, entity_type: str | None = None):
        """Original ids of type-global ids (NumPy int64 or pyarrow strings)."""
        ids = self.node_ids(entity_type)
        idx = np.asarray(internal, dtype=np.int64)
        if isinstance(ids, np.ndarray):
            return ids[idx]
        return ids.take(pa.array(np.atleast_1d(idx)))

    def node_column(self, name: str, entity_type: str | None = None,
                    partition: int | None = None) -> np.ndarray:
        """A node column in type-global order (or of one ``partition``'s nodes): features
        float32 (N, dim), label int64 (N,) with -1 = unknown, mask bool (N,)."""
        et = self.entity_type(entity_type)
        col = next((c for c in et.columns if c.name == name), None)
        if col is None:
            raise GraphsysError(f"entity type {et.name!r} has no node column {name!r} "
                                f"(columns: {', '.join(c.name for c in et.columns) or 'none'})")
        if col.dtype:  # a column in a file of its own
            return self.mapped_node_column(name, et.name).astype(
                np.float32 if col.kind == "features" else np.int64)
        parts = []
        for p in range(self.num_partitions) if partition is None else [partition]:
            arr = self._node_table(et.name, p).column(name).combine_chunks()
            if col.kind == "features":
                parts.append(arr.flatten().to_numpy().reshape(-1, col.dim))
            else:
                parts.append(arr.to_numpy(zero_copy_only=False))
        out = np.concatenate(parts) if parts else np.zeros(0)
        return out.astype(np.float32 if col.kind == "features" else
                          np.int64 if col.kind == "label" else bool, copy=False)

    def mapped_node_column(self, name: str, entity_type: str | None = None) -> np.ndarray:
        """A node column stored in a file of its own (:mod:`graphsys.storage.node_columns`)
        as a read-only view of the mapped file, in its stored dtype: features (N, dim)
        float16/float32, labels (N,) int64. Other columns are read into RAM
        (:meth:`node_column`)."""
        from graphsys.storage.column_file import map_column
        from graphsys.storage.format import node_column_file

        et = self.entity_type(entity_type)
        col = next((c for c in et.columns if c.name == name), None)
        if col is None or not col.dtype:
            return self.node_column(name, et.name)
        rel = node_column_file(et.name, name)
        return map_column(self.location.file(rel), np.dtype(col.dtype),
                          et.num_nodes, col.dim if col.kind == "features" else 0,
                          what="node column", location=self.location, rel=rel)

    def node_columns(self, entity_type: str | None = None) -> list[str]:
        return [c.name for c in self.entity_type(entity_type).columns]


def open_graph(path: str | Path, *, filesystem: pafs.FileSystem | None = None) -> Graph:
    """Open the graph directory ``path``: reads and validates the manifest (as untrusted
    input: :func:`~graphsys.storage.format.validate_manifest`), and checks that every file
    it needs is listed and exists with its recorded size. Bucket and node files get their
    structural checks when first read (:mod:`graphsys.storage.structure`); ``graphsys
    verify`` checks hashes.

    ``path`` may be a filesystem URI (``s3://bucket/g``, ``gs://...``, ``hdfs://...``,
    ``file:///data/g``) or, with ``filesystem`` (a ``pyarrow.fs.FileSystem``), a path inside
    it. Local directories are memory-mapped; other filesystems are read into buffers as
    engines touch them (:mod:`graphsys.storage.location`), with the same checks."""
    loc = GraphLocation.resolve(path, filesystem)
    manifest = read_manifest(loc)
    check_listed(manifest, loc)
    for rel, entry in manifest.files.items():
        size = loc.size(rel)
        if size is None:
            raise FormatError(f"{loc.file(rel)}: missing (listed in the manifest)")
        if size != entry.get("bytes"):
            raise FormatError(f"{loc.file(rel)}: size {size} bytes, manifest says "
                              f"{entry.get('bytes')} (truncated or modified)")
    graph = Graph(loc.root, manifest, loc)
    check_node_rows(graph)
    return graph
