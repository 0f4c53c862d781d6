"""The one training loop of :func:`graphsys.gnn.train`: :func:`fit` over a :class:`Task`.

A task (node, held-out-edge link, item, temporal link, R-GCN) is a small class that builds
its data, modules and optimiser and gives an epoch's batches, a batch's loss, a validation
pass and the kept model's metrics. :func:`fit` owns the rest, the same for every task:
seeding, the data-parallel wrapper (node task), the progress bar, one optimiser step per
batch, the non-finite checks, the evaluation cadence (``eval_every``, the last epoch, a
spent training budget), early stopping (:class:`Monitor`), the records and the
checkpoints: ``out/checkpoint`` (the kept model: each module's tensors under its prefix,
``model.``, ``input.``, ``decoder.`` or none, and the task's own) and ``out/last``, the
state after every epoch (the modules, ``optim.<i>.<name>`` for parameter ``i``, every
rank's generators as ``rng``; ``meta`` ``epoch``, ``stopped``, ``monitor``,
``train_seconds``, ``task_state``), from which a rerun with the same ``out``, settings (but
:data:`~graphsys.gnn.loop.RESUMABLE_CHANGES`), world size and graph resumes as if never
stopped.
"""

from __future__ import annotations

import copy
import json
import math
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
    load_module_state,
    save_checkpoint,
)
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.loop import RESUMABLE_CHANGES, GNNResult, Ranks, config_json, inputs_digest
from graphsys.progress import display
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
    """One task of :func:`fit`. Its constructor sets ``model`` (the module the result
    returns), ``modules`` (dict: checkpoint prefix -> module, every trained one), ``opt``
    (the optimiser), ``meta`` (dict: its checkpoints' own fields) and ``per_epoch`` (int:
    batches per epoch); :meth:`finish` gives the metrics and extras of the kept model
    (loaded; ``best``: its value, or None)."""

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

    def batches(self, epoch: int) -> Iterable: ...

    def loss(self, batch, epoch: int, k: int) -> torch.Tensor | Step: ...

    def train_epoch(self, epoch: int) -> tuple[float, int] | None:
        """A whole epoch trained by the task itself (the node task's steps recorded as CUDA
        graphs): ``(mean loss, steps)``; None (the default): :func:`fit` steps through
        :meth:`batches` and :meth:`loss`."""
        return None

    def evaluate(self, epoch: int) -> Evaluation: ...

    def finish(self, best: float | None, clock: Clock) -> tuple[dict[str, float], dict]: ...

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
    """Seconds of a run: ``train`` (training steps, over resumes too: what a training
    budget counts), ``train_here`` (in this call) and ``evaluate`` (in this call)."""

    def __init__(self):
        self.start, self.train, self.train_here, self.evaluate = time.perf_counter(), 0., 0., 0.


class Monitor:
    """Early stopping on a validation metric (higher is better) and the kept model's
    state; with a validation loss too, the rule of ``selection="val_accuracy_and_loss"``
    (:class:`~graphsys.gnn.config.TrainConfig`)."""

    def __init__(self, patience: int):
        self.patience, self.best, self.best_loss, self.bad = patience, -math.inf, math.inf, 0
        self.best_state: dict[str, torch.Tensor] | None = None
        self.history: list[dict[str, Any]] = []

    def state(self) -> dict[str, Any]:
        """What :meth:`restore` takes back: the bests, the patience count, the history."""
        return {"best": self.best, "best_loss": self.best_loss, "bad": self.bad,
                "history": self.history}

    def restore(self, state: dict[str, Any], best_state: dict[str, torch.Tensor] | None):
        """Take back a :meth:`state` (``best_state``: the kept model's); ValueError for one
        that :meth:`state` never writes (a NaN or unbeatable best, a negative or
        non-integer count, a history that is not a list of records)."""
        best, best_loss, bad, history = (float(state["best"]), float(state["best_loss"]),
                                         state["bad"], state["history"])
        if not (-math.inf <= best < math.inf and -math.inf < best_loss <= math.inf) \
                or type(bad) is not int or bad < 0 or not isinstance(history, list) or not all(
                    isinstance(r, dict) and type(r.get("epoch")) is int for r in history):
            raise ValueError("not an early-stopping state")
        self.best, self.best_loss, self.bad, self.history = best, best_loss, bad, history
        self.best_state = best_state

    def step(self, model, record: dict[str, Any], value: float, loss: float | None = None
             ) -> bool:
        """Record an evaluation of ``model`` (its ``state_dict`` kept when ``record["best"]``
        says so); True when training should stop. Without ``loss`` a better ``value`` keeps
        the model and restarts the patience; with it (lower is better) either one reaching
        its best (``>=`` / ``<=``) restarts the patience and both together keep the model."""
        if loss is None:
            keep = improved = value > self.best
        else:
            keep = value >= self.best and loss <= self.best_loss
            improved = value >= self.best or loss <= self.best_loss
            self.best_loss = min(self.best_loss, loss)
        record["best"] = keep
        self.history.append(record)
        if keep:
            self.best_state = copy.deepcopy(model.state_dict())
        if improved:
            self.best, self.bad = max(self.best, value), 0
            return False
        self.bad += 1
        return self.bad >= self.patience


