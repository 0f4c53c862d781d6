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
averaged gradient is the global batch's; after every epoch the run's state is saved
(``out/last``) and a rerun resumes from it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.distributed import check_same_inputs
from graphsys.errors import GraphsysError
from graphsys.gnn.batches import eval_blocks, fixed_blocks, node_eval_sampler, node_sampler
from graphsys.gnn.checkpoint import graph_identity, save_checkpoint
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.custom import EVAL_CHUNK, caller, full_neighbourhood_outputs, load_factory
from graphsys.gnn.full_graph import full_graph_blocks
from graphsys.gnn.inference import layerwise_inference, layerwise_inference_on, partition_ranges
from graphsys.gnn.inputs import NodeInput, node_task_data
from graphsys.gnn.loader import NodeLoader
from graphsys.gnn.loop import (
    GNNResult,
    Monitor,
    Ranks,
    batch_bar,
    config_json,
    finite_loss,
    finite_params,
    inputs_digest,
    resume,
    rng_state,
    seed_all,
)
from graphsys.gnn.model import GNN
from graphsys.gnn.optim import adam
from graphsys.gnn.sparse_input import as_sparse_features
from graphsys.plugins import GNN_MODELS
from graphsys.sampling._util import derive_seed
from graphsys.sampling.adjacency import homogeneous_adjacency
from graphsys.sampling.block import Block, MiniBatch
from graphsys.storage.graph import Graph
from graphsys.trace import trace_range

#: Bytes of sampled blocks a node-task run keeps between its validation passes (each pass
#: evaluates the same fixed sample); larger samples are drawn again at every evaluation.
EVAL_PLAN_BYTES = 512 << 20
#: ``TrainConfig.sampler`` as NodeLoader's ``device_sampling`` (None: on CUDA)
DEVICE_SAMPLING = {"auto": None, "cpu": False, "device": True}


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


def run_node_task(graph: Graph, cfg: TrainConfig, *, model: nn.Module | None = None,
                  loss: Callable | None = None, features=None, device="cpu",
                  out: Path | None = None, log: Callable[[dict], None] | None = None,
                  progress: bool = False, distributed: bool = False) -> GNNResult:
    """The node task of :func:`graphsys.gnn.train`, which resolves its arguments (see the
    module docstring); ``distributed``: one rank of the initialised default process group
    (data-parallel, see :func:`~graphsys.gnn.train`)."""
    t0 = time.perf_counter()
    seed_all(cfg.seed)
    ranks = Ranks(distributed, device)
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
            "train_config": config_json(cfg), "has_features": data["x"] is not None,
            "world_size": ranks.world_size}
    if out is not None:  # which nodes its rows belong to (read back by check_graph)
        meta["graph_identity"] = graph_identity(graph)
    # a builtin model's input dropout runs where the loader's workers gather the features
    # (a mapped column is gathered and normalised there too: MappedFeatures.rows)
    loader_dropout = (isinstance(model, GNN) and cfg.inputs == "blocks" and not cfg.full_graph
                      and data["x"] is not None and cfg.dropout > 0)
    net: nn.Module = _NodeNet(model, inp, call, loader_dropout)
    if distributed:
        from torch.nn.parallel import DistributedDataParallel

        check_same_inputs(inputs_digest(graph, cfg, model, data["x"]))
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
                            labels=None, device=device,
                            device_sampling=DEVICE_SAMPLING[cfg.sampler])
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

    monitor = Monitor(cfg, out if lead else None, log if lead else None, save)
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
                         input_dropout=cfg.dropout if loader_dropout else 0.0,
                         device_sampling=DEVICE_SAMPLING[cfg.sampler])
              if whole is None else None)
    n_train, B, W = len(train_ids), cfg.batch_size, ranks.world_size
    my_seeds, train_seconds, eval_seconds = 0, 0.0, 0.0
    last = out / "last" if out is not None else None
    start, stopped = 1, False
    if last is not None and (last / "model.json").exists():
        start, stopped = resume(last, out / "checkpoint", cfg, W, model, inp, opt, monitor,
                                 ranks.rank, device, graph)
        epoch = start - 1

    def save_last(epoch: int, stopped: bool) -> None:
        """The state a rerun with the same ``out`` resumes from (every rank calls it after
        every epoch; rank 0 writes), the ranks' random generators (dropout) included."""
        rng = rng_state(device)
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

    with batch_bar(cfg, 1 if loader is None else len(loader), progress and lead) as bar:
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
                loss_sum += finite_loss(float(value.detach()), epoch, k, out) * b
                correct += float((logits.detach().argmax(1) == batch.y).sum())
                seen += b
                bar.update(1)
            finite_params((model, inp), epoch, out)
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
