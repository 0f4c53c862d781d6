"""Graph samplers for GNN training, numba-parallel on CPU.

* :class:`Sampler`: the protocol every minibatch sampler implements:
  ``sample_blocks(seeds, rng_seed=0) -> list[Block]`` (input layer first), ``num_nodes``,
  ``num_layers``; seeds bare or as a :class:`SamplerInput` with a time each (honoured by a
  ``temporal`` sampler, refused by the others); :class:`graphsys.gnn.NodeLoader` batches
  seeds through one.
* :class:`NeighborSampler`: uniform per-layer fanouts (GraphSAGE), with or without
  replacement.
* :class:`DeviceNeighborSampler`: the same blocks drawn by torch ops where the CSR is
  held (GPU memory; the CPU, where it is tested), :mod:`graphsys.sampling.device`.
* :class:`DeviceFeatureCache`: the feature rows a sampler reads most (found by
  :func:`presample_hot_nodes`) on the device, the rest read from the host table,
  :mod:`graphsys.sampling.feature_cache`.
* :class:`PinSAGESampler` / :class:`RandomWalkNeighborSampler`: PinSage random-walk
  importance neighbourhoods (DGL's arguments), blocks weighted by visit counts.
* :class:`HeteroNeighborSampler`: per-relation fanouts on a typed graph, returning
  :class:`TypedBlock` s (edges carry relation ids) or per-type :class:`HeteroBlock` s.
* :class:`TemporalNeighborSampler`: for each event ``(node, t)``, the most recent or
  uniform neighbours among the edges strictly before ``t`` (TGAT / TGN), on the temporal
  adjacency index; as a :class:`Sampler`, blocks of events (:class:`TemporalBlock`).
* :class:`UniformNegativeSampler`, :class:`PPRHardNegativeSampler`: link-prediction
  negatives.

Every sampler takes an explicit ``rng_seed`` per call (default 0), an integer in [-2**63,
2**64), NumPy's and torch's too (None, a float or a bool is refused: no call draws fresh
entropy; the one-layer kernels, :func:`sample_neighbors` and
``TemporalNeighborSampler.sample_hop``, take their stream's seed as given, in [0, 2**63));
outputs depend only on the inputs and that seed, not on the thread or worker count. The
neighbourhood samplers key their random streams by node id: a node's sampled neighbourhood
depends on ``(rng_seed, layer, node)`` alone (and the relation, for
:class:`HeteroNeighborSampler`), never on the other seeds of its batch, so data-parallel
ranks that split a batch draw what the whole batch draws. The negative samplers draw per
batch, in query order. Samplers hold only read-only arrays, so worker threads share them.
Node ids are type-local (``0..num_nodes(type)-1``, the storage layer's type-global order).
"""

from graphsys.sampling.adjacency import (
                                         Adjacency,
                                         bipartite_adjacency,
                                         from_coo,
                                         homogeneous_adjacency,
                                         mapped_adjacency,
)
from graphsys.sampling.base import Sampler, SamplerInput
from graphsys.sampling.block import Block, MiniBatch, PaddedBlock
from graphsys.sampling.device import DeviceNeighborSampler
from graphsys.sampling.feature_cache import DeviceFeatureCache, presample_hot_nodes
from graphsys.sampling.hetero import HeteroBlock, HeteroNeighborSampler, TypedBlock
from graphsys.sampling.negative import (
                                         PPRHardNegativeSampler,
                                         UniformNegativeSampler,
                                         metapath_ppr,
)
from graphsys.sampling.neighbor import NeighborSampler, sample_neighbors
from graphsys.sampling.pinsage import PinSAGESampler, RandomWalkNeighborSampler
from graphsys.sampling.temporal import TemporalBlock, TemporalNeighbors, TemporalNeighborSampler

__all__ = [
    "Adjacency", "Block", "DeviceFeatureCache", "DeviceNeighborSampler", "HeteroBlock",
    "HeteroNeighborSampler",
    "MiniBatch",
    "NeighborSampler", "PPRHardNegativeSampler", "PaddedBlock", "PinSAGESampler",
    "RandomWalkNeighborSampler", "Sampler", "SamplerInput", "TemporalBlock",
    "TemporalNeighborSampler", "TemporalNeighbors",
    "TypedBlock",
    "UniformNegativeSampler", "bipartite_adjacency", "from_coo", "homogeneous_adjacency",
    "mapped_adjacency", "metapath_ppr", "presample_hot_nodes", "sample_neighbors",
]
