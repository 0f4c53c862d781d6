"""The front door of embedding training: :func:`load_config` (TOML / JSON, or a
PyTorch-BigGraph ``.py`` through :mod:`graphsys.embed.interop.pbg_config`, which the layers
below never import) and :func:`train`, which ``graphsys embed train`` calls too, returning an
:class:`EmbedResult`; the :class:`~graphsys.embed.trainer.Trainer` underneath is the
advanced layer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphsys import openmp
from graphsys.embed.config import EmbedConfig, config_from_dict
from graphsys.embed.config import load_config as _load_plain_config
from graphsys.embed.embeddings import Embeddings
from graphsys.embed.stats import EpochStats
from graphsys.embed.trainer import Trainer
from graphsys.errors import ConfigError, ParameterError
from graphsys.storage.graph import Graph, open_graph

Log = Callable[[str], None]


def load_config(path: str | Path | None = None, overrides: list[str] | None = None, *,
                graph: str | Path | Graph | None = None, log: Log | None = None,
                **values: Any) -> EmbedConfig:
    """Read an embedding config: a file (or nothing), then ``values``, then overrides.

    Parameters
    ----------
    path : str or Path, optional
        A ``.toml`` or ``.json`` config file, or a PyTorch-BigGraph ``.py`` config (parsed,
        never run), whose entity types and relations are matched to ``graph`` (see
        :func:`graphsys.embed.interop.pbg_config.pbg_training_settings`). ``None``: start
        from the defaults of :class:`EmbedConfig`.
    overrides : list of str, or str, optional
        ``"key=value"`` strings applied last, values in TOML syntax (``"lr=0.1"``,
        ``'operator="complex_diagonal"'``, ``"relations[0].weight=2"`` by index,
        ``"relations.r0.weight=2"`` by name; ``"relations.0.weight=2"``: the entry named
        ``0`` if there is one, else index 0).
    graph : str, Path or Graph, optional
        The graph a PyTorch-BigGraph config is matched to (required for one; unused
        otherwise).
    log : callable, optional
        Gets the notes of a PyTorch-BigGraph config's translation, one line each.
    **values
        Keys of :class:`EmbedConfig` applied after the file (``None`` values skipped).

    Returns
    -------
    EmbedConfig
        The validated config.

    Raises
    ------
    ConfigError
        An unknown key or a bad value, named in the message (``lr: must be a positive
        number, got -1``); a PyTorch-BigGraph config without ``graph``.

    See Also
    --------
    EmbedConfig : every key, its default and meaning.
    train : train a config.

    Examples
    --------
    >>> from graphsys.embed import load_config
    >>> cfg = load_config(dimension=16, operator="complex_diagonal",
    ...                   overrides=["lr=0.1", 'comparator="dot"'])
    >>> cfg.dimension, cfg.operator, cfg.comparator, cfg.lr
    (16, 'complex_diagonal', 'dot', 0.1)
    >>> load_config(overrides=["lr=-1"])
    Traceback (most recent call last):
    ...
    graphsys.errors.ConfigError: lr: must be a finite number > 0, got -1.0

    References
    ----------
    .. [1] A. Lerer et al., "PyTorch-BigGraph: A Large-scale Graph Embedding System",
       SysML 2019 (the config keys follow PBG's names).
    """
    if path is not None and Path(path).suffix.lower() == ".py":
        if graph is None:
            raise ConfigError(f"{path}: a PyTorch-BigGraph config needs the graph (graph) "
                              f"to match its entity types and relations")
        from graphsys.embed.interop.pbg_config import pbg_training_settings

        raw = pbg_training_settings(path, graph, log)
        return _load_plain_config(None, overrides, raw=raw, **values)
    return _load_plain_config(path, overrides, **values)


class EmbedResult:
    """What :func:`train` did: the checkpoint it wrote, its statistics, its embeddings.

    Returned by :func:`train`; not built by hand.

    Attributes
    ----------
    checkpoint : Path
        The checkpoint directory (the run's ``out``).
    graph : Graph
        The graph trained.
    stats : list of EpochStats
        One per epoch trained so far (a resumed run's earlier epochs included): edges,
        seconds, loss, partition swaps, bytes read and written.
    rank : int
        This process's rank in a distributed run (0 in a single-process run; only rank 0
        writes checkpoint metadata).
    embeddings : Embeddings
        The trained embeddings, loaded from :attr:`checkpoint` on first access (memory
        mapped, read-only).

    See Also
    --------
    train, Embeddings

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys.embed
    >>> from graphsys.generators import knowledge_graph
    >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
    >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
    ...                   "rel": [f"r{r}" for r in t["rel"]]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
    >>> result = graphsys.embed.train(g, {"dimension": 8, "num_epochs": 2},
    ...                               out=tempfile.mkdtemp())
    >>> result.rank, len(result.stats), result.stats[-1].edges
    (0, 2, 150)
    >>> result.embeddings.to_numpy().shape
    (36, 8)
    >>> sorted(result.summary())  # doctest: +NORMALIZE_WHITESPACE
    ['bytes_read', 'bytes_written', 'checkpoint', 'edges_per_s', 'epoch_stats', 'epochs',
     'final_loss', 'seconds', 'swaps']
    """

    def __init__(self, checkpoint: Path, graph: Graph, stats: list[EpochStats], rank: int):
        self.checkpoint, self.graph, self.stats, self.rank = Path(checkpoint), graph, stats, rank
        self._embeddings: Embeddings | None = None

    def __repr__(self) -> str:
        return (f"EmbedResult(checkpoint={str(self.checkpoint)!r}, epochs={len(self.stats)}, "
                f"rank={self.rank})")

    @property
    def embeddings(self) -> Embeddings:
        """The trained :class:`Embeddings`, loaded from :attr:`checkpoint` once."""
        if self._embeddings is None:
            self._embeddings = Embeddings.load(self.checkpoint, graph=self.graph)
        return self._embeddings

    def summary(self) -> dict[str, Any]:
        """Totals over the epochs and each epoch's statistics, as plain JSON data.

        Returns
        -------
        dict
            ``checkpoint``, ``epochs``, ``edges_per_s``, ``seconds``, ``swaps``,
            ``bytes_read``, ``bytes_written``, ``final_loss`` and ``epoch_stats`` (one
            dict per epoch); what ``graphsys embed train --json`` prints.
        """
        stats = self.stats
        edges = sum(s.edges for s in stats)
        seconds = sum(s.seconds for s in stats)
        return {"checkpoint": str(self.checkpoint), "epochs": len(stats),
                "edges_per_s": round(edges / seconds, 1) if seconds else 0.0,
                "seconds": round(seconds, 3),
                "swaps": sum(s.swaps for s in stats),
                "bytes_read": sum(s.bytes_read for s in stats),
                "bytes_written": sum(s.bytes_written for s in stats),
                "final_loss": stats[-1].loss if stats else None,
                "epoch_stats": [s.to_json() for s in stats]}


def _resolve(graph: str | Path | Graph | None, config: EmbedConfig | dict | str | Path | None,
             edges: str | None, out: str | Path | None, log: Log | None
             ) -> tuple[EmbedConfig, Graph, Path]:
    """The config, the opened graph and the checkpoint directory of a run: ``graph``,
    ``edges`` and ``out`` override the config's ``graph``, ``edges`` and
    ``checkpoint_path``."""
    if isinstance(graph, (EmbedConfig, dict)) or (
            isinstance(graph, (str, Path)) and config is None
            and Path(graph).suffix.lower() in (".toml", ".json", ".py")):
        raise ParameterError("graph", f"got a config ({type(graph).__name__}); the graph "
                             f"comes first: train(graph, config), graph=None for the "
                             f"config's graph")
    if isinstance(config, (str, Path)):
        cfg = load_config(config, graph=graph, log=log)
    elif config is None or isinstance(config, dict):
        cfg = config_from_dict(config or {})
    elif isinstance(config, EmbedConfig):
        cfg = config
    else:
        raise ParameterError("config", f"must be an EmbedConfig, a dict or a config file, "
                             f"got {type(config).__name__}")
    g = graph if isinstance(graph, Graph) else None
    if g is None:
        gpath = graph if graph is not None else cfg.graph
        if gpath is None:
            raise ParameterError("graph", "not given, and the config has no graph")
        g = open_graph(gpath)
    out = out if out is not None else cfg.checkpoint_path
    if out is None:
        raise ParameterError("out", "not given, and the config has no checkpoint_path")
    if edges is not None:   # a copy: the caller's EmbedConfig kept these edges for its next run
        cfg = dataclasses.replace(cfg, edges=edges)
    return cfg, g, Path(out)


def train(graph: str | Path | Graph | None, config: EmbedConfig | dict | str | Path | None = None,
          *, edges: str | None = None, out: str | Path | None = None, progress: bool = False,
          log: Log | None = None, distributed: bool | None = False,
          trace: str | Path | None = None) -> EmbedResult:
    """Train knowledge-graph embeddings of a stored graph, PyTorch-BigGraph style.

    Every entity gets a vector and every relation an operator; an edge ``(h, r, t)`` is
    scored ``comparator(op_r(h), t)`` and trained against sampled negatives. The embedding
    table is split into the graph's partitions and trained bucket by bucket (the edges from
    partition ``i`` to partition ``j``), so only the partitions of the current bucket, or
    a buffer of ``buffer_partitions`` of them, are in memory [1]_. Models: ``operator``
    ``none`` / ``translation`` (TransE [2]_), ``diagonal`` (DistMult [3]_),
    ``complex_diagonal`` (ComplEx [4]_, with the N3 regulariser [5]_), ``linear``,
    ``affine``; comparators ``dot``, ``cos``, ``l2``, ``squared_l2``.

    Parameters
    ----------
    graph : str, Path, Graph or None
        The graph (opened, or its directory); ``None``: the config's ``graph``. First, as
        in :func:`graphsys.gnn.train`.
    config : EmbedConfig, dict, str or Path, optional
        The settings: an :class:`EmbedConfig`, a dict of its keys, or a config file
        (TOML, JSON or a PyTorch-BigGraph ``.py``; see :func:`load_config`); default
        ``EmbedConfig()``.
    edges : str, optional
        The edge set to train on; default the config's ``edges``, else ``train`` or the
        graph's only edge set.
    out : str or Path, optional
        The checkpoint directory; default the config's ``checkpoint_path``. A checkpoint
        already there with the same model settings is resumed after its last commit
        (optimisation keys such as ``lr`` or ``num_epochs`` may change).
    progress : bool, optional
        Show a progress bar per epoch (default False).
    log : callable, optional
        Gets one line per epoch (edges/s, loss, swaps) and notes of the run.
    distributed : bool or None, optional
        False (default): train in this process. True: run as one rank of the initialised
        ``torch.distributed`` group (:mod:`graphsys.embed.distributed`; ``out`` on a
        filesystem every rank shares). None: run as a rank of the initialised group of
        several ranks, else initialise the group from the ``torchrun`` environment when it
        names more than one process (and destroy it afterwards), else train in this
        process.
    trace : str or Path, optional
        Record a :mod:`graphsys.trace` timeline of the run (Chrome trace JSON) to this
        file.

    Returns
    -------
    EmbedResult
        The checkpoint directory, the statistics of every epoch and the trained
        :class:`Embeddings` (``result.embeddings``, loaded on first access).

    Raises
    ------
    ConfigError
        A bad config key or value, or a config that does not fit the graph (entity types,
        relations, partitions) or the checkpoint at ``out``.
    ParameterError
        No graph or no checkpoint directory, given or in the config; a config given
        where the graph goes.
    GraphsysError
        Training diverged (a non-finite loss or parameter; the last commit is kept), or
        the edge set is empty.

    See Also
    --------
    load_config : read a config file.
    Embeddings : query the trained embeddings.
    evaluate : link-prediction metrics.
    graphsys.embed.trainer.Trainer : the training loop itself, for hooks and subclasses.

    Notes
    -----
    A checkpoint version is committed after every epoch (and with ``checkpoint_buckets``
    after every bucket), written atomically; an interrupted run resumes from its last
    commit. With ``workers = 1`` a resumed run equals the uninterrupted one bit for bit,
    and on the CPU two runs with one seed are equal whatever the thread count.

    Examples
    --------
    A ComplEx model of a small generated knowledge graph, one epoch:

    >>> import tempfile, pyarrow as pa, graphsys.embed
    >>> from graphsys.generators import knowledge_graph
    >>> t = next(knowledge_graph(36, 150, relations=2, seed=0).triples())
    >>> edges = pa.table({"src": t["src"], "dst": t["dst"],
    ...                   "rel": [f"r{r}" for r in t["rel"]]})
    >>> g = graphsys.from_arrow(edges, tempfile.mkdtemp(), rel_col="rel")
    >>> config = {"dimension": 8, "operator": "complex_diagonal", "comparator": "dot",
    ...           "loss_fn": "softmax", "lr": 0.1, "num_epochs": 1}
    >>> ckpt = tempfile.mkdtemp()
    >>> result = graphsys.embed.train(g, config, out=ckpt)
    >>> result.summary()["epochs"], result.stats[0].edges
    (1, 150)
    >>> result.embeddings.vector(7).shape
    (8,)

    Training again into the same directory with more epochs resumes it:

    >>> config["num_epochs"] = 2
    >>> len(graphsys.embed.train(g, config, out=ckpt).stats)
    2

    References
    ----------
    .. [1] A. Lerer, L. Wu, J. Shen, T. Lacroix, L. Wehrstedt, A. Bose, A. Peysakhovich,
       "PyTorch-BigGraph: A Large-scale Graph Embedding System", SysML 2019.
    .. [2] A. Bordes, N. Usunier, A. Garcia-Duran, J. Weston, O. Yakhnenko, "Translating
       Embeddings for Modeling Multi-relational Data", NeurIPS 2013.
    .. [3] B. Yang, W. Yih, X. He, J. Gao, L. Deng, "Embedding Entities and Relations for
       Learning and Inference in Knowledge Bases", ICLR 2015.
    .. [4] T. Trouillon, J. Welbl, S. Riedel, E. Gaussier, G. Bouchard, "Complex
       Embeddings for Simple Link Prediction", ICML 2016.
    .. [5] T. Lacroix, N. Usunier, G. Obozinski, "Canonical Tensor Decomposition for
       Knowledge Base Completion", ICML 2018.
    """
    openmp.apply_wait_policy()
    from graphsys.device import resolve_device
    from graphsys.distributed import init_owned, peer_failures
    from graphsys.trace import recording

    cfg, g, out = _resolve(graph, config, edges, out, log)
    owned = False
    if distributed is None:
        distributed, owned = init_owned(resolve_device(cfg.device))
    try:
        with peer_failures(distributed):
            if distributed:
                from graphsys.embed.distributed import DistributedTrainer

                trainer: Trainer = DistributedTrainer(cfg, g, out, progress=progress, log=log)
            else:
                trainer = Trainer(cfg, g, out, progress=progress, log=log)
            with recording(trace, trainer.device):
                stats = trainer.run()
    finally:
        if owned:
            import torch.distributed as dist

            dist.destroy_process_group()
    return EmbedResult(out, g, stats, trainer.rank)


__all__ = ["EmbedResult", "load_config", "train"]
