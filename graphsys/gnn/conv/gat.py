"""Graph attention (GAT) of Veličković et al. over blocks."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.errors import GraphsysError
from graphsys.gnn.conv._base import check_input
from graphsys.gnn.conv.spec import ModelSpec
from graphsys.gnn.dropout import dropout
from graphsys.sampling.block import Block, PaddedBlock


class GATConv(nn.Module):
    r"""The graph attentional operator from Veličković et al., "Graph Attention Networks",
    https://arxiv.org/abs/1710.10903.

    .. math::
        \alpha^k_{uv} = \operatorname{softmax}_{u \in \mathcal{N}(v) \cup \{v\}}\Big(
        \operatorname{LeakyReLU}\big(\mathbf{a}^{k\top}_{src} \mathbf{W}^k \mathbf{h}_u +
        \mathbf{a}^{k\top}_{dst} \mathbf{W}^k \mathbf{h}_v\big)\Big), \qquad
        \mathbf{h}'_v = \big\Vert_{k=1}^{K} \sum_{u \in \mathcal{N}(v) \cup \{v\}}
        \operatorname{drop}_{\alpha}(\alpha^k_{uv}) \,
        \operatorname{drop}_{W}(\mathbf{W}^k \mathbf{h}_u) + \mathbf{b}

    with :math:`K` heads concatenated (``concat=True``, output width ``heads * out_dim``)
    or averaged (``concat=False``, width ``out_dim``; the paper's output layer).
    :math:`[\mathbf{a}_{src} \Vert \mathbf{a}_{dst}]` is the paper's attention vector
    :math:`\mathbf{a}`; the softmax runs over the block's sources of ``v`` plus ``v`` itself
    (a self-loop added per destination, which replaces the block's own self-loop edges, as
    PyG's ``GATConv``; repeated edges count again), LeakyReLU slope
    ``negative_slope`` (0.2). In training, dropout ``attn_dropout`` is applied to
    :math:`\alpha` (0.6 in the paper) and ``feat_dropout`` to the transformed features
    :math:`\mathbf{W}^k \mathbf{h}_u` that are summed (not to those the scores are computed
    from), as the authors' code does with the layer's input dropout rate (0.6; their
    ``attn_head``); PyG's and DGL's ``GATConv`` leave it out (``feat_dropout=0``).

    Parameters
    ----------
    in_dim : int
        Input features :math:`F`.
    out_dim : int
        Features per head :math:`F'`.
    heads : int, optional
        Attention heads :math:`K` (default 1).
    concat : bool, optional
        Concatenate (True, default) or average (False) the heads.
    negative_slope, attn_dropout, feat_dropout : float, optional
        As above (defaults 0.2, 0, 0).
    bias : bool, optional
        Learn :math:`\mathbf{b}` (default True).

    Notes
    -----
    Shapes: input ``x`` float (num_src_nodes, F) and a :class:`~graphsys.sampling.Block`;
    output float (num_dst_nodes, K F') with ``concat``, else (num_dst_nodes, F'). On a
    :class:`~graphsys.sampling.PaddedBlock` each row's softmax runs over its ``k`` entries
    and its added self-loop, the entries that are no pick (and its self picks) masked out:
    the same attention as on the block of the same picks, dense over fixed shapes instead
    of scattered over the edges.

    References
    ----------
    .. [1] P. Veličković, G. Cucurull, A. Casanova, A. Romero, P. Liò and Y. Bengio,
       "Graph Attention Networks", ICLR 2018, https://arxiv.org/abs/1710.10903.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn import GATConv
    >>> from graphsys.sampling import Block
    >>> block = Block(torch.tensor([0, 1, 2]), 2, torch.tensor([2, 2]), torch.tensor([0, 1]))
    >>> GATConv(4, 3, heads=2)(torch.randn(3, 4), block).shape           # heads concatenated
    torch.Size([2, 6])
    >>> GATConv(4, 3, heads=2, concat=False)(torch.randn(3, 4), block).shape
    torch.Size([2, 3])
    """

    #: :meth:`forward` takes a :class:`~graphsys.sampling.PaddedBlock`
    takes_padded = True

    def __init__(self, in_dim: int, out_dim: int, heads: int = 1, concat: bool = True,
                 negative_slope: float = 0.2, attn_dropout: float = 0.0,
                 feat_dropout: float = 0.0, bias: bool = True):
        super().__init__()
        self.in_dim, self.out_dim, self.heads, self.concat = in_dim, out_dim, heads, concat
        self.negative_slope, self.attn_dropout = negative_slope, attn_dropout
        self.feat_dropout = feat_dropout
        self.lin = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_dim))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_dim))
        width = heads * out_dim if concat else out_dim
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, block: Block | PaddedBlock) -> torch.Tensor:
        check_input(x, block, self.in_dim, "GATConv", padded=True)
        n_dst = block.num_dst_nodes
        h = self.lin(x).view(-1, self.heads, self.out_dim)            # (n_src, K, F')
        score_src = (h * self.att_src).sum(-1)                          # (n_src, K)
        score_dst = (h[:n_dst] * self.att_dst).sum(-1)                  # (n_dst, K)
        if isinstance(block, PaddedBlock):
            out = self._attend_padded(h, score_src, score_dst, block)
        else:
            out = self._attend(h, score_src, score_dst, block)
        out = out.flatten(1) if self.concat else out.mean(1)    # (n_dst, K F') or (n_dst, F')
        return out if self.bias is None else out + self.bias

    def _attend(self, h: torch.Tensor, score_src: torch.Tensor, score_dst: torch.Tensor,
                block: Block) -> torch.Tensor:
        """(n_dst, K, F'): each destination's heads, attention-weighted sums over the
        block's edges and the added self-loops (scattered softmax)."""
        n_dst = block.num_dst_nodes
        loop = torch.arange(n_dst, device=h.device)
        src = torch.cat([block.edge_src, loop])
        dst = torch.cat([block.edge_dst, loop])
        e = F.leaky_relu(score_src[src] + score_dst[dst], self.negative_slope)  # (E+n, K)
        # the block's own self-loop edges (the same position: destinations come first)
        # get no attention: the added loop stands for them
        is_loop = torch.cat([block.edge_src == block.edge_dst, loop < 0])
        e = e.masked_fill(is_loop.unsqueeze(1), -torch.inf)
        e_max = torch.full((n_dst, self.heads), -torch.inf, dtype=e.dtype, device=e.device)
        e_max = e_max.scatter_reduce(0, dst.unsqueeze(1).expand_as(e), e.detach(), "amax")
        w = torch.exp(e - e_max[dst])
        denom = torch.zeros(n_dst, self.heads, dtype=w.dtype, device=w.device)
        alpha = w / denom.index_add_(0, dst, w)[dst]
        alpha = dropout(alpha, self.attn_dropout, self.training)
        h = dropout(h, self.feat_dropout, self.training)
        out = torch.zeros(n_dst, self.heads, self.out_dim, dtype=h.dtype, device=h.device)
        return out.index_add_(0, dst, h[src] * alpha.unsqueeze(-1))

    def _attend_padded(self, h: torch.Tensor, score_src: torch.Tensor,
                       score_dst: torch.Tensor, block: PaddedBlock) -> torch.Tensor:
        """:meth:`_attend` on a padded block: per row its ``k`` entries and, last, its added
        self-loop, a softmax over that dimension with the entries that are no pick (or a
        self pick) masked out; no scatter."""
        n_dst, k = block.num_dst_nodes, block.fanout
        rows = torch.arange(n_dst, device=h.device).unsqueeze(1)
        nb = torch.cat([block.neighbours, rows], 1)                         # (n_dst, k + 1)
        keep = torch.cat([block.picked & ~block.self_picks,
                          torch.ones_like(rows, dtype=torch.bool)], 1)
        e = F.leaky_relu(score_src.index_select(0, nb.view(-1)).view(n_dst, k + 1, -1)
                         + score_dst.unsqueeze(1), self.negative_slope)    # (n_dst, k + 1, K)
        alpha = torch.softmax(e.masked_fill(~keep.unsqueeze(2), -torch.inf), dim=1)
        alpha = dropout(alpha, self.attn_dropout, self.training)
        h = dropout(h, self.feat_dropout, self.training)
        rows_h = h.index_select(0, nb.view(-1)).view(n_dst, k + 1, self.heads, self.out_dim)
        return (rows_h * alpha.unsqueeze(-1)).sum(1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.in_dim}, {self.out_dim}, heads={self.heads})"


def _gat_layers(in_dim, hidden_dim, out_dim, num_layers, dropout, heads):
    """As Veličković et al.: hidden layers of ``heads`` heads of width ``hidden_dim //
    heads`` concatenated, an output layer of one head; attention and feature dropout =
    ``dropout`` (as their code)."""
    if hidden_dim % heads:
        raise GraphsysError(f"gat: hidden_dim {hidden_dim} is not a multiple of heads {heads}")
    dims = [in_dim] + [hidden_dim] * (num_layers - 1)
    convs = [GATConv(a, hidden_dim // heads, heads, True, attn_dropout=dropout,
                     feat_dropout=dropout) for a in dims[:-1]]
    convs.append(GATConv(dims[-1], out_dim, 1, False, attn_dropout=dropout,
                         feat_dropout=dropout))
    return convs, None


GAT_MODEL = ModelSpec(_gat_layers, F.elu)
