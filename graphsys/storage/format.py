"""The on-disk graph format: paths, manifest schema, reading and validation.

``docs/format.md`` specifies the directory: ``manifest.json`` (written last, atomically),
the node partitions ``nodes/{entity_type}/part-{p:05d}.arrow``, the buckets
``edges/{edge_set}/bucket-{i:05d}-{j:05d}.arrow`` and the optional indexes under
``index/{edge_set}/`` and mapped node columns. Every file is an Arrow IPC file (Feather v2,
uncompressed) so it memory-maps with no copy.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphsys.errors import FormatError
from graphsys.memory import available_memory
from graphsys.storage.atomic import write_bytes_atomic
from graphsys.storage.location import GraphLocation

FORMAT_NAME = "graphsys-graph"
FORMAT_VERSION = 8
#: Versions this graphsys reads: version 1 is version 2 without adjacency indexes, version 2
#: is version 3 without a ``push`` index, version 3 is version 4 without a ``sym`` index,
#: version 4 is version 5 without edge columns, version 5 is version 6 without appended
#: edge sets that join the default view (``appended_to``) and without indexes built before
#: an append (``layout``), version 6 is version 7 without a push index in source steps
#: (``index_dtype`` ``uint8``; before it, ``uint32`` source ids). A manifest is written
#: with the lowest version that describes it (:meth:`Manifest.version`), so older readers
#: still open graphs that do not use what a later version added. Version 8 adds change sets
#: (deletions and weight updates, :class:`EdgeChange`).
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8)
MANIFEST = "manifest.json"
DEFAULT_EDGE_SET = "default"
DEFAULT_ENTITY_TYPE = "node"
DEFAULT_RELATION = "default"
#: Most partitions a graph may have (P x P buckets; ingest also caps P by the node count).
MAX_PARTITIONS = 4096
#: RAM a manifest takes while parsed, per byte of its file (bytes, text and objects).
MANIFEST_PARSE_FACTOR = 6
#: Rows per Arrow record batch in a bucket file (2**24 = 16,777,216 edges).
DEFAULT_MAX_BATCH_ROWS = 1 << 24


def node_file(entity_type: str, partition: int) -> str:
    """Relative path of one node partition file."""
    return f"nodes/{entity_type}/part-{partition:05d}.arrow"


def bucket_file(edge_set: str, i: int, j: int) -> str:
    """Relative path of the bucket holding edges from partition ``i`` to partition ``j``."""
    return f"edges/{edge_set}/bucket-{i:05d}-{j:05d}.arrow"


@dataclass(frozen=True)
class RelationType:
    """A relation type: edges of it go from ``lhs`` entities to ``rhs`` entities."""

    name: str
    lhs: str
    rhs: str


@dataclass(frozen=True)
class NodeColumn:
    """A node column stored beside ``id`` in every node partition file.

    ``kind`` is ``features`` (fixed-size list of float32, ``dim`` wide), ``label`` (int64,
    -1 = unknown) or ``mask`` (bool).

    ``dtype`` set (version 2): the column is not in the partition files but in one file of
    its own, :func:`node_column_file`, in type-local id order, one record batch, so it maps
    with no copy; ``dtype`` is its value type (``float16``/``float32`` features, ``int64``
    labels, ``large_string`` for kind ``string``: UTF-8 text such as item titles, version 5).
    """

    name: str
    kind: str
    dim: int = 1
    dtype: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "dim": self.dim}
        if self.dtype:
            out["dtype"] = self.dtype
        return out


#: Value types of a node column stored in a file of its own, per kind.
MAPPED_COLUMN_DTYPES = {"features": ("float16", "float32"), "label": ("int64",),
                        "string": ("large_string",)}
#: Node column kinds; ``string`` is stored in a file of its own only.
NODE_COLUMN_KINDS = ("features", "label", "mask", "string")
#: Value types of an edge column (:class:`EdgeColumn`).
EDGE_COLUMN_DTYPES = ("int64", "float32", "float64")
#: Bucket file columns an edge column may not be named.
RESERVED_EDGE_COLUMNS = ("src", "dst", "rel", "weight")
#: An edge column's name: a letter or ``_``, then letters, digits and ``_``.
EDGE_COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


@dataclass(frozen=True)
class EdgeColumn:
    """A named numeric column stored beside the edges of an edge set (version 5).

    Every bucket file of the edge set holds it as one more Arrow column after ``src``,
    ``dst`` and the optional ``rel``/``weight``, row for row with the bucket's edges (so it
    maps with no copy as they do). ``dtype`` is ``int64``, ``float32`` or ``float64``.
    """

    name: str
    dtype: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}


def _edge_column(raw: Any, ctx: str, source: str) -> EdgeColumn:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(
            raw.get("dtype"), str):
        raise FormatError(f"{source}: field '{ctx}' must be an object with name and dtype")
    col = EdgeColumn(raw["name"], raw["dtype"])
    if not EDGE_COLUMN_NAME.fullmatch(col.name) or col.name in RESERVED_EDGE_COLUMNS:
        raise FormatError(f"{source}: field '{ctx}.name': bad edge column name {col.name!r}")
    if col.dtype not in EDGE_COLUMN_DTYPES:
        raise FormatError(f"{source}: field '{ctx}.dtype' must be one of "
                          f"{', '.join(EDGE_COLUMN_DTYPES)}, got {col.dtype!r}")
    return col


def node_column_file(entity_type: str, name: str) -> str:
    """Relative path of a node column stored in its own file (see :class:`NodeColumn`)."""
    return f"nodes/{entity_type}/column-{name}.arrow"


def _node_column(raw: Any, ctx: str, source: str) -> NodeColumn:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(
            raw.get("kind"), str):
        raise FormatError(f"{source}: field '{ctx}' must be an object with name and kind")
    reader = _FieldReader(source)
    col = NodeColumn(raw["name"], raw["kind"], reader.optional(raw, "dim", int, ctx, 1),
                     reader.optional(raw, "dtype", str, ctx, ""))
    if col.dtype:
        if col.dtype not in MAPPED_COLUMN_DTYPES.get(col.kind, ()):
            raise FormatError(f"{source}: field '{ctx}.dtype' {col.dtype!r} does not suit kind "
                              f"{col.kind!r}")
        if not col.name.replace("_", "").replace("-", "").isalnum() or col.dim < 1:
            raise FormatError(f"{source}: field '{ctx}': bad column name or dim")
    return col


@dataclass
class EntityType:
    """Nodes of one type: their original id type and their count per partition."""

    name: str
    id_type: str  # "int64" or "string"
    partition_sizes: list[int]
    columns: list[NodeColumn] = field(default_factory=list)

    @property
    def num_nodes(self) -> int:
        return int(sum(self.partition_sizes))


CHANGE_KINDS = ("delete", "update")  #: Kinds of a change set (:class:`EdgeChange`).


@dataclass(frozen=True)
class EdgeChange:
    """A change set's record (version 8, :mod:`graphsys.storage.edge_changes`): its rows are
    the pairs it deletes or re-weights (``kind``) in ``targets``; ``removed``: per bucket,
    the targets' edges it removes."""

    kind: str
    targets: tuple[str, ...]
    removed: dict[tuple[int, int], int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "targets": list(self.targets),
                "removed": {f"{i}-{j}": n for (i, j), n in sorted(self.removed.items())}}


