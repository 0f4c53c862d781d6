"""TGAT (Xu et al., ICLR 2020, "Inductive Representation Learning on Temporal Graphs"): a
memoryless temporal link model over graphsys's temporal sampler.

A node's embedding at a time :math:`t` is computed from scratch by ``L`` layers of temporal
graph attention over its sampled earlier events, each neighbour embedded in turn at the time
of the event that reached it, down to the node features (:math:`h^{(0)} = 0` without
them); nothing is kept from one batch to the next, so a node unseen in training is embedded
as any other. A gap :math:`\\Delta t` is encoded by
:class:`~graphsys.gnn.conv.temporal_attention.TimeEncoder` (one shared by the layers), its
frequencies fixed, not learned: an Adam step moves a frequency by about the learning rate
whatever its size, so a few hundred steps leave no slow frequency for gaps of up to
:math:`10^7` seconds.

Layer :math:`l = 1..L`, for a node :math:`v` at time :math:`t` with sampled earlier events
:math:`(u_j, t_j, e_j)` (neighbour, time, edge features;
:class:`~graphsys.sampling.TemporalNeighborSampler`):

.. math::

    a_v = \\big\\|_{\\text{heads}} \\sum_j \\operatorname{softmax}_j
          \\Big(\\frac{q^\\top k_j}{\\sqrt{d}}\\Big)\\, m_j, \\qquad
    q = W_Q\\, h^{(l-1)}_v(t), \\quad
    k_j = W_K\\, h^{(l-1)}_{u_j}(t_j) + W_E\\, [\\,e_j \\,\\|\\, \\phi(t - t_j)\\,], \\quad
    m_j = W_V\\, h^{(l-1)}_{u_j}(t_j) + W_E\\, [\\,e_j \\,\\|\\, \\phi(t - t_j)\\,],

    h^{(l)}_v(t) = W_2\\, \\operatorname{ReLU}\\big(W_1 (a_v + W_R\\, h^{(l-1)}_v(t)) + b_1
                   \\big) + b_2,

the attention of :class:`~graphsys.gnn.conv.temporal_attention.TemporalAttentionConv`
(a node without earlier events gets no attention term) and TGAT's feed-forward merge
:math:`\\mathrm{FFN}([a_v \\| h])` with its first product factored (the same functions for
an invertible :math:`W_1`); the query's constant time term :math:`\\phi(0)` is folded into
the bias of :math:`W_Q`. Layer :math:`l` runs on block :math:`l - 1` of
:meth:`~graphsys.sampling.TemporalNeighborSampler.sample_blocks` (``fanouts = [k_1, ...,
k_L]``), depths :math:`0 .. L - l`. A pair is scored by
:class:`~graphsys.gnn.temporal.LinkPredictor`. Trained by :mod:`graphsys.gnn.temporal_task`.
"""

from __future__ import annotations

import torch
from torch import nn

from graphsys.gnn.config import TGAT as MODEL_NAME
from graphsys.gnn.conv._time_encoding import fused_ok, slot_edges
from graphsys.gnn.conv.temporal_attention import TemporalAttentionConv, TimeEncoder
from graphsys.gnn.dropout import HashDropout, relu_dropout
from graphsys.gnn.temporal import LinkPredictor


class TGATLayer(nn.Module):
    """One TGAT layer: temporal attention, then the feed-forward merge (the module
    docstring's :math:`h^{(l)}`)."""

    def __init__(self, dim: int, edge_dim: int, heads: int, dropout: float):
        super().__init__()
        self.attn = TemporalAttentionConv(dim, dim, edge_dim, heads=heads, dropout=dropout)
        self.attn.dropout = HashDropout(dropout)      # the attention weights' (same law)
        self.ffn = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Dropout(dropout),
                                 nn.Linear(dim, dim))

    def forward(self, x, x_src, nbr, edge, mask):
        first, _, drop, second = self.ffn
        # ReLU and dropout in one pass (graphsys.gnn.dropout: a hashed mask, the same
        # distribution as torch's Bernoulli draw; the gradient read from the output)
        return second(relu_dropout(first(self.attn(x, x_src, nbr, edge, mask)), drop.p,
                                   self.training))


