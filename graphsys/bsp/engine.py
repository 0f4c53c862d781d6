"""The BSP executor: runs a :class:`~graphsys.bsp.program.VertexProgram` superstep by
superstep over an edge provider (:mod:`graphsys.bsp.provider`: in memory, out of core, or
one rank of a ``torch.distributed`` run), on CPU or CUDA, recording
:class:`~graphsys.bsp.stats.RunStats`.

The loop is the same for every provider: reduce the frontier size and the aggregators, send,
run the provider's edge phase, deliver the combined messages (raw ones for a custom
:class:`~graphsys.bsp.program.Combiner`, exchanged between ranks in a distributed run),
update, halt. Declared fast paths replace supersteps where the provider offers them
(:attr:`~graphsys.bsp.provider.EdgeProvider.relaxes`): fused min-relaxation supersteps and
the ``async`` work-list schedule.

Node numbering is the Graph API's global id (partition-major, ``0..N-1``); graphs must have
one entity type (relations are ignored: every edge of the edge set carries messages).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from graphsys import openmp
from graphsys.bsp import checks
from graphsys.bsp.device_stream import check_budget
from graphsys.bsp.docstrings import ENGINE_OPTIONS, cite, document_options, fill_doc
from graphsys.bsp.edges import DENSE_DIVISOR, MemoryEdges
from graphsys.bsp.program import COMBINERS, REDUCTIONS, Context, VertexProgram
from graphsys.bsp.provider import EdgeProvider, EdgeResult, empty_result
from graphsys.bsp.result import RESULT_METADATA, Result  # noqa: F401 (re-exported)
from graphsys.bsp.stats import RunStats, SuperstepStats, disk_read_bytes
from graphsys.bsp.stream import DistributedEdges, StreamEdges
from graphsys.device import HOST, as_torch, host_array, resolve_lazily
from graphsys.distributed import initialized, local_cuda_device
from graphsys.errors import GraphsysError, ParameterError, check_count, check_flag, check_real
from graphsys.execution import Execution, with_threads
from graphsys.progress import display
from graphsys.trace import trace_range
from graphsys.views.limits import one_type

if TYPE_CHECKING:
    import torch

#: ``mode="auto"`` streams the edges of a run expected to end within this many supersteps
#: (:func:`choose_mode`): with ``B`` the adjacency build and ``D`` the degree count in
#: supersteps and a streamed superstep ``R`` times an in-memory one, streaming is cheaper
#: below ``(B - D) / (R - 1)`` supersteps: 16 for ``B = 4.5``, ``D = 0.5``, ``R = 1.25``.
STREAM_MAX_SUPERSTEPS = 16
SCHEDULES = ("sync", "async", "auto")
DEFAULT_MAX_ITERS = 100


def resolve_backend(backend: str, device: torch.device) -> str:
    """``auto`` = numba kernels on CPU, torch on CUDA; ``torch`` on CPU runs the GPU code
    path on CPU tensors (``backend`` one of :data:`~graphsys.execution.BACKENDS`)."""
    if backend == "auto":
        return "numba" if device.type == "cpu" else "torch"
    if backend == "numba" and device.type != "cpu":
        raise GraphsysError("the numba backend runs on CPU only; use backend torch or auto")
    return backend


def open_edges(graph, edge_set: str, program: VertexProgram, device: torch.device,
               backend: str, *, mode: str = "memory", distributed: bool = False,
               threads: int = 2, readahead: int = 4,
               dense_divisor: float = DENSE_DIVISOR,
               device_budget: int | float | None = None) -> EdgeProvider:
    """The edge provider of a run (see :func:`run` for the arguments): a distributed run
    streams its partitions whatever ``mode`` says."""
    if distributed:
        return DistributedEdges(graph, edge_set, program, device, backend, threads, readahead,
                                device_budget=device_budget)
    if mode == "out-of-core":
        return StreamEdges(graph, edge_set, program, device, backend, threads, readahead,
                           device_budget=device_budget)
    return MemoryEdges(graph, edge_set, program, device, backend, dense_divisor)


def choose_mode(graph, edge_set: str | None, program: VertexProgram,
                device: torch.device) -> str:
    """What ``mode="auto"`` runs: ``out-of-core`` for a CPU run of a program that expects to
    end within :data:`STREAM_MAX_SUPERSTEPS` supersteps
    (:attr:`VertexProgram.expected_supersteps`; a run started from a previous result)
    over an edge set without a stored adjacency index of its own (a mapped index costs no
    build; a view's merged indexes do); else ``memory``, also where the count is unknown.

    Parameters
    ----------
    graph : Graph
        The graph the run reads.
    edge_set : str or sequence of str, optional
        The edge set(s) it reads.
    program : VertexProgram
        The program it runs.
    device : torch.device
        Where it runs.

    Returns
    -------
    str
        ``"memory"`` or ``"out-of-core"``.

    Examples
    --------
    >>> import tempfile, torch, graphsys
    >>> from graphsys.bsp.algorithms.pagerank import PageRank
    >>> from graphsys.bsp.engine import choose_mode
    >>> g = graphsys.from_numpy([1, 2, 3], [2, 3, 1], tempfile.mkdtemp() + "/g")
    >>> program = PageRank()
    >>> choose_mode(g, None, program, torch.device("cpu"))
    'memory'
    >>> program.expected_supersteps = 6
    >>> choose_mode(g, None, program, torch.device("cpu"))
    'out-of-core'
    """
    expected = program.expected_supersteps
    if expected is None or expected > STREAM_MAX_SUPERSTEPS or device.type != "cpu":
        return "memory"
    es = graph.edge_set(edge_set)
    stored = graph.manifest.indexes.get(es.name, {})  # a time view maps none of them
    if not es.members and any(kind in stored for kind in ("csr", "csc", "push")):
        return "memory"
    return "out-of-core"


def _check_ranks_agree(graph, program: VertexProgram, edge_set: str, mode: str,
                       max_iters: int, schedule: str) -> None:
    """Every rank of a distributed run opened the same graph and runs the same program with
    the same settings (:func:`~graphsys.distributed.check_same_inputs`)."""
    import hashlib

    from graphsys.bsp.distributed import program_digest
    from graphsys.distributed import check_same_inputs, graph_digest

    if not initialized():
        return  # the edge provider refuses the run in one line
    settings = hashlib.sha256(repr((edge_set, mode, max_iters, schedule)).encode()).hexdigest()
    check_same_inputs({"graph": graph_digest(graph), "program": program_digest(program),
                       "run settings": settings})


@with_threads
@document_options(*ENGINE_OPTIONS, "device_budget", "execution")
@fill_doc(references=cite("pregel", "ligra"))
def run(graph, program: VertexProgram, *, mode: str = "auto", device: str = "cpu",
        backend: str = "auto", max_iters: int = DEFAULT_MAX_ITERS, edge_set: str | None = None,
        distributed: bool = False, threads: int | None = None, readahead: int = 4,
        dense_divisor: float = DENSE_DIVISOR, fuse: bool = True, schedule: str = "sync",
        progress: bool | Callable[[SuperstepStats], None] | None = None,
        device_budget: int | float | None = None, execution: Execution | None = None) -> Result:
    """Run a vertex program on a graph, superstep by superstep (Pregel's model).

    Each superstep reduces the aggregators, lets the active vertices send along their
    edges, combines the messages per target, and updates the vertices, until the program
    halts, no vertex is active or ``max_iters`` supersteps ran. The same program runs in
    memory, out of core, on CPU or CUDA, and across ``torch.distributed`` ranks.

    The graph is read at most once before superstep 0: in memory, the adjacency the first
    superstep needs is built with one read of the buckets (none where the graph has an
    adjacency index) and degrees come from it; out of core, degrees are counted over the
    buckets the supersteps then stream from the same open mappings.

    Parameters
    ----------
    graph : Graph or str or Path
        An opened :class:`~graphsys.storage.graph.Graph` or a graph directory; one entity
        type (relations are ignored: every edge of the edge set carries messages).
    program : VertexProgram
        The program to run (an instance).
    max_iters : int, default 100
        Most supersteps (positive).
    schedule : {"sync", "async", "auto"}, default "sync"
        ``sync``: BSP supersteps. ``async``: a min-relaxation program
        (:attr:`VertexProgram.relax_state`) run to its fixed point with a FIFO work list
        (in memory, CPU, one process): the same values, recorded as one superstep of
        direction ``async``, ``max_iters`` not applied; far less work on high-diameter
        graphs. ``auto``: the program's own whole-graph algorithm where it declares one
        (:meth:`VertexProgram.solve_in_memory`; in memory, CPU, one process, ``fuse`` on),
        else ``sync``. ``result.stats.method`` says which ran.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) by internal node id (or (N, d) rows, from
        :meth:`VertexProgram.result`); ``stats``: the run's :class:`RunStats`. Map to
        original ids with :meth:`Result.to_table`, :meth:`Result.to_dict`,
        :meth:`Result.top` or :meth:`Result.value`.

    Raises
    ------
    ParameterError
        An unknown ``mode``, ``backend``, ``schedule`` or ``device``, ``max_iters`` not
        a positive integer, ``readahead`` not a non-negative one, ``dense_divisor`` not
        positive and finite, or ``fuse`` not a bool.
    GraphsysError
        A graph with several entity types, an invalid program (unknown message or
        combiner, bad width), or ``schedule="async"`` for a program or mode that cannot
        run it.

    See Also
    --------
    VertexProgram : how to write a program (and ``docs/programs.md``).
    graphsys.bsp.pagerank, graphsys.bsp.bfs, graphsys.bsp.wcc : ready-made programs.

    References
    ----------
    %(references)s

    Examples
    --------
    A program whose vertices count their in-neighbours (one superstep):

    >>> import tempfile, numpy as np, torch, graphsys
    >>> from graphsys import bsp
    >>> class InDegree(bsp.VertexProgram):
    ...     name = "in-degree"
    ...     message, combiner, direction = "copy", "sum", "out"
    ...     def init(self, ctx):
    ...         ones = ctx.full(1.0)
    ...         return {"count": ctx.full(0.0), "ones": ones}, ones > 0
    ...     def send(self, ctx, state):
    ...         return state["ones"]
    ...     def update(self, ctx, state, combined, received):
    ...         state["count"] = combined
    ...         return torch.zeros_like(received), {}
    ...     def result(self, ctx, state):
    ...         return state["count"]
    >>> g = graphsys.from_numpy(np.array([0, 1, 2, 2]), np.array([2, 2, 0, 1]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> result = bsp.run(g, InDegree())
    >>> result.to_dict()
    {0: 1.0, 1: 1.0, 2: 2.0}
    >>> result.stats.num_supersteps, result.stats.converged
    (1, True)
    """
    openmp.apply_wait_policy()
    if isinstance(graph, (str, Path)):
        from graphsys.storage.graph import open_graph

        graph = open_graph(graph)
    t_start = time.perf_counter()
    ex = Execution.of(execution, mode=mode, device=device, backend=backend, threads=threads,
                      distributed=distributed, progress=progress).without(
        "the BSP engine (mode='out-of-core' streams; device_budget bounds a GPU)", "memory_limit")
    mode, threads, distributed = ex.mode, ex.threads, ex.distributed
    max_iters, fuse, readahead, dense_divisor = _check_run(
        graph, program, schedule, max_iters, device_budget, fuse, readahead, dense_divisor)
    dev = resolve_lazily(ex.device)  # the CPU without torch (HOST): see host_run below
    backend = resolve_backend(ex.backend, dev)
    if program.sum_dtype != "float64" and backend != "numba":
        raise ParameterError("sum_dtype", f"{program.sum_dtype} sums run in the numba CPU "
                                          f"kernels; the {backend} backend sums in float64 "
                                          f"(leave sum_dtype at float64 there)")
    es = graph.edge_set(edge_set)
    if threads is None:
        import numba

        threads = numba.get_num_threads()
    if distributed and dev.type == "cuda" and dev.index is None and initialized():
        dev = local_cuda_device()  # NCCL: one GPU per rank
    if mode == "auto":
        mode = choose_mode(graph, es.name, program, dev)
    host_run = _host_run(program, backend, mode, distributed, fuse, schedule)
    dev = HOST if host_run else as_torch(dev)  # the CPU however it was named ("auto"...)
    if distributed:
        _check_ranks_agree(graph, program, es.name, mode, max_iters, schedule)
    edges = open_edges(graph, es.name, program, dev, backend, mode=mode,
                       distributed=distributed, threads=threads, readahead=readahead,
                       dense_divisor=dense_divisor, device_budget=device_budget)
    bar = display(ex.progress is True, total=max_iters, unit="superstep", desc=program.name)
    report = ex.progress if callable(ex.progress) else (lambda _: bar.update(1)) if (
        ex.progress) else None
    try:
        if schedule == "async" and not edges.relaxes:
            raise GraphsysError(f"{program.name}: the async schedule runs min-relaxation "
                                f"programs (bfs, sssp, wcc) in memory on the CPU (numba "
                                f"backend, one process)")
        ctx = Context(graph=graph, num_nodes=graph.num_nodes(), lo=edges.lo, hi=edges.hi,
                      device=dev, backend=backend, edge_set=es.name, _degree_fn=edges.degrees,
                      host=host_run)
        stats = RunStats(algorithm=program.name, mode=edges.mode, device=str(dev),
                         backend=backend, world_size=edges.comm.world_size,
                         num_nodes=ctx.num_nodes, num_edges=es.num_edges,
                         weighted=bool(program.uses_weights and es.has_weight))
        n_local, dev_ = ctx.num_local, ctx.device
        state, active = checks.pair(program, "init", program.init(ctx), "state", "frontier")
        checks.state(program, "init", state, n_local, dev_)
        active = checks.mask(program, "init", active, n_local, dev_)
        stats.setup_seconds = time.perf_counter() - t_start
        stats.setup_bytes_h2d = edges.bytes_h2d
        solved, solver = None, _solver(program, edges, schedule, fuse)
        if solver is not None:  # the program's declared whole-graph algorithm
            build0 = edges.build_seconds
            solved = solver(ctx, edges, state, schedule, max_iters)
            stats.setup_seconds += edges.build_seconds - build0  # its CSR/CSC builds
            stats.setup_bytes_h2d = edges.bytes_h2d  # and its uploads
        if solved is not None:
            _record_solved(stats, solved, report)
        else:
            _supersteps(program, edges, ctx, state, active, stats, report, schedule,
                        max_iters, fuse)
        local = checks.values(program, "result", program.result(ctx, state), n_local,
                              ctx.device, what="the result", any_width=True)
        stats.scores = dict(getattr(program, "scores", None) or {})
        stats.resident_bytes = getattr(edges, "resident_bytes", 0)
        stats.pass_replays = getattr(edges, "pass_replays", 0)
        sizes = [int(b - a) for a, b in itertools.pairwise(edges.bounds)]
        values = edges.comm.allgather(local, sizes)
        values = values if isinstance(values, np.ndarray) else values.cpu().numpy()
        stats.seconds = time.perf_counter() - t_start
    finally:
        bar.close()
        edges.close()
    return Result(values=np.ascontiguousarray(values, np.float64), stats=stats, graph=graph,
                  peeled=program.peeled)


def _check_run(graph, program: VertexProgram, schedule: str, max_iters, device_budget,
               fuse, readahead, dense_divisor) -> tuple[int, bool, int, float]:
    """The one-line refusals of a run's settings, graph and program; ``max_iters``,
    ``fuse``, ``readahead`` and ``dense_divisor`` checked (and returned)."""
    if schedule not in SCHEDULES:
        raise ParameterError("schedule", f"unknown schedule {schedule!r} (choose from "
                                          f"{', '.join(SCHEDULES)})")
    max_iters = check_count("max_iters", max_iters)
    check_budget(device_budget)
    one_type(graph, "the BSP engine")
    program.check()
    return (max_iters, check_flag("fuse", fuse), check_count("readahead", readahead, minimum=0),
            check_real("dense_divisor", dense_divisor, low=0, low_open=True))


def _host_run(program: VertexProgram, backend: str, mode: str, distributed: bool,
              fuse: bool, schedule: str) -> bool:
    """Whether a run keeps its state in NumPy arrays (no torch import): a builtin program
    that takes NumPy state, on the numba backend in one process, in memory (its state
    becomes tensors where the superstep loop must run) or streamed where its supersteps
    take NumPy state too (:attr:`VertexProgram.host_streams`)."""
    return (program.host_ready and program.builtin and backend == "numba"
            and not distributed and schedule != "async"
            and (mode == "memory" and fuse or mode == "out-of-core" and program.host_streams))


def _solver(program: VertexProgram, edges: EdgeProvider, schedule: str, fuse: bool):
    """The program's declared whole-graph algorithm for this run, or None (the supersteps
    run): :meth:`VertexProgram.solve_in_memory` on the numba backend,
    :meth:`~VertexProgram.solve_on_device` on torch; in one process, not ``async``, with
    ``fuse``; in memory, and out of core where the edges say its layout is built on the
    device and fits there (``builds_on_device``)."""
    if schedule == "async" or not fuse or edges.comm.world_size != 1 or not (
            isinstance(edges, MemoryEdges) or getattr(edges, "builds_on_device", False)):
        return None
    return program.solve_on_device if edges.backend != "numba" else program.solve_in_memory


def _record_solved(stats: RunStats, solved, progress) -> None:
    """Record a declared whole-graph algorithm's run (:meth:`VertexProgram.solve_in_memory`
    returned ``solved``): its setup, method and supersteps; converged if it left no vertex
    active."""
    stats.setup_seconds += solved.setup_seconds
    stats.method = solved.method
    for ss in solved.supersteps:
        stats.supersteps.append(ss)
        if progress is not None:
            progress(ss)
    stats.converged = solved.num_left == 0


def _supersteps(program: VertexProgram, edges: EdgeProvider, ctx: Context, state: dict,
                active, stats: RunStats, progress, schedule: str, max_iters: int,
                fuse: bool) -> None:
    """Run the supersteps from the initial ``state`` and frontier ``active`` (on tensors: a
    NumPy state becomes them first); ``stats`` records the run."""
    if ctx.host and not edges.streams:  # in memory the supersteps run on tensors
        active = _to_tensors(ctx, edges, state, active)
    loop = _Supersteps(program, edges, ctx, state, stats, progress)
    if schedule == "async":
        loop.run_async(active)
    else:
        loop.run(active, max_iters, fuse and edges.relaxes)


def _to_tensors(ctx: Context, edges: MemoryEdges, state: dict,
                active: np.ndarray) -> torch.Tensor:
    """A NumPy state (:attr:`Context.host`) as CPU tensors sharing its memory, in place
    (``state``'s arrays, the context's degrees), for the superstep loop; ``ctx`` and
    ``edges`` then name ``torch.device("cpu")``. Returns the frontier as a tensor."""
    import torch

    def tensor(value):
        return torch.from_numpy(value) if isinstance(value, np.ndarray) else value

    ctx.host = False
    ctx.device = edges.device = torch.device("cpu")
    ctx._degrees.update({k: tensor(v) for k, v in ctx._degrees.items()})
    state.update({k: tensor(v) for k, v in state.items()})
    return tensor(active)


class _Supersteps:
    """The superstep loop of one run over ``edges``; statistics go to ``stats``."""

    def __init__(self, program: VertexProgram, edges: EdgeProvider, ctx: Context,
                 state: dict, stats: RunStats, progress):
        self.program, self.edges, self.ctx, self.state = program, edges, ctx, state
        self.stats, self.progress = stats, progress
        self.comm = edges.comm
        self.device = ctx.device
        self.num_local = ctx.hi - ctx.lo
        #: how messages reach the combined vector: raw to a custom combiner, or combined
        self.deliver = self._deliver_raw if program.raw_messages else self._deliver_combined

    def _record(self, ss: SuperstepStats) -> None:
        self.stats.supersteps.append(ss)
        if self.progress is not None:
            self.progress(ss)

    def run(self, active: torch.Tensor, max_iters: int, fused: bool) -> None:
        """Supersteps until the program halts, the frontier empties or ``max_iters`` ran;
        ``fused``: let the provider run min-relaxation supersteps in numba calls."""
        comm, program, stats = self.comm, self.program, self.stats
        step = 0
        while step < max_iters:
            with trace_range(f"bsp.superstep#{step}"):
                self.ctx.superstep = step
                # bucket reads happen in the supersteps out of core (in memory: in the setup)
                disk0 = disk_read_bytes() if self.edges.streams else 0
                t0 = time.perf_counter()
                local_active = _count(active)
                num_active = int(comm.allreduce([local_active], ["sum"])[0])
                self.ctx.num_active = num_active
                if num_active == 0 and program.halt_when_inactive:
                    stats.converged = True
                    return
                if fused:
                    done, active = self._fused(active, step, max_iters - step)
                    if done:
                        step += done
                        continue
                active, halt = self._superstep(step, active, local_active, num_active, t0,
                                               disk0)
                if halt:
                    stats.converged = True
                    return
                step += 1
        # ran max_iters supersteps: converged only if nothing is left to do; a program that
        # acts on an empty frontier (halt_when_inactive False) ends by its halting vote alone
        left = int(comm.allreduce([_count(active)], ["sum"])[0])
        stats.converged = left == 0 and program.halt_when_inactive

    def _superstep(self, step: int, active: torch.Tensor, local_active: int,
                   num_active: int, t0: float, disk0: int) -> tuple[torch.Tensor, bool]:
        """One superstep from the aggregators to the halting vote; returns (the next
        frontier, bool (N_local,), whether the program halts)."""
        program, ctx, state, comm, edges = (self.program, self.ctx, self.state, self.comm,
                                            self.edges)
        ss = SuperstepStats(superstep=step, active=num_active, direction="")
        program.check()  # direction may change between supersteps: each one is valid
        ctx.aggregates = _reduce_dict(comm, checks.reductions(
            program, "aggregate", program.aggregate(ctx, state)))
        t1 = time.perf_counter()
        ss.seconds["aggregate"] = t1 - t0
        build0 = edges.build_seconds
        n_local, dev = self.num_local, self.device
        x = checks.values(program, "send", program.send(ctx, state), n_local, dev,
                          width=program.width)
        accept = program.accepts(ctx, state)
        if accept is not None:
            accept = checks.mask(program, "accepts", accept, n_local, dev,
                                 what="the accepted targets")
        if num_active == 0:  # nothing is sent: skip the edge pass
            res = empty_result(program, ctx.num_nodes, self.device)
        else:  # a rank with no active vertex skips all its buckets
            res = edges.run(x, active, local_active, accept)
        t2 = time.perf_counter()
        built = edges.build_seconds - build0
        ss.seconds["edges"] = t2 - t1 - built
        self.stats.setup_seconds += built
        combined, received = self.deliver(res, x, active, accept, ss)
        t3 = time.perf_counter()
        ss.seconds["communicate"] = t3 - t2
        counts = comm.allreduce([res.edges_scanned, res.messages_sent, _count(received),
                                 res.bytes_read, res.bytes_h2d, ss.messages_exchanged],
                                ["sum"] * 6)
        (ss.edges_scanned, ss.messages_sent, ss.messages_combined, ss.bytes_read,
         ss.bytes_h2d, ss.messages_exchanged) = (int(c) for c in counts)
        ss.direction = res.direction
        active, votes = checks.pair(program, "update",
                                    program.update(ctx, state, combined, received),
                                    "frontier", "votes")
        active = checks.mask(program, "update", active, n_local, dev)
        checks.relax_state(program, "update", state, n_local, dev)
        votes = _reduce_dict(comm, checks.reductions(program, "update", votes))
        ss.seconds["update"] = time.perf_counter() - t3
        if edges.streams:
            ss.disk_read_bytes = int(comm.allreduce([disk_read_bytes() - disk0], ["sum"])[0])
        self._record(ss)
        return active, program.halt(ctx, votes)

    def _deliver_raw(self, res: EdgeResult, x: torch.Tensor, active: torch.Tensor,
                     accept: torch.Tensor | None, ss: SuperstepStats
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        """A custom combiner's messages: exchanged raw (global target ids) to the owning
        rank, then combined there. Returns (combined float64 (N_local,), received bool)."""
        import torch

        program, lo = self.program, self.ctx.lo
        idx, val = res.raw
        if program.include_self:
            own = torch.nonzero(active).squeeze(1)
            idx, val = torch.cat([idx, own + lo]), torch.cat([val, x[own]])
        idx, val, ss.messages_exchanged = self.comm.exchange(idx, val, self.edges.bounds)
        if accept is not None:
            keep = accept[idx]
            idx, val = idx[keep], val[keep]
        received = torch.zeros(self.num_local, dtype=torch.bool, device=self.device)
        received[idx] = True
        combined = checks.values(program, "combiner.combine",
                                 program.combiner.combine(idx, val, self.num_local),
                                 self.num_local, self.device, what="the combined messages")
        return combined, received

    def _deliver_combined(self, res: EdgeResult, x: torch.Tensor, active: torch.Tensor,
                          accept: torch.Tensor | None, ss: SuperstepStats
                          ) -> tuple[torch.Tensor, torch.Tensor]:
        """Locally combined messages; across ranks, the (target, value) pairs of targets
        other ranks own are exchanged and combined again. Masked by ``accept``."""
        program, dev = self.program, self.device
        identity = program.identity
        acc, received = res.acc, res.received
        if isinstance(acc, np.ndarray):  # a NumPy state (a streamed host run: one process)
            if accept is not None:
                received &= accept
                keep = received if acc.ndim == 1 else received[:, None]
                acc = np.where(keep, acc, identity)
            return acc, received
        import torch

        acc, received = acc.to(dev), received.to(dev)
        if self.comm.world_size > 1:
            sel = torch.nonzero(received).squeeze(1)
            idx, val, ss.messages_exchanged = self.comm.exchange(sel, acc[sel],
                                                                 self.edges.bounds)
            combined = torch.full(program.message_shape(self.num_local), identity,
                                  dtype=torch.float64, device=dev)
            rows = idx if val.dim() == 1 else idx.unsqueeze(1).expand_as(val)
            combined.scatter_reduce_(0, rows, val, COMBINERS[program.combiner][2],
                                     include_self=True)
            received = torch.zeros(self.num_local, dtype=torch.bool, device=dev)
            received[idx] = True
        else:
            combined = acc
        if accept is not None:
            received &= accept
            keep = received if combined.dim() == 1 else received.unsqueeze(1)
            combined = torch.where(keep, combined, torch.full_like(combined, identity))
        return combined, received

    def _fused(self, active: torch.Tensor, step: int, budget: int
               ) -> tuple[int, torch.Tensor]:
        """Run up to ``budget`` supersteps of a min-relaxation program in numba calls; record
        their statistics. Returns (supersteps run, the next frontier as bool (N,))."""
        edges, stats = self.edges, self.stats
        t0 = time.perf_counter()
        build0 = edges.build_seconds
        value = self.state[self.program.relax_state]
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
            ss = SuperstepStats(superstep=step + s, active=a,
                                direction="pull" if p else "push", edges_scanned=e,
                                messages_sent=e, messages_combined=c, fused=True)
            ss.seconds["edges"] = t
            self._record(ss)
        new_active = np.zeros(len(active), np.bool_)
        new_active[nxt] = True
        import torch

        return done, torch.from_numpy(new_active)

    def run_async(self, active: torch.Tensor) -> None:
        """Run a min-relaxation program to its fixed point from the frontier ``active`` with
        a work list; record it as one ``async`` superstep (``max_iters`` not applied)."""
        edges, stats = self.edges, self.stats
        t0 = time.perf_counter()
        build0 = edges.build_seconds
        frontier = np.flatnonzero(host_array(active))  # CPU only: NumPy spares torch's pool
        popped, scanned, lowered = edges.relax_async(self.state[self.program.relax_state],
                                                     frontier)
        built = edges.build_seconds - build0
        stats.setup_seconds += built
        stats.method = "async"
        ss = SuperstepStats(superstep=0, active=len(frontier), direction="async",
                            edges_scanned=scanned, messages_sent=scanned,
                            messages_combined=lowered, fused=True)
        ss.seconds["edges"] = time.perf_counter() - t0 - built
        self._record(ss)
        stats.converged = True  # the fixed point: no vertex is left to lower


def _count(mask: torch.Tensor) -> int:
    """True entries of a bool tensor; NumPy on the CPU (a torch reduction over a small
    tensor costs more in thread wake-ups than in work)."""
    if isinstance(mask, np.ndarray) or mask.device.type == "cpu":
        return int(np.count_nonzero(host_array(mask)))
    return int(mask.sum())


def _reduce_dict(comm, parts: dict[str, tuple]) -> dict[str, float]:
    names = sorted(parts)
    for n in names:
        if parts[n][1] not in REDUCTIONS:
            raise GraphsysError(f"aggregator {n!r}: reduction must be one of {REDUCTIONS}")
    vals = comm.allreduce([float(parts[n][0]) for n in names], [parts[n][1] for n in names])
    return dict(zip(names, vals))

