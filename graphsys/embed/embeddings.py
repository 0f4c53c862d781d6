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

from graphsys.embed.checkpoint import CheckpointStorage, check_graph, load_npy
from graphsys.embed.config import config_from_dict
from graphsys.embed.model import COMPARATORS
from graphsys.embed.relations import RelationModel
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
        self.relations = meta["relations"]
        self.relation_names = [r["name"] for r in self.relations]
        self.comparator = COMPARATORS.get_class(meta["comparator"])()
        self.relmodel = RelationModel([r["operator"] for r in self.relations], self.dimension)
        self.relmodel.load(self.storage, self.version, with_state=False)
        for side, g, k in self.relmodel.keys():
            if not bool(torch.isfinite(self.relmodel.params[side][g][k]).all()):
                raise FormatError(f"{self.storage.model_path(f'{side}.g{g}.{k}', self.version)}"
                                  f": non-finite relation parameter (NaN or infinity)")
        self._parts: dict[str, list[np.ndarray]] = {}
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
                raise GraphsysError(f"{self.path}: its graph {where} is gone; pass graph=DIR "
                                    f"(--graph) to map node ids")
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
            n = len(self.meta["entity_types"][t]["partition_sizes"])
            paths = [self.storage.emb_path(t, p, self.version) for p in range(n)]
            self._parts[t] = [require_finite(load_npy(f, mmap=True), f) for f in paths]
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
                     exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` candidates of ``etype`` for ``query`` ``(q, d)`` by blocked matmul;
        returns type-global ids int64 ``(q, k)`` and scores float32 ``(q, k)``."""
        best_s = torch.full((len(query), 0), float("-inf"))
        best_i = torch.zeros((len(query), 0), dtype=torch.long)
        offs = self._offsets[etype]
        for p, part in enumerate(self.partitions(etype)):
            for start in range(0, len(part), BLOCK_ROWS):
                block = torch.from_numpy(np.array(part[start:start + BLOCK_ROWS]))
                s = cmp.neg(query, cmp.prepare(block))
                ids = torch.arange(start, start + len(block)) + int(offs[p])
                if exclude is not None:
                    for qi, ex in enumerate(exclude):
                        if offs[p] + start <= ex < offs[p] + start + len(block):
                            s[qi, ex - offs[p] - start] = float("-inf")
                s = torch.cat([best_s, s], dim=1)
                ids = torch.cat([best_i, ids.expand(len(query), -1)], dim=1)
                kk = min(k, s.shape[1])
                best_s, pos = torch.topk(s, kk, dim=1)
                best_i = torch.gather(ids, 1, pos)
        return best_i.numpy(), best_s.numpy()

    def nearest(self, node_id, k: int = 10, *, by: str = "cos",
                entity_type: str | None = None) -> tuple[list, np.ndarray]:
        """The ``k`` entities most similar to ``node_id`` (itself excluded; fewer when the
        type has no ``k`` others), by ``cos`` or ``dot``, via blocked matmul (no ``N x N``
        matrix). Returns (original ids, float32 scores), best first."""
        if by not in ("cos", "dot"):
            raise GraphsysError(f"by must be cos or dot, got {by!r}")
        t = self._etype(entity_type)
        idx = self.internal([node_id], t)
        cmp = COMPARATORS.get_class(by)()
        q = cmp.prepare(torch.from_numpy(self.rows(idx, t)))
        k = min(k, self.num_entities(t) - 1)  # never the query itself
        ids, scores = self._topk_blocks(q, t, k, cmp, exclude=idx)
        return list(self.original(ids[0], t)), scores[0]

    def _query(self, side: str, x: np.ndarray, rel: np.ndarray) -> torch.Tensor:
        with torch.no_grad():
            q = self.relmodel.apply(side, torch.from_numpy(x), torch.from_numpy(rel))
            return self.comparator.prepare(q)

    def score(self, head, rel, tail) -> np.ndarray | float:
        """Tail-prediction score ``comparator(op_rel(head), tail)`` of triples of original ids
        (scalars or equal-length sequences); float32 ``(k,)`` or a float."""
        scalar = np.isscalar(head) or isinstance(head, str)
        heads = [head] if scalar else list(head)
        tails = [tail] if scalar else list(tail)
        rels = [rel] * len(heads) if np.isscalar(rel) or isinstance(rel, str) else list(rel)
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

    def predict_tails(self, head, rel, k: int = 10) -> tuple[list, np.ndarray]:
        """The ``k`` best tails of ``(head, rel, ?)`` over all entities of the rhs type:
        (original ids, float32 scores), best first."""
        r = self._relation(rel)
        lt, rt = self.relations[r]["lhs"], self.relations[r]["rhs"]
        q = self._query("rhs", self.vectors([head], lt), np.array([r], np.int64))
        ids, scores = self._topk_blocks(q, rt, k, self.comparator)
        return list(self.original(ids[0], rt)), scores[0]

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
        from graphsys.embed.pbg import PBG_DYNAMIC_NAME, pbg_side

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
