"""One-column Arrow IPC files that memory-map with no copy: allocated full of zeros, then
filled in place through a writable map, so a column larger than memory is written without
ever being held in it.

The file is an ordinary Arrow IPC (Feather v2) file with one record batch and one non-null
column: a primitive type, or a fixed-size list of one (a ``(length, width)`` matrix such as
node features), so pyarrow, Polars and DuckDB read it as it is.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc

from graphsys.errors import FormatError
from graphsys.temp_files import temp_beside


def _arrow_type(dtype: np.dtype, width: int) -> pa.DataType:
    value = pa.from_numpy_dtype(dtype)
    return pa.list_(value, width) if width else value


def allocate_column(path: Path, name: str, dtype: np.dtype, length: int, width: int = 0
                    ) -> np.ndarray:
    """Write ``path`` holding column ``name`` of ``length`` zeros (``width`` > 0: rows of
    a fixed-size list of that many values) and return its values as a writable memory map,
    shape ``(length,)`` or ``(length, width)`` (an empty array when there are no values)."""
    dtype = np.dtype(dtype)
    values = length * max(width, 1)
    nbytes = values * dtype.itemsize
    zeros = temp_beside(path, ".zeros-")
    schema = pa.schema([pa.field(name, _arrow_type(dtype, width), nullable=False)])
    try:
        with open(zeros, "wb") as f:
            f.truncate(nbytes)  # sparse: reads as zeros, costs neither disk nor memory
        source = pa.memory_map(str(zeros)) if nbytes else None
        buf = source.read_buffer(nbytes) if source is not None else pa.py_buffer(b"")
        arr = pa.Array.from_buffers(pa.from_numpy_dtype(dtype), values, [None, buf])
        if width:
            arr = pa.FixedSizeListArray.from_arrays(arr, width)
        with paipc.new_file(str(path), schema) as writer:
            writer.write_batch(pa.RecordBatch.from_arrays([arr], schema=schema))
        del arr, buf
        if source is not None:
            source.close()
    finally:
        zeros.unlink(missing_ok=True)
    shape = (length, width) if width else (length,)
    if values == 0:
        return np.zeros(shape, dtype)
    return np.memmap(path, dtype=dtype, mode="r+", offset=data_offset(path), shape=shape)


def _values(column: pa.Array) -> pa.Array:
    return column.flatten() if pa.types.is_fixed_size_list(column.type) else column


def data_offset(path: Path) -> int:
    """Byte offset in ``path`` (a one-batch, one-column Arrow IPC file) of its values."""
    with pa.memory_map(str(path)) as m:
        values = _values(paipc.open_file(m).get_batch(0).column(0))
        m.seek(0)
        whole = m.read_buffer(m.size())
        return (values.buffers()[1].address - whole.address
                + values.offset * (values.type.bit_width // 8))


def map_column(path: Path | str, dtype: np.dtype, length: int, width: int = 0,
               what: str = "column", *, location=None, rel: str | None = None) -> np.ndarray:
    """Map a file written by :func:`allocate_column` read-only, checking its type and
    length: a zero-copy view of shape ``(length,)`` or ``(length, width)``. A file that does
    not match raises :class:`FormatError` naming it. With ``location`` (a
    :class:`~graphsys.storage.location.GraphLocation`) the file is ``rel`` under it: mapped
    when local, read into one heap buffer when remote (``path`` then only names it)."""
    dtype = np.dtype(dtype)
    try:
        source = location.open(rel) if location is not None else pa.memory_map(str(path))
        reader = paipc.open_file(source)
        if reader.num_record_batches != 1:
            raise FormatError(f"{path}: {what} must be one record batch, found "
                              f"{reader.num_record_batches}")
        column = reader.get_batch(0).column(0)
    except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
        raise FormatError(f"{path}: cannot read {what} ({exc})") from None
    expected = _arrow_type(dtype, width)
    if column.type != expected or column.null_count:
        raise FormatError(f"{path}: {what} has type {column.type}, expected {expected}")
    if len(column) != length:
        raise FormatError(f"{path}: {len(column)} entries, the {what} needs {length} "
                          f"(truncated or stale)")
    if length == 0:
        return np.zeros((0, width) if width else 0, dtype)
    values = _values(column).to_numpy(zero_copy_only=True)
    return values.reshape(length, width) if width else values
