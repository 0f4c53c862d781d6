"""The sampler protocol: :class:`Sampler`, what :class:`~graphsys.gnn.NodeLoader` and
:func:`graphsys.gnn.train` draw minibatch blocks from, and its input :class:`SamplerInput`.

A sampler turns a batch of seed nodes into one :class:`~graphsys.sampling.Block` per GNN
layer, input layer first, and the same arguments always give the same blocks (the random
stream is derived from ``rng_seed``, never from a call counter or the number of threads).
The built-in samplers also key it by node id: a node's neighbourhood in layer ``l`` is a
function of ``(rng_seed, l, node)``, whatever the rest of the batch. Seeds may carry a
time each (:class:`SamplerInput`, as PyG's ``NodeSamplerInput``): a temporal sampler
(:attr:`Sampler.temporal`) then samples each seed's past; the others refuse times.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from graphsys.errors import GraphsysError
from graphsys.sampling._util import as_seed_array, derive_seed
from graphsys.sampling.block import Block


@dataclass(frozen=True)
class SamplerInput:
    """The seeds of one batch and, optionally, a time for each: what
    :meth:`Sampler.sample_blocks` takes besides bare seed ids (PyG's ``NodeSamplerInput``).

    Parameters
    ----------
    nodes : int tensor, array or sequence (S,)
        Seed node ids.
    times : tensor, array or sequence (S,), optional
        The time of each seed, in the graph's ``timestamp`` unit: a temporal sampler
        samples seed ``i`` from the edges strictly before ``times[i]``. None (default): no
        time; a sampler without time (:attr:`Sampler.temporal` False) refuses any other.

    Raises
    ------
    GraphsysError
        ``times`` not one per seed.

    Examples
    --------
    >>> from graphsys.sampling import NeighborSampler, SamplerInput, from_coo
    >>> sampler = NeighborSampler(from_coo([0, 1, 2], [1, 2, 0], 3, 3), [2])
    >>> a = sampler.sample_blocks(SamplerInput([0, 2]), 7)[0]     # no time: plain seeds
    >>> a.src_nodes.tolist() == sampler.sample_blocks([0, 2], 7)[0].src_nodes.tolist()
    True
    >>> sampler.sample_blocks(SamplerInput([0, 2], [5, 9]))
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: NeighborSampler samples without time: it cannot honour ...
    """

    nodes: Any
    times: Any = None

    def __post_init__(self):
        if self.times is not None and len(self.times) != len(self.nodes):
            raise GraphsysError(f"{len(self.nodes)} seeds but {len(self.times)} seed times: "
                                f"give one time per seed")


class Sampler(ABC):
    """Base class of the minibatch samplers: seeds in, one block per layer out.

    A subclass implements :attr:`num_nodes`, :attr:`num_layers` and :meth:`sample_blocks`.
    :class:`~graphsys.gnn.NodeLoader` calls :meth:`sample_blocks` from its worker threads,
    so a sampler must be safe to call concurrently (hold read-only arrays only).
    ``sample_blocks`` takes bare seed ids or a :class:`SamplerInput`; :meth:`seed_nodes`
    reads the ids out of either, refusing seed times unless the class sets
    :attr:`temporal`.

    Examples
    --------
    A sampler written against the protocol: every node's only neighbour is itself (an MLP
    run as a GNN):

    >>> import torch
    >>> from graphsys.sampling import Block, Sampler
    >>> class SelfLoops(Sampler):
    ...     num_nodes, num_layers = 10, 2
    ...     def sample_blocks(self, seeds, rng_seed=0):
    ...         s = torch.as_tensor(seeds)
    ...         loop = torch.arange(len(s))
    ...         return [Block(s, len(s), loop, loop)] * self.num_layers
    >>> [b.num_edges for b in SelfLoops().sample_blocks([4, 7])]
    [2, 2]

    The built-in samplers implement it:

    >>> from graphsys.sampling import NeighborSampler, TemporalNeighborSampler
    >>> issubclass(NeighborSampler, Sampler), issubclass(TemporalNeighborSampler, Sampler)
    (True, True)
    """

    #: Whether :meth:`sample_blocks` honours the seed times of a :class:`SamplerInput`.
    temporal: bool = False

    @property
    @abstractmethod
    def num_nodes(self) -> int:
        """Nodes of the sampled node type; seed ids lie in ``[0, num_nodes)``."""

    @property
    @abstractmethod
    def num_layers(self) -> int:
        """Blocks per batch (one per GNN layer)."""

    @abstractmethod
    def sample_blocks(self, seeds, rng_seed: int = 0) -> list[Block]:
        """The blocks of one batch, input layer first.

        Parameters
        ----------
        seeds : int tensor, array or sequence (S,), or SamplerInput
            Unique node ids of the batch (``blocks[-1].dst_nodes`` equals them), or the
            ids with a time each for a :attr:`temporal` sampler.
        rng_seed : int, optional
            Seed of the batch's random choices (default 0).

        Returns
        -------
        list of Block
            :attr:`num_layers` blocks; ``blocks[0].src_nodes`` are the nodes whose input
            features the first layer reads. Deterministic in ``(seeds, rng_seed)``.
        """

    def seed_nodes(self, seeds):
        """The seed ids of ``seeds`` (a :class:`SamplerInput`'s ``nodes``, else ``seeds``
        as given); seed times are refused in one line unless :attr:`temporal`."""
        if not isinstance(seeds, SamplerInput):
            return seeds
        if seeds.times is not None:
            refuse_times(self)
        return seeds.nodes


def refuse_times(sampler) -> None:
    """Raise the one-line refusal of seed times, unless ``sampler`` is temporal."""
    if not getattr(sampler, "temporal", False):
        raise GraphsysError(f"{type(sampler).__name__} samples without time: it cannot "
                            f"honour seed times (TemporalNeighborSampler samples the past "
                            f"of each seed)")


class LayerwiseSampler(Sampler):
    """A :class:`Sampler` that draws one layer at a time, from the output layer outwards:
    each layer's source nodes are the next (input side) layer's destinations, and layer
    ``l`` draws from ``derive_seed(rng_seed, l)``. Subclasses implement
    :meth:`_layer_block`, drawing each destination node's picks from a stream keyed by
    that seed and the node's id, so the block of a subset of destinations is the
    corresponding part of the block of all of them."""

    def sample_blocks(self, seeds, rng_seed: int = 0, *, parallel: bool | None = None
                      ) -> list[Block]:
        """The blocks of one batch, input layer first (see :meth:`Sampler.sample_blocks`).

        ``parallel``: run the numba kernels on every thread (True) or on the calling one
        (False); None (default) is True except inside a loader's worker threads, where
        the workers are the parallelism. The blocks are the same either way.
        """
        dst = as_seed_array(self.seed_nodes(seeds), self.num_nodes)
        blocks: list[Block] = []
        for layer in range(self.num_layers - 1, -1, -1):
            block = self._layer_block(dst, layer, derive_seed(rng_seed, layer),
                                      parallel=parallel, check=not blocks)
            blocks.insert(0, block)
            dst = block.src_nodes.numpy()
        return blocks

    @abstractmethod
    def _layer_block(self, dst: np.ndarray, layer: int, rng_seed: int, *,
                     parallel: bool | None = None, check: bool = True) -> Block:
        """Layer ``layer``'s block for the destinations ``dst`` (int64, unique; checked when
        ``check``), drawn from ``rng_seed`` as given."""
