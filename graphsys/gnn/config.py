"""The GNN training configuration: :class:`TrainConfig`, the one set of defaults that
``graphsys gnn train`` shows and the library uses (:data:`TASK_DEFAULTS`,
:data:`MODEL_DEFAULTS` for the values that depend on the task and model), with a nested
table per model that has settings of its own (:class:`RGCNSettings`, PyTorch-BigGraph
style); :func:`load_train_config` reads one from a TOML or JSON file."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from graphsys.config_values import read_config_file
from graphsys.errors import ParameterError, check_count, check_real
from graphsys.gnn.full_graph import check_full_graph
from graphsys.memory import over_budget
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
    # TGN's setup (Rossi et al. 2020; PyG's tgn.py): batches of 200 events in time order
    "temporal-link": {"epochs": 10, "lr": 0.001, "weight_decay": 0.0, "dropout": 0.1,
                      "batch_size": 200, "patience": 3},
}
#: gat's attention heads per hidden layer unless told (:attr:`TrainConfig.heads`).
HEADS_DEFAULT = 8
#: Where ``weight_decay`` applies: every layer, or the first (and the layer-0 input) only.
WEIGHT_DECAY_LAYERS = ("all", "first")
#: Model selection and early-stopping rules of the node task (:attr:`TrainConfig.selection`)
SELECTIONS = ("val_accuracy", "val_accuracy_and_loss")
#: How a caller's own model is called (:mod:`graphsys.gnn.custom`): ``model(blocks, x)`` or,
#: as models written for PyG's ``NeighborSampler``, ``model(x, adjs)``.
INPUTS = ("blocks", "adjs")
#: The temporal link model (:mod:`graphsys.gnn.temporal_task`): memory, time encoding and
#: attention over the most recent (or uniform) earlier neighbours; ``task="temporal-link"``
TGN = "tgn"
#: The memoryless temporal link model (:mod:`graphsys.gnn.tgat`, Xu et al. 2020): ``L``
#: layers of temporal attention over the sampled earlier neighbours, one layer per
#: ``fanouts`` entry (default ``[10, 10]``)
TGAT = "tgat"
#: The second memory model of ``task="temporal-link"`` (:mod:`graphsys.gnn.jodie`, Kumar
#: et al. 2019): an RNN memory per node and its projection in time, no neighbours
JODIE = "jodie"
#: The models of ``task="temporal-link"``, its default first
TEMPORAL_MODELS = (TGN, TGAT, JODIE)
#: How the temporal neighbours of an event are drawn (:attr:`TrainConfig.temporal_strategy`)
TEMPORAL_STRATEGIES = ("recent", "uniform")
#: How ``task="temporal-link"`` ranks held-out events (:attr:`TrainConfig.eval_protocol`)
EVAL_PROTOCOLS = ("sampled", "tgb")
#: Where the node task draws its uniform neighbour samples (:attr:`TrainConfig.sampler`)
SAMPLERS = ("auto", "cpu", "device", "graph")
#: The builtin models whose layers take padded blocks (``takes_padded``): those
#: ``sampler="graph"`` trains (:class:`~graphsys.gnn.NodeStepGraph`)
GRAPH_SAMPLER_MODELS = ("sage", "gcn", "gat", "gin")
#: How the link task holds out edges (:attr:`TrainConfig.link_split`)
LINK_SPLITS = ("auto", "user", "random", "time")
#: Edge scores of the link task's held-out-edge splits: ``<z_h, z_t>``, DistMult's
#: ``<z_h, diag(r), z_t>`` with a learned ``r``, or a two-layer perceptron on ``z_h * z_t``
LINK_DECODERS = ("dot", "distmult", "mlp")
#: The link task's relational model: R-GCN encoder + DistMult decoder on a typed graph
#: (:mod:`graphsys.gnn.rgcn_link`, Schlichtkrull et al. 2018); its own settings:
#: :class:`RGCNSettings`.
RGCN = "rgcn"
#: The R-GCN link task's normalisation constants (:attr:`RGCNSettings.norm`)
RGCN_NORMS = ("node", "relation")
MODEL_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    # the paper's FB15k-237 setup: Adam lr 0.01, dropout 0.2, edge batches of 30,000 triples
    ("link", "rgcn"): {"lr": 0.01, "dropout": 0.2, "batch_size": 30000, "epochs": 20},
    ("node", "gat"): {"lr": 0.005, "dropout": 0.6},
    # TGL's TGAT: 2 layers of 10 most recent neighbours
    ("temporal-link", "tgat"): {"fanouts": (10, 10)},
}


#: Integer fields and their least value (seeds also stay below 2**63: numpy's and torch's
#: generators take them)
INT_FIELDS = {"hidden": 1, "epochs": 1, "batch_size": 1, "patience": 1, "eval_every": 1,
              "prefetch": 1, "heads": 1, "batches_per_epoch": 1, "num_workers": 0, "seed": 0,
              "num_traversals": 1, "num_random_walks": 1, "num_negatives": 1,
              "hard_negatives": 0}
#: Real fields and their bounds (:func:`~graphsys.errors.check_real`'s); every one finite
FLOAT_FIELDS = {"lr": {"low": 0, "low_open": True}, "weight_decay": {"low": 0},
                "dropout": {"low": 0, "high": 1, "high_open": True},
                "termination_prob": {"low": 0, "high": 1}, "margin": {"low": 0}}


def _fanout_list(values) -> bool:
    """Whether ``values`` is a non-empty list or tuple of integers >= 1 or -1 (no bool, no
    float: 1.5 is not cut to 1)."""
    return isinstance(values, (list, tuple)) and len(values) > 0 and all(
        isinstance(f, Integral) and not isinstance(f, bool) and (f >= 1 or f == -1)
        for f in values)


def check_choice(name: str, value, choices) -> None:
    """ParameterError unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ParameterError(name, f"must be one of {', '.join(choices)}, got {value!r}")


