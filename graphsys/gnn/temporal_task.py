"""Temporal link prediction, ``task="temporal-link"`` of :func:`graphsys.gnn.train`: TGN
(``model="tgn"``, :mod:`graphsys.gnn.temporal`), TGAT (``model="tgat"``,
:mod:`graphsys.gnn.tgat`) or JODIE (``model="jodie"``, :mod:`graphsys.gnn.jodie`) on the
timestamped edges of a one-type graph (the guide: docs/growing.md, "A temporal model").

Every stored edge of the default edge set is an event ``(src, dst, t)`` (of an undirected
edge set, the copy with ``src <= dst``), ordered by ``(timestamp, edge id)``, with the
features :func:`feature_columns` picks, each divided by its largest magnitude over the
training events (``feature_scales`` in the checkpoint's meta); the split is chronological
(:mod:`graphsys.gnn.time_split`). Each epoch walks the training events in time order from an
empty memory, with ``num_negatives`` uniform negative destinations per event and binary
cross-entropy; neighbours come from strictly before each batch's first event. Evaluation
streams the validation then the test events (score a batch, then take its true events into
the memory) under ``eval_protocol`` (:mod:`graphsys.gnn.temporal_eval` for ``"tgb"``). The
model of the best validation MRR is kept; its checkpoint holds the memory after the whole
stream and, as :data:`TRAIN_END` tensors, as validation began (TGN, JODIE).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch.nn import functional as F

from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.config import JODIE as MODEL_JODIE
from graphsys.gnn.config import TGAT as MODEL_TGAT
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.conv.temporal_attention import slots
from graphsys.gnn.fit import Evaluation, Task
from graphsys.gnn.jodie import JODIE, time_shift_scale
from graphsys.gnn.loader import NodeLoader, pair_seeds
from graphsys.gnn.optim import fused_adam
from graphsys.gnn.temporal import TGN
from graphsys.gnn.temporal_eval import (
    NEGATIVES,
    held_out_metrics,
    new_node_events,
    tgb_negatives,
    tgb_protocol,
)
from graphsys.gnn.tgat import TGAT
from graphsys.gnn.time_split import chronological_split
from graphsys.ranking import protocol
from graphsys.sampling._util import derive_seed
from graphsys.sampling.base import SamplerInput
from graphsys.sampling.block import MiniBatch
from graphsys.sampling.temporal import TemporalNeighborSampler
from graphsys.storage.graph import Graph

#: The edge column the events' times come from.
TIME_COLUMN = "timestamp"
#: Attention heads of the TGN embedding (TGN's example).
HEADS = 2


class Events:
    """The events of a graph in time order: ``src``, ``dst`` (int64), ``time`` (the
    column's dtype), ``eid`` (int64 edge ids), ``raw`` float32 (E, r) features (the
    columns :func:`feature_columns` picks, each divided by ``scales`` (:meth:`scale`: by
    default its largest magnitude over all events; ``scale=False`` leaves that to the
    caller, after the split); ``columns`` names them), the ``graph`` they come from, and
    whether its edge set is ``undirected`` (each edge one event)."""

    def __init__(self, graph: Graph, edge_features: list[str] | None = None,
                 scale: bool = True):
        if len(graph.entity_types) != 1:
            raise GraphsysError(f"the temporal link task reads a graph of one entity type; "
                                f"{graph.path} has {', '.join(graph.entity_types)}")
        es = graph.edge_set(None)
        if TIME_COLUMN not in {c.name for c in es.columns}:
            raise GraphsysError(f"the temporal link task needs the edge column "
                                f"{TIME_COLUMN!r} ({graph.path}, edge set {es.name!r}; keep "
                                f"it at ingest as an edge column)")
        parts = [(s, d, w, t) for (s, d, _, w), t in zip(graph.iter_edges(es.name),
                                                         graph.edge_column(TIME_COLUMN,
                                                                           es.name))]
        src = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        dst = np.concatenate([p[1] for p in parts]) if parts else src
        t = np.concatenate([p[3] for p in parts]) if parts else src
        eid = np.arange(len(src), dtype=np.int64)
        if es.undirected:  # stored in both directions: one event per edge (TGL's reading)
            eid = eid[src <= dst]
        if len(eid) < 3:
            raise GraphsysError(f"the temporal link task needs at least 3 events, "
                                f"{graph.path} has {len(eid)}")
        eid = eid[np.lexsort((eid, t[eid]))]
        self.src, self.dst, self.time, self.eid = src[eid], dst[eid], t[eid], eid
        self.columns = feature_columns(graph, es, edge_features)
        if self.columns == [WEIGHT]:
            cols = [np.concatenate([p[2] for p in parts])]
        else:
            cols = [np.concatenate(list(graph.edge_column(c, es.name))) for c in self.columns]
        self._unscaled = np.zeros((len(src), len(cols)), np.float64)
        for j, (name, col) in enumerate(zip(self.columns, cols)):
            self._unscaled[:, j] = col
            if not np.isfinite(self._unscaled[:, j]).all():
                raise GraphsysError(f"edge column {name!r} of {graph.path} holds NaN or "
                                    f"infinity; an event's features must be finite")
        self.origin = self.time[0]
        self.graph, self.num_nodes, self.undirected = graph, graph.num_nodes(), es.undirected
        if scale:
            self.scale()

    def scale(self, train: np.ndarray | None = None, scales=None) -> None:
        """Sets ``raw`` and ``raw_by_eid``: each feature column divided by ``scales[j]``
        (a checkpoint's record), else by its largest magnitude over the events of mask
        ``train`` (positions in time order: the training events, so that no held-out
        event's value shapes the training inputs), else over all events (the rule of a
        checkpoint that recorded no scale); a column of zeros by 1. Once."""
        cols = self._unscaled
        if scales is None:
            scales = np.abs(cols if train is None else cols[self.eid[train]]).max(
                axis=0, initial=0.0)
            scales[scales == 0] = 1.0
        #: each column's divisor, for new events' features too
        self.scales = np.asarray(scales, np.float64)
        self.raw_by_eid = (cols / self.scales).astype(np.float32)
        self.raw = self.raw_by_eid[self.eid]
        del self._unscaled

    def seconds(self, t: np.ndarray) -> np.ndarray:
        """Times as float64 offsets from the first event (what the time encodings see),
        each rounded once: an integer offset is taken in two 32-bit halves, as stamps
        ``2**63`` apart overflowed the int64 difference (and wrapped to a negative gap)."""
        t = np.asarray(t)
        if t.dtype.kind not in "iu":
            return t.astype(np.float64) - float(self.origin)
        t, o = t.astype(np.int64), np.int64(self.origin)
        return ((t >> 32) - (o >> 32)).astype(np.float64) * 2.0**32 \
            + ((t & 0xFFFFFFFF) - (o & 0xFFFFFFFF))


#: :attr:`Events.columns` of the events whose feature is the edge weight.
WEIGHT = "(weight)"
#: The prefix of the edge columns that are an event's features by default (the JODIE
#: format's ``feature_0``...: :mod:`graphsys.storage.jodie`).
FEATURE_PREFIX = "feature_"


def feature_columns(graph: Graph, es, edge_features: list[str] | None) -> list[str]:
    """The edge columns of edge set ``es`` that are the events' features: ``edge_features``
    as given (each a numeric edge column other than the time, else refused in one line
    naming the ones there are), or for None every ``feature_*`` column in their numeric
    order, else ``[WEIGHT]`` when the edge set is weighted, else none."""
    have = [c.name for c in es.columns if c.name != TIME_COLUMN]
    if edge_features is None:
        picked = sorted((c for c in have if c.startswith(FEATURE_PREFIX)),
                        key=lambda c: (len(c), c))
        return picked or ([WEIGHT] if es.has_weight else [])
    for c in edge_features:
        if c not in have:
            raise ParameterError("edge_features", f"names {c!r}, not an edge column of "
                                                  f"{graph.path} (edge set {es.name!r} has "
                                                  f"{', '.join(have) or 'none but the time'})")
    if len(set(edge_features)) != len(edge_features):
        raise ParameterError("edge_features", f"names a column twice: {edge_features!r}")
    return list(edge_features)


def eval_candidates(num_events: int, num_nodes: int, negatives: int, seed: int, which: int
                    ) -> np.ndarray:
    """int64 (E, M + 1) candidate destinations of ``num_events`` held-out events: ``M =
    negatives`` uniform nodes (-1: every node, in id order; 0: none) for the ranking, and
    one more uniform node for AP / AUC; seeded by ``(seed, which)`` (1: validation, 2:
    test), so every model is ranked against the same candidates."""
    rng = np.random.default_rng(derive_seed(seed, 7919, which))
    cand = (rng.integers(0, num_nodes, (num_events, negatives)) if negatives >= 0
            else np.broadcast_to(np.arange(num_nodes), (num_events, num_nodes)))
    return np.concatenate([cand, rng.integers(0, num_nodes, (num_events, 1))], axis=1)


def held_out_candidates(num_events: int, num_nodes: int, which: int, cfg: TrainConfig,
                        negatives: np.ndarray | None = None, dst: np.ndarray | None = None):
    """The candidates of a held-out split's events in :func:`eval_candidates`' layout
    (ranked ones, then one uniform negative for AP / AUC): ``cfg``'s uniform ones, or TGB's
    ``negatives`` (H, M) beside the extra one; and which slots are empty (TGB's ``-1``,
    given node 0 there, to score and then mask: NaN scores in :func:`event_metrics`). With
    every node a candidate (``link_eval_negatives=-1``) each event's own destination
    ``dst`` is an empty slot: a true answer is ranked among the other nodes (it tied with
    itself, so a perfect model ranked 1.5)."""
    if negatives is None:
        cand = eval_candidates(num_events, num_nodes, cfg.link_eval_negatives, cfg.seed, which)
    else:
        extra = eval_candidates(num_events, num_nodes, 0, cfg.seed, which)
        cand = np.concatenate([negatives, extra], axis=1)
    empty = cand < 0
    if negatives is None and cfg.link_eval_negatives == -1 and dst is not None:
        empty[np.arange(num_events), dst] = True
    return np.where(empty, 0, cand), empty


def event_metrics(pos: np.ndarray, neg: np.ndarray, ks, *, inductive=None
                  ) -> dict[str, float]:
    """``mrr`` and ``hits@k`` of each event's score ``pos`` among its candidates'
    ``neg[:, :-1]`` (NaN: an empty slot), and ``ap`` / ``auc`` of ``pos`` against the one
    extra negative ``neg[:, -1]`` per event (:func:`eval_candidates`' layout), with the
    inductive figures of the events under ``inductive``
    (:func:`~graphsys.gnn.temporal_eval.held_out_metrics`)."""
    return held_out_metrics(pos, neg[:, :-1], neg[:, -1], ks, inductive=inductive)


def event_split(ev: Events, cfg: TrainConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chronological split of the events (train, valid, test masks; see the module
    docstring); a side left empty (fractions rounding to no event, say) is refused in one
    line naming it and the events' time range, before anything trains."""
    masks = chronological_split(ev.time, val_fraction=cfg.link_val_fraction,
                                test_fraction=cfg.link_test_fraction,
                                valid_from=cfg.valid_from, test_from=cfg.test_from)
    for side, mask, name in zip(("training", "validation", "test"), masks,
                                ("link_val_fraction", "link_val_fraction",
                                 "link_test_fraction")):
        if not mask.any():
            raise ParameterError(name, f"= {getattr(cfg, name)} leaves no {side} event (the "
                                       f"{len(ev.time):,} events run from {ev.time[0]} to "
                                       f"{ev.time[-1]})")
    return masks


#: The checkpoint's tensors of the memory as the validation events began (after the
#: training events), ``train_end.memory`` ...: what evaluating it again starts from.
TRAIN_END = "train_end."


class EventStream:
    """A temporal link model (TGN, TGAT or JODIE) over the events ``ev``: one batch of
    events scored and then, for the memory models, taken into the memory (:meth:`step`),
    the streaming evaluation of a split (:meth:`evaluate`), and the embeddings of nodes as
    of a time (:meth:`embed_at`)."""

    def __init__(self, model: TGN | TGAT | JODIE, ev: Events,
                 sampler: TemporalNeighborSampler, k: int, device):
        self.model, self.ev, self.sampler, self.k, self.device = model, ev, sampler, k, device
        self.raw_by_eid = torch.from_numpy(ev.raw_by_eid).to(device)
        self.memory = getattr(model, "memory", None)   # TGN's, JODIE's; TGAT has none
        self.jodie = isinstance(model, JODIE)          # no neighbours: memory in time

    def embed_at(self, query: np.ndarray, t0, blocks=None):
        """Embeddings (Q, d) of the sorted unique nodes ``query`` from their events
        strictly before the time ``t0`` (the column's type; ``blocks``: the sampler's
        blocks of ``query`` at ``t0``, sampled when None), and for TGN and JODIE ``(nodes,
        mem, last)``: the nodes read and their memory with pending messages applied (TGAT:
        None). JODIE's are the memory projected to ``t0``."""
        if blocks is None and not self.jodie:
            blocks = self.sampler.sample_blocks(SamplerInput(query, np.full(len(query), t0)))
        if self.memory is None:
            return self._embed_tgat(blocks), None
        if self.jodie:
            mem, last = self.model.memory.read(torch.from_numpy(query).to(self.device))
            t = torch.from_numpy(self.ev.seconds(np.asarray(t0).repeat(len(query))))
            return self.model.embed(mem, last, t.to(self.device)), (query, mem, last)
        model, device = self.model, self.device
        block = blocks[0]
        rows = block.src_nodes.numpy()
        nodes = np.unique(rows)
        mem, last = model.memory.read(torch.from_numpy(nodes).to(device))
        pos = torch.from_numpy(np.searchsorted(nodes, rows)).to(device)   # each row's node
        nbr, mask = slots(block, self.k, device)
        # each event's gap: its neighbour's last update minus the event's time (PyG's
        # TGN example's; whether the neighbour was active since)
        delta = last[pos[block.edge_src.to(device)]] - torch.from_numpy(
            self.ev.seconds(block.edge_times.numpy())).to(device)
        raw = self.raw_by_eid[block.edge_ids.to(device)]
        z = model.embed(F.embedding(pos[:len(query)], mem), mem, pos[nbr], raw, delta, mask)
        return z, (nodes, mem, last)

    def _embed_tgat(self, blocks) -> torch.Tensor:
        """TGAT's embeddings of the seeds of ``blocks``, every block of the sampler (each
        row's events before the time of the event that reached it), as :meth:`TGAT.embed
        <graphsys.gnn.tgat.TGAT.embed>` reads them."""
        b, device = blocks[0], self.device
        gap = torch.from_numpy(self.ev.seconds(b.src_times[b.edge_dst].numpy())
                               - self.ev.seconds(b.edge_times.numpy()))   # t - t_j
        k = max(self.sampler.fanouts)
        return self.model.embed([slots(x, k, device) for x in blocks], gap.to(device),
                                self.raw_by_eid[b.edge_ids.to(device)])

    def loader(self, idx: np.ndarray, batch_size: int, *, negatives, seed: int = 0,
               num_workers: int = 1) -> NodeLoader:
        """The events ``idx`` (time order) as a :class:`~graphsys.gnn.loader.NodeLoader`
        of timed links, in order, each batch's distinct nodes sampled as of its first
        event (JODIE: no sampler), with ``negatives`` destinations (a count, uniform, or
        fixed (len(idx), M) candidates): what :meth:`step` takes."""
        ev = self.ev
        return NodeLoader(ev.graph, None if self.jodie else self.sampler,
                          links=np.stack([ev.src[idx], ev.dst[idx]], 1), times=ev.time[idx],
                          batch_time=True, negatives=negatives, shuffle=False,
                          batch_size=batch_size, seed=seed, num_workers=num_workers,
                          features=None, labels=None, device_sampling=False)

    def step(self, idx: np.ndarray, cand: np.ndarray | None = None, *, grad: bool,
             batch: MiniBatch | None = None):
        """One batch of events ``idx`` (time order): scores of the true destinations and of
        ``cand`` (B, M) candidates (or those of their :meth:`loader` ``batch``); then the
        memory takes the batch's events."""
        pos, neg, read = self.score(idx, cand, grad=grad, batch=batch)
        self.absorb(idx, read)
        return pos, neg

    def score(self, idx: np.ndarray, cand: np.ndarray | None = None, *, grad: bool,
              batch: MiniBatch | None = None):
        """Scores of the events ``idx``' true destinations and of ``cand`` (B, M)
        candidates (or those of their :meth:`loader` ``batch``) from the neighbours
        strictly before the batch's first event (JODIE: each pair's memory projected to
        its event's time), and what :meth:`absorb` takes; the memory is not changed."""
        ev, model, device = self.ev, self.model, self.device
        if batch is None:
            seeds, _, extra = pair_seeds(ev.src[idx], ev.dst[idx], cand, ev.time[idx],
                                         ev.time[idx[0]])
            batch = MiniBatch(seeds, None, extra)
        query = batch.seeds.numpy()
        head, tail, neg = (batch.extra[k].to(device) for k in ("head", "pos", "neg"))
        with torch.set_grad_enabled(grad):
            if self.jodie:
                mem, last = model.memory.read(batch.seeds.to(device))
                t = torch.from_numpy(ev.seconds(ev.time[idx])).to(device)
                both = model.pairs(mem, last, t, head, torch.cat([tail[:, None], neg], 1))
                return both[:, 0], both[:, 1:], (query, mem, last)
            z, read = self.embed_at(query, ev.time[idx[0]], batch.blocks)
            return (*model.predictor.pairs_each(z, head, (tail, neg)), read)

    def absorb(self, idx: np.ndarray, read) -> None:
        """The memory takes the events ``idx``: their ends keep their updated memory (``read``
        of :meth:`score`) and the events become their pending messages (TGAT keeps no
        state: nothing to take)."""
        if self.memory is None:
            return
        ev, model, device = self.ev, self.model, self.device
        nodes, mem, last = read
        s, d = ev.src[idx], ev.dst[idx]
        ends = np.unique(np.concatenate([s, d]))
        epos = torch.from_numpy(np.searchsorted(nodes, ends)).to(device)
        model.memory.commit(torch.from_numpy(ends).to(device), mem[epos], last[epos])
        model.memory.store(torch.from_numpy(s).to(device), torch.from_numpy(d).to(device),
                           torch.from_numpy(ev.seconds(ev.time[idx])).to(device),
                           self.raw_by_eid[torch.from_numpy(ev.eid[idx]).to(device)])

    def evaluate(self, mask: np.ndarray, which: int, cfg: TrainConfig, *,
                 negatives: np.ndarray | None = None, train: np.ndarray | None = None
                 ) -> dict[str, float]:
        """Stream the events under ``mask`` (``which``: 1 validation, 2 test), batch by
        batch: score against the split's fixed candidates (``negatives``, TGB's, -1 an
        empty slot; default :func:`eval_candidates`), then update the memory; with the
        training events' mask ``train``, the new-node events' figures too."""
        idx_all = np.flatnonzero(mask)
        cand_all, empty = held_out_candidates(len(idx_all), self.ev.num_nodes, which, cfg,
                                              negatives, self.ev.dst[idx_all])
        pos_all, neg_all = [], []
        self.model.eval()
        with torch.no_grad():
            for batch in self.loader(idx_all, cfg.batch_size, negatives=cand_all,
                                     num_workers=cfg.num_workers):
                pos, neg = self.step(idx_all[batch.extra["link"].numpy()], grad=False, batch=batch)
                pos_all.append(pos.double().cpu().numpy())
                neg_all.append(neg.double().cpu().numpy())
        neg = np.concatenate(neg_all)
        neg[empty] = np.nan
        inductive = None if train is None else new_node_events(self.ev.src, self.ev.dst,
                                                               train, mask)
        return event_metrics(np.concatenate(pos_all), neg, cfg.metrics_k,
                             inductive=inductive)


def held_out_negatives(ev: Events, split, cfg: TrainConfig) -> dict[str, np.ndarray]:
    """TGB's fixed negatives (:func:`~graphsys.gnn.temporal_eval.tgb_negatives`) of the
    validation and the test events, ``{"valid": (V, M), "test": (T, M)}``, drawn from
    seeds derived from ``cfg.seed``; ``{}`` under the sampled protocol. Of an undirected
    edge set's events (each edge once, :class:`Events`) the history and the candidates
    read each event both ways: a node's training partners, and every end of an event."""
    if cfg.eval_protocol != "tgb":
        return {}
    src, dst, time, (train, *held) = ev.src, ev.dst, ev.time, split
    if ev.undirected:
        src, dst, time = np.r_[ev.src, ev.dst], np.r_[ev.dst, ev.src], np.r_[time, time]
        train, held = np.r_[train, train], [np.r_[m, np.zeros_like(m)] for m in held]
    return {name: tgb_negatives(src, dst, time, train, mask, cfg.link_eval_negatives,
                                derive_seed(cfg.seed, 104729, which))
            for name, which, mask in (("valid", 1, held[0]), ("test", 2, held[1]))}


def stream_held_out(stream: EventStream, split, cfg: TrainConfig,
                    negatives: dict[str, np.ndarray]):
    """The validation and then the test events streamed through ``stream`` from its
    memory (:meth:`EventStream.evaluate`, against ``negatives`` under TGB's protocol):
    ``(valid metrics, test metrics)``, each with its new-node figures."""
    train, val_m, test_m = split
    val = stream.evaluate(val_m, 1, cfg, negatives=negatives.get("valid"), train=train)
    test = stream.evaluate(test_m, 2, cfg, negatives=negatives.get("test"), train=train)
    return val, test


def protocol_name(cfg: TrainConfig) -> str:
    """The ranking protocol of ``cfg``'s held-out metrics."""
    if cfg.eval_protocol == "tgb":
        return tgb_protocol(cfg.link_eval_negatives)
    return protocol(cfg.link_eval_negatives if cfg.link_eval_negatives > 0 else None,
                    filtered=False)


def build_model(cfg: TrainConfig, ev: Events, train: np.ndarray, layers: int
                ) -> TGN | TGAT | JODIE:
    """``cfg.model``'s model for the events ``ev``: TGAT of ``layers`` layers, JODIE with
    the gaps' scale of the training events (mask ``train``; :func:`~graphsys.gnn.jodie.
    time_shift_scale`), or TGN."""
    n, raw_dim = ev.num_nodes, ev.raw.shape[1]
    if cfg.model == MODEL_TGAT:
        return TGAT(n, cfg.hidden, raw_dim, num_layers=layers, heads=HEADS,
                    dropout=cfg.dropout)
    if cfg.model == MODEL_JODIE:
        shift = time_shift_scale(ev.src[train], ev.dst[train], ev.seconds(ev.time[train]))
        return JODIE(n, cfg.hidden, raw_dim, time_shift=shift)
    return TGN(n, cfg.hidden, raw_dim, heads=HEADS, dropout=cfg.dropout)


def temporal_fanouts(cfg: TrainConfig) -> list[int]:
    """The temporal sampler's fanouts, one per layer of the model (default one layer of
    10 most recent or sampled neighbours)."""
    return list(cfg.fanouts or [10])


class TemporalTask(Task):
    """TGN, TGAT or JODIE for temporal link prediction (see the module docstring), for
    :func:`~graphsys.gnn.fit.fit`."""

    extras = (TRAIN_END, NEGATIVES)

    def __init__(self, graph: Graph, cfg: TrainConfig, device: torch.device,
                 scales: list[float] | str | None = None):
        """``scales``: the features' divisors (a checkpoint's ``feature_scales``), or
        ``"all"`` for the largest magnitudes over all events (a checkpoint that recorded
        none), or None for those over the training events (a new run)."""
        self.cfg = cfg
        ev = self.ev = Events(graph, cfg.edge_features, scale=False)
        self.split = event_split(ev, cfg)
        ev.scale(None if scales == "all" else self.split[0],
                 None if scales in (None, "all") else scales)
        fanouts = temporal_fanouts(cfg)
        k = fanouts[0]
        self.sampler = TemporalNeighborSampler(graph, fanouts, strategy=cfg.temporal_strategy)
        self.model = build_model(cfg, ev, self.split[0], len(fanouts)).to(device)
        self.modules = {"": self.model}
        # fused: one kernel per step over all parameters (TGN's are small, and a
        # per-tensor step was a tenth of a training batch on the CPU)
        self.opt = fused_adam(self.model.parameters(), lr=cfg.lr,
                              weight_decay=cfg.weight_decay)
        self.protocol = protocol_name(cfg)
        self.train_idx = np.flatnonzero(self.split[0])
        self.stream = EventStream(self.model, ev, self.sampler, k, device)
        self.loader = self.stream.loader(self.train_idx, cfg.batch_size,
                                         negatives=cfg.num_negatives or 1, seed=cfg.seed,
                                         num_workers=cfg.num_workers)
        self.per_epoch = len(self.loader)
        self.meta = {"task": "temporal-link", "num_nodes": ev.num_nodes,
                     "entity_type": graph.entity_types[0], "edge_features": ev.columns,
                     "feature_scales": ev.scales.tolist(),
                     "events": {name: int(m.sum()) for name, m in
                                zip(("train", "valid", "test"), self.split)},
                     "memory_at_train_end": TRAIN_END}
        self.train_end: dict[str, torch.Tensor] = {}   # the memory as validation began
        self.best_test: dict[str, float] = {}          # the kept model's test metrics
        self.negatives: dict[str, np.ndarray] | None = None    # TGB's, drawn once

    def batches(self, epoch: int):
        """The training events in time order (:meth:`EventStream.loader`), ``batch_size``
        at a time, each with its uniform negative destinations; the memory starts empty."""
        if self.stream.memory is not None:
            self.stream.memory.reset()
        self.loader.set_epoch(epoch)
        e0 = time.perf_counter()
        yield from self.loader
        self.epoch_seconds = time.perf_counter() - e0

    def loss(self, batch, epoch: int, k: int) -> torch.Tensor:
        pos, neg = self.stream.step(self.train_idx[batch.extra["link"].numpy()], grad=True,
                                    batch=batch)
        return (F.binary_cross_entropy_with_logits(pos, torch.ones_like(pos))
                + F.binary_cross_entropy_with_logits(neg, torch.zeros_like(neg)))

    def evaluate(self, epoch: int) -> Evaluation:
        """The validation and then the test events streamed on from the training events'
        memory (kept as :data:`TRAIN_END` for the checkpoint)."""
        memory = self.stream.memory          # TGN's, JODIE's (TGAT has no state to keep)
        self.train_end = {} if memory is None else {
            TRAIN_END + name: buf.detach().clone() for name, buf in memory.named_buffers()}
        if self.negatives is None:
            self.negatives = held_out_negatives(self.ev, self.split, self.cfg)
        val, self.test = stream_held_out(self.stream, self.split, self.cfg, self.negatives)
        return Evaluation({**{f"val_{key}": v for key, v in val.items()},
                           "protocol": self.protocol,
                           "epoch_seconds": round(self.epoch_seconds, 3)}, val["mrr"])

    def kept(self) -> None:
        self.best_test = dict(self.test)

    def tensors(self) -> dict[str, torch.Tensor]:
        # the narrowest integer that holds every node id and -1
        dtype = next(d for d in (np.int16, np.int32, np.int64)
                     if self.ev.num_nodes <= np.iinfo(d).max)
        return {**self.train_end,
                **{NEGATIVES + name: torch.from_numpy(a.astype(dtype))
                   for name, a in (self.negatives or {}).items()}}

    def state(self) -> dict:
        return {"best_test": self.best_test}

    def restore(self, state: dict) -> None:
        self.best_test = {str(k): float(v) for k, v in state.get("best_test", {}).items()}

    def finish(self, best: float | None, clock) -> tuple[dict[str, float], dict]:
        metrics = {**self.best_test, "val_mrr": best if best is not None else float("nan")}
        return metrics, {"sampler": self.sampler, "events": self.ev,
                         "split": dict(zip(("train", "valid", "test"), self.split))}
