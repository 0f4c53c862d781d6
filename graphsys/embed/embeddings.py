"""Trained embeddings (:class:`Embeddings`): open and check a checkpoint, look up vectors.

Opening validates checksums, shapes, finite values and the graph's shape and ids; the
queries (:class:`~.query.EmbeddingQueries`) and exports (:class:`~.export.EmbeddingExports`)
are mixed into :class:`Embeddings`. ``load`` also opens ``graphsys gnn embed`` output (an
Arrow embedding directory, :mod:`graphsys.storage.embedding_files`;
:class:`ArrowEmbeddings`): one entity type and no relations, so lookups, ``nearest`` and the
exports work, ``score`` and the predictions do not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphsys.embed import grow
from graphsys.embed.checkpoint_files import CheckpointStorage, check_graph, check_model, load_npy
from graphsys.embed.config import config_from_dict
from graphsys.embed.export import EmbeddingExports
from graphsys.embed.model import COMPARATORS
from graphsys.embed.query import BLOCK_ROWS, EmbeddingQueries
from graphsys.embed.relations import RelationModel
from graphsys.errors import FormatError, GraphsysError, ParameterError
from graphsys.storage.embedding_files import is_embedding_directory, read_embedding_files
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.identity import stored_record
from graphsys.storage.node_reads import checked_internal


class Embeddings(EmbeddingQueries, EmbeddingExports):
    """Trained embeddings: one vector per entity, the relation operators and the comparator.

    Open a checkpoint with :meth:`load`, or take ``graphsys.embed.train(...).embeddings``
    (the model of :func:`graphsys.embed.train` [1]_). Ids are the graph's *original* node
    ids; the graph directory recorded in the checkpoint maps them (pass ``graph=`` to
    :meth:`load` if it moved). Partitions are memory-mapped, read-only, and every query
    reads only the rows it needs or a block of :data:`~.query.BLOCK_ROWS` rows at a time.

    Attributes
    ----------
    path : Path
        The checkpoint directory.
    dimension : int
        The embedding dimension ``d``.
    entity_types : list of str
        The entity types embedded.
    relation_names : list of str
        The relations, in the order of their indices.
    config : EmbedConfig
        The settings the checkpoint was trained with.
    version : int
        The committed checkpoint version read.

    See Also
    --------
    graphsys.embed.train : train embeddings.
    graphsys.embed.evaluate : link-prediction metrics.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys.embed
    >>> from graphsys.generators import knowledge_graph
    >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
    >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
    ...                   "rel": [f"r{r}" for r in t["rel"]]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
    >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
    >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
    >>> emb.dimension, emb.entity_types, emb.relation_names
    (8, ['node'], ['r0', 'r1'])
    >>> emb.vector(0).shape
    (8,)
    >>> ids, scores = emb.nearest(0, k=3)
    >>> len(ids), scores.shape
    (3, (3,))

    References
    ----------
    .. [1] A. Lerer, L. Wu, J. Shen, T. Lacroix, L. Wehrstedt, A. Bose, A. Peysakhovich,
       "PyTorch-BigGraph: A Large-scale Graph Embedding System", SysML 2019.
    """

    def __init__(self, path: Path, meta: dict[str, Any], config, graph: Graph | None):
        self.path, self.meta, self.config = path, meta, config
        self._graph = None
        #: trained rows per partition of every entity type when the graph grew since
        #: training (:meth:`_set_graph`), else None
        self._grown: dict[str, list[int]] | None = None
        self._parts: dict[str, list[np.ndarray]] = {}
        self._indexes: dict[tuple[str, str], Any] = {}
        self._offsets = {t: np.concatenate([[0], np.cumsum(v["partition_sizes"])]).astype(np.int64)
                         for t, v in meta["entity_types"].items()}
        self.version = int(meta["version"])
        self.dimension = int(meta["dimension"])
        self.storage = CheckpointStorage(path)
        if graph is not None:
            self._set_graph(graph)
        self.entity_types = list(meta["entity_types"])
        self._check_dimension()
        try:  # checkpoint.json carries no checksum: its model fields are checked here
            self.relations = meta["relations"]
            if not self.relations:   # every graph has a relation type; [] raised IndexError
                raise ValueError("no relations")
            self.relation_names = [r["name"] for r in self.relations]
            check_model(meta, config, path)
            self.comparator = COMPARATORS.get_class(meta["comparator"])()
            self.relmodel = RelationModel([r["operator"] for r in self.relations],
                                          self.dimension)
            self.relmodel.load(self.storage, self.version, with_state=False)
        except (KeyError, ValueError, TypeError, RuntimeError) as exc:
            raise FormatError(f"{path / 'checkpoint.json'}: its model fields (dimension, "
                              f"relations, comparator, operators) do not match a model "
                              f"({exc})") from None
        self._filters: dict[tuple[tuple[str, ...], str], Any] = {}

    @classmethod
    def load(cls, path: str | Path, graph: str | Path | Graph | None = None) -> Embeddings:
        """Open trained embeddings: a checkpoint directory or a GNN embedding directory.

        Parameters
        ----------
        path : str or Path
            A checkpoint directory written by :func:`graphsys.embed.train` (its last
            committed version is read), or an Arrow embedding directory written by
            ``graphsys gnn embed`` (one entity type, no relations: lookups,
            :meth:`nearest` and the exports work, :meth:`score` and the predictions do
            not).
        graph : str, Path or Graph, optional
            The graph that maps original ids; default the graph directory recorded in
            the checkpoint. It must have the training graph's entity types and partition
            sizes.

        Returns
        -------
        Embeddings

        Raises
        ------
        FormatError
            A missing, damaged or foreign checkpoint (checksums, shapes, non-finite
            values), named in the message.
        GraphsysError
            A graph of another shape than the training graph.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> ckpt = tempfile.mkdtemp()
        >>> _ = graphsys.embed.train(g, {"dimension": 8}, out=ckpt)
        >>> emb = graphsys.embed.Embeddings.load(ckpt)
        >>> emb.num_entities(), emb.dimension, emb.version
        (36, 8, 1)
        """
        path = Path(path)
        g = graph if isinstance(graph, Graph) or graph is None else open_graph(graph)
        if is_embedding_directory(path):
            return ArrowEmbeddings(path, g)
        storage = CheckpointStorage(path)
        meta = storage.read_meta()
        config = config_from_dict({k: v for k, v in storage.read_config().items()})
        return cls(path, meta, config, g)

    def _check_dimension(self) -> None:
        """Refuse a ``dimension`` (checkpoint.json carries no checksum) that the first
        stored partition's columns (its ``.npy`` header, mapped) do not have, before the
        relation operators' parameters are sized by it."""
        for t, info in self.meta["entity_types"].items():
            for p, rows in enumerate(info["partition_sizes"]):
                f = self.storage.emb_path(t, p, self.version)
                arr = load_npy(f, mmap=True, root=self.storage.root)
                if arr.ndim != 2 or arr.shape[1] != self.dimension:
                    raise FormatError(f"{f}: {arr.dtype} {arr.shape}, the checkpoint says "
                                      f"float32 ({rows}, {self.dimension})")
                return

    @property
    def graph(self) -> Graph:
        """The graph that maps original ids (opened from the checkpoint's record if
        :meth:`load` was given none)."""
        if self._graph is None:
            where = self.meta.get("graph")
            if not where:
                raise FormatError(f"{self.path / 'checkpoint.json'}: field 'graph' is "
                                  f"missing; load it with the graph directory given "
                                  f"(graph=DIR) to map node ids")
            if not Path(where).exists():
                raise GraphsysError(f"{self.path}: its graph {where} is gone; load it with "
                                    f"the graph directory given (graph=DIR) to map node ids")
            self._set_graph(open_graph(where))
        return self._graph

    def _set_graph(self, graph: Graph) -> None:
        """Use ``graph`` to map node ids, once it is checked to be the training graph or
        that graph grown by appends (:func:`~graphsys.embed.checkpoint.check_graph`): then
        every old entity keeps its trained row and each new one is served the row
        ``init_from`` would start it from (:func:`graphsys.embed.grow.served_rows`)."""
        old = check_graph(self.meta, graph, self.path, grown=True)
        self._graph = graph
        if old is not None:
            self._grown = old
            self._offsets = {t: np.concatenate([[0], np.cumsum(graph.partition_sizes(t))])
                             .astype(np.int64) for t in old}
            self._parts.clear()
            self._indexes.clear()

    @property
    def grown(self) -> dict[str, int]:
        """Entities per type the graph gained since training (appended to it), served the
        rows ``init_from`` starts new entities from: the mean of their old neighbours'
        embeddings in the edges appended, else the seeded random initialisation; empty
        when the graph is the training graph."""
        self._open_recorded_graph()
        if self._grown is None:
            return {}
        return {t: int(self._offsets[t][-1]) - sum(s) for t, s in self._grown.items()}

    def _open_recorded_graph(self) -> None:
        """Open the recorded graph, when it is there and none was given, so that rows of
        entities appended to it since training are served (a graph that is gone is opened
        only when ids must be mapped)."""
        if self._graph is None and self.storage is not None and self.meta.get("graph") \
                and Path(self.meta["graph"]).is_dir():
            _ = self.graph

    # -- raw access -------------------------------------------------------------------------
    def _etype(self, entity_type: str | None) -> str:
        """The entity type meant by ``entity_type``: itself when known, the only one when
        ``None``; else a :class:`ParameterError` naming the types."""
        if entity_type is None:
            if len(self.entity_types) != 1:
                raise ParameterError("entity_type", f"must be given: these embeddings have "
                                     f"entity types {', '.join(self.entity_types)}")
            return self.entity_types[0]
        if entity_type not in self.entity_types:
            raise ParameterError("entity_type", f"{entity_type!r} is not an entity type of "
                                 f"these embeddings ({', '.join(self.entity_types)})")
        return entity_type

    def partitions(self, entity_type: str | None = None) -> list[np.ndarray]:
        """Memory-mapped float32 ``(n_p, d)`` arrays, one per partition."""
        t = self._etype(entity_type)
        self._open_recorded_graph()
        if t not in self._parts:
            sizes = self.meta["entity_types"][t]["partition_sizes"]
            new = ({} if self._grown is None else grow.served_rows(
                self.graph, self.storage, self.version, self.config, self._grown,
                self.meta.get("edges")))
            parts = []
            for p, rows in enumerate(sizes):
                f = self.storage.emb_path(t, p, self.version)
                arr = require_finite(load_npy(f, mmap=True, root=self.storage.root), f)
                if arr.dtype != np.float32 or arr.shape != (rows, self.dimension):
                    raise FormatError(f"{f}: {arr.dtype} {arr.shape}, the checkpoint says "
                                      f"float32 ({rows}, {self.dimension})")
                # entities appended since training: the partition is read into memory
                parts.append(np.concatenate([arr, new[(t, p)]]) if (t, p) in new else arr)
            self._parts[t] = parts
        return self._parts[t]

    def num_entities(self, entity_type: str | None = None) -> int:
        self._open_recorded_graph()
        return int(self._offsets[self._etype(entity_type)][-1])

    def to_numpy(self, entity_type: str | None = None) -> np.ndarray:
        """All embeddings of one entity type as one array (read into memory).

        Parameters
        ----------
        entity_type : str, optional
            The entity type; may be left out when there is only one.

        Returns
        -------
        ndarray
            float32 ``(N, d)``, row ``i`` the entity with type-global id ``i`` (the order
            of ``graph.node_ids(entity_type)``).

        Raises
        ------
        ParameterError
            ``entity_type`` left out with several types, or not one of them.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
        >>> emb.to_numpy().shape
        (36, 8)
        """
        parts = self.partitions(entity_type)
        return np.concatenate(parts) if parts else np.zeros((0, self.dimension), np.float32)

    def rows(self, internal: np.ndarray, entity_type: str | None = None) -> np.ndarray:
        """Embeddings of type-global ids ``internal`` (int64 ``(k,)``) -> float32 ``(k, d)``;
        an id that is no integer of ``0..num_entities-1`` is a one-line ParameterError."""
        t = self._etype(entity_type)
        internal = checked_internal(internal, self.num_entities(t), "internal")
        offs = self._offsets[t]
        part = np.searchsorted(offs, internal, side="right") - 1
        parts = self.partitions(t)   # checked against the dimension before it sizes `out`
        out = np.empty((len(internal), self.dimension), np.float32)
        for p in np.unique(part):
            m = part == p
            out[m] = parts[p][internal[m] - offs[p]]
        return out

    def internal(self, ids, entity_type: str | None = None) -> np.ndarray:
        """Type-global ids of original ids (int64)."""
        return self.graph.to_internal(ids, self._etype(entity_type))

    def original(self, internal, entity_type: str | None = None):
        """Original ids of type-global ids: an int64 array, or a list of strings."""
        ids = self.graph.to_original(internal, self._etype(entity_type))
        return ids.to_pylist() if isinstance(ids, pa.Array) else ids

    # -- lookups ----------------------------------------------------------------------------
    def vector(self, node_id, entity_type: str | None = None) -> np.ndarray:
        """The embedding of one entity.

        Parameters
        ----------
        node_id : int or str
            An original node id.
        entity_type : str, optional
            The entity type; may be left out when there is only one.

        Returns
        -------
        ndarray
            float32 ``(d,)``.

        Raises
        ------
        GraphsysError
            An id that is not in the graph.

        See Also
        --------
        vectors : several at once.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
        >>> v = emb.vector(3)
        >>> v.shape, v.dtype
        ((8,), dtype('float32'))
        """
        return self.vectors([node_id], entity_type)[0]

    def vectors(self, ids, entity_type: str | None = None) -> np.ndarray:
        """The embeddings of several entities, in the order given.

        Parameters
        ----------
        ids : sequence of int or str
            Original node ids (a list or an array).
        entity_type : str, optional
            The entity type; may be left out when there is only one.

        Returns
        -------
        ndarray
            float32 ``(len(ids), d)``.

        Examples
        --------
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
        >>> emb.vectors([3, 5, 3]).shape
        (3, 8)
        """
        return self.rows(self.internal(ids, entity_type), entity_type)


