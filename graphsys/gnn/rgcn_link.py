"""R-GCN link prediction, the link task of :func:`graphsys.gnn.train` with
``TrainConfig(model="rgcn")``: an R-GCN encoder and a DistMult decoder (Schlichtkrull et al.
2018), trained on edge-sampled graph batches and ranked with the filtered protocol.

Training (the paper's, DGL's ``rgcn`` link example's): every step draws ``batch_size``
training triples uniformly; an ``rgcn.graph_split`` share of them (with their inverse
relations ``r + R``) is the graph the encoder runs on (a message divided by its
destination's in-degree there, ``rgcn.norm="node"``, or by its in-degree along the
message's relation, ``"relation"``), every drawn triple is a positive,
and each positive gets ``num_negatives`` corruptions by uniform nodes of the batch graph,
half (rounded up) of its tail and the rest of its head (the references flip a coin per
corruption; an even split has the same expectation). The loss is binary cross-entropy of
the DistMult scores
:math:`f(s, r, o) = \\mathbf{e}_s^\\top \\operatorname{diag}(\\mathbf{R}_r) \\mathbf{e}_o`
plus ``rgcn.reg`` times the mean squares of the node encodings and relation vectors. An
epoch is as many steps as cover the training triples once.

Evaluation encodes every node over the whole training graph (both directions), then ranks
each triple's tail among all entities of the relation's tail type for ``(h, r, ?)`` and its
head among those of its head type for ``(?, r, t)`` (PBG's rule, as
:func:`graphsys.embed.evaluate`),
removing every other candidate that forms a true triple in any edge set of the graph
(*filtered*, protocol ``"full, filtered, both sides"``); ranks count ties half and a NaN
score worst (:mod:`graphsys.ranking`). Validation ranks a seeded sample of
``rgcn.eval_max`` triples and selects the model; the test edge set is ranked whole. A run
with ``out`` checkpoints the best model, which :func:`evaluate` ranks again and
:func:`~graphsys.gnn.embed_checkpoint` writes as node embeddings.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from graphsys import ranking
from graphsys.device import generator
from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.checkpoint import (
    build_to_fit,
    check_graph,
    load_checkpoint,
    meta_field,
    train_config_of,
)
from graphsys.gnn.config import RGCN, RGCN_NORMS, TrainConfig, check_choice
from graphsys.gnn.conv.rgcn import RGCNConv, degree_norm, relation_norm
from graphsys.gnn.fit import Evaluation, Task
from graphsys.gnn.hetero import TypedInput
from graphsys.gnn.optim import fused_adam
from graphsys.sampling._util import derive_seed
from graphsys.sampling.hetero import TypedBlock
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.triples import KnownAnswers, known_triples, triples

EVAL_BATCH = 256
#: How a triple is ranked: its tail among every entity, then its head, true triples left out
RANKED = ranking.protocol(both_sides=True)


class RGCNLinkModel(nn.Module):
    """R-GCN encoder (:class:`~graphsys.gnn.RGCNConv` layers over a learned embedding or
    per-type features, :class:`~graphsys.gnn.TypedInput`) and DistMult decoder.

    ``num_nodes``: ``{entity type: count}`` in the graph's type order; ``num_relations``:
    the stored relations ``R`` (the encoder also has their inverses, ``2R`` ids);
    ``num_layers``, ``num_blocks``, ``num_bases``, ``norm``: as
    :class:`~graphsys.gnn.RGCNSettings`; ``dropout`` on the input and between layers;
    ``features``: per-type input features (:class:`~graphsys.gnn.TypedInput`).

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn.rgcn_link import RGCNLinkModel
    >>> from graphsys.sampling import TypedBlock
    >>> m = RGCNLinkModel({"node": 4}, num_relations=2, hidden=8, num_layers=1, num_blocks=2)
    >>> b = TypedBlock(torch.arange(4), 4, torch.tensor([0, 1]), torch.tensor([1, 2]),
    ...                edge_type=torch.tensor([0, 3]))
    >>> z = m.encode(b)
    >>> m.score(z[[0]], torch.tensor([1]), z[[1]]).shape
    torch.Size([1])
    """

    def __init__(self, num_nodes, num_relations: int, *, hidden: int = 500,
                 num_layers: int = 2, num_blocks: int = 0, num_bases: int = 0,
                 dropout: float = 0.2, features=None, norm: str = "node"):
        super().__init__()
        check_choice("norm", norm, RGCN_NORMS)
        self.num_relations, self.norm = int(num_relations), norm
        self.input = TypedInput(num_nodes, hidden, features=features)
        self.convs = nn.ModuleList(
            RGCNConv(hidden, hidden, 2 * self.num_relations, num_blocks=num_blocks or None,
                     num_bases=num_bases or None) for _ in range(num_layers))
        self.rel = nn.Parameter(torch.empty(self.num_relations, hidden))
        nn.init.xavier_uniform_(self.rel, gain=nn.init.calculate_gain("relu"))
        self.dropout = dropout
        self.settings = {"num_nodes": {str(k): int(v) for k, v in dict(num_nodes).items()},
                         "num_relations": self.num_relations, "hidden": int(hidden),
                         "num_layers": int(num_layers), "num_blocks": int(num_blocks or 0),
                         "num_bases": int(num_bases or 0), "dropout": float(dropout),
                         "norm": norm}

    def config(self) -> dict:
        """The constructor's arguments (without ``features``) and ``model: "rgcn"``, as a
        checkpoint stores them."""
        return {"model": RGCN, **self.settings}

    def encode(self, block: TypedBlock, *, validate: bool = True) -> torch.Tensor:
        """Encodings (block.num_dst_nodes, hidden) over one block used by every layer
        (every source node is a destination: a full-graph pass over the block's graph).
        The normalisation (``norm``) is computed once for all layers; ``validate=False``
        skips the host read of the relation ids' range (:class:`~graphsys.gnn.RGCNConv`)."""
        h = F.dropout(self.input(block.src_nodes), self.dropout, self.training)
        et = getattr(block, "edge_type", None)
        norm = (None if et is None or et.shape != block.edge_dst.shape
                else degree_norm(block.edge_dst) if self.norm == "node"
                else relation_norm(block.edge_dst, et, 2 * self.num_relations))
        for i, conv in enumerate(self.convs):
            h = conv(h, block, edge_norm=norm, validate=validate and i == 0)
            if i < len(self.convs) - 1:
                h = F.dropout(F.relu(h), self.dropout, self.training)
        return h

    def score(self, zs: torch.Tensor, r: torch.Tensor, zo: torch.Tensor) -> torch.Tensor:
        """DistMult :math:`\\sum_k z_{s,k} R_{r,k} z_{o,k}`, (B,)."""
        return (zs * self.rel[r] * zo).sum(-1)


def _graph_block(nodes: np.ndarray, s: np.ndarray, r: np.ndarray, o: np.ndarray,
                 num_relations: int) -> TypedBlock:
    """The block of the graph ``s -r-> o`` in positions of ``nodes`` (all destinations),
    each edge also reversed as relation ``r + R``."""
    src = np.concatenate([s, o])
    dst = np.concatenate([o, s])
    et = np.concatenate([r, r + num_relations])
    return TypedBlock(torch.from_numpy(nodes), len(nodes), torch.from_numpy(src),
                      torch.from_numpy(dst), None, torch.from_numpy(et))


def relation_ranges(graph: Graph) -> np.ndarray:
    """int64 (R, 4): per relation the global ids ``[lo, hi)`` of its rhs (tail) entity type,
    then of its lhs (head) type."""
    toff = graph.type_offsets

    def span(t: str) -> list[int]:
        return [toff[t], toff[t] + graph.num_nodes(t)]

    return np.array([span(x.rhs) + span(x.lhs) for x in graph.relation_types],
                    np.int64).reshape(-1, 4)


def global_triples(graph: Graph, edge_set: str | None) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """``(h, r, t)`` int64 of an edge set in global node ids; None: every true triple of
    the graph (:func:`~graphsys.storage.triples.known_triples`)."""
    tr = known_triples(graph) if edge_set is None else triples(graph, edge_set)
    toff = graph.type_offsets
    lhs = np.array([toff[x.lhs] for x in graph.relation_types], np.int64)
    rhs = np.array([toff[x.rhs] for x in graph.relation_types], np.int64)
    return tr.h + lhs[tr.r], tr.r, tr.t + rhs[tr.r]


def rank_triples(z: torch.Tensor, rel: torch.Tensor, h: np.ndarray, r: np.ndarray,
                 t: np.ndarray, known: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                 candidates: np.ndarray | None = None, types: np.ndarray | None = None
                 ) -> np.ndarray:
    """Filtered ranks of the tails of ``(h, r, ?)`` then the heads of ``(?, r, t)`` (float64
    (2n,)) under DistMult over encodings ``z`` and relation vectors ``rel``; ``known``:
    every true triple ``(h, r, t)`` (the filter). ``candidates``: global ids ranked
    (default all rows of ``z``); the true answer must be among them. ``types``: int64
    (R, 4), each relation's global id ranges ``[lo, hi)`` of its tail type then of its head
    type (:func:`relation_ranges`): only nodes of the answer's entity type are its rivals,
    as :func:`graphsys.embed.evaluate` (PBG) ranks (default: every candidate)."""
    n_all = z.shape[0]
    cand = np.arange(n_all) if candidates is None else np.asarray(candidates, np.int64)
    pos_of = np.full(n_all, -1, np.int64)
    pos_of[cand] = np.arange(len(cand))
    kh = np.concatenate([k[0] for k in known])
    kr = np.concatenate([k[1] for k in known])
    kt = np.concatenate([k[2] for k in known])
    m = n_all + 1
    filt_tail = KnownAnswers(kr * m + kh, kt, m)
    filt_head = KnownAnswers(kr * m + kt, kh, m)
    dev = z.device

    def on(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a).to(dev)

    zc, zc_ids = z[on(cand)], on(cand)[None, :]
    out = []
    for side, (anchor, answer, filt) in enumerate(((h, t, filt_tail), (t, h, filt_head))):
        ranks = np.zeros(len(h))
        for start in range(0, len(h), EVAL_BATCH):
            sl = slice(start, start + EVAL_BATCH)
            a, ans, rr = anchor[sl], answer[sl], r[sl]
            scores = (z[on(a)] * rel[on(rr)]) @ zc.T
            ap = pos_of[ans]
            if (ap < 0).any():
                raise ParameterError("candidates", "a true answer is not among the candidates")
            ar = torch.arange(len(a), device=dev)
            pos = scores[ar, on(ap)]
            qr, other = filt.answers(rr * m + a)
            keep = (other != ans[qr]) & (pos_of[other] >= 0)
            valid = torch.ones(scores.shape, dtype=torch.bool, device=dev)
            valid[on(qr[keep]), on(pos_of[other[keep]])] = False
            valid[ar, on(ap)] = False           # the answer is not its rival
            if types is not None:               # nor a node of another entity type
                lo, hi = (on(types[rr, 2 * side + k])[:, None] for k in (0, 1))
                valid &= (zc_ids >= lo) & (zc_ids < hi)
            ranks[sl] = ranking.ranks(pos, scores, valid)
        out.append(ranks)
    return np.concatenate(out)


def _test_metrics(ranks: np.ndarray, ks) -> dict[str, float]:
    if not len(ranks):
        warnings.warn("mean_rank of no triples is NaN now (it was 0.0)", DeprecationWarning, 3)
    return ranking.rank_metrics(ranks, ks, mean=True)


class RGCNData:
    """The edge sets of an R-GCN run in global node ids: ``train``, ``valid``, ``test``
    (each ``(h, r, t)`` int64) and ``known`` (every edge set: the filter)."""

    def __init__(self, graph: Graph, cfg: TrainConfig):
        rs = cfg.rgcn
        names = (rs.train_edges, rs.valid_edges, rs.test_edges)
        if any(e not in graph.edge_sets for e in names):
            raise GraphsysError(f"{graph.path}: the rgcn link task trains on edge set "
                                f"{rs.train_edges!r}, selects on {rs.valid_edges!r} and tests "
                                f"on {rs.test_edges!r} (rgcn.train_edges, ...); this graph has "
                                f"{', '.join(graph.edge_sets)}")
        self.train, self.valid, self.test = (global_triples(graph, e) for e in names)
        self.known = [global_triples(graph, None)]
        self.num_nodes = {t: graph.num_nodes(t) for t in graph.entity_types}
        self.num_relations = len(graph.relation_types)
        self.types = relation_ranges(graph)
        self.full = _graph_block(np.arange(sum(self.num_nodes.values()), dtype=np.int64),
                                 *self.train, self.num_relations)

    def ranks(self, model: RGCNLinkModel, z: torch.Tensor, which: tuple) -> np.ndarray:
        """Filtered ranks of the triples ``which``, tails then heads."""
        return rank_triples(z, model.rel.detach(), *which, self.known, types=self.types)


@torch.no_grad()
def encodings(model: RGCNLinkModel, data: RGCNData) -> torch.Tensor:
    """Every node's encoding (N, hidden) over the whole training graph, in eval mode."""
    model.eval()
    return model.encode(data.full)


class EdgeBatch(NamedTuple):
    """One step's edge-sampled batch (:func:`edge_batch`), on the triples' device; node
    ids are positions in ``block.src_nodes``."""

    block: TypedBlock      # the batch graph
    h: torch.Tensor        # (k,) heads of the positives
    r: torch.Tensor        # (k,) their relations
    t: torch.Tensor        # (k,) their tails
    rand: torch.Tensor     # (k, negatives) corrupting nodes: ceil(neg / 2) tails, then heads
    count: torch.Tensor    # 0-d int64: nodes of the batch (the first rows of the block)
    real: torch.Tensor     # (len(block.src_nodes),) bool: a node of the batch, not padding


def edge_batch(train: torch.Tensor, num_nodes: int, k: int, graph_split: float,
               num_negatives: int, num_relations: int, gen: torch.Generator, *,
               trim: bool = True) -> EdgeBatch:
    """The paper's edge sampling, in torch operators on ``train``'s device with no host
    synchronisation: ``k`` distinct training triples ``train`` (3, n) drawn uniformly by
    ``gen``; the first ``graph_split`` share of them, each also reversed as relation
    ``r + num_relations``, is the graph; every drawn triple is a positive with
    ``num_negatives`` corruptions by uniform nodes of the batch, the first half (rounded
    up) of its tail, the rest of its head. The batch's nodes are numbered in increasing
    global id by a prefix sum over a node mask (no ``unique``, whose output size a GPU
    reads on the host). With ``trim`` the block holds exactly those nodes (their count
    read on the host); without, it holds ``min(num_nodes, 2k)`` rows, the batch's nodes
    first and then other nodes, isolated (``real`` marks the batch's), so that every
    shape is known beforehand.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn.rgcn_link import edge_batch
    >>> train = torch.tensor([[0, 5, 7], [0, 1, 0], [5, 7, 9]])
    >>> gen = torch.Generator().manual_seed(0)
    >>> b = edge_batch(train, 10, 3, 0.5, 2, 2, gen)
    >>> b.block.src_nodes.tolist(), int(b.count), tuple(b.rand.shape)
    ([0, 5, 7, 9], 4, (3, 2))
    """
    dev, gdev = train.device, gen.device
    pick = torch.randperm(train.shape[1], generator=gen, device=gdev)[:k].to(dev)
    h, r, t = train[:, pick].unbind(0)
    mark = torch.zeros(num_nodes, dtype=torch.bool, device=dev)
    mark.index_fill_(0, torch.cat([h, t]), True)
    ids = torch.cumsum(mark, 0)
    count = ids[-1]
    every = torch.arange(num_nodes, device=dev)
    # marked nodes first in id order, then the others in id order
    pos = torch.where(mark, ids - 1, count + every - ids)
    m = int(count) if trim else min(num_nodes, 2 * k)
    nodes = torch.empty_like(pos).scatter_(0, pos, every)[:m]
    hl, tl = pos[h], pos[t]
    g = max(1, int(round(graph_split * k)))
    block = TypedBlock(nodes, m, torch.cat([hl[:g], tl[:g]]), torch.cat([tl[:g], hl[:g]]),
                       None, torch.cat([r[:g], r[:g] + num_relations]))
    u = torch.rand(k, num_negatives, generator=gen, device=gdev).to(dev)
    rand = torch.minimum((u * count).long(), count - 1)
    return EdgeBatch(block, hl, r, tl, rand, count, every[:m] < count)


def batch_scores(model: RGCNLinkModel, z: torch.Tensor, b: EdgeBatch) -> torch.Tensor:
    """DistMult scores of ``b``'s positives (k,) then of their corruptions (k * neg,) in
    ``b.rand``'s order, over encodings ``z``: each positive's query vectors
    :math:`\\mathbf{z}_h \\circ \\mathbf{R}_r` and :math:`\\mathbf{R}_r \\circ
    \\mathbf{z}_t` are made once and multiplied with its corrupting nodes' encodings in
    one batched matrix-vector product, not a gathered (k * neg, hidden) copy of each
    side."""
    k, neg = b.rand.shape
    tails = neg - neg // 2
    rel = model.rel[b.r]
    zh, zt = z[b.h], z[b.t]
    qh, qt = zh * rel, zt * rel
    d = z.shape[1]
    z_tail = z[b.rand[:, :tails].reshape(-1)].view(k, tails, d)
    z_head = z[b.rand[:, tails:].reshape(-1)].view(k, neg - tails, d)
    return torch.cat([(qh * zt).sum(-1),
                      torch.cat([torch.bmm(z_tail, qh.unsqueeze(2)),
                                 torch.bmm(z_head, qt.unsqueeze(2))], 1).reshape(-1)])


class RGCNTask(Task):
    """The link task with ``model="rgcn"`` (see the module docstring; its records add the
    optimiser ``step``). The model trains and ranks on ``device``, where the training
    triples are uploaded once and each step's batch is drawn (:func:`edge_batch`, by a
    generator of that device seeded by the step: a run's batches are the same on every
    run on one device kind, not across the CPU and a GPU, whose generators differ)."""

    protocol = RANKED

    def __init__(self, graph: Graph, cfg: TrainConfig, device: torch.device):
        rs = cfg.rgcn
        self.cfg, self.device = cfg, device
        data = self.data = RGCNData(graph, cfg)
        data.full = data.full.to(device)
        self.model = RGCNLinkModel(data.num_nodes, data.num_relations, hidden=cfg.hidden,
                                   num_layers=rs.num_layers, num_blocks=rs.num_blocks,
                                   num_bases=rs.num_bases, dropout=cfg.dropout,
                                   norm=rs.norm).to(device)
        self.modules = {"model.": self.model}
        self.opt = fused_adam(self.model.parameters(), lr=cfg.lr,
                              weight_decay=cfg.weight_decay)
        self.clip, self.max_seconds = rs.grad_norm, rs.max_seconds
        n_train = len(data.train[0])
        if n_train == 0:
            raise GraphsysError(f"{graph.path}: edge set {rs.train_edges!r} is empty")
        self.k = min(cfg.batch_size, n_train)
        self.per_epoch = max(1, -(-n_train // cfg.batch_size))
        n_val = len(data.valid[0])
        gen = np.random.default_rng(derive_seed(cfg.seed, 1))
        sel = (np.sort(gen.choice(n_val, rs.eval_max, replace=False))
               if rs.eval_max and rs.eval_max < n_val else np.arange(n_val))
        self.val = tuple(x[sel] for x in data.valid)
        self.meta = {"task": "link", "model": RGCN, "entity_types": list(data.num_nodes)}
        self.step = 0
        # the training triples, uploaded once; a step draws its batch from them on the device
        self.train_triples = torch.from_numpy(np.stack(data.train)).to(device)
        self.num_nodes = sum(data.num_nodes.values())
        #: trim a batch to its own nodes by reading their count on the host: free on the
        #: CPU; on a GPU the batch is padded to a size known beforehand instead (no sync)
        self.trim_nodes = device.type == "cpu"
        neg = cfg.negatives_for(RGCN)
        self.labels = torch.cat([torch.ones(self.k, device=device),
                                 torch.zeros(self.k * neg, device=device)])

    def batches(self, epoch: int):
        """Each step's random generator on the task's device (seeded by the run's step
        count, so a resumed run draws the same batches as an uninterrupted one)."""
        for _ in range(self.per_epoch):
            self.step += 1
            yield generator(self.device, derive_seed(self.cfg.seed, 2, self.step))

    def loss(self, gen: torch.Generator, epoch: int, k: int) -> torch.Tensor:
        """The loss of ``self.k`` training triples drawn by ``gen`` (see the module
        docstring), every tensor made on the task's device (:func:`edge_batch`)."""
        model, cfg = self.model, self.cfg
        b = edge_batch(self.train_triples, self.num_nodes, self.k, cfg.rgcn.graph_split,
                       cfg.negatives_for(RGCN), self.data.num_relations, gen,
                       trim=self.trim_nodes)
        z = model.encode(b.block, validate=False)
        loss = F.binary_cross_entropy_with_logits(batch_scores(model, z, b), self.labels)
        # the squared encodings of the batch's nodes only (not the padding rows)
        z2 = (z.pow(2).sum(1) * b.real).sum() / (b.count * z.shape[1])
        return loss + cfg.rgcn.reg * (z2 + model.rel.pow(2).mean())

    def evaluate(self, epoch: int) -> Evaluation:
        m = ranking.rank_metrics(self.data.ranks(self.model, encodings(self.model, self.data),
                                                 self.val), self.cfg.metrics_k)
        return Evaluation({"step": self.step,
                           **{f"val_{key}": v for key, v in m.items()},
                           "protocol": RANKED}, m["mrr"])

    def state(self) -> dict:
        return {"step": self.step}

    def restore(self, state: dict) -> None:
        self.step = int(state.get("step", 0))

    def finish(self, best: float | None, clock) -> tuple[dict[str, float], dict]:
        z = encodings(self.model, self.data)
        metrics = _test_metrics(self.data.ranks(self.model, z, self.data.test), self.cfg.metrics_k)
        metrics["count"] = len(self.data.test[0])
        metrics["val_mrr"] = best if best is not None else float("nan")
        return metrics, {"embeddings": z.cpu(), "steps": self.step,
                         "train_seconds": round(clock.train_here, 3)}


def load_rgcn(checkpoint: str | Path, graph: Graph | str | Path | None = None
              ) -> tuple[RGCNLinkModel, Graph, TrainConfig]:
    """The model of an R-GCN checkpoint (``gnn train --model rgcn --out RUN`` writes
    ``RUN/checkpoint``), the graph (default: the one it was trained on) and its training
    config; a checkpoint of another model, or a graph whose entity types, counts, node ids
    (per partition, :func:`~graphsys.gnn.checkpoint.check_graph`) or relations differ from
    the checkpoint's, is refused in one line."""
    state, config, meta = load_checkpoint(checkpoint)
    if config.get("model") != RGCN:
        raise ParameterError("checkpoint", f"{checkpoint} holds a {config.get('model')!r} "
                                           f"model, not an R-GCN one")
    graph = meta_field(meta, "graph", checkpoint) if graph is None else graph
    graph = open_graph(graph) if isinstance(graph, (str, Path)) else graph
    nodes = {t: graph.num_nodes(t) for t in graph.entity_types}
    if nodes != config["num_nodes"] or len(graph.relation_types) != config["num_relations"]:
        raise ParameterError("graph", f"{graph.path} has entity types {nodes} and "
                                      f"{len(graph.relation_types)} relations; the checkpoint "
                                      f"was trained on {config['num_nodes']} and "
                                      f"{config['num_relations']}")
    check_graph(meta, graph, checkpoint)
    # checkpoints written before rgcn.norm existed normalised per relation
    model = build_to_fit(lambda: RGCNLinkModel(
        config["num_nodes"], config["num_relations"],
        **{k: config[k] for k in ("hidden", "num_layers", "num_blocks", "num_bases",
                                  "dropout")},
        norm=config.get("norm", "relation")), state, "model.", checkpoint)
    return model.eval(), graph, train_config_of(meta, checkpoint)


def evaluate(checkpoint: str | Path, *, graph: Graph | str | Path | None = None,
             edge_set: str | None = None, ks=None) -> dict:
    """Filtered link-prediction metrics of an R-GCN checkpoint on an edge set.

    Encodes every node over the checkpoint's training edge set and ranks each triple of
    ``edge_set`` both sides among every entity, true triples of every edge set left out
    (protocol ``"full, filtered, both sides"``, see the module docstring): what
    :func:`graphsys.gnn.train` reported for its test edge set.

    Parameters
    ----------
    checkpoint : str or Path
        An R-GCN checkpoint directory (``RUN/checkpoint`` of a run with ``out=RUN``).
    graph : Graph, str or Path, optional
        The graph (default: the one the checkpoint was trained on).
    edge_set : str, optional
        The triples to rank (default: the run's ``rgcn.test_edges``).
    ks : iterable of int, optional
        The ``k`` of ``hits@k`` (default: the run's ``metrics_k``).

    Returns
    -------
    dict
        ``mrr``, ``hits@k``, ``mean_rank``, ``count`` (triples), ``protocol`` and
        ``edge_set``.

    Raises
    ------
    ParameterError
        Not an R-GCN checkpoint, a graph unlike the checkpoint's, an unknown edge set.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    >>> from graphsys.gnn import TrainConfig, train
    >>> from graphsys.gnn.rgcn_link import evaluate
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rows = [(h, h % 3, (h * 7 + h % 3) % 40) for h in range(40)]
    >>> for name, part in [("train", rows[:30]), ("valid", rows[30:35]), ("test", rows[35:])]:
    ...     _ = (d / f"{name}.tsv").write_text("".join(f"e{h}\\tr{r}\\te{t}\\n"
    ...                                                  for h, r, t in part))
    >>> _ = ingest_sources([EdgeSource([d / f"{n}.tsv"], edge_set=n, src_col=0, rel_col=1,
    ...                                dst_col=2) for n in ("train", "valid", "test")],
    ...                    d / "g", IngestOptions())
    >>> cfg = TrainConfig(task="link", model="rgcn", hidden=10, epochs=2, batch_size=20)
    >>> res = train(d / "g", cfg, out=d / "run")
    >>> again = evaluate(d / "run" / "checkpoint")
    >>> again["protocol"], again["count"], again["mrr"] == res.metrics["mrr"]
    ('full, filtered, both sides', 5, True)
    """
    model, graph, cfg = load_rgcn(checkpoint, graph)
    name = edge_set if edge_set is not None else cfg.rgcn.test_edges
    if name not in graph.edge_sets:
        raise ParameterError("edge_set", f"{graph.path} has no edge set {name!r} (it has "
                                         f"{', '.join(graph.edge_sets)})")
    data = RGCNData(graph, cfg)
    which = global_triples(graph, name)
    m = _test_metrics(data.ranks(model, encodings(model, data), which),
                      cfg.metrics_k if ks is None else sorted({int(k) for k in ks}))
    return {**m, "count": len(which[0]), "protocol": RANKED, "edge_set": name}
