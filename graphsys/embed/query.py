"""Queries of trained embeddings (:class:`EmbeddingQueries`, mixed into
:class:`~graphsys.embed.Embeddings`): similarity search, triple scores, link prediction.

Every query is exact unless a stored faiss index answers it (:mod:`graphsys.embed.index`):
candidates are scored :data:`BLOCK_ROWS` rows at a time with a running top-``k``; left-out
candidates (the query entity, known facts when filtering) score ``-inf`` inside the block.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from graphsys.embed.model import COMPARATORS
from graphsys.errors import GraphsysError, ParameterError, check_count
from graphsys.storage.triples import KnownAnswers, known_triples

#: Rows per block of the blocked matmuls in nearest() / predict_tails().
BLOCK_ROWS = 1 << 16


class EmbeddingQueries:
    """The query methods of :class:`~graphsys.embed.Embeddings`.

    A mixin: the host class provides the lookups (``partitions``, ``rows``, ``vectors``,
    ``internal``, ``original``, ``num_entities``, ``_etype``, ``_offsets``), the model
    (``relations``, ``relation_names``, ``relmodel``, ``comparator``; ``None`` without
    relation operators), the checkpoint (``path``, ``storage``, ``version``) and the caches
    ``_indexes`` and ``_filters``, as :class:`~graphsys.embed.Embeddings` does.
    """

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
        if key not in self._indexes and self.grown.get(t):
            self._indexes[key] = None  # built before the graph grew: it lacks the new rows
            if self.storage is not None and (self.path / "index").exists():
                warnings.warn(f"{self.path}: the graph gained {self.grown[t]:,} {t} "
                              f"entities since training, which a stored index lacks; "
                              f"searching exactly", stacklevel=3)
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
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
        >>> ids, scores = emb.nearest(0, k=5)
        >>> len(ids), 0 in ids, bool((scores[:-1] >= scores[1:]).all())
        (5, False, True)
        >>> ids, scores = emb.nearest([0, 1, 2], k=5, by="dot")
        >>> ids.shape, scores.shape
        ((3, 5), (3, 5))
        """
        if by not in ("cos", "dot"):
            raise ParameterError("by", f"must be cos or dot, got {by!r}")
        k = check_count("k", k)  # a Python int: faiss takes only int
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
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
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
        typed = _typed(self, r, rel)
        lt = {self.relations[x]["lhs"] for x in typed}
        rt = {self.relations[x]["rhs"] for x in typed}
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
            edge set of the graph (``True``), in the edge set named, or in those listed, as
            the graph now holds them (a deleted triple is none). Default ``None``: no
            filtering.
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
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
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
        >>> import tempfile, pyarrow as pa, graphsys.embed
        >>> from graphsys.generators import knowledge_graph
        >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
        >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
        ...                   "rel": [f"r{r}" for r in t["rel"]]})
        >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
        >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot"}
        >>> emb = graphsys.embed.train(g, config, out=tempfile.mkdtemp()).embeddings
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
        k = check_count("k", k)
        single = _is_one(anchor)
        anchors = [anchor] if single else list(anchor)
        rels = [rel] * len(anchors) if _is_one(rel) else list(rel)
        if len(rels) != len(anchors):
            raise GraphsysError(f"{len(anchors)} ids and {len(rels)} relations; give one "
                                f"relation or one per id")
        r = np.array([self._relation(x) for x in rels], np.int64)
        given, want = ("lhs", "rhs") if side == "rhs" else ("rhs", "lhs")
        pairs = {(self.relations[x][given], self.relations[x][want]) for x in _typed(self, r, rel)}
        if len(pairs) != 1:
            raise GraphsysError(f"give relations whose {given} and {want} types agree in one "
                                f"call (got {sorted(pairs)})")
        at, ct = pairs.pop()
        a = self.internal(anchors, at)
        q = self._query(side, self.rows(a, at), r)
        rows, ids = [], []
        known = None if filter is None or filter is False else self._known(filter, side)
        if known is not None:
            known_rows, known_ids = known.answers(r * self._filter_base() + a)
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
        :class:`graphsys.storage.triples.KnownAnswers` keyed by ``rel * M + anchor``; cached.
        None for no edge set (``[]``)."""
        g = self.graph
        names = (tuple(g.edge_sets) if edge_sets is True else
                 (edge_sets,) if isinstance(edge_sets, str) else
                 tuple(edge_sets) if isinstance(edge_sets, (list, tuple)) else None)
        if names is None or not all(isinstance(n, str) for n in names):
            # filter=5 raised a raw TypeError ('int' object is not iterable)
            raise ParameterError("filter", f"must be True, an edge set name or a list of "
                                           f"them, got {edge_sets!r}")
        names = tuple(g.edge_set(n).name for n in names)
        if not names:                             # filter=[]: no known answer to leave out
            return None
        key = (names, side)
        if key not in self._filters:
            known = known_triples(g, names)
            h, r, t = known.h, known.r, known.t
            m = self._filter_base()
            self._filters[key] = (KnownAnswers(r * m + h, t, m) if side == "rhs"
                                  else KnownAnswers(r * m + t, h, m))
        return self._filters[key]

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
                best_s, pos = torch.topk(s, min(k, s.shape[1]), dim=1)
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


def _typed(emb, r: np.ndarray, rel) -> np.ndarray:
    """The relation indices whose entity types a batch has: ``r``, or for an empty batch
    the one relation given (an empty batch is answered empty, as :meth:`nearest` does; it
    was refused as relations of different types)."""
    return np.array([emb._relation(rel)]) if len(r) == 0 and _is_one(rel) else r


def _is_one(x) -> bool:
    """Whether ``x`` is one id (a scalar or a string), not a sequence of them."""
    return isinstance(x, (str, bytes)) or np.ndim(x) == 0
