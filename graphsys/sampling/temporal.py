"""Temporal neighbour sampling: for each event ``(node, t)``, neighbours from edges strictly
before ``t`` (TGAT, Xu et al. 2020; TGN, Rossi et al. 2020).

A seed is an event: a node and a time. Its candidates are the edges that touch the node
(either direction; an undirected edge once) stamped strictly earlier than the event, so a
sample never holds the event itself, an edge at the same time, or any later edge, whatever
the batch or thread count. They come from the node's row of the temporal adjacency
(:mod:`graphsys.storage.temporal_index`: every node's events sorted by time, memory-mapped
from the stored ``temporal`` index, else built in RAM), where they are a prefix found by one
binary search. Two strategies, as PyG's ``temporal_strategy``:

* ``"recent"``: the ``k`` latest candidates (ties in time broken by edge id, later first),
  what TGN's ``LastNeighborLoader`` keeps;
* ``"uniform"``: ``k`` distinct candidates drawn uniformly (Floyd's algorithm), from a
  random stream keyed by ``(rng_seed, node, t)`` (a float ``t`` by its bits): an event's
  draw does not depend on the other events of its batch.

Numba-parallel over the events (``prange``), or serial for a loader's worker threads.

The sampler implements the :class:`~graphsys.sampling.Sampler` protocol: seeds with times
(:class:`~graphsys.sampling.SamplerInput`) in, one :class:`TemporalBlock` per hop out
(:meth:`TemporalNeighborSampler.sample_blocks`), so :class:`~graphsys.gnn.NodeLoader` batches
events as it batches nodes.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from numba import njit, prange

from graphsys import views
from graphsys.errors import GraphsysError, check_count
from graphsys.sampling import _kernels as K
from graphsys.sampling._util import as_seed_array, derive_seed, kernel_seed, run_parallel
from graphsys.sampling.base import Sampler, SamplerInput
from graphsys.sampling.block import Block
from graphsys.storage.graph import Graph
from graphsys.storage.temporal_index import TemporalAdjacency
from graphsys.storage.time_view import as_float
from graphsys.threads import apply_thread_policy

#: ``TemporalNeighborSampler(strategy=...)`` choices.
STRATEGIES = ("recent", "uniform")


def _pick(indptr, indices, time, eid, nodes, times, keys, k, recent, rng_seed, out_nbr,
          out_t, out_eid, out_count):
    """Row ``i`` of the outputs: up to ``k`` events of ``nodes[i]`` stamped before
    ``times[i]``, oldest first, a uniform draw from the stream of ``(rng_seed, keys[i],
    node)``; unused slots hold -1 (``out_t``: 0)."""
    for i in prange(nodes.shape[0]):
        v = nodes[i]
        lo, hi = indptr[v], indptr[v + 1]
        a, b = lo, hi
        t = times[i]
        while a < b:                      # first entry at or after t
            mid = (a + b) // 2
            if time[mid] < t:
                a = mid + 1
            else:
                b = mid
        avail = a - lo
        c = min(k, avail)
        out_count[i] = c
        for j in range(c, k):
            out_nbr[i, j] = -1
            out_eid[i, j] = -1
            out_t[i, j] = 0
        if c == 0:
            continue
        if recent or c == avail:
            for j in range(c):
                p = a - c + j
                out_nbr[i, j] = indices[p]
                out_t[i, j] = time[p]
                out_eid[i, j] = eid[p]
            continue
        state = K._stream_j(rng_seed ^ keys[i], v)
        chosen = out_eid[i]               # Floyd: c distinct offsets in [0, avail)
        for q in range(c):
            state, u = K._uniform_j(state)
            r = int(u * (avail - c + q + 1))
            dup = False
            for w in range(q):
                dup |= chosen[w] == r
            chosen[q] = avail - c + q if dup else r
        chosen[:c].sort()                 # oldest first
        for j in range(c):
            p = lo + chosen[j]
            out_nbr[i, j] = indices[p]
            out_t[i, j] = time[p]
            out_eid[i, j] = eid[p]


def temporal_adjacency(graph: Graph, edge_set: str | None = None, *,
                       memory_limit: int | None = None) -> TemporalAdjacency:
    """Every node's events in time order (:mod:`graphsys.storage.temporal_index`): the view
    layer's ``temporal`` view (:func:`graphsys.views.view`), the stored ``temporal`` index
    mapped, else built in RAM once per opened graph unless that needs more than
    ``memory_limit`` bytes (None: the RAM available), which is refused in one line naming
    the ``graphsys index`` command that stores it. ``edge_set`` (default: the default one)
    needs a ``timestamp`` edge column.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys
    >>> edges = pa.table({"src": [0, 1, 2], "dst": [1, 2, 0], "timestamp": [30, 10, 20]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp() + "/g", edge_columns=["timestamp"])
    >>> adj = temporal_adjacency(g)
    >>> v = 1          # node 1: 0 -> 1 at 30, 1 -> 2 at 10, in time order
    >>> lo, hi = adj.indptr[v], adj.indptr[v + 1]
    >>> adj.indices[lo:hi].tolist(), adj.time[lo:hi].tolist()
    ([2, 0], [10, 30])
    """
    return views.view(graph, "temporal", edge_set=edge_set, memory_limit=memory_limit)


def _time_keys(t: np.ndarray) -> np.ndarray:
    """int64 (S,) stream keys of event times, one per distinct time: an integer time
    itself, a float time's float64 bits (-0.0 read as 0.0). A float time cut to an integer
    keyed every event of a node at times in [0, 1) to one stream: their uniform draws
    were the same offsets."""
    if t.dtype.kind in "iu":
        return t.astype(np.int64)
    return np.ascontiguousarray(t.astype(np.float64) + 0.0).view(np.int64)


def _integer_times(t: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Event times ``t`` against an integer time column of ``dtype``: rounded up, and held
    to the dtype's range (a float 1e30 or a uint64 above it used to wrap to a negative
    time before every stamp); GraphsysError for a time that is not a finite number."""
    info = np.iinfo(dtype)
    if t.dtype.kind == "f":
        if not np.isfinite(t).all():
            raise GraphsysError("event times must be finite")
        t = np.ceil(t)
        above, below = t >= -float(info.min), t < info.min   # powers of two: exact
    elif t.dtype.kind in "iu":
        above = t > info.max
        below = t < info.min if t.dtype.kind == "i" else np.zeros(t.shape, bool)
    else:                                     # Python ints beyond int64, mixed objects
        try:
            return np.array([min(max(math.ceil(x), info.min), info.max) for x in t.ravel()],
                            dtype).reshape(t.shape)
        except (TypeError, ValueError, OverflowError):
            raise GraphsysError("event times must be finite numbers") from None
    out = np.where(above | below, 0, t).astype(dtype)
    out[above], out[below] = info.max, info.min
    return np.ascontiguousarray(out)


_pick_par = njit(parallel=True, cache=True)(_pick)
#: The least number of picks (events x fanout) a hop runs numba-parallel unless told
#: ``parallel=True``: below it the hop is serial, as its work is less than starting and
#: joining a thread team (the thread policy, :mod:`graphsys.threads`).
PARALLEL_MIN_PICKS = 16_384
_pick_ser = njit(nogil=True, cache=True)(_pick)


@dataclass
class TemporalNeighbors:
    """The sampled neighbours of ``S`` events, one row per event, oldest first.

    Attributes
    ----------
    nodes, times : numpy.ndarray
        The events: int64 (S,) nodes and their times (the time column's dtype).
    nbr : numpy.ndarray
        int64 (S, k) neighbour ids; -1 in unused slots.
    time : numpy.ndarray
        (S, k) the picked edges' stamps (0 in unused slots), each < the event's time.
    eid : numpy.ndarray
        int64 (S, k) the picked edges' ids (their positions in the bucket stream, as the
        edge columns yield them); -1 in unused slots.
    count : numpy.ndarray
        int64 (S,) picks per event.

    Examples
    --------
    From :meth:`TemporalNeighborSampler.sample_hop`: node 0 before 31, node 2 before 40:

    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys.sampling import TemporalNeighborSampler
    >>> edges = pa.table({"src": [0, 0, 0, 1], "dst": [1, 2, 3, 2],
    ...                   "timestamp": [10, 20, 30, 40]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp() + "/g", edge_columns=["timestamp"])
    >>> hop = TemporalNeighborSampler(g, 2).sample_hop([0, 2], [31, 40], 2)
    >>> hop.nbr.tolist(), hop.time.tolist(), hop.count.tolist(), hop.num_edges
    ([[2, 3], [0, -1]], [[20, 30], [20, 0]], [2, 1], 3)
    """

    nodes: np.ndarray
    times: np.ndarray
    nbr: np.ndarray
    time: np.ndarray
    eid: np.ndarray
    count: np.ndarray

    @property
    def mask(self) -> np.ndarray:
        """bool (S, k): the used slots."""
        return self.nbr >= 0

    @property
    def num_edges(self) -> int:
        return int(self.count.sum())


@dataclass(frozen=True)
class TemporalBlock(Block):
    """A :class:`~graphsys.sampling.Block` whose rows are events: a source row is a node at
    a time, and the same node may fill several rows (at its times in the batch).

    ``src_times``: (num_src,) each row's time, in the time column's dtype (a seed's own
    time, else the stamp of the edge that reached the row, strictly before the time of the
    row it reached); ``edge_ids``: int64 (E,) the picked edges' ids (their positions in the
    bucket stream, as the edge columns yield them), for their features.

    Examples
    --------
    From :meth:`TemporalNeighborSampler.sample_blocks`, events (node 0, 30) and (2, 40):

    >>> import tempfile, pyarrow as pa, graphsys
    >>> from graphsys.sampling import SamplerInput, TemporalNeighborSampler
    >>> edges = pa.table({"src": [0, 0, 0, 1], "dst": [1, 2, 3, 2],
    ...                   "timestamp": [10, 20, 30, 40]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp() + "/g", edge_columns=["timestamp"])
    >>> block = TemporalNeighborSampler(g, 2).sample_blocks(SamplerInput([0, 2], [30, 40]))[0]
    >>> block.dst_times.tolist(), block.edge_times.tolist(), block.edge_ids.tolist()
    ([30, 40], [10, 20, 20], [0, 1, 1])
    """

    src_times: torch.Tensor | None = None
    edge_ids: torch.Tensor | None = None

    @property
    def dst_times(self) -> torch.Tensor:
        """(num_dst,): the first ``num_dst_nodes`` rows' times."""
        return self.src_times[: self.num_dst_nodes]

    @property
    def edge_times(self) -> torch.Tensor:
        """(E,): each edge's stamp (its source row's time), below its destination's time."""
        return self.src_times[self.edge_src]


class TemporalNeighborSampler(Sampler):
    """Neighbours of events from the edges strictly before them (see the module docstring).

    Parameters
    ----------
    graph : Graph or TemporalAdjacency
        A graph whose edge set has a ``timestamp`` edge column (its stored ``temporal``
        index is mapped, ``graphsys index DIR --temporal``; else the adjacency is built in
        RAM), or a ready :class:`~graphsys.storage.temporal_index.TemporalAdjacency`.
    fanouts : int or sequence of int
        Neighbours per event, per hop (``[10]``; ``[10, 5]``: each picked neighbour's own
        5, strictly before the edge that reached it).
    strategy : {"recent", "uniform"}, optional
        The latest ``k`` candidates (default), or ``k`` uniform ones.
    edge_set : str, optional
        The edge set (default: the default one).
    memory_limit : int, optional
        Budget in bytes of a build in RAM (default: the RAM available); above it the
        sampler is refused in one line naming the command that stores the index.

    Notes
    -----
    The constructor applies graphsys's thread policy (:func:`graphsys.threads.apply_thread_policy`,
    budget ``$GRAPHSYS_THREADS`` or the available cores), so a loop that alternates its
    numba-parallel hops with torch operators does not oversubscribe the cores; the policy
    applied is :attr:`threads`.

    References
    ----------
    .. [1] D. Xu, C. Ruan, E. Korpeoglu, S. Kumar and K. Achan, "Inductive Representation
       Learning on Temporal Graphs", ICLR 2020.
    .. [2] E. Rossi, B. Chamberlain, F. Frasca, D. Eynard, F. Monti and M. Bronstein,
       "Temporal Graph Networks for Deep Learning on Dynamic Graphs", 2020,
       https://arxiv.org/abs/2006.10637.

    Examples
    --------
    >>> import tempfile, numpy as np, pyarrow as pa, graphsys
    >>> from graphsys.sampling import TemporalNeighborSampler
    >>> edges = pa.table({"src": [0, 0, 0, 1], "dst": [1, 2, 3, 2],
    ...                   "timestamp": [10, 20, 30, 40]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp() + "/g", edge_columns=["timestamp"])
    >>> sampler = TemporalNeighborSampler(g, 2)
    >>> hop = sampler.sample_hop([0, 0, 2], [30, 31, 40], 2)
    >>> hop.nbr.tolist()            # node 0 before 30: 1 (t=10), 2 (t=20); before 31: 2, 3
    [[1, 2], [2, 3], [0, -1]]
    >>> hop.time.tolist()
    [[10, 20], [20, 30], [20, 0]]

    As a :class:`~graphsys.sampling.Sampler`: the same events as blocks, rows ``(node,
    time)``, seeds first:

    >>> from graphsys.sampling import SamplerInput
    >>> block = sampler.sample_blocks(SamplerInput([0, 2], [30, 40]))[0]
    >>> block.src_nodes.tolist(), block.src_times.tolist()
    ([0, 2, 1, 2, 0], [30, 40, 10, 20, 20])
    >>> block.edge_src.tolist(), block.edge_dst.tolist()
    ([2, 3, 4], [0, 0, 1])
    """

    temporal = True

    def __init__(self, graph: Graph | TemporalAdjacency, fanouts: int | Sequence[int] = 10,
                 *, strategy: str = "recent", edge_set: str | None = None,
                 memory_limit: int | None = None):
        # 1.5 was cut to 1 and True read as 1; 'a' or NaN raised a raw ValueError
        try:
            values = [fanouts] if np.ndim(fanouts) == 0 else list(fanouts)
        except (TypeError, ValueError):
            values = []
        if not values:
            raise GraphsysError(f"fanouts must be positive integers, one per hop; got "
                                f"{fanouts!r}")
        self.fanouts = [check_count("fanouts", f, maximum=2**63 - 1) for f in values]
        if strategy not in STRATEGIES:
            raise GraphsysError(f"strategy must be one of {', '.join(STRATEGIES)}, got "
                                f"{strategy!r}")
        self.strategy = strategy
        self.threads = apply_thread_policy()
        self.adj = graph if isinstance(graph, TemporalAdjacency) else temporal_adjacency(
            graph, edge_set, memory_limit=memory_limit)

    @property
    def num_nodes(self) -> int:
        return self.adj.num_nodes

    @property
    def num_layers(self) -> int:
        """Blocks per batch: one per hop."""
        return len(self.fanouts)

    def event_times(self, times) -> np.ndarray:
        """``times`` in the time column's dtype, so that ``edge < t`` holds exactly: each
        time becomes the least value of that dtype at or above it (a fractional time
        against an integer column is rounded up, a float64 time against a float32 column
        is rounded up to a float32), and a time beyond an integer column's range becomes
        its largest (or least) value, so a time after every stamp still sees them all
        (against a float column, beyond the float range: infinite). A NaN or a time that
        is no number is refused in one line (against a float column, NaN sampled nothing,
        and None or a string was read as NaN or parsed)."""
        t = np.asarray(times)
        dtype = self.adj.time.dtype
        if dtype.kind in "iu":
            return np.ascontiguousarray(t) if t.dtype == dtype else _integer_times(t, dtype)
        if t.dtype.kind == "O":               # Python ints beyond int64, mixed objects
            try:
                t = np.array([as_float(x) for x in t.ravel()], float).reshape(t.shape)
            except (TypeError, ValueError):
                t = t.astype(str)
        if t.dtype.kind not in "iuf" or (t.dtype.kind == "f" and np.isnan(t).any()):
            raise GraphsysError("event times must be numbers, not NaN")
        with np.errstate(over="ignore"):      # beyond float32: +-inf, still ordered
            out = np.ascontiguousarray(t, dtype=dtype)
        low = out < t                         # rounded down: the next value up
        out[low] = np.nextafter(out[low], np.inf, dtype=dtype)
        return out

    def sample_hop(self, nodes, times, fanout: int, rng_seed: int = 0, *,
                   parallel: bool | None = None) -> TemporalNeighbors:
        """One hop: up to ``fanout`` neighbours of each event ``(nodes[i], times[i])``,
        numba-parallel over the events for ``parallel=True``, or for None outside
        :func:`~graphsys.sampling._util.serial_kernels` when there are at least
        :data:`PARALLEL_MIN_PICKS` picks; the same picks either way. ``rng_seed`` seeds the
        draws as given, an integer in ``[0, 2**63)`` (as
        :func:`~graphsys.sampling.sample_neighbors`)."""
        rng_seed = kernel_seed(rng_seed)
        fanout = check_count("fanout", fanout, maximum=2**63 - 1)
        nodes = np.ascontiguousarray(nodes, dtype=np.int64).reshape(-1)
        t = self.event_times(times).reshape(-1)
        if len(t) != len(nodes):
            raise GraphsysError(f"{len(nodes)} nodes but {len(t)} event times")
        n = self.num_nodes
        if len(nodes) and (nodes.min() < 0 or nodes.max() >= n):
            bad = nodes[(nodes < 0) | (nodes >= n)][0]
            raise GraphsysError(f"seed node {bad} is outside the graph (valid: 0..{n - 1})")
        s = len(nodes)
        nbr = np.empty((s, fanout), np.int64)
        et = np.empty((s, fanout), self.adj.time.dtype)
        eid = np.empty((s, fanout), np.int64)
        count = np.empty(s, np.int64)
        # a small hop (a batch of TGN's 200 events) costs less than waking a thread team
        kernel = _pick_par if run_parallel(parallel) and (
            parallel or s * fanout >= PARALLEL_MIN_PICKS) else _pick_ser
        kernel(self.adj.indptr, self.adj.indices, self.adj.time, self.adj.eid, nodes, t,
               _time_keys(t), fanout, self.strategy == "recent",
               np.int64(rng_seed), nbr, et, eid, count)
        return TemporalNeighbors(nodes, t, nbr, et, eid, count)

    def sample(self, nodes, times, rng_seed: int = 0, *, parallel: bool | None = None
               ) -> list[TemporalNeighbors]:
        """Deprecated (one release): :meth:`sample_blocks` of a ``SamplerInput(nodes,
        times)``. Every hop, first hop first: hop ``h + 1``'s events are hop ``h``'s picks
        ``(nbr, time)`` row by row (an unused slot samples nothing)."""
        warnings.warn("TemporalNeighborSampler.sample is deprecated: use sample_blocks("
                      "SamplerInput(nodes, times))", DeprecationWarning, stacklevel=2)
        hops = []
        for h, fanout in enumerate(self.fanouts):
            hop = self.sample_hop(nodes, times, fanout, derive_seed(rng_seed, h),
                                  parallel=parallel)
            hops.append(hop)
            used = hop.mask.ravel()
            nodes = np.where(used, hop.nbr.ravel(), 0)
            times = np.where(used, hop.time.ravel(), np.iinfo(np.int64).min
                             if hop.time.dtype.kind in "iu" else -np.inf).astype(
                                 hop.time.dtype)
        return hops

    def sample_blocks(self, seeds, rng_seed: int = 0, *, parallel: bool | None = None
                      ) -> list[TemporalBlock]:
        """Every hop as blocks of events, input layer first (the
        :class:`~graphsys.sampling.Sampler` protocol).

        The rows are the events of depths ``0..L`` (``L`` = :attr:`num_layers`): depth 0
        the seeds, depth ``h + 1`` the used picks of depth ``h``'s rows, row-major (the
        picks of :meth:`sample_hop` with ``fanouts[h]`` and ``derive_seed(rng_seed, h)``,
        so an event's picks depend on ``(rng_seed, h, node, time)`` alone). Block ``l``
        has the rows of depths ``0..L - l`` as sources and those of depths ``0..L - l - 1``
        as destinations, each destination's edges from its picks: the layers TGAT runs
        (layer ``l + 1`` on depths ``0..L - l - 1``), and ``blocks[-1].dst_nodes`` are the
        seeds in the order given (repeats allowed: an event is a row).

        Parameters
        ----------
        seeds : SamplerInput, or int tensor, array or sequence (S,)
            The seed nodes and their times; without times every stored edge is before
            the seed (an integer time column's largest value, or infinity, stands for
            the seed's time).
        rng_seed : int, optional
            Seed of the batch's random choices (default 0; ``"uniform"`` only).
        parallel : bool, optional
            As :meth:`sample_hop`; the blocks are the same either way.

        Returns
        -------
        list of TemporalBlock
            :attr:`num_layers` blocks; every edge's time is strictly below the time of
            the row it reaches.

        Raises
        ------
        GraphsysError
            A seed outside the graph, times not one per seed, or a non-finite time.
        """
        times = seeds.times if isinstance(seeds, SamplerInput) else None
        nodes = as_seed_array(seeds.nodes if isinstance(seeds, SamplerInput) else seeds,
                              self.num_nodes)
        if times is None:
            dtype = self.adj.time.dtype
            end = np.iinfo(dtype).max if dtype.kind in "iu" else np.inf
            t = np.full(len(nodes), end, dtype)
        else:
            t = self.event_times(times.cpu() if torch.is_tensor(times) else times).reshape(-1)
        rows, stamps, dst, eid = [nodes], [t], [], []
        start = 0
        for h, fanout in enumerate(self.fanouts):
            hop = self.sample_hop(nodes, t, fanout, derive_seed(rng_seed, h),
                                  parallel=parallel)
            nodes, t = hop.nbr[hop.mask], hop.time[hop.mask]
            dst.append(start + np.repeat(np.arange(len(hop.count)), hop.count))
            start += len(hop.count)
            rows.append(nodes)
            stamps.append(t)
            eid.append(hop.eid[hop.mask])
        bounds = np.cumsum([0] + [len(r) for r in rows])
        src_nodes = torch.from_numpy(np.concatenate(rows))
        src_times = torch.from_numpy(np.concatenate(stamps))   # int64, float32/64
        edge_dst = torch.from_numpy(np.concatenate(dst))
        edge_src = torch.arange(len(edge_dst), dtype=torch.int64) + len(rows[0])
        edge_ids = torch.from_numpy(np.concatenate(eid))
        blocks = []
        for depth in range(self.num_layers, 0, -1):      # input layer first
            n_src = int(bounds[depth + 1])             # rows of depths 0..depth
            m = n_src - len(rows[0])                   # the edges reaching rows 0..depth-1
            blocks.append(TemporalBlock(src_nodes[:n_src], int(bounds[depth]), edge_src[:m],
                                        edge_dst[:m], None, src_times[:n_src], edge_ids[:m]))
        return blocks

    def __repr__(self) -> str:
        return (f"TemporalNeighborSampler(fanouts={self.fanouts}, strategy="
                f"{self.strategy!r}, nodes={self.num_nodes}, events={self.adj.num_entries})")
