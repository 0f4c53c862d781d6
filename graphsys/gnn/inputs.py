"""What layer 0 of each task of :func:`graphsys.gnn.train` reads.

Node task: :func:`node_task_data` finds the labelled entity type, its features, labels and
split; features stay memory-mapped where stored (:class:`MappedFeatures`, gathered per
batch) and :class:`NodeInput` feeds them, or a learned id embedding, to the model. Item
task: :class:`ItemInput`, a learned id embedding plus a linear map of item features, and
the per-item score bias. Held-out-edge link task: :func:`link_input`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from graphsys.errors import GraphsysError
from graphsys.gnn.link import LinkData
from graphsys.gnn.loader import RowBuffers
from graphsys.sampling._util import seed_entropy
from graphsys.sampling.features import feature_rows
from graphsys.storage.graph import Graph
from graphsys.storage.partitioned_rows import PartitionedRows


def node_task_data(graph: Graph, entity_type: str | None = None, seed: int = 0,
                   features=None, *, mapped: bool = False) -> dict[str, Any]:
    """Features (float32 (N, F): ``features`` as given (a node column name or an array /
    tensor (N, F)), else the ``feat`` column row-normalised, else None), labels int64 (N,),
    split index tensors and the entity type of the node task; raises if the graph has no
    labels. With ``mapped``, a stored feature column stays in its memory map, whether in a
    file of its own or in the node table
    (:meth:`~graphsys.storage.graph.Graph.mapped_features`): ``x`` is then a
    :class:`MappedFeatures`."""
    etypes = [entity_type] if entity_type else graph.entity_types
    labelled = [t for t in etypes if "label" in graph.node_columns(t)]
    if not labelled:
        raise GraphsysError(f"the node task needs a 'label' node column; entity type(s) "
                            f"{', '.join(etypes)} of {graph.path} have none")
    et = labelled[0]
    labels = graph.node_column("label", et)
    if (labels >= 0).sum() == 0:
        raise GraphsysError(f"entity type {et!r} has a label column but no labelled node")
    n = len(labels)
    if labels.min() < -1 or labels.max() >= max(n, 2):
        bad = int(labels.min() if labels.min() < -1 else labels.max())
        raise GraphsysError(f"entity type {et!r}: label {bad:,} is outside -1 (unknown) .. "
                            f"{max(n, 2) - 1:,} (a class id per node at most; corrupted "
                            f"labels?)")
    cols = graph.node_columns(et)
    name = features if isinstance(features, str) else "feat" if features is None else None
    col = next((c for c in graph.entity_type(et).columns if c.name == name), None)
    if mapped and col is not None and col.kind == "features":
        stored = graph.mapped_features(name, et)
        x = MappedFeatures(stored, row_sums(stored) if features is None else None)
    elif isinstance(features, str):
        x = graph.node_column(features, et).astype(np.float32)
        if x.ndim != 2:
            raise GraphsysError(f"features: node column {features!r} is not a feature column")
    elif features is not None:
        x = (features.detach().cpu() if torch.is_tensor(features) else
             torch.from_numpy(np.asarray(features))).float().numpy()
        if x.shape[:1] != (n,) or x.ndim != 2:
            raise GraphsysError(f"features has shape {tuple(x.shape)}, expected ({n}, F) "
                                f"(one row per {et!r} node)")
        if not np.isfinite(x).all():      # the run ended as "diverged (lower lr?)"
            raise GraphsysError(f"features: row {int(np.flatnonzero(~np.isfinite(x).all(1))[0])}"
                                f" holds NaN or infinity (as float32)")
    elif "feat" in cols:
        x = graph.node_column("feat", et).astype(np.float32)
        rs = np.abs(x).sum(1, keepdims=True)
        x = x / np.where(rs > 0, rs, 1.0)
    else:
        x = None
    if {"train_mask", "val_mask", "test_mask"} <= set(cols):
        masks = [graph.node_column(m, et) for m in ("train_mask", "val_mask", "test_mask")]
    else:
        ids = np.flatnonzero(labels >= 0)
        perm = np.random.default_rng(seed_entropy(seed)).permutation(ids)
        a, b = int(0.6 * len(perm)), int(0.8 * len(perm))
        masks = [np.zeros(n, bool) for _ in range(3)]
        for m, part in zip(masks, (perm[:a], perm[a:b], perm[b:])):
            m[part] = True
    split = {k: torch.from_numpy(np.flatnonzero(m & (labels >= 0)))
             for k, m in zip(("train", "val", "test"), masks)}
    if len(split["train"]) == 0 or len(split["test"]) == 0:
        raise GraphsysError(f"entity type {et!r}: empty train or test split")
    return {"entity_type": et,
            "x": x if x is None or isinstance(x, MappedFeatures) else torch.from_numpy(x),
            "labels": torch.from_numpy(labels), "split": split,
            "num_classes": int(labels.max()) + 1, "num_nodes": n}


def row_sums(column: np.ndarray, chunk_rows: int = 1 << 16) -> np.ndarray:
    """The divisors that row-normalise ``column`` (N, F) to absolute sum 1: float32 (N,), 1
    for an all-zero row; read ``chunk_rows`` rows at a time (a mapped column stays
    mapped)."""
    out = np.empty(len(column), np.float32)
    for start in range(0, len(column), chunk_rows):
        rs = np.abs(column[start:start + chunk_rows].astype(np.float32)).sum(1)
        out[start:start + chunk_rows] = np.where(rs > 0, rs, np.float32(1.0))
    return out


class MappedFeatures:
    """Node features left in a memory-mapped node column
    (:meth:`~graphsys.storage.graph.Graph.mapped_features`: an array, or a
    :class:`~graphsys.storage.partitioned_rows.PartitionedRows` of a node table's partitions):
    the rows a batch needs are gathered from the mapping
    (:func:`~graphsys.sampling.features.feature_rows`), so the processes of a data-parallel
    run share the page cache instead of each holding a copy.
    ``divisors``: float32 (N,) row divisors (:func:`row_sums`), or None for the rows as
    stored; the gathered rows equal those of the whole column normalised in memory."""

    def __init__(self, column: np.ndarray | PartitionedRows,
                 divisors: np.ndarray | None = None):
        self.column, self.divisors = column, divisors
        # an evaluation reads most rows at once: into one array kept between evaluations
        # (a fresh one is faulted in, and compacted into huge pages, on every pass)
        self._buffers = RowBuffers(keep=1)

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.column.shape)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows ``ids`` (int64 (B,)) as float32 (B, F)."""
        f32 = self.column.dtype == np.float32     # float16 rows are widened into a new array
        return self.rows_into(ids, self._buffers.take(len(ids), self.column.shape[1])
                              if f32 else None)

    def rows_into(self, ids: torch.Tensor, out: np.ndarray | None) -> torch.Tensor:
        """:meth:`rows` written to ``out``, a C-contiguous float32 (B, F) array (a loader's
        reused buffer; None: a new one)."""
        ids = ids.cpu()
        x = feature_rows(self.column, ids, out if self.column.dtype == np.float32 else None)
        if self.divisors is not None:
            x /= torch.from_numpy(self.divisors[ids.numpy()])[:, None]
        return x


class NodeInput(nn.Module):
    """Layer-0 features: stored features (a tensor, or a :class:`MappedFeatures` gathered
    per batch), or a learned id embedding without them."""

    def __init__(self, x: torch.Tensor | MappedFeatures | None, num_nodes: int, dim: int):
        super().__init__()
        self.mapped = x if isinstance(x, MappedFeatures) else None
        self.register_buffer("x", x if torch.is_tensor(x) else torch.zeros(0),
                             persistent=False)
        self.emb = nn.Embedding(num_nodes, dim) if x is None else None
        self.dim = dim if x is None else x.shape[1]
        self.num_nodes = num_nodes

    def forward(self, nodes: torch.Tensor) -> torch.Tensor:
        if self.emb is not None:
            return self.emb(nodes)
        if self.mapped is not None:
            return self.mapped.rows(nodes).to(self.x.device)
        return self.x.index_select(0, nodes)

    def all_nodes(self) -> torch.Tensor:
        """Every node's row in id order: ``self(arange(num_nodes))`` without the gather
        (a mapped column: read whole)."""
        if self.mapped is not None:
            return self(torch.arange(self.num_nodes))
        return self.emb.weight if self.emb is not None else self.x

class ItemInput(nn.Module):
    """Layer-0 item representation: learned id embedding + linear map of item features;
    also holds the per-item score bias ``bias`` float32 (N,) of the link task (as the
    item-to-item scorer of DGL's PinSage example; it learns item popularity)."""

    def __init__(self, num_items: int, feat: torch.Tensor | None, dim: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(num_items))
        self.emb = nn.Embedding(num_items, dim)
        nn.init.normal_(self.emb.weight, std=0.1)
        self.register_buffer("feat", feat if feat is not None else torch.zeros(0),
                             persistent=False)
        self.proj = nn.Linear(feat.shape[1], dim) if feat is not None else None
        self.dim = dim

    def forward(self, nodes: torch.Tensor) -> torch.Tensor:
        h = self.emb(nodes)
        if self.proj is not None:
            h = h + self.proj(self.feat.index_select(0, nodes))
        return h


def link_input(graph: Graph, data: LinkData, dim: int) -> NodeInput:
    """Layer-0 input of the held-out-edge link task: one entity type with a ``feat``
    column: its features as stored; else a learned ``dim``-wide embedding per node of the
    node space."""
    if len(data.types) == 1 and "feat" in graph.node_columns(data.types[0][0]):
        x = graph.node_column("feat", data.types[0][0]).astype(np.float32)
        return NodeInput(torch.from_numpy(x), data.num_nodes, dim)
    return NodeInput(None, data.num_nodes, dim)
