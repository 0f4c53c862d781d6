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

import copy
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.batches import eval_blocks, link_sampler, pair_batch
from graphsys.gnn.checkpoint import (
    graph_identity,
    load_module_state,
    meta_field,
    save_checkpoint,
    train_config_of,
)
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.inference import layerwise_inference, partition_ranges
from graphsys.gnn.inputs import link_input
from graphsys.gnn.link import LinkData, LinkDecoder, evaluate_links, exclude_pairs, link_data
from graphsys.gnn.loader import PrefetchLoader
from graphsys.gnn.loop import (
    GNNResult,
    Monitor,
    batch_bar,
    config_json,
    finite_loss,
    finite_params,
    seed_all,
)
from graphsys.gnn.model import GNN
from graphsys.gnn.optim import adam
from graphsys.gnn.time_split import pair_cut
from graphsys.plugins import GNN_MODELS
from graphsys.ranking import protocol
from graphsys.sampling._util import derive_seed
from graphsys.sampling.block import MiniBatch
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


def run_link_task(graph: Graph, cfg: TrainConfig, *, device="cpu", out: Path | None = None,
                  log: Callable[[dict], None] | None = None, progress: bool = False
                  ) -> GNNResult:
    """The link task with held-out edges (``link_split`` ``random`` or ``time``): a GNN
    encoder over the training edges (each batch's targets removed from its blocks), an
    MLP, dot-product or DistMult decoder, binary cross-entropy against ``num_negatives``
    uniform negative tails per training edge, filtered ranking metrics
    (:mod:`graphsys.gnn.link`)."""
    t0 = time.perf_counter()
    seed_all(cfg.seed)
    if cfg.model not in GNN_MODELS:
        raise ParameterError("model", f"of the link task must be a builtin "
                                      f"({', '.join(GNN_MODELS.names())}), got {cfg.model!r}")
    split = link_split_of(graph, cfg)
    data = link_data(graph, cfg.entity_type, cfg.link_val_fraction, cfg.link_test_fraction,
                     cfg.seed, split, cut=pair_cut(graph, cfg.valid_from, cfg.test_from))
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
            "train_config": config_json(cfg), "has_features": inp.emb is None,
            "num_nodes": n}
    if out is not None:  # which nodes its rows belong to (read back by check_graph)
        meta["graph_identity"] = graph_identity(graph)

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

    # each held-out edge's tail among sampled (or every) candidate tails, true edges out
    negatives = cfg.link_eval_negatives
    ranked = protocol(negatives if negatives > 0 else None)
    monitor = Monitor(cfg, out, log, save)
    epoch = 0
    with batch_bar(cfg, per_epoch, progress) as bar:
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
                loss_sum += finite_loss(float(loss.detach()), epoch, k, out)
                bar.update(1)
            finite_params((model, inp, decoder), epoch, out)
            if epoch % cfg.eval_every and epoch != cfg.epochs:
                continue
            with torch.no_grad():
                m = evaluate(embed_all(), data.val, 1)
            record = {"epoch": epoch, "loss": loss_sum / per_epoch,
                      **{f"val_{k}": v for k, v in m.items()}, "protocol": ranked,
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
                      "sampler": sampler, "entity_type": et}, protocol=ranked)


def load_link_model(checkpoint: str | Path, state: dict[str, torch.Tensor], config: dict,
                    meta: dict, graph: Graph) -> tuple[torch.Tensor, LinkDecoder, LinkData]:
    """``(z, decoder, data)`` of a held-out-edge link checkpoint (loaded by
    :func:`~graphsys.gnn.checkpoint.load_checkpoint`) on ``graph``: every node's embedding
    over the training graph, re-derived from the checkpoint's seed and fractions (as the
    run's evaluation computed them), the trained decoder and the split. ``graph`` must be
    checked first (:func:`~graphsys.gnn.checkpoint.check_graph`); one whose target types
    differ from the checkpoint's is refused in one line."""
    cfg = train_config_of(meta, checkpoint)
    split = meta_field(meta, "link_split", checkpoint)
    data = link_data(graph, cfg.entity_type, cfg.link_val_fraction, cfg.link_test_fraction,
                     cfg.seed, split, cut=pair_cut(graph, cfg.valid_from, cfg.test_from))
    if [list(t) for t in data.types] != meta_field(meta, "types", checkpoint, list):
        raise GraphsysError(f"{checkpoint}: trained on node types {meta['types']}, the graph "
                            f"{graph.path} gives {[list(t) for t in data.types]}")
    sampler = link_sampler(cfg, data.adj)
    inp = link_input(graph, data, cfg.hidden)
    model = GNN(**config)
    decoder = LinkDecoder(cfg.link_decoder, cfg.hidden)
    for module, prefix in ((model, "model."), (inp, "input."), (decoder, "decoder.")):
        load_module_state(module, state, prefix, checkpoint)
        module.eval()
    ranges = (partition_ranges(graph, data.types[0][0]) if len(data.types) == 1
              else [(a, b) for _, a, b in data.types])
    with torch.no_grad():
        z = layerwise_inference(model, inp, data.num_nodes, eval_blocks(sampler, cfg.seed),
                                ranges)
    return z, decoder, data
