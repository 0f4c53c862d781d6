"""Forward and backward of the ``dot`` comparator + ``softmax`` loss in closed form.

The trainer's batch step for this pair (PBG's usual choice for link prediction) skips
autograd for the scores and the loss: with logits ``z`` of a row and its positive at column
``c``, ``-log softmax(z)[c]`` has the gradient ``softmax(z) - onehot(c)``, and every score is a
dot product, so the gradients of the queries and candidates are three matmuls per block. One
``exp`` pass gives both the loss (``logsumexp``) and the softmax; the ``(B, 1 + N)`` logits
are one ``(B, U + k)`` matrix because the in-batch block already holds each row's positive
score on its diagonal.

Blocks of one side (``B`` queries ``q`` and their true candidates ``c``, float32 ``(B, d)``;
``U`` pool candidates ``(U, d)`` or none; in-batch chunks of ``k = min(num_batch_negs, B)``
rows):

* ``s1 = q @ pool.T`` ``(B, U)``;
* ``s2 = q_j @ c_j.T`` ``(B/k, k, k)`` for the ``B // k`` full chunks ``j`` (the positive on
  the diagonal, the other ``k - 1`` true candidates of the chunk as negatives);
* ``sr = q[nfull:] @ c[B - k:].T`` ``(rem, k)`` for the ``rem = B mod k`` last rows, against
  the last ``k`` true candidates (the positive at column ``k - rem + r``).

With ``all_negs`` a side is one block, :func:`one_vs_all`: ``s = q @ cands.T`` ``(B, n)``
against every candidate of the partition, the true one (column ``target[b]``) the target of
the full cross-entropy.

This is the same loss, negatives and masking as the autograd path
(:meth:`graphsys.embed.step.MinibatchStep._side_loss` with
:class:`~graphsys.embed.model.SoftmaxLoss`), to float32 rounding.

With the identity operator on both sides the tail side's in-batch block is the transpose of
the head side's (``q = x_lhs``, ``c = x_rhs`` on one side and the reverse on the other), so
:func:`both_sides` computes it once and back-propagates both sides' gradients through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

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


def side_scores(q: Tensor, c: Tensor, pool: Tensor | None, k: int
                ) -> tuple[Tensor | None, Tensor, Tensor | None]:
    """``(s1, s2, sr)`` of one side (see the module docstring)."""
    b, d = q.shape
    nfull = b // k * k
    s1 = None if pool is None else q @ pool.T
    s2 = torch.bmm(q[:nfull].view(-1, k, d), c[:nfull].view(-1, k, d).transpose(1, 2))
    sr = q[nfull:] @ c[b - k:].T if nfull < b else None
    return s1, s2, sr


def side_softmax(s1: Tensor | None, s2: Tensor, sr: Tensor | None,
                 weight: Tensor | None) -> SideGrads:
    """The softmax loss of one side's blocks and its gradients with respect to them.

    The positives are diagonals (of each chunk of ``s2``, and of ``sr`` at offset
    ``k - rem``), so they are read and corrected through strided views, with no indexing.
    """
    nchunk, k, _ = s2.shape
    nfull = nchunk * k
    inbatch = s2.reshape(nfull, k) if sr is None else torch.cat([s2.reshape(nfull, k), sr])
    u = 0 if s1 is None else s1.shape[1]
    logits = inbatch if s1 is None else torch.cat([s1, inbatch], dim=1)
    pos = _positives(logits[:, u:], nchunk, k)
    top = logits.amax(dim=1, keepdim=True)
    p = (logits - top).exp_()
    total = p.sum(dim=1, keepdim=True)
    pos_scores = torch.cat([diag.reshape(-1) for diag in pos])
    per_edge = top.squeeze(1) + total.log().squeeze(1) - pos_scores
    p.div_(total)
    for diag in _positives(p[:, u:], nchunk, k):
        diag.sub_(1.0)
    if weight is not None:
        per_edge = per_edge * weight
        p.mul_(weight.unsqueeze(1))
    gb = p[:, u:]
    return SideGrads(per_edge.sum(), None if s1 is None else p[:, :u],
                     gb[:nfull].view(nchunk, k, k), None if sr is None else gb[nfull:])


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


def side_backward(q: Tensor, c: Tensor, pool: Tensor | None, g: SideGrads, *,
                  skip_g2: bool = False) -> tuple[Tensor, Tensor, Tensor | None]:
    """``(dq, dc, dpool)`` from one side's score gradients (``skip_g2``: leave the full
    chunks' block out; the caller back-propagates it)."""
    b, d = q.shape
    nchunk, k, _ = g.g2.shape
    nfull = nchunk * k
    dq = torch.zeros_like(q) if g.g1 is None else g.g1 @ pool
    dc = torch.zeros_like(c)
    if not skip_g2:
        dq[:nfull].view(nchunk, k, d).baddbmm_(g.g2, c[:nfull].view(nchunk, k, d))
        dc[:nfull].view(nchunk, k, d).baddbmm_(g.g2.transpose(1, 2),
                                               q[:nfull].view(nchunk, k, d))
    if g.gr is not None:
        dq[nfull:].addmm_(g.gr, c[b - k:])
        dc[b - k:].addmm_(g.gr.T, q[nfull:])
    dpool = None if g.g1 is None else g.g1.T @ q
    return dq, dc, dpool


