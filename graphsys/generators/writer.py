"""Stream generated chunks to an edge-list / node-table file, atomically.

The format follows the file name (case-insensitive):

=====================  ==========================================================
``.tsv`` ``.tsv.gz``   tab-separated text, **no header**
``.csv`` ``.csv.gz``   comma-separated text, **no header**
``.parquet``           Parquet (snappy), row groups of up to :data:`BATCH_ROWS`
``.arrow`` ``.feather`` Arrow IPC file (Feather v2), uncompressed
=====================  ==========================================================

Text files are positional: ``src dst [weight]``, or ``head rel tail`` for triples (as in
FB15k); Parquet and Arrow files name their columns (:func:`edge_schema`). Gzip output uses
level 1 and a zero timestamp, so the bytes depend on the seed only. A writer streams into a
hidden temporary file beside the target, then fsyncs and renames it over the target
(``overwrite=True`` to replace one); on an exception the target is left as it was. Chunks
are pulled from the generator in a background thread while the previous one is encoded.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import queue
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from graphsys.errors import GraphsysError
from graphsys.generators._random import Chunk
from graphsys.storage.atomic import commit_file, fsync_path

#: Extension -> format name ("tsv", "csv", "parquet", "arrow") and gzip flag; longest first.
EXTENSIONS: dict[str, tuple[str, bool]] = {
    ".tsv.gz": ("tsv", True), ".csv.gz": ("csv", True), ".tsv": ("tsv", False),
    ".csv": ("csv", False), ".parquet": ("parquet", False), ".arrow": ("arrow", False),
    ".feather": ("arrow", False),
}
#: Rows buffered before a Parquet row group / Arrow record batch / text block is written.
BATCH_ROWS = 1 << 20
GZIP_LEVEL = 1
#: Rows Arrow's CSV writer formats at a time: larger than its default of 1024 so the per-call
#: overhead is paid once per block of rows rather than once per thousand.
TEXT_BATCH_ROWS = 1 << 16
NODE_TABLE_SUFFIX = ".nodes.parquet"


def output_format(path: str | os.PathLike) -> tuple[str, str, bool]:
    """``(extension, format, gzipped)`` for ``path``; GraphsysError for an unknown extension."""
    name = Path(path).name.lower()
    for ext, (fmt, gz) in EXTENSIONS.items():
        if name.endswith(ext) and len(name) > len(ext):
            return Path(path).name[-len(ext):], fmt, gz
    raise GraphsysError(f"{path}: unknown output extension (use one of "
                        f"{', '.join(sorted(EXTENSIONS, key=len))})")


def split_stem(path: str | os.PathLike) -> tuple[Path, str]:
    """``("dir/g", ".tsv.gz")`` for ``"dir/g.tsv.gz"``."""
    ext = output_format(path)[0]
    path = Path(path)
    return path.with_name(path.name[: -len(ext)]), ext


def node_table_path(path: str | os.PathLike) -> Path:
    """``<stem>.nodes.parquet`` beside the edge file ``path``."""
    stem, _ = split_stem(path)
    return stem.with_name(stem.name + NODE_TABLE_SUFFIX)


def split_paths(path: str | os.PathLike,
                names: Sequence[str] = ("train", "valid", "test")) -> dict[str, Path]:
    """``{name: <stem>.<name><ext>}`` for each split name.

    Parameters
    ----------
    path : str or path-like
        An edge file name with a known extension (see the module docstring; another
        is a GraphsysError).
    names : sequence of str, default ("train", "valid", "test")
        The split names.

    Returns
    -------
    dict of str to Path
        One file per name, in the order of ``names``, the extension (gzip too) kept.

    Examples
    --------
    >>> {k: p.name for k, p in split_paths("out/kg.tsv.gz").items()}
    {'train': 'kg.train.tsv.gz', 'valid': 'kg.valid.tsv.gz', 'test': 'kg.test.tsv.gz'}
    >>> [p.name for p in split_paths("kg.parquet", ("train", "test")).values()]
    ['kg.train.parquet', 'kg.test.parquet']
    """
    stem, ext = split_stem(path)
    return {name: stem.with_name(f"{stem.name}.{name}{ext}") for name in names}


def check_writable(path: str | os.PathLike, *, overwrite: bool = False) -> None:
    """GraphsysError unless ``path`` can be created: its directory exists, and the file does
    not (or ``overwrite``)."""
    from graphsys.outputs import check_parent

    path = Path(path)
    check_parent(path)
    if path.is_dir():
        raise GraphsysError(f"{path}: is a directory")
    if path.exists() and not overwrite:
        raise GraphsysError(f"{path}: already exists (remove it or choose another name)")


def edge_schema(path: str | os.PathLike, *, rel: bool = False,
                weight: np.dtype | type | None = None) -> pa.Schema:
    """Schema of an edge file: text order ``src [rel] dst [weight]``, columnar order
    ``src dst [rel] [weight]``.

    Parameters
    ----------
    path : str or path-like
        The file name; its extension picks text or columnar order.
    rel : bool, default False
        A ``rel`` (string) column: knowledge-graph triples.
    weight : numpy dtype or type, optional
        The float dtype of the weights; None: no ``weight`` column.

    Returns
    -------
    pyarrow.Schema
        ``src`` and ``dst`` int64, ``rel`` string, ``weight`` of ``weight``'s type.

    Raises
    ------
    GraphsysError
        An unknown extension.

    Examples
    --------
    >>> import numpy as np
    >>> edge_schema("kg.tsv", rel=True).names  # head rel tail, as FB15k
    ['src', 'rel', 'dst']
    >>> edge_schema("kg.parquet", rel=True, weight=np.float32).types
    [DataType(int64), DataType(int64), DataType(string), DataType(float)]
    """
    fmt = output_format(path)[1]
    fields = [pa.field("src", pa.int64()), pa.field("dst", pa.int64())]
    if rel:
        fields.insert(1 if fmt in ("tsv", "csv") else 2, pa.field("rel", pa.string()))
    if weight is not None:
        fields.append(pa.field("weight", pa.from_numpy_dtype(np.dtype(weight))))
    return pa.schema(fields)


def node_schema(features: int) -> pa.Schema:
    """Schema of a node table; ``feat`` only when ``features > 0``."""
    fields = [pa.field("id", pa.int64()), pa.field("label", pa.int64())]
    if features:
        fields.append(pa.field("feat", pa.list_(pa.float32(), features)))
    fields += [pa.field(f"{s}_mask", pa.bool_()) for s in ("train", "val", "test")]
    return pa.schema(fields)


class TableWriter:
    """Writes chunks (dicts of NumPy arrays) to one file atomically.

    Use as a context manager: a clean exit commits (fsync + rename), an exception aborts
    (the temporary file is removed). ``rel_names`` maps integer ``rel`` codes to strings.
    An existing ``path`` is an error unless ``overwrite``.
    """

    def __init__(self, path: str | os.PathLike, schema: pa.Schema, *,
                 rel_names: Sequence[str] | None = None, overwrite: bool = False):
        self.path, self.overwrite = Path(path), overwrite
        check_writable(self.path, overwrite=overwrite)
        _, self.format, self.gzipped = output_format(self.path)
        self.schema = schema
        self.rows = 0
        self._rel_names = pa.array(list(rel_names), pa.string()) if rel_names else None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._tmp = self.path.parent / f".{self.path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        self._raw = self._gz = self._writer = None
        try:
            self._open()
        except BaseException:
            self.abort()
            raise

    def _open(self) -> None:
        if self.gzipped:
            self._raw = open(self._tmp, "wb")
            self._gz = gzip.GzipFile(filename="", fileobj=self._raw, mode="wb",
                                     compresslevel=GZIP_LEVEL, mtime=0)
            sink = self._gz
        else:
            sink = self._raw = pa.OSFile(str(self._tmp), "wb")
        if self.format in ("tsv", "csv"):
            options = pacsv.WriteOptions(include_header=False, quoting_style="none",
                                         delimiter="\t" if self.format == "tsv" else ",",
                                         batch_size=TEXT_BATCH_ROWS)
            self._writer = pacsv.CSVWriter(sink, self.schema, write_options=options)
        elif self.format == "parquet":
            dictionary = [f.name for f in self.schema if pa.types.is_string(f.type)]
            self._writer = pq.ParquetWriter(sink, self.schema, use_dictionary=dictionary)
        else:
            self._writer = pa.ipc.new_file(sink, self.schema)

    def write(self, chunk: Mapping[str, np.ndarray]) -> None:
        """Append one chunk; every schema column must be present, extra keys are ignored."""
        batch = self._batch(chunk)
        if batch.num_rows == 0:
            return
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self.rows += batch.num_rows
        if self._pending_rows >= BATCH_ROWS:
            self._flush()

    def _batch(self, chunk: Mapping[str, np.ndarray]) -> pa.RecordBatch:
        columns = []
        for field in self.schema:
            try:
                value = chunk[field.name]
            except KeyError:
                raise GraphsysError(f"{self.path}: chunk has no column {field.name!r}") from None
            if pa.types.is_string(field.type):
                value = np.asarray(value)
                if value.dtype.kind in "iu":
                    if self._rel_names is None:
                        raise GraphsysError(f"{self.path}: integer {field.name!r} codes need "
                                            f"rel_names")
                    columns.append(self._rel_names.take(pa.array(value)))
                else:
                    columns.append(pa.array(value, pa.string()))
            elif pa.types.is_fixed_size_list(field.type):
                flat = np.ascontiguousarray(value, dtype=np.float32).reshape(-1)
                columns.append(pa.FixedSizeListArray.from_arrays(pa.array(flat),
                                                                 field.type.list_size))
            else:
                columns.append(pa.array(np.asarray(value, dtype=field.type.to_pandas_dtype())))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending, schema=self.schema)
        self._pending, self._pending_rows = [], 0
        if self.format == "parquet":
            self._writer.write_table(table, row_group_size=max(1, table.num_rows))
        else:
            self._writer.write_table(table)

    def commit(self) -> Path:
        """Finish the file and move it into place; returns the final path."""
        try:
            self._flush()
            self._writer.close()
            self._writer = None
            if self._gz is not None:
                self._gz.close()
                self._gz = None
            self._raw.close()
            self._raw = None
            fsync_path(self._tmp)
            commit_file(self._tmp, self.path, overwrite=self.overwrite)
        except BaseException:
            self.abort()
            raise
        fsync_path(self.path.parent)
        return self.path

    def abort(self) -> None:
        """Drop everything written so far; the target file is left untouched."""
        for handle in (self._writer, self._gz, self._raw):
            if handle is not None:
                with contextlib.suppress(Exception):
                    handle.close()
        self._writer = self._gz = self._raw = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._tmp)

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_edges(chunks: Iterable[Chunk], path: str | os.PathLike, *,
                rel_names: Sequence[str] | None = None, overwrite: bool = False,
                progress: Callable[[int], object] | None = None) -> int:
    """Write a stream of edge or triple chunks to a file, atomically; return the rows.

    The format follows the extension: ``.tsv``, ``.csv`` (optionally ``.gz``; no header),
    ``.parquet`` or ``.arrow`` / ``.feather``. The file appears only when every chunk is
    written (a temporary file renamed into place), so a reader never sees a partial one.
    Chunks are pulled from the generator in a background thread while the previous one is
    encoded.

    Parameters
    ----------
    chunks : iterable of dict
        Chunks of NumPy arrays of equal length, as the generators yield them: ``src``,
        ``dst`` (int64), optional ``rel`` (strings, or integer codes into ``rel_names``)
        and ``weight`` (its float dtype is kept). The first chunk fixes the columns.
    path : str or path-like
        The output file; its directory must exist.
    rel_names : sequence of str, optional
        Names of integer ``rel`` codes
        (:attr:`~graphsys.generators.KnowledgeGraph.relation_names`).
    overwrite : bool, default False
        Replace an existing file; otherwise it is refused.
    progress : callable, optional
        Called with the row count of each chunk after it is written.

    Returns
    -------
    int
        The rows written.

    Raises
    ------
    GraphsysError
        An unknown extension, a missing directory, an existing file (without
        ``overwrite``) or a chunk without a column of the first.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> from graphsys.generators import grid_edges, write_edges
    >>> path = tempfile.mkdtemp() + "/grid.parquet"
    >>> write_edges(grid_edges(100, seed=0), path)
    144
    >>> pq.read_schema(path).names
    ['src', 'dst', 'weight']
    """
    output_format(path)
    stream = _prefetch(chunks)
    try:
        first = next(stream, None)
        weight = first["weight"].dtype if first is not None and "weight" in first else None
        schema = edge_schema(path, rel=first is not None and "rel" in first, weight=weight)
        with TableWriter(path, schema, rel_names=rel_names, overwrite=overwrite) as writer:
            if first is not None:
                _write_one(writer, first, progress)
            for chunk in stream:
                _write_one(writer, chunk, progress)
        return writer.rows
    finally:
        stream.close()


def write_nodes(chunks: Iterable[Chunk], path: str | os.PathLike, *, features: int,
                overwrite: bool = False, progress: Callable[[int], object] | None = None) -> int:
    """Write a node table (see :func:`node_schema`) to ``path``, atomically as
    :func:`write_edges` writes.

    Parameters
    ----------
    chunks : iterable of dict
        Chunks of NumPy arrays of equal length with the columns of
        :func:`node_schema`: ``id``, ``label``, ``feat`` (n, ``features``) when
        ``features > 0``, ``train_mask``, ``val_mask``, ``test_mask``.
    path, overwrite, progress
        As :func:`write_edges` takes them (and refuses them).
    features : int
        The feature dimension (0: no ``feat`` column).

    Returns
    -------
    int
        The rows written.

    Examples
    --------
    >>> import tempfile, numpy as np, pyarrow.parquet as pq
    >>> path = tempfile.mkdtemp() + "/g.nodes.parquet"
    >>> masks = {f"{s}_mask": np.arange(3) == i for i, s in enumerate(("train", "val", "test"))}
    >>> write_nodes([{"id": np.arange(3), "label": np.array([0, 1, 0]), **masks}], path,
    ...             features=0)
    3
    >>> pq.read_table(path).column("val_mask").to_pylist()
    [False, True, False]
    """
    stream = _prefetch(chunks)
    try:
        with TableWriter(path, node_schema(features), overwrite=overwrite) as writer:
            for chunk in stream:
                _write_one(writer, chunk, progress)
        return writer.rows
    finally:
        stream.close()


def write_split_edges(labelled: Iterable[tuple[str, Chunk]],
                      paths: Mapping[str, str | os.PathLike], schema: pa.Schema, *,
                      rel_names: Sequence[str] | None = None, overwrite: bool = False,
                      progress: Callable[[int], object] | None = None) -> dict[str, int]:
    """Write ``(name, chunk)`` pairs to ``paths[name]``; all files commit, or none do
    (files committed before a failing commit are left).

    Parameters
    ----------
    labelled : iterable of (str, dict)
        Each chunk (as :func:`write_edges` takes them) with the split it belongs to
        (:meth:`~graphsys.generators.KnowledgeGraph.split` yields them).
    paths : mapping of str to path
        The file of each split (:func:`split_paths`); every one is written, empty or not.
    schema : pyarrow.Schema
        The columns (:func:`edge_schema`).
    rel_names : sequence of str, optional
        Names of integer ``rel`` codes.
    overwrite : bool, default False
        Replace existing files; otherwise they are refused.
    progress : callable, optional
        Called with the row count of each chunk after it is written.

    Returns
    -------
    dict of str to int
        The rows written per split.

    Raises
    ------
    GraphsysError
        A chunk of a split ``paths`` does not name, a chunk without a column of
        ``schema``, or a path :func:`write_edges` would refuse; no file is written.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> d = tempfile.mkdtemp()
    >>> paths = split_paths(d + "/g.tsv", ("train", "test"))
    >>> chunk = lambda s, t: {"src": np.array(s), "dst": np.array(t)}
    >>> write_split_edges([("train", chunk([0, 1], [1, 2])), ("test", chunk([2], [0]))],
    ...                   paths, edge_schema(paths["train"]))
    {'train': 2, 'test': 1}
    >>> open(paths["test"]).read().split()  # no header
    ['2', '0']
    >>> write_split_edges([("valid", chunk([0], [1]))], split_paths(d + "/h.tsv", ("train",)),
    ...                   edge_schema(paths["train"]))
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: a chunk of split 'valid', which has no file (splits: train)
    >>> sorted(os.listdir(d))  # nothing of h
    ['g.test.tsv', 'g.train.tsv']
    """
    writers: dict[str, TableWriter] = {}
    stream = _prefetch(labelled)
    try:
        for name, path in paths.items():
            writers[name] = TableWriter(path, schema, rel_names=rel_names, overwrite=overwrite)
        for name, chunk in stream:
            if name not in writers:  # a raw KeyError before
                raise GraphsysError(f"a chunk of split {name!r}, which has no file (splits: "
                                    f"{', '.join(writers)})")
            _write_one(writers[name], chunk, progress)
        for writer in writers.values():
            writer.commit()
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
    finally:
        stream.close()
    return {name: writer.rows for name, writer in writers.items()}


def _write_one(writer: TableWriter, chunk: Mapping[str, np.ndarray],
               progress: Callable[[int], object] | None) -> None:
    writer.write(chunk)
    if progress is not None:
        progress(len(next(iter(chunk.values()))))


_DONE = object()


def _prefetch(items: Iterable, depth: int = 2) -> Iterator:
    """Iterate ``items`` in a background thread, up to ``depth`` items ahead. Exceptions
    are re-raised in the consumer; closing the returned generator stops the thread."""
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        slots.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            outcome = (_DONE, None)
        except BaseException as exc:  # handed to the consumer
            outcome = (_DONE, exc)
        while not stop.is_set():
            try:
                slots.put(outcome, timeout=0.1)
                return
            except queue.Full:
                continue

    thread = threading.Thread(target=produce, name="graphsys-generate", daemon=True)

    def consume() -> Iterator:
        thread.start()
        finished = False
        try:
            while True:
                item, exc = slots.get()
                if item is _DONE:
                    finished = exc is None
                    if exc is not None:
                        raise exc
                    return
                yield item
        finally:
            stop.set()
            # Stopped early (an error, Ctrl-C, SIGTERM): the producer may be inside a long
            # draw and sees ``stop`` only before its next put; it hands nothing more over, so
            # it is left to end on its own (a daemon) instead of holding up the error.
            thread.join(None if finished else 0.1)

    return consume()