def fit(build: Callable[[], Task], cfg: TrainConfig, graph: Graph, *, ranks: Ranks,
        device: torch.device, out: Path | None = None, log: Callable[[dict], None] | None = None,
        progress: bool | Callable = False) -> GNNResult:
    """Seed, build the task (``build()``) and train it (see the module docstring): the
    :class:`~graphsys.gnn.GNNResult` of :func:`~graphsys.gnn.train`. The run seeds torch's
    default generators with ``cfg.seed`` (initialisation, dropout) and gives the caller's
    states back as it ends; NumPy's global generator is neither read nor reset."""
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(cfg.seed)
        return _fit(build, cfg, graph, ranks, device, out, log, progress)


def _fit(build, cfg, graph, ranks, device, out, log, progress) -> GNNResult:
    clock = Clock()
    task = build()
    if ranks.distributed:
        _data_parallel(task, cfg, graph, ranks, device)
    lead = ranks.rank == 0
    run = _Run(task, cfg, graph, ranks, device, out, clock, log if lead else None)
    epoch, stopped = 0, False
    if out is not None and (out / "last" / "model.json").exists():
        epoch, stopped = run.resume()
    elif run.records is not None:
        run.records.write_text("")
    if ranks.distributed and len({e for e, in ranks.gather([epoch])}) > 1:
        raise GraphsysError(f"{out}: the ranks found other runs to resume (out must be a "
                            f"directory that every rank sees, on a shared filesystem)")
    with display(progress if lead else False, total=cfg.epochs * task.per_epoch, unit="batch",
                 initial=epoch * task.per_epoch, dynamic_ncols=True,
                 desc=f"train {cfg.model}") as bar:   # a resumed run: its epochs done
        while not stopped and epoch < cfg.epochs:
            epoch += 1
            bar.set_description(f"train {cfg.model} epoch {epoch}/{cfg.epochs}", refresh=False)
            stopped = run.epoch(epoch, bar)
    monitor = run.monitor
    if monitor.best_state is not None:
        run.load_state_dict(monitor.best_state)
    metrics, extra = task.finish(monitor.best if monitor.best_state is not None else None,
                                 clock)
    return GNNResult(metrics, epoch, time.perf_counter() - clock.start, monitor.history,
                     task.model, extra, protocol=task.protocol)


def _data_parallel(task: Task, cfg: TrainConfig, graph: Graph, ranks: Ranks,
                   device: torch.device) -> None:
    """Wrap ``task.net`` for data-parallel training, once every rank has checked that it
    holds the same inputs; dropout masks then differ between ranks."""
    from torch.nn.parallel import DistributedDataParallel

    from graphsys.distributed import check_same_inputs

    check_same_inputs(inputs_digest(graph, cfg, task.model, task.features,
                                    task.meta.get("features")))
    # the features are read where they are, never broadcast; rank 0's parameters reach every
    # rank as DDP wraps the module, no buffer is synchronised (torch 2.13's warning on the
    # flag, whose successor older releases lack, silenced)
    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        task.net, list(task.local_buffers))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*broadcast_buffers.*",
                                category=FutureWarning)
        task.net = DistributedDataParallel(
            task.net, device_ids=[device] if device.type == "cuda" else None,
            broadcast_buffers=False)
    torch.manual_seed(derive_seed(cfg.seed, 1, ranks.rank))


