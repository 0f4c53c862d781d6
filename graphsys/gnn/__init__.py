"""GNN models, minibatch training and streaming inference over stored graphs.

* :mod:`graphsys.gnn.conv`: :class:`PinSageConv`, :class:`SAGEConv`, :class:`GCNConv`,
  :class:`GATConv`, :class:`GINConv` (pure torch, each with its formula in the docstring).
* Typed graphs: :class:`RGCNConv` (relational, basis / block-diagonal weights) over
  :class:`~graphsys.sampling.TypedBlock` s, :class:`HeteroConv` (one conv per relation)
  over :class:`~graphsys.sampling.HeteroBlock` s, :class:`TypedInput` (per-type features
  or learned embeddings); :func:`train` with ``TrainConfig(model="rgcn")`` trains R-GCN +
  DistMult link prediction (FB15k-237; :class:`RGCNSettings`).
* :func:`train` also takes the caller's own ``nn.Module``, loss and features
  (:mod:`graphsys.gnn.custom`); :func:`propagate` writes SGC/SIGN features out of core.
* :class:`GNN`: a stack of one of them; :func:`train`, the one training entry point (node
  classification or link prediction) with background sampling workers, bounded prefetch,
  early stopping, pickle-free checkpoints and metric logging; it returns a
  :class:`GNNResult`.
* :class:`NodeLoader`: minibatches of seed nodes, links or timed events with their sampled
  blocks, features and labels (PyG's ``NeighborLoader`` and ``LinkNeighborLoader``, DGL's
  ``DataLoader``), for a training loop of one's own; :class:`NodeStepGraph`: a GraphSAGE
  node-classification step recorded as one CUDA graph (sample to update, no host read).
* :func:`layerwise_inference` / :func:`embed_checkpoint`: each layer over all nodes once,
  partition by partition, writing Arrow embeddings that
  :meth:`graphsys.embed.Embeddings.load` opens (``nearest``, ``vectors``, ``to_numpy``).
"""

from graphsys.gnn.checkpoint import load_checkpoint, save_checkpoint
from graphsys.gnn.config import RGCNSettings, TrainConfig, load_train_config
from graphsys.gnn.conv import GATConv, GCNConv, GINConv, PinSageConv, RGCNConv, SAGEConv
from graphsys.gnn.embed import embed_checkpoint
from graphsys.gnn.hetero import HeteroConv, TypedInput
from graphsys.gnn.inference import layerwise_inference
from graphsys.gnn.loader import NodeLoader
from graphsys.gnn.loop import GNNResult
from graphsys.gnn.model import GNN
from graphsys.gnn.propagate import propagate, read_hop, sign_features
from graphsys.gnn.recommendation import recommend
from graphsys.gnn.step_graph import NodeStepGraph
from graphsys.gnn.training import train

__all__ = [
    "GNN",
    "GATConv",
    "GCNConv",
    "GINConv",
    "GNNResult",
    "HeteroConv",
    "NodeLoader",
    "NodeStepGraph",
    "PinSageConv",
    "RGCNConv",
    "RGCNSettings",
    "SAGEConv",
    "TrainConfig",
    "TypedInput",
    "embed_checkpoint",
    "layerwise_inference",
    "load_checkpoint",
    "load_train_config",
    "propagate",
    "read_hop",
    "recommend",
    "save_checkpoint",
    "sign_features",
    "train",
]
