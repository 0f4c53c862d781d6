"""One minibatch of embedding training: negatives, scores, loss, gradients and the updates.

A batch of ``B`` edges is scored in both directions against a pool of ``U`` candidates of
the partition shared by the batch (one ``(B, d) @ (d, U)`` matmul; uniform, or a
``degree_neg_fraction`` by training degree) and, by one batched matmul, the other true
tails (heads) of its chunk of ``num_batch_negs`` edges; with ``all_negs`` the pool is the
whole partition and the loss the 1-vs-all cross-entropy. ``regularization_coef`` adds the N3
term of the batch's factors, ``relation_prediction_weight`` the relation-prediction
cross-entropy (:meth:`MinibatchStep._relation_prediction`). Gradients come from autograd,
or in closed form for dot / softmax (:mod:`.dot_softmax`). Embeddings take row-wise (or
element-wise) Adagrad steps (:func:`graphsys.embed.kernels.sparse_adagrad` on the CPU),
relation parameters element-wise Adagrad (:class:`.relations.RelationModel`).

:class:`MinibatchStep` is the per-batch half of :class:`graphsys.embed.trainer.Trainer`,
which provides the state it reads (``cfg``, ``graph``, ``edge_set``, ``device``, ``sizes``,
``pairs`` / ``pair_of_rel``, ``comparator``, ``loss_fn``, ``relmodel``, ``buffer``,
``frozen_below``).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from graphsys.embed import dot_softmax
from graphsys.embed.kernels import gather_rows, sparse_adagrad
from graphsys.embed.model import DotComparator, SoftmaxLoss
from graphsys.trace import traced

ADAGRAD_EPS = 1e-10


def device_adagrad(emb: torch.Tensor, state: torch.Tensor, idx: torch.Tensor,
                   grad: torch.Tensor, lr: float, max_norm: float | None = None) -> None:
    """In place, :func:`graphsys.embed.kernels.sparse_adagrad`'s step in torch operators
    with no host synchronisation (no ``unique``, whose size a GPU reads on the host).

    ``idx`` int64 ``(m,)`` is sorted (stable); each occurrence is mapped to the position of
    its row's first occurrence (``searchsorted`` of the sorted ids in themselves), and the
    gradients are summed there, in ``idx`` order, into an ``(m, d)`` block: each distinct
    row's sum at its first position, zeros at the repeats. The state and the rows are then
    updated with ``index_add_`` at every position: a repeat adds exactly zero to its row
    (its gradient is zero), so each row takes one step with its whole gradient, with
    fixed shapes whatever the repeats. ``state`` ``(n,)`` row-wise (``mean(g**2)``) or
    ``(n, d)`` element-wise (``g**2``); with ``max_norm`` the updated rows are renormed.
    """
    sidx, order = torch.sort(idx, stable=True)
    first = torch.searchsorted(sidx, sidx)
    g = torch.zeros_like(grad).index_add_(0, first, grad.index_select(0, order))
    if state.dim() == 1:
        state.index_add_(0, sidx, g.pow(2).mean(1))
        s = state.index_select(0, sidx).unsqueeze(1)
    else:
        state.index_add_(0, sidx, g * g)
        s = state.index_select(0, sidx)
    emb.index_add_(0, sidx, g * (-lr / (s.sqrt() + ADAGRAD_EPS)))
    if max_norm is not None:
        emb.index_copy_(0, sidx, emb.index_select(0, sidx).renorm(2, 0, max_norm))


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

    def _sample(self, etype: str, p: int, n: int, k: int, gen: torch.Generator,
                device: torch.device | None = None, groups: int = 1) -> torch.Tensor:
        """``k`` candidate offsets in partition ``p`` of ``etype`` (int64), drawn on
        ``device`` (default the host) by ``gen`` (a generator of that device); with
        ``groups``, ``groups`` such pools one after the other (``(groups * k,)``)."""
        kd = round(k * self.cfg.degree_neg_fraction)
        at = gen.device  # where gen draws: ``device``, or the host where it has no generators
        uni = torch.randint(n, (groups, k - kd), generator=gen, device=at).to(device or at)
        if kd == 0:
            return uni.view(-1)
        cdf = self._degree_tables()[(etype, p)]
        if device is not None and cdf.device != device:
            cdf = self._degrees[(etype, p)] = cdf.to(device)
        u = (torch.rand(groups, kd, generator=gen, dtype=torch.float64, device=at)
             .to(device or at) * cdf[-1])
        deg = torch.searchsorted(cdf, u.view(-1), right=True).clamp_max(n - 1)
        return torch.cat([uni, deg.view(groups, kd)], dim=1).view(-1)

    # -- one batch --------------------------------------------------------------------------
    def _side_loss(self, q, pos_c, pool, w, target=None):
        """Loss of one side; with ``all_negs`` ``pool`` is every candidate and ``target``
        int64 ``(B,)`` the true candidates' rows of it (masked there: the positive is scored
        once, as ``pos``)."""
        cmp, nb = self.comparator, self.cfg.num_batch_negs
        pos = cmp.pos(q, pos_c)
        negs = []
        if pool is not None:
            s = cmp.neg(q, pool)
            if target is not None:
                rows = torch.arange(len(q), device=q.device)
                s = s.index_put((rows, target), torch.tensor(float("-inf"), device=q.device))
            negs.append(s)
        b, d = q.shape
        if nb > 0 and b > 1 and target is None:
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

    #: Whether batches run on torch operators only (no numba kernel) even on the CPU: the
    #: device path, counted and tested on the CPU (:class:`~graphsys.embed.trainer.Trainer`
    #: sets it for its device-resident loop).
    torch_ops = False

    def _adagrad(self, emb, state, idx, grad, lr):
        """Adagrad step of the rows ``idx`` of ``emb``: row-wise with ``state`` ``(n,)``,
        element-wise with ``state`` ``(n, d)`` (``embedding_adagrad``); each distinct row
        takes one step with the sum of its gradients (in ``idx`` order)."""
        if emb.device.type == "cpu" and not self.torch_ops:
            st = state.numpy()
            sparse_adagrad(emb.numpy(), st.reshape(len(st), -1), idx.numpy(),
                           grad.contiguous().numpy(), lr, ADAGRAD_EPS, self.cfg.max_norm or 0.0)
            return
        device_adagrad(emb, state, idx, grad, lr, self.cfg.max_norm)

    @staticmethod
    def _gather(emb: torch.Tensor, idx: torch.Tensor, torch_ops: bool = False) -> torch.Tensor:
        """``emb[idx]``: the rows ``idx`` (int64 ``(m,)``) of an embedding partition, float32
        ``(m, d)``; by the prefetching kernel :func:`~graphsys.embed.kernels.gather_rows` on
        the CPU (unless ``torch_ops``). An offset outside the partition raises IndexError, as
        ``index_select``."""
        if emb.device.type != "cpu" or torch_ops:
            return emb.index_select(0, idx)
        out = torch.empty(len(idx), emb.shape[1], dtype=emb.dtype)
        bad = gather_rows(emb.numpy(), idx.contiguous().numpy(), out.numpy())
        if bad >= 0:
            raise IndexError(f"row {int(idx[bad])} out of range for a partition of "
                             f"{len(emb)} rows")
        return out

    def _trainable(self, etype: str, p: int, idx, grad):
        """``(idx, grad)`` without the rows that ``freeze_old`` keeps fixed."""
        lo = self.frozen_below.get((etype, p))
        if not lo:
            return idx, grad
        keep = idx >= lo
        return idx[keep], grad[keep]

    def _closed_form(self, b: int) -> bool:
        """Whether a batch of ``b`` edges takes :mod:`.dot_softmax`'s closed form (the dot
        comparator, the softmax loss, and all negatives or in-batch negatives)."""
        cfg = self.cfg
        return (type(self.comparator) is DotComparator and type(self.loss_fn) is SoftmaxLoss
                and (cfg.all_negs or (cfg.num_batch_negs > 0 and b >= 2)))

    def _n3(self, terms: list) -> torch.Tensor:
        """``regularization_coef`` times the batch's N3 factors, from the ``(rows, params)``
        terms that :meth:`RelationModel.apply` collected on both sides: each side's queries
        are the other side's true candidates, so every entity factor counts twice."""
        return self.cfg.regularization_coef * sum(2 * rows + params for rows, params in terms)

    def _relation_prediction(self, x_h, x_t, rel, w, leaves) -> torch.Tensor:
        """``relation_prediction_weight`` times the summed cross-entropy of relation
        prediction (Chen et al. 2021), 0-d: each edge ``(h, r, t)`` predicts ``r`` from
        ``(h, t)`` and ``r^-1`` from ``(t, h)`` among all ``2R`` relations of both sides
        (:meth:`~graphsys.embed.relations.RelationModel.relation_logits`), weighted by ``w``
        ``(B,)`` when given. ``x_h`` / ``x_t`` ``(B, d)``: the heads' and tails' rows."""
        logits = self.relmodel.relation_logits(torch.cat([x_h, x_t]), torch.cat([x_t, x_h]),
                                               leaves)
        target = torch.cat([rel, rel + len(self.relmodel.operators)])
        ce = F.cross_entropy(logits, target, reduction="none")
        if w is not None:
            ce = ce * torch.cat([w, w])
        return self.cfg.relation_prediction_weight * ce.sum()

    def _batch(self, lt, rt, i, j, h, t, rel, w, gen, groups: int = 1) -> float:
        """:meth:`_step` of host tensors ``h``, ``t``, ``rel``, ``w``; its loss read."""
        return float(self._step(lt, rt, i, j, h, t, rel, w, gen, groups))

    @traced("embed.minibatch")
    def _step(self, lt, rt, i, j, h, t, rel, w, gen, groups: int = 1) -> torch.Tensor:
        """Train one batch: ``h``, ``t``, ``rel`` int64 ``(b,)`` and ``w`` float32 ``(b,)``
        or None, on the host or on the device (then ``gen`` is a generator of the device,
        and nothing of the batch goes through the host); returns the loss, a 0-d tensor on
        the device (not read here). ``groups`` (``batches_per_step``; closed-form batches):
        ``b`` is ``groups`` batches of ``b / groups`` edges, each scored against a pool of
        its own; one Adagrad step for them all."""
        cfg = self.cfg
        L_emb, L_st = self.buffer.resident[i][lt]
        R_emb, R_st = self.buffer.resident[j][rt]
        b, u = len(h), cfg.num_uniform_negs
        dev = self.device
        idx_l, idx_r = h, t
        on = None if h.device.type == "cpu" and not self.torch_ops else h.device
        if cfg.all_negs:
            idx_l = torch.cat([h, torch.arange(len(L_emb), device=on)])
            idx_r = torch.cat([t, torch.arange(len(R_emb), device=on)])
        elif u:
            idx_l = torch.cat([h, self._sample(lt, i, len(L_emb), u, gen, on, groups)])
            idx_r = torch.cat([t, self._sample(rt, j, len(R_emb), u, gen, on, groups)])
        idx_l, idx_r = idx_l.to(dev), idx_r.to(dev)
        rel = rel.to(dev)
        w = None if w is None else w.to(dev)
        leaves: list = []
        grads = self._closed_form_grads if self._closed_form(b) else self._autograd_grads
        loss, gl, gr = grads(self._gather(L_emb, idx_l, self.torch_ops),
                             self._gather(R_emb, idx_r, self.torch_ops), b,
                             rel, w, leaves, idx_l[:b], idx_r[:b], groups)
        with torch.no_grad():
            if L_emb is R_emb:
                self._adagrad(L_emb, L_st, *self._trainable(
                    lt, i, torch.cat([idx_l, idx_r]), torch.cat([gl, gr])), cfg.lr)
            else:
                self._adagrad(L_emb, L_st, *self._trainable(lt, i, idx_l, gl), cfg.lr)
                self._adagrad(R_emb, R_st, *self._trainable(rt, j, idx_r, gr), cfg.lr)
            if not self.frozen_below:
                self.relmodel.step(leaves, cfg.relation_learning_rate)
        return loss

    def _autograd_grads(self, xl, xr, b, rel, w, leaves, h, t, groups=1):
        """Loss and the gradients of the gathered rows ``xl`` / ``xr`` ``(b + U, d)``, by
        autograd (any comparator, loss and regulariser); ``leaves`` get the relations'.
        ``h`` / ``t`` int64 ``(b,)``: the batch's rows of the partitions (with
        ``all_negs``, the targets among ``xl[b:]`` / ``xr[b:]``)."""
        cfg, cmp = self.cfg, self.comparator
        pooled = cfg.all_negs or cfg.num_uniform_negs > 0
        n3 = [] if cfg.regularization_coef > 0 else None
        xl.requires_grad_(True)
        xr.requires_grad_(True)
        q_tail = cmp.prepare(self.relmodel.apply("rhs", xl[:b], rel, leaves, n3))
        q_head = cmp.prepare(self.relmodel.apply("lhs", xr[:b], rel, leaves, n3))
        pl, pr = cmp.prepare(xl), cmp.prepare(xr)
        all_l, all_r = (h, t) if cfg.all_negs else (None, None)
        loss = (self._side_loss(q_tail, pr[:b], pr[b:] if pooled else None, w, all_r)
                + self._side_loss(q_head, pl[:b], pl[b:] if pooled else None, w, all_l))
        if n3:
            loss = loss + self._n3(n3)
        if cfg.relation_prediction_weight > 0:
            loss = loss + self._relation_prediction(xl[:b], xr[:b], rel, w, leaves)
        loss.backward()
        return loss.detach(), xl.grad, xr.grad

    def _closed_form_grads(self, xl, xr, b, rel, w, leaves, h, t, groups=1):
        """As :meth:`_autograd_grads`, for the batches of :meth:`_closed_form`: scores and
        loss in closed form (:mod:`.dot_softmax`); autograd only through the operators and
        the N3 regulariser when there are any."""
        cfg = self.cfg
        u = cfg.num_uniform_negs
        n3 = [] if cfg.regularization_coef > 0 else None
        rp = cfg.relation_prediction_weight > 0
        identity = self.relmodel.is_identity
        scores_only = identity and n3 is None and not rp
        closed = None
        if not scores_only and n3 is None and not rp and self.relmodel.whole_tables:
            closed = (self.relmodel.apply_closed("rhs", xl[:b], rel, leaves),
                      self.relmodel.apply_closed("lhs", xr[:b], rel, leaves))
            closed = None if None in closed else closed
        if scores_only:
            ql, qr = xl[:b], xr[:b]
        elif closed is not None:
            (ql, back_l), (qr, back_r) = closed
        else:
            hl = xl[:b].detach().requires_grad_(True)
            hr = xr[:b].detach().requires_grad_(True)
            ql = self.relmodel.apply("rhs", hl, rel, leaves, n3)
            qr = self.relmodel.apply("lhs", hr, rel, leaves, n3)
        if cfg.all_negs:
            loss_t, dql, dpr = dot_softmax.one_vs_all(ql.detach(), xr[b:], t, w)
            loss_h, dqr, dpl = dot_softmax.one_vs_all(qr.detach(), xl[b:], h, w)
            loss, dxl, dxr = loss_t + loss_h, None, None
            gl, gr = torch.cat([dql, dpl]), torch.cat([dqr, dpr])
        else:
            loss, gl, gr, dxl, dxr = dot_softmax.both_sides(
                ql.detach(), qr.detach(), xl[:b].detach(), xr[:b].detach(),
                xl[b:] if u else None, xr[b:] if u else None, cfg.num_batch_negs, w,
                identity, kernels=not self.torch_ops, groups=groups)
        if closed is not None:  # through the operators in closed form, no autograd
            for g, back, dx in ((gl, back_l, dxl), (gr, back_r, dxr)):
                dq = back(g[:b])
                if dx is None:
                    g[:b] = dq
                else:
                    torch.add(dq, dx, out=g[:b])
            return loss, gl, gr
        if not scores_only:
            outs, out_grads = [ql, qr], [gl[:b], gr[:b]]
            extra = [self._n3(n3)] if n3 else []
            if rp:
                extra.append(self._relation_prediction(hl, hr, rel, w, leaves))
            for term in extra:
                outs.append(term)
                out_grads.append(torch.ones_like(term))
                loss = loss + term.detach()
            torch.autograd.backward(outs, out_grads)
            gl[:b], gr[:b] = hl.grad, hr.grad
        if dxl is not None:
            gl[:b] += dxl
            gr[:b] += dxr
        return loss, gl, gr
