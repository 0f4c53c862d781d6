"""Temporal graph attention (TGAT, Xu et al. 2020; TGN's embedding layer, Rossi et al. 2020).

For a query node :math:`v` with sampled earlier events :math:`(u_j, t_j, e_j)`,
:math:`j = 1..k` (neighbour, time, edge features) and a time gap :math:`\\Delta_j` per event,
each head :math:`h` of width :math:`d` computes

.. math::

    q = W_Q\\, x_v, \\qquad
    k_j = W_K\\, x_{u_j} + W_E\\, [\\,e_j \\,\\|\\, \\phi(\\Delta_j)\\,], \\qquad
    m_j = W_V\\, x_{u_j} + W_E\\, [\\,e_j \\,\\|\\, \\phi(\\Delta_j)\\,],

    \\alpha_j = \\operatorname{softmax}_j \\Big( \\frac{q^\\top k_j}{\\sqrt{d}} \\Big), \\qquad
    x'_v = W_R\\, x_v + \\big\\|_{h} \\sum_j \\alpha_j\\, m_j,

with :math:`\\phi(\\Delta t) = \\cos(\\omega \\Delta t + b)` (:class:`TimeEncoder`) and the
softmax over the used slots only (a node without earlier events gets :math:`W_R x_v`).
TGAT takes :math:`\\Delta_j = t - t_j`; :class:`~graphsys.gnn.temporal.TGN` the neighbour's
last memory update minus :math:`t_j`. PyG's ``TransformerConv`` with ``edge_dim`` and a
root weight, on a dense ``(queries, k)`` layout of the sampler's blocks (:func:`slots`),
keys and values projected once per node and gathered for the used slots only.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.gnn.conv._slot_products import attend, attend_slots, usable
from graphsys.gnn.dropout import HashDropout


class TimeEncoder(nn.Module):
    """:math:`\\phi(\\Delta t) = \\cos(\\omega \\Delta t + b)`, ``dim`` learned frequencies
    (TGAT's functional time encoding; PyG's ``TimeEncoder``), initialised on a geometric
    range ``1 / 10^{9 i / (dim - 1)}`` as TGL and DyGLib do, so small and large gaps both
    move some feature."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.lin = nn.Linear(1, dim)
        with torch.no_grad():
            self.lin.weight.copy_(
                (1.0 / 10 ** torch.linspace(0, 9, dim)).reshape(dim, 1))
            self.lin.bias.zero_()

    def forward(self, delta: torch.Tensor) -> torch.Tensor:
        return torch.cos(self.lin(delta.unsqueeze(-1).to(self.lin.weight.dtype)))


