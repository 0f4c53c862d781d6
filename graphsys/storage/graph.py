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
from dataclasses import dataclass, field
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
        names = [c.name for c in self.graph.edge_set(self.edge_set).columns]
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
        dtype = np.dtype(self.graph.edge_set(self.edge_set).column(name).dtype)
        if self.num_edges == 0:
            return np.zeros(0, dtype)
        parts = [b.columns[name] for b in self.batches()]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def to_torch(self) -> dict[str, object]:
        """The bucket's columns as torch tensors sharing memory with the mapping."""
        out = {"src": self.src, "dst": self.dst, "rel": self.rel, "weight": self.weight}
        return {k: _to_torch(v) for k, v in out.items() if v is not None}


@dataclass
class CSR:
    """Compressed sparse rows over global node ids, from :meth:`Graph.csr` / :meth:`Graph.csc`.

    Row ``v``'s neighbours are ``indices[indptr[v]:indptr[v + 1]]``, ascending.

    Attributes
    ----------
    indptr : numpy.ndarray
        int64 (N+1,) row offsets.
    indices : numpy.ndarray
        int64 (E,) neighbours (int32 when mapped from a stored adjacency index of a graph
        with fewer than 2**31 nodes; every array is then a read-only view of page cache).
    weight : numpy.ndarray or None
        float32 (E,) edge weights, or None.
    edge_ids : numpy.ndarray or None
        int64 (E,) position of each entry in the bucket stream (row-major bucket order),
        present only when asked for.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
    ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
    >>> c = g.csr()
    >>> c.num_nodes, c.indptr.tolist(), c.indices.tolist()
    (4, [0, 1, 3, 4, 5], [2, 0, 2, 3, 1])
    >>> c.to_scipy().shape
    (4, 4)
    """

    indptr: np.ndarray
    indices: np.ndarray
    weight: np.ndarray | None = None
    edge_ids: np.ndarray | None = None

    @property
    def num_nodes(self) -> int:
        """Number of rows ``N``."""
        return len(self.indptr) - 1

    def to_scipy(self):
        """The rows as a ``scipy.sparse.csr_matrix`` (N, N): entries are the weights, or 1."""
        import scipy.sparse as sp

        data = self.weight if self.weight is not None else np.ones(len(self.indices), np.float32)
        n = self.num_nodes
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(n, n))


