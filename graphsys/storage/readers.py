"""Streaming readers of edge-list files: TSV/CSV (optionally gzip), Parquet and Arrow IPC,
and of in-memory Arrow tables (:func:`read_memory`, what ``graphsys.interop`` ingests).

Every reader yields :class:`RawEdgeBatch` objects in bounded memory (one Arrow block at a
time) with the selected columns as Arrow arrays of strings (text) or their stored types
(Parquet/Arrow), plus the physical line number of every row so errors can name it.
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as paipc
import pyarrow.parquet as pq

from graphsys.errors import InputError
from graphsys.storage.read_ahead import read_ahead

log = logging.getLogger(__name__)

#: Bytes read from the input per text block, at most (:func:`text_block_bytes`).
TEXT_BLOCK_BYTES = 16 << 20
#: Rows per batch read from Parquet/Arrow inputs.
TABLE_BATCH_ROWS = 1 << 20
#: Bytes of a Parquet file read at a time (pyarrow's buffered stream): its pages are read
#: through this buffer into page-sized allocations that the next pages reuse, rather than
#: each column chunk into one allocation of its whole size (megabytes per row group, new
#: memory that the system must fault in and zero each time).
PARQUET_READ_BUFFER = 256 << 10


@dataclass
class RawEdgeBatch:
    """One block of input rows with the selected columns.

    ``columns`` maps a role (``src``, ``dst``, ``rel``, ``weight``) to an Arrow array;
    ``first_line`` and ``line_of`` turn a row index into the physical line (text) or
    1-based row number (Parquet/Arrow) for error messages. ``bytes_read`` is the input
    progress in bytes after this batch (compressed bytes for gzip).
    """

    columns: dict[str, pa.Array]
    line_of: Callable[[int], int] | None  # None: line numbers unknown (fast text path)
    bytes_read: int

    @property
    def num_rows(self) -> int:
        return len(next(iter(self.columns.values())))


def text_block_bytes(memory_limit: int) -> int:
    """Bytes per text block within a ``memory_limit`` (bytes): a 32nd of it, between 1 MiB
    and :data:`TEXT_BLOCK_BYTES`. Arrow's reader holds several blocks at once (read ahead,
    parsed and converted, one per thread), so a fixed block would overrun a small budget.

    Examples
    --------
    >>> text_block_bytes(2_000_000_000) == TEXT_BLOCK_BYTES, text_block_bytes(64 << 20)
    (True, 2097152)
    """
    return int(min(TEXT_BLOCK_BYTES, max(1 << 20, memory_limit // 32)))


class _FilteredText(io.RawIOBase):
    """A byte stream with comment lines and blank lines removed (and whitespace runs squeezed
    when the delimiter is a space), recording where lines were removed so that a row index
    of the filtered stream maps back to a physical line number of the input."""

    def __init__(self, stream, comment: str, squeeze_spaces: bool, progress: Callable[[int], None],
                 block_bytes: int = TEXT_BLOCK_BYTES):
        self._stream = stream
        self._block_bytes = block_bytes
        self._comment = comment.encode()
        self._squeeze = squeeze_spaces
        self._progress = progress
        self._pending = memoryview(b"")
        self._pos = 0
        self._carry = b""
        self._eof = False
        self.lines_out = 0
        # filtered line index at which removals happened, and cumulative removed lines there
        self.removed_at: list[int] = []
        self.removed_cum: list[int] = []
        self._removed = 0
        #: comment lines met after the first data line (ids such as '#tag' would be lost)
        self.late_comments = 0
        comments = b"".join(re.escape(bytes([c])) for c in self._comment)
        self._drop = re.compile(rb"^(?:[" + comments + rb"].*|\s*)$" if comments else rb"^\s*$")
        self._spaces = re.compile(rb"[ \t]+")

    def readable(self) -> bool:
        return True

    def _next_chunk(self) -> bytes:
        while True:
            raw = self._stream.read(self._block_bytes)
            self._progress(self._stream.position())
            if not raw:
                self._eof = True
                data, self._carry = self._carry, b""
                if data and not data.endswith(b"\n"):
                    data += b"\n"
                return self._filter(data) if data else b""
            data = self._carry + raw
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                self._carry = data
                continue
            self._carry = data[cut:]
            return self._filter(data[:cut])

    def _filter(self, data: bytes) -> bytes:
        n_lines = data.count(b"\n")
        needs = (
            data.startswith(b"\n") or data.startswith(b"\r\n") or b"\n\n" in data
            or b"\n\r\n" in data or (self._squeeze and (b"  " in data or data[:1] == b" "
                                                         or b"\t" in data or b" \n" in data))
            or any(data.startswith(bytes([c])) or b"\n" + bytes([c]) in data
                   for c in self._comment)
        )
        if not needs:
            self.lines_out += n_lines
            return data
        kept = []
        for line in data.split(b"\n")[:-1]:
            if self._drop.match(line):
                self._removed += 1
                self.late_comments += bool(self.lines_out and line.strip())
                if self.removed_at and self.removed_at[-1] == self.lines_out:
                    self.removed_cum[-1] = self._removed
                else:
                    self.removed_at.append(self.lines_out)
                    self.removed_cum.append(self._removed)
                continue
            if self._squeeze:
                line = self._spaces.sub(b" ", line.rstrip(b"\r").strip(b" \t"))
            kept.append(line)
            self.lines_out += 1
        return b"\n".join(kept) + b"\n" if kept else b""

    def readinto(self, buffer) -> int:
        while self._pos >= len(self._pending) and not self._eof:
            self._pending = memoryview(self._next_chunk())
            self._pos = 0
        n = min(len(buffer), len(self._pending) - self._pos)
        buffer[:n] = self._pending[self._pos:self._pos + n]
        self._pos += n
        return n

    def physical_line(self, filtered_index: int) -> int:
        """1-based physical line of the row at 0-based index ``filtered_index`` of the output."""
        k = int(np.searchsorted(np.asarray(self.removed_at, dtype=np.int64), filtered_index,
                                side="right"))
        return filtered_index + 1 + (self.removed_cum[k - 1] if k else 0)


class _Input:
    """A file opened for streaming, gunzipped when its name ends in ``.gz``, without the
    UTF-8 byte order mark that spreadsheet exports put first (else part of the first
    header name or id); ``position()`` is the offset reached in the file on disk
    (compressed bytes for gzip)."""

    def __init__(self, path: Path):
        try:
            self.raw = pa.OSFile(str(path), "rb")
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"cannot open ({exc})", path=path) from None
        self.stream = (pa.CompressedInputStream(self.raw, "gzip")
                       if path.name.lower().endswith(".gz") else self.raw)
        self.started = False

    def read(self, n: int) -> bytes:
        if self.started:
            return self.stream.read(n)
        self.started = True
        data = self.stream.read(max(n, 3))
        return data[3:] if data.startswith(codecs.BOM_UTF8) else data

    def position(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        self.stream.close()
        self.raw.close()

    def __enter__(self) -> _Input:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _HexGuard:
    """The fast path's byte stream, watched for a hexadecimal prefix (a zero, then ``x`` or
    ``X``): Arrow's integer parser reads hexadecimal text as the number it spells, while an
    integer id is ``[+-]?[0-9]+`` alone (docs/format.md), so a file holding that text is
    read by the careful path, which keeps it as a string id."""

    def __init__(self, stream):
        self.stream = stream
        self.last = b""
        self.closed = False

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(n)
        # one memchr pass for the rare letter first: in a digit-rich block the two-byte
        # search stops at every zero
        if ((b"x" in data and b"0x" in data) or (b"X" in data and b"0X" in data)
                or (self.last == b"0" and data[:1] in (b"x", b"X"))):
            raise NeedCarefulRead("hexadecimal-looking text (0x...) is not an integer id")
        self.last = data[-1:]
        return data

    def close(self) -> None:
        self.closed = True


class NeedCarefulRead(Exception):
    """Raised by the fast text path when a block needs the careful path: a value that does not
    convert, a bad row in ``error`` mode, or a problem whose line number must be named."""


#: The first line of a MatrixMarket file, whose first data line is the matrix size.
MATRIX_MARKET = b"%%MatrixMarket"


def _sniff(path: Path, comment: str) -> tuple[list[bytes], int, bool]:
    """First two data lines of a text file, and how many comment/blank lines precede the
    first one, and whether they include a MatrixMarket file's size line (the first line
    after its ``%`` lines, ``rows cols entries``: not an edge)."""
    lines: list[bytes] = []
    leading = 0
    try:
        with _Input(path) as stream:
            buf = stream.read(1 << 16)
    except (OSError, pa.ArrowException, EOFError) as exc:
        raise InputError(f"cannot read ({exc})", path=path) from None
    whole = len(buf) < 1 << 16  # the whole file: its last line counts even unterminated
    size_line = matrix_market = "%" in comment and buf.startswith(MATRIX_MARKET)
    for line in buf.split(b"\n") if whole else buf.split(b"\n")[:-1] or [buf]:
        s = line.rstrip(b"\r")
        if not s.strip() or (comment and s[:1].decode("latin-1") in comment) or size_line:
            if not lines:
                leading += 1
                size_line = size_line and (not s.strip() or s[:1] == b"%")
            continue
        lines.append(s)
        if len(lines) == 2:
            break
    return lines, leading, matrix_market


def _select_columns(path: Path, roles: dict[str, str | int | None], names: list[str], *,
                    has_names: bool) -> dict[str, str]:
    """Map each present role to a column name; roles give names or 0-based indices."""
    selected: dict[str, str] = {}
    for role, col in roles.items():
        if col is None:
            continue
        if isinstance(col, int):
            if not 0 <= col < len(names):
                raise InputError(f"column index {col} for {role} is out of range: the file has "
                                 f"{len(names)} columns", path=path)
            col = names[col]
        elif not has_names:
            raise InputError(f"column {col!r} for {role} named, but the file has no header "
                             f"line (use a 0-based column index)", path=path)
        elif col not in names:
            raise InputError(f"unknown column {col!r} for {role} (columns: {', '.join(names)})",
                             path=path)
        selected[role] = col
    return selected


def default_table_roles(roles: dict[str, str | int | None], names: list[str]
                        ) -> dict[str, str | int | None]:
    """Parquet/Arrow default columns: ``src``/``dst`` if present, else the first two."""
    roles = dict(roles)
    if roles["src"] is None:
        roles["src"] = "src" if "src" in names else 0
    if roles["dst"] is None:
        roles["dst"] = "dst" if "dst" in names else 1
    return roles


def _is_number(token: bytes) -> bool:
    try:
        float(token.strip())
    except ValueError:
        return False
    return True


def _field_name(token: bytes) -> str:
    """A header field as a column name: decoded, stripped, and without one pair of
    surrounding double quotes (``"src"`` names ``src``: CSV writers quote header names)."""
    name = token.decode("utf-8", "replace").strip()
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] == '"' else name


def _auto_header(tokens: list[bytes], second: list[bytes] | None,
                 roles: dict[str, str | int | None]) -> bool:
    """The ``auto`` header rule: the first line is a header when it holds every column name
    that ``roles`` asks for (with none named, the default names ``src`` and ``dst``), or
    when every one of its fields is non-numeric while every field of the second line is
    numeric. Anything else is data (a string-id file with another header needs
    ``header=True``)."""
    names = [v for v in roles.values() if isinstance(v, str)]
    have = {_field_name(t) for t in tokens}
    if names or {"src", "dst"} <= have:
        return all(n in have for n in names or ("src", "dst"))
    return (second is not None and len(second) == len(tokens)
            and not any(_is_number(t) for t in tokens) and all(_is_number(t) for t in second))


@dataclass
class _TextLayout:
    names: list[str]
    selected: dict[str, str]
    delimiter: str
    header: bool
    leading: int  # comment/blank lines (and a size line) before the first data/header line
    size_line: bool  # a MatrixMarket size line among them: a row the careful path skips
    squeeze: bool  # space-delimited with runs of blanks: only the careful path reads it


def _text_layout(path: Path, fmt: str, roles: dict[str, str | int | None], delimiter: str | None,
                 header: bool | None, comment: str) -> _TextLayout:
    first, leading, size_line = _sniff(path, comment)
    if not first:
        raise InputError("no data lines (empty input)", path=path)
    if delimiter is None:
        delimiter = ("," if fmt == "csv" else "\t" if b"\t" in first[0]
                     else "," if b"," in first[0] else " ")
    squeeze = delimiter == " " and any(b"  " in x or x[:1] in (b" ", b"\t") or b"\t" in x
                                       for x in first)
    delim = delimiter.encode()

    def split(line: bytes) -> list[bytes]:
        if delimiter == " ":
            return re.split(rb"[ \t]+", line.strip())
        if delimiter != ",":
            return line.split(delim)
        # quoted as the readers parse (a comma inside '"a,b"' does not split the field)
        return [t.encode() for t in next(csv.reader([line.decode("utf-8", "replace")]))]

    tokens = split(first[0])
    if header is None:
        header = _auto_header(tokens, split(first[1]) if len(first) == 2 else None, roles)
        named = {role: v for role, v in roles.items() if isinstance(v, str)}
        fields = [_field_name(t) for t in tokens]
        for role, col in named.items():
            if col not in fields:
                raise InputError(f"unknown column {col!r} for {role}: the first line "
                                 f"({', '.join(fields)[:200]}) does not name it", path=path)
        if header:
            log.warning("%s: first line taken as a header (%s); set header to no "
                        "if it is data", path,
                        " ".join(t.decode("utf-8", "replace") for t in tokens)[:200])
    if header and len(first) < 2:
        raise InputError("a header line and no data lines (empty input)", path=path)
    if header:  # columns named in the header are found by position: names may repeat
        roles = _header_positions(path, roles, [_field_name(t) for t in tokens])
    names = [f"c{k}" for k in range(len(tokens))]
    selected = _select_columns(path, roles, names, has_names=bool(header))
    return _TextLayout(names, selected, delimiter, bool(header), leading, size_line, squeeze)


def _header_positions(path: Path, roles: dict[str, str | int | None], fields: list[str]
                      ) -> dict[str, str | int | None]:
    """``roles`` with every column name replaced by its 0-based position among the header
    line's ``fields``. A name the header lacks, or holds more than once, is refused: with
    two columns of one name, reading by name would take the same column twice (a header
    ``12 12`` made every edge a self-loop)."""
    out = dict(roles)
    for role, col in roles.items():
        if not isinstance(col, str):
            continue
        hits = [k for k, f in enumerate(fields) if f == col]
        if not hits:
            raise InputError(f"unknown column {col!r} for {role} (columns: "
                             f"{', '.join(fields)[:200]})", path=path)
        if len(hits) > 1:
            raise InputError(f"column {col!r} for {role} is ambiguous: the header line has "
                             f"it at positions {', '.join(str(k) for k in hits)} (use a "
                             f"0-based column index)", path=path)
        out[role] = hits[0]
    return out


def read_text(path: Path, fmt: str, roles: dict[str, str | int | None], *, delimiter: str | None,
              header: bool | None, comment: str, on_bad_line: str,
              progress: Callable[[int], None], bad_lines: list[int],
              careful: bool, block_bytes: int = TEXT_BLOCK_BYTES) -> Iterator[RawEdgeBatch]:
    """Stream a delimited text file. ``roles`` maps src/dst/rel/weight to a column name or
    0-based index (None = role absent); ``block_bytes``: text per block
    (:func:`text_block_bytes` of a budget).

    The fast path (``careful=False``) lets Arrow's multi-threaded reader parse the file
    directly, ids as int64 and weights as float64, and raises :class:`NeedCarefulRead` at the
    first thing it cannot handle exactly. The careful path reads every column as text through
    a filter that drops comment and blank lines anywhere, and knows every row's line number.
    """
    layout = _text_layout(path, fmt, roles, delimiter, header, comment)
    if careful or layout.squeeze:
        yield from _read_careful(path, layout, comment, on_bad_line, progress, bad_lines,
                                 block_bytes)
    else:
        yield from _read_fast(path, layout, comment, on_bad_line, progress, bad_lines,
                              block_bytes)


def _row_handler(fn: Callable) -> Callable:
    """Mark ``fn`` as an Arrow invalid-row handler. Arrow decodes a bad row's text before it
    calls the handler, and a row that is not UTF-8 fails there, outside the handler, as an
    'Exception ignored' traceback printed ahead of the read's own one-line error (the row
    is then an error, ``on_bad_line="skip"`` or not): the hook drops that report for marked
    handlers and passes every other one on."""
    fn.graphsys_row_handler = True
    previous = sys.unraisablehook
    if not getattr(previous, "graphsys_rows", False):
        def hook(report) -> None:
            if not (getattr(report.object, "graphsys_row_handler", False)
                    and issubclass(report.exc_type, UnicodeDecodeError)):
                previous(report)

        hook.graphsys_rows = True
        sys.unraisablehook = hook
    return fn


def _read_fast(path: Path, layout: _TextLayout, comment: str, on_bad_line: str,
               progress: Callable[[int], None], bad_lines: list[int],
               block_bytes: int) -> Iterator[RawEdgeBatch]:
    comment_b = tuple(comment)

    @_row_handler
    def handler(row) -> str:
        text = row.text.strip()
        if not text or text.startswith(comment_b):
            return "skip"
        if on_bad_line == "skip":
            bad_lines.append(-1)
            return "skip"
        return "error"

    types = {col: pa.int64() if role in ("src", "dst") else pa.float64() if role == "weight"
             else pa.string() for role, col in layout.selected.items()}
    source = _Input(path)
    try:
        reader = pacsv.open_csv(
            _HexGuard(source.stream),
            read_options=pacsv.ReadOptions(block_size=block_bytes, use_threads=True,
                                           skip_rows=layout.leading + (1 if layout.header else 0),
                                           column_names=layout.names),
            parse_options=pacsv.ParseOptions(delimiter=layout.delimiter,
                                             quote_char='"' if layout.delimiter == "," else False,
                                             invalid_row_handler=handler),
            convert_options=pacsv.ConvertOptions(
                include_columns=list(dict.fromkeys(layout.selected.values())),
                column_types=types, null_values=[""], strings_can_be_null=False,
                quoted_strings_can_be_null=False))
        for batch in reader:
            progress(source.position())
            yield RawEdgeBatch({role: batch.column(col) for role, col in layout.selected.items()},
                               None, source.position())
    except NeedCarefulRead:
        raise
    except pa.ArrowInvalid as exc:
        if "gzip" in str(exc).lower() or "truncated" in str(exc).lower():
            raise InputError(f"truncated or corrupt gzip stream ({_short(exc)})",
                             path=path) from None
        raise NeedCarefulRead(_short(exc)) from None
    except (OSError, EOFError, pa.ArrowException) as exc:
        raise _stream_error(exc, path) from None
    finally:
        source.close()


def _read_careful(path: Path, layout: _TextLayout, comment: str, on_bad_line: str,
                  progress: Callable[[int], None], bad_lines: list[int],
                  block_bytes: int) -> Iterator[RawEdgeBatch]:
    stream = _Input(path)
    filtered = _FilteredText(stream, comment, layout.squeeze, progress, block_bytes)
    row_base = int(layout.header) + int(layout.size_line)  # rows before the first edge
    state = {"bad": None}

    @_row_handler
    def handler(row) -> str:
        if on_bad_line == "skip":
            bad_lines.append(-1)
            return "skip"
        state["bad"] = row
        return "error"

    read_opts = pacsv.ReadOptions(
        block_size=block_bytes, use_threads=on_bad_line == "skip",
        skip_rows=row_base, column_names=layout.names,
    )
    parse_opts = pacsv.ParseOptions(delimiter=layout.delimiter,
                                    quote_char='"' if layout.delimiter == "," else False,
                                    invalid_row_handler=handler, ignore_empty_lines=False)
    convert_opts = pacsv.ConvertOptions(
        include_columns=list(dict.fromkeys(layout.selected.values())),
        column_types={c: pa.string() for c in layout.selected.values()},
        strings_can_be_null=False, quoted_strings_can_be_null=False,
    )
    rows_done = 0
    try:
        reader = pacsv.open_csv(filtered, read_options=read_opts, parse_options=parse_opts,
                                convert_options=convert_opts)
        for batch in reader:
            base = rows_done + row_base
            # exact when no row was skipped: rows skipped by the handler shift later rows
            line_of = None if bad_lines else (
                lambda i, base=base: filtered.physical_line(base + i))
            yield RawEdgeBatch({role: batch.column(col) for role, col in layout.selected.items()},
                               line_of, stream.position())
            rows_done += batch.num_rows
        if filtered.late_comments:
            log.warning("%s: %d line(s) after the first data line start with a comment "
                        "character (%s) and were skipped; set comment to '' if they are data "
                        "(ids such as #tag)", path, filtered.late_comments, comment)
    except pa.ArrowInvalid as exc:
        bad = state["bad"]
        if bad is not None:
            line = filtered.physical_line(bad.number - 1) if bad.number else None
            raise InputError(f"expected {bad.expected_columns} columns, found "
                             f"{bad.actual_columns}: {bad.text[:80]!r}", path=path,
                             line=line) from None
        raise InputError(_short(exc), path=path) from None
    except (OSError, EOFError, pa.ArrowException) as exc:
        raise _stream_error(exc, path) from None
    finally:
        stream.close()


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _stream_error(exc: BaseException, path: Path) -> InputError:
    """A failed read of ``path`` in one line (a ``.gz`` file's: a truncated or corrupt
    stream)."""
    gz = path.name.lower().endswith(".gz")
    return InputError(f"truncated or corrupt gzip stream ({_short(exc)})" if gz
                      else _short(exc), path=path)


def read_table(path: Path, fmt: str, roles: dict[str, str | int | None],
               progress: Callable[[int], None]) -> Iterator[RawEdgeBatch]:
    """Stream a Parquet or Arrow IPC file by record batches; roles name columns or indices
    (defaults: ``src``/``dst`` columns if present, else the first two columns). A Parquet
    read of the file and roles that :func:`start_table_read` began is taken over: its
    batches are decoded ahead already (:func:`read_ahead` passes them through)."""
    early = _take_early(path, roles) if fmt == "parquet" else None
    if early is not None:
        early.progress[0] = progress
        if early.progress[1]:
            progress(early.progress[1])  # what it decoded before
        return early.batches
    try:
        if fmt == "parquet":
            # pre_buffer=False: with read-ahead on, the reader keeps every row group's
            # compressed pages it has read until the file is closed (the whole file, ~12
            # bytes per int64 edge: 14 GB at 1B edges); off, memory is one row group
            pf = _parquet_file(path)
            schema = pf.schema_arrow
        else:
            source = pa.memory_map(str(path))
            try:
                ipc = paipc.open_file(source)
            except pa.ArrowInvalid:
                source.seek(0)
                ipc = paipc.open_stream(source)
            schema = ipc.schema
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read as {fmt} ({_short(exc)})", path=path) from None
    selected = _select_columns(path, roles, schema.names, has_names=True)
    if fmt == "parquet":
        return _parquet_batches(path, pf, selected, progress)
    batches = (ipc.get_batch(k) for k in range(ipc.num_record_batches)) if hasattr(
        ipc, "get_batch") else iter(ipc)
    return _table_batches(path, fmt, batches, selected, None, progress)


def _parquet_file(path: Path) -> pq.ParquetFile:
    """``path`` opened as :func:`read_table` reads it: no pre-buffering (see there), pages
    read through a :data:`PARQUET_READ_BUFFER` buffer."""
    return pq.ParquetFile(str(path), pre_buffer=False, buffer_size=PARQUET_READ_BUFFER)


def _parquet_batches(path: Path, pf: pq.ParquetFile, selected: dict[str, str],
                     progress: Callable[[int], None]) -> Iterator[RawEdgeBatch]:
    """:func:`read_table`'s batches of the open Parquet file ``pf``."""
    batches = pf.iter_batches(batch_size=TABLE_BATCH_ROWS,
                              columns=list(dict.fromkeys(selected.values())))
    return _table_batches(path, "parquet", batches, selected,
                          max(pf.metadata.num_rows, 1), progress)