class TemporalAttentionConv(nn.Module):
    """One temporal attention layer (the math: this module's docstring).

    Parameters
    ----------
    in_dim : int
        Width of the node states :math:`x`.
    out_dim : int
        Output width, ``heads * (out_dim // heads)``.
    edge_dim : int
        Width of :math:`[e_j \\| \\phi(\\Delta_j)]` (edge features plus time encoding).
    heads : int, optional
        Attention heads (default 2, as TGN's example).
    dropout : float, optional
        Dropout on the attention weights.

    Examples
    --------
    >>> import torch
    >>> conv = TemporalAttentionConv(8, 8, edge_dim=4, heads=2)
    >>> x, x_src, nbr = torch.randn(5, 8), torch.randn(7, 8), torch.randint(0, 7, (5, 3))
    >>> edge, mask = torch.randn(5, 3, 4), torch.tensor([[1, 1, 0]] * 4 + [[0, 0, 0]]).bool()
    >>> conv(x, x_src, nbr, edge, mask).shape
    torch.Size([5, 8])
    """

    def __init__(self, in_dim: int, out_dim: int, edge_dim: int, heads: int = 2,
                 dropout: float = 0.0):
        super().__init__()
        if out_dim % heads:
            raise ValueError(f"out_dim {out_dim} must be a multiple of heads {heads}")
        self.heads, self.head_dim = heads, out_dim // heads
        self.query = nn.Linear(in_dim, out_dim)
        self.key = nn.Linear(in_dim, out_dim)
        self.value = nn.Linear(in_dim, out_dim)
        self.edge = nn.Linear(edge_dim, out_dim, bias=False)
        self.root = nn.Linear(in_dim, out_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, x_src: torch.Tensor, nbr: torch.Tensor,
                edge: torch.Tensor, mask: torch.Tensor, pre: nn.Linear | None = None,
                *, in_order: bool = False, post: nn.Linear | None = None) -> torch.Tensor:
        """``x`` (Q, in) query states (or (1, in): one state every query shares, as
        TGAT's first layer on graphs without node features), ``x_src`` (S, in) the states
        of the nodes the neighbours index, ``nbr`` int64 (Q, k) the neighbour of each slot
        (a row of ``x_src``; any valid row in an unused slot), ``edge`` (Q, k, edge_dim) (any
        finite values in an unused slot), or
        (U, edge_dim) the used slots' alone in row-major order (``edge[mask]``), ``mask`` bool
        (Q, k) the used slots; returns (Q, out). Keys and values are projected once per
        node of ``x_src``, then gathered for the used slots only (as PyG's
        ``TransformerConv`` projects nodes and gathers per edge): the per-slot work follows
        the events sampled, not ``Q * k``; only the softmax and the weighted sum see the
        (Q, k) layout. With ``pre``, the states are ``pre(x)`` and ``pre(x_src)``, that
        linear map composed into the layer's own projections (one product per input, not
        two: TGAT's merge ends in a linear map the next layer projects again). With
        ``in_order``, the used slots' neighbours in row-major order are the rows of
        ``x_src`` in order, one each (``nbr`` is then not read): TGAT's layers past the
        first, whose sources past the seeds are each reached by one edge, in order. With
        ``post``, returns ``post`` of the output (composed into the layer's own last
        product where every slot's neighbour shares one state: TGAT's first layer and
        its merge's first linear map)."""
        if x_src.shape[0] == 1:
            return self._shared_source(x, x_src, edge, mask, pre, post)
        q_n, k_n = nbr.shape
        h, d = self.heads, self.head_dim
        flat = mask.reshape(-1).nonzero().squeeze(1)                # used slots, row-major
        if edge.dim() == 3:
            edge = edge.reshape(q_n * k_n, -1).index_select(0, flat)
        e = self.edge(edge)                                         # (U, out)
        # keys with values, queries with the root term: one product each (same math)
        kv = _linear2(x_src, self.key, self.value, pre)
        qr = _linear2(x, self.query, self.root, pre)
        if not in_order:
            # a gather as an embedding lookup: of torch's CPU gathers, its backward is
            # fastest
            kv = F.embedding(nbr.reshape(-1).index_select(0, flat), kv)
        elif kv.shape[0] != len(flat):
            raise ValueError(f"in_order: {kv.shape[0]} source rows for {len(flat)} used "
                             f"slots")
        # split, not two slices: one gradient buffer in the backward, not two zero-filled
        q_all, root = qr.split(h * d, dim=1)
        drop = self.dropout
        if (in_order and x.shape[0] == q_n and q_all.device.type == "cpu"
                and all(t.dtype == torch.float32 for t in (kv, e, q_all))
                and (type(drop) is HashDropout or drop.p == 0 or not drop.training)):
            # keys, values, scores, softmax, dropout and the weighted sum in one pass a
            # destination (the same functions and dropout mask as the passes below)
            out = attend_slots(kv, e, q_all, mask, h, math.sqrt(d), drop.p,
                               drop.training) + root
            return out if post is None else post(out)
        key, val = (kv.view(-1, 2, h * d) + e.unsqueeze(1)).view(-1, 2, h, d).unbind(1)
        row = torch.div(flat, k_n, rounding_mode="floor")
        q = F.embedding(row if x.shape[0] == q_n else torch.zeros_like(row),
                        q_all).view(-1, h, d)
        score = (q * key).sum(-1) / math.sqrt(d)                    # (U, heads)
        # unused slots at the dtype's lowest finite value: exp() of it is 0 beside a used
        # slot, and a row with no event weighs zero values (its output 0, no NaN to clear)
        dense = score.new_full((q_n * k_n, h), torch.finfo(score.dtype).min).index_put_(
            (flat,), score)
        alpha = self.dropout(torch.softmax(dense.view(q_n, k_n, h), dim=1))
        # the weighted sum on the (Q, k) layout (unused slots hold zeros): cheaper than a
        # scatter of the used slots into their rows; both layouts are filled in place (a
        # fresh tensor: no copy of it)
        val = val.new_zeros(q_n * k_n, h, d).index_put_((flat,), val).view(q_n, k_n, h, d)
        out = (alpha.unsqueeze(-1) * val).sum(1).reshape(q_n, h * d) + root
        return out if post is None else post(out)

    def _shared_source(self, x: torch.Tensor, x_src: torch.Tensor, edge: torch.Tensor,
                       mask: torch.Tensor, pre: nn.Linear | None = None,
                       post: nn.Linear | None = None) -> torch.Tensor:
        """:meth:`forward` when every slot's neighbour state is the one row ``x_src`` (TGAT's
        first layer on graphs without node features): keys and values then differ from one
        slot to the next by their edge term :math:`W_E e_j` alone, so a head's scores are
        :math:`q^\\top k + (W_E^\\top q)^\\top e_j` and its output
        :math:`(\\sum_j \\alpha_j)\\, m + W_E \\sum_j \\alpha_j e_j` (``k``, ``m`` the shared
        key and value): per slot and head an ``edge_dim``-wide product, not an ``out``-wide
        projection; the same function."""
        q_n, k_n = mask.shape
        h, d = self.heads, self.head_dim
        if edge.dim() == 2:          # the used slots' alone: onto the (Q, k) layout, zeros
            edge = edge.new_zeros(q_n * k_n, edge.shape[-1]).index_put_(
                (mask.reshape(-1).nonzero().squeeze(1),), edge).view(q_n, k_n, -1)
        # (an unused slot's finite edge values weigh zero: its score is masked, its weight 0)
        w = self.edge.weight.view(h, d, -1)                         # W_E per head
        key, val = _linear2(x_src, self.key, self.value, pre).view(2, h, d)
        q, root = _linear2(x, self.query, self.root, pre).split(h * d, dim=1)
        q = q.view(-1, h, d)
        # one query for every row (TGAT's first layer): the attention with the constant
        # edge input as numba passes (gnn/conv/_slot_products.py), else torch's
        fused = q.shape[0] == 1 and edge.is_contiguous() and usable(edge, q, w)
        c = torch.einsum("qhd,hde->qeh", q, w)
        base = (q * key).sum(-1)                                    # (1 or Q, heads)
        drop = self.dropout
        if fused and (type(drop) is HashDropout or drop.p == 0 or not drop.training):
            # scores, softmax, dropout and both sums in one pass a destination (the
            # same functions and the same dropout mask as the passes below)
            s, a_sum = attend(edge, mask, c[0], base[0], math.sqrt(d), drop.p, drop.training)
        else:
            score = (torch.matmul(edge, c) + base.unsqueeze(1)) / math.sqrt(d)  # (Q, k, h)
            score = score.masked_fill(~mask.unsqueeze(-1), torch.finfo(score.dtype).min)
            # a row with no event: its uniform weights zeroed, so it gets the root term
            alpha = self.dropout(torch.softmax(score, dim=1)).masked_fill(
                ~mask.unsqueeze(-1), 0)
            s = torch.matmul(alpha.transpose(1, 2), edge)
            a_sum = alpha.sum(1)
        if post is None:
            out = torch.einsum("qhe,hde->qhd", s, w) + a_sum.unsqueeze(-1) * val
            return out.reshape(q_n, h * d) + root
        # post(out) = [S || sum_j alpha] [W_P blockdiag(W_E) || W_P val]^T + post(root): the
        # map composed into the edge term's product, one (Q, h e) x (h e, o) product on
        # S as it lies, not a batched product per head, its layout's copies and post's own
        # product (the same math)
        wp = post.weight.view(-1, h, d)
        m = torch.einsum("ohd,hde->ohe", wp, w).reshape(wp.shape[0], -1)
        vp = torch.einsum("ohd,hd->oh", wp, val)
        bias = torch.addmm(vp.new_zeros(()) if post.bias is None else post.bias, root,
                           post.weight.t())                         # (1 or Q, o)
        return torch.addmm(torch.addmm(bias, a_sum, vp.t()), s.reshape(q_n, -1), m.t())


