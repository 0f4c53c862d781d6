"""GNN training: :func:`train`, the one entry point of :mod:`graphsys.gnn`.

:func:`train` opens the graph, resolves the device and the data-parallel set-up
(:func:`~graphsys.gnn.loop.distributed_setup`) and picks on ``TrainConfig.task`` (and, for
the link task, the model and ``link_split``) one task class, which the one loop
:func:`~graphsys.gnn.fit.fit` trains (one optimiser step per batch, validation every
``eval_every`` epochs, the best model kept, early stopping, checkpoints and resume, one
JSON record per evaluation) into a :class:`~graphsys.gnn.GNNResult`:

* :mod:`graphsys.gnn.node_task`: node classification (``task="node"``);
* :mod:`graphsys.gnn.link_task`: link prediction on held-out edges of any graph
  (``link_split`` ``random`` or ``time``);
* :mod:`graphsys.gnn.item_task`: PinSage item recommendation on a bipartite graph
  (``link_split="user"``);
* :mod:`graphsys.gnn.temporal_task`: TGN on timestamped events (``task="temporal-link"``);
* :mod:`graphsys.gnn.rgcn_link`: R-GCN + DistMult on a typed graph's ``train`` / ``valid``
  / ``test`` edge sets (``model="rgcn"``).

The guide, with every task, sampler, metric and protocol: ``docs/gnn.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from graphsys.device import resolve_device
from graphsys.distributed import destroy, peer_failures
from graphsys.errors import GraphsysError
from graphsys.execution import OPTION_DOCS, fill_doc
from graphsys.gnn.config import RGCN, TrainConfig
from graphsys.gnn.fit import Task, fit
from graphsys.gnn.item_task import ItemTask
from graphsys.gnn.link_task import LinkTask, link_split_of
from graphsys.gnn.loop import GNNResult, Ranks, distributed_setup
from graphsys.gnn.node_task import NodeTask
from graphsys.gnn.rgcn_link import RGCNTask
from graphsys.gnn.run_dir import check_place, run_directory
from graphsys.storage.graph import Graph, open_graph
from graphsys.threads import apply_thread_policy


@fill_doc(progress=OPTION_DOCS["progress"])
def train(graph: Graph | str | Path, config: TrainConfig | None = None, *,
          model: nn.Module | None = None, loss: Callable | None = None, features=None,
          device: str | torch.device = "cpu", out: str | Path | None = None,
          log: Callable[[dict], None] | None = None, progress: bool | Callable = False,
          distributed: bool | None = None) -> GNNResult:
    """Train a GNN on a stored graph: node classification or link prediction.

    The one training entry point of :mod:`graphsys.gnn` (what ``graphsys gnn train``
    runs). ``config.task`` picks the task: ``"node"`` classifies the nodes of the entity
    type with a ``label`` column, on minibatches of a :class:`~graphsys.gnn.NodeLoader`
    (or full-graph steps with ``config.full_graph``); ``"link"`` predicts held-out edges of
    any graph (``config.link_split="random"``, filtered MRR / Hits@K / recall@K / AUC), or
    learns item embeddings on a bipartite graph with PinSage sampling, a max-margin loss
    and hard negatives (``"user"``); with ``config.model="rgcn"`` it trains R-GCN + DistMult
    on a typed graph's ``train``/``valid``/``test`` edge sets (``config.rgcn``, an
    :class:`~graphsys.gnn.RGCNSettings`; filtered MRR / Hits@k). After every
    ``config.eval_every`` epochs the validation metric is computed (node task: on the
    validation seeds' ``config.eval_fanouts`` neighbourhoods); the best model is kept and
    training stops after ``config.patience`` evaluations without improvement (the splits,
    features and metrics of each task: its module, listed in :mod:`graphsys.gnn.training`,
    and the guide ``docs/gnn.md``).

    Parameters
    ----------
    graph : Graph or str
        An opened graph or a graph directory.
    config : TrainConfig, optional
        Task, model and hyperparameters (default ``TrainConfig()``: the node task with
        GraphSAGE).
    model : torch.nn.Module, optional
        Node task: train this module instead of the one ``config.model`` names; it is
        called as ``model(blocks, x)`` (or ``model(x, adjs)``, PyG ``NeighborSampler``
        style, with ``config.inputs="adjs"``; see :mod:`graphsys.gnn.custom`).
    loss : callable, optional
        Node task: ``loss(logits, labels) -> scalar tensor`` (default cross-entropy).
    features : str, tensor or array, optional
        Node task: the input features, a node column name or an (N, F) array used as
        given (default: the ``feat`` column row-normalised, else a learned embedding per
        node).
    device : str or torch.device, optional
        Where the model trains: ``"cpu"`` (default), ``"cuda[:k]"`` or ``"auto"``
        (:func:`~graphsys.device.resolve_device`; another name is refused in one line).
    out : str or Path, optional
        Directory for the best checkpoint (``out/checkpoint``, which
        :func:`~graphsys.gnn.embed_checkpoint` reads, and, for R-GCN,
        :func:`graphsys.gnn.rgcn_link.evaluate`), ``out/metrics.jsonl`` and the run's
        record ``out/run.json``; also the state after the last epoch (``out/last``: the
        modules, the optimiser, the early-stopping state and the random generators), from
        which a rerun with the same ``out``, settings, world size and graph resumes
        (``epochs`` and ``patience`` may grow), bit for bit as if never stopped
        (:mod:`graphsys.gnn.fit`). One run at a time holds ``out`` (a second is refused at once); a
        directory holding another run, or inside a graph or checkpoint directory, is
        refused before training (:mod:`graphsys.gnn.run_dir`). Distributed: a directory
        every rank sees.
    log : callable, optional
        Called with each evaluation record (a dict, as in :attr:`GNNResult.history`).
    %(progress)s
    distributed : bool, optional
        Node task: train as one rank of the initialised default ``torch.distributed``
        process group, data-parallel (``torch.nn.parallel.DistributedDataParallel``; gloo
        on CPU, NCCL with one GPU per rank, ``cuda:LOCAL_RANK``). None (default): when
        such a group of several ranks is initialised, or the ``torchrun`` environment
        names several processes (the group is then initialised here, with the timeout of
        :func:`~graphsys.distributed.process_group_timeout`, and destroyed at the
        end); False: this process alone. Every rank samples its contiguous share of each
        global batch (:class:`~graphsys.gnn.NodeLoader`'s ``rank``/``world_size``), its
        loss weighted by that share, so the averaged gradient is the global batch's (the
        guide: docs/gnn.md, "Data-parallel runs"). The ranks check that they hold the same
        graph, config and model shapes before the first batch; validation and test seeds
        are split between the ranks; rank 0 alone writes ``out`` and calls ``log``; a rank
        whose peer died or froze ends with one :class:`~graphsys.errors.GraphsysError` line.

    Returns
    -------
    GNNResult
        Test metrics of the best-validation model, the history and the trained model
        (``extra["world_size"]`` and ``extra["ranks"]``: each rank's training seeds and
        seconds; ``extra["train_seconds"]``/``["eval_seconds"]``: this rank's time in
        training steps and in evaluations).

    Raises
    ------
    GraphsysError
        A graph without labels (node task) or without edges (link task; split ``user``:
        without a bipartite relation),
        ``model``/``loss``/``features`` given to the link task, a diverged run (a
        non-finite loss or parameter), or an ``out`` that another run holds, that holds
        another run, or that is or lies inside a graph, checkpoint or embedding directory.

    See Also
    --------
    TrainConfig : every hyperparameter and its default.
    NodeLoader : the minibatches of the node task, for a training loop of one's own.

    References
    ----------
    .. [1] W. L. Hamilton, R. Ying and J. Leskovec, "Inductive Representation Learning on
       Large Graphs", NeurIPS 2017, https://arxiv.org/abs/1706.02216.
    .. [2] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

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
    >>> result = train(g, TrainConfig(model="gcn", fanouts=[5, 5], hidden=16, epochs=10))
    >>> result.epochs, result.metrics["test_accuracy"] > 0.5
    (10, True)

    A model of one's own (any module over blocks) and a loss:

    >>> import torch
    >>> from graphsys.gnn import SAGEConv
    >>> class TwoLayers(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.a, self.b = SAGEConv(8, 16), SAGEConv(16, 4)
    ...     def forward(self, blocks, x):
    ...         return self.b(torch.relu(self.a(x, blocks[0])), blocks[1])
    >>> result = train(g, TrainConfig(fanouts=[5, 5], epochs=2), model=TwoLayers(),
    ...                loss=torch.nn.functional.cross_entropy)
    >>> sorted(result.metrics)
    ['test_accuracy', 'test_macro_f1', 'val_accuracy', 'val_macro_f1']
    """
    apply_thread_policy()   # numba and torch threads within one budget (graphsys.threads)
    graph = open_graph(graph) if isinstance(graph, (str, Path)) else graph
    cfg = config if config is not None else TrainConfig()
    if cfg.until is not None or cfg.since is not None:    # the graph in a time window
        from graphsys.storage.time_view import until

        graph = until(graph, cfg.until, since=cfg.since)
    device = resolve_device(device)
    out = Path(out) if out is not None else None
    if out is not None:
        check_place(out)
    distributed, owned, device = distributed_setup(distributed, cfg, device)
    try:
        ranks = Ranks(distributed, device)
        build = _task(graph, cfg, ranks, device, model=model, loss=loss, features=features)
        with peer_failures(distributed), \
                run_directory(out, graph, cfg, ranks.world_size, lead=ranks.rank == 0):
            return fit(build, cfg, graph, ranks=ranks, device=device, out=out, log=log,
                       progress=progress)
    finally:
        if owned:
            destroy()


def _task(graph: Graph, cfg: TrainConfig, ranks: Ranks, device: torch.device, *, model,
          loss, features) -> Callable[[], Task]:
    """What builds the task ``cfg`` names (:func:`~graphsys.gnn.fit.fit` calls it, seeded)."""
    if cfg.task == "node":
        cfg.check_read("node", own_model=model is not None or ":" in cfg.model)
        return lambda: NodeTask(graph, cfg, ranks, device, model=model, loss=loss,
                                features=features)
    if model is not None or loss is not None or features is not None:
        raise GraphsysError("model, loss and features are taken by the node task; the link "
                            "task trains its builtin models")
    kind = ("temporal" if cfg.task == "temporal-link" else RGCN if cfg.model == RGCN else
            "item" if link_split_of(graph, cfg) == "user" else "link")
    cfg.check_read(kind)
    if kind == "temporal":
        from graphsys.gnn.temporal_task import TemporalTask

        return lambda: TemporalTask(graph, cfg, device)
    if kind == RGCN:
        return lambda: RGCNTask(graph, cfg, device)
    task = ItemTask if kind == "item" else LinkTask
    return lambda: task(graph, cfg, device)
