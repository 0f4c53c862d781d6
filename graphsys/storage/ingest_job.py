"""The ingest job: pass 1 (read every input through its format, validate each batch with
:mod:`~graphsys.storage.ingest_validate`, collect node ids, spill the parsed columns), the
partitioning of every entity type, and passes 2 and 3 for one edge set (route edges into
buckets, sort or merge each bucket into its file); the passes are described in
:mod:`graphsys.storage.ingest`."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc

import partitioners
from graphsys.errors import GraphsysError, InputError
from graphsys.memory import trim_heap
from graphsys.progress import progress_bar
from graphsys.storage import kernels, kernels_small
from graphsys.storage.edge_runs import (
    COLUMN_PREFIX,
    BucketWriter,
    RoutedBuckets,
    RunReader,
    extra_columns,
    key_dtype,
    sorted_columns,
)
from graphsys.storage.format import (
    DEFAULT_ENTITY_TYPE,
    DEFAULT_RELATION,
    EdgeColumn,
    RelationType,
)
from graphsys.storage.formats import InputFormat, resolve_format
from graphsys.storage.ids import IdCollector, IdIndex, id_column, ids_array, take_rows
from graphsys.storage.ingest_inputs import EdgeSource, IngestOptions, NodeSource
from graphsys.storage.ingest_validate import common_dtype, validate_batch
from graphsys.storage.location import not_an_input
from graphsys.storage.pages import scratch_array
from graphsys.storage.partition_context import SpilledEdges
from graphsys.storage.read_ahead import read_ahead
from graphsys.storage.readers import NeedCarefulRead, narrow_ids, read_memory, text_block_bytes

#: Transient copies an edge buffer goes through (group by bucket, sort, convert): each
#: phase's buffer is sized at ``memory_limit / _COPIES`` bytes.
_COPIES = 8
_NO_I32 = np.zeros(0, np.int32)
_NO_F32 = np.zeros(0, np.float32)
#: Largest partition: local offsets are stored as int32.
MAX_PARTITION_NODES = 2**31 - 1


@dataclass
class _Spill:
    """One parsed input batch: held in memory while the batches fit a quarter of the budget
    (``table``), else written to an Arrow file under the job's spill directory (``path``)."""

    path: Path | None
    table: pa.Table | None
    edge_set: str
    rel_fixed: int | None  # relation index when the source has no rel column
    has_weight: bool
    rows: int
    collected: bool = False  # its ids are in the collectors

    def read(self) -> pa.Table:
        if self.table is not None:
            return self.table
        return paipc.open_file(pa.memory_map(str(self.path))).read_all()

    def discard(self) -> None:
        self.table = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)


