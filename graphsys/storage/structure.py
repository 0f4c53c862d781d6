"""Structural checks of a graph's files: cheap, no hashes; files are untrusted input.

Every engine reads edges through :meth:`graphsys.storage.edges.Bucket.batches`, which runs
:func:`check_bucket_file` when a bucket file is first opened (schema and row counts, from the
Arrow metadata alone) and :func:`check_edge_batch` on each record batch the first time it is
touched (offsets inside their partitions, relation indices inside the relation types:
vectorised min/max, on pages the engine reads anyway). So a corrupted offset becomes one
:class:`~graphsys.errors.FormatError` naming the file instead of a segfault or a wrong answer
in a numba or torch kernel. ``graphsys verify --quick`` runs all of them over every file
(:func:`check_structure`); ``graphsys verify`` adds the sha256 of every file.
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as paipc

from graphsys.errors import FormatError
from graphsys.storage.edge_runs import bucket_schema
from graphsys.storage.format import (
    EdgeSet,
    Manifest,
    bucket_file,
    index_file,
    node_column_file,
    node_file,
)
from graphsys.storage.location import GraphLocation
from partitioners.hash import mix_inplace


def expected_files(m: Manifest) -> set[str]:
    """Relative paths of every node partition, node column (a column with a ``dtype``),
    index column and non-empty bucket file ``m`` describes."""
    out = {node_file(t, p) for t in m.entity_types for p in range(m.num_partitions)}
    out |= {node_column_file(t, c.name) for t, et in m.entity_types.items()
            for c in et.columns if c.dtype}
    out |= {index_file(name, kind, column) for name, kinds in m.indexes.items()
            for kind, info in kinds.items() for column in info.columns()}
    for name, es in m.edge_sets.items():
        out |= {bucket_file(name, i, j) for (i, j), n in es.buckets.items() if n}
    return out


def check_listed(m: Manifest, directory: Path | GraphLocation) -> None:
    """Raise :class:`FormatError` for the first file (:func:`expected_files`) the manifest needs but
    does not list in ``files`` (so its size, path and hash are never checked)."""
    missing = sorted(expected_files(m) - set(m.files))
    if missing:
        loc = directory if isinstance(directory, GraphLocation) else GraphLocation(directory)
        raise FormatError(f"{loc.file(missing[0])}: not listed in the manifest")


def check_node_rows(graph) -> None:
    """Rows of every node partition file (from the Arrow metadata: no data read) against
    the manifest's ``partition_sizes``, which every global id is computed from."""
    m = graph.manifest
    for t, et in m.entity_types.items():
        for p in range(m.num_partitions):
            path = graph.location.file(node_file(t, p))
            try:
                reader = paipc.open_file(graph.location.open(node_file(t, p)))
                rows = sum(reader.get_batch(k).num_rows for k in range(reader.num_record_batches))
            except (OSError, pa.ArrowException) as exc:
                raise FormatError(f"{path}: cannot read node partition ({exc})") from None
            if rows != et.partition_sizes[p]:
                raise FormatError(f"{path}: {rows} nodes, manifest says {et.partition_sizes[p]}"
                                  f" (entity_types.{t}.partition_sizes)")


def check_bucket_file(reader: paipc.RecordBatchFileReader, es: EdgeSet, expected_rows: int,
                      path: Path) -> None:
    """Schema (``src``/``dst`` int32, ``rel`` int32, ``weight`` float32 and the edge columns
    in their dtypes, as the edge set says) and total rows of an opened bucket file, from its
    metadata alone."""
    want = {f.name: f.type for f in bucket_schema(es.has_rel, es.has_weight,
                                                  [(c.name, c.dtype) for c in es.columns])}
    try:
        got = {f.name: f.type for f in reader.schema}
    except (UnicodeDecodeError, pa.ArrowException) as exc:
        raise FormatError(f"{path}: unreadable schema ({exc})") from None
    if got != want:
        have = ", ".join(f"{k}: {v}" for k, v in got.items())
        need = ", ".join(f"{k}: {v}" for k, v in want.items())
        raise FormatError(f"{path}: columns ({have}) differ from the edge set's ({need})")
    try:
        rows = sum(reader.get_batch(k).num_rows for k in range(reader.num_record_batches))
    except (OSError, pa.ArrowException) as exc:
        raise FormatError(f"{path}: unreadable record batch ({exc})") from None
    if rows != expected_rows:
        raise FormatError(f"{path}: {rows} edges, manifest says {expected_rows}")


