"""The edge phase of a superstep: in memory (CSR/CSC, push or pull) or streamed bucket by
bucket from the mapped Arrow files (out of core, and the per-rank pass of distributed runs).

Both providers turn ``(x, active)`` into combined messages per target:
:class:`EdgeResult` with ``acc`` float64 (N_targets,), ``received`` bool (N_targets,), or
— for custom combiners — the raw messages ``(index int64 (M,), values
float64 (M,))``. Two implementations of every pass: fused numba kernels (CPU, builtin message
and combiner) and torch gather + ``scatter_reduce_`` (any device, any program).
"""

from __future__ import annotations

import queue
import threading
import time
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from graphsys.bsp import kernels
from graphsys.bsp.program import COMBINERS, MESSAGES, VertexProgram

#: Ligra's default: go dense (pull) when |F| + outdeg(F) > num_edges / DENSE_DIVISOR.
DENSE_DIVISOR = 20
_PAGE = 4096


@dataclass
class EdgeResult:
    """Combined messages of one edge phase (see the module docstring) and its counters."""

    acc: torch.Tensor | None
    received: torch.Tensor | None
    raw: tuple[torch.Tensor, torch.Tensor] | None
    direction: str
    edges_scanned: int = 0
    messages_sent: int = 0
    bytes_read: int = 0
    bytes_h2d: int = 0


def _np(t: torch.Tensor) -> np.ndarray:
    return t.numpy() if t.dtype != torch.bool else t.view(torch.uint8).numpy()


def _as_tensor(arr: np.ndarray, device: torch.device, dtype=None) -> torch.Tensor:
    with warnings.catch_warnings():  # read-only mapped memory: we never write through it
        warnings.simplefilter("ignore", UserWarning)
        t = torch.from_numpy(arr)
    return t.to(device=device, dtype=dtype or t.dtype)


def _torch_messages(program: VertexProgram, xs: torch.Tensor,
                    w: torch.Tensor | None) -> torch.Tensor:
    """Per-edge messages on the torch path: ``xs`` float64 (E,) source values."""
    msg = program.message
    if callable(msg):
        return msg(xs, w).to(torch.float64)
    if msg == "copy":
        return xs
    wd = w.to(torch.float64) if w is not None else torch.ones_like(xs)
    return xs + wd if msg == "add_weight" else xs * wd


class _Sink:
    """Where torch-path messages go: a scatter_reduce into ``acc`` or a raw message list."""

    def __init__(self, program: VertexProgram, num_targets: int, device: torch.device):
        self.program, self.device = program, device
        self.raw = program.raw_messages
        self.num_targets = num_targets
        if self.raw:
            self.index: list[torch.Tensor] = []
            self.values: list[torch.Tensor] = []
            self.acc = self.received = None
        else:
            self.reduce = COMBINERS[program.combiner][2]
            self.acc = torch.full((num_targets,), program.identity, dtype=torch.float64,
                                  device=device)
            self.received = torch.zeros(num_targets, dtype=torch.bool, device=device)

    def add(self, index: torch.Tensor, values: torch.Tensor) -> None:
        if index.numel() == 0:
            return
        if self.raw:
            self.index.append(index)
            self.values.append(values)
        else:
            self.acc.scatter_reduce_(0, index, values, self.reduce, include_self=True)
            self.received[index] = True

    def result(self, direction: str) -> EdgeResult:
        if self.raw:
            dev = self.device
            idx = torch.cat(self.index) if self.index else torch.zeros(0, dtype=torch.int64,
                                                                       device=dev)
            val = torch.cat(self.values) if self.values else torch.zeros(
                0, dtype=torch.float64, device=dev)
            return EdgeResult(None, None, (idx, val), direction)
        return EdgeResult(self.acc, self.received, None, direction)


# ---------------------------------------------------------------------------------------------
# in memory


