"""Graph embeddings at PyTorch-BigGraph scale: bucketed training over the stored buckets.

- :func:`train` (graph, config -> :class:`EmbedResult`, whose ``embeddings`` are the
  :class:`Embeddings`), :class:`EmbedConfig` / :func:`load_config`
- :class:`Embeddings`: ``load``, ``vector``, ``vectors``, ``nearest``, ``score``,
  ``predict_tails``, ``predict_heads`` (batched, known triples filtered, the query
  entity left out), ``to_numpy``,
  ``export_tsv`` / ``export_parquet`` / ``export_numpy``
- :mod:`graphsys.embed.index`: faiss flat / IVF / HNSW indexes that ``nearest`` uses (needs
  faiss: ``pip install graphsys[faiss]``)
- :func:`evaluate`: MRR, Hits@k, mean rank, under a named protocol (``full``,
  ``filtered``, ``sampled@N``)
- :func:`import_pbg_config` / :func:`import_pbg_checkpoint`: PyTorch-BigGraph configs and
  checkpoints (:mod:`graphsys.embed.interop`; needs h5py: ``pip install graphsys[pbg]``)
- registries :data:`OPERATORS`, :data:`COMPARATORS`, :data:`LOSSES`
- :mod:`graphsys.embed.trainer`: the :class:`~graphsys.embed.trainer.Trainer` that
  :func:`train` runs, the advanced layer (hooks, subclasses)

The guide (the model, configs, buffers, protocols, serving, growing): ``docs/embed.md``.
"""

from graphsys.embed.api import EmbedResult, load_config, train
from graphsys.embed.config import EmbedConfig
from graphsys.embed.embeddings import Embeddings
from graphsys.embed.evaluation import evaluate
from graphsys.embed.model import COMPARATORS, LOSSES, OPERATORS

__all__ = [
           "COMPARATORS",
           "LOSSES",
           "OPERATORS",
           "EmbedConfig",
           "EmbedResult",
           "Embeddings",
           "evaluate",
           "import_pbg_checkpoint",
           "import_pbg_config",
           "load_config",
           "train",
]


def __getattr__(name: str):
    """The PBG interop leaf's entry points, imported on first use (the core never imports
    :mod:`graphsys.embed.interop`)."""
    if name == "import_pbg_checkpoint":
        from graphsys.embed.interop.pbg_checkpoint import import_pbg_checkpoint

        return import_pbg_checkpoint
    if name == "import_pbg_config":
        from graphsys.embed.interop.pbg_config import import_pbg_config

        return import_pbg_config
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
