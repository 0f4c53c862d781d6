"""The samplers and batches of each task of :func:`graphsys.gnn.train`.

Training draws fresh neighbourhoods every batch: :func:`node_sampler` (node task),
:func:`link_sampler` (held-out-edge link task), :func:`walk_sampler` (PinSage walks over a
meta-path; the item task); the link tasks batch their pairs with
:class:`~graphsys.gnn.NodeLoader` (``links=``). Evaluation runs on fixed blocks,
the same at every evaluation: :func:`eval_blocks` (full neighbourhoods, or a walk sample
fixed by the seed; streaming inference), :func:`node_eval_sampler` and
:func:`fixed_blocks` (the node task's validation and test seeds).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphsys.gnn.config import TrainConfig
from graphsys.gnn.conv.spec import random_walk_sampling
from graphsys.sampling._util import derive_seed
from graphsys.sampling.adjacency import Adjacency
from graphsys.sampling.block import Block
from graphsys.sampling.neighbor import NeighborSampler
from graphsys.sampling.pinsage import RandomWalkNeighborSampler


def node_sampler(cfg: TrainConfig, adj: Adjacency) -> NeighborSampler | RandomWalkNeighborSampler:
    """The node task's training sampler over ``adj``: uniform neighbours with
    ``cfg.fanouts`` (default every neighbour, 2 layers), or PinSage walks for a model that
    samples by random walks (``fanouts[l]`` neighbours in layer ``l``, 10 for -1)."""
    return _sampler(cfg, adj, cfg.fanouts or [-1, -1])


def _sampler(cfg: TrainConfig, adj: Adjacency, fanouts: list[int]
             ) -> NeighborSampler | RandomWalkNeighborSampler:
    """PinSage walks over ``adj`` for a model that samples by random walks, else uniform
    neighbours, with ``fanouts``."""
    if random_walk_sampling(cfg.model):
        return walk_sampler(cfg, adj, adj, fanouts)
    return NeighborSampler(adj, fanouts)


def walk_sampler(cfg: TrainConfig, fw: Adjacency, bw: Adjacency, fanouts: list[int]
                 ) -> RandomWalkNeighborSampler:
    """PinSage walks over the meta-path ``fw``, ``bw`` with ``cfg``'s walk parameters,
    ``fanouts[l]`` neighbours in layer ``l`` (10 for -1)."""
    return RandomWalkNeighborSampler(fw, bw, cfg.num_traversals, cfg.termination_prob,
                                     cfg.num_random_walks, [f if f > 0 else 10 for f in fanouts])


def eval_blocks(sampler: NeighborSampler | RandomWalkNeighborSampler, seed: int
                ) -> Callable[[np.ndarray, int], Block]:
    """``(dst, layer) -> Block``: the blocks evaluation and streaming inference run on:
    full neighbourhoods (uniform sampler), or a PinSage sample fixed by ``seed``."""
    if isinstance(sampler, RandomWalkNeighborSampler):
        return lambda dst, layer: sampler._layer_block(
            dst, layer, derive_seed(seed, 7919, layer), parallel=False, check=False)
    full = NeighborSampler(sampler.adj, [-1] * sampler.num_layers)
    return lambda dst, layer: full._layer_block(dst, layer, 0, parallel=False, check=False)


def node_eval_sampler(cfg: TrainConfig, adj: Adjacency, sampler: NeighborSampler |
                      RandomWalkNeighborSampler) -> NeighborSampler | RandomWalkNeighborSampler:
    """The sampler of the node task's validation and test neighbourhoods:
    ``cfg.eval_fanouts`` (``[-1]``: every neighbour in every layer), else the training
    ``cfg.fanouts``; PinSage walks for a model that samples by random walks."""
    fanouts = cfg.eval_fanouts or cfg.fanouts or [-1, -1]
    return _sampler(cfg, adj, fanouts * sampler.num_layers if len(fanouts) == 1 else fanouts)


def fixed_blocks(sampler: NeighborSampler | RandomWalkNeighborSampler, seed: int
                 ) -> Callable[[np.ndarray, int], Block]:
    """``(dst, layer) -> Block``: ``sampler``'s layer-``layer`` block of ``dst``, drawn
    with a seed fixed by ``seed`` and the layer (the same sample at every evaluation).
    Uniform picks are drawn on every thread (each node's picks depend on the seed and the
    node alone); walks on the calling thread."""
    par = None if isinstance(sampler, NeighborSampler) else False
    return lambda dst, layer: sampler._layer_block(
        dst, layer, derive_seed(seed, 7919, layer), parallel=par, check=False)


def link_sampler(cfg: TrainConfig, adj: Adjacency
                 ) -> NeighborSampler | RandomWalkNeighborSampler:
    """The held-out-edge link task's sampler over the training graph ``adj``: uniform
    neighbours with ``cfg.fanouts`` (default ``[10, 10]``), or PinSage walks for a model
    that samples by random walks."""
    return _sampler(cfg, adj, cfg.fanouts or [10, 10])
