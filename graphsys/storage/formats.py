"""Edge-list input formats: :class:`InputFormat` specs registered by name in
:data:`graphsys.plugins.INPUT_FORMATS` (``tsv``, ``csv``, ``parquet``, ``arrow``, ``jodie``).

An :class:`~graphsys.storage.ingest.EdgeSource` names its format (``format="auto"`` picks
one by the file name, :func:`resolve_format`); ingest reads every file through the format's
``read``. A new format is a module with its ``InputFormat`` plus one registration line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as paipc

from graphsys.errors import InputError
from graphsys.plugins import INPUT_FORMATS
from graphsys.storage.readers import (
    TEXT_BLOCK_BYTES,
    RawEdgeBatch,
    default_table_roles,
    read_table,
    read_text,
)

#: ``read(path, roles, *, source, on_bad_line, progress, bad_lines, careful, block_bytes)``:
#: the batches of one file. ``roles`` maps ``src``/``dst``/``rel``/``weight`` to a column
#: name or 0-based index (None: the format's default for src/dst, absent for rel/weight);
#: ``source`` is the :class:`~graphsys.storage.ingest.EdgeSource` (delimiter, header,
#: comment characters); ``progress(bytes_read)``; ``bad_lines`` collects the lines skipped
#: with ``on_bad_line="skip"``; ``careful`` and ``block_bytes`` (text per block, which the
#: ingest sizes to its ``memory_limit``) as :func:`~graphsys.storage.readers.read_text`; a
#: format takes the keywords it has no use for in ``**_``.
Reader = Callable[..., Iterator[RawEdgeBatch]]


@dataclass(frozen=True)
class InputFormat:
    """An edge-list file format.

    Attributes:
        read: the file's batches (:data:`Reader`).
        suffixes: lower-case file-name endings (after an optional ``.gz``) that
            ``format="auto"`` reads as this format.
        text: delimited text: read first on the fast path, and again on the careful one
            when a block needs it (:class:`~graphsys.storage.readers.NeedCarefulRead`).
    """

    read: Reader
    suffixes: tuple[str, ...] = ()
    text: bool = False


#: The format of a file whose name matches no format's suffixes.
FALLBACK_FORMAT = "tsv"


def resolve_format(path: Path, name: str) -> tuple[str, InputFormat]:
    """``(name, format)`` of ``path``: ``name`` itself, or for ``"auto"`` the registered
    format whose suffixes end the file name (``tsv`` when none does); an unknown name is
    an error listing the known ones."""
    if name == "auto":
        lower = path.name.lower().removesuffix(".gz")
        name = next((n for n, fmt in INPUT_FORMATS.items() if lower.endswith(fmt.suffixes)),
                    FALLBACK_FORMAT)
    return name, INPUT_FORMATS.get(name)


def _delimited(fmt: str) -> Reader:
    """The reader of delimited text ``fmt`` (``tsv``: delimiter sniffed; ``csv``)."""
    def read(path: Path, roles: dict[str, Any], *, source, on_bad_line: str, progress,
             bad_lines: list[int], careful: bool,
             block_bytes: int = TEXT_BLOCK_BYTES) -> Iterator[RawEdgeBatch]:
        roles = {**roles, "src": 0 if roles["src"] is None else roles["src"],
                 "dst": 1 if roles["dst"] is None else roles["dst"]}
        return read_text(path, fmt, roles, delimiter=source.delimiter, header=source.header,
                         comment=source.comment, on_bad_line=on_bad_line, progress=progress,
                         bad_lines=bad_lines, careful=careful, block_bytes=block_bytes)
    return read


def _columnar(fmt: str, column_names: Callable[[Path], list[str]]) -> Reader:
    """The reader of a columnar file ``fmt`` whose column names ``column_names`` reads."""
    def read(path: Path, roles: dict[str, Any], *, progress, **_: Any) -> Iterator[RawEdgeBatch]:
        try:
            names = column_names(path)
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"cannot read as {fmt} ({' '.join(str(exc).split())[:200]})",
                             path=path) from None
        return read_table(path, fmt, default_table_roles(roles, names), progress)
    return read


def _parquet_names(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return pq.ParquetFile(str(path)).schema_arrow.names


def _ipc_names(path: Path) -> list[str]:
    with pa.memory_map(str(path)) as source:      # closed: only the schema is read
        try:
            return paipc.open_file(source).schema.names
        except pa.ArrowInvalid:
            source.seek(0)
            return paipc.open_stream(source).schema.names


TSV = InputFormat(_delimited("tsv"), text=True)
CSV = InputFormat(_delimited("csv"), suffixes=(".csv",), text=True)
PARQUET = InputFormat(_columnar("parquet", _parquet_names), suffixes=(".parquet", ".pq"))
ARROW = InputFormat(_columnar("arrow", _ipc_names), suffixes=(".arrow", ".feather", ".ipc"))


def _jodie(path: Path, roles: dict[str, Any], **kw: Any) -> Iterator[RawEdgeBatch]:
    from graphsys.storage.jodie import read

    return read(path, roles, **kw)


#: JODIE's interaction files (:mod:`graphsys.storage.jodie`); never picked by ``auto``.
JODIE = InputFormat(_jodie)
