"""The checkpoint of one model: versions, the commit protocol, ``config.json`` and
``checkpoint.json``, and the seeds of everything a run initialises.

:class:`CheckpointManager` is the one writer of a checkpoint's metadata: training
(:mod:`.trainer`, :mod:`.distributed`) and imports (:mod:`graphsys.embed.interop`) create,
check and commit versions through it; :class:`~.checkpoint_files.CheckpointStorage` is its
file layer. Each commit makes version ``committed + 1`` complete on disk, replaces
``checkpoint.json`` atomically (:meth:`CheckpointManager.commit`), then deletes the older
version. A resumed run may change only :data:`TUNABLE_KEYS` (recorded under ``history``) and
:data:`RESUMABLE_KEYS`. Every random draw comes from a generator seeded by
:func:`stream_seed` ``(seed, purpose, ...)``: purpose 1 the initial embeddings of
``(type index, partition)``, 2 / 3 a bucket's shuffling and negatives (and worker), 4 an
epoch's bucket order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

import graphsys.embed.grow as grow
from graphsys.embed.checkpoint_files import (
           CheckpointStorage,
           check_graph,
           check_model,
           id_digests,
           load_npy,
           save_npy,
           stream_seed,  # the trainer's too
)
from graphsys.embed.config import EmbedConfig, config_from_dict
from graphsys.embed.model import init_embeddings
from graphsys.embed.stats import EpochStats
from graphsys.errors import ConfigError, GraphsysError
from graphsys.storage.atomic import make_directory
from graphsys.storage.lock import LOCK_FILE

if TYPE_CHECKING:
    from graphsys.embed.relations import RelationModel
    from graphsys.storage.graph import Graph

#: Keys that may differ between a checkpoint and a resumed run.
RESUMABLE_KEYS = {"num_epochs", "checkpoint_path", "workers", "prefetch", "device",
                  "buffer_partitions", "memory_budget", "eval_num_uniform_negs",
                  "eval_full_max_candidates", "graph", "checkpoint_buckets", "init_from",
                  "cuda_graphs"}
#: Optimisation keys a resumed run may change (not the model's shape or the data); each
#: change is recorded in ``checkpoint.json``'s ``history``.
TUNABLE_KEYS = {"lr", "relation_lr", "batch_size", "num_batch_negs", "num_uniform_negs", "all_negs",
                "batches_per_step",
                "degree_neg_fraction", "regularization_coef", "relation_prediction_weight",
                "margin", "max_norm", "loss_fn", "bucket_order", "freeze_old"}
#: What may sit in a directory before its first commit (an initialisation killed early).
_INIT_ENTRIES = ("embeddings", "optim", "model", "config.json", LOCK_FILE)


@dataclass
class CommittedState:
    """What a run resumes from: the committed ``version``, the ``epochs_done``, the finished
    epochs' ``stats`` and ``progress`` (``None``, or the ``buckets_done`` and ``stats`` of a
    half-done epoch ``epochs_done + 1``)."""

    version: int
    epochs_done: int
    stats: list[EpochStats]
    progress: dict[str, Any] | None


class CheckpointManager:
    """The checkpoint directory ``root`` of ``config`` trained on ``graph``'s ``edge_set``.

    ``location``: the directory the checkpoint will be found at, recorded as
    ``checkpoint_path`` (default ``root``; an import writes a staging directory renamed
    into place). ``sizes``: nodes per partition of every entity type; ``rel_ops``: each
    relation type's operator. ``history`` and ``grown_from`` are read from and written to
    ``checkpoint.json``.
    """

    def __init__(self, root: str | Path, config: EmbedConfig, graph: Graph, edge_set: str, *,
                 location: str | Path | None = None,
                 log: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.location = Path(location) if location is not None else self.root
        self.cfg, self.graph, self.edge_set = config, graph, edge_set
        self.log = log or (lambda msg: None)
        self.storage = CheckpointStorage(self.root)
        self.sizes = {t: [int(x) for x in graph.partition_sizes(t)] for t in graph.entity_types}
        self.rel_ops = config.relation_operators(graph.relation_types)
        #: Resumes that changed :data:`TUNABLE_KEYS`: ``{"epochs_done", "version",
        #: "changed": {key: [old, new]}}`` each, oldest first.
        self.history: list[dict[str, Any]] = []
        #: ``{"checkpoint", "version", "entity_types": {t: {"partition_sizes"}}}`` of the
        #: ``init_from`` checkpoint this one was grown from (None: a fresh start).
        self.grown_from: dict[str, Any] | None = None

    @cached_property
    def id_digests(self) -> dict[str, list[str]]:
        """Per entity type, the sha256 of each partition's original ids in row order
        (:func:`~.checkpoint_files.id_digests`), recorded in ``checkpoint.json``."""
        return {t: id_digests(self.graph, t) for t in self.sizes}

    # -- metadata ---------------------------------------------------------------------------
    def config_json(self) -> dict[str, Any]:
        """``config.json``: the config with the graph, edge set and location it trains."""
        out = self.cfg.to_json()
        out["graph"] = self.graph.location.uri
        out["edges"] = self.edge_set
        out["checkpoint_path"] = str(self.location.absolute())
        return out

    def write_config(self) -> None:
        """Write :meth:`config_json` as ``config.json`` (atomically)."""
        self.storage.write_config(self.config_json())

    def meta(self, version: int, epochs_done: int, stats: list[EpochStats]) -> dict[str, Any]:
        """``checkpoint.json`` of ``version`` (before :meth:`CheckpointStorage.write_meta`
        adds the format and the file checksums)."""
        return {
            "version": version, "epochs_done": epochs_done,
            "graph": self.graph.location.uri, "edges": self.edge_set,
            "dimension": self.cfg.dimension, "num_partitions": self.graph.num_partitions,
            "entity_types": {t: {"partition_sizes": s, "id_digests": self.id_digests[t]}
                             for t, s in self.sizes.items()},
            "relations": [{"name": r.name, "lhs": r.lhs, "rhs": r.rhs, "operator": op}
                          for r, op in zip(self.graph.relation_types, self.rel_ops)],
            "comparator": self.cfg.comparator,
            "stats": [s.to_json() for s in stats],
            "history": self.history,
            **({"grown_from": self.grown_from} if self.grown_from else {}),
        }

    def commit(self, version: int, epochs_done: int, stats: list[EpochStats], *,
               progress: dict[str, Any] | None = None, **extra: Any) -> None:
        """Commit ``version``, whose files must all be durable on disk: write
        ``checkpoint.json`` (with ``progress`` and the ``extra`` keys when given), then
        delete the older versions."""
        meta = self.meta(version, epochs_done, stats)
        if progress is not None:
            meta["progress"] = progress
        meta.update(extra)
        self.storage.write_meta(meta)
        self.storage.drop_versions(version, above=False, below=True)

    # -- version 0 --------------------------------------------------------------------------
    def initial_embeddings(self, type_index: int, p: int, n: int) -> np.ndarray:
        """Initial float32 ``(n, dimension)`` embeddings of partition ``p`` of the
        ``type_index``-th entity type: N(0, init_scale), seeded by
        ``stream_seed(seed, 1, type_index, p)``."""
        gen = torch.Generator().manual_seed(stream_seed(self.cfg.seed, 1, type_index, p))
        emb = init_embeddings(n, self.cfg.dimension, self.cfg.init_scale, gen)
        if not bool(torch.isfinite(emb).all()):
            raise ConfigError(f"init_scale={self.cfg.init_scale} gives non-finite "
                              f"initial embeddings (float32)")
        return emb.numpy()

    def prepare(self, relmodel: RelationModel) -> None:
        """Initialise a new checkpoint (version 0, relation parameters from ``relmodel``),
        or check that an existing one has this config and remove the files of an
        interrupted commit."""
        if self.storage.has_meta():
            self._check_resume()
        else:
            self._create(relmodel)

    def _check_resume(self) -> None:
        st = self.storage
        meta = st.read_meta(check_files=False)  # load_state checks the files
        old_cfg = config_from_dict(st.read_config())
        check_model(meta, old_cfg, self.root)
        old = old_cfg.to_json()  # defaults of newer keys
        new = self.config_json()
        changed = {}
        for key in sorted(set(old) | set(new)):
            if key in RESUMABLE_KEYS or old.get(key) == new.get(key):
                continue
            if key not in TUNABLE_KEYS:
                raise GraphsysError(
                    f"{self.root}: checkpoint was trained with {key}={old.get(key)!r}, this "
                    f"run has {key}={new.get(key)!r} (a resumed run may change only "
                    f"{', '.join(sorted(TUNABLE_KEYS))}); use another checkpoint directory "
                    f"to start afresh")
            changed[key] = [old.get(key), new.get(key)]
        check_graph(meta, self.graph, self.root)
        if meta["epochs_done"] > self.cfg.num_epochs:   # trained none, said "trained 3"
            raise ConfigError(f"num_epochs: {self.cfg.num_epochs} is fewer than the "
                              f"{meta['epochs_done']} epochs {self.root} holds; use another "
                              f"checkpoint directory to train {self.cfg.num_epochs}")
        st.drop_versions(int(meta["version"]), below=False)
        self.history = list(meta.get("history") or [])
        if changed:  # recorded first: a crash before the config write repeats it
            self.history.append({"epochs_done": int(meta["epochs_done"]),
                                 "version": int(meta["version"]), "changed": changed})
            st.write_meta({**meta, "history": self.history})
            st.write_config(new)
            self.log(f"resuming {self.root} with " + ", ".join(
                f"{k}={v[1]!r} (was {v[0]!r})" for k, v in changed.items()))

    def _create(self, relmodel: RelationModel) -> None:
        st, root = self.storage, self.root
        if root.exists() and (not root.is_dir() or any(
                p.name not in _INIT_ENTRIES for p in root.iterdir())):
            raise GraphsysError(f"{root}: exists and is not an embedding checkpoint (choose "
                                f"another checkpoint directory)")
        make_directory(root, "the checkpoint directory")
        for path, _ in st.versioned_files():  # leftovers of an init killed before commit
            path.unlink(missing_ok=True)
        source, means = self._init_source()
        self.write_config()
        for ti, (etype, sizes) in enumerate(self.sizes.items()):
            for p, n in enumerate(sizes):
                emb = self.initial_embeddings(ti, p, n)
                state = np.zeros(self.cfg.adagrad_state_shape(n), np.float32)
                if source is not None:
                    old = self.grown_from["entity_types"][etype]["partition_sizes"][p]
                    grow.grown_partition(emb, state, source, self.grown_from["version"],
                                         etype, p, old, means[(etype, p)])
                save_npy(st.emb_path(etype, p, 0), emb)
                save_npy(st.optim_path(etype, p, 0), state)
        if source is not None:
            relmodel.load(source, self.grown_from["version"])
        relmodel.save(st, 0)
        st.sync_dirs()
        st.write_meta(self.meta(0, 0, []))

    def _init_source(self) -> tuple[CheckpointStorage | None, dict | None]:
        """With ``init_from``: the checked source checkpoint and the neighbour sums of the new
        rows (:mod:`.grow`), recording ``grown_from``; else ``(None, None)``."""
        if not self.cfg.init_from:
            return None, None
        source = CheckpointStorage(self.cfg.init_from)
        meta = source.read_meta()
        grow.check_shape(meta, source.root, dimension=self.cfg.dimension,
                         comparator=self.cfg.comparator, relations=[
                             {"name": r.name, "lhs": r.lhs, "rhs": r.rhs, "operator": op}
                             for r, op in zip(self.graph.relation_types, self.rel_ops)],
                         sizes=self.sizes)
        old = grow.old_sizes(meta)
        grow.check_old_ids(meta, source.root, self.graph, old)
        self.grown_from = {"checkpoint": str(source.root.absolute()),
                           "version": int(meta["version"]),
                           "entity_types": {t: {"partition_sizes": s} for t, s in old.items()}}
        means = grow.neighbour_means(self.graph, self.edge_set, source, int(meta["version"]),
                                     old)
        return source, means

    # -- resuming ---------------------------------------------------------------------------
    def load_state(self, relmodel: RelationModel) -> CommittedState:
        """Check the committed version's files, load its relation parameters into
        ``relmodel`` and return what a run resumes from."""
        meta = self.storage.read_meta()
        version = int(meta["version"])
        self.grown_from = meta.get("grown_from")
        self.history = list(meta.get("history") or [])
        relmodel.load(self.storage, version)
        state = CommittedState(version, int(meta["epochs_done"]),
                               [EpochStats.from_json(s) for s in meta.get("stats") or []],
                               meta.get("progress"))
        if state.progress is not None:
            self.log(f"resuming {self.root} in epoch {state.epochs_done + 1} after "
                     f"{len(state.progress['buckets_done'])} buckets")
        elif state.epochs_done:
            self.log(f"resuming {self.root} after epoch {state.epochs_done}")
        return state


__all__ = [
    "RESUMABLE_KEYS",
    "TUNABLE_KEYS",
    "CheckpointManager",
    "CheckpointStorage",
    "CommittedState",
    "check_graph",
    "load_npy",
    "save_npy",
    "stream_seed",
]
