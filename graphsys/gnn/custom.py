"""User models in :func:`graphsys.gnn.train`: any ``torch.nn.Module`` over sampled blocks.

A model is called in one of two conventions (``TrainConfig.inputs``):

``blocks``  ``model(blocks, x)``: ``blocks`` a list of :class:`~graphsys.sampling.Block`
            (input layer first), ``x`` float (blocks[0].num_src_nodes, F); returns
            (blocks[-1].num_dst_nodes, C). Every block has ``edge_index`` (2, E) and
            ``num_dst_nodes``, so a PyG conv runs as ``conv((x, x[:b.num_dst_nodes]),
            b.edge_index)``.
``adjs``    ``model(x, adjs)``: ``adjs`` a list of :class:`Adj` ``(edge_index, e_id, size)``,
            what PyG's ``NeighborSampler`` yielded, so models written for it run unchanged.

``--model module:Factory`` (CLI) names a callable ``Factory(in_dim=, hidden_dim=, out_dim=,
num_layers=, dropout=)`` returning such a module; :func:`graphsys.user_code.build` imports
and calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import nn

from graphsys.errors import GraphsysError
from graphsys.gnn.config import INPUTS
from graphsys.sampling.adjacency import Adjacency
from graphsys.sampling.block import Block
from graphsys.sampling.neighbor import NeighborSampler

#: Destination nodes per step of :func:`full_neighbourhood_outputs`.
EVAL_CHUNK = 1 << 12


class Adj(NamedTuple):
    """One layer in PyG ``NeighborSampler`` form: ``edge_index`` int64 (2, E) (row 0 into
    the layer's sources, row 1 into its targets), ``e_id`` (None: not tracked), ``size``
    ``(num_src, num_dst)``."""

    edge_index: torch.Tensor
    e_id: torch.Tensor | None
    size: tuple[int, int]


def caller(model: nn.Module, inputs: str) -> Callable[[list[Block], torch.Tensor], torch.Tensor]:
    """``(blocks, x) -> outputs`` for ``model`` called in convention ``inputs``."""
    if inputs == "blocks":
        return model
    if inputs == "adjs":
        return lambda blocks, x: model(x, [Adj(b.edge_index, None, b.size) for b in blocks])
    raise GraphsysError(f"inputs must be one of {', '.join(INPUTS)}, got {inputs!r}")


@torch.no_grad()
def full_neighbourhood_outputs(call, inputs: Callable[[torch.Tensor], torch.Tensor],
                               adj: Adjacency, num_layers: int, num_nodes: int, *,
                               device: torch.device, chunk: int = EVAL_CHUNK,
                               num_workers: int = 1, prefetch: int = 2) -> torch.Tensor:
    """Outputs of every node, float32 (num_nodes, C) on the CPU, from its full
    ``num_layers``-hop neighbourhood, ``chunk`` destinations per batch of a
    :class:`~graphsys.gnn.NodeLoader` (for models without a per-layer method; memory grows
    with the neighbourhoods' size)."""
    from graphsys.gnn.loader import NodeLoader

    loader = NodeLoader(None, NeighborSampler(adj, [-1] * num_layers),
                        torch.arange(num_nodes), batch_size=chunk, shuffle=False,
                        num_workers=num_workers, prefetch=prefetch, features=None,
                        labels=None, device=device)
    parts = [call(b.blocks, inputs(b.input_nodes)).float().cpu() for b in loader]
    return torch.cat(parts) if parts else torch.zeros(0)
