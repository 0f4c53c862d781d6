"""What :func:`graphsys.storage.ingest.ingest_sources` reads (:class:`EdgeSource`,
:class:`NodeSource`), how (:class:`IngestOptions`) and what it reports
(:class:`IngestReport`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphsys.errors import ParameterError
from graphsys.storage.edge_runs import COLUMN_PREFIX
from graphsys.storage.format import (
    DEFAULT_EDGE_SET,
    DEFAULT_ENTITY_TYPE,
    DEFAULT_MAX_BATCH_ROWS,
    EDGE_COLUMN_NAME,
    RESERVED_EDGE_COLUMNS,
    RelationType,
)


@dataclass
class EdgeSource:
    """One edge input: files of one edge set, and how to read their columns.

    Columns are named (header / Parquet name) or 0-based indices; defaults: src = first
    column (or ``src``), dst = second (or ``dst``). ``relation`` gives every edge of this
    source one relation when there is no ``rel_col``. Instead of ``paths``, ``table`` may
    hold the edges in memory (a :class:`pyarrow.Table` or record batches; ids as integer or
    string columns), read by the same passes; errors then name row numbers of ``table``.
    ``edge_columns`` maps the name of each edge column to store (a numeric column kept beside
    the edges, :class:`~graphsys.storage.format.EdgeColumn`) to the input column holding it
    (a name or a 0-based index); a sequence of names stores the input columns of those names.
    """

    paths: Sequence[str | Path] = ()
    edge_set: str = DEFAULT_EDGE_SET
    format: str = "auto"
    src_col: str | int | None = None
    dst_col: str | int | None = None
    rel_col: str | int | None = None
    weight_col: str | int | None = None
    relation: str | None = None
    delimiter: str | None = None
    header: bool | None = None
    comment: str = "#%"
    table: Any = None
    edge_columns: Any = ()

    def __post_init__(self) -> None:
        check_delimiter(self.delimiter)       # refused before any input is read
        if not isinstance(self.comment, str) or not self.comment.isascii() or any(
                c in self.comment for c in "\r\n"):
            raise ParameterError("comment", f"must be a string of ASCII characters (each "
                                            f"starts a comment line), such as '#' or '', "
                                            f"got {self.comment!r}")

    def column_roles(self) -> dict[str, str | int]:
        """The edge columns as reader roles: ``col:NAME`` to the input column."""
        cols = self.edge_columns
        pairs = list(cols.items()) if isinstance(cols, dict) else [(c, c) for c in cols]
        out: dict[str, str | int] = {}
        for name, col in pairs:
            if not isinstance(name, str) or not EDGE_COLUMN_NAME.fullmatch(name) or (
                    name in RESERVED_EDGE_COLUMNS):
                raise ParameterError("edge_columns", f"{name!r} is not a valid edge column "
                                     f"name (a letter or _, then letters, digits, _; not "
                                     f"{', '.join(RESERVED_EDGE_COLUMNS)})")
            if COLUMN_PREFIX + name in out:
                raise ParameterError("edge_columns", f"names {name!r} twice")
            out[COLUMN_PREFIX + name] = col
        return out


@dataclass
class NodeSource:
    """A table of nodes of one entity type: column ``id`` plus optional node columns.

    Column kinds by Arrow type: fixed-size list of float32 = features, integer = label
    (-1 = unknown), bool = mask. Nodes that only appear in edges get zeros / -1 / False.
    """

    table: pa.Table
    entity_type: str = DEFAULT_ENTITY_TYPE


#: The least ``memory_limit`` of an ingest or append (64 KiB): one bucket batch of the
#: smallest size an ingest writes (4,096 edges of 16 bytes); a smaller budget (a size
#: written without its unit, ``1`` for ``1GB``) could not hold even that.
MIN_MEMORY_LIMIT = 1 << 16


#: The least ``memory_limit`` an ingest keeps to (16 MiB): below it the smallest chunks no
#: longer shrink with the budget (65,536 routed edges a buffer, about 1.3-2.1 MB with their
#: routing scratch, a few at once; 1 MiB of ids), so they overrun it.
CHUNKED_MEMORY_LIMIT = 16 << 20


class SmallBudgetWarning(UserWarning):
    """A ``memory_limit`` below :data:`CHUNKED_MEMORY_LIMIT` (:func:`small_budget`)."""


def small_budget(value: int) -> str | None:
    """The one-line warning for a ``memory_limit`` (bytes) below
    :data:`CHUNKED_MEMORY_LIMIT`, naming that minimum; None for a budget at least that, and
    for one below :data:`MIN_MEMORY_LIMIT`, which :func:`check_memory_limit` refuses."""
    if value >= CHUNKED_MEMORY_LIMIT or value < MIN_MEMORY_LIMIT:
        return None
    return (f"memory_limit {value:,} bytes is below {CHUNKED_MEMORY_LIMIT:,} (16MiB), the "
            f"least an ingest keeps to: its smallest buffers (65,536 edges, 1MiB of ids) "
            f"do not shrink below it and overrun a smaller budget; give at least 16MiB")


def warn_small_budget(value: int) -> None:
    """Warn (:class:`SmallBudgetWarning`) about a ``memory_limit`` that :func:`small_budget`
    finds too small; the ingest goes on."""
    import warnings

    message = small_budget(value)
    if message is not None:
        warnings.warn(message, SmallBudgetWarning, stacklevel=3)


def check_memory_limit(value) -> int:
    """``value`` unless it is not an integer of at least :data:`MIN_MEMORY_LIMIT` bytes."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < MIN_MEMORY_LIMIT:
        raise ParameterError("memory_limit", f"must be at least {MIN_MEMORY_LIMIT:,} bytes "
                                             f"(64KiB: one batch of 4,096 edges), got "
                                             f"{value!r}")
    return int(value)


def check_delimiter(value) -> None:
    """ParameterError unless ``value`` is None (sniffed) or one ASCII character that can
    split a text line: not a line break and not the double quote, which quotes fields."""
    if value is None:
        return
    if not isinstance(value, str) or len(value) != 1 or not value.isascii() or value in '\r\n"':
        raise ParameterError("delimiter", f"must be one ASCII character other than a line "
                                          f"break or '\"', such as ',' or '\\t', got {value!r}")


@dataclass
class IngestOptions:
    """Options of :func:`~graphsys.storage.ingest.ingest_sources`: ``partitions`` is the
    number of node partitions ``P``; ``memory_limit`` is in bytes."""

    partitions: int = 1
    partitioner: str = "hash"
    partitioner_params: dict[str, Any] | None = None
    seed: int = 0
    undirected: bool = False
    dedupe: bool = False
    drop_self_loops: bool = False
    memory_limit: int = 2_000_000_000
    on_bad_line: str = "error"
    progress: bool = False
    relation_types: list[RelationType] | None = None
    max_batch_rows: int = DEFAULT_MAX_BATCH_ROWS
    #: JSON-able provenance stored as the manifest's ``metadata`` field.
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("undirected", "dedupe", "drop_self_loops", "progress"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):    # "no" would be true, and stored
                raise ParameterError(name, f"must be True or False, got {value!r}")
            setattr(self, name, bool(value))


@dataclass
class IngestReport:
    """What an ingest built and what it cost (seconds, bytes, peak RSS in bytes)."""

    out: str
    nodes: dict[str, int]
    edges: dict[str, int]
    num_partitions: int
    partitioner: dict[str, Any]
    skipped_lines: int
    input_bytes: int
    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)
