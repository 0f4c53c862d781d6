"""A node column held as row blocks, one per node partition: features of a node table,
gathered from the partitions' mapped files without joining them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphsys.errors import GraphsysError


class PartitionedRows:
    """A features node column held as read-only row blocks, one per stored record batch
    of each node partition file (:mod:`graphsys.storage.node_files`), in type-local id
    order: block ``k`` holds rows ``offsets[k]..offsets[k+1]-1``. Returned by
    :meth:`Graph.mapped_features <graphsys.storage.graph.Graph.mapped_features>` for a
    column of a node table of several partitions; each block is a view of its mapped
    file, so the column is never copied whole.
    :func:`~graphsys.sampling.features.feature_rows` gathers rows from it as from an array
    (each id routed to its block); ``np.asarray`` joins the blocks (a copy).

    Parameters
    ----------
    blocks : list of numpy.ndarray
        Row blocks, each (n_k, dim) of one dtype, float16 or float32.

    Examples
    --------
    >>> import numpy as np
    >>> from graphsys.storage.partitioned_rows import PartitionedRows
    >>> rows = PartitionedRows([np.ones((2, 3), np.float32), np.zeros((1, 3), np.float32)])
    >>> rows.shape, rows.offsets.tolist()
    ((3, 3), [0, 2, 3])
    >>> rows[1:3].tolist()
    [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    """

    def __init__(self, blocks: list[np.ndarray]):
        if not blocks:
            raise GraphsysError("partitioned rows need at least one block")
        first = blocks[0]
        if any(b.ndim != 2 or b.dtype != first.dtype or b.shape[1] != first.shape[1]
               or b.dtype not in (np.float16, np.float32) for b in blocks):
            raise GraphsysError("partitioned rows need (n, dim) float16/float32 blocks of "
                                "one dtype and width")
        self.blocks = list(blocks)
        self.offsets = np.zeros(len(blocks) + 1, np.int64)
        np.cumsum([len(b) for b in blocks], out=self.offsets[1:])
        self.dtype = first.dtype
        self.ndim = 2
        self.shape = (int(self.offsets[-1]), int(first.shape[1]))

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: slice) -> np.ndarray:
        """Rows of a contiguous slice (step 1), joined across blocks (a copy when it spans
        two)."""
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise GraphsysError("partitioned rows take a contiguous slice; gather rows with "
                                "graphsys.sampling.features.feature_rows")
        start, stop, _ = key.indices(len(self))
        parts = [b[max(start - lo, 0):max(stop - lo, 0)]
                 for b, lo in zip(self.blocks, self.offsets[:-1].tolist())
                 if lo < stop and lo + len(b) > start]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros((0, self.shape[1]), self.dtype)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = np.concatenate(self.blocks)
        return out if dtype is None else out.astype(dtype, copy=False)

    def gather(self, ids: np.ndarray, out: np.ndarray,
               gather: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
               gather_at: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                                   np.ndarray]) -> np.ndarray:
        """``out[k] = self[ids[k]]`` for checked int64 ``ids`` in ``[0, N)``, once per
        block that holds some (each block viewed as ``out``'s dtype: float16 rows move as
        uint16): ``gather(block, local_ids, rows)`` into a contiguous run of ``out`` where
        the ids come in block order (sorted ids), else ``gather_at(block, local_ids, out,
        positions)`` into their rows of ``out``; both GIL-free kernels."""
        block_of = np.searchsorted(self.offsets, ids, side="right") - 1
        in_order = bool(np.all(block_of[1:] >= block_of[:-1]))
        order = None if in_order else np.argsort(block_of, kind="stable")
        bounds = np.searchsorted(block_of if in_order else block_of[order],
                                 np.arange(len(self.blocks) + 1))
        for k, block in enumerate(self.blocks):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            if lo == hi:
                continue
            table = block.view(out.dtype)
            if order is None:       # a run of out's rows
                gather(table, ids[lo:hi] - self.offsets[k], out[lo:hi])
            else:
                sel = order[lo:hi]
                gather_at(table, ids[sel] - self.offsets[k], out, sel)
        return out
