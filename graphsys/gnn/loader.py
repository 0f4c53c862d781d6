"""Minibatch loading: :class:`NodeLoader` (seed nodes, links or events -> sampled blocks,
features, labels) over the internal producer-consumer pipeline :class:`PrefetchLoader`.

The numba sampling kernels release the GIL, so worker threads sample in parallel with the
training step. Inside the workers the samplers run their single-threaded (``nogil``)
kernels (:func:`graphsys.sampling._util.serial_kernels`): the workers are the parallelism,
and numba's OpenMP threads, left spin-waiting after each parallel call, would take the
cores of torch's intra-op threads.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np
import torch

from graphsys.device import device_key, note_launch, resolve_device
from graphsys.errors import GraphsysError, ParameterError, check_count, check_real
from graphsys.gnn.dropout import feature_dropout
from graphsys.sampling._util import as_seed_array, derive_seed, seed_entropy, serial_kernels
from graphsys.sampling.base import Sampler, SamplerInput, refuse_times
from graphsys.sampling.block import Block, MiniBatch
from graphsys.sampling.device import DeviceNeighborSampler, as_int64, mix64
from graphsys.sampling.features import feature_rows
from graphsys.sampling.negative import UniformNegativeSampler
from graphsys.sampling.neighbor import NeighborSampler
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.partitioned_rows import PartitionedRows
from graphsys.trace import trace_range, traced

#: Whether a CUDA loader's workers enqueue their device work on a side stream (see
#: :class:`PrefetchLoader`); off, they share the consumer's stream
SIDE_STREAM = True


class PrefetchLoader:
    """Iterate ``make_batch(i)`` for ``i`` in ``range(num_batches)``, in order.

    ``make_batch``: ``i -> MiniBatch``, deterministic in ``i``; ``num_workers`` sampling
    threads (0 = sample in the consuming thread); at most ``prefetch`` batches sampled
    ahead of the consumer (the bound of the producer-consumer queue); batches are moved to
    ``device`` (``non_blocking`` from pinned memory on CUDA).

    On CUDA the workers enqueue their device work (a device sampler's draw, the features'
    gather) on a side stream of the pass, so that it runs beside the training step's
    kernels and a worker's host read waits for its own work only, not for the step's. The
    consumer's stream waits for an event recorded after each batch, and every tensor of
    the batch is marked as used by that stream (``record_stream``), so that its memory is
    not handed to a later batch before the step has read it. What the workers read on the
    device (a feature table) must not be written by the steps.
    """

    def __init__(self, num_batches: int, make_batch: Callable[[int], MiniBatch], *,
                 num_workers: int = 1, prefetch: int = 2, device: str | torch.device = "cpu"):
        if num_workers < 0 or prefetch < 1:
            raise GraphsysError(f"num_workers must be >= 0 and prefetch >= 1, got "
                                f"{num_workers} and {prefetch}")
        self.num_batches, self.make_batch = num_batches, make_batch
        self.num_workers, self.prefetch = num_workers, prefetch
        self.device = torch.device(device)

    def __len__(self) -> int:
        return self.num_batches

    @traced("gnn.sample")
    def _produce(self, i: int) -> MiniBatch:
        batch = self.make_batch(i)
        if self.device.type != "cuda":
            return batch
        # host tensors are pinned for a non-blocking copy; those made on a device stay
        return batch._map(lambda t: t.pin_memory() if t.device.type == "cpu" else t)

    def _produce_on(self, side, i: int) -> tuple[MiniBatch, object]:
        """A worker's batch ``i``, its device work enqueued on the stream ``side`` (None:
        the thread's current stream), and the event after it (None without ``side``)."""
        if side is None:
            return self._produce(i), None
        with torch.cuda.stream(side):
            batch = self._produce(i)
            done = torch.cuda.Event()
            done.record(side)
        return batch, done

    def __iter__(self) -> Iterator[MiniBatch]:
        """Batches in order; while tracing, the consumer's work on each batch (between two
        ``next`` calls) is the range ``gnn.step``, its wait for a sampled batch
        ``gnn.wait`` and the copy to the device ``gnn.load``."""
        if self.num_workers == 0:
            for i in range(self.num_batches):
                batch = self._to_device(self._produce(i))
                with trace_range("gnn.step"):
                    yield batch
            return
        side = (torch.cuda.Stream(self.device) if self.device.type == "cuda" and SIDE_STREAM
                else None)
        with ThreadPoolExecutor(self.num_workers, thread_name_prefix="graphsys-sampler") as ex:
            pending: deque = deque()
            nxt = 0
            try:
                while nxt < self.num_batches and len(pending) < self.prefetch:
                    pending.append(ex.submit(self._produce_on, side, nxt))
                    nxt += 1
                while pending:
                    with trace_range("gnn.wait"):
                        batch, done = pending.popleft().result()
                    if nxt < self.num_batches:
                        pending.append(ex.submit(self._produce_on, side, nxt))
                        nxt += 1
                    batch = self._to_device(batch, done)
                    with trace_range("gnn.step"):
                        yield batch
            finally:
                for f in pending:
                    f.cancel()

    @traced("gnn.load")
    def _to_device(self, batch: MiniBatch, done=None) -> MiniBatch:
        """``batch`` on the device; ``done``: the event after a worker's side-stream work
        on it, which the current stream waits for before it reads the batch."""
        if done is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(done)
            batch._map(lambda t: _used_by(t, stream))
        return batch.to(self.device, non_blocking=self.device.type == "cuda")