class TGAT(nn.Module):
    """``num_layers`` layers of temporal attention and a link predictor (see the module
    docstring).

    Parameters
    ----------
    num_nodes : int
        Nodes of the graph (recorded; TGAT keeps no state per node).
    dim : int
        Time-encoding and embedding width.
    raw_dim : int
        Edge-feature width (0: none).
    num_layers : int, optional
        Layers, one per hop of the sampler (default 2).
    heads : int, optional
        Attention heads (default 2, as TGAT).
    dropout : float, optional
        Dropout on the attention weights and in the merge (default 0.1).

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn.tgat import TGAT
    >>> model = TGAT(10, 16, raw_dim=3, num_layers=2)
    >>> nbr = torch.tensor([[2, 3], [4, 0], [5, 0], [6, 0], [0, 0]])   # 2 queries, 7 rows
    >>> mask = torch.tensor([[1, 1], [1, 0], [1, 0], [1, 0], [0, 0]]).bool()
    >>> z = model.embed([(nbr, mask), (nbr[:2], mask[:2])], torch.rand(5), torch.rand(5, 3))
    >>> z.shape, model.score(z[:1], z[1:]).shape
    (torch.Size([2, 16]), torch.Size([1]))
    """

    def __init__(self, num_nodes: int, dim: int, raw_dim: int = 0, *, num_layers: int = 2,
                 heads: int = 2, dropout: float = 0.1):
        super().__init__()
        self.num_nodes, self.dim, self.raw_dim = num_nodes, dim, raw_dim
        self.num_layers, self.heads = num_layers, heads
        self.time_enc = TimeEncoder(dim).requires_grad_(False)     # fixed: see above
        self.layers = nn.ModuleList(TGATLayer(dim, raw_dim + dim, heads, dropout)
                                    for _ in range(num_layers))
        self.predictor = LinkPredictor(dim)

    def config(self) -> dict:
        """The constructor's arguments (stored in checkpoints)."""
        return {"model": MODEL_NAME, "num_nodes": self.num_nodes, "dim": self.dim,
                "raw_dim": self.raw_dim, "heads": self.heads, "num_layers": self.num_layers}

    def embed(self, layers: list[tuple[torch.Tensor, torch.Tensor]], delta: torch.Tensor,
              raw: torch.Tensor) -> torch.Tensor:
        """The queries' embeddings (Q, dim) from the blocks of their ``L`` sampled hops
        (:meth:`~graphsys.sampling.TemporalNeighborSampler.sample_blocks`): ``layers[l]``
        is block ``l``'s ``(nbr, mask)`` (:func:`~graphsys.gnn.conv.temporal_attention.
        slots`), its destinations the events of depths ``0 .. L - l - 1``, its sources
        those of depths ``0 .. L - l`` (the rows the layer before computed); ``delta`` (E,)
        each edge's gap :math:`t - t_j` and ``raw`` (E, raw_dim) its features, for block
        0's edges, whose first ones are each later block's. As the sampler builds them,
        block ``l``'s used slots in row-major order (``l >= 1``) have as sources the rows
        past the seeds, each once and in order."""
        if len(layers) != self.num_layers:
            raise ValueError(f"{len(layers)} blocks for {self.num_layers} layers")

        # block 0's edges on its (Q, k) slot layout, encoded there (an unused slot: finite
        # values, weighed zero); block l's layout is its first rows
        mask = layers[0][1]
        flat = mask.reshape(-1).nonzero().squeeze(1)
        used = len(flat)
        if fused_ok(self.time_enc.lin, delta):
            # one pass writing [raw || phi(gap)] into the used slots (the others zeros)
            edge = slot_edges(self.time_enc.lin, flat, mask.numel(), delta[:used],
                              raw[:used] if self.raw_dim else None)
        else:
            gap = delta.new_zeros(mask.numel()).index_put_((flat,), delta[:used])
            edge = self.time_enc(gap)
            if self.raw_dim:
                edge = torch.cat([raw.new_zeros(mask.numel(), self.raw_dim).index_put_(
                    (flat,), raw[:used]), edge], dim=-1)
        edge = edge.view(*mask.shape, -1)
        # a layer's output h = W_2 r + b_2 is only ever projected again by the next layer:
        # that map is composed into the next layer's projections (TemporalAttentionConv's
        # ``pre``), so h is formed for the queries alone. Every source row a block's used
        # slots name is past the seeds' rows (the sampler's depth 0): those are left out
        # of the sources, their indices shifted (an unused slot's is never read).
        seeds = layers[-1][1].shape[0]
        h = self.time_enc.lin.weight.new_zeros(1, self.dim)   # h^(0) = 0: one row for all
        pre = None
        for k, (layer, (nbr, mask)) in enumerate(zip(self.layers, layers)):
            first, _, drop, second = layer.ffn
            if k == 0:
                # the merge's first map composed into the attention's output product
                a = layer.attn(h, h, torch.zeros_like(nbr), edge[:mask.shape[0]], mask,
                               post=first)
            else:
                # the rows past the seeds are each reached by one edge, in order (the
                # sampler's depths): the used slots' sources without a gather
                a = layer.attn(h[:mask.shape[0]], h[seeds:], nbr, edge[:mask.shape[0]],
                               mask, pre=pre, in_order=True)
                a = first(a)
            h, pre = relu_dropout(a, drop.p, self.training), second
        return pre(h)

    def score(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        """Scores of embedding pairs (broadcasting)."""
        return self.predictor(z_src, z_dst)
