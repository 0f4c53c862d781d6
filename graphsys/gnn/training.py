"""Minibatch GNN training: node classification and link prediction / item recommendation.

:func:`train` is the one entry point; it dispatches on ``TrainConfig.task``. Both tasks
run the same loop: background threads sample the batches' blocks (bounded prefetch, moved
to the device; the node task's batches come from a :class:`~graphsys.gnn.NodeLoader`,
the link task's pair batches from the same internal prefetch pipeline), the model takes one
optimiser step per batch, validation runs after every ``eval_every`` epochs (node task: on
the validation seeds' neighbourhoods, see below; link task: layer-wise streaming inference
over every item), the best model by the validation metric is kept (early stopping after
``patience`` evaluations without improvement) and checkpointed when ``out`` is set, and one
JSON line per evaluation is appended to ``<out>/metrics.jsonl`` and passed to ``log``.
``progress=True`` shows a tqdm bar (stderr) over the epochs' batches, with the epoch, the
loss and the validation metric.

Node task (``task="node"``). The entity type with a ``label`` column;
features ``feat`` (row-normalised to sum 1, as the GCN/GraphSAGE papers do for Cora) or the
caller's ``features`` (a node column name or an (N, F) array, used as given); splits
``train_mask``/``val_mask``/``test_mask`` when stored (the Cora registry loader draws 20
nodes per class for training, then 500 validation and 1000 test nodes, with
``numpy.random.default_rng(0)``: Planetoid *sizes* on a seeded random node set, not the
Planetoid pickle's node set), else a seeded 60/20/20 split of the labelled nodes. The graph
is used undirected. Metric: accuracy of the best-validation model on the test mask. With
``full_graph`` (one step per epoch on the whole graph, CPU), features that are at most 5 %
nonzero enter a first layer that declares ``sparse_input`` as a CSR tensor
(:mod:`graphsys.gnn.sparse_input`): the same results, the products in O(nonzeros).
The model is a builtin (:data:`~graphsys.plugins.GNN_MODELS`), a ``module:Factory`` spec, or
any ``nn.Module`` passed as ``model=`` (see :mod:`graphsys.gnn.custom`; called as
``TrainConfig.inputs`` says; trained on uniform
neighbour samples with ``fanouts``); ``loss(logits, y)`` defaults to cross-entropy.
Validation and test accuracy are computed on those seeds only, on neighbourhoods drawn with
``eval_fanouts`` (default: the training fanouts; ``[-1]``: full) and a fixed seed, so every
evaluation sees the same samples: a builtin model layer by layer over the nodes the seeds
need (each node's layer state once, :func:`~graphsys.gnn.inference.layerwise_inference_on`;
the final test and validation seeds in one pass, their shared nodes once), a model of
one's own on batches of seeds; ``train_accuracy`` is measured on the epoch's
training batches as they were trained (dropout on). ``layerwise_inference=True`` evaluates
every node of the graph on full neighbourhoods instead. Each record also holds
``train_seconds`` and ``eval_seconds`` (this rank's time so far in training steps and in
evaluations); evaluations are the trace range ``gnn.eval``.

Data-parallel node training (``distributed``, see :func:`train`): batch ``i`` of an epoch
is the same global batch on every rank, and rank ``r`` of ``W`` trains positions
``[r b // W, (r+1) b // W)`` of it; the mean loss of rank ``r``'s share is scaled by
``W b_r / b`` before DistributedDataParallel averages the gradients, which makes the update
the global batch's. Every rank samples its share with the global batch's random seed and
the samplers key their streams by node id (:mod:`graphsys.sampling`), so a rank's seeds
get the neighbourhoods they have in the whole batch: without dropout ``W`` ranks follow
one rank's trajectory to float rounding, sampled fanouts included. Dropout masks are drawn
per rank over the rank's own batch tensors, so with dropout the runs agree in distribution
only; a run is repeatable bit for bit for a fixed seed and world size.

Link task (``task="link"``), split ``TrainConfig.link_split``. ``random`` (the default
on a graph of one entity type) and ``time``: link prediction on held-out edges of any graph
(:mod:`graphsys.gnn.link`): the distinct edges are split into train/validation/test
(``link_val_fraction``, ``link_test_fraction``; seeded, or by timestamp); message passing
runs over the training edges only, and each training minibatch's own target edges are
removed from its sampled neighbourhoods (``link_exclude_targets``); a builtin GNN encodes
every node (the ``feat`` column of a one-type graph as stored, else a learned id embedding)
and an ``mlp`` (on ``z_h * z_t``), ``dot`` or ``distmult`` decoder scores pairs; the loss
is OGB's ``-mean log s(pos) - mean log(1 - s(neg))`` with ``num_negatives`` uniform
negative tails per training edge; each held-out edge is ranked against
``link_eval_negatives`` uniform tails (or all, -1), known edges filtered out:
``mrr``, ``hits@k`` and ``recall@k`` for each ``k`` in ``metrics_k``, and ``auc``;
validation MRR selects the model.

``user`` (the default on a graph whose relation joins two entity types): item
recommendation on a bipartite graph (e.g. MovieLens-100k, ``user``
-> ``item``): a graph with a ``valid`` edge set keeps its stored split (``graphsys
datasets ingest ... --split temporal``: the ``train`` edges train, ``valid`` selects the
model and stops early, ``test`` gives the final metrics); otherwise, for every user with
at least 3 interactions one interaction is held out for test and one for validation
(seeded); the training interactions form the training graph. Items get a learned
id embedding plus a linear map of their ``feat`` column (if any); neighbourhoods are
PinSage random-walk samples on the training graph (for every model). Training pairs are
``(item, item')`` joined by one training meta-path hop (item -> user -> item'); negatives
are uniform items plus, from the second epoch on, PinSage hard negatives from a band of
personalized-PageRank ranks. Loss: max-margin ``mean(relu(s(q, n) - s(q, p) + margin))``
with ``s(q, j) = <unit(z_q), unit(z_j)> + b_j`` (a learned per-item bias, as DGL's PinSage
example scores item pairs). Evaluation: a user's query vector is the
normalised mean of their training items' unit embeddings; all items except the user's
training (and validation) items are ranked by ``<query, unit(z_j)> + b_j``; ``hits@k`` =
share of users whose held-out item ranks in the top ``k`` (for each ``k`` in
``metrics_k``; ``recall@k``, the same with one held-out item per user), ``mrr`` = mean
reciprocal rank.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm import tqdm

from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.checkpoint import load_checkpoint, save_checkpoint
from graphsys.gnn.config import RGCN, TrainConfig
from graphsys.gnn.conv.spec import random_walk_sampling
from graphsys.gnn.custom import EVAL_CHUNK, caller, full_neighbourhood_outputs, load_factory
from graphsys.gnn.full_graph import full_graph_blocks
from graphsys.gnn.inference import (
    layerwise_inference,
    layerwise_inference_on,
    partition_ranges,
)
from graphsys.gnn.link import LinkData, LinkDecoder, evaluate_links, exclude_pairs, link_data
from graphsys.gnn.loader import NodeLoader, PrefetchLoader, RowBuffers
from graphsys.gnn.model import GNN
from graphsys.gnn.optim import adam
from graphsys.gnn.sparse_input import as_sparse_features
from graphsys.plugins import GNN_MODELS
from graphsys.progress import progress_bar
from graphsys.sampling._util import derive_seed
from graphsys.sampling.adjacency import (
    Adjacency,
    from_coo,
    homogeneous_adjacency,
    typed_edges,
)
from graphsys.sampling.block import Block, MiniBatch
from graphsys.sampling.features import feature_rows
from graphsys.sampling.negative import PPRHardNegativeSampler
from graphsys.sampling.neighbor import NeighborSampler
from graphsys.sampling.pinsage import RandomWalkNeighborSampler
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.partitioned_rows import PartitionedRows
from graphsys.trace import trace_range


@dataclass
class GNNResult:
    """What :func:`train` returns: the test metrics of the best-validation model, the
    evaluation history and the trained model.

    Attributes
    ----------
    metrics : dict of str to float
        Node task: ``test_accuracy`` and ``val_accuracy`` of the best-validation model;
        link task: ``hits@k``, ``recall@k`` (``k`` in ``metrics_k``) and ``mrr`` of the
        held-out test interactions (split ``user``), or the test edges' ``mrr``,
        ``hits@k``, ``recall@k``, ``auc`` and the best ``val_mrr`` (held-out edges).
    epochs : int
        Epochs run (fewer than ``TrainConfig.epochs`` after early stopping).
    seconds : float
        Wall-clock time of the whole run, evaluations included.
    history : list of dict
        One record per evaluation, as written to ``<out>/metrics.jsonl``: ``epoch``,
        ``loss``, the validation metrics, ``seconds`` and ``best`` (whether the model was
        kept).
    model : torch.nn.Module
        The trained model, holding the best-validation weights.
    extra : dict
        Task internals: ``input`` (the layer-0 input module), ``entity_type``, and
        ``sampler`` (node task) or ``embeddings`` (link task: every item's embedding).
        Node task also: ``world_size``, this process's ``rank``, ``ranks`` (per rank:
        ``rank``, the training ``seeds`` it stepped on and its training ``seconds``, in
        this call), ``train_seconds`` and ``eval_seconds`` (this rank's).

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.generators import sbm
    >>> from graphsys.gnn import TrainConfig, train
    >>> m = sbm(200, 1000, blocks=4, features=8, train_per_class=10, num_val=40, num_test=100)
    >>> nodes, edges = next(m.nodes()), next(m.edges())
    >>> g = graphsys.from_numpy(edges["src"], edges["dst"], tempfile.mkdtemp() + "/sbm",
    ...                         num_nodes=200, undirected=True,
    ...                         node_columns={k: v for k, v in nodes.items() if k != "id"})
    >>> result = train(g, TrainConfig(fanouts=[5, 5], hidden=16, epochs=3))
    >>> result.epochs, sorted(result.metrics), len(result.history)
    (3, ['test_accuracy', 'test_macro_f1', 'val_accuracy', 'val_macro_f1'], 3)
    >>> type(result.model).__name__, result.history[-1]["epoch"]
    ('GNN', 3)
    """

    metrics: dict[str, float]
    epochs: int
    seconds: float
    history: list[dict[str, Any]] = field(default_factory=list)
    model: nn.Module | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class _Monitor:
    """Early stopping on a validation metric (higher is better), best-state keeping,
    checkpointing and metric logging; with a validation loss too, the rule of
    ``selection="val_accuracy_and_loss"`` (:class:`~graphsys.gnn.config.TrainConfig`)."""

    def __init__(self, cfg: TrainConfig, out: Path | None, log: Callable[[dict], None] | None,
                 save: Callable[[Path], None]):
        self.cfg, self.out, self.log, self.save = cfg, out, log, save
        self.best = -float("inf")
        self.best_loss = float("inf")
        self.best_state = None
        self.bad = 0
        self.history: list[dict[str, Any]] = []
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "metrics.jsonl").write_text("")

    def state(self) -> dict[str, Any]:
        """What :meth:`restore` takes back: the bests, the patience count, the history."""
        return {"best": self.best, "best_loss": self.best_loss, "bad": self.bad,
                "history": self.history}

    def restore(self, state: dict[str, Any], best_state: dict[str, torch.Tensor] | None
                ) -> None:
        """Continue from :meth:`state` (and the kept model's ``best_state``); rewrites
        ``metrics.jsonl`` with the history so far."""
        self.best, self.best_loss = float(state["best"]), float(state["best_loss"])
        self.bad, self.history = int(state["bad"]), list(state["history"])
        self.best_state = best_state
        if self.out is not None:
            (self.out / "metrics.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in self.history))

    def step(self, model: nn.Module, record: dict[str, Any], value: float,
             loss: float | None = None) -> bool:
        """Record an evaluation; True when training should stop. Without ``loss`` a better
        ``value`` keeps the model and restarts the patience; with it (lower is better) either
        one reaching its best (``>=`` / ``<=``) restarts the patience and both together keep
        the model."""
        if loss is None:
            keep = improved = value > self.best
        else:
            keep = value >= self.best and loss <= self.best_loss
            improved = value >= self.best or loss <= self.best_loss
            self.best_loss = min(self.best_loss, loss)
        record["best"] = keep
        self.history.append(record)
        if self.out is not None:
            with open(self.out / "metrics.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
        if self.log is not None:
            self.log(record)
        if keep:
            self.best_state = copy.deepcopy(model.state_dict())
            if self.out is not None:
                self.save(self.out / "checkpoint")
        if improved:
            self.best, self.bad = max(self.best, value), 0
            return False
        self.bad += 1
        return self.bad >= self.cfg.patience


def _finite_loss(loss: float, epoch: int, batch: int, out: Path | None, *,
                 what: str = "") -> float:
    """``loss`` if finite, else the one-line error that stops a diverged run (the last
    checkpoint written, if any, is the last good model: nothing non-finite is saved)."""
    if math.isfinite(loss):
        return loss
    where = f"{what} after epoch {epoch}" if what else f"loss {loss} in epoch {epoch}, " \
        f"batch {batch}"
    kept = f"; {out / 'checkpoint'} keeps the last model saved" if out is not None else ""
    raise GraphsysError(f"training diverged: {where}{kept} (lower lr?)")


def _finite_params(modules: tuple[nn.Module, ...], epoch: int, out: Path | None) -> None:
    """Raise the diverged-run error of :func:`_finite_loss` if a parameter of ``modules``
    holds a NaN or an infinity after ``epoch`` (before it is evaluated or saved)."""
    for module in modules:
        for name, param in module.named_parameters():
            if not bool(torch.isfinite(param).all()):
                _finite_loss(float("nan"), epoch, -1, out, what=f"parameter {name} non-finite")


def _progress_bar(cfg: TrainConfig, batches_per_epoch: int, progress: bool) -> tqdm:
    """A bar over every batch of every epoch (early stopping ends it short)."""
    return progress_bar(total=cfg.epochs * batches_per_epoch, unit="batch", dynamic_ncols=True,
                desc=f"train {cfg.model}", disable=not progress)


def _seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed % (2 ** 32))


# -- node classification ------------------------------------------------------------------------

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
        perm = np.random.default_rng(seed).permutation(ids)
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


def node_sampler(cfg: TrainConfig, adj: Adjacency) -> NeighborSampler | RandomWalkNeighborSampler:
    """The node task's training sampler over ``adj``: uniform neighbours with
    ``cfg.fanouts`` (default every neighbour, 2 layers), or PinSage walks for a model that
    samples by random walks (``fanouts[l]`` neighbours in layer ``l``, 10 for -1)."""
    fanouts = cfg.fanouts or [-1, -1]
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


def node_model_dims(cfg: TrainConfig, in_dim: int, out_dim: int, num_layers: int
                    ) -> dict[str, Any]:
    """The keyword arguments a node-task model is built with: ``in_dim`` input features,
    ``cfg.hidden`` hidden units, ``out_dim`` classes, ``num_layers`` layers, ``cfg.dropout``."""
    return {"in_dim": in_dim, "hidden_dim": cfg.hidden, "out_dim": out_dim,
            "num_layers": num_layers, "dropout": cfg.dropout}


def build_node_model(cfg: TrainConfig, dims: dict[str, Any]) -> nn.Module:
    """The node task's model of ``cfg.model``: a builtin :class:`GNN` (``cfg.heads`` heads
    for gat) or a ``module:Factory`` spec called with ``dims``
    (:func:`node_model_dims`)."""
    if cfg.model in GNN_MODELS:
        return GNN(cfg.model, heads=cfg.heads, **dims)
    model = load_factory(cfg.model)(**dims)
    if not isinstance(model, nn.Module):
        raise GraphsysError(f"model {cfg.model!r} returned {type(model).__name__}, not "
                            f"a torch.nn.Module")
    return model


def node_eval_sampler(cfg: TrainConfig, adj: Adjacency, sampler: NeighborSampler |
                      RandomWalkNeighborSampler) -> NeighborSampler | RandomWalkNeighborSampler:
    """The sampler of the node task's validation and test neighbourhoods:
    ``cfg.eval_fanouts`` (``[-1]``: every neighbour in every layer), else the training
    ``cfg.fanouts``; PinSage walks for a model that samples by random walks."""
    fanouts = cfg.eval_fanouts or cfg.fanouts or [-1, -1]
    if len(fanouts) == 1:
        fanouts = fanouts * sampler.num_layers
    if random_walk_sampling(cfg.model):
        return walk_sampler(cfg, adj, adj, fanouts)
    return NeighborSampler(adj, fanouts)


def fixed_blocks(sampler: NeighborSampler | RandomWalkNeighborSampler, seed: int
                 ) -> Callable[[np.ndarray, int], Block]:
    """``(dst, layer) -> Block``: ``sampler``'s layer-``layer`` block of ``dst``, drawn
    with a seed fixed by ``seed`` and the layer (the same sample at every evaluation).
    Uniform picks are drawn on every thread (each node's picks depend on the seed and the
    node alone); walks on the calling thread."""
    par = None if isinstance(sampler, NeighborSampler) else False
    return lambda dst, layer: sampler._layer_block(
        dst, layer, derive_seed(seed, 7919, layer), parallel=par, check=False)


class _NodeNet(nn.Module):
    """The node task's trained modules as one (what DistributedDataParallel wraps): the
    layer-0 input and the model, called as ``cfg.inputs`` says."""

    def __init__(self, model: nn.Module, inp: NodeInput, call: Callable,
                 loader_dropout: bool = False):
        super().__init__()
        self.model, self.inp = model, inp
        object.__setattr__(self, "call", call)   # not a second registration of model
        #: a batch's ``x`` had the input dropout where the loader gathered it
        self.loader_dropout = loader_dropout

    def forward(self, blocks: list[Block], input_nodes: torch.Tensor,
                x: torch.Tensor | None) -> torch.Tensor:
        if x is None:
            return self.call(blocks, self.inp(input_nodes))
        return self.model(blocks, x, input_dropout=False) if self.loader_dropout else \
            self.call(blocks, x)


class _Ranks:
    """This process's place in a data-parallel run (one rank of one when not distributed):
    sums and gathers over the ranks through the default process group."""

    def __init__(self, distributed: bool, device: torch.device):
        self.distributed = distributed
        self.rank, self.world_size = 0, 1
        if distributed:
            from graphsys.bsp.distributed import TorchComm

            self.comm = TorchComm(device)
            self.rank, self.world_size = self.comm.rank, self.comm.world_size

    def share(self, ids: torch.Tensor) -> torch.Tensor:
        """This rank's contiguous share of ``ids``."""
        n, r, w = len(ids), self.rank, self.world_size
        return ids[r * n // w:(r + 1) * n // w]

    def sum(self, values: list[float]) -> list[float]:
        return self.comm.allreduce(values, ["sum"] * len(values)) if self.distributed \
            else [float(v) for v in values]

    def gather(self, values: list[float]) -> list[list[float]]:
        """Every rank's ``values`` (same length on all), in rank order."""
        if not self.distributed:
            return [[float(v) for v in values]]
        row = torch.tensor([values], dtype=torch.float64)
        return self.comm.allgather(row, [1] * self.world_size).cpu().tolist()


def _distributed_setup(distributed: bool | None, cfg: TrainConfig, device: torch.device
                       ) -> tuple[bool, bool, torch.device]:
    """``(distributed, owned, device)``: whether this run is one rank of a data-parallel
    group (None: when a group of several ranks is initialised, or ``torchrun``'s
    environment names several processes, whose group this call then initialises and
    owns), and the rank's device (``cuda:LOCAL_RANK`` for a CUDA run)."""
    import torch.distributed as dist

    from graphsys.bsp.distributed import init_from_env

    owned = False
    if distributed is None:
        initialised = dist.is_available() and dist.is_initialized()
        distributed = owned = init_from_env(device)
        owned = owned and not initialised
    elif distributed and not (dist.is_available() and dist.is_initialized()):
        raise ParameterError("distributed", "torch.distributed is not initialised (launch "
                             "with torchrun, or call init_process_group first)")
    if distributed:
        if cfg.task != "node" or cfg.full_graph:
            if owned:
                dist.destroy_process_group()
            raise ParameterError("distributed", "data-parallel training covers the node "
                                 "task on minibatches (not the link task, not full_graph)")
        if device.type == "cuda":
            local = int(os.environ.get("LOCAL_RANK", dist.get_rank() % torch.cuda.device_count()))
            torch.cuda.set_device(local)
            device = torch.device("cuda", local)
    return bool(distributed), owned, device


def _inputs_digest(graph: Graph, cfg: TrainConfig, model: nn.Module,
                   x: torch.Tensor | None) -> dict[str, str]:
    """What every rank of a data-parallel run must agree on: the graph, the config, the
    model's parameter names and shapes, and the features' shape."""
    from graphsys.bsp.distributed import graph_digest

    def sha(obj) -> str:
        return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()

    return {"graph": graph_digest(graph), "config": sha(_cfg_json(cfg)),
            "model": sha([type(model).__qualname__,
                          [(k, list(v.shape)) for k, v in model.state_dict().items()],
                          None if x is None else list(x.shape)])}


def _train_node_classification(graph: Graph, cfg: TrainConfig, *,
                               model: nn.Module | None = None, loss: Callable | None = None,
                               features=None, device="cpu", out: Path | None = None,
                               log: Callable[[dict], None] | None = None,
                               progress: bool = False, distributed: bool = False
                               ) -> GNNResult:
    """The node task of :func:`train` (see the module docstring); ``distributed``: one
    rank of the initialised default process group (data-parallel, see :func:`train`)."""
    t0 = time.perf_counter()
    _seed_all(cfg.seed)
    ranks = _Ranks(distributed, device)
    lead = ranks.rank == 0
    # a stored feature column stays mapped (the ranks share the page cache); the loader's
    # workers gather each batch's rows from it
    data = node_task_data(graph, cfg.entity_type, cfg.seed, features, mapped=True)
    et = data["entity_type"]
    adj = homogeneous_adjacency(graph, et, symmetric=True)
    sampler = node_sampler(cfg, adj)
    inp = NodeInput(data["x"], data["num_nodes"], cfg.hidden).to(device)
    dims = node_model_dims(cfg, inp.dim, data["num_classes"], sampler.num_layers)
    model = (model if model is not None else build_node_model(cfg, dims)).to(device)
    call = caller(model, cfg.inputs)
    loss = loss or F.cross_entropy
    opt = adam(model, inp, cfg.lr, cfg.weight_decay, cfg.weight_decay_layers)
    labels = data["labels"]
    train_ids = data["split"]["train"]
    ranges = partition_ranges(graph, et)
    meta = {"task": "node", "entity_type": et, "graph": str(graph.path),
            "train_config": _cfg_json(cfg), "has_features": data["x"] is not None,
            "world_size": ranks.world_size}
    # a builtin model's input dropout runs where the loader's workers gather the features
    # (a mapped column is gathered and normalised there too: MappedFeatures.rows)
    loader_dropout = (isinstance(model, GNN) and cfg.inputs == "blocks" and not cfg.full_graph
                      and data["x"] is not None and cfg.dropout > 0)
    net: nn.Module = _NodeNet(model, inp, call, loader_dropout)
    if distributed:
        from torch.nn.parallel import DistributedDataParallel

        from graphsys.bsp.distributed import check_same_inputs

        check_same_inputs(_inputs_digest(graph, cfg, model, data["x"]))
        # the features are read where they are, never broadcast; rank 0's parameters are
        # copied to every rank when DDP wraps the module, and no buffer is synchronised
        # (torch 2.13 deprecates the flag that says so, in favour of one older releases
        # lack: its warning is silenced here)
        DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(net, ["inp.x"])
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*broadcast_buffers.*",
                                    category=FutureWarning)
            net = DistributedDataParallel(net, device_ids=[device] if device.type == "cuda"
                                          else None, broadcast_buffers=False)
        # dropout masks differ between ranks (the parameters came from rank 0)
        torch.manual_seed(derive_seed(cfg.seed, 1, ranks.rank))
    eval_sampler = node_eval_sampler(cfg, adj, sampler)
    eval_fixed = fixed_blocks(eval_sampler, cfg.seed)

    def model_config() -> dict:
        return (model.config() if isinstance(model, GNN) else
                {"model": f"{type(model).__module__}:{type(model).__qualname__}", **dims})

    def save(path: Path):
        state = {f"model.{k}": v for k, v in model.state_dict().items()}
        state.update({f"input.{k}": v for k, v in inp.state_dict().items()})
        save_checkpoint(path, state, model_config(), meta)

    def whole_input() -> torch.Tensor:
        """Every node's layer-0 row for a full-graph step: CSR where sparse (below)."""
        return sparse_x if sparse_x is not None else inp.all_nodes()

    def all_outputs() -> torch.Tensor:
        """Every node's output on full neighbourhoods (full-graph steps, or
        ``cfg.layerwise_inference``)."""
        if whole is not None:
            return call(whole.blocks, whole_input())
        if isinstance(model, GNN):
            return layerwise_inference(model, inp, data["num_nodes"],
                                       eval_blocks(sampler, cfg.seed), ranges, device=device)
        return full_neighbourhood_outputs(call, inp, adj, sampler.num_layers,
                                          data["num_nodes"], device=device,
                                          num_workers=cfg.num_workers, prefetch=cfg.prefetch)

    val_plan: dict = {}     # the validation pass's blocks, the same at every evaluation

    def seed_outputs(ids: torch.Tensor, plan: dict | None = None) -> torch.Tensor:
        """The outputs of ``ids`` on their evaluation neighbourhoods only: a builtin model
        layer by layer over the nodes they need, a model of one's own on batches."""
        if isinstance(model, GNN):
            return layerwise_inference_on(model, inp, ids, eval_fixed, device=device,
                                          plan=plan, plan_bytes=EVAL_PLAN_BYTES)
        loader = NodeLoader(None, eval_sampler, ids, batch_size=EVAL_CHUNK, shuffle=False,
                            seed=derive_seed(cfg.seed, 7919), num_workers=cfg.num_workers,
                            prefetch=cfg.prefetch, features=data["x"],
                            labels=None,
                            device=device)
        parts = [call(b.blocks, b.x if b.x is not None else inp(b.input_nodes)).float().cpu()
                 for b in loader]
        return torch.cat(parts) if parts else torch.zeros(0, data["num_classes"])

    f1: dict[str, float] = {}  # macro F1 of the last evaluation of each split

    @torch.no_grad()
    def evaluate(names: tuple[str, ...]) -> dict[str, tuple[float, float]]:
        """``name -> (accuracy, mean loss)`` on the splits ``names``, summed over the
        ranks' shares of each split; their macro F1 (the mean over the classes present in
        the labels or the predictions of ``2 TP / (2 TP + FP + FN)``) into ``f1``."""
        model.eval()
        inp.eval()
        with trace_range("gnn.eval"):
            full = all_outputs() if whole is not None or cfg.layerwise_inference else None
            shares = [ranks.share(data["split"][name]) for name in names]
            joint = None
            if full is None and isinstance(model, GNN) and len(names) > 1:
                # the splits' seeds in one pass: the nodes their neighbourhoods share are
                # computed once (each node's fixed sample does not depend on the others)
                joint = seed_outputs(torch.cat(shares)).split([len(i) for i in shares])
            sums, counts = [], []
            for k, ids in enumerate(shares):
                logits = (full.index_select(0, ids.to(full.device)) if full is not None else
                          joint[k] if joint is not None else
                          seed_outputs(ids, val_plan if names == ("val",) else None))
                y = labels.index_select(0, ids)
                logits, y = logits.to(device), y.to(device)
                pred = logits.argmax(1)
                sums += [float((pred == y).sum()), float(len(ids)),
                         float(loss(logits, y)) * len(ids) if len(ids) else 0.0]
                # per-class true positives, predictions and labels, for the macro F1
                c = logits.shape[1]
                counts += [torch.bincount(y[pred == y], minlength=c)[:c],
                           torch.bincount(pred, minlength=c)[:c],
                           torch.bincount(y[(y >= 0) & (y < c)], minlength=c)[:c]]
            sums = ranks.sum(sums + [float(v) for t in counts for v in t.tolist()])
        out, pos = {}, 3 * len(names)
        for k, name in enumerate(names):
            c = len(counts[3 * k])
            tp, pc, lc = (torch.tensor(sums[pos + j * c:pos + (j + 1) * c]) for j in range(3))
            pos += 3 * c
            seen = (pc + lc) > 0
            f1[name] = (float((2 * tp / (pc + lc).clamp(min=1))[seen].mean())
                        if seen.any() else 0.0)
            out[name] = (sums[3 * k] / max(sums[3 * k + 1], 1.0),
                         sums[3 * k + 2] / max(sums[3 * k + 1], 1.0))
        return out

    monitor = _Monitor(cfg, out if lead else None, log if lead else None, save)
    epoch = 0
    whole = (MiniBatch(train_ids, full_graph_blocks(adj, sampler.num_layers),
                       y=labels.index_select(0, train_ids)).to(device)
             if cfg.full_graph else None)
    # stored features that are mostly zeros, as CSR for a first layer that takes it
    sparse_x = (as_sparse_features(inp.all_nodes()) if whole is not None and inp.emb is None
                and isinstance(model, GNN) and cfg.inputs == "blocks"
                and getattr(model.convs[0], "sparse_input", False) else None)
    loader = (NodeLoader(graph, sampler, train_ids, batch_size=cfg.batch_size, seed=cfg.seed,
                         num_workers=cfg.num_workers, prefetch=cfg.prefetch,
                         features=data["x"], labels=labels,
                         device=device, rank=ranks.rank, world_size=ranks.world_size,
                         input_dropout=cfg.dropout if loader_dropout else 0.0)
              if whole is None else None)
    n_train, B, W = len(train_ids), cfg.batch_size, ranks.world_size
    my_seeds, train_seconds, eval_seconds = 0, 0.0, 0.0
    last = out / "last" if out is not None else None
    start, stopped = 1, False
    if last is not None and (last / "model.json").exists():
        start, stopped = _resume(last, out / "checkpoint", cfg, W, model, inp, opt, monitor,
                                 ranks.rank, device)
        epoch = start - 1

    def save_last(epoch: int, stopped: bool) -> None:
        """The state a rerun with the same ``out`` resumes from (every rank calls it after
        every epoch; rank 0 writes), the ranks' random generators (dropout) included."""
        rng = _rng_state(device)
        rows = torch.tensor(ranks.gather(rng.tolist()), dtype=torch.uint8)
        if not lead:
            return
        state = {f"model.{k}": v for k, v in model.state_dict().items()}
        state["rng"] = rows
        state.update({f"input.{k}": v for k, v in inp.state_dict().items()})
        for i, st in opt.state_dict()["state"].items():
            state.update({f"optim.{i}.{k}": torch.as_tensor(v) for k, v in st.items()})
        save_checkpoint(last, state, model_config(),
                        {**meta, "epoch": epoch, "stopped": stopped, "monitor": monitor.state()})

    with _progress_bar(cfg, 1 if loader is None else len(loader), progress and lead) as bar:
        for epoch in range(start, cfg.epochs + 1):
            if stopped:
                break
            te = time.perf_counter()
            model.train()
            inp.train()
            bar.set_description(f"train {cfg.model} epoch {epoch}/{cfg.epochs}", refresh=False)
            if loader is not None:
                loader.set_epoch(epoch)
            loss_sum, correct, seen = 0.0, 0.0, 0
            for k, batch in enumerate(loader if loader is not None else [whole]):
                if whole is None:
                    logits = net(batch.blocks, batch.input_nodes, batch.x)
                else:
                    logits = call(batch.blocks, whole_input()).index_select(0, batch.seeds)
                b = len(batch.seeds)
                if logits.dim() != 2 or logits.shape[0] != b or (
                        loss is F.cross_entropy and logits.shape[1] != data["num_classes"]):
                    raise GraphsysError(
                        f"the model returned outputs of shape {tuple(logits.shape)} for a batch "
                        f"of {b} seeds; the labels need ({b}, {data['num_classes']}): one score "
                        f"per class (classes 0..{data['num_classes'] - 1})")
                value = loss(logits, batch.y) if b else logits.sum() * 0.0
                # DDP averages the ranks' gradients: weighting each rank's mean loss by its
                # share of the global batch makes that the gradient of the global batch's mean
                scale = b * W / min(B, n_train - k * B) if W > 1 else 1.0
                opt.zero_grad()
                (value * scale if scale != 1.0 else value).backward()
                opt.step()
                loss_sum += _finite_loss(float(value.detach()), epoch, k, out) * b
                correct += float((logits.detach().argmax(1) == batch.y).sum())
                seen += b
                bar.update(1)
            _finite_params((model, inp), epoch, out)
            my_seeds += seen
            train_seconds += time.perf_counter() - te
            if epoch % cfg.eval_every and epoch != cfg.epochs:
                if last is not None:
                    save_last(epoch, False)
                continue
            te = time.perf_counter()
            loss_sum, correct, seen = ranks.sum([loss_sum, correct, seen])
            acc = evaluate(("val",))
            eval_seconds += time.perf_counter() - te
            val_acc, val_loss = acc["val"]
            record = {"epoch": epoch, "loss": loss_sum / max(seen, 1),
                      "train_accuracy": correct / max(seen, 1), "val_accuracy": val_acc,
                      "val_loss": val_loss, "seconds": round(time.perf_counter() - t0, 3),
                      "train_seconds": round(train_seconds, 3),
                      "eval_seconds": round(eval_seconds, 3)}
            bar.set_postfix(loss=f"{record['loss']:.4f}", val_accuracy=f"{val_acc:.4f}")
            stop = monitor.step(model, record, val_acc,
                                val_loss if cfg.selection == "val_accuracy_and_loss" else None)
            if last is not None:
                save_last(epoch, stop)
            if stop:
                break
    if monitor.best_state is not None:
        model.load_state_dict(monitor.best_state)
    te = time.perf_counter()
    final = evaluate(("test", "val"))
    eval_seconds += time.perf_counter() - te
    metrics = {"test_accuracy": final["test"][0], "val_accuracy": final["val"][0],
               "test_macro_f1": f1["test"], "val_macro_f1": f1["val"]}
    rows = ranks.gather([my_seeds, train_seconds])
    extra = {"input": inp, "sampler": sampler, "entity_type": et,
             "world_size": W, "rank": ranks.rank,
             "ranks": [{"rank": r, "seeds": int(s), "seconds": round(sec, 3)}
                       for r, (s, sec) in enumerate(rows)],
             "train_seconds": round(train_seconds, 3), "eval_seconds": round(eval_seconds, 3)}
    return GNNResult(metrics, epoch, time.perf_counter() - t0, monitor.history, model, extra)


#: Bytes of sampled blocks a node-task run keeps between its validation passes (each pass
#: evaluates the same fixed sample); larger samples are drawn again at every evaluation.
EVAL_PLAN_BYTES = 512 << 20

#: TrainConfig fields a resumed run may change: it trains on with more epochs or patience
RESUMABLE_CHANGES = ("epochs", "patience")


def _rng_state(device: torch.device) -> torch.Tensor:
    """The torch generators dropout draws from (CPU, and the current CUDA device's), as
    one uint8 vector."""
    parts = [torch.get_rng_state()]
    if device.type == "cuda":
        parts.append(torch.cuda.get_rng_state(device))
    return torch.cat(parts)


def _set_rng_state(state: torch.Tensor, device: torch.device) -> None:
    n = len(torch.get_rng_state())
    torch.set_rng_state(state[:n].clone())
    if device.type == "cuda":
        torch.cuda.set_rng_state(state[n:].clone(), device)


def _resume(last: Path, best: Path, cfg: TrainConfig, world_size: int, model: nn.Module,
            inp: nn.Module, opt: torch.optim.Optimizer, monitor: _Monitor, rank: int,
            device: torch.device) -> tuple[int, bool]:
    """Load the state :func:`_train_node_classification` saved after an epoch into
    ``last`` (the model, the input, the optimiser, the monitor; the kept model from
    ``best``): ``(first epoch to run, whether the run had stopped early)``. A run with
    other settings (except :data:`RESUMABLE_CHANGES`) or world size is refused."""
    state, _, meta = load_checkpoint(last)

    def same(c: dict) -> dict:
        return {k: v for k, v in c.items() if k not in RESUMABLE_CHANGES}

    if same(meta.get("train_config", {})) != same(_cfg_json(cfg)) \
            or meta.get("world_size") != world_size:
        raise GraphsysError(f"{last.parent}: holds a run with other settings or another "
                            f"world size (resume it with the same ones, or choose a new "
                            f"output directory)")
    model.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("model.")})
    inp.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("input.")})
    sd = opt.state_dict()
    per: dict[int, dict[str, torch.Tensor]] = {}
    for k, v in state.items():
        if k.startswith("optim."):
            _, i, name = k.split(".", 2)
            per.setdefault(int(i), {})[name] = v
    sd["state"] = per
    opt.load_state_dict(sd)
    kept = None
    if (best / "model.json").exists():
        bstate = load_checkpoint(best)[0]
        kept = {k[6:]: v for k, v in bstate.items() if k.startswith("model.")}
    monitor.restore(meta["monitor"], kept)
    if "rng" in state and state["rng"].shape[0] == world_size:
        _set_rng_state(state["rng"][rank], device)
    return int(meta["epoch"]) + 1, bool(meta.get("stopped"))