#: Device types whose step losses are read (and checked finite) as each step ends; on others
#: they stay on the device until the epoch's end (a read there is a host sync a step)
READ_EACH_STEP = ("cpu",)


class _Run:
    """One :func:`fit` run's epochs, records, checkpoints and resume; ``log`` and the
    files of ``out`` (but ``last``, which every rank helps write) are rank 0's."""

    def __init__(self, task: Task, cfg: TrainConfig, graph: Graph, ranks: Ranks,
                 device: torch.device, out: Path | None, clock: Clock, log):
        self.task, self.cfg, self.graph, self.ranks = task, cfg, graph, ranks
        self.device, self.out, self.clock, self.log = device, out, clock, log
        self.monitor = Monitor(cfg.patience)
        self.meta = {**task.meta, "graph": str(graph.path), "train_config": config_json(cfg),
                     "world_size": ranks.world_size}
        if out is not None:  # which nodes its rows belong to (read back by check_graph)
            self.meta["graph_identity"] = graph_identity(graph)
        self.records = out / "metrics.jsonl" if out is not None and ranks.rank == 0 else None

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The task's modules as one state (each tensor under its module's prefix)."""
        return {p + k: v for p, m in self.task.modules.items()
                for k, v in m.state_dict().items()}

    def load_state_dict(self, state: dict[str, torch.Tensor], where: Path | None = None,
                        extras: tuple[str, ...] = ()) -> None:
        """Load the modules' tensors of ``state`` (a checkpoint's at ``where``: each checked
        by :func:`~graphsys.gnn.checkpoint.load_module_state`; not ``rng``, ``optim.*``,
        ``extras``)."""
        own = {k: v for k, v in state.items() if not k.startswith(("rng", "optim.", *extras))}
        for p, m in self.task.modules.items():
            if where is None:
                m.load_state_dict({k[len(p):]: v for k, v in own.items() if k.startswith(p)})
            else:
                load_module_state(m, own, p, where)

    def epoch(self, epoch: int, bar) -> bool:
        """Train one epoch and evaluate when due; whether the run stops."""
        task, cfg, clock = self.task, self.cfg, self.clock
        loss, spent = self.train(epoch, bar)
        finite_params(tuple(task.modules.values()), epoch, self.out, task.opt)
        if epoch % cfg.eval_every and epoch != cfg.epochs and not spent:
            self.save_last(epoch, False)
            return False
        te = time.perf_counter()
        ev = task.evaluate(epoch)
        clock.evaluate += time.perf_counter() - te
        record = {"epoch": epoch, "loss": loss, **ev.fields,
                  "seconds": round(time.perf_counter() - clock.start, 3),
                  "train_seconds": round(clock.train_here, 3),
                  "eval_seconds": round(clock.evaluate, 3)}
        bar.set_postfix({"loss": f"{loss:.4f}", task.selects: f"{ev.value:.4f}"})
        stop = self.monitor.step(self, record, ev.value, ev.loss) or spent
        if self.records is not None:
            with open(self.records, "a") as f:
                f.write(json.dumps(record) + "\n")
        if self.log is not None:
            self.log(record)
        if record["best"]:
            task.kept()
            if self.records is not None:
                save_checkpoint(self.out / "checkpoint", {**self.state_dict(), **task.tensors()},
                                task.model_config(), self.meta)
        self.save_last(epoch, stop)
        return stop

    def train(self, epoch: int, bar) -> tuple[float, bool]:
        """One epoch of optimiser steps: ``(mean loss over the ranks, budget spent)``."""
        task, opt = self.task, self.task.opt
        for m in task.modules.values():
            m.train()
        loss_sum, weight, spent = 0.0, 0.0, False
        # on an accelerator the step's loss stays on the device (a read is a host sync a
        # step); the epoch's losses are read, and checked finite, once at its end
        held: list[tuple[torch.Tensor, float]] = []
        t0, before = time.perf_counter(), self.clock.train
        whole = task.train_epoch(epoch)
        if whole is not None:
            loss, steps = whole
            bar.update(steps)
            self.clock.train = before + time.perf_counter() - t0
            self.clock.train_here += self.clock.train - before
            spent = task.max_seconds is not None and self.clock.train >= task.max_seconds
            return finite_loss(loss, epoch, steps - 1, self.out), spent
        for k, batch in enumerate(task.batches(epoch)):
            step = task.loss(batch, epoch, k)
            step = step if isinstance(step, Step) else Step(step)
            opt.zero_grad()
            (step.value * step.scale if step.scale != 1.0 else step.value).backward()
            if task.clip is not None:
                nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g["params"]],
                                         task.clip)
            opt.step()
            if self.device.type in READ_EACH_STEP:
                loss_sum += finite_loss(float(step.value.detach()), epoch, k, self.out) \
                    * step.weight
            else:
                held.append((step.value.detach(), step.weight))
            weight += step.weight
            bar.update(1)
            self.clock.train = before + time.perf_counter() - t0
            spent = task.max_seconds is not None and self.clock.train >= task.max_seconds
            if spent:
                break
        self.clock.train_here += self.clock.train - before
        if held:
            values = torch.stack([v.reshape(()) for v, _ in held]).double().cpu().tolist()
            loss_sum += sum(finite_loss(v, epoch, k, self.out) * w
                            for k, (v, (_, w)) in enumerate(zip(values, held)))
        loss_sum, weight = self.ranks.sum([loss_sum, weight])
        return loss_sum / max(weight, 1.0), spent

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
        kept = None
        if (best / "model.json").exists():
            bstate, _, bmeta = load_checkpoint(best)
            self._check_same(bmeta, best)
            self.load_state_dict(bstate, best, self.task.extras)
            kept = copy.deepcopy(self.state_dict())
        self.load_state_dict(state, last)
        load_optimizer(self.task.opt, state, last)
        monitor, epoch = meta.get("monitor"), meta.get("epoch")
        if not isinstance(monitor, dict) or not isinstance(meta.get("task_state", {}), dict) \
                or type(epoch) is not int or epoch < 0 \
                or not isinstance(meta.get("stopped", False), bool):
            raise FormatError(f"{last / 'model.json'}: meta.monitor, meta.task_state (objects), "
                              f"meta.epoch (an integer >= 0) or meta.stopped (true or false) "
                              f"is missing or malformed")
        try:
            self.monitor.restore(monitor, kept)
            self.task.restore(meta.get("task_state") or {})
            self.clock.train = float(meta.get("train_seconds", 0.0))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise FormatError(f"{last / 'model.json'}: meta.monitor or meta.task_state is "
                              f"malformed ({exc})") from None
        seen = max((r["epoch"] for r in self.monitor.history), default=0)
        if not seen <= epoch < seen + self.cfg.eval_every:   # evaluated every eval_every
            raise FormatError(f"{last / 'model.json'}: meta.epoch {epoch} does not follow the "
                              f"last evaluation recorded (epoch {seen})")
        if epoch > self.cfg.epochs:   # its model would be returned as one of cfg.epochs
            raise GraphsysError(f"{self.out}: holds a run of {epoch} epochs, more than epochs="
                                f"{self.cfg.epochs} (resume with epochs >= {epoch}, or choose a "
                                f"new output directory)")
        if kept is None and any(r.get("best") for r in self.monitor.history):
            # the run's metrics would be the last epoch's model's, reported as the best's
            raise FormatError(f"{best}: missing, but {last} records a kept model (remove "
                              f"{self.out} to train again)")
        if self.records is not None:
            self.records.write_text("".join(json.dumps(r) + "\n"
                                            for r in self.monitor.history))
        rng = state.get("rng")
        if rng is not None and rng.dim() == 2 and rng.shape[1] != len(rng_state(self.device)):
            # a CPU run's generators on CUDA (or the reverse): not the run continued
            raise GraphsysError(f"{last}: saved by a run on another device type than "
                                f"{self.device.type} (resume it on its own, or choose a new "
                                f"output directory)")
        try:
            if rng is None or rng.dim() != 2 or rng.shape[0] != self.ranks.world_size:
                raise ValueError
            set_rng_state(rng[self.ranks.rank], self.device)
        except (RuntimeError, TypeError, ValueError):
            raise FormatError(f"{last}: tensor rng is {'missing' if rng is None else 'not'} "
                              f"the random generators' state (one row per rank)") from None
        # stopped early, by the patience or the training budget: a grown patience trains on
        spent = self.task.max_seconds is not None and self.clock.train >= self.task.max_seconds
        return epoch, bool(meta.get("stopped")) and (self.monitor.bad >= self.cfg.patience
                                                     or spent)

    def _check_same(self, meta: dict[str, Any], where: Path) -> None:
        def same(c: dict) -> dict:
            return {k: v for k, v in c.items() if k not in RESUMABLE_CHANGES}

        # the task's record of its inputs (a caller's features: their column, or digest)
        inputs = {k: meta.get(k) for k in ("features", "features_sha256")}
        if same(meta.get("train_config", {})) != same(config_json(self.cfg)) \
                or meta.get("world_size", 1) != self.ranks.world_size \
                or inputs != {k: self.task.meta.get(k) for k in inputs}:
            raise GraphsysError(f"{where}: holds a run with other settings, features or world "
                                f"size (resume it with the same ones, or choose a new output "
                                f"directory)")
        check_graph(meta, self.graph, where, same_graph=True)


def finite_loss(loss: float, epoch: int, batch: int, out: Path | None, *,
                what: str = "") -> float:
    """``loss`` if finite, else the one-line error that stops a diverged run (the last
    checkpoint written, if any, is the last good model: nothing non-finite is saved)."""
    if math.isfinite(loss):
        return loss
    where = f"{what} after epoch {epoch}" if what else f"loss {loss} in epoch {epoch}, " \
        f"batch {batch}"
    kept = f"; {out / 'checkpoint'} keeps the last model saved" if out is not None and (
        out / "checkpoint" / "model.json").exists() else ""
    raise GraphsysError(f"training diverged: {where}{kept} (lower lr?)")


def finite_params(modules: tuple[nn.Module, ...], epoch: int, out: Path | None,
                  opt: torch.optim.Optimizer | None = None) -> None:
    """Raise the diverged-run error of :func:`finite_loss` if a parameter of ``modules``,
    or a state tensor of their optimiser ``opt`` (Adam's moments: a gradient whose square
    overflows leaves its parameter finite, and frozen), holds a NaN or an infinity after
    ``epoch`` (before it is evaluated or saved)."""
    for module in modules:
        for name, param in module.named_parameters():
            if not bool(torch.isfinite(param).all()):
                finite_loss(float("nan"), epoch, -1, out, what=f"parameter {name} non-finite")
    for i, st in (opt.state_dict()["state"].items() if opt is not None else ()):
        for name, v in st.items():
            if torch.is_tensor(v) and not bool(torch.isfinite(v).all()):
                finite_loss(float("nan"), epoch, -1, out,
                            what=f"optimiser state {name} of parameter {i} non-finite")


def load_optimizer(opt: torch.optim.Optimizer, state: dict[str, torch.Tensor],
                   where: Path) -> None:
    """Load the ``optim.<i>.<name>`` tensors of a saved state into ``opt``, each checked
    against parameter ``i`` (a one-line FormatError for one that does not fit)."""
    sd = opt.state_dict()
    params = [p for group in opt.param_groups for p in group["params"]]
    # Adam's state of a parameter: all of these or none (torch raised a raw KeyError at
    # the first step for one missing)
    names = {"step", "exp_avg", "exp_avg_sq"} | (
        {"max_exp_avg_sq"} if any(g.get("amsgrad") for g in opt.param_groups) else set())
    per: dict[int, dict[str, torch.Tensor]] = {}
    for k, v in state.items():
        if k.startswith("optim."):
            _, i, name = (k.split(".", 2) + ["", ""])[:3]   # 'optim.0step' raised raw
            want = None if name not in names or not i.isdigit() or int(i) >= len(params) \
                else () if name == "step" else tuple(params[int(i)].shape)
            if want is None or tuple(v.shape) != want:
                raise FormatError(f"{where}: tensor {k} does not fit the optimiser of the "
                                  f"model rebuilt from its config")
            per.setdefault(int(i), {})[name] = v
    for i, got in per.items():
        if set(got) != names:
            raise FormatError(f"{where}: the optimiser state of parameter {i} holds "
                              f"{', '.join(sorted(got))}, not {', '.join(sorted(names))}")
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
