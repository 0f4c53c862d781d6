"""Pass 1's check of one input batch (:mod:`graphsys.storage.ingest`): ids present and
free of NUL bytes, weights numeric and finite as float32, edge columns typed from the input,
relations known; each bad row named by file and line, or dropped and counted with
``on_bad_line="skip"``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphsys.errors import InputError
from graphsys.storage.edge_runs import COLUMN_PREFIX
from graphsys.storage.ids import id_column, ids_array
from graphsys.storage.readers import NeedCarefulRead


def validate_batch(batch, path: Path, relation: Callable[[str, str], int], on_bad_line: str
                   ) -> tuple[dict[str, Any], int]:
    """Check one input batch; return its columns (ids as int64 ndarray, int32 where they
    came as int32, or string array, rel
    int32, weight float32, edge columns as :func:`edge_column_values` types them) and the
    number of rows dropped. ``relation(name, where)`` gives a relation name's index (and
    refuses an unknown one). Bad rows raise :class:`InputError` naming file and line (or
    :class:`NeedCarefulRead` when the batch cannot name its lines), or are dropped with
    ``on_bad_line="skip"``."""
    n = batch.num_rows
    bad = np.zeros(n, bool)
    problems: list[tuple[int, str]] = []
    cols: dict[str, Any] = {}
    for role in ("src", "dst"):
        arr = id_column(batch.columns[role], role, path)
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            empty = pc.fill_null(pc.equal(pc.utf8_length(arr), 0), True)
            nul = pc.fill_null(pc.match_substring(arr, "\x00"), False).to_numpy(
                zero_copy_only=False)
            _flag(nul, f"NUL byte in {role} id", problems, bad)
        else:
            empty = pc.is_null(arr) if arr.null_count else None
        if empty is not None:
            _flag(empty.to_numpy(zero_copy_only=False), f"empty {role} id", problems, bad)
        cols[role] = arr
    if "weight" in batch.columns:
        w = batch.columns["weight"]
        if isinstance(w, pa.ChunkedArray):
            w = w.combine_chunks()
        if pa.types.is_floating(w.type) or pa.types.is_integer(w.type) or (
                pa.types.is_decimal(w.type)):
            wv = w.cast(pa.float64())
            nulls = pc.is_null(wv).to_numpy(zero_copy_only=False)
            weights = pc.fill_null(wv, 0.0).to_numpy()
        elif not (pa.types.is_string(w.type) or pa.types.is_large_string(w.type)):
            raise InputError(f"weight column has type {w.type}; weights are numbers "
                             f"(integer, float or decimal) or their text", path=path)
        else:
            try:
                weights = pc.cast(w, pa.float64()).to_numpy(zero_copy_only=False)
                nulls = np.isnan(weights) & ~_is_nan_text(w)
            except pa.ArrowInvalid:
                weights, nulls = _parse_floats(w)
        _flag(nulls, lambda i: f"non-numeric weight {_value(w, i)!r}", problems, bad)
        weights, infinite, tiny = float32_weights(weights)
        # NaN, +-inf, beyond float32; nonzero below its normal range
        for rows, what in ((infinite & ~nulls, "non-finite weight {!r} (as float32)"),
                           (tiny & ~nulls, "weight {!r} underflows float32 (a nonzero weight "
                                           "must be at least " + MIN_WEIGHT_TEXT + " in "
                                           "magnitude)")):
            _flag(rows, lambda i, what=what: what.format(_value(w, i)), problems, bad)
        cols["weight"] = weights
    for role in batch.columns:
        if role.startswith(COLUMN_PREFIX):
            cols[role] = edge_column_values(batch.columns[role], role[len(COLUMN_PREFIX):],
                                             problems, bad, path)
    if "rel" in batch.columns:
        r = batch.columns["rel"]
        if isinstance(r, pa.ChunkedArray):
            r = r.combine_chunks()
        r = r.cast(pa.large_string())
        empty = pc.fill_null(pc.equal(pc.utf8_length(r), 0), True).to_numpy(
            zero_copy_only=False)
        _flag(empty, "empty relation", problems, bad)
        enc = r.dictionary_encode()
        mapping = np.array([relation(str(v), str(path)) if v.is_valid and str(v) else -1
                            for v in enc.dictionary] or [0], np.int32)
        codes = pc.fill_null(enc.indices, 0).to_numpy(zero_copy_only=False)
        cols["rel"] = mapping[codes] if len(enc.dictionary) else np.zeros(n, np.int32)
    if problems:
        if on_bad_line == "error":
            if batch.line_of is None:
                raise NeedCarefulRead(problems[0][1])
            i, what = min(problems)
            raise InputError(what, path=path, line=batch.line_of(i))
        keep = ~bad
        cols = {k: (v.filter(pa.array(keep)) if isinstance(v, pa.Array) else v[keep])
                for k, v in cols.items()}
    # ids: integers when every id parses as one, else strings
    for role in ("src", "dst"):
        arr = cols[role]  # int32 ids (narrowed as they were read) stay int32
        cols[role] = (arr.to_numpy(zero_copy_only=False) if arr.type == pa.int32()
                      else ids_array(arr))
    return cols, int(np.count_nonzero(bad))


#: The least magnitude of a nonzero weight: float32's smallest normal number. Weights are
#: stored as float32; below it float32 keeps fewer digits, and below about 1.4e-45 none (the
#: weight would be stored as 0 and PageRank, SSSP, ... would run on a zero weight).
MIN_WEIGHT = float(np.finfo(np.float32).tiny)
MIN_WEIGHT_TEXT = f"{MIN_WEIGHT:.3g}"


def float32_weights(values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights (any real dtype) as stored: ``(float32 values, not finite as float32 (NaN,
    infinite or beyond float32's range), nonzero but below :data:`MIN_WEIGHT` as float32)``,
    the masks bool (E,); every write path that stores weights refuses the rows of either
    mask (the ingest naming the first by file and line)."""
    values = np.asarray(values)
    with np.errstate(over="ignore", under="ignore"):
        out = values.astype(np.float32)
    infinite = ~np.isfinite(out)
    tiny = (np.abs(out) < MIN_WEIGHT) & (values != 0)
    return out, infinite, tiny & ~infinite


