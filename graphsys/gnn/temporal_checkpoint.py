"""A trained TGN or TGAT checkpoint (``task="temporal-link"``,
:mod:`graphsys.gnn.temporal_task`) evaluated again and embedded.

What the checkpoint holds. Besides the model's parameters, for TGN the memory twice: its
buffers
(``memory.memory``, ``memory.last_update`` and the pending messages) as the run left them,
after streaming every event of the graph (training, validation, then test), and the same
buffers as validation began, after the training events (``train_end.*``, the tensors of
:data:`~graphsys.gnn.temporal_task.TRAIN_END`). Both belong to the nodes and events of the
training graph, so both uses below refuse, in one line, a graph that is not that very graph
(its nodes, edges and partitions: :func:`graphsys.distributed.graph_digest`), after the
run's ``until`` view.

* :func:`evaluate_temporal` (``graphsys gnn evaluate``) starts from the ``train_end``
  memory and streams the validation and then the test events as training evaluated them
  (each batch scored against the split's fixed candidates, then taken into the memory):
  the same metrics under the same protocol (``sampled@N, raw``) as the run reported for
  its kept model; TGAT, which keeps no state, streams them from its parameters alone.
* :func:`embed_temporal` (``graphsys gnn embed``) writes every node's embedding at the end
  of the stream: TGAT's layers over the node's sampled events of the whole graph, or TGN's
  attention over the node's ``fanouts[0]`` latest (or uniform) events of the whole graph,
  on the memory after every event (pending messages applied), as the model
  would embed a node for an event just after the last one.

A TGN checkpoint saved before the ``train_end`` memory was kept embeds, but is refused by
:func:`evaluate_temporal` in one line (train it again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.errors import FormatError, GraphsysError
from graphsys.gnn.checkpoint import (
    load_checkpoint,
    load_module_state,
    meta_field,
    train_config_of,
)
from graphsys.gnn.config import TEMPORAL_MODELS, TrainConfig
from graphsys.gnn.inference import partition_ranges
from graphsys.gnn.temporal_task import TRAIN_END, EventStream, TemporalTask, event_split
from graphsys.ranking import protocol
from graphsys.storage.embedding_files import EmbeddingWriter
from graphsys.storage.graph import Graph, open_graph

#: Nodes embedded per batch by :func:`embed_temporal`.
EMBED_BATCH = 1024


def load_temporal(checkpoint: str | Path, graph: Graph | None = None, *, device="cpu"
                  ) -> tuple[EventStream, TrainConfig, dict[str, torch.Tensor], Graph]:
    """The TGN or TGAT of a temporal-link checkpoint on its training graph (``graph``,
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
                            f"nodes, edges or partitions")
    if "edge_features" not in meta and not graph.edge_set(None).has_weight:
        cfg.edge_features = []   # a run from before feature columns were read: no features
    task = TemporalTask(graph, cfg, torch.device(device))
    ev = task.ev
    if (config["num_nodes"], config["raw_dim"]) != (ev.num_nodes, ev.raw.shape[1]):
        raise GraphsysError(f"{checkpoint}: trained on {config['num_nodes']:,} nodes with "
                            f"{config['raw_dim']} edge features; {graph.path} gives "
                            f"{ev.num_nodes:,} and {ev.raw.shape[1]}")
    own = {k: v for k, v in state.items() if not k.startswith(TRAIN_END)}
    load_module_state(task.model, own, "", checkpoint)
    task.model.eval()
    return task.stream, cfg, state, graph


def evaluate_temporal(checkpoint: str | Path, graph: Graph | None = None, *,
                      ks=None, device="cpu") -> dict[str, Any]:
    """Evaluate a TGN or TGAT checkpoint again: its validation and test events streamed
    as training streamed them (TGN: from the memory its training events left; see the
    module docstring).

    Parameters
    ----------
    checkpoint : str or Path
        ``out/checkpoint`` of a ``task="temporal-link"`` run.
    graph : Graph, optional
        The training graph (default: the one the checkpoint records).
    ks : sequence of int, optional
        The k of ``hits@k`` (default: the run's ``metrics_k``).
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
    snapshot = {k: v for k, v in state.items() if k.startswith(TRAIN_END)}
    if stream.memory is not None:     # TGN's memory as validation began (TGAT has none)
        _load_train_end(stream, snapshot, checkpoint)
    if ks is not None:
        cfg.metrics_k = tuple(int(k) for k in ks)
    _, val_m, test_m = event_split(stream.ev, cfg)
    val = stream.evaluate(val_m, 1, cfg)
    test = stream.evaluate(test_m, 2, cfg)
    ranked = protocol(cfg.link_eval_negatives if cfg.link_eval_negatives > 0 else None,
                      filtered=False)
    return {**test, **{f"val_{k}": v for k, v in val.items()}, "protocol": ranked,
            "events": {"valid": int(val_m.sum()), "test": int(test_m.sum())}}


def _load_train_end(stream: EventStream, snapshot: dict[str, torch.Tensor], checkpoint
                    ) -> None:
    """TGN's memory as the run's validation began (the :data:`TRAIN_END` tensors), or a
    one-line refusal of a checkpoint saved without it (or with other buffers)."""
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


def embed_temporal(checkpoint: str | Path, out: str | Path, *, graph: Graph | None = None,
                   device="cpu", log=None) -> dict[str, Any]:
    """Every node's TGN or TGAT embedding at the end of the stream (see the module docstring),
    written partition by partition as an Arrow embedding directory
    (:class:`~graphsys.storage.embedding_files.EmbeddingWriter`); what
    :func:`~graphsys.gnn.embed_checkpoint` does for a temporal checkpoint. Returns
    ``entity_type``, ``num_nodes``, ``dimension``, ``out``, ``files`` and ``as_of`` (the
    last event's time)."""
    stream, _, _, graph = load_temporal(checkpoint, graph, device=device)
    ev = stream.ev
    et = graph.entity_types[0]
    last = ev.time[-1]
    after = last + 1 if ev.time.dtype.kind in "iu" else np.nextafter(last, np.inf)
    writer = EmbeddingWriter(out, graph, et)
    try:
        for p, (a, b) in enumerate(partition_ranges(graph, et)):
            with torch.no_grad():
                rows = [stream.embed_at(np.arange(lo, min(lo + EMBED_BATCH, b)),
                                        np.asarray(after, ev.time.dtype))[0].cpu()
                        for lo in range(a, b, EMBED_BATCH)]
            z = torch.cat(rows) if rows else torch.zeros(0, stream.model.dim)
            writer(p, z)
            if log:
                log(f"partition {p}: {b - a:,} embeddings written")
        writer.finish({"checkpoint": str(checkpoint), "task": "temporal-link",
                       "model": stream.model.config()["model"], "as_of": last.item()})
    finally:  # finished or not, the directory is released
        writer.close()
    return {"entity_type": et, "num_nodes": graph.num_nodes(et), "dimension": writer.dim,
            "out": str(out), "files": writer.files, "as_of": last.item()}