def _cfg_json(cfg: TrainConfig) -> dict:
    """The config as it reads back from JSON (tuples as lists), so that a stored config
    compares equal to the run's."""
    return json.loads(json.dumps(asdict(cfg)))


# -- link prediction -----------------------------------------------------------------------------

def bipartite_types(graph: Graph, item_type: str | None = None) -> tuple[str, str]:
    """``(item_type, user_type)``: the right and left types of the first relation joining
    two different entity types (or the named item type and its partner)."""
    for r in graph.relation_types:
        if r.lhs != r.rhs and item_type in (None, r.rhs, r.lhs):
            if item_type == r.lhs:
                return r.lhs, r.rhs
            return r.rhs, r.lhs
    raise ParameterError("link_split", f"'user' needs a bipartite relation between two entity "
                                       f"types (e.g. user -> item); {graph.path} has "
                                       f"{[f'{r.lhs}->{r.rhs}' for r in graph.relation_types]}"
                                       f" (split 'random' holds out edges of any graph)")


def link_split_of(graph: Graph, cfg: TrainConfig) -> str:
    """``cfg.link_split``, with ``auto`` resolved: ``user`` on a graph with a relation
    between two entity types (the one of ``cfg.entity_type``, when given), else
    ``random``."""
    if cfg.link_split != "auto":
        return cfg.link_split
    bipartite = any(r.lhs != r.rhs and cfg.entity_type in (None, r.lhs, r.rhs)
                    for r in graph.relation_types)
    return "user" if bipartite else "random"