def _edge_change(raw: Any, ctx: str, source: str, p: int) -> EdgeChange:
    reader = _FieldReader(source)  # a change set's record: kind, targets, removed
    kind, targets = reader.get(raw, "kind", str, ctx), reader.get(raw, "targets", list, ctx)
    if kind not in CHANGE_KINDS or not targets or not all(isinstance(t, str) for t in targets):
        raise FormatError(f"{source}: field '{ctx}' must have kind delete or update and a "
                          f"list of target edge sets")
    return EdgeChange(kind, tuple(targets), _bucket_counts(
        reader.optional(raw, "removed", dict, ctx, {}), f"{ctx}.removed", source, p))


def _bucket_counts(raw: dict, ctx: str, source: str, p: int) -> dict[tuple[int, int], int]:
    """``{"i-j": n}`` as ``{(i, j): n}``, each key in range and each count >= 0."""
    out = {}
    for key, n in raw.items():
        try:
            i, j = (int(x) for x in key.split("-"))
        except ValueError:
            raise FormatError(f"{source}: bad bucket key {key!r} in '{ctx}'") from None
        if not (0 <= i < p and 0 <= j < p) or type(n) is not int or n < 0:
            raise FormatError(f"{source}: bad bucket entry {key!r} in '{ctx}'")
        out[(i, j)] = n
    return out


