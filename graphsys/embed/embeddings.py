"""Trained embeddings: load a checkpoint, look up, score, search, export.

>>> emb = Embeddings.load("ckpt")                      # doctest: +SKIP
>>> emb.vector("/m/02mjmr").shape                       # doctest: +SKIP
(400,)
>>> ids, scores = emb.nearest("/m/02mjmr", k=5)         # doctest: +SKIP

Node ids are the graph's *original* ids; the graph directory recorded in the checkpoint maps
them (pass ``graph=`` if it moved). Embedding partitions are memory-mapped, read-only.

``load`` also opens the output of ``graphsys gnn embed`` (:data:`ARROW_FORMAT`: an
``embeddings.json`` index and one Arrow IPC file per partition); it has one entity type and
no relations, so the lookups, ``nearest`` and the exports work and ``score`` /
``predict_tails`` do not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc
import torch

from graphsys.embed.checkpoint_files import CheckpointStorage, check_graph, load_npy
from graphsys.embed.config import config_from_dict
from graphsys.embed.model import COMPARATORS
from graphsys.embed.relations import PBG_DYNAMIC_NAME, RelationModel, pbg_side
from graphsys.embed.triples import KnownAnswers, triples
from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.atomic import atomic_path
from graphsys.storage.graph import Graph, open_graph

#: Rows per block of the blocked matmuls in nearest() / predict_tails().
BLOCK_ROWS = 1 << 16
#: Entity rows formatted per step of export_tsv() (one progress update each).
TSV_ROWS = 1 << 14
#: Index file and format tag of Arrow embedding directories (``graphsys gnn embed``)::
#:
#:     <dir>/embeddings.json   {"format": ARROW_FORMAT, "entity_type", "dimension",
#:                              "num_nodes", "partitions": [file, ...], "graph", "meta"}
#:     <dir>/<file>            Arrow IPC file of one storage partition, rows in the
#:                             partition's node order: id, embedding
#:                             fixed_size_list<float32>[dimension]
ARROW_INDEX = "embeddings.json"
ARROW_FORMAT = "graphsys-gnn-embeddings"


class Embeddings:
    """Embeddings of every entity type plus the relation operators and comparator."""

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
        """Open the checkpoint directory ``path`` (its last committed version), or an
        Arrow embedding directory written by ``graphsys gnn embed``."""
        path = Path(path)
        g = graph if isinstance(graph, Graph) or graph is None else open_graph(graph)
        if (path / ARROW_INDEX).is_file():
            return ArrowEmbeddings(path, g)
        storage = CheckpointStorage(path)
        meta = storage.read_meta()
        config = config_from_dict({k: v for k, v in storage.read_config().items()})
        return cls(path, meta, config, g)

    @property
    def graph(self) -> Graph:
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
        if entity_type is None:
            if len(self.entity_types) != 1:
                raise GraphsysError(f"entity types {self.entity_types}: name one")
            return self.entity_types[0]
        if entity_type not in self.entity_types:
            raise GraphsysError(f"unknown entity type {entity_type!r} "
                                f"({', '.join(self.entity_types)})")
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
        """All embeddings of a type, float32 ``(N, d)``, rows in type-global id order."""
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
        ids = self.graph.to_original(np.asarray(internal, np.int64), self._etype(entity_type))
        return ids.to_pylist() if isinstance(ids, pa.Array) else ids

    # -- lookups ----------------------------------------------------------------------------
    def vector(self, node_id, entity_type: str | None = None) -> np.ndarray:
        """Embedding of one original id: float32 ``(d,)``."""
        return self.vectors([node_id], entity_type)[0]

    def vectors(self, ids, entity_type: str | None = None) -> np.ndarray:
        """Embeddings of original ids: float32 ``(k, d)``."""
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
            return list(self.original(found[0], etype)), scores[0]
        names = self.original(found.ravel(), etype)
        if isinstance(names, np.ndarray):
            return names.reshape(found.shape), scores
        k = found.shape[1]
        return [names[i * k:(i + 1) * k] for i in range(len(found))], scores

    def ann_index(self, entity_type: str | None = None, by: str = "cos"):
        """The faiss index built for ``entity_type`` and ``by`` (``graphsys embed index``,
        :func:`graphsys.embed.index.build_and_save`), or ``None`` when there is none;
        raises in one line when it belongs to another checkpoint version."""
        from graphsys.embed.index import open_index

        t = self._etype(entity_type)
        key = (t, by)
        if key not in self._indexes:
            self._indexes[key] = None if self.storage is None else open_index(
                self.path, t, by, version=self.version, num_entities=self.num_entities(t),
                dimension=self.dimension)
        return self._indexes[key]

    def forget_index(self, entity_type: str, by: str) -> None:
        """Drop the cached index of ``(entity_type, by)`` (after it was rebuilt)."""
        self._indexes.pop((entity_type, by), None)

    def nearest(self, node_id, k: int = 10, *, by: str = "cos",
                entity_type: str | None = None, exact: bool = False):
        """The ``k`` entities most similar to ``node_id`` (itself excluded; fewer when the
        type has no ``k`` others), by ``cos`` or ``dot``. Uses the faiss index of the type
        and measure when one is stored (``graphsys embed index``; approximate for ivf and
        hnsw), else (or with ``exact``) a blocked matmul (no ``N x N`` matrix).

        One id: returns (original ids list, float32 scores ``(k,)``), best first. A
        sequence of ids (list, array): one batched search, returning (ids ``(q, k)``:
        an int64 array, or a list of lists for string ids; float32 scores ``(q, k)``)."""
        if by not in ("cos", "dot"):
            raise GraphsysError(f"by must be cos or dot, got {by!r}")
        if k < 1:
            raise GraphsysError(f"k must be positive, got {k}")
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
        """Tail-prediction score ``comparator(op_rel(head), tail)`` of triples of original ids
        (scalars or equal-length sequences); float32 ``(k,)`` or a float."""
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

    def predict_tails(self, head, rel, k: int = 10, *, filter=None):
        """The ``k`` best tails of ``(head, rel, ?)`` over all entities of the rhs type,
        exact (blocked matmul). ``head`` one original id (then ``(ids list, float32 (k,))``)
        or a sequence (then ``(ids (q, k), float32 (q, k))``, as :meth:`nearest`); ``rel``
        a relation name or index, or one per head. ``filter``: ``None``, ``True`` (every
        edge set of the graph), an edge set name or a list of them: tails forming a triple
        with ``(head, rel)`` there are left out (known facts; scores -inf past the end
        when fewer than ``k`` remain)."""
        return self._predict("rhs", head, rel, k, filter)

    def predict_heads(self, rel, tail, k: int = 10, *, filter=None):
        """The ``k`` best heads of ``(?, rel, tail)`` over all entities of the lhs type,
        ranked by ``comparator(op_rel^lhs(tail), head)`` (the head-side operator the
        training used); arguments and results as :meth:`predict_tails`."""
        return self._predict("lhs", tail, rel, k, filter)

    def _predict(self, side: str, anchor, rel, k: int, filter) -> tuple:
        if k < 1:
            raise GraphsysError(f"k must be positive, got {k}")
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
        exclude = None
        if filter is not None and filter is not False:
            exclude = self._known(filter, side).answers(r * self._filter_base() + a)
        ids, scores = self._topk_blocks(q, ct, min(k, self.num_entities(ct)),
                                        self.comparator, exclude)
        return self._answer(ids, scores, ct, single)

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
        """PBG's ``export_to_tsv`` format: ``id<TAB>v1<TAB>...`` per entity (all types), and
        ``relation<TAB>side<TAB>operator<TAB>param<TAB>shape<TAB>values...`` per relation
        parameter (values ``%.9f``), written as PBG writes a dynamic-relations model: side
        ``lhs`` holds the operator PBG applies to heads to rank tails (graphsys's ``rhs``
        one), ``rhs`` the one applied to tails, parameters carry PBG's dynamic names
        (``real``, ``imag``, ``diagonals``, ``translations``, ``linear_transformations``),
        rows side by side, then parameter by parameter, then relation by relation. Missing
        parent directories are created; each file appears whole or not at all.
        ``progress(n)`` is called after every ``n`` entity rows written."""
        with _export_file(entities_out) as tmp, open(tmp, "w") as f:
            for t in self.entity_types:
                offs = self._offsets[t]
                for p, part in enumerate(self.partitions(t)):
                    for start in range(offs[p], offs[p + 1], TSV_ROWS):
                        stop = min(start + TSV_ROWS, int(offs[p + 1]))
                        names = self.original(np.arange(start, stop), t)
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
        """Parquet with columns ``id`` and ``embedding`` (fixed-size list<float32>[d]);
        missing parent directories are created."""
        import pyarrow.parquet as pq

        t = self._etype(entity_type)
        ids = self.graph.node_ids(t)
        flat = pa.array(self.to_numpy(t).ravel(), pa.float32())
        table = pa.table({"id": ids, "embedding": pa.FixedSizeListArray.from_arrays(
            flat, self.dimension)})
        with _export_file(out) as tmp:
            pq.write_table(table, tmp)

    def export_numpy(self, out_dir: str | Path, entity_type: str | None = None) -> list[Path]:
        """``{type}.npy`` float32 ``(N, d)`` and ``{type}.ids.npy`` (int64, or fixed-width
        unicode for string ids), rows in the same order, in ``out_dir`` (created if missing);
        no pickle."""
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
    """Node embeddings of one entity type in Arrow files (the :data:`ARROW_FORMAT` layout
    ``graphsys gnn embed`` writes); the embedding columns are memory-mapped, read-only.
    No relation operators: ``score`` / ``predict_tails`` raise."""

    def __init__(self, path: Path, graph: Graph | None):
        index = path / ARROW_INDEX
        try:
            header = json.loads(index.read_text())
        except (OSError, ValueError) as exc:  # ValueError: bad JSON or UTF-8
            raise FormatError(f"{index}: unreadable ({exc})") from None
        if header.get("format") != ARROW_FORMAT:
            raise FormatError(f"{index}: unknown embeddings format {header.get('format')!r}")
        et = header["entity_type"]
        self.dimension = int(header["dimension"])
        parts = [self._read_part(path / rel) for rel in header["partitions"]]
        sizes = [len(x) for x in parts]
        if sum(sizes) != int(header["num_nodes"]):
            raise FormatError(f"{path}: partitions hold {sum(sizes)} rows, the index says "
                              f"{header['num_nodes']}")
        self.path, self.config, self._graph = path, None, None
        self.meta = {**header, "entity_types": {et: {"partition_sizes": sizes}}}
        if graph is not None:
            self._set_graph(graph)
        self.version = 0
        self.storage = self.comparator = self.relmodel = None
        self.entity_types = [et]
        self.relations, self.relation_names = [], []
        self._parts = {et: parts}
        self._indexes, self._filters = {}, {}
        self._offsets = {et: np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)}

    def _read_part(self, file: Path) -> np.ndarray:
        try:
            col = paipc.open_file(pa.memory_map(str(file))).read_all().column("embedding")
        except (OSError, KeyError, pa.ArrowException) as exc:
            raise FormatError(f"{file}: cannot read embeddings ({exc})") from None
        rows = [c.flatten().to_numpy().reshape(-1, self.dimension) for c in col.chunks]
        if len(rows) == 1:
            return require_finite(rows[0], file)
        out = np.concatenate(rows) if rows else np.zeros((0, self.dimension), np.float32)
        return require_finite(out, file)


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
