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
from graphsys.storage.ids import ids_array

if TYPE_CHECKING:
    from graphsys.storage.ingest_job import IngestJob



def _node_columns(job: IngestJob, etype: str) -> tuple[list[NodeColumn], dict[str, np.ndarray]]:
    """Node columns of one type, as dense-order arrays of length N."""
    n = len(job.index[etype])
    columns: list[NodeColumn] = []
    values: dict[str, np.ndarray] = {}
    for ns in job.node_sources:
        if ns.entity_type != etype:
            continue
        ids = ids_array(ns.table.column("id").combine_chunks())
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
            elif pa.types.is_string(t) or pa.types.is_large_string(t):
                arr = np.full(n, "", object)
                arr[dense] = pc.fill_null(col, "").to_numpy(zero_copy_only=False)
                columns.append(NodeColumn(name, "string", 1, "large_string"))
            elif pa.types.is_boolean(t):
                arr = np.zeros(n, bool)
                arr[dense] = pc.fill_null(col, False).to_numpy(zero_copy_only=False)
                columns.append(NodeColumn(name, "mask"))
            else:
                raise InputError(f"node table for {etype!r}: column {name!r} has type {t}; "
                                 f"expected fixed-size list of float (features), integer "
                                 f"(label), bool (mask) or string")
            if name in values:
                raise InputError(f"node tables for {etype!r}: column {name!r} given twice")
            values[name] = arr
    return columns, values


def write_node_files(job: IngestJob, staging: Path, files: dict[str, dict[str, Any]]) -> dict[
        str, EntityType]:
    """Write every entity type's node files of ``job`` (partitioned) under ``staging``, add
    them to ``files`` and return the entity types."""
    p = job.opts.partitions
    types = {}
    for etype in job.entity_types:
        columns, values = _node_columns(job, etype)
        ids = job.index[etype].ids
        order = np.argsort(job.part[etype], kind="stable")
        starts = np.zeros(p + 1, np.int64)
        np.cumsum(np.bincount(job.part[etype], minlength=p), out=starts[1:])
        for c in columns:
            if c.kind == "string":  # type-local id order: partition by partition
                rel = node_column_file(etype, c.name)
                write_string_column(staging / rel, c.name, pa.array(values[c.name][order],
                                                                    pa.large_string()))
                files[rel] = file_entry(staging / rel)
        for part in range(p):
            sel = order[starts[part]:starts[part + 1]]
            id_arr = (pa.array(ids[sel]) if isinstance(ids, np.ndarray)
                      else ids.take(pa.array(sel)))
            arrays = {"id": id_arr}
            for c in columns:
                if c.kind == "string":
                    continue
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