def _table_batches(path: Path, fmt: str, batches: Iterator[pa.RecordBatch],
                   selected: dict[str, str], nrows: int | None,
                   progress: Callable[[int], None]) -> Iterator[RawEdgeBatch]:
    """``batches`` as :class:`RawEdgeBatch` objects, rows numbered from 1; progress in
    bytes of the file (by rows where ``nrows`` is known)."""
    total = path.stat().st_size
    done = 0
    try:
        for batch in batches:
            base = done
            done += batch.num_rows
            progress(int(total * done / nrows) if nrows else total)
            yield RawEdgeBatch({r: narrow_ids(batch.column(c)) if r in ("src", "dst")
                                else batch.column(c) for r, c in selected.items()},
                               lambda i, base=base: base + i + 1, total)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read as {fmt} ({_short(exc)})", path=path) from None


def narrow_ids(arr: pa.Array) -> pa.Array:
    """An int64 id column as int32 where every id fits (Arrow's checked cast, one pass),
    else as it is: half the bytes held, queued or spilled (the routing kernels read
    either). A table reader's batches are narrowed as they are read, on the read-ahead's
    thread, so their int64 buffers are freed at once and the next batch decodes into
    their pages rather than into fresh ones; the ingest narrows every batch again as it
    spills (a no-op where it is int32 already)."""
    if arr.type == pa.int64():
        try:
            return arr.cast(pa.int32())  # safe: raises where an id does not fit
        except pa.ArrowInvalid:
            pass
    return arr


