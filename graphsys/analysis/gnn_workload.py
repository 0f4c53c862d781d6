"""The GNN workload ``graphsys profile --workload gnn`` measures (:func:`profile_gnn`).

On a graph with a ``label`` column: :func:`graphsys.gnn.train` itself (what ``graphsys gnn
train --out`` runs: its epochs, evaluations and checkpoints; :data:`GNN_DEFAULTS` bound the
epochs to one unless the config sets them), with named ranges on evaluation, checkpoints,
data loading and the adjacency build. Otherwise ``steps`` synthetic minibatch steps of the
user's node-task :class:`graphsys.gnn.TrainConfig` (model, fanouts, hidden, heads, dropout,
lr, ...; default :data:`GNN_DEFAULTS`), the model built and the blocks sampled as
:func:`graphsys.gnn.train` does (undirected graph), on the graph's ``feat`` node column when
present (used as stored, not row-normalised), else seeded random features (16 floats), and
4 random classes. The SIMT model runs over each block's per-destination
in-degrees (the aggregation loops), one kernel per block.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from graphsys.analysis.kernels import StepMarker, profile_call
from graphsys.analysis.sampling import DEFAULT_SCHEDULE, StepSchedule
from graphsys.analysis.workloads import SimtRecorder
from graphsys.errors import GraphsysError, check_count

#: the GNN profile's config when the user gives none, and its base under ``key=value``
#: overrides: the trainer's defaults (GraphSAGE, hidden 64, lr 0.01, batch 256) with a
#: bounded two-layer neighbourhood (10 then 5 neighbours; the trainer's default is all)
GNN_DEFAULTS = {"fanouts": [10, 5], "epochs": 1}


def block_in_degrees(edge_dst, num_dst: int) -> np.ndarray:
    """In-degree (int64 (num_dst,)) of every destination of a sampled block whose edges end
    at ``edge_dst`` (an int tensor of local destination ids). Reads the tensor with
    ``Tensor.numpy()``, which dispatches torch operators: call it outside profiled code."""
    return np.bincount(edge_dst.cpu().numpy(), minlength=num_dst)


def _step_flops(blocks: list[tuple[int, int]], dims: list[int]) -> float:
    """Modelled FLOPs of one training step: ``3 * (2 E a + 4 D a c)`` a block of ``(D, E)``
    (destinations, edges) in ``blocks``, from layer width ``a`` to ``c`` of ``dims``."""
    return sum(3 * (2.0 * e * a + 4.0 * n * a * c)
               for (n, e), a, c in zip(blocks, dims[:-1], dims[1:]))


@contextmanager
def _wrapped(module, wrappers: dict[str, Callable[[Any], Any]]):
    """Replace ``module``'s global functions/classes ``name`` by ``wrappers[name](original)``
    inside the block (names the module no longer has are left out), restored after."""
    saved = {n: getattr(module, n) for n in wrappers if hasattr(module, n)}
    try:
        for n, orig in saved.items():
            setattr(module, n, wrappers[n](orig))
        yield
    finally:
        for n, orig in saved.items():
            setattr(module, n, orig)


def _ranged(name: str, before: Callable[[], None] | None = None):
    """A wrapper factory: every call of the function is the trace range ``name``
    (``before`` called first, outside the range)."""
    from graphsys.trace import trace_range

    def wrap(fn):
        def inner(*args, **kwargs):
            if before is not None:
                before()
            with trace_range(name):
                return fn(*args, **kwargs)
        return inner
    return wrap


def _profile_gnn_train(graph, cfg, *, recorder: SimtRecorder, device: str,
                       steps: int | None, trace=None, progress: bool = False,
                       schedule: StepSchedule | None = DEFAULT_SCHEDULE) -> dict[str, Any]:
    """:func:`graphsys.gnn.train` itself, as ``graphsys gnn train --out`` runs it (the
    epochs, evaluations and checkpoints of ``cfg``, into a temporary directory), with named
    ranges on its evaluation, checkpoints, data loading and adjacency build; at most
    ``steps`` training batches per epoch when given. The blocks of the first
    :data:`GNN_MODEL_STEPS` batches feed the SIMT model after the run."""
    import graphsys.gnn.fit as F
    import graphsys.gnn.node_task as T
    from graphsys.device import resolve_device
    from graphsys.gnn import train

    if cfg.sampler == "auto" and resolve_device(device).type == "cuda":
        # not the step graph auto takes on CUDA: the profile marks the loader's steps
        cfg = replace(cfg, sampler="device")
    state: dict[str, Any] = {"marker": None, "blocks": [], "batches": 0, "x_dim": None}

    def finish():
        if state["marker"] is not None:
            state["marker"].finish()

    def loader(cls):
        class Loader(cls):
            def __iter__(self):
                for k, batch in enumerate(super().__iter__()):
                    if steps is not None and k >= steps:
                        return
                    state["marker"].step()
                    state["batches"] += 1
                    if len(state["blocks"]) < GNN_MODEL_STEPS:
                        state["blocks"].append([(b.edge_dst, b.num_dst_nodes, b.num_edges)
                                                for b in batch.blocks])
                        if batch.x is not None:
                            state["x_dim"] = int(batch.x.shape[1])
                    yield batch
                finish()
        Loader.__name__ = Loader.__qualname__ = cls.__name__
        return Loader

    wrappers = {"NodeLoader": loader,
                "layerwise_inference": _ranged("gnn.evaluate", finish),
                "full_neighbourhood_outputs": _ranged("gnn.evaluate", finish),
                "save_checkpoint": _ranged("gnn.checkpoint", finish),
                "node_task_data": _ranged("gnn.data"),
                "homogeneous_adjacency": _ranged("gnn.adjacency")}
    with tempfile.TemporaryDirectory(prefix="graphsys-profile-gnn-") as tmp:
        def work(marker: StepMarker):
            state["marker"] = marker
            # the task's module builds and evaluates; the loop (gnn/fit.py) saves
            with _wrapped(T, wrappers), _wrapped(F, wrappers):
                res = train(graph, cfg, device=device, out=Path(tmp) / "out",
                            progress=progress)
            marker.finish()
            return res

        res, stats = profile_call(work, device=device, trace=trace,
                                  count_transfers=str(device) != "cpu", schedule=schedule)
    labels = graph.node_column("label", graph.entity_types[0])
    classes = int(np.max(labels)) + 1 if len(labels) else 1
    layers = len(state["blocks"][0]) if state["blocks"] else 1
    dims = [state["x_dim"] or cfg.hidden] + [cfg.hidden] * (layers - 1) + [classes]
    flops = 0.0
    for k, blocks in enumerate(state["blocks"]):
        flops += _step_flops([(n_dst, n_edges) for _, n_dst, n_edges in blocks], dims)
        recorder.step({"step": k, "direction": "pull", "active": blocks[-1][1]},
                      [(lambda d=block_in_degrees(dst, n): iter([d])) for dst, n, _ in blocks])
    # FLOPs of the modelled batches, scaled to every batch that ran
    stats.flops = flops * state["batches"] / max(len(state["blocks"]), 1)
    return {"stats": stats, "steps": max(stats.num_steps, 1), "flops": stats.flops,
            "workload": {"kind": "gnn", "path": "graphsys.gnn.train (as graphsys gnn "
                                                "train --out), node task",
                         "model": cfg.model, "epochs": res.epochs,
                         "steps": state["batches"], "batch_size": cfg.batch_size,
                         "fanouts": cfg.fanouts, "hidden": cfg.hidden, "heads": cfg.heads,
                         "dropout": cfg.dropout, "lr": cfg.lr, "classes": classes,
                         "num_workers": cfg.num_workers, "eval_every": cfg.eval_every,
                         "device": device, "sampler": res.extra["train_sampler"],
                         "modelled_flops": stats.flops, "metrics": res.metrics,
                         "parameters": {k: list(v.shape) for k, v in
                                        res.model.named_parameters()},
                         "features": "as graphsys gnn train reads them",
                         "simt_source": "per-destination in-degrees of the sampled blocks "
                                        f"of the first {GNN_MODEL_STEPS} batches",
                         "trainer": "graphsys.gnn.train itself: batches, evaluation, "
                                    "checkpoints"
                                    + ("" if steps is None else
                                       f" (at most {steps} batches per epoch)")}}


#: Batches whose blocks the SIMT model of a GNN profile reads.
GNN_MODEL_STEPS = 20


def profile_gnn(graph, *, recorder: SimtRecorder, device: str = "cpu", steps: int | None = None,
                config=None, batch_size: int | None = None, trace=None,
                progress: bool = False,
                schedule: StepSchedule | None = DEFAULT_SCHEDULE) -> dict[str, Any]:
    """``steps`` minibatch steps of the node task (see the module docstring); ``trace`` as
    :func:`profile_bsp`. ``config``: the user's :class:`~graphsys.gnn.TrainConfig`
    (model, fanouts, hidden, heads, dropout, lr, weight_decay, batch_size, seed; default
    :data:`GNN_DEFAULTS`); the model is built by the trainer's
    :func:`~graphsys.gnn.node_task.build_node_model` and sampled by its
    :func:`~graphsys.gnn.batches.node_sampler`.
    ``batch_size``, when given, replaces the config's. ``schedule``: the training steps
    the profiler records (:mod:`graphsys.analysis.sampling`; None: every step; with
    ``trace`` every step is recorded)."""
    from graphsys.gnn.overrides import train_config_from_overrides

    cfg = config if config is not None else train_config_from_overrides([], GNN_DEFAULTS)
    if batch_size is not None:
        cfg = replace(cfg, batch_size=batch_size)
    if steps is not None:  # "x" raised a TypeError from <
        steps = check_count("steps", steps)
    check_count("batch_size", cfg.batch_size)
    if cfg.sampler == "graph":
        raise GraphsysError("the gnn profile times a NodeLoader's steps one by one; sampler "
                            "'graph' replays each step as one CUDA graph (profile with "
                            "sampler 'device')")
    if (len(graph.entity_types) == 1 and "label" in graph.node_columns(graph.entity_types[0])
            and cfg.task == "node"):
        return _profile_gnn_train(graph, cfg, recorder=recorder, device=device, steps=steps,
                                  trace=trace, progress=progress, schedule=schedule)
    steps = 5 if steps is None else steps
    if cfg.task != "node":
        raise GraphsysError(f"task: the GNN profile runs the node task, got {cfg.task!r}")
    if len(graph.entity_types) != 1:
        raise GraphsysError("the GNN workload profiles graphs with one entity type")
    run = _SyntheticSteps(graph, cfg, steps, device)
    _, stats = profile_call(run.work, device=device, trace=trace, schedule=schedule)
    stats.flops = run.flops
    for k, blocks in enumerate(run.block_dst):
        degs = [block_in_degrees(dst, n_dst) for dst, n_dst in blocks]
        recorder.step({"step": k, "direction": "pull", "active": len(run.batches[k])},
                      [(lambda d=d: iter([d])) for d in degs])
    return {"stats": stats, "steps": steps, "flops": stats.flops,
            "workload": {"kind": "gnn", "model": cfg.model, "steps": steps,
                         "batch_size": cfg.batch_size,
                         "fanouts": cfg.fanouts or [-1] * run.sampler.num_layers,
                         "hidden": cfg.hidden, "heads": cfg.heads, "dropout": cfg.dropout,
                         "lr": cfg.lr, "classes": run.classes, "device": device,
                         "sampler": "cpu",
                         "modelled_flops": stats.flops,
                         "parameters": {k: list(v.shape) for k, v in
                                        run.model.named_parameters()},
                         "features": "feat column" if run.feat_column else "random (16)",
                         "path": "synthetic steps (the graph has no label column, which "
                                 "graphsys gnn train needs): the trainer's sampler, model "
                                 "and Adam, random labels",
                         "num_workers": 0, "eval_every": None,
                         "simt_source": "per-destination in-degrees of every sampled block",
                         "trainer": "the trainer's block sampler, build_node_model and "
                                    "Adam (graphsys.gnn.node_task), not train() itself"}}


class _SyntheticSteps:
    """The synthetic steps of :func:`profile_gnn` on a graph without labels, which the
    node task (:class:`~graphsys.gnn.node_task.NodeTask`) needs (see the module docstring).
    :meth:`work` is the profiled section; it keeps each step's blocks' destination ids in
    ``block_dst``, read after the run (``Tensor.numpy()`` would add operators to the
    counts), and their FLOPs in ``flops``."""

    def __init__(self, graph, cfg, steps: int, device: str) -> None:
        import torch

        from graphsys.gnn.batches import node_sampler
        from graphsys.gnn.node_task import build_node_model, node_model_dims
        from graphsys.gnn.optim import fused_adam
        from graphsys.sampling.adjacency import homogeneous_adjacency

        et, n = graph.entity_types[0], graph.num_nodes()
        self.cfg, self.dev = cfg, torch.device(device)
        rng = np.random.default_rng(cfg.seed)
        self.feat_column = "feat" in graph.node_columns(et)
        self.feats = torch.as_tensor(graph.node_column("feat", et) if self.feat_column else
                                     rng.standard_normal((n, 16), dtype=np.float32))
        self.labels = torch.as_tensor(rng.integers(0, 4, n))
        self.classes = int(self.labels.max()) + 1 if n else 1
        self.sampler = node_sampler(cfg, homogeneous_adjacency(graph, et, symmetric=True))
        layers = self.sampler.num_layers
        with torch.random.fork_rng(devices=[]):   # seeded; the caller's generator kept
            torch.manual_seed(cfg.seed)
            self.model = build_node_model(cfg, node_model_dims(cfg, self.feats.shape[1],
                                                               self.classes, layers))
        self.model.to(self.dev)
        self.model.train()
        self.opt = fused_adam(self.model.parameters(), lr=cfg.lr,
                              weight_decay=cfg.weight_decay)
        self.batches = [rng.choice(n, size=min(cfg.batch_size, n), replace=False)
                        for _ in range(steps)]
        self.block_dst: list[list[tuple[Any, int]]] = []
        self.flops = 0.0

    def work(self, marker: StepMarker) -> None:
        from torch.nn.functional import cross_entropy

        from graphsys.sampling._util import derive_seed

        dims = ([self.feats.shape[1]] + [self.cfg.hidden] * (self.sampler.num_layers - 1)
                + [self.classes])
        for k, seeds in enumerate(self.batches):
            marker.step()
            blocks = self.sampler.sample_blocks(np.sort(seeds), derive_seed(self.cfg.seed, k),
                                                parallel=False)
            self.block_dst.append([(b.edge_dst, b.num_dst_nodes) for b in blocks])
            x = self.feats[blocks[0].src_nodes].to(self.dev)
            y = self.labels[blocks[-1].dst_nodes].to(self.dev)
            blocks = [b.to(self.dev) for b in blocks]
            loss = cross_entropy(self.model(blocks, x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.flops += _step_flops([(b.num_dst_nodes, b.num_edges) for b in blocks], dims)
        marker.finish()
