"""Communication between BSP processes: a no-op one for a single process, and one over
``torch.distributed`` (gloo on CPU, NCCL on GPU) for runs launched by ``torchrun``.

Rank ``r`` of ``W`` owns the contiguous partitions ``[r*P//W, (r+1)*P//W)``
(:func:`rank_split`) and hence a
contiguous global id range ``[lo, hi)``. Per superstep it streams the buckets whose source
(forward messages) or destination (reverse messages) partition it owns, combines messages
locally into a global-size buffer, and exchanges, with one ``all_to_all_single``, the
``(target, value)`` pairs of targets owned by other ranks (raw messages for a custom
combiner). Aggregators and the frontier size are ``all_reduce``d at the barrier.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from datetime import timedelta

import numpy as np
import torch

from graphsys.errors import GraphsysError, ParameterError

#: Environment variable: seconds a collective waits for a peer (default DEFAULT_TIMEOUT_S).
ENV_TIMEOUT = "GRAPHSYS_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 300.0
_REDUCE = {"sum": "SUM", "min": "MIN", "max": "MAX"}


def rank_split(num_partitions: int, world_size: int) -> list[range]:
    """The partitions of every rank of a ``world_size``-process run: rank ``r`` owns the
    contiguous range ``[r P // W, (r+1) P // W)``. A :class:`ParameterError` naming
    ``world_size`` when it is not a positive integer or exceeds ``num_partitions`` (a rank
    needs at least one partition)."""
    w, p = world_size, num_partitions
    if isinstance(w, bool) or not isinstance(w, int) or w < 1:
        raise ParameterError("world_size", f"must be a positive integer, got {w!r}")
    if w > p:
        raise ParameterError("world_size", f"{w}: a distributed run needs at least one "
                                            f"partition per rank, the graph has {p} (re-ingest "
                                            f"it with at least {w} partitions)")
    return [range(r * p // w, (r + 1) * p // w) for r in range(w)]


def rank_bounds(offsets, world_size: int) -> list[int]:
    """Global id boundaries of the ranks, int (W+1,): rank ``r`` owns ids
    ``[b[r], b[r+1])``, the nodes of its :func:`rank_split` partitions; ``offsets`` are the
    graph's partition offsets, int (P+1,)."""
    split = rank_split(len(offsets) - 1, world_size)
    return [int(offsets[s.start]) for s in split] + [int(offsets[-1])]


class LocalComm:
    """One process: owns everything, reductions and exchanges are identities."""

    rank, world_size = 0, 1

    def owned_partitions(self, num_partitions: int) -> range:
        return range(num_partitions)

    def allreduce(self, values: list[float], ops: list[str]) -> list[float]:
        return [float(v) for v in values]

    def exchange(self, index: torch.Tensor, values: torch.Tensor,
                 bounds: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, int]:
        lo, hi = int(bounds[0]), int(bounds[1])
        keep = (index >= lo) & (index < hi)
        return index[keep] - lo, values[keep], 0

    def allgather(self, local: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        return local


class TorchComm:
    """Ranks of the default ``torch.distributed`` process group (initialised by the caller,
    or from the ``torchrun`` environment by :func:`init_from_env`)."""

    def __init__(self, device: torch.device):
        import torch.distributed as dist

        if not dist.is_initialized():
            raise GraphsysError("distributed run: torch.distributed is not initialised "
                                "(launch with torchrun, or call init_process_group first)")
        self.dist = dist
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        # gloo exchanges CPU tensors; NCCL needs them on the GPU
        self.device = device if dist.get_backend() == "nccl" else torch.device("cpu")

    def owned_partitions(self, num_partitions: int) -> range:
        return rank_split(num_partitions, self.world_size)[self.rank]

    def allreduce(self, values: list[float], ops: list[str]) -> list[float]:
        """Reduce each value with its op over all ranks: one all_reduce per distinct op."""
        out = [0.0] * len(values)
        for op in sorted(set(ops)):
            pos = [k for k, o in enumerate(ops) if o == op]
            t = torch.tensor([float(values[k]) for k in pos], dtype=torch.float64,
                             device=self.device)
            self.dist.all_reduce(t, op=getattr(self.dist.ReduceOp, _REDUCE[op]))
            for k, v in zip(pos, t.tolist()):
                out[k] = v
        return out

    def exchange(self, index: torch.Tensor, values: torch.Tensor,
                 bounds: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Send every ``(index, value)`` (global target ids) to the rank owning the target;
        ``values`` float64 (M,) or (M, d) rows (vector programs); ``bounds`` int64 (W+1,)
        are the ranks' id ranges. Returns the pairs this rank received (local ids), and how
        many pairs it sent to other ranks."""
        w = self.world_size
        dev_in = index.device
        index, values = index.to(self.device), values.to(self.device)
        owner = torch.bucketize(index, torch.as_tensor(bounds[1:-1], device=self.device),
                                right=True)
        order = torch.argsort(owner, stable=True)
        index, values, owner = index[order], values[order], owner[order]
        counts = torch.bincount(owner, minlength=w).to(torch.int64)
        cols = values.unsqueeze(1) if values.dim() == 1 else values  # (M, d)
        width = 1 + cols.shape[1]
        payload = torch.cat([index.to(torch.float64).unsqueeze(1), cols], 1).reshape(-1)
        send_counts = counts * width
        recv_counts = torch.empty_like(send_counts)
        self.dist.all_to_all_single(recv_counts, send_counts)
        out = torch.empty(int(recv_counts.sum()), dtype=torch.float64, device=self.device)
        self.dist.all_to_all_single(out, payload, recv_counts.tolist(), send_counts.tolist())
        pairs = out.reshape(-1, width)
        lo = int(bounds[self.rank])
        sent_remote = int(counts.sum() - counts[self.rank])
        got = pairs[:, 1:].reshape(-1, *values.shape[1:])
        return (pairs[:, 0].to(torch.int64) - lo).to(dev_in), got.to(dev_in), sent_remote

    def allgather(self, local: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        """Concatenate every rank's ``local`` float64 (n_r,) vector or (n_r, d) rows (rank
        order); ``sizes`` are the ranks' n_r."""
        m = max(sizes)
        buf = torch.zeros((m, *local.shape[1:]), dtype=torch.float64, device=self.device)
        buf[:len(local)] = local.to(self.device)
        parts = [torch.empty_like(buf) for _ in range(self.world_size)]
        self.dist.all_gather(parts, buf)
        return torch.cat([p[:s] for p, s in zip(parts, sizes)])


def graph_digest(graph) -> str:
    """sha256 (hex) of what makes a graph the same graph on every rank: its manifest's
    partitioning, types, edge sets and the sha256 of every node and bucket file. Provenance
    (``created_by``, ``metadata``) and adjacency indexes (a rank may have built one, another
    not) are left out."""
    m = graph.manifest.to_json()
    m = {k: v for k, v in m.items() if k not in ("created_by", "metadata", "indexes")}
    m["files"] = {k: v for k, v in m["files"].items() if not k.startswith("index/")}
    return hashlib.sha256(json.dumps(m, sort_keys=True, default=str).encode()).hexdigest()


def program_digest(program) -> str:
    """sha256 (hex) of a vertex program's class and its scalar settings (numbers, strings,
    booleans, None): what two ranks of one run must agree on."""
    cls = type(program)
    settings = {k: v for k, v in sorted(vars(program).items())
                if isinstance(v, (int, float, str, bool, type(None)))}
    text = json.dumps([cls.__module__, cls.__qualname__, settings], sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def check_same_inputs(what: dict[str, str]) -> None:
    """Fail on every rank, in one line, unless all ranks of the initialised process group
    hold the same ``what`` (name -> digest, e.g. the graph's and the program's): an
    ``all_gather`` of the digests before the first superstep or batch. Ranks given different
    graph directories (another partitioner or seed, same counts) would otherwise run to
    completion on inconsistent data."""
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


def init_from_env(device: torch.device) -> bool:
    """Initialise the default process group from the ``torchrun`` environment
    (``WORLD_SIZE``, ``RANK``, ``MASTER_ADDR``/``MASTER_PORT``) when ``WORLD_SIZE`` > 1 and
    it is not initialised yet; NCCL for CUDA devices, gloo otherwise, with the
    :func:`process_group_timeout`. Returns whether the run is distributed."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size() > 1
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return False
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            timeout=timedelta(seconds=process_group_timeout()))
    rank_device(device)
    return True


def rank_device(device: torch.device) -> torch.device:
    """This rank's device in a distributed run: ``cuda`` with no index becomes
    ``cuda:LOCAL_RANK`` (NCCL needs one GPU per rank; every rank on GPU 0 fails or
    serialises), made the current CUDA device; any other device is returned as it is."""
    import torch.distributed as dist

    if device.type != "cuda" or device.index is not None or not dist.is_initialized():
        return device
    count = torch.cuda.device_count()
    local = int(os.environ.get("LOCAL_RANK", dist.get_rank() % max(count, 1)))
    torch.cuda.set_device(local)
    return torch.device("cuda", local)


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

        rank = dist.get_rank() if dist.is_initialized() else "?"
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise GraphsysError(f"rank {rank}: a peer rank died, froze for more than "
                            f"{process_group_timeout():.0f} s ({ENV_TIMEOUT}) or failed: "
                            f"{first}") from None