@dataclass
class EdgeSet:
    """A named set of edges over the graph's node mapping (e.g. ``train``/``valid``/``test``).

    ``buckets`` maps ``(i, j)`` to the number of edges in that bucket (non-empty ones only).
    """

    name: str
    num_edges: int
    buckets: dict[tuple[int, int], int]
    has_rel: bool
    has_weight: bool
    undirected: bool = False
    dedupe: bool = False
    drop_self_loops: bool = False
    skipped_lines: int = 0
    #: Extra numeric columns stored beside the edges (:class:`EdgeColumn`, version 5).
    columns: list[EdgeColumn] = field(default_factory=list)
    #: Version 6: the edge set this one was appended to (``ingest --append-to``) and whose
    #: default view it joins (:mod:`graphsys.storage.edge_views`); "" for none.
    appended_to: str = ""
    #: Several stored edge sets read as one (:func:`graphsys.storage.edge_views.union`):
    #: their names, in reading order; empty for a stored edge set. Never in a manifest.
    members: tuple[str, ...] = ()
    #: Version 8: a change set's record (deletions, weight updates); None for edges.
    change: EdgeChange | None = None

    @property
    def parts(self) -> tuple[str, ...]:
        """The stored edge sets this one reads: its :attr:`members`, or its own name."""
        return self.members or (self.name,)

    def column(self, name: str) -> EdgeColumn:
        """The edge column ``name``; a :class:`FormatError` naming those there are."""
        for c in self.columns:
            if c.name == name:
                return c
        raise FormatError(f"edge set {self.name!r} has no edge column {name!r} (edge "
                          f"columns: {', '.join(c.name for c in self.columns) or 'none'})")