def _used_by(t: torch.Tensor, stream) -> torch.Tensor:
    """Mark a device tensor made on a worker's side stream as read by ``stream`` (its
    memory is not reused before ``stream`` has passed this point); returns ``t``."""
    if t.device.type == "cuda":
        t.record_stream(stream)
    return t


def on_device(sampler: Sampler, device: torch.device, device_sampling: bool | None
              ) -> Sampler:
    """The sampler a loader on ``device`` draws from: ``sampler``, or for
    ``device_sampling`` (None: on CUDA) a NeighborSampler's
    :class:`~graphsys.sampling.device.DeviceNeighborSampler` on ``device``, made once per
    sampler and device (its CSR copied there once), replaying CUDA graphs where it can."""
    if device_sampling is None:
        device_sampling = device.type == "cuda" and type(sampler) is NeighborSampler
    if not device_sampling or isinstance(sampler, DeviceNeighborSampler):
        return sampler
    if type(sampler) is not NeighborSampler:
        raise ParameterError("device_sampling", f"samples a NeighborSampler's blocks on the "
                                                f"device, not a {type(sampler).__name__}'s")
    made = sampler.__dict__.setdefault("_device_copies", {})
    key = device_key(device)  # "cuda" and "cuda:0": one GPU, one copy of the CSR
    if key not in made:
        made[key] = DeviceNeighborSampler(sampler, device=key, cuda_graphs=None)
    return made[key]


def pair_seeds(heads, tails, neg, times=None, query_time=None):
    """The seeds of a batch of pairs: ``(seeds, seed times, extra)``.

    Without ``times``: the distinct nodes among ``heads`` (B,), ``tails`` (B,) and ``neg``
    (B, K), in ascending id order, and no times; with ``times`` (B,), one seed per end,
    heads, then tails, then negatives row by row, each at its pair's time (an event each,
    as a temporal sampler takes them); with ``times`` and a ``query_time``, the distinct
    nodes again, each once at ``query_time`` (a stream's batch, read as of its first
    event). ``extra`` maps each end to its seed (``head``, ``pos`` (B,), ``neg`` (B, K)),
    plus ``time`` (B,), the pairs' own times, with ``times``.

    Examples
    --------
    >>> from graphsys.gnn.loader import pair_seeds
    >>> seeds, _, extra = pair_seeds([5, 2], [2, 9], [[9], [1]])
    >>> seeds.tolist(), extra["head"].tolist(), extra["pos"].tolist(), extra["neg"].tolist()
    ([1, 2, 5, 9], [2, 1], [1, 3], [[3], [0]])
    >>> seeds, times, _ = pair_seeds([5, 2], [2, 9], [[9], [1]], times=[30, 40])
    >>> seeds.tolist(), times.tolist()
    ([5, 2, 2, 9, 9, 1], [30, 40, 30, 40, 30, 40])
    >>> seeds, times, extra = pair_seeds([5, 2], [2, 9], [[9], [1]], [30, 40], query_time=30)
    >>> seeds.tolist(), times.tolist(), extra["time"].tolist()
    ([1, 2, 5, 9], [30, 30, 30, 30], [30, 40])
    """
    heads, tails, neg = (t.numpy() if torch.is_tensor(t) else np.asarray(t)
                         for t in (heads, tails, neg))
    rows = np.concatenate([heads, tails, neg.ravel()])
    b = len(heads)
    extra = {} if times is None else {"time": torch.as_tensor(times)}
    if times is None or query_time is not None:
        rows, inv = np.unique(rows, return_inverse=True)
        row_times = (None if times is None else
                     extra["time"].new_full((len(rows),),
                                                  torch.as_tensor(query_time).item()))
    else:
        inv = np.arange(len(rows))
        times = extra["time"]
        row_times = torch.cat([times, times, times.repeat_interleave(neg.shape[1])])
    extra.update(head=torch.from_numpy(inv[:b]), pos=torch.from_numpy(inv[b:2 * b]),
                 neg=torch.from_numpy(inv[2 * b:].reshape(b, -1)))
    return torch.from_numpy(rows), row_times, extra


def resident_table(column, device: torch.device):
    """``column`` (features or labels: a tensor, array or row source of N rows) copied to
    ``device`` when it takes at most half of the device's free memory, else as given."""
    if column is None or (torch.is_tensor(column) and column.device == device):
        return column
    n = column.shape[0]
    width = column.shape[1] if len(column.shape) > 1 else 1
    item = 4 if not torch.is_tensor(column) else column.element_size()
    free, _ = torch.cuda.mem_get_info(device)
    if n * width * item > free // 2:
        return column
    if torch.is_tensor(column):
        return column.to(device)
    if isinstance(column, np.ndarray) and column.dtype == np.float32:
        return torch.from_numpy(column).to(device)
    return NodeLoader._gather(column, torch.arange(n)).to(device)