class BucketBounds:
    """Offset bounds of one bucket ``(i, j)``: per relation type, the node count of
    partition ``i`` of its lhs type and of partition ``j`` of its rhs type (int64 ``(R,)``)."""

    def __init__(self, graph, i: int, j: int):
        rels = graph.relation_types
        self.lhs = np.array([graph.partition_sizes(r.lhs)[i] for r in rels], np.int64)
        self.rhs = np.array([graph.partition_sizes(r.rhs)[j] for r in rels], np.int64)

    def check(self, src: np.ndarray, dst: np.ndarray, rel: np.ndarray | None,
              path: Path, start: int) -> None:
        """Raise :class:`FormatError` naming ``path`` and the first bad row (``start`` =
        row of ``src[0]`` in the bucket) unless every offset lies in its partition."""
        if len(src) == 0:
            return
        if rel is not None and (rel.min() < 0 or rel.max() >= len(self.lhs)):
            row = start + int(np.flatnonzero((rel < 0) | (rel >= len(self.lhs)))[0])
            raise FormatError(f"{path}: row {row}: relation index {rel[row - start]} out "
                              f"of range (0..{len(self.lhs) - 1})")
        for name, col, sizes in (("src", src, self.lhs), ("dst", dst, self.rhs)):
            lo, hi = int(col.min()), int(col.max())
            uniform = rel is None or bool((sizes == sizes[0]).all())
            if lo >= 0 and (hi < sizes[0] if uniform else
                            not (col >= sizes[rel]).any()):
                continue
            bound = sizes[0] if uniform else sizes[rel]
            row = start + int(np.flatnonzero((col < 0) | (col >= bound))[0])
            limit = int(sizes[0] if uniform else sizes[rel[row - start]])
            raise FormatError(f"{path}: row {row}: {name} offset {int(col[row - start])} is "
                              f"outside its partition (0..{limit - 1}); the graph is "
                              f"corrupt (graphsys verify names every bad file)")


def check_node_table(table: pa.Table, graph, entity_type: str, partition: int,
                     path: Path) -> None:
    """Rows and ``id`` type of a node partition file against the manifest."""
    et = graph.manifest.entity_types[entity_type]
    want = et.partition_sizes[partition]
    try:
        _ = table.schema.names  # decoding the schema is the check
    except (UnicodeDecodeError, pa.ArrowException) as exc:
        raise FormatError(f"{path}: unreadable schema ({exc})") from None
    if table.num_rows != want:
        raise FormatError(f"{path}: {table.num_rows} nodes, manifest says {want}")
    id_type = pa.int64() if et.id_type == "int64" else pa.large_string()
    if "id" not in table.column_names or table.schema.field("id").type != id_type:
        raise FormatError(f"{path}: needs an 'id' column of type {id_type}")
    _no_nulls(table, "id", path)
    _unique_ids(table.column("id"), path)
    for c in et.columns:
        if c.dtype:  # a mapped column lives in a file of its own (checked when mapped)
            continue
        if c.name not in table.column_names:
            raise FormatError(f"{path}: node column {c.name!r} is missing")
        typ = table.schema.field(c.name).type
        ok = (pa.types.is_fixed_size_list(typ) and typ.list_size == c.dim
              and typ.value_type == pa.float32()) if c.kind == "features" else (
            typ == (pa.int64() if c.kind == "label" else pa.bool_()))
        if not ok:
            raise FormatError(f"{path}: node column {c.name!r} has type {typ}, not a "
                              f"{c.kind} column")
        _no_nulls(table, c.name, path)


