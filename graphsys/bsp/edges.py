"""The edge phase of a superstep in memory (:class:`MemoryEdges`, CSR/CSC, push or pull),
and what every edge provider shares (:mod:`graphsys.bsp.stream` streams buckets instead).

A provider (:class:`~graphsys.bsp.provider.EdgeProvider`) turns ``(x, active)`` into
combined messages per target: :class:`~graphsys.bsp.provider.EdgeResult` with ``acc``
float64 (N_targets,), ``received`` bool (N_targets,), or — for custom combiners — the raw
messages ``(index int64 (M,), values float64 (M,))``. Two implementations of every pass:
fused numba kernels (CPU, builtin message and combiner) and torch gather +
``scatter_reduce_`` (any device, any program; an all-active copy/sum pull, PageRank's
superstep, is one sparse matrix-vector product instead, cuSPARSE on CUDA). Streamed
batches reach a GPU through a ring of pinned buffers (:mod:`graphsys.bsp.device_stream`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from graphsys import views
from graphsys.bsp import checks, kernels
from graphsys.bsp.distributed import LocalComm
from graphsys.bsp.program import COMBINERS, MESSAGES, VertexProgram
from graphsys.bsp.provider import EdgeResult
from graphsys.device import csr_tensor, host_array
from graphsys.errors import GraphsysError
from graphsys.kernels.arrays import read_only
from graphsys.storage.edges import _to_torch
from graphsys.storage.kernels import count_into
from graphsys.trace import traced
from graphsys.views.rows import rows

if TYPE_CHECKING:
    import torch

#: Ligra's default: go dense (pull) when |F| + outdeg(F) > num_edges / DENSE_DIVISOR.
DENSE_DIVISOR = 20


def cache_bytes(level: int | None = None, default: int = 32 << 20) -> int:
    """Size of CPU 0's data cache of ``level`` (2 for L2), or of its largest cache when
    ``level`` is None (Linux sysfs); ``default`` where unknown."""
    best = 0
    for d in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            size = (d / "size").read_text().strip()
            at = int((d / "level").read_text())
            kind = (d / "type").read_text().strip()
        except (OSError, ValueError):
            continue
        if level is not None and (at != level or kind == "Instruction"):
            continue
        unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        digits = size.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * unit)
    return best or default


#: In memory, the all-active copy/sum pull renumbers its sources by frequency (hub sorting,
#: :meth:`MemoryEdges.hot_adjacency`) when the gathered float64 vector is larger than this,
#: three quarters of the last-level cache: below it the gathers hit the cache already
#: (docs/benchmarks.md has the measurements).
HUB_SORT_BYTES = cache_bytes() * 3 // 4


def _bincount(index: np.ndarray, n: int) -> np.ndarray:
    """int64 (n,) counts of the ids in ``index`` (E,): ``np.bincount``'s, counted with
    :func:`~graphsys.storage.kernels.count_into`'s prefetched slots (faster than
    ``np.bincount`` where the counts outgrow the cache)."""
    counts = np.zeros(n, np.int64)
    count_into(index, counts)
    return counts


def _host_accumulators(n: int, identity: float, width: int | None = None,
                       host: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``acc`` float64 (n,) (or (n, width) for a vector program) filled with the combiner's
    identity and ``received`` bool (n,) all False, CPU tensors allocated by NumPy (a torch
    fill of a CPU tensor wakes torch's thread pool, which costs more than the fill itself on
    small graphs); ``host``: the NumPy arrays themselves (a NumPy state)."""
    shape = n if width is None else (n, width)
    acc, received = np.full(shape, identity), np.zeros(n, np.bool_)
    if host:
        return acc, received
    import torch

    return torch.from_numpy(acc), torch.from_numpy(received)


def _sent_dtype(program: VertexProgram) -> type:
    """The dtype the numba copy/sum pulls gather ``program``'s sent values in: float32 for a
    ``sum_dtype="float32"`` program (each pulled row still sums in float64), else float64."""
    return np.float32 if program.sum_dtype == "float32" else np.float64


def check_weights(w: np.ndarray, edge_set: str | None) -> None:
    """GraphsysError when an edge weight of ``w`` is negative, NaN or infinite: a weighted
    random walk (PageRank's transition probabilities) needs finite non-negative ones."""
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        raise GraphsysError(f"edge set {edge_set!r} has weight {float(w[bad[0]])!r}: a "
                            f"weighted walk needs finite non-negative edge weights (ignore "
                            f"them with weighted=False)")