@dataclass
class Manifest:
    """The parsed ``manifest.json`` of a graph directory."""

    num_partitions: int
    offset_dtype: str
    max_batch_rows: int
    partitioner: dict[str, Any]
    entity_types: dict[str, EntityType]
    relation_types: list[RelationType]
    edge_sets: dict[str, EdgeSet]
    files: dict[str, dict[str, Any]]
    created_by: str = ""
    #: Free-form JSON provenance (e.g. a registry dataset's name, licence, label names).
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Adjacency indexes: ``indexes[edge_set][kind]`` for kind ``csr``/``csc``/``push``/``sym``.
    indexes: dict[str, dict[str, IndexInfo]] = field(default_factory=dict)

    # -- serialisation -------------------------------------------------------------------------
    def version(self) -> int:
        """The format version this manifest is written with: 8 with a change set
        (:class:`EdgeChange`), 7 with a push index in source
        steps (:data:`PUSH_STEP_DTYPE`), 6 with an edge set appended
        to another (``appended_to``) or an index built before an append (``layout``), 5
        with edge columns or string node columns, 4 with a ``sym`` index, 3 with a ``push``
        index, else 2."""
        if any(es.change for es in self.edge_sets.values()):
            return 8
        if any(info.kind == "push" and info.index_dtype == PUSH_STEP_DTYPE
               for kinds in self.indexes.values() for info in kinds.values()):
            return 7
        if any(es.appended_to for es in self.edge_sets.values()) or any(
                info.layout for kinds in self.indexes.values() for info in kinds.values()):
            return 6
        if any(es.columns for es in self.edge_sets.values()) or any(
                c.kind == "string" for et in self.entity_types.values() for c in et.columns):
            return 5
        if any("sym" in kinds for kinds in self.indexes.values()):
            return 4
        uses_push = any("push" in kinds for kinds in self.indexes.values())
        return 3 if uses_push else 2

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "format_version": self.version(),
            "created_by": self.created_by,
            "num_partitions": self.num_partitions,
            "offset_dtype": self.offset_dtype,
            "max_batch_rows": self.max_batch_rows,
            "partitioner": self.partitioner,
            "entity_types": {
                name: {
                    "id_type": et.id_type,
                    "num_nodes": et.num_nodes,
                    "partition_sizes": et.partition_sizes,
                    "columns": [c.to_json() for c in et.columns],
                }
                for name, et in self.entity_types.items()
            },
            "relation_types": [
                {"name": r.name, "lhs": r.lhs, "rhs": r.rhs} for r in self.relation_types
            ],
            "edge_sets": {
                name: {
                    "num_edges": es.num_edges,
                    "has_rel": es.has_rel,
                    "has_weight": es.has_weight,
                    "undirected": es.undirected,
                    "dedupe": es.dedupe,
                    "drop_self_loops": es.drop_self_loops,
                    "skipped_lines": es.skipped_lines,
                    **({"columns": [c.to_json() for c in es.columns]} if es.columns else {}),
                    **({"appended_to": es.appended_to} if es.appended_to else {}),
                    **({"change": es.change.to_json()} if es.change else {}),
                    "buckets": {f"{i}-{j}": n for (i, j), n in sorted(es.buckets.items())},
                }
                for name, es in self.edge_sets.items()
            },
            "files": dict(sorted(self.files.items())),
            "metadata": self.metadata,
            "indexes": {name: {kind: info.to_json() for kind, info in sorted(kinds.items())}
                        for name, kinds in sorted(self.indexes.items())},
        }

    @classmethod
    def from_json(cls, data: Any, *, source: str = MANIFEST) -> Manifest:
        """Validate and parse a manifest; every problem is a :class:`FormatError` naming the
        field."""
        reader = _FieldReader(source)
        if not isinstance(data, dict):
            raise FormatError(f"{source}: not a JSON object")
        if data.get("format") != FORMAT_NAME:
            raise FormatError(f"{source}: field 'format' is {data.get('format')!r}, "
                              f"expected {FORMAT_NAME!r}")
        version = data.get("format_version")
        if version not in READABLE_VERSIONS or isinstance(version, bool):
            raise FormatError(f"{source}: unsupported format_version {version!r} "
                              f"(this graphsys reads versions "
                              f"{', '.join(map(str, READABLE_VERSIONS))})")
        p = reader.get(data, "num_partitions", int)
        if not 1 <= p <= MAX_PARTITIONS:
            raise FormatError(f"{source}: field 'num_partitions' must be in 1..{MAX_PARTITIONS}"
                              f", got {p}")
        offset_dtype = reader.get(data, "offset_dtype", str)
        if offset_dtype not in ("int32", "int64"):
            raise FormatError(f"{source}: field 'offset_dtype' must be int32 or int64")
        entity_types = {}
        for name, et in reader.get(data, "entity_types", dict).items():
            sizes = reader.get(et, "partition_sizes", list, f"entity_types.{name}")
            if len(sizes) != p or not all(isinstance(s, int) and s >= 0 for s in sizes):
                raise FormatError(f"{source}: field 'entity_types.{name}.partition_sizes' must "
                                  f"hold {p} non-negative integers")
            id_type = reader.get(et, "id_type", str, f"entity_types.{name}")
            if id_type not in ("int64", "string"):
                raise FormatError(f"{source}: field 'entity_types.{name}.id_type' must be "
                                  f"int64 or string")
            cols = [_node_column(c, f"entity_types.{name}.columns[{k}]", source) for k, c in
                    enumerate(reader.get(et, "columns", list, f"entity_types.{name}"))]
            num_nodes = reader.optional(et, "num_nodes", int, f"entity_types.{name}", None)
            if num_nodes is not None and num_nodes != sum(sizes):
                raise FormatError(f"{source}: field 'entity_types.{name}.num_nodes' "
                                  f"({num_nodes}) differs from the sum of its "
                                  f"partition_sizes ({sum(sizes)})")
            entity_types[name] = EntityType(name, id_type, sizes, cols)
        relation_types = []
        for k, r in enumerate(reader.get(data, "relation_types", list)):
            for key in ("name", "lhs", "rhs"):
                reader.get(r, key, str, f"relation_types[{k}]")
            if r["lhs"] not in entity_types or r["rhs"] not in entity_types:
                raise FormatError(f"{source}: relation_types[{k}] names an unknown entity type")
            relation_types.append(RelationType(r["name"], r["lhs"], r["rhs"]))
        edge_sets = {}
        for name, es in reader.get(data, "edge_sets", dict).items():
            ctx = f"edge_sets.{name}"
            buckets = _bucket_counts(reader.get(es, "buckets", dict, ctx), f"{ctx}.buckets",
                                     source, p)
            num_edges = reader.get(es, "num_edges", int, ctx)
            if sum(buckets.values()) != num_edges:
                raise FormatError(f"{source}: '{ctx}.num_edges' ({num_edges}) differs from the "
                                  f"sum of its bucket counts ({sum(buckets.values())})")
            edge_sets[name] = EdgeSet(
                name, num_edges, buckets,
                has_rel=reader.get(es, "has_rel", bool, ctx),
                has_weight=reader.get(es, "has_weight", bool, ctx),
                undirected=reader.optional(es, "undirected", bool, ctx, False),
                dedupe=reader.optional(es, "dedupe", bool, ctx, False),
                drop_self_loops=reader.optional(es, "drop_self_loops", bool, ctx, False),
                skipped_lines=reader.optional(es, "skipped_lines", int, ctx, 0),
                columns=[_edge_column(c, f"{ctx}.columns[{k}]", source) for k, c in
                         enumerate(reader.get(es, "columns", list, ctx) if "columns" in es
                                   else [])],
                appended_to=reader.get(es, "appended_to", str, ctx) if "appended_to" in es
                else "",
                change=_edge_change(es["change"], f"{ctx}.change", source, p)
                if "change" in es else None,
            )
            names = [c.name for c in edge_sets[name].columns]
            if len(set(names)) != len(names):
                raise FormatError(f"{source}: field '{ctx}.columns' names a column twice")
        manifest = cls(
            num_partitions=p,
            offset_dtype=offset_dtype,
            max_batch_rows=reader.get(data, "max_batch_rows", int),
            partitioner=reader.get(data, "partitioner", dict),
            entity_types=entity_types,
            relation_types=relation_types,
            edge_sets=edge_sets,
            files=reader.get(data, "files", dict),
            created_by=str(data.get("created_by", "")),
            metadata=data.get("metadata", {}) if isinstance(data.get("metadata", {}), dict)
            else {},
            indexes=_parse_indexes(data.get("indexes", {}), edge_sets, reader),
        )
        for name, es in edge_sets.items():
            base = edge_sets.get(es.appended_to)
            if es.appended_to and (base is None or base.appended_to or base is es):
                raise FormatError(f"{source}: field 'edge_sets.{name}.appended_to' must name "
                                  f"another edge set that is not itself appended, got "
                                  f"{es.appended_to!r}")
            if es.change and any(t not in edge_sets or t == name for t in es.change.targets):
                raise FormatError(f"{source}: field 'edge_sets.{name}.change.targets' must "
                                  f"name other edge sets")
        if manifest.version() > max(version, 2):  # version 1 is read as version 2
            what = ("a change set (deletions or weight updates)" if manifest.version() == 8
                    else "field 'indexes' lists a push index in source steps"
                    if manifest.version() == 7 else
                    "an appended edge set or an index built before an append"
                    if manifest.version() == 6 else
                    "edge columns or string node columns" if manifest.version() == 5 else
                    "field 'indexes' lists a sym index" if manifest.version() == 4 else
                    "field 'indexes' lists a push index")
            raise FormatError(f"{source}: {what}, which needs format_version "
                              f"{manifest.version()} (got {version})")
        return manifest