def holdout_split(users: np.ndarray, items: np.ndarray, seed: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks (train, val, test) over interactions: one test and one validation
    interaction per user with at least 3 (seeded), the rest train."""
    rng = np.random.default_rng(seed)
    e = len(users)
    order = np.lexsort((rng.random(e), users))          # users grouped, random within user
    u_sorted = users[order]
    starts = np.flatnonzero(np.r_[True, u_sorted[1:] != u_sorted[:-1]])
    sizes = np.diff(np.r_[starts, e])
    ok = sizes >= 3
    test = np.zeros(e, bool)
    val = np.zeros(e, bool)
    test[order[starts[ok]]] = True
    val[order[starts[ok] + 1]] = True
    return ~(test | val), val, test


def interaction_split(graph: Graph, item_t: str, user_t: str, seed: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(users, items, train, val, test)``: the interactions of the relation joining
    ``user_t`` and ``item_t`` (type-local ids, int64 (E,)) with boolean split masks.

    A graph with a ``valid`` edge set keeps its stored split: the edges of the training
    edge set (``train``) train, ``valid`` validates, ``test`` (if present) tests. Any
    other graph: its training edge set split by :func:`holdout_split`.
    """
    from graphsys.datasets.loaders import TEMPORAL_EDGE_SETS

    rel = next(r for r in graph.relation_types if {r.lhs, r.rhs} == {item_t, user_t})
    _, valid, test = TEMPORAL_EDGE_SETS
    if valid in graph.edge_sets:
        train_set = graph.edge_set(None).name
        if train_set == valid:
            raise GraphsysError(f"{graph.path} has a {valid!r} edge set but no training edge "
                                f"set (train or default) for the link task")
        names = [train_set, valid] + ([test] if test in graph.edge_sets
                                      and test != train_set else [])
        parts = [typed_edges(graph, e, rel.lhs, rel.rhs)[:2] for e in names]
        s = np.concatenate([p[0] for p in parts])
        d = np.concatenate([p[1] for p in parts])
        which = np.repeat(np.arange(len(parts)), [len(p[0]) for p in parts])
        users, items = (s, d) if rel.lhs == user_t else (d, s)
        return users, items, which == 0, which == 1, which == 2
    s, d, _ = typed_edges(graph, None, rel.lhs, rel.rhs)
    users, items = (s, d) if rel.lhs == user_t else (d, s)
    return (users, items, *holdout_split(users, items, seed))


def per_user(users: np.ndarray, items: np.ndarray, n_users: int) -> list[np.ndarray]:
    """Each user's items (type-local ids): a list of ``n_users`` int64 arrays."""
    order = np.argsort(users, kind="stable")
    splits = np.searchsorted(users[order], np.arange(n_users + 1))
    it = items[order]
    return [it[splits[u]:splits[u + 1]] for u in range(n_users)]


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


def rank_metrics(item_emb: torch.Tensor, user_items: list[np.ndarray],
                 exclude: list[np.ndarray], target: np.ndarray, ks=(10,),
                 bias: torch.Tensor | None = None) -> dict[str, float]:
    """``hits@k`` for each ``k`` in ``ks`` and MRR of held-out items among all items.

    ``target``: one item per user (int (n_users,), -1 for none), or held-out
    ``(user, item)`` rows (int (M, 2)), each ranked on its own. The query of user ``u`` is
    the normalised mean of ``user_items[u]``'s unit embeddings, item ``j`` scores
    ``<query, unit(z_j)> + bias[j]``, and the items in ``user_items[u]`` and ``exclude[u]``
    other than the target are not ranked. Averages are over the rows; with one held-out
    item per user, ``recall@k`` (also returned) equals ``hits@k``."""
    unit = F.normalize(item_emb.float(), dim=1)
    target = np.asarray(target, np.int64)
    if target.ndim == 1:
        users = np.flatnonzero(target >= 0)
        items = target[users]
    else:
        users, items = target[:, 0], target[:, 1]
    hits, rr = [], []
    for a in range(0, len(users), 512):
        chunk, tchunk = users[a:a + 512], items[a:a + 512]
        q = torch.stack([unit[torch.from_numpy(user_items[u])].mean(0) if len(user_items[u])
                         else unit.new_zeros(unit.shape[1]) for u in chunk])
        scores = F.normalize(q, dim=1) @ unit.T
        if bias is not None:
            scores = scores + bias.detach().float().cpu().unsqueeze(0)
        for r, u in enumerate(chunk):
            drop = np.concatenate([user_items[u], exclude[u]])
            drop = drop[drop != tchunk[r]]
            scores[r, torch.from_numpy(drop)] = -float("inf")
        tgt = torch.from_numpy(tchunk)
        tscore = scores[torch.arange(len(chunk)), tgt]
        rank = (scores > tscore.unsqueeze(1)).sum(1) + 1
        hits.append(rank)
        rr.append(1.0 / rank.float())
    if not hits:
        raise GraphsysError("no held-out interaction to rank (every user's held-out edge "
                            "sets are empty)")
    rank = torch.cat(hits)
    out = {f"hits@{k}": float((rank <= k).float().mean()) for k in ks}
    out.update({f"recall@{k}": out[f"hits@{k}"] for k in ks})
    return {**out, "mrr": float(torch.cat(rr).mean())}


def pair_batch(sampler, heads: np.ndarray, pos: np.ndarray, neg: np.ndarray,
               rng_seed: int) -> MiniBatch:
    """A link task batch: the blocks of the distinct nodes among ``heads`` (B,), their
    positives ``pos`` (B,) and negatives ``neg`` (B, K), seeds in ascending id order;
    ``extra`` maps each to its seed row (``head``, ``pos`` (B,), ``neg`` (B, K))."""
    nodes, inv = np.unique(np.concatenate([heads, pos, neg.ravel()]), return_inverse=True)
    b = len(heads)
    blocks = sampler.sample_blocks(nodes, rng_seed, parallel=False)
    extra = {"head": torch.from_numpy(inv[:b]), "pos": torch.from_numpy(inv[b:2 * b]),
             "neg": torch.from_numpy(inv[2 * b:].reshape(b, -1))}
    return MiniBatch(torch.from_numpy(nodes), blocks, extra)


def _train_link_prediction(graph: Graph, cfg: TrainConfig, *, device="cpu",
                           out: Path | None = None, log: Callable[[dict], None] | None = None,
                           progress: bool = False) -> GNNResult:
    """The link task of :func:`train` (see the module docstring)."""
    if link_split_of(graph, cfg) != "user":
        return _train_held_out_edges(graph, cfg, device=device, out=out, log=log,
                                     progress=progress)
    t0 = time.perf_counter()
    _seed_all(cfg.seed)
    item_t, user_t = bipartite_types(graph, cfg.entity_type)
    n_items, n_users = graph.num_nodes(item_t), graph.num_nodes(user_t)
    users, items, train_m, val_m, test_m = interaction_split(graph, item_t, user_t, cfg.seed)
    if not test_m.any():                     # a stored split without a test edge set
        test_m = val_m
    fw = from_coo(items[train_m], users[train_m], n_items, n_users)    # item -> user
    bw = fw.transpose()                                                # user -> item
    fanouts = cfg.fanouts or [10, 10]
    sampler = walk_sampler(cfg, fw, bw, fanouts)

    feat = None
    if "feat" in graph.node_columns(item_t):
        feat = torch.from_numpy(graph.node_column("feat", item_t))
    inp = ItemInput(n_items, feat, cfg.hidden).to(device)
    model = GNN(cfg.model, cfg.hidden, cfg.hidden, cfg.hidden, len(fanouts),
                cfg.dropout).to(device)
    opt = adam(model, inp, cfg.lr, cfg.weight_decay, cfg.weight_decay_layers)
    hard = (PPRHardNegativeSampler(fw, bw, cfg.hard_band[0], cfg.hard_band[1],
                                   cfg.hard_negatives)
            if cfg.hard_negatives > 0 and cfg.hard_band[0] < n_items - 1 else None)

    # per-user training items, held-out targets
    user_items = per_user(users[train_m], items[train_m], n_users)
    val_t = np.stack([users[val_m], items[val_m]], 1)
    test_t = np.stack([users[test_m], items[test_m]], 1)
    val_excl = per_user(users[test_m], items[test_m], n_users)
    test_excl = per_user(users[val_m], items[val_m], n_users)
    active_items = np.flatnonzero(fw.degrees() > 0)
    per_epoch = max(1, int(train_m.sum()) // cfg.batch_size)
    if cfg.batches_per_epoch:
        per_epoch = min(per_epoch, cfg.batches_per_epoch)
    ranges = partition_ranges(graph, item_t)
    meta = {"task": "link", "entity_type": item_t, "other_type": user_t,
            "graph": str(graph.path), "train_config": _cfg_json(cfg),
            "has_features": feat is not None, "num_items": n_items}

    def save(path: Path):
        state = {f"model.{k}": v for k, v in model.state_dict().items()}
        state.update({f"input.{k}": v for k, v in inp.state_dict().items()})
        save_checkpoint(path, state, model.config(), meta)

    def embed_all() -> torch.Tensor:
        inp.eval()
        return layerwise_inference(model, inp, n_items, eval_blocks(sampler, cfg.seed),
                                   ranges, device=device)

    def make_batch(i: int, epoch: int) -> MiniBatch:
        rng = np.random.default_rng(derive_seed(cfg.seed, epoch, i))
        heads = rng.choice(active_items, cfg.batch_size)
        # positive: one item -> user -> item hop on the training graph
        deg = fw.degrees()[heads]
        mid = fw.indices[fw.indptr[heads] + (rng.random(len(heads)) * deg).astype(np.int64)]
        bdeg = bw.degrees()[mid]
        pos = bw.indices[bw.indptr[mid] + (rng.random(len(mid)) * bdeg).astype(np.int64)]
        negs = [rng.integers(0, n_items, (len(heads), cfg.negatives_for("user")))]
        if hard is not None and epoch > 1:
            negs.append(hard(heads, derive_seed(cfg.seed, epoch, i, 1)).numpy())
        neg = np.concatenate(negs, axis=1)
        return pair_batch(sampler, heads, pos, neg, derive_seed(cfg.seed, epoch, i, 2))

    monitor = _Monitor(cfg, out, log, save)
    epoch = 0
    with _progress_bar(cfg, per_epoch, progress) as bar:
        for epoch in range(1, cfg.epochs + 1):
            model.train()
            inp.train()
            bar.set_description(f"train {cfg.model} epoch {epoch}/{cfg.epochs}", refresh=False)
            loader = PrefetchLoader(per_epoch, lambda i, e=epoch: make_batch(i, e),
                                    num_workers=cfg.num_workers, prefetch=cfg.prefetch,
                                    device=device)
            loss_sum = 0.0
            for k, batch in enumerate(loader):
                z = F.normalize(model(batch.blocks, inp(batch.input_nodes)), dim=1)
                ex = batch.extra
                h, p, n = z[ex["head"]], z[ex["pos"]], z[ex["neg"]]
                b = inp.bias
                sp_ = (h * p).sum(1, keepdim=True) + b[batch.seeds[batch.extra["pos"]]
                                                       ].unsqueeze(1)
                sn = (h.unsqueeze(1) * n).sum(2) + b[batch.seeds[batch.extra["neg"]]]
                loss = F.relu(sn - sp_ + cfg.margin).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                loss_sum += _finite_loss(float(loss.detach()), epoch, k, out)
                bar.update(1)
            _finite_params((model, inp), epoch, out)
            if epoch % cfg.eval_every and epoch != cfg.epochs:
                continue
            with torch.no_grad():
                m = rank_metrics(embed_all(), user_items, val_excl, val_t, cfg.metrics_k,
                                 bias=inp.bias)
            record = {"epoch": epoch, "loss": loss_sum / per_epoch,
                      **{f"val_{k}": v for k, v in m.items() if k.startswith("hits@")},
                      "val_mrr": m["mrr"],
                      "seconds": round(time.perf_counter() - t0, 3)}
            bar.set_postfix(loss=f"{record['loss']:.4f}", val_mrr=f"{m['mrr']:.4f}")
            if monitor.step(model, record, m["mrr"]):
                break
            if record["best"]:
                best_inp = copy.deepcopy(inp.state_dict())
    if monitor.best_state is not None:
        model.load_state_dict(monitor.best_state)
        inp.load_state_dict(best_inp)
    with torch.no_grad():
        emb = embed_all()
        metrics = rank_metrics(emb, user_items, test_excl, test_t, cfg.metrics_k,
                               bias=inp.bias)
    return GNNResult(metrics, epoch, time.perf_counter() - t0, monitor.history, model,
                     {"input": inp, "embeddings": emb, "entity_type": item_t})


def link_input(graph: Graph, data: LinkData, dim: int) -> NodeInput:
    """Layer-0 input of the held-out-edge link task: one entity type with a ``feat``
    column: its features row-normalised (as the node task's); else a learned ``dim``-wide
    embedding per node of the node space."""
    if len(data.types) == 1 and "feat" in graph.node_columns(data.types[0][0]):
        x = graph.node_column("feat", data.types[0][0]).astype(np.float32)
        return NodeInput(torch.from_numpy(x), data.num_nodes, dim)
    return NodeInput(None, data.num_nodes, dim)


def link_sampler(cfg: TrainConfig, adj: Adjacency
                 ) -> NeighborSampler | RandomWalkNeighborSampler:
    """The held-out-edge link task's sampler over the training graph ``adj``: uniform
    neighbours with ``cfg.fanouts`` (default ``[10, 10]``), or PinSage walks for a model
    that samples by random walks."""
    fanouts = cfg.fanouts or [10, 10]
    if random_walk_sampling(cfg.model):
        return walk_sampler(cfg, adj, adj, fanouts)
    return NeighborSampler(adj, fanouts)


def _train_held_out_edges(graph: Graph, cfg: TrainConfig, *, device="cpu",
                          out: Path | None = None, log: Callable[[dict], None] | None = None,
                          progress: bool = False) -> GNNResult:
    """The link task with held-out edges (``link_split`` ``random`` or ``time``): a GNN
    encoder over the training edges (each batch's targets removed from its blocks), an
    MLP, dot-product or DistMult decoder, binary cross-entropy against ``num_negatives``
    uniform negative tails per training edge, filtered ranking metrics
    (:mod:`graphsys.gnn.link`)."""
    t0 = time.perf_counter()
    _seed_all(cfg.seed)
    if cfg.model not in GNN_MODELS:
        raise ParameterError("model", f"of the link task must be a builtin "
                                      f"({', '.join(GNN_MODELS.names())}), got {cfg.model!r}")
    split = link_split_of(graph, cfg)
    data = link_data(graph, cfg.entity_type, cfg.link_val_fraction, cfg.link_test_fraction,
                     cfg.seed, split)
    n = data.num_nodes
    lo, hi = data.tails
    sampler = link_sampler(cfg, data.adj)
    inp = link_input(graph, data, cfg.hidden).to(device)
    model = GNN(cfg.model, inp.dim, cfg.hidden, cfg.hidden, sampler.num_layers, cfg.dropout,
                heads=cfg.heads).to(device)
    decoder = LinkDecoder(cfg.link_decoder, cfg.hidden).to(device)
    opt = adam(model, inp, cfg.lr, cfg.weight_decay, cfg.weight_decay_layers)
    if decoder.rel is not None:
        opt.add_param_group({"params": [decoder.rel], "weight_decay": 0.0})
    if decoder.mlp is not None:
        opt.add_param_group({"params": list(decoder.mlp.parameters())})
    train_h, train_t = data.head[data.train], data.tail[data.train]
    n_train = len(train_h)
    per_epoch = max(1, -(-n_train // cfg.batch_size))
    if cfg.batches_per_epoch:
        per_epoch = min(per_epoch, cfg.batches_per_epoch)
    ranges = (partition_ranges(graph, data.types[0][0]) if len(data.types) == 1
              else [(a, b) for _, a, b in data.types])
    et = data.types[0][0]
    meta = {"task": "link", "link_split": split, "entity_type": et,
            "types": [list(t) for t in data.types], "graph": str(graph.path),
            "train_config": _cfg_json(cfg), "has_features": inp.emb is None,
            "num_nodes": n}

    def save(path: Path):
        state = {f"model.{k}": v for k, v in model.state_dict().items()}
        state.update({f"input.{k}": v for k, v in inp.state_dict().items()})
        state.update({f"decoder.{k}": v for k, v in decoder.state_dict().items()})
        save_checkpoint(path, state, model.config(), meta)

    def embed_all() -> torch.Tensor:
        inp.eval()
        return layerwise_inference(model, inp, n, eval_blocks(sampler, cfg.seed), ranges,
                                   device=device)

    def make_batch(i: int, epoch: int, order: np.ndarray) -> MiniBatch:
        rng = np.random.default_rng(derive_seed(cfg.seed, epoch, i))
        idx = order[i * cfg.batch_size:(i + 1) * cfg.batch_size]
        h, t = train_h[idx], train_t[idx]
        if data.symmetric:                       # an unordered pair: either end is the head
            flip = rng.random(len(idx)) < 0.5
            h, t = np.where(flip, t, h), np.where(flip, h, t)
        neg = rng.integers(lo, hi, (len(idx), cfg.negatives_for(split)))
        batch = pair_batch(sampler, h, t, neg, derive_seed(cfg.seed, epoch, i, 2))
        if cfg.link_exclude_targets:
            batch.blocks = exclude_pairs(batch.blocks, h, t, n)
        return batch

    def evaluate(z: torch.Tensor, mask: np.ndarray, which: int) -> dict[str, float]:
        decoder.eval()
        return evaluate_links(z, decoder, data, mask, cfg.link_eval_negatives, cfg.metrics_k,
                              derive_seed(cfg.seed, 104729, which))

    monitor = _Monitor(cfg, out, log, save)
    epoch = 0
    with _progress_bar(cfg, per_epoch, progress) as bar:
        for epoch in range(1, cfg.epochs + 1):
            model.train()
            inp.train()
            decoder.train()
            bar.set_description(f"train {cfg.model} epoch {epoch}/{cfg.epochs}", refresh=False)
            order = np.random.default_rng(derive_seed(cfg.seed, epoch)).permutation(n_train)
            loader = PrefetchLoader(per_epoch, lambda i, e=epoch, o=order: make_batch(i, e, o),
                                    num_workers=cfg.num_workers, prefetch=cfg.prefetch,
                                    device=device)
            loss_sum = 0.0
            for k, batch in enumerate(loader):
                z = model(batch.blocks, inp(batch.input_nodes))
                ex = batch.extra
                h = z[ex["head"]]
                pos = decoder(h, z[ex["pos"]])
                neg = decoder(h.unsqueeze(1), z[ex["neg"]]).reshape(-1)
                # OGB's link examples: -mean log s(pos) - mean log(1 - s(neg))
                loss = F.softplus(-pos).mean() + F.softplus(neg).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                loss_sum += _finite_loss(float(loss.detach()), epoch, k, out)
                bar.update(1)
            _finite_params((model, inp, decoder), epoch, out)
            if epoch % cfg.eval_every and epoch != cfg.epochs:
                continue
            with torch.no_grad():
                m = evaluate(embed_all(), data.val, 1)
            record = {"epoch": epoch, "loss": loss_sum / per_epoch,
                      **{f"val_{k}": v for k, v in m.items()},
                      "seconds": round(time.perf_counter() - t0, 3)}
            bar.set_postfix(loss=f"{record['loss']:.4f}", val_mrr=f"{m['mrr']:.4f}")
            if monitor.step(model, record, m["mrr"]):
                break
            if record["best"]:
                best_extra = copy.deepcopy((inp.state_dict(), decoder.state_dict()))
    if monitor.best_state is not None:
        model.load_state_dict(monitor.best_state)
        inp.load_state_dict(best_extra[0])
        decoder.load_state_dict(best_extra[1])
    with torch.no_grad():
        emb = embed_all()
        metrics = evaluate(emb, data.test, 2)
    metrics["val_mrr"] = monitor.best if monitor.best_state is not None else float("nan")
    return GNNResult(metrics, epoch, time.perf_counter() - t0, monitor.history, model,
                     {"input": inp, "decoder": decoder, "embeddings": emb, "data": data,
                      "sampler": sampler, "entity_type": et})


def train(graph: Graph | str | Path, config: TrainConfig | None = None, *,
          model: nn.Module | None = None, loss: Callable | None = None, features=None,
          device: str | torch.device = "cpu", out: str | Path | None = None,
          log: Callable[[dict], None] | None = None, progress: bool = False,
          distributed: bool | None = None) -> GNNResult:
    """Train a GNN on a stored graph: node classification or link prediction.

    The one training entry point of :mod:`graphsys.gnn` (what ``graphsys gnn train``
    runs). ``config.task`` picks the task: ``"node"`` classifies the nodes of the entity
    type with a ``label`` column, on minibatches of a :class:`~graphsys.gnn.NodeLoader`
    (or full-graph steps with ``config.full_graph``); ``"link"`` predicts held-out edges of
    any graph (``config.link_split="random"``, filtered MRR / Hits@K / recall@K / AUC), or
    learns item embeddings on a bipartite graph with PinSage sampling, a max-margin loss
    and hard negatives (``"user"``); with ``config.model="rgcn"`` it trains R-GCN + DistMult
    on a typed graph's ``train``/``valid``/``test`` edge sets
    (:func:`~graphsys.gnn.rgcn_link.train_rgcn_link`, filtered MRR / Hits@k). After every
    ``config.eval_every`` epochs the validation metric is computed (node task: on the
    validation seeds' ``config.eval_fanouts`` neighbourhoods); the best model is kept and
    training stops after ``config.patience`` evaluations without improvement (see the module
    docstring for the splits, features and metrics).

    Parameters
    ----------
    graph : Graph or str
        An opened graph or a graph directory.
    config : TrainConfig, optional
        Task, model and hyperparameters (default ``TrainConfig()``: the node task with
        GraphSAGE).
    model : torch.nn.Module, optional
        Node task: train this module instead of the one ``config.model`` names; it is
        called as ``model(blocks, x)`` (or ``model(x, adjs)``, PyG ``NeighborSampler``
        style, with ``config.inputs="adjs"``; see :mod:`graphsys.gnn.custom`).
    loss : callable, optional
        Node task: ``loss(logits, labels) -> scalar tensor`` (default cross-entropy).
    features : str, tensor or array, optional
        Node task: the input features, a node column name or an (N, F) array used as
        given (default: the ``feat`` column row-normalised, else a learned embedding per
        node).
    device : str or torch.device, optional
        Where the model trains (default ``"cpu"``).
    out : str or Path, optional
        Directory for the best checkpoint (``out/checkpoint``, which
        :func:`~graphsys.gnn.embed_checkpoint` reads) and ``out/metrics.jsonl``; node
        task: also the state after the last epoch (``out/last``: the model, the optimiser,
        the early-stopping state and the random generators), from which a rerun with the
        same ``out``, settings and world size resumes (``epochs`` and ``patience`` may
        grow), bit for bit as if never stopped. Distributed: a directory every rank sees.
    log : callable, optional
        Called with each evaluation record (a dict, as in :attr:`GNNResult.history`).
    progress : bool, optional
        Show a tqdm progress bar on stderr (default False).
    distributed : bool, optional
        Node task: train as one rank of the initialised default ``torch.distributed``
        process group, data-parallel (``torch.nn.parallel.DistributedDataParallel``; gloo
        on CPU, NCCL with one GPU per rank, ``cuda:LOCAL_RANK``). None (default): when
        such a group of several ranks is initialised, or the ``torchrun`` environment
        names several processes (the group is then initialised here, with the timeout of
        :func:`~graphsys.bsp.distributed.process_group_timeout`, and destroyed at the
        end); False: this process alone. Every rank cuts the same shuffled epoch into the
        same global batches of ``config.batch_size`` seeds and samples its contiguous
        share of each (:class:`~graphsys.gnn.NodeLoader`'s ``rank``/``world_size``) from
        the one stored graph; each rank's mean loss is weighted by its share of the batch,
        so the averaged gradient is the global batch's, and every rank samples with the
        global batch's seed (the samplers key their draws by node id): with ``dropout`` 0,
        ``W`` ranks reach one process's parameters to float rounding, sampled ``fanouts``
        included; with dropout the runs agree in distribution only (each rank draws its
        masks over its own batch tensors). A stored feature column (node table or a file
        of its own) stays memory-mapped and each batch gathers its rows, so the ranks share
        it through the page cache. The ranks check that they hold the
        same graph, config and model shapes before the first batch; validation and test
        seeds are split between the ranks and their counts summed; rank 0 alone writes
        ``out`` and calls ``log``; a rank whose peer died or froze ends with one
        :class:`~graphsys.errors.GraphsysError` line.

    Returns
    -------
    GNNResult
        Test metrics of the best-validation model, the history and the trained model
        (``extra["world_size"]`` and ``extra["ranks"]``: each rank's training seeds and
        seconds; ``extra["train_seconds"]``/``["eval_seconds"]``: this rank's time in
        training steps and in evaluations).

    Raises
    ------
    GraphsysError
        A graph without labels (node task) or without edges (link task; split ``user``:
        without a bipartite relation),
        ``model``/``loss``/``features`` given to the link task, or a diverged run (a
        non-finite loss or parameter).

    See Also
    --------
    TrainConfig : every hyperparameter and its default.
    NodeLoader : the minibatches of the node task, for a training loop of one's own.

    References
    ----------
    .. [1] W. L. Hamilton, R. Ying and J. Leskovec, "Inductive Representation Learning on
       Large Graphs", NeurIPS 2017, https://arxiv.org/abs/1706.02216.
    .. [2] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.generators import sbm
    >>> from graphsys.gnn import TrainConfig, train
    >>> m = sbm(200, 1000, blocks=4, features=8, train_per_class=10, num_val=40, num_test=100)
    >>> nodes, edges = next(m.nodes()), next(m.edges())
    >>> g = graphsys.from_numpy(edges["src"], edges["dst"], tempfile.mkdtemp() + "/sbm",
    ...                         num_nodes=200, undirected=True,
    ...                         node_columns={k: v for k, v in nodes.items() if k != "id"})
    >>> result = train(g, TrainConfig(model="gcn", fanouts=[5, 5], hidden=16, epochs=10))
    >>> result.epochs, result.metrics["test_accuracy"] > 0.5
    (10, True)

    A model of one's own (any module over blocks) and a loss:

    >>> import torch
    >>> from graphsys.gnn import SAGEConv
    >>> class TwoLayers(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.a, self.b = SAGEConv(8, 16), SAGEConv(16, 4)
    ...     def forward(self, blocks, x):
    ...         return self.b(torch.relu(self.a(x, blocks[0])), blocks[1])
    >>> result = train(g, TrainConfig(fanouts=[5, 5], epochs=2), model=TwoLayers(),
    ...                loss=torch.nn.functional.cross_entropy)
    >>> sorted(result.metrics)
    ['test_accuracy', 'test_macro_f1', 'val_accuracy', 'val_macro_f1']
    """
    graph = open_graph(graph) if isinstance(graph, (str, Path)) else graph
    cfg = config if config is not None else TrainConfig()
    device = torch.device(device)
    out = Path(out) if out is not None else None
    distributed, owned, device = _distributed_setup(distributed, cfg, device)
    if cfg.task == "node":
        from graphsys.bsp.distributed import peer_failures

        try:
            with peer_failures(distributed):
                return _train_node_classification(graph, cfg, model=model, loss=loss,
                                                  features=features, device=device, out=out,
                                                  log=log, progress=progress,
                                                  distributed=distributed)
        finally:
            if owned:
                import gc

                import torch.distributed as dist

                # the DDP wrapper (in reference cycles) and its reducer go before the group
                # they hold: left to interpreter exit, the gloo group's threads are torn
                # down during static destruction, which can abort the process
                gc.collect()
                dist.destroy_process_group()
    if model is not None or loss is not None or features is not None:
        raise GraphsysError("model, loss and features are taken by the node task; the link "
                            "task trains its builtin models")
    if cfg.model == RGCN:
        if out is not None:
            raise ParameterError("out", "the rgcn link task writes no checkpoint: its result "
                                        "holds the model and the node encodings")
        if device.type != "cpu":
            raise ParameterError("device", "the rgcn link task trains on the CPU")
        return _train_rgcn(graph, cfg, log=log)
    return _train_link_prediction(graph, cfg, device=device, out=out, log=log,
                                  progress=progress)


def _train_rgcn(graph: Graph, cfg: TrainConfig, *, log=None) -> GNNResult:
    """The link task with ``model="rgcn"``: :func:`~graphsys.gnn.rgcn_link.train_rgcn_link`
    on the graph's ``train`` / ``valid`` / ``test`` edge sets. An epoch is one pass over the
    training triples in batches of ``batch_size`` triples; ``hidden``, ``dropout``, ``lr``,
    ``num_negatives``, ``seed`` carry over, the layer count is ``len(fanouts)`` (default 2),
    and the encoder uses the paper's block-diagonal decomposition (5 x 5 blocks)."""
    from graphsys.gnn.rgcn_link import RGCNLinkConfig, train_rgcn_link

    missing = [e for e in ("train", "valid", "test") if e not in graph.edge_sets]
    if missing:
        raise GraphsysError(f"{graph.path}: the rgcn link task trains on edge sets train, "
                            f"valid and test; this graph has {', '.join(graph.edge_sets)}")
    t0 = time.perf_counter()
    edges = graph.num_edges("train")
    per_epoch = max(1, -(-edges // cfg.batch_size))
    rc = RGCNLinkConfig(hidden=cfg.hidden, num_layers=len(cfg.fanouts or [-1, -1]),
                        num_blocks=cfg.hidden // 5 if cfg.hidden % 5 == 0 else 0,
                        dropout=cfg.dropout, lr=cfg.lr, batch_edges=cfg.batch_size,
                        num_negatives=cfg.negatives_for("rgcn"), steps=cfg.epochs * per_epoch,
                        eval_every=cfg.eval_every * per_epoch, seed=cfg.seed)
    best = [float("-inf")]

    def record(rec: dict) -> None:
        """The trainer's per-evaluation record in the node and link tasks' terms: the
        ``epoch`` reached and whether validation MRR is the best so far."""
        rec["epoch"] = -(-rec["step"] // per_epoch)
        rec["best"] = rec["val_mrr"] > best[0]
        best[0] = max(best[0], rec["val_mrr"])
        if log is not None:
            log(rec)

    res = train_rgcn_link(graph, rc, log=record)
    return GNNResult(res.metrics, cfg.epochs, time.perf_counter() - t0, res.history, res.model,
                     {"embeddings": res.z, "rgcn_config": res.config})
