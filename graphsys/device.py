"""Device selection shared by every engine: ``device`` is ``cpu``, ``cuda[:k]`` or ``auto``."""

from __future__ import annotations

import numpy as np
import torch

from graphsys.errors import ParameterError

DEVICES = ("cpu", "cuda", "auto")


def resolve_device(device: str | torch.device) -> torch.device:
    """``cpu``, ``cuda[:k]`` or ``auto`` (CUDA when available) -> torch.device; a CUDA
    request without a usable GPU is a one-line :class:`ParameterError` naming ``device``."""
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
