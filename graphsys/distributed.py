"""Process groups of data-parallel runs, shared by every engine (BSP, embeddings, GNNs).

A run of several processes is launched by ``torchrun`` (or initialised by the caller) as
``torch.distributed``'s default process group: gloo on CPU, NCCL on GPUs. This module holds
what every engine needs of it and nothing engine-specific: the group's start from the
checked ``torchrun`` environment, this process's place and share in it, the rendezvous of
ranks launched on this machine, small collectives, the check that every rank holds the same
inputs, one-line errors of a dead peer, and the group's teardown.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np

from graphsys.errors import GraphsysError

if TYPE_CHECKING:
    import torch

#: Environment variable: seconds a collective waits for a peer (default DEFAULT_TIMEOUT_S).
ENV_TIMEOUT = "GRAPHSYS_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 300.0
_REDUCE = {"sum": "SUM", "min": "MIN", "max": "MAX"}
#: The torchrun variable that makes every rank, rank 0 too, a client of the store that its
#: launcher hosts at ``MASTER_ADDR:MASTER_PORT`` (torchrun's agent does the same).
AGENT_STORE = "TORCHELASTIC_USE_AGENT_STORE"
LOCALHOST = "127.0.0.1"
#: Why a run asked to be distributed (``distributed=True``) cannot be: torchrun starts the
#: processes, and the group is initialised in them (by a call given ``distributed=None``,
#: or by the caller)
NOT_INITIALISED = ("torch.distributed is not initialised (torchrun starts the ranks; "
                   "initialise their group first: graphsys.distributed.init_from_env or "
                   "torch.distributed.init_process_group)")
_destroyed = False


def initialized() -> bool:
    """Whether ``torch.distributed``'s default process group is initialised (False, with no
    torch import, in a process that never imported ``torch.distributed``)."""
    if "torch.distributed" not in sys.modules:
        return False
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def rank_and_world_size() -> tuple[int, int]:
    """``(rank, world_size)`` of this process in the default process group; ``(0, 1)``
    when none is initialised."""
    if not initialized():
        return 0, 1
    import torch.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def rank_share(n: int, rank: int, world_size: int, work=None) -> slice:
    """The items ``[lo, hi)`` of ``n`` that rank ``rank`` of ``world_size`` owns, the
    ``rank``-th of ``world_size`` contiguous ranges: of about equal count
    (``[r n // W, (r+1) n // W)``), or, given ``work`` (int (n,)), of about equal work (each
    item's ``work`` plus one).

    Examples
    --------
    >>> from graphsys.distributed import rank_share
    >>> rank_share(5, 0, 2), rank_share(5, 1, 2)
    (slice(0, 2, None), slice(2, 5, None))
    >>> rank_share(5, 0, 2, work=[4, 1, 1, 1, 1]), rank_share(5, 1, 2, work=[4, 1, 1, 1, 1])
    (slice(0, 1, None), slice(1, 5, None))
    """
    if work is None:
        return slice(rank * n // world_size, (rank + 1) * n // world_size)
    if world_size <= 1:
        return slice(0, n)
    prefix = np.cumsum(np.asarray(work, np.int64) + 1)
    total = int(prefix[-1]) if n else 0
    cuts = [0] + [int(np.searchsorted(prefix, total * r / world_size, side="left"))
                  for r in range(1, world_size)] + [n]
    cuts = np.maximum.accumulate(np.clip(cuts, 0, n))
    return slice(int(cuts[rank]), int(cuts[rank + 1]))


def process_group_timeout() -> float:
    """Seconds a collective may wait for a peer before every rank fails:
    ``GRAPHSYS_DIST_TIMEOUT`` if set, else :data:`DEFAULT_TIMEOUT_S`."""
    value = os.environ.get(ENV_TIMEOUT)
    if value is None:
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise GraphsysError(f"{ENV_TIMEOUT}={value!r}: must be a positive number of seconds")
    return seconds


def launch_environment() -> tuple[int, int, int | None]:
    """``(RANK, WORLD_SIZE, LOCAL_RANK)`` of the ``torchrun`` environment, checked: the one
    place it is read. ``WORLD_SIZE`` unset is one process, ``(0, 1, None)``; ``LOCAL_RANK``
    unset is None.

    Raises
    ------
    GraphsysError
        In one line, naming the variable: ``WORLD_SIZE`` not a positive integer; with
        ``WORLD_SIZE`` > 1, ``RANK`` unset or outside ``[0, WORLD_SIZE)``, ``LOCAL_RANK`` not
        a non-negative integer, ``MASTER_ADDR`` unset or empty, ``MASTER_PORT`` not a port
        (1 to 65535).

    Examples
    --------
    >>> import os
    >>> from graphsys.distributed import launch_environment
    >>> "WORLD_SIZE" in os.environ or launch_environment() == (0, 1, None)
    True
    """
    world = _number("WORLD_SIZE", 1, None, "1", "a positive integer, the number of ranks")
    if world == 1:
        return 0, 1, None
    rank = _number("RANK", 0, world - 1, None, f"an integer from 0 to {world - 1} "
                                                f"(WORLD_SIZE={world})")
    local = _local_rank()
    if not os.environ.get("MASTER_ADDR", "").strip():
        raise GraphsysError("MASTER_ADDR unset or empty: must name the host of rank 0's "
                            "store (the torchrun environment)")
    _number("MASTER_PORT", 1, 65535, None, "a port, 1 to 65535")
    return rank, world, local


def _local_rank() -> int | None:
    """``LOCAL_RANK``, checked (None when unset)."""
    if "LOCAL_RANK" not in os.environ:
        return None
    return _number("LOCAL_RANK", 0, None, None, "a non-negative integer")


def _number(name: str, lo: int, hi: int | None, default: str | None, rule: str) -> int:
    """The environment variable ``name`` (``default`` when unset) as an integer in
    ``[lo, hi]``, else a one-line :class:`GraphsysError` saying it must be ``rule``."""
    text = os.environ.get(name, default)
    try:
        value = int(text) if text is not None and text.strip().lstrip("+-").isdigit() \
            else None
    except ValueError:
        value = None
    if value is None or value < lo or (hi is not None and value > hi):
        shown = f"{name} unset" if text is None else f"{name}={text!r}"
        raise GraphsysError(f"{shown}: must be {rule} (the torchrun environment)")
    return value


def this_rank() -> int:
    """This process's rank: in the initialised default process group, else the one the
    ``torchrun`` environment names (:func:`launch_environment`; 0 in a process of its own,
    and 0 where that environment is refused: a command that forms no group, ``graphsys
    ingest`` under a stray ``WORLD_SIZE``, still runs, and one that forms it refuses it in
    :func:`init_from_env`).

    Examples
    --------
    >>> import os
    >>> from graphsys.distributed import this_rank
    >>> "RANK" in os.environ or this_rank() == 0
    True
    """
    if initialized():
        return rank_and_world_size()[0]
    try:
        return launch_environment()[0]
    except GraphsysError:
        return 0


def init_from_env(device: torch.device) -> bool:
    """Initialise the default process group from the ``torchrun`` environment
    (:func:`launch_environment`: ``WORLD_SIZE``, ``RANK``, ``MASTER_ADDR``/``MASTER_PORT``,
    checked) when ``WORLD_SIZE`` > 1 and it is not initialised yet; NCCL for CUDA devices,
    gloo otherwise, with the :func:`process_group_timeout`. Returns whether the run is
    distributed."""
    if initialized():
        return rank_and_world_size()[1] > 1
    rank, world, _ = launch_environment()
    if world <= 1:
        return False
    import torch.distributed as dist

    timeout = timedelta(seconds=process_group_timeout())
    try:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", timeout=timeout)
    except RuntimeError as exc:   # a peer gone or frozen while the ranks connect
        raise _peer_error(exc, rank) from None
    return True


def init_owned(device: torch.device) -> tuple[bool, bool]:
    """``(distributed, owned)``: :func:`init_from_env`'s answer, and whether this call
    initialised the group, so that its caller destroys it when done; a group the caller
    had initialised is the caller's to destroy."""
    already = initialized()
    distributed = init_from_env(device)
    return distributed, distributed and not already


def local_cuda_device() -> torch.device:
    """This rank's GPU, ``cuda:LOCAL_RANK`` (``torchrun`` sets it; else the rank modulo the
    visible GPUs), made the current CUDA device."""
    import torch
    import torch.distributed as dist

    local = _local_rank()  # a group initialised by the caller needs no MASTER_ADDR
    local = dist.get_rank() % torch.cuda.device_count() if local is None else local
    torch.cuda.set_device(local)
    return torch.device("cuda", local)


def local_store() -> torch.distributed.TCPStore:
    """The rendezvous store of ranks that this process launches on this machine: a
    ``TCPStore`` served by this process on ``127.0.0.1``, on a port the system picks as the
    store binds it (port 0), held until the store is dropped.

    Every rank connects to it as a client (:func:`rank_environment` for ranks started with
    torchrun's environment, :func:`join_local_store` for ranks started by
    ``torch.multiprocessing``). Unlike a port picked free beforehand for rank 0 to bind
    (which another socket, or a group launched at once, may take first), the store is bound
    before any rank starts, and it outlives every rank.

    Returns
    -------
    torch.distributed.TCPStore
        The store; its ``port`` is the ranks' ``MASTER_PORT``. Keep it until every rank
        has exited.

    Examples
    --------
    >>> from graphsys.distributed import local_store
    >>> store = local_store()
    >>> 0 < store.port < 65536
    True
    """
    from torch.distributed import TCPStore

    return TCPStore(LOCALHOST, 0, is_master=True, wait_for_workers=False,
                    timeout=timedelta(seconds=process_group_timeout()))


def rank_environment(store: torch.distributed.TCPStore, rank: int,
                     world_size: int) -> dict[str, str]:
    """The torchrun environment of rank ``rank`` of ``world_size`` ranks on this machine
    whose rendezvous is ``store`` (:func:`local_store`): ``MASTER_ADDR``/``MASTER_PORT``
    name the store, and :data:`AGENT_STORE` makes every rank a client of it, so that
    :func:`init_from_env` in the rank joins that store's group.

    Parameters
    ----------
    store : torch.distributed.TCPStore
        The launcher's store.
    rank, world_size : int
        This rank and the number of ranks (also ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``).

    Returns
    -------
    dict of str to str
        The variables to add to the rank's environment.

    Examples
    --------
    >>> from graphsys.distributed import local_store, rank_environment
    >>> env = rank_environment(local_store(), 1, 2)
    >>> env["RANK"], env["WORLD_SIZE"], env["TORCHELASTIC_USE_AGENT_STORE"]
    ('1', '2', 'True')
    """
    return {"MASTER_ADDR": LOCALHOST, "MASTER_PORT": str(store.port),
            "WORLD_SIZE": str(world_size), "RANK": str(rank), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world_size), AGENT_STORE: "True"}


def join_local_store(port: int, rank: int, world_size: int, backend: str = "gloo") -> None:
    """Initialise the default process group as rank ``rank`` of ``world_size``, through
    the :func:`local_store` on ``port`` that the launching process hosts (as a client;
    the rank binds no port of its own for the rendezvous), with the
    :func:`process_group_timeout`.

    Parameters
    ----------
    port : int
        The launcher's store's ``port``.
    rank, world_size : int
        This rank and the number of ranks.
    backend : str
        ``"gloo"`` (CPU) or ``"nccl"`` (one GPU per rank).

    Examples
    --------
    A rank started by ``torch.multiprocessing.spawn(worker, args=(store.port, 2))``:

    >>> def worker(rank, port, world_size):
    ...     from graphsys.distributed import destroy, join_local_store
    ...     join_local_store(port, rank, world_size)
    ...     destroy()
    """
    import torch.distributed as dist

    timeout = timedelta(seconds=process_group_timeout())
    store = dist.TCPStore(LOCALHOST, port, world_size, is_master=False, timeout=timeout)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world_size,
                            timeout=timeout)


