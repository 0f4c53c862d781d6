"""One minibatch of embedding training: negatives, scores, loss, gradients and the updates.

A batch of ``B`` edges is scored in both directions against ``B x (num_uniform_negs +
num_batch_negs)`` negatives: one ``(B, d) @ (d, U)`` matmul against a pool of ``U`` sampled
candidates of the partition shared by the batch (uniform, or a ``degree_neg_fraction`` of
them proportional to training degree), plus one batched matmul over chunks of
``num_batch_negs`` edges whose other true tails (heads) serve as negatives. Gradients come
from autograd, or in closed form for dot / softmax batches (:mod:`.dot_softmax`).
Embeddings take row-wise Adagrad steps (:func:`graphsys.embed.kernels.row_adagrad` on the
CPU), relation parameters element-wise Adagrad (:class:`.relations.RelationModel`).

:class:`MinibatchStep` is the per-batch half of :class:`graphsys.embed.train.Trainer`, which
provides the state it reads: ``cfg``, ``graph``, ``edge_set``, ``device``, ``sizes``,
``pairs`` / ``pair_of_rel`` (entity-type pair of each relation), ``comparator``,
``loss_fn``, ``relmodel``, ``buffer`` (resident partitions) and ``frozen_below``.
"""

from __future__ import annotations

import numpy as np
import torch

from graphsys.embed import dot_softmax
from graphsys.embed.kernels import row_adagrad
from graphsys.embed.model import DotComparator, SoftmaxLoss, n3
from graphsys.trace import traced

ROW_ADAGRAD_EPS = 1e-10