def device_feature_dropout(table: torch.Tensor, ids: torch.Tensor, p: float, key: int
                           ) -> torch.Tensor:
    """:func:`~graphsys.gnn.dropout.feature_dropout` in torch ops on ``table``'s device:
    rows ``ids`` of ``table`` (N, F), element ``(r, c)`` kept (and scaled by ``1 / (1 -
    p)``) by the same half of the same SplitMix64 draw of node ``ids[r]``'s column pair, so
    the rows equal the CPU gather's bit for bit; a float16 table is masked in float32. The
    mask is 16 torch operators (:func:`_keep_operators`), or on CUDA one kernel compiled
    at run time by torch's jiterator (:data:`_KEEP_CODE`), used once its flags equal the
    operators' on a check batch: the gather, the mask and two products.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.gnn.dropout import feature_dropout
    >>> from graphsys.gnn.loader import device_feature_dropout
    >>> table = np.random.default_rng(0).random((20, 5), np.float32)
    >>> ids = torch.tensor([3, 0, 17])
    >>> torch.equal(device_feature_dropout(torch.from_numpy(table), ids, 0.5, 42),
    ...             feature_dropout(table, ids, 0.5, 42))
    True
    """
    x = table.detach().index_select(0, ids)
    if p == 0:
        return x
    if p >= 1:
        return torch.zeros_like(x)
    thr = min(round(p * 2.0 ** 32), 2 ** 32 - 1)
    fused = _keep_kernel(ids.device)
    if fused is not None:       # one kernel (CUDA), checked against the operators
        note_launch("jiterator")
        keep = fused(ids.to(torch.int64).unsqueeze(1), _columns(x.shape[1], ids.device),
                     key=as_int64(key), thr=thr, pairs=(x.shape[1] + 1) // 2)
    else:
        keep = _keep_operators(ids, x.shape[1], key, thr)
    work = x if x.dtype in (torch.float32, torch.float64) else x.float()
    return (work * keep).mul_(1.0 / (1.0 - p)).to(x.dtype)


def _keep_operators(ids: torch.Tensor, width: int, key: int, thr: int) -> torch.Tensor:
    """bool (len(ids), width): the kept elements of :func:`device_feature_dropout`'s rows
    in torch operators (16): node ``r``'s column pair ``c`` draws the word ``mix64(key + r
    * pairs * golden + c * golden)`` (wrapping), whose low then high 32-bit half (an int32
    view: little-endian) keeps column ``2c`` then ``2c + 1`` when at least ``thr``
    (compared as unsigned by flipping the sign bits)."""
    pairs = (width + 1) // 2
    z = mix64(torch.add(_pair_steps(pairs, ids.device), ids.to(torch.int64).unsqueeze(1),
                        alpha=as_int64(pairs * _GOLDEN)) + as_int64(key))
    return (z.view(torch.int32)[:, :width] ^ -2**31) >= thr - 2**31


_GOLDEN = 0x9E3779B97F4A7C15
_KEEP_KERNELS: dict[str, object] = {}

#: :func:`_keep_operators` as one CUDA kernel (torch's jiterator) over (row, column): the
#: kept flag (1 or 0) of column ``col`` of node ``id``'s row, the same bits.
_KEEP_CODE = """template <typename T> T gs_feature_keep(T id, T col, T key, T thr, T pairs) {
  const unsigned long long G = 0x9E3779B97F4A7C15ULL;
  const unsigned long long M1 = 0xBF58476D1CE4E5B9ULL, M2 = 0x94D049BB133111EBULL;
  const unsigned long long c = (unsigned long long) col;
  unsigned long long z = (unsigned long long) key
      + (unsigned long long) id * ((unsigned long long) pairs * G) + (c >> 1) * G;
  z = (z ^ (z >> 30)) * M1; z = (z ^ (z >> 27)) * M2; z = z ^ (z >> 31);
  const unsigned long long half = (c & 1ULL) ? (z >> 32) : (z & 0xFFFFFFFFULL);
  return half >= (unsigned long long) thr ? 1 : 0;
}"""


@cache
def _pair_steps(pairs: int, device: torch.device) -> torch.Tensor:
    """int64 ``c * golden`` for the column pairs ``c < pairs`` on ``device`` (made once)."""
    return torch.arange(pairs, dtype=torch.int64, device=device) * as_int64(_GOLDEN)


@cache
def _columns(width: int, device: torch.device) -> torch.Tensor:
    """int64 (1, width) ``0..width-1`` on ``device`` (made once)."""
    return torch.arange(width, dtype=torch.int64, device=device).unsqueeze(0)


def _keep_kernel(device: torch.device):
    """The jiterator kernel of :data:`_KEEP_CODE` on ``device``, made once: None off CUDA,
    where torch cannot compile it, or where its flags differ from
    :func:`_keep_operators`' on a check batch (large ids and keys, odd and even widths)."""
    if device.type != "cuda":
        return None
    if str(device) not in _KEEP_KERNELS:
        kernel = None
        try:
            from torch.cuda.jiterator import _create_jit_fn

            fn = _create_jit_fn(_KEEP_CODE, key=0, thr=0, pairs=1)
            gen = torch.Generator().manual_seed(7)
            ids = torch.randint(0, 2**40, (301,), generator=gen).to(device)
            key = 2**64 - 12345
            same = True
            for width, thr in ((7, 2**31 + 77), (8, 1717986918), (1, 4294967295)):
                got = fn(ids.unsqueeze(1), _columns(width, device), key=as_int64(key),
                         thr=thr, pairs=(width + 1) // 2)
                same &= torch.equal(got.bool(), _keep_operators(ids, width, key, thr))
            kernel = fn if same else None
        except (RuntimeError, ImportError, AssertionError):
            kernel = None
        _KEEP_KERNELS[str(device)] = kernel
    return _KEEP_KERNELS[str(device)]


class RowBuffers:
    """Reused float32 arrays for the feature rows a loader's workers gather.

    A fresh array of more than glibc's mapping threshold (32 MiB at most) is mapped from
    the kernel on every allocation and faulted in page by page as the gather first writes
    it, which costs as much as the gather itself; a batch's rows (e.g. 150k x 100 floats)
    are that large. :meth:`take` hands out a view of a kept array that nothing else refers
    to any more (every tensor or view made from it freed: a batch kept by the caller is
    never overwritten), else a new array, which it keeps while it holds fewer than
    ``keep``.
    """

    def __init__(self, keep: int):
        self.keep = keep
        self._arrays: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, rows: int, width: int) -> np.ndarray:
        """A C-contiguous float32 (rows, width) array, contents undefined."""
        with self._lock:
            for k in range(len(self._arrays)):
                # referenced by the list and getrefcount's argument only: free
                if sys.getrefcount(self._arrays[k]) == 2 and self._arrays[k].shape[1] == width:
                    if self._arrays[k].shape[0] < rows:   # too small: replaced by a larger one
                        self._arrays[k] = self._new(rows, width)
                    return self._arrays[k][:rows]
            arr = self._new(rows, width)
            if len(self._arrays) < self.keep:
                self._arrays.append(arr)
            return arr[:rows]

    @staticmethod
    def _new(rows: int, width: int) -> np.ndarray:
        return np.empty((rows + rows // 8, width), np.float32)   # room for larger batches


class NodeLoader:
    """Minibatches of seed nodes, links or events with their sampled blocks, input
    features and labels.

    graphsys's counterpart of PyG's ``NeighborLoader`` and DGL's ``DataLoader``: each pass
    (epoch) cuts ``seeds`` into batches of ``batch_size``, reshuffled from ``seed`` and the
    epoch number, samples each batch's blocks with ``sampler`` and gathers the input
    features and the labels, in ``num_workers`` background threads that stay at most
    ``prefetch`` batches ahead of the training step. Batch ``i`` of epoch ``e`` depends only
    on ``(seed, e, i)``: the same whatever ``num_workers``.

    Parameters
    ----------
    graph : Graph, str or None
        The graph (or its directory) whose node columns ``features`` and ``labels`` name;
        None when neither names a column.
    sampler : Sampler or None
        Draws the blocks of a batch (:class:`~graphsys.sampling.NeighborSampler`,
        :class:`~graphsys.sampling.PinSAGESampler`, or any
        :class:`~graphsys.sampling.Sampler`); batch ``i`` of epoch ``e`` is sampled with
        ``rng_seed = derive_seed(seed, e, i)``. None, with ``links`` and ``graph`` (its
        node count) and no ``features``: batches of links without blocks (a model that
        reads no neighbours).
    seeds : int tensor, array or sequence, or bool mask
        The nodes to batch (unique ids of the sampler's node type), or a boolean mask over
        them; None with ``links``.
    links : int tensor, array or sequence (P, 2), optional
        Link batches instead of node batches (PyG's ``LinkNeighborLoader``): the ``(head,
        tail)`` pairs to batch, ``batch_size`` pairs a batch; a batch's seeds are the
        pairs' ends and their negatives (:func:`pair_seeds`), ``extra`` maps them, and
        ``extra["link"]`` (B,) holds the batch's positions in ``links``.
    negatives : int, callable or int array (P, C), optional
        With ``links``, each pair's negative tails, for batch ``i`` of epoch ``e`` from
        ``rng_seed = derive_seed(seed, e, i, 1)``: that many uniform nodes (default 0), or
        those of a negative sampler ``(heads, rng_seed) -> (B, K)`` ids; or fixed ones,
        row ``p`` for link ``p`` (the candidates of an evaluation).
    either_end : bool, optional
        With ``links``: unordered pairs, whose ends swap with probability 1/2 in each batch
        (from ``derive_seed(seed, e, i, 2)``; default False).
    transform : callable, optional
        ``MiniBatch -> MiniBatch``, run by the worker on each sampled batch before its
        features are gathered (its input nodes must stay).
    times : tensor, array or sequence, optional
        A time for each seed or link (with a mask: each selected node, in id order), for a
        temporal sampler (:class:`~graphsys.sampling.TemporalNeighborSampler`; any other is
        refused in one line): the seeds are then events ``(node, time)``, a node may
        recur, each batch is sampled from a :class:`~graphsys.sampling.SamplerInput` of
        its seeds and their times, and ``batch.extra["time"]`` holds the times.
    batch_time : bool, optional
        With ``links`` and ``times``: a batch's seeds are its distinct nodes, each sampled
        once at the batch's earliest link's time (a time-ordered stream's batch, read as
        of its first event: :func:`pair_seeds`' ``query_time``; shuffled or not, no link
        sees an edge at or after its own time); default False: each end at its own link's
        time.
    batch_size : int, optional
        Seeds per batch (default 512); the last batch of an epoch may be smaller.
    shuffle : bool, optional
        Reshuffle the seeds every epoch (default True); else batches follow ``seeds``'
        order (the samples still differ by epoch).
    seed : int, optional
        Seed of the shuffles and of the samples, an integer in [-2**63, 2**64) (default 0).
    num_workers : int, optional
        Sampling threads (default 1; 0 samples in the iterating thread).
    prefetch : int, optional
        Batches sampled ahead of the consumer, at most (default 2).
    features : str, tensor, array or None, optional
        Input features: a node column of ``graph`` (default ``"feat"``; read through a
        memory map, in a file of its own or in the node table), an (N, F) tensor/array or
        :class:`~graphsys.storage.partitioned_rows.PartitionedRows`, or a row source whose
        ``rows(ids)`` gathers float rows; row ``v`` for node ``v``. Each batch's ``x`` holds
        the rows of ``blocks[0].src_nodes``, gathered by the workers. None: ``x`` is None.
    labels : str, tensor, array or None, optional
        Node labels: a node column of ``graph`` (default ``"label"``) or an (N,)
        tensor/array; each batch's ``y`` holds the seeds' labels. None: ``y`` is None.
    device : str or torch.device, optional
        Where the batches are delivered: ``"cpu"`` (default), ``"cuda[:k]"`` (from pinned
        memory) or ``"auto"`` (:func:`~graphsys.device.resolve_device`).
    drop_last : bool, optional
        Drop an epoch's last, incomplete batch (default False).
    rank, world_size : int, optional
        Data-parallel training (default 0 and 1): every rank cuts the same shuffled epoch
        into the same global batches of ``batch_size`` seeds and takes its contiguous share
        of each (rank ``r`` of ``W`` takes positions ``[r b // W, (r+1) b // W)`` of a batch
        of ``b``), so the ranks' batches are disjoint, cover the epoch, and number
        ``len(loader)`` on every rank (as PyTorch's ``DistributedSampler`` with a
        per-batch split). Every rank samples its share with the global batch's
        ``rng_seed = derive_seed(seed, e, i)``, and the built-in samplers key their random
        streams by node id, so a rank's blocks hold exactly the neighbourhoods its seeds
        have in the blocks of the whole global batch.
    device_sampling : bool, optional
        Sample on ``device`` (:class:`~graphsys.sampling.device.DeviceNeighborSampler`,
        the same blocks as the :class:`~graphsys.sampling.NeighborSampler` given, drawn by
        torch ops where its CSR is copied once): True, False (the given sampler, on the
        host) or None (default): on a CUDA ``device`` when ``sampler`` is a
        NeighborSampler. Sampling on the device, a feature table or label column that
        takes at most half the device's free memory is copied there once and gathered
        there; a larger one is gathered on the host and copied per batch. Each batch is
        then one CUDA graph replay where the sampler allows it (its ``cuda_graphs=None``).
    input_dropout : float, optional
        Dropout probability applied to ``x`` as the worker gathers it (default 0: none), in
        the same pass (:func:`~graphsys.gnn.dropout.feature_dropout`): the input dropout of
        a training loader, for a model that then skips its own
        (``GNN(...)(blocks, x, input_dropout=False)``). Each pass draws one key from
        torch's default generator in the iterating thread (``torch.manual_seed`` fixes the
        masks, whatever ``num_workers``); batch ``i`` uses ``derive_seed(key, i)`` on every
        rank, and a node's mask depends on that and its id only, not on the batch's other
        nodes. Element ``(r, c)`` is zeroed with probability ``input_dropout``, the rest
        scaled by ``1 / (1 - input_dropout)``.

    Yields
    ------
    MiniBatch
        ``seeds`` int64 (B,), ``blocks`` (input layer first), ``x`` float
        (len(blocks[0].src_nodes), F) or None, ``y`` (B,) or None; with ``times``,
        ``extra["time"]`` the seeds' (or links') times; with ``links``, ``extra["head"]``,
        ``["pos"]`` (B,) and ``["neg"]`` (B, K) the positions of the pairs' ends and
        negatives among the seeds.

    Raises
    ------
    ParameterError
        A parameter out of range, repeated seeds, or a named column the graph lacks.

    See Also
    --------
    graphsys.gnn.train : the node task trains on a ``NodeLoader``.

    Notes
    -----
    ``len(loader)`` is the number of batches per epoch. The first pass is epoch 0 and
    every pass advances the epoch by one; :meth:`set_epoch` sets it explicitly (as
    PyTorch's ``DistributedSampler.set_epoch``).

    Examples
    --------
    >>> import tempfile, numpy as np, torch, graphsys
    >>> from graphsys.gnn import NodeLoader
    >>> from graphsys.sampling import NeighborSampler
    >>> rng = np.random.default_rng(0)
    >>> g = graphsys.from_numpy(rng.integers(0, 100, 400), rng.integers(0, 100, 400),
    ...                         tempfile.mkdtemp() + "/g", num_nodes=100, undirected=True,
    ...                         node_columns={"feat": rng.random((100, 8), np.float32),
    ...                                       "label": rng.integers(0, 3, 100)})
    >>> loader = NodeLoader(g, NeighborSampler(g, [5, 5]), np.arange(50), batch_size=16)
    >>> len(loader)
    4
    >>> batch = next(iter(loader))
    >>> batch.seeds.shape, len(batch.blocks), batch.y.shape
    (torch.Size([16]), 2, torch.Size([16]))
    >>> batch.x.shape[0] == len(batch.blocks[0].src_nodes), batch.x.shape[1]
    (True, 8)
    >>> sorted(torch.cat([b.seeds for b in loader]).tolist()) == list(range(50))
    True

    Two ranks of a data-parallel run: as many batches each, disjoint shares of each batch.

    >>> ranks = [NodeLoader(g, NeighborSampler(g, [5, 5]), np.arange(50), batch_size=16,
    ...                     rank=r, world_size=2) for r in (0, 1)]
    >>> [len(r) for r in ranks], [len(b.seeds) for b in ranks[0]], [len(b.seeds) for b in ranks[1]]
    ([4, 4], [8, 8, 8, 1], [8, 8, 8, 1])
    >>> sorted(torch.cat([b.seeds for r in ranks for b in r]).tolist()) == list(range(50))
    True

    Events, on a graph with a ``timestamp`` edge column: node 0 at times 25 and 40, node 1
    at 40, each batch sampled from the edges before its seeds' times.

    >>> import pyarrow as pa
    >>> from graphsys.sampling import TemporalNeighborSampler
    >>> edges = pa.table({"src": [0, 0, 1], "dst": [1, 2, 2], "timestamp": [10, 20, 30]})
    >>> tg = graphsys.from_arrow(edges, tempfile.mkdtemp() + "/t", edge_columns=["timestamp"])
    >>> events = NodeLoader(tg, TemporalNeighborSampler(tg, [5]), [0, 0, 1],
    ...                     times=[25, 40, 40], shuffle=False, features=None, labels=None)
    >>> batch = next(iter(events))
    >>> batch.seeds.tolist(), batch.extra["time"].tolist()
    ([0, 0, 1], [25, 40, 40])
    >>> block = batch.blocks[0]
    >>> block.src_nodes[3:].tolist(), block.edge_times.tolist(), block.edge_dst.tolist()
    ([1, 2, 1, 2, 0, 2], [10, 20, 10, 20, 10, 30], [0, 0, 1, 1, 2, 2])

    Links: two pairs a batch, each with three negative tails; their ends are the seeds.

    >>> pairs = NodeLoader(g, NeighborSampler(g, [5, 5]), None, links=[[0, 1], [2, 3], [4, 5]],
    ...                    negatives=3, batch_size=2, shuffle=False)
    >>> batch = next(iter(pairs))
    >>> batch.seeds[batch.extra["head"]].tolist(), batch.seeds[batch.extra["pos"]].tolist()
    ([0, 2], [1, 3])
    >>> batch.extra["neg"].shape, batch.x.shape[0] == len(batch.blocks[0].src_nodes)
    (torch.Size([2, 3]), True)
    """

    def __init__(self, graph: Graph | str | Path | None, sampler: Sampler | None, seeds=None, *,
                 links=None, negatives=0, either_end: bool = False, transform=None,
                 batch_size: int = 512, shuffle: bool = True, seed: int = 0,
                 num_workers: int = 1, prefetch: int = 2, features="feat", labels="label",
                 device: str | torch.device = "cpu", drop_last: bool = False,
                 rank: int = 0, world_size: int = 1, input_dropout: float = 0.0,
                 device_sampling: bool | None = None, times=None, batch_time: bool = False):
        self.graph = open_graph(graph) if isinstance(graph, (str, Path)) else graph
        if sampler is None and (links is None or self.graph is None or features is not None):
            raise ParameterError("sampler", "may be None only for links of a given graph, "
                                            "without features")
        if sampler is not None and not isinstance(sampler, Sampler):
            raise ParameterError("sampler", f"must be a graphsys.sampling.Sampler, got "
                                            f"{type(sampler).__name__}")
        device = resolve_device(device)
        if sampler is not None:
            sampler = on_device(sampler, device, device_sampling)
        fixed = negatives is not None and np.ndim(negatives) == 2
        for name, value, lo in (("batch_size", batch_size, 1), ("num_workers", num_workers, 0),
                                ("prefetch", prefetch, 1), ("world_size", world_size, 1),
                                ("rank", rank, 0),
                                ("negatives", 0 if callable(negatives) or fixed else negatives,
                                 0)):
            check_count(name, value, minimum=lo)  # True was read as 1 (batch_size, negatives)
        self.sampler = sampler
        self.num_nodes = self.graph.num_nodes() if sampler is None else sampler.num_nodes
        if (seeds is None) == (links is None):
            raise ParameterError("seeds", "give the nodes to batch (seeds) or the links, "
                                          "one of the two")
        if (fixed or negatives) and links is None:
            raise ParameterError("negatives", "are drawn for links; none were given")
        if either_end and links is None:      # it swapped nothing: silently ignored
            raise ParameterError("either_end", "swaps the ends of links; none were given")
        self.either_end, self.transform = bool(either_end), transform
        self.seeds = (self._seed_ids(seeds, unique=times is None) if links is None else
                      self._link_ids(links))
        self.fixed = self._link_ids(negatives, "negatives", -1) if fixed else None
        self.negatives = (negatives if callable(negatives) else None if fixed or not negatives
                          else UniformNegativeSampler(self.num_nodes, int(negatives)))
        self.times = None if times is None else self._seed_times(times)
        if batch_time and (links is None or times is None):
            raise ParameterError("batch_time", "reads links with times; give both")
        self.batch_time = bool(batch_time)
        seed_entropy(seed, "seed")   # a float, bool or None is refused (1.5 shuffled as 1)
        self.batch_size, self.shuffle, self.seed = int(batch_size), bool(shuffle), int(seed)
        self.num_workers, self.prefetch = int(num_workers), int(prefetch)
        self.device = device
        self.drop_last = bool(drop_last)
        if rank >= world_size:
            raise ParameterError("rank", f"must be < world_size ({world_size}), got {rank}")
        self.rank, self.world_size = int(rank), int(world_size)
        self.input_dropout = check_real("input_dropout", input_dropout, low=0, high=1,
                                        high_open=True)
        if input_dropout and features is None:
            raise ParameterError("input_dropout", "needs features to drop out")
        self.features = self._column("features", features, 2)
        self.labels = self._column("labels", labels, 1)
        if isinstance(sampler, DeviceNeighborSampler) and self.device.type == "cuda":
            self.features = resident_table(self.features, self.device)
            self.labels = resident_table(self.labels, self.device)
        # the batches in the queue, the one in the step, and one its caller still holds
        self._buffers = RowBuffers(self.prefetch + 2)
        self.epoch = 0

    def _seed_ids(self, seeds, unique: bool = True) -> torch.Tensor:
        """``seeds`` as int64 ids of the sampler's nodes (a bool mask selects), checked
        unique when ``unique``."""
        n = self.num_nodes
        mask = seeds.detach().cpu().numpy() if torch.is_tensor(seeds) else np.asarray(seeds)
        if mask.dtype == bool:
            if mask.shape != (n,):
                raise ParameterError("seeds", f"a boolean mask must have one entry per node "
                                              f"({n}), got shape {mask.shape}")
            seeds = np.flatnonzero(mask)
        ids = as_seed_array(seeds, n)
        if unique and len(np.unique(ids)) != len(ids):
            raise ParameterError("seeds", "repeat a node; each seed must appear once")
        return torch.from_numpy(ids)

    def _link_ids(self, links, name: str = "links", width: int = 2) -> torch.Tensor:
        """``links`` as int64 (P, 2) ``(head, tail)`` ids of the sampler's nodes (``name``
        ``"negatives"``, ``width`` -1: (P, C) tails, one row per link)."""
        a = links.detach().cpu().numpy() if torch.is_tensor(links) else np.asarray(links)
        rows = len(a) if width == 2 else len(self.seeds)
        if a.ndim != 2 or a.shape[0] != rows or width != -1 and a.shape[1] != width:
            want = "(P, 2) pairs (head, tail)" if width == 2 else f"({rows}, C): a row per link"
            raise ParameterError(name, f"must be {want}, got shape {a.shape}")
        return torch.from_numpy(as_seed_array(a, self.num_nodes, "link node")
                                .reshape(a.shape))

    def _seed_times(self, times) -> torch.Tensor:
        """``times`` as a tensor of one time per seed (or link), for a temporal sampler."""
        if self.sampler is not None:
            refuse_times(self.sampler)
        t = torch.as_tensor(times.cpu() if torch.is_tensor(times) else np.asarray(times))
        if t.shape != self.seeds.shape[:1]:
            raise ParameterError("times", f"must hold one time per seed ({len(self.seeds)}),"
                                          f" got shape {tuple(t.shape)}")
        return t

    def _column(self, name: str, value, ndim: int):
        """The node column ``value`` (a column name, tensor or array) as a tensor, or as
        a float16/float32 NumPy array (features, gathered GIL-free); None stays None."""
        if value is None:
            return None
        n = self.num_nodes
        if isinstance(value, str):
            if self.graph is None:
                raise ParameterError(name, f"names the node column {value!r} but no graph "
                                           f"was given")
            et = getattr(self.sampler, "entity_type", None)
            cols = self.graph.node_columns(et)
            if value not in cols:
                raise ParameterError(name, f"{self.graph.path} has no node column {value!r} "
                                           f"(columns: {', '.join(cols) or 'none'}); pass "
                                           f"None for no {name}")
            value = (self.graph.mapped_features(value, et) if ndim == 2 else
                     self.graph.node_column(value, et))
        if ndim == 2 and (isinstance(value, PartitionedRows) or hasattr(value, "rows")):
            arr = value     # mapped rows, gathered per batch by the workers
        elif isinstance(value, np.ndarray) and value.dtype in (np.float16, np.float32) \
                and value.ndim == 2:
            arr = value
        else:
            arr = value.detach() if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
        if len(arr.shape) != ndim or arr.shape[0] != n:
            want = f"({n}, F)" if ndim == 2 else f"({n},)"
            raise ParameterError(name, f"has shape {tuple(arr.shape)}, expected {want} (one "
                                       f"row per node of the sampler)")
        return arr

    @staticmethod
    def _gather(column, ids: torch.Tensor, out: np.ndarray | None = None
                ) -> torch.Tensor | None:
        if column is None:
            return None
        if isinstance(column, (np.ndarray, PartitionedRows)):
            return feature_rows(column, ids, out)
        if out is not None and hasattr(column, "rows_into"):
            return column.rows_into(ids, out)
        if hasattr(column, "rows"):
            return column.rows(ids)
        return column.index_select(0, ids.to(column.device))

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass epoch ``epoch`` (its shuffle and samples)."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        n, b = len(self.seeds), self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def _order(self, epoch: int) -> torch.Tensor:
        """The epoch's order of the seeds (or links): positions, shuffled or not."""
        if not self.shuffle:
            return torch.arange(len(self.seeds))
        gen = torch.Generator().manual_seed(derive_seed(self.seed, epoch))
        return torch.randperm(len(self.seeds), generator=gen)

    def _batch_seeds(self, order, epoch: int, i: int):
        """Batch ``i``'s seeds on this rank, their times (or None) and ``extra``."""
        at = order[i * self.batch_size:(i + 1) * self.batch_size]
        seeds, times = self.seeds[at], None if self.times is None else self.times[at]
        neg = None
        if self.seeds.ndim == 2:      # links: the global batch's flips and negatives, shared
            if self.either_end:
                rng = np.random.default_rng(derive_seed(self.seed, epoch, i, 2))
                swap = torch.from_numpy(rng.random(len(seeds)) < 0.5)
                seeds = torch.where(swap[:, None], seeds.flip(1), seeds)
            neg = (self.fixed[at] if self.fixed is not None else
                   torch.as_tensor(self.negatives(seeds[:, 0], derive_seed(self.seed, epoch,
                                                                           i, 1)))
                   if self.negatives else torch.zeros((len(seeds), 0), dtype=torch.int64))
        if self.world_size > 1:
            b, r, w = len(seeds), self.rank, self.world_size
            share = slice(r * b // w, (r + 1) * b // w)
            seeds, times, neg, at = (None if a is None else a[share]
                                     for a in (seeds, times, neg, at))
        if neg is None:
            return seeds, times, {} if times is None else {"time": times}
        seeds, times, extra = pair_seeds(seeds[:, 0], seeds[:, 1], neg, times,
                                         times.min() if self.batch_time and len(at) else None)
        return seeds, times, dict(extra, link=at)

    def _batch(self, order, epoch: int, i: int, key: int = 0) -> MiniBatch:
        seeds, times, extra = self._batch_seeds(order, epoch, i)
        rng_seed = derive_seed(self.seed, epoch, i)   # the global batch's, on every rank
        with serial_kernels():
            blocks = [] if self.sampler is None else self.sampler.sample_blocks(
                seeds if times is None else SamplerInput(seeds, times), rng_seed)
        if blocks and blocks[-1].device != seeds.device:    # made on the device: the
            seeds = blocks[-1].dst_nodes                    # seeds went there once
        batch = MiniBatch(seeds, blocks, extra)
        if self.transform is not None:
            batch = self.transform(batch)
        for k, b in enumerate(batch.blocks):   # the aggregations' edge grouping, here rather
            if isinstance(b, Block):       # than in the step; by source for the backward
                _ = b.dst_offsets          # of the layers fed by a layer (a gradient)
                if k > 0:
                    _ = b.src_offsets
        f = self.features
        ids = batch.input_nodes if f is not None else None
        out = (self._buffers.take(len(ids), f.shape[1])
               if (isinstance(f, (np.ndarray, PartitionedRows)) and f.dtype == np.float32)
               or hasattr(f, "rows_into") else None)
        if not self.input_dropout:
            x = self._gather(self.features, ids, out)
        elif torch.is_tensor(f) and f.device.type != "cpu" and f.device == ids.device:
            x = device_feature_dropout(f, ids, self.input_dropout, derive_seed(key, i))
        else:
            x = feature_dropout(f, ids, self.input_dropout, derive_seed(key, i), out)
        batch.x, batch.y = x, self._gather(self.labels, batch.seeds)
        return batch

    def _batch_sizes(self) -> set[int]:
        """The seed counts of this loader's batches on this rank."""
        n, b, r, w = len(self.seeds), self.batch_size, self.rank, self.world_size
        whole = {b} if n >= b else set()
        if n % b and not self.drop_last:
            whole.add(n % b)
        return {s * (r + 1) // w - s * r // w for s in whole}

    def __iter__(self) -> Iterator[MiniBatch]:
        epoch, self.epoch = self.epoch, self.epoch + 1
        # before any thread starts; a link batch's seed count is known when it is drawn
        if getattr(self.sampler, "cuda_graphs", False) and self.seeds.ndim == 1:
            self.sampler.record_graphs(self._batch_sizes())
        order = self._order(epoch)
        # the pass's dropout key, drawn here so that it does not depend on the workers
        key = int(torch.empty((), dtype=torch.int64).random_()) if self.input_dropout else 0
        return iter(PrefetchLoader(len(self), lambda i: self._batch(order, epoch, i, key),
                                   num_workers=self.num_workers, prefetch=self.prefetch,
                                   device=self.device))

    def __repr__(self) -> str:
        what = "links" if self.seeds.ndim == 2 else "seeds"
        return (f"NodeLoader({len(self.seeds)} {what}, batch_size={self.batch_size}, "
                f"{len(self)} batches, sampler={self.sampler!r})")
