"""Kernel launches, host<->device transfers and synchronisations of a piece of torch code,
counted without a GPU: what CI pins for the device paths (a sampler's batch, a training
step), run on the CPU.

:class:`DeviceWorkCounter` is a :class:`~torch.utils._python_dispatch.TorchDispatchMode`
(it sees every aten operator the code runs, forward and backward) plus wrappers of the
tensor methods that read values on the host, which a CPU tensor serves without an operator:

* **Launches.** Every operator that would run a kernel on a GPU: all of them except views
  and metadata operators (``slice``, ``view``, ``expand``, ...), uninitialised allocations
  (``empty``), scalar wrapping, scalar reads and copies between devices (counted apart).
  On a host-only run, an operator on host tensors only (a gather into a host staging
  buffer, an optimiser's step counter) runs on the CPU of a GPU run too: it is counted
  apart, in ``host_ops``.
  One operator can launch more than one CUDA kernel (a sort, a scan): the count is of
  operators, the unit of a GPU's launch overhead that the code controls. The exception
  is a concatenation (``cat``, ``stack``) of pieces of more than one dtype: CUDA copies
  those one by one (a kernel or a device-to-device ``cudaMemcpyAsync`` each), so it
  counts a launch per non-empty piece.
* **Transfers.** A copy between two devices (``aten::_to_copy`` / ``aten::copy_``), and on
  a host-only run, a copy *addressed* to a device (``t.to(device, copy=True)``: on a GPU
  run it crosses the bus), and every read of a device value on the host.
* **Synchronisations.** Scalar reads (``.item()``, ``int(t)``, ``bool(t)``), host reads
  (``.tolist()``, ``.cpu()``, ``.numpy()``, a NumPy view through DLPack: a copy to
  pageable memory waits), and the operators whose output size depends on the data
  (``nonzero``, ``unique``, boolean-mask indexing, ``repeat_interleave`` without
  ``output_size``, ...), which read a count on the host on CUDA.

On a host-only run the device is emulated: a tensor counts as *on the device* when it was
made inside the counted region from device data (by a copy addressed to a device, by a
factory such as ``torch.arange(n, device=d)``, or by an operator one of whose inputs is on
the device), or when it was named in ``device_tensors`` (a CSR or feature table uploaded
before). The dispatcher hands every factory a device, the CPU where none was named, so
``torch.zeros(n)`` made in the region counts as on the device too (``torch.tensor`` and
``torch.from_numpy`` of host data do not: they make no factory call). Host
reads of such tensors are the synchronisations and transfers a GPU run would make; reads
of host tensors (a batch's seed ids sliced from a host permutation) are not counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import torch
from torch.utils.weak import WeakIdKeyDictionary

from graphsys.analysis.kernels import TransferCounter, transfer

#: Operators that launch no kernel: views, metadata, uninitialised allocations.
NO_KERNEL = frozenset({
    "slice", "select", "view", "_unsafe_view", "_reshape_alias", "expand", "unsqueeze",
    "squeeze", "alias", "as_strided", "detach", "t", "transpose", "permute", "unbind",
    "split", "split_with_sizes", "chunk", "narrow", "view_as", "unfold", "diagonal",
    "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided",
    "scalar_tensor", "lift_fresh", "set_", "resize_", "is_same_size",
    "_has_compatible_shallow_copy_type", "sym_size", "sym_stride", "sym_numel",
    "sym_storage_offset", "is_pinned", "_pin_memory", "pin_memory",
})
#: Operators whose output size is read from the data (a host synchronisation on CUDA).
DATA_DEPENDENT = frozenset({
    "nonzero", "nonzero_static_fallback", "_unique", "_unique2", "unique_dim",
    "unique_consecutive", "masked_select", "bincount", "histc",
})
#: Tensor methods that read values on the host without an operator on a CPU tensor
#: (``__dlpack__``: NumPy's view of a tensor, :func:`graphsys.device.host_array`, which a
#: CUDA tensor cannot give without a copy to the host).
HOST_READS = ("tolist", "numpy", "cpu", "__dlpack__")


def _pieces(name: str, args) -> int:
    """Launches of a concatenation: one, or with pieces of more than one dtype (which CUDA
    copies into the output one at a time) one per non-empty piece."""
    if name not in ("cat", "stack") or not args or not isinstance(args[0], (list, tuple)):
        return 1
    pieces = [t for t in args[0] if isinstance(t, torch.Tensor) and t.numel()]
    return len(pieces) if len({t.dtype for t in pieces}) > 1 else 1


def _bool_index(name: str, args) -> bool:
    """Indexing by a boolean mask (``t[mask]``), whose size is the mask's count."""
    return name == "index" and any(isinstance(i, torch.Tensor) and i.dtype == torch.bool
                                   for i in args[1])


