"""Dropout whose CPU mask comes from a counter-based hash, fused with the scaling.

``dropout(x, p, training)`` is ``F.dropout``'s function: each element is zeroed with
probability ``p`` and the others are scaled by ``1 / (1 - p)``. Where torch draws the mask
with a serial Bernoulli generator, this version keeps element ``i`` of the flattened tensor
when ``splitmix64(key + i * golden) >> 32 >= round(p * 2**32)``, computed and applied in one
parallel numba pass; only the 64-bit ``key`` (one draw from torch's default generator, so
``torch.manual_seed`` fixes the masks) is kept for the backward pass, which recomputes the
mask. The result does not depend on the thread count; the keep probability is within
``2**-33`` of ``1 - p``. CUDA tensors, dtypes other than float32/float64, and ``p`` of 0 or
1 go to ``F.dropout``. A CSR tensor (:mod:`graphsys.gnn.sparse_input`) keeps its structure:
entry ``(r, c)`` gets the draw of flat index ``r * F + c``; no gradient flows back to it.

:func:`feature_dropout` is a minibatch's input dropout, applied where its feature rows are
gathered (a :class:`~graphsys.gnn.NodeLoader` worker) in the same pass. One hash decides two
neighbouring columns: with ``P = ceil(F / 2)`` and ``z = splitmix64(key + (ids[r] * P + c //
2) * golden)``, element ``(r, c)`` is kept when its half of ``z`` (the lower 32 bits for an
even ``c``, the upper for an odd one) is ``>= round(p * 2**32)``: a node's mask depends on
the key and its id alone, not on its batch.

:func:`relu_dropout` is ``dropout(relu(x))`` in one pass, with the same pairing over the
flattened index; its backward needs no mask: the gradient is ``grad / (1 - p)`` where the
output is positive and 0 elsewhere.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit, prange

from graphsys.device import csr_tensor
from graphsys.errors import GraphsysError
from graphsys.gnn.sparse_input import is_sparse
from graphsys.sampling._kernels import splitmix64
from graphsys.sampling.features import checked_ids, feature_rows
from graphsys.storage.partitioned_rows import PartitionedRows

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S32 = np.uint64(32)
_CHUNK = 1 << 14


@njit(parallel=True, cache=True)
def _keep_scaled(x, out, key, threshold, scale):
    """``out[i] = x[i] * scale`` where element ``i`` is kept, else 0; 1-D float arrays."""
    n = x.shape[0]
    base = np.uint64(key)
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            keep = (splitmix64(base + np.uint64(i) * _GOLDEN) >> _S32) >= threshold
            out[i] = x[i] * (scale * keep)      # branch-free: the mask is a coin flip


@njit(parallel=True, cache=True)
def _keep_scaled_csr(crow, col, values, out, width, key, threshold, scale):
    """:func:`_keep_scaled` over a CSR matrix's stored ``values`` (row pointers ``crow``,
    columns ``col``), each drawn at its flat index ``row * width + col``."""
    base = np.uint64(key)
    w = np.uint64(width)
    for r in prange(crow.shape[0] - 1):
        for k in range(crow[r], crow[r + 1]):
            i = np.uint64(r) * w + np.uint64(col[k])
            keep = (splitmix64(base + i * _GOLDEN) >> _S32) >= threshold
            out[k] = values[k] * (scale * keep)


_LOW32 = np.uint64(0xFFFFFFFF)


#: 0 where a uint64 viewed as two uint32 holds its lower half first (little-endian), else 1
_HALF_FLIP = 0 if sys.byteorder == "little" else 1


@njit(cache=True, nogil=True)
def _rows_keep_scaled(table, rows, ids, out, key, threshold, scale):
    """``out[r, c] = table[rows[r], c] * scale`` (``table[r, c]`` when ``rows`` is empty)
    where element ``(r, c)`` is kept, decided by one half of the draw of column pair
    ``c // 2`` of node ``ids[r]`` (see the module docstring), else 0; on this thread,
    GIL-free (a loader's worker runs it beside the training step). ``scale`` has the
    table's float type, so the product stays in it.

    A row's draws are written to a uint64 buffer first, a loop with no other work that
    the compiler vectorises, and that buffer is read as uint32 halves for the columns:
    splitting each draw inside the column loop keeps both loops scalar."""
    width = table.shape[1]
    pairs = (width + 1) // 2
    step = np.uint64(pairs) * _GOLDEN
    gathered = rows.shape[0] > 0
    draws = np.empty(pairs, np.uint64)
    halves = draws.view(np.uint32)
    zero = scale * 0
    for r in range(ids.shape[0]):
        src = rows[r] if gathered else r
        first = np.uint64(key) + np.uint64(ids[r]) * step
        for j in range(pairs):
            draws[j] = splitmix64(first + np.uint64(j) * _GOLDEN)
        for c in range(width):
            out[r, c] = table[src, c] * (scale if halves[c ^ _HALF_FLIP] >= threshold
                                         else zero)


@njit(parallel=True, cache=True)
def _relu_keep_scaled(x, out, key, threshold, scale):
    """``out[i] = max(x[i], 0) * scale`` where element ``i`` is kept (one half of the draw
    of pair ``i // 2``: the lower for an even ``i``), else 0; 1-D float arrays."""
    n = x.shape[0]
    base = np.uint64(key)
    for c in prange((n + _CHUNK - 1) // _CHUNK):      # _CHUNK is even: pairs stay whole
        for j in range(c * (_CHUNK // 2), min((n + 1) // 2, (c + 1) * (_CHUNK // 2))):
            z = splitmix64(base + np.uint64(j) * _GOLDEN)
            i = 2 * j
            out[i] = max(x[i], 0.0) * (scale * ((z & _LOW32) >= threshold))
            if i + 1 < n:
                out[i + 1] = max(x[i + 1], 0.0) * (scale * ((z >> _S32) >= threshold))


@njit(parallel=True, cache=True)
def _positive_scaled(out, grad, res, scale):
    """``res[i] = grad[i] * scale`` where ``out[i] > 0``, else 0; 1-D float arrays."""
    n = out.shape[0]
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            res[i] = grad[i] * (scale * (out[i] > 0))     # branch-free: a coin flip


def feature_dropout(column, ids, p: float, key: int, out: np.ndarray | None = None
                    ) -> torch.Tensor:
    """Rows ``ids`` of the feature table ``column`` with dropout ``p`` applied, in one pass.

    ``column``: an (N, F) float16/float32 NumPy array or
    :class:`~graphsys.storage.partitioned_rows.PartitionedRows` (read as
    :func:`~graphsys.sampling.features.feature_rows` reads them), a float tensor, or a row
    source whose ``rows(ids)`` returns the float rows (a mapped column normalised as it is
    gathered); ``ids``: int (B,) node ids; ``key``: a 64-bit integer (one draw from torch's
    generator per batch). Element ``(r, c)`` is zeroed with probability ``p`` by one half of
    the draw of node ``ids[r]``'s column pair ``c // 2`` (see the module docstring) and
    otherwise scaled by ``1 / (1 - p)``.
    Returns (B, F), float32 for an array (a tensor keeps its dtype and device), with no
    gradient. The rows are copied and masked on the calling thread, GIL-free for a float32
    array. ``out``: a C-contiguous float32 (B, F) array the rows are written to (a loader's
    reused buffer) for a float32 array or PartitionedRows column, or a row source with
    ``rows_into(ids, out)``; else the rows go to a new one."""
    if not 0 <= p <= 1:
        raise GraphsysError(f"dropout probability must be in [0, 1], got {p}")
    if isinstance(column, np.ndarray):
        idx = checked_ids(column, ids)
        if p == 0 or p >= 1 or column.dtype != np.float32:
            x = feature_rows(column, idx, out if p == 0 else None)
        else:                                   # gather and mask in one pass
            x = torch.from_numpy(out if out is not None else
                                 np.empty((len(idx), column.shape[1]), np.float32))
            if tuple(x.shape) != (len(idx), column.shape[1]) or not x.is_contiguous() \
                    or x.dtype != torch.float32:
                raise GraphsysError(f"feature dropout: out must be C-contiguous float32 "
                                    f"{(len(idx), column.shape[1])}, got {tuple(x.shape)}")
            _mask(column, idx, idx, x, p, key)
            return x
    elif isinstance(column, PartitionedRows):   # a node table's mapped blocks
        idx = checked_ids(column, ids)
        x = feature_rows(column, idx, out)
    elif hasattr(column, "rows"):               # a row source: gathers its own rows
        x = (column.rows_into(torch.as_tensor(ids), out)
             if out is not None and hasattr(column, "rows_into")
             else column.rows(torch.as_tensor(ids)))
        idx = np.ascontiguousarray(torch.as_tensor(ids).cpu().numpy(), dtype=np.int64)
    else:
        x = column.detach().index_select(0, torch.as_tensor(ids).to(column.device))
        idx = np.ascontiguousarray(torch.as_tensor(ids).cpu().numpy(), dtype=np.int64)
    if p == 0:
        return x
    if p >= 1:
        return torch.zeros_like(x)
    work = x.cpu()                          # a fresh gather: masked in place
    work = (work if work.dtype in (torch.float32, torch.float64) else work.float()).contiguous()
    _mask(work.numpy(), np.empty(0, np.int64), idx, work, p, key)
    return work.to(x.device, x.dtype)


def _mask(table: np.ndarray, rows: np.ndarray, ids: np.ndarray, out: torch.Tensor, p: float,
          key: int) -> None:
    _rows_keep_scaled(table, rows, ids, out.numpy(), np.uint64(key & (2 ** 64 - 1)),
                      np.uint32(min(round(p * 2.0 ** 32), 2 ** 32 - 1)),
                      table.dtype.type(1.0 / (1.0 - p)))


def _apply_csr(x: torch.Tensor, p: float, key: int) -> torch.Tensor:
    crow, col, values = x.crow_indices(), x.col_indices(), x.values()
    out = torch.empty_like(values)
    _keep_scaled_csr(crow.numpy(), col.numpy(), values.numpy(), out.numpy(), x.shape[1], key,
                     np.uint64(round(p * 2.0 ** 32)), 1.0 / (1.0 - p))
    return csr_tensor(crow, col, out, tuple(x.shape))


def _apply(x: torch.Tensor, p: float, key: int) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    _keep_scaled(x.view(-1).numpy(), out.view(-1).numpy(), key,
                 np.uint64(round(p * 2.0 ** 32)), 1.0 / (1.0 - p))
    return out


class _HashDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float, key: int) -> torch.Tensor:
        ctx.p, ctx.key = p, key
        return _apply(x.detach(), p, key)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return _apply(grad.detach(), ctx.p, ctx.key), None, None


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``x`` with each element zeroed with probability ``p`` and the rest scaled by
    ``1 / (1 - p)`` when ``training``; ``x`` itself otherwise. Same shape and dtype."""
    if not training or p == 0:
        return x
    sparse = is_sparse(x)
    if sparse and p >= 1:
        return csr_tensor(x.crow_indices(), x.col_indices(), torch.zeros_like(x.values()),
                          tuple(x.shape))
    if not sparse and (x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64)
                       or p >= 1):
        return F.dropout(x, p, True)
    key = int(torch.empty((), dtype=torch.int64).random_())
    return _apply_csr(x, p, key) if sparse else _HashDropout.apply(x, p, key)


class _ReluDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float, key: int) -> torch.Tensor:
        x = x.detach().contiguous()
        out = torch.empty_like(x)
        _relu_keep_scaled(x.view(-1).numpy(), out.view(-1).numpy(), key,
                          np.uint64(round(p * 2.0 ** 32)), 1.0 / (1.0 - p))
        ctx.p = p
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (out,) = ctx.saved_tensors
        grad = grad.detach().contiguous()
        res = torch.empty_like(out)
        _positive_scaled(out.view(-1).numpy(), grad.view(-1).numpy(), res.view(-1).numpy(),
                         1.0 / (1.0 - ctx.p))
        return res, None, None


def relu_dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``dropout(relu(x), p, training)`` in one pass (see the module docstring): each
    element of ``relu(x)`` zeroed with probability ``p``, the rest scaled by
    ``1 / (1 - p)``; ``relu(x)`` when not ``training`` or ``p`` is 0. Same shape and dtype;
    CUDA tensors, dtypes other than float32/float64 and ``p == 1`` go to torch's
    functions."""
    if not training or p == 0:
        return F.relu(x)
    if x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64) or p >= 1:
        return F.dropout(F.relu(x), p, True)
    key = np.uint64(int(torch.empty((), dtype=torch.int64).random_()) & (2 ** 64 - 1))
    return _ReluDropout.apply(x, p, key)


class HashDropout(torch.nn.Dropout):
    """:class:`torch.nn.Dropout` by :func:`dropout` (the mask hashed from one draw of
    torch's generator, the same distribution; its parallel pass on the CPU)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)
