"""The training loop's parts that every task of :func:`graphsys.gnn.train` shares.

:class:`GNNResult` is what a run returns; :class:`Monitor` keeps the best model by the
validation metric, stops early, checkpoints and logs one JSON record per evaluation;
:func:`finite_loss` / :func:`finite_params` stop a diverged run in one line;
:func:`batch_bar` is the progress bar over every batch of every epoch; :func:`seed_all`
seeds torch and NumPy. Data-parallel set-up (:func:`distributed_setup`, :class:`Ranks`,
:func:`inputs_digest`) runs on :mod:`graphsys.distributed`; what a resumed run may change:
:data:`RESUMABLE_CHANGES`. The loop itself: :func:`graphsys.gnn.fit.fit`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from graphsys.distributed import (
    Collectives,
    destroy,
    graph_digest,
    init_from_env,
    initialized,
    local_cuda_device,
)
from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.config import TrainConfig
from graphsys.progress import progress_bar
from graphsys.storage.graph import Graph


@dataclass
class GNNResult:
    """What :func:`~graphsys.gnn.train` returns: the test metrics of the best-validation
    model, the evaluation history and the trained model.

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
        ``loss``, the validation metrics (link task: and their ``protocol``), ``seconds``
        and ``best`` (whether the model was kept).
    model : torch.nn.Module
        The trained model, holding the best-validation weights.
    extra : dict
        Task internals: ``input`` (the layer-0 input module), ``entity_type``, and
        ``sampler`` (node task) or ``embeddings`` (link task: every item's embedding).
        Node task also: ``world_size``, this process's ``rank``, ``ranks`` (per rank:
        ``rank``, the training ``seeds`` it stepped on and its training ``seconds``, in
        this call), ``train_seconds`` and ``eval_seconds`` (this rank's).
    protocol : str or None
        Link task: the ranking protocol of the metrics (:func:`graphsys.ranking.protocol`:
        ``"sampled@1000, filtered"``, ``"full, filtered"``, ``"full, filtered, both
        sides"``), also in every history record; None for the node task.

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
    protocol: str | None = None


class Monitor:
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


def finite_loss(loss: float, epoch: int, batch: int, out: Path | None, *,
                 what: str = "") -> float:
    """``loss`` if finite, else the one-line error that stops a diverged run (the last
    checkpoint written, if any, is the last good model: nothing non-finite is saved)."""
    if math.isfinite(loss):
        return loss
    where = f"{what} after epoch {epoch}" if what else f"loss {loss} in epoch {epoch}, " \
        f"batch {batch}"
    kept = f"; {out / 'checkpoint'} keeps the last model saved" if out is not None else ""
    raise GraphsysError(f"training diverged: {where}{kept} (lower lr?)")


def finite_params(modules: tuple[nn.Module, ...], epoch: int, out: Path | None) -> None:
    """Raise the diverged-run error of :func:`finite_loss` if a parameter of ``modules``
    holds a NaN or an infinity after ``epoch`` (before it is evaluated or saved)."""
    for module in modules:
        for name, param in module.named_parameters():
            if not bool(torch.isfinite(param).all()):
                finite_loss(float("nan"), epoch, -1, out, what=f"parameter {name} non-finite")


def batch_bar(cfg: TrainConfig, batches_per_epoch: int, progress: bool) -> tqdm:
    """A bar over every batch of every epoch (early stopping ends it short)."""
    return progress_bar(total=cfg.epochs * batches_per_epoch, unit="batch",
                        dynamic_ncols=True, desc=f"train {cfg.model}", disable=not progress)


def seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed % (2 ** 32))


class Ranks:
    """This process's place in a data-parallel run (one rank of one when not distributed):
    sums and gathers over the ranks through the default process group."""

    def __init__(self, distributed: bool, device: torch.device):
        self.distributed = distributed
        self.rank, self.world_size = 0, 1
        if distributed:
            self.comm = Collectives(device)
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


def distributed_setup(distributed: bool | None, cfg: TrainConfig, device: torch.device
                       ) -> tuple[bool, bool, torch.device]:
    """``(distributed, owned, device)``: whether this run is one rank of a data-parallel
    group (None: when a group of several ranks is initialised, or ``torchrun``'s
    environment names several processes, whose group this call then initialises and
    owns), and the rank's device (``cuda:LOCAL_RANK`` for a CUDA run)."""
    owned = False
    if distributed is None:
        already = initialized()
        distributed = owned = init_from_env(device)
        owned = owned and not already
    elif distributed and not initialized():
        raise ParameterError("distributed", "torch.distributed is not initialised (launch "
                             "with torchrun, or call init_process_group first)")
    if distributed:
        if cfg.task != "node" or cfg.full_graph:
            if owned:
                destroy()
            raise ParameterError("distributed", "data-parallel training covers the node "
                                 "task on minibatches (not the link task, not full_graph)")
        if device.type == "cuda":
            device = local_cuda_device()
    return bool(distributed), owned, device


def inputs_digest(graph: Graph, cfg: TrainConfig, model: nn.Module,
                   x: torch.Tensor | None) -> dict[str, str]:
    """What every rank of a data-parallel run must agree on: the graph, the config, the
    model's parameter names and shapes, and the features' shape."""
    def sha(obj) -> str:
        return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()

    return {"graph": graph_digest(graph), "config": sha(config_json(cfg)),
            "model": sha([type(model).__qualname__,
                          [(k, list(v.shape)) for k, v in model.state_dict().items()],
                          None if x is None else list(x.shape)])}


#: TrainConfig fields a resumed run may change: it trains on with more epochs or patience,
#: or samples its (identical) batches elsewhere
RESUMABLE_CHANGES = ("epochs", "patience", "sampler")


def config_json(cfg: TrainConfig) -> dict:
    """The config as it reads back from JSON (tuples as lists), so that a stored config
    compares equal to the run's."""
    return json.loads(json.dumps(asdict(cfg)))
