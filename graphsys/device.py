"""Device selection shared by every engine: ``device`` is ``cpu``, ``cuda[:k]`` or ``auto``.

torch is imported where a device needs it: :func:`resolve_device` returns a
:class:`torch.device`, while :func:`resolve_lazily` names the CPU :data:`HOST` without
importing torch (a CPU run of a builtin algorithm computes with NumPy and numba alone).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from graphsys.errors import ParameterError

if TYPE_CHECKING:
    import torch

DEVICES = ("cpu", "cuda", "auto")


class HostDevice:
    """The CPU before torch is imported: ``type`` ``"cpu"``, ``index`` None and ``str()``
    ``"cpu"``, as :class:`torch.device` has them; :func:`as_torch` turns it into
    ``torch.device("cpu")`` where a tensor is made."""

    type = "cpu"
    index = None

    def __str__(self) -> str:
        return "cpu"

    def __repr__(self) -> str:
        return "HostDevice('cpu')"


#: The CPU, named without torch (see :class:`HostDevice`).
HOST = HostDevice()


def resolve_lazily(device) -> torch.device | HostDevice:
    """:func:`resolve_device`, except that the CPU (``"cpu"``, or :data:`HOST`) is
    :data:`HOST`: no torch import.

    Examples
    --------
    >>> from graphsys.device import resolve_lazily
    >>> resolve_lazily("cpu")
    HostDevice('cpu')
    """
    if isinstance(device, HostDevice) or (isinstance(device, str) and device == "cpu"):
        return HOST
    return resolve_device(device)


def as_torch(device) -> torch.device:
    """``device`` as a :class:`torch.device` (:data:`HOST` as ``torch.device("cpu")``)."""
    import torch

    return torch.device("cpu") if isinstance(device, HostDevice) else device


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
    import torch

    name = str(device)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu" or name == "cpu:0":   # str(torch.device("cpu", 0)) is "cpu:0"
        return torch.device("cpu")
    if name.startswith("cuda"):
        try:                            # refuses "cuda:-1", "cuda:x", "cudax"
            dev = torch.device(name)
        except RuntimeError:
            dev = None
        if dev is None or dev.type != "cuda":
            raise ParameterError("device", f"{name!r}: not a CUDA device (cuda, or cuda:k "
                                           f"for GPU k >= 0)")
        if not torch.cuda.is_available():
            why = "no GPU visible" if torch.version.cuda else "torch built without CUDA"
            raise ParameterError("device", f"{name}: no CUDA device is available ({why}, "
                                           f"torch {torch.__version__}); use cpu or auto")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ParameterError("device", f"{name}: only {torch.cuda.device_count()} CUDA "
                                           f"device(s)")
        return dev
    raise ParameterError("device", f"{name!r}: unknown device (choose from "
                                   f"{', '.join(DEVICES)})")


def device_key(device: torch.device) -> torch.device:
    """``device`` (a resolved one) with its index filled in: ``cuda`` as ``cuda:k`` for the
    current GPU ``k``, so that a cache of copies per device holds one for ``cuda`` and
    ``cuda:k`` (one GPU, one copy). The CPU has no index.

    Examples
    --------
    >>> import torch
    >>> from graphsys.device import device_key
    >>> device_key(torch.device("cpu"))
    device(type='cpu')
    """
    import torch

    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def generator(device: torch.device, seed: int) -> torch.Generator:
    """A random generator on ``device`` seeded by ``seed``; a CPU one on a device without
    generators (torch's lazy and meta devices). Draw with ``device=gen.device`` and move
    the draws to ``device`` (a no-op where the generator is the device's).

    Examples
    --------
    >>> import torch
    >>> from graphsys.device import generator
    >>> gen = generator(torch.device("cpu"), 7)
    >>> torch.randint(10, (3,), generator=gen, device=gen.device).tolist()
    [5, 2, 1]
    """
    import torch

    try:
        gen = torch.Generator(device=device)
    except RuntimeError:
        gen = torch.Generator()
    return gen.manual_seed(seed)


def host_array(t: torch.Tensor | np.ndarray) -> np.ndarray:
    """A NumPy view (no copy) of a CPU tensor's memory, bool as uint8, taken through DLPack:
    no torch operator is dispatched (``Tensor.numpy()`` dispatches four, which a profiled
    run would count as the workload's own). A NumPy array is viewed the same way."""
    a = t if isinstance(t, np.ndarray) else np.from_dlpack(t)
    return a.view(np.uint8) if a.dtype == np.bool_ else a


def csr_tensor(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor,
               shape: tuple[int, int]) -> torch.Tensor:
    """A CSR tensor from its parts, its invariants not checked (every caller's index was
    checked where it was read or built); torch's warning that the layout is in beta, given
    on every CSR tensor built, is left out (the operations used are covered by graphsys's
    tests)."""
    import torch

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(crow, col, values, shape, check_invariants=False)


def tensor_bytes(*tensors: torch.Tensor) -> int:
    """Bytes the tensors' own storage takes: a sparse CSR tensor counts its row offsets,
    column ids and values.

    Examples
    --------
    >>> import torch
    >>> mat = csr_tensor(torch.tensor([0, 1, 2]), torch.tensor([1, 0]), torch.ones(2), (2, 2))
    >>> tensor_bytes(mat, torch.zeros(3, dtype=torch.int32))
    60
    """
    import torch

    total = 0
    for t in tensors:
        parts = ((t.crow_indices(), t.col_indices(), t.values())
                 if t.layout == torch.sparse_csr else (t,))
        total += sum(p.numel() * p.element_size() for p in parts)
    return total


def note_launch(name: str) -> None:
    """Report a kernel launched outside torch's dispatcher (a jiterator kernel, a CUDA
    graph replay) to the active dispatch modes that count launches
    (:class:`graphsys.analysis.device_counts.DeviceWorkCounter`)."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    for mode in _get_current_dispatch_mode_stack():
        note = getattr(mode, "note_launch", None)
        if note is not None:
            note(name)