def both_sides(ql: Tensor, qr: Tensor, xl: Tensor, xr: Tensor, pool_l: Tensor | None,
               pool_r: Tensor | None, num_batch_negs: int, weight: Tensor | None,
               identity: bool) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor,
                                        Tensor | None, Tensor | None]:
    """Loss and gradients of a batch scored in both directions.

    ``ql = op_rhs(xl)`` (tail prediction: scored against ``xr`` and ``pool_r``) and ``qr =
    op_lhs(xr)`` (head prediction: against ``xl`` and ``pool_l``), all ``(B, d)`` float32;
    pools ``(U, d)`` or None; ``weight`` ``(B,)`` or None; ``identity``: ``ql is xl`` and
    ``qr is xr`` (the in-batch block is shared). ``B >= 2`` and ``num_batch_negs >= 1``.

    Returns ``(loss, dql, dqr, dxl, dxr, dpool_l, dpool_r)``: ``dxl`` / ``dxr`` the gradients
    through the candidate roles only (the caller adds the queries' through the operator).
    """
    k, nfull, _ = _chunks(len(ql), num_batch_negs)
    d = ql.shape[1]
    s1t, s2t, srt = side_scores(ql, xr, pool_r, k)
    if identity:
        s1h = None if pool_l is None else qr @ pool_l.T
        s2h = s2t.transpose(1, 2)
        srh = qr[nfull:] @ xl[len(ql) - k:].T if nfull < len(ql) else None
    else:
        s1h, s2h, srh = side_scores(qr, xl, pool_l, k)
    gt = side_softmax(s1t, s2t, srt, weight)
    gh = side_softmax(s1h, s2h, srh, weight)
    dql, dxr, dpool_r = side_backward(ql, xr, pool_r, gt, skip_g2=identity)
    dqr, dxl, dpool_l = side_backward(qr, xl, pool_l, gh, skip_g2=identity)
    if identity:  # d/d s2t of both sides: gt.g2 + gh.g2^T; ql = xl, qr = xr
        g2 = gt.g2 + gh.g2.transpose(1, 2)
        nchunk = len(g2)
        dql[:nfull].view(nchunk, k, d).baddbmm_(g2, xr[:nfull].view(nchunk, k, d))
        dqr[:nfull].view(nchunk, k, d).baddbmm_(g2.transpose(1, 2),
                                                xl[:nfull].view(nchunk, k, d))
    return gt.loss + gh.loss, dql, dqr, dxl, dxr, dpool_l, dpool_r


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
