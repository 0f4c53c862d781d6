"""Reading a graph's nodes: the node partition files, original ids, and node columns.

Each entity type's nodes are stored per partition in an Arrow IPC file (column ``id`` and
the node columns kept in the node table); a column written on its own
(:mod:`graphsys.storage.node_columns`) is a file that maps with no copy. Every file is
untrusted: read through :func:`node_table` (structure checked), mapped columns sized
against the manifest, string columns checked in full once. :class:`~graphsys.storage.graph.Graph`'s
node methods (``node_ids``, ``to_internal``, ``to_original``, ``node_column``,
``mapped_node_column``, ``mapped_features``, ``string_column``) are thin calls into this
module and hold the contract; its per-graph caches (the sorted ids behind
:func:`to_internal`, the checked string columns) live on the Graph.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as paipc

from graphsys.errors import FormatError, GraphsysError, ParameterError, first_bool
from graphsys.storage import kernels
from graphsys.storage.column_file import map_column
from graphsys.storage.format import node_column_file, node_file
from graphsys.storage.ids import ids_array
from graphsys.storage.partitioned_rows import PartitionedRows
from graphsys.storage.structure import check_node_table


def node_table(graph, entity_type: str, partition: int) -> pa.Table:
    """The node partition file of ``entity_type``, read and checked
    (:func:`~graphsys.storage.structure.check_node_table`)."""
    rel = node_file(entity_type, partition)
    path = graph.location.file(rel)
    graph.check_hash(rel)
    try:
        table = paipc.open_file(graph.location.open(rel)).read_all()
        # lengths and buffer sizes against each other (metadata only): a garbled
        # length would otherwise reach slicing code that aborts the process
        table.validate()
    except (OSError, pa.ArrowException) as exc:
        raise FormatError(f"{path}: cannot read node partition ({exc})") from None
    check_node_table(table, graph, entity_type, partition, path)
    return table


def node_ids(graph, entity_type: str | None = None, partition: int | None = None):
    """Original ids in internal-id order (:meth:`Graph.node_ids
    <graphsys.storage.graph.Graph.node_ids>`)."""
    et = graph.entity_type(entity_type)
    parts = range(graph.num_partitions) if partition is None else [partition]
    cols = [node_table(graph, et.name, p).column("id") for p in parts]
    arr = pa.chunked_array([c for col in cols for c in col.chunks],
                           pa.int64() if et.id_type == "int64" else pa.large_string())
    arr = arr.combine_chunks()
    return arr.to_numpy() if et.id_type == "int64" else arr


def to_internal(graph, ids, entity_type: str | None = None) -> np.ndarray:
    """Internal ids of original ids, by binary search in the ids sorted once per Graph
    (:meth:`Graph.to_internal <graphsys.storage.graph.Graph.to_internal>`)."""
    et = graph.entity_type(entity_type)
    sorted_ids, order = id_order(graph, et.name)
    scalar = np.isscalar(ids) or isinstance(ids, str)
    if et.id_type == "int64":
        q = integer_ids(ids, f"ids of entity type {et.name!r} are integers")
        if q.ndim != 1:  # one internal id per id: a nested list is no list of ids
            raise GraphsysError(f"ids of entity type {et.name!r} are integers, one per "
                                f"item; got nested values of shape {q.shape}")
        pos = kernels.lookup_ints(sorted_ids, q)
    else:
        try:
            q = pa.array([ids] if scalar else list(ids) if not isinstance(ids, pa.Array)
                         else ids, pa.large_string())
        except (pa.ArrowTypeError, pa.ArrowInvalid, TypeError):
            first = ids if scalar else next(
                (v for v in ids if not isinstance(v, str)), ids)
            raise GraphsysError(f"ids of entity type {et.name!r} are strings; got "
                                f"{' '.join(repr(first).split())}") from None  # one line
        # as the ingest read them: integer text is canonical ("01", "+1" and " 1" are "1")
        canonical = ids_array(pc.fill_null(q, "") if q.null_count else q)
        if isinstance(canonical, np.ndarray):  # every id integer text
            canonical = pa.array(canonical.astype(str), pa.large_string())
        if q.null_count:  # a null is no node: named as such
            canonical = pc.if_else(pc.is_null(q), pa.scalar(None, pa.large_string()),
                                   canonical)
        pos = kernels.lookup_strings(sorted_ids, canonical)
    if (pos < 0).any():
        bad = q[int(np.flatnonzero(pos < 0)[0])]
        bad = bad.as_py() if hasattr(bad, "as_py") else bad.item()
        raise GraphsysError(f"node id {bad!r} is not in the graph (entity type {et.name!r})")
    return order[pos].astype(np.int64)


def id_order(graph, entity_type: str | None = None) -> tuple[object, np.ndarray]:
    """``(the original ids sorted, the internal id of each (int64))``, sorted once per
    Graph: the nodes in an order that does not depend on how the graph is laid out
    (partitions, partitioner, appends)."""
    et = graph.entity_type(entity_type)
    if et.name not in graph._id_index:
        orig = original_ids(graph, et.name)
        if et.id_type == "int64":
            order = np.argsort(orig, kind="stable")
            graph._id_index[et.name] = (orig[order], order)
        else:
            # sort_indices gives uint64: int64 like the int64 branch, so that offsets
            # added to it and arrays joined with it stay integer
            order = pc.sort_indices(orig).to_numpy().astype(np.int64)
            graph._id_index[et.name] = (orig.take(pa.array(order)), order)
    return graph._id_index[et.name]


def id_rank(graph) -> np.ndarray:
    """int64 (N,): each global id's position in an order that does not depend on how the
    graph is laid out: entity types in manifest order, each in original-id order
    (:func:`id_order`). Seeded draws and tie-breaks that follow it give the same answer
    whatever the partitions."""
    order = np.concatenate([np.zeros(0, np.int64)] + [
        off + id_order(graph, t)[1] for t, off in graph.type_offsets.items()])
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank


def original_ids(graph, entity_type: str):
    """:func:`node_ids` of every partition, read once per Graph (a query that names a few
    nodes, such as a nearest-neighbour lookup, then reads no node table); read-only."""
    ids = graph._original_ids.get(entity_type)
    if ids is None:
        ids = node_ids(graph, entity_type)
        if isinstance(ids, np.ndarray):
            ids.flags.writeable = False
        graph._original_ids[entity_type] = ids
    return ids


def checked_internal(values, num_nodes: int, name: str) -> np.ndarray:
    """``values`` (internal ids: a scalar, a sequence, an array or a tensor) as int64 (1-D)
    in ``0..num_nodes-1``: never a cast, which truncated 0.5 to node 0 and read True as 1;
    a bool, a fraction, a string or an id out of range is a one-line
    :class:`~graphsys.errors.ParameterError` naming the parameter ``name``."""
    try:
        arr = integer_ids(values, "internal ids are integers").reshape(-1)
    except GraphsysError as exc:
        raise ParameterError(name, f"must hold integer internal ids ({exc})") from None
    if len(arr) and (arr.min() < 0 or arr.max() >= num_nodes):
        bad = arr[(arr < 0) | (arr >= num_nodes)][0]
        raise ParameterError(name, f"holds internal id {int(bad)}, outside "
                                   f"0..{num_nodes - 1}")
    return arr


def internal_of(graph, ids, name: str, entity_type: str | None = None) -> np.ndarray:
    """:meth:`Graph.to_internal <graphsys.storage.graph.Graph.to_internal>` of the
    parameter ``name``'s original ids, its one-line refusal (an id not in the graph, or
    of the wrong kind) a :class:`~graphsys.errors.ParameterError` naming ``name``."""
    try:
        return graph.to_internal(ids, entity_type)
    except GraphsysError as exc:
        raise ParameterError(name, f"must hold ids of the graph's nodes: {exc}") from None


def to_original(graph, internal, entity_type: str | None = None):
    """Original ids of internal ids, range-checked (:meth:`Graph.to_original
    <graphsys.storage.graph.Graph.to_original>`)."""
    ids = original_ids(graph, graph.entity_type(entity_type).name)
    idx = integer_ids(internal, "internal ids are integers")
    bad = (idx < 0) | (idx >= len(ids))
    if bad.any():
        raise GraphsysError(f"internal id {int(idx[bad][0])} is outside 0..{len(ids) - 1} "
                            f"(entity type {graph.entity_type(entity_type).name!r})")
    idx = idx if np.ndim(internal) else idx[0]
    if isinstance(ids, np.ndarray):
        return ids[idx]
    return ids.take(pa.array(np.atleast_1d(idx)))


def node_column(graph, name: str, entity_type: str | None = None,
                partition: int | None = None) -> np.ndarray:
    """A node column read into memory in internal-id order (:meth:`Graph.node_column
    <graphsys.storage.graph.Graph.node_column>`)."""
    et = graph.entity_type(entity_type)
    col = _column(et, name)
    if col.kind == "string":
        return string_column(graph, name, et.name).to_numpy(zero_copy_only=False)
    if col.dtype:  # a column in a file of its own
        return mapped_node_column(graph, name, et.name).astype(
            np.float32 if col.kind == "features" else np.int64)
    parts = []
    for p in range(graph.num_partitions) if partition is None else [partition]:
        arr = node_table(graph, et.name, p).column(name).combine_chunks()
        parts.append(arr.flatten().to_numpy().reshape(-1, col.dim) if col.kind == "features"
                     else arr.to_numpy(zero_copy_only=False))
    out = np.concatenate(parts) if parts else np.zeros(0)
    return out.astype(np.float32 if col.kind == "features" else
                      np.int64 if col.kind == "label" else bool, copy=False)


def mapped_node_column(graph, name: str, entity_type: str | None = None
                       ) -> np.ndarray:
    """A node column file mapped read-only, in its stored dtype
    (:meth:`Graph.mapped_node_column <graphsys.storage.graph.Graph.mapped_node_column>`)."""
    et = graph.entity_type(entity_type)
    col = next((c for c in et.columns if c.name == name), None)
    if col is None or not col.dtype or col.kind == "string":
        return node_column(graph, name, et.name)
    rel = node_column_file(et.name, name)
    return map_column(graph.location.file(rel), np.dtype(col.dtype),
                      et.num_nodes, col.dim if col.kind == "features" else 0,
                      what="node column", location=graph.location, rel=rel)


def mapped_features(graph, name: str, entity_type: str | None = None):
    """A features column as read-only views of the mapped files, each node file's values
    checked against the manifest (:meth:`Graph.mapped_features
    <graphsys.storage.graph.Graph.mapped_features>`)."""
    et = graph.entity_type(entity_type)
    col = _column(et, name, "features")
    if col.dtype:
        return mapped_node_column(graph, name, et.name)
    blocks = []
    for p in range(graph.num_partitions):
        path = graph.location.file(node_file(et.name, p))
        # rows, type (fixed-size list of float32, col.dim wide) and nulls: checked
        for chunk in node_table(graph, et.name, p).column(name).chunks:
            try:
                chunk.validate()  # buffers large enough for offset + length rows
                values = chunk.flatten().to_numpy(zero_copy_only=True)
            except (pa.ArrowException, ValueError) as exc:
                raise FormatError(f"{path}: node column {name!r} unreadable ({exc})"
                                  ) from None
            if values.size != len(chunk) * col.dim:
                raise FormatError(f"{path}: node column {name!r} holds {values.size} "
                                  f"values, {len(chunk)} rows of {col.dim} need "
                                  f"{len(chunk) * col.dim}")
            if len(chunk):
                blocks.append(values.reshape(len(chunk), col.dim))
    if sum(len(b) for b in blocks) != et.num_nodes:
        raise FormatError(f"{graph.location.file(node_file(et.name, 0))}: node column "
                          f"{name!r} has {sum(len(b) for b in blocks)} rows, entity type "
                          f"{et.name!r} has {et.num_nodes} nodes")
    if not blocks:
        return np.zeros((0, col.dim), np.float32)
    return blocks[0] if len(blocks) == 1 else PartitionedRows(blocks)


def string_column(graph, name: str, entity_type: str | None = None) -> pa.Array:
    """A string column file mapped with no copy, checked in full once per Graph
    (:meth:`Graph.string_column <graphsys.storage.graph.Graph.string_column>`)."""
    et = graph.entity_type(entity_type)
    _column(et, name, "string")  # refuses any other name
    key = (et.name, name)
    if key in graph._strings:
        return graph._strings[key]
    rel = node_column_file(et.name, name)
    path = graph.location.file(rel)
    graph.check_hash(rel)
    try:
        reader = paipc.open_file(graph.location.open(rel))
        field = reader.schema.field(0) if reader.schema.names == [name] else None
        if field is None or field.type != pa.large_string() or (
                reader.num_record_batches != 1):
            raise FormatError(f"{path}: needs one record batch of one large_string "
                              f"column {name!r}")
        arr = reader.get_batch(0).column(0)
        arr.validate(full=True)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
        raise FormatError(f"{path}: unreadable string column ({exc})") from None
    if len(arr) != et.num_nodes or arr.null_count:
        raise FormatError(f"{path}: {len(arr)} strings ({arr.null_count} null), entity "
                          f"type {et.name!r} has {et.num_nodes} nodes")
    graph._strings[key] = arr
    return arr


def _column(et, name: str, kind: str | None = None):
    """The node column ``name`` of the entity type ``et`` (of ``kind`` when given), else a
    one-line :class:`GraphsysError` listing the columns there are (of that kind)."""
    col = next((c for c in et.columns if c.name == name and kind in (None, c.kind)), None)
    if col is None:
        names = [c.name for c in et.columns if kind in (None, c.kind)]
        what = f"{kind} " if kind else ""
        raise GraphsysError(f"entity type {et.name!r} has no {what}node column {name!r} "
                            f"({what}columns: {', '.join(names) or 'none'})")
    return col


def integer_ids(values, what: str) -> np.ndarray:
    """``values`` as int64 (1-D): integers, or floats with no fractional part below 2**53 in
    magnitude; a bool, a fractional, non-finite or larger float (2**53 + 1 as a float is
    2**53: node 2**53 was read), a string or an integer beyond int64 is a one-line
    :class:`GraphsysError` starting with ``what`` (never truncated or wrapped around)."""
    try:
        arr = np.atleast_1d(np.asarray(values))
    except (TypeError, ValueError, OverflowError):
        arr = np.atleast_1d(np.asarray(values, dtype=object))
    if arr.dtype.kind in "iuf" and (flag := first_bool(values)) is not None:
        raise GraphsysError(f"{what}; got {flag!r}")  # np.asarray([True, 2]) is [1, 2]
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        if arr.dtype.kind == "O" and all(isinstance(v, (int, np.integer)) and
                                         not isinstance(v, (bool, np.bool_)) for v in arr) \
                and all(-2**63 <= int(v) < 2**63 for v in arr):
            return arr.astype(np.int64)
        first = next((v for v in arr.tolist() if not isinstance(v, int) or isinstance(v, bool)
                      or not -2**63 <= v < 2**63), arr.tolist()[0] if len(arr) else values)
        raise GraphsysError(f"{what}; got {first!r}")
    if arr.dtype.kind == "f":  # from 2**53 on a float may be another id rounded
        arr = arr.astype(np.float64)
        bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (np.abs(arr) >= 2.0**53)
        if bad.any():
            first = arr[bad][0].item()
            big = " (from 2**53 on a float may be another id rounded: pass such ids as ints)"
            raise GraphsysError(f"{what}; got {first!r}"
                                f"{big if np.isfinite(first) and first.is_integer() else ''}")
    if arr.dtype.kind == "u" and len(arr) and int(arr.max()) >= 2**63:
        raise GraphsysError(f"{what}; got {int(arr.max())} (beyond int64)")
    return arr.astype(np.int64)
