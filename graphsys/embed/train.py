"""Bucketed training over a stored graph (PBG's algorithm, with Marius's buffer and prefetch).

For each epoch: pick a bucket order, plan the partition buffer (:mod:`.schedule`), and for
each non-empty bucket ``(i, j)``: make partitions ``i`` and ``j`` resident (the loads and
evictions of the plan; the next step's are done in a background thread while the current
bucket trains, when they do not touch it), shuffle the bucket's edges, and train them in
batches of ``batch_size`` by ``workers`` HOGWILD threads sharing the embedding tensors.

A batch of ``B`` edges is scored in both directions against ``B x (num_uniform_negs +
num_batch_negs)`` negatives: one ``(B, d) @ (d, U)`` matmul against a pool of ``U`` sampled
candidates of the partition shared by the batch, plus one batched matmul over chunks of
``num_batch_negs`` edges whose other true tails (heads) serve as negatives. Embeddings use
row-wise Adagrad (one accumulator per row: the mean of the squared gradient), relation
parameters element-wise Adagrad.

After each epoch a checkpoint version is committed (:mod:`.checkpoint`), and with
``checkpoint_buckets`` after every bucket too; ``train`` on an existing checkpoint directory
resumes after its last commit (the buckets of a half-done epoch that were not trained yet).
With ``workers = 1`` the resumed run is bit-for-bit the uninterrupted one: every random draw
comes from generators seeded by ``(seed, epoch, bucket position in the epoch's order,
worker)``, and nothing else carries over between buckets but the saved tensors. On the CPU
two runs with the same seed are bit-for-bit equal whatever the intra-op thread count: no
gradient is accumulated with atomics (see :func:`graphsys.embed.model.gather`).

:class:`Trainer` is one process; :class:`graphsys.embed.distributed.DistributedTrainer` runs
the same buckets on the ranks of a ``torch.distributed`` group.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import threading
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from graphsys.device import resolve_device
from graphsys.embed.checkpoint import CheckpointStorage, check_graph, load_npy, save_npy
from graphsys.embed.config import ConfigError, EmbedConfig, config_from_dict, load_config
from graphsys.embed import dot_softmax, grow
from graphsys.embed.kernels import row_adagrad
from graphsys.embed.model import (COMPARATORS, LOSSES, DotComparator, SoftmaxLoss,
                                  init_embeddings, n3)
from graphsys.embed.relations import RelationModel
from graphsys.embed.schedule import bucket_order, plan_buffer
from graphsys.errors import GraphsysError
from graphsys.storage.graph import Graph, open_graph
from graphsys.trace import traced
from graphsys.storage.pages import huge_pages

ROW_ADAGRAD_EPS = 1e-10
#: Keys that may differ between a checkpoint and a resumed run.
RESUMABLE_KEYS = {"num_epochs", "checkpoint_path", "workers", "prefetch", "device",
                  "buffer_partitions", "memory_budget", "eval_num_uniform_negs",
                  "eval_full_max_candidates", "graph", "checkpoint_buckets", "init_from"}
#: Optimisation keys a resumed run may change (not the model's shape or the data); each
#: change is recorded in ``checkpoint.json``'s ``history``.
TUNABLE_KEYS = {"lr", "relation_lr", "batch_size", "num_batch_negs", "num_uniform_negs",
                "degree_neg_fraction", "regularization_coef", "margin", "max_norm", "loss_fn",
                "bucket_order", "freeze_old"}


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence([int(p) & 0xFFFFFFFF for p in parts]).generate_state(1)[0])


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class RankStats:
    """One rank's share of an epoch (the only one in a single-process run).

    ``edges`` and ``buckets`` trained; ``idle_rounds``: distributed rounds with no bucket for
    this rank; ``loss_sum``: sum of its batch losses; ``train_seconds``: seconds training
    buckets; ``wait_seconds``: seconds in each round's collectives (partition lock and
    relation sync: waiting for the slowest rank); ``loads`` / ``evictions``: partitions read
    into / written out of its buffer and their ``bytes_read`` / ``bytes_written``;
    ``checkpoint_bytes``: bytes its commits wrote; ``io_wait_seconds``: seconds the training
    thread waited for partition loads and write-backs (I/O the pipeline did not hide).
    """

    rank: int
    edges: int = 0
    buckets: int = 0
    idle_rounds: int = 0
    loss_sum: float = 0.0
    train_seconds: float = 0.0
    wait_seconds: float = 0.0
    loads: int = 0
    evictions: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    checkpoint_bytes: int = 0
    io_wait_seconds: float = 0.0

    #: Field order of :meth:`figures` / :meth:`set_figures` (everything but ``rank``).
    FIGURES = ("edges", "buckets", "idle_rounds", "loss_sum", "train_seconds", "wait_seconds",
               "loads", "evictions", "bytes_read", "bytes_written", "checkpoint_bytes",
               "io_wait_seconds")
    _FLOATS = ("loss_sum", "train_seconds", "wait_seconds", "io_wait_seconds")

    def figures(self) -> list[float]:
        """The :attr:`FIGURES` as floats (exact for counts below 2**53)."""
        return [float(getattr(self, k)) for k in self.FIGURES]

    def set_figures(self, values: list[float]) -> None:
        """Set the :attr:`FIGURES` from :meth:`figures` of the same rank."""
        for k, v in zip(self.FIGURES, values):
            setattr(self, k, v if k in self._FLOATS else int(v))

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for k in ("train_seconds", "wait_seconds", "io_wait_seconds"):
            out[k] = round(out[k], 3)
        return out


@dataclass
class EpochStats:
    """One epoch (all ranks): edges trained, wall seconds without the commits, mean loss
    per edge, partition loads and swaps (evictions), buffer traffic and commit writes
    (bytes), commit seconds; ``ranks``: the per-rank figures (:class:`RankStats`, by rank);
    ``held`` (distributed): per round, the partitions each rank held, ``held[n][r]``."""

    epoch: int
    edges: int = 0
    seconds: float = 0.0
    loss: float = 0.0
    loads: int = 0
    swaps: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    checkpoint_bytes: int = 0
    checkpoint_seconds: float = 0.0
    world_size: int = 1
    ranks: list[RankStats] = field(default_factory=list)
    held: list[list[list[int]]] = field(default_factory=list)

    @property
    def edges_per_s(self) -> float:
        return self.edges / self.seconds if self.seconds else 0.0

    def total(self) -> None:
        """Set the epoch totals from :attr:`ranks`."""
        rs = self.ranks
        self.edges = sum(r.edges for r in rs)
        self.loss = sum(r.loss_sum for r in rs) / max(self.edges, 1)
        self.loads = sum(r.loads for r in rs)
        self.swaps = sum(r.evictions for r in rs)
        self.bytes_read = sum(r.bytes_read for r in rs)
        self.bytes_written = sum(r.bytes_written for r in rs)
        self.checkpoint_bytes = sum(r.checkpoint_bytes for r in rs)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["edges_per_s"] = round(self.edges_per_s, 1)
        out["seconds"] = round(self.seconds, 3)
        out["checkpoint_seconds"] = round(self.checkpoint_seconds, 3)
        out["ranks"] = [r.to_json() for r in self.ranks]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EpochStats:
        kw = {k: v for k, v in data.items() if k not in ("edges_per_s", "ranks")}
        return cls(**kw, ranks=[RankStats(**r) for r in data.get("ranks", [])])


# =============================================================================================
# Partition buffer


def diverged(out: Path, committed: int, what: str) -> GraphsysError:
    """The one-line error that stops a diverged run: ``what`` went non-finite; the
    checkpoint ``out`` keeps version ``committed``, its last good one."""
    return GraphsysError(f"{out}: training diverged: {what}; the checkpoint keeps version "
                         f"{committed}, the last good one (lower lr or init_scale?)")


class PartitionBuffer:
    """Resident embedding partitions (all entity types of partition ``p`` form one slot).

    Loads read version ``working`` if a write since the last commit made it, else
    ``committed``; evictions and :meth:`flush` write ``working``, and only partitions in
    ``dirty`` (changed since read or written). Those writes skip the fsyncs; :meth:`flush`
    makes them durable. Tensors: embeddings float32 ``(n_p, d)`` and row-Adagrad sums
    float32 ``(n_p,)`` on ``device``. Loads and evictions are counted in ``tally``.
    """

    def __init__(self, storage: CheckpointStorage, sizes: dict[str, list[int]], device,
                 committed: int):
        self.storage, self.sizes, self.device = storage, sizes, device
        self.committed = committed
        self.resident: dict[int, dict[str, tuple[torch.Tensor, torch.Tensor]]] = {}
        self.dirty: set[int] = set()
        self.unsynced = False  # a write since the last flush
        self.tally = RankStats(0)
        self._lock = threading.Lock()

    @property
    def working(self) -> int:
        return self.committed + 1

    def _source(self, etype: str, p: int) -> int:
        return self.working if self.storage.emb_path(etype, p, self.working).exists() \
            else self.committed

    @traced("embed.load")
    def load(self, p: int) -> None:
        slot = {}
        nbytes = 0
        for etype in self.sizes:
            v = self._source(etype, p)
            emb = self._read(self.storage.emb_path(etype, p, v))
            st = load_npy(self.storage.optim_path(etype, p, v))
            nbytes += emb.nbytes + st.nbytes
            slot[etype] = (torch.from_numpy(emb).to(self.device),
                           torch.from_numpy(st).to(self.device))
        with self._lock:
            self.resident[p] = slot
            self.tally.loads += 1
            self.tally.bytes_read += nbytes

    def check_finite(self, p: int) -> None:
        """Raise :func:`diverged` if resident partition ``p`` holds a NaN or an infinity."""
        for etype, (emb, _) in self.resident[p].items():
            if not bool(torch.isfinite(emb).all()):
                raise diverged(self.storage.root, self.committed,
                               f"non-finite embedding in entity type {etype!r}, partition {p}")

    def _read(self, path: Path) -> np.ndarray:
        """An embedding file's array; on the CPU in fresh memory advised to use huge pages
        (rows are read and written at random), copied from the file's mapping."""
        if self.device.type != "cpu":
            return load_npy(path)
        src = load_npy(path, mmap=True)
        out = huge_pages(np.empty(src.shape, src.dtype))
        out[...] = src
        return out

    def _write(self, p: int) -> int:
        self.check_finite(p)
        n, v = 0, self.working
        for etype, (emb, st) in self.resident[p].items():
            n += save_npy(self.storage.emb_path(etype, p, v), emb.cpu().numpy(), durable=False)
            n += save_npy(self.storage.optim_path(etype, p, v), st.cpu().numpy(), durable=False)
        self.unsynced = True
        return n

    @traced("embed.write-back")
    def evict(self, p: int) -> None:
        n = self._write(p) if p in self.dirty else 0
        with self._lock:
            del self.resident[p]
            self.dirty.discard(p)
            self.tally.evictions += 1
            self.tally.bytes_written += n

    def execute(self, evict: list[int], load: list[int]) -> None:
        for p in evict:
            self.evict(p)
        for p in load:
            self.load(p)

    def flush(self) -> int:
        """Write the changed resident partitions to ``working`` (they stay resident) and
        make every partition write since the last flush durable; returns bytes written."""
        written = sum(self._write(p) for p in sorted(self.dirty))
        self.dirty.clear()
        if self.unsynced:
            self.storage.sync()
            self.unsynced = False
        return written

    def commit_files(self, num_partitions: int) -> int:
        """Complete version ``working`` after every rank's :meth:`flush`: partitions not
        written since the last commit get a hard link (or copy) of their ``committed``
        file. Returns bytes copied."""
        written = 0
        for p in range(num_partitions):
            for etype in self.sizes:
                for path_of in (self.storage.emb_path, self.storage.optim_path):
                    dst = path_of(etype, p, self.working)
                    if dst.exists():
                        continue
                    src = path_of(etype, p, self.committed)
                    try:
                        os.link(src, dst)
                    except OSError:
                        written += save_npy(dst, load_npy(src))
        return written


