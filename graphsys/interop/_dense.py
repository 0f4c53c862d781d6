"""The direct write of :func:`~graphsys.interop._common.ingest_arrays` for its commonest
input: in-memory edges between nodes ``0..num_nodes-1`` (PyG's ``edge_index``, a SciPy
matrix's coordinates, ``from_numpy(..., num_nodes=N)``) with their node columns.

Node ``i`` is dense index ``i``, so the graph is written in one pass, without the staged
passes of :func:`graphsys.storage.ingest.ingest_sources`, into the same bytes (files,
digests and manifest; tests/interop/test_dense.py compares the two): nodes are partitioned
and numbered within their partition; every edge gets its bucket and key by gathers of
per-node tables and is grouped by one stable radix sort of the bucket (keys sorted per
bucket as it is written, a weighted edge's row in the low bits, so equal edges keep input
order); every file is written on up to four threads through an Arrow IPC writer whose sink
hashes the bytes as they pass, then fsynced, the manifest written last and the staging
directory renamed into place (:func:`~graphsys.storage.atomic.staging_directory`).

An input it does not take (string node columns, another partitioner, relation types, a
progress bar, more than :data:`~graphsys.storage.kernels_small.SMALL_INGEST_EDGES` edges, a
memory budget too small for its arrays) or one the ingest would refuse (a non-finite
feature or weight, more partitions than nodes) goes through ``ingest_sources``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc

import partitioners
from graphsys._version import __version__
from graphsys.storage import kernels_small
from graphsys.storage.atomic import SYNC_THREADS, fsync_path, staging_directory, start_writeback
from graphsys.storage.edge_runs import BucketWriter, HashingFile
from graphsys.storage.format import (
    DEFAULT_EDGE_SET,
    DEFAULT_ENTITY_TYPE,
    DEFAULT_RELATION,
    MAX_PARTITIONS,
    EdgeSet,
    EntityType,
    Manifest,
    NodeColumn,
    RelationType,
    bucket_file,
    node_file,
    write_manifest,
)
from graphsys.storage.ingest_inputs import CHUNKED_MEMORY_LIMIT, IngestOptions
from graphsys.storage.ingest_job import bucket_batch_rows
from graphsys.storage.ingest_validate import float32_weights

#: Partitioners whose assignment reads no more than the node count and the degrees, which
#: this path gives as the ingest does (the others read an adjacency in the ingest's order).
_PARTITIONERS = ("hash", "range", "degree")
#: Transient bytes per routed edge (its bucket, key, grouping order, grouped and sorted
#: copies, written columns; a weight adds 8 more), and per node (partition, local offset,
#: routing tables, order).
_EDGE_BYTES, _NODE_BYTES = 48, 48
#: Threads writing files (the main thread groups the edges meanwhile).
_WRITERS = max(1, min(4, os.cpu_count() or 1))
#: Bytes of features gathered at a time (they stay in cache while hashed and written).
_GATHER_BYTES = 1 << 21


def write_dense(src, dst, out: Path, num_nodes: int, weight, columns: dict[str, np.ndarray],
                opts: IngestOptions) -> bool:
    """Write the graph of ``src -> dst`` over nodes ``0..num_nodes-1`` with node
    ``columns`` (float32 (N, F), int64 (N,) or bool (N,), as
    :func:`~graphsys.interop._common.node_column_values` gives them) to ``out``, as
    ``ingest_sources`` would; False (nothing written) for an input this path does not take
    (module docstring)."""
    prepared = _prepare(src, dst, num_nodes, weight, columns, opts)
    if prepared is None:
        return False
    src, dst, weight, part = prepared
    try:
        _write(src, dst, num_nodes, weight, columns, part, out, opts)
    except _NotFinite:
        return False  # nothing left at out; the ingest names the node and value
    except _PiecesMissed:
        return False  # Arrow wrote the column otherwise than expected: the ingest writes it
    return True


def _prepare(src, dst, n: int, weight, columns: dict[str, np.ndarray], opts: IngestOptions):
    """``(src, dst, weight, (partition, params))`` as arrays when this path takes the input,
    else None."""
    p = opts.partitions
    if not (isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= min(MAX_PARTITIONS, n)
            and opts.relation_types is None and opts.partitioner in _PARTITIONERS
            and opts.on_bad_line in ("error", "skip") and not opts.progress
            and isinstance(opts.max_batch_rows, int)
            and opts.max_batch_rows >= 1 and isinstance(opts.memory_limit, int)
            and opts.memory_limit >= CHUNKED_MEMORY_LIMIT):
        return None
    src, dst = _ids(src), _ids(dst)
    if src is None or dst is None or len(src) != len(dst) or not len(src) or (
            len(src) > kernels_small.SMALL_INGEST_EDGES):
        return None
    routed = len(src) * (2 if opts.undirected else 1)
    need = routed * (_EDGE_BYTES + (8 if weight is not None else 0)) + n * _NODE_BYTES + sum(
        v.nbytes // p for v in columns.values() if v.dtype.kind != "f") + 4 * _GATHER_BYTES
    if need > opts.memory_limit // 2:
        return None
    if any(v.dtype.kind not in "fib" for v in columns.values()):
        return None  # string columns: their own files, written by the ingest
    if any(v.dtype.kind == "f" and v.shape[1] == 0 for v in columns.values()):
        return None
    if weight is not None:
        w = np.asarray(weight.detach().cpu().numpy() if hasattr(weight, "detach") else weight)
        if w.ndim != 1 or len(w) != len(src) or w.dtype.kind not in "fiu":
            return None
        weight, infinite, tiny = float32_weights(w.astype(np.float64, copy=False))
        if infinite.any() or tiny.any():
            return None  # the ingest names the edge and the value
    try:
        strategy = partitioners.get_partitioner(opts.partitioner, p, seed=opts.seed,
                                                **dict(opts.partitioner_params or {}))
    except ValueError:
        return None
    if type(strategy).__module__.split(".")[0] != "partitioners":
        return None  # a plug-in registered under a builtin's name
    if p == 1:
        part = np.zeros(n, np.int32)
    else:
        part = np.ascontiguousarray(strategy.assign(partitioners.EdgeListContext(
            n, src, dst, memory_limit=opts.memory_limit)), np.int32)
        if part.shape != (n,) or part.min() < 0 or part.max() >= p:
            return None
    return src, dst, weight, (part, {"name": strategy.name, "params": strategy.params()})


def _ids(values) -> np.ndarray | None:
    """Integer node ids as a 1-D NumPy array (a view of a CPU tensor's memory), else None."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return None
    v = np.asarray(values)
    return v if v.ndim == 1 and v.dtype.kind in "iu" else None


def _write(src: np.ndarray, dst: np.ndarray, n: int, weight: np.ndarray | None,
           columns: dict[str, np.ndarray], partition, out: Path, opts: IngestOptions) -> None:
    part, partitioner = partition
    p = opts.partitions
    sizes = np.bincount(part, minlength=p).astype(np.int64)
    starts = np.zeros(p + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    # nodes of each partition in ascending id (a radix sort of the 16-bit partition ids)
    order = np.argsort(part.astype(np.uint16), kind="stable")
    local = np.empty(n, np.int64)
    local[order] = np.arange(n, dtype=np.int64) - np.repeat(starts[:-1], sizes)
    bits = max(int(sizes.max()) - 1, 1).bit_length()
    has_weight = weight is not None
    batch_rows = bucket_batch_rows(opts, 8 + (4 if has_weight else 0))  # as the ingest's
    files: dict[str, dict[str, Any]] = {}
    # every file and directory entry is on disk before the manifest names it: one fsync
    # each, started as soon as the file is written (its write-back is under way), on
    # threads of their own (the journal commits them together)
    with staging_directory(out) as staging, ThreadPoolExecutor(SYNC_THREADS) as syncs, \
            ThreadPoolExecutor(_WRITERS) as pool:
        synced = []

        def sync_when_written(job) -> None:
            if job.exception() is None:
                synced.append(syncs.submit(fsync_path, staging / job.result()[0]))

        def submit(fn, *args):
            job = pool.submit(fn, *args)
            job.add_done_callback(sync_when_written)
            return job

        node_jobs = [submit(_write_nodes, staging, k, order[starts[k]:starts[k + 1]], columns)
                     for k in range(p)]
        bounds, keys, w = _grouped_edges(src, dst, part, local, bits, p, weight, opts)
        schema = BucketWriter(Path(), False, has_weight, batch_rows, local_bits=bits).schema
        edge_jobs = {}
        for b in np.flatnonzero(np.diff(bounds)):
            lo, hi = int(bounds[b]), int(bounds[b + 1])
            ij = divmod(int(b), p)
            edge_jobs[ij] = submit(_write_bucket, staging, bucket_file(DEFAULT_EDGE_SET, *ij),
                                   schema, keys[lo:hi], None if w is None else w[lo:hi], bits,
                                   batch_rows, opts.dedupe)
        for job in node_jobs + list(edge_jobs.values()):
            rel, files[rel], _ = job.result()
        counts = {ij: job.result()[2] for ij, job in edge_jobs.items()}
        pool.shutdown()  # every callback has run: every file's fsync is submitted
        # the edge set's directory exists where a bucket was written (drop_self_loops can
        # leave none: no edges directory, as the ingest's passes leave it)
        synced += [syncs.submit(fsync_path, staging / d) for d in (
            "nodes", f"nodes/{DEFAULT_ENTITY_TYPE}",
            *(("edges", f"edges/{DEFAULT_EDGE_SET}") if edge_jobs else ()))]
        for job in synced:
            job.result()
        entity = EntityType(DEFAULT_ENTITY_TYPE, "int64", [int(s) for s in sizes],
                            [_node_column(name, v) for name, v in columns.items()])
        edge_set = EdgeSet(DEFAULT_EDGE_SET, sum(counts.values()), counts, has_rel=False,
                           has_weight=has_weight, undirected=opts.undirected,
                           dedupe=opts.dedupe, drop_self_loops=opts.drop_self_loops)
        manifest = Manifest(
            num_partitions=p, offset_dtype="int32", max_batch_rows=batch_rows,
            partitioner=partitioner, entity_types={DEFAULT_ENTITY_TYPE: entity},
            relation_types=[RelationType(DEFAULT_RELATION, DEFAULT_ENTITY_TYPE,
                                         DEFAULT_ENTITY_TYPE)],
            edge_sets={DEFAULT_EDGE_SET: edge_set}, files=files,
            created_by=f"graphsys {__version__}", metadata=opts.metadata)
        write_manifest(staging, manifest)


def _grouped_edges(src, dst, part, local, bits: int, p: int, weight, opts: IngestOptions):
    """The edges grouped by bucket, in input order within each: each bucket's first row
    (P*P+1,), every edge's key ``src_local << bits | dst_local`` (uint32 when two local
    offsets fit it, else uint64) and the weights (or None). Loops dropped and reverse edges
    added (each after its edge) as the options ask, as the ingest's routing does."""
    if opts.drop_self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
        weight = None if weight is None else weight[keep]
    if opts.undirected:  # each non-loop edge followed by its reverse
        both = np.stack([np.stack([src, dst], 1), np.stack([dst, src], 1)], 1)
        pair = np.repeat(src != dst, 2)
        pair[0::2] = True
        both = both.reshape(-1, 2)[pair]
        src, dst = both[:, 0], both[:, 1]
        weight = None if weight is None else np.repeat(weight, 2)[pair]
    # the bucket in the narrowest type (a stable sort of 8 or 16 bits is a radix sort)
    b_type = np.uint8 if p * p <= 1 << 8 else np.uint16 if p * p <= 1 << 16 else np.int64
    bucket = (part * p).astype(b_type)[src]
    bucket += part.astype(b_type)[dst]
    k_type = np.uint32 if 2 * bits <= 32 else np.uint64
    keys = (local << bits).astype(k_type)[src]
    keys |= local.astype(k_type)[dst]
    order = np.argsort(bucket, kind="stable")
    bounds = np.zeros(p * p + 1, np.int64)
    np.cumsum(np.bincount(bucket, minlength=p * p), out=bounds[1:])
    return bounds, keys[order], None if weight is None else weight[order]


class _StandInFile(HashingFile):
    """A :class:`~graphsys.storage.edge_runs.HashingFile` (hashed as it is written) that
    writes some column buffers in pieces: ``stand_ins`` holds ``(address, size, chunks)``
    in the order their buffers are written; a buffer at that address and of that size is a
    stand-in, and the arrays that ``chunks`` yields (its bytes, in pieces) are written in
    its place, so that a gathered column never exists whole (features are the bulk of a
    node file)."""

    def __init__(self, path: Path, stand_ins: list | None = None):
        super().__init__(path)
        self.stand_ins = list(stand_ins or [])

    def write(self, data) -> int:
        if self.stand_ins and isinstance(data, pa.Buffer) and (
                data.address, data.size) == self.stand_ins[0][:2]:
            _, size, chunks = self.stand_ins.pop(0)
            done = sum(super(_StandInFile, self).write(c) for c in chunks)
            if done != size:
                raise _PiecesMissed(f"a column written in pieces took {done} bytes, not {size}")
            return size
        return super().write(data)


def _write_file(staging: Path, rel: str, schema: pa.Schema, batches: list[pa.RecordBatch],
                rows: int, stand_ins: list | None = None) -> tuple[str, dict[str, Any], int]:
    """Write ``batches`` as the Arrow IPC file ``rel`` (with :class:`_StandInFile`'s
    ``stand_ins``); return ``rel``, its manifest entry (sha256, bytes) and ``rows``. Its
    write-back to disk is started; the fsync comes once it is written."""
    path = staging / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    sink = _StandInFile(path, stand_ins)
    try:
        with paipc.new_file(sink, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
        if sink.stand_ins:
            raise _PiecesMissed(f"{rel}: a column meant to be written in pieces was not met")
        sink.flush()
        start_writeback(sink.fileno())
        return rel, sink.entry(), rows
    finally:
        sink.close()


class _PiecesMissed(Exception):
    """Arrow did not hand a stand-in buffer to the sink as one write (another pyarrow's
    writer): nothing is kept, and the ingest writes the graph instead."""


class _NotFinite(Exception):
    """A feature that is NaN or infinite: the ingest names it (its node and value)."""


def _write_nodes(staging: Path, k: int, sel: np.ndarray, columns: dict[str, np.ndarray]):
    """Partition ``k``'s node file: ids ``sel`` (ascending) and their column rows, in one
    record batch. Features are gathered a block of rows at a time as the file is written
    (a stand-in of their size, a slice of the column itself, takes their place in the
    batch) and each block checked finite (:class:`_NotFinite` after the file is written
    otherwise)."""
    arrays = {"id": _arrow(sel)}
    stand_ins, finite = [], [True]

    def pieces(v: np.ndarray, step: int):
        for lo in range(0, len(sel), step):
            rows = v[sel[lo:lo + step]]
            finite[0] &= bool(np.isfinite(rows).all())
            yield rows

    for name, v in columns.items():
        if v.dtype.kind != "f":
            arrays[name] = _arrow(v[sel])
            continue
        dim = v.shape[1]
        if len(sel) and v.flags.c_contiguous:
            flat = _arrow(v.reshape(-1)[:len(sel) * dim])  # a stand-in: no copy
            stand_ins.append((flat.buffers()[1].address, flat.nbytes,
                              pieces(v, max(_GATHER_BYTES // (4 * dim), 1))))
        else:
            rows = v[sel]
            finite[0] &= bool(np.isfinite(rows).all())
            flat = _arrow(rows.reshape(-1))
        arrays[name] = pa.FixedSizeListArray.from_arrays(flat, dim)
    batch = pa.RecordBatch.from_pydict(arrays)
    out = _write_file(staging, node_file(DEFAULT_ENTITY_TYPE, k), batch.schema, [batch],
                      len(sel), stand_ins)
    if not finite[0]:
        raise _NotFinite
    return out


def _write_bucket(staging: Path, rel: str, schema: pa.Schema, keys: np.ndarray,
                  weight: np.ndarray | None, bits: int, batch_rows: int, dedupe: bool):
    """One bucket's file from its keys in input order: sorted by (src, dst), stably (a
    weighted edge's row rides in the low bits of one sort), repeats dropped after the
    first if ``dedupe``, in record batches of ``batch_rows`` rows (as the ingest's
    :func:`~graphsys.storage.edge_runs.sorted_columns` and
    :class:`~graphsys.storage.edge_runs.BucketWriter`)."""
    m = len(keys)
    if weight is None:
        keys = np.sort(keys)
    elif 2 * bits + max(m - 1, 1).bit_length() <= 64:
        row_bits = np.uint64(max(m - 1, 1).bit_length())
        packed = keys.astype(np.uint64) << row_bits
        packed |= np.arange(m, dtype=np.uint64)
        packed.sort()
        weight = weight[(packed & ((np.uint64(1) << row_bits) - np.uint64(1))).astype(np.int64)]
        keys = packed >> row_bits
    else:
        o = np.argsort(keys, kind="stable")
        keys, weight = keys[o], weight[o]
    if dedupe and m > 1:
        keep = np.ones(m, bool)
        np.not_equal(keys[1:], keys[:-1], out=keep[1:])
        keys = keys[keep]
        weight = None if weight is None else weight[keep]
    mask = (1 << bits) - 1
    batches = []
    for lo in range(0, len(keys), batch_rows):
        k = keys[lo:lo + batch_rows]
        arrays = [_arrow((k >> bits).astype(np.int32)), _arrow((k & mask).astype(np.int32))]
        if weight is not None:
            arrays.append(_arrow(weight[lo:lo + batch_rows]))
        batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return _write_file(staging, rel, schema, batches, len(keys))


def _arrow(v: np.ndarray) -> pa.Array:
    """A 1-D array as an Arrow array with no nulls, as ``pa.array`` makes it (its memory
    as is; bools packed into bits), without ``pa.array``'s first-call import of
    ``numpy.ma``."""
    v = np.ascontiguousarray(v)
    if v.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), len(v), [None, pa.py_buffer(
            np.packbits(v, bitorder="little"))])
    return pa.Array.from_buffers(pa.from_numpy_dtype(v.dtype), len(v), [None, pa.py_buffer(v)])


def _node_column(name: str, v: np.ndarray) -> NodeColumn:
    if v.dtype.kind == "f":
        return NodeColumn(name, "features", int(v.shape[1]))
    return NodeColumn(name, "label" if v.dtype.kind == "i" else "mask")