class DeviceWorkCounter(TransferCounter):
    """Counts launches, transfers and synchronisations of the code run inside it.

    Parameters
    ----------
    device : str or torch.device, optional
        The device of the code under count (default ``"cpu"``: a host-only run, the device
        emulated as the module docstring says).
    device_tensors : iterable of tensor, optional
        Tensors already on the (emulated) device when the count starts.

    Attributes
    ----------
    launches : int
        Operators that launch a kernel; ``ops`` counts them by name.
    host_ops : Counter
        On a host-only run, the operators on host tensors only, by name (no launch).
    syncs : int
        Host synchronisations; ``sync_reasons`` by cause.
    records : list of (str, int)
        The transfers: ``(kind, bytes)``, kind ``h2d``, ``d2h`` or ``d2d``.

    Examples
    --------
    >>> import torch
    >>> from graphsys.analysis.device_counts import DeviceWorkCounter
    >>> host = torch.arange(6)
    >>> with DeviceWorkCounter() as c:
    ...     x = host.to("cpu", copy=True)            # an upload (on a GPU run)
    ...     y = (x * 2 + 1).sum()
    ...     total = y.tolist()                      # a host read of a device value
    ...     ids = host[2:4].tolist()                # a host tensor: not counted
    >>> c.launches, c.transfers, c.syncs, total
    (3, 2, 1, 36)
    """

    def __init__(self, device: str | torch.device = "cpu",
                 device_tensors: Iterable[torch.Tensor] = ()) -> None:
        super().__init__()
        self.device = torch.device(device)
        self.host_run = self.device.type == "cpu"
        self.launches = 0
        self.ops: Counter[str] = Counter()
        self.host_ops: Counter[str] = Counter()
        self.sync_reasons: Counter[str] = Counter()
        self._on_device = WeakIdKeyDictionary()
        for t in device_tensors:
            self._on_device[t] = True
        self._saved: dict[str, object] = {}
        self._quiet = False

    @property
    def transfers(self) -> int:
        return len(self.records)

    def summary(self) -> dict[str, int]:
        """``{"launches", "transfers", "syncs"}``."""
        return {"launches": self.launches, "transfers": self.transfers, "syncs": self.syncs}

    def _sync(self, why: str) -> None:
        self.syncs += 1
        self.sync_reasons[why] += 1

    def _is_device(self, t: torch.Tensor) -> bool:
        return t.device.type != "cpu" if not self.host_run else t in self._on_device

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._quiet:
            return func(*args, **kwargs)
        name = func.overloadpacket.__name__
        tensors = [a for a in args if isinstance(a, torch.Tensor)] + \
            [a for v in args if isinstance(v, (list, tuple)) for a in v
             if isinstance(a, torch.Tensor)]
        crossing = self._crossing(name, args, kwargs)
        on_device = any(self._is_device(t) for t in tensors) or (
            not tensors and kwargs.get("device") is not None)
        if crossing:
            self.records.append(crossing)
        elif name == "_local_scalar_dense":
            if self._is_device(args[0]) or not self.host_run:
                self._sync("scalar read")
                self.records.append(("d2h", int(args[0].element_size())))
        elif name in DATA_DEPENDENT or _bool_index(name, args) or (
                name == "repeat_interleave" and kwargs.get("output_size") is None):
            self._sync(f"data-dependent size ({name})")
            self._count(name)
        elif name not in NO_KERNEL:
            if on_device or not self.host_run:
                self._count(name, _pieces(name, args))
            else:
                self.host_ops[name] += 1
        out = func(*args, **kwargs)
        if self.host_run and (crossing or on_device):
            for t in (out if isinstance(out, (list, tuple)) else (out,)):
                if isinstance(t, torch.Tensor):
                    self._on_device[t] = True
        return out

    def _count(self, name: str, n: int = 1) -> None:
        self.launches += n
        self.ops[name] += n

    def note_launch(self, name: str) -> None:
        """Count a kernel that code launches outside torch's dispatcher (a jiterator
        kernel), which the code reports to the dispatch modes that are active."""
        self._count(name)

    def _crossing(self, name: str, args, kwargs) -> tuple[str, int] | None:
        """The transfer an operator makes, or None: a copy between devices, or on a
        host-only run one addressed to a device."""
        if name == "_to_copy" and isinstance(args[0], torch.Tensor):
            dst = kwargs.get("device")
            if dst is None:
                return None
            src, dst = args[0], torch.device(dst)
            if src.device != dst or self.host_run:
                return transfer(src, dst)
        elif name == "copy_" and len(args) > 1 and isinstance(args[1], torch.Tensor):
            src, dst = args[1], args[0]
            if src.device != dst.device:
                return transfer(src, dst.device)
            if self.host_run and self._is_device(dst) != self._is_device(src):
                return ("h2d" if self._is_device(dst) else "d2h",
                        int(src.numel() * src.element_size()))
        return None

    def __enter__(self):
        if self.host_run:
            for name in HOST_READS:
                self._saved[name] = getattr(torch.Tensor, name)
                setattr(torch.Tensor, name, self._reader(name, self._saved[name]))
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            for name, fn in self._saved.items():
                setattr(torch.Tensor, name, fn)
            self._saved.clear()

    def _reader(self, name: str, fn):
        counter = self

        def read(self, *args, **kwargs):
            if not counter._is_device(self):
                return fn(self, *args, **kwargs)
            counter._sync(f"host read ({name})")
            counter.records.append(("d2h", int(self.numel() * self.element_size())))
            out = fn(self, *args, **kwargs)
            if out is self:       # .cpu() of a CPU tensor: the copy a GPU run makes, on
                counter._quiet = True      # the host (its reads are not counted again)
                try:
                    out = self.detach()
                finally:
                    counter._quiet = False
            return out
        return read
