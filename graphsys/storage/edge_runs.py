"""The external sort of ingest's passes 2 and 3: an edge set's buckets as sorted in-memory
columns or on-disk runs (:class:`RoutedBuckets`), read back in blocks (:class:`RunReader`),
and written to a bucket's Arrow IPC file in fixed-size record batches
(:class:`BucketWriter`). Edges are ``key = src << local_bits | dst`` (local offsets, each
below ``2**local_bits``; uint32 when two fit it, else uint64: :func:`key_dtype`) with
optional ``rel`` (int32) and ``weight`` (float32) columns, and the edge set's edge columns
(:class:`~graphsys.storage.format.EdgeColumn`) as fields ``col:NAME`` of their dtype."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc

from graphsys.storage import kernels
from graphsys.storage.atomic import start_writeback
from graphsys.storage.pages import scratch_array

_NO_REL = np.zeros(0, np.int32)
#: Prefix of an edge column's field in the routed and sorted columns.
COLUMN_PREFIX = "col:"


def key_dtype(local_bits: int) -> np.dtype:
    """The dtype of the packed key ``src << local_bits | dst`` of local offsets below
    ``2**local_bits``: uint32 when both fit it (partitions below 65,536 nodes), else
    uint64."""
    return np.dtype(np.uint32 if 2 * local_bits <= 32 else np.uint64)


def extra_columns(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The edge columns (fields ``col:NAME``) of a dict of routed columns."""
    return {f: v for f, v in cols.items() if f.startswith(COLUMN_PREFIX)}


class RoutedBuckets:
    """The buckets of one edge set after routing, in input order: columns in memory
    (``memory[b]``), or runs on disk (``rundir/{b}.key``, ``.rel``, ``.weight``; ``runs[b]`` =
    the runs' lengths); each bucket is sorted when it is written. ``local_bits``: every
    local offset is below ``2**local_bits``; the keys are ``src << local_bits | dst``
    (:func:`key_dtype`)."""

    def __init__(self, rundir: Path, has_rel: bool, has_weight: bool,
                 columns: Sequence[tuple[str, str]] = (), *, local_bits: int):
        self.rundir = rundir
        self.has_rel, self.has_weight = has_rel, has_weight
        self.local_bits = local_bits
        self.columns = [(COLUMN_PREFIX + name, np.dtype(dtype)) for name, dtype in columns]
        self.fields = [("key", key_dtype(local_bits))] + (
            [("rel", np.int32)] if has_rel else []) + (
            [("weight", np.float32)] if has_weight else []) + self.columns
        self.runs: dict[int, list[int]] = {}
        self.memory: dict[int, dict[str, np.ndarray]] = {}

    def routing_scratch(self, rows: int) -> dict[str, np.ndarray]:
        """Room for ``rows`` routed edges of a reused buffer until their scatter by bucket
        (:func:`~graphsys.storage.kernels.route_keys`): ``_bucket`` int32, ``_key`` (the
        keys' dtype) and, where the edges carry a rel, weight or edge columns, ``_row``
        (the edge's row in its batch, int64; else empty); in small pages
        (:func:`~graphsys.storage.pages.scratch_array`: written and read in order)."""
        payload = self.has_rel or self.has_weight or bool(self.columns)
        return {"_bucket": scratch_array(rows, np.int32),
                "_key": scratch_array(rows, key_dtype(self.local_bits)),
                "_row": scratch_array(rows if payload else 0, np.int64)}

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
            cols = {f: np.fromfile(self.rundir / f"{b}.{f}", dtype=dt, count=n,
                                   offset=start * np.dtype(dt).itemsize)
                    for f, dt in self.fields}
            cols = sorted_columns(cols["key"], cols.get("rel"), cols.get("weight"), False,
                                  local_bits=self.local_bits, extra=extra_columns(cols))
            for f, dt in self.fields:
                with open(self.rundir / f"{b}.{f}", "r+b") as fh:
                    fh.seek(start * np.dtype(dt).itemsize)
                    cols[f].tofile(fh)
            start += n

    def drop(self, b: int) -> None:
        for f, _ in self.fields:
            (self.rundir / f"{b}.{f}").unlink(missing_ok=True)


class RunReader:
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
            more = np.fromfile(self.paths[f], dtype=dt, count=want,
                               offset=self.pos * np.dtype(dt).itemsize)
            self.buf[f] = np.concatenate([self.buf[f], more]) if len(self.buf[f]) else more
        self.pos += want

    def consume(self, n: int) -> None:
        self.buf = {f: v[n:] for f, v in self.buf.items()}


class HashingFile:
    """A new binary file, write-only, that hashes (sha256) the bytes as they are written:
    the digest a manifest names, without reading the file back. The sink of an Arrow IPC
    writer (which hands it its column buffers, no copy)."""

    def __init__(self, path: Path):
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._digest = hashlib.sha256()
        self.size = 0
        self.closed = False

    def write(self, data) -> int:
        self._digest.update(data)  # large buffers are hashed outside the GIL
        n = self._file.write(data)
        self.size += n
        return n

    def tell(self) -> int:
        return self.size

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self._file.flush()

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._file.close()

    def entry(self) -> dict[str, int | str]:
        """The manifest's entry of the file: its sha256 and size in bytes."""
        return {"sha256": self._digest.hexdigest(), "bytes": self.size}


