"""Node columns stored in files of their own, memory-mapped: features too large for RAM.

A column added with :func:`write_node_column` lives in ``nodes/{type}/column-{name}.arrow``
(:func:`~graphsys.storage.format.node_column_file`): one Arrow IPC record batch in
type-local id order, ``float16``/``float32`` features as a fixed-size list ``dim`` wide,
``int64`` labels (-1 = unknown), or ``large_string`` strings (mapped back by
:meth:`Graph.string_column <graphsys.storage.graph.Graph.string_column>`).
:meth:`Graph.mapped_node_column
<graphsys.storage.graph.Graph.mapped_node_column>` returns it as a read-only NumPy view of
the mapping: a 32 M x 64 float16 table is 4 GiB of page cache, not of heap, and a minibatch
gathers only its rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from graphsys.errors import GraphsysError
from graphsys.storage.atomic import fsync_path, sha256_file
from graphsys.storage.column_file import allocate_column
from graphsys.storage.format import (
    MAPPED_COLUMN_DTYPES,
    NodeColumn,
    node_column_file,
    write_manifest,
)
from graphsys.storage.lock import writer_lock
from graphsys.storage.node_files import write_string_column
from graphsys.temp_files import temp_beside


def write_node_column(path: str | Path, name: str, kind: str,
                      fill: Callable[[int, int], np.ndarray], *, dim: int = 1,
                      dtype: str | None = None, entity_type: str | None = None,
                      chunk_rows: int = 1 << 20) -> NodeColumn:
    """Add a node column to a stored graph, streamed in chunks into a file of its own.

    For columns too large to pass as an array to ``from_*``: ``fill`` produces the rows a
    chunk at a time, which are written into a memory-mapped file; the manifest is rewritten
    last. :meth:`Graph.mapped_node_column` maps the column back without reading it.

    Parameters
    ----------
    path : str or Path
        The graph directory (local).
    name : str
        The new column's name (letters, digits, ``-``, ``_``; not ``id``; not yet used).
    kind : {"features", "label", "string"}
        Features, ``dim`` wide, an int64 label per node, or a UTF-8 string per node (such as
        a title; mapped back by :meth:`Graph.string_column
        <graphsys.storage.graph.Graph.string_column>`).
    fill : callable
        ``fill(start, stop)`` returns the values of internal ids ``start..stop-1``: shape
        ``(stop - start, dim)`` for features, ``(stop - start,)`` for labels, ``stop -
        start`` strings (a sequence or a pyarrow string array) for strings.
    dim : int, default 1
        Width of a features column.
    dtype : str, optional
        ``float16`` or ``float32`` (default) for features; ``int64`` for labels;
        ``large_string`` for strings.
    entity_type : str, optional
        The entity type; None for the only one.
    chunk_rows : int, default 1048576
        Rows per ``fill`` call (memory: one chunk).

    Returns
    -------
    NodeColumn
        The manifest's record of the column.

    Raises
    ------
    GraphsysError
        A bad name, kind or dtype, a name already used, or a remote graph.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.storage.node_columns import write_node_column
    >>> d = tempfile.mkdtemp() + "/g"
    >>> _ = graphsys.from_numpy([0, 1, 2], [1, 2, 0], d)
    >>> _ = write_node_column(d, "feat", "features",
    ...                       lambda a, b: np.ones((b - a, 2), np.float32), dim=2)
    >>> graphsys.open_graph(d).mapped_node_column("feat").shape
    (3, 2)
    """
    from graphsys.storage.graph import open_graph

    graph = open_graph(path)
    graph.location.require_local("adding a node column")
    et = graph.entity_type(entity_type)
    dtype = dtype or {"features": "float32", "label": "int64",
                      "string": "large_string"}.get(kind, "")
    if dtype not in MAPPED_COLUMN_DTYPES.get(kind, ()):
        raise GraphsysError(f"node column kind {kind!r} takes dtype "
                            f"{' or '.join(MAPPED_COLUMN_DTYPES.get(kind, ('?',)))}, got "
                            f"{dtype!r}")
    if not name or not name.replace("_", "").replace("-", "").isalnum() or name == "id":
        raise GraphsysError(f"node column name must be letters, digits, - or _: {name!r}")
    if any(c.name == name for c in et.columns):
        raise GraphsysError(f"entity type {et.name!r} already has a node column {name!r}")
    if kind in ("label", "string"):
        dim = 1
    # one writer at a time, and none since the graph was opened (its manifest is written
    # back)
    with writer_lock(graph.path, graph.manifest):
        n = et.num_nodes
        rel = node_column_file(et.name, name)
        final = graph.path / rel
        tmp = temp_beside(final)
        try:
            if kind == "string":
                _write_strings(tmp, name, fill, n, chunk_rows)
            else:
                _write_values(tmp, name, kind, fill, n, dim, dtype, chunk_rows)
            fsync_path(tmp)
            entry = {"sha256": sha256_file(tmp), "bytes": tmp.stat().st_size}
            tmp.replace(final)
            fsync_path(final.parent)
        finally:
            tmp.unlink(missing_ok=True)
        column = NodeColumn(name, kind, dim, dtype)
        manifest = graph.manifest
        manifest.entity_types[et.name].columns.append(column)
        manifest.files[rel] = entry
        write_manifest(graph.path, manifest)
    return column


def _write_strings(tmp: Path, name: str, fill: Callable, n: int, chunk_rows: int) -> None:
    """A string column's file from ``fill``'s chunks (one record batch: the chunks are
    joined in memory, strings only, before it is written)."""
    chunks = []
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        try:
            chunk = pa.array(fill(start, stop), pa.large_string())
        except (pa.ArrowException, TypeError) as exc:
            raise GraphsysError(f"node column {name!r}: fill({start}, {stop}) did not return "
                                f"strings ({exc})") from None
        if len(chunk) != stop - start or chunk.null_count:
            raise GraphsysError(f"node column {name!r}: fill({start}, {stop}) returned "
                                f"{len(chunk)} strings ({chunk.null_count} null), expected "
                                f"{stop - start} and no nulls")
        chunks.append(chunk)
    write_string_column(tmp, name, pa.concat_arrays(chunks) if chunks
                        else pa.array([], pa.large_string()))


def _write_values(tmp: Path, name: str, kind: str, fill: Callable, n: int, dim: int,
                  dtype: str, chunk_rows: int) -> None:
    """A features or label column's file, ``fill``'s chunks written into its mapping."""
    values = allocate_column(tmp, name, np.dtype(dtype), n,
                             dim if kind == "features" else 0)
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        chunk = np.asarray(fill(start, stop))
        if chunk.shape != values[start:stop].shape:
            raise GraphsysError(f"node column {name!r}: fill({start}, {stop}) "
                                f"returned shape {chunk.shape}, expected "
                                f"{values[start:stop].shape}")
        if kind == "features":
            with np.errstate(over="ignore"):
                bad = ~np.isfinite(chunk.astype(values.dtype))
            if bad.any():
                row = start + int(np.flatnonzero(bad.any(axis=1))[0])
                raise GraphsysError(f"node column {name!r}: fill({start}, {stop}) returned "
                                    f"a non-finite feature ({dtype}) for internal id {row}: "
                                    f"features must be finite")
        values[start:stop] = chunk
    if isinstance(values, np.memmap):
        values.flush()
    del values