def _host(arr) -> np.ndarray:
    """A NumPy view of an adjacency array (a CPU/GPU tensor on the torch backend)."""
    return arr if isinstance(arr, np.ndarray) else arr.cpu().numpy()


def _as_tensor(arr: np.ndarray, device: torch.device) -> torch.Tensor:
    return _to_torch(arr).to(device)  # read-only mapped memory: we never write through it


#: Devices whose torch backend multiplies a sparse CSR matrix (others, as torch's lazy
#: tensors, take the gather-and-scatter pull)
SPARSE_CSR_DEVICES = ("cpu", "cuda")


def _torch_messages(program: VertexProgram, xs: torch.Tensor,
                    w: torch.Tensor | None) -> torch.Tensor:
    """Per-edge messages on the torch path: ``xs`` float64 (E,) source values ((E, d) rows
    of a vector program)."""
    import torch

    msg = program.message
    if callable(msg):
        return checks.messages(program, msg(xs, w), tuple(xs.shape), xs.device)
    if msg == "copy":
        return xs
    wd = w.to(torch.float64) if w is not None else torch.ones(len(xs), dtype=torch.float64,
                                                              device=xs.device)
    if xs.dim() == 2:
        wd = wd.unsqueeze(1)
    return xs + wd if msg == "add_weight" else xs * wd


class _Sink:
    """Where torch-path messages go: a scatter_reduce into ``acc`` or a raw message list.

    ``spare``: a combining sink of a builtin message gets one spare row past the targets,
    where :meth:`send` puts the messages of edges masked off (a sender off the frontier, a
    target not accepted) rather than compacting them out (a compaction's size is a host
    read on a GPU); :meth:`result` leaves it out. Messages are counted on the host, and
    the masked sends on the device, read once by :meth:`messages_sent`."""

    def __init__(self, program: VertexProgram, num_targets: int, device: torch.device,
                 spare: bool = False):
        import torch

        self.program, self.device = program, device
        self.raw = program.raw_messages
        self.num_targets = num_targets
        self.spare = spare and not self.raw and isinstance(program.message, str)
        self.sent = 0
        self._sent_masked: torch.Tensor | None = None
        if self.raw:
            self.index: list[torch.Tensor] = []
            self.values: list[torch.Tensor] = []
            self.acc = self.received = None
        else:
            self.reduce = COMBINERS[program.combiner][2]
            rows = num_targets + self.spare
            self.acc = torch.full(program.message_shape(rows), program.identity,
                                  dtype=torch.float64, device=device)
            self.received = torch.zeros(rows, dtype=torch.bool, device=device)

    def send(self, x: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
             w: torch.Tensor | None, keep: torch.Tensor | None = None) -> None:
        """The messages of the edges ``src -> dst`` (int64 ids into ``x`` and the targets;
        float32 weights ``w`` or None) from the sources' values ``x``; with ``keep`` (bool
        (E,)), of the kept edges only: the others go to the spare row, or are compacted out
        first where the sink has none."""
        import torch

        if keep is not None and self.spare:
            dst = torch.where(keep, dst, self.num_targets)
            count = keep.sum()
            self._sent_masked = (count if self._sent_masked is None
                                 else self._sent_masked.add_(count))
        elif keep is not None:
            src, dst = src[keep], dst[keep]
            w = w[keep] if w is not None else None
            self.sent += src.numel()
        else:
            self.sent += src.numel()
        self.add(dst, _torch_messages(self.program, x[src], w))

    def messages_sent(self) -> int:
        """Messages sent so far (one host read where some sends were masked)."""
        return self.sent + (0 if self._sent_masked is None else int(self._sent_masked))

    def add(self, index: torch.Tensor, values: torch.Tensor) -> None:
        if index.numel() == 0:
            return
        if self.raw:
            self.index.append(index)
            self.values.append(values)
        else:
            rows = index if values.dim() == 1 else index.unsqueeze(1).expand_as(values)
            self.acc.scatter_reduce_(0, rows, values, self.reduce, include_self=True)
            # a fill by the scalar on the device (an index put of True may copy it there
            # from the host, which a recorded pass cannot)
            self.received.index_fill_(0, index, True)

    def result(self, direction: str) -> EdgeResult:
        if self.raw:
            import torch

            dev = self.device
            idx = torch.cat(self.index) if self.index else torch.zeros(0, dtype=torch.int64,
                                                                       device=dev)
            val = torch.cat(self.values) if self.values else torch.zeros(
                0, dtype=torch.float64, device=dev)
            return EdgeResult(None, None, (idx, val), direction)
        n = self.num_targets
        return EdgeResult(self.acc[:n], self.received[:n], None, direction)


