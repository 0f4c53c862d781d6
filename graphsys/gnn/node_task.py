"""The node task of :func:`graphsys.gnn.train`: node classification on minibatches of seed
nodes, on full-graph steps, or data-parallel under ``torchrun``.

Data: the entity type with a ``label`` column (:func:`~graphsys.gnn.inputs.node_task_data`):
the ``feat`` column row-normalised, or the caller's features as given, or a learned id
embedding; the stored ``train_mask``/``val_mask``/``test_mask``, else a seeded 60/20/20
split of the labelled nodes; the graph used undirected. Training: a
:class:`~graphsys.gnn.NodeLoader` samples each batch's blocks in background threads (or one
full-graph step per epoch, sparse features as CSR where the first layer takes them). A
builtin model (:data:`~graphsys.plugins.GNN_MODELS`), a ``module:Factory`` spec or the
caller's module is trained with ``loss`` (cross-entropy by default). Evaluation: accuracy
and macro F1 on the validation (every ``eval_every`` epochs) and test seeds (at the end), on
neighbourhoods fixed once per run (``eval_fanouts``): a builtin model layer by layer over
the nodes the seeds need, a module of one's own on batches of seeds; or every node on full
neighbourhoods (``layerwise_inference``). Data-parallel: every rank cuts the same global
batches and trains its contiguous share, its loss weighted so that DistributedDataParallel's
averaged gradient is the global batch's.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from graphsys.errors import GraphsysError
from graphsys.gnn.batches import eval_blocks, fixed_blocks, node_eval_sampler, node_sampler
from graphsys.gnn.config import GRAPH_SAMPLER_MODELS, TrainConfig
from graphsys.gnn.custom import EVAL_CHUNK, caller, full_neighbourhood_outputs
from graphsys.gnn.fit import Clock, Evaluation, Step, Task
from graphsys.gnn.full_graph import full_graph_blocks
from graphsys.gnn.inference import layerwise_inference, layerwise_inference_on, partition_ranges
from graphsys.gnn.inputs import NodeInput, node_task_data
from graphsys.gnn.loader import NodeLoader
from graphsys.gnn.loop import Ranks
from graphsys.gnn.model import GNN
from graphsys.gnn.optim import adam
from graphsys.gnn.sparse_input import as_sparse_features
from graphsys.gnn.step_graph import NodeStepGraph, fits_device
from graphsys.plugins import GNN_MODELS
from graphsys.ranking import class_f1
from graphsys.sampling._util import derive_seed
from graphsys.sampling.adjacency import homogeneous_adjacency
from graphsys.sampling.block import Block, MiniBatch
from graphsys.storage.graph import Graph
from graphsys.trace import trace_range
from graphsys.user_code import build

#: Bytes of sampled blocks a node-task run keeps between its validation passes (each pass
#: evaluates the same fixed sample); larger samples are drawn again at every evaluation.
EVAL_PLAN_BYTES = 512 << 20
#: ``TrainConfig.sampler`` as NodeLoader's ``device_sampling`` (None: on CUDA; ``graph``
#: trains with a NodeStepGraph, and evaluates as ``device``)
DEVICE_SAMPLING = {"auto": None, "cpu": False, "device": True, "graph": True}
#: Share of the device's free memory within which ``sampler="auto"`` takes the step graph
#: for the features and labels it holds there
AUTO_TABLE_SHARE = 0.5
#: The loader settings that ``sampler="auto"`` reads as asking for NodeLoader's threads
#: when set away from their defaults (a NodeStepGraph draws on the training thread)
LOADER_THREAD_KEYS = ("num_workers", "prefetch")


def train_sampler(cfg: TrainConfig, device: torch.device, unrecordable: str | None) -> str:
    """The sampler a node-task run trains with: ``cfg.sampler``, or for ``"auto"``
    ``"graph"`` on CUDA where a :class:`NodeStepGraph` can record the step (a model of
    :data:`~graphsys.gnn.config.GRAPH_SAMPLER_MODELS` with fixed fanouts, ``num_workers``
    and ``prefetch`` left at their defaults, and ``unrecordable`` None: no reason of
    :meth:`NodeTask._unrecordable`), else ``"device"`` on CUDA, else ``"cpu"``.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn import TrainConfig
    >>> cuda = torch.device("cuda")
    >>> train_sampler(TrainConfig(model="sage", fanouts=[10, 5]), cuda, None)
    'graph'
    >>> train_sampler(TrainConfig(model="sage", fanouts=[10, 5], num_workers=4), cuda, None)
    'device'
    >>> train_sampler(TrainConfig(model="pinsage", fanouts=[10, 5]), cuda, None)
    'device'
    >>> train_sampler(TrainConfig(model="sage", fanouts=[10, 5]), torch.device("cpu"), None)
    'cpu'
    """
    if cfg.sampler != "auto":
        return cfg.sampler
    if device.type != "cuda":
        return "cpu"
    defaults = {f.name: f.default for f in fields(TrainConfig)}
    recordable = (cfg.model in GRAPH_SAMPLER_MODELS and unrecordable is None
                  and all(f >= 0 for f in cfg.fanouts or [-1])
                  and all(getattr(cfg, k) == defaults[k] for k in LOADER_THREAD_KEYS))
    return "graph" if recordable else "device"


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
    model = build(cfg.model, "model", **dims)
    if not isinstance(model, nn.Module):
        raise GraphsysError(f"model {cfg.model!r} returned {type(model).__name__}, not "
                            f"a torch.nn.Module")
    return model


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


class NodeTask(Task):
    """The node task of :func:`graphsys.gnn.train` (see the module docstring) for
    :func:`~graphsys.gnn.fit.fit`; ``ranks``: this process's place in a data-parallel run
    (see :func:`~graphsys.gnn.train`)."""

    selects = "val_accuracy"
    local_buffers = ("inp.x",)

    def __init__(self, graph: Graph, cfg: TrainConfig, ranks: Ranks, device: torch.device, *,
                 model: nn.Module | None = None, loss: Callable | None = None, features=None):
        self.cfg, self.ranks, self.device = cfg, ranks, device
        # a stored feature column stays mapped (the ranks share the page cache); the
        # loader's workers gather each batch's rows from it
        data = self.data = node_task_data(graph, cfg.entity_type, cfg.seed, features,
                                          mapped=True)
        if len(data["split"]["val"]) == 0:
            # val_accuracy read 0.0 at every epoch, so the model of the first evaluation
            # was kept and the later epochs' training silently dropped
            raise GraphsysError(f"entity type {data['entity_type']!r}: empty validation "
                                f"split (no labelled node in val_mask); the run selects "
                                f"its model on it")
        self.features, self.labels = data["x"], data["labels"]
        et = data["entity_type"]
        if len(graph.entity_types) > 1 and not any(r.lhs == r.rhs == et
                                                   for r in graph.relation_types):
            # every relation left out: the model saw no edge and trained as an MLP
            raise GraphsysError(f"entity type {et!r}: the node task reads the edges among "
                                f"its nodes, and no relation joins {et!r} to {et!r} ("
                                + ", ".join(f"{r.name}: {r.lhs} -> {r.rhs}"
                                            for r in graph.relation_types) + ")")
        self.adj = homogeneous_adjacency(graph, et, symmetric=True)
        self.sampler = node_sampler(cfg, self.adj)
        self.inp = NodeInput(data["x"], data["num_nodes"], cfg.hidden).to(device)
        self.dims = node_model_dims(cfg, self.inp.dim, data["num_classes"],
                                    self.sampler.num_layers)
        self.model = (model if model is not None else build_node_model(cfg, self.dims)
                      ).to(device)
        self.modules = {"model.": self.model, "input.": self.inp}
        self.call = caller(self.model, cfg.inputs)
        self.loss_fn = loss or F.cross_entropy
        self.opt = adam(self.model, self.inp, cfg.lr, cfg.weight_decay,
                        cfg.weight_decay_layers)
        self.ranges = partition_ranges(graph, data["entity_type"])
        self.meta = {"task": "node", "entity_type": data["entity_type"],
                     "has_features": data["x"] is not None,
                     # what gnn embed reads again: the node column given, or null for an
                     # array, whose digest a resumed run compares (absent: the
                     # row-normalised feat column)
                     **({} if features is None else {
                         "features": features if isinstance(features, str) else None}),
                     **({} if features is None or isinstance(features, str) else {
                         "features_sha256": hashlib.sha256(
                             np.ascontiguousarray(data["x"].numpy())).hexdigest()})}
        unfit = self._unrecordable(loss is not None)
        #: ``cfg.sampler`` as the run trains (:func:`train_sampler`; None: ``full_graph``)
        self.train_sampler = None if cfg.full_graph else train_sampler(cfg, device, unfit)
        # a builtin model's input dropout runs where the loader's workers gather the
        # features (a mapped column is gathered and normalised there too)
        graphed = self.train_sampler == "graph"
        loader_dropout = (isinstance(self.model, GNN) and cfg.inputs == "blocks"
                          and not cfg.full_graph and data["x"] is not None and cfg.dropout > 0
                          and not graphed)
        self.net = _NodeNet(self.model, self.inp, self.call, loader_dropout)
        self.eval_sampler = node_eval_sampler(cfg, self.adj, self.sampler)
        self.eval_fixed = fixed_blocks(self.eval_sampler, cfg.seed)
        self.val_plan: dict = {}  # the validation pass's blocks, the same at every evaluation
        self.f1: dict[str, float] = {}  # macro F1 of the last evaluation of each split
        self.seeds_here, self.seen, self.correct = 0, 0, 0.0
        # the training batches: a NodeLoader's, or one full-graph step
        train_ids = data["split"]["train"]
        self.whole = (MiniBatch(train_ids, full_graph_blocks(self.adj, self.sampler.num_layers),
                                y=self.labels.index_select(0, train_ids)).to(self.device)
                      if cfg.full_graph else None)
        # stored features that are mostly zeros, as CSR for a first layer that takes it
        self.sparse_x = (as_sparse_features(self.inp.all_nodes())
                         if self.whole is not None and self.inp.emb is None
                         and isinstance(self.model, GNN) and cfg.inputs == "blocks"
                         and getattr(self.model.convs[0], "sparse_input", False) else None)
        #: the steps as one CUDA graph each (``sampler="graph"``), which train whole epochs
        self.step_graph = self._step_graph(unfit) if graphed else None
        self.loader = (NodeLoader(graph, self.sampler, train_ids, batch_size=cfg.batch_size,
                                  seed=cfg.seed, num_workers=cfg.num_workers,
                                  prefetch=cfg.prefetch, features=data["x"],
                                  labels=self.labels, device=self.device,
                                  rank=self.ranks.rank, world_size=self.ranks.world_size,
                                  input_dropout=cfg.dropout if loader_dropout else 0.0,
                                  device_sampling=DEVICE_SAMPLING[cfg.sampler])
                       if self.whole is None and self.step_graph is None else None)
        self.per_epoch = (-(-len(train_ids) // cfg.batch_size) if self.step_graph is not None
                          else 1 if self.loader is None else len(self.loader))

    def _unrecordable(self, own_loss: bool) -> str | None:
        """Why a :class:`NodeStepGraph` cannot train this run (None: it can): it records
        the builtin model's step, its cross-entropy, on stored features, in one process,
        with the features and labels on the device."""
        if not isinstance(self.model, GNN) or self.cfg.inputs != "blocks":
            return "a model of one's own"
        if not all(getattr(c, "takes_padded", False) for c in self.model.convs):
            return f"a model whose layers take no padded blocks ({self.model.model!r})"
        if own_loss:
            return "a loss of one's own"
        if self.inp.emb is not None or self.data["x"] is None:
            return "learned node embeddings (no stored features)"
        if self.ranks.world_size > 1:
            return "a data-parallel run"
        # auto leaves the other half to the sampler's CSR (DeviceNeighborSampler's
        # default device_budget), so that the step graph it chose is not refused after
        share = AUTO_TABLE_SHARE if self.cfg.sampler == "auto" else 1.0
        if not fits_device(self.data["x"].shape, self.data["num_nodes"], self.device, share):
            return f"features and labels beyond {share:.0%} of {self.device}'s free memory"
        return None

    def _step_graph(self, why: str | None) -> NodeStepGraph:
        """The :class:`NodeStepGraph` that trains with ``sampler="graph"`` (chosen, or
        ``auto``'s choice), refused in one line where ``why`` (:meth:`_unrecordable`)."""
        if why is not None:
            raise GraphsysError(f"sampler 'graph' records the builtin model's step on stored "
                                f"features in one process; this run has {why} (use sampler "
                                f"'device')")
        return NodeStepGraph(self.model, self.opt, self.sampler, self.inp.all_nodes(),
                             self.labels, self.cfg.batch_size, seed=self.cfg.seed)

    def train_epoch(self, epoch: int) -> tuple[float, int] | None:
        if self.step_graph is None:
            return None
        done = self.step_graph.epoch(self.data["split"]["train"], epoch)
        self.correct, self.seen = done["accuracy"] * done["seeds"], done["seeds"]
        self.seeds_here += done["seeds"]
        return done["loss"], done["steps"]

    def model_config(self) -> dict[str, Any]:
        return (self.model.config() if isinstance(self.model, GNN) else
                {"model": f"{type(self.model).__module__}:{type(self.model).__qualname__}",
                 **self.dims})

    def batches(self, epoch: int):
        self.correct, self.seen = 0.0, 0
        if self.loader is None:
            return [self.whole]
        self.loader.set_epoch(epoch)
        return self.loader

    def loss(self, batch: MiniBatch, epoch: int, k: int) -> Step:
        if self.whole is None:
            logits = self.net(batch.blocks, batch.input_nodes, batch.x)
        else:
            logits = self.call(batch.blocks, self._whole_input()).index_select(0, batch.seeds)
        b, c = len(batch.seeds), self.data["num_classes"]
        if logits.dim() != 2 or logits.shape[0] != b or (
                self.loss_fn is F.cross_entropy and logits.shape[1] != c):
            raise GraphsysError(f"the model returned outputs of shape {tuple(logits.shape)} "
                                f"for a batch of {b} seeds; the labels need ({b}, {c}): one "
                                f"score per class (classes 0..{c - 1})")
        value = self.loss_fn(logits, batch.y) if b else logits.sum() * 0.0
        # a device count, read once an epoch (evaluate): no host sync a step
        self.correct = (logits.detach().argmax(1) == batch.y).sum() + self.correct
        self.seen += b
        self.seeds_here += b
        # DDP averages the ranks' gradients: weighting each rank's mean loss by its share
        # of the global batch makes that the gradient of the global batch's mean
        n, B, W = len(self.data["split"]["train"]), self.cfg.batch_size, self.ranks.world_size
        return Step(value, b, b * W / min(B, n - k * B) if W > 1 else 1.0)

    def evaluate(self, epoch: int) -> Evaluation:
        correct, seen = self.ranks.sum([float(self.correct), self.seen])
        acc, loss = self.accuracy(("val",))["val"]
        fields = {"train_accuracy": correct / max(seen, 1), "val_accuracy": acc,
                  "val_loss": loss}
        return Evaluation(fields, acc,
                          loss if self.cfg.selection == "val_accuracy_and_loss" else None)

    def finish(self, best: float | None, clock: Clock) -> tuple[dict[str, float], dict]:
        te = time.perf_counter()
        final = self.accuracy(("test", "val"))
        clock.evaluate += time.perf_counter() - te
        metrics = {"test_accuracy": final["test"][0], "val_accuracy": final["val"][0],
                   "test_macro_f1": self.f1["test"], "val_macro_f1": self.f1["val"]}
        rows = self.ranks.gather([self.seeds_here, clock.train_here])
        return metrics, {"input": self.inp, "sampler": self.sampler,
                         "train_sampler": self.train_sampler,
                         "entity_type": self.data["entity_type"],
                         "world_size": self.ranks.world_size, "rank": self.ranks.rank,
                         "ranks": [{"rank": r, "seeds": int(s), "seconds": round(sec, 3)}
                                   for r, (s, sec) in enumerate(rows)],
                         "train_seconds": round(clock.train_here, 3),
                         "eval_seconds": round(clock.evaluate, 3)}

    def _whole_input(self) -> torch.Tensor:
        """Every node's layer-0 row for a full-graph step: CSR where sparse."""
        return self.sparse_x if self.sparse_x is not None else self.inp.all_nodes()

    def all_outputs(self) -> torch.Tensor:
        """Every node's output on full neighbourhoods (full-graph steps, or
        ``cfg.layerwise_inference``)."""
        cfg, n = self.cfg, self.data["num_nodes"]
        if self.whole is not None:
            return self.call(self.whole.blocks, self._whole_input())
        if isinstance(self.model, GNN):
            return layerwise_inference(self.model, self.inp, n, eval_blocks(self.sampler,
                                                                            cfg.seed),
                                       self.ranges, device=self.device)
        return full_neighbourhood_outputs(self.call, self.inp, self.adj,
                                          self.sampler.num_layers, n, device=self.device,
                                          num_workers=cfg.num_workers, prefetch=cfg.prefetch)

    def seed_outputs(self, ids: torch.Tensor, plan: dict | None = None) -> torch.Tensor:
        """The outputs of ``ids`` on their evaluation neighbourhoods only: a builtin model
        layer by layer over the nodes they need, a model of one's own on batches."""
        cfg = self.cfg
        if isinstance(self.model, GNN):
            return layerwise_inference_on(self.model, self.inp, ids, self.eval_fixed,
                                          device=self.device, plan=plan,
                                          plan_bytes=EVAL_PLAN_BYTES)
        loader = NodeLoader(None, self.eval_sampler, ids, batch_size=EVAL_CHUNK, shuffle=False,
                            seed=derive_seed(cfg.seed, 7919), num_workers=cfg.num_workers,
                            prefetch=cfg.prefetch, features=self.features, labels=None,
                            device=self.device, device_sampling=DEVICE_SAMPLING[cfg.sampler])
        parts = [self.call(b.blocks, b.x if b.x is not None else self.inp(b.input_nodes)
                           ).float().cpu() for b in loader]
        return torch.cat(parts) if parts else torch.zeros(0, self.data["num_classes"])

    def split_logits(self, names: tuple[str, ...]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``(logits, ids)`` of this rank's share of each split of ``names``."""
        full = self.all_outputs() if self.whole is not None or self.cfg.layerwise_inference \
            else None
        shares = [self.ranks.share(self.data["split"][name]) for name in names]
        if full is not None:
            return [(full.index_select(0, ids.to(full.device)), ids) for ids in shares]
        if isinstance(self.model, GNN) and len(names) > 1:
            # the splits' seeds in one pass: the nodes their neighbourhoods share are
            # computed once (each node's fixed sample does not depend on the others)
            joint = self.seed_outputs(torch.cat(shares)).split([len(i) for i in shares])
            return list(zip(joint, shares))
        plan = self.val_plan if names == ("val",) else None
        return [(self.seed_outputs(ids, plan), ids) for ids in shares]

    @torch.no_grad()
    def accuracy(self, names: tuple[str, ...]) -> dict[str, tuple[float, float]]:
        """``name -> (accuracy, mean loss)`` on the splits ``names``, summed over the
        ranks' shares of each split; their macro F1 (:func:`graphsys.ranking.class_f1` of the
        summed per-class counts; NaN for an empty split) into ``f1``."""
        self.model.eval()
        self.inp.eval()
        sums, counts = [], []
        with trace_range("gnn.eval"):
            for logits, ids in self.split_logits(names):
                y = self.labels.index_select(0, ids).to(self.device)
                logits = logits.to(self.device)
                pred = logits.argmax(1)
                sums += [float((pred == y).sum()), float(len(ids)),
                         float(self.loss_fn(logits, y)) * len(ids) if len(ids) else 0.0]
                # per-class true positives, predictions and labels, for the macro F1
                c = logits.shape[1]
                counts += [torch.bincount(y[pred == y], minlength=c)[:c],
                           torch.bincount(pred, minlength=c)[:c],
                           torch.bincount(y[(y >= 0) & (y < c)], minlength=c)[:c]]
            sums = self.ranks.sum(sums + [float(v) for t in counts for v in t.tolist()])
        out, pos = {}, 3 * len(names)
        for k, name in enumerate(names):
            c = len(counts[3 * k])
            tp, pc, lc = (sums[pos + j * c:pos + (j + 1) * c] for j in range(3))
            pos += 3 * c
            self.f1[name] = class_f1(tp, pc, lc)
            out[name] = (sums[3 * k] / max(sums[3 * k + 1], 1.0),
                         sums[3 * k + 2] / max(sums[3 * k + 1], 1.0))
        return out