def _check_number(name: str, value) -> None:
    """ParameterError unless ``value`` fits :data:`INT_FIELDS` / :data:`FLOAT_FIELDS`."""
    if name in INT_FIELDS:
        check_count(name, value, minimum=INT_FIELDS[name], maximum=2**63 - 1)
    else:
        check_real(name, value, **FLOAT_FIELDS[name])


@dataclass
class RGCNSettings:
    """The settings of the R-GCN link model that :class:`TrainConfig` has no field for
    (``TrainConfig(model="rgcn", rgcn=RGCNSettings(...))``; a ``[rgcn]`` table in a TOML
    config). The shared ones come from :class:`TrainConfig`: ``hidden`` (encoding width),
    ``epochs``, ``lr``, ``dropout``, ``batch_size`` (training triples drawn per step; an
    epoch is as many steps as cover the training edges once), ``num_negatives``
    (corruptions per positive), ``eval_every``, ``patience``, ``weight_decay``, ``seed``
    and ``metrics_k``.

    Parameters
    ----------
    num_layers : int
        R-GCN layers (default 2, the paper's on FB15k-237).
    num_blocks : int, optional
        Block-diagonal decomposition: blocks per relation weight (0: none). None (default):
        the paper's 5 x 5 blocks, ``hidden // 5``, when 5 divides ``hidden``, else none.
    num_bases : int
        Basis decomposition: shared bases (default 0: none); at most one of the two.
    reg : float
        Weight of the squared-norm regulariser of encodings and relation vectors (default
        0.01).
    grad_norm : float
        Gradient clipping, the largest L2 norm (default 1.0).
    graph_split : float
        Share of a step's triples that forms the graph the encoder runs on, in (0, 1]
        (default 0.5, as the paper's edge sampling).
    norm : {"node", "relation"}
        The normalisation constant :math:`c_{i,r}` of the paper's propagation rule (its
        Eq. 2, "chosen in advance"): ``"node"`` (default), the in-degree of node ``i`` in
        the step's graph over every relation, as DGL's R-GCN link example (its
        ``norm_by_dst``), which learns several times more per step on FB15k-237 than
        ``"relation"``, the in-degree along relation ``r`` (:math:`|\\mathcal{N}_i^r|`,
        :class:`~graphsys.gnn.RGCNConv`'s ``aggr="mean"``, the paper's example).
    eval_max : int
        Validation triples ranked per evaluation, a seeded sample (default 2000; 0: all).
        The test edge set is always ranked whole.
    max_seconds : float, optional
        Stop after this much training time in seconds, evaluations excluded, a resumed
        run's earlier epochs included (it ends with an evaluation and keeps the best model,
        as at the end); default None: no limit.
    train_edges, valid_edges, test_edges : str
        The edge sets that train, select the model, and give the test metrics (defaults
        ``train``, ``valid``, ``test``, as ``graphsys datasets ingest fb15k-237`` stores
        them).

    Examples
    --------
    >>> from graphsys.gnn import RGCNSettings, TrainConfig
    >>> cfg = TrainConfig(task="link", model="rgcn", hidden=200,
    ...                   rgcn=RGCNSettings(max_seconds=60))
    >>> cfg.rgcn.num_blocks, cfg.rgcn.max_seconds             # 5 x 5 blocks of 200
    (40, 60)
    >>> TrainConfig(task="link", model="rgcn", rgcn={"reg": 0.0}).rgcn.reg
    0.0
    """

    num_layers: int = 2
    num_blocks: int | None = None
    num_bases: int = 0
    reg: float = 0.01
    grad_norm: float = 1.0
    graph_split: float = 0.5
    norm: str = "node"
    eval_max: int = 2000
    max_seconds: float | None = None
    train_edges: str = "train"
    valid_edges: str = "valid"
    test_edges: str = "test"

    def __post_init__(self):
        """Check every value: a :class:`ParameterError` naming ``rgcn.<field>``."""
        for name, low in (("num_layers", 1), ("num_blocks", 0), ("num_bases", 0),
                          ("eval_max", 0)):
            value = getattr(self, name)
            if value is None and name == "num_blocks":
                continue
            check_count(f"rgcn.{name}", value, minimum=low)
        for name, bounds in (("reg", {}), ("grad_norm", {"low_open": True}),
                             ("max_seconds", {"low_open": True}),
                             ("graph_split", {"low_open": True, "high": 1})):
            if getattr(self, name) is not None or name != "max_seconds":
                check_real(f"rgcn.{name}", getattr(self, name), low=0, **bounds)
        if self.num_blocks and self.num_bases:
            raise ParameterError("rgcn.num_bases", "give num_blocks or num_bases, not both")
        check_choice("rgcn.norm", self.norm, RGCN_NORMS)
        for name in ("train_edges", "valid_edges", "test_edges"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ParameterError(f"rgcn.{name}", f"must be an edge set name, got "
                                                     f"{getattr(self, name)!r}")

    @classmethod
    def from_dict(cls, values: dict) -> RGCNSettings:
        """From a mapping (the ``[rgcn]`` table of a TOML config); an unknown key is one
        :class:`ParameterError` naming it and the known ones."""
        if not isinstance(values, dict):
            raise ParameterError("rgcn", f"must be a table of R-GCN settings, got "
                                         f"{values!r}")
        known = [f.name for f in fields(cls)]
        bad = sorted(set(values) - set(known))
        if bad:
            raise ParameterError(f"rgcn.{bad[0]}", f"is not an R-GCN setting (known: "
                                                   f"{', '.join(known)})")
        return cls(**values)


@dataclass
class TrainConfig:
    """Hyperparameters and run options of :func:`graphsys.gnn.train` (JSON-able; stored
    in checkpoints).

    Fields left None (``epochs``, ``lr``, ``weight_decay``, ``dropout``, ``batch_size``,
    ``patience``) take the task's default, then the model's (:data:`TASK_DEFAULTS`,
    :data:`MODEL_DEFAULTS`); after construction they always hold a value. Every value is
    checked: a bad one raises :class:`~graphsys.errors.ParameterError` naming the field, and
    :func:`~graphsys.gnn.train` refuses one set away from its default that the run does not
    read (:meth:`check_read`).

    Parameters
    ----------
    task : {"node", "link", "temporal-link"}
        Node classification, link prediction / item recommendation on a bipartite graph,
        or link prediction on a stream of timestamped events (default ``"node"``).
    model : str
        A builtin model (``"sage"``, ``"gcn"``, ``"gat"``, ``"gin"``, ``"pinsage"``; see
        :class:`~graphsys.gnn.GNN`), a ``"module:Factory"`` spec (node task), ``"rgcn"``
        (task link: R-GCN encoder and DistMult decoder on a typed graph's ``train`` /
        ``valid`` / ``test`` edge sets, :mod:`graphsys.gnn.rgcn_link`; its settings in
        ``rgcn``), or ``"tgn"``, ``"tgat"`` or ``"jodie"`` (task temporal-link: TGN's
        memory model, :mod:`graphsys.gnn.temporal`, TGAT's layers of temporal attention,
        :mod:`graphsys.gnn.tgat`, or JODIE's memory projected in time,
        :mod:`graphsys.gnn.jodie`). Default None: ``"sage"``, or ``"tgn"`` for task
        temporal-link; a model the task does not train is refused in one line naming the
        ones it does.
    fanouts : list of int, optional
        Neighbours per layer, input layer first (-1 = all); its length is the number of
        layers. None: every neighbour in 2 layers (node task), ``[10, 10]`` (link task).
        PinSage neighbourhoods keep ``fanouts[l]`` nodes in layer ``l``. Task temporal-link:
        the temporal neighbours per event, one number for TGN (default ``[10]``), one per
        layer for TGAT (default ``[10, 10]``: 2 layers); JODIE reads no neighbours (none
        given).
    hidden : int
        Hidden width (default 64).
    epochs : int, optional
        Maximum epochs (node 200, link 20, temporal-link 10).
    lr : float, optional
        Adam learning rate (node 0.01, gat 0.005, link 0.003, rgcn 0.01, temporal-link
        0.001).
    weight_decay : float, optional
        Adam's L2 penalty (node 5e-4, link 0, temporal-link 0).
    weight_decay_layers : {"all", "first"}
        Where ``weight_decay`` applies: every parameter, or the first layer and the
        layer-0 input only (Kipf & Welling's GCN recipe, PyG's ``gcn.py``).
    selection : {"val_accuracy", "val_accuracy_and_loss"}
        Node task: keep the model of the best validation accuracy and stop after
        ``patience`` evaluations without a better one; or the rule of Veličković et al.'s
        GAT code: patience restarts when validation accuracy or loss improves (accuracy
        ``>=`` its best, loss ``<=`` its best), and a model is kept only when both do.
    full_graph : bool
        Node task: one step per epoch on the whole graph, full neighbourhoods
        (:mod:`graphsys.gnn.full_graph`) (default False).
    dropout : float, optional
        Dropout probability in [0, 1) (node 0.5, gat 0.6, link 0, rgcn 0.2, temporal-link
        0.1).
    batch_size : int, optional
        Seeds (node task), query items or edges (link task) or events (temporal-link) per
        step (node 256, link 512, rgcn 30000, temporal-link 200).
    batches_per_epoch : int, optional
        Cap on the link task's steps per epoch.
    patience : int, optional
        Early stopping: evaluations without improvement (node 50, link 5, temporal-link
        3).
    eval_every : int
        Evaluate every this many epochs, and after the last (default 1).
    eval_fanouts : list of int, optional
        Node task: neighbours per layer of the validation and test seeds' neighbourhoods,
        input layer first (-1 = all; ``[-1]`` = every neighbour in every layer). None: the
        training ``fanouts``. Evaluation runs on the seeds' neighbourhoods only; a full
        neighbourhood of a builtin model is computed layer by layer over the nodes it needs.
        A sample is drawn once per run (the same at every evaluation), and a builtin
        model's validation sample is kept between evaluations while its blocks take at most
        ``graphsys.gnn.node_task.EVAL_PLAN_BYTES`` (512 MiB).
    layerwise_inference : bool
        Node task: evaluate on every node of the graph instead, with full neighbourhoods
        (a builtin model layer by layer over all nodes, a model of one's own on each
        node's full neighbourhood; every node's output, as
        :func:`~graphsys.gnn.embed_checkpoint` computes it); ``eval_fanouts`` must then be
        None or all -1 (default False).
    seed : int
        Seed of every random choice: splits, initialisation, shuffles, samples (default 0).
        Training seeds torch's default generators with it and gives the caller's states
        back as it ends (NumPy's global generator is never touched).
    num_workers : int
        Sampling threads (default 1; 0 samples in the training thread).
    prefetch : int
        Batches sampled ahead of the training step, at most (default 2).
    sampler : {"auto", "cpu", "device", "graph"}
        Node task, uniform neighbours: where the training batches are drawn. ``cpu``:
        :class:`~graphsys.sampling.NeighborSampler` in the loader's threads; ``device``:
        :class:`~graphsys.sampling.DeviceNeighborSampler` on the training device (the same
        blocks, features gathered there when they fit); ``graph``: the device sampler's
        padded batches, each training step (draw to update) one CUDA graph replay
        (:class:`~graphsys.gnn.NodeStepGraph`: the builtin ``sage``, ``gcn``, ``gat`` or
        ``gin`` model on stored features, fixed fanouts, one process, no loader threads to
        set with ``num_workers`` or ``prefetch``; off CUDA the same steps run eagerly);
        ``auto`` (default): on CUDA ``graph`` where the run allows it (the four models
        with fixed fanouts, stored features within half the device's free memory, the
        default loss, one process, ``num_workers`` and ``prefetch`` at their defaults),
        else ``device``; off CUDA ``cpu``. The result's ``extra["train_sampler"]`` names
        the choice.
    num_traversals, termination_prob, num_random_walks : int, float, int
        PinSage walks (:class:`~graphsys.sampling.RandomWalkNeighborSampler`; defaults 3,
        0.5, 50).
    margin : float
        Link task: max-margin loss margin (default 0.5).
    num_negatives : int, optional
        Link tasks: uniform negatives per positive pair (default: 4 for item
        recommendation (``link_split="user"``) and R-GCN, 16 for the held-out-edge splits
        ``random``/``time``, see :meth:`negatives_for`; 1 per event for task
        ``temporal-link``, as TGN).
    hard_negatives : int
        Link task: PinSage hard negatives per query from the second epoch on (default 1;
        0 = none).
    hard_band : tuple of int
        Link task: personalized-PageRank rank band the hard negatives come from (default
        ``(50, 300)``).
    entity_type : str, optional
        Node task: the labelled entity type; link task: the item type (default: found
        from the graph).
    heads : int
        Attention heads of gat's hidden layers (default 8).
    inputs : {"blocks", "adjs"}
        How a caller's own model is called: ``model(blocks, x)``, or ``model(x, adjs)``
        as models written for PyG's ``NeighborSampler`` (default ``"blocks"``).
    link_split : {"auto", "user", "random", "time"}
        Link task: how edges are held out. ``user``: one validation and one test
        interaction per user of a bipartite graph, PinSage item recommendation; ``random``:
        a seeded ``link_val_fraction`` / ``link_test_fraction`` of the distinct edges, on
        one entity type or two (:mod:`graphsys.gnn.link`); ``time``: the latest edges by
        the ``timestamp`` edge column (:func:`graphsys.gnn.link.edge_timestamps`). ``auto``
        (default): ``user`` on a graph whose relation joins two entity types, else
        ``random``. Task ``temporal-link`` splits by time: ``auto`` or ``time``.
    link_val_fraction, link_test_fraction : float
        Link task, ``random``/``time`` splits: shares of the distinct edges held out for
        validation and test (defaults 0.05, 0.1).
    link_decoder : {"mlp", "dot", "distmult"}
        Link task, ``random``/``time`` splits: the edge score. ``mlp`` (default): a
        two-layer perceptron on the Hadamard product ``z_h * z_t``, the decoder of OGB's
        GraphSAGE/GCN link-prediction baselines; ``dot``: ``<z_h, z_t>``; ``distmult``:
        ``<z_h, diag(r), z_t>``.
    link_exclude_targets : bool
        Link task, ``random``/``time`` splits: remove each training minibatch's target
        edges from its own sampled neighbourhoods (every layer, both directions; default
        True), as a held-out edge is never in the message-passing graph (DGL's
        ``exclude="reverse_id"``; :func:`graphsys.gnn.link.exclude_pairs`).
    link_eval_negatives : int
        Link task, ``random``/``time`` splits: uniform negatives each held-out edge is
        ranked against (filtered of true edges), -1 for every candidate node (default
        1000, as OGB's ogbl-citation2).
    metrics_k : tuple of int
        Link task: the ``k`` of the reported ``hits@k`` and ``recall@k`` (default
        ``(1, 3, 10, 20)``).
    rgcn : RGCNSettings or dict, optional
        ``model="rgcn"``: the R-GCN settings :class:`TrainConfig` has no field for (a dict
        is read by :meth:`RGCNSettings.from_dict`); default ``RGCNSettings()``. Refused
        with any other model.
    until : int, float, str or datetime, optional
        Train on the graph as of this time: only the edges whose ``timestamp`` edge column
        is ``<= until`` (:class:`~graphsys.storage.time_view.TimeView`); any task.
    since : int, float, str or datetime, optional
        Train only on the edges stamped strictly after ``since`` (with ``until``: the window
        ``(since, until]``, the same view); ``since > until`` is refused.
    valid_from, test_from : int, float, str or datetime, optional
        Link task with ``link_split="time"``, and ``task="temporal-link"``: split at these
        times instead of by fractions: training before ``valid_from``, validation before
        ``test_from``, test from it on (:mod:`graphsys.gnn.time_split`; numbers in the
        column's unit, or ISO-8601 dates read as Unix seconds, UTC). Both or neither.
    temporal_strategy : {"recent", "uniform"}
        ``task="temporal-link"``: each event's ``fanouts[0]`` neighbours among the edges
        strictly before it, the most recent ones or uniform ones
        (:class:`~graphsys.sampling.TemporalNeighborSampler`; default ``"recent"``);
        ``"uniform"`` is refused where no neighbour is read (another task, model jodie).
    eval_protocol : {"sampled", "tgb"}
        ``task="temporal-link"``: each held-out event's destination ranked among
        ``link_eval_negatives`` uniform candidates, raw (``"sampled"``, default), or among
        TGB's fixed negatives, half historical and half random, filtered, with TGB's
        evaluator's MRR (``"tgb"``; :mod:`graphsys.gnn.temporal_eval`).
    edge_features : list of str, optional
        ``task="temporal-link"``: the numeric edge columns that are each event's features
        (TGN's messages, the attention's edge input of TGN and TGAT), each scaled by its
        largest magnitude over the training events. None (default): every ``feature_*``
        column when the edge set has any (the JODIE format's), else the edge weight when
        it has one; ``[]``: none.

    Examples
    --------
    >>> from graphsys.gnn import TrainConfig
    >>> cfg = TrainConfig(model="gat", fanouts=[10, 10])
    >>> cfg.lr, cfg.dropout, cfg.epochs                # the node task's gat defaults
    (0.005, 0.6, 200)
    >>> TrainConfig(task="link").batch_size
    512
    >>> TrainConfig(dropout=1.5)
    Traceback (most recent call last):
    ...
    graphsys.errors.ParameterError: dropout must be a finite number in [0, 1), got 1.5
    """

    task: str = "node"
    model: str | None = None
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
    eval_fanouts: list[int] | None = None
    layerwise_inference: bool = False
    seed: int = 0
    num_workers: int = 1
    prefetch: int = 2
    sampler: str = "auto"
    num_traversals: int = 3
    termination_prob: float = 0.5
    num_random_walks: int = 50
    margin: float = 0.5
    num_negatives: int | None = None
    hard_negatives: int = 1
    hard_band: tuple[int, int] = (50, 300)
    entity_type: str | None = None
    heads: int = HEADS_DEFAULT
    inputs: str = "blocks"
    link_split: str = "auto"
    link_val_fraction: float = 0.05
    link_test_fraction: float = 0.1
    link_decoder: str = "mlp"
    link_eval_negatives: int = 1000
    link_exclude_targets: bool = True
    metrics_k: tuple[int, ...] = (1, 3, 10, 20)
    rgcn: RGCNSettings | None = None
    until: Any = None
    since: Any = None
    valid_from: Any = None
    test_from: Any = None
    temporal_strategy: str = "recent"
    eval_protocol: str = "sampled"
    edge_features: list[str] | None = None

    def negatives_for(self, split: str) -> int:
        """``num_negatives``, or its default for the link task's ``split`` (resolved: not
        ``auto``; ``"rgcn"`` for the R-GCN model): 16 for the held-out-edge splits
        ``random`` and ``time`` (closer to the evaluation's ranking against many uniform
        tails), 4 otherwise (the setups of PinSage and R-GCN).

        Examples
        --------
        >>> from graphsys.gnn import TrainConfig
        >>> cfg = TrainConfig(task="link")
        >>> cfg.negatives_for("random"), cfg.negatives_for("user")
        (16, 4)
        >>> TrainConfig(task="link", num_negatives=8).negatives_for("random")
        8
        """
        if self.num_negatives is not None:
            return self.num_negatives
        return 16 if split in ("random", "time") else 4

    def __post_init__(self):
        """Fill the task's defaults, then check every value: a :class:`ParameterError`
        naming the field (the CLI shows it as the flag that set it)."""
        if not isinstance(self.task, str) or self.task not in TASK_DEFAULTS:
            raise ParameterError("task", f"must be node, link or temporal-link, got "
                                         f"{self.task!r}")
        for name in ("full_graph", "layerwise_inference", "link_exclude_targets"):
            if not isinstance(getattr(self, name), bool):   # "no" was true
                raise ParameterError(name, f"must be True or False, got "
                                           f"{getattr(self, name)!r}")
        if self.entity_type is not None and not (isinstance(self.entity_type, str)
                                                 and self.entity_type):
            # a list raised TypeError: unhashable type; '' was read as unset
            raise ParameterError("entity_type", f"must be an entity type's name, got "
                                                f"{self.entity_type!r}")
        self._check_temporal_keys()
        self._check_model()
        defaults = {**TASK_DEFAULTS[self.task],
                    **MODEL_DEFAULTS.get((self.task, self.model), {})}
        for name, value in defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, list(value) if isinstance(value, tuple) else value)
        for name in (*INT_FIELDS, *FLOAT_FIELDS):
            value = getattr(self, name)
            if value is not None or name not in ("batch_size", "patience",
                                                 "batches_per_epoch", "num_negatives"):
                _check_number(name, value)
        # counts whose id arrays alone exceed the RAM (2**40 negatives, walks or candidates
        # failed in the allocator with a traceback): 8 bytes an id, a lower bound
        for name, per in (("num_negatives", self.batch_size), ("num_random_walks", 1),
                          ("num_traversals", 1), ("link_eval_negatives", 1)):
            if short := over_budget(8 * max(getattr(self, name) or 0, 0) * (per or 1)):
                raise ParameterError(name, f"{getattr(self, name)} needs {short}")
        if self.fanouts is not None and not _fanout_list(self.fanouts):
            raise ParameterError("fanouts", f"must be a list of positive integers (-1: every "
                                            f"neighbour), got {self.fanouts!r}")
        band = self.hard_band
        if not (isinstance(band, (list, tuple)) and len(band) == 2
                and all(isinstance(b, Integral) and not isinstance(b, bool) for b in band)
                and 0 <= band[0] < band[1]):
            raise ParameterError("hard_band", f"must be two integers 0 <= lo < hi, got "
                                              f"{band!r}")
        check_choice("weight_decay_layers", self.weight_decay_layers, WEIGHT_DECAY_LAYERS)
        check_choice("selection", self.selection, SELECTIONS)
        if self.selection != "val_accuracy" and self.task != "node":
            raise ParameterError("selection", "applies to the node task only")
        self._check_sampler()
        check_choice("inputs", self.inputs, INPUTS)
        given = self.eval_fanouts
        if self.eval_fanouts is not None:
            layers = len(self.fanouts) if self.fanouts else 2
            # 1.5 was cut to 1, a NaN, a string or a bare number raised a raw Python error
            good = _fanout_list(self.eval_fanouts)
            self.eval_fanouts = [int(f) for f in self.eval_fanouts] if good else []
            if (not good or any(f == 0 or f < -1 for f in self.eval_fanouts)
                    or len(self.eval_fanouts) not in (1, layers)
                    or len(self.eval_fanouts) == 1 and layers > 1
                    and self.eval_fanouts != [-1]):
                raise ParameterError("eval_fanouts", f"must be {layers} positive integers or "
                                     f"-1 (one per layer, like fanouts), or [-1]; got "
                                     f"{self.eval_fanouts if good else given!r}")
        if self.task != "node" and (self.eval_fanouts is not None or self.layerwise_inference):
            raise ParameterError("eval_fanouts" if self.eval_fanouts is not None else
                                 "layerwise_inference", "applies to the node task only")
        if self.layerwise_inference and any(f != -1 for f in self.eval_fanouts or [-1]):
            raise ParameterError("layerwise_inference", "evaluates on full neighbourhoods; "
                                 "leave eval_fanouts unset or -1")
        if self.full_graph:
            if self.task != "node":
                raise ParameterError("full_graph", "applies to the node task only")
            check_full_graph(self.model, self.fanouts)
        self._check_link_keys()
        self._check_rgcn()

    def _check_sampler(self) -> None:
        """``sampler``: one of :data:`SAMPLERS`, node task only; ``graph`` takes a model of
        :data:`GRAPH_SAMPLER_MODELS` and fixed fanouts."""
        check_choice("sampler", self.sampler, SAMPLERS)
        if self.sampler != "auto" and self.task != "node":
            raise ParameterError("sampler", "applies to the node task only (the other tasks "
                                            "draw their batches on the CPU)")
        if self.sampler == "graph" and self.model not in GRAPH_SAMPLER_MODELS:
            raise ParameterError("sampler", f"'graph' trains the builtin models "
                                            f"{', '.join(GRAPH_SAMPLER_MODELS)} with fixed "
                                            f"fanouts (its steps run on padded blocks of k "
                                            f"picks a row), not {self.model!r}")
        if self.sampler == "graph" and any(f < 0 for f in self.fanouts or [-1]):
            raise ParameterError("sampler", "'graph' needs a fixed number of neighbours a "
                                            "layer: give fanouts such as [10, 5] (-1, and "
                                            "no fanouts, take every neighbour, a shape the "
                                            "sample sets)")

    def _check_temporal_keys(self) -> None:
        """``until``, ``since``, ``valid_from``/``test_from`` (times, checked by parsing;
        kept as given), ``temporal_strategy`` and, for ``task="temporal-link"``,
        ``fanouts``."""
        from graphsys.storage.time_view import check_window, parse_time

        for name in ("until", "since", "valid_from", "test_from"):
            if getattr(self, name) is not None:
                parse_time(getattr(self, name), name=name)
        if self.since is not None:
            check_window(parse_time(self.since, name="since"),
                         None if self.until is None else parse_time(self.until))
        if (self.valid_from is None) != (self.test_from is None):
            raise ParameterError("valid_from" if self.valid_from is None else "test_from",
                                 "and the other cut time go together (train before "
                                 "valid_from, validation before test_from, test from it on)")
        if self.valid_from is not None and not (
                self.task == "temporal-link" or self.link_split == "time"):
            raise ParameterError("valid_from", "splits by time: task temporal-link, or task "
                                               "link with link_split time")
        check_choice("temporal_strategy", self.temporal_strategy, TEMPORAL_STRATEGIES)
        check_choice("eval_protocol", self.eval_protocol, EVAL_PROTOCOLS)
        if self.eval_protocol != "sampled" and self.task != "temporal-link":
            raise ParameterError("eval_protocol", "applies to task temporal-link")
        if self.eval_protocol == "tgb" and self.link_eval_negatives < 1:
            raise ParameterError("link_eval_negatives", "of eval_protocol tgb is a count of "
                                                        "fixed negatives per event (>= 1)")
        if self.edge_features is not None:
            if self.task != "temporal-link":
                raise ParameterError("edge_features", "applies to task temporal-link only")
            if not isinstance(self.edge_features, (list, tuple)) or not all(
                    isinstance(c, str) and c for c in self.edge_features):
                raise ParameterError("edge_features", f"must be a list of edge column "
                                                      f"names, got {self.edge_features!r}")
            self.edge_features = list(self.edge_features)

    def _check_model(self) -> None:
        """``model``: None becomes the task's default (``tgn`` for temporal-link, else
        ``sage``); a model the task does not train is refused, naming those it does
        (:func:`task_models`)."""
        if self.model is None:
            self.model = TGN if self.task == "temporal-link" else "sage"
        if not isinstance(self.model, str):
            raise ParameterError("model", f"must be a model name, got {self.model!r}")
        ok = (self.model in TEMPORAL_MODELS if self.task == "temporal-link" else
              self.model in GNN_MODELS or self.model == RGCN and self.task == "link"
              or ":" in self.model and self.task == "node")
        if not ok:
            home = {**dict.fromkeys(TEMPORAL_MODELS, "temporal-link"),
                    RGCN: "link"}.get(self.model)
            hint = f" ({self.model} is a model of task {home})" if home else ""
            models = task_models(self.task)
            raise ParameterError("model", f"of task {self.task} must be "
                                          f"{'one of ' if ' or ' in models else ''}{models}, "
                                          f"got {self.model!r}{hint}")
        if (self.task == "temporal-link" and self.model == TGN and self.fanouts is not None
                and len(self.fanouts) != 1):
            raise ParameterError("fanouts", f"of model tgn is one number, the temporal "
                                            f"neighbours per event, got {self.fanouts!r} "
                                            f"(one per layer: model tgat)")
        if self.task == "temporal-link" and self.model == JODIE and self.fanouts is not None:
            raise ParameterError("fanouts", f"does not apply to model jodie, which reads no "
                                            f"neighbours (its embedding is its memory "
                                            f"projected in time), got {self.fanouts!r}")
        if self.temporal_strategy != "recent" and (self.task != "temporal-link"
                                                   or self.model == JODIE):
            raise ParameterError("temporal_strategy", "applies to task temporal-link with "
                                                      "model tgn or tgat (jodie reads no "
                                                      "neighbours)")

    def _check_rgcn(self) -> None:
        """The R-GCN settings: only with ``model="rgcn"``, which takes them (default
        ``RGCNSettings()``) and no ``fanouts`` (it encodes whole edge-sampled graphs;
        ``rgcn.num_layers`` sets the layers)."""
        if self.model != RGCN:
            if self.rgcn is not None:
                raise ParameterError("rgcn", f"holds the settings of model rgcn, not "
                                             f"{self.model!r}")
            return
        self.rgcn = (RGCNSettings() if self.rgcn is None else self.rgcn
                     if isinstance(self.rgcn, RGCNSettings) else RGCNSettings.from_dict(
                         self.rgcn))
        if self.fanouts is not None:
            raise ParameterError("fanouts", "does not apply to rgcn, which encodes whole "
                                            "edge-sampled graphs (rgcn.num_layers sets its "
                                            "layers)")
        if self.rgcn.num_blocks is None:    # a copy: the caller's settings stay as given
            self.rgcn = replace(self.rgcn, num_blocks=self.hidden // 5
                                if self.hidden % 5 == 0 else 0)
        if self.rgcn.num_blocks and self.hidden % self.rgcn.num_blocks:
            raise ParameterError("rgcn.num_blocks", f"{self.rgcn.num_blocks} blocks must "
                                                    f"divide hidden {self.hidden}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """From a mapping (a TOML or JSON config: the fields, and a ``rgcn`` table); an
        unknown key is one :class:`ParameterError` naming it."""
        known = [f.name for f in fields(cls)]
        bad = sorted(set(values) - set(known))
        if bad:
            raise ParameterError(bad[0], f"is not a GNN training setting (known: "
                                         f"{', '.join(known)})")
        values = dict(values)
        if isinstance(values.get("hard_band"), list):
            values["hard_band"] = tuple(values["hard_band"])
        return cls(**values)

    def check_read(self, kind: str, own_model: bool = False) -> None:
        """Refuse a setting given away from its default that the run ``kind`` (a key of
        :data:`RUN_KINDS`, known once the link task's split is resolved against the graph)
        never reads: one :class:`ParameterError` naming it, where it was silently ignored.
        ``own_model``: the node task trains a model of the caller's own (``inputs``)."""
        from graphsys.gnn.conv.spec import random_walk_sampling

        walks = kind == "item" or kind in ("node", "link") and random_walk_sampling(self.model)
        # the steps as CUDA graphs draw on the training thread: no workers, nothing ahead
        graphed = kind == "node" and self.sampler == "graph" and not self.full_graph
        reads = {**dict.fromkeys(("num_traversals", "termination_prob", "num_random_walks"),
                                 walks),
                 **dict.fromkeys(("margin", "hard_negatives", "hard_band"), kind == "item"),
                 "batches_per_epoch": kind in ("item", "link"),
                 "weight_decay_layers": kind in ("node", "item", "link"),
                 "prefetch": kind in ("node", "item", "link") and not graphed,
                 "num_negatives": kind != "node", "num_workers": kind != "rgcn" and not graphed,
                 "inputs": kind == "node" and own_model,
                 **dict.fromkeys(("link_decoder", "link_exclude_targets"), kind == "link"),
                 "link_eval_negatives": kind in ("link", "temporal"),
                 **dict.fromkeys(("link_val_fraction", "link_test_fraction"),
                                 kind in ("link", "temporal") and self.valid_from is None),
                 "link_split": kind != "rgcn",
                 "entity_type": kind not in ("rgcn", "temporal"),
                 "sampler": kind == "node" and not self.full_graph}
        for f in fields(self):
            value = getattr(self, f.name)
            if not reads.get(f.name, True) and (
                    tuple(value) if isinstance(value, list) else value) != f.default:
                why = (" with full_graph" if f.name == "sampler" and kind == "node" else
                       " with sampler 'graph'" if f.name in ("num_workers", "prefetch")
                       and graphed else
                       " with a builtin model" if f.name == "inputs" and kind == "node" else
                       " with valid_from" if f.name.endswith("_fraction")
                       and self.valid_from is not None else "")
                raise ParameterError(f.name, f"is not read by {RUN_KINDS[kind]}{why}: leave "
                                             f"it unset")

    def _check_link_keys(self) -> None:
        """The link tasks' keys (held-out edges, decoder, metrics), which the node task
        does not read (one set away from its default is refused there), and ``heads``,
        which only gat reads."""
        for f in fields(self) if self.task == "node" else ():
            value = getattr(self, f.name)
            if (f.name.startswith("link_") or f.name == "metrics_k") and (
                    tuple(value) if isinstance(value, list) else value) != f.default:
                raise ParameterError(f.name, "applies to tasks link and temporal-link only")
        if self.heads != HEADS_DEFAULT and self.model != "gat":
            raise ParameterError("heads", f"applies to model gat only, not {self.model!r}")
        check_choice("link_split", self.link_split, LINK_SPLITS)
        if self.task == "temporal-link" and self.link_split not in ("auto", "time"):
            raise ParameterError("link_split", f"{self.link_split} does not apply to task "
                                               f"temporal-link, whose split is by time "
                                               f"(link_val_fraction and link_test_fraction, "
                                               f"or valid_from and test_from)")
        for name in ("link_val_fraction", "link_test_fraction"):  # None: a raw TypeError
            check_real(name, getattr(self, name), low=0, high=1, high_open=True)
        if self.link_val_fraction + self.link_test_fraction >= 1:
            raise ParameterError("link_test_fraction", "plus link_val_fraction must be < 1, "
                                                       f"got {self.link_test_fraction} + "
                                                       f"{self.link_val_fraction}")
        check_choice("link_decoder", self.link_decoder, LINK_DECODERS)
        if isinstance(self.link_eval_negatives, bool) or not isinstance(
                self.link_eval_negatives, Integral) or self.link_eval_negatives == 0 \
                or self.link_eval_negatives < -1:
            raise ParameterError("link_eval_negatives", f"must be an integer >= 1 or -1 (every "
                                                        f"candidate), got "
                                                        f"{self.link_eval_negatives!r}")
        ks = self.metrics_k
        ks = ((ks,) if isinstance(ks, Real) else
              tuple(ks.tolist()) if hasattr(ks, "tolist") else ks)   # a NumPy array
        # NaN and a float raised a raw TypeError or ValueError, True was read as hits@1
        if not isinstance(ks, (list, tuple)) or not ks or not all(
                isinstance(k, Integral) and not isinstance(k, bool) and k >= 1 for k in ks):
            raise ParameterError("metrics_k", f"must be integers >= 1, got {self.metrics_k}")
        self.metrics_k = tuple(sorted({int(k) for k in ks}))


#: The runs :meth:`TrainConfig.check_read` tells apart, as its messages name them
RUN_KINDS = {"node": "the node task", "item": "the link task's user split (item "
             "recommendation)", "link": "the link task's held-out-edge split",
             "rgcn": "model rgcn", "temporal": "task temporal-link"}


def task_models(task: str) -> str:
    """The models ``task`` trains, as one line: ``tgn``, ``tgat`` or ``jodie``
    (temporal-link); the builtin models and ``rgcn`` (link); the builtin models and
    ``module:Factory`` (node).

    Examples
    --------
    >>> task_models("temporal-link")
    'tgn, tgat or jodie'
    """
    if task == "temporal-link":
        return f"{', '.join(TEMPORAL_MODELS[:-1])} or {TEMPORAL_MODELS[-1]}"
    return f"{', '.join(GNN_MODELS.names())} or {RGCN if task == 'link' else 'module:Factory'}"


def load_train_config(path: str | Path, overrides: dict[str, Any] | None = None
                      ) -> TrainConfig:
    """A :class:`TrainConfig` from a ``.toml`` or ``.json`` file: top-level keys are its
    fields, a ``[rgcn]`` table the :class:`RGCNSettings`; ``overrides`` (field -> value)
    replace the file's values.

    Parameters
    ----------
    path : str or Path
        The config file, e.g. ``datasets/configs/fb15k-237-rgcn.toml``.
    overrides : dict, optional
        Fields set over the file's (``rgcn`` merged key by key).

    Returns
    -------
    TrainConfig

    Raises
    ------
    ConfigError
        An unreadable file or invalid TOML / JSON, naming the file.
    ParameterError
        An unknown key or a bad value, naming the key.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from graphsys.gnn import load_train_config
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "kg.toml"
    >>> _ = p.write_text('task = "link"\\nmodel = "rgcn"\\nhidden = 20\\n'
    ...                  '[rgcn]\\nnum_layers = 1\\nmax_seconds = 30\\n')
    >>> cfg = load_train_config(p, {"epochs": 2})
    >>> cfg.epochs, cfg.rgcn.num_layers, cfg.rgcn.num_blocks, cfg.rgcn.max_seconds
    (2, 1, 4, 30)
    """
    values = read_config_file(path)
    for key, value in (overrides or {}).items():
        if key == "rgcn" and isinstance(values.get("rgcn"), dict) and isinstance(value, dict):
            values["rgcn"] = {**values["rgcn"], **value}
        else:
            values[key] = value
    return TrainConfig.from_dict(values)
