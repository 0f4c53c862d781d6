"""Out-of-core ingest of edge lists into a partitioned graph directory.

Three streaming passes, each bounded by ``IngestOptions.memory_limit`` apart from O(N)
node arrays (ids, partition and local offset of every node). Each pass's edge buffer holds at
most ``memory_limit / 8`` bytes, since sorting and grouping make transient copies of it:

1. **read**: parse every input block, validate it (column count, empty ids, numeric weights,
   known relations), collect the node ids of each entity type, and spill the parsed columns
   to temporary Arrow files (so the text is parsed once).
2. **route**: map ids to dense node indices, let the partitioner assign partitions, compute
   local offsets, add reverse edges (``undirected``), drop self-loops, and append each edge
   to its bucket as a run (one run per flush of the in-memory buffer, in input order).
3. **merge**: per bucket, read its runs whole and sort them when that fits half the budget
   (the common case: a bucket holds ~M/P² edges), else sort each run in place and k-way
   merge them (dedupe on ``(src, dst, rel)`` if asked, keeping the first in input order), and
   write the bucket's Arrow IPC file in record batches of at most ``max_batch_rows`` rows.

Everything is written into a staging directory beside ``out``; the manifest is written last
and the directory renamed into place only when complete (see :mod:`graphsys.storage.atomic`).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as paipc
from tqdm import tqdm

import partitioners
from graphsys.errors import GraphsysError, InputError, ParameterError
from graphsys.memory import lifetime_peak_rss
from graphsys.storage import kernels
from graphsys.storage.atomic import (
    sha256_file, staging_directory, sync_filesystem, write_bytes_atomic,
)
from graphsys.storage.format import (
    DEFAULT_EDGE_SET, DEFAULT_ENTITY_TYPE, DEFAULT_MAX_BATCH_ROWS, DEFAULT_RELATION, MANIFEST,
    MAX_PARTITIONS, EdgeSet, EntityType, Manifest, NodeColumn, RelationType, bucket_file,
    node_file,
)
from graphsys.storage.readers import (
    FORMATS, MEMORY, NeedCarefulRead, default_table_roles, detect_format, read_memory,
    read_table, read_text,
)

#: Transient copies an edge buffer goes through (concatenate, group by bucket, sort,
#: convert): each phase's buffer is sized at ``memory_limit / _COPIES`` bytes.
_COPIES = 8
_NO_I32 = np.zeros(0, np.int32)
_NO_F32 = np.zeros(0, np.float32)
#: Largest partition: local offsets are stored as int32.
MAX_PARTITION_NODES = 2**31 - 1


@dataclass
class EdgeSource:
    """One edge input: files of one edge set, and how to read their columns.

    Columns are named (header / Parquet name) or 0-based indices; defaults: src = first
    column (or ``src``), dst = second (or ``dst``). ``relation`` gives every edge of this
    source one relation when there is no ``rel_col``. Instead of ``paths``, ``table`` may
    hold the edges in memory (a :class:`pyarrow.Table` or record batches; ids as integer or
    string columns), read by the same passes; errors then name row numbers of ``table``.
    """

    paths: Sequence[str | Path] = ()
    edge_set: str = DEFAULT_EDGE_SET
    format: str = "auto"
    src_col: str | int | None = None
    dst_col: str | int | None = None
    rel_col: str | int | None = None
    weight_col: str | int | None = None
    relation: str | None = None
    delimiter: str | None = None
    header: bool | None = None
    comment: str = "#%"
    table: Any = None


@dataclass
class NodeSource:
    """A table of nodes of one entity type: column ``id`` plus optional node columns.

    Column kinds by Arrow type: fixed-size list of float32 = features, integer = label
    (-1 = unknown), bool = mask. Nodes that only appear in edges get zeros / -1 / False.
    """

    table: pa.Table
    entity_type: str = DEFAULT_ENTITY_TYPE


@dataclass
class IngestOptions:
    """Options of :func:`ingest`; ``memory_limit`` is in bytes."""

    num_partitions: int = 1
    partitioner: str = "hash"
    partitioner_params: dict[str, Any] | None = None
    seed: int = 0
    undirected: bool = False
    dedupe: bool = False
    drop_self_loops: bool = False
    memory_limit: int = 2_000_000_000
    on_bad_line: str = "error"
    progress: bool = False
    relation_types: list[RelationType] | None = None
    max_batch_rows: int = DEFAULT_MAX_BATCH_ROWS
    #: JSON-able provenance stored as the manifest's ``metadata`` field.
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class IngestReport:
    """What an ingest built and what it cost (seconds, bytes, peak RSS in bytes)."""

    out: str
    nodes: dict[str, int]
    edges: dict[str, int]
    num_partitions: int
    partitioner: dict[str, Any]
    skipped_lines: int
    input_bytes: int
    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# ---------------------------------------------------------------------------------------------
# node id collection (pass 1)


class _IdCollector:
    """The set of original ids of one entity type, built batch by batch.

    Integer ids in [0, cap) are marked in a byte map; other integers go to sorted runs that are
    merged when they grow; any non-integer id turns the type into a string-id type (integers
    then compare by their decimal text).
    """

    def __init__(self, name: str, memory_limit: int):
        self.name = name
        self.cap = min(2**32, max(memory_limit // 4, 1 << 20))
        self.seen = np.zeros(1 << 16, np.uint8)
        self.bytemap = True
        self.int_runs: list[np.ndarray] = []
        self.str_runs: list[pa.Array] = []
        self.is_string = False
        self._pending = 0
        self._compact_at = max(memory_limit // 32, 1 << 20)

    def add(self, ids: np.ndarray | pa.Array) -> None:
        if isinstance(ids, np.ndarray):
            if self.is_string:
                self.str_runs.append(pc.unique(pa.array(ids).cast(pa.large_string())))
                self._maybe_compact(len(ids))
                return
            if self.bytemap and len(ids):
                lo, hi = int(ids.min()), int(ids.max())
                if lo >= 0 and hi < self.cap:
                    if hi >= len(self.seen):
                        grown = np.zeros(max(hi + 1, 2 * len(self.seen)), np.uint8)
                        grown[: len(self.seen)] = self.seen
                        self.seen = grown
                    kernels.mark_seen(ids, self.seen)
                    return
                self.bytemap = False
                self.int_runs.append(np.flatnonzero(self.seen).astype(np.int64))
                self.seen = np.zeros(0, np.uint8)
            if not self.bytemap:
                self.int_runs.append(np.unique(ids))
                self._maybe_compact(len(ids))
        else:
            if not self.is_string:
                self._to_strings()
            self.str_runs.append(pc.unique(ids.cast(pa.large_string())))
            self._maybe_compact(len(ids))

    def _to_strings(self) -> None:
        ints = self._int_ids()
        self.is_string = True
        self.bytemap = False
        self.seen = np.zeros(0, np.uint8)
        self.int_runs = []
        self.str_runs = [pa.array(ints).cast(pa.large_string())] if len(ints) else []

    def _maybe_compact(self, n: int) -> None:
        self._pending += n
        if self._pending >= self._compact_at:
            self._pending = 0
            if self.is_string:
                self.str_runs = [pc.unique(pa.chunked_array(self.str_runs,
                                                            pa.large_string()).combine_chunks())]
            else:
                self.int_runs = [np.unique(np.concatenate(self.int_runs))]

    def _int_ids(self) -> np.ndarray:
        if self.bytemap:
            return np.flatnonzero(self.seen).astype(np.int64)
        return np.unique(np.concatenate(self.int_runs)) if self.int_runs else np.zeros(0, np.int64)

    def finish(self) -> _IdIndex:
        if self.is_string:
            arr = (pa.chunked_array(self.str_runs, pa.large_string()).combine_chunks()
                   if self.str_runs else pa.array([], pa.large_string()))
            arr = pc.unique(arr)
            arr = arr.take(pc.sort_indices(arr))
            return _IdIndex(self.name, arr, None)
        ids = self._int_ids()
        dense = None
        if self.bytemap and len(ids):
            dense = np.full(int(ids[-1]) + 1, -1, np.int64)
            dense[ids] = np.arange(len(ids), dtype=np.int64)
        return _IdIndex(self.name, ids, dense)


@dataclass
class _IdIndex:
    """Sorted unique ids of one entity type and the map from original id to dense index."""

    name: str
    ids: np.ndarray | pa.Array
    dense: np.ndarray | None  # direct lookup table for small non-negative integer ids

    @property
    def is_string(self) -> bool:
        return not isinstance(self.ids, np.ndarray)

    def __len__(self) -> int:
        return len(self.ids)

    def lookup(self, values: np.ndarray | pa.Array) -> np.ndarray:
        """Dense index (int64) of every id; every id must be present."""
        if self.is_string:
            if isinstance(values, np.ndarray):
                values = pa.array(values).cast(pa.large_string())
            out = kernels.lookup_strings(self.ids, values)
        elif self.dense is not None:
            out = kernels.gather(self.dense, values, np.empty(len(values), self.dense.dtype))
        else:
            out = kernels.lookup_ints(self.ids, values)
        return out


# ---------------------------------------------------------------------------------------------
# the partition context handed to partitioners


class _Context:
    """:class:`partitioners.base.PartitionContext` over the spilled edges of one entity type."""

    def __init__(self, job: _IngestJob, etype: str):
        self._job = job
        self._etype = etype
        self.ids = job.index[etype].ids
        self.num_nodes = len(job.index[etype])
        self.memory_limit = job.opts.memory_limit
        self._degrees: np.ndarray | None = None

    def degrees(self) -> np.ndarray:
        if self._degrees is None:
            deg = np.zeros(self.num_nodes, np.int64)
            for src, dst, lhs, rhs in self._job.iter_dense_edges():
                if lhs == self._etype:
                    kernels.count_into(src, deg)
                if rhs == self._etype:
                    kernels.count_into(dst, deg)
            self._degrees = deg
        return self._degrees

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.num_nodes
        counts = np.zeros(n, np.int64)
        for src, dst, lhs, rhs in self._job.iter_dense_edges():
            if lhs == rhs == self._etype:
                kernels.count_into(src, counts)
                kernels.count_into(dst, counts)
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        path = self._job.spill / f"adjacency-{self._etype}.bin"
        total = int(indptr[-1])
        indices = (np.memmap(path, dtype=np.int64, mode="w+", shape=(total,)) if total
                   else np.zeros(0, np.int64))
        cursor = indptr[:-1].copy()
        no_w, no_perm = np.zeros(0, np.float32), np.zeros(0, np.int64)
        for src, dst, lhs, rhs in self._job.iter_dense_edges():
            if lhs == rhs == self._etype:
                kernels.csr_fill(src, dst, cursor, indices, no_w, no_w, no_perm, 0)
                kernels.csr_fill(dst, src, cursor, indices, no_w, no_w, no_perm, 0)
        return indptr, indices


# ---------------------------------------------------------------------------------------------
# the ingest job


@dataclass
class _Spill:
    path: Path
    edge_set: str
    rel_fixed: int | None  # relation index when the source has no rel column
    has_weight: bool


class _IngestJob:
    def __init__(self, edges: Sequence[EdgeSource], nodes: Sequence[NodeSource],
                 opts: IngestOptions, staging: Path):
        self.sources = list(edges)
        self.node_sources = list(nodes)
        self.opts = opts
        self.staging = staging
        self.spill = staging / ".spill"
        self.spill.mkdir()
        self.relations: list[RelationType] = list(opts.relation_types or [])
        self.rel_index = {r.name: k for k, r in enumerate(self.relations)}
        self.fixed_relations = opts.relation_types is not None
        self.entity_types: list[str] = []
        for r in self.relations:
            for t in (r.lhs, r.rhs):
                if t not in self.entity_types:
                    self.entity_types.append(t)
        for ns in self.node_sources:
            if ns.entity_type not in self.entity_types:
                self.entity_types.append(ns.entity_type)
        self.collectors: dict[str, _IdCollector] = {}
        self.index: dict[str, _IdIndex] = {}
        self.spills: list[_Spill] = []
        self.skipped = 0
        self.edge_set_skipped: dict[str, int] = {}
        self.input_bytes = 0
        self.has_rel: dict[str, bool] = {}
        self.has_weight: dict[str, bool] = {}

    # -- relations / types ---------------------------------------------------------------
    def relation(self, name: str, where: str) -> int:
        k = self.rel_index.get(name)
        if k is None:
            if self.fixed_relations:
                raise InputError(f"unknown relation {name!r} (declared relations: "
                                 f"{', '.join(self.rel_index)})", path=where)
            k = len(self.relations)
            self.relations.append(RelationType(name, DEFAULT_ENTITY_TYPE, DEFAULT_ENTITY_TYPE))
            self.rel_index[name] = k
            if DEFAULT_ENTITY_TYPE not in self.entity_types:
                self.entity_types.append(DEFAULT_ENTITY_TYPE)
        return k

    def collector(self, etype: str) -> _IdCollector:
        if etype not in self.collectors:
            self.collectors[etype] = _IdCollector(etype, self.opts.memory_limit)
        return self.collectors[etype]

    # -- pass 1 ----------------------------------------------------------------------------
    def read_all(self) -> None:
        for ns in self.node_sources:
            if "id" not in ns.table.column_names:
                raise InputError(f"node table for entity type {ns.entity_type!r} has no 'id' "
                                 f"column")
            ids = ns.table.column("id").combine_chunks()
            if ids.null_count:
                raise InputError(f"node table for {ns.entity_type!r}: null id")
            self.collector(ns.entity_type).add(_ids_array(ids))
        paths = [(src, Path(p)) for src in self.sources for p in src.paths]
        for _, path in paths:
            if not path.is_file():
                raise InputError("no such file", path=path)
        total = sum(p.stat().st_size for _, p in paths)
        self.input_bytes = total
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="read", disable=not self.opts.progress)
        done_before = 0
        for n_src, (src, path) in enumerate(paths):
            fmt = detect_format(path, src.format)
            if fmt not in FORMATS:
                raise GraphsysError(f"unknown format {src.format!r} (choose from "
                                    f"{', '.join(FORMATS)})")
            size = path.stat().st_size

            def progress(pos: int, base=done_before) -> None:
                bar.n = min(base + pos, total)
                bar.refresh()

            self._read_source(src, path, fmt, n_src, progress)
            done_before += size
        bar.close()
        for n_src, src in enumerate((s for s in self.sources if s.table is not None),
                                    start=len(paths)):
            if src.paths:
                raise GraphsysError(f"edge set {src.edge_set!r}: give paths or an in-memory "
                                    f"table, not both")
            self._read_source(src, Path(f"<in-memory edges {src.edge_set}>"), MEMORY, n_src,
                              lambda pos: None)
        if not self.spills and not self.node_sources:
            raise InputError("no input edges")
        if not self.entity_types:
            self.entity_types.append(DEFAULT_ENTITY_TYPE)
        # a rel column is stored iff the graph has several relation types
        self.has_rel = {s.edge_set: len(self.relations) > 1 for s in self.sources}
        for etype in self.entity_types:
            self.index[etype] = self.collector(etype).finish()
            if len(self.index[etype]) == 0 and len(self.entity_types) == 1:
                raise InputError("empty input: no edges and no nodes")

    def _read_source(self, src: EdgeSource, path: Path, fmt: str, n_src: int, progress) -> None:
        if src.rel_col is not None and src.relation is not None:
            raise GraphsysError("give either a relation column or a fixed relation, not both")
        fixed = None
        if src.rel_col is None:
            fixed = self.relation(src.relation or DEFAULT_RELATION, str(path))
        self.has_weight.setdefault(src.edge_set, False)
        if src.weight_col is not None:
            self.has_weight[src.edge_set] = True
        text = fmt in ("tsv", "csv")
        for careful in ((False, True) if text else (True,)):
            bad: list[int] = []
            if text:
                roles = {"src": 0 if src.src_col is None else src.src_col,
                         "dst": 1 if src.dst_col is None else src.dst_col,
                         "rel": src.rel_col, "weight": src.weight_col}
                batches = read_text(path, fmt, roles, delimiter=src.delimiter,
                                    header=src.header, comment=src.comment,
                                    on_bad_line=self.opts.on_bad_line, progress=progress,
                                    bad_lines=bad, careful=careful)
            else:
                roles = {"src": src.src_col, "dst": src.dst_col, "rel": src.rel_col,
                         "weight": src.weight_col}
                batches = (read_memory(src.table, str(path), roles) if fmt == MEMORY
                           else self._table_batches(path, fmt, roles, progress))
            first_spill = len(self.spills)
            try:
                skipped = self._spill_batches(batches, path, src, fixed, n_src)
                break
            except NeedCarefulRead:
                # read again on the careful path: discard what the fast path spilled
                for sp in self.spills[first_spill:]:
                    sp.path.unlink(missing_ok=True)
                del self.spills[first_spill:]
        skipped += len(bad)
        self.skipped += skipped
        self.edge_set_skipped[src.edge_set] = self.edge_set_skipped.get(src.edge_set, 0) + skipped

    def _spill_batches(self, batches, path: Path, src: EdgeSource, fixed: int | None,
                       n_src: int) -> int:
        """Validate and spill every batch; return the number of rows dropped."""
        skipped = 0
        for k, batch in enumerate(batches):
            cols, dropped = self._validate(batch, path, fixed)
            skipped += dropped
            if len(cols["src"]) == 0:
                continue
            spill_path = self.spill / f"in-{n_src:04d}-{k:06d}.arrow"
            table = pa.table({name: (pa.array(v) if isinstance(v, np.ndarray) else v)
                              for name, v in cols.items()})
            with paipc.new_file(str(spill_path), table.schema) as w:
                w.write_table(table)
            self.spills.append(_Spill(spill_path, src.edge_set, fixed,
                                      src.weight_col is not None))
        return skipped

    def _table_batches(self, path, fmt, roles, progress):
        import pyarrow.parquet as pq

        try:
            names = (pq.ParquetFile(str(path)).schema_arrow.names if fmt == "parquet"
                     else _ipc_names(path))
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"cannot read as {fmt} ({' '.join(str(exc).split())[:200]})",
                             path=path) from None
        return read_table(path, fmt, default_table_roles(roles, names), progress)

    def _validate(self, batch, path: Path, fixed: int | None) -> tuple[dict[str, Any], int]:
        """Check one batch; return its columns (ids as int64 ndarray or string array, rel
        int32, weight float32) and the number of rows dropped. Bad rows raise, or are
        dropped with ``on_bad_line="skip"``."""
        n = batch.num_rows
        bad = np.zeros(n, bool)
        problems: list[tuple[int, str]] = []
        cols: dict[str, Any] = {}
        for role in ("src", "dst"):
            arr = _id_column(batch.columns[role], role, path)
            if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
                empty = pc.fill_null(pc.equal(pc.utf8_length(arr), 0), True)
                nul = pc.fill_null(pc.match_substring(arr, "\x00"), False).to_numpy(
                    zero_copy_only=False)
                if nul.any():
                    problems.append((int(np.flatnonzero(nul)[0]), f"NUL byte in {role} id"))
                    bad |= nul
            else:
                empty = pc.is_null(arr)
            empty = empty.to_numpy(zero_copy_only=False)
            if empty.any():
                i = int(np.flatnonzero(empty)[0])
                problems.append((i, f"empty {role} id"))
                bad |= empty
            cols[role] = arr
        if "weight" in batch.columns:
            w = batch.columns["weight"]
            if isinstance(w, pa.ChunkedArray):
                w = w.combine_chunks()
            if pa.types.is_floating(w.type) or pa.types.is_integer(w.type):
                wv = w.cast(pa.float64())
                nulls = pc.is_null(wv).to_numpy(zero_copy_only=False)
                weights = pc.fill_null(wv, 0.0).to_numpy()
            else:
                try:
                    weights = pc.cast(w, pa.float64()).to_numpy(zero_copy_only=False)
                    nulls = np.isnan(weights) & ~_is_nan_text(w)
                except pa.ArrowInvalid:
                    weights, nulls = _parse_floats(w)
            if nulls.any():
                i = int(np.flatnonzero(nulls)[0])
                problems.append((i, f"non-numeric weight {_value(batch.columns['weight'], i)!r}"))
                bad |= nulls
            with np.errstate(over="ignore"):
                weights = weights.astype(np.float32)
            infinite = ~nulls & ~np.isfinite(weights)
            if infinite.any():  # NaN, +-inf, or beyond float32
                i = int(np.flatnonzero(infinite)[0])
                problems.append((i, f"non-finite weight {_value(batch.columns['weight'], i)!r} "
                                    f"(as float32)"))
                bad |= infinite
            cols["weight"] = weights.astype(np.float32)
        if "rel" in batch.columns:
            r = batch.columns["rel"]
            if isinstance(r, pa.ChunkedArray):
                r = r.combine_chunks()
            r = r.cast(pa.large_string())
            empty = pc.fill_null(pc.equal(pc.utf8_length(r), 0), True).to_numpy(
                zero_copy_only=False)
            if empty.any():
                problems.append((int(np.flatnonzero(empty)[0]), "empty relation"))
                bad |= empty
            enc = r.dictionary_encode()
            mapping = np.array([self.relation(str(v), str(path)) if v.is_valid and str(v) else -1
                                for v in enc.dictionary] or [0], np.int32)
            codes = pc.fill_null(enc.indices, 0).to_numpy(zero_copy_only=False)
            cols["rel"] = mapping[codes] if len(enc.dictionary) else np.zeros(n, np.int32)
        if problems:
            if self.opts.on_bad_line == "error":
                if batch.line_of is None:
                    raise NeedCarefulRead(problems[0][1])
                i, what = min(problems)
                raise InputError(what, path=path, line=batch.line_of(i))
            keep = ~bad
            cols = {k: (v.filter(pa.array(keep)) if isinstance(v, pa.Array) else v[keep])
                    for k, v in cols.items()}
        # ids: integers when every id parses as one, else strings
        for role in ("src", "dst"):
            cols[role] = _ids_array(cols[role])
        rel = cols.get("rel")
        for role in ("src", "dst"):
            ids = cols[role]
            side = "lhs" if role == "src" else "rhs"
            if rel is None:
                self.collector(getattr(self.relations[fixed], side)).add(ids)
                continue
            types = np.array([getattr(self.relations[k], side) for k in range(len(self.relations))])
            row_types = types[rel]
            for etype in np.unique(row_types):
                mask = row_types == etype
                self.collector(str(etype)).add(
                    ids if mask.all() else _take(ids, mask))
        return cols, int(bad.sum())

    # -- passes 2 and 3 ----------------------------------------------------------------------
    def iter_dense_edges(self, edge_set: str | None = None):
        """Yield (src, dst, lhs_type, rhs_type) dense-index chunks of every spilled batch,
        grouped so that every chunk has one (lhs, rhs) entity type pair."""
        for sp in self.spills:
            if edge_set is not None and sp.edge_set != edge_set:
                continue
            table = paipc.open_file(pa.memory_map(str(sp.path))).read_all()
            rel = (table.column("rel").to_numpy() if "rel" in table.column_names
                   else None)
            src_ids = _ids_array(table.column("src").combine_chunks())
            dst_ids = _ids_array(table.column("dst").combine_chunks())
            for (lhs, rhs), mask in self._type_groups(sp, rel):
                s = src_ids if mask is None else _take(src_ids, mask)
                d = dst_ids if mask is None else _take(dst_ids, mask)
                yield self.index[lhs].lookup(s), self.index[rhs].lookup(d), lhs, rhs

    def _type_groups(self, sp: _Spill, rel: np.ndarray | None):
        """Split a spilled batch by the (lhs, rhs) entity types of its rows' relations:
        yields ((lhs, rhs), row mask or None for all rows)."""
        if rel is None:
            r = self.relations[sp.rel_fixed]
            yield (r.lhs, r.rhs), None
            return
        pairs = [(r.lhs, r.rhs) for r in self.relations]
        if len(set(pairs)) == 1:
            yield pairs[0], None
            return
        codes = {pair: k for k, pair in enumerate(dict.fromkeys(pairs))}
        row_pair = np.array([codes[pair] for pair in pairs], np.int32)[rel]
        for pair, k in codes.items():
            mask = row_pair == k
            if mask.all():
                yield pair, None
            elif mask.any():
                yield pair, mask

    def partition(self) -> dict[str, Any]:
        p = self.opts.num_partitions
        params = dict(self.opts.partitioner_params or {})
        try:
            strategy = partitioners.get_partitioner(self.opts.partitioner, p,
                                                    seed=self.opts.seed, **params)
        except ValueError as exc:
            raise GraphsysError(f"partitioner: {exc}") from None
        self.part: dict[str, np.ndarray] = {}
        self.local: dict[str, np.ndarray] = {}
        self.sizes: dict[str, list[int]] = {}
        for etype in self.entity_types:
            if p == 1:
                part = np.zeros(len(self.index[etype]), np.int32)
            else:
                part = np.ascontiguousarray(strategy.assign(_Context(self, etype)), np.int32)
                if part.shape != (len(self.index[etype]),) or (
                        len(part) and (part.min() < 0 or part.max() >= p)):
                    raise GraphsysError(f"partitioner {strategy.name!r} returned an invalid "
                                        f"assignment")
            local, sizes = kernels.local_offsets(part, p)
            if sizes.max(initial=0) > MAX_PARTITION_NODES:
                raise GraphsysError(f"entity type {etype!r}: a partition would hold "
                                    f"{int(sizes.max())} nodes (> 2**31-1): use more partitions")
            self.part[etype], self.local[etype] = part, local
            self.sizes[etype] = [int(s) for s in sizes]
        return {"name": strategy.name, "params": strategy.params()}

    def route(self, edge_set: str) -> _Routed:
        """Pass 2 for one edge set: map, partition and sort edges into buckets.

        While the edge set fits the buffer (a quarter of the memory limit), its sorted buckets
        stay in memory; past that, each full buffer becomes one sorted run per bucket on disk.
        """
        p = self.opts.num_partitions
        has_rel, has_weight = self.has_rel[edge_set], self.has_weight[edge_set]
        row_bytes = 4 + 8 + (4 if has_rel else 0) + (4 if has_weight else 0)
        flush_rows = max(self.opts.memory_limit // (_COPIES * row_bytes), 1 << 16)
        routed = _Routed(self.spill / f"runs-{edge_set}", has_rel, has_weight)
        routed.rundir.mkdir()
        pending: list[tuple[np.ndarray, ...]] = []
        pending_rows = 0

        def flush(final: bool) -> None:
            nonlocal pending, pending_rows
            if not pending:
                return
            bucket = np.concatenate([x[0] for x in pending])
            key = np.concatenate([x[1] for x in pending])
            rel = np.concatenate([x[2] for x in pending]) if has_rel else None
            weight = np.concatenate([x[3] for x in pending]) if has_weight else None
            pending, pending_rows = [], 0
            starts, key, rel, weight = kernels.group_by_bucket(
                bucket, p * p, key, rel if has_rel else _NO_I32,
                weight if has_weight else _NO_F32)
            del bucket
            in_memory = final and not routed.runs
            for b in np.flatnonzero(np.diff(starts)):
                lo, hi = starts[b], starts[b + 1]
                if in_memory:
                    routed.memory[int(b)] = _sorted_columns(
                        key[lo:hi], rel[lo:hi] if has_rel else None,
                        weight[lo:hi] if has_weight else None, self.opts.dedupe)
                else:  # unsorted, in input order: sorted once per bucket when it is written
                    cols = {"key": key[lo:hi]}
                    if has_rel:
                        cols["rel"] = rel[lo:hi]
                    if has_weight:
                        cols["weight"] = weight[lo:hi]
                    routed.append_run(int(b), cols)

        for sp in self.spills:
            if sp.edge_set != edge_set:
                continue
            table = paipc.open_file(pa.memory_map(str(sp.path))).read_all()
            rel_all = table.column("rel").to_numpy() if "rel" in table.column_names else None
            w_all = table.column("weight").to_numpy() if "weight" in table.column_names else (
                np.ones(table.num_rows, np.float32) if has_weight else None)
            src_ids = _ids_array(table.column("src").combine_chunks())
            dst_ids = _ids_array(table.column("dst").combine_chunks())
            for (lhs, rhs), mask in self._type_groups(sp, rel_all):
                s = self.index[lhs].lookup(src_ids if mask is None else _take(src_ids, mask))
                d = self.index[rhs].lookup(dst_ids if mask is None else _take(dst_ids, mask))
                r = None
                if has_rel:
                    r = (np.full(len(s), sp.rel_fixed, np.int32) if rel_all is None else
                         rel_all if mask is None else rel_all[mask])
                w = None if w_all is None else (w_all if mask is None else w_all[mask])
                if self.opts.drop_self_loops and lhs == rhs:
                    keep = s != d
                    s, d = s[keep], d[keep]
                    r = r[keep] if r is not None else None
                    w = w[keep] if w is not None else None
                if self.opts.undirected:
                    back = s != d
                    s, d = np.concatenate([s, d[back]]), np.concatenate([d, s[back]])
                    r = np.concatenate([r, r[back]]) if r is not None else None
                    w = np.concatenate([w, w[back]]) if w is not None else None
                bucket, key = kernels.bucket_keys(s, d, self.part[lhs], self.part[rhs],
                                                  self.local[lhs], self.local[rhs], p)
                pending.append((bucket, key, r, None if w is None else w.astype(np.float32)))
                pending_rows += len(key)
                if pending_rows >= flush_rows:
                    flush(final=False)
        flush(final=True)
        return routed

    def write_bucket(self, routed: _Routed, b: int, edge_set: str, out: Path) -> int:
        """Pass 3 for one bucket: write it from memory, or sort (or k-way merge) its runs, into
        the bucket's Arrow file. Returns the number of edges written."""
        writer = _BucketWriter(out, routed.has_rel, routed.has_weight, self.batch_rows(edge_set))
        with writer:
            if b in routed.memory:
                writer.write(routed.memory.pop(b))
            elif self._bucket_fits(routed, b):
                cols = routed.read_all(b)
                writer.write(_sorted_columns(cols["key"], cols.get("rel"), cols.get("weight"),
                                             self.opts.dedupe))
            else:
                routed.sort_runs(b)
                self._merge_runs(routed, b, writer)
        return writer.rows

    def _bucket_fits(self, routed: _Routed, b: int) -> bool:
        """Whether a bucket's runs, read whole and sorted (argsort and gathered copies:
        about three times its bytes plus 8 per row), stay within half the budget."""
        rows = sum(routed.runs[b])
        row_bytes = sum(np.dtype(dt).itemsize for _, dt in routed.fields)
        return rows * (3 * row_bytes + 8) <= self.opts.memory_limit // 2

    def _merge_runs(self, routed: _Routed, b: int, writer: _BucketWriter) -> None:
        lengths = routed.runs[b]
        fields = routed.fields
        row_bytes = sum(np.dtype(dt).itemsize for _, dt in fields)
        block = max(self.opts.memory_limit // (_COPIES * row_bytes * len(lengths)), 1 << 12)
        runs = [_RunReader(routed.rundir, b, fields, start, n)
                for start, n in zip(np.cumsum([0] + lengths[:-1]), lengths)]
        last: tuple[int, int] | None = None
        while True:
            for run in runs:
                run.fill(block)
            live = [r for r in runs if r.buffered]
            if not live:
                break
            # every buffered key below the smallest last-buffered key of the runs that still
            # have unread rows is final: no unread row can sort before it
            open_runs = [r for r in runs if not r.exhausted]
            bound = min((int(r.buf["key"][-1]) for r in open_runs), default=None)
            take = [len(r.buf["key"]) if bound is None else
                    int(np.searchsorted(r.buf["key"], np.uint64(bound), side="left"))
                    for r in live]
            if sum(take) == 0:  # a long run of equal keys at the bound: read further
                for r in open_runs:
                    if int(r.buf["key"][-1]) == bound:
                        r.fill(len(r.buf["key"]) + block)
                continue
            cols = {f: np.concatenate([r.buf[f][:n] for r, n in zip(live, take)])
                    for f, _ in fields}
            for r, n in zip(live, take):
                r.consume(n)
            cols = _sorted_columns(cols["key"], cols.get("rel"), cols.get("weight"),
                                   self.opts.dedupe, presorted=len(live) == 1, sorted_runs=True)
            if self.opts.dedupe and last is not None and len(cols["key"]):
                first = (int(cols["key"][0]), int(cols["rel"][0]) if "rel" in cols else 0)
                if first == last:
                    cols = {f: v[1:] for f, v in cols.items()}
            if len(cols["key"]):
                last = (int(cols["key"][-1]), int(cols["rel"][-1]) if "rel" in cols else 0)
                writer.write(cols)

    def batch_rows(self, edge_set: str) -> int:
        """Rows per record batch of this edge set's bucket files: ``max_batch_rows``, or less
        so that writing one batch (key, columns and their conversions) stays in budget."""
        row_bytes = 8 + (4 if self.has_rel[edge_set] else 0) + (
            4 if self.has_weight[edge_set] else 0)
        return int(min(self.opts.max_batch_rows,
                       max(self.opts.memory_limit // (2 * _COPIES * row_bytes), 1 << 12)))


class _Routed:
    """The buckets of one edge set after routing: sorted in memory, or runs on disk in input
    order (``rundir/{b}.key``, ``.rel``, ``.weight``; ``runs[b]`` = the runs' lengths), sorted
    when the bucket is written."""

    def __init__(self, rundir: Path, has_rel: bool, has_weight: bool):
        self.rundir = rundir
        self.has_rel, self.has_weight = has_rel, has_weight
        self.fields = [("key", np.uint64)] + ([("rel", np.int32)] if has_rel else []) + (
            [("weight", np.float32)] if has_weight else [])
        self.runs: dict[int, list[int]] = {}
        self.memory: dict[int, dict[str, np.ndarray]] = {}

    @property
    def buckets(self) -> list[int]:
        return sorted(set(self.runs) | set(self.memory))

    def append_run(self, b: int, cols: dict[str, np.ndarray]) -> None:
        for f, _ in self.fields:
            with open(self.rundir / f"{b}.{f}", "ab") as fh:
                cols[f].tofile(fh)
        self.runs.setdefault(b, []).append(len(cols["key"]))

    def read_all(self, b: int) -> dict[str, np.ndarray]:
        """Every row of bucket ``b``'s runs, in the order they were appended."""
        return {f: np.fromfile(self.rundir / f"{b}.{f}", dtype=dt) for f, dt in self.fields}

    def sort_runs(self, b: int) -> None:
        """Sort each of bucket ``b``'s runs in place (stably: input order among equal
        edges is kept, so a dedupe in the merge keeps the first), one run in memory at a
        time, so that they can be k-way merged."""
        start = 0
        for n in self.runs[b]:
            cols = {}
            for f, dt in self.fields:
                with open(self.rundir / f"{b}.{f}", "rb") as fh:
                    fh.seek(start * np.dtype(dt).itemsize)
                    cols[f] = np.fromfile(fh, dtype=dt, count=n)
            cols = _sorted_columns(cols["key"], cols.get("rel"), cols.get("weight"), False)
            for f, dt in self.fields:
                with open(self.rundir / f"{b}.{f}", "r+b") as fh:
                    fh.seek(start * np.dtype(dt).itemsize)
                    cols[f].tofile(fh)
            start += n

    def drop(self, b: int) -> None:
        for f, _ in self.fields:
            (self.rundir / f"{b}.{f}").unlink(missing_ok=True)


class _RunReader:
    """Buffered reader of one sorted run (a slice of a bucket's run files)."""

    def __init__(self, rundir: Path, b: int, fields, start: int, length: int):
        self.paths = {f: rundir / f"{b}.{f}" for f, _ in fields}
        self.dtypes = dict(fields)
        self.pos = int(start)
        self.end = int(start + length)
        self.buf = {f: np.zeros(0, dt) for f, dt in fields}

    @property
    def buffered(self) -> bool:
        return len(self.buf["key"]) > 0

    @property
    def exhausted(self) -> bool:
        return self.pos >= self.end

    def fill(self, rows: int) -> None:
        want = min(rows - len(self.buf["key"]), self.end - self.pos)
        if want <= 0:
            return
        for f, dt in self.dtypes.items():
            with open(self.paths[f], "rb") as fh:
                fh.seek(self.pos * np.dtype(dt).itemsize)
                more = np.fromfile(fh, dtype=dt, count=want)
            self.buf[f] = np.concatenate([self.buf[f], more]) if len(self.buf[f]) else more
        self.pos += want

    def consume(self, n: int) -> None:
        self.buf = {f: v[n:] for f, v in self.buf.items()}


class _BucketWriter:
    """Writes sorted (key, rel, weight) blocks to a bucket's Arrow IPC file in record batches
    of exactly ``batch_rows`` rows (the last one shorter)."""

    def __init__(self, path: Path, has_rel: bool, has_weight: bool, batch_rows: int):
        fields = [pa.field("src", pa.int32(), nullable=False),
                  pa.field("dst", pa.int32(), nullable=False)]
        if has_rel:
            fields.append(pa.field("rel", pa.int32(), nullable=False))
        if has_weight:
            fields.append(pa.field("weight", pa.float32(), nullable=False))
        self.schema = pa.schema(fields)
        self.path = path
        self.batch_rows = batch_rows
        self.parts: list[dict[str, np.ndarray]] = []
        self.buffered = 0
        self.rows = 0

    def __enter__(self) -> _BucketWriter:
        self.writer = paipc.new_file(str(self.path), self.schema)
        return self

    def write(self, cols: dict[str, np.ndarray]) -> None:
        self.parts.append(cols)
        self.buffered += len(cols["key"])
        while self.buffered >= self.batch_rows:
            self._emit(self.batch_rows)

    def _emit(self, n: int) -> None:
        merged = ({f: np.concatenate([c[f] for c in self.parts]) for f in self.parts[0]}
                  if len(self.parts) > 1 else self.parts[0])
        head = {f: v[:n] for f, v in merged.items()}
        rest = {f: v[n:] for f, v in merged.items()}
        key = head["key"]
        arrays = [pa.array((key >> np.uint64(32)).astype(np.int32)),
                  pa.array((key & np.uint64(0xFFFFFFFF)).astype(np.int32))]
        if "rel" in self.schema.names:
            arrays.append(pa.array(head["rel"]))
        if "weight" in self.schema.names:
            arrays.append(pa.array(head["weight"]))
        self.writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.rows += len(key)
        self.buffered -= len(key)
        self.parts = [rest] if len(rest["key"]) else []

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None and self.buffered:
            self._emit(self.buffered)
        self.writer.close()


def _sorted_columns(key: np.ndarray, rel: np.ndarray | None, weight: np.ndarray | None,
                    dedupe: bool, presorted: bool = False,
                    sorted_runs: bool = False) -> dict[str, np.ndarray]:
    """Sort edges by (key, rel), stably (input order among equal edges is kept), and drop
    repeated (key, rel) after the first if ``dedupe``. ``sorted_runs``: the input is a
    concatenation of sorted runs (a merge), which a stable sort (timsort) merges in
    O(n log runs)."""
    if not presorted:
        if rel is None and weight is None:
            # no payload: ties are indistinguishable, any sort will do
            key = np.sort(key, kind="stable" if sorted_runs else "quicksort")
        else:
            order = np.argsort(key, kind="stable") if rel is None else np.lexsort((rel, key))
            key = key[order]
            rel = rel[order] if rel is not None else None
            weight = weight[order] if weight is not None else None
    if dedupe and len(key) > 1:
        keep = np.ones(len(key), bool)
        same = key[1:] == key[:-1]
        if rel is not None:
            same &= rel[1:] == rel[:-1]
        keep[1:] = ~same
        key = key[keep]
        rel = rel[keep] if rel is not None else None
        weight = weight[keep] if weight is not None else None
    cols = {"key": key}
    if rel is not None:
        cols["rel"] = rel
    if weight is not None:
        cols["weight"] = weight
    return cols


def _id_column(arr: pa.Array | pa.ChunkedArray, role: str, path: Path) -> pa.Array:
    """An id column as read: integers (int8..int64, uint8..uint64 within int64) or strings
    (dictionary-encoded ones decoded); any other type is a one-line :class:`InputError`
    (float, bool, binary, list ids are not guessed at: see docs/format.md)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_unsigned_integer(arr.type) and len(arr) and arr.type.bit_width == 64:
        big = pc.fill_null(pc.greater(arr, pa.scalar(2**63 - 1, pa.uint64())), False)
        if pc.any(big).as_py():
            i = int(np.flatnonzero(big.to_numpy(zero_copy_only=False))[0])
            raise InputError(f"{role} id {arr[i].as_py()} (row {i} of a batch) does not fit "
                             f"int64", path=path)
    if not (pa.types.is_integer(arr.type) or pa.types.is_string(arr.type)
            or pa.types.is_large_string(arr.type)):
        raise InputError(f"{role} column has type {arr.type}: ids must be integers or "
                         f"strings", path=path)
    return arr


#: Integer text of at most 18 significant digits (always within int64).
_INT_TEXT = r"^-?0*[0-9]{1,18}$"


def _ids_array(arr: pa.Array) -> np.ndarray | pa.Array:
    """int64 NumPy ids when every value is an integer, else the ids as a large_string array
    in which integer text is canonical (``"01"``, ``"+1"`` and ``1`` are the same node in
    both cases: the result does not depend on the other ids of the input)."""
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.int64()).to_numpy(zero_copy_only=False)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        if pc.any(pc.starts_with(arr, "+")).as_py():
            arr = pc.replace_substring_regex(arr, r"^\+([0-9])", r"\1")  # "+1" is 1
        try:
            return pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            arr = arr.cast(pa.large_string())
            is_int = pc.fill_null(pc.match_substring_regex(arr, _INT_TEXT), False)
            if not pc.any(is_int).as_py():
                return arr
            ints = pc.cast(pc.if_else(is_int, arr, pa.scalar("0", pa.large_string())),
                           pa.int64())
            return pc.if_else(is_int, pc.cast(ints, pa.large_string()), arr)
    return arr.cast(pa.large_string())


def _take(ids: np.ndarray | pa.Array, mask: np.ndarray):
    return ids[mask] if isinstance(ids, np.ndarray) else ids.filter(pa.array(mask))


def _ipc_names(path: Path) -> list[str]:
    source = pa.memory_map(str(path))
    try:
        return paipc.open_file(source).schema.names
    except pa.ArrowInvalid:
        source.seek(0)
        return paipc.open_stream(source).schema.names


def _value(arr, i: int) -> str:
    v = arr[i]
    return v.as_py() if v.is_valid else ""


def _is_nan_text(arr: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(arr, r"(?i)^\s*[+-]?nan\s*$"), False).to_numpy(
        zero_copy_only=False)


def _parse_floats(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Slow path for a block holding a non-numeric weight: (values, bad mask)."""
    out = np.zeros(len(arr), np.float64)
    bad = np.zeros(len(arr), bool)
    for i, v in enumerate(arr.to_pylist()):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            bad[i] = True
    return out, bad


# ---------------------------------------------------------------------------------------------
# node files


def _node_columns(job: _IngestJob, etype: str) -> tuple[list[NodeColumn], dict[str, np.ndarray]]:
    """Node columns of one type, as dense-order arrays of length N."""
    n = len(job.index[etype])
    columns: list[NodeColumn] = []
    values: dict[str, np.ndarray] = {}
    for ns in job.node_sources:
        if ns.entity_type != etype:
            continue
        ids = _ids_array(ns.table.column("id").combine_chunks())
        dense = job.index[etype].lookup(ids)
        if len(np.unique(dense)) != len(dense):
            raise InputError(f"node table for {etype!r}: duplicate ids")
        for name in ns.table.column_names:
            if name == "id":
                continue
            col = ns.table.column(name).combine_chunks()
            t = col.type
            if pa.types.is_fixed_size_list(t) and pa.types.is_floating(t.value_type):
                dim = t.list_size
                arr = np.zeros((n, dim), np.float32)
                flat = col.flatten().cast(pa.float32()).to_numpy(zero_copy_only=False)
                arr[dense] = flat.reshape(-1, dim)
                columns.append(NodeColumn(name, "features", dim))
            elif pa.types.is_integer(t):
                arr = np.full(n, -1, np.int64)
                arr[dense] = pc.fill_null(col.cast(pa.int64()), -1).to_numpy()
                columns.append(NodeColumn(name, "label"))
            elif pa.types.is_boolean(t):
                arr = np.zeros(n, bool)
                arr[dense] = pc.fill_null(col, False).to_numpy(zero_copy_only=False)
                columns.append(NodeColumn(name, "mask"))
            else:
                raise InputError(f"node table for {etype!r}: column {name!r} has type {t}; "
                                 f"expected fixed-size list of float (features), integer "
                                 f"(label) or bool (mask)")
            if name in values:
                raise InputError(f"node tables for {etype!r}: column {name!r} given twice")
            values[name] = arr
    return columns, values


def _write_node_files(job: _IngestJob, staging: Path, files: dict[str, dict[str, Any]]) -> dict[
        str, EntityType]:
    p = job.opts.num_partitions
    types = {}
    for etype in job.entity_types:
        columns, values = _node_columns(job, etype)
        ids = job.index[etype].ids
        order = np.argsort(job.part[etype], kind="stable")
        starts = np.zeros(p + 1, np.int64)
        np.cumsum(np.bincount(job.part[etype], minlength=p), out=starts[1:])
        for part in range(p):
            sel = order[starts[part]:starts[part + 1]]
            id_arr = (pa.array(ids[sel]) if isinstance(ids, np.ndarray)
                      else ids.take(pa.array(sel)))
            arrays = {"id": id_arr}
            for c in columns:
                v = values[c.name][sel]
                if c.kind == "features":
                    arrays[c.name] = pa.FixedSizeListArray.from_arrays(
                        pa.array(v.reshape(-1)), c.dim)
                else:
                    arrays[c.name] = pa.array(v)
            rel = node_file(etype, part)
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            table = pa.table(arrays)
            with paipc.new_file(str(path), table.schema) as w:
                w.write_table(table, max_chunksize=max(len(sel), 1))
            files[rel] = _file_entry(path)
        types[etype] = EntityType(etype, "string" if job.index[etype].is_string else "int64",
                                  job.sizes[etype], columns)
    return types


def _file_entry(path: Path) -> dict[str, Any]:
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size}


# ---------------------------------------------------------------------------------------------


def _check_partitions(num_partitions: int, index: dict[str, _IdIndex]) -> None:
    """Refuse more partitions than the largest entity type has nodes (empty partitions
    only cost buckets and memory)."""
    most = max((len(ix) for ix in index.values()), default=0)
    if num_partitions > max(most, 1):
        raise GraphsysError(f"num_partitions {num_partitions} is more than the nodes of the "
                            f"largest entity type ({most})")


def write_edge_sets(job: _IngestJob, names: Sequence[str], staging: Path,
                    files: dict[str, dict[str, Any]]) -> dict[str, EdgeSet]:
    """Passes 2 and 3 for the edge sets ``names`` of a job whose nodes are partitioned: write
    their bucket files under ``staging``, add them to ``files`` and return the edge sets."""
    opts, p = job.opts, job.opts.num_partitions
    edge_sets: dict[str, EdgeSet] = {}
    for name in names:
        routed = job.route(name)
        bar = tqdm(total=len(routed.buckets), unit="bucket", desc=f"buckets {name}",
                   disable=not opts.progress)
        counts = {}
        for b in routed.buckets:
            i, j = divmod(b, p)
            rel = bucket_file(name, i, j)
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            n = job.write_bucket(routed, b, name, path)
            routed.drop(b)
            if n:
                counts[(i, j)] = n
                files[rel] = _file_entry(path)
            else:
                path.unlink()
            bar.update()
        bar.close()
        shutil.rmtree(routed.rundir)
        edge_sets[name] = EdgeSet(
            name, sum(counts.values()), counts, has_rel=job.has_rel[name],
            has_weight=job.has_weight[name], undirected=opts.undirected, dedupe=opts.dedupe,
            drop_self_loops=opts.drop_self_loops,
            skipped_lines=job.edge_set_skipped.get(name, 0))
    return edge_sets


def edge_set_names(edges: Sequence[EdgeSource]) -> set[str]:
    """The edge set names of ``edges``; a name that cannot be a directory is refused."""
    names = {e.edge_set for e in edges}
    for name in names:
        if not name or "/" in name or name.startswith("."):
            raise GraphsysError(f"invalid edge set name {name!r}")
    return names


def ingest(edges: Sequence[EdgeSource], out: str | Path, options: IngestOptions | None = None,
           nodes: Sequence[NodeSource] = ()) -> IngestReport:
    """Build the graph directory ``out`` from edge files (and optional node tables).

    Raises :class:`~graphsys.errors.InputError` for bad input (naming file and line) and
    :class:`~graphsys.errors.GraphsysError` for bad options; in both cases nothing is left
    at ``out``.
    """
    from graphsys import __version__

    opts = options or IngestOptions()
    if not isinstance(opts.num_partitions, int) or opts.num_partitions < 1:
        raise ParameterError("num_partitions", f"must be a positive integer, got "
                                               f"{opts.num_partitions!r}")
    if opts.num_partitions > MAX_PARTITIONS:
        raise GraphsysError(f"num_partitions {opts.num_partitions} is above the maximum, "
                            f"{MAX_PARTITIONS} (P x P buckets)")
    if opts.on_bad_line not in ("error", "skip"):
        raise ParameterError("on_bad_line", f"must be 'error' or 'skip', got "
                                            f"{opts.on_bad_line!r}")
    if opts.max_batch_rows < 1:
        raise GraphsysError("max_batch_rows must be positive")
    if not edges and not nodes:
        raise InputError("no input given")
    names = edge_set_names(edges)
    out = Path(out)
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    with staging_directory(out) as staging:
        job = _IngestJob(edges, nodes, opts, staging)
        job.read_all()
        _check_partitions(opts.num_partitions, job.index)
        if opts.undirected and any(r.lhs != r.rhs for r in job.relations):
            raise ParameterError("undirected", "needs relations whose lhs and rhs entity "
                                               "types are the same")
        seconds["read"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        partitioner = job.partition()
        seconds["partition"] = time.perf_counter() - t1
        files: dict[str, dict[str, Any]] = {}
        entity_types = _write_node_files(job, staging, files)
        t2 = time.perf_counter()
        edge_sets = write_edge_sets(job, sorted(names), staging, files)
        seconds["route_and_merge"] = time.perf_counter() - t2
        shutil.rmtree(job.spill)
        p = opts.num_partitions
        manifest = Manifest(
            num_partitions=p, offset_dtype="int32",
            max_batch_rows=max((job.batch_rows(n) for n in names), default=opts.max_batch_rows),
            partitioner=partitioner, entity_types=entity_types, relation_types=job.relations,
            edge_sets=edge_sets, files=files, created_by=f"graphsys {__version__}",
            metadata=opts.metadata)
        sync_filesystem(staging)  # every data file is on disk before the manifest names it
        write_bytes_atomic(staging / MANIFEST,
                           json.dumps(manifest.to_json(), indent=1).encode() + b"\n")
    seconds["total"] = time.perf_counter() - t0
    return IngestReport(
        out=str(out), nodes={t: e.num_nodes for t, e in entity_types.items()},
        edges={n: e.num_edges for n, e in edge_sets.items()}, num_partitions=p,
        partitioner=partitioner, skipped_lines=job.skipped, input_bytes=job.input_bytes,
        seconds={k: round(v, 3) for k, v in seconds.items()}, peak_rss_bytes=lifetime_peak_rss())