INDEX_KINDS = ("csr", "csc", "push", "sym", "temporal")
#: Columns of a ``push`` index (:mod:`graphsys.storage.push_layout`), in file order.
PUSH_COLUMNS = ("order", "bounds", "edge_ptr", "step", "dst", "runs")
#: ``index_dtype`` of a ``push`` index in source steps (version 7: uint8 steps, 3 bytes per
#: edge); :data:`PUSH_IDS_DTYPE` names the layout before it (uint32 source ids in a ``src``
#: column, 6 bytes per edge), which is listed and removed when rebuilt, never read
PUSH_STEP_DTYPE = "uint8"
PUSH_IDS_DTYPE = "uint32"
#: The columns of the layout before it
PUSH_IDS_COLUMNS = ("order", "bounds", "edge_ptr", "src", "dst", "runs")


def index_file(edge_set: str, kind: str, column: str) -> str:
    """Relative path of one column of an index of ``kind``: ``indptr``, ``indices``,
    ``weight`` of ``csr`` (out-neighbours), ``csc`` (in-neighbours) or ``sym`` (undirected,
    deduplicated neighbours); one of
    :data:`PUSH_COLUMNS` of ``push`` (in-edges in destination blocks)."""
    return f"index/{edge_set}/{kind}-{column}.arrow"