class Graph:
    """A stored graph, opened read-only by :func:`open_graph` (or returned by
    :func:`graphsys.ingest` and the ``from_*`` functions).

    Nodes of each entity type are split into ``num_partitions`` partitions and the edges of
    each edge set into the ``P x P`` buckets of PyTorch-BigGraph's layout [1]_: bucket
    ``(i, j)`` holds the edges from partition ``i`` to partition ``j``, sorted, in a
    memory-mapped Arrow file. Engines read the buckets, or the CSR/CSC built from them.

    Node ids. Each node keeps its *original* id (an integer or a string, as ingested). Engines
    number nodes ``0..N-1``: partition by partition, and within a partition in ascending
    original-id order (the *internal* or global id; with several entity types, types follow
    one another in manifest order). :meth:`to_internal` and :meth:`to_original` map between
    the two; CSR/CSC, degrees and every engine's results are by internal id.

    Attributes
    ----------
    path : Path or str
        The graph directory, or for a graph read through a filesystem URI the URI.
    manifest : Manifest
        The parsed manifest (:class:`~graphsys.storage.format.Manifest`).
    location : GraphLocation
        Where its files live (:mod:`graphsys.storage.location`).
    verify_hashes : bool
        When True, each bucket, index and node file is checked against its manifest sha256
        when first read (:meth:`check_hash`), as ``graphsys run`` does.

    See Also
    --------
    open_graph, graphsys.ingest, graphsys.from_numpy

    References
    ----------
    .. [1] A. Lerer, L. Wu, J. Shen, T. Lacroix, L. Wehrstedt, A. Bose and A. Peysakhovich,
       "PyTorch-BigGraph: A Large-scale Graph Embedding System", SysML 2019.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
    ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
    >>> g  # doctest: +ELLIPSIS
    Graph('.../g', nodes=4, edges={'default': 5}, partitions=2)
    >>> g.num_nodes(), g.num_edges(), g.partition_sizes().tolist()
    (4, 5, [1, 3])
    >>> g.node_ids().tolist()  # original ids in internal order
    [20, 10, 30, 40]
    >>> g.degrees().tolist()
    [1, 2, 1, 1]
    """

    def __init__(self, path: str | Path, manifest: Manifest,
                 location: GraphLocation | None = None):
        self.location = location or GraphLocation(path)
        self.path = self.location.root if self.location.local else self.location.uri
        self.manifest = manifest
        #: Bucket files whose schema and rows, and record batches whose offsets, passed the
        #: structural checks of :mod:`graphsys.storage.structure` (each runs once).
        self._checked_files: set[tuple[str, int, int]] = set()
        self._checked_batches: set[tuple[str, int, int, int]] = set()
        self._strings: dict[tuple[str, str], pa.Array] = {}
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
        """Number of node partitions ``P`` (the graph has ``P x P`` buckets)."""
        return self.manifest.num_partitions

    @property
    def entity_types(self) -> list[str]:
        """Names of the entity (node) types, in manifest order."""
        return list(self.manifest.entity_types)

    @property
    def relation_types(self) -> list[RelationType]:
        """The relation types (name, lhs and rhs entity types), in index order."""
        return list(self.manifest.relation_types)

    @property
    def edge_sets(self) -> list[str]:
        """Names of the edge sets."""
        return list(self.manifest.edge_sets)

    def entity_type(self, entity_type: str | None = None) -> EntityType:
        """The manifest record of one entity type: name, node count, partition sizes, columns.

        Parameters
        ----------
        entity_type : str, optional
            Its name; None for the only one.

        Returns
        -------
        EntityType

        Raises
        ------
        GraphsysError
            An unknown name, or None in a graph of several entity types.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.entity_type()
        EntityType(name='node', id_type='int64', partition_sizes=[1, 3], columns=[])
        """
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
        """The manifest record of one edge set: name, edge count, edges per bucket, flags.

        Parameters
        ----------
        name : str, optional
            The edge set; None for the only one, or ``default`` / ``train`` when present.

        Returns
        -------
        EdgeSet

        Raises
        ------
        GraphsysError
            An unknown name, or None that matches no edge set.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> es = g.edge_set()
        >>> es.name, es.num_edges, es.has_weight
        ('default', 5, False)
        """
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
        """Number of nodes of one entity type, or of all types.

        Parameters
        ----------
        entity_type : str, optional
            The entity type; None counts the nodes of every type.

        Returns
        -------
        int

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.num_nodes()
        4
        """
        if entity_type is None:
            return sum(e.num_nodes for e in self.manifest.entity_types.values())
        return self.entity_type(entity_type).num_nodes

    def num_edges(self, edge_set: str | None = None) -> int:
        """Number of edges of one edge set.

        Parameters
        ----------
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`).

        Returns
        -------
        int

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.num_edges()
        5
        """
        return self.edge_set(edge_set).num_edges

    def partition_sizes(self, entity_type: str | None = None) -> np.ndarray:
        """Nodes per partition.

        Parameters
        ----------
        entity_type : str, optional
            The entity type; None for the only one.

        Returns
        -------
        numpy.ndarray
            int64 (P,).

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.partition_sizes().tolist()
        [1, 3]
        """
        return np.asarray(self.entity_type(entity_type).partition_sizes, dtype=np.int64)

    def partition_offsets(self, entity_type: str | None = None) -> np.ndarray:
        """Internal id (within the entity type) of each partition's first node.

        Parameters
        ----------
        entity_type : str, optional
            The entity type; None for the only one.

        Returns
        -------
        numpy.ndarray
            int64 (P+1,); the last entry is the node count.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.partition_offsets().tolist()
        [0, 1, 4]
        """
        out = np.zeros(self.num_partitions + 1, np.int64)
        np.cumsum(self.partition_sizes(entity_type), out=out[1:])
        return out

    @property
    def type_offsets(self) -> dict[str, int]:
        """Global id of each entity type's first node (types in manifest order)."""
        out, base = {}, 0
        for name, et in self.manifest.entity_types.items():
            out[name] = base
            base += et.num_nodes
        return out

    def bucket_bounds(self, i: int, j: int) -> BucketBounds:
        """Offset bounds of bucket ``(i, j)`` (the node counts of its partitions), against which
        its rows are checked on first read.
        """
        if (i, j) not in self._bounds:
            self._bounds[(i, j)] = BucketBounds(self, i, j)
        return self._bounds[(i, j)]

    def bucket_counts(self, edge_set: str | None = None) -> np.ndarray:
        """Edges per bucket.

        Parameters
        ----------
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`).

        Returns
        -------
        numpy.ndarray
            int64 (P, P); row ``i`` = source partition ``i``.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.bucket_counts().tolist()
        [[0, 1], [1, 3]]
        """
        p = self.num_partitions
        counts = np.zeros((p, p), np.int64)
        for (i, j), n in self.edge_set(edge_set).buckets.items():
            counts[i, j] = n
        return counts

    def check_hash(self, rel: str) -> None:
        """Check one file against its manifest sha256 when :attr:`verify_hashes` is set.

        Each file is hashed once (the read also brings it into the page cache for the mapping
        that follows).

        Parameters
        ----------
        rel : str
            The file's path relative to the graph directory.

        Raises
        ------
        FormatError
            The file's sha256 is not the manifest's.
        """
        if not self.verify_hashes or rel in self._hashed:
            return
        if self.location.sha256(rel) != self.manifest.files.get(rel, {}).get("sha256"):
            raise FormatError(f"{self.location.file(rel)}: sha256 mismatch (corrupted or "
                              f"modified file)")
        self._hashed.add(rel)

    # -- edges -------------------------------------------------------------------------------
    def bucket(self, i: int, j: int, edge_set: str | None = None) -> Bucket:
        """The bucket of edges from partition ``i`` to partition ``j``.

        Parameters
        ----------
        i, j : int
            Source and destination partition, in ``0..P-1``.
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`).

        Returns
        -------
        Bucket
            Its ``src``/``dst`` are int32 local offsets within partitions ``i``/``j`` (add
            ``partition_offsets()[i]`` for internal ids); ``rel`` and ``weight`` are None when
            not stored. An empty bucket has zero-length columns.

        Raises
        ------
        GraphsysError
            ``i`` or ``j`` out of range.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> b = g.bucket(1, 1)
        >>> b, b.src.tolist(), b.dst.tolist()
        (Bucket('default', 1, 1, edges=3), [0, 1, 2], [1, 2, 0])
        """
        p = self.num_partitions
        if not (0 <= i < p and 0 <= j < p):
            raise GraphsysError(f"bucket ({i}, {j}) out of range for {p} partitions")
        es = self.edge_set(edge_set)
        return Bucket(self, es.name, i, j, es.buckets.get((i, j), 0))

    def buckets(self, order: str | Iterable[tuple[int, int]] = "row-major",
                edge_set: str | None = None, *, skip_empty: bool = True) -> Iterator[Bucket]:
        """Iterate the buckets of an edge set in a given order.

        Parameters
        ----------
        order : {"row-major", "col-major"} or iterable of (int, int), default "row-major"
            By source partition, by destination partition, or an explicit sequence of
            ``(i, j)`` pairs.
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`).
        skip_empty : bool, default True
            Leave out buckets without edges.

        Yields
        ------
        Bucket

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> for b in g.buckets():
        ...     print(b)
        Bucket('default', 0, 1, edges=1)
        Bucket('default', 1, 0, edges=1)
        Bucket('default', 1, 1, edges=3)
        >>> [(b.i, b.j) for b in g.buckets("col-major", skip_empty=False)]
        [(0, 0), (1, 0), (0, 1), (1, 1)]
        """
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
        """Stream the edges of an edge set in internal ids, one record batch at a time.

        Memory is one batch, whatever the graph's size; batches come in row-major bucket order.

        Parameters
        ----------
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`).

        Yields
        ------
        src, dst : numpy.ndarray
            int64 internal ids.
        rel : numpy.ndarray or None
            int32 relation indices, or None.
        weight : numpy.ndarray or None
            float32 weights, or None.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> [(s.tolist(), d.tolist()) for s, d, _, _ in g.iter_edges()]
        [([0], [2]), ([1], [0]), ([1, 2, 3], [2, 3, 1])]
        """
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

    def edge_column(self, name: str, edge_set: str | None = None) -> Iterator[np.ndarray]:
        """Stream an edge column (a numeric column kept beside the edges at ingest, such as
        a rating's ``timestamp``), one record batch at a time, in the order of
        :meth:`iter_edges`: the ``k``-th array is row for row with the ``k``-th batch of
        edges.

        Parameters
        ----------
        name : str
            The edge column (``graphsys info`` lists an edge set's columns).
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`).

        Yields
        ------
        numpy.ndarray
            The column's values (int64, float32 or float64, as stored), zero-copy views of
            the mapped bucket files.

        Raises
        ------
        FormatError
            The edge set has no such column.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, pyarrow.parquet as pq, graphsys
        >>> d = tempfile.mkdtemp()
        >>> t = pa.table({"src": [1, 2, 3], "dst": [2, 3, 1], "ts": [30, 10, 20]})
        >>> pq.write_table(t, d + "/e.parquet")
        >>> g = graphsys.ingest(d + "/e.parquet", d + "/g", edge_columns=["ts"])
        >>> g.edge_set().columns
        [EdgeColumn(name='ts', dtype='int64')]
        >>> [(s.tolist(), ts.tolist()) for (s, _, _, _), ts in zip(g.iter_edges(),
        ...                                                      g.edge_column("ts"))]
        [([0, 1, 2], [30, 10, 20])]
        """
        es = self.edge_set(edge_set)
        es.column(name)
        for b in self.buckets("row-major", es.name):
            for eb in b.batches():
                yield eb.columns[name]

    def _rel_bases(self, es: EdgeSet) -> tuple[np.ndarray, np.ndarray]:
        """Per relation and partition, the global id base of source / destination nodes:
        int64 arrays (R, P)."""
        toff = self.type_offsets
        rels = self.relation_types
        src = np.stack([toff[r.lhs] + self.partition_offsets(r.lhs)[:-1] for r in rels])
        dst = np.stack([toff[r.rhs] + self.partition_offsets(r.rhs)[:-1] for r in rels])
        return src, dst

    def degrees(self, edge_set: str | None = None, direction: str = "out") -> np.ndarray:
        """Out-, in- or total degree of every node, streamed over the buckets.

        Parameters
        ----------
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`).
        direction : {"out", "in", "both"}, default "out"
            Which edges count.

        Returns
        -------
        numpy.ndarray
            int64 (N,), by internal id. Memory: one batch plus the result.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.degrees().tolist(), g.degrees(direction="in").tolist()
        ([1, 2, 1, 1], [1, 1, 2, 1])
        """
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
        """The out-neighbour lists of an edge set as CSR over internal ids.

        Built with two streaming passes over the buckets (degrees, then a scatter); memory is the
        output plus one record batch. When the graph directory holds a stored index
        (:func:`graphsys.ingest` with ``index``, or ``graphsys index``) and ``edge_ids`` is not
        asked for, the index is memory-mapped instead: no build, no anonymous memory.

        Parameters
        ----------
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`).
        transpose : bool, default False
            Build the CSC instead: the CSR of the reversed graph (:meth:`csc`).
        weights : bool, default True
            Include the edge weights when the edge set has them.
        edge_ids : bool, default False
            Also record each entry's position in the bucket stream.

        Returns
        -------
        CSR

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> c = g.csr()
        >>> c.indptr.tolist(), c.indices.tolist()
        ([0, 1, 3, 4, 5], [2, 0, 2, 3, 1])
        """
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
        """The stored ``kind`` index (``csr``, ``csc`` or ``push``) of an edge set, mapped and
        checked once per Graph (:func:`graphsys.storage.adjacency_index.map_index`), or None if
        the graph has none.
        """
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
        """Only the row offsets, int64 (N+1,), of the stored ``kind`` (``csr``/``csc``) index,
        mapped and checked in O(N) once per Graph
        (:func:`graphsys.storage.adjacency_index.map_offsets`): the degrees, without the O(M)
        check of the neighbour ids that :meth:`adjacency_index` makes. None if the graph has
        none."""
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

    def csc(self, edge_set: str | None = None, *, weights: bool = True,
            edge_ids: bool = False) -> CSR:
        """The in-neighbour lists of an edge set: the CSR of the reversed graph.

        ``csc().indices[indptr[v]:indptr[v + 1]]`` are the sources of ``v``'s in-edges. Parameters
        as :meth:`csr`.

        Returns
        -------
        CSR

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> c = g.csc()
        >>> c.indptr.tolist(), c.indices.tolist()
        ([0, 1, 2, 4, 5], [1, 3, 0, 1, 2])
        """
        return self.csr(edge_set, transpose=True, weights=weights, edge_ids=edge_ids)

    # -- nodes -------------------------------------------------------------------------------
    def _node_table(self, entity_type: str, partition: int) -> pa.Table:
        rel = node_file(entity_type, partition)
        path = self.location.file(rel)
        self.check_hash(rel)
        try:
            table = paipc.open_file(self.location.open(rel)).read_all()
            # lengths and buffer sizes against each other (metadata only): a garbled
            # length would otherwise reach slicing code that aborts the process
            table.validate()
        except (OSError, pa.ArrowException) as exc:
            raise FormatError(f"{path}: cannot read node partition ({exc})") from None
        check_node_table(table, self, entity_type, partition, path)
        return table

    def node_ids(self, entity_type: str | None = None, partition: int | None = None):
        """Original ids of the nodes, in internal-id order.

        Parameters
        ----------
        entity_type : str, optional
            The entity type; None for the only one.
        partition : int, optional
            Only the nodes of this partition.

        Returns
        -------
        numpy.ndarray or pyarrow.Array
            int64 NumPy array for integer ids; a pyarrow string array for string ids.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.node_ids().tolist(), g.node_ids(partition=0).tolist()
        ([20, 10, 30, 40], [20])
        """
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
        """Internal ids of original node ids.

        Parameters
        ----------
        ids : int, str or array-like
            Original ids (integers, or strings for a graph with string ids).
        entity_type : str, optional
            The entity type; None for the only one.

        Returns
        -------
        numpy.ndarray
            int64 internal ids (within the entity type), one per id.

        Raises
        ------
        GraphsysError
            An id that is not in the graph (naming it).

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.to_internal([10, 40]).tolist()
        [1, 3]
        >>> g.to_internal(50)
        Traceback (most recent call last):
            ...
        graphsys.errors.GraphsysError: node id 50 is not in the graph (entity type 'node')
        """
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
            q = _integer_ids(ids, f"ids of entity type {et.name!r} are integers")
            pos = kernels.lookup_ints(sorted_ids, q)
        else:
            try:
                q = pa.array([ids] if scalar else list(ids) if not isinstance(ids, pa.Array)
                             else ids, pa.large_string())
            except (pa.ArrowTypeError, pa.ArrowInvalid, TypeError):
                first = ids if scalar else next(
                    (v for v in ids if not isinstance(v, str)), ids)
                raise GraphsysError(f"ids of entity type {et.name!r} are strings; got "
                                    f"{first!r}") from None
            pos = kernels.lookup_strings(sorted_ids, q)
        if (pos < 0).any():
            bad = q[int(np.flatnonzero(pos < 0)[0])]
            bad = bad.as_py() if hasattr(bad, "as_py") else bad.item()
            raise GraphsysError(f"node id {bad!r} is not in the graph (entity type {et.name!r})")
        out = order[pos].astype(np.int64)
        return out

    def to_original(self, internal, entity_type: str | None = None):
        """Original ids of internal ids.

        Parameters
        ----------
        internal : int or array-like of int
            Internal ids (within the entity type).
        entity_type : str, optional
            The entity type; None for the only one.

        Returns
        -------
        numpy.ndarray or pyarrow.Array
            int64 NumPy array for integer ids; a pyarrow string array for string ids.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", num_partitions=2)
        >>> g.to_original([0, 1]).tolist()
        [20, 10]
        """
        ids = self.node_ids(entity_type)
        idx = _integer_ids(internal, "internal ids are integers")
        bad = (idx < 0) | (idx >= len(ids))
        if bad.any():
            raise GraphsysError(f"internal id {int(idx[bad][0])} is outside 0..{len(ids) - 1} "
                                f"(entity type {self.entity_type(entity_type).name!r})")
        idx = idx if np.ndim(internal) else idx[0]
        if isinstance(ids, np.ndarray):
            return ids[idx]
        return ids.take(pa.array(np.atleast_1d(idx)))

    def node_column(self, name: str, entity_type: str | None = None,
                    partition: int | None = None) -> np.ndarray:
        """A node column (features, labels or a mask), read into memory in internal-id order.

        Parameters
        ----------
        name : str
            The column, one of :meth:`node_columns`.
        entity_type : str, optional
            The entity type; None for the only one.
        partition : int, optional
            Only the rows of this partition's nodes.

        Returns
        -------
        numpy.ndarray
            Features float32 (N, dim); labels int64 (N,), -1 = unknown; masks bool (N,);
            strings (N,) of Python ``str`` (object dtype; :meth:`string_column` maps them
            instead).

        Raises
        ------
        GraphsysError
            No column of that name (listing the columns).

        Examples
        --------
        >>> import tempfile, numpy as np, graphsys
        >>> g = graphsys.from_numpy([0, 1, 2], [1, 2, 0], tempfile.mkdtemp() + "/g", num_nodes=3,
        ...                         node_columns={"feat": np.eye(3), "label": np.array([0, 1, -1])})
        >>> g.node_columns()
        ['feat', 'label']
        >>> g.node_column("label").tolist()
        [0, 1, -1]
        >>> g.node_column("feat").dtype, g.node_column("feat").shape
        (dtype('float32'), (3, 3))
        """
        et = self.entity_type(entity_type)
        col = next((c for c in et.columns if c.name == name), None)
        if col is None:
            raise GraphsysError(f"entity type {et.name!r} has no node column {name!r} "
                                f"(columns: {', '.join(c.name for c in et.columns) or 'none'})")
        if col.kind == "string":
            return self.string_column(name, et.name).to_numpy(zero_copy_only=False)
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
        """A node column stored in a file of its own (:mod:`graphsys.storage.node_columns`) as a
        read-only view of the mapped file, in its stored dtype: features (N, dim)
        float16/float32, labels (N,) int64. Other columns are read into memory
        (:meth:`node_column`).
        """
        from graphsys.storage.column_file import map_column
        from graphsys.storage.format import node_column_file

        et = self.entity_type(entity_type)
        col = next((c for c in et.columns if c.name == name), None)
        if col is None or not col.dtype or col.kind == "string":
            return self.node_column(name, et.name)
        rel = node_column_file(et.name, name)
        return map_column(self.location.file(rel), np.dtype(col.dtype),
                          et.num_nodes, col.dim if col.kind == "features" else 0,
                          what="node column", location=self.location, rel=rel)

    def mapped_features(self, name: str, entity_type: str | None = None):
        """A features node column as read-only views of the mapped files, wherever it is
        stored: a file of its own (:meth:`mapped_node_column`) or the node table.

        Parameters
        ----------
        name : str
            A node column of kind ``features``.
        entity_type : str, optional
            The entity type; None for the only one.

        Returns
        -------
        numpy.ndarray or PartitionedRows
            (N, dim) in the stored dtype (float16/float32), in type-local internal-id
            order: an array for a column file or a node table of one record batch, else a
            :class:`~graphsys.storage.partitioned_rows.PartitionedRows` of one view per node
            partition (rows gathered by :func:`~graphsys.sampling.features.feature_rows`).
            Nothing is read into memory on a local graph; a remote one's node files are
            read into buffers.

        Raises
        ------
        GraphsysError
            No features column of that name.
        FormatError
            A node file whose rows, column type or value buffer do not match the manifest.

        Examples
        --------
        >>> import tempfile, numpy as np, graphsys
        >>> from graphsys.sampling.features import feature_rows
        >>> feat = np.arange(8, dtype=np.float32).reshape(4, 2)
        >>> g = graphsys.from_numpy([0, 1, 2], [1, 2, 3], tempfile.mkdtemp() + "/g",
        ...                         num_nodes=4, num_partitions=2, node_columns={"feat": feat})
        >>> rows = g.mapped_features("feat")
        >>> rows.shape
        (4, 2)
        >>> np.array_equal(feature_rows(rows, [3, 0]).numpy(), g.node_column("feat")[[3, 0]])
        True
        """
        from graphsys.storage.partitioned_rows import PartitionedRows

        et = self.entity_type(entity_type)
        col = next((c for c in et.columns if c.name == name), None)
        if col is None or col.kind != "features":
            feats = [c.name for c in et.columns if c.kind == "features"]
            raise GraphsysError(f"entity type {et.name!r} has no features node column "
                                f"{name!r} (features columns: {', '.join(feats) or 'none'})")
        if col.dtype:
            return self.mapped_node_column(name, et.name)
        blocks = []
        for p in range(self.num_partitions):
            path = self.location.file(node_file(et.name, p))
            # rows, type (fixed-size list of float32, col.dim wide) and nulls: checked
            for chunk in self._node_table(et.name, p).column(name).chunks:
                try:
                    chunk.validate()  # buffers large enough for offset + length rows
                    values = chunk.flatten().to_numpy(zero_copy_only=True)
                except (pa.ArrowException, ValueError) as exc:
                    raise FormatError(f"{path}: node column {name!r} unreadable ({exc})"
                                      ) from None
                if values.size != len(chunk) * col.dim:
                    raise FormatError(f"{path}: node column {name!r} holds {values.size} "
                                      f"values, {len(chunk)} rows of {col.dim} need "
                                      f"{len(chunk) * col.dim}")
                if len(chunk):
                    blocks.append(values.reshape(len(chunk), col.dim))
        if sum(len(b) for b in blocks) != et.num_nodes:
            raise FormatError(f"{self.location.file(node_file(et.name, 0))}: node column "
                              f"{name!r} has {sum(len(b) for b in blocks)} rows, entity type "
                              f"{et.name!r} has {et.num_nodes} nodes")
        if not blocks:
            return np.zeros((0, col.dim), np.float32)
        return blocks[0] if len(blocks) == 1 else PartitionedRows(blocks)

    def string_column(self, name: str, entity_type: str | None = None) -> pa.Array:
        """A string node column (UTF-8 text such as item titles), mapped with no copy.

        Parameters
        ----------
        name : str
            A node column of kind ``string``.
        entity_type : str, optional
            The entity type; None for the only one.

        Returns
        -------
        pyarrow.LargeStringArray
            One string per node in type-local internal-id order (``arr[i]`` is node ``i``'s;
            ``arr.take(ids)`` gathers some): a view of the mapped file, checked in full
            (offsets, UTF-8) when first mapped. A node the node table did not list has
            ``""``.

        Raises
        ------
        GraphsysError
            No string column of that name.
        FormatError
            A file whose schema, length or contents are not the manifest's.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, graphsys
        >>> nodes = pa.table({"id": [1, 2, 3], "title": ["Amélie", "Léon", "三"]})
        >>> g = graphsys.from_arrow(pa.table({"src": [1, 2], "dst": [2, 3]}),
        ...                         tempfile.mkdtemp() + "/g", nodes=nodes)
        >>> titles = g.string_column("title")
        >>> titles.take(g.to_internal([3, 1])).to_pylist()
        ['三', 'Amélie']
        """
        from graphsys.storage.format import node_column_file

        et = self.entity_type(entity_type)
        col = next((c for c in et.columns if c.name == name), None)
        if col is None or col.kind != "string":
            strings = [c.name for c in et.columns if c.kind == "string"]
            raise GraphsysError(f"entity type {et.name!r} has no string node column {name!r} "
                                f"(string columns: {', '.join(strings) or 'none'})")
        key = (et.name, name)
        if key in self._strings:
            return self._strings[key]
        rel = node_column_file(et.name, name)
        path = self.location.file(rel)
        self.check_hash(rel)
        try:
            reader = paipc.open_file(self.location.open(rel))
            field = reader.schema.field(0) if reader.schema.names == [name] else None
            if field is None or field.type != pa.large_string() or (
                    reader.num_record_batches != 1):
                raise FormatError(f"{path}: needs one record batch of one large_string "
                                  f"column {name!r}")
            arr = reader.get_batch(0).column(0)
            arr.validate(full=True)
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
            raise FormatError(f"{path}: unreadable string column ({exc})") from None
        if len(arr) != et.num_nodes or arr.null_count:
            raise FormatError(f"{path}: {len(arr)} strings ({arr.null_count} null), entity "
                              f"type {et.name!r} has {et.num_nodes} nodes")
        self._strings[key] = arr
        return arr

    def node_columns(self, entity_type: str | None = None) -> list[str]:
        """Names of the node columns of an entity type (None: the only one); see
        :meth:`node_column`."""
        return [c.name for c in self.entity_type(entity_type).columns]

    # -- subgraphs (graphsys.storage.subgraph) ------------------------------------------------

    def subgraph(self, nodes=None, out: str | Path | None = None, *, where=None,
                 internal: bool = False, edge_sets=None, dir: str | Path | None = None,
                 **options) -> Graph:
        """The subgraph induced by a node set: the nodes (isolated ones too, with their
        original ids and node columns) and every edge between two of them (weights,
        relations, edge columns kept), as a new graph directory
        (:mod:`graphsys.storage.subgraph`).

        Parameters
        ----------
        nodes : array-like, optional
            Original ids (internal ids when ``internal``), or a bool mask (N,) by internal id.
        out : str or Path, optional
            The graph directory to create; default a temporary one (under ``dir``),
            removed when the returned Graph is garbage collected.
        where : pyarrow.compute.Expression or callable, optional
            Keep the nodes whose row of the node table (``id`` and the node columns)
            satisfies it; a callable gets the table and returns one bool per node. With
            ``nodes``: the nodes of ``nodes`` that satisfy it.
        internal : bool, default False
            ``nodes`` are internal ids.
        edge_sets : str or list of str, optional
            The edge sets to keep (default all).
        dir : str or Path, optional
            Where the temporary directory goes when ``out`` is None.
        **options
            :class:`~graphsys.storage.ingest.IngestOptions` fields (``num_partitions``,
            ``partitioner``, ``memory_limit``, ...).

        Returns
        -------
        Graph

        Examples
        --------
        >>> import tempfile, numpy as np, pyarrow.compute as pc, graphsys
        >>> g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 0], tempfile.mkdtemp() + "/g",
        ...                         num_nodes=5, node_columns={"label": np.array([0, 1, 1, 0, 1])})
        >>> h = g.subgraph([0, 1, 4])
        >>> h.node_ids().tolist(), h.num_edges(), h.node_column("label").tolist()
        ([0, 1, 4], 1, [0, 1, 1])
        >>> g.subgraph(where=pc.field("label") == 1).node_ids().tolist()
        [1, 2, 4]
        """
        from graphsys.storage import subgraph as sub

        keep = sub.node_mask(self, nodes, where, internal=internal)
        return sub.open_result(sub.write_subgraph(self, keep, out, edge_sets=edge_sets,
                                                  dir=dir, options=options), open_graph)

    def edge_subgraph(self, edges=None, out: str | Path | None = None, *, where=None,
                      internal: bool = False, edge_set: str | None = None,
                      dir: str | Path | None = None, **options) -> Graph:
        """The subgraph of some edges and the nodes they join (``nx.edge_subgraph``), as a
        new graph directory (:mod:`graphsys.storage.subgraph`).

        Parameters
        ----------
        edges : array-like, optional
            ``(u, v)`` pairs of original ids (internal ids when ``internal``): every stored
            edge ``u -> v`` (and ``v -> u`` in an undirected edge set) is kept.
        out : str or Path, optional
            The graph directory to create; default a temporary one (see :meth:`subgraph`).
        where : pyarrow.compute.Expression or callable, optional
            Keep the edges whose row (``src``, ``dst`` original ids, ``weight``, ``rel``
            relation name, edge columns) satisfies it. With ``edges``: both must hold.
        internal : bool, default False
            ``edges`` hold internal ids.
        edge_set : str, optional
            The edge set (default: see :meth:`edge_set`); the result has only it.
        dir : str or Path, optional
            Where the temporary directory goes when ``out`` is None.
        **options
            :class:`~graphsys.storage.ingest.IngestOptions` fields.

        Returns
        -------
        Graph

        Examples
        --------
        >>> import tempfile, pyarrow.compute as pc, graphsys
        >>> g = graphsys.from_numpy([0, 1, 2], [1, 2, 3], tempfile.mkdtemp() + "/g",
        ...                         weight=[0.5, 2.0, 3.0])
        >>> h = g.edge_subgraph(where=pc.field("weight") > 1)
        >>> h.node_ids().tolist(), [w.tolist() for _, _, _, w in h.iter_edges()]
        ([1, 2, 3], [[2.0, 3.0]])
        """
        from graphsys.storage import subgraph as sub

        es = self.edge_set(edge_set)
        keep = sub.edge_mask_fn(self, edges, where, internal=internal, edge_set=es.name)
        return sub.open_result(sub.write_subgraph(self, None, out, keep_edges=keep,
                                                  edge_sets=es.name, dir=dir,
                                                  options=options), open_graph)

    def ego_graph(self, center, radius: int = 1, out: str | Path | None = None, *,
                  undirected: bool = False, edge_set: str | None = None,
                  internal: bool = False, dir: str | Path | None = None, **options) -> Graph:
        """The subgraph induced by the nodes within ``radius`` hops of ``center``
        (``nx.ego_graph``), as a new graph directory (:mod:`graphsys.storage.subgraph`).

        Parameters
        ----------
        center : int, str or array-like
            An original node id (internal when ``internal``), or several: the union of
            their neighbourhoods.
        radius : int, default 1
            Hops.
        out : str or Path, optional
            The graph directory to create; default a temporary one (see :meth:`subgraph`).
        undirected : bool, default False
            In a directed edge set, follow edges either way (else out-edges only, as
            NetworkX does for a ``DiGraph``).
        edge_set : str, optional
            The edge set whose hops count; every edge set is kept, induced.
        internal : bool, default False
            ``center`` holds internal ids.
        dir : str or Path, optional
            Where the temporary directory goes when ``out`` is None.
        **options
            :class:`~graphsys.storage.ingest.IngestOptions` fields.

        Returns
        -------
        Graph

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([0, 1, 2, 3], [1, 2, 3, 4], tempfile.mkdtemp() + "/g")
        >>> g.ego_graph(2).node_ids().tolist(), g.ego_graph(2, undirected=True).node_ids().tolist()
        ([2, 3], [1, 2, 3])
        """
        from graphsys.storage import subgraph as sub

        keep = sub.ego_mask(self, center, radius, undirected=undirected, edge_set=edge_set,
                            internal=internal)
        return sub.open_result(sub.write_subgraph(self, keep, out, dir=dir, options=options),
                               open_graph)