@dataclass
class _EarlyRead:
    """A Parquet read begun by :func:`start_table_read`: the file it reads (its
    ``os.stat`` identity), its column roles, its batches decoding ahead, and in
    ``progress`` the callback they report to (None until :func:`read_table` takes it) and
    the last position they reported."""

    key: tuple
    roles: dict[str, str | int | None]
    batches: Iterator[RawEdgeBatch]
    progress: list


_early: list[_EarlyRead] = []  # at most one, until read_table takes it or it is cancelled


def _file_key(path: Path) -> tuple:
    st = os.stat(path)
    return (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def start_table_read(path: Path, roles: dict[str, str | int | None], max_bytes: int) -> bool:
    """Begin reading the Parquet file ``path`` (the columns of ``roles``, as
    :func:`read_table` selects them) on a helper thread, decoding up to ``max_bytes`` of
    batches ahead (as :func:`read_ahead`), so that what runs before the read (a command's
    imports) overlaps its decoding. :func:`read_table` of the same unchanged file with the
    same roles takes it over; any other read cancels it, as :func:`cancel_table_reads`
    does. Returns whether it began: not where the file or its columns cannot be read (the
    read proper says why)."""
    cancel_table_reads()
    if not Path(path).is_file():  # a FIFO's open would block for good (the read refuses it)
        return False
    try:
        key = _file_key(path)
        pf = _parquet_file(path)
        names = pf.schema_arrow.names
        selected = _select_columns(path, default_table_roles(roles, names), names,
                                   has_names=True)
    except (OSError, pa.ArrowException, InputError):
        return False
    slot: list = [None, 0]  # the callback once taken over, the last position reported

    def report(pos: int) -> None:
        slot[1] = pos
        if slot[0] is not None:
            slot[0](pos)

    batches = _parquet_batches(path, pf, selected, report)
    _early.append(_EarlyRead(key, default_table_roles(roles, names),
                             read_ahead(batches, max_bytes), slot))
    return True


def _take_early(path: Path, roles: dict[str, str | int | None]) -> _EarlyRead | None:
    """The early read (:func:`start_table_read`) of ``path`` with ``roles``, taken out of
    the list; None, with any other early read cancelled, where there is none."""
    if not _early:
        return None
    try:
        key = _file_key(path)
    except OSError:
        key = None
    early = _early[0]
    if early.key != key or early.roles != roles:
        cancel_table_reads()
        return None
    _early.clear()
    return early


def cancel_table_reads() -> None:
    """Stop and drop the read :func:`start_table_read` began, where no read took it over."""
    while _early:
        _early.pop().batches.close()


def _schema_text(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def read_memory(table: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch], where: str,
                roles: dict[str, str | int | None]) -> Iterator[RawEdgeBatch]:
    """Stream an in-memory Arrow table (or record batches) in slices of at most
    ``TABLE_BATCH_ROWS`` rows, zero-copy; ``where`` names the source in error messages.
    Roles as :func:`read_table`; rows are numbered from 1."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        batches = list(table)
        if not batches or not all(isinstance(b, pa.RecordBatch) for b in batches):
            raise InputError("expected a pyarrow Table or a non-empty sequence of "
                             "RecordBatches", path=where)
        other = next((k for k, b in enumerate(batches) if b.schema != batches[0].schema), None)
        if other is not None:
            raise InputError(f"record batch {other} has another schema than batch 0 "
                             f"({_schema_text(batches[other].schema)} vs "
                             f"{_schema_text(batches[0].schema)}): give batches of one "
                             f"schema", path=where)
        table = pa.Table.from_batches(batches)
    roles = default_table_roles(roles, table.column_names)
    selected = _select_columns(Path(where), roles, table.column_names, has_names=True)
    done = 0
    for batch in table.to_batches(max_chunksize=TABLE_BATCH_ROWS):
        base = done
        done += batch.num_rows
        yield RawEdgeBatch({r: batch.column(c) for r, c in selected.items()},
                           lambda i, base=base: base + i + 1, done)