def bucket_schema(has_rel: bool, has_weight: bool, columns: Sequence[tuple[str, str]] = ()
                  ) -> pa.Schema:
    """A bucket file's schema: ``src``, ``dst``, then ``rel`` (int32) and ``weight``
    (float32) where the edge set has them, then its edge columns ``(name, dtype)``."""
    fields = [("src", pa.int32()), ("dst", pa.int32())]
    fields += [("rel", pa.int32())] if has_rel else []
    fields += [("weight", pa.float32())] if has_weight else []
    fields += [(name, pa.from_numpy_dtype(np.dtype(dtype))) for name, dtype in columns]
    return pa.schema([pa.field(name, typ, nullable=False) for name, typ in fields])


class BucketWriter:
    """Writes sorted (key, rel, weight, edge column) blocks to a bucket's Arrow IPC file in
    record batches of exactly ``batch_rows`` rows (the last one shorter). The file is hashed
    as it is written (:attr:`entry`: its manifest entry, once closed), and its write-back to
    disk is started when it is closed (:func:`~graphsys.storage.atomic.start_writeback`).
    ``split_keys``: the kernel that splits the packed keys into the ``src`` and ``dst``
    columns (:func:`kernels.split_keys`, or its NumPy twin for a small ingest);
    ``local_bits``: the keys are ``src << local_bits | dst``."""

    def __init__(self, path: Path, has_rel: bool, has_weight: bool, batch_rows: int,
                 columns: Sequence[tuple[str, str]] = (), split_keys=None, *,
                 local_bits: int):
        self.columns = [name for name, _ in columns]
        self.schema = bucket_schema(has_rel, has_weight, columns)
        self.path = path
        self.batch_rows = batch_rows
        self.split_keys = split_keys or kernels.split_keys
        self.local_bits = local_bits
        self.parts: list[dict[str, np.ndarray]] = []
        self.buffered = 0
        self.rows = 0

    def __enter__(self) -> BucketWriter:
        self.sink = HashingFile(self.path)
        try:
            self.writer = paipc.new_file(self.sink, self.schema)
        except BaseException:
            self.sink.close()
            raise
        self.entry: dict[str, int | str] | None = None
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
        src, dst = np.empty(len(key), np.int32), np.empty(len(key), np.int32)
        self.split_keys(key, self.local_bits, src, dst)
        arrays = [pa.array(src), pa.array(dst)]
        arrays += [pa.array(head[f]) for f in ("rel", "weight") if f in self.schema.names]
        arrays += [pa.array(head[COLUMN_PREFIX + name]) for name in self.columns]
        self.writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.rows += len(key)
        self.buffered -= len(key)
        self.parts = [rest] if len(rest["key"]) else []

    def __exit__(self, exc_type, *exc) -> None:
        try:
            if exc_type is None and self.buffered:
                self._emit(self.buffered)
            self.writer.close()
            if exc_type is None:
                self.sink.flush()
                start_writeback(self.sink.fileno())
                self.entry = self.sink.entry()
        finally:
            self.sink.close()


def sorted_columns(key: np.ndarray, rel: np.ndarray | None, weight: np.ndarray | None,
                   dedupe: bool, presorted: bool = False, sorted_runs: bool = False,
                   local_bits: int = 31, extra: dict[str, np.ndarray] | None = None,
                   radix_sort=None) -> dict[str, np.ndarray]:
    """Sort edges by (key, rel), stably (input order among equal edges is kept), and drop
    repeated (key, rel) after the first if ``dedupe``. ``extra``: more columns (edge
    columns) that follow the edges' order as ``weight`` does. ``sorted_runs``: the input is a
    concatenation of sorted runs (a merge), which a stable sort (timsort) merges in
    O(n log runs). Else a radix sort (:func:`kernels.radix_sort_edges`: linear in the edges
    and their key's digits, where numpy's comparison sort is O(n log n)) sorts ``key`` in
    place; ``local_bits``: the keys are ``src << local_bits | dst``
    (:func:`key_dtype`), which sets their number of digits (the default, 31, covers any
    key). ``radix_sort``: that kernel's
    twin to use instead (:mod:`~graphsys.storage.kernels_small`'s for a small ingest)."""
    extra = dict(extra or {})

    def take(rows):  # rel, weight and the edge columns at ``rows`` (an order or a mask)
        return (None if rel is None else rel[rows], None if weight is None else weight[rows],
                {f: v[rows] for f, v in extra.items()})

    if not presorted:
        rel_bits = 0 if rel is None or sorted_runs else int(rel.max(initial=0)).bit_length()
        if sorted_runs or 2 * local_bits + rel_bits > 64 or (
                rel is not None and rel.min(initial=0) < 0):
            if rel is None and weight is None and not extra:  # ties are indistinguishable
                key = np.sort(key, kind="stable" if sorted_runs else "quicksort")
            else:
                order = np.argsort(key, kind="stable") if rel is None else np.lexsort((rel, key))
                key = key[order]
                rel, weight, extra = take(order)
        else:
            payload = rel is not None or weight is not None or bool(extra)
            order = np.empty(len(key) if payload else 0, np.int64)
            key = (radix_sort or kernels.radix_sort_edges)(np.ascontiguousarray(key),
                                           _NO_REL if rel is None else rel, local_bits,
                                           rel_bits, order)
            rel, weight, extra = take(order)
    if dedupe and len(key) > 1:
        keep = np.ones(len(key), bool)
        same = key[1:] == key[:-1]
        if rel is not None:
            same &= rel[1:] == rel[:-1]
        keep[1:] = ~same
        key = key[keep]
        rel, weight, extra = take(keep)
    cols = {"key": key}
    if rel is not None:
        cols["rel"] = rel
    if weight is not None:
        cols["weight"] = weight
    cols.update(extra)
    return cols