def open_graph(path: str | Path, *, filesystem: pafs.FileSystem | None = None) -> Graph:
    """Open a stored graph directory.

    Reads and validates the manifest (as untrusted input:
    :func:`~graphsys.storage.format.validate_manifest`) and checks that every file it needs is
    listed and exists with its recorded size. Bucket and node files get their structural
    checks when first read (:mod:`graphsys.storage.structure`); ``graphsys verify``
    (:func:`~graphsys.storage.verify.verify_graph`) also checks their hashes. Local
    directories are memory-mapped; other filesystems are read into buffers as engines touch
    them (:mod:`graphsys.storage.location`), with the same checks.

    Parameters
    ----------
    path : str or Path
        The graph directory, or a filesystem URI (``s3://bucket/g``, ``gs://...``,
        ``hdfs://...``, ``file:///data/g``).
    filesystem : pyarrow.fs.FileSystem, optional
        A filesystem in which ``path`` is a path.

    Returns
    -------
    Graph

    Raises
    ------
    FormatError
        A missing, truncated or inconsistent graph directory (naming the file).

    Examples
    --------
    >>> import tempfile, graphsys
    >>> d = tempfile.mkdtemp() + "/g"
    >>> _ = graphsys.from_numpy([0, 1, 2], [1, 2, 0], d)
    >>> g = graphsys.open_graph(d)
    >>> g.num_nodes(), g.num_edges()
    (3, 3)
    >>> graphsys.open_graph(d + "-missing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    graphsys.errors.FormatError: ...
    """
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


