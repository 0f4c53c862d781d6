"""The JODIE input format (``format="jodie"``): the Wikipedia, Reddit, MOOC and LastFM
interaction files of Kumar et al.'s JODIE, read as a bipartite temporal graph.

A file is comma-separated text with the header
``user_id,item_id,timestamp,state_label,comma_separated_list_of_features`` and then one
interaction a line. User ``u`` is node ``u`` and item ``i`` is node ``items_from + i``
(``items_from``: the largest user id plus one over all the files); every line is one edge
user -> item with the edge columns ``timestamp`` (int64 seconds, rounded down),
``timestamp_us`` (exact microseconds, only when some time has a fraction), ``state_label``
and ``feature_0`` .. ``feature_{d-1}`` (float32). Times must not decrease down the files;
every malformed line stops the read with a one-line :class:`~graphsys.errors.InputError`
naming the file and line. docs/growing.md, "JODIE's files", is the guide.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphsys.errors import InputError, ParameterError
from graphsys.storage.location import not_an_input
from graphsys.storage.readers import RawEdgeBatch
from graphsys.units import parse_seconds

#: The header line of a JODIE file (its last name stands for the ``d`` feature fields).
HEADER = ("user_id", "item_id", "timestamp", "state_label",
          "comma_separated_list_of_features")
#: Name of edge feature column ``k``.
FEATURE_PREFIX = "feature_"


@dataclass
class JodieEvents:
    """The parsed interactions of JODIE files: ``table`` has ``src``, ``dst`` (item ids
    already offset by ``items_from``) and the edge columns ``columns``."""

    table: pa.Table
    items_from: int
    num_users: int
    num_items: int
    feature_dim: int
    columns: list[str] = field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        """What the graph's manifest records of the files (``metadata["jodie"]``)."""
        return {"items_from": self.items_from, "num_users": self.num_users,
                "num_items": self.num_items, "feature_dim": self.feature_dim,
                "edge_columns": self.columns,
                "direction": "user -> item (item node = items_from + item_id)"}


