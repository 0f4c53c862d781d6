"""The GNN training configuration: :class:`TrainConfig`, the one set of defaults that
``graphsys gnn train`` shows and the library uses (:data:`TASK_DEFAULTS`,
:data:`MODEL_DEFAULTS` for the values that depend on the task and model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphsys.errors import ParameterError
from graphsys.gnn.full_graph import check_full_graph
from graphsys.plugins import GNN_MODELS

#: The defaults that depend on the task: a :class:`TrainConfig` field left None takes
#: ``TASK_DEFAULTS[task][field]``, then ``MODEL_DEFAULTS[(task, model)]`` over it. The node
#: task's follow Kipf & Welling's GCN setup on Planetoid (at most 200 epochs, Adam lr 0.01,
#: weight decay 5e-4, dropout 0.5), with early stopping after 50 evaluations without a better
#: validation accuracy; GAT's are Velickovic et al.'s (lr 0.005, dropout 0.6).
TASK_DEFAULTS: dict[str, dict[str, Any]] = {
    "node": {"epochs": 200, "lr": 0.01, "weight_decay": 5e-4, "dropout": 0.5,
             "batch_size": 256, "patience": 50},
    "link": {"epochs": 20, "lr": 0.003, "weight_decay": 0.0, "dropout": 0.0,
             "batch_size": 512, "patience": 5},
}
#: Where ``weight_decay`` applies: every layer, or the first (and the layer-0 input) only.
WEIGHT_DECAY_LAYERS = ("all", "first")
#: Model selection and early-stopping rules of the node task (:attr:`TrainConfig.selection`)
SELECTIONS = ("val_accuracy", "val_accuracy_and_loss")
#: How a caller's own model is called (:mod:`graphsys.gnn.custom`): ``model(blocks, x)`` or,
#: as models written for PyG's ``NeighborSampler``, ``model(x, adjs)``.
INPUTS = ("blocks", "adjs")
MODEL_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    ("node", "gat"): {"lr": 0.005, "dropout": 0.6},
}


@dataclass
class TrainConfig:
    """Hyperparameters and run options (JSON-able; stored in checkpoints).

    ``fanouts``: neighbours per layer, input layer first (-1 = all; None = all for every
    layer); its length is the number of layers. PinSage neighbourhoods use
    ``num_traversals``/``termination_prob``/``num_random_walks`` and ``fanouts[l]`` as
    ``num_neighbors`` of layer ``l``. ``lr`` for Adam; ``batch_size`` seeds (node task) or
    query items (link task) per step; ``batches_per_epoch`` caps the link task's steps.
    ``weight_decay`` is Adam's L2 penalty, on every parameter (``weight_decay_layers="all"``)
    or on the first layer and the layer-0 input only (``"first"``, Kipf & Welling's GCN
    recipe and PyG's ``gcn.py``). ``full_graph``: one step per epoch on the whole graph (node
    task, full neighbourhoods; :mod:`graphsys.gnn.full_graph`). ``selection`` (node task):
    ``"val_accuracy"`` keeps the model of the best validation accuracy and stops after
    ``patience`` evaluations without a better one; ``"val_accuracy_and_loss"`` is the rule
    of Veličković et al.'s GAT code: patience restarts when validation accuracy or loss
    improves (accuracy ``>=`` its best, loss ``<=`` its best), and a model is kept only when
    both do.
    ``epochs``, ``lr``, ``weight_decay``, ``dropout``, ``batch_size`` and ``patience`` left
    None take the task's (and model's) default (:data:`TASK_DEFAULTS`,
    :data:`MODEL_DEFAULTS`); after construction they always hold a value.
    """

    task: str = "node"
    model: str = "sage"
    fanouts: list[int] | None = None
    hidden: int = 64
    epochs: int | None = None
    lr: float | None = None
    weight_decay: float | None = None
    weight_decay_layers: str = "all"
    selection: str = "val_accuracy"
    full_graph: bool = False
    dropout: float | None = None
    batch_size: int | None = None
    batches_per_epoch: int | None = None
    patience: int | None = None
    eval_every: int = 1
    seed: int = 0
    num_workers: int = 1
    prefetch: int = 2
    num_traversals: int = 3
    termination_prob: float = 0.5
    num_random_walks: int = 50
    margin: float = 0.5
    num_negatives: int = 4
    hard_negatives: int = 1
    hard_band: tuple[int, int] = (50, 300)
    entity_type: str | None = None
    heads: int = 8
    inputs: str = "blocks"

    def __post_init__(self):
        """Fill the task's defaults, then check every value: a :class:`ParameterError`
        naming the field (the CLI shows it as the flag that set it)."""
        if self.task not in TASK_DEFAULTS:
            raise ParameterError("task", f"must be node or link, got {self.task!r}")
        if self.model not in GNN_MODELS and ":" not in self.model:
            raise ParameterError("model", f"must be one of {', '.join(GNN_MODELS.names())} or "
                                          f"module:Factory, got {self.model!r}")
        defaults = {**TASK_DEFAULTS[self.task],
                    **MODEL_DEFAULTS.get((self.task, self.model), {})}
        for name, value in defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        for name in ("hidden", "epochs", "batch_size", "patience", "eval_every", "prefetch",
                     "heads", "batches_per_epoch"):
            value = getattr(self, name)
            if value is not None and int(value) < 1:
                raise ParameterError(name, f"must be >= 1, got {value}")
        if self.num_workers < 0:
            raise ParameterError("num_workers", f"must be >= 0, got {self.num_workers}")
        if not 0 <= self.dropout < 1:
            raise ParameterError("dropout", f"must be in [0, 1), got {self.dropout}")
        if not self.lr > 0:
            raise ParameterError("lr", f"must be > 0, got {self.lr}")
        if self.weight_decay < 0:
            raise ParameterError("weight_decay", f"must be >= 0, got {self.weight_decay}")
        if self.weight_decay_layers not in WEIGHT_DECAY_LAYERS:
            raise ParameterError("weight_decay_layers", f"must be one of "
                                 f"{', '.join(WEIGHT_DECAY_LAYERS)}, got "
                                 f"{self.weight_decay_layers!r}")
        if self.selection not in SELECTIONS:
            raise ParameterError("selection", f"must be one of {', '.join(SELECTIONS)}, got "
                                              f"{self.selection!r}")
        if self.selection != "val_accuracy" and self.task != "node":
            raise ParameterError("selection", "applies to the node task only")
        if self.inputs not in INPUTS:
            raise ParameterError("inputs", f"must be one of {', '.join(INPUTS)}, got "
                                           f"{self.inputs!r}")
        if self.full_graph:
            if self.task != "node":
                raise ParameterError("full_graph", "applies to the node task only")
            check_full_graph(self.model, self.fanouts)