class MemoryEdges:
    """CSR (out-edges) and CSC (in-edges) of the whole graph in memory, built lazily on first
    use; switches push/pull per superstep with Ligra's rule (see :data:`DENSE_DIVISOR`).

    Arrays: ``indptr`` int64 (N+1,), ``indices`` int32 (E,) (int64 past 2**31 nodes),
    ``weight`` float32 (E,) (empty when the program takes none). On the torch backend the
    same arrays live on ``device``, plus the row of every entry (int64 (E,)) for pulls.
    """

    def __init__(self, graph, edge_set: str | None, program: VertexProgram,
                 device: torch.device, backend: str, dense_divisor: float = DENSE_DIVISOR):
        self.graph, self.edge_set, self.program = graph, edge_set, program
        self.device, self.backend = device, backend
        self.num_nodes = graph.num_nodes()
        self.num_edges = graph.num_edges(edge_set)
        self.has_weight = graph.edge_set(edge_set).has_weight
        self.dense_divisor = dense_divisor
        #: fused numba kernels, or the generic torch path (GPU, custom message/combiner)
        self.use_numba = backend == "numba" and program.builtin
        self._adj: dict[str, tuple] = {}
        self.bytes_h2d = 0
        #: seconds spent building CSR/CSC (setup, not superstep time)
        self.build_seconds = 0.0
        #: stamp arrays of :meth:`relax` (int64 (N,) each) and the last stamp used
        self._stamps: tuple[np.ndarray, np.ndarray] | None = None
        self._stamp = 0
        #: float64 (N,) buffer of the values gathered for :meth:`hot_adjacency` pulls
        self._hot_x: np.ndarray | None = None

    def adjacency(self, kind: str) -> tuple:
        """``kind`` = ``csr`` (out-neighbours) or ``csc`` (in-neighbours)."""
        if kind not in self._adj:
            t0 = time.perf_counter()
            c = self.graph.csr(self.edge_set, transpose=(kind == "csc"),
                               weights=self.program.uses_weights)
            idx = c.indices.astype(np.int32) if self.num_nodes < 2**31 else c.indices
            if self.program.uses_weights:
                w = c.weight if c.weight is not None else np.ones(len(idx), np.float32)
            else:
                w = np.zeros(0, np.float32)
            del c.indices
            if self.use_numba:
                self._adj[kind] = (c.indptr, idx, w)
            else:
                indptr = _as_tensor(c.indptr, self.device)
                rows = torch.repeat_interleave(
                    torch.arange(self.num_nodes, device=self.device),
                    indptr[1:] - indptr[:-1])
                tensors = (indptr, _as_tensor(idx, self.device, torch.int64),
                           _as_tensor(w, self.device) if len(w) else None, rows)
                if self.device.type != "cpu":
                    self.bytes_h2d += sum(int(t.numel() * t.element_size())
                                          for t in tensors if t is not None)
                self._adj[kind] = tensors
            self.build_seconds += time.perf_counter() - t0
        return self._adj[kind]

    def relax_async(self, value: torch.Tensor, frontier: np.ndarray) -> tuple[int, int, int]:
        """A min-relaxation program to its fixed point (:func:`kernels.relax_async`) from
        ``frontier`` (int64 ids); ``value`` float64 (N,) CPU tensor lowered in place.
        Returns (vertices popped, edges scanned, values lowered)."""
        prog = self.program
        push = [self.adjacency(k) for _, k in self._passes()]
        queued = np.zeros(self.num_nodes, np.uint8)
        popped, scanned, lowered = kernels.relax_async(
            push[0], push[-1], len(push) == 2, prog.message == "add_weight", value.numpy(),
            frontier, float(prog.relax_offset), queued)
        return int(popped), int(scanned), int(lowered)

    def hot_adjacency(self, kind: str) -> tuple:
        """``kind``'s adjacency with its *sources* renumbered by descending frequency (the
        vertices most edges read come first), for the all-active copy/sum pull: the values
        the pull gathers then sit in few cache lines (hub sorting; the rows keep the
        engine's order, so results need no permutation). Returns (indptr int64 (N+1,),
        indices int32 (E,) in the new numbering, ``order`` int64 (N,): new -> engine id);
        a pass gathers ``x[order]`` first. Replaces the plain adjacency in the cache."""
        key = kind + "-hot"
        if key not in self._adj:
            indptr, idx, _ = self.adjacency(kind)
            t0 = time.perf_counter()
            order = np.argsort(-np.bincount(idx, minlength=self.num_nodes), kind="stable")
            rank = np.empty(self.num_nodes, idx.dtype)
            rank[order] = np.arange(self.num_nodes, dtype=idx.dtype)
            kernels.gather(rank, idx, idx)  # in place: idx[e] = rank[idx[e]]
            del self._adj[kind]  # its indices now hold the new numbering
            self._adj[key] = (indptr, idx, order)
            self._hot_x = np.empty(self.num_nodes, np.float64)
            self.build_seconds += time.perf_counter() - t0
        return self._adj[key]

    def _passes(self) -> list[tuple[str, str]]:
        """(pull adjacency, push adjacency) per message direction of the program."""
        d = self.program.direction
        out = []
        if d in ("out", "both"):
            out.append(("csc", "csr"))
        if d in ("in", "both"):
            out.append(("csr", "csc"))
        return out

    def dense(self, active: torch.Tensor, num_active: int) -> tuple[bool, np.ndarray | None]:
        """Ligra's rule: pull when |F| + outdeg(F) > m / divisor. Returns (pull?, frontier
        ids int64 or None)."""
        if num_active == self.num_nodes:
            return True, None
        threshold = self.num_edges * len(self._passes()) / self.dense_divisor
        if num_active > threshold:
            return True, None
        frontier = torch.nonzero(active).squeeze(1)
        outdeg = 0
        for _, push_kind in self._passes():
            indptr = self.adjacency(push_kind)[0]
            if self.use_numba:
                outdeg += int(kernels.frontier_degree(indptr, frontier.cpu().numpy()))
            else:
                outdeg += int((indptr[frontier + 1] - indptr[frontier]).sum())
        return num_active + outdeg > threshold, frontier

    def relax(self, value: torch.Tensor, frontier: np.ndarray, max_steps: int) -> tuple:
        """Supersteps of a min-relaxation program in numba calls (:func:`kernels.relax_run`):
        ``value`` float64 (N,) CPU tensor, lowered in place; ``frontier`` int64 ids. Builds
        the pull adjacency the first time a frontier is dense. Returns (supersteps run, and
        per superstep int64 arrays: active, edges scanned, distinct receivers, 1 = pull;
        then the next frontier, int64 ids)."""
        prog = self.program
        passes = self._passes()
        two = len(passes) == 2
        if self._stamps is None:
            self._stamps = (np.zeros(self.num_nodes, np.int64),
                            np.zeros(self.num_nodes, np.int64))
        steps = max(0, min(max_steps, self.num_nodes + 1))
        out = [np.zeros(steps, np.int64) for _ in range(4)]
        threshold = self.num_edges * len(passes) / self.dense_divisor
        push = [self.adjacency(k) for _, k in passes]
        done = 0
        while True:
            have_pull = all(k in self._adj for k, _ in passes)
            pull = [self._adj[k] for k, _ in passes] if have_pull else push
            n, frontier = kernels.relax_run(
                push[0], push[-1], pull[0], pull[-1], two, have_pull,
                prog.message == "add_weight", prog.first_message_wins, value.numpy(),
                frontier, float(prog.relax_offset), steps - done, threshold, *self._stamps,
                self._stamp + 1, *(a[done:] for a in out))
            self._stamp += 2 * int(n)
            done += int(n)
            if have_pull or done == steps or len(frontier) == 0:
                break
            for k, _ in passes:  # dense: build the pull adjacency and go on
                self.adjacency(k)
        return (done, *(a[:done] for a in out), frontier)

    def run(self, x: torch.Tensor, active: torch.Tensor, num_active: int,
            accept: torch.Tensor | None) -> EdgeResult:
        prog = self.program
        h2d0 = self.bytes_h2d
        pull, frontier = self.dense(active, num_active)
        all_active = num_active == self.num_nodes
        direction = "pull" if pull else "push"
        if self.use_numba:
            acc = torch.full((self.num_nodes,), prog.identity, dtype=torch.float64)
            received = torch.zeros(self.num_nodes, dtype=torch.bool)
            a, r, xn, act = _np(acc), _np(received), _np(x), _np(active)
            acc_mask = _np(accept) if accept is not None else np.zeros(0, np.uint8)
            msg, comb = MESSAGES[prog.message], COMBINERS[prog.combiner][0]
            scanned = sent = 0
            for pull_kind, push_kind in self._passes():
                if pull and all_active and accept is None and msg == kernels.MSG_COPY and (
                        comb == kernels.COMB_SUM):
                    indptr, idx, order = self.hot_adjacency(pull_kind)
                    xh = kernels.gather(xn, order, self._hot_x)
                    s = m = kernels.pull_copy_sum(indptr, idx, xh, a, r)
                elif pull:
                    indptr, idx, w = self.adjacency(pull_kind)
                    s, m = kernels.pull(indptr, idx, w, xn, act, not all_active, acc_mask,
                                        accept is not None, msg, comb,
                                        prog.first_message_wins, a, r)
                else:
                    indptr, idx, w = self.adjacency(push_kind)
                    s, m = kernels.push(indptr, idx, w, xn, frontier.numpy(), acc_mask,
                                        accept is not None, msg, comb, a, r)
                scanned += int(s)
                sent += int(m)
            return EdgeResult(acc, received, None, direction, scanned, sent)
        sink = _Sink(prog, self.num_nodes, self.device)
        scanned = sent = 0
        for pull_kind, push_kind in self._passes():
            if pull:
                _, idx, w, rows = self.adjacency(pull_kind)
                src, dst = idx, rows
                scanned += src.numel()
                if not all_active:
                    keep = active[src]
                    src, dst = src[keep], dst[keep]
                    w = w[keep] if w is not None else None
            else:
                indptr, idx, w, _ = self.adjacency(push_kind)
                f = frontier.to(self.device)
                counts = indptr[f + 1] - indptr[f]
                src = torch.repeat_interleave(f, counts)
                # edge positions: start of each source's row + rank within the row
                starts = torch.repeat_interleave(indptr[f] - torch.cumsum(counts, 0) + counts,
                                                 counts)
                pos = starts + torch.arange(src.numel(), device=self.device)
                dst = idx[pos]
                w = w[pos] if w is not None else None
                scanned += src.numel()
            if accept is not None:
                keep = accept[dst]
                src, dst = src[keep], dst[keep]
                w = w[keep] if w is not None else None
            sink.add(dst, _torch_messages(prog, x[src], w))
            sent += src.numel()
        res = sink.result(direction)
        res.edges_scanned, res.messages_sent = scanned, sent
        res.bytes_h2d = self.bytes_h2d - h2d0
        return res