def _unique_ids(column: pa.ChunkedArray, path: Path) -> None:
    """Refuse a node partition that holds one original id twice: every output would carry
    two rows for it and lookups by id would pick one of the two (a hash count, linear in the
    partition's nodes; integer ids: a sort, a run of ascending ids, as ingest writes them,
    in one linear pass)."""
    if pa.types.is_integer(column.type):
        ids = np.sort(column.to_numpy(), kind="stable")  # timsort: linear on sorted runs
        if not len(ids) or not (ids[1:] == ids[:-1]).any():
            return
    distinct = pc.count_distinct(column).as_py()
    if distinct != len(column):
        counts = pc.value_counts(column)
        dup = counts.field("values").filter(pc.greater(counts.field("counts"), 1))[0].as_py()
        raise FormatError(f"{path}: node id {dup!r} appears more than once "
                          f"({len(column) - distinct:,} repeated ids; corrupted)")


def _no_nulls(table: pa.Table, name: str, path: Path) -> None:
    """Refuse a node column with nulls (graphsys writes none; a count that a corrupted
    validity buffer or header made nonzero would otherwise fail deep in a reader)."""
    column = table.column(name)
    nulls = column.null_count + sum(chunk.flatten().null_count for chunk in column.chunks
                                    if pa.types.is_fixed_size_list(column.type))
    if nulls:
        raise FormatError(f"{path}: node column {name!r} has {nulls:,} nulls (corrupted)")


@numba.njit(cache=True, nogil=True)
def _first_unsorted(src, dst, prev_src, prev_dst):
    """Index of the first edge below its predecessor in (src, dst) order (the one before
    ``src[0]`` is ``(prev_src, prev_dst)``), or -1: one pass, no temporaries."""
    ps, pd = prev_src, prev_dst
    for k in range(src.shape[0]):
        s, d = src[k], dst[k]
        if s < ps or (s == ps and d < pd):
            return k
        ps, pd = s, d
    return -1


def check_sorted(src: np.ndarray, dst: np.ndarray, prev: tuple[int, int], path: Path,
                 start: int) -> tuple[int, int]:
    """Raise unless edges are sorted by (src, dst) after ``prev`` (the bucket's previous
    edge, ``(-1, -1)`` at its start; ``start``: row of ``src[0]``); returns the last edge."""
    if len(src) == 0:
        return prev
    k = _first_unsorted(src, dst, prev[0], prev[1])
    if k >= 0:
        raise FormatError(f"{path}: row {start + k}: edges not sorted by (src, dst)")
    return int(src[-1]), int(dst[-1])


def _edge_keys(bucket, transpose: bool = False) -> np.ndarray:
    """A bucket's edges as uint64 keys ``src << 32 | dst`` (``dst << 32 | src`` with
    ``transpose``), in its stored order."""
    a, b = (bucket.dst, bucket.src) if transpose else (bucket.src, bucket.dst)
    return (np.asarray(a, np.uint64) << np.uint64(32)) | np.asarray(b, np.uint64)


