"""A device cache of the feature rows a sampler reads most, the rest read from host memory.

A feature table larger than the GPU's memory stays on the host; the rows a GNN's
minibatches read are far from uniform (hubs are in most batches' neighbourhoods), so a
cache of the hottest rows on the device serves most of each batch. As in PaGraph and
GNNLab, the hot rows are found by pre-sampling: :func:`presample_hot_nodes` draws a few
epochs' worth of batches with the training sampler and counts how often each node is an
input node, and :class:`DeviceFeatureCache` keeps the rows of the most visited nodes on
the device. A batch gathers its cached rows on the device and only the misses on the
host (into pinned memory when the device is a GPU), copied over in one transfer.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from graphsys.device import resolve_device
from graphsys.errors import GraphsysError, check_count
from graphsys.sampling._util import as_seed_array, derive_seed, seed_entropy
from graphsys.sampling.base import Sampler
from graphsys.sampling.features import checked_ids, feature_rows


def presample_hot_nodes(sampler: Sampler, seeds, *, batch_size: int = 1024,
                        num_batches: int = 8, rng_seed: int = 0) -> np.ndarray:
    """The nodes a sampler's batches read as input, most read first.

    Draws ``num_batches`` batches of ``batch_size`` seeds (a shuffle of ``seeds`` by
    ``rng_seed``) with ``sampler`` and counts, for each node, the batches whose input
    nodes (``blocks[0].src_nodes``) hold it.

    Parameters
    ----------
    sampler : Sampler
        The training sampler (host or device).
    seeds : int array, tensor or sequence
        The training nodes.
    batch_size, num_batches : int, optional
        Batches to draw (defaults 1024 and 8).
    rng_seed : int, optional
        Seed of the shuffle and of the batches' samples (default 0).

    Returns
    -------
    numpy.ndarray
        int64 ids of every node read at least once, by decreasing count (ties: smaller id
        first).

    Examples
    --------
    >>> import numpy as np
    >>> from graphsys.sampling import NeighborSampler, from_coo
    >>> from graphsys.sampling.feature_cache import presample_hot_nodes
    >>> star = from_coo(np.zeros(9, np.int64), np.arange(1, 10), 10, 10)  # 0 - all
    >>> sym = from_coo(np.r_[star.indices, np.zeros(9, np.int64)],
    ...                np.r_[np.zeros(9, np.int64), star.indices], 10, 10)
    >>> presample_hot_nodes(NeighborSampler(sym, [2]), np.arange(1, 10), batch_size=3,
    ...                     num_batches=3)[0]          # the hub is in every batch
    np.int64(0)
    """
    batch_size, num_batches = (check_count("batch_size", batch_size),
                               check_count("num_batches", num_batches))
    n = sampler.num_nodes
    rng = np.random.default_rng(seed_entropy(rng_seed))
    order = rng.permutation(as_seed_array(seeds, n))
    counts = np.zeros(n, np.int64)
    for i in range(min(num_batches, -(-len(order) // batch_size))):
        batch = order[i * batch_size:(i + 1) * batch_size]
        ids = sampler.sample_blocks(batch, derive_seed(rng_seed, i))[0].src_nodes
        counts += np.bincount(ids.cpu().numpy(), minlength=n)
    seen = np.flatnonzero(counts)
    return seen[np.argsort(-counts[seen], kind="stable")]


class DeviceFeatureCache:
    """Rows of an (N, F) host feature table, the hottest on ``device``: a feature source
    for :class:`~graphsys.gnn.NodeLoader` (``features=cache``), whose :meth:`rows` equal
    the table's rows (as float32) whichever rows are cached.

    The rows of ``hot[:capacity]`` are copied to the device once, with a map from node id
    to cache slot (int32, N entries). :meth:`rows` gathers the cached rows there and reads
    the misses from the host table in one gather and one copy to the device: one host
    synchronisation a batch (the number of misses), one transfer each way when there are
    misses, none when there are not.

    Parameters
    ----------
    table : numpy.ndarray or torch.Tensor
        (N, F) float16/float32 rows on the host (an array may be memory-mapped).
    hot : int array or sequence
        Node ids, hottest first (:func:`presample_hot_nodes`); unique.
    capacity : int, optional
        Rows to cache (default: every node of ``hot``).
    device : str or torch.device, optional
        Where the cached rows live and :meth:`rows` delivers (default ``"cuda"`` when
        available, else ``"cpu"``).

    Raises
    ------
    GraphsysError
        A table that is not (N, F) float16/float32; hot ids repeated or outside the table;
        a negative capacity.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.sampling.feature_cache import DeviceFeatureCache
    >>> table = np.arange(12, dtype=np.float32).reshape(6, 2)
    >>> cache = DeviceFeatureCache(table, hot=[4, 1], device="cpu")
    >>> cache.rows(torch.tensor([1, 0, 4, 5])).tolist()
    [[2.0, 3.0], [0.0, 1.0], [8.0, 9.0], [10.0, 11.0]]
    >>> cache.hits, cache.misses
    (2, 2)
    """

    def __init__(self, table, hot, capacity: int | None = None, *,
                 device: str | torch.device | None = None):
        if torch.is_tensor(table):
            table = table.detach().cpu().numpy()
        if not isinstance(table, np.ndarray) or table.ndim != 2 or \
                table.dtype not in (np.float16, np.float32):
            raise GraphsysError(f"a feature cache needs an (N, F) float16/float32 table, "
                                f"got {getattr(table, 'dtype', type(table).__name__)} "
                                f"{tuple(getattr(table, 'shape', ()))}")
        n = len(table)
        hot = as_seed_array(hot, n, "hot node")
        if len(np.unique(hot)) != len(hot):
            raise GraphsysError("hot node ids must be unique")
        # 1.5 was cut to 1, True read as 1, NaN raised a raw ValueError
        capacity = len(hot) if capacity is None else check_count("capacity", capacity,
                                                                 minimum=0)
        self.device = resolve_device("auto" if device is None else device)
        self.table = table
        self.shape = table.shape
        self.dtype = np.dtype(np.float32)
        hot = hot[:capacity]
        slot = np.full(n, -1, np.int32)
        slot[hot] = np.arange(len(hot), dtype=np.int32)
        self.slot = torch.from_numpy(slot).to(self.device)
        self.cached = feature_rows(table, hot).to(self.device)
        self.capacity = len(hot)
        self.hits = self.misses = 0
        self._lock = threading.Lock()

    def rows(self, ids) -> torch.Tensor:
        """float32 (B, F) on :attr:`device`: rows ``ids`` (ints in ``[0, N)``, on any
        device) of the table. An id outside the table raises
        :class:`~graphsys.errors.GraphsysError` (it is read as a miss and checked on the
        host)."""
        ids = torch.as_tensor(ids).reshape(-1)
        if len(ids) and (ids.is_floating_point() or ids.dtype == torch.bool):  # 1.7: row 1
            raise GraphsysError(f"feature row ids must be integers, got dtype {ids.dtype}")
        if len(ids) and not len(self.table):    # no row to clamp into: every id is outside
            checked_ids(self.table, ids.cpu())
        ids = ids.to(self.device, torch.int64)
        inside = ids.clamp(0, len(self.table) - 1)
        slot = self.slot.index_select(0, inside)
        out = self.cached.index_select(0, slot.clamp(min=0).to(torch.int64)) \
            if self.capacity else torch.empty((len(ids), self.shape[1]), device=self.device)
        miss = torch.nonzero((slot < 0) | (inside != ids)).squeeze(1)   # the one sync
        if len(miss):
            host = feature_rows(self.table, checked_ids(self.table, ids[miss].cpu()))
            if self.device.type == "cuda":           # from pinned memory: no wait
                host = host.pin_memory().to(self.device, non_blocking=True)
            else:
                host = host.to(self.device, copy=True)
            out.index_copy_(0, miss, host)
        with self._lock:
            self.misses += len(miss)
            self.hits += len(ids) - len(miss)
        return out

    @classmethod
    def from_presampling(cls, table, sampler: Sampler, seeds, capacity: int, *,
                         device: str | torch.device | None = None, batch_size: int = 1024,
                         num_batches: int = 8, rng_seed: int = 0) -> DeviceFeatureCache:
        """A cache of the ``capacity`` rows ``sampler``'s batches read most
        (:func:`presample_hot_nodes` with the given batches)."""
        hot = presample_hot_nodes(sampler, seeds, batch_size=batch_size,
                                  num_batches=num_batches, rng_seed=rng_seed)
        return cls(table, hot, capacity, device=device)

    def __repr__(self) -> str:
        return (f"DeviceFeatureCache({self.capacity} of {self.shape[0]} rows x "
                f"{self.shape[1]} on {self.device})")
