"""Distributed embedding training over ``torch.distributed`` (gloo on CPU, NCCL on GPU):
:class:`DistributedTrainer`, one rank of a run (``graphsys.embed.train(...,
distributed=True)`` on every rank of an initialised group, or ``distributed=None`` under
``torchrun``; launching: ``docs/embed.md``). Every rank must see the checkpoint directory.

Ranks coordinate only through collectives of the default group. Each epoch's bucket order
is split into rounds of buckets with disjoint partitions
(:func:`~graphsys.embed.schedule.plan_rounds`; rank ``r`` trains ``rounds[n][r]``). A rank
claims its bucket's partitions with an ``all_gather`` (a partition claimed twice is an
error; the claims are ``EpochStats.held``) and, before the round's closing collective,
writes back every changed partition its next bucket does not use, so partitions move
between ranks through the checkpoint's working version. Relation parameters are
replicated: each round the ranks gather their changes (parameters and Adagrad sums) and add
them in the buckets' epoch order, so every rank holds the same values whichever rank
trained which bucket; this gather is the round barrier. At a commit every rank writes its
partitions, the :class:`RankStats` are gathered and rank 0 writes ``checkpoint.json``.
Bucket ``k`` of epoch ``e`` draws from generators seeded by ``(seed, e, k)``, so the same
seed and world size (``workers = 1``) give the same checkpoint bit for bit, resumed or not.
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.device import resolve_device
from graphsys.distributed import NOT_INITIALISED, graph_digest, local_cuda_device
from graphsys.embed.config import EmbedConfig
from graphsys.embed.relations import SIDES
from graphsys.embed.schedule import Bucket, plan_rounds
from graphsys.embed.stats import EpochStats
from graphsys.embed.trainer import Trainer
from graphsys.errors import GraphsysError
from graphsys.progress import progress_bar
from graphsys.storage.graph import Graph


class DistributedTrainer(Trainer):
    """:class:`~graphsys.embed.trainer.Trainer` as one rank of the initialised default
    process group. A CUDA run puts rank ``LOCAL_RANK`` on GPU ``LOCAL_RANK``; only rank 0
    logs and shows progress."""

    def __init__(self, config: EmbedConfig, graph: Graph, out: Path, *, progress: bool = False,
                 log=None):
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise GraphsysError(f"distributed training: {NOT_INITIALISED} (or pass "
                                f"distributed=None under torchrun)")
        self.dist = dist
        rank = dist.get_rank()
        nccl = dist.get_backend() == "nccl"
        if resolve_device(config.device).type == "cuda":
            local_cuda_device()
        super().__init__(config, graph, out, progress=progress and rank == 0,
                         log=log if rank == 0 else None)
        self.rank, self.world_size = rank, dist.get_world_size()
        # gloo gathers CPU tensors, NCCL CUDA ones
        self.comm_device = (torch.device("cuda", torch.cuda.current_device()) if nccl
                            else torch.device("cpu"))
        if self.P < 2 * self.world_size:
            self.log(f"{self.P} partitions leave some of {self.world_size} ranks idle: the "
                     f"buckets of a round need disjoint partitions, two for most buckets "
                     f"(ingest at least {2 * self.world_size} partitions)")

    # -- collectives ------------------------------------------------------------------------
    def _all_gather(self, values: torch.Tensor) -> torch.Tensor:
        """Every rank's 1-D ``values`` (same length and dtype on all ranks) as ``(W, n)``
        on ``comm_device``, rows in rank order."""
        t = values.to(self.comm_device)
        parts = [torch.empty_like(t) for _ in range(self.world_size)]
        self.dist.all_gather(parts, t)
        return torch.stack(parts)

    def _barrier(self) -> None:
        self._all_gather(torch.zeros(1))

    def _share_figures(self, st: EpochStats) -> None:
        rows = self._all_gather(torch.tensor(st.ranks[self.rank].figures(),
                                             dtype=torch.float64)).cpu()
        for r in range(self.world_size):
            st.ranks[r].set_figures(rows[r].tolist())

    def _digest(self) -> int:
        """63-bit digest of what every rank must agree on: the config (paths aside, they
        may differ between hosts), the partition count, the training edges and the graph
        itself (:func:`~graphsys.distributed.graph_digest`: the same partitioning and
        files, not only the same counts)."""
        cfg = {k: v for k, v in self.checkpoint.config_json().items()
               if k not in ("graph", "checkpoint_path")}
        text = json.dumps([cfg, self.P, self.graph.num_edges(self.edge_set),
                           graph_digest(self.graph)], sort_keys=True)
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1

    def _prepare(self) -> tuple[int, dict[str, Any] | None]:
        """Every rank checks that all ranks run the same config; rank 0 creates or checks
        the checkpoint and the others learn whether that worked; all load the committed
        state."""
        digests = self._all_gather(torch.tensor([self._digest()], dtype=torch.int64)).cpu()
        if bool((digests != digests[0]).any()):
            raise GraphsysError("distributed training: the ranks run different configs or "
                                "graphs (give every rank the same config, overrides and "
                                "graph)")
        error: GraphsysError | OSError | None = None
        if self.rank == 0:
            try:
                self.checkpoint.prepare(self.relmodel)
            except (GraphsysError, OSError) as exc:  # re-raised once the others know
                error = exc
        ok = self._all_gather(torch.tensor([int(error is None)], dtype=torch.int64)).cpu()
        if error is not None:
            raise error
        if not bool(ok[0, 0]):
            raise GraphsysError(f"{self.out}: rank 0 could not prepare the checkpoint (see its "
                                f"error)")
        return self._load_state()

    # -- one round --------------------------------------------------------------------------
    def _acquire(self, need: list[int]) -> list[list[int]]:
        """Claim the partitions ``need`` for this round; returns every rank's claim."""
        claim = torch.full((2,), -1, dtype=torch.int64)
        claim[:len(need)] = torch.tensor(need, dtype=torch.int64)
        held = [[p for p in row if p >= 0] for row in self._all_gather(claim).cpu().tolist()]
        flat = [p for h in held for p in h]
        if len(flat) != len(set(flat)):
            clash = sorted({p for p in flat if flat.count(p) > 1})
            raise GraphsysError(f"partition lock: partitions {clash} claimed by two ranks in "
                                f"one round {held} (the ranks disagree on the schedule)")
        return held

    def _relation_tensors(self) -> list[torch.Tensor]:
        rm = self.relmodel
        return [t for side in SIDES for g, ps in enumerate(rm.params[side]) for k in ps
                for t in (ps[k], rm.state[side][g][k])]

    def _relation_vector(self) -> torch.Tensor:
        """Relation parameters and Adagrad sums, flattened (float32)."""
        ts = self._relation_tensors()
        return torch.cat([t.reshape(-1) for t in ts]) if ts else torch.zeros(0)

    def _sync_relations(self, before: torch.Tensor, assign: list[Bucket | None],
                        index: dict[Bucket, int]) -> None:
        """Set the relation parameters to ``before`` (the round's start) plus every rank's
        change, summed in the order of the ranks' buckets in the epoch (ends the round)."""
        ts = self._relation_tensors()
        if not ts:
            self._barrier()
            return
        rows = self._all_gather(self._relation_vector() - before).to(before.device)
        total = torch.zeros_like(before)
        for _, r in sorted((index[b], r) for r, b in enumerate(assign) if b is not None):
            total += rows[r]
        new = before + total
        off = 0
        for t in ts:
            t.copy_(new[off:off + t.numel()].view_as(t))
            off += t.numel()

    # -- epochs -----------------------------------------------------------------------------
    def _plan_capacity(self) -> int:
        """The whole buffer: ranks load between rounds, with no prefetch slot."""
        return self.capacity

    def _epoch(self, epoch: int, counts: np.ndarray, io: ThreadPoolExecutor,
               progress: dict[str, Any] | None) -> EpochStats:
        """The epoch's remaining buckets in rounds (no prefetch, ``io`` is unused: the next
        round's partitions may still be held by another rank)."""
        cfg, buf, me = self.cfg, self.buffer, self.rank
        order = self._epoch_order(epoch, counts)
        st, done = self._start_epoch(epoch, progress)
        mine = st.ranks[me]
        index = {b: k for k, b in enumerate(order)}
        rounds = plan_rounds([b for b in order if b not in done], self.world_size)
        bar = progress_bar(total=int(sum(counts[r[me]] for r in rounds if r[me] is not None)),
                   unit="edge", unit_scale=True, desc=f"epoch {epoch + 1}/{cfg.num_epochs}",
                   disable=not self.progress)
        t0 = time.perf_counter()
        for n, assign in enumerate(rounds):
            bucket = assign[me]
            need = sorted(set(bucket)) if bucket is not None else []
            tw = time.perf_counter()
            st.held.append(self._acquire(need))
            mine.wait_seconds += time.perf_counter() - tw
            for p in need:
                if p not in buf.resident:
                    buf.load(p)
            before = self._relation_vector()
            if bucket is None:
                mine.idle_rounds += 1
            else:
                i, j = bucket
                buf.dirty |= {i, j}
                tb = time.perf_counter()
                mine.loss_sum += self._train_bucket(epoch, index[bucket], i, j, bar)
                mine.train_seconds += time.perf_counter() - tb
                mine.edges += int(counts[i, j])
                mine.buckets += 1
            nxt = rounds[n + 1][me] if n + 1 < len(rounds) else None
            for p in sorted(set(buf.resident) - set(nxt or ())):
                buf.evict(p)
            tw = time.perf_counter()
            self._sync_relations(before, assign, index)
            mine.wait_seconds += time.perf_counter() - tw
            done.update(b for b in assign if b is not None)
            if cfg.checkpoint_buckets and n + 1 < len(rounds):
                st.seconds += time.perf_counter() - t0
                self._commit(st, epoch, done)
                t0 = time.perf_counter()
        bar.close()
        st.seconds += time.perf_counter() - t0
        self._commit(st, epoch + 1)
        self._log_epoch(st)
        return st
