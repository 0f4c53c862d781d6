"""User models in :func:`graphsys.gnn.train`: any ``torch.nn.Module`` over sampled blocks.

A model is called in one of two conventions (``inputs``):

``blocks``  ``model(blocks, x)``: ``blocks`` a list of :class:`~graphsys.sampling.Block`
            (input layer first), ``x`` float (blocks[0].num_src_nodes, F); returns
            (blocks[-1].num_dst_nodes, C). Every block has ``edge_index`` (2, E) and
            ``num_dst_nodes``, so a PyG conv runs as ``conv((x, x[:b.num_dst_nodes]),
            b.edge_index)``.
``adjs``    ``model(x, adjs)``: ``adjs`` a list of :class:`Adj` ``(edge_index, e_id, size)``,
            what PyG's ``NeighborSampler`` yielded, so models written for it run unchanged.

``--model module:Factory`` (CLI) names a callable ``Factory(in_dim=, hidden_dim=, out_dim=,
num_layers=, dropout=)`` returning such a module; :func:`load_factory` imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from graphsys.errors import GraphsysError
from graphsys.sampling.adjacency import Adjacency
from graphsys.sampling.block import Block
from graphsys.sampling.neighbor import NeighborSampler
from graphsys.user_code import load_object

#: Conventions a user model is called in.
INPUTS = ("blocks", "adjs")
#: Destination nodes per step of :func:`full_neighbourhood_outputs`.
EVAL_CHUNK = 1 << 12


class Adj(NamedTuple):
    """One layer in PyG ``NeighborSampler`` form: ``edge_index`` int64 (2, E) (row 0 into
    the layer's sources, row 1 into its targets), ``e_id`` (None: not tracked), ``size``
    ``(num_src, num_dst)``."""

    edge_index: torch.Tensor
    e_id: torch.Tensor | None
    size: tuple[int, int]


def load_factory(spec: str) -> Callable[..., nn.Module]:
    """The model factory named ``module:Factory``; one-line errors (see
    :func:`graphsys.user_code.load_object`)."""
    return load_object(spec, "model")


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
                               device: torch.device, chunk: int = EVAL_CHUNK) -> torch.Tensor:
    """Outputs of every node, float32 (num_nodes, C) on the CPU, from its full
    ``num_layers``-hop neighbourhood, ``chunk`` destinations at a time (for models
    without a per-layer method; memory grows with the neighbourhoods' size)."""
    sampler = NeighborSampler(adj, [-1] * num_layers)
    parts = []
    for a in range(0, num_nodes, chunk):
        seeds = np.arange(a, min(num_nodes, a + chunk), dtype=np.int64)
        blocks = [b.to(device) for b in sampler.sample_blocks(seeds, 0, parallel=False)]
        parts.append(call(blocks, inputs(blocks[0].src_nodes)).float().cpu())
    return torch.cat(parts)