def _integer_ids(values, what: str) -> np.ndarray:
    """``values`` as int64 (1-D): integers, or floats with no fractional part; a bool, a
    fractional or non-finite float, a string or an integer beyond int64 is a one-line
    :class:`GraphsysError` starting with ``what`` (never truncated or wrapped around)."""
    try:
        arr = np.atleast_1d(np.asarray(values))
    except (TypeError, ValueError, OverflowError):
        arr = np.atleast_1d(np.asarray(values, dtype=object))
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        if arr.dtype.kind == "O" and all(isinstance(v, (int, np.integer)) and
                                         not isinstance(v, (bool, np.bool_)) for v in arr):
            if all(-2**63 <= int(v) < 2**63 for v in arr):
                return arr.astype(np.int64)
        first = next((v for v in arr.tolist() if not isinstance(v, int) or isinstance(v, bool)
                      or not -2**63 <= v < 2**63), arr.tolist()[0] if len(arr) else values)
        raise GraphsysError(f"{what}; got {first!r}")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (np.abs(arr) >= 2.0**63)
        if bad.any():
            raise GraphsysError(f"{what}; got {arr[bad][0].item()!r}")
    if arr.dtype.kind == "u" and len(arr) and int(arr.max()) >= 2**63:
        raise GraphsysError(f"{what}; got {int(arr.max())} (beyond int64)")
    return arr.astype(np.int64)
