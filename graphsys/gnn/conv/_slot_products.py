"""A temporal attention layer's attention in one numba pass a destination (CPU, float32),
with its backward in one more:

* :func:`attend`: a layer whose neighbours share one state (TGAT's first layer,
  :meth:`~graphsys.gnn.conv.temporal_attention.TemporalAttentionConv._shared_source`),
  over its constant padded edge input ``E`` (Q, k, e), which takes no gradient;
* :func:`attend_slots`: a layer over per-slot keys and values in row-major order.

Each pass reads a destination's slots once, contiguously, one destination per thread, and
skips a slot whose weight (or gradient) is zero (an unused one); the sums are reassociated
(``fastmath`` without ``nnan``/``ninf``, so a non-finite value still reaches the loss).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import get_num_threads, njit, prange

from graphsys.sampling._kernels import splitmix64

#: reassociated sums (they vectorise); not ``nnan``/``ninf``: a NaN or an infinity must
#: reach the loss and its checks as it is, and a slot's zero test must see it
_FAST = {"reassoc", "contract", "arcp", "nsz"}


def usable(edge: torch.Tensor, *others: torch.Tensor) -> bool:
    """Whether the numba passes apply: CPU float32 tensors, ``edge`` needing no
    gradient."""
    return (edge.device.type == "cpu" and not edge.requires_grad
            and all(t.dtype == torch.float32 for t in (edge, *others)))


# --- the whole attention of a shared-state layer in one pass per destination -------------
#
# ``attend`` (below): scores ``(E[q, j] . C[:, h] + base[h]) / sqrt(d)`` over the used
# slots, their softmax, the attention dropout (``graphsys.gnn.dropout``'s hashed mask of the
# flattened (Q, k, h) weights, from one key), and both sums ``S[q, h] = sum_j a E[q, j]``,
# ``A[q, h] = sum_j a``: what torch's ``matmul``, ``masked_fill``, ``softmax``,
# ``HashDropout``, ``masked_fill`` and ``matmul`` compute one after the other, with
# each destination's (k, e) block of ``E`` read once while it is in cache, not once per
# pass; and in the backward, the two products' gradients from one more read.

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S32 = np.uint64(32)


@njit(inline="always", cache=True)
def _kept(i, key, threshold, scale):
    """The dropout factor of flat element ``i``: ``scale`` where kept, else 0."""
    return scale * ((splitmix64(key + np.uint64(i) * _GOLDEN) >> _S32) >= threshold)


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
    return _Attend.apply(edge, mask, c, base, sqrt_d, _dropout_draw(p, training))


# --- a layer's attention over per-slot keys and values, one pass per destination ---------
#
# ``attend_slots`` (below): for TGAT's layers past the first, whose used slots (in
# row-major order) each have their own source row: the keys ``K + E`` and values ``V + E``
# of the used slots (``KV`` (U, 2 h d) and ``E`` (U, h d)), each destination's scores with
# its query, the softmax over its ``k`` slots (an unused one at the lowest float, a row
# without a used slot uniform, as torch's softmax of the padded layout), the attention
# dropout's hashed mask and the weighted sum of the values: what the layer's gather,
# products, two padded scatters, softmax, dropout and sum compute one after the other.


@njit(parallel=True, cache=True, fastmath=_FAST)
def _attend_slots(kv, e, q, mask, starts, sqrt_d, key, threshold, scale, train, alpha, out):
    """``alpha`` (Q, k, h): the softmax weights before dropout; ``out`` (Q, h d): the kept
    weights' sums of the values."""
    k, heads = mask.shape[1], alpha.shape[2]
    d = q.shape[1] // heads
    hd = heads * d
    lowest = np.finfo(np.float32).min
    for r in prange(mask.shape[0]):
        for h in range(heads):
            o = h * d
            u = starts[r]
            top = lowest
            for j in range(k):
                v = lowest
                if mask[r, j]:
                    acc = np.float32(0.0)
                    for c in range(d):
                        acc += q[r, o + c] * (kv[u, o + c] + e[u, o + c])
                    v = acc / sqrt_d
                    u += 1
                alpha[r, j, h] = v
                top = max(top, v)
            total = np.float32(0.0)
            for j in range(k):
                v = np.exp(alpha[r, j, h] - top)
                alpha[r, j, h] = v
                total += v
            for c in range(d):
                out[r, o + c] = 0
            u = starts[r]
            for j in range(k):
                a = alpha[r, j, h] / total
                alpha[r, j, h] = a
                if mask[r, j]:
                    if train:
                        a = np.float32(a * _kept((r * k + j) * heads + h, key, threshold,
                                                 scale))
                    if a != 0:
                        for c in range(d):
                            out[r, o + c] += a * (kv[u, hd + o + c] + e[u, o + c])
                    u += 1