def _edge_digest(bucket, transpose: bool = False) -> int:
    """A digest of a bucket's multiset of ``(src, dst, rel)`` edges (``(dst, src, rel)``
    with ``transpose``): the sum modulo 2**64 of a splitmix64 image of each edge, so equal
    multisets in any order have equal digests (linear in the edges, no sort)."""
    z = _edge_keys(bucket, transpose)
    if bucket.rel is not None:
        z ^= np.asarray(bucket.rel, np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    mix_inplace(z, np.uint64(0), np.empty_like(z))
    return int(z.sum(dtype=np.uint64))


def check_edge_set_rules(graph, name: str, es: EdgeSet) -> None:
    """The rules the manifest records for a stored edge set, which readers rely on without
    reading every edge (degree counts, views, the NetworkX backend): every weight finite,
    as ingest writes them; ``undirected``: bucket ``(j, i)`` holds the reverse of every edge
    of ``(i, j)`` (same count and multiset digest); ``dedupe``: no ``(src, dst, rel)``
    twice (adjacent in the sorted order :func:`check_sorted` checks); ``drop_self_loops``:
    no edge from a node to itself. FormatError naming the bucket file and the rule
    otherwise. Linear in the edges."""
    same_type = np.array([r.lhs == r.rhs for r in graph.relation_types] or [True])
    for (i, j), n in sorted(es.buckets.items()):
        bucket = graph.bucket(i, j, name)
        weight = bucket.weight
        if weight is not None and not np.isfinite(weight).all():
            raise FormatError(f"{bucket.path}: a weight is not finite (corrupted)")
        if es.change is not None:  # a change set's rows: not edges under these rules
            continue
        broken = None
        if es.dedupe:
            key, rel = _edge_keys(bucket), bucket.rel
            same = key[1:] == key[:-1]
            if (same & (rel[1:] == rel[:-1]) if rel is not None else same).any():
                broken = "dedupe (an edge stored twice)"
        if not broken and es.drop_self_loops and i == j and (
                (bucket.src == bucket.dst) & (same_type[bucket.rel] if bucket.rel is not None
                                              else True)).any():
            broken = "drop_self_loops (a self-loop stored)"
        if not broken and es.undirected and i <= j and (
                es.buckets.get((j, i), 0) != n or _edge_digest(bucket) != _edge_digest(
                    graph.bucket(j, i, name), transpose=True)):
            broken = f"undirected (bucket ({j}, {i}) does not hold the reverse of its edges)"
        if broken:
            raise FormatError(f"{bucket.path}: edge set {name!r} breaks its manifest rule "
                              f"{broken}; corrupted")
        if es.undirected and i > j and (j, i) not in es.buckets:
            raise FormatError(f"{bucket.path}: edge set {name!r} breaks its manifest rule "
                              f"undirected (bucket ({j}, {i}) is empty); corrupted")


def check_structure(graph) -> dict[str, int]:
    """``graphsys verify --quick``: every check but the hashes, over every file: listed,
    sizes (at open), node partition rows and types, bucket schemas, row counts, offset
    ranges and sort order, and the rules the manifest records for each edge set
    (:func:`check_edge_set_rules`). Raises :class:`FormatError` naming the first bad file;
    returns counts ``files``, ``bytes``, ``nodes``, ``edges``."""
    m = graph.manifest
    check_listed(m, graph.location)
    for t in m.entity_types:
        for p in range(m.num_partitions):
            graph.node_ids(t, p)  # checked on read (ids unique within the partition)
        ids = graph.node_ids(t)  # and across partitions
        if len(ids) and pc.count_distinct(pa.chunked_array([ids])).as_py() != len(ids):
            raise FormatError(f"{graph.location.file('manifest.json')}: entity type {t!r} "
                              f"holds one node id in two partitions (corrupted)")
        for c in m.entity_types[t].columns:
            if c.kind == "string":
                graph.string_column(c.name, t)  # offsets, UTF-8 and length checked
    edges = 0
    for name, es in m.edge_sets.items():
        for (i, j), n in sorted(es.buckets.items()):
            bucket = graph.bucket(i, j, name)
            prev = (-1, -1)
            for eb in bucket.batches():  # schema, rows and ranges checked on first touch
                prev = check_sorted(eb.src, eb.dst, prev, bucket.path, eb.start)
            edges += n
        check_edge_set_rules(graph, name, es)
    return {"files": len(m.files), "bytes": sum(e["bytes"] for e in m.files.values()),
            "nodes": graph.num_nodes(), "edges": edges}