@dataclass(frozen=True)
class IndexInfo:
    """A stored adjacency index of one edge set over global node ids (docs/format.md,
    "Adjacency indexes").

    ``index_dtype``: ``int32`` or ``int64`` indices of a CSR/CSC (``indptr`` is always int64);
    of a ``push`` index, :data:`PUSH_STEP_DTYPE` for its source steps, or
    :data:`PUSH_IDS_DTYPE` for the older layout (listed, not read). ``edges_digest``: sha256 of
    the edge set's bucket hashes when it was built (a different one: stale). ``num_edges``: the
    index's entries (for ``sym``, at most twice the edges). ``num_blocks`` and ``heavy``: a
    ``push`` index's destination blocks and heavy sources (0 otherwise). ``layout``: the
    partition sizes of every entity type when the index was built, recorded once an append has
    grown them, so its ids are renumbered on read (:mod:`graphsys.storage.index_merge`); empty
    while the index is in the graph's current numbering.
    """

    kind: str
    index_dtype: str
    num_nodes: int
    num_edges: int
    weighted: bool
    edges_digest: str
    num_blocks: int = 0
    heavy: int = 0
    layout: tuple[int, ...] = ()

    def columns(self) -> list[str]:
        if self.kind == "push":
            return list(PUSH_COLUMNS if self.index_dtype == PUSH_STEP_DTYPE
                        else PUSH_IDS_COLUMNS)
        if self.kind == "temporal":   # graphsys.storage.temporal_index
            return ["indptr", "indices", "time", "eid"]
        return ["indptr", "indices"] + (["weight"] if self.weighted else [])

    def to_json(self) -> dict[str, Any]:
        out = {"index_dtype": self.index_dtype, "num_nodes": self.num_nodes,
               "num_edges": self.num_edges, "weighted": self.weighted,
               "edges_digest": self.edges_digest}
        if self.kind == "push":
            out.update(num_blocks=self.num_blocks, heavy=self.heavy)
        if self.layout:
            out["layout"] = list(self.layout)
        return out


def _parse_indexes(raw: Any, edge_sets: dict[str, EdgeSet], reader: _FieldReader
                   ) -> dict[str, dict[str, IndexInfo]]:
    if not isinstance(raw, dict):
        raise FormatError(f"{reader.source}: field 'indexes' must be an object")
    out: dict[str, dict[str, IndexInfo]] = {}
    for name, kinds in raw.items():
        ctx = f"indexes.{name}"
        if name not in edge_sets:
            raise FormatError(f"{reader.source}: field '{ctx}' names an unknown edge set")
        if not isinstance(kinds, dict):
            raise FormatError(f"{reader.source}: field '{ctx}' must be an object")
        out[name] = {}
        for kind, entry in kinds.items():
            kctx = f"{ctx}.{kind}"
            if kind not in INDEX_KINDS:
                raise FormatError(f"{reader.source}: field '{kctx}': unknown index kind "
                                  f"({', '.join(INDEX_KINDS)})")
            dtype = reader.get(entry, "index_dtype", str, kctx)
            allowed = ((PUSH_STEP_DTYPE, PUSH_IDS_DTYPE) if kind == "push"
                       else ("int32", "int64"))
            if dtype not in allowed:
                raise FormatError(f"{reader.source}: field '{kctx}.index_dtype' must be "
                                  f"{' or '.join(allowed)}")
            push = ((reader.get(entry, "num_blocks", int, kctx),
                     reader.get(entry, "heavy", int, kctx)) if kind == "push" else (0, 0))
            layout = reader.get(entry, "layout", list, kctx) if "layout" in entry else []
            if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                       for s in layout) or (layout and sum(layout) != entry.get("num_nodes")):
                raise FormatError(f"{reader.source}: field '{kctx}.layout' must hold "
                                  f"non-negative integers summing to its num_nodes")
            info = IndexInfo(kind, dtype, reader.get(entry, "num_nodes", int, kctx),
                             reader.get(entry, "num_edges", int, kctx),
                             reader.get(entry, "weighted", bool, kctx),
                             reader.get(entry, "edges_digest", str, kctx), *push,
                             layout=tuple(layout))
            if min(info.num_nodes, info.num_edges, info.num_blocks, info.heavy) < 0:
                raise FormatError(f"{reader.source}: field '{kctx}' has a negative count")
            out[name][kind] = info
    return out


