"""A trained TGN, TGAT or JODIE checkpoint (``task="temporal-link"``,
:mod:`graphsys.gnn.temporal_task`) loaded and evaluated again.

Besides the model's parameters, a TGN or JODIE checkpoint holds the memory twice: its
buffers (``memory.memory``, ``memory.last_update`` and the pending messages) after every
event of the graph, and as validation began (``train_end.*``, the tensors of
:data:`~graphsys.gnn.temporal_task.TRAIN_END`); under TGB's protocol also the fixed
negatives of the validation and test events (``tgb_negatives.valid`` / ``.test``, the
narrowest integer type of the node ids, (events, ``link_eval_negatives``), checked on load:
shape and node range). The neighbour store is the graph's events themselves, so every use
refuses, in one line, a graph that is not the training graph
(:func:`graphsys.distributed.graph_digest`, after the run's ``until`` view).
:func:`evaluate_temporal` (``graphsys gnn evaluate``) streams the validation and test events
again from the ``train_end`` memory (refused, in one line, for a checkpoint saved without
it); :mod:`graphsys.gnn.temporal_score` embeds nodes and scores new events.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.device import resolve_device
from graphsys.errors import FormatError, GraphsysError
from graphsys.gnn.checkpoint import (
    check_fits,
    load_checkpoint,
    load_module_state,
    meta_field,
    train_config_of,
)
from graphsys.gnn.config import JODIE, TEMPORAL_MODELS, TGAT, TrainConfig
from graphsys.gnn.temporal_eval import NEGATIVES
from graphsys.gnn.temporal_task import (
    TRAIN_END,
    EventStream,
    TemporalTask,
    event_split,
    held_out_negatives,
    protocol_name,
    stream_held_out,
    temporal_fanouts,
)
from graphsys.storage.graph import Graph, open_graph


def load_temporal(checkpoint: str | Path, graph: Graph | None = None, *, device="cpu"
                  ) -> tuple[EventStream, TrainConfig, dict[str, torch.Tensor], Graph]:
    """The TGN, TGAT or JODIE of a temporal-link checkpoint on its training graph (``graph``,
    default the recorded one; the run's ``until`` view applied), its memory as the run left
    it: ``(stream, cfg, state, graph)``; the events' features those the run read (a run
    that recorded none, from before ``feature_*`` columns were read, had the weight or
    nothing). A checkpoint of another model, or a graph other than
    the training graph, is refused in one line."""
    from graphsys.distributed import graph_digest

    state, config, meta = load_checkpoint(checkpoint)
    if config.get("model") not in TEMPORAL_MODELS:
        raise GraphsysError(f"{checkpoint}: a checkpoint of {config.get('model')}, not of "
                            f"a temporal link model ({', '.join(TEMPORAL_MODELS)})")
    cfg = train_config_of(meta, checkpoint)
    graph = open_graph(meta_field(meta, "graph", checkpoint)) if graph is None else graph
    if cfg.until is not None or cfg.since is not None:
        from graphsys.storage.time_view import until

        graph = until(graph, cfg.until, since=cfg.since)
    identity = meta_field(meta, "graph_identity", checkpoint, dict)
    if identity.get("digest") != graph_digest(graph):
        raise GraphsysError(f"{checkpoint}: a temporal model's memory belongs to the events "
                            f"it was trained on ({meta.get('graph')}); {graph.path} has other "
                            f"nodes, edges or partitions (an append since moves node ids "
                            f"and adds events): train again on it")
    if "edge_features" not in meta and not graph.edge_set(None).has_weight:
        cfg.edge_features = []   # a run from before feature columns were read: no features
    own = {k: v for k, v in state.items() if not k.startswith((TRAIN_END, NEGATIVES))}
    _check_dimensions(checkpoint, config, cfg, own)
    task = TemporalTask(graph, cfg, resolve_device(device),
                        scales=_feature_scales(checkpoint, meta, config["raw_dim"]))
    ev = task.ev
    if (config["num_nodes"], config["raw_dim"]) != (ev.num_nodes, ev.raw.shape[1]):
        raise GraphsysError(f"{checkpoint}: trained on {config['num_nodes']:,} nodes with "
                            f"{config['raw_dim']} edge features; {graph.path} gives "
                            f"{ev.num_nodes:,} and {ev.raw.shape[1]}")
    load_module_state(task.model, own, "", checkpoint)
    task.model.eval()
    return task.stream, cfg, state, graph


def _feature_scales(checkpoint, meta: dict[str, Any], raw_dim: int) -> list[float] | str:
    """The events' feature divisors the run recorded (``meta.feature_scales``, one positive
    finite number per feature, else refused in one line), or ``"all"`` for a run from
    before they were recorded (which divided by the largest magnitude over all events)."""
    if "feature_scales" not in meta:
        return "all"
    scales = meta["feature_scales"]
    if not (isinstance(scales, list) and len(scales) == raw_dim and all(
            type(x) in (int, float) and 0 < x < float("inf") for x in scales)):
        raise FormatError(f"{Path(checkpoint) / 'model.json'}: meta.feature_scales must be "
                          f"{raw_dim} positive finite numbers")
    return scales


def _check_dimensions(checkpoint, config: dict[str, Any], cfg: TrainConfig,
                      state: dict[str, torch.Tensor]) -> None:
    """Refuse, in one line and before the model is built for the graph, a ``model.json``
    whose dimensions (which carry no checksum) the stored tensors do not have: ``config``
    is checked on torch's ``meta`` device (:func:`~graphsys.gnn.checkpoint.check_fits`),
    and the training settings the task builds the model from must agree with it."""
    from graphsys.gnn.jodie import JODIE as JODIEModel
    from graphsys.gnn.temporal import TGN as TGNModel
    from graphsys.gnn.tgat import TGAT as TGATModel

    model = {TGAT: TGATModel, JODIE: JODIEModel}.get(config["model"], TGNModel)
    check_fits(lambda: model(**{k: v for k, v in config.items() if k != "model"}), state, "",
               checkpoint)
    where = Path(checkpoint) / "model.json"
    if cfg.hidden != config["dim"]:
        raise FormatError(f"{where}: meta.train_config.hidden is {cfg.hidden}, config.dim "
                          f"{config['dim']}")
    layers = len(temporal_fanouts(cfg))
    if config["model"] == TGAT and layers != config["num_layers"]:
        raise FormatError(f"{where}: meta.train_config.fanouts gives {layers} layers, "
                          f"config.num_layers "
                          f"{config['num_layers']}")


def evaluate_temporal(checkpoint: str | Path, graph: Graph | None = None, *,
                      ks=None, eval_protocol: str | None = None, device="cpu"
                      ) -> dict[str, Any]:
    """Evaluate a temporal (TGN, TGAT, JODIE) checkpoint again: its validation and test
    events streamed from the memory the training events left (see the module docstring).

    Parameters
    ----------
    checkpoint : str or Path
        ``out/checkpoint`` of a ``task="temporal-link"`` run.
    graph : Graph, optional
        The training graph (default: the one the checkpoint records).
    ks : sequence of int, optional
        The k of ``hits@k`` (default: the run's ``metrics_k``).
    eval_protocol : {"sampled", "tgb"}, optional
        The ranking protocol (default: the run's, :attr:`TrainConfig.eval_protocol`); TGB's
        negatives are the ones the run saved, or, for a run under the sampled protocol,
        drawn from its seed as training would have.
    device : str or torch.device, optional
        Where the model runs (default ``"cpu"``).

    Returns
    -------
    dict
        The test metrics (``mrr``, ``hits@k``, ``ap``, ``auc``), the validation ones as
        ``val_<name>``, ``protocol`` and the events of each split (``events``).

    Raises
    ------
    GraphsysError
        Another model's checkpoint, another graph than the training graph, or a checkpoint
        saved without its ``train_end`` memory (train again).

    Examples
    --------
    >>> import tempfile, numpy as np, pyarrow as pa, graphsys
    >>> from graphsys.gnn import TrainConfig, train
    >>> rng = np.random.default_rng(0)
    >>> pairs = rng.integers(0, 30, (40, 2))[rng.integers(0, 40, 600)]
    >>> work = tempfile.mkdtemp()
    >>> g = graphsys.from_arrow(pa.table({"src": pairs[:, 0], "dst": pairs[:, 1],
    ...                                   "timestamp": np.arange(600)}), work + "/g",
    ...                         edge_columns=["timestamp"])
    >>> run = train(g, TrainConfig(task="temporal-link", hidden=8, epochs=1,
    ...                            link_eval_negatives=20), out=work + "/run")
    >>> again = evaluate_temporal(work + "/run/checkpoint")
    >>> again["mrr"] == run.metrics["mrr"], again["protocol"]
    (True, 'sampled@20, raw')
    """
    stream, cfg, state, _ = load_temporal(checkpoint, graph, device=device)
    start_of_validation(stream, state, checkpoint)
    if ks is not None:
        cfg.metrics_k = tuple(int(k) for k in ks)
    if eval_protocol is not None:
        cfg = dataclasses.replace(cfg, eval_protocol=eval_protocol)   # checked
    split = event_split(stream.ev, cfg)
    val, test = stream_held_out(stream, split, cfg,
                                saved_negatives(state, cfg, stream.ev, split, checkpoint))
    return {**test, **{f"val_{k}": v for k, v in val.items()}, "protocol": protocol_name(cfg),
            "events": {"valid": int(split[1].sum()), "test": int(split[2].sum())}}


def start_of_validation(stream: EventStream, state: dict[str, torch.Tensor],
                        checkpoint) -> None:
    """Load the checkpoint's :data:`TRAIN_END` memory (after the training events) into
    ``stream``'s model; one line for a checkpoint without it. TGAT keeps no memory:
    nothing to load."""
    if stream.memory is None:
        return
    snapshot = {k: v for k, v in state.items() if k.startswith(TRAIN_END)}
    if not snapshot:
        raise GraphsysError(f"{checkpoint}: saved without the memory at the end of its "
                            f"training events (an older temporal checkpoint); it embeds, but "
                            f"is evaluated again only when trained again")
    buffers = {TRAIN_END + name for name, _ in stream.memory.named_buffers()}
    if set(snapshot) != buffers:
        odd = sorted(set(snapshot) ^ buffers)[0]
        raise FormatError(f"{Path(checkpoint) / 'model.json'}: tensor {odd} "
                          f"{'is missing' if odd in buffers else 'is not a memory buffer'}")
    load_module_state(stream.memory, snapshot, TRAIN_END, checkpoint, strict=False)


def saved_negatives(state: dict[str, torch.Tensor], cfg: TrainConfig, ev, split,
                    checkpoint) -> dict[str, np.ndarray]:
    """TGB's negatives of the validation and test events as the run saved them (checked:
    one row of ``link_eval_negatives`` nodes or -1 per event), or drawn now from the run's
    seed when it trained under the sampled protocol (the same draw); ``{}`` under the
    sampled protocol."""
    if cfg.eval_protocol != "tgb":
        return {}
    if not {NEGATIVES + "valid", NEGATIVES + "test"} & set(state):
        return held_out_negatives(ev, split, cfg)
    out = {}
    for name, mask in (("valid", split[1]), ("test", split[2])):
        arr = state.get(NEGATIVES + name)
        want = (int(mask.sum()), cfg.link_eval_negatives)
        if arr is None or tuple(arr.shape) != want or arr.dtype not in (
                torch.int16, torch.int32, torch.int64):
            raise FormatError(f"{Path(checkpoint) / 'model.json'}: tensor {NEGATIVES}{name} "
                              f"must be integer {want} (one row of negatives per event)")
        a = arr.numpy().astype(np.int64)
        if len(a) and (a.min() < -1 or a.max() >= ev.num_nodes):
            raise FormatError(f"{Path(checkpoint) / 'model.json'}: tensor {NEGATIVES}{name} "
                              f"holds a node outside the graph")
        out[name] = a
    return out
