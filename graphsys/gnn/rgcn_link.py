"""R-GCN link prediction: an R-GCN encoder and a DistMult decoder (Schlichtkrull et al.
2018), trained on edge-sampled graph batches and ranked with the filtered protocol.

Training (the paper's, DGL's ``rgcn`` link example's): every step draws ``batch_edges``
training triples uniformly; a ``graph_split`` fraction of them (with their inverse
relations ``r + R``) is the graph the encoder runs on, every drawn triple is a positive,
and each positive gets ``num_negatives`` corruptions of its head or tail by a uniform node
of the batch graph. The loss is binary cross-entropy of the DistMult scores
:math:`f(s, r, o) = \\mathbf{e}_s^\\top \\operatorname{diag}(\\mathbf{R}_r) \\mathbf{e}_o`
plus ``reg`` times the mean squares of the node encodings and relation vectors.

Evaluation encodes every node over the whole training graph (both directions), then ranks
each test triple's tail among all entities for ``(h, r, ?)`` and its head for ``(?, r, t)``,
removing every other candidate that forms a true triple in any edge set of the graph
(*filtered*); ranks count ties half, as :mod:`graphsys.embed.evaluation`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from graphsys.embed.evaluation import _ranks, metrics
from graphsys.embed.triples import KnownAnswers, triples
from graphsys.errors import ParameterError
from graphsys.gnn.conv.rgcn import RGCNConv
from graphsys.gnn.hetero import TypedInput
from graphsys.sampling._util import derive_seed
from graphsys.sampling.hetero import TypedBlock
from graphsys.storage.graph import Graph, open_graph

EVAL_BATCH = 256


@dataclass
class RGCNLinkConfig:
    """Hyperparameters of :func:`train_rgcn_link` (defaults: the paper's FB15k-237 setup
    where it states one, DGL's example otherwise).

    Attributes:
        hidden: encoding width (paper: 500).
        num_layers: R-GCN layers (paper: 2 on FB15k-237).
        num_blocks: block-diagonal decomposition blocks (paper: 5 x 5 blocks, i.e.
            ``hidden // 5``); 0 for none.
        num_bases: basis decomposition bases (0: none); at most one of the two.
        dropout: dropout on the input and between layers.
        lr: Adam learning rate.
        reg: weight of the squared-norm regulariser of encodings and relation vectors.
        grad_norm: gradient clipping (max L2 norm).
        batch_edges: training triples drawn per step (paper: 30,000).
        graph_split: fraction of them that forms the encoder's graph.
        num_negatives: corruptions per positive.
        steps: optimisation steps.
        eval_every: steps between validation evaluations (0: only at the end).
        eval_max: validation triples ranked per evaluation (0: all).
        seed: every random choice (init, batches, negatives).
        train_edges / valid_edges / test_edges: edge set names.
    """

    hidden: int = 500
    num_layers: int = 2
    num_blocks: int = 100
    num_bases: int = 0
    dropout: float = 0.2
    lr: float = 0.01
    reg: float = 0.01
    grad_norm: float = 1.0
    batch_edges: int = 30000
    graph_split: float = 0.5
    num_negatives: int = 10
    steps: int = 6000
    eval_every: int = 500
    eval_max: int = 2000
    seed: int = 0
    train_edges: str = "train"
    valid_edges: str = "valid"
    test_edges: str = "test"

    def __post_init__(self):
        pos = ("hidden", "num_layers", "batch_edges", "num_negatives", "steps")
        for name in pos:
            if int(getattr(self, name)) < 1:
                raise ParameterError(name, f"must be a positive integer, got "
                                     f"{getattr(self, name)!r}")
        for name in ("num_blocks", "num_bases", "eval_every", "eval_max"):
            if int(getattr(self, name)) < 0:
                raise ParameterError(name, f"must be >= 0, got {getattr(self, name)!r}")
        if self.num_blocks and self.num_bases:
            raise ParameterError("num_bases", "give num_blocks or num_bases, not both")
        if self.num_blocks and self.hidden % self.num_blocks:
            raise ParameterError("num_blocks", f"{self.num_blocks} blocks must divide hidden "
                                 f"{self.hidden}")
        if not 0.0 < self.graph_split <= 1.0:
            raise ParameterError("graph_split", f"must be in (0, 1], got {self.graph_split}")
        if not 0.0 <= self.dropout < 1.0:
            raise ParameterError("dropout", f"must be in [0, 1), got {self.dropout}")

    @classmethod
    def from_dict(cls, values: dict) -> RGCNLinkConfig:
        """From a mapping (a TOML table); unknown keys are refused in one line."""
        known = {f.name for f in fields(cls)}
        bad = sorted(set(values) - known)
        if bad:
            raise ParameterError(bad[0], f"unknown R-GCN link setting {bad[0]!r} (known: "
                                 f"{', '.join(sorted(known))})")
        return cls(**values)


class RGCNLinkModel(nn.Module):
    """R-GCN encoder (:class:`~graphsys.gnn.RGCNConv` layers over a learned embedding or
    per-type features, :class:`~graphsys.gnn.TypedInput`) and DistMult decoder.

    Parameters
    ----------
    num_nodes : mapping
        ``{entity type: count}`` in the graph's type order.
    num_relations : int
        Stored relations ``R``; the encoder also has their inverses (``2R`` relation ids).
    hidden, num_layers, num_blocks, num_bases, dropout
        As :class:`RGCNLinkConfig`.
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


def _global_triples(graph: Graph, edge_set: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            pos = scores[ar, on(ap)].clone()
            qr, other = filt.answers(rr * m + a)
            keep = (other != ans[qr]) & (pos_of[other] >= 0)
            scores[on(qr[keep]), on(pos_of[other[keep]])] = float("-inf")
            ranks[sl] = _ranks(scores, pos)
        out.append(ranks)
    return np.concatenate(out)


@dataclass
class RGCNLinkResult:
    """What :func:`train_rgcn_link` returns: test ``metrics`` (filtered ``mrr``,
    ``hits@1``, ``hits@3``, ``hits@10``, ``mean_rank``, ``count``) of the best-validation
    model, the evaluation ``history``, training ``seconds`` (evaluations excluded), the
    trained ``model`` and the node encodings ``z`` (N, hidden)."""

    metrics: dict
    history: list[dict]
    seconds: float
    model: RGCNLinkModel
    z: torch.Tensor
    config: dict


def train_rgcn_link(graph: Graph | str | Path, config: RGCNLinkConfig | None = None, *,
                    features=None, log: Callable[[dict], None] | None = None,
                    max_seconds: float | None = None,
                    device: str | torch.device = "cpu") -> RGCNLinkResult:
    """Train R-GCN + DistMult link prediction on a typed graph; filtered test metrics.

    Parameters
    ----------
    graph : Graph or str
        An opened graph or a graph directory with ``train`` / ``valid`` / ``test`` edge
        sets (names in ``config``), e.g. ``graphsys datasets ingest fb15k-237``.
    config : RGCNLinkConfig, optional
        Hyperparameters (default: the paper's FB15k-237 setup).
    features : mapping, optional
        ``{entity type: float tensor (n_t, F_t)}``; other types learn an embedding.
    log : callable, optional
        Called with each evaluation record (``step``, ``loss``, ``val_mrr``, ``seconds``).
    max_seconds : float, optional
        Stop training after this much training time (evaluations excluded); the run
        keeps its best-validation model as at the end.
    device : {"cpu", "cuda", "cuda:k", "auto"}, default "cpu"
        Where the model trains and ranks (batches are drawn on the CPU with the same
        seeds, so a run's batches do not depend on the device).

    Returns
    -------
    RGCNLinkResult

    Raises
    ------
    ParameterError
        An edge set missing, or a bad setting.

    References
    ----------
    .. [1] M. Schlichtkrull, T. N. Kipf, P. Bloem, R. van den Berg, I. Titov and
       M. Welling, "Modeling Relational Data with Graph Convolutional Networks", ESWC 2018,
       https://arxiv.org/abs/1703.06103.
    .. [2] B. Yang, W. Yih, X. He, J. Gao and L. Deng, "Embedding Entities and Relations for
       Learning and Inference in Knowledge Bases", ICLR 2015 (DistMult),
       https://arxiv.org/abs/1412.6575.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest
    >>> from graphsys.gnn.rgcn_link import RGCNLinkConfig, train_rgcn_link
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rows = [(h, h % 3, (h * 7 + h % 3) % 40) for h in range(40)]
    >>> for name, part in [("train", rows[:30]), ("valid", rows[30:35]), ("test", rows[35:])]:
    ...     _ = (d / f"{name}.tsv").write_text("".join(f"e{h}\\tr{r}\\te{t}\\n"
    ...                                                  for h, r, t in part))
    >>> _ = ingest([EdgeSource([d / f"{n}.tsv"], edge_set=n, src_col=0, rel_col=1, dst_col=2)
    ...             for n in ("train", "valid", "test")], d / "g", IngestOptions())
    >>> cfg = RGCNLinkConfig(hidden=8, num_blocks=2, batch_edges=20, steps=3, eval_every=0)
    >>> res = train_rgcn_link(d / "g", cfg)
    >>> sorted(res.metrics)
    ['count', 'hits@1', 'hits@10', 'hits@3', 'mean_rank', 'mrr']
    """
    from graphsys.device import resolve_device

    graph = open_graph(graph) if isinstance(graph, (str, Path)) else graph
    cfg = config if config is not None else RGCNLinkConfig()
    dev = resolve_device(device)
    for name in (cfg.train_edges, cfg.valid_edges, cfg.test_edges):
        if name not in graph.edge_sets:
            raise ParameterError("edge_set", f"graph has no edge set {name!r} (it has "
                                 f"{', '.join(graph.edge_sets)})")
    torch.manual_seed(cfg.seed)
    num_nodes = {t: graph.num_nodes(t) for t in graph.entity_types}
    n_all = sum(num_nodes.values())
    R = len(graph.relation_types)
    tr = _global_triples(graph, cfg.train_edges)
    va = _global_triples(graph, cfg.valid_edges)
    te = _global_triples(graph, cfg.test_edges)
    known = [_global_triples(graph, name) for name in graph.edge_sets]
    model = RGCNLinkModel(num_nodes, R, hidden=cfg.hidden, num_layers=cfg.num_layers,
                          num_blocks=cfg.num_blocks, num_bases=cfg.num_bases,
                          dropout=cfg.dropout, features=features).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    all_nodes = np.arange(n_all, dtype=np.int64)
    full = _graph_block(all_nodes, *tr, R).to(dev)
    gen = np.random.default_rng(derive_seed(cfg.seed, 1))
    sel_val = (np.sort(gen.choice(len(va[0]), cfg.eval_max, replace=False))
               if cfg.eval_max and cfg.eval_max < len(va[0]) else np.arange(len(va[0])))
    n_train = len(tr[0])
    k = min(cfg.batch_edges, n_train)

    def evaluate(h, r, t) -> tuple[dict, torch.Tensor]:
        model.eval()
        with torch.no_grad():
            z = model.encode(full)
            ranks = rank_triples(z, model.rel, h, r, t, known)
        return metrics(ranks), z

    history: list[dict] = []
    best, best_state = -1.0, None
    train_s, loss_sum, loss_n = 0.0, 0.0, 0
    step = 0
    for step in range(1, cfg.steps + 1):
        t0 = time.perf_counter()
        model.train()
        rng = np.random.default_rng(derive_seed(cfg.seed, 2, step))
        pick = rng.choice(n_train, k, replace=False)
        h, r, t = tr[0][pick], tr[1][pick], tr[2][pick]
        nodes, inv = np.unique(np.concatenate([h, t]), return_inverse=True)
        hl, tl = inv[:k], inv[k:]
        g = max(1, int(round(cfg.graph_split * k)))
        block = _graph_block(nodes, hl[:g], r[:g], tl[:g], R).to(dev)
        z = model.encode(block)
        # corrupt the head or the tail of each positive with a uniform batch node
        nn_ = cfg.num_negatives
        ch = np.repeat(hl, nn_)
        ct = np.repeat(tl, nn_)
        cr = np.repeat(r, nn_)
        rand = rng.integers(0, len(nodes), len(ch))
        head_side = rng.random(len(ch)) < 0.5
        ch = np.where(head_side, rand, ch)
        ct = np.where(head_side, ct, rand)
        s_idx = torch.from_numpy(np.concatenate([hl, ch])).to(dev)
        o_idx = torch.from_numpy(np.concatenate([tl, ct])).to(dev)
        r_idx = torch.from_numpy(np.concatenate([r, cr])).to(dev)
        labels = torch.cat([torch.ones(k, device=dev), torch.zeros(len(ch), device=dev)])
        logits = model.score(z[s_idx], r_idx, z[o_idx])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        loss = loss + cfg.reg * (z.pow(2).mean() + model.rel.pow(2).mean())
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_norm)
        opt.step()
        lv = float(loss.detach())
        if not np.isfinite(lv):
            raise ParameterError("lr", f"the loss became {lv} at step {step}; lower lr")
        loss_sum, loss_n = loss_sum + lv, loss_n + 1
        train_s += time.perf_counter() - t0
        out_of_time = max_seconds is not None and train_s >= max_seconds
        last = step == cfg.steps or out_of_time
        if (cfg.eval_every and step % cfg.eval_every == 0) or last:
            m, _ = evaluate(va[0][sel_val], va[1][sel_val], va[2][sel_val])
            rec = {"step": step, "loss": loss_sum / loss_n, "val_mrr": m["mrr"],
                   "val_hits@10": m["hits@10"], "seconds": round(train_s, 3)}
            loss_sum, loss_n = 0.0, 0
            history.append(rec)
            if log is not None:
                log(rec)
            if m["mrr"] > best:
                best = m["mrr"]
                best_state = {kk: v.detach().clone() for kk, v in model.state_dict().items()}
        if out_of_time:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    test_m, z = evaluate(*te)
    test_m["count"] = len(te[0])
    cfg_d = asdict(cfg)
    cfg_d["steps_run"] = step
    return RGCNLinkResult(test_m, history, train_s, model, z, cfg_d)
