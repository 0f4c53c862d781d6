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


# --- the whole attention of a shared-state layer in one pass per destination -------------
#
# ``attend`` (below): scores ``(E[q, j] . C[:, h] + base[h]) / sqrt(d)`` over the used
# slots, their softmax, the attention dropout (``graphsys.gnn.dropout``'s hashed mask of the
# flattened (Q, k, h) weights, from one key), and both sums ``S[q, h] = sum_j a E[q, j]``,
# ``A[q, h] = sum_j a``: what ``edge_scores``, ``masked_fill``, ``softmax``,
# ``HashDropout``, ``masked_fill`` and ``weighted_edges`` compute one after the other, with
# each destination's (k, e) block of ``E`` read once while it is in cache, not once per
# pass; and in the backward, the two products' gradients from one more read.

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S32 = np.uint64(32)


@njit(inline="always", cache=True)
def _mix(z):
    """SplitMix64's output function (:func:`graphsys.sampling._kernels.splitmix64`)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always", cache=True)
def _kept(i, key, threshold, scale):
    """The dropout factor of flat element ``i``: ``scale`` where kept, else 0."""
    return scale * ((_mix(key + np.uint64(i) * _GOLDEN) >> _S32) >= threshold)


@njit(parallel=True, cache=True, fastmath=_FAST)
def _attend(edge, mask, ct, base, sqrt_d, key, threshold, scale, train, alpha, s, a_sum):
    """``alpha`` (Q, k, h): the softmax weights before dropout (0 in an unused slot);
    ``s`` (Q, h, e), zeros on entry, and ``a_sum`` (Q, h): the sums of the kept weights."""
    k, heads, width = edge.shape[1], ct.shape[0], edge.shape[2]
    lowest = np.finfo(np.float32).min
    for q in prange(edge.shape[0]):
        for h in range(heads):
            top = lowest
            for j in range(k):
                if mask[q, j]:
                    acc = np.float32(0.0)
                    for c in range(width):
                        acc += edge[q, j, c] * ct[h, c]
                    v = (acc + base[h]) / sqrt_d
                    alpha[q, j, h] = v
                    top = max(top, v)
            total = np.float32(0.0)
            for j in range(k):
                if mask[q, j]:
                    v = np.exp(alpha[q, j, h] - top)
                    alpha[q, j, h] = v
                    total += v
                else:
                    alpha[q, j, h] = 0
            a_sum[q, h] = 0
            if total == 0:                  # no used slot: no attention term
                continue
            for j in range(k):
                if mask[q, j]:
                    v = alpha[q, j, h] / total
                    alpha[q, j, h] = v
                    if train:
                        v = np.float32(v * _kept((q * k + j) * heads + h, key, threshold,
                                                 scale))
                    if v != 0:
                        a_sum[q, h] += v
                        for c in range(width):
                            s[q, h, c] += v * edge[q, j, c]


@njit(parallel=True, cache=True, fastmath=_FAST)
def _attend_grad(edge, mask, alpha, g_s, g_sum, sqrt_d, key, threshold, scale, train,
                 parts_c, parts_b):
    """The gradients of :func:`_attend`'s ``(C, base)`` from those of ``(s, a_sum)``:
    chunk ``t`` of the destinations adds its share to ``parts_c[t]`` (h, e) and
    ``parts_b[t]`` (h,)."""
    rows, k, width = edge.shape
    chunks, heads = parts_c.shape[0], parts_c.shape[1]
    step = (rows + chunks - 1) // chunks
    for t in prange(chunks):
        ga = np.empty(k, np.float32)
        for q in range(t * step, min(rows, (t + 1) * step)):
            for h in range(heads):
                dot = np.float32(0.0)
                for j in range(k):
                    ga[j] = 0
                    if mask[q, j] and alpha[q, j, h] != 0:
                        acc = g_sum[q, h]
                        for c in range(width):
                            acc += g_s[q, h, c] * edge[q, j, c]
                        if train:
                            acc = np.float32(acc * _kept((q * k + j) * heads + h, key,
                                                         threshold, scale))
                        ga[j] = acc
                        dot += alpha[q, j, h] * acc
                for j in range(k):
                    a = alpha[q, j, h]
                    if a != 0:
                        gs = a * (ga[j] - dot) / sqrt_d
                        parts_b[t, h] += gs
                        for c in range(width):
                            parts_c[t, h, c] += gs * edge[q, j, c]


class _Attend(torch.autograd.Function):
    @staticmethod
    def forward(ctx, edge, mask, c, base, sqrt_d, drop):
        e = edge.detach().contiguous()
        q_n, k_n, width = e.shape
        heads = c.shape[1]
        m = mask.contiguous()
        train, key, threshold, scale = drop
        alpha = torch.empty(q_n, k_n, heads)
        s = torch.zeros(q_n, heads, width)
        a_sum = torch.empty(q_n, heads)
        _attend(e.numpy(), m.numpy(), c.detach().t().contiguous().numpy(),
                base.detach().contiguous().numpy(), np.float32(sqrt_d), key, threshold,
                scale, train, alpha.numpy(), s.numpy(), a_sum.numpy())
        ctx.save_for_backward(e, m, alpha)
        ctx.rest = (sqrt_d, drop)
        return s, a_sum

    @staticmethod
    def backward(ctx, g_s, g_sum):
        e, m, alpha = ctx.saved_tensors
        sqrt_d, (train, key, threshold, scale) = ctx.rest
        heads = alpha.shape[2]
        chunks = max(1, min(get_num_threads(), e.shape[0]))
        parts_c = np.zeros((chunks, heads, e.shape[2]), np.float32)
        parts_b = np.zeros((chunks, heads), np.float32)
        g_s = torch.zeros(e.shape[0], heads, e.shape[2]) if g_s is None else g_s
        g_sum = torch.zeros(e.shape[0], heads) if g_sum is None else g_sum
        _attend_grad(e.numpy(), m.numpy(), alpha.numpy(), g_s.detach().contiguous().numpy(),
                     g_sum.detach().contiguous().numpy(), np.float32(sqrt_d), key, threshold,
                     scale, train, parts_c, parts_b)
        return (None, None, torch.from_numpy(parts_c.sum(0)).t(),
                torch.from_numpy(parts_b.sum(0)), None, None)


def attend(edge: torch.Tensor, mask: torch.Tensor, c: torch.Tensor, base: torch.Tensor,
           sqrt_d: float, p: float = 0.0, training: bool = False
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """A shared-state layer's attention over a padded edge input ``edge`` (Q, k, e), used
    slots ``mask`` (Q, k), score weights ``c`` (e, h) and offsets ``base`` (h,), dropout
    ``p`` on the weights when ``training``: ``(S, A)``, ``S`` (Q, h, e) the kept weights'
    sums of the slots' edge rows and ``A`` (Q, h) of the kept weights, zeros for a row
    without a used slot (see the comment above :func:`_attend`); the gradient to ``c``
    and ``base``. The dropout mask is :func:`graphsys.gnn.dropout.dropout`'s for the
    (Q, k, h) weights, from one draw of torch's generator, as that function draws it."""
    train = bool(training and p > 0)
    if train:
        key = np.uint64(int(torch.empty((), dtype=torch.int64).random_()) & (2 ** 64 - 1))
        drop = (True, key, np.uint64(round(p * 2.0 ** 32)), 1.0 / (1.0 - p))
    else:
        drop = (False, np.uint64(0), np.uint64(0), 1.0)
    return _Attend.apply(edge, mask, c, base, sqrt_d, drop)
