"""What the registry knows of a built-in GNN model: :class:`ModelSpec`.

Every convolution file ends with its model's spec (``SAGE_MODEL = ModelSpec(...)``),
registered by name in :data:`graphsys.plugins.GNN_MODELS`; :class:`graphsys.gnn.model.GNN`
builds its layers from it, and the trainer picks its block sampler by :attr:`sampler`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

#: ``layers(in_dim, hidden_dim, out_dim, num_layers, dropout, heads) -> (convs, head)``.
LayersFactory = Callable[[int, int, int, int, float, int], tuple[list[nn.Module], nn.Module | None]]


@dataclass(frozen=True)
class ModelSpec:
    """A ``num_layers`` stack of one convolution.

    Attributes:
        layers: builds the convolutions (input layer first) and the optional head applied
            after the last one (:data:`LayersFactory`).
        activation: applied between layers (not after the last); None when each
            convolution ends with its own (PinSage).
        sampler: ``"neighbors"`` (uniform neighbour sampling) or ``"random_walk"``
            (PinSage's visit-count neighbourhoods) for the blocks the model is trained on.
    """

    layers: LayersFactory
    activation: Callable[[torch.Tensor], torch.Tensor] | None
    sampler: str = "neighbors"


def stacked(conv: Callable[[int, int], nn.Module]) -> LayersFactory:
    """``num_layers`` of ``conv(a, b)``: ``in -> hidden -> ... -> out``, no head."""
    def layers(in_dim, hidden_dim, out_dim, num_layers, dropout, heads):
        dims = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        return [conv(a, b) for a, b in zip(dims[:-1], dims[1:])], None
    return layers


def random_walk_sampling(model: str) -> bool:
    """Whether the model named ``model`` trains on random-walk blocks (False for a
    ``module:Factory`` model)."""
    from graphsys.plugins import GNN_MODELS

    return model in GNN_MODELS and GNN_MODELS.get(model).sampler == "random_walk"
