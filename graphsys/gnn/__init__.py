"""GNN models, minibatch training and streaming inference over stored graphs.

* :mod:`graphsys.gnn.conv`: :class:`PinSageConv`, :class:`SAGEConv`, :class:`GCNConv`
  (pure torch, each with its formula in the docstring).
* :class:`GNN`: a stack of one of them; :func:`train` (node classification or link
  prediction) with background sampling workers, bounded prefetch, early stopping,
  pickle-free checkpoints and metric logging.
* :func:`layerwise_inference` / :func:`embed_checkpoint`: each layer over all nodes once,
  partition by partition, writing Arrow embeddings that
  :meth:`graphsys.embed.Embeddings.load` opens (``nearest``, ``vectors``, ``to_numpy``).
"""

from graphsys.gnn.checkpoint import load_checkpoint, save_checkpoint
from graphsys.gnn.conv import GCNConv, PinSageConv, SAGEConv
from graphsys.gnn.embed import embed_checkpoint
from graphsys.gnn.inference import layerwise_inference
from graphsys.gnn.loader import PrefetchLoader
from graphsys.gnn.model import GNN
from graphsys.gnn.train import (
                                TrainConfig,
                                TrainResult,
                                train,
                                train_link_prediction,
                                train_node_classification,
)

__all__ = [
                                "GNN",
                                "GCNConv",
                                "PinSageConv",
                                "PrefetchLoader",
                                "SAGEConv",
                                "TrainConfig",
                                "TrainResult",
                                "embed_checkpoint",
                                "layerwise_inference",
                                "load_checkpoint",
                                "save_checkpoint",
                                "train",
                                "train_link_prediction",
                                "train_node_classification",
]
