"""The out-of-core edge providers: buckets streamed from the mapped Arrow files every
superstep, in one process (:class:`StreamEdges`, mode ``out-of-core``) or over the
partitions one ``torch.distributed`` rank owns (:class:`DistributedEdges`); see
:mod:`graphsys.bsp.provider` for the protocol both implement.
"""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from graphsys.bsp import active_edges, device_stream, kernels, recorded_pass
from graphsys.bsp.device_stream import (
    MERGED_SPMV_DEVICES,
    DeviceBuckets,
    MergedFrontier,
    MergedPass,
    check_budget,
    resident_budget,
)
from graphsys.bsp.distributed import LocalComm, TorchComm, rank_bounds
from graphsys.bsp.edges import (
    _CopySum,
    _host_accumulators,
    _Sink,
    _torch_messages,
    check_weights,
)
from graphsys.bsp.program import COMBINERS, MESSAGES, VertexProgram
from graphsys.bsp.provider import EdgeResult
from graphsys.device import host_array
from graphsys.errors import GraphsysError
from graphsys.kernels.arrays import read_only
from graphsys.storage import pages
from graphsys.storage.csr import chunks

if TYPE_CHECKING:
    import torch
from graphsys.storage.kernels import count_into
from graphsys.trace import trace_range, traced

#: Out of core, edge sets of at most this many bytes (src + dst (+ weight) columns) stay
#: mapped between supersteps without paging advice.
RESIDENT_EDGE_BYTES = 256 << 20


