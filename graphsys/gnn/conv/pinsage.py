"""PinSage convolution: importance pooling, concat, dense layer, L2 normalisation."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.gnn.conv._base import check_input, scatter_sum, segment_weights_sum
from graphsys.gnn.conv.spec import ModelSpec
from graphsys.sampling.block import Block


class PinSageConv(nn.Module):
    r"""The PinSage ``CONVOLVE`` operator from Ying et al., "Graph Convolutional Neural
    Networks for Web-Scale Recommender Systems", https://arxiv.org/abs/1806.01973.

    .. math::
        \mathbf{N} = \mathbf{D}_\alpha^{-1} \mathbf{A}_\alpha\,
        \mathrm{ReLU}(\mathbf{H}_{src} \mathbf{Q} + \mathbf{q}), \quad
        \mathbf{Z} = \mathrm{ReLU}([\mathbf{H}_{dst} \,\|\, \mathbf{N}] \mathbf{W} + \mathbf{w}),
        \quad \mathbf{H}' = \mathrm{diag}(\|\mathbf{z}_v\|_2)^{-1} \mathbf{Z}

    node-wise, :math:`\mathbf{n}_v = \sum_{u} \alpha_{uv} \mathrm{ReLU}(\mathbf{Q}^\top
    \mathbf{h}_u + \mathbf{q}) / \sum_u \alpha_{uv}` over the block's sources ``u`` of
    ``v`` with importance weights :math:`\alpha_{uv}` (the block's ``edge_weight``, the
    normalised random-walk visit counts; 1 when absent; :math:`\mathbf{n}_v = 0` without
    neighbours), :math:`\mathbf{z}_v = \mathrm{ReLU}(\mathbf{W}^\top [\mathbf{h}_v \|
    \mathbf{n}_v] + \mathbf{w})` and :math:`\mathbf{h}'_v = \mathbf{z}_v /
    \max(\|\mathbf{z}_v\|_2, \epsilon)`.

    Parameters
    ----------
    in_dim : int
        Input features :math:`F`.
    hidden_dim : int
        Pooled neighbour features (columns of :math:`\mathbf{Q}`).
    out_dim : int
        Output features :math:`F'`.
    normalize : bool, optional
        L2-normalise the output (default True).

    Notes
    -----
    Shapes: input ``x`` float (num_src_nodes, F) and a :class:`~graphsys.sampling.Block`
    (its ``edge_weight`` from :class:`~graphsys.sampling.PinSAGESampler`); output float
    (num_dst_nodes, F'), unit rows when ``normalize``.

    References
    ----------
    .. [1] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> from graphsys.gnn import PinSageConv
    >>> from graphsys.sampling import Block
    >>> block = Block(torch.tensor([0, 1, 2]), 1, torch.tensor([1, 2]), torch.tensor([0, 0]),
    ...               edge_weight=torch.tensor([0.75, 0.25]))   # importance weights
    >>> z = PinSageConv(4, 8, 5)(torch.randn(3, 4), block)
    >>> z.shape, round(z.norm().item(), 4)
    (torch.Size([1, 5]), 1.0)
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, normalize: bool = True):
        super().__init__()
        self.in_dim, self.hidden_dim, self.out_dim = in_dim, hidden_dim, out_dim
        self.normalize = normalize
        self.Q = nn.Linear(in_dim, hidden_dim)
        self.W = nn.Linear(in_dim + hidden_dim, out_dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_uniform_(self.Q.weight, gain=gain)
        nn.init.xavier_uniform_(self.W.weight, gain=gain)
        nn.init.zeros_(self.Q.bias)
        nn.init.zeros_(self.W.bias)

    def forward(self, x: torch.Tensor, block: Block) -> torch.Tensor:
        check_input(x, block, self.in_dim, "PinSageConv")
        n_dst = block.num_dst_nodes
        h = F.relu(self.Q(x))
        alpha = block.edge_weight
        if alpha is None:
            alpha = torch.ones_like(block.edge_src, dtype=x.dtype)
        alpha = alpha.to(x.dtype)
        pooled = scatter_sum(self.message(h, block, alpha), block.edge_dst, n_dst)
        total = segment_weights_sum(alpha, block.edge_dst, n_dst)
        pooled = pooled / torch.where(total > 0, total, torch.ones_like(total)).unsqueeze(1)
        z = F.relu(self.W(torch.cat([x[:n_dst], pooled], dim=1)))
        if self.normalize:
            z = z / z.norm(dim=1, keepdim=True).clamp(min=1e-6)
        return z

    def message(self, h_src: torch.Tensor, block: Block, alpha: torch.Tensor) -> torch.Tensor:
        """Importance-weighted messages, (E, hidden_dim)."""
        return h_src.index_select(0, block.edge_src) * alpha.unsqueeze(1)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.in_dim}, {self.out_dim}, "
                f"hidden={self.hidden_dim}, normalize={self.normalize})")


def _pinsage_layers(in_dim, hidden_dim, out_dim, num_layers, dropout, heads):
    """``num_layers`` convolutions of width ``hidden_dim`` (each ends with ReLU and L2
    normalisation), then a linear head ``hidden_dim -> out_dim`` (Ying et al.)."""
    dims = [in_dim] + [hidden_dim] * num_layers
    return [PinSageConv(a, b, b) for a, b in zip(dims[:-1], dims[1:])], \
        nn.Linear(hidden_dim, out_dim)


PINSAGE_MODEL = ModelSpec(_pinsage_layers, None, sampler="random_walk")