def slots(block, width: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(nbr, mask)`` (num_dst, ``width``) on ``device``: each destination's edges of
    ``block`` (grouped by destination in order, as the samplers list them) in its slots in
    order, ``nbr`` their source rows (0 in an unused slot), ``mask`` the used slots; in
    row-major order the used slots are the block's edges."""
    dst = block.edge_dst
    at = (dst, torch.arange(len(dst)) - block.dst_offsets[0][dst])
    nbr = torch.zeros(block.num_dst_nodes, width, dtype=torch.long).index_put_(
        at, block.edge_src)
    mask = torch.zeros(nbr.shape, dtype=torch.bool).index_put_(at, torch.tensor(True))
    return nbr.to(device), mask.to(device)


def _linear2(x: torch.Tensor, a: nn.Linear, b: nn.Linear, pre: nn.Linear | None = None
             ) -> torch.Tensor:
    """``cat([a(x), b(x)], -1)`` as one product (two narrow products cost more on a CPU);
    with ``pre``, of ``pre(x)``, the two maps composed (``W pre.W``, ``W pre.b + b``)."""
    weight, bias = torch.cat([a.weight, b.weight]), torch.cat([a.bias, b.bias])
    if pre is not None:
        weight, bias = weight @ pre.weight, torch.addmv(bias, weight, pre.bias)
    return F.linear(x, weight, bias)
