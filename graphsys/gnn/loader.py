"""Producer-consumer minibatch pipeline: sampling in worker threads, bounded prefetch.

The numba sampling kernels release the GIL, so worker threads sample in parallel with the
training step. Batch ``i`` is produced by ``make_batch(i)``, which must depend only on ``i``
(derive its RNG seed from the run seed, epoch and ``i``): batches then come out identical
and in the same order whatever the number of workers.

The trainer's ``make_batch`` uses the single-threaded (``nogil``) kernels: parallelism comes
from the workers. The OpenMP-parallel kernels would leave numba's OpenMP threads
spin-waiting after each call, and on a small machine those spinning threads slow down
torch's own intra-op threads several-fold (measured 4x on Cora with 2 cores).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import torch

from graphsys.errors import GraphsysError
from graphsys.sampling.block import MiniBatch
from graphsys.trace import trace_range, traced


class PrefetchLoader:
    """Iterate ``make_batch(i)`` for ``i`` in ``range(num_batches)``, in order.

    Args:
        num_batches: batches per pass.
        make_batch: ``i -> MiniBatch``, deterministic in ``i``.
        num_workers: sampling threads (0 = sample in the consuming thread).
        prefetch: at most this many batches sampled ahead of the consumer (the bound of
            the producer-consumer queue).
        device: batches are moved there (``non_blocking`` from pinned memory on CUDA).
    """

    def __init__(self, num_batches: int, make_batch: Callable[[int], MiniBatch], *,
                 num_workers: int = 1, prefetch: int = 2, device: str | torch.device = "cpu"):
        if num_workers < 0 or prefetch < 1:
            raise GraphsysError(f"num_workers must be >= 0 and prefetch >= 1, got "
                                f"{num_workers} and {prefetch}")
        self.num_batches, self.make_batch = num_batches, make_batch
        self.num_workers, self.prefetch = num_workers, prefetch
        self.device = torch.device(device)

    def __len__(self) -> int:
        return self.num_batches

    @traced("gnn.sample")
    def _produce(self, i: int) -> MiniBatch:
        batch = self.make_batch(i)
        if self.device.type == "cuda":
            batch = MiniBatch(batch.seeds.pin_memory(), [b.pin_memory() for b in batch.blocks],
                              {k: v.pin_memory() for k, v in batch.extra.items()})
        return batch

    def __iter__(self) -> Iterator[MiniBatch]:
        """Batches in order; while tracing, the consumer's work on each batch (between two
        ``next`` calls) is the range ``gnn.step``, its wait for a sampled batch
        ``gnn.wait`` and the copy to the device ``gnn.load``."""
        if self.num_workers == 0:
            for i in range(self.num_batches):
                batch = self._to_device(self._produce(i))
                with trace_range("gnn.step"):
                    yield batch
            return
        with ThreadPoolExecutor(self.num_workers, thread_name_prefix="graphsys-sampler") as ex:
            pending: deque = deque()
            nxt = 0
            try:
                while nxt < self.num_batches and len(pending) < self.prefetch:
                    pending.append(ex.submit(self._produce, nxt))
                    nxt += 1
                while pending:
                    with trace_range("gnn.wait"):
                        batch = pending.popleft().result()
                    if nxt < self.num_batches:
                        pending.append(ex.submit(self._produce, nxt))
                        nxt += 1
                    batch = self._to_device(batch)
                    with trace_range("gnn.step"):
                        yield batch
            finally:
                for f in pending:
                    f.cancel()

    @traced("gnn.load")
    def _to_device(self, batch: MiniBatch) -> MiniBatch:
        return batch.to(self.device, non_blocking=self.device.type == "cuda")
