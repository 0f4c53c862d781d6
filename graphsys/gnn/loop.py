"""What every task of :func:`graphsys.gnn.train` shares besides the loop itself
(:func:`graphsys.gnn.fit.fit`): :class:`GNNResult`, what a run returns; the data-parallel
set-up (:func:`distributed_setup`, :class:`Ranks`, :func:`inputs_digest`) on
:mod:`graphsys.distributed`; what a resumed run may change (:data:`RESUMABLE_CHANGES`) and
the config as stored (:func:`config_json`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from graphsys.distributed import (
    NOT_INITIALISED,
    Collectives,
    destroy,
    graph_digest,
    init_owned,
    initialized,
    local_cuda_device,
    rank_share,
)
from graphsys.errors import ParameterError
from graphsys.gnn.config import TrainConfig
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
        ``loss``, the validation metrics (link task: and their ``protocol``), this call's
        ``seconds``, ``train_seconds``, ``eval_seconds`` and ``best`` (the model kept).
    model : torch.nn.Module
        The trained model, holding the best-validation weights.
    extra : dict
        Task internals: ``input`` (the layer-0 input module), ``entity_type``, and
        ``sampler`` (node task) or ``embeddings`` (link task: every item's embedding).
        Node task also: ``train_sampler`` (``TrainConfig.sampler`` as the run trained:
        ``"graph"``, ``"device"`` or ``"cpu"``; None with ``full_graph``), ``world_size``,
        this process's ``rank``, ``ranks`` (per rank: ``rank``, the training ``seeds`` it
        stepped on and its training ``seconds``, in this call), ``train_seconds`` and
        ``eval_seconds`` (this rank's, in this call).
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
        return ids[rank_share(len(ids), self.rank, self.world_size)]

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
        distributed, owned = init_owned(device)
    elif distributed and not initialized():
        raise ParameterError("distributed", f"{NOT_INITIALISED} (or pass distributed=None "
                                            f"under torchrun)")
    if distributed:
        if cfg.task != "node" or cfg.full_graph:
            if owned:
                destroy()
            raise ParameterError("distributed", "data-parallel training covers the node "
                                 "task on minibatches (not the link task, not full_graph)")
        if device.type == "cuda":
            device = local_cuda_device()
    return bool(distributed), owned, device


def inputs_digest(graph: Graph, cfg: TrainConfig, model: nn.Module, x,
                  features: str | None = None) -> dict[str, str]:
    """What every rank of a data-parallel run must agree on: the graph, the config, the
    model's parameter names and shapes, and the features: the node column named
    (``features``; None: the default), their shape and, held in memory (a tensor or an
    array: the caller's, or a column read), their values; a memory-mapped column's file is
    in the graph's digest."""
    def sha(obj) -> str:
        return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()

    held = x.detach().cpu().contiguous().view(torch.uint8).numpy() if torch.is_tensor(x) else x
    values = (hashlib.sha256(np.ascontiguousarray(held).tobytes()).hexdigest()
              if isinstance(held, np.ndarray) else None)
    return {"graph": graph_digest(graph), "config": sha(config_json(cfg)),
            "model": sha([type(model).__qualname__,
                          [(k, list(v.shape)) for k, v in model.state_dict().items()],
                          None if x is None else list(x.shape)]),
            "features": sha([features, values])}


#: TrainConfig fields a resumed run may change: it trains on with more epochs or patience,
#: or samples its (identical) batches elsewhere
RESUMABLE_CHANGES = ("epochs", "patience", "sampler")


def config_json(cfg: TrainConfig) -> dict:
    """The config as it reads back from JSON (tuples as lists), so that a stored config
    compares equal to the run's."""
    return json.loads(json.dumps(asdict(cfg)))
