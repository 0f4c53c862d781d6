"""The node features of a minibatch, read from a (memory-mapped) feature column.

:func:`feature_rows` is what a minibatch producer calls on the rows its blocks need, e.g.
``feature_rows(graph.mapped_node_column("feat"), blocks[0].src_nodes)``: with the column
mapped (:meth:`Graph.mapped_node_column
<graphsys.storage.graph.Graph.mapped_node_column>`), a 32 M x 64 float16 table stays in
the page cache and a batch reads only its rows.
"""

from __future__ import annotations

import numpy as np
import torch

from graphsys.errors import GraphsysError
from graphsys.storage.kernels import gather_rows, gather_rows_at
from graphsys.storage.partitioned_rows import PartitionedRows


def checked_ids(column: np.ndarray | PartitionedRows, ids: np.ndarray | torch.Tensor) -> np.ndarray:
    """``ids`` as contiguous int64 rows of ``column``, an (N, d) float16/float32 array;
    :class:`~graphsys.errors.GraphsysError` for another column, non-integer ids or an id
    outside ``[0, N)``."""
    if column.ndim != 2 or column.dtype not in (np.float16, np.float32):
        raise GraphsysError(f"feature rows need an (N, d) float16/float32 column, got "
                            f"{column.dtype} {tuple(column.shape)}")
    ids = np.asarray(ids.cpu().numpy() if torch.is_tensor(ids) else ids)
    if len(ids) and not np.issubdtype(ids.dtype, np.integer):
        raise GraphsysError(f"feature rows: ids must be integers, got {ids.dtype}")
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if len(ids) and (ids.min() < 0 or ids.max() >= len(column)):
        bad = int(ids.min() if ids.min() < 0 else ids.max())
        raise GraphsysError(f"feature rows: id {bad} outside the column's {len(column)} "
                            f"rows")
    return ids


def feature_rows(column: np.ndarray | PartitionedRows,
                 ids: np.ndarray | torch.Tensor, out: np.ndarray | None = None) -> torch.Tensor:
    """Rows ``ids`` (integers (B,) in ``[0, N)``) of a feature column (N, d) float16 or
    float32, as a float32 tensor (B, d). The rows are copied by one GIL-free numba pass in
    the stored dtype and float16 is widened by torch, so a producer thread holds the GIL
    for neither (NumPy's ``column[ids].astype(np.float32)`` holds it for the gather, which
    serialises a loader's worker threads; see docs/benchmarks.md). A
    :class:`~graphsys.storage.partitioned_rows.PartitionedRows` column (a node table's column,
    one mapped block per partition) is gathered block by block. An id outside the column
    raises :class:`~graphsys.errors.GraphsysError`. ``out``: a C-contiguous float32 array
    (B, d) to gather a float32 column into (a loader's reused buffer), else a new one."""
    ids = checked_ids(column, ids)
    if out is None or column.dtype != np.float32:
        out = np.empty((len(ids), column.shape[1]),
                       np.float32 if column.dtype == np.float32 else np.uint16)
    elif out.shape != (len(ids), column.shape[1]) or out.dtype != np.float32 \
            or not out.flags.c_contiguous:
        raise GraphsysError(f"feature rows: out must be C-contiguous float32 "
                            f"{(len(ids), column.shape[1])}, got {out.dtype} {out.shape}")
    if isinstance(column, PartitionedRows):
        column.gather(ids, out, gather_rows, gather_rows_at)
    else:
        gather_rows(column.view(out.dtype), ids, out)
    if column.dtype == np.float32:
        return torch.from_numpy(out)
    return torch.from_numpy(out).view(torch.float16).float()