@njit(parallel=True, cache=True, fastmath=_FAST)
def _attend_slots_grad(kv, e, q, mask, starts, alpha, g, sqrt_d, key, threshold, scale,
                       train, g_kv, g_e, g_q):
    """The gradients of :func:`_attend_slots`'s ``(KV, E, q)`` from that of ``out``;
    ``g_q`` zeros on entry (``g_kv``, ``g_e``: every used slot's row is written)."""
    rows, k = mask.shape
    heads = alpha.shape[2]
    d = q.shape[1] // heads
    hd = heads * d
    for r in prange(rows):
        ga = np.empty(k, np.float32)
        for h in range(heads):
            o = h * d
            u = starts[r]
            dot = np.float32(0.0)
            for j in range(k):
                acc = np.float32(0.0)
                if mask[r, j]:
                    for c in range(d):
                        acc += g[r, o + c] * (kv[u, hd + o + c] + e[u, o + c])
                    if train:
                        acc = np.float32(acc * _kept((r * k + j) * heads + h, key,
                                                     threshold, scale))
                    u += 1
                ga[j] = acc
                dot += alpha[r, j, h] * acc
            u = starts[r]
            for j in range(k):
                if mask[r, j]:
                    a = alpha[r, j, h]
                    gs = a * (ga[j] - dot) / sqrt_d
                    if train:
                        a = np.float32(a * _kept((r * k + j) * heads + h, key, threshold,
                                                 scale))
                    for c in range(d):
                        gk = gs * q[r, o + c]
                        gv = a * g[r, o + c]
                        g_q[r, o + c] += gs * (kv[u, o + c] + e[u, o + c])
                        g_kv[u, o + c] = gk
                        g_kv[u, hd + o + c] = gv
                        g_e[u, o + c] = gk + gv
                    u += 1


class _AttendSlots(torch.autograd.Function):
    @staticmethod
    def forward(ctx, kv, e, q, mask, sqrt_d, drop):
        kv_, e_, q_ = (t.detach().contiguous() for t in (kv, e, q))
        m = mask.contiguous()
        counts = m.sum(1)
        starts = torch.cumsum(counts, 0) - counts
        heads = drop[4]
        train, key, threshold, scale = drop[:4]
        alpha = torch.empty(m.shape[0], m.shape[1], heads)
        out = torch.empty(q_.shape)
        _attend_slots(kv_.numpy(), e_.numpy(), q_.numpy(), m.numpy(), starts.numpy(),
                      np.float32(sqrt_d), key, threshold, scale, train, alpha.numpy(),
                      out.numpy())
        ctx.save_for_backward(kv_, e_, q_, m, starts, alpha)
        ctx.rest = (sqrt_d, drop)
        return out

    @staticmethod
    def backward(ctx, g):
        kv, e, q, m, starts, alpha = ctx.saved_tensors
        sqrt_d, (train, key, threshold, scale, _) = ctx.rest
        g_kv, g_e, g_q = torch.empty(kv.shape), torch.empty(e.shape), torch.zeros(q.shape)
        _attend_slots_grad(kv.numpy(), e.numpy(), q.numpy(), m.numpy(), starts.numpy(),
                           alpha.numpy(), g.detach().contiguous().numpy(), np.float32(sqrt_d),
                           key, threshold, scale, train, g_kv.numpy(), g_e.numpy(),
                           g_q.numpy())
        return g_kv, g_e, g_q, None, None, None


def _dropout_draw(p: float, training: bool) -> tuple:
    """``(train, key, threshold, scale)`` of :func:`graphsys.gnn.dropout.dropout`'s
    hashed mask: one draw of torch's generator when it applies, as that function draws."""
    if training and p > 0:
        key = np.uint64(int(torch.empty((), dtype=torch.int64).random_()) & (2 ** 64 - 1))
        return True, key, np.uint64(round(p * 2.0 ** 32)), 1.0 / (1.0 - p)
    return False, np.uint64(0), np.uint64(0), 1.0


def attend_slots(kv: torch.Tensor, e: torch.Tensor, q: torch.Tensor, mask: torch.Tensor,
                 heads: int, sqrt_d: float, p: float = 0.0, training: bool = False
                 ) -> torch.Tensor:
    """A layer's attention over per-slot keys and values (see the comment above
    :func:`_attend_slots`): ``kv`` (U, 2 h d) the used slots' key and value projections
    in row-major order, ``e`` (U, h d) their edge terms, ``q`` (Q, h d) the queries,
    ``mask`` (Q, k) the used slots; returns (Q, h d), each head's kept weights' sum of
    its values, with dropout ``p`` on the weights when ``training`` (the mask of
    :func:`graphsys.gnn.dropout.dropout` on the (Q, k, h) weights); the gradient to
    ``kv``, ``e`` and ``q``."""
    return _AttendSlots.apply(kv, e, q, mask, sqrt_d, (*_dropout_draw(p, training), heads))