class _FieldReader:
    def __init__(self, source: str):
        self.source = source

    def get(self, obj: Any, key: str, typ: type, ctx: str = "") -> Any:
        name = f"{ctx}.{key}" if ctx else key
        if not isinstance(obj, dict) or key not in obj:
            raise FormatError(f"{self.source}: missing field '{name}'")
        value = obj[key]
        if typ is int and isinstance(value, bool) or not isinstance(value, typ):
            raise FormatError(f"{self.source}: field '{name}' must be {typ.__name__}, "
                              f"got {type(value).__name__} {value!r:.40}")
        return value

    def optional(self, obj: Any, key: str, typ: type, ctx: str, default: Any) -> Any:
        """Field ``key`` of ``obj`` checked like :meth:`get` when present (a string
        ``"846"`` where a count belongs is refused, not compared or coerced), else
        ``default``."""
        return self.get(obj, key, typ, ctx) if isinstance(obj, dict) and key in obj else default


def write_manifest(directory: Path, manifest: Manifest) -> None:
    """Write ``manifest`` as ``directory``'s manifest, atomically (the commit of a write:
    the files it names are on disk first)."""
    write_bytes_atomic(Path(directory) / MANIFEST,
                       json.dumps(manifest.to_json(), indent=1).encode() + b"\n")


def read_manifest(directory: str | Path | GraphLocation) -> Manifest:
    """Read and validate ``DIR/manifest.json`` (``directory`` a local path or a
    :class:`~graphsys.storage.location.GraphLocation`); raise :class:`FormatError` if absent
    or bad."""
    loc = directory if isinstance(directory, GraphLocation) else GraphLocation(directory)
    path = loc.file(MANIFEST)
    if not loc.is_dir():
        raise FormatError(f"{loc}: not a directory")
    size = loc.size(MANIFEST)
    if size is None:
        raise FormatError(f"{path}: no manifest (not a graphsys graph, or an ingest that did "
                          f"not finish)")
    # parsed JSON takes several times its bytes (the text, its str, the objects): a
    # manifest that could not be parsed in the RAM there is is refused before it is read
    limit = available_memory() // MANIFEST_PARSE_FACTOR
    if size > limit:
        raise FormatError(f"{path}: {size:,} bytes, more than the {limit:,} a manifest may "
                          f"hold with the RAM available now (parsing takes about "
                          f"{MANIFEST_PARSE_FACTOR}x its size)")
    try:
        data = json.loads(loc.read_bytes(MANIFEST, max_bytes=limit).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise FormatError(f"{path}: manifest is not valid JSON ({exc})") from None
    except (OSError, pa.ArrowException) as exc:
        raise FormatError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})"
                          ) from None
    try:
        manifest = Manifest.from_json(data, source=str(path))
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        raise FormatError(f"{path}: malformed manifest ({type(exc).__name__}: {exc})") from None
    validate_manifest(manifest, loc.root if loc.local else None, source=str(path))
    return manifest


#: Entity type and edge set names (they become directory names): a letter, digit or ``_``,
#: then letters, digits, ``_ . + = -``; at most 128 characters. No ``/``, no ``..``.
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=-]{0,127}")
#: A partition holds at most this many nodes (local offsets are int32).
MAX_PARTITION_NODES = (1 << 31) - 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


