"""Arrow embedding directories: one float32 vector per node of one entity type.

The format that ``graphsys gnn embed`` writes (:class:`EmbeddingWriter`) and
:meth:`graphsys.embed.Embeddings.load` serves (:func:`read_embedding_files`)::

    <dir>/embeddings.json   {"format": ARROW_FORMAT, "entity_type", "dimension",
                             "num_nodes", "partitions": [file, ...], "graph", "meta"}
    <dir>/<file>            Arrow IPC file of one storage partition, rows in the
                            partition's node order: id (original ids), embedding
                            fixed_size_list<float32>[dimension]

Each partition file appears atomically as soon as it is complete, and the index last, so a
directory without ``embeddings.json`` holds no embeddings. Reading follows
:mod:`graphsys.storage.file_rules` (the index at most :data:`MAX_INDEX_BYTES`, every
embedding column float32 of the index's dimension without nulls, the rows adding up to
``num_nodes``) and maps the embedding columns read-only.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage import file_rules
from graphsys.storage.atomic import atomic_path, write_bytes_atomic
from graphsys.storage.format import SAFE_NAME
from graphsys.storage.lock import writer_lock

#: The index file of an Arrow embedding directory.
ARROW_INDEX = "embeddings.json"
#: The index's ``format`` tag.
ARROW_FORMAT = "graphsys-gnn-embeddings"
#: The largest index read (it lists one file name per partition).
MAX_INDEX_BYTES = 16 << 20
#: The largest dimension accepted.
MAX_DIMENSION = 1 << 20


@dataclass(frozen=True)
class EmbeddingFiles:
    """An opened Arrow embedding directory (:func:`read_embedding_files`).

    Attributes
    ----------
    path : Path
        The directory.
    header : dict
        The index (``embeddings.json``) as read.
    entity_type : str
        The entity type embedded.
    dimension : int
        The vectors' dimension ``d``.
    partitions : list of ndarray
        One float32 ``(n_p, d)`` read-only array per storage partition, memory-mapped,
        rows in the partition's node order.
    ids : list of pyarrow.Array
        The original ids of each partition's rows (the files' ``id`` column).
    """

    path: Path
    header: dict[str, Any]
    entity_type: str
    dimension: int
    partitions: list[np.ndarray] = field(repr=False)
    ids: list[pa.Array] = field(repr=False, default_factory=list)


def is_embedding_directory(path: str | Path) -> bool:
    """Whether ``path`` holds an Arrow embedding index (``embeddings.json``)."""
    return (Path(path) / ARROW_INDEX).is_file()


def _count(header: dict, key: str, index: Path, least: int, most: int | None = None) -> int:
    value = header.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < least or (
            most is not None and value > most):
        bound = f"from {least} to {most}" if most is not None else f">= {least}"
        raise FormatError(f"{index}: {key} must be an integer {bound}, got {value!r}")
    return value


def read_embedding_files(path: str | Path) -> EmbeddingFiles:
    """Open an Arrow embedding directory, checking it as untrusted input.

    Parameters
    ----------
    path : str or Path
        The directory (written by :class:`EmbeddingWriter`, ``graphsys gnn embed``).

    Returns
    -------
    EmbeddingFiles
        The index and one memory-mapped float32 ``(n_p, d)`` array per partition.

    Raises
    ------
    FormatError
        A missing, oversized or malformed index, a partition path that leaves the
        directory or is not a regular file, an unreadable Arrow file, an embedding column
        of another type or dimension or with nulls, or row counts that do not add up.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.storage.embedding_files import EmbeddingWriter, read_embedding_files
    >>> g = graphsys.from_numpy([0, 1, 2], [1, 2, 0], tempfile.mkdtemp() + "/g")
    >>> out = tempfile.mkdtemp() + "/emb"
    >>> writer = EmbeddingWriter(out, g, "node")
    >>> writer(0, np.eye(3, 2, dtype=np.float32))
    >>> _ = writer.finish({"note": "three nodes"})
    >>> files = read_embedding_files(out)
    >>> files.entity_type, files.dimension, files.partitions[0].shape
    ('node', 2, (3, 2))
    """
    path = Path(path)
    index = path / ARROW_INDEX
    header = file_rules.read_json(path, ARROW_INDEX, max_bytes=MAX_INDEX_BYTES)
    if not isinstance(header, dict):
        raise FormatError(f"{index}: not a JSON object")
    if header.get("format") != ARROW_FORMAT:
        raise FormatError(f"{index}: unknown embeddings format {header.get('format')!r}")
    et = header.get("entity_type")
    if not isinstance(et, str) or not SAFE_NAME.fullmatch(et):
        raise FormatError(f"{index}: entity_type {et!r} is not an entity type name")
    dim = _count(header, "dimension", index, 1, MAX_DIMENSION)
    num_nodes = _count(header, "num_nodes", index, 0)
    files = header.get("partitions")
    if not isinstance(files, list):
        raise FormatError(f"{index}: partitions must be a list of file names")
    if not isinstance(header.get("graph", ""), str) or not isinstance(
            header.get("meta", {}), dict):
        raise FormatError(f"{index}: graph must be a path and meta an object")
    parts = [_read_partition(path, file_rules.inside(path, rel, source=str(index),
                                                     field="partitions"), dim)
             for rel in files]
    rows = sum(len(p) for p, _ in parts)
    if rows != num_nodes:
        raise FormatError(f"{path}: partitions hold {rows} rows, the index says {num_nodes}")
    return EmbeddingFiles(path, header, et, dim, [p for p, _ in parts], [i for _, i in parts])


def _read_partition(path: Path, file: Path, dim: int) -> tuple[np.ndarray, pa.Array]:
    """The embedding column of one partition file as float32 ``(n, dim)``, memory-mapped,
    and its ids."""
    file_rules.file_size(path, file)
    try:
        table = paipc.open_file(pa.memory_map(str(file))).read_all()
        col, ids = table.column("embedding"), table.column("id").combine_chunks()
    except (OSError, KeyError, pa.ArrowException) as exc:
        raise FormatError(f"{file}: cannot read embeddings ({exc})") from None
    if col.type != pa.list_(pa.float32(), dim):
        raise FormatError(f"{file}: embedding column is {col.type}, the index says "
                          f"fixed_size_list<float>[{dim}]")
    if col.null_count or any(c.values.null_count for c in col.chunks):
        raise FormatError(f"{file}: embedding column holds nulls")
    rows = [c.flatten().to_numpy().reshape(-1, dim) for c in col.chunks]
    if len(rows) == 1:
        return rows[0], ids
    return np.concatenate(rows) if rows else np.zeros((0, dim), np.float32), ids


class EmbeddingWriter:
    """Writes an Arrow embedding directory: one file per partition as it is ready, then
    the index (:meth:`finish`).

    Parameters
    ----------
    out : str or Path
        The directory (created if missing); one that already holds an index is refused.
    graph : Graph
        The opened graph whose nodes are embedded (its ids are written beside the vectors).
    entity_type : str
        The entity type embedded.

    Attributes
    ----------
    files : list of str
        The partition files written, relative to ``out``.
    dim : int or None
        The dimension, once a partition is written.

    Raises
    ------
    GraphsysError
        ``out`` already holds embeddings, is or lies inside a graph or checkpoint
        directory, holds a symlink or a special file, or is being written by another
        process (a writer holds ``out``'s lock, :func:`~graphsys.storage.lock.writer_lock`,
        from here to :meth:`finish` or :meth:`close`).

    Examples
    --------
    See :func:`read_embedding_files`.
    """

    def __init__(self, out: str | Path, graph, entity_type: str):
        from graphsys.outputs import check_own_directory

        self.out = Path(out)
        if (self.out / ARROW_INDEX).exists():
            raise GraphsysError(f"{self.out}: already holds embeddings (choose a new output "
                                f"directory)")
        check_own_directory(self.out, what="an embedding directory")
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GraphsysError(f"{self.out}: cannot create it ({exc.strerror or exc})"
                                ) from None
        file_rules.check_tree(self.out, what="embedding directory")
        self._lock = contextlib.ExitStack()
        self._lock.enter_context(writer_lock(self.out))
        try:
            if (self.out / ARROW_INDEX).exists():     # finished meanwhile by another writer
                raise GraphsysError(f"{self.out}: already holds embeddings (choose a new "
                                    f"output directory)")
            (self.out / entity_type).mkdir(exist_ok=True)
        except BaseException:
            self._lock.close()
            raise
        self.graph, self.etype = graph, entity_type
        self.files: list[str] = []
        self.dim: int | None = None

    def close(self) -> None:
        """Release the directory (done by :meth:`finish`; call it when giving up)."""
        self._lock.close()

    def __call__(self, partition: int, emb) -> None:
        """Write partition ``partition``'s vectors: float ``(n_p, d)`` (an array, or a CPU
        tensor), rows in the partition's node order."""
        arr = np.asarray(emb, dtype=np.float32)
        self.dim = arr.shape[1]
        ids = self.graph.node_ids(self.etype, partition)
        col = pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1), pa.float32()),
                                                arr.shape[1])
        table = pa.table({"id": ids, "embedding": col})
        rel = f"{self.etype}/part-{partition}.arrow"
        with atomic_path(self.out / rel, overwrite=True) as tmp, \
                paipc.new_file(str(tmp), table.schema) as w:
            w.write_table(table)
        self.files.append(rel)

    def finish(self, meta: dict | None = None) -> Path:
        """Write the index (last, atomically) with ``meta`` (JSON data); returns ``out``."""
        header = {"format": ARROW_FORMAT, "entity_type": self.etype, "dimension": self.dim,
                  "num_nodes": self.graph.num_nodes(self.etype), "partitions": self.files,
                  "graph": str(self.graph.path), "meta": meta or {}}
        try:
            write_bytes_atomic(self.out / ARROW_INDEX, json.dumps(header, indent=1).encode())
        finally:
            self.close()
        return self.out
