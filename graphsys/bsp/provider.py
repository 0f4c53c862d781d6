"""The edge-provider protocol: what the BSP engine (:func:`graphsys.bsp.engine.run`) asks of
the edges of a run, whatever holds them.

A provider owns the edges of one edge set of an opened graph for one program and turns the
values the active vertices send into combined messages per target, once per superstep; one
class per mode: :class:`~graphsys.bsp.edges.MemoryEdges`,
:class:`~graphsys.bsp.stream.StreamEdges` and :class:`~graphsys.bsp.stream.DistributedEdges`.

Ids: a provider's process owns the contiguous global id range ``[lo, hi)`` (``0..N`` in one
process). ``x``, ``active`` and ``accept`` are indexed by owned-local ids (global id -
``lo``); an :class:`EdgeResult`'s ``acc``/``received`` by global ids (N,) (a distributed
rank then delivers other ranks' targets through ``comm.exchange``).

Fast paths are declared, not branched on: a provider whose :attr:`EdgeProvider.relaxes` is
True runs the supersteps of a min-relaxation program
(:attr:`~graphsys.bsp.program.VertexProgram.relax_state`) inside numba calls
(:meth:`EdgeProvider.relax`) or to its fixed point with a work list
(:meth:`EdgeProvider.relax_async`); a program with a custom
:class:`~graphsys.bsp.program.Combiner` gets its messages raw
(:attr:`EdgeResult.raw`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from graphsys.bsp.program import VertexProgram
from graphsys.device import HostDevice

if TYPE_CHECKING:
    import torch


@dataclass
class EdgeResult:
    """Combined messages of one edge phase and its counters.

    ``acc`` float64 (N,) (or (N, d) rows for a vector program) holds each target's combined
    message (the combiner's identity where none arrived), ``received`` bool (N,) whether any
    did; for a custom combiner both are None and ``raw`` holds the uncombined messages
    ``(index int64 (M,) global target ids, values float64 (M,))``. ``direction``: ``push``,
    ``pull``, ``stream``, ``active`` or ``active-pull`` (the senders' or the accepting
    targets' index rows alone) or ``none`` (no active vertex: no pass). Counters:
    ``edges_scanned`` (edges whose entries were read), ``messages_sent`` (before
    combining), ``bytes_read`` (bucket or index bytes read), ``bytes_h2d`` (bytes copied
    host -> device).
    """

    acc: torch.Tensor | None
    received: torch.Tensor | None
    raw: tuple[torch.Tensor, torch.Tensor] | None
    direction: str
    edges_scanned: int = 0
    messages_sent: int = 0
    bytes_read: int = 0
    bytes_h2d: int = 0


def empty_result(program: VertexProgram, num_nodes: int, device: torch.device) -> EdgeResult:
    """The result of a superstep with no active vertex anywhere: nothing sent, no pass
    (NumPy arrays on :data:`~graphsys.device.HOST`: a builtin program's NumPy state)."""
    if isinstance(device, HostDevice):
        return EdgeResult(np.full(program.message_shape(num_nodes), program.identity),
                          np.zeros(num_nodes, np.bool_), None, "none")
    import torch

    raw = None
    if program.raw_messages:
        raw = (torch.zeros(0, dtype=torch.int64, device=device),
               torch.zeros(0, dtype=torch.float64, device=device))
    return EdgeResult(torch.full(program.message_shape(num_nodes), program.identity,
                                 dtype=torch.float64, device=device),
                      torch.zeros(num_nodes, dtype=torch.bool, device=device), raw, "none")


class Comm(Protocol):
    """Communication between the processes of a run (:mod:`graphsys.bsp.distributed`)."""

    rank: int
    world_size: int

    def allreduce(self, values: list[float], ops: list[str]) -> list[float]: ...

    def exchange(self, index: torch.Tensor, values: torch.Tensor,
                 bounds: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, int]: ...

    def allgather(self, local: torch.Tensor, sizes: list[int]) -> torch.Tensor: ...


class EdgeProvider(Protocol):
    """The edges of a run; see the module docstring.

    Attributes (read by the engine; every provider sets all of them):

    * ``mode`` (str): ``memory``, ``out-of-core`` or ``distributed`` (``RunStats.mode``);
    * ``comm`` (:class:`Comm`): this process's communicator (a no-op one in one process);
    * ``lo``, ``hi`` (int): the owned global id range;
    * ``bounds`` (int64 (W+1,)): every rank's id range boundaries (``[lo, hi]`` in one
      process), as ``comm.exchange`` takes them;
    * ``build_seconds`` (float, seconds, growing): time spent building adjacency (CSR/CSC,
      hub sorting) so far; the engine books what an edge phase spent building as setup, not
      superstep time;
    * ``bytes_h2d`` (int, bytes, growing): bytes its adjacency builds copied host -> device
      so far (a memory-mode GPU run uploads CSR/CSC once; 0 where edges stream, whose
      copies each edge phase counts in :attr:`EdgeResult.bytes_h2d`); the engine books what
      was copied before the first superstep as ``RunStats.setup_bytes_h2d``;
    * ``streams`` (bool): whether edge phases read the graph's files (then each superstep
      records the process's ``disk_read_bytes``);
    * ``relaxes`` (bool): whether :meth:`relax` and :meth:`relax_async` run this program.
    """

    mode: str
    comm: Comm
    lo: int
    hi: int
    bounds: np.ndarray
    build_seconds: float
    bytes_h2d: int
    streams: bool
    relaxes: bool

    def degrees(self, direction: str) -> np.ndarray:
        """Out-, in- or both-degree (``out``/``in``/``both``; multi-edges counted), int64
        (N,) by global id; exact on the owned range ``[lo, hi)``, which is all the engine
        reads. Derived from adjacency already at hand where there is one (no extra pass)."""
        ...

    def run(self, x: torch.Tensor, active: torch.Tensor, num_active: int,
            accept: torch.Tensor | None) -> EdgeResult:
        """One edge phase: owned vertices flagged in ``active`` bool (N_local,) send ``x``
        float64 (N_local,) (or (N_local, d) rows) along their edges; ``num_active`` is how
        many are flagged here; ``accept`` bool (N_local,) or None: targets that may take
        messages (a provider may skip edges into others; the engine masks them anyway)."""
        ...

    def relax(self, value: torch.Tensor, frontier: np.ndarray, max_steps: int) -> tuple:
        """Up to ``max_steps`` supersteps of a min-relaxation program in numba calls (only
        where :attr:`relaxes`): ``value`` float64 (N,) CPU tensor lowered in place,
        ``frontier`` int64 ids. Returns (supersteps run, then per superstep int64 arrays:
        active, edges scanned, distinct receivers, 1 = pull; then the next frontier)."""
        ...

    def relax_async(self, value: torch.Tensor, frontier: np.ndarray) -> tuple[int, int, int]:
        """A min-relaxation program to its fixed point with a work list (only where
        :attr:`relaxes`). Returns (vertices popped, edges scanned, values lowered)."""
        ...

    def close(self) -> None:
        """Release what the provider holds (worker threads, mappings)."""
        ...
