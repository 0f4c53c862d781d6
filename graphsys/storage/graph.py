"""The Graph API: every engine reads a stored graph through :func:`open_graph`.

Node numbering. Each node has, within its entity type, a partition ``p`` and a local offset
``l`` (its row in the partition: sorted by original id at ingest, appended nodes after). Its
*type-global* id is ``partition_offsets(t)[p] + l``; across all types, the *global* id adds
``type_offsets[t]`` (types in manifest order). An append moves the internal ids of later
partitions up (docs/growing.md, "Node ids across appends").

:class:`Graph` holds the contract (its docstrings) and the per-graph state (checks done,
mappings kept); its methods are thin calls into the modules that do each job:
:mod:`~graphsys.storage.schema` (the manifest's schema and counts, its base class),
:mod:`~graphsys.storage.edges` (buckets, edge streams, degrees),
:mod:`~graphsys.storage.csr` (CSR/CSC built or mapped from the stored indexes),
:mod:`~graphsys.storage.node_reads` (node ids and columns) and
:mod:`~graphsys.storage.subgraph_methods` (subgraphs, a second base class).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from numbers import Integral
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from graphsys.errors import FormatError, GraphsysError
from graphsys.plugins import GRAPH_VIEWS
from graphsys.storage import csr, edges, node_reads
from graphsys.storage.csr import CSR
from graphsys.storage.edge_views import EdgeSets, UnionBucket
from graphsys.storage.edges import Bucket
from graphsys.storage.format import Manifest, read_manifest
from graphsys.storage.location import GraphLocation
from graphsys.storage.lock import describe_change, manifest_digest
from graphsys.storage.schema import GraphSchema
from graphsys.storage.structure import BucketBounds, check_listed, check_node_rows
from graphsys.storage.subgraph_methods import SubgraphMethods


class Graph(GraphSchema, SubgraphMethods):
    """A stored graph, opened read-only by :func:`open_graph` (or returned by
    :func:`graphsys.ingest` and the ``from_*`` functions).

    Nodes of each entity type are split into ``num_partitions`` partitions and the edges of
    each edge set into the ``P x P`` buckets of PyTorch-BigGraph's layout [1]_: bucket
    ``(i, j)`` holds the edges from partition ``i`` to partition ``j``, sorted, in a
    memory-mapped Arrow file. The schema and counts, answered from the manifest alone, come
    from its base class :class:`~graphsys.storage.schema.GraphSchema`.

    Node ids. Each node keeps its *original* id (an integer or a string, as ingested). Engines
    number nodes ``0..N-1``: partition by partition, and within a partition in ascending
    original-id order (the *internal* id; types one after the other in manifest order).
    :meth:`to_internal` and :meth:`to_original` map between the two; CSR/CSC, degrees and
    every engine's results are by internal id.

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
    ...                         tempfile.mkdtemp() + "/g", partitions=2)
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
        super().__init__(manifest)
        self.location = location or GraphLocation(path)
        self.path = self.location.root if self.location.local else self.location.uri
        #: Bucket files whose schema and rows, and record batches whose offsets, passed the
        #: structural checks of :mod:`graphsys.storage.structure` (each runs once).
        self._checked_files: set[tuple[str, int, int]] = set()
        self._checked_batches: set[tuple[str, int, int, int]] = set()
        self._bounds: dict[tuple[int, int], BucketBounds] = {}
        #: Kept per graph by the job modules: mapped indexes and offsets (:mod:`.csr`),
        #: the sorted ids behind :meth:`to_internal`, the original ids behind
        #: :meth:`to_original`, checked string columns (:mod:`.node_reads`) and the ego
        #: searches' adjacency and scratch (:mod:`.subgraph`).
        self._mapped_indexes: dict[tuple, object] = {}
        self._id_index: dict[str, tuple[object, np.ndarray]] = {}
        self._original_ids: dict[str, object] = {}
        self._strings: dict[tuple[str, str], pa.Array] = {}
        self._searches: dict = {}
        #: When True, each bucket, index and node file is checked against its manifest
        #: sha256 when first read (:meth:`check_hash`): the hash check of ``graphsys run``,
        #: done on the files a run reads, as it first reads them.
        self.verify_hashes = False
        self._hashed: set[str] = set()
        #: The identity of each file as first seen (at open, else at its first read): a file
        #: replaced since by another writer's commit, even of the same size, is refused.
        self._file_ids: dict[str, object] = {}

    def __repr__(self) -> str:
        return (f"Graph({str(self.path)!r}, nodes={self.num_nodes()}, edges="
                f"{ {k: v.num_edges for k, v in self.manifest.edge_sets.items()} }, "
                f"partitions={self.num_partitions})")

    def _reopen(self, manifest: Manifest) -> None:
        """Read the graph as ``manifest``, the version a write through this object (a change
        set of :mod:`~graphsys.storage.changes`, :func:`~graphsys.storage.compact.compact`)
        just committed: every check, mapping and view kept from the old version is dropped,
        as :func:`open_graph` would start, so that every reader of this object sees the
        change and a further write through it is not taken for another writer's."""
        location, verify = self.location, self.verify_hashes
        self.__dict__.clear()  # every cache derived from the old version, the views' too
        Graph.__init__(self, location.root, manifest, location)
        self.verify_hashes = verify

    def bucket_bounds(self, i: int, j: int) -> BucketBounds:
        """Offset bounds of bucket ``(i, j)`` (the node counts of its partitions), against which
        its rows are checked on first read.
        """
        if (i, j) not in self._bounds:
            self._bounds[(i, j)] = BucketBounds(self, i, j)
        return self._bounds[(i, j)]

    def check_hash(self, rel: str) -> None:
        """Check one file against the manifest before it is read: its size and which copy of
        the file it is (a stat on each read of a local graph, which tells a graph another
        writer has since replaced, even by files of the same sizes, from a damaged one) and,
        when :attr:`verify_hashes` is set, its sha256.

        Each file is hashed once (the read also brings it into the page cache for the mapping
        that follows).

        Parameters
        ----------
        rel : str
            The file's path relative to the graph directory.

        Raises
        ------
        FormatError
            The file's sha256 (or, checked on every graph, its size) is not the manifest's.
        GraphsysError
            The file is not the manifest's because another writer committed a new version
            of the graph since it was opened.
        """
        if rel in self.manifest.files and self.location.local:  # a stat: every read
            try:
                found = check_size(self.location, rel, self.manifest.files[rel])
            except FormatError:
                self._check_unchanged()
                raise
            if self._file_ids.setdefault(rel, found) != found:  # replaced, of the same size
                self._check_unchanged()
                self._file_ids[rel] = found  # replaced alike, the manifest unchanged
        if not self.verify_hashes or rel in self._hashed:
            return
        if self.location.sha256(rel) != self.manifest.files.get(rel, {}).get("sha256"):
            raise FormatError(f"{self.location.file(rel)}: sha256 mismatch (corrupted or "
                              f"modified file)")
        self._hashed.add(rel)

    def _check_unchanged(self) -> None:
        """Raise a one-line :class:`GraphsysError` if the directory's manifest is no longer
        the version this object read: another writer committed since it was opened."""
        current = read_manifest(self.location)
        if manifest_digest(current) != manifest_digest(self.manifest):
            raise GraphsysError(f"{self.path}: changed by another writer since it was opened "
                                f"({describe_change(self.manifest, current)}); open it again"
                                ) from None

    # -- edges -------------------------------------------------------------------------------
    def bucket(self, i: int, j: int, edge_set: EdgeSets = None) -> Bucket:
        """The bucket of edges from partition ``i`` to partition ``j``.

        Parameters
        ----------
        i, j : int
            Source and destination partition, in ``0..P-1``.
        edge_set : str or sequence of str, optional
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
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> b = g.bucket(1, 1)
        >>> b, b.src.tolist(), b.dst.tolist()
        (Bucket('default', 1, 1, edges=3), [0, 1, 2], [1, 2, 0])
        """
        p = self.num_partitions
        if not all(isinstance(x, Integral) and not isinstance(x, bool) and 0 <= x < p
                   for x in (i, j)):  # "1" was a TypeError, True read as partition 1
            raise GraphsysError(f"bucket ({i!r}, {j!r}) out of range for {p} partitions")
        i, j = int(i), int(j)
        es = self._stored(edge_set)  # one stored name as stored: a change set's pairs too
        if es.members:  # several edge sets read as one
            return UnionBucket(self, es, i, j)
        return Bucket(self, es.name, i, j, es.buckets.get((i, j), 0))

    def buckets(self, order: str | Iterable[tuple[int, int]] = "row-major",
                edge_set: EdgeSets = None, *, skip_empty: bool = True) -> Iterator[Bucket]:
        """Iterate the buckets of an edge set in a given order.

        Parameters
        ----------
        order : {"row-major", "col-major"} or iterable of (int, int), default "row-major"
            By source partition, by destination partition, or an explicit sequence of
            ``(i, j)`` pairs.
        edge_set : str or sequence of str, optional
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
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> for b in g.buckets():
        ...     print(b)
        Bucket('default', 0, 1, edges=1)
        Bucket('default', 1, 0, edges=1)
        Bucket('default', 1, 1, edges=3)
        >>> [(b.i, b.j) for b in g.buckets("col-major", skip_empty=False)]
        [(0, 0), (1, 0), (0, 1), (1, 1)]
        """
        es = self._stored(edge_set)  # as Graph.bucket: a change set's buckets too
        for i, j in edges.bucket_pairs(order, self.num_partitions):
            b = self.bucket(i, j, es.name)
            if b.num_edges or not skip_empty:
                yield b

    def iter_edges(self, edge_set: EdgeSets = None) -> Iterator[tuple[np.ndarray, ...]]:
        """Stream the edges of an edge set in internal ids, a run of at most
        :data:`~graphsys.storage.edges.STREAM_ROWS` rows of one record batch at a time.

        Memory is one run, whatever the graph's size; runs come in row-major bucket order.

        Parameters
        ----------
        edge_set : str or sequence of str, optional
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
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> [(s.tolist(), d.tolist()) for s, d, _, _ in g.iter_edges()]
        [([0], [2]), ([1], [0]), ([1, 2, 3], [2, 3, 1])]
        """
        yield from edges.iter_edges(self, self.edge_set(edge_set))

    def edge_column(self, name: str, edge_set: EdgeSets = None) -> Iterator[np.ndarray]:
        """Stream an edge column (a numeric column kept beside the edges at ingest, such as
        a rating's ``timestamp``), one run of a record batch at a time, in the order of
        :meth:`iter_edges`: the ``k``-th array is row for row with the ``k``-th item of
        edges.

        Parameters
        ----------
        name : str
            The edge column (``graphsys info`` lists an edge set's columns).
        edge_set : str or sequence of str, optional
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
        yield from edges.edge_column(self, name, self.edge_set(edge_set))

    def degrees(self, edge_set: EdgeSets = None, direction: str = "out") -> np.ndarray:
        """Out-, in- or total degree of every node: from the row offsets of the stored
        ``csr`` (out), ``csc`` (in) or both indexes where the graph has them
        (:meth:`index_offsets`, O(N)), else streamed over the buckets.

        Parameters
        ----------
        edge_set : str or sequence of str, optional
            The edge set (default: see :meth:`edge_set`).
        direction : {"out", "in", "both"}, default "out"
            Which edges count: out-edges, in-edges, or both (NetworkX's ``G.degree`` of a
            ``DiGraph``). An undirected edge set is stored both ways, so its ``out`` (and
            ``in``) degree is NetworkX's ``G.degree`` of a ``Graph`` but for a self-loop,
            stored once and counted once (NetworkX counts it twice;
            :func:`graphsys.measures.degree_stats` does too), and ``both`` counts every
            edge twice.

        Returns
        -------
        numpy.ndarray
            int64 (N,), by internal id. Memory: one batch plus the result.

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.degrees().tolist(), g.degrees(direction="in").tolist()
        ([1, 2, 1, 1], [1, 1, 2, 1])
        """
        kinds = {"out": ("csr",), "in": ("csc",), "both": ("csr", "csc")}.get(direction, ())
        offsets = [self.index_offsets(edge_set, kind) for kind in kinds]
        if offsets and all(o is not None for o in offsets):
            deg = np.diff(offsets[0]).astype(np.int64)
            for o in offsets[1:]:
                deg += np.diff(o)
            return deg
        return edges.degrees(self, edge_set, direction)

    def csr(self, edge_set: EdgeSets = None, *, transpose: bool = False,
            weights: bool = True, edge_ids: bool = False) -> CSR:
        """The out-neighbour lists of an edge set as CSR over internal ids.

        Built reading every bucket once (:func:`graphsys.storage.csr.build_rows`): memory is
        the output plus the record batches of one partition's rows, sized first against the
        RAM available (over it, refused in one line naming the ``graphsys index`` command
        of the index mapped instead). When the graph directory
        holds a stored index (:func:`graphsys.ingest` with ``index``, or ``graphsys index``)
        and ``edge_ids`` is not asked for, the index is memory-mapped instead: no build, no
        anonymous memory.

        Parameters
        ----------
        edge_set : str or sequence of str, optional
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
            Neighbour ids int32 where every node id fits (int64 from 2**31 nodes).

        Raises
        ------
        GraphsysError
            A build over the RAM available now (one line).

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> c = g.csr()
        >>> c.indptr.tolist(), c.indices.tolist()
        ([0, 1, 3, 4, 5], [2, 0, 2, 3, 1])
        """
        if not edge_ids:
            mapped = csr.mapped_index(self, edge_set, "csc" if transpose else "csr")
            if mapped is not None:
                return CSR(mapped.indptr, mapped.indices, mapped.weight if weights else None)
        return csr.build_rows(self, edge_set, "in" if transpose else "out", weights, edge_ids)

    def adjacency_index(self, edge_set: EdgeSets = None, kind: str = "csr"):
        """The stored ``kind`` index (``csr``, ``csc`` or ``push``) of an edge set, mapped and
        checked once per Graph (:func:`graphsys.storage.csr.map_index`), or None if
        the graph has none.
        """
        return csr.mapped_index(self, edge_set, kind)

    def view(self, kind: str, edge_set: EdgeSets = None, **options):
        """The in-memory ``kind`` view of an edge set, from the view layer
        (:func:`graphsys.views.view`, which holds the contract and the options): mapped from
        the stored index where the graph has one, else built within one memory budget
        (refused in one line naming the ``graphsys index`` command that stores the index)
        and kept in this opened graph's one cache, so a second call returns the same object.

        Parameters
        ----------
        kind : {"out", "in", "sym", "oriented", "temporal", "typed"}
            Out- (CSR) or in-neighbour (CSC) rows; the undirected simple rows; those rows
            renumbered by degree, each edge in the row of its lower end; every node's
            events in time order; each relation type's out and in rows.
        edge_set : str or sequence of str, optional
            The edge set (default: see :meth:`edge_set`).
        **options
            ``memory_limit``, ``weights``, ``directions``, ``sort``, ``beside``
            (:func:`graphsys.views.view`).

        Returns
        -------
        CSR, Oriented, TemporalAdjacency or Typed
            :class:`~graphsys.storage.csr.CSR` rows (``out``, ``in``, ``sym``), a
            :class:`~graphsys.views.orient.Oriented` graph, a
            :class:`~graphsys.storage.temporal_index.TemporalAdjacency` or a
            :class:`~graphsys.views.Typed`.

        Raises
        ------
        GraphsysError
            An unknown kind, or a build over the memory budget (one line each).

        Examples
        --------
        >>> import tempfile, graphsys
        >>> g = graphsys.from_numpy([10, 10, 20], [20, 30, 30], tempfile.mkdtemp() + "/g")
        >>> g.view("out").indices.tolist(), g.view("in").indptr.tolist()
        ([1, 2, 2], [0, 0, 1, 3])
        >>> g.view("sym").indices.tolist()
        [1, 2, 0, 2, 0, 1]
        >>> g.view("sym") is g.view("sym")  # kept on the opened graph
        True
        """
        return GRAPH_VIEWS.get(kind)(self, kind, edge_set=edge_set, **options)

    def index_offsets(self, edge_set: EdgeSets = None, kind: str = "csr"
                      ) -> np.ndarray | None:
        """Only the row offsets, int64 (N+1,), of the stored ``kind`` (``csr``/``csc``) index,
        mapped and checked in O(N) once per Graph
        (:func:`graphsys.storage.csr.map_offsets`): the degrees, without the O(M)
        check of the neighbour ids that :meth:`adjacency_index` makes. None if the graph has
        none."""
        return csr.mapped_offsets(self, edge_set, kind)

    def csc(self, edge_set: EdgeSets = None, *, weights: bool = True,
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
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> c = g.csc()
        >>> c.indptr.tolist(), c.indices.tolist()
        ([0, 1, 2, 4, 5], [1, 3, 0, 1, 2])
        """
        return self.csr(edge_set, transpose=True, weights=weights, edge_ids=edge_ids)

    # -- nodes -------------------------------------------------------------------------------
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
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.node_ids().tolist(), g.node_ids(partition=0).tolist()
        ([20, 10, 30, 40], [20])
        """
        return node_reads.node_ids(self, entity_type, partition)

    def to_internal(self, ids, entity_type: str | None = None) -> np.ndarray:
        """Internal ids of original node ids.

        Parameters
        ----------
        ids : int, str or array-like
            Original ids (integers, or strings for a graph with string ids, read as the
            ingest reads them: integer text is canonical, ``"01"`` is node ``"1"``).
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
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.to_internal([10, 40]).tolist()
        [1, 3]
        >>> g.to_internal(50)
        Traceback (most recent call last):
            ...
        graphsys.errors.GraphsysError: node id 50 is not in the graph (entity type 'node')
        """
        return node_reads.to_internal(self, ids, entity_type)

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
        ...                         tempfile.mkdtemp() + "/g", partitions=2)
        >>> g.to_original([0, 1]).tolist()
        [20, 10]
        """
        return node_reads.to_original(self, internal, entity_type)

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
        return node_reads.node_column(self, name, entity_type, partition)

    def mapped_node_column(self, name: str, entity_type: str | None = None) -> np.ndarray:
        """A node column stored in a file of its own (:mod:`graphsys.storage.node_columns`) as a
        read-only view of the mapped file, in its stored dtype: features (N, dim)
        float16/float32, labels (N,) int64. Other columns are read into memory
        (:meth:`node_column`).
        """
        return node_reads.mapped_node_column(self, name, entity_type)

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
        ...                         num_nodes=4, partitions=2, node_columns={"feat": feat})
        >>> rows = g.mapped_features("feat")
        >>> rows.shape
        (4, 2)
        >>> np.array_equal(feature_rows(rows, [3, 0]).numpy(), g.node_column("feat")[[3, 0]])
        True
        """
        return node_reads.mapped_features(self, name, entity_type)

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
        return node_reads.string_column(self, name, entity_type)

    def node_columns(self, entity_type: str | None = None) -> list[str]:
        """Names of the node columns of an entity type (None: the only one); see
        :meth:`node_column`."""
        return [c.name for c in self.entity_type(entity_type).columns]

    def _open_written(self, path: Path) -> Graph:
        """Open a graph directory this one wrote (a subgraph: :class:`SubgraphMethods`)."""
        return open_graph(path)


def check_size(loc: GraphLocation, rel: str, entry: dict) -> object:
    """Raise a one-line :class:`FormatError` unless the file ``rel`` of ``loc`` exists with
    the size its manifest ``entry`` lists; return its identity
    (:meth:`~graphsys.storage.location.GraphLocation.version`)."""
    found = loc.version(rel)
    if found is None:
        raise FormatError(f"{loc.file(rel)}: {loc.not_a_file(rel)} (listed in the manifest)")
    if found[0] != entry.get("bytes"):
        raise FormatError(f"{loc.file(rel)}: size {found[0]} bytes, manifest says "
                          f"{entry.get('bytes')} (truncated or modified)")
    return found[1]


def open_graph(path: str | Path, *, filesystem: pafs.FileSystem | None = None,
               until=None, time_column: str = "timestamp", since=None) -> Graph:
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
    until : int, float, str or datetime, optional
        Open the graph as of this time: only the edges whose ``time_column`` is ``<=
        until`` (a :class:`~graphsys.storage.time_view.TimeView`, which every engine reads
        as the graph).
    time_column : str, default "timestamp"
        The edge column ``until`` and ``since`` bound.
    since : int, float, str or datetime, optional
        Only the edges whose ``time_column`` is ``> since`` (strictly after; alone or with
        ``until``: the window ``(since, until]``, so ``since=b`` starts where ``until=b``
        ends and consecutive windows tile time). ``since > until`` is refused.

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
    files = {rel: check_size(loc, rel, entry) for rel, entry in manifest.files.items()}
    graph = Graph(loc.root, manifest, loc)
    graph._file_ids.update(files)
    check_node_rows(graph)
    if until is not None or since is not None:
        from graphsys.storage.time_view import TimeView

        return TimeView(graph, until, time_column, since=since)
    return graph

