"""The front door of embedding training: read a config, train it, get the embeddings.

:func:`load_config` reads TOML / JSON configs and PyTorch-BigGraph ``.py`` configs (through
the PBG interop leaf, :mod:`graphsys.embed.interop.pbg_config`, which the layers below this
module never import). :func:`fit` trains (one process, or one rank of a
``torch.distributed`` group) and returns a :class:`TrainResult`; :func:`train` does the same
and returns the :class:`~graphsys.embed.embeddings.Embeddings`. ``graphsys embed train``
calls :func:`fit`, so the CLI and Python run one path with one set of checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphsys.embed.config import EmbedConfig, config_from_dict
from graphsys.embed.config import load_config as _load_plain_config
from graphsys.embed.embeddings import Embeddings
from graphsys.embed.stats import EpochStats
from graphsys.embed.train import Trainer
from graphsys.errors import ConfigError, ParameterError
from graphsys.storage.graph import Graph, open_graph

Log = Callable[[str], None]


def load_config(path: str | Path | None = None, overrides: list[str] | None = None, *,
                graph: str | Path | Graph | None = None, log: Log | None = None,
                **values: Any) -> EmbedConfig:
    """Config from a file (or nothing), then ``values``, then ``key=value`` overrides.

    A ``.py`` file is a PyTorch-BigGraph config, parsed and never run, whose entity types
    and relations are matched to ``graph`` (a graph directory or
    :class:`~graphsys.storage.graph.Graph`; required for it), see
    :func:`graphsys.embed.interop.pbg_config.pbg_training_settings`; ``log`` gets its notes.
    """
    if path is not None and Path(path).suffix.lower() == ".py":
        if graph is None:
            raise ConfigError(f"{path}: a PyTorch-BigGraph config needs the graph (graph) "
                              f"to match its entity types and relations")
        from graphsys.embed.interop.pbg_config import pbg_training_settings

        raw = pbg_training_settings(path, graph, log)
        return _load_plain_config(None, overrides, raw=raw, **values)
    return _load_plain_config(path, overrides, **values)


@dataclass
class TrainResult:
    """What :func:`fit` did: the ``checkpoint`` directory, the ``graph`` trained, the
    :class:`EpochStats` of every epoch trained so far (resumed runs: the earlier ones too),
    this process's ``rank`` (0 in a single-process run) and the ``trainer``."""

    checkpoint: Path
    graph: Graph
    stats: list[EpochStats]
    rank: int
    trainer: Trainer

    def summary(self) -> dict[str, Any]:
        """Totals over the epochs (edges/s, seconds, swaps, bytes) and each epoch's stats;
        what ``graphsys embed train --json`` prints."""
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

    def embeddings(self) -> Embeddings:
        return Embeddings.load(self.checkpoint, graph=self.graph)


def _resolve(config: EmbedConfig | dict | str | Path, graph: str | Path | Graph | None,
             edges: str | None, out: str | Path | None, log: Log | None
             ) -> tuple[EmbedConfig, Graph, Path]:
    """The config, the opened graph and the checkpoint directory of a run: ``graph``,
    ``edges`` and ``out`` override the config's ``graph``, ``edges`` and
    ``checkpoint_path``."""
    if isinstance(config, (str, Path)):
        cfg = load_config(config, graph=graph, log=log)
    elif isinstance(config, dict):
        cfg = config_from_dict(config)
    else:
        cfg = config
    g = graph if isinstance(graph, Graph) else None
    if g is None:
        gpath = graph if graph is not None else cfg.graph
        if gpath is None:
            raise ParameterError("graph", "not given, and the config has no graph")
        g = open_graph(gpath)
    out = out if out is not None else cfg.checkpoint_path
    if out is None:
        raise ParameterError("out", "not given, and the config has no checkpoint_path")
    if edges is not None:
        cfg.edges = edges
    return cfg, g, Path(out)


def fit(config: EmbedConfig | dict | str | Path, *, graph: str | Path | Graph | None = None,
        edges: str | None = None, out: str | Path | None = None, progress: bool = False,
        log: Log | None = None, distributed: bool | None = False,
        trace: str | Path | None = None) -> TrainResult:
    """Train ``config`` (see :func:`train`) and return a :class:`TrainResult`.

    ``distributed``: ``True`` runs as one rank of the initialised ``torch.distributed``
    group; ``None`` initialises the group from the ``torchrun`` environment when it names
    more than one process (and destroys it afterwards), else trains in this process.
    ``trace``: record a :mod:`graphsys.trace` timeline of the run to this file.
    """
    from graphsys.bsp.distributed import init_from_env, peer_failures
    from graphsys.device import resolve_device
    from graphsys.trace import recording

    cfg, g, out = _resolve(config, graph, edges, out, log)
    owned = False
    if distributed is None:
        distributed = owned = init_from_env(resolve_device(cfg.device))
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
    return TrainResult(out, g, stats, trainer.rank, trainer)


def train(config: EmbedConfig | dict | str | Path, *, graph: str | Path | Graph | None = None,
          edges: str | None = None, out: str | Path | None = None, progress: bool = False,
          log: Log | None = None, distributed: bool = False) -> Embeddings:
    """Train embeddings and return them as :class:`~graphsys.embed.Embeddings`.

    ``config``: an :class:`EmbedConfig`, a plain dict, or a TOML/JSON path (or a
    PyTorch-BigGraph ``.py`` config: :func:`load_config`). ``graph``, ``edges`` and ``out``
    override the config's ``graph``, ``edges`` and ``checkpoint_path``. An existing
    checkpoint at ``out`` with the same settings is resumed. ``distributed``: run as one
    rank of the initialised ``torch.distributed`` group (:mod:`graphsys.embed.distributed`;
    ``out`` on a filesystem every rank shares).
    """
    return fit(config, graph=graph, edges=edges, out=out, progress=progress, log=log,
               distributed=distributed).embeddings()


__all__ = ["TrainResult", "fit", "load_config", "train"]
