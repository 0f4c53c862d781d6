"""The one training loop of :func:`graphsys.gnn.train`: :func:`fit` over a :class:`Task`.

A task (node, held-out-edge link, item, temporal link, R-GCN) is a small class that builds
its data, modules and optimiser and gives an epoch's batches, a batch's loss, a validation
pass and the kept model's metrics. :func:`fit` owns the rest, the same for every task:
seeding, the data-parallel wrapper (node task), the progress bar, one optimiser step per
batch, the non-finite checks, the evaluation cadence (``eval_every``, the last epoch, a
spent training budget), early stopping (:class:`~graphsys.gnn.loop.Monitor`) and the
checkpoints: ``out/checkpoint`` (the kept model: each module's tensors under its prefix,
``model.``, ``input.``, ``decoder.`` or none, and the task's own) and ``out/last``, the
state after every epoch (the modules, ``optim.<i>.<name>`` for parameter ``i``, every
rank's generators as ``rng``; ``meta`` ``epoch``, ``stopped``, ``monitor``,
``train_seconds``, ``task_state``), from which a rerun with the same ``out``, settings (but
:data:`~graphsys.gnn.loop.RESUMABLE_CHANGES`), world size and graph resumes as if never
stopped.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from graphsys.errors import FormatError, GraphsysError
from graphsys.gnn.checkpoint import (
    check_graph,
    graph_identity,
    load_checkpoint,
    module_state,
    save_checkpoint,
)
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.loop import (
    RESUMABLE_CHANGES,
    GNNResult,
    Monitor,
    Ranks,
    batch_bar,
    config_json,
    finite_loss,
    finite_params,
    inputs_digest,
    seed_all,
)
from graphsys.sampling._util import derive_seed
from graphsys.storage.graph import Graph


class Step(NamedTuple):
    """A batch's loss: ``value`` (its mean), its ``weight`` in the epoch's mean loss, and
    the ``scale`` its gradient is taken at (a data-parallel rank's share of the batch)."""

    value: torch.Tensor
    weight: float = 1.0
    scale: float = 1.0


class Evaluation(NamedTuple):
    """A validation pass: the record's ``fields``, the selection ``value`` (higher is
    better) and, for ``selection="val_accuracy_and_loss"``, the validation ``loss``."""

    fields: dict[str, Any]
    value: float
    loss: float | None = None


class Task:
    """One task of :func:`fit`. Its constructor sets ``model`` (what the result returns),
    ``modules`` (checkpoint prefix -> module, every trained one), ``opt``, ``meta`` (its
    checkpoints' own fields) and ``per_epoch`` (batches per epoch); :meth:`finish` gives
    the metrics and extras of the kept model (loaded; ``best``: its value, or None)."""

    model: nn.Module
    modules: dict[str, nn.Module]
    opt: torch.optim.Optimizer
    meta: dict[str, Any]
    per_epoch: int
    selects = "val_mrr"                    # the selection metric, shown beside the bar
    protocol: str | None = None            # the ranking protocol of the metrics
    clip: float | None = None              # the largest gradient norm
    max_seconds: float | None = None       # training seconds after which the run stops
    net: nn.Module | None = None           # node task: what a data-parallel run wraps
    features = None                        # node task: features the ranks compare
    local_buffers: tuple[str, ...] = ()    # node task: buffers of net DDP leaves alone
    extras: tuple[str, ...] = ()           # prefixes of :meth:`tensors`

    def model_config(self) -> dict[str, Any]:
        """The checkpoint's ``config``: what rebuilds ``model``."""
        return self.model.config()

    def batches(self, epoch: int) -> Iterable:
        raise NotImplementedError

    def loss(self, batch, epoch: int, k: int) -> torch.Tensor | Step:
        raise NotImplementedError

    def evaluate(self, epoch: int) -> Evaluation:
        raise NotImplementedError

    def finish(self, best: float | None, clock: Clock) -> tuple[dict[str, float], dict]:
        raise NotImplementedError

    def kept(self) -> None:
        """The monitor kept the model of the evaluation just made."""

    def tensors(self) -> dict[str, torch.Tensor]:
        """Tensors of the kept checkpoint besides the modules' (under :attr:`extras`)."""
        return {}

    def state(self) -> dict[str, Any]:
        """The task's counters (JSON) that a resumed run continues from (:meth:`restore`)."""
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        pass


class Clock:
    """Seconds of a run: ``train`` (training steps, over resumes too), ``train_here`` (in
    this call) and ``evaluate``."""

    def __init__(self):
        self.start, self.train, self.train_here, self.evaluate = time.perf_counter(), 0, 0, 0


def fit(build: Callable[[], Task], cfg: TrainConfig, graph: Graph, *, ranks: Ranks,
        device: torch.device, out: Path | None = None,
        log: Callable[[dict], None] | None = None, progress: bool = False) -> GNNResult:
    """Seed, build the task (``build()``) and train it (see the module docstring): the
    :class:`~graphsys.gnn.GNNResult` of :func:`~graphsys.gnn.train`."""
    clock = Clock()
    seed_all(cfg.seed)
    task = build()
    if ranks.distributed:
        _data_parallel(task, cfg, graph, ranks, device)
    lead = ranks.rank == 0
    run = _Run(task, cfg, graph, ranks, device, out, clock)
    run.monitor = Monitor(cfg, out if lead else None, log if lead else None, run.save_best)
    resume = out is not None and (out / "last" / "model.json").exists()
    epoch, stopped = run.resume() if resume else (0, False)
    with batch_bar(cfg, task.per_epoch, progress and lead) as bar:
        while not stopped and epoch < cfg.epochs:
            epoch += 1
            bar.set_description(f"train {cfg.model} epoch {epoch}/{cfg.epochs}", refresh=False)
            stopped = run.epoch(epoch, bar)
    if run.monitor.best_state is not None:
        run.load_state_dict(run.monitor.best_state)
    best = run.monitor.best if run.monitor.best_state is not None else None
    metrics, extra = task.finish(best, clock)
    return GNNResult(metrics, epoch, time.perf_counter() - clock.start, run.monitor.history,
                     task.model, extra, protocol=task.protocol)


def _data_parallel(task: Task, cfg: TrainConfig, graph: Graph, ranks: Ranks,
                   device: torch.device) -> None:
    """Wrap ``task.net`` for data-parallel training, once every rank has checked that it
    holds the same inputs; dropout masks then differ between ranks."""
    from torch.nn.parallel import DistributedDataParallel

    from graphsys.distributed import check_same_inputs

    check_same_inputs(inputs_digest(graph, cfg, task.model, task.features))
    # the features are read where they are, never broadcast; rank 0's parameters are copied
    # to every rank when DDP wraps the module, and no buffer is synchronised (torch 2.13
    # deprecates the flag that says so, in favour of one older releases lack: its warning
    # is silenced here)
    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        task.net, list(task.local_buffers))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*broadcast_buffers.*",
                                category=FutureWarning)
        task.net = DistributedDataParallel(
            task.net, device_ids=[device] if device.type == "cuda" else None,
            broadcast_buffers=False)
    torch.manual_seed(derive_seed(cfg.seed, 1, ranks.rank))