def destroy() -> None:
    """Destroy the default process group, after collecting garbage: objects in reference
    cycles that hold the group (a ``DistributedDataParallel`` wrapper and its reducer) go
    first; left to interpreter exit, gloo's threads are torn down during static
    destruction, which can abort the process.

    A group that a ``DistributedDataParallel`` wrapped a model in outlives this call all
    the same (torch 2.13: something the wrapper made in C++ keeps it, out of the collector's
    sight, whether or not the wrapper and the model are gone): its two gloo worker threads
    (``pt_gloo_runloop``) and its transport loop (``gloo_tcp_loop``) run until the process
    ends. A worker thread that lets go of a tensor owned by Python once the interpreter has
    begun to finalise (under load it can still be finishing the last collective's work)
    cannot take the interpreter's lock; the thread is ended inside a C++ destructor, and
    the process aborts ("terminate called without an active exception", SIGABRT). A
    process that destroyed a group (:func:`destroyed_a_group`) therefore ends, once its
    output is flushed, without the interpreter's teardown: the graphsys program does so
    (:func:`graphsys.cli.program`)."""
    import gc

    import torch.distributed as dist

    global _destroyed
    gc.collect()
    dist.destroy_process_group()
    _destroyed = True


def destroyed_a_group() -> bool:
    """Whether :func:`destroy` ran in this process (whose group's gloo threads may then
    still run: see :func:`destroy`).

    Returns
    -------
    bool
        True once :func:`destroy` has run here.

    Examples
    --------
    >>> from graphsys.distributed import destroyed_a_group
    >>> isinstance(destroyed_a_group(), bool)
    True
    """
    return _destroyed