# ---------------------------------------------------------------------------------------------
# out of core


class StreamEdges:
    """Buckets streamed from the mapped Arrow files every superstep (vertex state stays in
    memory). Forward messages read buckets ``(i, j)`` with ``i`` in ``src_parts`` row-major
    (consecutive buckets have different target partitions ``j``); reverse messages read
    buckets with ``j`` in ``src_parts`` column-major. A read-ahead thread opens the next
    buckets and faults their pages in (``readahead`` batches ahead) while ``threads``
    workers run the kernel, one target partition at a time each (a lock per target
    partition), so no two workers write the same accumulator entries.

    ``x``/``active`` are indexed by owned-local ids (global id - ``lo``); ``acc``/``received``
    by global ids (N,): in a distributed run targets owned by other ranks are exchanged.
    """

    def __init__(self, graph, edge_set: str | None, program: VertexProgram,
                 device: torch.device, backend: str, src_parts: range | None = None,
                 threads: int = 2, readahead: int = 4):
        self.graph, self.edge_set, self.program = graph, edge_set, program
        self.device, self.backend = device, backend
        self.es = graph.edge_set(edge_set)
        self.num_nodes = graph.num_nodes()
        p = graph.num_partitions
        self.src_parts = src_parts if src_parts is not None else range(p)
        self.offsets = graph.partition_offsets()
        self.lo = int(self.offsets[self.src_parts.start])
        self.threads = max(1, threads)
        self.readahead = max(1, readahead)
        sched = []
        if program.direction in ("out", "both"):
            sched += [(i, j, False) for i in self.src_parts for j in range(p)]
        if program.direction in ("in", "both"):
            sched += [(i, j, True) for j in range(p) for i in range(p)
                      if j in self.src_parts]
        self.schedule = [(i, j, rev) for i, j, rev in sched if self.es.buckets.get((i, j))]
        self._buckets: dict[tuple[int, int], object] = {}
        self.num_edges_local = sum(self.es.buckets[(i, j)] for i, j, _ in self.schedule)

    def _producer(self, q: queue.Queue, abort: threading.Event, skip: set[int],
                  consumers: int) -> None:
        """Read-ahead: open buckets in schedule order, fault in their pages, queue batches;
        finally one ``None`` per consumer (or an exception to re-raise)."""

        def put(item) -> bool:
            while not abort.is_set():
                try:
                    q.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        try:
            for i, j, rev in self.schedule:
                if (j if rev else i) in skip:
                    continue
                if (i, j) not in self._buckets:  # keep the mapping open between supersteps
                    self._buckets[(i, j)] = self.graph.bucket(i, j, self.es.name)
                for eb in self._buckets[(i, j)].batches():
                    nbytes = 0
                    for arr in (eb.src, eb.dst, eb.weight if self.program.uses_weights else None):
                        if arr is not None:
                            kernels.touch_pages(arr.view(np.uint8), _PAGE)
                            nbytes += arr.nbytes
                    if not put(((i, j, rev), eb, nbytes)):
                        return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer side
            put(exc)
        finally:
            for _ in range(consumers):
                if not put(None):
                    break

    def run(self, x: torch.Tensor, active: torch.Tensor, num_active: int,
            accept: torch.Tensor | None) -> EdgeResult:
        prog = self.program
        use_active = num_active < len(x)
        skip: set[int] = set()
        if use_active:  # skip buckets whose source partition has no active vertex
            act = active.cpu()
            for p in self.src_parts:
                a, b = int(self.offsets[p]) - self.lo, int(self.offsets[p + 1]) - self.lo
                if not bool(act[a:b].any()):
                    skip.add(p)
        q: queue.Queue = queue.Queue(maxsize=self.readahead)
        abort = threading.Event()
        numba_path = self.backend == "numba" and prog.builtin
        if numba_path:
            acc = torch.full((self.num_nodes,), prog.identity, dtype=torch.float64)
            received = torch.zeros(self.num_nodes, dtype=torch.bool)
            state = (_np(x), _np(active), _np(acc), _np(received),
                     MESSAGES[prog.message], COMBINERS[prog.combiner][0])
            workers = self.threads
            sink = None
        else:
            sink = _Sink(prog, self.num_nodes, self.device)
            workers = 1  # torch ops are themselves multi-threaded
        locks = [threading.Lock() for _ in range(self.graph.num_partitions)]
        counters = [[0, 0, 0, 0] for _ in range(workers)]  # scanned, sent, bytes, h2d
        errors: list[BaseException] = []

        def consume(k: int) -> None:
            c = counters[k]
            try:
                while True:
                    try:
                        item = q.get(timeout=0.1)
                    except queue.Empty:
                        if abort.is_set():
                            return
                        continue
                    if item is None:
                        return
                    if isinstance(item, BaseException):
                        errors.append(item)
                        return
                    (i, j, rev), eb, nbytes = item
                    c[0] += len(eb)
                    c[2] += nbytes
                    if numba_path:
                        self._numba_batch(eb, i, j, rev, use_active, state, locks, c)
                    else:
                        self._torch_batch(eb, i, j, rev, x, active, use_active, sink, c)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                errors.append(exc)
                abort.set()

        producer = threading.Thread(target=self._producer, args=(q, abort, skip, workers),
                                    daemon=True)
        producer.start()
        threads = [threading.Thread(target=consume, args=(k,), daemon=True)
                   for k in range(1, workers)]
        for t in threads:
            t.start()
        consume(0)
        for t in threads:
            t.join()
        if errors:  # consumers stopped early: let a blocked producer see the abort
            abort.set()
        producer.join()
        if errors:
            raise errors[0]
        scanned, sent, nbytes, h2d = (sum(c[k] for c in counters) for k in range(4))
        if numba_path:
            res = EdgeResult(acc, received, None, "stream")
        else:
            res = sink.result("stream")
        res.edges_scanned, res.messages_sent, res.bytes_read, res.bytes_h2d = (
            scanned, sent, nbytes, h2d)
        return res

    def _weights(self, eb) -> np.ndarray:
        if not self.program.uses_weights:
            return np.zeros(0, np.float32)
        return eb.weight if eb.weight is not None else np.ones(len(eb), np.float32)

    def _numba_batch(self, eb, i, j, rev, use_active, state, locks, c) -> None:
        xn, act, a, r, msg, comb = state
        bi, bj = int(self.offsets[i]), int(self.offsets[j])
        if rev:  # messages dst -> src: sources are partition j (owned), targets partition i
            src, dst, sb, db, target = eb.dst, eb.src, bj - self.lo, bi, i
        else:
            src, dst, sb, db, target = eb.src, eb.dst, bi - self.lo, bj, j
        with locks[target]:
            c[1] += int(kernels.stream(src, dst, sb, db, self._weights(eb), xn, act, use_active,
                                       np.zeros(0, np.uint8), False, msg, comb, a, r))

    def _torch_batch(self, eb, i, j, rev, x, active, use_active, sink, c) -> None:
        dev = self.device
        bi, bj = int(self.offsets[i]), int(self.offsets[j])
        src = _as_tensor(eb.src, dev, torch.int64)
        dst = _as_tensor(eb.dst, dev, torch.int64)
        w = None
        if self.program.uses_weights:
            w = _as_tensor(self._weights(eb), dev)
        if dev.type != "cpu":
            c[3] += len(eb) * 8 + (len(eb) * 4 if w is not None else 0)
        if rev:
            src, dst = dst + (bj - self.lo), src + bi
        else:
            src, dst = src + (bi - self.lo), dst + bj
        if use_active:
            keep = active[src]
            src, dst = src[keep], dst[keep]
            w = w[keep] if w is not None else None
        sink.add(dst, _torch_messages(self.program, x[src], w))
        c[1] += src.numel()
