"""The BSP executor: runs a :class:`~graphsys.bsp.program.VertexProgram` superstep by
superstep in memory, out of core, or across ``torch.distributed`` ranks, on CPU or CUDA,
recording :class:`~graphsys.bsp.stats.RunStats`.

Node numbering is the Graph API's global id (partition-major, ``0..N-1``); graphs must have
one entity type (relations are ignored: every edge of the edge set carries messages).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from graphsys.bsp.distributed import LocalComm, TorchComm
from graphsys.bsp.edges import DENSE_DIVISOR, EdgeResult, MemoryEdges, StreamEdges
from graphsys.bsp.program import COMBINERS, REDUCTIONS, Context, VertexProgram
from graphsys.bsp.solve import solve_in_memory
from graphsys.bsp.stats import RunStats, SuperstepStats, disk_read_bytes
from graphsys.device import host_array, resolve_device
from graphsys.errors import GraphsysError, ParameterError
from graphsys.trace import trace_range

MODES = ("memory", "out-of-core")
BACKENDS = ("auto", "numba", "torch")
SCHEDULES = ("sync", "async", "auto")
DEFAULT_MAX_ITERS = 100


@dataclass
class Result:
    """A finished run: ``values`` float64 (N,) (or (N, d) rows, from a vector program's
    :meth:`~graphsys.bsp.program.VertexProgram.result`) indexed by global node id (on every
    rank of a distributed run), and its :class:`RunStats`."""

    values: np.ndarray
    stats: RunStats
    graph: object

    def to_table(self) -> pa.Table:
        """Columns ``node`` (original id: int64 or string) and ``value`` (float64, or
        ``fixed_size_list<float64>[d]`` for (N, d) values), one row per node in global id
        order."""
        if self.values.ndim == 2:
            value = pa.FixedSizeListArray.from_arrays(
                pa.array(self.values.reshape(-1), pa.float64()), self.values.shape[1])
        else:
            value = pa.array(self.values, pa.float64())
        return pa.table({"node": pa.array(self.graph.node_ids()), "value": value})


def resolve_backend(backend: str, device: torch.device) -> str:
    """``auto`` = numba kernels on CPU, torch on CUDA; ``torch`` on CPU runs the GPU code
    path on CPU tensors."""
    if backend not in BACKENDS:
        raise GraphsysError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
    if backend == "auto":
        return "numba" if device.type == "cpu" else "torch"
    if backend == "numba" and device.type != "cpu":
        raise GraphsysError("the numba backend runs on CPU only; use backend torch or auto")
    return backend


def _count(mask: torch.Tensor) -> int:
    """True entries of a bool tensor; NumPy on the CPU (a torch reduction over a small
    tensor costs more in thread wake-ups than in work)."""
    if mask.device.type == "cpu":
        return int(np.count_nonzero(host_array(mask)))
    return int(mask.sum())


def _reduce_dict(comm, parts: dict[str, tuple]) -> dict[str, float]:
    names = sorted(parts)
    for n in names:
        if parts[n][1] not in REDUCTIONS:
            raise GraphsysError(f"aggregator {n!r}: reduction must be one of {REDUCTIONS}")
    vals = comm.allreduce([float(parts[n][0]) for n in names], [parts[n][1] for n in names])
    return dict(zip(names, vals))


def run(graph, program: VertexProgram, *, mode: str = "memory", device: str = "cpu",
        backend: str = "auto", max_iters: int = DEFAULT_MAX_ITERS, edge_set: str | None = None,
        distributed: bool = False, threads: int | None = None, readahead: int = 4,
        dense_divisor: float = DENSE_DIVISOR, fuse: bool = True, schedule: str = "sync",
        progress: Callable[[SuperstepStats], None] | None = None) -> Result:
    """Run ``program`` on ``graph`` (an opened :class:`~graphsys.storage.graph.Graph`).

    Args:
        mode: ``memory`` (CSR/CSC built once, push/pull per superstep) or ``out-of-core``
            (buckets streamed from the mapped files every superstep).
        device: ``cpu``, ``cuda`` or ``auto``.
        backend: ``auto`` (numba on CPU, torch on CUDA), ``numba`` or ``torch``.
        max_iters: most supersteps (positive).
        edge_set: which edge set carries messages (default: the graph's default).
        distributed: run as one rank of the initialised ``torch.distributed`` group (each rank
            owns a contiguous range of partitions; edges are streamed as out of core).
        threads: workers for the out-of-core pass (default: numba's thread count).
        readahead: buckets a worker asks the kernel to read ahead (out of core).
        dense_divisor: Ligra's threshold: pull when |F| + outdeg(F) > m / dense_divisor.
        fuse: run the supersteps of min-relaxation programs (BFS, SSSP, WCC;
            :attr:`VertexProgram.relax_state`) inside numba calls (in memory, CPU). Same
            supersteps and results; per-superstep seconds are then split by work. Also
            gates programs' declared fast paths (PageRank's fused pull + update loop).
        schedule: ``sync`` (BSP supersteps) or ``async``: a min-relaxation program run to
            its fixed point with a FIFO work list (:func:`kernels.relax_async`; in memory,
            CPU, one process): the same values, recorded as one superstep of direction
            ``async``, ``max_iters`` not applied. Far less work on high-diameter graphs.
            ``auto``: the program's own whole-graph algorithm where it declares one
            (:meth:`VertexProgram.solve_in_memory`: direction-optimizing BFS, Afforest /
            union-find WCC; in memory, CPU, one process, ``fuse`` on), else ``sync``;
            ``stats.method`` says which ran.
        progress: called with each finished superstep's statistics.

    Returns:
        :class:`Result` with float64 (N,) values and the run's statistics.
    """
    t_start = time.perf_counter()
    if mode not in MODES:
        raise GraphsysError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if schedule not in SCHEDULES:
        raise GraphsysError(f"unknown schedule {schedule!r} (choose from "
                            f"{', '.join(SCHEDULES)})")
    if not isinstance(max_iters, int) or max_iters < 1:
        raise ParameterError("max_iters", f"must be a positive integer, got {max_iters!r}")
    if len(graph.entity_types) != 1:
        raise GraphsysError(f"the BSP engine needs a graph with one entity type, this one has "
                            f"{graph.entity_types}")
    program.check()
    dev = resolve_device(device)
    backend = resolve_backend(backend, dev)
    es = graph.edge_set(edge_set)
    comm = TorchComm(dev) if distributed else LocalComm()
    parts = comm.owned_partitions(graph.num_partitions)
    offsets = graph.partition_offsets()
    lo, hi = int(offsets[parts.start]), int(offsets[parts.stop])
    n = graph.num_nodes()
    if threads is None:
        import numba

        threads = numba.get_num_threads()
    if distributed or mode == "out-of-core":
        edges = StreamEdges(graph, es.name, program, dev, backend, parts, threads, readahead)
        run_mode = "distributed" if distributed else "out-of-core"
    else:
        edges = MemoryEdges(graph, es.name, program, dev, backend, dense_divisor)
        run_mode = "memory"
    try:
        degree_cache: dict[str, np.ndarray] = {}

        def degree_fn(direction: str) -> np.ndarray:
            if direction not in degree_cache:
                degree_cache[direction] = graph.degrees(es.name, direction)
            return degree_cache[direction]

        ctx = Context(graph=graph, num_nodes=n, lo=lo, hi=hi, device=dev, backend=backend,
                      edge_set=es.name, _degree_fn=degree_fn)
        stats = RunStats(algorithm=program.name, mode=run_mode, device=str(dev), backend=backend,
                         world_size=comm.world_size, num_nodes=n, num_edges=es.num_edges)
        state, active = program.init(ctx)
        active = active.to(dev)
        if comm.world_size > 1:
            bounds = np.array(_rank_bounds(comm, graph), np.int64)
        else:
            bounds = np.array([lo, hi], np.int64)
        stats.setup_seconds = time.perf_counter() - t_start
        identity = program.identity
        fused = fuse and run_mode == "memory" and edges.use_numba and program.fusable
        step = 0
        if schedule == "async":
            if not (run_mode == "memory" and edges.use_numba and program.fusable):
                raise GraphsysError(f"{program.name}: the async schedule runs min-relaxation "
                                    f"programs (bfs, sssp, wcc) in memory on the CPU (numba "
                                    f"backend, one process)")
            active = _async_fixed_point(edges, program, state, active, stats, progress)
            step = max_iters  # no supersteps left: the loop's else sees an empty frontier
        elif fuse and run_mode == "memory" and edges.use_numba and comm.world_size == 1:
            solved = solve_in_memory(program, ctx, edges, state, schedule, max_iters, stats,
                                     progress)
            if solved is not None:  # the loop's else reads convergence off the frontier
                active, step = solved, max_iters
        while step < max_iters:
            with trace_range(f"bsp.superstep#{step}"):
                ctx.superstep = step
                ss = SuperstepStats(superstep=step, active=0, direction="")
                # bucket reads happen in the supersteps out of core (in memory: in the setup)
                disk0 = disk_read_bytes() if run_mode != "memory" else 0
                t0 = time.perf_counter()
                local_active = _count(active)
                num_active = int(comm.allreduce([local_active], ["sum"])[0])
                ss.active = ctx.num_active = num_active
                if num_active == 0 and program.halt_when_inactive:
                    stats.converged = True
                    break
                if fused:
                    done, active = _fused_supersteps(edges, program, state, active, step,
                                                     max_iters - step, stats, progress)
                    if done:
                        step += done
                        continue
                program.check()  # direction may change between supersteps: each one is valid
                ctx.aggregates = _reduce_dict(comm, program.aggregate(ctx, state))
                t1 = time.perf_counter()
                ss.seconds["aggregate"] = t1 - t0
                build0 = getattr(edges, "build_seconds", 0.0)
                x = program.send(ctx, state).to(torch.float64)
                if program.width is not None:
                    x = _rows(program, x, hi - lo)
                accept = program.accepts(ctx, state)
                if num_active == 0:  # nothing is sent: skip the edge pass
                    res = EdgeResult(torch.full(program.message_shape(n), identity,
                                                dtype=torch.float64, device=dev),
                                     torch.zeros(n, dtype=torch.bool, device=dev),
                                     None if not program.raw_messages else (
                                         torch.zeros(0, dtype=torch.int64, device=dev),
                                         torch.zeros(0, dtype=torch.float64, device=dev)), "none")
                elif run_mode == "memory":
                    res = edges.run(x, active, num_active, accept)
                else:
                    # a rank with no active vertex skips all its buckets; local ids on the stream
                    res = edges.run(x, active, min(len(x), local_active),
                                    None)
                t2 = time.perf_counter()
                built = getattr(edges, "build_seconds", 0.0) - build0
                ss.seconds["edges"] = t2 - t1 - built
                stats.setup_seconds += built
                # communicate: deliver the messages of targets owned here (local ids)
                if res.raw is not None:
                    idx, val = res.raw
                    if program.include_self:
                        own = torch.nonzero(active).squeeze(1)
                        idx, val = torch.cat([idx, own + lo]), torch.cat([val, x[own]])
                    idx, val, ss.messages_exchanged = comm.exchange(idx, val, bounds)
                    if accept is not None:
                        keep = accept[idx]
                        idx, val = idx[keep], val[keep]
                    received = torch.zeros(hi - lo, dtype=torch.bool, device=dev)
                    received[idx] = True
                    combined = program.combiner.combine(idx, val, hi - lo)
                else:
                    acc, received = res.acc.to(dev), res.received.to(dev)
                    if comm.world_size > 1:
                        sel = torch.nonzero(received).squeeze(1)
                        idx, val, ss.messages_exchanged = comm.exchange(sel, acc[sel], bounds)
                        combined = torch.full(program.message_shape(hi - lo), identity,
                                              dtype=torch.float64, device=dev)
                        rows = idx if val.dim() == 1 else idx.unsqueeze(1).expand_as(val)
                        combined.scatter_reduce_(0, rows, val, COMBINERS[program.combiner][2],
                                                 include_self=True)
                        received = torch.zeros(hi - lo, dtype=torch.bool, device=dev)
                        received[idx] = True
                    else:
                        combined = acc
                    if accept is not None:
                        received &= accept
                        keep = received if combined.dim() == 1 else received.unsqueeze(1)
                        combined = torch.where(keep, combined,
                                               torch.full_like(combined, identity))
                t3 = time.perf_counter()
                ss.seconds["communicate"] = t3 - t2
                counts = comm.allreduce([res.edges_scanned, res.messages_sent, _count(received),
                                         res.bytes_read, res.bytes_h2d, ss.messages_exchanged],
                                        ["sum"] * 6)
                (ss.edges_scanned, ss.messages_sent, ss.messages_combined, ss.bytes_read,
                 ss.bytes_h2d, ss.messages_exchanged) = (int(c) for c in counts)
                ss.direction = res.direction
                active, votes = program.update(ctx, state, combined, received)
                active = active.to(dev)
                votes = _reduce_dict(comm, votes)
                ss.seconds["update"] = time.perf_counter() - t3
                if run_mode != "memory":
                    ss.disk_read_bytes = int(comm.allreduce([disk_read_bytes() - disk0],
                                                            ["sum"])[0])
                stats.supersteps.append(ss)
                if progress is not None:
                    progress(ss)
                if program.halt(ctx, votes):
                    stats.converged = True
                    break
                step += 1
        else:
            # ran max_iters supersteps: converged only if nothing is left to do
            stats.converged = int(comm.allreduce([_count(active)], ["sum"])[0]) == 0
        local = program.result(ctx, state).to(torch.float64)
        if comm.world_size > 1:
            sizes = [int(b - a) for a, b in itertools.pairwise(bounds)]
            values = comm.allgather(local, sizes).cpu().numpy()
        else:
            values = local.cpu().numpy()
        stats.seconds = time.perf_counter() - t_start
    finally:
        edges.close()
    return Result(values=np.ascontiguousarray(values, np.float64), stats=stats, graph=graph)


def _fused_supersteps(edges: MemoryEdges, program: VertexProgram, state: dict,
                      active: torch.Tensor, step: int, budget: int, stats: RunStats,
                      progress) -> tuple[int, torch.Tensor]:
    """Run up to ``budget`` supersteps of a min-relaxation program in numba calls; record
    their statistics. Returns (supersteps run, the next frontier as bool (N,))."""
    t0 = time.perf_counter()
    build0 = edges.build_seconds
    value = state[program.relax_state]
    frontier = np.flatnonzero(host_array(active))  # CPU only: NumPy spares torch's pool
    done, act, scanned, combined, pulled, nxt = edges.relax(value, frontier, budget)
    built = edges.build_seconds - build0
    stats.setup_seconds += built
    if done == 0:
        return 0, active
    seconds = time.perf_counter() - t0 - built
    work = act + scanned
    share = work / work.sum() if work.sum() else np.full(done, 1.0 / done)
    for s, (a, e, c, p, t) in enumerate(zip(act.tolist(), scanned.tolist(),
                                             combined.tolist(), pulled.tolist(),
                                             (seconds * share).tolist())):
        ss = SuperstepStats(superstep=step + s, active=a, direction="pull" if p else "push",
                            edges_scanned=e, messages_sent=e, messages_combined=c, fused=True)
        ss.seconds["edges"] = t
        stats.supersteps.append(ss)
        if progress is not None:
            progress(ss)
    new_active = np.zeros(len(active), np.bool_)
    new_active[nxt] = True
    return done, torch.from_numpy(new_active)


def _async_fixed_point(edges: MemoryEdges, program: VertexProgram, state: dict,
                       active: torch.Tensor, stats: RunStats, progress) -> torch.Tensor:
    """Run a min-relaxation program to its fixed point from the frontier ``active`` with a
    work list; record it as one ``async`` superstep. Returns the (empty) frontier."""
    t0 = time.perf_counter()
    build0 = edges.build_seconds
    frontier = np.flatnonzero(host_array(active))  # CPU only: NumPy spares torch's pool
    popped, scanned, lowered = edges.relax_async(state[program.relax_state], frontier)
    stats.method = "async"
    built = edges.build_seconds - build0
    stats.setup_seconds += built
    ss = SuperstepStats(superstep=0, active=len(frontier), direction="async",
                        edges_scanned=scanned, messages_sent=scanned,
                        messages_combined=lowered, fused=True)
    ss.seconds["edges"] = time.perf_counter() - t0 - built
    stats.supersteps.append(ss)
    if progress is not None:
        progress(ss)
    return torch.zeros_like(active)


def _rows(program: VertexProgram, x: torch.Tensor, num_local: int) -> torch.Tensor:
    """A vector program's sent values as contiguous float64 (N_local, width) rows; one
    line naming the program when :meth:`VertexProgram.send` returned another shape."""
    if tuple(x.shape) != (num_local, program.width):
        raise GraphsysError(f"{program.name}: send returned shape {tuple(x.shape)}, expected "
                            f"({num_local}, {program.width}) (width {program.width})")
    return x.contiguous()


def _rank_bounds(comm, graph) -> list[int]:
    """Global id range boundaries of every rank, int (W+1,)."""
    offsets = graph.partition_offsets()
    p = graph.num_partitions
    w = comm.world_size
    return [int(offsets[r * p // w]) for r in range(w)] + [int(offsets[p])]