def safe_relative_path(directory: str | Path | None, rel: object, *, source: str,
                       field: str, resolved: dict[str, str] | None = None) -> Path:
    """``directory / rel`` if ``rel`` is a relative POSIX path of safe components that stays
    inside ``directory`` once symlinks are resolved; else a :class:`FormatError` naming
    ``source`` and ``field``. Files are untrusted input: nothing outside is ever read.
    ``directory`` None: the files are on a filesystem without symlinks (object storage,
    :mod:`graphsys.storage.location`): the lexical checks alone apply; returns ``rel``.
    ``resolved``: the resolved directories of earlier calls (a dict kept between the calls
    for one directory's files), so that each file costs one ``lstat`` of its own name,
    not one of every component of its path."""
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel:
        raise FormatError(f"{source}: {field}: {rel!r} is not a relative path")
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise FormatError(f"{source}: {field}: path {rel!r} is absolute or leaves the graph "
                          f"directory")
    if directory is None:
        return Path(rel)
    base = Path(directory)
    target = base / rel
    cache = {} if resolved is None else resolved
    root = _realpath(str(base), cache)
    if os.path.commonpath([root, _resolve(str(target), cache)]) != root:
        raise FormatError(f"{source}: {field}: {rel!r} resolves outside {base} (a symlink)")
    return target


def _realpath(path: str, cache: dict[str, str]) -> str:
    """``os.path.realpath(path)`` of a directory, remembered in ``cache``."""
    real = cache.get(path)
    if real is None:
        real = cache[path] = os.path.realpath(path)
    return real


def _resolve(path: str, cache: dict[str, str]) -> str:
    """``os.path.realpath(path)`` (whose last component is a name, not ``.`` or ``..``):
    its directory resolved once per ``cache``, then the name itself where it is a symlink
    (a path resolves as its resolved directory joined with its name)."""
    parent, name = os.path.split(path)
    joined = os.path.join(_realpath(parent, cache), name)
    return os.path.realpath(joined) if os.path.islink(joined) else joined


def validate_manifest(m: Manifest, directory: str | Path | None, *,
                      source: str = MANIFEST) -> None:
    """Check a parsed manifest as untrusted input, beyond its schema: safe entity type and
    edge set names, every listed file a safe path inside ``directory`` (None: a remote
    directory, lexical checks only; see :func:`safe_relative_path`) with a sha256 and a
    size, partition sizes within int32, consistent node counts and relation types.
    Raises :class:`FormatError` naming ``source`` and the field."""
    for kind, names in (("entity_types", m.entity_types), ("edge_sets", m.edge_sets)):
        for name in names:
            if not SAFE_NAME.fullmatch(name):
                raise FormatError(f"{source}: {kind} name {name!r} is not safe (letters, "
                                  f"digits, _ . + = -; no / or leading .)")
    for name, et in m.entity_types.items():
        if any(s > MAX_PARTITION_NODES for s in et.partition_sizes):
            raise FormatError(f"{source}: entity_types.{name}.partition_sizes: a partition "
                              f"holds more than {MAX_PARTITION_NODES} nodes")
        for c in et.columns:
            if c.kind not in NODE_COLUMN_KINDS or not 1 <= c.dim <= 1 << 20 or (
                    c.kind == "string" and not c.dtype):
                raise FormatError(f"{source}: entity_types.{name}.columns: bad column {c.name!r}"
                                  f" (kind {c.kind!r}, dim {c.dim})")
    for name, es in m.edge_sets.items():
        if not es.has_rel and not es.change and len(m.relation_types) != 1:
            raise FormatError(f"{source}: edge_sets.{name} has no rel column but the graph has "
                              f"{len(m.relation_types)} relation types")
    if m.max_batch_rows < 1:
        raise FormatError(f"{source}: field 'max_batch_rows' must be >= 1")
    resolved: dict[str, str] = {}
    for rel, entry in m.files.items():
        safe_relative_path(directory, rel, source=source, field="files", resolved=resolved)
        if not isinstance(entry, dict) or not isinstance(entry.get("bytes"), int) \
                or isinstance(entry.get("bytes"), bool) or entry["bytes"] < 0 \
                or not isinstance(entry.get("sha256"), str) \
                or not _SHA256.fullmatch(entry["sha256"]):
            raise FormatError(f"{source}: files.{rel}: needs 'bytes' (a non-negative integer) "
                              f"and 'sha256' (64 hex digits)")