def _rows(path: Path) -> tuple[list[list[str]], int]:
    """The data rows of ``path`` and the line number of the first one."""
    if not path.is_file():
        raise InputError(not_an_input(path), path=path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = [r for r in csv.reader(f)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read as jodie ({' '.join(str(exc).split())[:200]})",
                         path=path) from None
    first = 1
    if rows and rows[0][:4] == list(HEADER[:4]):
        rows, first = rows[1:], 2
    elif rows and rows[0] and not rows[0][0].strip().lstrip("+").isdigit():
        raise InputError(f"not a JODIE file: the header must start with "
                         f"{','.join(HEADER[:4])}, got {','.join(rows[0][:4])!r}",
                         path=path, line=1)
    return rows, first


def _numbers(path: Path, rows: list[list[str]], first: int, cols: slice, dtype,
             what: str) -> np.ndarray:
    """Fields ``cols`` of every row as a ``dtype`` array; a field that is not a number of
    that kind is an error naming its line."""
    try:
        return np.array([r[cols] for r in rows], dtype=dtype).reshape(len(rows), -1)
    except (ValueError, OverflowError):
        pass
    for k, r in enumerate(rows):
        try:
            np.array(r[cols], dtype=dtype)
        except (ValueError, OverflowError):
            kind = "an integer" if dtype == np.int64 else "a number"
            raise InputError(f"{what} {','.join(r[cols])[:100]!r} is not {kind}",
                             path=path, line=first + k) from None
    raise AssertionError("unreachable")


def _parse_file(path: Path) -> dict[str, np.ndarray]:
    """The fields of one JODIE file, checked line by line."""
    rows, first = _rows(path)
    if not rows:
        raise InputError("no interactions (a JODIE file has a line per interaction)",
                         path=path)
    width = len(rows[0])
    for k, r in enumerate(rows):
        if len(r) != width or len(r) < 4:
            raise InputError(f"{len(r)} fields, expected {max(width, 4)} (user_id, item_id, "
                             f"timestamp, state_label and {max(width - 4, 0)} features, as "
                             f"the first line)", path=path, line=first + k)
    ids = _numbers(path, rows, first, slice(0, 2), np.int64, "user_id,item_id")
    bad = np.flatnonzero((ids < 0).any(axis=1))
    if len(bad):
        raise InputError(f"negative id {rows[bad[0]][:2]!r} (ids are non-negative integers)",
                         path=path, line=first + int(bad[0]))
    label = _numbers(path, rows, first, slice(3, 4), np.int64, "state_label")[:, 0]
    feats = _numbers(path, rows, first, slice(4, None), np.float64, "feature")
    if not np.isfinite(feats).all():
        k = int(np.flatnonzero(~np.isfinite(feats).all(axis=1))[0])
        raise InputError("a feature is not finite", path=path, line=first + k)
    try:
        seconds, micros = parse_seconds([r[2] for r in rows])
    except InputError as exc:
        k = int(str(exc).rsplit("(row ", 1)[1].split(")")[0])
        raise InputError(f"timestamp {rows[k][2]!r} is not a decimal number of seconds with "
                         f"at most 6 decimals", path=path, line=first + k) from None
    exact = micros if micros is not None else seconds * 1_000_000
    return {"user": ids[:, 0], "item": ids[:, 1], "seconds": seconds, "micros": exact,
            "fractional": np.array(micros is not None), "label": label,
            "features": feats.astype(np.float32), "first": np.array(first)}


def read_jodie(paths: str | Path | Sequence[str | Path]) -> JodieEvents:
    """Read JODIE interaction files into one bipartite temporal edge table.

    Parameters
    ----------
    paths : str, Path or sequence of them
        JODIE ``.csv`` files (see the module docstring for the format), read in the order
        given as one stream of interactions.

    Returns
    -------
    JodieEvents
        ``table`` with ``src`` (user ids), ``dst`` (``items_from`` + item ids) and the edge
        columns ``columns`` (``timestamp``, maybe ``timestamp_us``, ``state_label``,
        ``feature_0``...), plus the counts.

    Raises
    ------
    InputError
        A malformed line, naming file and line; files of different feature counts; a time
        before the time of the line above.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "wiki.csv"
    >>> _ = p.write_text("user_id,item_id,timestamp,state_label,comma_separated_list_of_features\\n"
    ...                  "0,0,0.0,0,0.5,1.0\\n1,0,36.0,0,0.25,2.0\\n1,2,77.5,1,0.0,3.0\\n")
    >>> ev = read_jodie(p)
    >>> ev.table.column("dst").to_pylist(), ev.items_from, ev.feature_dim
    ([2, 2, 4], 2, 2)
    >>> ev.columns
    ['timestamp', 'timestamp_us', 'state_label', 'feature_0', 'feature_1']
    """
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if not paths:
        raise ParameterError("paths", "names no JODIE file")
    parts = [_parse_file(p) for p in paths]
    dims = {p["features"].shape[1] for p in parts}
    if len(dims) > 1:
        raise InputError(f"the files have different feature counts ({sorted(dims)}); one "
                         f"ingest reads files of one dataset", path=paths[0])
    last = None
    for path, part in zip(paths, parts):
        t = part["micros"]
        back = np.flatnonzero(np.diff(t) < 0) + 1
        if last is not None and len(t) and t[0] < last:
            back = np.concatenate([[0], back])
        if len(back):
            k = int(back[0])
            raise InputError("timestamp goes back in time (JODIE files are in time order; "
                             "sort the file by timestamp, keeping ties in order)",
                             path=path, line=int(part["first"]) + k)
        last = t[-1]
    return _events(parts)


def _events(parts: list[dict[str, np.ndarray]]) -> JodieEvents:
    """The edge table of the parsed files."""
    def cat(key):
        return np.concatenate([p[key] for p in parts])

    user, item = cat("user"), cat("item")
    items_from = int(user.max()) + 1
    columns: dict[str, Any] = {"src": user, "dst": item + items_from,
                               "timestamp": cat("seconds")}
    if any(bool(p["fractional"]) for p in parts):
        columns["timestamp_us"] = cat("micros")
    columns["state_label"] = cat("label")
    feats = np.concatenate([p["features"] for p in parts])
    for k in range(feats.shape[1]):
        columns[f"{FEATURE_PREFIX}{k}"] = np.ascontiguousarray(feats[:, k])
    table = pa.table(columns)
    return JodieEvents(table, items_from, len(np.unique(user)), len(np.unique(item)),
                       feats.shape[1], [c for c in columns if c not in ("src", "dst")])


def read(path: Path, roles: dict[str, Any], **_: Any) -> Iterator[RawEdgeBatch]:
    """The :data:`~graphsys.storage.formats.Reader` of one JODIE file on its own (items
    offset by that file's largest user id + 1): ``src``/``dst`` and the edge columns the
    roles name (``col:NAME`` to a column of :attr:`JodieEvents.columns`)."""
    ev = read_jodie(path)
    out = {"src": ev.table.column("src"), "dst": ev.table.column("dst")}
    for role, col in roles.items():
        if role in ("src", "dst") or col is None:
            continue
        if not role.startswith("col:") or col not in ev.columns:
            raise InputError(f"a JODIE file has the columns {', '.join(ev.columns)}; "
                             f"{role} {col!r} is none of them", path=path)
        out[role] = ev.table.column(col)
    yield RawEdgeBatch({k: v.combine_chunks() for k, v in out.items()}, None,
                       path.stat().st_size)


def jodie_source(paths: Sequence[Path], edge_set: str, **given: Any):
    """``(EdgeSource, metadata)`` of JODIE files for :func:`graphsys.ingest`: one in-memory
    table of all the files (one item offset), keeping every edge column. ``given`` holds
    the column keywords of the call, which a JODIE file fixes (each must be unset)."""
    from graphsys.storage.ingest_inputs import EdgeSource

    for name, value in given.items():
        if value not in (None, (), {}, [], ""):
            raise ParameterError(name, "cannot be given with format='jodie' (a JODIE file "
                                       "fixes its columns: user, item, timestamp, "
                                       "state_label, features)")
    ev = read_jodie(paths)
    return (EdgeSource(table=ev.table, edge_set=edge_set, edge_columns=ev.columns),
            ev.metadata())
