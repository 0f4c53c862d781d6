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

import hashlib
import json
from typing import TYPE_CHECKING

import numpy as np

from graphsys.distributed import Collectives, rank_share
from graphsys.errors import ParameterError, check_count

if TYPE_CHECKING:
    import torch


def rank_split(num_partitions: int, world_size: int) -> list[range]:
    """The partitions of every rank of a ``world_size``-process run: rank ``r`` owns the
    contiguous range ``[r P // W, (r+1) P // W)``. A :class:`ParameterError` naming
    ``world_size`` when it is not a positive integer or exceeds ``num_partitions`` (a rank
    needs at least one partition)."""
    w, p = check_count("world_size", world_size), num_partitions
    if w > p:
        raise ParameterError("world_size", f"{w}: a distributed run needs at least one "
                                            f"partition per rank, the graph has {p} (re-ingest "
                                            f"it with at least {w} partitions)")
    return [range(s.start, s.stop) for s in (rank_share(p, r, w) for r in range(w))]


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


class TorchComm(Collectives):
    """Ranks of the default ``torch.distributed`` process group (initialised by the caller,
    or from the ``torchrun`` environment by :func:`graphsys.distributed.init_from_env`),
    with the BSP engine's partition ownership and message exchange on top of the
    :class:`~graphsys.distributed.Collectives` sums and gathers."""

    def owned_partitions(self, num_partitions: int) -> range:
        return rank_split(num_partitions, self.world_size)[self.rank]

    def exchange(self, index: torch.Tensor, values: torch.Tensor,
                 bounds: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Send every ``(index, value)`` (global target ids) to the rank owning the target;
        ``values`` float64 (M,) or (M, d) rows (vector programs); ``bounds`` int64 (W+1,)
        are the ranks' id ranges. Returns the pairs this rank received (local ids), and how
        many pairs it sent to other ranks."""
        import torch

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


def program_digest(program) -> str:
    """sha256 (hex) of a vertex program's class and its settings: numbers, strings,
    booleans, None, lists, tuples and dicts (as JSON), and arrays (NumPy or torch: the
    sampled sources of a centrality, the sources of a personalized PageRank, a warm
    start's values, by dtype, shape and bytes): what two ranks of one run must agree on."""
    cls = type(program)
    settings = {}
    for k, v in sorted(vars(program).items()):
        if isinstance(v, (int, float, str, bool, type(None))):
            settings[k] = v
        elif isinstance(v, np.ndarray) or type(v).__name__ == "Tensor":
            a = np.asarray(v.detach().cpu() if hasattr(v, "detach") else v)
            if a.dtype != object:
                settings[k] = [str(a.dtype), a.shape, hashlib.sha256(a.tobytes()).hexdigest()]
        elif isinstance(v, (list, tuple, dict)):
            try:
                settings[k] = json.dumps(v, sort_keys=True, default=str)
            except (TypeError, ValueError):  # keys of mixed types, a cycle
                settings[k] = repr(v)
    text = json.dumps([cls.__module__, cls.__qualname__, settings], sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()
