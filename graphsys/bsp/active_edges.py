"""Active-edge supersteps out of core: where a superstep's senders are few, only their
edges are read, from the edge set's stored adjacency index, instead of every bucket of
their source partitions (Subway's transfer of the active subgraph [1]_); where the targets
that still take messages are few (a BFS's unreached vertices, late in the search), only
their in-edges (a bottom-up pass, as a direction-optimizing BFS [2]_ makes in memory).

A frontier superstep of a :class:`~graphsys.bsp.stream.StreamEdges` run streams every
bucket whose source partition holds a sender, and drops the edges of the others as it
reads them: a BFS level of a few hundred vertices reads, and on CUDA copies, the whole edge
set. With the graph's ``csr`` index (forward messages) and ``csc`` index (reverse ones;
``graphsys index GRAPH --csr --csc``) the senders' rows are found by their offsets and
gathered on the host by one parallel kernel (:func:`gather_rows`), then combined as a
streamed batch is: on the numba path by the same stream kernel, on the torch path after one
copy of the gathered rows to the device (their targets, weights, and each sender's id and
edge count, expanded there). A program with forward messages whose ``accepts`` names the
targets that may still take them (BFS's) may instead have those targets' ``csc`` rows
gathered, each in-edge's message kept where its source is on the frontier: the same
combined messages at every accepted target, the only ones the engine delivers.

:func:`edge_phase` takes the cheaper of the two passes when it reads (and moves) at most
``1 / RATIO`` of the bytes the streamed pass would (:func:`choose`): the gathered edges at 4
bytes an edge (8 with weights) and 16 bytes a row, against the batches the stream would
read (on the torch path, those not kept on the device). The numba path combines the
gathered edges on one thread where the stream shares its tasks among ``threads``, so its
side is counted that many times. The combined messages are those of the stream for
order-free combiners (``min``, ``max``), the only ones it serves: a sum would round in
another order.

References
----------
.. [1] A. H. Nodehi Sabet, Z. Zhao, R. Gupta. "Subway: Minimizing Data Transfer during
   Out-of-GPU-Memory Graph Processing." EuroSys 2020.
.. [2] S. Beamer, K. Asanović, D. Patterson. "Direction-Optimizing Breadth-First Search."
   SC 2012.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numba
import numpy as np

from graphsys.errors import FormatError
from graphsys.kernels.arrays import read_only
from graphsys.storage import csr

if TYPE_CHECKING:
    import torch

#: Whether a frontier superstep out of core may read only its senders' edges, or its
#: accepting targets' (the switch that benchmarks and ``gpu_check`` turn off to set the
#: stream beside it)
ACTIVE_EDGES = True
#: The active-edge pass is taken when its bytes, times this, are at most the streamed
#: pass's: a row gathered by its offsets is a random read, a bucket a sequential one
RATIO = 4
#: Bytes counted for each sender: its two offsets and, on the torch path, its id and count
SENDER_BYTES = 16
#: Index kind of each orientation: forward messages read the out-rows, reverse ones the
#: in-rows
KINDS = {False: "csr", True: "csc"}
#: Combiners whose result does not depend on the order messages arrive in
ORDER_FREE = ("min", "max")


@numba.njit(parallel=True, cache=True, nogil=True)
def gather_rows(indptr, indices, weight, rows, lo, starts, n, src, dst, w):
    """Copy the index rows of ``rows`` (owned-local ids; row ``rows[k] + lo``) into
    ``dst`` (their neighbours' global ids) from ``starts[k]`` on, with their weights into
    ``w`` and, when ``src`` is not empty, the sender's local id beside each edge. ``weight``
    and ``w`` empty: no weights. One row per iteration of a parallel loop. Returns how many
    ids lie outside ``[0, n)`` (the index's ids are checked as they are read)."""
    with_src, with_w = src.shape[0] > 0, w.shape[0] > 0
    bad = 0
    for k in numba.prange(rows.shape[0]):
        r = rows[k] + lo
        a = indptr[r]
        o = starts[k]
        for e in range(indptr[r + 1] - a):
            v = indices[a + e]
            if v < 0 or v >= n:
                bad += 1
            dst[o + e] = v
            if with_src:
                src[o + e] = rows[k]
            if with_w:
                w[o + e] = weight[a + e]
    return bad


@numba.njit(cache=True, nogil=True)
def senders_of(active, count):
    """The owned-local ids (int64, ascending) of the ``count`` set entries of ``active``
    (bool): one pass that stops at the last one."""
    out = np.empty(count, np.int64)
    k = 0
    for v in range(active.shape[0]):
        if k == count:
            break
        if active[v]:
            out[k] = v
            k += 1
    return out[:k]


@dataclass
class Gathered:
    """The gathered rows of one index on the host: ``senders`` (the rows, int64
    owned-local ids), ``counts`` (int64: each one's edges), ``src`` (int32: the row of
    each edge, empty unless asked for), ``dst`` (int32 global neighbour ids) and
    ``weight`` (float32, or None)."""

    senders: np.ndarray
    counts: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None

    @property
    def edges(self) -> int:
        return len(self.dst)


class ActiveEdges:
    """The mapped index of one edge set that a pass of one orientation reads (``csr`` for
    forward messages, ``csc`` for reverse ones: :data:`KINDS`), and the gathers over it;
    ``lo`` is the first owned id (the senders are owned-local ids)."""

    def __init__(self, mapped, lo: int, num_nodes: int | None = None, path: str = "index"):
        self.mapped, self.lo, self.path = mapped, lo, path
        self._degrees: np.ndarray | None = None
        self.num_nodes = len(mapped.indptr) - 1 if num_nodes is None else num_nodes

    @classmethod
    def open(cls, graph, es, reverse: bool, lo: int) -> ActiveEdges | None:
        """The orientation's index mapped (its offsets checked, its ids checked as rows
        are gathered: :func:`~graphsys.storage.csr.rows_index`), or None where the path does
        not apply: no such index, one with int64 ids, or a view over several edge sets (its
        index is merged in memory, not stored)."""
        if es.members:
            return None
        found = csr.rows_index(graph, es.name, KINDS[reverse])
        if found is None or found[0].indices.dtype != np.int32:
            return None
        path = str(graph.location.file(csr.index_file(es.name, KINDS[reverse], "indices")))
        return cls(found[0], lo, graph.num_nodes(), path)

    @property
    def degrees(self) -> np.ndarray:
        """Every row's edges (int64 (N,)), made on first use."""
        if self._degrees is None:
            self._degrees = np.diff(self.mapped.indptr)
        return self._degrees

    def counts(self, senders: np.ndarray) -> np.ndarray:
        """Each sender's edges (int64)."""
        rows = senders + self.lo
        return self.mapped.indptr[rows + 1] - self.mapped.indptr[rows]

    def gather(self, senders: np.ndarray, counts: np.ndarray, with_src: bool,
               weights: bool) -> Gathered:
        """The edges of ``senders`` (int64 owned-local ids, ``counts`` their edges)
        (:class:`Gathered`); ``with_src``: the sender beside each edge; ``weights``: the
        stored weights (1 where the edge set has none)."""
        mapped = self.mapped
        m = int(counts.sum())
        starts = np.zeros(len(senders), np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        dst = np.empty(m, np.int32)
        w = np.empty(m if weights else 0, np.float32)
        src = np.empty(m if with_src else 0, np.int32)
        stored = mapped.weight if weights and mapped.weight is not None else None
        bad = gather_rows(*read_only(mapped.indptr, mapped.indices,
                                     stored if stored is not None else np.zeros(0, np.float32),
                                     senders), self.lo, starts, self.num_nodes, src,
                          dst, w if stored is not None else np.zeros(0, np.float32))
        if bad:
            raise FormatError(f"{self.path}: neighbour id out of range [0, "
                              f"{self.num_nodes}) (corrupted)")
        if weights and stored is None:  # an unweighted edge set: every weight is 1
            w[:] = 1.0
        return Gathered(senders, counts, src, dst, w if weights else None)


def words(edges: int, senders: int, weights: bool) -> int:
    """int32 words of one orientation's gathered rows on the bus: targets (and weights),
    then each sender's id and edge count."""
    return edges * (1 + weights) + 2 * senders


def choose(active_edges: int, senders: int, streamed_bytes: int, weights: bool,
           threads: int = 1) -> bool:
    """Whether the active-edge pass should run (see the module docstring): its bytes,
    ``active_edges`` edges of ``senders`` senders, times :data:`RATIO` (and ``threads``,
    the numba path's), within ``streamed_bytes``.

    Examples
    --------
    >>> from graphsys.bsp.active_edges import choose
    >>> choose(1_000, 10, streamed_bytes=8_000_000, weights=False)
    True
    >>> choose(1_000_000, 10_000, streamed_bytes=8_000_000, weights=False)
    False
    """
    cost = read_bytes(active_edges, senders, weights)
    return cost * RATIO * max(1, threads) <= streamed_bytes


def to_device(parts: list[Gathered], device: torch.device, staging) -> list[tuple]:
    """Each orientation's gathered rows as device tensors ``(src int64, dst int64,
    weight float32 or None)``: the sender ids expanded by their counts on the device."""
    import torch

    out = []
    for g in parts:
        dst = staging.send(g.dst)
        w = staging.send(g.weight) if g.weight is not None else None
        ids = staging.send(g.senders.astype(np.int32))
        counts = staging.send(g.counts.astype(np.int32))
        src = torch.repeat_interleave(ids.to(torch.int64), counts, output_size=g.edges)
        out.append((src, dst.to(torch.int64), w))
    return out


class Staging:
    """Host -> device copies of the gathered rows: on CUDA through one page-locked buffer
    kept for the run, each array copied from it with ``non_blocking``; the buffer is reused
    once the previous superstep's copies are done (an event). Elsewhere each array is
    copied as it is. ``moved`` counts the bytes copied to a CUDA device."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self.host: torch.Tensor | None = None
        self.at = 0
        self.done = None
        self.moved = 0

    def begin(self, words_needed: int) -> None:
        """Make room for ``words_needed`` int32 words of this superstep's arrays."""
        if not self.cuda:
            return
        import torch

        from graphsys.bsp.device_stream import host_buffer

        if self.done is not None:
            self.done.synchronize()  # the last superstep's copies have left the buffer
        if self.host is None or len(self.host) < words_needed:
            self.host = host_buffer(max(words_needed, 1 << 16), True)
        self.at = 0
        self.done = torch.cuda.Event()

    def send(self, arr: np.ndarray) -> torch.Tensor:
        """``arr`` (4-byte items) on the device."""
        import torch

        if not self.cuda:  # a copy, as the upload it stands for (counted as one)
            return torch.from_numpy(arr).to(self.device, copy=True)
        n = len(arr)
        view = self.host[self.at:self.at + n]
        view.numpy().view(arr.dtype)[:] = arr
        self.at += n
        self.moved += arr.nbytes
        return view.to(self.device, non_blocking=True).view(
            torch.float32 if arr.dtype == np.float32 else torch.int32)

    def end(self) -> None:
        """Mark this superstep's copies: the buffer is rewritten only after them."""
        if self.cuda:
            self.done.record()


class Passes:
    """One out-of-core run's active-edge passes (``edges``: its
    :class:`~graphsys.bsp.stream.StreamEdges`): the stored index of each orientation,
    opened once a run, and the torch path's :class:`Staging`."""

    def __init__(self, edges):
        self.edges = edges
        self._index: dict[bool, ActiveEdges | None] = {}
        self._staging: Staging | None = None

    def index(self, reverse: bool) -> ActiveEdges | None:
        """The stored index a pass of one orientation reads (``csr`` forward, ``csc``
        reverse); None where the graph has none."""
        if reverse not in self._index:
            e = self.edges
            self._index[reverse] = ActiveEdges.open(e.graph, e.es, reverse, e.lo)
        return self._index[reverse]

    def staging(self) -> Staging:
        """The torch path's copies of the gathered rows (one a run)."""
        if self._staging is None:
            self._staging = Staging(self.edges.device)
        return self._staging

    def edge_phase(self, x, active, act: np.ndarray, num_active: int, accept, tasks):
        """:func:`edge_phase` of this run's superstep; None where :data:`ACTIVE_EDGES` is
        off."""
        if not ACTIVE_EDGES:
            return None
        return edge_phase(self.edges, x, active, act, num_active, accept, tasks)


def edge_phase(edges, x, active, act: np.ndarray, num_active: int, accept, tasks):
    """The edge phase of one frontier superstep of ``edges`` (a
    :class:`~graphsys.bsp.stream.StreamEdges` whose streamed pass would read ``tasks``)
    over gathered index rows (see the module docstring): the senders' rows (the frontier
    ``active``, ``act`` on the host, its ``num_active`` set entries) in the orientations
    the pass reads, or the ``csc`` rows of the targets ``accept`` names; an
    :class:`~graphsys.bsp.provider.EdgeResult` with direction ``active`` (senders' rows)
    or ``active-pull`` (targets' rows). None where it does not apply (a combiner that is
    not order-free, a vector program, raw messages, an index missing) or would not pay
    (:func:`choose`). Each pass's rows are counted only where their own bytes could beat
    the stream and the other pass: an early BFS level never lists its unreached
    vertices."""
    prog = edges.program
    if prog.raw_messages or prog.width is not None or prog.combiner not in ORDER_FREE:
        return None
    weights = bool(prog.uses_weights)
    numba_path = edges.backend == "numba" and prog.builtin
    threads = min(edges.threads, len(tasks)) if numba_path else 1
    streamed = edges.streamed_bytes(tasks, numba_path)
    best = None  # (bytes, direction, [(index, rows, counts)], edges, rows)
    for kind, held, indexes, rows_of, edges_of in _passes(edges, act, num_active, accept,
                                                          tasks):
        bound = best[0] if best is not None else None
        if _beaten(0, held, streamed, weights, threads, bound) or (
                edges_of is not None
                and _beaten(edges_of(), held, streamed, weights, threads, bound)):
            continue
        rows = rows_of()
        lists = [(index, rows, index.counts(rows)) for index in indexes]
        gathered = sum(int(c.sum()) for _, _, c in lists)
        cost = read_bytes(gathered, held, weights)
        if best is None or cost < best[0]:
            best = (cost, kind, lists, gathered, held)
    if best is None or not choose(best[3], best[4], streamed, weights, threads):
        return None
    _, kind, lists, gathered, held = best
    parts = [index.gather(rows, counts, numba_path, weights) for index, rows, counts in lists]
    res, sent, moved = _combine(edges, x, active, act, parts, kind == "active-pull",
                                numba_path, weights)
    res.edges_scanned, res.messages_sent = gathered, sent
    res.bytes_read, res.bytes_h2d = read_bytes(gathered, held, weights), moved
    return res


def _beaten(edges: int, rows: int, streamed: int, weights: bool, threads: int,
            bound: int | None) -> bool:
    """Whether a gather of at least ``edges`` edges from ``rows`` rows loses to the
    stream (:func:`choose`) or costs ``bound`` bytes or more (the pass chosen so far)."""
    return not choose(edges, rows, streamed, weights, threads) or (
        bound is not None and read_bytes(edges, rows, weights) >= bound)


def _passes(edges, act: np.ndarray, num_active: int, accept, tasks) -> list:
    """The gathers :func:`edge_phase` may choose from, cheapest rows first: ``(direction,
    rows, their indexes, a function listing the rows, one counting their edges or None)``
    for the senders' rows in every orientation the pass reads (where each has its index)
    and, for a one-process pass of forward messages with accepted targets, those targets'
    ``csc`` rows (their edges a masked sum of the in-degrees: no list of a BFS's many
    unreached vertices unless the pass is taken)."""
    from graphsys.device import host_array

    orientations = sorted({rev for task in tasks for _, _, rev in task})
    out = []
    push = [edges.active.index(rev) for rev in orientations]
    if all(index is not None for index in push):
        out.append(("active", num_active * len(push), push,
                    lambda: senders_of(act, num_active), None))
    pull = edges.active.index(True) if (
        accept is not None and orientations == [False] and edges.lo == 0
        and edges.hi == edges.num_nodes) else None
    if pull is not None:
        accepted = host_array(accept if isinstance(accept, np.ndarray) else accept.cpu())
        accepted = accepted.view(np.bool_) if accepted.dtype == np.uint8 else accepted
        count = int(np.count_nonzero(accepted))
        out.append(("active-pull", count, [pull], lambda: senders_of(accepted, count),
                    lambda: int(pull.degrees.sum(where=accepted))))
    return sorted(out, key=lambda p: p[1])


def _combine(edges, x, active, act: np.ndarray, parts: list, pulled: bool,
             numba_path: bool, weights: bool) -> tuple:
    """The gathered rows' messages combined as a streamed batch's are: ``(EdgeResult,
    messages sent, bytes copied to the device)``. ``pulled``: each row is a target's, its
    edges' messages kept where their source is on the frontier."""
    from graphsys.bsp import kernels
    from graphsys.bsp.edges import _host_accumulators, _Sink
    from graphsys.bsp.program import COMBINERS, MESSAGES
    from graphsys.bsp.provider import EdgeResult
    from graphsys.device import host_array

    prog, kind = edges.program, "active-pull" if pulled else "active"
    sent = 0
    if numba_path:
        acc, received = _host_accumulators(edges.num_nodes, prog.identity,
                                           host=isinstance(x, np.ndarray))
        xn, an, rn = host_array(x), host_array(acc), host_array(received)
        for g in parts:
            src, dst, w = read_only(g.src, g.dst, g.weight if weights
                                    else np.zeros(0, np.float32))
            if pulled:  # a target's row: the message flows from its in-neighbour
                src, dst = dst, src
            sent += int(kernels.stream(src, dst, w, xn, act, pulled, MESSAGES[prog.message],
                                       COMBINERS[prog.combiner][0], an, rn))
        return EdgeResult(acc, received, None, kind), sent, 0
    staging = edges.active.staging()
    before = staging.moved
    staging.begin(sum(words(g.edges, len(g.senders), weights) for g in parts))
    sink = _Sink(prog, edges.num_nodes, edges.device, spare=True)
    for row, other, w in to_device(parts, edges.device, staging):
        src, dst = (other, row) if pulled else (row, other)
        # only the in-neighbours on the frontier send
        sink.send(x, src, dst, w, active.index_select(0, src) if pulled else None)
    staging.end()
    return sink.result(kind), sink.messages_sent(), staging.moved - before


def read_bytes(edges: int, rows: int, weights: bool) -> int:
    """Bytes a gather of ``edges`` edges from ``rows`` index rows reads: 4 an edge (8 with
    weights) and :data:`SENDER_BYTES` a row."""
    return edges * 4 * (1 + weights) + rows * SENDER_BYTES