def common_dtype(dtypes: set[str]) -> str:
    """The dtype an edge column is stored with, from those its batches came in: their one
    dtype, else float64 (integers and floats mixed, as in a text column whose later lines
    hold decimals)."""
    return next(iter(dtypes)) if len(dtypes) == 1 else "float64"


def edge_column_values(arr, name: str, problems: list[tuple[int, str]], bad: np.ndarray,
                        path: Path) -> np.ndarray:
    """One input batch's values of the edge column ``name`` as int64, float32 or float64
    (typed from the input: integers as int64, float32 as float32, other floats as float64;
    text as int64 when every value of the batch is an integer, else float64). Rows that are
    missing, non-numeric or not finite are added to ``problems`` and ``bad``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    typ = arr.type
    nulls = (pc.is_null(arr).to_numpy(zero_copy_only=False) if arr.null_count
             else np.zeros(len(arr), bool))
    nonnum = np.zeros(len(arr), bool)
    if pa.types.is_integer(typ):
        try:
            out = pc.cast(pc.fill_null(arr, 0), pa.int64()).to_numpy()
        except pa.ArrowInvalid:
            raise InputError(f"edge column {name!r}: an integer beyond int64", path=path) from None
    elif pa.types.is_floating(typ):
        want = pa.float64() if typ == pa.float64() else pa.float32()
        out = pc.cast(pc.fill_null(arr, 0), want).to_numpy()
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
        text = pc.utf8_trim_whitespace(arr)
        try:
            out = pc.cast(pc.fill_null(text, "0"), pa.int64()).to_numpy()
        except pa.ArrowInvalid:
            try:
                out = pc.cast(pc.fill_null(text, "0"), pa.float64()).to_numpy(
                    zero_copy_only=False)
            except pa.ArrowInvalid:
                out, nonnum = _parse_floats(text)
                nonnum &= ~nulls
    else:
        raise InputError(f"edge column {name!r} has type {typ}; edge columns hold integers "
                         f"or floats", path=path)
    _flag(nulls, f"missing {name}", problems, bad)
    _flag(nonnum, lambda i: f"non-numeric {name} {_value(arr, i)!r}", problems, bad)
    if out.dtype.kind == "f":
        _flag(~nulls & ~nonnum & ~np.isfinite(out),
              lambda i: f"non-finite {name} {_value(arr, i)!r}", problems, bad)
    return out


def _flag(rows: np.ndarray, what, problems: list[tuple[int, str]], bad: np.ndarray) -> None:
    """Mark the rows of the bool mask ``rows`` in ``bad`` and name the first in
    ``problems``: ``what``, or ``what(i)`` of its index ``i``."""
    if rows.any():
        i = int(np.flatnonzero(rows)[0])
        problems.append((i, what(i) if callable(what) else what))
        bad |= rows


def _value(arr, i: int) -> str:
    """Row ``i`` of ``arr`` as Python ("" for null), for messages."""
    v = arr[i]
    return v.as_py() if v.is_valid else ""


def _is_nan_text(arr: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(arr, r"(?i)^\s*[+-]?nan\s*$"), False).to_numpy(
        zero_copy_only=False)


def _parse_floats(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Slow path for a block holding a non-numeric weight: (values, bad mask)."""
    out = np.zeros(len(arr), np.float64)
    bad = np.zeros(len(arr), bool)
    for i, v in enumerate(arr.to_pylist()):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            bad[i] = True
    return out, bad
