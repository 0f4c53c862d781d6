"""The GNN trainers' optimiser: Adam with the L2 penalty on every layer or the first only,
fused into one update kernel where torch fuses Adam for the parameters' device."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from graphsys.errors import ParameterError


def fused_adam(params: Iterable, **options) -> torch.optim.Adam:
    """``torch.optim.Adam(params, **options)`` with its update fused (``fused=True``: one
    kernel a step for every parameter of a device and dtype, its step counters on that
    device, so no host read either) where torch fuses Adam for every parameter's device
    (CUDA; the CPU from torch 2.4), else torch's own choice (its multi-tensor update, a
    few kernels for all the parameters instead of about six each, where its device
    has those kernels). The same algorithm either way; the fused kernel may round the
    last bit differently.

    Parameters
    ----------
    params : iterable of tensor or of dict
        Parameters or parameter groups, as ``torch.optim.Adam`` takes them.
    **options
        ``lr``, ``weight_decay`` and the other options of ``torch.optim.Adam``.

    Returns
    -------
    torch.optim.Adam

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn.optim import fused_adam
    >>> w = torch.nn.Parameter(torch.ones(3))
    >>> opt = fused_adam([w], lr=0.1)
    >>> w.sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]          # Adam's first step: lr * sign(grad)
    [0.9, 0.9, 0.9]
    """
    params = list(params)
    tensors = [p for g in params for p in (g["params"] if isinstance(g, dict) else [g])]
    # a small model on the CPU: the update on one intra-op thread (_SerialAdam)
    kind = (_SerialAdam if tensors and all(p.device.type == "cpu" for p in tensors)
            and sum(p.numel() for p in tensors) <= SERIAL_STEP_MAX else torch.optim.Adam)
    if _fusable(params):
        try:
            return kind(params, fused=True, **options)
        except RuntimeError:   # a torch before 2.4 fuses Adam on CUDA only
            pass
    return kind(params, **options)


#: Parameter elements (all groups together) up to which a CPU optimiser step runs on one
#: intra-op thread (:func:`fused_adam`).
SERIAL_STEP_MAX = 1 << 20


class _SerialAdam(torch.optim.Adam):
    """``torch.optim.Adam`` whose step runs on one intra-op thread: the update works
    tensor by tensor, each a parallel region of its own, and for a model of a few hundred
    thousand parameters (TGAT's, TGN's) the regions' start and join cost more than the
    arithmetic, many times more where another process holds a core. The same update
    (each element's arithmetic does not depend on the thread count)."""

    def step(self, closure=None):
        loss = None
        if closure is not None:  # the model's forward and backward keep every thread
            with torch.enable_grad():
                loss = closure()
        threads = torch.get_num_threads()
        if threads == 1:
            super().step()
            return loss
        torch.set_num_threads(1)
        try:
            super().step()
        finally:
            torch.set_num_threads(threads)
        return loss


def _fusable(params: list) -> bool:
    """Every parameter (of ``params``, tensors or groups) is a floating-point tensor on a
    device torch fuses Adam for (checked here: torch checks it at the first step)."""
    try:
        from torch.optim.optimizer import _get_fused_kernels_supported_devices
        devices = set(_get_fused_kernels_supported_devices())
    except ImportError:
        devices = {"cuda"}
    tensors = [p for g in params for p in (g["params"] if isinstance(g, dict) else [g])]
    return all(p.is_floating_point() and p.device.type in devices for p in tensors)


def adam(model: nn.Module, inp: nn.Module, lr: float, weight_decay: float,
         weight_decay_layers: str) -> torch.optim.Adam:
    """Adam (learning rate ``lr``, :func:`fused_adam`) over ``model`` and the layer-0
    input ``inp``, with the L2 penalty ``weight_decay`` on every parameter
    (``weight_decay_layers="all"``) or on ``model.convs[0]`` and ``inp`` only (``"first"``;
    the other layers get none)."""
    if weight_decay_layers == "all":
        params = list(model.parameters()) + list(inp.parameters())
        return fused_adam(params, lr=lr, weight_decay=weight_decay)
    convs = getattr(model, "convs", None)
    if not isinstance(convs, nn.ModuleList) or len(convs) == 0:
        raise ParameterError("weight_decay_layers", f"'first' needs a model whose layers are "
                             f"a ModuleList named convs; {type(model).__name__} has none")
    first = {id(p) for p in convs[0].parameters()}
    decayed = list(convs[0].parameters()) + list(inp.parameters())
    rest = [p for p in model.parameters() if id(p) not in first]
    return fused_adam([{"params": decayed, "weight_decay": weight_decay},
                       {"params": rest, "weight_decay": 0.0}], lr=lr)