class StreamEdges:
    """The ``out-of-core`` :class:`~graphsys.bsp.provider.EdgeProvider`: buckets streamed
    from the mapped Arrow files every superstep (vertex state stays in memory). The pass is
    split by *target* partition: the task of partition ``t`` reads, in
    ascending source order, the buckets ``(i, t)`` with ``i`` in ``src_parts`` (forward
    messages) and the buckets ``(t, j)`` with ``j`` in ``src_parts`` (reverse messages),
    so the task alone writes ``t``'s accumulator entries (no locks) and each target sums
    its messages in a fixed order, whatever the thread timing. ``threads`` workers (this
    thread and a pool kept for the run) take tasks from a shared counter and call GIL-free
    numba kernels.

    Paging, for edge sets larger than :data:`RESIDENT_EDGE_BYTES`: the next ``readahead``
    buckets of a task are read ahead (``MADV_WILLNEED``) and each batch's pages leave the
    resident set once consumed (``MADV_DONTNEED``), bounding the resident edge memory by
    the batches in flight (:mod:`graphsys.storage.pages`). On the torch path only the
    batches read from the files that superstep are advised: not those kept on the device or
    in the host cache (advice over cached pages walks them all: milliseconds a superstep).

    ``x``/``active`` are indexed by owned-local ids (global id - ``lo``); ``acc``/``received``
    by global ids (N,): in a distributed run targets owned by other ranks are exchanged.
    ``comm`` (default: one process) says which partitions this process owns
    (``src_parts``) and, with the partition offsets, every rank's id range (``bounds``).
    """

    mode = "out-of-core"
    #: every superstep reads the bucket files
    streams = True
    #: no fused or work-list fast path: supersteps stream like any other program's
    relaxes = False

    def __init__(self, graph, edge_set: str | None, program: VertexProgram,
                 device: torch.device, backend: str, threads: int = 2, readahead: int = 4,
                 comm=None, device_budget: int | float | None = None):
        self.graph, self.edge_set, self.program = graph, edge_set, program
        self.device, self.backend = device, backend
        self.comm = comm if comm is not None else LocalComm()
        self.es = graph.edge_set(edge_set)
        self.num_nodes = graph.num_nodes()
        p = graph.num_partitions
        self.src_parts = self.comm.owned_partitions(p)
        self.offsets = graph.partition_offsets()
        self.lo = int(self.offsets[self.src_parts.start])
        self.hi = int(self.offsets[self.src_parts.stop])
        self.bounds = np.array(rank_bounds(self.offsets, self.comm.world_size), np.int64)
        #: nothing is built: buckets are read as they are stored (each edge phase counts
        #: its own host -> device copies)
        self.build_seconds = 0.0
        self.bytes_h2d = 0
        self.threads = max(1, threads)
        self.readahead = max(0, readahead)
        self._tasks: dict[str, list[list[tuple[int, int, bool]]]] = {}
        self.num_edges_local = sum(self.es.buckets[b] for b in {
            (i, j) for task in self._tasks_of("both") for i, j, _ in task})
        edge_bytes = self.num_edges_local * (12 if program.uses_weights else 8)
        #: page advice on (read-ahead and release), for edge sets too big to keep mapped
        self.paging = edge_bytes > RESIDENT_EDGE_BYTES
        #: opened buckets: (mapped region, record batches as EdgeBatch views), kept open
        #: between supersteps (opening costs more than a superstep of a small bucket)
        self._open: dict[tuple[int, int], tuple[tuple[int, int], list]] = {}
        self._pool: ThreadPoolExecutor | None = None
        #: per direction, the targets of the all-active copy/sum pass (bool (N,))
        self._marked: dict[str, np.ndarray] = {}
        #: the ``device_budget`` option (checked here; its bytes are reckoned by the torch
        #: path's first pass, with the device memory free then)
        check_budget(device_budget)
        self.device_budget = device_budget
        #: the torch path's host cache, staging ring and resident batches, made by its
        #: first pass
        self.device_buckets: DeviceBuckets | None = None
        #: the torch path's all-active copy/sum pass, per direction: the targets that
        #: receive (bool (N,) on the device), and the pass merged into one layout once
        #: every batch it reads is kept on the device (False: it does not fit the budget)
        self._received: dict[str, torch.Tensor] = {}
        self._merged: dict[str, MergedPass | bool] = {}
        #: torch passes recorded as one CUDA graph each (:mod:`.recorded_pass`)
        self.recordings = recorded_pass.Recordings(self)
        #: bytes of the layout a whole-graph solver built and keeps on the device
        #: (:attr:`builds_on_device`)
        self.layout_bytes = 0
        #: the torch path's other passes of a builtin scalar program (frontier ones), per
        #: direction: merged once every batch they read fits the budget (False: it does not)
        self._frontier: dict[str, MergedFrontier | bool] = {}
        #: the frontier supersteps that read only their senders' (or accepting targets')
        #: rows of the stored index
        self.active = active_edges.Passes(self)

    @property
    def resident_bytes(self) -> int:
        """Bytes of edge batches kept on the device between supersteps (torch path), or of
        the layout a whole-graph solver built from them there."""
        kept = self.device_buckets.resident_bytes if self.device_buckets else 0
        return kept + self.layout_bytes

    @property
    def builds_on_device(self) -> bool:
        """Whether a program's whole-graph solver on the device
        (:meth:`~graphsys.bsp.program.VertexProgram.solve_on_device`: PageRank's lean
        supersteps, the direction-optimizing BFS) may run this out-of-core run, building its
        layout there from the buckets (nothing built on the host): the torch backend, one
        process, a device of :data:`~graphsys.bsp.device_stream.DEVICE_BUILDS`, int32 ids,
        and the build's bytes an edge (:func:`~graphsys.bsp.device_stream.build_bytes`:
        fewer where the graph stores its CSR and CSC indexes) within the
        ``device_budget``."""
        m, n = self.es.num_edges, self.num_nodes
        return (self.backend != "numba" and self.comm.world_size == 1
                and self.device.type in device_stream.DEVICE_BUILDS
                and m + n + 1 <= 2**31 - 1
                and m * device_stream.build_bytes(self.graph, self.es.name)
                <= resident_budget(self.device, self.device_budget))

    def _device_buckets(self) -> DeviceBuckets:
        """The run's :class:`~graphsys.bsp.device_stream.DeviceBuckets`, its ring sized
        to the longest record batch (block, on the torch backend) of the buckets the
        program may read."""
        if self.device_buckets is None:
            keys = {(i, j) for task in self._tasks_of("both") for i, j, _ in task}
            lengths = [len(eb) for i, j in keys for eb in self._bucket(i, j)[1]]
            budget = resident_budget(self.device, self.device_budget)
            self.device_buckets = DeviceBuckets(self.device, budget, max(lengths, default=0),
                                                bool(self.program.uses_weights),
                                                total=sum(lengths))
        return self.device_buckets

    @property
    def tasks(self) -> list[list[tuple[int, int, bool]]]:
        """Per target partition, its ``(i, j, reverse)`` buckets in ascending source order,
        for the program's *current* direction (a program may switch it between supersteps,
        as it may in memory)."""
        return self._tasks_of(self.program.direction)

    def _tasks_of(self, direction: str) -> list[list[tuple[int, int, bool]]]:
        if direction not in self._tasks:
            tasks = []
            for t in range(self.graph.num_partitions):
                task = []
                if direction in ("out", "both"):
                    task += [(i, t, False) for i in self.src_parts]
                if direction in ("in", "both"):
                    task += [(t, j, True) for j in self.src_parts]
                task = [(i, j, rev) for i, j, rev in task if self.es.buckets.get((i, j))]
                if task:
                    tasks.append(task)
            self._tasks[direction] = tasks
        return self._tasks[direction]

    def degrees(self, direction: str) -> np.ndarray:
        """Out-/in-/both-degree, int64 (N,), exact on the owned ids: a row length of the
        graph's adjacency index (or a count of the other index's neighbour ids) where it
        has one, else counted over the owned buckets, which stay open for the supersteps
        (each bucket is read once in the run: its first read, hash and change sets are
        paid here instead of in superstep 0; a view's members' indexes are not summed
        instead, as reading them through the change sets costs more than the count)."""
        if direction == "both":
            return self.degrees("out") + self.degrees("in")
        if direction == "out-weight":
            return self._out_weight()
        out = direction == "out"
        own, other = ("csr", "csc") if out else ("csc", "csr")
        offsets = self.graph.index_offsets(self.es.name, own)
        if offsets is not None:
            return np.diff(offsets)
        mapped = self.graph.adjacency_index(self.es.name, other)
        if mapped is not None:
            deg = np.zeros(self.num_nodes, np.int64)
            for part in chunks(mapped.indices):
                count_into(part, deg)
                if self.graph.location.local:  # counted: its pages leave the resident set
                    pages.release(pages.extent(part), part)
            return deg
        deg = np.zeros(self.num_nodes, np.int64)
        for (i, j), count in sorted(self.es.buckets.items()):
            if not count or (i if out else j) not in self.src_parts:
                continue
            region, batches = self._bucket(i, j)
            rows = deg[int(self.offsets[i if out else j]):]
            for eb in batches:
                count_into(eb.src if out else eb.dst, rows)
                if self.paging:
                    pages.release(region, *self._columns(eb))
        return deg

    def relax(self, value: torch.Tensor, frontier: np.ndarray, max_steps: int) -> tuple:
        """Not offered out of core (:attr:`relaxes` is False)."""
        raise GraphsysError(f"{self.program.name}: fused min-relaxation runs in memory only")

    def relax_async(self, value: torch.Tensor, frontier: np.ndarray) -> tuple[int, int, int]:
        """Not offered out of core (:attr:`relaxes` is False)."""
        raise GraphsysError(f"{self.program.name}: the async schedule runs in memory only")

    def close(self) -> None:
        """Stop the worker pool and unmap the buckets."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        if self.device_buckets is not None:
            self.device_buckets.finish()
            self.device_buckets = None
        self._open.clear()

    def _bucket(self, i: int, j: int) -> tuple[tuple[int, int], list]:
        if (i, j) not in self._open:
            b = self.graph.bucket(i, j, self.es.name)
            region, batches = b.mapped_region, list(b.batches())
            if self.backend == "torch":  # even copies through the ring
                batches = device_stream.blocks(batches)
            if self.paging:  # the first read's bounds check touched every offset page
                for eb in batches:
                    pages.release(region, eb.src, eb.dst, eb.rel)
            self._open[(i, j)] = (region, batches)
        return self._open[(i, j)]

    def _columns(self, eb) -> tuple:
        return eb.src, eb.dst, eb.weight if self.program.uses_weights else None

    @traced("bsp.edges")
    def run(self, x: torch.Tensor, active: torch.Tensor, num_active: int,
            accept: torch.Tensor | None) -> EdgeResult:
        prog = self.program
        use_active = num_active < len(x)
        frontier = self._frontier_pass(use_active, accept)
        if frontier:
            return self._frontier_result(frontier, x, active, use_active)
        skip: set[int] = set()
        if use_active:  # skip buckets whose source partition has no active vertex
            act = host_array(active if isinstance(active, np.ndarray) else active.cpu())
            for p in self.src_parts:
                a, b = int(self.offsets[p]) - self.lo, int(self.offsets[p + 1]) - self.lo
                if not act[a:b].any():
                    skip.add(p)
        tasks = [[(i, j, rev) for i, j, rev in task if (j if rev else i) not in skip]
                 for task in self.tasks]
        tasks = [task for task in tasks if task]
        if use_active and tasks:  # few senders: only their edges, from the index
            res = self.active.edge_phase(x, active, act, num_active, accept, tasks)
            if res is not None:
                return res
        for task in tasks:  # open in this thread: workers only read the cached views
            for i, j, _ in task:
                self._bucket(i, j)
        numba_path = self.backend == "numba" and prog.builtin
        # the all-active copy/sum pass (PageRank): the same targets receive every superstep,
        # so they are marked once per direction and kept
        copy_sum = (numba_path and not use_active and prog.message == "copy"
                    and prog.combiner == "sum")
        marked = self._marked.get(prog.direction) if copy_sum else None
        sums32 = copy_sum and prog.sum_dtype == "float32"
        if numba_path:
            acc, received = _host_accumulators(self.num_nodes, prog.identity, prog.width,
                                               isinstance(x, np.ndarray))
            xn = host_array(x)
            state = (xn.astype(np.float32) if sums32 else xn, host_array(active),
                     host_array(acc), host_array(received), MESSAGES[prog.message],
                     COMBINERS[prog.combiner][0], copy_sum, marked is None)
            workers = min(self.threads, len(tasks))
            sink = None
        else:
            self._device_buckets()
            workers = 1  # torch ops are themselves multi-threaded
            copy_sum_pass = self._copy_sum(use_active, accept)
            if copy_sum_pass and self._merged.get(prog.direction):
                return self._merged_result(self._merged[prog.direction], x, tasks)
            inputs = (x,) if copy_sum_pass else (x, active)
            key = self.recordings.key(copy_sum_pass, use_active, tasks)
            recorded = self.recordings.lookup(key, inputs)
            if recorded is not None:
                return self.recordings.replay(recorded, inputs)
            sink = (_CopySum(self.num_nodes, self.device, self._received.get(prog.direction))
                    if copy_sum_pass else _Sink(prog, self.num_nodes, self.device, spare=True))
        kept = None if numba_path else self.device_buckets  # batches not read from files
        counters = [[0, 0, 0, 0] for _ in range(max(1, workers))]  # scanned, sent, bytes, h2d
        next_task = itertools.count()
        failed = threading.Event()

        def work(k: int) -> None:
            c = counters[k]
            try:
                while not failed.is_set():
                    t = next(next_task)  # atomic under the GIL
                    if t >= len(tasks):
                        return
                    task = tasks[t]
                    target = task[0][0] if task[0][2] else task[0][1]
                    sums = (np.zeros(int(self.offsets[target + 1] - self.offsets[target]),
                                     np.float32) if sums32 else None)
                    for n, (i, j, rev) in enumerate(task):
                        if self.paging:
                            for ahead in (task[:self.readahead + 1] if n == 0 else
                                          task[n + self.readahead:n + self.readahead + 1]):
                                self._will_need(ahead, kept)
                        region, batches = self._open[(i, j)]
                        with trace_range("bsp.bucket"):
                            for eb in batches:
                                read = self.paging and _from_files(kept, i, j, eb)
                                c[0] += len(eb)
                                c[2] += sum(a.nbytes for a in self._columns(eb)
                                            if a is not None)
                                if numba_path:
                                    self._numba_batch(eb, i, j, rev, use_active, state,
                                                      sums, c)
                                else:
                                    self._torch_batch(eb, i, j, rev, x, active, use_active,
                                                      sink, c)
                                if read:
                                    pages.release(region, *self._columns(eb))
                    if sums is not None:  # the task alone writes its target's entries
                        state[2][int(self.offsets[target]):
                                 int(self.offsets[target + 1])] += sums
            except BaseException:
                failed.set()
                raise

        futures = []
        if workers > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads - 1,
                                                thread_name_prefix="graphsys-stream")
            futures = [self._pool.submit(work, k) for k in range(1, workers)]
        try:
            work(0)
        finally:
            errors = [f.exception() for f in futures]  # waits for every worker
        for e in errors:
            if e is not None:
                raise e
        scanned, sent, nbytes, h2d = (sum(c[k] for c in counters) for k in range(4))
        if copy_sum and marked is None:
            self._marked[prog.direction] = host_array(received).copy()
        elif copy_sum:
            host_array(received)[:] = marked
        if numba_path:
            res = EdgeResult(acc, received, None, "stream")
        else:
            res = sink.result("stream")
            if isinstance(sink, _CopySum):
                self._after_copy_sum(sink, tasks)
            else:  # the batches' messages, counted by the sink
                sent += sink.messages_sent()
        res.edges_scanned, res.messages_sent, res.bytes_read, res.bytes_h2d = (
            scanned, sent, nbytes, h2d)
        if not numba_path and self.recordings.due(
                key, isinstance(sink, _CopySum) and bool(self._merged.get(prog.direction))):
            self._record(key, sink, inputs, use_active, tasks, res)
        return res

    def streamed_bytes(self, tasks, numba_path: bool) -> int:
        """Bytes the streamed pass over ``tasks`` would read: every batch's columns on the
        numba path; on the torch path the words of the batches not kept on the device
        (a bucket not opened yet: its edge count's)."""
        weights = bool(self.program.uses_weights)
        kept = None if numba_path else self.device_buckets
        total = 0
        for task in tasks:
            for i, j, _ in task:
                if kept is None or (i, j) not in self._open:
                    total += self.es.buckets[(i, j)] * 4 * (2 + weights)
                    continue
                pack = self._packing(i, j)
                total += sum(4 * device_stream.words(len(eb), pack, weights)
                             for eb in self._open[(i, j)][1]
                             if (i, j, eb.start) not in kept.resident)
        return total

    def _will_need(self, bucket: tuple[int, int, bool], kept: DeviceBuckets | None) -> None:
        """Read ahead the batches of ``bucket`` this superstep reads from the files."""
        i, j = bucket[:2]
        region, batches = self._open[(i, j)]
        for eb in batches:
            if _from_files(kept, i, j, eb):
                pages.will_need(region, *self._columns(eb))

    def _out_weight(self) -> np.ndarray:
        """The weighted out-degree (sum of out-edge weights), float64 (N,), exact on the
        owned ids: summed over the graph's mapped CSC index where it has one (no bucket is
        read before the first superstep, as for the unweighted degrees), else over the
        owned source partitions' buckets. A negative or non-finite weight is refused."""
        deg = np.zeros(self.num_nodes, np.float64)
        mapped = self.graph.adjacency_index(self.es.name, "csc")
        if mapped is not None:
            weight = mapped.weight if mapped.weight is not None else np.ones(
                len(mapped.indices), np.float32)
            for part, w in zip(chunks(mapped.indices), chunks(weight), strict=True):
                check_weights(w, self.es.name)
                kernels.add_into(*read_only(part), w.astype(np.float64), deg)
                if self.graph.location.local:  # summed: its pages leave the resident set
                    pages.release(pages.extent(part), part)
                    pages.release(pages.extent(w), w)
            return deg
        for (i, j), count in sorted(self.es.buckets.items()):
            if not count or i not in self.src_parts:
                continue
            region, batches = self._bucket(i, j)
            rows = deg[int(self.offsets[i]):]
            for eb in batches:
                w = self._weights(eb).astype(np.float64)
                check_weights(w, self.es.name)
                kernels.add_into(*read_only(np.asarray(eb.src)), w, rows)
                if self.paging:
                    pages.release(region, *self._columns(eb))
        return deg

    def _weights(self, eb) -> np.ndarray:
        if not self.program.uses_weights:
            return np.zeros(0, np.float32)
        return eb.weight if eb.weight is not None else np.ones(len(eb), np.float32)

    def _numba_batch(self, eb, i, j, rev, use_active, state, sums, c) -> None:
        """One record batch through the numba kernels; ``sums``: float32 sums of the task's
        target partition (a ``sum_dtype="float32"`` copy/sum pass) or None (``acc``)."""
        xn, act, a, r, msg, comb, copy_sum, mark = state
        src, dst, sb, db = self._oriented(i, j, rev, eb.src, eb.dst)
        src, dst, w = read_only(src, dst, self._weights(eb))
        if self.program.width is not None:  # vector program: (N, d) rows
            if copy_sum:
                c[1] += int(kernels.stream_copy_sum_rows(src, dst, xn[sb:], a[db:], r[db:],
                                                         mark))
            else:
                c[1] += int(kernels.stream_rows(src, dst, w, xn[sb:],
                                                act[sb:], use_active, msg, comb, a[db:],
                                                r[db:]))
        elif copy_sum:
            c[1] += int(kernels.stream_copy_sum(src, dst, xn[sb:],
                                                a[db:] if sums is None else sums, r[db:],
                                                mark))
        else:
            c[1] += int(kernels.stream(src, dst, w, xn[sb:], act[sb:],
                                       use_active, msg, comb, a[db:], r[db:]))

    def _torch_batch(self, eb, i, j, rev, x, active, use_active, sink, c) -> None:
        """One record batch on the torch path: its columns on the device
        (:meth:`DeviceBuckets.fetch <graphsys.bsp.device_stream.DeviceBuckets.fetch>`:
        resident, or streamed from the host cache or through the staging ring); an
        all-active copy/sum pass adds them into its sums (:class:`_CopySum`), any other
        offsets and widens them there."""
        import torch

        buckets = self.device_buckets
        moved = buckets.moved_bytes
        src, dst, w = buckets.fetch((i, j, eb.start), eb.src, eb.dst,
                                    self._weights(eb) if self.program.uses_weights else None,
                                    self._packing(i, j))
        if self.device.type != "cpu":
            c[3] += buckets.moved_bytes - moved
        src, dst, sb, db = self._oriented(i, j, rev, src, dst)
        if isinstance(sink, _CopySum):
            sink.add(src, dst, sb, db, x)
            c[1] += src.numel()
            return
        src, dst = src.to(torch.int64) + sb, dst.to(torch.int64) + db
        sink.send(x, src, dst, w, active[src] if use_active else None)

    def _oriented(self, i: int, j: int, rev: bool, src, dst) -> tuple:
        """``(src, dst, sb, db)`` of a batch of bucket (i, j): ``sb`` the offset of its
        sources into ``x``, ``db`` of its targets into the sums; ``rev``: messages
        dst -> src (sources partition j, owned; targets partition i)."""
        bi, bj = int(self.offsets[i]), int(self.offsets[j])
        if rev:
            return dst, src, bj - self.lo, bi
        return src, dst, bi - self.lo, bj

    def _packing(self, i: int, j: int) -> tuple[int, int] | None:
        """How bucket (i, j)'s batches travel and stay on the device
        (:func:`~graphsys.bsp.device_stream.packing` of its partitions' sizes)."""
        return device_stream.packing(self.offsets[i + 1] - self.offsets[i],
                                     self.offsets[j + 1] - self.offsets[j])

    def _copy_sum(self, use_active: bool, accept) -> bool:
        """Whether this torch pass is an all-active copy/sum one (PageRank's): each batch
        is then one gather and one ``index_add_`` on the device (:class:`_CopySum`), and
        the pass may be merged once all its batches are kept."""
        prog = self.program
        return (not use_active and accept is None and not prog.raw_messages
                and prog.message == "copy" and prog.combiner == "sum"
                and prog.width is None)

    def _after_copy_sum(self, sink: _CopySum, tasks) -> None:
        """After an all-active copy/sum pass: keep its receiving targets; merge the pass
        (:class:`~graphsys.bsp.device_stream.MergedPass`) once all its batches are kept on
        the device and the merged layout fits the budget beside them."""
        direction = self.program.direction
        if sink.mark:
            self._received[direction] = sink.received.clone()
        buckets = self.device_buckets
        if direction in self._merged:
            return
        # the (i, j, reverse, batch) the pass reads, in its order
        batches = [(i, j, rev, eb) for task in tasks for i, j, rev in task
                   for eb in self._open[(i, j)][1]]
        if not batches or not all((i, j, eb.start) in buckets.resident
                                  for i, j, _, eb in batches):
            return
        edges = sum(len(eb) for *_, eb in batches)
        spmv = self.device.type in MERGED_SPMV_DEVICES
        need = edges * (12 if spmv else 8) + (self.num_nodes + 1) * 4 * spmv
        if buckets.resident_bytes + need > buckets.budget:
            self._merged[direction] = False
            return
        self._merged[direction] = self._merge(batches, edges)

    def _merge(self, batches: list[tuple], edges: int, layout=None,
               weights: bool = False) -> MergedPass | MergedFrontier | bool:
        """The kept ``batches`` of a pass merged into ``layout`` (default
        :class:`~graphsys.bsp.device_stream.MergedPass`) from each batch's source offsets
        into ``x`` and global targets (int32 where the ids fit; int64 targets, the
        scatter's index, for :class:`~graphsys.bsp.device_stream.MergedFrontier`) and its
        weights where ``weights``; False where the device runs out of memory building it
        (the pass then runs batch by batch, as before)."""
        import torch

        layout = layout or MergedPass
        ids = torch.int32 if self.num_nodes < 2**31 else torch.int64
        targets = torch.int64 if layout is MergedFrontier else ids
        buckets = self.device_buckets
        try:
            parts = []
            for i, j, rev, eb in batches:
                src, dst, w = buckets.fetch((i, j, eb.start), eb.src, eb.dst,
                                            self._weights(eb) if weights else None,
                                            self._packing(i, j))
                src, dst, sb, db = self._oriented(i, j, rev, src, dst)
                parts.append((src.to(ids) + sb, dst.to(targets) + db, w))
            merged = layout(parts, self.hi - self.lo, self.num_nodes)
        except torch.OutOfMemoryError:
            return False
        merged.edges = edges
        merged.nbytes_read = sum(a.nbytes for *_, eb in batches for a in self._columns(eb)
                                 if a is not None)
        return merged

    def _frontier_pass(self, use_active: bool, accept) -> MergedFrontier | None:
        """The torch path's merged pass for this superstep, where it has one: a builtin
        scalar program's pass other than an all-active copy/sum one (which merges apart,
        :class:`~graphsys.bsp.device_stream.MergedPass`), once per direction, when the
        pass's batches and the merged layout fit the device budget together (the first
        call moves every batch the pass reads, kept as the budget allows)."""
        prog = self.program
        if (self.backend == "numba" or not prog.builtin or prog.width is not None
                or self._copy_sum(use_active, accept)):
            return None
        direction = prog.direction
        if direction not in self._frontier:
            self._frontier[direction] = self._merge_frontier()
        return self._frontier[direction] or None

    def _merge_frontier(self) -> MergedFrontier | bool:
        """The current direction's pass merged (:meth:`_frontier_pass`), or False where
        it does not fit the budget or the device runs out of memory building it."""
        buckets, weights = self._device_buckets(), bool(self.program.uses_weights)
        batches = [(i, j, rev, eb) for task in self.tasks for i, j, rev in task
                   for eb in self._bucket(i, j)[1]]
        keys = {(i, j, eb.start): (len(eb), self._packing(i, j)) for i, j, _, eb in batches}
        if not batches or any(k in buckets.streamed for k in keys):
            return False
        kept = sum(4 * device_stream.words(n, pack, weights)
                   for k, (n, pack) in keys.items() if k not in buckets.resident)
        edges = sum(len(eb) for *_, eb in batches)
        need = MergedFrontier.bytes_for(edges, self.hi - self.lo, weights)
        if buckets.resident_bytes + kept + need > buckets.budget:
            return False
        moved = buckets.moved_bytes
        merged = self._merge(batches, edges, MergedFrontier, weights)
        if merged:  # the bytes that crossed to the device, booked by the first superstep
            merged.first_h2d = buckets.moved_bytes - moved if self.device.type != "cpu" else 0
        return merged

    def _frontier_result(self, merged: MergedFrontier, x: torch.Tensor,
                         active: torch.Tensor, use_active: bool) -> EdgeResult:
        """A merged pass's edge phase (:class:`~graphsys.bsp.device_stream.MergedFrontier`):
        every edge read, those of sources off the frontier sent to the spare target."""
        import torch

        prog, n = self.program, self.num_nodes
        acc = torch.full((n + 1,), prog.identity, dtype=torch.float64, device=x.device)
        received = torch.zeros(n + 1, dtype=torch.bool, device=x.device)
        dst, sent = merged.dst, merged.edges
        if use_active:
            keep = active.index_select(0, merged.src)
            dst = torch.where(keep, dst, n)
            sent = int(keep.sum())  # the superstep's count (its first host read)
        values = _torch_messages(prog, x.index_select(0, merged.src), merged.weight)
        acc.scatter_reduce_(0, dst, values, COMBINERS[prog.combiner][2], include_self=True)
        received.index_fill_(0, dst, True)
        res = EdgeResult(acc[:n], received[:n], None, "stream")
        res.edges_scanned, res.messages_sent = merged.edges, sent
        res.bytes_read, res.bytes_h2d = merged.nbytes_read, merged.first_h2d
        merged.first_h2d = 0
        return res

    @property
    def pass_replays(self) -> int:
        """Supersteps whose streamed pass replayed its recorded graph."""
        return self.recordings.replays

    def _record(self, key: tuple, sink, inputs: tuple, use_active: bool, tasks,
                eager: EdgeResult) -> None:
        """The pass of ``key`` just run eagerly into ``sink`` on ``inputs`` handed to
        :meth:`Recordings.record <graphsys.bsp.recorded_pass.Recordings.record>` as its
        batches and its body: the same batch calls into a new sink of its kind."""
        batches = [(i, j, rev, eb) for task in tasks for i, j, rev in task
                   for eb in self._open[(i, j)][1]]
        copy_sum, prog, n = isinstance(sink, _CopySum), self.program, self.num_nodes
        received = self._received.get(prog.direction)

        def body(xs: torch.Tensor, act: torch.Tensor | None = None) -> tuple:
            out = (_CopySum(n, self.device, received) if copy_sum else
                   _Sink(prog, n, self.device, spare=True))
            c = [0, 0, 0, 0]
            for i, j, rev, eb in batches:
                self._torch_batch(eb, i, j, rev, xs, act, use_active, out, c)
            return recorded_pass.outputs(out)

        counts = (eager.edges_scanned, eager.messages_sent if copy_sum else sink.sent,
                  eager.bytes_read)
        self.recordings.record(key, body, inputs, recorded_pass.outputs(sink),
                               [(i, j, eb) for i, j, _, eb in batches], counts,
                               self.streamed_bytes(tasks, False),
                               exact=not copy_sum and prog.combiner in active_edges.ORDER_FREE)

    def _merged_result(self, merged: MergedPass, x: torch.Tensor, tasks) -> EdgeResult:
        """A merged pass's edge phase: one op for the sums (and a copy of the receiving
        targets, which the program may write into); nothing is moved."""
        res = EdgeResult(merged.sums(x), self._received[self.program.direction].clone(),
                         None, "stream")
        res.edges_scanned = res.messages_sent = merged.edges
        res.bytes_read, res.bytes_h2d = merged.nbytes_read, 0
        return res


def _from_files(kept: DeviceBuckets | None, i: int, j: int, eb) -> bool:
    """Whether a pass reads batch ``eb`` of bucket ``(i, j)`` from the mapped files: always
    on the numba path (``kept`` None); on the torch path unless ``kept`` holds it on the
    device or in its host cache."""
    return kept is None or kept.reads_files((i, j, eb.start))


class DistributedEdges(StreamEdges):
    """The ``distributed`` :class:`~graphsys.bsp.provider.EdgeProvider`: one rank of the
    initialised ``torch.distributed`` group streams the buckets of the partitions it owns
    (:meth:`~graphsys.bsp.distributed.TorchComm.owned_partitions`) as :class:`StreamEdges`
    does; its :attr:`comm` (a :class:`~graphsys.bsp.distributed.TorchComm`) reduces and
    exchanges messages between the ranks."""

    mode = "distributed"

    def __init__(self, graph, edge_set: str | None, program: VertexProgram,
                 device: torch.device, backend: str, threads: int = 2, readahead: int = 4,
                 device_budget: int | float | None = None):
        super().__init__(graph, edge_set, program, device, backend, threads, readahead,
                         comm=TorchComm(device), device_budget=device_budget)
