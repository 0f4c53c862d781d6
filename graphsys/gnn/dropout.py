"""Dropout whose CPU mask comes from a counter-based hash, fused with the scaling.

``dropout(x, p, training)`` is ``F.dropout``'s function: each element is zeroed with
probability ``p`` and the others are scaled by ``1 / (1 - p)``. On CPU, torch draws the mask
with a serial Bernoulli generator, which on raw bag-of-words features (Cora's 2,708 x 1,433)
costs more than the first layer's matmul. This version keeps element ``i`` of the flattened
tensor when ``splitmix64(key + i * golden) >> 32 >= round(p * 2**32)``, computed and
applied in one parallel numba pass (see docs/benchmarks.md for the timings). Only
the 64-bit ``key`` is stored for the backward pass, which recomputes the mask, so no mask
tensor is kept. ``key`` is one draw from torch's default generator, so ``torch.manual_seed``
fixes the masks, and the result does not depend on the thread count.

The keep probability is ``1 - round(p * 2**32) / 2**32``: within ``2**-33`` of ``1 - p``.
CUDA tensors, dtypes other than float32/float64, and ``p`` of 0 or 1 go to ``F.dropout``.
A CSR tensor (sparse raw features, :mod:`graphsys.gnn.sparse_input`) keeps its structure:
each stored entry ``(r, c)`` gets the draw of flat index ``r * F + c``, so it is dropped
exactly where the dense tensor's entry would be; no gradient flows back to it.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit, prange

from graphsys.gnn.sparse_input import csr_tensor, is_sparse
from graphsys.sampling._kernels import splitmix64

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