class _CopySum:
    """The sums of an all-active copy/sum pass on the torch path: each batch adds its
    sources' values into its targets (one gather, one ``index_add_``, int32 offsets
    into views of ``x`` and of the sums: nothing widened or offset on the device); the
    receiving targets are marked in the first pass only (``received`` given: a copy of
    the kept ones)."""

    def __init__(self, num_targets: int, device: torch.device,
                 received: torch.Tensor | None):
        import torch

        self.acc = torch.zeros(num_targets, dtype=torch.float64, device=device)
        self.mark = received is None
        self.received = (torch.zeros(num_targets, dtype=torch.bool, device=device)
                         if received is None else received.clone())

    def add(self, src: torch.Tensor, dst: torch.Tensor, sb: int, db: int,
            x: torch.Tensor) -> None:
        """Sources ``x[sb + src]`` summed into targets ``db + dst``."""
        self.acc[db:].index_add_(0, dst, x[sb:].index_select(0, src))
        if self.mark:
            self.received[db:][dst] = True

    def result(self, direction: str) -> EdgeResult:
        return EdgeResult(self.acc, self.received, None, direction)


# ---------------------------------------------------------------------------------------------
# in memory


#: ``kind``'s (``csr``: out-neighbours, ``csc``: in-neighbours) ``(indptr, indices,
#: weight)`` for one run, from the view layer (:func:`graphsys.views.rows.rows`): the
#: graph's mapped index where it has one, else built reading every bucket once, the run's
#: own arrays (:meth:`MemoryEdges.hot_adjacency` renumbers them in place).
build_adjacency = rows


def numpy_adjacency(edges, kind: str) -> tuple[np.ndarray, np.ndarray, float]:
    """``kind``'s (indptr int64 (N+1,), indices) as NumPy arrays for a whole-graph method
    (:meth:`~graphsys.bsp.program.VertexProgram.solve_in_memory`) of ``edges``, a
    :class:`MemoryEdges`: its own arrays on the numba path, else read once with
    :func:`build_adjacency` (the mapped index where the graph has one); and the seconds a
    build took (setup)."""
    if edges.use_numba:
        return *edges.adjacency(kind)[:2], 0.0
    t0 = time.perf_counter()
    indptr, idx, _ = build_adjacency(edges.graph, edges.edge_set, kind, False)
    return indptr, idx, time.perf_counter() - t0


