"""The node files of an ingest: every entity type's ids and node columns (features, labels,
masks from :class:`~graphsys.storage.ingest_inputs.NodeSource` tables), one Arrow IPC file
per partition; string columns (UTF-8 text such as titles) in one file of their own each,
in type-local id order (:func:`~graphsys.storage.format.node_column_file`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as paipc

from graphsys.errors import InputError
from graphsys.storage.atomic import sha256_file
from graphsys.storage.format import EntityType, NodeColumn, node_column_file, node_file
from graphsys.storage.ids import id_column, ids_array

if TYPE_CHECKING:
    from graphsys.storage.ingest_job import IngestJob


class _Rows:
    """A node column of one node table in its table's row order, read in dense node order
    (:meth:`take`): the table's rows are gathered straight into each partition's order,
    with no dense-order copy of the whole column first (features are the bulk of a node
    table). ``rows``: the table row of every dense node index, -1 where the table has none
    (``fill`` then), or None when row ``i`` is node ``i``."""

    def __init__(self, values: np.ndarray, rows: np.ndarray | None, fill) -> None:
        self.values, self.rows, self.fill = values, rows, fill

    def take(self, sel: np.ndarray) -> np.ndarray:
        if self.rows is None:
            if len(sel) and int(sel[-1]) - int(sel[0]) + 1 == len(sel):
                return self.values[int(sel[0]):int(sel[-1]) + 1]  # increasing: a slice
            return self.values[sel]
        r = self.rows[sel]
        have = r >= 0
        if have.all():
            return self.values[r]
        out = np.full((len(sel),) + self.values.shape[1:], self.fill, self.values.dtype)
        out[have] = self.values[r[have]]
        return out


def _node_columns(job: IngestJob, etype: str) -> tuple[list[NodeColumn], dict[str, _Rows]]:
    """Node columns of one type, each readable in dense node order (:class:`_Rows`)."""
    n = len(job.index[etype])
    columns: list[NodeColumn] = []
    values: dict[str, _Rows] = {}
    for ns in job.node_sources:
        if ns.entity_type != etype:
            continue
        ids = ids_array(id_column(ns.table.column("id"), f"node table for {etype!r}: id",
                                  None))
        dense = job.index[etype].lookup(ids)
        rows = np.full(n, -1, np.int64)
        rows[dense] = np.arange(len(dense), dtype=np.int64)
        if int((rows >= 0).sum()) != len(dense):
            twice = int(np.flatnonzero(np.bincount(dense, minlength=n) > 1)[0])
            raise InputError(f"node table for {etype!r}: duplicate ids (id "
                             f"{_node_id(job.index[etype].ids, twice)!r} more than once; "
                             f"integer text is one id: '01' and '1' are the same node)")
        if len(dense) == n and (dense == np.arange(n)).all():
            rows = None  # row i is node i (from_numpy, from_pyg): read rows as they are
        for name in ns.table.column_names:
            if name == "id":
                continue
            col = ns.table.column(name).combine_chunks()
            if pa.types.is_dictionary(col.type):  # pandas' categorical: its values
                col = col.dictionary_decode()
            t = col.type
            if pa.types.is_fixed_size_list(t) and pa.types.is_floating(t.value_type):
                dim = t.list_size
                flat = _finite_features(col, etype, name, ids)
                arr = _Rows(flat.reshape(-1, dim), rows, 0.0)
                columns.append(NodeColumn(name, "features", dim))
            elif pa.types.is_integer(t):
                try:
                    arr = _Rows(pc.fill_null(col.cast(pa.int64()), -1).to_numpy(), rows, -1)
                except pa.ArrowInvalid:
                    raise InputError(f"node table for {etype!r}: column {name!r} holds an "
                                     f"integer beyond int64") from None
                columns.append(NodeColumn(name, "label"))
            elif pa.types.is_string(t) or pa.types.is_large_string(t):
                if col.null_count:  # the format holds no null string: '' would be a guess
                    row = int(np.flatnonzero(pc.is_null(col).to_numpy(
                        zero_copy_only=False))[0])
                    raise InputError(f"node table for {etype!r}: column {name!r} is null for "
                                     f"node {_node_id(ids, row)!r} ({col.null_count} null in "
                                     f"all); string columns hold no nulls: fill them first "
                                     f"(e.g. with '')")
                arr = _Rows(col.to_numpy(zero_copy_only=False).astype(object), rows, "")
                columns.append(NodeColumn(name, "string", 1, "large_string"))
            elif pa.types.is_boolean(t):
                arr = _Rows(pc.fill_null(col, False).to_numpy(zero_copy_only=False), rows,
                            False)
                columns.append(NodeColumn(name, "mask"))
            else:
                raise InputError(f"node table for {etype!r}: column {name!r} has type {t}; "
                                 f"expected fixed-size list of float (features), integer "
                                 f"(label), bool (mask) or string")
            if name in values:
                raise InputError(f"node tables for {etype!r}: column {name!r} given twice")
            values[name] = arr
    return columns, values


def _finite_features(col: pa.FixedSizeListArray, etype: str, name: str, ids) -> np.ndarray:
    """A features column's values as float32, flat; InputError naming the column and the
    node when a row is null or a value is NaN, infinite or beyond float32 (a model trained
    on it would fail far from the cause, or write NaN embeddings)."""
    if col.null_count:
        row = int(np.flatnonzero(pc.is_null(col).to_numpy(zero_copy_only=False))[0])
        raise InputError(f"node table for {etype!r}: column {name!r} has no features for node "
                         f"{_node_id(ids, row)!r} (a null row)")
    values = col.flatten()
    with np.errstate(over="ignore"):
        flat = values.cast(pa.float32(), safe=False).to_numpy(zero_copy_only=False)
    bad = ~np.isfinite(flat)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        v = values[k].as_py()
        text = "null" if v is None else repr(v)
        raise InputError(f"node table for {etype!r}: column {name!r} has feature {text} "
                         f"for node "
                         f"{_node_id(ids, k // max(col.type.list_size, 1))!r}: features must "
                         f"be finite (float32)")
    return flat


def _node_id(ids, row: int):
    """The original id of row ``row`` of a node table (for messages)."""
    v = ids[row]
    return v.as_py() if hasattr(v, "as_py") else v.item() if hasattr(v, "item") else v


def write_node_files(job: IngestJob, staging: Path, files: dict[str, dict[str, Any]]) -> dict[
        str, EntityType]:
    """Write every entity type's node files of ``job`` (partitioned) under ``staging``, add
    them to ``files`` and return the entity types."""
    p = job.opts.partitions
    types = {}
    for etype in job.entity_types:
        columns, values = _node_columns(job, etype)
        ids = job.index[etype].ids
        # a stable sort of 16-bit keys is NumPy's radix sort (P <= MAX_PARTITIONS < 2**16)
        order = np.argsort(job.part[etype].astype(np.uint16), kind="stable")
        starts = np.zeros(p + 1, np.int64)
        np.cumsum(np.bincount(job.part[etype], minlength=p), out=starts[1:])
        for c in columns:
            if c.kind == "string":  # type-local id order: partition by partition
                rel = node_column_file(etype, c.name)
                write_string_column(staging / rel, c.name,
                                    pa.array(values[c.name].take(order), pa.large_string()))
                files[rel] = file_entry(staging / rel)
        for part in range(p):
            sel = order[starts[part]:starts[part + 1]]
            id_arr = (pa.array(ids[sel]) if isinstance(ids, np.ndarray)
                      else ids.take(pa.array(sel)))
            arrays = {"id": id_arr}
            for c in columns:
                if c.kind == "string":
                    continue
                v = values[c.name].take(sel)
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
            files[rel] = file_entry(path)
        types[etype] = EntityType(etype, "string" if job.index[etype].is_string else "int64",
                                  job.sizes[etype], columns)
    return types


def write_string_column(path: Path, name: str, values: pa.Array) -> None:
    """Write a string node column's file: one Arrow IPC record batch holding one
    ``large_string`` column ``name`` (int64 offsets and UTF-8 bytes), so it maps with no
    copy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    batch = pa.record_batch([values.cast(pa.large_string())], names=[name])
    with paipc.new_file(str(path), batch.schema) as w:
        w.write_batch(batch)


def file_entry(path: Path) -> dict[str, Any]:
    """The manifest's entry of a written file: its sha256 and size in bytes."""
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size}
