"""The streamed all-active copy/sum pass (PageRank out of core, its batches copied to the
device every superstep) recorded once as a CUDA graph and replayed every superstep after.

Streamed batch by batch, each batch costs the host a run of Python and torch calls: its
copy from the host cache on the side stream and the events that order it against the
compute (:class:`~graphsys.bsp.device_stream.DeviceBuckets`), its split, its gather and its
``index_add_``. Where the host issues them more slowly than the bus moves the batches, the
host's pace, not the bus's, sets the pass's rate. Once every batch the pass reads is kept
on the device or held in the host cache (after its first superstep), the pass's work is
the same every superstep: the same copies from the same page-locked regions into the same
ring slots, the same kernels on the same buffers. :func:`record` runs it once under stream
capture (the copies on the side stream, ordered by the same events) into one graph; each
later superstep copies its ``x`` into the graph's input and replays the graph, one launch
and no work per batch on the host. The first replay is checked against the eager pass of
the same ``x``; a recording that fails or differs leaves the pass eager (one warning).

The devices whose pass is recorded are
:data:`~graphsys.bsp.device_stream.RECORDED_PASS_DEVICES`. Off CUDA (the tests, with that
list switched) the same calls record nothing: a replay runs the pass again into the
recorded outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from graphsys.device import note_launch

if TYPE_CHECKING:
    import torch

#: Largest relative difference between the first replay's sums and the eager pass's (the
#: same sums, added in another order by the atomic ``index_add_``)
CHECK_RTOL = 1e-9

#: Device bytes an edge of the pass may hold in the graph's memory pool, at most: its
#: int32 source and target offsets and its float64 value, where the capture reuses no
#: batch's temporaries for the next
POOL_BYTES_PER_EDGE = 16
#: Share of the device's free memory that pool may take: a pass that could need more is
#: not recorded (a streamed graph is one that does not fit the device)
POOL_SHARE = 0.5

#: The pass recorded: ``body(x)`` runs it on ``x`` and returns its (sums, receivers)
Body = Callable[["torch.Tensor"], tuple["torch.Tensor", "torch.Tensor"]]


class RecordedPass:
    """A recorded pass (made by :func:`record`): :meth:`run` copies ``x`` into its input
    and replays it, returning copies of its sums and receiving targets.

    Attributes
    ----------
    counts : tuple of int
        The pass's ``(edges_scanned, messages_sent, bytes_read, bytes_h2d, moved)``, the
        same every replay (``moved``: the bytes of the batches it copies through the ring,
        :attr:`DeviceBuckets.moved_bytes
        <graphsys.bsp.device_stream.DeviceBuckets.moved_bytes>`, counted off CUDA too).
    tasks : list
        The batches' order it was recorded for (the pass's tasks).
    replays : int
        Replays run by :meth:`run`.
    """

    def __init__(self, replay: Callable[[], None], x: torch.Tensor,
                 out: tuple[torch.Tensor, torch.Tensor], keep: list, counts: tuple,
                 tasks: list):
        self._replay, self.x, self.out = replay, x, out
        #: buffers the graph reads or writes outside its own pool (ring slots, the host
        #: cache), held for as long as it may replay
        self._keep = keep
        self.counts, self.tasks = counts, tasks
        self.replays = 0

    def run(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The pass on ``x``: its sums and receiving targets (new tensors)."""
        self.x.copy_(x)
        self._replay()
        self.replays += 1
        return self.out[0].clone(), self.out[1].clone()


def fits_pool(edges: int, device: torch.device) -> bool:
    """Whether a pass over ``edges`` edges may be recorded on ``device``: its pool's bytes
    at most (:data:`POOL_BYTES_PER_EDGE` an edge) within :data:`POOL_SHARE` of the free
    memory on CUDA; always elsewhere.

    Examples
    --------
    >>> import torch
    >>> fits_pool(10**12, torch.device("cpu"))
    True
    """
    if device.type != "cuda":
        return True
    import torch

    return edges * POOL_BYTES_PER_EDGE <= POOL_SHARE * torch.cuda.mem_get_info(device)[0]


def record(body: Body, x: torch.Tensor, eager: tuple[torch.Tensor, torch.Tensor],
           keep: list, counts: tuple, tasks: list) -> RecordedPass | None:
    """``body`` recorded on an input buffer holding ``x`` (a CUDA graph on CUDA; elsewhere
    ``body`` run again at each replay), replayed once and checked against ``eager``, the
    (sums, receivers) of the eager pass on ``x``: the :class:`RecordedPass`, or None where
    the replay differs. Raises what the recording raises (the caller leaves the pass
    eager)."""
    import torch

    static = x.clone()
    if x.device.type == "cuda":
        graph = torch.cuda.CUDAGraph()
        # thread-local: the staging threads' calls elsewhere do not void the capture
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            out = body(static)
        keep = [*keep, graph]

        def replay() -> None:
            graph.replay()
            note_launch("cuda_graph")
    else:
        out = body(static)

        def replay() -> None:
            for o, n in zip(out, body(static), strict=True):
                o.copy_(n)
    rec = RecordedPass(replay, static, out, keep, counts, tasks)
    sums, received = rec.run(x)
    rec.replays = 0
    same = (torch.equal(received, eager[1])
            and torch.allclose(sums, eager[0], rtol=CHECK_RTOL, atol=0.0))
    return rec if same else None
