"""Graph isomorphism network (GIN) convolution of Xu et al. over blocks."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.gnn.conv._base import check_input, segment_sum
from graphsys.gnn.conv.spec import ModelSpec, stacked
from graphsys.sampling.block import Block, PaddedBlock


class GINConv(nn.Module):
    r"""The graph isomorphism operator from Xu et al., "How Powerful are Graph Neural
    Networks?", https://arxiv.org/abs/1810.00826.

    .. math::
        \mathbf{h}'_v = \mathrm{MLP}\Big((1 + \epsilon)\,\mathbf{h}_v +
        \sum_{u \in \mathcal{N}(v)} \mathbf{h}_u\Big)

    a sum aggregator (injective on multisets, unlike mean or max) followed by a two-layer
    MLP :math:`\mathbf{W}_2\,\mathrm{ReLU}(\mathbf{W}_1 \mathbf{z} + \mathbf{b}_1) +
    \mathbf{b}_2` of hidden width ``out_dim``. :math:`\epsilon` is 0 (GIN-0, the paper's
    best variant) or learned (``train_eps``). :math:`\mathcal{N}(v)` are the block's sources
    of ``v`` (repeated edges count again).

    Parameters
    ----------
    in_dim : int
        Input features :math:`F`.
    out_dim : int
        Output features :math:`F'` (also the MLP's hidden width).
    eps : float, optional
        Initial :math:`\epsilon` (default 0).
    train_eps : bool, optional
        Learn :math:`\epsilon` (default False).

    Notes
    -----
    Shapes: input ``x`` float (num_src_nodes, F) and a :class:`~graphsys.sampling.Block`
    (or a :class:`~graphsys.sampling.PaddedBlock`: each row's sum over its picks);
    output float (num_dst_nodes, F').

    References
    ----------
    .. [1] K. Xu, W. Hu, J. Leskovec and S. Jegelka, "How Powerful are Graph Neural
       Networks?", ICLR 2019, https://arxiv.org/abs/1810.00826.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn import GINConv
    >>> from graphsys.sampling import Block
    >>> block = Block(torch.tensor([0, 1, 2]), 1, torch.tensor([1, 2]), torch.tensor([0, 0]))
    >>> conv = GINConv(4, 8)
    >>> conv(torch.randn(3, 4), block).shape
    torch.Size([1, 8])
    """

    #: :meth:`forward` takes a :class:`~graphsys.sampling.PaddedBlock`
    takes_padded = True

    def __init__(self, in_dim: int, out_dim: int, eps: float = 0.0, train_eps: bool = False):
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.mlp = nn.Sequential(nn.Linear(in_dim, out_dim), nn.ReLU(),
                                 nn.Linear(out_dim, out_dim))
        eps_t = torch.tensor([float(eps)])
        if train_eps:
            self.eps = nn.Parameter(eps_t)
        else:
            self.register_buffer("eps", eps_t)

    def forward(self, x: torch.Tensor, block: Block | PaddedBlock) -> torch.Tensor:
        check_input(x, block, self.in_dim, "GINConv", padded=True)
        summed = (block.aggregate(x, block.picked) if isinstance(block, PaddedBlock)
                  else segment_sum(x, block))
        return self.mlp((1 + self.eps) * x[:block.num_dst_nodes] + summed)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.in_dim}, {self.out_dim})"


GIN_MODEL = ModelSpec(stacked(GINConv), F.relu)