class ArrowEmbeddings(Embeddings):
    """Node embeddings of one entity type in an Arrow embedding directory
    (:mod:`graphsys.storage.embedding_files`, what ``graphsys gnn embed`` writes); the
    embedding columns are memory-mapped, read-only. No relation operators: ``score`` /
    ``predict_tails`` raise."""

    def __init__(self, path: Path, graph: Graph | None):
        files = read_embedding_files(path)
        et, self.dimension = files.entity_type, files.dimension
        parts = [require_finite(p, path / rel)
                 for p, rel in zip(files.partitions, files.header["partitions"])]
        sizes = [len(x) for x in parts]
        self.path, self.config, self._graph, self._grown = path, None, None, None
        self.meta = {**files.header, "entity_types": stored_record(et, files.ids)}
        if graph is not None:
            self._set_graph(graph)
        self.version = 0
        self.storage = self.comparator = self.relmodel = None
        self.entity_types = [et]
        self.relations, self.relation_names = [], []
        self._parts = {et: parts}
        self._indexes, self._filters = {}, {}
        self._offsets = {et: np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)}

    def _set_graph(self, graph: Graph) -> None:
        """The graph the embeddings were computed on, exactly: the same ids in each
        partition, in the same order (the files' ``id`` columns against the graph's). A
        graph grown by appends since keeps the old rows in place but has nodes without one:
        refused, naming what embeds them (``embed_checkpoint`` on the grown graph)."""
        if check_graph(self.meta, graph, self.path, grown=True) is not None:
            raise GraphsysError(f"{self.path}: the graph {graph.path} gained nodes by appends "
                                f"since these embeddings were written, which have none: "
                                f"embed the grown graph again (embed_checkpoint)")
        self._graph = graph


def require_finite(arr: np.ndarray, file: Path, block_rows: int = BLOCK_ROWS) -> np.ndarray:
    """``arr`` (float ``(n, d)``, possibly memory-mapped) if every value is finite, else a
    one-line :class:`FormatError` naming ``file`` and the first bad row: NaN or infinite
    embeddings are never served (every comparison with NaN is false, so they would rank
    first). Scans ``block_rows`` rows at a time."""
    for start in range(0, len(arr), block_rows):
        bad = ~np.isfinite(np.asarray(arr[start:start + block_rows]))
        if bad.any():
            row = start + int(np.flatnonzero(bad.any(axis=tuple(range(1, bad.ndim))))[0])
            raise FormatError(f"{file}: non-finite embedding (NaN or infinity) in row {row}")
    return arr
