"""Full-graph (full-batch) training: every node is a destination of every layer.

With ``TrainConfig.full_graph`` the node task takes one optimiser step per epoch on the whole
graph, as Kipf & Welling's GCN and PyG's / DGL's Planetoid examples do, instead of sampling
the training nodes' neighbourhoods. Each layer then sees every node's full neighbourhood, so
a degree-normalised conv (GCN) uses the node's degree in the graph, not its degree inside a
sampled block, and nothing is sampled or relabelled after the first epoch: the blocks are
built once.
"""

from __future__ import annotations

import numpy as np
import torch

from graphsys.errors import ParameterError
from graphsys.gnn.conv.spec import random_walk_sampling
from graphsys.sampling.adjacency import Adjacency
from graphsys.sampling.block import Block


def full_graph_blocks(adj: Adjacency, num_layers: int) -> list[Block]:
    """``num_layers`` references to one :class:`Block` whose sources and destinations are all
    ``adj.num_rows`` nodes in id order and whose edges are ``adj``'s: row ``v`` lists the
    in-neighbours ``u`` of ``v`` (edge ``u -> v``). int64 ``edge_src``/``edge_dst`` (E,)."""
    n = adj.num_rows
    edge_dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(adj.indptr)))
    block = Block(torch.arange(n, dtype=torch.int64), n,
                  torch.from_numpy(np.asarray(adj.indices, dtype=np.int64)),
                  torch.from_numpy(edge_dst))
    return [block] * num_layers


def check_full_graph(model: str, fanouts: list[int] | None) -> None:
    """A one-line :class:`ParameterError` unless full-graph training applies: every layer
    takes every neighbour (``fanouts`` None or all -1) and the model does not sample its
    neighbourhoods by random walks (PinSage)."""
    if random_walk_sampling(model):
        raise ParameterError("full_graph", f"needs full neighbourhoods; {model} samples its "
                                           f"neighbourhoods by random walks")
    if fanouts is not None and any(f != -1 for f in fanouts):
        raise ParameterError("full_graph", f"needs every neighbour in every layer (fanouts "
                                           f"-1), got fanouts {fanouts}")
