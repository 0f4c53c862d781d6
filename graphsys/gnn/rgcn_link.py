"""R-GCN link prediction, the link task of :func:`graphsys.gnn.train` with
``TrainConfig(model="rgcn")``: an R-GCN encoder and a DistMult decoder (Schlichtkrull et al.
2018), trained on edge-sampled graph batches and ranked with the filtered protocol.

Training (the paper's, DGL's ``rgcn`` link example's): every step draws ``batch_size``
training triples uniformly; an ``rgcn.graph_split`` share of them (with their inverse
relations ``r + R``) is the graph the encoder runs on, every drawn triple is a positive,
and each positive gets ``num_negatives`` corruptions of its head or tail by a uniform node
of the batch graph. The loss is binary cross-entropy of the DistMult scores
:math:`f(s, r, o) = \\mathbf{e}_s^\\top \\operatorname{diag}(\\mathbf{R}_r) \\mathbf{e}_o`
plus ``rgcn.reg`` times the mean squares of the node encodings and relation vectors. An
epoch is as many steps as cover the training triples once.

Evaluation encodes every node over the whole training graph (both directions), then ranks
each triple's tail among all entities for ``(h, r, ?)`` and its head for ``(?, r, t)``,
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

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from graphsys import ranking
from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.checkpoint import (
    check_graph,
    load_checkpoint,
    load_module_state,
    train_config_of,
)
from graphsys.gnn.config import RGCN, TrainConfig
from graphsys.gnn.conv.rgcn import RGCNConv
from graphsys.gnn.fit import Evaluation, Task
from graphsys.gnn.hetero import TypedInput
from graphsys.sampling._util import derive_seed
from graphsys.sampling.hetero import TypedBlock
from graphsys.storage.graph import Graph, open_graph
from graphsys.storage.triples import KnownAnswers, triples

EVAL_BATCH = 256
#: How a triple is ranked: its tail among every entity, then its head, true triples left out
RANKED = ranking.protocol(both_sides=True)


class RGCNLinkModel(nn.Module):
    """R-GCN encoder (:class:`~graphsys.gnn.RGCNConv` layers over a learned embedding or
    per-type features, :class:`~graphsys.gnn.TypedInput`) and DistMult decoder.

    Parameters
    ----------
    num_nodes : mapping
        ``{entity type: count}`` in the graph's type order.
    num_relations : int
        Stored relations ``R``; the encoder also has their inverses (``2R`` relation ids).
    hidden : int
        Encoding width (:attr:`TrainConfig.hidden <graphsys.gnn.TrainConfig>`).
    num_layers, num_blocks, num_bases : int
        As :class:`~graphsys.gnn.RGCNSettings` (0 blocks or bases: a full weight per
        relation).
    dropout : float
        Dropout on the input and between layers.
    features : mapping, optional
        Per-type input features (:class:`~graphsys.gnn.TypedInput`).

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
                 dropout: float = 0.2, features=None):
        super().__init__()
        self.num_relations = int(num_relations)
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
                         "num_bases": int(num_bases or 0), "dropout": float(dropout)}

    def config(self) -> dict:
        """The constructor's arguments (without ``features``) and ``model: "rgcn"``, as a
        checkpoint stores them."""
        return {"model": RGCN, **self.settings}

    def encode(self, block: TypedBlock) -> torch.Tensor:
        """Encodings (block.num_dst_nodes, hidden) over one block used by every layer
        (every source node is a destination: a full-graph pass over the block's graph)."""
        h = F.dropout(self.input(block.src_nodes), self.dropout, self.training)
        for i, conv in enumerate(self.convs):
            h = conv(h, block)
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
    n = len(nodes)
    return TypedBlock(torch.from_numpy(nodes), n, torch.from_numpy(src),
                      torch.from_numpy(dst), None, torch.from_numpy(et))