class Collectives:
    """Sums and gathers of small values over the ranks of the default process group
    (initialised by the caller, or by :func:`init_from_env`): float64 tensors on the CPU
    for gloo, on ``device`` for NCCL."""

    def __init__(self, device: torch.device):
        import torch
        import torch.distributed as dist

        if not dist.is_initialized():
            raise GraphsysError(f"distributed run: {NOT_INITIALISED}")
        self.dist = dist
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        # gloo exchanges CPU tensors; NCCL needs them on the GPU
        self.device = device if dist.get_backend() == "nccl" else torch.device("cpu")

    def allreduce(self, values: list[float], ops: list[str]) -> list[float]:
        """Reduce each value with its op (``sum``, ``min``, ``max``) over all ranks: one
        all_reduce per distinct op."""
        import torch

        out = [0.0] * len(values)
        for op in sorted(set(ops)):
            pos = [k for k, o in enumerate(ops) if o == op]
            t = torch.tensor([float(values[k]) for k in pos], dtype=torch.float64,
                             device=self.device)
            self.dist.all_reduce(t, op=getattr(self.dist.ReduceOp, _REDUCE[op]))
            for k, v in zip(pos, t.tolist()):
                out[k] = v
        return out

    def allgather(self, local: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        """Concatenate every rank's ``local`` float64 (n_r,) vector or (n_r, d) rows (rank
        order); ``sizes`` are the ranks' n_r."""
        import torch

        m = max(sizes)
        buf = torch.zeros((m, *local.shape[1:]), dtype=torch.float64, device=self.device)
        buf[:len(local)] = local.to(self.device)
        parts = [torch.empty_like(buf) for _ in range(self.world_size)]
        self.dist.all_gather(parts, buf)
        return torch.cat([p[:s] for p, s in zip(parts, sizes)])

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        self.allreduce([0.0], ["sum"])


def graph_digest(graph) -> str:
    """sha256 (hex) of what makes a graph the same graph on every rank: its manifest's
    partitioning, types, edge sets and the sha256 of every node and bucket file. Provenance
    (``created_by``, ``metadata``) and adjacency indexes (a rank may have built one, another
    not) are left out."""
    m = graph.manifest.to_json()
    m = {k: v for k, v in m.items() if k not in ("created_by", "metadata", "indexes")}
    m["files"] = {k: v for k, v in m["files"].items() if not k.startswith("index/")}
    return hashlib.sha256(json.dumps(m, sort_keys=True, default=str).encode()).hexdigest()


def check_same_inputs(what: dict[str, str]) -> None:
    """Fail on every rank, in one line, unless all ranks of the initialised process group
    hold the same ``what`` (name -> digest, e.g. the graph's and the program's): an
    ``all_gather`` of the digests before the first superstep or batch. Ranks given different
    graph directories (another partitioner or seed, same counts) would otherwise run to
    completion on inconsistent data."""
    import torch
    import torch.distributed as dist

    names = sorted(what)
    local = torch.tensor([int(what[n][:15], 16) for n in names], dtype=torch.int64)
    if dist.get_backend() == "nccl":
        local = local.cuda()
    parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, local)
    rows = torch.stack(parts).cpu()
    for k, name in enumerate(names):
        bad = [r for r in range(rows.shape[0]) if rows[r, k] != rows[0, k]]
        if bad:
            raise GraphsysError(f"distributed run: rank {bad[0]} has another {name} than rank 0 "
                                f"(every rank must open the same graph and run the same "
                                f"program and settings)")


@contextlib.contextmanager
def peer_failures(distributed: bool) -> Iterator[None]:
    """Turn the error a rank gets when a peer died, froze past the timeout or closed its
    connection (a ``RuntimeError`` from the backend) into one line naming this rank."""
    try:
        yield
    except RuntimeError as exc:
        if not distributed:
            raise
        import torch.distributed as dist

        raise _peer_error(exc, dist.get_rank() if dist.is_initialized() else "?") from None


def _peer_error(exc: RuntimeError, rank) -> GraphsysError:
    """The one line of a backend's error on ``rank`` when a peer died, froze past the
    timeout or closed its connection (the error's first line quoted)."""
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return GraphsysError(f"rank {rank}: a peer rank died, froze for more than "
                         f"{process_group_timeout():.0f} s ({ENV_TIMEOUT}) or failed: {first}")
