"""The workloads ``graphsys profile`` measures: a BSP algorithm, an embedding epoch.

Each returns the kernel/transfer figures (:mod:`graphsys.analysis.kernels`), the number of
steps, an estimate of the floating-point work (FLOPs), and the degree streams the SIMT model
runs over (:mod:`graphsys.analysis.simt`):

* **BSP** (:func:`profile_bsp`): one *profiled* run (requested device/backend, with
  ``graphsys run``'s defaults) measured with ``torch.profiler``, one step per superstep
  (a whole-graph method, or min-relaxation supersteps fused into one numba call, gives only
  the mean per superstep). On the CPU, hooks on the vertex program record each superstep's
  frontier during that same run (bit-packed in a temporary file; a CPU tensor is read
  through a DLPack view, which dispatches no operator, so the counts are unchanged); on
  another device, or when the run's supersteps did not pass through the hooks one by one
  (a whole-graph method, fused supersteps), a second *model* run (numba on CPU, BSP
  supersteps one by one, same mode) records them, so that no device-to-host copy enters
  the measured run. After the run (its buckets unmapped, the
  heap trimmed) the SIMT model is fed only the active vertices, in the engine's order
  (ascending global id): push/stream supersteps use the frontier's out-degrees (in-degrees
  for ``direction = in``; both passes for ``both``), pull supersteps every target the
  program accepts with its in-degree. The model assumes each neighbour loop runs to the end
  of the list (an upper bound for BFS's early-exit pull).
* **Embedding** (:func:`profile_embed`): one epoch of :class:`graphsys.embed.trainer.Trainer` into
  a temporary checkpoint (at most ``steps`` batches when given); a step is one positive
  batch. SIMT over the training edge set's out-degrees (a vertex-centric pass over the same
  edges).

The GNN workload: :mod:`graphsys.analysis.gnn_workload`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from graphsys.analysis.balance import RankWork, work_by_range
from graphsys.analysis.kernels import StepMarker, profile_call
from graphsys.analysis.simt import GPU, SimtAccumulator
from graphsys.errors import check_count
from graphsys.memory import trim_heap

#: Global ids per vectorized slice when compacting a frontier (a multiple of 8: masks are
#: bit-packed).
FRONTIER_CHUNK = 1 << 22


class SimtRecorder:
    """One :class:`SimtAccumulator` total per mapping plus per-step figures."""

    def __init__(self, mappings: list[str], block_size: int, items_per_thread: int,
                 gpu: GPU) -> None:
        self.mappings, self.block_size = mappings, block_size
        self.items_per_thread, self.gpu = items_per_thread, gpu
        self.totals = {m: self._new(m) for m in mappings}
        self.steps: dict[str, list[dict[str, Any]]] = {m: [] for m in mappings}
        self._cache: dict[Any, dict[str, SimtAccumulator]] = {}

    def _new(self, m: str) -> SimtAccumulator:
        return SimtAccumulator(m, self.block_size, self.items_per_thread, self.gpu)

    def step(self, info: dict[str, Any], kernels: list[Callable[[], Any]],
             cache_key: Any = None) -> None:
        """Record one step made of ``kernels``: callables yielding int64 degree chunks."""
        if cache_key is not None and cache_key in self._cache:
            accs = self._cache[cache_key]
        else:
            accs = {}
            for m in self.mappings:
                total = self._new(m)
                for make in kernels:
                    total.merge(self._new(m).add_kernel(make()))
                accs[m] = total
            if cache_key is not None:
                self._cache[cache_key] = accs
        for m, acc in accs.items():
            r = acc.result(per_sm=False)
            lb = r["load_balance"]
            self.steps[m].append({**info, "kernels": r["kernels"], "items": r["vertices"],
                                  "edges": r["edges"], "warp_iterations": r["warp_iterations"],
                                  "mean_utilization": r["mean_utilization"],
                                  "histogram": r["histogram"]["warps"],
                                  "sm_max_over_mean": lb["sm"]["max_over_mean"],
                                  "warp_cv": lb["warp"]["cv"]})
            self.totals[m].merge(acc)

    def result(self) -> dict[str, dict[str, Any]]:
        return {m: {**self.totals[m].result(), "per_step": self.steps[m]}
                for m in self.mappings}


def _chunks_of(deg: np.ndarray, mask: Callable[[int, int], np.ndarray] | None, *,
               with_ids: bool = False):
    """Degrees ``deg`` (int64 (N,)) of the ids selected by ``mask`` (``mask(lo, count)``:
    bool (count,) for ids ``[lo, lo + count)``; None = all), ascending, in bounded chunks.
    ``with_ids``: yield ``(lo, d)`` with every id of the chunk, unselected ones at degree 0
    (for :func:`graphsys.analysis.balance.work_by_range`)."""
    def gen():
        for lo in range(0, len(deg), FRONTIER_CHUNK):
            d = deg[lo:lo + FRONTIER_CHUNK]
            if with_ids:
                yield lo, d if mask is None else np.where(mask(lo, len(d)), d, 0)
            else:
                yield d if mask is None else d[mask(lo, len(d))]
    return gen


#: A recorded mask that selects every vertex (nothing stored).
ALL = "all"


def _host_bool(t) -> np.ndarray:
    """A bool frontier tensor as a NumPy bool array. A CPU tensor is viewed through DLPack,
    which dispatches no torch operator (``Tensor.numpy()`` dispatches four: ``detach``,
    ``to``, ``resolve_conj``, ``resolve_neg``), so recording inside a profiled run adds no
    invocation, transfer or synchronisation."""
    if isinstance(t, np.ndarray):
        a = t
    elif t.device.type == "cpu":
        try:
            a = np.from_dlpack(t)
        except (TypeError, BufferError, RuntimeError):  # e.g. a tensor that requires grad
            a = t.detach().numpy()
    else:
        a = t.detach().cpu().numpy()
    return a if a.dtype == np.bool_ else a != 0


class FrontierLog:
    """Frontier and accept masks of every superstep of a BSP run, recorded by hooks on the
    vertex program (:meth:`install`) and the engine's ``progress`` callback
    (:meth:`superstep`), so the SIMT model can run over them after the run.

    A mask selecting every vertex is stored as :data:`ALL`; others bit-packed
    (``N / 8`` bytes) in an anonymous temporary file, so memory does not grow with the
    number of supersteps. ``steps`` holds ``(info, mask ref, pull, direction)`` per
    superstep that ran an edge kernel, ``direction`` the program's in that superstep (HITS,
    SCC and the centralities change it between supersteps); ``record_seconds`` the time the
    hooks took (inside the run)."""

    def __init__(self) -> None:
        self.steps: list[tuple[dict[str, Any], Any, bool, str]] = []
        self.record_seconds = 0.0
        self._file = None
        self._size = 0
        self._frontier = self._next = self._accept = self._prog = self._direction = None

    # -- recording (inside the run) ------------------------------------------------------
    def _store(self, t):
        """``None`` (no tensor), :data:`ALL`, or ``(byte offset, length)`` in the file."""
        if t is None:
            return None
        t0 = time.perf_counter()
        a = _host_bool(t)
        if a.all():
            ref = ALL
        else:
            if self._file is None:  # kept open until close()
                self._file = tempfile.TemporaryFile(  # noqa: SIM115
                    prefix="graphsys-frontier-")
            packed = np.packbits(a)
            os.pwrite(self._file.fileno(), packed.data, self._size)
            ref = (self._size, int(a.size))
            self._size += packed.nbytes
        self.record_seconds += time.perf_counter() - t0
        return ref

    def install(self, prog) -> None:
        """Wrap ``prog``'s ``init``/``update``/``accepts`` (on the instance) to record the
        frontier they return, and the program's direction in each superstep (read when the
        engine asks for the accepted targets, before the edge pass)."""
        inner_init, inner_update, inner_accepts = prog.init, prog.update, prog.accepts
        self._prog = prog

        def init(ctx):
            st, active = inner_init(ctx)
            self._frontier = self._store(active)
            return st, active

        def update(ctx, st, combined, received):
            active, votes = inner_update(ctx, st, combined, received)
            self._next = self._store(active)
            return active, votes

        def accepts(ctx, st):
            self._direction = prog.direction
            acc = inner_accepts(ctx, st)
            self._accept = self._store(acc)
            return acc

        prog.init, prog.update, prog.accepts = init, update, accepts

    def superstep(self, ss) -> None:
        """The engine's ``progress`` callback: note the finished superstep's work items
        (push/stream: the frontier; pull: the accepted targets, None = all)."""
        frontier, accept = self._frontier, self._accept
        if ss.direction in ("push", "pull", "stream", "active", "active-pull") \
                and frontier is not None:
            pull = ss.direction in ("pull", "active-pull")
            self.steps.append(({"step": ss.superstep, "direction": ss.direction,
                                "active": ss.active}, accept if pull else frontier, pull,
                               self._direction or self._prog.direction))
        self._frontier, self._next, self._accept = self._next, None, None
        self._direction = None

    # -- reading (after the run) ---------------------------------------------------------
    def mask(self, ref) -> Callable[[int, int], np.ndarray] | None:
        """``ref``'s selector for :func:`_chunks_of` (None: every vertex)."""
        if ref is None or ref is ALL:
            return None
        off, _ = ref
        fd = self._file.fileno()

        def select(lo: int, count: int) -> np.ndarray:  # lo: a multiple of FRONTIER_CHUNK
            buf = os.pread(fd, (count + 7) // 8, off + lo // 8)
            return np.unpackbits(np.frombuffer(buf, np.uint8), count=count).view(np.bool_)
        return select

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# ---------------------------------------------------------------------------------------------
# BSP


def make_program(graph, algorithm: str, *, source=None, damping: float | None = None,
                 tol: float | None = None, edge_set: str | None = None,
                 sum_dtype: str | None = None, store_index: bool | None = None):
    """The vertex program the ``graphsys run ALGO`` front-end would run, and its default
    superstep limit, both from the algorithm's registered
    :class:`~graphsys.bsp.algorithms.spec.AlgorithmSpec` (an unknown name is an error
    listing the known ones). A parameter left None is the program's default; one given
    to an algorithm that has no such parameter is refused (:meth:`AlgorithmSpec.make`)."""
    from graphsys.plugins import ALGORITHMS

    spec = ALGORITHMS.get(algorithm)
    spec.check_source(source)
    params = {"damping": damping, "tol": tol, "sum_dtype": sum_dtype,
              "store_index": store_index}
    prog = spec.make(graph, source=source, edge_set=edge_set,
                     **{k: v for k, v in params.items() if v is not None})
    return prog, spec.max_iters(graph)


def _passes(direction: str, pull: bool) -> list[str]:
    """Degree directions of the kernels of one superstep."""
    out = []
    if direction in ("out", "both"):
        out.append("in" if pull else "out")
    if direction in ("in", "both"):
        out.append("out" if pull else "in")
    return out


def profile_bsp(graph, algorithm: str, *, recorder: SimtRecorder, source=None,
                device: str = "cpu", backend: str = "auto", mode: str = "auto",
                max_iters: int | None = None, edge_set: str | None = None,
                damping: float | None = None, tol: float | None = None,
                schedule: str = "auto", threads: int | None = None,
                sum_dtype: str | None = None, store_index: bool | None = None,
                rank_work: RankWork | None = None, trace=None) -> dict[str, Any]:
    """Profile ``algorithm`` on ``graph`` as ``graphsys run`` runs it (the same backend,
    schedule, mode, threads and parameters, whose defaults are ``run``'s); fills
    ``recorder`` per superstep, and ``rank_work`` (when given) with every superstep's work
    items charged to the ranks that own them; ``trace``: Chrome trace path of the profiled
    run (:func:`profile_call`). Returns ``{"stats": KernelStats, "run":
    RunStats.to_dict(), "steps", "flops", "workload"}``; ``workload["path"]`` says which
    code path ran (backend, ``stats.method``, schedule)."""
    import numba

    program = partial(make_program, graph, algorithm, source=source, damping=damping, tol=tol,
                      edge_set=edge_set, sum_dtype=sum_dtype, store_index=store_index)
    prog, limit = program()
    common = {"mode": mode, "max_iters": max_iters if max_iters is not None else limit,
              "edge_set": edge_set}
    threads = numba.get_num_threads() if threads is None else threads  # 0: run refuses it
    log = FrontierLog()
    # On the CPU the frontier is recorded during the profiled run itself (DLPack views: no
    # torch operator). On another device reading it back would add transfers and
    # synchronisations to what is measured, and a whole-graph algorithm (fused PageRank,
    # direction-optimizing BFS, Afforest) has no per-superstep frontier to read, so a
    # second run (numba, CPU, BSP supersteps) records it.
    single = str(device) == "cpu"
    if single:
        log.install(prog)
    try:
        run, stats = _profiled_run(graph, prog, log if single else None, device=device,
                                   backend=backend, schedule=schedule, threads=threads,
                                   trace=trace, **common)
        n_steps = run.num_supersteps
        scanned = run.totals()["edges_scanned"]
        stats.flops = 2.0 * scanned
        model_seconds, model_steps = 0.0, n_steps
        single = single and _stepwise(run)
        common["mode"] = run.mode  # the model run reads the edges as the profiled one did
        if not single:  # model run: frontiers in engine order
            log.close()
            log = FrontierLog()
            model_steps, model_seconds = _model_run(graph, program()[0], log, common)
        t0 = time.perf_counter()
        _replay(graph, edge_set, log, recorder, rank_work)
        simt_seconds = time.perf_counter() - t0
        record_seconds = log.record_seconds
    finally:
        log.close()
    return {"stats": stats, "run": run.to_dict(), "steps": n_steps, "flops": stats.flops,
            "model_seconds": model_seconds,
            "workload": {"kind": "bsp", "algorithm": algorithm, "mode": run.mode,
                         "device": run.device, "backend": run.backend,
                         "method": run.method, "schedule": schedule, "threads": threads,
                         "path": f"{run.backend} backend, {run.method} (schedule "
                                 f"{schedule}), {run.mode}, {run.device}, {threads} threads",
                         "adjacency_index": sorted(graph.manifest.indexes.get(
                             graph.edge_set(edge_set).name, {})),
                         "supersteps": n_steps, "model_supersteps": model_steps,
                         "converged": run.converged,
                         "edges_scanned": scanned,
                         "seconds": run.seconds, "setup_seconds": run.setup_seconds,
                         "frontier_record_seconds": record_seconds if single else 0.0,
                         "model_run_seconds": model_seconds,
                         "simt_seconds": simt_seconds,
                         "simt_source": (
                             "frontier of every superstep, recorded during the profiled run"
                             if single else "frontier of every superstep (model run, numba "
                             "on CPU, BSP supersteps: the profiled run's device, "
                             "whole-graph method or fused supersteps have none to read)")}}


def _profiled_run(graph, prog, log: FrontierLog | None, *, device: str, trace, **run_kw):
    """``prog`` run (:func:`graphsys.bsp.run`, ``run_kw``) under :func:`profile_call`, a step
    a superstep (the first from ``init``), each noted in ``log`` when given: its ``RunStats``
    and ``KernelStats`` (invocations after the last superstep: the finish's)."""
    from graphsys.bsp import run as bsp_run

    def work(marker: StepMarker):
        inner_init = prog.init

        def init(ctx):
            out = inner_init(ctx)
            marker.step()
            return out

        def progress(ss) -> None:
            if log is not None:
                log.superstep(ss)
            marker.step()

        prog.init = init
        res = bsp_run(graph, prog, device=device, progress=progress, **run_kw)
        marker.finish()
        return res.stats

    # a CPU run has no device to copy to: no transfer counter (see profile_call)
    run, stats = profile_call(work, device=device, count_transfers=str(device) != "cpu",
                              trace=trace)
    stats.finish_invocations += sum(stats.per_step[run.num_supersteps:])
    stats.per_step = stats.per_step[:run.num_supersteps]
    # the marker's last step (after the last superstep) is the finish's, not a step
    stats.total_steps = min(stats.num_steps, run.num_supersteps)
    if not _stepwise(run) and len(stats.per_step) > 1:
        # the supersteps ran inside one call and were marked after it: the first marked
        # step holds all their invocations, so only their mean per superstep is known
        what = run.method if run.method != "supersteps" else "fused supersteps"
        stats.extra.update({"mean_per_step": sum(stats.per_step) / len(stats.per_step),
                            "per_step_unit": f"mean over the supersteps ({what}: several "
                                             f"in one call)"})
        stats.per_step = []
    trim_heap()  # the run's freed batch temporaries: not part of the next phases' peak
    return run, stats


def _stepwise(run) -> bool:
    """Whether the engine ran each superstep of ``run`` (``RunStats``) on its own, its
    program's hooks and the progress callback between them: not a whole-graph method, and
    no min-relaxation supersteps fused into one numba call (whose frontiers no hook sees)."""
    return run.method == "supersteps" and not any(ss.fused for ss in run.supersteps)


def _model_run(graph, prog, log: FrontierLog, run_kw: dict[str, Any]) -> tuple[int, float]:
    """The model run of ``prog`` (numba on the CPU, BSP supersteps, ``run_kw``), its
    frontiers in engine order recorded in ``log``: its supersteps and seconds."""
    from graphsys.bsp import run as bsp_run

    log.install(prog)
    t0 = time.perf_counter()
    steps = bsp_run(graph, prog, device="cpu", backend="numba", progress=log.superstep,
                    fuse=False, **run_kw).stats.num_supersteps  # the hooks see each one
    seconds = time.perf_counter() - t0
    trim_heap()
    return steps, seconds


def _replay(graph, edge_set: str | None, log: FrontierLog, recorder: SimtRecorder,
            rank_work: RankWork | None) -> None:
    """The SIMT model (``recorder``) over the degrees of each logged superstep's work items
    (the program's direction in that superstep, :func:`_passes`), after the run (its
    buckets unmapped); with ``rank_work``, the items charged to the ranks that own them
    too."""
    es = graph.edge_set(edge_set).name
    degs: dict[str, np.ndarray] = {}
    all_ranks: dict[tuple[str, str], np.ndarray] = {}  # per-rank work, all-active supersteps
    for info, ref, pull, direction in log.steps:
        everyone = ref is None or ref is ALL
        passes = _passes(direction, pull)
        for d in passes:
            if d not in degs:
                degs[d] = graph.degrees(es, d)
        key = (direction, info["direction"])
        recorder.step(info, [_chunks_of(degs[d], log.mask(ref)) for d in passes],
                      cache_key=(*key, "all") if everyone else None)
        if rank_work is not None:
            if not everyone or key not in all_ranks:
                w = sum(work_by_range(_chunks_of(degs[d], log.mask(ref), with_ids=True),
                                      rank_work.bounds) for d in passes)
                if everyone:
                    all_ranks[key] = w
            rank_work.add(all_ranks[key] if everyone else w)


# ---------------------------------------------------------------------------------------------
# embedding


class _Enough(Exception):
    """Raised inside the profiled trainer once the bounded number of batches ran."""


def profile_embed(graph, *, recorder: SimtRecorder, device: str = "cpu",
                  dimension: int = 32, batch_size: int | None = None,
                  edge_set: str | None = None, trace=None, config=None,
                  steps: int | None = None, progress: bool = False) -> dict[str, Any]:
    """One epoch of embedding training, as ``graphsys embed train`` runs it (trainer built
    inside the profiled section; at most ``steps`` batches when given; see the module
    docstring); ``trace`` as :func:`profile_bsp`. ``config``: the user's
    :class:`~graphsys.embed.EmbedConfig` (its model, dimension, batch size,
    negatives, workers; one epoch, on ``device``), else a default model of ``dimension``."""
    from dataclasses import replace

    from graphsys.embed.config import config_from_dict
    from graphsys.embed.trainer import Trainer

    if steps is not None:
        steps = check_count("steps", steps)
    if batch_size is not None:  # 0 fell back to the default
        batch_size = check_count("batch_size", batch_size)
    es = graph.edge_set(edge_set or (config.edges if config is not None else None))
    if config is None:
        cfg = config_from_dict({"dimension": dimension, "batch_size": batch_size or 1000,
                                "num_epochs": 1, "device": device, "edges": es.name,
                                "num_partitions": graph.num_partitions})
    else:
        cfg = replace(config, num_epochs=1, device=device, edges=es.name,
                      batch_size=batch_size or config.batch_size)
    dimension = cfg.dimension
    batches = {"n": 0}
    with tempfile.TemporaryDirectory(prefix="graphsys-profile-embed-") as tmp:
        lock = threading.Lock()

        def count_batch() -> None:
            with lock:
                if steps is not None and batches["n"] >= steps:
                    raise _Enough
                batches["n"] += 1

        def work(marker: StepMarker):
            trainer = Trainer(cfg, graph, Path(tmp) / "ckpt", on_batch=count_batch,
                              progress=progress)
            marker.step()
            with contextlib.suppress(_Enough):
                trainer.run()
            marker.finish()

        _, stats = profile_call(work, device=device, trace=trace,
                                count_transfers=str(device) != "cpu")  # as profile_bsp
    bound, steps = steps, max(batches["n"], 1)
    inv = stats.per_step[0] if stats.per_step else 0
    # one profiler range spans the epoch (batches run inside the trainer): mean per batch
    stats.per_step = []
    stats.extra.update({"steps": steps, "mean_per_step": inv / steps,
                        "per_step_unit": "mean over the epoch's batches"})
    negs = cfg.num_batch_negs + cfg.num_uniform_negs
    trained = min(es.num_edges, batches["n"] * cfg.batch_size)
    stats.flops = 6.0 * trained * dimension * (2 + negs)
    deg = graph.degrees(es.name, "out")
    recorder.step({"step": 0, "direction": "push", "active": len(deg)},
                  [_chunks_of(deg, None)])
    return {"stats": stats, "steps": steps, "flops": stats.flops,
            "workload": {"kind": "embed", "batches": batches["n"], "dimension": dimension,
                         "path": "the embedding trainer of graphsys embed train, one epoch"
                                 + ("" if bound is None else
                                    f" (at most {bound} batches)"),
                         "workers": cfg.workers, "prefetch": cfg.prefetch,
                         "buffer_partitions": cfg.buffer_partitions,
                         "batch_size": cfg.batch_size, "edges": es.num_edges,
                         "edges_trained": trained, "operator": cfg.operator,
                         "comparator": cfg.comparator, "loss": cfg.loss_fn,
                         "config": "the user's (--config/--set), one bounded epoch"
                         if config is not None else f"default model, dimension {dimension}",
                         "negatives_per_positive": negs, "device": device,
                         "simt_source": "out-degrees of the training edge set"}}