def global_triples(graph: Graph, edge_set: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(h, r, t)`` int64 of an edge set in global node ids."""
    tr = triples(graph, edge_set)
    toff = graph.type_offsets
    lhs = np.array([toff[x.lhs] for x in graph.relation_types], np.int64)
    rhs = np.array([toff[x.rhs] for x in graph.relation_types], np.int64)
    return tr.h + lhs[tr.r], tr.r, tr.t + rhs[tr.r]


def rank_triples(z: torch.Tensor, rel: torch.Tensor, h: np.ndarray, r: np.ndarray,
                 t: np.ndarray, known: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                 candidates: np.ndarray | None = None) -> np.ndarray:
    """Filtered ranks of the tails of ``(h, r, ?)`` then the heads of ``(?, r, t)`` (float64
    (2n,)) under DistMult over encodings ``z`` and relation vectors ``rel``; ``known``:
    every true triple ``(h, r, t)`` (the filter). ``candidates``: global ids ranked
    (default all rows of ``z``); the true answer must be among them."""
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

    zc = z[on(cand)]
    out = []
    for anchor, answer, filt in ((h, t, filt_tail), (t, h, filt_head)):
        ranks = np.zeros(len(h))
        for start in range(0, len(h), EVAL_BATCH):
            sl = slice(start, start + EVAL_BATCH)
            a, ans, rr = anchor[sl], answer[sl], r[sl]
            q = z[on(a)] * rel[on(rr)]
            scores = q @ zc.T
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
        missing = [e for e in names if e not in graph.edge_sets]
        if missing:
            raise GraphsysError(f"{graph.path}: the rgcn link task trains on edge set "
                                f"{rs.train_edges!r}, selects on {rs.valid_edges!r} and tests "
                                f"on {rs.test_edges!r} (rgcn.train_edges, ...); this graph has "
                                f"{', '.join(graph.edge_sets)}")
        self.train, self.valid, self.test = (global_triples(graph, e) for e in names)
        self.known = [global_triples(graph, name) for name in graph.edge_sets]
        self.num_nodes = {t: graph.num_nodes(t) for t in graph.entity_types}
        self.num_relations = len(graph.relation_types)
        self.full = _graph_block(np.arange(sum(self.num_nodes.values()), dtype=np.int64),
                                 *self.train, self.num_relations)

    def ranks(self, model: RGCNLinkModel, z: torch.Tensor, which: tuple) -> np.ndarray:
        """Filtered ranks of the triples ``which``, tails then heads."""
        return rank_triples(z, model.rel.detach(), *which, self.known)


@torch.no_grad()
def encodings(model: RGCNLinkModel, data: RGCNData) -> torch.Tensor:
    """Every node's encoding (N, hidden) over the whole training graph, in eval mode."""
    model.eval()
    return model.encode(data.full)


class RGCNTask(Task):
    """The link task with ``model="rgcn"`` (see the module docstring; its records add the
    optimiser ``step``). The model trains and ranks on ``device``; batches are drawn on the
    CPU with the same seeds, so a run's batches do not depend on the device."""

    protocol = RANKED

    def __init__(self, graph: Graph, cfg: TrainConfig, device: torch.device):
        rs = cfg.rgcn
        self.cfg, self.device = cfg, device
        data = self.data = RGCNData(graph, cfg)
        data.full = data.full.to(device)
        self.model = RGCNLinkModel(data.num_nodes, data.num_relations, hidden=cfg.hidden,
                                   num_layers=rs.num_layers, num_blocks=rs.num_blocks,
                                   num_bases=rs.num_bases, dropout=cfg.dropout).to(device)
        self.modules = {"model.": self.model}
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr,
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

    def batches(self, epoch: int):
        """Each step's random generator (seeded by the run's step count)."""
        for _ in range(self.per_epoch):
            self.step += 1
            yield np.random.default_rng(derive_seed(self.cfg.seed, 2, self.step))

    def loss(self, rng: np.random.Generator, epoch: int, k: int) -> torch.Tensor:
        """The loss of ``self.k`` training triples drawn by ``rng`` (see the module
        docstring)."""
        model, cfg, tr, k, device = self.model, self.cfg, self.data.train, self.k, self.device
        pick = rng.choice(len(tr[0]), k, replace=False)
        h, r, t = tr[0][pick], tr[1][pick], tr[2][pick]
        nodes, inv = np.unique(np.concatenate([h, t]), return_inverse=True)
        hl, tl = inv[:k], inv[k:]
        g = max(1, int(round(cfg.rgcn.graph_split * k)))
        z = model.encode(_graph_block(nodes, hl[:g], r[:g], tl[:g], self.data.num_relations
                                      ).to(device))
        # corrupt the head or the tail of each positive with a uniform batch node
        neg = cfg.negatives_for(RGCN)
        ch, ct, cr = np.repeat(hl, neg), np.repeat(tl, neg), np.repeat(r, neg)
        rand = rng.integers(0, len(nodes), len(ch))
        head_side = rng.random(len(ch)) < 0.5
        ch, ct = np.where(head_side, rand, ch), np.where(head_side, ct, rand)
        s_idx = torch.from_numpy(np.concatenate([hl, ch])).to(device)
        o_idx = torch.from_numpy(np.concatenate([tl, ct])).to(device)
        r_idx = torch.from_numpy(np.concatenate([r, cr])).to(device)
        labels = torch.cat([torch.ones(k, device=device), torch.zeros(len(ch), device=device)])
        loss = F.binary_cross_entropy_with_logits(model.score(z[s_idx], r_idx, z[o_idx]),
                                                  labels)
        return loss + cfg.rgcn.reg * (z.pow(2).mean() + model.rel.pow(2).mean())

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
    graph = meta["graph"] if graph is None else graph
    graph = open_graph(graph) if isinstance(graph, (str, Path)) else graph
    nodes = {t: graph.num_nodes(t) for t in graph.entity_types}
    if nodes != config["num_nodes"] or len(graph.relation_types) != config["num_relations"]:
        raise ParameterError("graph", f"{graph.path} has entity types {nodes} and "
                                      f"{len(graph.relation_types)} relations; the checkpoint "
                                      f"was trained on {config['num_nodes']} and "
                                      f"{config['num_relations']}")
    check_graph(meta, graph, checkpoint)
    model = RGCNLinkModel(config["num_nodes"], config["num_relations"],
                          **{k: config[k] for k in ("hidden", "num_layers", "num_blocks",
                                                    "num_bases", "dropout")})
    load_module_state(model, state, "model.", checkpoint)
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
