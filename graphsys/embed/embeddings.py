"""Trained embeddings: load a checkpoint, look up, score, search, export (:class:`Embeddings`).

Node ids are the graph's *original* ids; the graph directory recorded in the checkpoint maps
them (pass ``graph=`` if it moved). Embedding partitions are memory-mapped, read-only.

``load`` also opens the output of ``graphsys gnn embed`` (an Arrow embedding directory,
:mod:`graphsys.storage.embedding_files`); it has one entity type and no relations, so the
lookups, ``nearest`` and the exports work and ``score`` / ``predict_tails`` do not.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from graphsys.embed.checkpoint_files import CheckpointStorage, check_graph, load_npy
from graphsys.embed.config import config_from_dict
from graphsys.embed.model import COMPARATORS
from graphsys.embed.relations import PBG_DYNAMIC_NAME, RelationModel, pbg_side
from graphsys.embed.triples import KnownAnswers, triples
from graphsys.errors import FormatError, GraphsysError, ParameterError
from graphsys.storage.atomic import atomic_path
from graphsys.storage.embedding_files import is_embedding_directory, read_embedding_files
from graphsys.storage.graph import Graph, open_graph

#: Rows per block of the blocked matmuls in nearest() / predict_tails().
BLOCK_ROWS = 1 << 16
#: Entity rows formatted per step of export_tsv() (one progress update each).
TSV_ROWS = 1 << 14

class Embeddings:
    """Trained embeddings: one vector per entity, the relation operators and the comparator.

    Open a checkpoint with :meth:`load`, or take ``graphsys.embed.train(...).embeddings``.
    Ids are the graph's *original* node ids (integers or strings); the graph directory
    recorded in the checkpoint maps them (pass ``graph=`` to :meth:`load` if it moved).
    The embedding partitions are memory-mapped, read-only, and every query reads only the
    rows it needs or a block of :data:`BLOCK_ROWS` rows at a time, so tables larger than
    memory can be served.

    A triple ``(h, r, t)`` scores ``comparator(op_r(h), t)`` (:meth:`score`), the model
    trained by :func:`graphsys.embed.train` [1]_; :meth:`predict_tails` and
    :meth:`predict_heads` rank every entity as the missing side of a triple, and
    :meth:`nearest` ranks entities by the similarity of their vectors.

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
    >>> import tempfile
    >>> import pyarrow as pa
    >>> import graphsys.embed
    >>> from graphsys.generators import knowledge_graph
    >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
    >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
    ...                   "rel": [f"r{r}" for r in t["rel"]]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
    >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
    >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
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
        if graph is not None:
            self._set_graph(graph)
        self.version = int(meta["version"])
        self.dimension = int(meta["dimension"])
        self.storage = CheckpointStorage(path)
        self.entity_types = list(meta["entity_types"])
        try:  # checkpoint.json carries no checksum: its model fields are checked here
            self.relations = meta["relations"]
            self.relation_names = [r["name"] for r in self.relations]
            self.comparator = COMPARATORS.get_class(meta["comparator"])()
            self.relmodel = RelationModel([r["operator"] for r in self.relations],
                                          self.dimension)
            self.relmodel.load(self.storage, self.version, with_state=False)
        except (KeyError, ValueError, TypeError, RuntimeError) as exc:
            raise FormatError(f"{path / 'checkpoint.json'}: its model fields (dimension, "
                              f"relations, comparator, operators) do not match a model "
                              f"({exc})") from None
        for side, g, k in self.relmodel.keys():
            if not bool(torch.isfinite(self.relmodel.params[side][g][k]).all()):
                raise FormatError(f"{self.storage.model_path(f'{side}.g{g}.{k}', self.version)}"
                                  f": non-finite relation parameter (NaN or infinity)")
        self._parts: dict[str, list[np.ndarray]] = {}
        self._indexes: dict[tuple[str, str], Any] = {}
        self._filters: dict[tuple[tuple[str, ...], str], Any] = {}
        self._offsets = {t: np.concatenate([[0], np.cumsum(v["partition_sizes"])]).astype(np.int64)
                         for t, v in meta["entity_types"].items()}

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
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> ckpt = tempfile.mkdtemp()
        >>> _ = graphsys.embed.train({"dimension": 8}, graph=g, out=ckpt)
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

    @property
    def graph(self) -> Graph:
        """The graph that maps original ids (opened from the checkpoint's record if
        :meth:`load` was given none)."""
        if self._graph is None:
            where = self.meta["graph"]
            if not Path(where).exists():
                raise GraphsysError(f"{self.path}: its graph {where} is gone; load it with "
                                    f"the graph directory given (graph=DIR) to map node ids")
            self._set_graph(open_graph(where))
        return self._graph

    def _set_graph(self, graph: Graph) -> None:
        """Use ``graph`` to map node ids, once it is checked to be the training graph's
        shape (:func:`~graphsys.embed.checkpoint.check_graph`)."""
        check_graph(self.meta, graph, self.path)
        self._graph = graph

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
        if t not in self._parts:
            sizes = self.meta["entity_types"][t]["partition_sizes"]
            parts = []
            for p, rows in enumerate(sizes):
                f = self.storage.emb_path(t, p, self.version)
                arr = require_finite(load_npy(f, mmap=True), f)
                if arr.dtype != np.float32 or arr.shape != (rows, self.dimension):
                    raise FormatError(f"{f}: {arr.dtype} {arr.shape}, the checkpoint says "
                                      f"float32 ({rows}, {self.dimension})")
                parts.append(arr)
            self._parts[t] = parts
        return self._parts[t]

    def num_entities(self, entity_type: str | None = None) -> int:
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
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> emb.to_numpy().shape
        (36, 8)
        """
        parts = self.partitions(entity_type)
        return np.concatenate(parts) if parts else np.zeros((0, self.dimension), np.float32)

    def rows(self, internal: np.ndarray, entity_type: str | None = None) -> np.ndarray:
        """Embeddings of type-global ids ``internal`` (int64 ``(k,)``) -> float32 ``(k, d)``."""
        t = self._etype(entity_type)
        internal = np.asarray(internal, np.int64)
        offs = self._offsets[t]
        part = np.searchsorted(offs, internal, side="right") - 1
        out = np.empty((len(internal), self.dimension), np.float32)
        parts = self.partitions(t)
        for p in np.unique(part):
            m = part == p
            out[m] = parts[p][internal[m] - offs[p]]
        return out

    def internal(self, ids, entity_type: str | None = None) -> np.ndarray:
        """Type-global ids of original ids (int64)."""
        return self.graph.to_internal(ids, self._etype(entity_type))

    def original(self, internal, entity_type: str | None = None):
        """Original ids of type-global ids: an int64 array, or a list of strings."""
        ids = self.graph.to_original(np.asarray(internal, np.int64), self._etype(entity_type))
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
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
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
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> emb.vectors([3, 5, 3]).shape
        (3, 8)
        """
        return self.rows(self.internal(ids, entity_type), entity_type)

    def require_relations(self, what: str) -> None:
        """Raise a one-line :class:`GraphsysError` saying that ``what`` needs relation
        operators, if these embeddings have none (``graphsys gnn embed`` output)."""
        if self.relmodel is None:
            raise GraphsysError(f"{self.path}: {what} needs relation operators; these are "
                                f"GNN node embeddings without any (they serve nearest and "
                                f"export)")

    def _relation(self, rel) -> int:
        self.require_relations("scoring triples")
        if isinstance(rel, (int, np.integer)) and not isinstance(rel, bool):
            if not 0 <= rel < len(self.relations):
                raise GraphsysError(f"relation index {rel} out of range")
            return int(rel)
        try:
            return self.relation_names.index(rel)
        except ValueError:
            raise GraphsysError(f"unknown relation {rel!r}") from None

    def _topk_blocks(self, query: torch.Tensor, etype: str, k: int, cmp,
                     exclude: tuple[np.ndarray, np.ndarray] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` candidates of ``etype`` for ``query`` ``(q, d)`` by blocked matmul;
        returns type-global ids int64 ``(q, k)`` and scores float32 ``(q, k)``.
        ``exclude``: ``(rows, ids)`` int64 pairs, candidate ``ids[i]`` never returned for
        query ``rows[i]`` (its score is -inf: such entries come last when fewer than ``k``
        candidates remain)."""
        best_s = torch.full((len(query), 0), float("-inf"))
        best_i = torch.zeros((len(query), 0), dtype=torch.long)
        offs = self._offsets[etype]
        if exclude is not None:
            order = np.argsort(exclude[1], kind="stable")
            ex_rows, ex_ids = exclude[0][order], exclude[1][order]
        for p, part in enumerate(self.partitions(etype)):
            for start in range(0, len(part), BLOCK_ROWS):
                block = torch.from_numpy(np.array(part[start:start + BLOCK_ROWS]))
                s = cmp.neg(query, cmp.prepare(block))
                lo = int(offs[p]) + start
                ids = torch.arange(lo, lo + len(block))
                if exclude is not None:
                    a, b = np.searchsorted(ex_ids, [lo, lo + len(block)])
                    s[torch.from_numpy(ex_rows[a:b]),
                      torch.from_numpy(ex_ids[a:b] - lo)] = float("-inf")
                s = torch.cat([best_s, s], dim=1)
                ids = torch.cat([best_i, ids.expand(len(query), -1)], dim=1)
                kk = min(k, s.shape[1])
                best_s, pos = torch.topk(s, kk, dim=1)
                best_i = torch.gather(ids, 1, pos)
        return best_i.numpy(), best_s.numpy()

    def _answer(self, found: np.ndarray, scores: np.ndarray, etype: str, single: bool):
        """Original ids and scores of type-global ``found`` ``(q, k)``: one query's
        ``(list, (k,))`` when ``single``, else ``(ids (q, k), scores (q, k))`` with ids an
        int64 array or, for string ids, a list of ``q`` lists."""
        if single:
            names = self.original(found[0], etype)
            return (names.tolist() if isinstance(names, np.ndarray) else list(names)), scores[0]
        names = self.original(found.ravel(), etype)
        if isinstance(names, np.ndarray):
            return names.reshape(found.shape), scores
        k = found.shape[1]
        return [names[i * k:(i + 1) * k] for i in range(len(found))], scores

    def ann_index(self, entity_type: str | None = None, by: str = "cos"):
        """The faiss index stored for ``entity_type`` and ``by``, or ``None``.

        Indexes are built by ``graphsys embed index`` or
        :func:`graphsys.embed.index.build_and_save`. ``None`` when there is none, or when
        the stored one was built from another checkpoint version than these embeddings
        (after training on): then a warning says so, once per :class:`Embeddings`, and
        :meth:`nearest` searches exactly. A damaged index raises
        :class:`~graphsys.errors.FormatError`.
        """
        from graphsys.embed.index import StaleIndexError, open_index

        t = self._etype(entity_type)
        key = (t, by)
        if key not in self._indexes:
            try:
                self._indexes[key] = None if self.storage is None else open_index(
                    self.path, t, by, version=self.version,
                    num_entities=self.num_entities(t), dimension=self.dimension)
            except StaleIndexError as exc:
                self._indexes[key] = None
                warnings.warn(f"{exc.reason}; searching exactly, rebuild it with "
                              f"`graphsys embed index`", stacklevel=3)
        return self._indexes[key]

    def forget_index(self, entity_type: str, by: str) -> None:
        """Drop the cached index of ``(entity_type, by)`` (after it was rebuilt)."""
        self._indexes.pop((entity_type, by), None)

    def nearest(self, node_id, k: int = 10, *, by: str = "cos",
                entity_type: str | None = None, exact: bool = False):
        """The entities whose embeddings are most similar to an entity's.

        Uses the faiss index of the type and measure when one is stored (``graphsys embed
        index``; exact for ``flat``, approximate for ``ivf`` and ``hnsw``), else a blocked
        matrix product over all entities of the type (exact; no ``N x N`` matrix). An
        index built before more training is not used: a warning says so once and the
        search is exact.

        Parameters
        ----------
        node_id : int, str or sequence of them
            One original id, or several (a list or an array: one batched search).
        k : int, optional
            How many to return (default 10); fewer when the type has no ``k`` others.
        by : {"cos", "dot"}, optional
            Cosine similarity (default) or the dot product of the vectors.
        entity_type : str, optional
            The entity type; may be left out when there is only one.
        exact : bool, optional
            Search exactly even when an index is stored (default False).

        Returns
        -------
        ids : list or ndarray
            One id: a list of ``k`` original ids, best first. Several: an int64 array
            ``(q, k)``, or for string ids a list of ``q`` lists.
        scores : ndarray
            float32 ``(k,)`` or ``(q, k)``, the similarities, descending.

        Notes
        -----
        The query entity itself is never returned.

        Examples
        --------
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> ids, scores = emb.nearest(0, k=5)
        >>> len(ids), 0 in ids, bool((scores[:-1] >= scores[1:]).all())
        (5, False, True)
        >>> ids, scores = emb.nearest([0, 1, 2], k=5, by="dot")
        >>> ids.shape, scores.shape
        ((3, 5), (3, 5))
        """
        if by not in ("cos", "dot"):
            raise ParameterError("by", f"must be cos or dot, got {by!r}")
        k = _count(k)
        t = self._etype(entity_type)
        single = _is_one(node_id)
        idx = self.internal([node_id] if single else node_id, t)
        k = min(k, self.num_entities(t) - 1)  # never the query itself
        if k < 1:
            empty = np.zeros((len(idx), 0))
            return self._answer(empty.astype(np.int64), empty.astype(np.float32), t, single)
        vecs = self.rows(idx, t)
        index = None if exact else self.ann_index(t, by)
        if index is not None:
            ids, scores = index.search(vecs, k, exclude=idx)
            short = (ids < 0).any(axis=1)  # an IVF probe with too few rows: exact instead
        else:
            short = np.ones(len(idx), bool)
            ids = np.zeros((len(idx), k), np.int64)
            scores = np.zeros((len(idx), k), np.float32)
        if short.any():
            cmp = COMPARATORS.get_class(by)()
            q = cmp.prepare(torch.from_numpy(vecs[short]))
            rows = np.flatnonzero(short)
            ids[rows], scores[rows] = self._topk_blocks(
                q, t, k, cmp, exclude=(np.arange(len(rows)), idx[rows]))
        return self._answer(ids, scores, t, single)

    def _query(self, side: str, x: np.ndarray, rel: np.ndarray) -> torch.Tensor:
        with torch.no_grad():
            q = self.relmodel.apply(side, torch.from_numpy(x), torch.from_numpy(rel))
            return self.comparator.prepare(q)

    def score(self, head, rel, tail) -> np.ndarray | float:
        """The model's score of triples ``(head, rel, tail)``: higher is more plausible.

        The score is ``comparator(op_rel(head), tail)``, the one tail prediction ranks by:
        with the ``translation`` operator and an ``l2`` comparator TransE's [1]_, with
        ``diagonal`` and ``dot`` DistMult's [2]_, with ``complex_diagonal`` and ``dot``
        ComplEx's [3]_.

        Parameters
        ----------
        head : int, str or sequence of them
            Original ids of the heads.
        rel : str, int or sequence of them
            A relation name or index, or one per head.
        tail : int, str or sequence of them
            Original ids of the tails, as many as heads.

        Returns
        -------
        float or ndarray
            A float for one triple, else float32 ``(len(head),)``.

        Raises
        ------
        GraphsysError
            Unknown ids or relations, unequal lengths, or embeddings without relation
            operators (GNN node embeddings).

        See Also
        --------
        predict_tails : the best tails of ``(head, rel, ?)``.

        Examples
        --------
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> isinstance(emb.score(0, "r0", 1), float)
        True
        >>> emb.score([0, 0], ["r0", "r1"], [1, 2]).shape
        (2,)

        References
        ----------
        .. [1] A. Bordes, N. Usunier, A. Garcia-Duran, J. Weston, O. Yakhnenko,
           "Translating Embeddings for Modeling Multi-relational Data", NeurIPS 2013.
        .. [2] B. Yang, W. Yih, X. He, J. Gao, L. Deng, "Embedding Entities and Relations
           for Learning and Inference in Knowledge Bases", ICLR 2015.
        .. [3] T. Trouillon, J. Welbl, S. Riedel, E. Gaussier, G. Bouchard, "Complex
           Embeddings for Simple Link Prediction", ICML 2016.
        """
        scalar = _is_one(head)
        heads = [head] if scalar else list(head)
        tails = [tail] if scalar else list(tail)
        rels = [rel] * len(heads) if _is_one(rel) else list(rel)
        if not len(heads) == len(rels) == len(tails):
            raise GraphsysError(f"score: {len(heads)} heads, {len(rels)} relations and "
                                f"{len(tails)} tails; give equal lengths")
        r = np.array([self._relation(x) for x in rels], np.int64)
        lt = {self.relations[x]["lhs"] for x in r}
        rt = {self.relations[x]["rhs"] for x in r}
        if len(lt) != 1 or len(rt) != 1:
            raise GraphsysError("score: give triples of relations with one lhs/rhs type")
        lt, rt = lt.pop(), rt.pop()
        q = self._query("rhs", self.vectors(heads, lt), r)
        t = self.comparator.prepare(torch.from_numpy(self.vectors(tails, rt)))
        out = self.comparator.pos(q, t).numpy()
        return float(out[0]) if scalar else out

    def predict_tails(self, head, rel, k: int = 10, *, filter=None, exclude_self: bool = True):
        """The most plausible tails of ``(head, rel, ?)``: link prediction.

        Every entity of the relation's tail type is scored as :meth:`score` does, exactly
        (a blocked matrix product, no ``N x N`` matrix), and the ``k`` best are returned.

        Parameters
        ----------
        head : int, str or sequence of them
            One original id, or several (one batched query).
        rel : str, int or sequence of them
            A relation name or index, or one per head.
        k : int, optional
            How many tails to return (default 10).
        filter : bool, str or list of str, optional
            Leave out known facts: tails that form a triple with ``(head, rel)`` in every
            edge set of the graph (``True``), in the edge set named, or in those listed.
            Default ``None``: no filtering.
        exclude_self : bool, optional
            Leave out the head itself (default True); False ranks it too (relations that
            hold between an entity and itself).

        Returns
        -------
        ids : list or ndarray
            One head: a list of original ids, best first. Several: an int64 array
            ``(q, k)``, or for string ids a list of ``q`` lists.
        scores : ndarray
            float32 ``(k,)`` or ``(q, k)``, descending. When fewer than ``k`` candidates
            remain after filtering, the last places hold left-out ids scored ``-inf``.

        Raises
        ------
        GraphsysError
            Unknown ids or relations, relations of different entity types in one batch,
            or embeddings without relation operators.

        See Also
        --------
        predict_heads : the heads of ``(?, rel, tail)``.
        score : the score of given triples.
        graphsys.embed.evaluate : rank held-out triples (MRR, Hits@k).

        Examples
        --------
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> ids, scores = emb.predict_tails(0, "r0", k=5)
        >>> len(ids), 0 in ids, bool((scores[:-1] >= scores[1:]).all())
        (5, False, True)
        >>> known = set(t["dst"][(t["src"] == 0) & (t["rel"] == 0)].tolist())
        >>> ids, _ = emb.predict_tails(0, "r0", k=5, filter=True)
        >>> bool(known & set(ids))
        False
        >>> ids, scores = emb.predict_tails([0, 1], ["r0", "r1"], k=5)
        >>> ids.shape
        (2, 5)

        References
        ----------
        .. [1] A. Bordes, N. Usunier, A. Garcia-Duran, J. Weston, O. Yakhnenko,
           "Translating Embeddings for Modeling Multi-relational Data", NeurIPS 2013.
        .. [2] B. Yang, W. Yih, X. He, J. Gao, L. Deng, "Embedding Entities and Relations
           for Learning and Inference in Knowledge Bases", ICLR 2015.
        .. [3] T. Trouillon, J. Welbl, S. Riedel, E. Gaussier, G. Bouchard, "Complex
           Embeddings for Simple Link Prediction", ICML 2016.
        """
        return self._predict("rhs", head, rel, k, filter, exclude_self)

    def predict_heads(self, rel, tail, k: int = 10, *, filter=None, exclude_self: bool = True):
        """The most plausible heads of ``(?, rel, tail)``: link prediction on the left.

        Heads are ranked by ``comparator(op_rel^lhs(tail), head)``: the head-side operator
        that training learned for the reciprocal relation ``rel^-1`` (every relation has
        one; Lacroix et al. 2018 [1]_), not a reversed tail score.

        Parameters
        ----------
        rel : str, int or sequence of them
            A relation name or index, or one per tail.
        tail : int, str or sequence of them
            One original id, or several (one batched query).
        k : int, optional
            How many heads to return (default 10).
        filter : bool, str or list of str, optional
            Leave out known facts, as :meth:`predict_tails` does.
        exclude_self : bool, optional
            Leave out the tail itself (default True).

        Returns
        -------
        ids : list or ndarray
            As :meth:`predict_tails`.
        scores : ndarray
            As :meth:`predict_tails`.

        See Also
        --------
        predict_tails

        Examples
        --------
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> ids, scores = emb.predict_heads("r1", 7, k=4)
        >>> len(ids), 7 in ids, scores.shape
        (4, False, (4,))

        References
        ----------
        .. [1] T. Lacroix, N. Usunier, G. Obozinski, "Canonical Tensor Decomposition for
           Knowledge Base Completion", ICML 2018.
        """
        return self._predict("lhs", tail, rel, k, filter, exclude_self)

    def _predict(self, side: str, anchor, rel, k: int, filter, exclude_self: bool) -> tuple:
        k = _count(k)
        single = _is_one(anchor)
        anchors = [anchor] if single else list(anchor)
        rels = [rel] * len(anchors) if _is_one(rel) else list(rel)
        if len(rels) != len(anchors):
            raise GraphsysError(f"{len(anchors)} ids and {len(rels)} relations; give one "
                                f"relation or one per id")
        r = np.array([self._relation(x) for x in rels], np.int64)
        given, want = ("lhs", "rhs") if side == "rhs" else ("rhs", "lhs")
        pairs = {(self.relations[x][given], self.relations[x][want]) for x in r}
        if len(pairs) != 1:
            raise GraphsysError(f"give relations whose {given} and {want} types agree in one "
                                f"call (got {sorted(pairs)})")
        at, ct = pairs.pop()
        a = self.internal(anchors, at)
        q = self._query(side, self.rows(a, at), r)
        rows, ids = [], []
        if filter is not None and filter is not False:
            known_rows, known_ids = self._known(filter, side).answers(
                r * self._filter_base() + a)
            rows.append(known_rows)
            ids.append(known_ids)
        own = exclude_self and at == ct  # the anchor is one of the candidates
        if own:
            rows.append(np.arange(len(a), dtype=np.int64))
            ids.append(a)
        k = min(k, self.num_entities(ct) - own)
        if k < 1:
            empty = np.zeros((len(a), 0))
            return self._answer(empty.astype(np.int64), empty.astype(np.float32), ct, single)
        exclude = (np.concatenate(rows), np.concatenate(ids)) if rows else None
        found, scores = self._topk_blocks(q, ct, k, self.comparator, exclude)
        return self._answer(found, scores, ct, single)

    def _filter_base(self) -> int:
        return max(self.num_entities(t) for t in self.entity_types) + 1

    def _known(self, edge_sets, side: str):
        """The known answers on ``side`` of the triples of ``edge_sets`` (``True``: all), as
        :class:`graphsys.embed.triples.KnownAnswers` keyed by ``rel * M + anchor``; cached."""
        g = self.graph
        names = (tuple(g.edge_sets) if edge_sets is True else
                 (edge_sets,) if isinstance(edge_sets, str) else tuple(edge_sets))
        names = tuple(g.edge_set(n).name for n in names)
        key = (names, side)
        if key not in self._filters:
            every = [triples(g, n) for n in names]
            h = np.concatenate([x.h for x in every])
            r = np.concatenate([x.r for x in every])
            t = np.concatenate([x.t for x in every])
            m = self._filter_base()
            self._filters[key] = (KnownAnswers(r * m + h, t, m) if side == "rhs"
                                  else KnownAnswers(r * m + t, h, m))
        return self._filters[key]

    # -- export -----------------------------------------------------------------------------
    def export_tsv(self, entities_out: str | Path, relations_out: str | Path | None = None,
                   *, progress: Callable[[int], object] | None = None) -> None:
        """Write the embeddings as PyTorch-BigGraph's ``export_to_tsv`` does.

        ``entities_out`` gets ``id<TAB>v1<TAB>...`` per entity (all types), values
        ``%.9f``. ``relations_out`` gets
        ``relation<TAB>side<TAB>operator<TAB>param<TAB>shape<TAB>values...`` per relation
        parameter, written as PBG writes a dynamic-relations model: side ``lhs`` holds the
        operator PBG applies to heads to rank tails (graphsys's ``rhs`` one), ``rhs`` the
        one applied to tails, parameters carry PBG's dynamic names (``real``, ``imag``,
        ``diagonals``, ``translations``, ``linear_transformations``), rows side by side,
        then parameter by parameter, then relation by relation.

        Parameters
        ----------
        entities_out : str or Path
            The entities' TSV file.
        relations_out : str or Path, optional
            The relation parameters' TSV file (default: not written).
        progress : callable, optional
            ``progress(n)`` is called after every ``n`` entity rows written.

        Raises
        ------
        GraphsysError
            A file that cannot be written (no space, no permission), or an id holding a tab,
            newline or carriage return (TSV has no escape for them: export to Parquet).

        Notes
        -----
        Missing parent directories are created; each file appears whole or not at all.

        Examples
        --------
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> out = tempfile.mkdtemp()
        >>> emb.export_tsv(out + "/entities.tsv", out + "/relations.tsv")
        >>> row = open(out + "/entities.tsv").readline().split()
        >>> len(row)
        9
        >>> open(out + "/relations.tsv").readline().split()[:5]
        ['r0', 'lhs', 'complex_diagonal', 'real', '4']

        References
        ----------
        .. [1] A. Lerer et al., "PyTorch-BigGraph: A Large-scale Graph Embedding System",
           SysML 2019.
        """
        with _export_file(entities_out) as tmp, open(tmp, "w") as f:
            for t in self.entity_types:
                offs = self._offsets[t]
                for p, part in enumerate(self.partitions(t)):
                    for start in range(offs[p], offs[p + 1], TSV_ROWS):
                        stop = min(start + TSV_ROWS, int(offs[p + 1]))
                        names = self.original(np.arange(start, stop), t)
                        _tsv_safe(names, entities_out)
                        rows = np.asarray(part[start - offs[p]:stop - offs[p]])
                        f.writelines(f"{name}\t" + "\t".join(f"{x:.9f}" for x in row) + "\n"
                                     for name, row in zip(names, rows))
                        if progress is not None:
                            progress(stop - start)
        if relations_out is None:
            return
        with _export_file(relations_out) as tmp, open(tmp, "w") as f:
            for side in ("rhs", "lhs"):  # PBG's lhs side first
                params = [self.relmodel.relation_params(r)[side]
                          for r in range(len(self.relations))]
                for name in dict.fromkeys(k for ps in params for k in ps):
                    for rel, ps in zip(self.relations, params):
                        if name not in ps:
                            continue
                        arr = ps[name]
                        shape = "x".join(str(n) for n in arr.shape)
                        f.write(f"{rel['name']}\t{pbg_side(side)}\t{rel['operator']}\t"
                                f"{PBG_DYNAMIC_NAME[name]}\t{shape}\t"
                                + "\t".join(f"{x:.9f}" for x in arr.ravel()) + "\n")

    def export_parquet(self, out: str | Path, entity_type: str | None = None) -> None:
        """Write one entity type's embeddings to a Parquet file.

        Parameters
        ----------
        out : str or Path
            The Parquet file, with columns ``id`` (original ids) and ``embedding``
            (fixed-size list<float32>[d]); missing parent directories are created and the
            file appears whole or not at all.
        entity_type : str, optional
            The entity type; may be left out when there is only one.

        Examples
        --------
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> import pyarrow.parquet as pq
        >>> path = tempfile.mkdtemp() + "/emb.parquet"
        >>> emb.export_parquet(path)
        >>> table = pq.read_table(path)
        >>> table.column_names, table.num_rows, table.schema.field("embedding").type.list_size
        (['id', 'embedding'], 36, 8)
        """
        import pyarrow.parquet as pq

        t = self._etype(entity_type)
        ids = self.graph.node_ids(t)
        flat = pa.array(self.to_numpy(t).ravel(), pa.float32())
        table = pa.table({"id": ids, "embedding": pa.FixedSizeListArray.from_arrays(
            flat, self.dimension)})
        with _export_file(out) as tmp:
            pq.write_table(table, tmp)

    def export_numpy(self, out_dir: str | Path, entity_type: str | None = None) -> list[Path]:
        """Write one entity type's embeddings and ids as two ``.npy`` files.

        Parameters
        ----------
        out_dir : str or Path
            The directory (created if missing) that gets ``{type}.npy``, float32
            ``(N, d)``, and ``{type}.ids.npy``, the original ids (int64, or fixed-width
            unicode for string ids), rows in the same order; no pickle.
        entity_type : str, optional
            The entity type; may be left out when there is only one.

        Returns
        -------
        list of Path
            The two files written.

        Examples
        --------
        >>> import tempfile
        >>> import pyarrow as pa
        >>> import graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(config, graph=g, out=tempfile.mkdtemp()).embeddings
        >>> import numpy as np
        >>> vectors, ids = emb.export_numpy(tempfile.mkdtemp())
        >>> vectors.name, ids.name
        ('node.npy', 'node.ids.npy')
        >>> np.load(vectors).shape, np.load(ids).shape
        ((36, 8), (36,))
        """
        t = self._etype(entity_type)
        ids = self.graph.node_ids(t)
        ids = ids if isinstance(ids, np.ndarray) else np.array(ids.to_pylist(), dtype=str)
        paths = [Path(out_dir) / f"{t}.npy", Path(out_dir) / f"{t}.ids.npy"]
        for path, arr in zip(paths, (self.to_numpy(t), ids)):
            with _export_file(path) as tmp, open(tmp, "wb") as f:
                np.save(f, np.ascontiguousarray(arr), allow_pickle=False)
        return paths


def _is_one(x) -> bool:
    """Whether ``x`` is one id (a scalar or a string), not a sequence of them."""
    return isinstance(x, (str, bytes)) or np.ndim(x) == 0


@contextmanager
def _export_file(path: str | Path) -> Iterator[Path]:
    """A temp path that becomes ``path`` on success (:func:`atomic_path`), after creating
    its parent directories; an ``OSError`` (no space, no permission) becomes a one-line
    :class:`GraphsysError` naming ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, overwrite=True) as tmp:
            yield tmp
    except OSError as exc:
        raise GraphsysError(f"{path}: cannot write ({exc.strerror or exc})") from None


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
        self.path, self.config, self._graph = path, None, None
        self.meta = {**files.header, "entity_types": {et: {"partition_sizes": sizes}}}
        if graph is not None:
            self._set_graph(graph)
        self.version = 0
        self.storage = self.comparator = self.relmodel = None
        self.entity_types = [et]
        self.relations, self.relation_names = [], []
        self._parts = {et: parts}
        self._indexes, self._filters = {}, {}
        self._offsets = {et: np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)}


def require_finite(arr: np.ndarray, file: Path, block_rows: int = BLOCK_ROWS) -> np.ndarray:
    """``arr`` (float ``(n, d)``, possibly memory-mapped) if every value is finite, else a
    one-line :class:`FormatError` naming ``file`` and the first bad row: NaN or infinite
    embeddings are never served (every comparison with NaN is false, so they would rank
    first). Scans ``block_rows`` rows at a time."""
    for start in range(0, len(arr), block_rows):
        block = np.asarray(arr[start:start + block_rows])
        bad = ~np.isfinite(block)
        if bad.any():
            row = start + int(np.flatnonzero(bad.any(axis=tuple(range(1, bad.ndim))))[0])
            raise FormatError(f"{file}: non-finite embedding (NaN or infinity) in row {row}")
    return arr


def _tsv_safe(names, path) -> None:
    """Refuse ids that a TSV row cannot hold: a tab, newline or carriage return would split
    the row into the wrong number of fields."""
    for name in names:
        text = str(name)
        if "\t" in text or "\n" in text or "\r" in text:
            raise GraphsysError(f"{path}: id {text!r} holds a tab or line break, which a TSV "
                                f"row cannot hold; export to Parquet instead")


def _count(k) -> int:
    """``k`` as a Python int (NumPy integers included: faiss takes only ``int``), or a
    one-line :class:`ParameterError` unless it is a positive integer."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError("k", f"must be a positive integer, got {k!r}")
    return int(k)
