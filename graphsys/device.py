"""Device selection shared by every engine: ``device`` is ``cpu``, ``cuda[:k]`` or ``auto``."""

from __future__ import annotations

import numpy as np
import torch

from graphsys.errors import ParameterError

DEVICES = ("cpu", "cuda", "auto")


def resolve_device(device: str | torch.device) -> torch.device:
    """Turn a device name into a :class:`torch.device`, checking that it is usable.

    Every engine (BSP, embeddings, GNNs, the profiler) takes its ``device`` argument through
    this function, so the names and the errors are the same everywhere.

    Parameters
    ----------
    device : str or torch.device
        ``"cpu"``; ``"cuda"`` or ``"cuda:k"`` (GPU ``k``); or ``"auto"``, which picks CUDA
        when a GPU is visible and the CPU otherwise.

    Returns
    -------
    torch.device
        The device to allocate on.

    Raises
    ------
    ParameterError
        For an unknown name, or a CUDA device that this machine or this build of torch
        does not have (one line naming ``device``; the CLI shows it as ``--device``).

    Examples
    --------
    >>> from graphsys.device import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("auto").type in ("cpu", "cuda")
    True
    >>> resolve_device("tpu")
    Traceback (most recent call last):
    ...
    graphsys.errors.ParameterError: device 'tpu': unknown device (choose from cpu, cuda, auto)
    """
    name = str(device)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            why = "no GPU visible" if torch.version.cuda else "torch built without CUDA"
            raise ParameterError("device", f"{name}: no CUDA device is available ({why}, "
                                           f"torch {torch.__version__}); use cpu or auto")
        dev = torch.device(name)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ParameterError("device", f"{name}: only {torch.cuda.device_count()} CUDA "
                                           f"device(s)")
        return dev
    raise ParameterError("device", f"{name!r}: unknown device (choose from "
                                   f"{', '.join(DEVICES)})")


def host_array(t: torch.Tensor) -> np.ndarray:
    """A NumPy view (no copy) of a CPU tensor's memory, bool as uint8, taken through DLPack:
    no torch operator is dispatched (``Tensor.numpy()`` dispatches four, which a profiled
    run would count as the workload's own)."""
    a = np.from_dlpack(t)
    return a.view(np.uint8) if a.dtype == np.bool_ else a
