"""The GNN trainers' optimiser: Adam with the L2 penalty on every layer or the first only."""

from __future__ import annotations

import torch
from torch import nn

from graphsys.errors import ParameterError


def adam(model: nn.Module, inp: nn.Module, lr: float, weight_decay: float,
         weight_decay_layers: str) -> torch.optim.Adam:
    """Adam (learning rate ``lr``) over ``model`` and the layer-0 input ``inp``, with the L2
    penalty ``weight_decay`` on every parameter (``weight_decay_layers="all"``) or on
    ``model.convs[0]`` and ``inp`` only (``"first"``; the other layers get none)."""
    if weight_decay_layers == "all":
        params = list(model.parameters()) + list(inp.parameters())
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    convs = getattr(model, "convs", None)
    if not isinstance(convs, nn.ModuleList) or len(convs) == 0:
        raise ParameterError("weight_decay_layers", f"'first' needs a model whose layers are "
                             f"a ModuleList named convs; {type(model).__name__} has none")
    first = {id(p) for p in convs[0].parameters()}
    decayed = list(convs[0].parameters()) + list(inp.parameters())
    rest = [p for p in model.parameters() if id(p) not in first]
    return torch.optim.Adam([{"params": decayed, "weight_decay": weight_decay},
                             {"params": rest, "weight_decay": 0.0}], lr=lr)
