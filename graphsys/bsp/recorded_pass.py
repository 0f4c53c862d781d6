"""A streamed torch pass recorded once as a CUDA graph and replayed every superstep it
recurs: PageRank's all-active copy/sum pass out of core, and a frontier program's pass
(BFS, SSSP, WCC) over the same buckets, with its batches copied to the device every
superstep.

Streamed batch by batch, each batch costs the host a run of Python and torch calls: its
copy from the host cache on the side stream and the events that order it against the
compute (:class:`~graphsys.bsp.device_stream.DeviceBuckets`), its split, its gather and its
scatter. Where the host issues them more slowly than the bus moves the batches, the host's
pace, not the bus's, sets the pass's rate. Once every batch a pass reads is kept on the
device or held in the host cache, the pass's work is the same each time it runs over the
same buckets: the same copies from the same page-locked regions into the same ring slots,
the same kernels on the same buffers, only the values in its inputs (the senders' values
and, for a frontier pass, which senders are active) changing. :func:`record` runs it once
under stream capture (the copies on the side stream, ordered by the same events) into one
graph; each later pass over those buckets copies its inputs into the graph's and replays
it: one launch and no work per batch on the host. A frontier's masked senders go to a
spare target rather than being compacted out (:class:`~graphsys.bsp.edges._Sink`), so
nothing in the pass depends on the frontier's size. The first replay is checked against
the eager pass of the same inputs; a recording that fails or differs leaves the pass eager
(one warning).

The devices whose passes are recorded are
:data:`~graphsys.bsp.device_stream.RECORDED_PASS_DEVICES`. Off CUDA (the tests, with that
list switched) the same calls record nothing: a replay runs the pass again into the
recorded outputs.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from graphsys.bsp import device_stream
from graphsys.bsp.provider import EdgeResult
from graphsys.device import note_launch

if TYPE_CHECKING:
    import torch

#: Largest relative difference between the first replay's sums and the eager pass's where
#: they may be added in another order (a sum by the atomic ``index_add_``); a ``min`` or
#: ``max`` must be equal
CHECK_RTOL = 1e-9
#: Device bytes an edge of the pass may hold in the graph's memory pool, at most, where
#: the capture reuses no batch's temporaries for the next, by the pass's kind: an
#: all-active copy/sum pass's int32 offsets and float64 value; a frontier pass's ids
#: widened and offset, its mask, its spare-row targets and its messages
POOL_BYTES_PER_EDGE = {"copy-sum": 16, "frontier": 64}
#: Share of the device's free memory that pool may take: a pass that could need more is
#: not recorded (a streamed graph is one that does not fit the device)
POOL_SHARE = 0.5
#: A frontier pass is recorded the time its key (direction, masking, buckets) runs for the
#: this-many-th time, so that one seen once is not; an all-active copy/sum pass, the same
#: every superstep, after its first
RECORD_AFTER = 2
#: Recorded passes one run holds at most (each graph keeps its own memory pool)
MAX_RECORDED = 8
#: Captures of a pass tried before it stays eager (a capture voided by a call outside the
#: pass is tried again)
CAPTURE_TRIES = 2

#: The pass recorded: ``body(*inputs)`` runs it and returns its output tensors
Body = Callable[..., tuple]


class RecordedPass:
    """A recorded pass (made by :func:`record`): :meth:`run` copies the inputs into its
    own and replays it, returning copies of its outputs.

    Attributes
    ----------
    counts : tuple of int
        The pass's ``(edges_scanned, messages_sent, bytes_read, bytes_h2d, moved)``, the
        same every replay (``messages_sent``: those of unmasked senders; ``moved``: the
        bytes of the batches it copies through the ring, :attr:`DeviceBuckets.moved_bytes
        <graphsys.bsp.device_stream.DeviceBuckets.moved_bytes>`, counted off CUDA too).
    replays : int
        Replays run by :meth:`run`.
    """

    def __init__(self, replay: Callable[[], None], inputs: tuple, out: tuple, keep: list,
                 counts: tuple):
        self._replay, self.inputs, self.out = replay, inputs, out
        #: buffers the graph reads or writes outside its own pool (ring slots, the host
        #: cache), held for as long as it may replay
        self._keep = keep
        self.counts = counts
        self.replays = 0

    def takes(self, *inputs: torch.Tensor) -> bool:
        """Whether ``inputs`` have the recorded inputs' shapes, dtypes and devices (a copy
        into them would convert others in silence)."""
        return len(inputs) == len(self.inputs) and all(
            a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
            for a, b in zip(self.inputs, inputs))

    def run(self, *inputs: torch.Tensor) -> tuple:
        """The pass on ``inputs``: its outputs (new tensors)."""
        for mine, given in zip(self.inputs, inputs, strict=True):
            mine.copy_(given)
        self._replay()
        self.replays += 1
        return tuple(o.clone() for o in self.out)


def fits_pool(edges: int, device: torch.device, kind: str, fixed: int = 0) -> bool:
    """Whether a pass of ``kind`` (a key of :data:`POOL_BYTES_PER_EDGE`) over ``edges``
    edges may be recorded on ``device``: its pool's bytes at most, and ``fixed`` more (its
    inputs and outputs, per vertex), within :data:`POOL_SHARE` of the free memory on CUDA;
    always elsewhere.

    Examples
    --------
    >>> import torch
    >>> fits_pool(10**12, torch.device("cpu"), "frontier")
    True
    """
    if device.type != "cuda":
        return True
    import torch

    need = edges * POOL_BYTES_PER_EDGE[kind] + fixed
    return need <= POOL_SHARE * torch.cuda.mem_get_info(device)[0]


def record(body: Body, inputs: tuple, eager: tuple, keep: list, counts: tuple,
           exact: bool = False) -> RecordedPass | None:
    """``body`` recorded on input buffers holding ``inputs`` (a CUDA graph on CUDA;
    elsewhere ``body`` run again at each replay), replayed once and checked against
    ``eager``, the outputs of the eager pass on ``inputs`` (boolean ones and, with
    ``exact``, all of them equal; the others within :data:`CHECK_RTOL`): the
    :class:`RecordedPass`, or None where the replay differs. Raises what the recording
    raises (the caller leaves the pass eager)."""
    import torch

    static = tuple(t.clone() for t in inputs)
    if inputs[0].device.type == "cuda":
        graph, out = _capture(body, static)
        keep = [*keep, graph]

        def replay() -> None:
            graph.replay()
            note_launch("cuda_graph")
    else:
        out = body(*static)

        def replay() -> None:
            for o, n in zip(out, body(*static), strict=True):
                o.copy_(n)
    rec = RecordedPass(replay, static, out, keep, counts)
    got = rec.run(*inputs)
    rec.replays = 0
    same = len(got) == len(eager) and all(
        torch.equal(a, b) if exact or a.dtype == torch.bool or not a.is_floating_point()
        else torch.allclose(a, b, rtol=CHECK_RTOL, atol=0.0) for a, b in zip(got, eager))
    return rec if same else None


def _capture(body: Body, static: tuple) -> tuple:
    """``body(*static)`` captured into a new CUDA graph: ``(graph, outputs)``. Thread-local,
    so that the staging threads' calls elsewhere do not void it, and with Python's
    collector paused, so that no object of an earlier run held by a reference cycle (a
    graph, an event, a pinned block) is freed inside it, a call a capture forbids."""
    import torch

    enabled = gc.isenabled()
    gc.disable()  # (no collection first: what it would free is freed after the capture)
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            out = body(*static)
        return graph, out
    finally:
        if enabled:
            gc.enable()


def outputs(sink) -> tuple:
    """A torch pass's results on the device, as a recorded pass returns them: the sums
    (a combining sink's with its spare row) and receiving targets, and the count of
    masked sends where the sink has one (:class:`~graphsys.bsp.edges._Sink`)."""
    masked = getattr(sink, "_sent_masked", None)
    return (sink.acc, sink.received) if masked is None else (sink.acc, sink.received,
                                                               masked)


class Recordings:
    """The recorded passes of one out-of-core torch run (a
    :class:`~graphsys.bsp.stream.StreamEdges`, ``edges``, holds one): each pass's key, when
    it is due to be recorded, its recording and checks, and its replays as edge phases.

    Attributes
    ----------
    passes : dict
        By :meth:`key`: the :class:`RecordedPass`, or False where the pass was not
        recorded (its batches read from the files, too large, or its recording failed or
        differed).
    """

    def __init__(self, edges):
        self.edges = edges
        self.passes: dict[tuple, RecordedPass | bool] = {}
        #: eager passes run so far, per key
        self.seen: dict[tuple, int] = {}

    @property
    def replays(self) -> int:
        """Replays run so far, all passes together."""
        return sum(r.replays for r in self.passes.values() if r)

    def key(self, copy_sum: bool, use_active: bool, tasks) -> tuple | None:
        """The key of a torch pass (its kind, direction, whether senders are masked, and
        its batches' buckets), or None where it is not recorded: off
        :data:`~graphsys.bsp.device_stream.RECORDED_PASS_DEVICES`, or messages of one's
        own (a function, raw messages) or rows of a vector program."""
        prog = self.edges.program
        if self.edges.device.type not in device_stream.RECORDED_PASS_DEVICES:
            return None
        order = tuple(tuple(task) for task in tasks)
        if copy_sum:
            return ("copy-sum", prog.direction, order)
        if prog.raw_messages or not isinstance(prog.message, str) or prog.width is not None:
            return None
        return ("frontier", prog.direction, use_active, order)

    def lookup(self, key: tuple | None, inputs: tuple) -> RecordedPass | None:
        """The recorded pass of ``key`` where it takes ``inputs``
        (:meth:`RecordedPass.takes`), else None."""
        rec = self.passes.get(key) if key is not None else None
        return rec if rec and rec.takes(*inputs) else None

    def due(self, key: tuple | None, merged: bool) -> bool:
        """Whether the eager pass of ``key`` just run is to be recorded now: an all-active
        copy/sum pass after its first superstep (each superstep's is the same), unless it
        was ``merged``; another the :data:`RECORD_AFTER`-th time its key recurs, while the
        run holds fewer than :data:`MAX_RECORDED`."""
        if key is None or key in self.passes:
            return False
        if key[0] == "copy-sum":
            return not merged
        self.seen[key] = self.seen.get(key, 0) + 1
        held = sum(1 for r in self.passes.values() if r)
        return self.seen[key] >= RECORD_AFTER and held < MAX_RECORDED

    def record(self, key: tuple, body: Body, inputs: tuple, eager: tuple, batches: list,
               counts: tuple, streamed: int, exact: bool) -> None:
        """Record the pass of ``key`` (:func:`record`: ``body`` on ``inputs``, checked
        against ``eager``, its outputs) where every one of its ``batches`` (``(i, j,
        batch)``) is on the device or in the host cache and its pool fits
        (:func:`fits_pool`); ``counts``: its ``(edges_scanned, messages_sent of unmasked
        senders, bytes_read)``, ``streamed`` the bytes it copies. Else, or where the
        recording fails or differs (one warning), the pass stays eager."""
        edges = self.edges
        buckets, device = edges.device_buckets, edges.device
        vertex_bytes = 2 * sum(t.numel() * t.element_size() for t in (*inputs, *eager))
        if (not batches or not all(hasattr(t, "element_size") for t in inputs)
                or any(buckets.reads_files((i, j, eb.start)) for i, j, eb in batches)
                or not fits_pool(sum(len(eb) for *_, eb in batches), device, key[0],
                                 vertex_bytes)):
            self.passes[key] = False
            return
        counts = (*counts, streamed if device.type != "cpu" else 0, streamed)
        keep = [s.device for s in buckets.slots] + [buckets.cache]
        moved = buckets.moved_bytes
        try:
            for _ in range(CAPTURE_TRIES):  # a capture voided from outside: once more
                buckets.fresh_ring()
                try:
                    rec = record(body, inputs, eager, keep, counts, exact=exact)
                    why = None if rec else "its first replay's sums differ from the pass's"
                    break
                except (RuntimeError, TypeError) as exc:
                    rec, why = None, f"recording it failed ({str(exc).splitlines()[0][:200]})"
        finally:
            buckets.fresh_ring()
            buckets.moved_bytes = moved
        if why is not None:
            warnings.warn(f"the streamed pass runs batch by batch, not as one CUDA graph: "
                          f"{why}", RuntimeWarning, 3)
        self.passes[key] = rec or False

    def replay(self, rec: RecordedPass, inputs: tuple) -> EdgeResult:
        """A recorded pass's edge phase on ``inputs``: its outputs, and the counters of the
        pass it replays (its streamed batches' bytes copied again; the masked senders'
        messages read once, as the eager pass reads them)."""
        buckets, n = self.edges.device_buckets, self.edges.num_nodes
        before = buckets.moved_bytes  # (off CUDA a replay runs the pass, which counts)
        outs = rec.run(*inputs)
        buckets.forget_ring()  # an eager pass's next copies wait for the replay
        res = EdgeResult(outs[0][:n], outs[1][:n], None, "stream")
        scanned, sent, nbytes, h2d, moved = rec.counts
        if len(outs) > 2:  # the masked sends, counted on the device
            sent += int(outs[2])
        res.edges_scanned, res.messages_sent, res.bytes_read, res.bytes_h2d = (
            scanned, sent, nbytes, h2d)
        buckets.moved_bytes = before + moved
        return res