class MemoryEdges:
    """The ``memory`` :class:`~graphsys.bsp.provider.EdgeProvider`: CSR (out-edges) and CSC
    (in-edges) of the whole graph in memory, each built on first use with one read of the
    buckets (:func:`build_adjacency`; the graph's adjacency index, mapped, where it has one);
    switches push/pull per superstep with Ligra's rule (see :data:`DENSE_DIVISOR`).

    Arrays: ``indptr`` int64 (N+1,), ``indices`` int32 (E,) (int64 past 2**31 nodes),
    ``weight`` float32 (E,) (empty when the program takes none). On the torch backend the
    same arrays live on ``device``, plus the row of every entry (int64 (E,)) for pulls.
    """

    mode = "memory"
    #: supersteps read no file (the adjacency is built, or mapped, in the setup)
    streams = False

    def __init__(self, graph, edge_set: str | None, program: VertexProgram,
                 device: torch.device, backend: str, dense_divisor: float = DENSE_DIVISOR):
        self.graph, self.edge_set, self.program = graph, edge_set, program
        self.device, self.backend = device, backend
        self.num_nodes = graph.num_nodes()
        self.comm = LocalComm()
        self.lo, self.hi = 0, self.num_nodes
        self.bounds = np.array([0, self.num_nodes], np.int64)
        self.num_edges = graph.num_edges(edge_set)
        self.has_weight = graph.edge_set(edge_set).has_weight
        self.dense_divisor = dense_divisor
        #: fused numba kernels, or the generic torch path (GPU, custom message/combiner)
        self.use_numba = backend == "numba" and program.builtin
        self._adj: dict[str, tuple] = {}
        #: bytes of adjacency copied host -> device so far (torch path on a GPU)
        self.bytes_h2d = 0
        #: seconds spent building CSR/CSC (setup, not superstep time)
        self.build_seconds = 0.0
        #: stamp arrays of :meth:`relax` (int64 (N,) each) and the last stamp used
        self._stamps: tuple[np.ndarray, np.ndarray] | None = None
        self._stamp = 0
        #: float64 (N,) buffer of the values gathered for :meth:`hot_adjacency` pulls
        self._hot_x: np.ndarray | None = None

    def adjacency(self, kind: str) -> tuple:
        """``kind`` = ``csr`` (out-neighbours) or ``csc`` (in-neighbours). On the numba path
        the arrays are read-only views (:func:`graphsys.kernels.arrays.read_only`), mapped
        or built alike, so that a kernel compiles once for both (:meth:`private` says which
        it is)."""
        if kind not in self._adj:
            t0 = time.perf_counter()
            indptr, idx, weight = build_adjacency(self.graph, self.edge_set, kind,
                                                  self.program.uses_weights)
            if self.program.uses_weights:
                w = weight if weight is not None else np.ones(len(idx), np.float32)
            else:
                w = np.zeros(0, np.float32)
            if self.use_numba:
                self._adj[kind] = (indptr, idx, w)
            else:
                import torch

                if self.device.type != "cpu":  # what crosses the bus (rows are made there)
                    self.bytes_h2d += indptr.nbytes + idx.nbytes + w.nbytes
                indptr_t = _as_tensor(indptr, self.device)
                rows = torch.repeat_interleave(
                    torch.arange(self.num_nodes, device=self.device),
                    indptr_t[1:] - indptr_t[:-1], output_size=len(idx))
                # the ids cross as stored (int32 where they fit) and are widened there
                self._adj[kind] = (indptr_t, _as_tensor(idx, self.device).to(torch.int64),
                                   _as_tensor(w, self.device) if len(w) else None, rows)
            self.build_seconds += time.perf_counter() - t0
        return read_only(*self._adj[kind]) if self.use_numba else self._adj[kind]

    def adjacencies(self, *kinds: str) -> tuple:
        """:meth:`adjacency` of each of ``kinds`` (``csr``, ``csc``), those neither at hand
        nor mapped from a stored index sized together first
        (:func:`~graphsys.storage.csr.check_rows`): a run that needs both directions is
        refused before either is built, in one line naming every index it needs."""
        build = [k for k in dict.fromkeys(kinds) if k not in self._adj
                 and k + "-hot" not in self._adj
                 and self.graph.adjacency_index(self.edge_set, k) is None]
        if len(build) > 1:
            views.check_rows(self.graph, self.edge_set, build[0], self.program.uses_weights,
                             also=tuple(build[1:]))
        return tuple(self.adjacency(k) for k in kinds)

    def private(self, kind: str) -> bool:
        """Whether ``kind``'s adjacency was built in memory for this run (its arrays are
        the run's own), not a mapped adjacency index."""
        self.adjacency(kind)
        return bool(self._adj[kind][1].flags.writeable)

    def _pull_matrix(self, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``kind`` adjacency (torch path) as a sparse CSR matrix of ones, a row per
        target and its senders' ids as columns, and whether each row has an entry: the
        all-active copy/sum pull (PageRank's superstep) is then one SpMV (cuSPARSE on CUDA)
        instead of a gather of every edge's value and a scatter of it with atomics. Made
        once (float64 values beside the ids: 8 bytes an edge) and kept with the adjacency."""
        key = f"{kind}-spmv"
        if key not in self._adj:
            import torch

            indptr, idx, _, _ = self.adjacency(kind)
            ones = torch.ones(idx.numel(), dtype=torch.float64, device=self.device)
            mat = csr_tensor(indptr, idx, ones, (self.num_nodes, self.num_nodes))
            self._adj[key] = (mat, indptr[1:] > indptr[:-1])
        return self._adj[key]

    def derived(self, name: str, kinds: tuple[str, ...], build: Callable[[], Any]) -> Any:
        """``build()``: a value computed from the ``kinds`` adjacency alone, kept in the
        opened graph's cache (:mod:`graphsys.views.cache`) while those arrays are its mapped
        index, so later runs skip its pass; never kept where the arrays were built for this
        run. ``name`` names the value among the edge set's; the caller never writes into
        it."""
        arrays = [self.adjacency(k) and self._adj[k][:2] for k in kinds]  # not the views
        mapped = [self.graph.adjacency_index(self.edge_set, k) for k in kinds]
        if not self.use_numba or not all(
                m is not None and m.indptr is a[0] and m.indices is a[1]
                for m, a in zip(mapped, arrays)):
            return build()
        key = (self.graph.edge_set(self.edge_set).name, kinds[0], name)
        return views.cached(self.graph, key, build, nbytes=lambda v: getattr(v, "nbytes", 0),
                            budget=views.cache_budget(None))

    @property
    def relaxes(self) -> bool:
        """Min-relaxation programs run in numba calls (:meth:`relax`, :meth:`relax_async`)."""
        return self.use_numba and self.program.fusable

    def degrees(self, direction: str) -> np.ndarray:
        """Out-/in-/both-degree, int64 (N,), from adjacency at hand: a row length of the
        same kind (csr for ``out``, csc for ``in``), else a count of the other kind's
        neighbour ids; with neither, the program's first pull adjacency is built (it is
        what an all-active first superstep reads), so the degrees cost no pass of their
        own."""
        if direction == "both":
            return self.degrees("out") + self.degrees("in")
        if direction == "out-weight":
            return self._out_weight()
        own, other = ("csr", "csc") if direction == "out" else ("csc", "csr")
        for key in (own, own + "-hot"):  # hub sorting keeps the rows: same indptr
            if key in self._adj:
                return np.diff(_host(self._adj[key][0]))
        offsets = self.graph.index_offsets(self.edge_set, own)
        if offsets is not None:
            return np.diff(offsets)
        if other + "-hot" in self._adj:  # neighbour ids renumbered: map them back
            _, idx, order = self._adj[other + "-hot"]
            deg = np.empty(self.num_nodes, np.int64)
            deg[order] = _bincount(idx, self.num_nodes)
            return deg
        mapped = self.graph.adjacency_index(self.edge_set, other)
        idx = (mapped.indices if mapped is not None else
               _host(self._adj[other][1]) if other in self._adj else None)
        if idx is not None:
            return _bincount(idx, self.num_nodes)
        self.adjacency(self._passes()[0][0])  # now one of the above holds
        return self.degrees(direction)

    def _out_weight(self) -> np.ndarray:
        """The weighted out-degree (sum of out-edge weights, 1 per edge of an unweighted
        set), float64 (N,), summed from the weighted adjacency the pulls read (the CSC:
        per source; else the CSR: per row). A negative or non-finite weight is refused."""
        kind = next((k for k in ("csc", "csr") if k in self._adj), self._passes()[0][0])
        adj = self.adjacency(kind)
        indptr, idx = _host(adj[0]), _host(adj[1])
        w = _host(adj[2]) if adj[2] is not None and len(adj[2]) else np.ones(len(idx), np.float64)
        check_weights(w, self.edge_set)
        rows = idx if kind == "csc" else np.repeat(np.arange(self.num_nodes), np.diff(indptr))
        return np.bincount(rows, weights=w, minlength=self.num_nodes)

    def close(self) -> None:
        """Nothing to release (the adjacency is freed with the object)."""

    def relax_async(self, value: torch.Tensor, frontier: np.ndarray) -> tuple[int, int, int]:
        """A min-relaxation program to its fixed point (:func:`kernels.relax_async`) from
        ``frontier`` (int64 ids); ``value`` float64 (N,) CPU tensor lowered in place.
        Returns (vertices popped, edges scanned, values lowered)."""
        prog = self.program
        push = [self.adjacency(k) for _, k in self._passes()]
        queued = np.zeros(self.num_nodes, np.uint8)
        popped, scanned, lowered = kernels.relax_async(
            push[0], push[-1], len(push) == 2, prog.message == "add_weight", host_array(value),
            frontier, float(prog.relax_offset), queued)
        return int(popped), int(scanned), int(lowered)

    def _hub_sorts(self, kind: str) -> bool:
        """Whether the all-active pull over ``kind`` uses :meth:`hot_adjacency`: when x is
        larger than :data:`HUB_SORT_BYTES` and the indices are private arrays. A mapped
        adjacency index is pulled as it is: renumbering would copy it (4 bytes per edge of
        heap, and a setup pass), which is what mapping it avoids."""
        return self.num_nodes * 8 > HUB_SORT_BYTES and (kind + "-hot" in self._adj
                                                         or self.private(kind))

    def hot_adjacency(self, kind: str) -> tuple:
        """``kind``'s adjacency with its *sources* renumbered by descending frequency (the
        vertices most edges read come first), for the all-active copy/sum pull: the values
        the pull gathers then sit in few cache lines (hub sorting; the rows keep the
        engine's order, so results need no permutation). Returns (indptr int64 (N+1,),
        indices int32 (E,) in the new numbering, ``order`` int64 (N,): new -> engine id);
        a pass gathers ``x[order]`` first. Replaces the plain adjacency in the cache."""
        key = kind + "-hot"
        if key not in self._adj:
            self.adjacency(kind)
            indptr, idx, _ = self._adj[kind]
            t0 = time.perf_counter()
            order = np.argsort(-_bincount(idx, self.num_nodes), kind="stable")
            rank = np.empty(self.num_nodes, idx.dtype)
            rank[order] = np.arange(self.num_nodes, dtype=idx.dtype)
            kernels.gather(rank, idx, idx)  # in place: idx[e] = rank[idx[e]]
            del self._adj[kind]  # its indices now hold the new numbering
            self._adj[key] = (indptr, idx, order)
            self._hot_x = np.empty(self.num_nodes, _sent_dtype(self.program))
            self.build_seconds += time.perf_counter() - t0
        return read_only(*self._adj[key])

    def _passes(self) -> list[tuple[str, str]]:
        """(pull adjacency, push adjacency) per message direction of the program."""
        d = self.program.direction
        return ([("csc", "csr")] if d in ("out", "both") else []) + (
            [("csr", "csc")] if d in ("in", "both") else [])

    def dense(self, active: torch.Tensor, num_active: int
              ) -> tuple[bool, torch.Tensor | None, list[int]]:
        """Ligra's rule: pull when |F| + outdeg(F) > m / divisor. Returns (pull?, frontier
        ids int64 or None, and the frontier's out-edges in each pass's push adjacency where
        they were counted: the sizes of a push's edge lists)."""
        if num_active == self.num_nodes:
            return True, None, []
        threshold = self.num_edges * len(self._passes()) / self.dense_divisor
        if num_active > threshold:
            return True, None, []
        import torch

        frontier = torch.nonzero(active).squeeze(1)
        outdeg = []
        for _, push_kind in self._passes():
            indptr = self.adjacency(push_kind)[0]
            if self.use_numba:
                outdeg.append(int(kernels.frontier_degree(indptr, host_array(frontier.cpu()))))
            else:
                outdeg.append(int((indptr[frontier + 1] - indptr[frontier]).sum()))
        return num_active + sum(outdeg) > threshold, frontier, outdeg

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
            pull = [read_only(*self._adj[k]) for k, _ in passes] if have_pull else push
            n, frontier = kernels.relax_run(
                push[0], push[-1], pull[0], pull[-1], two, have_pull,
                prog.message == "add_weight", prog.first_message_wins, host_array(value),
                frontier, float(prog.relax_offset), steps - done, threshold, *self._stamps,
                self._stamp + 1, *(a[done:] for a in out))
            self._stamp += 2 * int(n)
            done += int(n)
            if have_pull or done == steps or len(frontier) == 0:
                break
            for k, _ in passes:  # dense: build the pull adjacency and go on
                self.adjacency(k)
        return (done, *(a[:done] for a in out), frontier)

    def _rows_pass(self, pull: bool, kind: str, xn, act, use_active: bool, frontier,
                   acc_mask, use_accept: bool, msg: int, comb: int, a, r) -> tuple[int, int]:
        """One pull or push of a vector program's float64 (N, d) rows ``xn`` over ``kind``'s
        adjacency (:func:`kernels.pull_rows`, :func:`kernels.push_rows`)."""
        indptr, idx, w = self.adjacency(kind)
        if pull and not use_active and not use_accept and msg == kernels.MSG_COPY and (
                comb == kernels.COMB_SUM):
            s = kernels.pull_copy_sum_rows(indptr, idx, xn, a, r)
            return s, s
        if pull:
            return kernels.pull_rows(indptr, idx, w, xn, act, use_active, acc_mask,
                                     use_accept, msg, comb, a, r)
        return kernels.push_rows(indptr, idx, w, xn, host_array(frontier), acc_mask,
                                 use_accept, msg, comb, a, r)

    def _push_edges(self, kind: str, frontier: torch.Tensor, edges: int) -> tuple:
        """The ``edges`` out-edges of ``frontier`` (torch path; counted by :meth:`dense`, so
        that no op here waits on the host for its output's size) in ``kind``'s adjacency:
        (sources, targets, weights or None), int64/float32 tensors on the device."""
        import torch

        indptr, idx, w, _ = self.adjacency(kind)
        f = frontier.to(self.device)
        counts = indptr[f + 1] - indptr[f]
        src = torch.repeat_interleave(f, counts, output_size=edges)
        # edge positions: start of each source's row + rank within the row
        starts = torch.repeat_interleave(indptr[f] - torch.cumsum(counts, 0) + counts, counts,
                                         output_size=edges)
        pos = starts + torch.arange(edges, device=self.device)
        return src, idx[pos], (w[pos] if w is not None else None)

    @traced("bsp.edges")
    def run(self, x: torch.Tensor, active: torch.Tensor, num_active: int,
            accept: torch.Tensor | None) -> EdgeResult:
        prog = self.program
        h2d0 = self.bytes_h2d
        pull, frontier, frontier_edges = self.dense(active, num_active)
        all_active = num_active == self.num_nodes
        direction = "pull" if pull else "push"
        if self.use_numba:
            acc, received = _host_accumulators(self.num_nodes, prog.identity, prog.width)
            a, r, xn, act = host_array(acc), host_array(received), host_array(x), host_array(active)
            acc_mask = host_array(accept) if accept is not None else np.zeros(0, np.uint8)
            msg, comb = MESSAGES[prog.message], COMBINERS[prog.combiner][0]
            scanned = sent = 0
            for pull_kind, push_kind in self._passes():
                if prog.width is not None:  # vector program: (N, d) rows
                    s, m = self._rows_pass(pull, pull_kind if pull else push_kind, xn, act,
                                           not all_active, frontier, acc_mask,
                                           accept is not None, msg, comb, a, r)
                elif pull and all_active and accept is None and msg == kernels.MSG_COPY and (
                        comb == kernels.COMB_SUM):
                    if self._hub_sorts(pull_kind):
                        indptr, idx, order = self.hot_adjacency(pull_kind)
                        xs = kernels.gather(xn, order, self._hot_x)
                    else:  # x stays in cache (or the index is mapped): pull as stored
                        indptr, idx, _ = self.adjacency(pull_kind)
                        xs = xn.astype(_sent_dtype(prog), copy=False)
                    s = m = kernels.pull_copy_sum(indptr, idx, xs, a, r)
                elif pull:
                    indptr, idx, w = self.adjacency(pull_kind)
                    s, m = kernels.pull(indptr, idx, w, xn, act, not all_active, acc_mask,
                                        accept is not None, msg, comb,
                                        prog.first_message_wins, a, r)
                else:
                    indptr, idx, w = self.adjacency(push_kind)
                    s, m = kernels.push(indptr, idx, w, xn, host_array(frontier), acc_mask,
                                        accept is not None, msg, comb, a, r)
                scanned += int(s)
                sent += int(m)
            return EdgeResult(acc, received, None, direction, scanned, sent)
        spmv = (pull and all_active and accept is None and not prog.raw_messages
                and prog.message == "copy" and prog.combiner == "sum" and prog.width is None
                and self.device.type in SPARSE_CSR_DEVICES)
        sink = _Sink(prog, self.num_nodes, self.device, spare=not spmv)
        scanned = 0
        for k, (pull_kind, push_kind) in enumerate(self._passes()):
            if spmv:  # every vertex sends its value: the sums are one matrix-vector product
                mat, has_in = self._pull_matrix(pull_kind)
                sink.acc += mat @ x.double()
                sink.received |= has_in
                scanned += mat.values().numel()
                sink.sent += mat.values().numel()
                continue
            keep = None
            if pull:  # every in-edge read; those of senders off the frontier masked
                _, idx, w, rows = self.adjacency(pull_kind)
                src, dst = idx, rows
                if not all_active:
                    keep = active[src]
            else:
                src, dst, w = self._push_edges(push_kind, frontier, frontier_edges[k])
            scanned += src.numel()
            if accept is not None:
                keep = accept[dst] if keep is None else keep & accept[dst]
            sink.send(x, src, dst, w, keep)
        res = sink.result(direction)
        res.edges_scanned, res.messages_sent = scanned, sink.messages_sent()
        res.bytes_h2d = self.bytes_h2d - h2d0
        return res