class _Run:
    """One :func:`fit` run's epochs, checkpoints and resume."""

    def __init__(self, task: Task, cfg: TrainConfig, graph: Graph, ranks: Ranks,
                 device: torch.device, out: Path | None, clock: Clock):
        self.task, self.cfg, self.graph, self.ranks = task, cfg, graph, ranks
        self.device, self.out, self.clock = device, out, clock
        self.monitor: Monitor
        self.meta = {**task.meta, "graph": str(graph.path), "train_config": config_json(cfg),
                     "world_size": ranks.world_size}
        if out is not None:  # which nodes its rows belong to (read back by check_graph)
            self.meta["graph_identity"] = graph_identity(graph)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The task's modules as one state (each tensor under its module's prefix)."""
        return {p + k: v for p, m in self.task.modules.items()
                for k, v in m.state_dict().items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for p, m in self.task.modules.items():
            m.load_state_dict({k[len(p):]: v for k, v in state.items() if k.startswith(p)})

    def checked(self, state: dict[str, torch.Tensor], where: Path,
                extras: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
        """The modules' tensors of a checkpoint's ``state`` (not ``rng``, ``optim.*`` or
        ``extras``), each checked (:func:`~graphsys.gnn.checkpoint.module_state`)."""
        own = {k: v for k, v in state.items() if not k.startswith(("rng", "optim.", *extras))}
        return {p + k: v for p, m in self.task.modules.items()
                for k, v in module_state(m, own, p, where).items()}

    def epoch(self, epoch: int, bar) -> bool:
        """Train one epoch and evaluate when due; whether the run stops."""
        task, cfg = self.task, self.cfg
        loss, spent = self.train(epoch, bar)
        finite_params(tuple(task.modules.values()), epoch, self.out)
        if epoch % cfg.eval_every and epoch != cfg.epochs and not spent:
            self.save_last(epoch, False)
            return False
        te = time.perf_counter()
        ev = task.evaluate(epoch)
        self.clock.evaluate += time.perf_counter() - te
        clock = self.clock
        record = {"epoch": epoch, "loss": loss, **ev.fields,
                  "seconds": round(time.perf_counter() - clock.start, 3),
                  "train_seconds": round(clock.train, 3), "eval_seconds": round(clock.evaluate, 3)}
        bar.set_postfix({"loss": f"{loss:.4f}", task.selects: f"{ev.value:.4f}"})
        stop = self.monitor.step(self, record, ev.value, ev.loss) or spent
        if record["best"]:
            task.kept()
        self.save_last(epoch, stop)
        return stop

    def train(self, epoch: int, bar) -> tuple[float, bool]:
        """One epoch of optimiser steps: ``(mean loss over the ranks, budget spent)``."""
        task, opt = self.task, self.task.opt
        for m in task.modules.values():
            m.train()
        if task.net is not None:
            task.net.train()
        loss_sum, weight, spent = 0.0, 0.0, False
        t0, before = time.perf_counter(), self.clock.train
        for k, batch in enumerate(task.batches(epoch)):
            step = task.loss(batch, epoch, k)
            step = step if isinstance(step, Step) else Step(step)
            opt.zero_grad()
            (step.value * step.scale if step.scale != 1.0 else step.value).backward()
            if task.clip is not None:
                nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g["params"]],
                                         task.clip)
            opt.step()
            loss_sum += finite_loss(float(step.value.detach()), epoch, k, self.out) \
                * step.weight
            weight += step.weight
            bar.update(1)
            self.clock.train = before + time.perf_counter() - t0
            spent = task.max_seconds is not None and self.clock.train >= task.max_seconds
            if spent:
                break
        self.clock.train_here += self.clock.train - before
        loss_sum, weight = self.ranks.sum([loss_sum, weight])
        return loss_sum / max(weight, 1.0), spent

    def save_best(self, path: Path) -> None:
        """The kept model's checkpoint (the monitor's ``save``)."""
        save_checkpoint(path, {**self.state_dict(), **self.task.tensors()},
                        self.task.model_config(), self.meta)

    def save_last(self, epoch: int, stopped: bool) -> None:
        """The state a rerun resumes from (every rank calls it; rank 0 writes), the ranks'
        random generators included."""
        if self.out is None:
            return
        rows = torch.tensor(self.ranks.gather(rng_state(self.device).tolist()),
                            dtype=torch.uint8)
        if self.ranks.rank != 0:
            return
        state = {**self.state_dict(), "rng": rows}
        for i, st in self.task.opt.state_dict()["state"].items():
            state.update({f"optim.{i}.{k}": torch.as_tensor(v) for k, v in st.items()})
        save_checkpoint(self.out / "last", state, self.task.model_config(),
                        {**self.meta, "epoch": epoch, "stopped": stopped,
                         "monitor": self.monitor.state(), "train_seconds": self.clock.train,
                         "task_state": self.task.state()})

    def resume(self) -> tuple[int, bool]:
        """Load ``out/last`` (and the kept model of ``out/checkpoint``): ``(the last epoch
        run, whether the run had stopped)``. A run with other settings (but
        :data:`~graphsys.gnn.loop.RESUMABLE_CHANGES`) or world size, or on another graph,
        is refused in one line."""
        last, best = self.out / "last", self.out / "checkpoint"
        state, _, meta = load_checkpoint(last)
        self._check_same(meta, last)
        if meta.get("world_size", 1) != self.ranks.world_size:
            raise GraphsysError(f"{self.out}: holds a run with another world size (resume "
                                f"it with the same one, or choose a new output directory)")
        self.load_state_dict(self.checked(state, last))
        load_optimizer(self.task.opt, state, last)
        kept = None
        if (best / "model.json").exists():
            bstate, _, bmeta = load_checkpoint(best)
            self._check_same(bmeta, best)
            kept = self.checked(bstate, best, self.task.extras)
        monitor = meta.get("monitor")
        if not isinstance(monitor, dict) or not isinstance(meta.get("epoch"), int):
            raise FormatError(f"{last / 'model.json'}: meta.monitor and meta.epoch are missing")
        try:
            self.monitor.restore(monitor, kept)
            self.task.restore(meta.get("task_state") or {})
            self.clock.train = float(meta.get("train_seconds", 0.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"{last / 'model.json'}: meta.monitor or meta.task_state is "
                              f"malformed ({exc})") from None
        self._restore_rng(state, last)
        return int(meta["epoch"]), bool(meta.get("stopped"))

    def _check_same(self, meta: dict[str, Any], where: Path) -> None:
        def same(c: dict) -> dict:
            return {k: v for k, v in c.items() if k not in RESUMABLE_CHANGES}

        if same(meta.get("train_config", {})) != same(config_json(self.cfg)):
            raise GraphsysError(f"{where}: holds a run with other settings (resume it with "
                                f"the same ones, or choose a new output directory)")
        check_graph(meta, self.graph, where, same_graph=True)

    def _restore_rng(self, state: dict[str, torch.Tensor], last: Path) -> None:
        rng = state.get("rng")
        if rng is not None and rng.dim() == 2 and rng.shape[0] == self.ranks.world_size:
            try:
                set_rng_state(rng[self.ranks.rank], self.device)
            except (RuntimeError, TypeError, ValueError):
                raise FormatError(f"{last}: tensor rng is not the random generators' state "
                                  f"{tuple(rng.shape)}") from None


def load_optimizer(opt: torch.optim.Optimizer, state: dict[str, torch.Tensor],
                   where: Path) -> None:
    """Load the ``optim.<i>.<name>`` tensors of a saved state into ``opt``, each checked
    against parameter ``i`` (a one-line FormatError for one that does not fit)."""
    sd = opt.state_dict()
    params = [p for group in opt.param_groups for p in group["params"]]
    per: dict[int, dict[str, torch.Tensor]] = {}
    for k, v in state.items():
        if k.startswith("optim."):
            _, i, name = k.split(".", 2)
            want = () if name == "step" else tuple(params[int(i)].shape) \
                if i.isdigit() and int(i) < len(params) else None
            if want is None or tuple(v.shape) != want:
                raise FormatError(f"{where}: tensor {k} does not fit the optimiser of the "
                                  f"model rebuilt from its config")
            per.setdefault(int(i), {})[name] = v
    sd["state"] = per
    opt.load_state_dict(sd)


def rng_state(device: torch.device) -> torch.Tensor:
    """The torch generators dropout draws from (CPU, and the current CUDA device's), as
    one uint8 vector."""
    parts = [torch.get_rng_state()]
    if device.type == "cuda":
        parts.append(torch.cuda.get_rng_state(device))
    return torch.cat(parts)


def set_rng_state(state: torch.Tensor, device: torch.device) -> None:
    """Restore the generators from a :func:`rng_state` vector."""
    n = len(torch.get_rng_state())
    torch.set_rng_state(state[:n].clone())
    if device.type == "cuda":
        torch.cuda.set_rng_state(state[n:].clone(), device)
