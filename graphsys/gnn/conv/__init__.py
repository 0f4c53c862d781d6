"""Graph convolution layers over :class:`~graphsys.sampling.Block` s (pure torch)."""

from graphsys.gnn.conv.gat import GATConv
from graphsys.gnn.conv.gcn import GCNConv
from graphsys.gnn.conv.gin import GINConv
from graphsys.gnn.conv.pinsage import PinSageConv
from graphsys.gnn.conv.rgcn import RGCNConv
from graphsys.gnn.conv.sage import SAGEConv

__all__ = ["GATConv", "GCNConv", "GINConv", "PinSageConv", "RGCNConv", "SAGEConv"]
