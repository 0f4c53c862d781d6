"""The two products of a temporal attention layer whose neighbours share one state (TGAT's
first layer, :meth:`~graphsys.gnn.conv.temporal_attention.TemporalAttentionConv.
_shared_source`) with its constant padded edge input ``E`` (Q, k, e), as numba passes
(CPU, float32) with their backward:

* :func:`edge_scores`: ``E @ C`` (Q, k, h) for a (e, h) matrix ``C``, and ``C``'s gradient
  ``sum_slots E^T g``;
* :func:`weighted_edges`: ``S[q, h] = sum_j alpha[q, j, h] E[q, j]`` (Q, h, e), and
  ``alpha``'s gradient ``g[q, h] . E[q, j]``.

torch runs the first as a product of output width ``h`` (2 heads) whose backward reads
``E`` transposed, and the second as ``Q`` batched (h, k) x (k, e) products; each pass here
reads every slot's row of ``E`` once, contiguously, one destination per thread, and skips
a slot whose weight (or gradient) is zero: an unused one; the sums are reassociated
(``fastmath`` without ``nnan``/``ninf``, so they vectorise and a non-finite value
still reaches the loss). ``E`` takes no gradient (it is
the edge features and a fixed time encoding).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import get_num_threads, njit, prange

#: reassociated sums (they vectorise); not ``nnan``/``ninf``: a NaN or an infinity must
#: reach the loss and its checks as it is, and a slot's zero test must see it
_FAST = {"reassoc", "contract", "arcp", "nsz"}


@njit(parallel=True, cache=True, fastmath=_FAST)
def _scores(edge, ct, out):
    """``out[r, h] = edge[r] . ct[h]``; ``edge`` (R, e), ``ct`` (h, e)."""
    heads, width = ct.shape
    for r in prange(edge.shape[0]):
        for h in range(heads):
            acc = np.float32(0.0)
            for c in range(width):
                acc += edge[r, c] * ct[h, c]
            out[r, h] = acc


@njit(parallel=True, cache=True, fastmath=_FAST)
def _scores_grad(edge, g, parts):
    """``parts[t, h] = sum over chunk t's rows r of g[r, h] * edge[r]``."""
    rows, width = edge.shape
    chunks, heads = parts.shape[0], parts.shape[1]
    step = (rows + chunks - 1) // chunks
    for t in prange(chunks):
        for r in range(t * step, min(rows, (t + 1) * step)):
            for h in range(heads):
                gv = g[r, h]
                if gv != 0:
                    for c in range(width):
                        parts[t, h, c] += gv * edge[r, c]


@njit(parallel=True, cache=True, fastmath=_FAST)
def _weighted(alpha, edge, out):
    """``out[q, h] = sum_j alpha[q, j, h] * edge[q, j]``; ``out`` zeros on entry."""
    k, heads, width = alpha.shape[1], alpha.shape[2], edge.shape[2]
    for q in prange(alpha.shape[0]):
        for j in range(k):
            for h in range(heads):
                a = alpha[q, j, h]
                if a != 0:
                    for c in range(width):
                        out[q, h, c] += a * edge[q, j, c]


@njit(parallel=True, cache=True, fastmath=_FAST)
def _weighted_grad(g, edge, alpha, out):
    """``out[q, j, h] = g[q, h] . edge[q, j]`` where ``alpha[q, j, h]`` is not zero (else
    0: a slot unused or dropped, whose weight's gradient is masked anyway)."""
    k, heads, width = edge.shape[1], g.shape[1], edge.shape[2]
    for q in prange(g.shape[0]):
        for j in range(k):
            for h in range(heads):
                acc = np.float32(0.0)
                if alpha[q, j, h] != 0:
                    for c in range(width):
                        acc += g[q, h, c] * edge[q, j, c]
                out[q, j, h] = acc


def usable(edge: torch.Tensor, *others: torch.Tensor) -> bool:
    """Whether the numba passes apply: CPU float32 tensors, ``edge`` needing no
    gradient."""
    return (edge.device.type == "cpu" and not edge.requires_grad
            and all(t.dtype == torch.float32 for t in (edge, *others)))


class _EdgeScores(torch.autograd.Function):
    @staticmethod
    def forward(ctx, edge: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        flat = edge.detach().reshape(-1, edge.shape[-1]).contiguous()
        out = torch.empty(flat.shape[0], c.shape[1])
        _scores(flat.numpy(), c.detach().t().contiguous().numpy(), out.numpy())
        ctx.save_for_backward(flat)
        return out.view(*edge.shape[:-1], c.shape[1])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (flat,) = ctx.saved_tensors
        g = grad.detach().reshape(flat.shape[0], -1).contiguous()
        parts = np.zeros((max(1, min(get_num_threads(), flat.shape[0])), g.shape[1],
                          flat.shape[1]), np.float32)
        _scores_grad(flat.numpy(), g.numpy(), parts)
        return None, torch.from_numpy(parts.sum(0)).t()


class _WeightedEdges(torch.autograd.Function):
    @staticmethod
    def forward(ctx, alpha: torch.Tensor, edge: torch.Tensor) -> torch.Tensor:
        a, e = alpha.detach().contiguous(), edge.detach().contiguous()
        out = torch.zeros(a.shape[0], a.shape[2], e.shape[2])
        _weighted(a.numpy(), e.numpy(), out.numpy())
        ctx.save_for_backward(a, e)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        a, e = ctx.saved_tensors
        out = torch.empty_like(a)
        _weighted_grad(grad.detach().contiguous().numpy(), e.numpy(), a.numpy(), out.numpy())
        return out, None


def edge_scores(edge: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``edge @ c``: (..., e) x (e, h) -> (..., h), the gradient to ``c`` alone."""
    return _EdgeScores.apply(edge, c)


def weighted_edges(alpha: torch.Tensor, edge: torch.Tensor) -> torch.Tensor:
    """``alpha.transpose(1, 2) @ edge``: (Q, k, h), (Q, k, e) -> (Q, h, e), the gradient to
    ``alpha`` alone (a zero weight's gradient is given as 0: see :func:`_weighted_grad`)."""
    return _WeightedEdges.apply(alpha, edge)
