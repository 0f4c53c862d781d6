"""The held-out-edge link task of :func:`graphsys.gnn.train` (``task="link"``,
``link_split`` ``random`` or ``time``): link prediction on any graph.

The distinct edges are split into train / validation / test (``link_val_fraction``,
``link_test_fraction``; seeded, or by timestamp: :mod:`graphsys.gnn.link`); message passing
runs over the training edges only, and each training batch's own target edges are removed
from its sampled neighbourhoods (``link_exclude_targets``). A builtin GNN encodes every node
(the ``feat`` column of a one-type graph as stored, else a learned id embedding), an ``mlp``
(on ``z_h * z_t``), ``dot`` or ``distmult`` decoder scores pairs, and the loss is OGB's
``-mean log s(pos) - mean log(1 - s(neg))`` with ``num_negatives`` uniform negative tails per
training edge. Each held-out edge is ranked against ``link_eval_negatives`` uniform tails (or
every candidate, -1), known edges filtered out (:func:`~graphsys.gnn.link.evaluate_links`);
validation MRR selects the model.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.batches import eval_blocks, link_sampler
from graphsys.gnn.checkpoint import load_module_state, meta_field, train_config_of
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.fit import Evaluation, Task
from graphsys.gnn.inference import layerwise_inference, partition_ranges
from graphsys.gnn.inputs import link_input
from graphsys.gnn.link import LinkData, LinkDecoder, evaluate_links, exclude_pairs, link_data
from graphsys.gnn.loader import NodeLoader
from graphsys.gnn.model import GNN
from graphsys.gnn.optim import adam
from graphsys.gnn.time_split import pair_cut
from graphsys.plugins import GNN_MODELS
from graphsys.ranking import protocol
from graphsys.sampling._util import derive_seed
from graphsys.sampling.block import MiniBatch
from graphsys.sampling.negative import UniformNegativeSampler
from graphsys.storage.graph import Graph


def link_split_of(graph: Graph, cfg: TrainConfig) -> str:
    """``cfg.link_split``, with ``auto`` resolved: ``user`` on a graph with a relation
    between two entity types (the one of ``cfg.entity_type``, when given), else
    ``random``."""
    if cfg.link_split != "auto":
        return cfg.link_split
    bipartite = any(r.lhs != r.rhs and cfg.entity_type in (None, r.lhs, r.rhs)
                    for r in graph.relation_types)
    return "user" if bipartite else "random"


class LinkTask(Task):
    """The link task with held-out edges (``link_split`` ``random`` or ``time``, or the
    checkpoint's ``split``; see the module docstring)."""

    def __init__(self, graph: Graph, cfg: TrainConfig, device: torch.device,
                 split: str | None = None):
        if cfg.model not in GNN_MODELS:
            raise ParameterError("model", f"of the link task must be a builtin "
                                          f"({', '.join(GNN_MODELS.names())}), got "
                                          f"{cfg.model!r}")
        self.cfg, self.device = cfg, device
        self.split = split or link_split_of(graph, cfg)
        data = self.data = link_data(graph, cfg.entity_type, cfg.link_val_fraction,
                                     cfg.link_test_fraction, cfg.seed, self.split,
                                     cut=pair_cut(graph, cfg.valid_from, cfg.test_from))
        self.sampler = link_sampler(cfg, data.adj)
        self.inp = link_input(graph, data, cfg.hidden).to(device)
        self.model = GNN(cfg.model, self.inp.dim, cfg.hidden, cfg.hidden,
                         self.sampler.num_layers, cfg.dropout, heads=cfg.heads).to(device)
        self.decoder = LinkDecoder(cfg.link_decoder, cfg.hidden).to(device)
        self.modules = {"model.": self.model, "input.": self.inp, "decoder.": self.decoder}
        self.opt = adam(self.model, self.inp, cfg.lr, cfg.weight_decay,
                        cfg.weight_decay_layers)
        if self.decoder.rel is not None:
            self.opt.add_param_group({"params": [self.decoder.rel], "weight_decay": 0.0})
        if self.decoder.mlp is not None:
            self.opt.add_param_group({"params": list(self.decoder.mlp.parameters())})
        lo, hi = data.tails
        self.loader = NodeLoader(
            None, self.sampler, links=np.stack([data.head[data.train], data.tail[data.train]], 1),
            negatives=UniformNegativeSampler(hi, cfg.negatives_for(self.split), low=lo),
            either_end=data.symmetric, batch_size=cfg.batch_size, seed=cfg.seed,
            transform=self.exclude_targets if cfg.link_exclude_targets else None,
            num_workers=cfg.num_workers, prefetch=cfg.prefetch, features=None, labels=None,
            device=device, device_sampling=False)
        self.per_epoch = max(1, len(self.loader))
        if cfg.batches_per_epoch:
            self.per_epoch = min(self.per_epoch, cfg.batches_per_epoch)
        self.ranges = (partition_ranges(graph, data.types[0][0]) if len(data.types) == 1
                       else [(a, b) for _, a, b in data.types])
        self.meta = {"task": "link", "link_split": self.split, "entity_type": data.types[0][0],
                     "types": [list(t) for t in data.types],
                     "has_features": self.inp.emb is None, "num_nodes": data.num_nodes}
        # each held-out edge's tail among sampled (or every) candidate tails, true edges out
        negatives = cfg.link_eval_negatives
        self.protocol = protocol(negatives if negatives > 0 else None)

    def embed_all(self) -> torch.Tensor:
        self.inp.eval()
        return layerwise_inference(self.model, self.inp, self.data.num_nodes,
                                   eval_blocks(self.sampler, self.cfg.seed), self.ranges,
                                   device=self.device)

    def exclude_targets(self, batch: MiniBatch) -> MiniBatch:
        """``batch`` without its own target pairs' edges (:func:`exclude_pairs`)."""
        s, ex = batch.seeds, batch.extra
        batch.blocks = exclude_pairs(batch.blocks, s[ex["head"]], s[ex["pos"]],
                                     self.data.num_nodes)
        return batch

    def batches(self, epoch: int):
        """The loader's epoch ``epoch``: its first :attr:`per_epoch` batches."""
        self.loader.set_epoch(epoch)
        return islice(self.loader, self.per_epoch)

    def loss(self, batch: MiniBatch, epoch: int, k: int) -> torch.Tensor:
        z = self.model(batch.blocks, self.inp(batch.input_nodes))
        ex = batch.extra
        h = z[ex["head"]]
        pos = self.decoder(h, z[ex["pos"]])
        neg = self.decoder(h.unsqueeze(1), z[ex["neg"]]).reshape(-1)
        # OGB's link examples: -mean log s(pos) - mean log(1 - s(neg))
        return F.softplus(-pos).mean() + F.softplus(neg).mean()

    @torch.no_grad()
    def metrics(self, z: torch.Tensor, mask: np.ndarray, which: int) -> dict[str, float]:
        self.decoder.eval()
        return evaluate_links(z, self.decoder, self.data, mask, self.cfg.link_eval_negatives,
                              self.cfg.metrics_k, derive_seed(self.cfg.seed, 104729, which))

    def evaluate(self, epoch: int) -> Evaluation:
        m = self.metrics(self.embed_all(), self.data.val, 1)   # embedded without gradients
        return Evaluation({**{f"val_{k}": v for k, v in m.items()}, "protocol": self.protocol},
                          m["mrr"])

    def finish(self, best: float | None, clock) -> tuple[dict[str, float], dict]:
        emb = self.embed_all()
        metrics = self.metrics(emb, self.data.test, 2)
        metrics["val_mrr"] = best if best is not None else float("nan")
        return metrics, {"input": self.inp, "decoder": self.decoder, "embeddings": emb,
                         "data": self.data, "sampler": self.sampler,
                         "entity_type": self.data.types[0][0]}


def load_link_model(checkpoint: str | Path, state: dict[str, torch.Tensor], meta: dict,
                    graph: Graph) -> tuple[torch.Tensor, LinkDecoder, LinkData]:
    """``(z, decoder, data)`` of a held-out-edge link checkpoint (loaded by
    :func:`~graphsys.gnn.checkpoint.load_checkpoint`) on ``graph``: every node's embedding
    over the training graph, re-derived from the checkpoint's seed and fractions (as the
    run's evaluation computed them), the trained decoder and the split. ``graph`` must be
    checked first (:func:`~graphsys.gnn.checkpoint.check_graph`); one whose target types
    differ from the checkpoint's is refused in one line."""
    task = LinkTask(graph, train_config_of(meta, checkpoint), torch.device("cpu"),
                    meta_field(meta, "link_split", checkpoint))
    types = [list(t) for t in task.data.types]
    if types != meta_field(meta, "types", checkpoint, list):
        raise GraphsysError(f"{checkpoint}: trained on node types {meta['types']}, the graph "
                            f"{graph.path} gives {types}")
    for prefix, module in task.modules.items():
        load_module_state(module, state, prefix, checkpoint)
        module.eval()
    return task.embed_all(), task.decoder, task.data
