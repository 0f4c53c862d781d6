"""The advanced layer of embedding training: :class:`Trainer`, one bucketed training run.

Most code calls :func:`graphsys.embed.train`; use :class:`Trainer` directly to hook into a
run (``on_batch``), subclass it, or inspect its buffer and relation model after
:meth:`Trainer.run`.

The algorithm is PyTorch-BigGraph's [1]_ with Marius's partition buffer and prefetch [2]_.
Each epoch: pick a bucket order, plan the buffer (:mod:`.schedule`), and for each non-empty
bucket ``(i, j)`` make partitions ``i`` and ``j`` resident (the next step's loads and
evictions run in a background thread while the current bucket trains, when they do not
touch it), shuffle its edges and train them in batches (:mod:`.step`) on ``workers``
HOGWILD threads. A checkpoint version is committed after each epoch (and each bucket with
``checkpoint_buckets``); a run resumes after the last commit. Every random draw comes from
generators seeded by ``(seed, epoch, bucket position, worker)`` and no gradient is
accumulated with atomics, so with ``workers = 1`` a resumed run is bit-for-bit the
uninterrupted one, whatever the thread count.
:class:`graphsys.embed.distributed.DistributedTrainer` runs the same buckets on the ranks
of a ``torch.distributed`` group.

References
----------
.. [1] A. Lerer, L. Wu, J. Shen, T. Lacroix, L. Wehrstedt, A. Bose, A. Peysakhovich,
   "PyTorch-BigGraph: A Large-scale Graph Embedding System", SysML 2019.
.. [2] J. Mohoney, R. Waleffe, H. Xu, T. Rekatsinas, S. Venkataraman, "Marius: Learning
   Massive Graph Embeddings on a Single Machine", OSDI 2021.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.device import generator, resolve_device
from graphsys.embed.buffer import PartitionBuffer, diverged
from graphsys.embed.checkpoint import CheckpointManager, stream_seed
from graphsys.embed.config import EmbedConfig
from graphsys.embed.graphs import StepGraph, capture_refusal
from graphsys.embed.model import COMPARATORS, LOSSES
from graphsys.embed.relations import RelationModel
from graphsys.embed.schedule import bucket_order, plan_buffer
from graphsys.embed.stats import EpochStats, RankStats
from graphsys.embed.step import MinibatchStep
from graphsys.errors import ConfigError, GraphsysError
from graphsys.memory import budget, over_budget
from graphsys.progress import progress_bar
from graphsys.storage import file_rules
from graphsys.storage.atomic import make_directory
from graphsys.storage.graph import Graph
from graphsys.storage.lock import writer_lock
from graphsys.trace import traced

__all__ = ["Trainer"]


class Trainer(MinibatchStep):
    """Train ``config`` on ``graph``'s edge set into the checkpoint directory ``out``.

    One process; a subclass that runs as rank ``rank`` of ``world_size`` overrides
    :meth:`_prepare`, :meth:`_epoch`, :meth:`_share_figures` and :meth:`_barrier` (only rank
    0 writes checkpoint metadata). The checkpoint's versions, metadata and seeds are its
    :class:`~graphsys.embed.checkpoint.CheckpointManager`'s (``checkpoint``).

    Parameters
    ----------
    config : EmbedConfig
        The run's settings (:func:`graphsys.embed.load_config`); its ``graph``, ``edges``
        and ``checkpoint_path`` are not read here: ``graph`` and ``out`` are.
    graph : Graph
        The opened graph; the edge set trained is ``config.edges`` (default ``train``, or
        the only one).
    out : Path
        The checkpoint directory, created, or resumed when it holds a checkpoint of the
        same settings.
    progress : bool, optional
        Show a progress bar per epoch (default False).
    log : callable, optional
        Gets one line per epoch and the checkpoint's notes.
    on_batch : callable, optional
        Called (no arguments) before every batch (every step of ``batches_per_step``
        batches) of every worker thread, e.g. to count or
        bound batches (``graphsys profile``); an exception it raises ends :meth:`run` as a
        failed run. With ``workers > 1`` it is called from several threads at once.

    See Also
    --------
    graphsys.embed.train : the front door, which builds and runs a trainer.

    Examples
    --------
    Count the batches of a run:

    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys.embed import load_config
    >>> from graphsys.embed.trainer import Trainer
    >>> from graphsys.generators import knowledge_graph
    >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
    >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
    ...                   "rel": [f"r{r}" for r in t["rel"]]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
    >>> batches = []
    >>> trainer = Trainer(load_config(dimension=8, num_epochs=1, batch_size=50), g,
    ...                   tempfile.mkdtemp(), on_batch=lambda: batches.append(1))
    >>> stats = trainer.run()
    >>> len(stats), stats[0].edges, len(batches)
    (1, 150, 3)
    """

    rank, world_size = 0, 1
    #: Train each bucket with the device-resident loop (:meth:`_train_resident`): None
    #: (the default) on any device but the CPU, whose loop keeps the numba kernels. Set
    #: it True before :meth:`run` to run the device path on the CPU (tests count its
    #: launches, transfers and synchronisations there).
    resident: bool | None = None

    def __init__(self, config: EmbedConfig, graph: Graph, out: Path, *, progress: bool = False,
                 log=None, on_batch: Callable[[], None] | None = None):
        config.check_trainable()
        self.cfg, self.graph, self.out = config, graph, Path(out)
        self.progress, self.log = progress, log or (lambda msg: None)
        self.on_batch = on_batch
        self.device = resolve_device(config.device)
        self.edge_set = graph.edge_set(config.edges).name
        self.P = graph.num_partitions
        self._check_schema()
        self.checkpoint = CheckpointManager(self.out, config, graph, self.edge_set, log=self.log)
        self.storage = self.checkpoint.storage
        self.comparator = COMPARATORS.get_class(config.comparator)()
        self.loss_fn = LOSSES.get_class(config.loss_fn)(margin=config.margin)
        rels = graph.relation_types
        self.rel_ops = self.checkpoint.rel_ops
        self.rel_weight = torch.tensor(config.relation_weights(rels), dtype=torch.float32)
        self.uniform_rel_weight = bool((self.rel_weight == 1).all())
        pairs = sorted({(r.lhs, r.rhs) for r in rels})
        self.pairs = pairs
        self.pair_of_rel = np.array([pairs.index((r.lhs, r.rhs)) for r in rels], np.int64)
        self.sizes = self.checkpoint.sizes
        self.relmodel = RelationModel(self.rel_ops, config.dimension, self.device)
        if self.resident is None:
            self.resident = self.device.type != "cpu"
        if self.resident and config.workers > 1 and len(pairs) == 1:  # was unused in silence
            raise ConfigError(f"workers: {config.workers} HOGWILD threads train on the CPU; "
                              f"the {self.device.type} loop trains one stream of batches "
                              f"(set workers = 1)")
        self.cuda_graphs = self._use_cuda_graphs()
        self.capacity = self._capacity()
        self.stats: list[EpochStats] = []
        self._degrees: dict[tuple[str, int], torch.Tensor] | None = None
        #: With ``freeze_old``: rows below ``frozen_below[(type, p)]`` are not updated.
        self.frozen_below: dict[tuple[str, int], int] = {}
        if config.batches_per_step > 1 and len(pairs) > 1:
            raise ConfigError(f"batches_per_step: needs one (lhs, rhs) entity-type pair, the "
                              f"relations of {graph.path} have {len(pairs)}")
        if config.freeze_old and not config.init_from:
            raise ConfigError("freeze_old: needs init_from (the checkpoint of the old rows)")

    # -- setup ------------------------------------------------------------------------------
    def _check_schema(self) -> None:
        cfg, g = self.cfg, self.graph
        if cfg.num_partitions is not None and cfg.num_partitions != self.P:
            raise ConfigError(f"num_partitions: config says {cfg.num_partitions}, the graph "
                              f"{g.path} has {self.P} (re-ingest it into "
                              f"{cfg.num_partitions} partitions or drop the key)")
        for name, ent in cfg.entities.items():
            if name not in g.entity_types:
                raise ConfigError(f"entities.{name}: not an entity type of the graph "
                                  f"({', '.join(g.entity_types)})")
            if ent.num_partitions != self.P:
                raise ConfigError(f"entities.{name}.num_partitions: config says "
                                  f"{ent.num_partitions}, the graph has {self.P}")
        types = {r.name: r for r in g.relation_types}
        for k, rel in enumerate(cfg.relations):
            if rel.name not in types:
                raise ConfigError(f"relations[{k}].name: {rel.name!r} is not a relation type of "
                                  f"the graph ({len(types)} relation types)")
            for side in ("lhs", "rhs"):
                want, have = getattr(rel, side), getattr(types[rel.name], side)
                if want is not None and want != have:
                    raise ConfigError(f"relations[{k}].{side}: config says {want!r}, the "
                                      f"graph's relation {rel.name!r} has {side} {have!r}")
        if g.num_edges(self.edge_set) == 0:
            raise GraphsysError(f"edge set {self.edge_set!r} of {g.path} has no edges")

    def _use_cuda_graphs(self) -> bool:
        """Whether the device loop replays its steps from CUDA graphs: on a CUDA device
        unless ``cuda_graphs`` is false, and off, with one logged line, where the config's
        steps cannot be captured (:func:`~graphsys.embed.graphs.capture_refusal`)."""
        if self.device.type != "cuda" or self.cfg.cuda_graphs is False:
            return False
        why = capture_refusal(self.cfg, self.rel_ops)
        if why is not None:
            self.log(f"cuda_graphs: off, {why}; the steps run eagerly")
        return why is None

    def _capacity(self) -> int:
        """Partitions held in memory: ``buffer_partitions`` (default all) or fewer, as many
        as ``memory_budget`` holds, or without one the RAM available beside one batch's
        negatives; refuses a model whose fewest resident partitions (of one bucket) and one
        batch's negatives already exceed the RAM available (a dimension or
        ``num_uniform_negs`` of 10**12 failed in the allocator)."""
        cfg = self.cfg
        rows = max(sum(s[p] for s in self.sizes.values()) for p in range(self.P))
        per = rows * (cfg.dimension + math.prod(cfg.adagrad_state_shape(1))) * 4
        negs = 0 if cfg.all_negs else cfg.num_uniform_negs
        batch = min(cfg.batch_size, self.graph.num_edges(self.edge_set))
        need = per * min(2, self.P) + 8 * negs * (cfg.dimension + batch)
        if short := over_budget(need):
            raise ConfigError(f"dimension: {cfg.dimension} with {negs} uniform negatives "
                              f"needs {short} (lower dimension, num_uniform_negs or "
                              f"batch_size, or ingest the graph into more partitions)")
        cap = self.P if cfg.buffer_partitions is None else cfg.buffer_partitions
        if cap < min(2, self.P):   # was raised to 2 in silence (the budget's 1 is refused)
            raise ConfigError(f"buffer_partitions: {cap} cannot hold a bucket's 2 partitions "
                              f"of the {self.P} (use 2 or more)")
        if cfg.memory_budget is not None:   # both given: both hold (the budget was ignored)
            fits = cfg.budget_bytes() // max(per, 1)
            if fits < min(2, self.P):
                raise ConfigError(f"memory_budget: {cfg.memory_budget} holds {fits} partitions "
                                  f"of {per} bytes; 2 are needed (raise it or use more "
                                  f"partitions)")
            cap = min(cap, fits)
        else:  # the RAM available now is the budget, as every engine's without a limit
            cap = min(cap, (budget(None) - 8 * negs * (cfg.dimension + batch)) // max(per, 1))
        return max(min(cap, self.P), min(2, self.P))

    def _prepare(self) -> tuple[int, dict[str, Any] | None]:
        """Create or check the checkpoint directory and load its state; returns the epochs
        done and the progress of the next epoch (``None`` when it starts afresh)."""
        self.checkpoint.prepare(self.relmodel)
        return self._load_state()

    def _load_state(self) -> tuple[int, dict[str, Any] | None]:
        """Relation parameters and finished epochs' stats of the committed version."""
        state = self.checkpoint.load_state(self.relmodel)
        self.version = state.version
        grown_from = self.checkpoint.grown_from
        if self.cfg.freeze_old:
            if not grown_from:
                raise ConfigError(f"freeze_old: {self.out} was not grown from another "
                                  f"checkpoint (init_from)")
            self.frozen_below = {
                (t, p): int(n) for t, info in grown_from["entity_types"].items()
                for p, n in enumerate(info["partition_sizes"])}
        self.stats = state.stats
        return state.epochs_done, state.progress

    # -- one bucket -------------------------------------------------------------------------
    @traced("embed.bucket-read")
    def _bucket_columns(self, i, j):
        cols = self.graph.bucket(i, j, self.edge_set).to_torch()
        return cols["src"], cols["dst"], cols.get("rel"), cols.get("weight")

    def _steps(self, n: int):
        """``(start, stop, groups)`` of the steps over ``n`` shuffled edges: each
        ``batches_per_step`` batches of ``batch_size`` (``groups`` of them); at the end
        the whole batches left, then the last partial batch alone."""
        B, K = self.cfg.batch_size, self.cfg.batches_per_step
        for start in range(0, n, B * K):
            stop = min(start + B * K, n)
            full = (stop - start) // B
            if full:
                yield start, start + full * B, full
            if start + full * B < stop:
                yield start + full * B, stop, 1

    def _worker(self, i, j, cols, perm, gen, bar) -> float:
        src, dst, rel, wt = cols
        total = 0.0
        for start, stop, groups in self._steps(len(perm)):
            idx = perm[start:stop]
            h, t = src[idx].long(), dst[idx].long()
            r = rel[idx].long() if rel is not None else torch.zeros(len(idx), dtype=torch.long)
            w = wt[idx].float() if wt is not None else None
            if not self.uniform_rel_weight:
                rw = self.rel_weight[r]
                w = rw if w is None else w * rw
            if self.on_batch is not None:
                self.on_batch()
            if len(self.pairs) == 1:
                lt, rt = self.pairs[0]
                loss = self._batch(lt, rt, i, j, h, t, r, w, gen, groups)
            else:
                pr = torch.from_numpy(self.pair_of_rel)[r]
                loss = 0.0
                for pi, (lt, rt) in enumerate(self.pairs):
                    m = pr == pi
                    if bool(m.any()):
                        loss += self._batch(lt, rt, i, j, h[m], t[m], r[m],
                                            None if w is None else w[m], gen)
            if not math.isfinite(loss):
                raise self._diverged(f"loss {loss} in bucket ({i}, {j}), batch of edges "
                                     f"{start}..{start + len(idx) - 1} of its shuffled order")
            total += loss
            if bar is not None:
                bar.update(len(idx))
        return total

    @traced("embed.bucket")
    def _train_bucket(self, epoch: int, k: int, i: int, j: int, bar) -> float:
        if self.resident and len(self.pairs) == 1:
            try:
                edges = self._device_edges(i, j)
            except torch.OutOfMemoryError:  # the bucket's edges do not fit: the host loop
                self.log(f"bucket ({i}, {j}): its edges do not fit in {self.device}'s "
                         f"memory; batches go up one by one")
            else:
                return self._train_resident(epoch, k, i, j, bar, edges)
        cols = self._bucket_columns(i, j)
        n = len(cols[0])
        gen = torch.Generator().manual_seed(stream_seed(self.cfg.seed, 2, epoch, k))
        perm = torch.randperm(n, generator=gen)
        nw = min(self.cfg.workers, max(1, n // self.cfg.batch_size))
        if nw == 1:
            return self._worker(i, j, cols, perm, gen, bar)
        bounds = np.linspace(0, n, nw + 1).astype(int)
        gens = [torch.Generator().manual_seed(stream_seed(self.cfg.seed, 3, epoch, k, w))
                for w in range(nw)]
        futs = [self.pool.submit(self._worker, i, j, cols, perm[bounds[w]:bounds[w + 1]],
                                 gens[w], bar) for w in range(nw)]
        return sum(f.result() for f in futs)

    def _device_edges(self, i: int, j: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Bucket ``(i, j)`` on the device in one upload each: int64 ``(3, n)`` rows
        ``src, dst, rel`` (rel 0 without a relation column) and the float32 ``(n,)`` edge
        weights times the relation weights, or None where every weight is 1."""
        src, dst, rel, wt = self._bucket_columns(i, j)
        rel = torch.zeros_like(src) if rel is None else rel
        cols = torch.stack([src.long(), dst.long(), rel.long()])
        w = None if wt is None else wt.float()
        if not self.uniform_rel_weight:
            rw = self.rel_weight[cols[2]]
            w = rw if w is None else w * rw
        return (cols.to(self.device, copy=True),
                None if w is None else w.to(self.device, copy=True))

    def _train_resident(self, epoch: int, k: int, i: int, j: int, bar,
                        edges: tuple[torch.Tensor, torch.Tensor | None]) -> float:
        """:meth:`_train_bucket` for one entity-type pair with the bucket's edges resident
        on the device: its order drawn there (``randperm`` by a generator of the device,
        seeded as the host loop's), each batch sliced from it by one ``index_select``, its
        negatives drawn there (:meth:`_sample`), the losses summed there and read once, at
        the end of the bucket (a non-finite sum stops the run). ``workers`` is not used:
        one stream of batches. On the CPU the random draws are the host loop's own. With
        ``cuda_graphs`` on CUDA the steps of full size are replayed from a CUDA graph
        (:class:`~graphsys.embed.graphs.StepGraph`). ``edges``: :meth:`_device_edges`."""
        cols, wts = edges
        n = cols.shape[1]
        gen = generator(self.device, stream_seed(self.cfg.seed, 2, epoch, k))
        perm = torch.randperm(n, generator=gen, device=gen.device).to(self.device)
        lt, rt = self.pairs[0]
        total = torch.zeros((), dtype=torch.float64, device=self.device)
        self.torch_ops = self.relmodel.whole_tables = True
        full = self.cfg.batch_size * self.cfg.batches_per_step
        graph = StepGraph(gen) if self.cuda_graphs else None

        def step(idx: torch.Tensor, groups: int) -> None:
            h, t, r = cols.index_select(1, idx)
            w = None if wts is None else wts.index_select(0, idx)
            total.add_(self._step(lt, rt, i, j, h, t, r, w, gen, groups))

        for start, stop, groups in self._steps(n):
            idx = perm[start:stop]
            if self.on_batch is not None:
                self.on_batch()
            if graph is not None and stop - start == full:
                graph.run(idx, lambda x, g=groups: step(x, g))
            else:
                step(idx, groups)
            if bar is not None:
                bar.update(len(idx))
        loss = float(total)
        if not math.isfinite(loss):
            raise self._diverged(f"loss {loss} in bucket ({i}, {j})")
        return loss

    # -- epochs -----------------------------------------------------------------------------
    def run(self) -> list[EpochStats]:
        """Train the epochs not done yet, committing a checkpoint version after each.

        The checkpoint directory is held for the whole run (rank 0 takes its writer lock,
        :func:`~graphsys.storage.lock.writer_lock`): a second run on it at once is refused
        in one line, as is a directory holding a symlink or a special file
        (:func:`~graphsys.storage.file_rules.check_tree`).

        Returns
        -------
        list of EpochStats
            Every epoch's figures, the ones of a resumed run's earlier epochs included.
        """
        with self._hold_checkpoint():
            return self._run()

    def _hold_checkpoint(self) -> contextlib.AbstractContextManager:
        """Rank 0's writer lock on the checkpoint directory (created if missing)."""
        if self.rank != 0:
            return contextlib.nullcontext()
        if self.out.exists() and not self.out.is_dir():
            raise GraphsysError(f"{self.out}: exists and is not an embedding checkpoint "
                                f"(choose another checkpoint directory)")
        make_directory(self.out, "the checkpoint directory")
        file_rules.check_tree(self.out, what="checkpoint")
        return writer_lock(self.out)

    def _run(self) -> list[EpochStats]:
        cfg = self.cfg
        done, progress = self._prepare()
        counts = self.graph.bucket_counts(self.edge_set)
        self.buffer = PartitionBuffer(self.storage, self.sizes, self.device, self.version,
                                     cfg.dimension, cfg.adagrad_state_shape)
        threads = torch.get_num_threads()
        per_worker = max(1, threads // cfg.workers)
        if cfg.workers > 1:
            torch.set_num_threads(per_worker)
        # OpenMP's thread count is per calling thread: each worker sets its own, or its
        # matmuls would each start the default team (all cores) on top of the others'
        self.pool = ThreadPoolExecutor(cfg.workers, initializer=torch.set_num_threads,
                                       initargs=(per_worker,)) if cfg.workers > 1 else None
        io = ThreadPoolExecutor(1, thread_name_prefix="graphsys-prefetch")
        try:
            for epoch in range(done, cfg.num_epochs):
                self.stats.append(self._epoch(epoch, counts, io,
                                              progress if epoch == done else None))
        except BaseException:
            if self.rank == 0:  # a failed run (diverged, disk full) leaves only its commits:
                # the version checkpoint.json names (a commit can fail after its rename),
                # else (none committed yet) the buffer's
                committed = self.buffer.committed
                with contextlib.suppress(OSError, GraphsysError):
                    committed = int(self.storage.read_meta(check_files=False)["version"])
                with contextlib.suppress(OSError):
                    self.storage.drop_versions(committed, below=False)
            raise
        finally:
            io.shutdown(wait=True)
            if self.pool is not None:
                self.pool.shutdown(wait=True)
            torch.set_num_threads(threads)
        return self.stats

    def _epoch_order(self, epoch: int, counts: np.ndarray) -> list[tuple[int, int]]:
        """The non-empty buckets of ``epoch`` in training order (the same on every rank)."""
        order = bucket_order(self.cfg.bucket_order, self.P,
                             seed=stream_seed(self.cfg.seed, 4, epoch),
                             buffer=self._plan_capacity())
        return [b for b in order if counts[b] > 0]

    def _start_epoch(self, epoch: int, progress: dict[str, Any] | None
                     ) -> tuple[EpochStats, set[tuple[int, int]]]:
        """The epoch's stats and its buckets already trained (from ``progress``); the
        buffer counts into this rank's :class:`RankStats`."""
        if progress is None:
            st, done = EpochStats(epoch + 1), set()
        else:
            st = EpochStats.from_json(progress["stats"])
            done = {(int(i), int(j)) for i, j in progress["buckets_done"]}
        st.world_size = self.world_size
        while len(st.ranks) < self.world_size:
            st.ranks.append(RankStats(len(st.ranks)))
        self.buffer.tally = st.ranks[self.rank]
        return st, done

    def _epoch(self, epoch: int, counts: np.ndarray, io: ThreadPoolExecutor,
               progress: dict[str, Any] | None) -> EpochStats:
        """Train the epoch's buckets; partition I/O runs in the ``io`` thread (FIFO).

        Pipeline: while bucket ``n`` trains, the ``io`` thread does the part of step
        ``n + 1`` of the plan that does not touch bucket ``n``: it evicts (writes back) the
        partitions bucket ``n`` does not use and loads as many of the next partitions as the
        buffer has room for. After bucket ``n``, the rest of the step (evicting bucket ``n``'s
        own partitions, i.e. the write-back, and any load that had no room) is queued; bucket
        ``n + 1`` waits only for the loads it needs, so the write-back overlaps its training.
        With :meth:`_plan_capacity` one slot is left out of the plan, so every load finds
        room while the previous bucket trains (Marius's free prefetch slot).
        """
        cfg, buf = self.cfg, self.buffer
        order = self._epoch_order(epoch, counts)
        st, done = self._start_epoch(epoch, progress)
        mine = st.ranks[0]
        todo = [(k, b) for k, b in enumerate(order) if b not in done]
        steps = plan_buffer([b for _, b in todo], self._plan_capacity(),
                            sorted(buf.resident)).steps
        held, resident = [], len(buf.resident)  # partitions resident after each step
        for step in steps:
            resident += len(step.load) - len(step.evict)
            held.append(resident)
        bar = progress_bar(total=int(sum(counts[b] for _, b in todo)), unit="edge", unit_scale=True,
                   desc=f"epoch {epoch + 1}/{cfg.num_epochs}", disable=not self.progress)
        t0 = time.perf_counter()
        queued: list[Future] = []  # io tasks in submission order
        early: Future | None = None  # the part of this step done while the last bucket trained
        late: tuple[list[int], list[int]] = ([], [])  # the rest: (evictions, loads)
        split = False  # whether step n was split into early and late while bucket n-1 trained

        def wait(fut: Future | None) -> None:
            if fut is not None:
                tw = time.perf_counter()
                fut.result()
                mine.io_wait_seconds += time.perf_counter() - tw

        for n, (k, (i, j)) in enumerate(todo):
            if not split:
                late = (steps[n].evict, steps[n].load)
            need = early
            if not cfg.prefetch:
                tw = time.perf_counter()
                buf.execute(*late)
                mine.io_wait_seconds += time.perf_counter() - tw
            elif late[0] or late[1]:
                queued.append(io.submit(buf.execute, *late))
                if late[1]:
                    need = queued[-1]  # FIFO: waiting for it waits for the early part too
            wait(need)
            early, split = None, False
            buf.dirty |= {i, j}
            if cfg.prefetch and n + 1 < len(steps):
                nxt = steps[n + 1]
                now = [p for p in nxt.evict if p not in (i, j)]
                room = max(0, self.capacity - held[n] + len(now))
                late = ([p for p in nxt.evict if p in (i, j)], nxt.load[room:])
                split = True
                if now or nxt.load[:room]:
                    early = io.submit(buf.execute, now, nxt.load[:room])
                    queued.append(early)
            tb = time.perf_counter()
            mine.loss_sum += self._train_bucket(epoch, k, i, j, bar)
            mine.train_seconds += time.perf_counter() - tb
            mine.edges += int(counts[i, j])
            mine.buckets += 1
            done.add((i, j))
            if cfg.checkpoint_buckets and n + 1 < len(todo):
                if late[0] or late[1]:  # complete step n + 1 before the commit
                    queued.append(io.submit(buf.execute, *late))
                    late = ([], [])
                for fut in queued:
                    wait(fut)
                queued = []
                st.seconds += time.perf_counter() - t0
                self._commit(st, epoch, done)
                t0 = time.perf_counter()
        for fut in queued:
            wait(fut)
        bar.close()
        st.seconds += time.perf_counter() - t0
        self._commit(st, epoch + 1)
        self._log_epoch(st)
        return st

    def _plan_capacity(self) -> int:
        """Partitions the bucket order and the buffer plan may use: ``capacity - 1`` when
        prefetching with ``3 <= capacity < P`` (the last slot is the prefetch slot), else
        ``capacity`` (at least 2 unless ``P == 1``)."""
        c = self.capacity
        if self.cfg.prefetch and 3 <= c < self.P:
            return c - 1
        return max(c, 1 if self.P == 1 else 2)

    def _log_epoch(self, st: EpochStats) -> None:
        self.log(f"epoch {st.epoch}: {st.edges} edges in {st.seconds:.1f} s "
                 f"({st.edges_per_s:,.0f} edges/s), loss {st.loss:.4f}, swaps {st.swaps} "
                 f"({st.bytes_read / 1e6:,.1f} MB read, {st.bytes_written / 1e6:,.1f} MB "
                 f"written)")

    # -- commits ----------------------------------------------------------------------------
    @traced("embed.checkpoint")
    def _commit(self, st: EpochStats, epochs_done: int,
                done: set[tuple[int, int]] | None = None) -> None:
        """Commit version ``committed + 1``: every rank writes its changed partitions, rank 0
        completes the version, writes ``checkpoint.json`` (with ``progress`` when ``done``,
        the buckets of epoch ``epochs_done + 1`` trained so far, is given) and deletes the
        older version."""
        t0 = time.perf_counter()
        buf = self.buffer
        self._check_finite()
        st.ranks[self.rank].checkpoint_bytes += buf.flush()
        self._share_figures(st)
        version = buf.committed + 1
        if self.rank == 0:
            st.ranks[0].checkpoint_bytes += (buf.commit_files(self.P)
                                             + self.relmodel.save(self.storage, version))
            self.storage.sync_dirs()
        st.total()
        if self.rank == 0:
            st.checkpoint_seconds += time.perf_counter() - t0
            if done is None:
                self.checkpoint.commit(version, epochs_done, self.stats + [st])
            else:
                self.checkpoint.commit(version, epochs_done, self.stats, progress={
                    "buckets_done": [list(b) for b in sorted(done)], "stats": st.to_json()})
        self._barrier()
        buf.committed = version

    def _diverged(self, what: str) -> GraphsysError:
        return diverged(self.out, self.buffer.committed, what)

    def _check_finite(self) -> None:
        """Raise :func:`diverged` if a resident embedding or a relation parameter holds a
        NaN or an infinity (checked before every commit, as evictions check what they
        write: a non-finite value is never committed)."""
        for p in sorted(self.buffer.resident):
            self.buffer.check_finite(p)
        for side, g, k in self.relmodel.keys():
            if not bool(torch.isfinite(self.relmodel.params[side][g][k]).all()):
                raise self._diverged(f"non-finite relation parameter {side}.g{g}.{k}")

    def _share_figures(self, st: EpochStats) -> None:
        """Make every rank's :class:`RankStats` of ``st`` current on this rank (one process:
        they are)."""

    def _barrier(self) -> None:
        """Wait for every rank (one process: nothing to wait for)."""