class MinibatchStep:
    """Training of one batch of positive edges between two resident partitions."""

    _degrees: dict[tuple[str, int], torch.Tensor] | None = None

    # -- degrees for degree-proportional negatives -------------------------------------------
    def _degree_tables(self) -> dict[tuple[str, int], torch.Tensor]:
        if self._degrees is None:
            deg = {(t, p): np.zeros(n, np.float64) for t, s in self.sizes.items()
                   for p, n in enumerate(s)}
            rels = self.graph.relation_types
            for b in self.graph.buckets("row-major", self.edge_set):
                for eb in b.batches():
                    if eb.rel is None:
                        lhs_t, rhs_t = rels[0].lhs, rels[0].rhs
                        np.add.at(deg[(lhs_t, b.i)], eb.src, 1)
                        np.add.at(deg[(rhs_t, b.j)], eb.dst, 1)
                    else:
                        for pi, (lt, rt) in enumerate(self.pairs):
                            m = self.pair_of_rel[eb.rel] == pi
                            np.add.at(deg[(lt, b.i)], eb.src[m], 1)
                            np.add.at(deg[(rt, b.j)], eb.dst[m], 1)
            self._degrees = {k: torch.from_numpy(np.cumsum(v + 1.0)) for k, v in deg.items()}
        return self._degrees

    def _sample(self, etype: str, p: int, n: int, k: int, gen: torch.Generator) -> torch.Tensor:
        """``k`` candidate offsets in partition ``p`` of ``etype`` (int64)."""
        kd = round(k * self.cfg.degree_neg_fraction)
        uni = torch.randint(n, (k - kd,), generator=gen)
        if kd == 0:
            return uni
        cdf = self._degree_tables()[(etype, p)]
        u = torch.rand(kd, generator=gen, dtype=torch.float64) * cdf[-1]
        deg = torch.searchsorted(cdf, u, right=True).clamp_max(n - 1)
        return torch.cat([uni, deg])

    # -- one batch --------------------------------------------------------------------------
    def _side_loss(self, q, pos_c, pool, w):
        cmp, nb = self.comparator, self.cfg.num_batch_negs
        pos = cmp.pos(q, pos_c)
        negs = []
        if pool is not None:
            negs.append(cmp.neg(q, pool))
        b, d = q.shape
        if nb > 0 and b > 1:
            chunk = min(nb, b)
            nfull = b // chunk * chunk
            mask = torch.eye(chunk, dtype=torch.bool, device=q.device)
            s = cmp.neg(q[:nfull].view(-1, chunk, d), pos_c[:nfull].view(-1, chunk, d))
            parts = [s.masked_fill(mask, float("-inf")).reshape(nfull, chunk)]
            rem = b - nfull
            if rem:  # the last rows use the last `chunk` true candidates, theirs masked
                r = cmp.neg(q[nfull:], pos_c[b - chunk:])
                rows = torch.arange(rem, device=q.device)
                parts.append(r.index_put((rows, rows + chunk - rem),
                                         torch.tensor(float("-inf"), device=q.device)))
            negs.append(torch.cat(parts, dim=0))
        return self.loss_fn.forward(pos, negs, w)

    def _row_adagrad(self, emb, state, idx, grad, lr):
        if emb.device.type == "cpu":
            row_adagrad(emb.numpy(), state.numpy(), idx.numpy(), grad.contiguous().numpy(),
                        lr, ROW_ADAGRAD_EPS, self.cfg.max_norm or 0.0)
            return
        uniq, inv = torch.unique(idx, return_inverse=True)
        g = torch.zeros(len(uniq), grad.shape[1], dtype=grad.dtype, device=grad.device)
        g.index_add_(0, inv, grad)
        s = state[uniq] + g.pow(2).mean(1)
        state[uniq] = s
        emb.index_add_(0, uniq, g * (-lr / (s.sqrt() + ROW_ADAGRAD_EPS)).unsqueeze(1))
        if self.cfg.max_norm is not None:
            rows = emb[uniq]
            emb[uniq] = rows.renorm(2, 0, self.cfg.max_norm)

    def _trainable(self, etype: str, p: int, idx, grad):
        """``(idx, grad)`` without the rows that ``freeze_old`` keeps fixed."""
        lo = self.frozen_below.get((etype, p))
        if not lo:
            return idx, grad
        keep = idx >= lo
        return idx[keep], grad[keep]

    def _closed_form(self, b: int) -> bool:
        """Whether a batch of ``b`` edges takes :func:`dot_softmax.both_sides` (the dot
        comparator, the softmax loss, in-batch negatives, no regulariser)."""
        cfg = self.cfg
        return (type(self.comparator) is DotComparator and type(self.loss_fn) is SoftmaxLoss
                and cfg.num_batch_negs > 0 and b >= 2 and cfg.regularization_coef == 0)

    @traced("embed.minibatch")
    def _batch(self, lt, rt, i, j, h, t, rel, w, gen) -> float:
        cfg = self.cfg
        L_emb, L_st = self.buffer.resident[i][lt]
        R_emb, R_st = self.buffer.resident[j][rt]
        b, u = len(h), cfg.num_uniform_negs
        dev = self.device
        idx_l, idx_r = h, t
        if u:
            idx_l = torch.cat([h, self._sample(lt, i, len(L_emb), u, gen)])
            idx_r = torch.cat([t, self._sample(rt, j, len(R_emb), u, gen)])
        idx_l, idx_r = idx_l.to(dev), idx_r.to(dev)
        rel = rel.to(dev)
        w = None if w is None else w.to(dev)
        leaves: list = []
        if self._closed_form(b):
            grads = self._closed_form_grads
        else:
            grads = self._autograd_grads
        loss, gl, gr = grads(L_emb.index_select(0, idx_l), R_emb.index_select(0, idx_r), b,
                             rel, w, leaves)
        with torch.no_grad():
            if L_emb is R_emb:
                self._row_adagrad(L_emb, L_st, *self._trainable(
                    lt, i, torch.cat([idx_l, idx_r]), torch.cat([gl, gr])), cfg.lr)
            else:
                self._row_adagrad(L_emb, L_st, *self._trainable(lt, i, idx_l, gl), cfg.lr)
                self._row_adagrad(R_emb, R_st, *self._trainable(rt, j, idx_r, gr), cfg.lr)
            if not self.frozen_below:
                self.relmodel.step(leaves, cfg.relation_learning_rate)
        return loss

    def _autograd_grads(self, xl, xr, b, rel, w, leaves):
        """Loss and the gradients of the gathered rows ``xl`` / ``xr`` ``(b + U, d)``, by
        autograd (any comparator, loss and regulariser); ``leaves`` get the relations'."""
        cfg, cmp, u = self.cfg, self.comparator, self.cfg.num_uniform_negs
        xl.requires_grad_(True)
        xr.requires_grad_(True)
        q_tail = cmp.prepare(self.relmodel.apply("rhs", xl[:b], rel, leaves))
        q_head = cmp.prepare(self.relmodel.apply("lhs", xr[:b], rel, leaves))
        pl, pr = cmp.prepare(xl), cmp.prepare(xr)
        loss = (self._side_loss(q_tail, pr[:b], pr[b:] if u else None, w)
                + self._side_loss(q_head, pl[:b], pl[b:] if u else None, w))
        if cfg.regularization_coef > 0:
            loss = loss + cfg.regularization_coef * (
                n3(xl[:b]) + n3(xr[:b]) + sum(n3(lf.leaf) for lf in leaves))
        loss.backward()
        return float(loss.detach()), xl.grad, xr.grad

    def _closed_form_grads(self, xl, xr, b, rel, w, leaves):
        """As :meth:`_autograd_grads`, for the batches of :meth:`_closed_form`: scores and
        loss in closed form (:mod:`.dot_softmax`); autograd only through the operators when
        they have parameters."""
        u = self.cfg.num_uniform_negs
        identity = self.relmodel.is_identity
        if identity:
            ql, qr = xl[:b], xr[:b]
        else:
            hl = xl[:b].detach().requires_grad_(True)
            hr = xr[:b].detach().requires_grad_(True)
            ql = self.relmodel.apply("rhs", hl, rel, leaves)
            qr = self.relmodel.apply("lhs", hr, rel, leaves)
        loss, dql, dqr, dxl, dxr, dpl, dpr = dot_softmax.both_sides(
            ql.detach(), qr.detach(), xl[:b].detach(), xr[:b].detach(),
            xl[b:] if u else None, xr[b:] if u else None, self.cfg.num_batch_negs, w,
            identity)
        if not identity:
            torch.autograd.backward([ql, qr], [dql, dqr])
            dql, dqr = hl.grad, hr.grad
        gl = torch.cat([dql.add_(dxl), dpl]) if u else dql.add_(dxl)
        gr = torch.cat([dqr.add_(dxr), dpr]) if u else dqr.add_(dxr)
        return float(loss), gl, gr