# =============================================================================================
# Trainer


class Trainer:
    """Trains ``config`` on ``graph``'s edge set into the checkpoint directory ``out``.

    One process; a subclass that runs as rank ``rank`` of ``world_size`` overrides
    :meth:`_prepare`, :meth:`_epoch`, :meth:`_share_figures` and :meth:`_barrier` (only rank
    0 writes checkpoint metadata).
    """

    rank, world_size = 0, 1

    def __init__(self, config: EmbedConfig, graph: Graph, out: Path, *, progress: bool = False,
                 log=None):
        self.cfg, self.graph, self.out = config, graph, Path(out)
        self.progress, self.log = progress, log or (lambda msg: None)
        self.device = resolve_device(config.device)
        self.edge_set = graph.edge_set(config.edges).name
        self.P = graph.num_partitions
        self._check_schema()
        self.storage = CheckpointStorage(self.out)
        self.comparator = COMPARATORS.get_class(config.comparator)()
        self.loss_fn = LOSSES.get_class(config.loss_fn)(margin=config.margin)
        rels = graph.relation_types
        overrides = {r.name: r for r in config.relations}
        self.rel_names = [r.name for r in rels]
        self.rel_ops = [(overrides[r.name].operator if r.name in overrides and
                         overrides[r.name].operator else config.operator) for r in rels]
        self.rel_weight = torch.tensor([overrides[r.name].weight if r.name in overrides else 1.0
                                        for r in rels], dtype=torch.float32)
        self.uniform_rel_weight = bool((self.rel_weight == 1).all())
        pairs = sorted({(r.lhs, r.rhs) for r in rels})
        self.pairs = pairs
        self.pair_of_rel = np.array([pairs.index((r.lhs, r.rhs)) for r in rels], np.int64)
        self.sizes = {t: [int(x) for x in graph.partition_sizes(t)] for t in graph.entity_types}
        self.relmodel = RelationModel(self.rel_ops, config.dimension, self.device)
        self.capacity = self._capacity()
        self.stats: list[EpochStats] = []
        #: Resumes that changed :data:`TUNABLE_KEYS`: ``{"epochs_done", "version",
        #: "changed": {key: [old, new]}}`` each, oldest first.
        self.history: list[dict[str, Any]] = []
        self._degrees: dict[tuple[str, int], torch.Tensor] | None = None
        #: ``{"checkpoint", "version", "entity_types": {t: {"partition_sizes"}}}`` of the
        #: ``init_from`` checkpoint this one was grown from (None: a fresh start).
        self.grown_from: dict[str, Any] | None = None
        #: With ``freeze_old``: rows below ``frozen_below[(type, p)]`` are not updated.
        self.frozen_below: dict[tuple[str, int], int] = {}
        if config.freeze_old and not config.init_from:
            raise ConfigError("freeze_old: needs init_from (the checkpoint of the old rows)")

    # -- setup ------------------------------------------------------------------------------
    def _check_schema(self) -> None:
        cfg, g = self.cfg, self.graph
        if cfg.num_partitions is not None and cfg.num_partitions != self.P:
            raise ConfigError(f"num_partitions: config says {cfg.num_partitions}, the graph "
                              f"{g.path} has {self.P} (re-ingest with --partitions "
                              f"{cfg.num_partitions} or drop the key)")
        for name, ent in cfg.entities.items():
            if name not in g.entity_types:
                raise ConfigError(f"entities.{name}: not an entity type of the graph "
                                  f"({', '.join(g.entity_types)})")
            if ent.num_partitions != self.P:
                raise ConfigError(f"entities.{name}.num_partitions: config says "
                                  f"{ent.num_partitions}, the graph has {self.P}")
        types = {r.name: r for r in g.relation_types}
        for k, rel in enumerate(cfg.relations):
            if rel.name not in types:
                raise ConfigError(f"relations[{k}].name: {rel.name!r} is not a relation type of "
                                  f"the graph ({len(types)} relation types)")
            for side in ("lhs", "rhs"):
                want, have = getattr(rel, side), getattr(types[rel.name], side)
                if want is not None and want != have:
                    raise ConfigError(f"relations[{k}].{side}: config says {want!r}, the "
                                      f"graph's relation {rel.name!r} has {side} {have!r}")
        if g.num_edges(self.edge_set) == 0:
            raise GraphsysError(f"edge set {self.edge_set!r} of {g.path} has no edges")

    def _capacity(self) -> int:
        cfg = self.cfg
        if cfg.buffer_partitions is not None:
            cap = cfg.buffer_partitions
        elif cfg.memory_budget is not None:
            per = max(sum(s[p] for s in self.sizes.values()) for p in range(self.P)) * \
                (cfg.dimension + 1) * 4
            cap = cfg.budget_bytes() // max(per, 1)
            if cap < min(2, self.P):
                raise ConfigError(f"memory_budget: {cfg.memory_budget} holds {cap} partitions "
                                  f"of {per} bytes; 2 are needed (raise it or use more "
                                  f"partitions)")
        else:
            cap = self.P
        return max(min(cap, self.P), min(2, self.P))

    def _config_json(self) -> dict[str, Any]:
        out = self.cfg.to_json()
        out["graph"] = self.graph.location.uri
        out["edges"] = self.edge_set
        out["checkpoint_path"] = str(self.out.absolute())
        return out

    def _meta(self, version: int, epochs_done: int, stats: list[EpochStats]) -> dict[str, Any]:
        return {
            "version": version, "epochs_done": epochs_done,
            "graph": self.graph.location.uri, "edges": self.edge_set,
            "dimension": self.cfg.dimension, "num_partitions": self.P,
            "entity_types": {t: {"partition_sizes": s} for t, s in self.sizes.items()},
            "relations": [{"name": r.name, "lhs": r.lhs, "rhs": r.rhs, "operator": op}
                          for r, op in zip(self.graph.relation_types, self.rel_ops)],
            "comparator": self.cfg.comparator,
            "stats": [s.to_json() for s in stats],
            "history": self.history,
            **({"grown_from": self.grown_from} if self.grown_from else {}),
        }

    def _prepare(self) -> tuple[int, dict[str, Any] | None]:
        """Create or check the checkpoint directory and load its state; returns the epochs
        done and the progress of the next epoch (``None`` when it starts afresh)."""
        self._prepare_files()
        return self._load_state()

    def _prepare_files(self) -> None:
        """Initialise a new checkpoint (version 0), or check that an existing one has this
        config and remove the files of an interrupted commit."""
        st = self.storage
        if st.has_meta():
            meta = st.read_meta(check_files=False)  # _load_state checks the files
            old = config_from_dict(st.read_config()).to_json()  # defaults of newer keys
            new = self._config_json()
            changed = {}
            for key in sorted(set(old) | set(new)):
                if key in RESUMABLE_KEYS or old.get(key) == new.get(key):
                    continue
                if key not in TUNABLE_KEYS:
                    raise GraphsysError(
                        f"{self.out}: checkpoint was trained with {key}={old.get(key)!r}, this "
                        f"run has {key}={new.get(key)!r} (a resumed run may change only "
                        f"{', '.join(sorted(TUNABLE_KEYS))}); use another --out to start "
                        f"afresh")
                changed[key] = [old.get(key), new.get(key)]
            check_graph(meta, self.graph, self.out)
            st.drop_versions(int(meta["version"]), below=False)
            self.history = list(meta.get("history", []))
            if changed:  # recorded first: a crash before the config write repeats it
                self.history.append({"epochs_done": int(meta["epochs_done"]),
                                     "version": int(meta["version"]), "changed": changed})
                st.write_meta({**meta, "history": self.history})
                st.write_config(new)
                self.log(f"resuming {self.out} with " + ", ".join(
                    f"{k}={v[1]!r} (was {v[0]!r})" for k, v in changed.items()))
            return
        if self.out.exists() and (not self.out.is_dir() or any(
                p.name not in ("embeddings", "optim", "model", "config.json")
                for p in self.out.iterdir())):
            raise GraphsysError(f"{self.out}: exists and is not an embedding checkpoint "
                                f"(choose another --out)")
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise GraphsysError(f"{self.out}: cannot create the checkpoint directory "
                                f"({exc.strerror or exc})") from None
        for path, _ in st.versioned_files():  # leftovers of an init killed before commit
            path.unlink(missing_ok=True)
        source, means = self._init_source()
        st.write_config(self._config_json())
        d = self.cfg.dimension
        for ti, (etype, sizes) in enumerate(self.sizes.items()):
            for p, n in enumerate(sizes):
                gen = torch.Generator().manual_seed(_seed(self.cfg.seed, 1, ti, p))
                emb = init_embeddings(n, d, self.cfg.init_scale, gen)
                if not bool(torch.isfinite(emb).all()):
                    raise ConfigError(f"init_scale={self.cfg.init_scale} gives non-finite "
                                      f"initial embeddings (float32)")
                state = np.zeros(n, np.float32)
                emb = emb.numpy()
                if source is not None:
                    old = self.grown_from["entity_types"][etype]["partition_sizes"][p]
                    emb, state = grow.grown_partition(emb, source, self.grown_from["version"],
                                                      etype, p, old, means[(etype, p)])
                save_npy(st.emb_path(etype, p, 0), emb)
                save_npy(st.optim_path(etype, p, 0), state)
        if source is not None:
            self.relmodel.load(source, self.grown_from["version"])
        self.relmodel.save(st, 0)
        st.sync_dirs()
        st.write_meta(self._meta(0, 0, []))

    def _init_source(self):
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
        self.grown_from = {"checkpoint": str(source.root.absolute()),
                           "version": int(meta["version"]),
                           "entity_types": {t: {"partition_sizes": s} for t, s in old.items()}}
        means = grow.neighbour_means(self.graph, self.edge_set, source, int(meta["version"]),
                                     old)
        return source, means

    def _load_state(self) -> tuple[int, dict[str, Any] | None]:
        """Relation parameters and finished epochs' stats of the committed version."""
        meta = self.storage.read_meta()
        self.version = int(meta["version"])
        self.grown_from = meta.get("grown_from")
        if self.cfg.freeze_old:
            if not self.grown_from:
                raise ConfigError(f"freeze_old: {self.out} was not grown from another "
                                  f"checkpoint (init_from)")
            self.frozen_below = {
                (t, p): int(n) for t, info in self.grown_from["entity_types"].items()
                for p, n in enumerate(info["partition_sizes"])}
        self.relmodel.load(self.storage, self.version)
        self.stats = [EpochStats.from_json(s) for s in meta.get("stats", [])]
        done, progress = int(meta["epochs_done"]), meta.get("progress")
        if progress is not None:
            self.log(f"resuming {self.out} in epoch {done + 1} after "
                     f"{len(progress['buckets_done'])} buckets")
        elif done:
            self.log(f"resuming {self.out} after epoch {done}")
        return done, progress

    # -- degrees for degree-proportional negatives -------------------------------------------
    def _degree_tables(self) -> dict[tuple[str, int], torch.Tensor]:
        if self._degrees is None:
            deg = {(t, p): np.zeros(n, np.float64) for t, s in self.sizes.items()
                   for p, n in enumerate(s)}
            rels = self.graph.relation_types
            for b in self.graph.buckets("row-major", self.edge_set):
                for eb in b.batches():
                    if eb.rel is None:
                        lhs_t, rhs_t = rels[0].lhs, rels[0].rhs
                        np.add.at(deg[(lhs_t, b.i)], eb.src, 1)
                        np.add.at(deg[(rhs_t, b.j)], eb.dst, 1)
                    else:
                        for pi, (lt, rt) in enumerate(self.pairs):
                            m = self.pair_of_rel[eb.rel] == pi
                            np.add.at(deg[(lt, b.i)], eb.src[m], 1)
                            np.add.at(deg[(rt, b.j)], eb.dst[m], 1)
            self._degrees = {k: torch.from_numpy(np.cumsum(v + 1.0)) for k, v in deg.items()}
        return self._degrees

    def _sample(self, etype: str, p: int, n: int, k: int, gen: torch.Generator) -> torch.Tensor:
        """``k`` candidate offsets in partition ``p`` of ``etype`` (int64)."""
        kd = round(k * self.cfg.degree_neg_fraction)
        uni = torch.randint(n, (k - kd,), generator=gen)
        if kd == 0:
            return uni
        cdf = self._degree_tables()[(etype, p)]
        u = torch.rand(kd, generator=gen, dtype=torch.float64) * cdf[-1]
        deg = torch.searchsorted(cdf, u, right=True).clamp_max(n - 1)
        return torch.cat([uni, deg])

    # -- one batch --------------------------------------------------------------------------
    def _side_loss(self, q, pos_c, pool, w):
        cmp, nb = self.comparator, self.cfg.num_batch_negs
        pos = cmp.pos(q, pos_c)
        negs = []
        if pool is not None:
            negs.append(cmp.neg(q, pool))
        b, d = q.shape
        if nb > 0 and b > 1:
            chunk = min(nb, b)
            nfull = b // chunk * chunk
            mask = torch.eye(chunk, dtype=torch.bool, device=q.device)
            s = cmp.neg(q[:nfull].view(-1, chunk, d), pos_c[:nfull].view(-1, chunk, d))
            parts = [s.masked_fill(mask, float("-inf")).reshape(nfull, chunk)]
            rem = b - nfull
            if rem:  # the last rows use the last `chunk` true candidates, theirs masked
                r = cmp.neg(q[nfull:], pos_c[b - chunk:])
                rows = torch.arange(rem, device=q.device)
                parts.append(r.index_put((rows, rows + chunk - rem),
                                         torch.tensor(float("-inf"), device=q.device)))
            negs.append(torch.cat(parts, dim=0))
        return self.loss_fn.forward(pos, negs, w)

    def _row_adagrad(self, emb, state, idx, grad, lr):
        if emb.device.type == "cpu":
            row_adagrad(emb.numpy(), state.numpy(), idx.numpy(), grad.contiguous().numpy(),
                        lr, ROW_ADAGRAD_EPS, self.cfg.max_norm or 0.0)
            return
        uniq, inv = torch.unique(idx, return_inverse=True)
        g = torch.zeros(len(uniq), grad.shape[1], dtype=grad.dtype, device=grad.device)
        g.index_add_(0, inv, grad)
        s = state[uniq] + g.pow(2).mean(1)
        state[uniq] = s
        emb.index_add_(0, uniq, g * (-lr / (s.sqrt() + ROW_ADAGRAD_EPS)).unsqueeze(1))
        if self.cfg.max_norm is not None:
            rows = emb[uniq]
            emb[uniq] = rows.renorm(2, 0, self.cfg.max_norm)

    def _trainable(self, etype: str, p: int, idx, grad):
        """``(idx, grad)`` without the rows that ``freeze_old`` keeps fixed."""
        lo = self.frozen_below.get((etype, p))
        if not lo:
            return idx, grad
        keep = idx >= lo
        return idx[keep], grad[keep]

    def _closed_form(self, b: int) -> bool:
        """Whether a batch of ``b`` edges takes :func:`dot_softmax.both_sides` (the dot
        comparator, the softmax loss, in-batch negatives, no regulariser)."""
        cfg = self.cfg
        return (type(self.comparator) is DotComparator and type(self.loss_fn) is SoftmaxLoss
                and cfg.num_batch_negs > 0 and b >= 2 and cfg.regularization_coef == 0)

    @traced("embed.minibatch")
    def _batch(self, lt, rt, i, j, h, t, rel, w, gen) -> float:
        cfg = self.cfg
        L_emb, L_st = self.buffer.resident[i][lt]
        R_emb, R_st = self.buffer.resident[j][rt]
        b, u = len(h), cfg.num_uniform_negs
        dev = self.device
        idx_l, idx_r = h, t
        if u:
            idx_l = torch.cat([h, self._sample(lt, i, len(L_emb), u, gen)])
            idx_r = torch.cat([t, self._sample(rt, j, len(R_emb), u, gen)])
        idx_l, idx_r = idx_l.to(dev), idx_r.to(dev)
        rel = rel.to(dev)
        w = None if w is None else w.to(dev)
        leaves: list = []
        if self._closed_form(b):
            grads = self._closed_form_grads
        else:
            grads = self._autograd_grads
        loss, gl, gr = grads(L_emb.index_select(0, idx_l), R_emb.index_select(0, idx_r), b,
                             rel, w, leaves)
        with torch.no_grad():
            if L_emb is R_emb:
                self._row_adagrad(L_emb, L_st, *self._trainable(
                    lt, i, torch.cat([idx_l, idx_r]), torch.cat([gl, gr])), cfg.lr)
            else:
                self._row_adagrad(L_emb, L_st, *self._trainable(lt, i, idx_l, gl), cfg.lr)
                self._row_adagrad(R_emb, R_st, *self._trainable(rt, j, idx_r, gr), cfg.lr)
            if not self.frozen_below:
                self.relmodel.step(leaves, cfg.relation_learning_rate)
        return loss

    def _autograd_grads(self, xl, xr, b, rel, w, leaves):
        """Loss and the gradients of the gathered rows ``xl`` / ``xr`` ``(b + U, d)``, by
        autograd (any comparator, loss and regulariser); ``leaves`` get the relations'."""
        cfg, cmp, u = self.cfg, self.comparator, self.cfg.num_uniform_negs
        xl.requires_grad_(True)
        xr.requires_grad_(True)
        q_tail = cmp.prepare(self.relmodel.apply("rhs", xl[:b], rel, leaves))
        q_head = cmp.prepare(self.relmodel.apply("lhs", xr[:b], rel, leaves))
        pl, pr = cmp.prepare(xl), cmp.prepare(xr)
        loss = (self._side_loss(q_tail, pr[:b], pr[b:] if u else None, w)
                + self._side_loss(q_head, pl[:b], pl[b:] if u else None, w))
        if cfg.regularization_coef > 0:
            loss = loss + cfg.regularization_coef * (
                n3(xl[:b]) + n3(xr[:b]) + sum(n3(lf.leaf) for lf in leaves))
        loss.backward()
        return float(loss.detach()), xl.grad, xr.grad

    def _closed_form_grads(self, xl, xr, b, rel, w, leaves):
        """As :meth:`_autograd_grads`, for the batches of :meth:`_closed_form`: scores and
        loss in closed form (:mod:`.dot_softmax`); autograd only through the operators when
        they have parameters."""
        u = self.cfg.num_uniform_negs
        identity = self.relmodel.is_identity
        if identity:
            ql, qr = xl[:b], xr[:b]
        else:
            hl = xl[:b].detach().requires_grad_(True)
            hr = xr[:b].detach().requires_grad_(True)
            ql = self.relmodel.apply("rhs", hl, rel, leaves)
            qr = self.relmodel.apply("lhs", hr, rel, leaves)
        loss, dql, dqr, dxl, dxr, dpl, dpr = dot_softmax.both_sides(
            ql.detach(), qr.detach(), xl[:b].detach(), xr[:b].detach(),
            xl[b:] if u else None, xr[b:] if u else None, self.cfg.num_batch_negs, w,
            identity)
        if not identity:
            torch.autograd.backward([ql, qr], [dql, dqr])
            dql, dqr = hl.grad, hr.grad
        gl = torch.cat([dql.add_(dxl), dpl]) if u else dql.add_(dxl)
        gr = torch.cat([dqr.add_(dxr), dpr]) if u else dqr.add_(dxr)
        return float(loss), gl, gr

    # -- one bucket -------------------------------------------------------------------------
    @traced("embed.bucket-read")
    def _bucket_columns(self, i, j):
        bucket = self.graph.bucket(i, j, self.edge_set)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            src = torch.from_numpy(bucket.src)
            dst = torch.from_numpy(bucket.dst)
            rel = bucket.rel
            rel = None if rel is None else torch.from_numpy(rel)
            wt = bucket.weight
            wt = None if wt is None else torch.from_numpy(wt)
        return src, dst, rel, wt

    def _worker(self, i, j, cols, perm, gen, bar) -> float:
        src, dst, rel, wt = cols
        B = self.cfg.batch_size
        total = 0.0
        for start in range(0, len(perm), B):
            idx = perm[start:start + B]
            h, t = src[idx].long(), dst[idx].long()
            r = rel[idx].long() if rel is not None else torch.zeros(len(idx), dtype=torch.long)
            w = wt[idx].float() if wt is not None else None
            if not self.uniform_rel_weight:
                rw = self.rel_weight[r]
                w = rw if w is None else w * rw
            if len(self.pairs) == 1:
                lt, rt = self.pairs[0]
                loss = self._batch(lt, rt, i, j, h, t, r, w, gen)
            else:
                pr = torch.from_numpy(self.pair_of_rel)[r]
                loss = 0.0
                for pi, (lt, rt) in enumerate(self.pairs):
                    m = pr == pi
                    if bool(m.any()):
                        loss += self._batch(lt, rt, i, j, h[m], t[m], r[m],
                                            None if w is None else w[m], gen)
            if not math.isfinite(loss):
                raise self._diverged(f"loss {loss} in bucket ({i}, {j}), batch of edges "
                                     f"{start}..{start + len(idx) - 1} of its shuffled order")
            total += loss
            if bar is not None:
                bar.update(len(idx))
        return total

    @traced("embed.bucket")
    def _train_bucket(self, epoch: int, k: int, i: int, j: int, bar) -> float:
        cols = self._bucket_columns(i, j)
        n = len(cols[0])
        gen = torch.Generator().manual_seed(_seed(self.cfg.seed, 2, epoch, k))
        perm = torch.randperm(n, generator=gen)
        nw = min(self.cfg.workers, max(1, n // self.cfg.batch_size))
        if nw == 1:
            return self._worker(i, j, cols, perm, gen, bar)
        bounds = np.linspace(0, n, nw + 1).astype(int)
        gens = [torch.Generator().manual_seed(_seed(self.cfg.seed, 3, epoch, k, w))
                for w in range(nw)]
        futs = [self.pool.submit(self._worker, i, j, cols, perm[bounds[w]:bounds[w + 1]],
                                 gens[w], bar) for w in range(nw)]
        return sum(f.result() for f in futs)

    # -- epochs -----------------------------------------------------------------------------
    def run(self) -> list[EpochStats]:
        cfg = self.cfg
        done, progress = self._prepare()
        counts = self.graph.bucket_counts(self.edge_set)
        self.buffer = PartitionBuffer(self.storage, self.sizes, self.device, self.version)
        threads = torch.get_num_threads()
        if cfg.workers > 1:
            torch.set_num_threads(max(1, threads // cfg.workers))
        self.pool = ThreadPoolExecutor(cfg.workers) if cfg.workers > 1 else None
        io = ThreadPoolExecutor(1, thread_name_prefix="graphsys-prefetch")
        try:
            for epoch in range(done, cfg.num_epochs):
                self.stats.append(self._epoch(epoch, counts, io,
                                              progress if epoch == done else None))
        except BaseException:
            if self.rank == 0:  # a failed run (diverged, disk full) leaves only its commits
                with contextlib.suppress(OSError):
                    self.storage.drop_versions(self.buffer.committed, below=False)
            raise
        finally:
            io.shutdown(wait=True)
            if self.pool is not None:
                self.pool.shutdown(wait=True)
            torch.set_num_threads(threads)
        return self.stats

    def _epoch_order(self, epoch: int, counts: np.ndarray) -> list[tuple[int, int]]:
        """The non-empty buckets of ``epoch`` in training order (the same on every rank)."""
        order = bucket_order(self.cfg.bucket_order, self.P, seed=_seed(self.cfg.seed, 4, epoch),
                             buffer=self._plan_capacity())
        return [b for b in order if counts[b] > 0]

    def _start_epoch(self, epoch: int, progress: dict[str, Any] | None
                     ) -> tuple[EpochStats, set[tuple[int, int]]]:
        """The epoch's stats and its buckets already trained (from ``progress``); the
        buffer counts into this rank's :class:`RankStats`."""
        if progress is None:
            st, done = EpochStats(epoch + 1), set()
        else:
            st = EpochStats.from_json(progress["stats"])
            done = {(int(i), int(j)) for i, j in progress["buckets_done"]}
        st.world_size = self.world_size
        while len(st.ranks) < self.world_size:
            st.ranks.append(RankStats(len(st.ranks)))
        self.buffer.tally = st.ranks[self.rank]
        return st, done

    def _epoch(self, epoch: int, counts: np.ndarray, io: ThreadPoolExecutor,
               progress: dict[str, Any] | None) -> EpochStats:
        """Train the epoch's buckets; partition I/O runs in the ``io`` thread (FIFO).

        Pipeline: while bucket ``n`` trains, the ``io`` thread does the part of step
        ``n + 1`` of the plan that does not touch bucket ``n``: it evicts (writes back) the
        partitions bucket ``n`` does not use and loads as many of the next partitions as the
        buffer has room for. After bucket ``n``, the rest of the step (evicting bucket ``n``'s
        own partitions, i.e. the write-back, and any load that had no room) is queued; bucket
        ``n + 1`` waits only for the loads it needs, so the write-back overlaps its training.
        With :meth:`_plan_capacity` one slot is left out of the plan, so every load finds
        room while the previous bucket trains (Marius's free prefetch slot).
        """
        cfg, buf = self.cfg, self.buffer
        order = self._epoch_order(epoch, counts)
        st, done = self._start_epoch(epoch, progress)
        mine = st.ranks[0]
        todo = [(k, b) for k, b in enumerate(order) if b not in done]
        steps = plan_buffer([b for _, b in todo], self._plan_capacity(),
                            sorted(buf.resident)).steps
        held, resident = [], len(buf.resident)  # partitions resident after each step
        for step in steps:
            resident += len(step.load) - len(step.evict)
            held.append(resident)
        bar = tqdm(total=int(sum(counts[b] for _, b in todo)), unit="edge", unit_scale=True,
                   desc=f"epoch {epoch + 1}/{cfg.num_epochs}", disable=not self.progress)
        t0 = time.perf_counter()
        queued: list[Future] = []  # io tasks in submission order
        early: Future | None = None  # the part of this step done while the last bucket trained
        late: tuple[list[int], list[int]] = ([], [])  # the rest: (evictions, loads)
        split = False  # whether step n was split into early and late while bucket n-1 trained

        def wait(fut: Future | None) -> None:
            if fut is not None:
                tw = time.perf_counter()
                fut.result()
                mine.io_wait_seconds += time.perf_counter() - tw

        for n, (k, (i, j)) in enumerate(todo):
            if not split:
                late = (steps[n].evict, steps[n].load)
            need = early
            if not cfg.prefetch:
                tw = time.perf_counter()
                buf.execute(*late)
                mine.io_wait_seconds += time.perf_counter() - tw
            elif late[0] or late[1]:
                queued.append(io.submit(buf.execute, *late))
                if late[1]:
                    need = queued[-1]  # FIFO: waiting for it waits for the early part too
            wait(need)
            early, split = None, False
            buf.dirty |= {i, j}
            if cfg.prefetch and n + 1 < len(steps):
                nxt = steps[n + 1]
                now = [p for p in nxt.evict if p not in (i, j)]
                room = max(0, self.capacity - held[n] + len(now))
                late = ([p for p in nxt.evict if p in (i, j)], nxt.load[room:])
                split = True
                if now or nxt.load[:room]:
                    early = io.submit(buf.execute, now, nxt.load[:room])
                    queued.append(early)
            tb = time.perf_counter()
            mine.loss_sum += self._train_bucket(epoch, k, i, j, bar)
            mine.train_seconds += time.perf_counter() - tb
            mine.edges += int(counts[i, j])
            mine.buckets += 1
            done.add((i, j))
            if cfg.checkpoint_buckets and n + 1 < len(todo):
                if late[0] or late[1]:  # complete step n + 1 before the commit
                    queued.append(io.submit(buf.execute, *late))
                    late = ([], [])
                for fut in queued:
                    wait(fut)
                queued = []
                st.seconds += time.perf_counter() - t0
                self._commit(st, epoch, done)
                t0 = time.perf_counter()
        for fut in queued:
            wait(fut)
        bar.close()
        st.seconds += time.perf_counter() - t0
        self._commit(st, epoch + 1)
        self._log_epoch(st)
        return st

    def _plan_capacity(self) -> int:
        """Partitions the bucket order and the buffer plan may use: ``capacity - 1`` when
        prefetching with ``3 <= capacity < P`` (the last slot is the prefetch slot), else
        ``capacity`` (at least 2 unless ``P == 1``)."""
        c = self.capacity
        if self.cfg.prefetch and 3 <= c < self.P:
            return c - 1
        return max(c, 1 if self.P == 1 else 2)

    def _log_epoch(self, st: EpochStats) -> None:
        self.log(f"epoch {st.epoch}: {st.edges} edges in {st.seconds:.1f} s "
                 f"({st.edges_per_s:,.0f} edges/s), loss {st.loss:.4f}, swaps {st.swaps} "
                 f"({st.bytes_read / 1e6:,.1f} MB read, {st.bytes_written / 1e6:,.1f} MB "
                 f"written)")

    # -- commits ----------------------------------------------------------------------------
    @traced("embed.checkpoint")
    def _commit(self, st: EpochStats, epochs_done: int,
                done: set[tuple[int, int]] | None = None) -> None:
        """Commit version ``committed + 1``: every rank writes its changed partitions, rank 0
        completes the version, writes ``checkpoint.json`` (with ``progress`` when ``done``,
        the buckets of epoch ``epochs_done + 1`` trained so far, is given) and deletes the
        older version."""
        t0 = time.perf_counter()
        buf = self.buffer
        self._check_finite()
        st.ranks[self.rank].checkpoint_bytes += buf.flush()
        self._share_figures(st)
        version = buf.committed + 1
        if self.rank == 0:
            st.ranks[0].checkpoint_bytes += (buf.commit_files(self.P)
                                             + self.relmodel.save(self.storage, version))
            self.storage.sync_dirs()
        st.total()
        if self.rank == 0:
            st.checkpoint_seconds += time.perf_counter() - t0
            meta = self._meta(version, epochs_done,
                              self.stats + ([st] if done is None else []))
            if done is not None:
                meta["progress"] = {"buckets_done": [list(b) for b in sorted(done)],
                                    "stats": st.to_json()}
            self.storage.write_meta(meta)
            self.storage.drop_versions(version, above=False, below=True)
        self._barrier()
        buf.committed = version

    def _diverged(self, what: str) -> GraphsysError:
        return diverged(self.out, self.buffer.committed, what)

    def _check_finite(self) -> None:
        """Raise :func:`diverged` if a resident embedding or a relation parameter holds a
        NaN or an infinity (checked before every commit, as evictions check what they
        write: a non-finite value is never committed)."""
        for p in sorted(self.buffer.resident):
            self.buffer.check_finite(p)
        for side, g, k in self.relmodel.keys():
            if not bool(torch.isfinite(self.relmodel.params[side][g][k]).all()):
                raise self._diverged(f"non-finite relation parameter {side}.g{g}.{k}")

    def _share_figures(self, st: EpochStats) -> None:
        """Make every rank's :class:`RankStats` of ``st`` current on this rank (one process:
        they are)."""

    def _barrier(self) -> None:
        """Wait for every rank (one process: nothing to wait for)."""


def train(config: EmbedConfig | dict | str | Path, *, graph: str | Path | Graph | None = None,
          edges: str | None = None, out: str | Path | None = None, progress: bool = False,
          log=None, distributed: bool = False):
    """Train embeddings and return them as :class:`~graphsys.embed.Embeddings`.

    ``config``: an :class:`EmbedConfig`, a plain dict, or a TOML/JSON path (or a
    PyTorch-BigGraph ``.py`` config: :func:`~graphsys.embed.config.load_config`). ``graph``,
    ``edges`` and ``out`` override the config's ``graph``, ``edges`` and ``checkpoint_path``.
    An existing checkpoint at ``out`` with the same settings is resumed. ``distributed``:
    run as one rank of the initialised ``torch.distributed`` group
    (:mod:`graphsys.embed.distributed`; ``out`` on a filesystem every rank shares).
    """
    from graphsys.embed.embeddings import Embeddings

    if isinstance(config, (str, Path)):
        cfg = load_config(config, graph=graph, log=log)
    elif isinstance(config, dict):
        cfg = config_from_dict(config)
    else:
        cfg = config
    g = graph if isinstance(graph, Graph) else None
    gpath = graph if graph is not None and g is None else cfg.graph
    if g is None:
        if gpath is None:
            raise ConfigError("graph: no graph given (config key graph or --graph)")
        g = open_graph(gpath)
    out = out if out is not None else cfg.checkpoint_path
    if out is None:
        raise ConfigError("checkpoint_path: no output given (config key checkpoint_path or "
                          "--out)")
    if edges is not None:
        cfg.edges = edges
    if distributed:
        from graphsys.embed.distributed import DistributedTrainer

        trainer: Trainer = DistributedTrainer(cfg, g, Path(out), progress=progress, log=log)
    else:
        trainer = Trainer(cfg, g, Path(out), progress=progress, log=log)
    trainer.run()
    return Embeddings.load(out, graph=g)
