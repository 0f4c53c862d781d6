"""Forward and backward of the ``dot`` comparator + ``softmax`` loss in closed form.

With logits ``z`` of a row and its positive at column ``c``, ``-log softmax(z)[c]`` has the
gradient ``softmax(z) - onehot(c)`` and every score is a dot product, so the batch step
skips autograd: one ``exp`` pass gives the loss and the softmax, and the gradients are
three matmuls per block. Blocks of one side (``B`` queries ``q`` and their true candidates
``c``, ``(B, d)``; ``U`` pool candidates; in-batch chunks of ``k = min(num_batch_negs, B)``):
``s1 = q @ pool.T`` ``(B, U)``; ``s2 = q_j @ c_j.T`` ``(B/k, k, k)`` per full chunk (the
positive on the diagonal); ``sr = q[nfull:] @ c[B - k:].T`` ``(rem, k)`` for the last
``rem = B mod k`` rows. With ``all_negs`` a side is one block, :func:`one_vs_all`.
Same loss, negatives and masking as the autograd path
(:meth:`graphsys.embed.step.MinibatchStep._side_loss`), to float32 rounding. With the
identity operator on both sides, :func:`both_sides` computes the shared in-batch block once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from graphsys.embed.kernels import softmax_side_grads

Tensor = torch.Tensor


@dataclass
class SideGrads:
    """``dL/dscores`` of one side: ``g1`` ``(B, U)`` or None, ``g2`` ``(B // k, k, k)``,
    ``gr`` ``(rem, k)`` or None; ``loss`` the weighted sum over the side's rows (0-d)."""

    loss: Tensor
    g1: Tensor | None
    g2: Tensor
    gr: Tensor | None


def _chunks(b: int, num_batch_negs: int) -> tuple[int, int, int]:
    """``(k, nfull, rem)``: chunk size, rows in full chunks, rows left over."""
    k = min(num_batch_negs, b)
    nfull = b // k * k
    return k, nfull, b - nfull


def pool_scores(q: Tensor, pool: Tensor, groups: int = 1) -> Tensor:
    """``q @ pool.T`` ``(B, U)``; with ``groups``, the ``B / groups`` rows of group ``g``
    against the ``U`` rows ``g`` of ``pool`` ``(groups * U, d)`` (one batched matmul)."""
    if groups == 1:
        return q @ pool.T
    d = q.shape[1]
    return torch.bmm(q.view(groups, -1, d), pool.view(groups, -1, d).transpose(1, 2)
                     ).view(len(q), -1)


def side_scores(q: Tensor, c: Tensor, pool: Tensor | None, k: int, groups: int = 1
                ) -> tuple[Tensor | None, Tensor, Tensor | None]:
    """``(s1, s2, sr)`` of one side (see the module docstring; ``groups``:
    :func:`pool_scores`)."""
    b, d = q.shape
    nfull = b // k * k
    s1 = None if pool is None else pool_scores(q, pool, groups)
    s2 = torch.bmm(q[:nfull].view(-1, k, d), c[:nfull].view(-1, k, d).transpose(1, 2))
    sr = q[nfull:] @ c[b - k:].T if nfull < b else None
    return s1, s2, sr


def side_softmax(s1: Tensor | None, s2: Tensor, sr: Tensor | None, weight: Tensor | None,
                 *, transposed: bool = False, g2: Tensor | None = None,
                 kernels: bool = True) -> SideGrads:
    """The softmax loss of one side's blocks and its gradients with respect to them.

    ``transposed``: the full chunks' rows are the columns of ``s2`` (``s2[j, :, r]``, the
    head side of an identity-operator batch reading the tail side's block). ``g2``: a block
    shaped as ``s2`` to add the full chunks' gradient to (laid out as ``s2``; the two sides
    of an identity batch share it), else a new one; :attr:`SideGrads.g2` is that block.

    On the CPU in float32 (and ``kernels``) this is one pass of the numba kernel
    :func:`graphsys.embed.kernels.softmax_side_grads`; elsewhere torch ops, where the
    positives are diagonals (of each chunk, and of ``sr`` at offset ``k - rem``), read and
    corrected through strided views, with no indexing.
    """
    if kernels and _fused(s1, s2, sr, weight):
        return _fused_side_softmax(s1, s2, sr, weight, transposed, g2)
    nchunk, k, _ = s2.shape
    nfull = nchunk * k
    blk = s2.transpose(1, 2) if transposed else s2
    inbatch = blk.reshape(nfull, k) if sr is None else torch.cat([blk.reshape(nfull, k), sr])
    u = 0 if s1 is None else s1.shape[1]
    logits = inbatch if s1 is None else torch.cat([s1, inbatch], dim=1)
    pos = _positives(logits[:, u:], nchunk, k)
    top = logits.amax(dim=1, keepdim=True)
    p = (logits - top).exp_()
    total = p.sum(dim=1, keepdim=True)
    per_edge = top.squeeze(1) + total.log().squeeze(1)
    if len(pos) == 1:  # the diagonals' view, unflattened (no copy of them)
        per_edge = (per_edge.view(pos[0].shape) - pos[0]).view(-1)
    else:
        per_edge = per_edge - torch.cat([diag.reshape(-1) for diag in pos])
    p.div_(total)
    for diag in _positives(p[:, u:], nchunk, k):
        diag.sub_(1.0)
    if weight is not None:
        per_edge = per_edge * weight
        p.mul_(weight.unsqueeze(1))
    gb = p[:, u:]
    gb2 = gb[:nfull].view(nchunk, k, k)
    if transposed:
        gb2 = gb2.transpose(1, 2)
    if g2 is not None:
        gb2 = g2.add_(gb2)
    return SideGrads(per_edge.sum(), None if s1 is None else p[:, :u], gb2,
                     None if sr is None else gb[nfull:])


def _fused(*blocks: Tensor | None) -> bool:
    """Whether :func:`side_softmax` takes the numba kernel: CPU float32 blocks."""
    return all(t is None or (t.device.type == "cpu" and t.dtype == torch.float32)
               for t in blocks)


def _fused_side_softmax(s1, s2, sr, weight, transposed, g2) -> SideGrads:
    b = len(s2) * s2.shape[1] + (0 if sr is None else len(sr))
    k = s2.shape[2]
    g1 = None if s1 is None else torch.empty_like(s1)
    gr = None if sr is None else torch.empty_like(sr)
    if g2 is None:
        g2 = torch.zeros_like(s2)
    empty = np.empty((0, 0), np.float32)
    loss = softmax_side_grads(
        empty.reshape(b, 0) if s1 is None else s1.contiguous().numpy(),
        s2.contiguous().numpy(), transposed,
        empty.reshape(0, k) if sr is None else sr.contiguous().numpy(),
        empty.reshape(0) if weight is None else weight.contiguous().numpy(),
        empty.reshape(b, 0) if g1 is None else g1.numpy(), g2.numpy(),
        empty.reshape(0, k) if gr is None else gr.numpy())
    return SideGrads(torch.tensor(loss, dtype=torch.float64), g1, g2, gr)


def _positives(inbatch: Tensor, nchunk: int, k: int) -> list[Tensor]:
    """Views of the positive entries of the in-batch columns ``(B, k)``: the diagonals of
    the full chunks ``(nchunk, k)`` and, for the ``rem`` last rows, the diagonal at offset
    ``k - rem`` ``(rem,)``; row order."""
    nfull = nchunk * k
    rem = len(inbatch) - nfull
    out = [torch.diagonal(inbatch[:nfull].view(nchunk, k, k), dim1=1, dim2=2)]
    if rem:
        out.append(torch.diagonal(inbatch[nfull:], offset=k - rem))
    return out


def side_backward(q: Tensor, c: Tensor, pool: Tensor | None, g: SideGrads, dq: Tensor,
                  dpool: Tensor | None, *, skip_g2: bool = False,
                  groups: int = 1) -> Tensor | None:
    """Back-propagate one side's score gradients: writes the queries' gradient into ``dq``
    ``(B, d)`` and the pool's into ``dpool`` ``(U, d)`` (None without a pool); returns the
    true candidates' gradient through their role as candidates ``(B, d)``, or None where
    it is zero (``skip_g2``, the full chunks' block left to the caller, and no remainder).
    ``groups``: the pool's blocks of :func:`pool_scores`."""
    b, d = q.shape
    nchunk, k, _ = g.g2.shape
    nfull = nchunk * k
    if g.g1 is None:
        dq.zero_()
    elif groups == 1:
        torch.mm(g.g1, pool, out=dq)
        torch.mm(g.g1.T, q, out=dpool)
    else:
        g1 = g.g1.view(groups, -1, g.g1.shape[1])
        torch.bmm(g1, pool.view(groups, -1, d), out=dq.view(groups, -1, d))
        torch.bmm(g1.transpose(1, 2), q.view(groups, -1, d), out=dpool.view(groups, -1, d))
    if skip_g2:
        dc = None if g.gr is None else torch.zeros_like(c)
    else:  # every row of dc written by the chunks' bmm (and the remainder's addmm)
        dc = torch.empty_like(c)
        if nfull < b:
            dc[nfull:].zero_()
        dq[:nfull].view(nchunk, k, d).baddbmm_(g.g2, c[:nfull].view(nchunk, k, d))
        torch.bmm(g.g2.transpose(1, 2), q[:nfull].view(nchunk, k, d),
                  out=dc[:nfull].view(nchunk, k, d))
    if g.gr is not None:
        dq[nfull:].addmm_(g.gr, c[b - k:])
        dc[b - k:].addmm_(g.gr.T, q[nfull:])
    return dc


def both_sides(ql: Tensor, qr: Tensor, xl: Tensor, xr: Tensor, pool_l: Tensor | None,
               pool_r: Tensor | None, num_batch_negs: int, weight: Tensor | None,
               identity: bool, *, kernels: bool = True, groups: int = 1
               ) -> tuple[Tensor, Tensor, Tensor, Tensor | None, Tensor | None]:
    """Loss and gradients of a batch scored in both directions.

    ``ql = op_rhs(xl)`` (tail prediction: scored against ``xr`` and ``pool_r``) and ``qr =
    op_lhs(xr)`` (head prediction: against ``xl`` and ``pool_l``), all ``(B, d)`` float32;
    pools ``(U, d)`` or None; ``weight`` ``(B,)`` or None; ``identity``: ``ql is xl`` and
    ``qr is xr`` (the in-batch block is shared). ``B >= 2`` and ``num_batch_negs >= 1``.

    Returns ``(loss, gl, gr, dxl, dxr)``: ``gl`` ``(B + U, d)`` holds ``dL/dql`` in its
    first ``B`` rows and ``dL/dpool_l`` in the others (no others without pools), ``gr``
    the same for ``qr`` and ``pool_r``: the rows of a batch's gathered ``(h, pool_l)`` /
    ``(t, pool_r)``. ``dxl`` / ``dxr`` ``(B, d)``: the gradients through the candidate
    roles, which the caller adds to the queries' once those went through the operator;
    None where zero (identity operators, ``B`` a multiple of the chunk). ``kernels``
    False: torch operators only, on the CPU too (:func:`side_softmax`). ``groups``: the
    rows are ``groups`` batches, each with ``U / groups`` pool rows of its own
    (:func:`pool_scores`; ``B / groups`` a multiple of the chunk).
    """
    b, d = ql.shape
    k, nfull, _ = _chunks(b, num_batch_negs)
    u = 0 if pool_l is None else len(pool_l)
    gl = torch.empty(b + u, d, dtype=ql.dtype, device=ql.device)
    gr = torch.empty(b + u, d, dtype=ql.dtype, device=ql.device)
    s1t, s2t, srt = side_scores(ql, xr, pool_r, k, groups)
    gt = side_softmax(s1t, s2t, srt, weight, kernels=kernels)
    if identity:  # the head side's block is s2t^T; d/d s2t of both sides lands in gt.g2
        s1h = None if pool_l is None else pool_scores(qr, pool_l, groups)
        srh = qr[nfull:] @ xl[b - k:].T if nfull < b else None
        gh = side_softmax(s1h, s2t, srh, weight, transposed=True, g2=gt.g2, kernels=kernels)
    else:
        gh = side_softmax(*side_scores(qr, xl, pool_l, k, groups), weight, kernels=kernels)
    dxr = side_backward(ql, xr, pool_r, gt, gl[:b], gr[b:] if u else None,
                        skip_g2=identity, groups=groups)
    dxl = side_backward(qr, xl, pool_l, gh, gr[:b], gl[b:] if u else None,
                        skip_g2=identity, groups=groups)
    if identity:  # ql = xl, qr = xr
        g2 = gt.g2
        nchunk = len(g2)
        gl[:nfull].view(nchunk, k, d).baddbmm_(g2, xr[:nfull].view(nchunk, k, d))
        gr[:nfull].view(nchunk, k, d).baddbmm_(g2.transpose(1, 2),
                                               xl[:nfull].view(nchunk, k, d))
    return gt.loss + gh.loss, gl, gr, dxl, dxr


def one_vs_all(q: Tensor, cands: Tensor, target: Tensor, weight: Tensor | None
               ) -> tuple[Tensor, Tensor, Tensor]:
    """1-vs-all softmax of one side: ``-log softmax(q @ cands.T)[b, target[b]]`` summed over
    the ``B`` rows (times ``weight`` ``(B,)`` when given).

    ``q`` ``(B, d)`` queries, ``cands`` ``(n, d)`` every candidate, ``target`` int64 ``(B,)``
    rows of ``cands``; all float32. Returns ``(loss, dq, dcands)``: the 0-d loss and its
    gradients ``(B, d)`` and ``(n, d)`` (the true candidates' through their ``cands`` rows).
    """
    s = q @ cands.T
    rows = torch.arange(len(q), device=q.device)
    pos = s[rows, target]
    top = s.amax(dim=1, keepdim=True)
    p = s.sub_(top).exp_()
    total = p.sum(dim=1, keepdim=True)
    per_edge = top.squeeze(1) + total.log().squeeze(1) - pos
    p.div_(total)
    p[rows, target] -= 1.0
    if weight is not None:
        per_edge = per_edge * weight
        p.mul_(weight.unsqueeze(1))
    return per_edge.sum(), p @ cands, p.T @ q
