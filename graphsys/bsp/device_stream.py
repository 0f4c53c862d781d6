"""Edge batches of an out-of-core run on the torch backend, moved to the device through a
ring of staging buffers allocated once per run, and kept on the device when they fit a
memory budget (:class:`DeviceBuckets`, used by :class:`~graphsys.bsp.stream.StreamEdges`).

Layout on the device: a record batch's int32 local source and destination offsets (and its
float32 weights only when the program reads weights), as stored: 8 bytes an edge for an
unweighted program, 12 weighted; where both partitions of the bucket have fewer than
:data:`PACK_LIMIT` vertices, the two offsets share one int32 word (``src << 16 | dst``): 4
bytes an edge unweighted, 8 weighted. The words are split, the partition offsets added, and
the ids widened to int64 for the scatter, by device ops of the compute.

Mechanism (CUDA): each streamed batch is copied from its mapped bucket file straight into
one of :data:`RING` page-locked host buffers (``np.copyto`` into a NumPy view of the pinned
tensor: no intermediate copy), then copied to the device buffer of the same slot on a side
stream; the compute stream waits for that copy's event, and the side stream waits, before
it overwrites a slot, for the event recorded after the compute that read the slot. The host
waits for a slot's previous copy before it writes into it again. So the copy of batch
``k + 1`` runs while batch ``k`` is computed. On the CPU the same ring is used with
ordinary host memory, each batch's copy out of its slot is a copy addressed to the device
(what :class:`~graphsys.analysis.device_counts.DeviceWorkCounter` counts as a transfer),
and the stream operations are skipped: the CPU tests run the same code in the same order.

Residency: in the first superstep each batch, in the order the pass reads them, is kept on
the device while the kept bytes stay within the budget (:func:`resident_budget`); later
supersteps read kept batches where they are and stream only the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from graphsys.errors import ParameterError

if TYPE_CHECKING:  # torch is imported where a batch moves: a CPU run never loads it
    import torch

#: Staging slots of the ring: one being copied while the other is computed
RING = 2
#: A batch whose local offsets are all below this (both partitions this small) travels as one
#: int32 word an edge, ``src << 16 | dst``: 4 bytes an edge unweighted instead of 8
PACK_LIMIT = 1 << 16
#: The default budget on CUDA: this share of the device memory free when the run starts
RESIDENT_FRACTION = 0.5


def host_buffer(n: int, pin: bool) -> torch.Tensor:
    """An int32 (n,) host staging buffer, page-locked when ``pin``: every staging
    allocation of a run goes through here (a run makes :data:`RING` of them, sized to the
    longest batch it may read; :data:`RING` more, at least twice as long, only for a batch
    longer than that)."""
    import torch

    return torch.empty(n, dtype=torch.int32, pin_memory=pin)


def check_budget(budget) -> None:
    """ParameterError (one line) unless ``budget`` is None, an int >= 0 or a float in
    [0, 1] (see :func:`resident_budget`)."""
    if budget is None:
        return
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not (
            budget >= 0) or (isinstance(budget, float) and budget > 1):
        raise ParameterError("device_budget", f"must be bytes (an int >= 0) or a share of "
                                              f"free device memory in [0, 1], got {budget!r}")


def resident_budget(device: torch.device, budget: int | float | None) -> int:
    """Bytes of edges a run may keep on ``device``: ``budget`` bytes (an int >= 0), or a
    float in [0, 1] as a share of the device memory free now (0 off CUDA); None: the
    default, :data:`RESIDENT_FRACTION` of the free memory on CUDA and 0 elsewhere (a CPU
    run keeps nothing: its batches are read from the mapped files)."""
    check_budget(budget)
    if budget is None:
        budget = RESIDENT_FRACTION if device.type == "cuda" else 0
    if isinstance(budget, float):
        if device.type != "cuda":
            return 0
        import torch

        free, _ = torch.cuda.mem_get_info(device)
        return int(free * budget)
    return int(budget)


def _stage(view: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None,
           packed: bool) -> int:
    """Write a batch's columns into the int32 staging ``view`` straight from its (mapped)
    arrays: ``src``, ``dst`` (or ``src << 16 | dst`` when ``packed``), then the weights.
    Returns the int32 words written."""
    n = len(src)
    if packed:
        word = view[:n].view(np.uint32)
        np.left_shift(src, 16, out=word, casting="unsafe")
        np.bitwise_or(word, dst, out=word, casting="unsafe")
    else:
        np.copyto(view[:n], src, casting="no")
        np.copyto(view[n:2 * n], dst, casting="no")
    ids = 1 if packed else 2
    if weight is not None:
        np.copyto(view[ids * n:(ids + 1) * n].view(np.float32), weight, casting="same_kind")
    return n * (ids + (weight is not None))


class _Slot:
    """One staging slot: host buffer (pinned on CUDA), its NumPy view, and on CUDA the
    device buffer and the events of its last copy and of the last compute that read it."""

    def __init__(self, n: int, device: torch.device):
        import torch

        cuda = device.type == "cuda"
        self.host = host_buffer(n, cuda)
        self.view = self.host.numpy()
        self.device = torch.empty(n, dtype=torch.int32, device=device) if cuda else None
        self.copied = torch.cuda.Event() if cuda else None
        self.consumed = torch.cuda.Event() if cuda else None
        self.used = False


class DeviceBuckets:
    """Record batches on the device for one run; see the module docstring.

    Parameters
    ----------
    device : torch.device
        Where the compute runs.
    budget : int
        Bytes of batches that may stay on the device (:func:`resident_budget`).
    max_batch : int
        The longest batch the pass reads (edges): the ring's size.
    weights : bool
        Whether batches carry float32 weights (the program reads them).

    Attributes
    ----------
    resident_bytes : int
        Bytes of batches kept on the device.
    moved_bytes : int
        Bytes copied host -> device so far (streamed batches and first uploads).
    staging_allocations : int
        Staging buffers allocated (:func:`host_buffer` calls): :data:`RING` a run.
    """

    def __init__(self, device: torch.device, budget: int, max_batch: int, weights: bool):
        import torch

        self.device, self.budget, self.weights = device, budget, weights
        self.cols = 3 if weights else 2
        self.cuda = device.type == "cuda"
        self.side = torch.cuda.Stream(device) if self.cuda else None
        self.resident: dict[tuple, torch.Tensor] = {}
        #: batches seen once and not kept: streamed every superstep
        self.streamed: set[tuple] = set()
        self.resident_bytes = self.moved_bytes = self.staging_allocations = 0
        self.slots: list[_Slot] = []
        self._capacity = 0
        self._next = 0
        self._last: _Slot | None = None
        self._grow(max_batch)

    def _grow(self, max_batch: int) -> None:
        if max_batch <= self._capacity:
            return
        self.finish()
        self._capacity = max(max_batch, 2 * self._capacity)  # a longer batch: at least double
        self.slots = [_Slot(max(1, self._capacity * self.cols), self.device)
                      for _ in range(RING)]
        self.staging_allocations += RING

    def fetch(self, key: tuple, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None,
              packed: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The batch ``key`` (int32 ``src``, ``dst`` (n,), float32 ``weight`` (n,) or None)
        on the device, ready for the compute stream: (src int32, dst int32, weight float32
        or None), made from a staging slot on CUDA (valid until the next :data:`RING` - 1
        fetches) or from the batch's resident copy. ``packed``: every offset is below
        :data:`PACK_LIMIT` (both partitions are that small), and the batch travels and
        stays as one int32 word an edge (``src << 16 | dst``), split by the device."""
        import torch

        if key in self.resident:
            return self._split(self.resident[key], len(src), packed)
        n = len(src)
        if self._last is not None and self.cuda:  # the compute that read it is enqueued
            self._last.consumed.record(torch.cuda.current_stream(self.device))
        self._grow(n)
        slot = self.slots[self._next]
        self._next = (self._next + 1) % RING
        if self.cuda and slot.used:
            slot.copied.synchronize()  # its previous copy has left the host buffer
        size = _stage(slot.view, src, dst, weight, packed)
        if self.cuda:
            out = slot.device[:size]
            if slot.used:
                self.side.wait_event(slot.consumed)
            with torch.cuda.stream(self.side):
                out.copy_(slot.host[:size], non_blocking=True)
                slot.copied.record(self.side)
            torch.cuda.current_stream(self.device).wait_event(slot.copied)
        else:  # the copy a GPU run makes, addressed to the device (counted as one)
            out = slot.host[:size].to(self.device, copy=True)
        slot.used = True
        self._last = slot
        self.moved_bytes += size * 4
        if key not in self.streamed:  # first read: keep it while the budget allows
            if self.resident_bytes + size * 4 <= self.budget:
                out = out.clone() if self.cuda else out
                self.resident[key] = out
                self.resident_bytes += size * 4
            else:
                self.streamed.add(key)
        return self._split(out, n, packed)

    def _split(self, buf: torch.Tensor, n: int, packed: bool) -> tuple:
        import torch

        ids = 1 if packed else 2
        w = buf[ids * n:(ids + 1) * n].view(torch.float32) if self.weights else None
        if packed:
            word = buf[:n]
            return (word >> 16) & 0xFFFF, word & 0xFFFF, w
        return buf[:n], buf[n:2 * n], w

    def finish(self) -> None:
        """Wait for the copies in flight (before the buffers are dropped or replaced)."""
        if self.cuda and self.side is not None:
            self.side.synchronize()