class IngestJob:
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
        self.entity_types: list[str] = list(dict.fromkeys(
            [t for r in self.relations for t in (r.lhs, r.rhs)]
            + [ns.entity_type for ns in self.node_sources]))
        self.collectors: dict[str, IdCollector] = {}
        self.index: dict[str, IdIndex] = {}
        self.spills: list[_Spill] = []
        self.held_bytes = 0  # bytes of the spills held in memory
        self.codes: dict[str, np.ndarray] = {}  # routing tables, by entity type
        #: numba's kernels, or their NumPy twins for a small in-memory input
        self.kernels = kernels_small if _small_input(self.sources) else kernels
        self._jit: threading.Thread | None = None  # numba's start-up, while it runs
        self.skipped = 0
        self.edge_set_skipped: dict[str, int] = {}
        self.input_bytes = 0
        self.has_rel: dict[str, bool] = {}
        self.has_weight: dict[str, bool] = {}
        #: edge columns per edge set: name -> the dtypes its batches came in (then, after
        #: pass 1, :attr:`edge_columns` holds the one each is stored with)
        self.column_dtypes: dict[str, dict[str, set[str]]] = {}
        self.edge_columns: dict[str, list[EdgeColumn]] = {}

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

    def collector(self, etype: str) -> IdCollector:
        if etype not in self.collectors:
            self.collectors[etype] = IdCollector(etype, self.opts.memory_limit, self.kernels)
        return self.collectors[etype]

    # -- pass 1 ----------------------------------------------------------------------------
    def read_all(self) -> None:
        """Pass 1. Numba's one-time start-up (:func:`~graphsys.storage.kernels.start_up`)
        runs on a helper thread while the first batches parse (not at all for a small
        in-memory input, which runs on :mod:`~graphsys.storage.kernels_small`). A batch's ids
        are collected as it is spilled when its read is careful (binary formats, a text
        file's second read) and numba has started (the first kernel call would wait for it,
        where the batches can go on decoding), else once every batch is parsed: a text
        file's fast read is discarded and read again carefully when it meets a bad line, and
        the ids of discarded rows must not become nodes. The heap pages the pass freed are
        handed back (:func:`~graphsys.memory.trim_heap`)."""
        jit = None
        if self.kernels is kernels:
            jit = threading.Thread(target=kernels.start_up, name="graphsys-jit", daemon=True)
            jit.start()
        self._jit = jit
        for ns in self.node_sources:
            if "id" not in ns.table.column_names:
                raise InputError(f"node table for entity type {ns.entity_type!r} has no 'id' "
                                 f"column")
            ids = id_column(ns.table.column("id"), f"node table for {ns.entity_type!r}: id",
                            None)  # integers or strings, as an edge file's id columns
            if ids.null_count:
                raise InputError(f"node table for {ns.entity_type!r}: null id")
            self.collector(ns.entity_type).add(ids_array(ids))
        paths = [(src, Path(p)) for src in self.sources for p in src.paths]
        for _, path in paths:
            if not path.is_file():
                raise InputError(not_an_input(path), path=path)
        total = sum(p.stat().st_size for _, p in paths)
        self.input_bytes = total
        bar = progress_bar(total=total, unit="B", unit_scale=True, desc="read",
                   disable=not self.opts.progress)
        done_before = 0
        for n_src, (src, path) in enumerate(paths):
            _, fmt = resolve_format(path, src.format)
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
            self._read_source(src, Path(f"<in-memory edges {src.edge_set}>"), None, n_src,
                              lambda pos: None)
        if not self.spills and not self.node_sources:
            raise InputError("no input edges")
        if not self.entity_types:
            self.entity_types.append(DEFAULT_ENTITY_TYPE)
        # a rel column is stored iff the graph has several relation types
        self.has_rel = {s.edge_set: len(self.relations) > 1 for s in self.sources}
        self.edge_columns = {name: [EdgeColumn(c, common_dtype(dts)) for c, dts in cols.items()]
                             for name, cols in self.column_dtypes.items()}
        if jit is not None:
            jit.join()
        for sp in self.spills:
            if not sp.collected:
                self._collect_ids(sp)
        for etype in self.entity_types:
            self.index[etype] = self.collector(etype).finish()
            if len(self.index[etype]) == 0 and len(self.entity_types) == 1:
                raise InputError("empty input: no edges and no nodes")
        trim_heap()  # the decoded blocks, freed: not resident through the passes after

    def _read_source(self, src: EdgeSource, path: Path, fmt: InputFormat | None, n_src: int,
                     progress) -> None:
        """Read, validate and spill one input file (``fmt``) or in-memory table (None)."""
        if src.rel_col is not None and src.relation is not None:
            raise GraphsysError("give either a relation column or a fixed relation, not both")
        fixed = (self.relation(src.relation or DEFAULT_RELATION, str(path))
                 if src.rel_col is None else None)
        self.has_weight[src.edge_set] = (self.has_weight.get(src.edge_set, False)
                                         or src.weight_col is not None)
        roles = {"src": src.src_col, "dst": src.dst_col, "rel": src.rel_col,
                 "weight": src.weight_col, **src.column_roles()}
        names = [r[len(COLUMN_PREFIX):] for r in roles if r.startswith(COLUMN_PREFIX)]
        seen = self.column_dtypes.setdefault(src.edge_set, {n: set() for n in names})
        if list(seen) != names:
            raise GraphsysError(f"edge set {src.edge_set!r}: every input needs the same edge "
                                f"columns ({', '.join(seen) or 'none'}; {path} gives "
                                f"{', '.join(names) or 'none'})")
        for careful in ((False, True) if fmt is not None and fmt.text else (True,)):
            bad: list[int] = []
            batches = (read_memory(src.table, str(path), roles) if fmt is None
                       else read_ahead(fmt.read(path, roles, source=src,
                                                on_bad_line=self.opts.on_bad_line,
                                                progress=progress, bad_lines=bad,
                                                careful=careful, block_bytes=text_block_bytes(
                                                    self.opts.memory_limit)),
                                       self.opts.memory_limit // 4))
            first_spill = len(self.spills)
            try:
                # a careful read is not read again: its ids are collected as it goes, while
                # the batch is at hand and the next one decodes
                skipped = self._spill_batches(batches, path, src, fixed, n_src, careful)
                break
            except NeedCarefulRead:
                # read again on the careful path: discard what the fast path spilled
                for sp in self.spills[first_spill:]:
                    self._discard(sp)
                del self.spills[first_spill:]
        skipped += len(bad)
        self.skipped += skipped
        self.edge_set_skipped[src.edge_set] = self.edge_set_skipped.get(src.edge_set, 0) + skipped

    def _spill_batches(self, batches, path: Path, src: EdgeSource, fixed: int | None,
                       n_src: int, collect: bool) -> int:
        """Validate and spill every batch (``collect``: and collect its ids); return the
        number of rows dropped."""
        skipped = 0
        for k, batch in enumerate(batches):
            cols, dropped = validate_batch(batch, path, self.relation, self.opts.on_bad_line)
            skipped += dropped
            if len(cols["src"]) == 0:
                continue
            table = pa.table({name: ((narrow_ids(pa.array(v)) if name in ("src", "dst")
                                      else pa.array(v)) if isinstance(v, np.ndarray) else v)
                              for name, v in cols.items()})
            for name, v in cols.items():
                if name.startswith(COLUMN_PREFIX):
                    self.column_dtypes[src.edge_set][name[len(COLUMN_PREFIX):]].add(
                        str(v.dtype))
            spill = _Spill(None, table, src.edge_set, fixed, src.weight_col is not None,
                           table.num_rows)
            if collect and not (self._jit is not None and self._jit.is_alive()):
                self._collect_ids(spill)  # else once numba has started (read_all)
            if self.held_bytes + table.nbytes <= self.opts.memory_limit // 4:
                self.held_bytes += table.nbytes
            else:
                spill.path = self.spill / f"in-{n_src:04d}-{k:06d}.arrow"
                with paipc.new_file(str(spill.path), table.schema) as w:
                    w.write_table(table)
                spill.table = None
            self.spills.append(spill)
        return skipped

    def _discard(self, sp: _Spill) -> None:
        """Drop a spilled batch once nothing reads it again."""
        if sp.table is not None:
            self.held_bytes -= sp.table.nbytes
        sp.discard()

    def _collect_ids(self, sp: _Spill) -> None:
        """Add the ids of one spilled batch to the collectors of their entity types."""
        table = sp.read()
        rel = table.column("rel").to_numpy() if "rel" in table.column_names else None
        src_ids, dst_ids = _id_rows(table.column("src")), _id_rows(table.column("dst"))
        for (lhs, rhs), mask in self._type_groups(sp, rel):
            self.collector(lhs).add(src_ids if mask is None else take_rows(src_ids, mask))
            self.collector(rhs).add(dst_ids if mask is None else take_rows(dst_ids, mask))
        sp.collected = True

    # -- passes 2 and 3 ----------------------------------------------------------------------
    def iter_dense_edges(self, edge_set: str | None = None):
        """Yield (src, dst, lhs_type, rhs_type) dense-index chunks of every spilled batch,
        grouped so that every chunk has one (lhs, rhs) entity type pair."""
        for sp in self.spills:
            if edge_set is not None and sp.edge_set != edge_set:
                continue
            table = sp.read()
            rel = (table.column("rel").to_numpy() if "rel" in table.column_names
                   else None)
            src_ids = ids_array(table.column("src").combine_chunks())
            dst_ids = ids_array(table.column("dst").combine_chunks())
            for (lhs, rhs), mask in self._type_groups(sp, rel):
                s = src_ids if mask is None else take_rows(src_ids, mask)
                d = dst_ids if mask is None else take_rows(dst_ids, mask)
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
        p = self.opts.partitions
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
                part = np.asarray(strategy.assign(SpilledEdges(
                    etype, self.index[etype], self.opts.memory_limit, self.iter_dense_edges,
                    self.kernels, self.spill)))
                # checked before the int32 cast, which would wrap 2**32 to 0 and cut 1.5 to 1
                if part.dtype.kind not in "iu" or part.shape != (len(self.index[etype]),) or (
                        len(part) and (part.min() < 0 or part.max() >= p)):
                    raise GraphsysError(f"partitioner {strategy.name!r} returned an invalid "
                                        f"assignment (integers in [0, {p}) expected, one per "
                                        f"node)")
                part = np.ascontiguousarray(part, np.int32)
            local, sizes = self.kernels.local_offsets(part, p)
            if sizes.max(initial=0) > MAX_PARTITION_NODES:
                raise GraphsysError(f"entity type {etype!r}: a partition would hold "
                                    f"{int(sizes.max())} nodes (> 2**31-1): use more partitions")
            self.part[etype], self.local[etype] = part, local
            self.sizes[etype] = [int(s) for s in sizes]
        return {"name": strategy.name, "params": strategy.params()}

    def route(self, edge_set: str) -> RoutedBuckets:
        """Pass 2 for one edge set: map, partition and group edges into buckets.

        Keys pack two local offsets of ``self._local_bits()`` bits each: 4 bytes per edge
        where partitions hold fewer than 65,536 nodes, else 8
        (:func:`~graphsys.storage.edge_runs.key_dtype`). While the whole edge set fits half
        the memory limit (its grouped columns, the key plus its rel and weight, and the
        dense indices of ids that have no direct map, 16 bytes per edge), its buckets are
        grouped in memory in one counting sort whose two passes write nothing per edge but
        the grouped columns (:meth:`_group`); past that, a reused buffer at a time, each
        full buffer one run per bucket on disk, routed in one pass through per-edge scratch
        in the buffer, whose pages stay warm from flush to flush (:meth:`_group_buffered`).
        Either way rows keep their input order within a bucket, and are sorted when the
        bucket is written.
        """
        has_rel, has_weight = self.has_rel[edge_set], self.has_weight[edge_set]
        columns = [(c.name, c.dtype) for c in self.edge_columns.get(edge_set, [])]
        routed = RoutedBuckets(self.spill / f"runs-{edge_set}", has_rel, has_weight, columns,
                               local_bits=self._local_bits())
        routed.rundir.mkdir()
        key_bytes = key_dtype(routed.local_bits).itemsize
        payload = (4 if has_rel else 0) + (4 if has_weight else 0) + sum(
            np.dtype(dt).itemsize for _, dt in columns)
        # per routed row: its grouped columns (its place, for the edge columns' scatter, is
        # per batch)
        row_bytes = key_bytes + payload
        spills = [sp for sp in self.spills if sp.edge_set == edge_set]
        lookups = any(ix.dense is None for ix in self.index.values())
        out_rows = sum(sp.rows for sp in spills) * (2 if self.opts.undirected else 1)
        rows_in = sum(sp.rows for sp in spills)
        if out_rows * row_bytes + rows_in * 16 * lookups <= self.opts.memory_limit // 2:
            starts, cols = self._group(spills, routed)
            for b in np.flatnonzero(np.diff(starts)):
                lo, hi = starts[b], starts[b + 1]
                routed.memory[int(b)] = {f: v[lo:hi] for f, v in cols.items()}
            return routed
        # and in the buffer, its bucket, key and (with a payload) row until the scatter
        row_bytes += 4 + key_bytes + (8 if payload else 0)
        flush_rows = max(self.opts.memory_limit // (_COPIES * row_bytes), 1 << 16)
        # one buffer for every flush (fresh pages would fault in again each time)
        room = (flush_rows + max(sp.rows for sp in spills)) * (2 if self.opts.undirected else 1)
        buffer = {f: scratch_array(room, dt) for f, dt in routed.fields}
        buffer.update(routed.routing_scratch(room))
        pending: list[_Spill] = []
        for sp in spills:
            pending.append(sp)
            if sum(x.rows for x in pending) >= flush_rows or sp is spills[-1]:
                starts, cols = self._group_buffered(pending, routed, buffer)
                for b in np.flatnonzero(np.diff(starts)):
                    lo, hi = starts[b], starts[b + 1]
                    routed.append_run(int(b), {f: v[lo:hi] for f, v in cols.items()})
                pending = []
        return routed

    def _group(self, spills: list[_Spill], routed: RoutedBuckets
               ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Route the edges of ``spills`` (batches of one edge set, in input order) into new
        arrays grouped by bucket, in a stable counting sort: every part is counted by bucket
        (:func:`kernels.count_routes`, two threads), then routed again and scattered in
        input order (:func:`kernels.scatter_routes`, each part from its own cursors, two
        threads); the batches are discarded. The second routing reads the routing tables
        again, mostly from cache, where per-edge scratch would be pages first touched, once.
        Returns (starts int64 (P*P+1,), columns ``key`` uint64 and, when the edge set has
        them, ``rel`` int32, ``weight`` float32 and the edge columns)."""
        p = self.opts.partitions
        parts = [part for sp in spills for part in self._route_parts(sp, routed)]

        def count(k: int) -> tuple[int, np.ndarray]:  # part k's rows and bucket counts
            # rows of the routing tables: the ids themselves where a type's ids have a
            # direct map, else dense node indices; equal ids give equal rows either way
            src, dst = (self._table_rows(*typed) for typed in parts[k][:2])
            parts[k] = (src, dst, *parts[k][2:])  # the scatter reads the same rows
            counts = np.zeros(p * p, np.int64)
            return self.kernels.count_routes(src, dst, *parts[k][2:7], counts), counts

        with ThreadPoolExecutor(2) as pool:
            routed_parts = list(pool.map(count, range(len(parts))))
        starts, cursors = _cursors(p, [c for _, c in routed_parts])
        cols = {f: scratch_array(int(starts[-1]), dt) for f, dt in routed.fields}

        def scatter(k: int) -> None:
            src, dst, codes_l, codes_r, _, drop_loops, undirected, rel, rel_fill, weight, \
                extra = parts[k]
            parts[k] = None
            dest = np.empty(routed_parts[k][0] if routed.columns else 0, np.int64)
            self.kernels.scatter_routes(src, dst, codes_l, codes_r, p, drop_loops, undirected,
                                        cursors[k], cols["key"], routed.local_bits, rel, rel_fill,
                                        cols.get("rel", _NO_I32), weight,
                                        cols.get("weight", _NO_F32), dest)
            for f, _ in routed.columns:
                self.kernels.scatter_column(src, dst, drop_loops, undirected, dest, extra[f],
                                            cols[f])

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(scatter, range(len(parts))))
        for sp in spills:
            self._discard(sp)
        return starts, cols

    def _group_buffered(self, spills: list[_Spill], routed: RoutedBuckets,
                        buffer: dict[str, np.ndarray]
                        ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """:meth:`_group` into the heads of ``buffer``'s arrays (large enough, with room for
        the routed rows' scratch: :meth:`RoutedBuckets.routing_scratch`), in one routing
        pass: every part is routed and counted (:func:`kernels.route_keys`, two threads),
        its rows' bucket, key and input row written to the scratch, then scattered from it
        in input order (two threads). The buffer is reused from flush to flush, so its
        scratch costs no first touch after the first, where a second routing would miss in
        the routing tables again (large, for the node counts of an out-of-core ingest)."""
        p = self.opts.partitions
        parts = [part for sp in spills for part in self._route_parts(sp, routed)]
        ends = np.cumsum([0] + [len(part[0][1]) * (2 if self.opts.undirected else 1)
                                for part in parts])
        payload = routed.has_rel or routed.has_weight or bool(routed.columns)
        bucket, key, row = (buffer[f] for f in ("_bucket", "_key", "_row"))

        def route(k: int) -> tuple[int, np.ndarray]:  # part k's rows and bucket counts
            lo, hi = ends[k], ends[k + 1]
            src, dst = (self._table_rows(*typed) for typed in parts[k][:2])
            counts = np.zeros(p * p, np.int64)
            n = self.kernels.route_keys(src, dst, *parts[k][2:7], bucket[lo:hi], key[lo:hi],
                                        routed.local_bits, row[lo:hi] if payload else row,
                                        counts)
            parts[k] = parts[k][7:]  # free its ids and rows once it is routed
            return n, counts

        with ThreadPoolExecutor(2) as pool:
            routed_parts = list(pool.map(route, range(len(parts))))
        starts, cursors = _cursors(p, [c for _, c in routed_parts])
        cols = {f: buffer[f][:int(starts[-1])] for f, _ in routed.fields}

        def scatter(k: int) -> None:
            n, cur, lo = routed_parts[k][0], cursors[k], ends[k]
            rel, rel_fill, weight, extra = parts[k]
            parts[k] = None
            for f, _ in routed.columns:  # from the cursor the edges below start from
                self.kernels.scatter_column_rows(bucket[lo:lo + n], row[lo:lo + n],
                                                 cur.copy(), extra[f], cols[f])
            self.kernels.scatter_by_bucket(bucket[lo:lo + n], key[lo:lo + n],
                                           row[lo:lo + n] if payload else row, cur,
                                           cols["key"], rel, rel_fill,
                                           cols.get("rel", _NO_I32), weight,
                                           cols.get("weight", _NO_F32))

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(scatter, range(len(parts))))
        for sp in spills:
            self._discard(sp)
        return starts, cols

    def _route_parts(self, sp: _Spill, routed: RoutedBuckets):
        """For each (lhs, rhs) type group of one spilled batch: its source and target ids
        with their entity types (made rows of the routing tables by :meth:`_table_rows`),
        the rest of the arguments of :func:`kernels.count_routes` (and
        :func:`kernels.route_keys`), and those of :func:`kernels.scatter_routes` (rel,
        rel_fill, weight) and the edge columns (by field, in their stored dtype)."""
        table = sp.read()
        rel_all = table.column("rel").to_numpy() if "rel" in table.column_names else None
        w_all = table.column("weight").to_numpy() if "weight" in table.column_names else None
        src_ids = _id_rows(table.column("src"))
        dst_ids = _id_rows(table.column("dst"))
        extra_all = {f: np.ascontiguousarray(table.column(f).to_numpy(), dt)
                     for f, dt in routed.columns}
        for (lhs, rhs), mask in self._type_groups(sp, rel_all):
            rel = _NO_I32 if rel_all is None else rel_all if mask is None else rel_all[mask]
            w = _NO_F32 if w_all is None else w_all if mask is None else w_all[mask]
            yield ((lhs, src_ids if mask is None else take_rows(src_ids, mask)),
                   (rhs, dst_ids if mask is None else take_rows(dst_ids, mask)),
                   self._route_codes(lhs), self._route_codes(rhs), self.opts.partitions,
                   bool(self.opts.drop_self_loops and lhs == rhs), self.opts.undirected,
                   rel if routed.has_rel else _NO_I32,
                   -1 if sp.rel_fixed is None else sp.rel_fixed,
                   w if routed.has_weight else _NO_F32,
                   {f: v if mask is None else v[mask] for f, v in extra_all.items()})

    def _route_codes(self, etype: str) -> np.ndarray:
        """Routing table of ``etype`` (:func:`kernels.route_codes`), built once: indexed by
        original id where its ids have a direct map (8 bytes per id up to the largest),
        else by dense node index (8 bytes per node)."""
        if etype not in self.codes:
            dense = self.index[etype].dense
            rows = len(dense) if dense is not None else len(self.index[etype])
            self.codes[etype] = self.kernels.route_codes(
                self.part[etype], self.local[etype],
                np.zeros(0, np.int64) if dense is None else dense, np.empty(rows, np.int64))
        return self.codes[etype]

    def _table_rows(self, etype: str, ids: np.ndarray | pa.Array) -> np.ndarray:
        ix = self.index[etype]
        return ids if ix.dense is not None else ix.lookup(ids)

    def write_bucket(self, routed: RoutedBuckets, b: int, edge_set: str, out: Path
                     ) -> tuple[int, dict[str, Any] | None]:
        """Pass 3 for one bucket: write it from memory, or sort (or k-way merge) its runs, into
        the bucket's Arrow file, its write-back to disk started. Returns the number of edges
        written and the file's manifest entry (sha256 and bytes, hashed as it was written)."""
        writer = BucketWriter(out, routed.has_rel, routed.has_weight, self.batch_rows(edge_set),
                              [(c.name, c.dtype) for c in self.edge_columns.get(edge_set, [])],
                              split_keys=self.kernels.split_keys, local_bits=routed.local_bits)
        with writer:
            if b in routed.memory or self._sorts_in_memory(routed, sum(routed.runs[b])):
                cols = routed.memory.pop(b) if b in routed.memory else routed.read_all(b)
                writer.write(sorted_columns(cols["key"], cols.get("rel"), cols.get("weight"),
                                             self.opts.dedupe, local_bits=routed.local_bits,
                                             extra=extra_columns(cols),
                                             radix_sort=self.kernels.radix_sort_edges))
            else:
                routed.sort_runs(b)
                self._merge_runs(routed, b, writer)
        return writer.rows, writer.entry

    def _local_bits(self) -> int:
        """Bits of the largest local offset of any partition of any entity type."""
        return max(int(max(sizes, default=1) - 1).bit_length() for sizes in self.sizes.values())

    def write_workers(self, routed: RoutedBuckets) -> int:
        """Threads that write an edge set's buckets at once: 2 (sorting, Arrow writes and
        hashing release the GIL) when two CPUs can and the two largest buckets sort in
        memory together (:meth:`_sorts_in_memory`), else 1."""
        rows = [len(c["key"]) for c in routed.memory.values()] + [
            sum(lengths) for lengths in routed.runs.values()]
        if len(rows) < 2 or (os.cpu_count() or 1) < 2:
            return 1
        return 2 if self._sorts_in_memory(routed, sum(sorted(rows)[-2:])) else 1

    def _sorts_in_memory(self, routed: RoutedBuckets, rows: int) -> bool:
        """Whether ``rows`` routed rows, read whole and sorted (argsort and gathered copies:
        about three times their bytes plus 8 per row), stay within half the budget."""
        row_bytes = sum(np.dtype(dt).itemsize for _, dt in routed.fields)
        return rows * (3 * row_bytes + 8) <= self.opts.memory_limit // 2

    def _merge_runs(self, routed: RoutedBuckets, b: int, writer: BucketWriter) -> None:
        lengths = routed.runs[b]
        fields = routed.fields
        row_bytes = sum(np.dtype(dt).itemsize for _, dt in fields)
        block = max(self.opts.memory_limit // (_COPIES * row_bytes * len(lengths)), 1 << 12)
        runs = [RunReader(routed.rundir, b, fields, start, n)
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
                    int(np.searchsorted(r.buf["key"], r.buf["key"].dtype.type(bound),
                                        side="left"))
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
            cols = sorted_columns(cols["key"], cols.get("rel"), cols.get("weight"),
                                   self.opts.dedupe, presorted=len(live) == 1, sorted_runs=True,
                                   extra=extra_columns(cols))
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
            4 if self.has_weight[edge_set] else 0) + sum(
            np.dtype(c.dtype).itemsize for c in self.edge_columns.get(edge_set, []))
        return bucket_batch_rows(self.opts, row_bytes)


def _cursors(p: int, counts: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The bucket starts (int64 (P*P+1,)) of routed parts with these bucket counts, and each
    part's cursors: its rows start in every bucket after the rows of the parts before it,
    so the parts scatter on two threads into disjoint rows, in input order."""
    starts = np.zeros(p * p + 1, np.int64)
    np.cumsum(sum(counts, np.zeros(p * p, np.int64)), out=starts[1:])
    cursors, cursor = [], starts[:-1].copy()
    for c in counts:
        cursors.append(cursor.copy())
        cursor += c
    return starts, cursors


def bucket_batch_rows(opts: IngestOptions, row_bytes: int) -> int:
    """Rows per record batch of a bucket file whose rows take ``row_bytes`` bytes:
    ``opts.max_batch_rows``, or less so that writing one batch (key, columns and their
    conversions, :data:`_COPIES` copies at most) stays in ``opts.memory_limit``."""
    return int(min(opts.max_batch_rows, max(opts.memory_limit // (2 * _COPIES * row_bytes),
                                            1 << 12)))


def _small_input(sources: Sequence[EdgeSource]) -> bool:
    """Whether the edges are in-memory tables (or record batches) of at most
    :data:`~graphsys.storage.kernels_small.SMALL_INGEST_EDGES` rows together: an ingest
    that runs on the NumPy twins of the kernels, sparing numba's start-up."""
    rows = 0
    for src in sources:
        table = src.table
        if src.paths or table is None:
            return False
        if isinstance(table, pa.Table | pa.RecordBatch):
            rows += table.num_rows
        elif isinstance(table, list | tuple) and all(isinstance(b, pa.RecordBatch)
                                                      for b in table):
            rows += sum(b.num_rows for b in table)
        else:
            return False
    return rows <= kernels_small.SMALL_INGEST_EDGES


def _id_rows(col: pa.ChunkedArray) -> np.ndarray | pa.Array:
    """A spilled id column as the routing kernels read it: integer ids as they are (int32 or
    int64, no copy), string ids as :func:`~graphsys.storage.ids.ids_array` gives them."""
    arr = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()  # no copy of one
    return arr.to_numpy() if pa.types.is_integer(arr.type) else ids_array(arr)


