"""The item task of :func:`graphsys.gnn.train` (``task="link"``, ``link_split="user"``):
PinSage item recommendation on a bipartite graph (e.g. MovieLens-100k, ``user -> item``).

Split (:func:`interaction_split`): a graph with a ``valid`` edge set keeps its stored split
(``train`` trains, ``valid`` selects the model and stops early, ``test`` gives the final
metrics); otherwise one test and one validation interaction per user with at least 3
(:func:`holdout_split`, seeded). Model: items get a learned id embedding plus a linear map of
their ``feat`` column (:class:`~graphsys.gnn.inputs.ItemInput`); neighbourhoods are PinSage
random-walk samples on the training graph. Training pairs are ``(item, item')`` joined by one
training meta-path hop (item -> user -> item'); negatives are uniform items plus, from the
second epoch on, PinSage hard negatives from a band of personalized-PageRank ranks. Loss:
max-margin ``mean(relu(s(q, n) - s(q, p) + margin))`` with ``s(q, j) = <unit(z_q),
unit(z_j)> + b_j`` (a learned per-item bias, as DGL's PinSage example). Evaluation
(:func:`rank_metrics`): a user's query is the normalised mean of their training items' unit
embeddings; every item but the user's training (and other held-out) items is ranked.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from graphsys import ranking
from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.batches import eval_blocks, walk_sampler
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.fit import Evaluation, Task
from graphsys.gnn.inference import layerwise_inference, partition_ranges
from graphsys.gnn.inputs import ItemInput
from graphsys.gnn.loader import NodeLoader
from graphsys.gnn.model import GNN
from graphsys.gnn.optim import adam
from graphsys.ranking import protocol, ranks
from graphsys.sampling._util import derive_seed, seed_entropy
from graphsys.sampling.adjacency import from_coo, typed_edges
from graphsys.sampling.block import MiniBatch
from graphsys.sampling.negative import PPRHardNegativeSampler, UniformNegativeSampler
from graphsys.storage.graph import Graph
from graphsys.views.rows import from_pairs

#: How the item task ranks a held-out item: among every item, the user's known items left out
RANKED = protocol()


def bipartite_types(graph: Graph, item_type: str | None = None) -> tuple[str, str]:
    """``(item_type, user_type)``: the right and left types of the first relation joining
    two different entity types (or the named item type and its partner)."""
    for r in graph.relation_types:
        if r.lhs != r.rhs and item_type in (None, r.rhs, r.lhs):
            return (r.lhs, r.rhs) if item_type == r.lhs else (r.rhs, r.lhs)
    raise ParameterError("link_split", f"'user' needs a bipartite relation between two entity "
                                       f"types (e.g. user -> item); {graph.path} has "
                                       f"{[f'{r.lhs}->{r.rhs}' for r in graph.relation_types]}"
                                       f" (split 'random' holds out edges of any graph)")


def holdout_split(users: np.ndarray, items: np.ndarray, seed: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks (train, val, test) over interactions: one test and one validation
    interaction per user with at least 3 (seeded), the rest train."""
    rng = np.random.default_rng(seed_entropy(seed))
    e = len(users)
    order = np.lexsort((rng.random(e), users))          # users grouped, random within user
    u_sorted = users[order]
    starts = np.flatnonzero(np.r_[True, u_sorted[1:] != u_sorted[:-1]])
    ok = np.diff(np.r_[starts, e]) >= 3
    test = np.zeros(e, bool)
    val = np.zeros(e, bool)
    test[order[starts[ok]]] = True
    val[order[starts[ok] + 1]] = True
    return ~(test | val), val, test


def interaction_split(graph: Graph, item_t: str, user_t: str, seed: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(users, items, train, val, test)``: the interactions of the relation joining
    ``user_t`` and ``item_t`` (type-local ids, int64 (E,)) with boolean split masks.

    A graph with a ``valid`` edge set keeps its stored split: the edges of the training
    edge set (``train``) train, ``valid`` validates, ``test`` (if present) tests. Any
    other graph: its training edge set split by :func:`holdout_split`.
    """
    from graphsys.datasets.loaders import TEMPORAL_EDGE_SETS

    rel = next(r for r in graph.relation_types if {r.lhs, r.rhs} == {item_t, user_t})
    _, valid, test = TEMPORAL_EDGE_SETS
    if valid in graph.edge_sets:
        train_set = graph.edge_set(None).name
        if train_set == valid:
            raise GraphsysError(f"{graph.path} has a {valid!r} edge set but no training edge "
                                f"set (train or default) for the link task")
        names = [train_set, valid] + ([test] if test in graph.edge_sets
                                      and test != train_set else [])
        parts = [typed_edges(graph, e, rel.lhs, rel.rhs)[:2] for e in names]
        s = np.concatenate([p[0] for p in parts])
        d = np.concatenate([p[1] for p in parts])
        which = np.repeat(np.arange(len(parts)), [len(p[0]) for p in parts])
        users, items = (s, d) if rel.lhs == user_t else (d, s)
        return users, items, which == 0, which == 1, which == 2
    s, d, _ = typed_edges(graph, None, rel.lhs, rel.rhs)
    users, items = (s, d) if rel.lhs == user_t else (d, s)
    return (users, items, *holdout_split(users, items, seed))


def per_user(users: np.ndarray, items: np.ndarray, n_users: int) -> list[np.ndarray]:
    """Each user's items (type-local ids): a list of ``n_users`` int64 arrays."""
    splits, it = from_pairs(n_users, users, items)
    return [it[splits[u]:splits[u + 1]] for u in range(n_users)]


def rank_metrics(item_emb: torch.Tensor, user_items: list[np.ndarray],
                 exclude: list[np.ndarray], target: np.ndarray, ks=(10,),
                 bias: torch.Tensor | None = None) -> dict[str, float]:
    """``hits@k`` and ``recall@k`` for each ``k`` in ``ks`` and MRR of held-out items among
    all items, per user as :func:`graphsys.gnn.recommendation.ranking_metrics` defines
    them (what evaluating the checkpoint reports).

    ``target``: one item per user (int (n_users,), -1 for none), or held-out
    ``(user, item)`` rows (int (M, 2); a repeated row counts once). The query of user ``u``
    is the normalised mean of ``user_items[u]``'s unit embeddings, item ``j`` scores
    ``<query, unit(z_j)> + bias[j]``, and the items in ``user_items[u]`` and ``exclude[u]``
    other than the user's targets are not ranked; each target ranks by
    :func:`graphsys.ranking.ranks`, the user's other targets competing (a target among
    the known items too). ``hits@k`` and MRR
    are of each user's best-ranked target, ``recall@k`` the share of the user's targets
    within ``k``; each averaged over the users with a target."""
    unit = F.normalize(item_emb.float(), dim=1)
    target = np.asarray(target, np.int64)
    if target.ndim == 1:
        users = np.flatnonzero(target >= 0)
        items = target[users]
    else:
        users, items = np.unique(target.reshape(-1, 2), axis=0).T   # grouped by user
    lo, hi = np.searchsorted(users, users, "left"), np.searchsorted(users, users, "right")
    parts = []
    for a in range(0, len(users), 512):
        chunk, tchunk = users[a:a + 512], items[a:a + 512]
        q = torch.stack([unit[torch.from_numpy(user_items[u])].mean(0) if len(user_items[u])
                         else unit.new_zeros(unit.shape[1]) for u in chunk])
        scores = F.normalize(q, dim=1) @ unit.T
        if bias is not None:
            scores = scores + bias.detach().float().cpu().unsqueeze(0)
        valid = torch.ones(scores.shape, dtype=torch.bool)
        for r, u in enumerate(chunk):
            valid[r, torch.from_numpy(np.concatenate([user_items[u], exclude[u]]))] = False
            valid[r, torch.from_numpy(items[lo[a + r]:hi[a + r]])] = True   # its targets
        rows = torch.arange(len(chunk))
        tgt = torch.from_numpy(tchunk)
        valid[rows, tgt] = False                      # the target is not its own rival
        parts.append(ranks(scores[rows, tgt], scores, valid))
    if not parts:
        raise GraphsysError("no held-out interaction to rank (every user's held-out edge "
                            "sets are empty)")
    rank = np.concatenate(parts)
    best = np.minimum.reduceat(rank, np.flatnonzero(np.r_[True, users[1:] != users[:-1]]))
    return {**ranking.rank_metrics(best, ks),
            **{f"recall@{k}": ranking.recall_at_k(rank, users, k) for k in ks}}


class ItemTask(Task):
    """The link task of :func:`graphsys.gnn.train` with ``link_split="user"`` for
    :func:`~graphsys.gnn.fit.fit` (see the module docstring)."""

    protocol = RANKED

    def __init__(self, graph: Graph, cfg: TrainConfig, device: torch.device):
        self.cfg, self.device = cfg, device
        item_t, user_t = bipartite_types(graph, cfg.entity_type)
        n_items, n_users = graph.num_nodes(item_t), graph.num_nodes(user_t)
        self.item_t, self.n_items = item_t, n_items
        users, items, train_m, val_m, test_m = interaction_split(graph, item_t, user_t,
                                                                 cfg.seed)
        if not (val_m.any() and test_m.any()):   # test_m empty: val_m was tested on
            raise GraphsysError(f"{graph.path}: no {'validation' if not val_m.any() else 'test'}"
                                f" interaction to hold out (a 'valid' and a 'test' edge set, "
                                f"or users with 3 interactions: one each for validation and "
                                f"test)")
        self.fw = from_coo(items[train_m], users[train_m], n_items, n_users)  # item -> user
        self.bw = self.fw.transpose()                                         # user -> item
        fanouts = cfg.fanouts or [10, 10]
        self.sampler = walk_sampler(cfg, self.fw, self.bw, fanouts)
        feat = (torch.from_numpy(graph.node_column("feat", item_t))
                if "feat" in graph.node_columns(item_t) else None)
        self.inp = ItemInput(n_items, feat, cfg.hidden).to(device)
        self.model = GNN(cfg.model, cfg.hidden, cfg.hidden, cfg.hidden, len(fanouts),
                         cfg.dropout, heads=cfg.heads).to(device)
        self.modules = {"model.": self.model, "input.": self.inp}
        self.opt = adam(self.model, self.inp, cfg.lr, cfg.weight_decay, cfg.weight_decay_layers)
        self.hard = (PPRHardNegativeSampler(self.fw, self.bw, cfg.hard_band[0],
                                            cfg.hard_band[1], cfg.hard_negatives)
                     if cfg.hard_negatives > 0 and cfg.hard_band[0] < n_items - 1 else None)
        # per-user training items, held-out targets
        self.user_items = per_user(users[train_m], items[train_m], n_users)
        self.val_t = np.stack([users[val_m], items[val_m]], 1)
        self.test_t = np.stack([users[test_m], items[test_m]], 1)
        self.val_excl = per_user(users[test_m], items[test_m], n_users)
        self.test_excl = per_user(users[val_m], items[val_m], n_users)
        self.active_items = np.flatnonzero(self.fw.degrees() > 0)
        self.per_epoch = max(1, int(train_m.sum()) // cfg.batch_size)
        if cfg.batches_per_epoch:
            self.per_epoch = min(self.per_epoch, cfg.batches_per_epoch)
        self.ranges = partition_ranges(graph, item_t)
        self.meta = {"task": "link", "entity_type": item_t, "other_type": user_t,
                     "has_features": feat is not None, "num_items": n_items}

    def embed_all(self) -> torch.Tensor:
        self.inp.eval()
        return layerwise_inference(self.model, self.inp, self.n_items,
                                   eval_blocks(self.sampler, self.cfg.seed), self.ranges,
                                   device=self.device)

    def batches(self, epoch: int) -> NodeLoader:
        """:attr:`per_epoch` batches of uniform active items, each with one item -> user ->
        item hop (drawn from ``(seed, epoch)``), and uniform (from epoch 2 also hard) negatives."""
        cfg, fw, bw = self.cfg, self.fw, self.bw
        rng = np.random.default_rng(derive_seed(cfg.seed, epoch))
        heads = rng.choice(self.active_items, self.per_epoch * cfg.batch_size)
        mid = fw.indices[fw.indptr[heads] + (rng.random(len(heads)) * fw.degrees()[heads])
                         .astype(np.int64)]
        pos = bw.indices[bw.indptr[mid] + (rng.random(len(mid)) * bw.degrees()[mid])
                         .astype(np.int64)]
        uniform = UniformNegativeSampler(self.n_items, cfg.negatives_for("user"))
        hard = self.hard if epoch > 1 else None

        def negatives(h: torch.Tensor, key: int) -> torch.Tensor:
            neg = uniform(h, key)
            return neg if hard is None else torch.cat([neg, hard(h, derive_seed(key, 1))], 1)

        loader = NodeLoader(None, self.sampler, links=np.stack([heads, pos], 1),
                            negatives=negatives, batch_size=cfg.batch_size, shuffle=False,
                            seed=derive_seed(cfg.seed, epoch), num_workers=cfg.num_workers,
                            prefetch=cfg.prefetch, features=None, labels=None,
                            device=self.device)
        loader.set_epoch(epoch)
        return loader

    def loss(self, batch: MiniBatch, epoch: int, k: int) -> torch.Tensor:
        z = F.normalize(self.model(batch.blocks, self.inp(batch.input_nodes)), dim=1)
        ex, b = batch.extra, self.inp.bias
        h, p, n = z[ex["head"]], z[ex["pos"]], z[ex["neg"]]
        sp_ = (h * p).sum(1, keepdim=True) + b[batch.seeds[ex["pos"]]].unsqueeze(1)
        sn = (h.unsqueeze(1) * n).sum(2) + b[batch.seeds[ex["neg"]]]
        return F.relu(sn - sp_ + self.cfg.margin).mean()

    def evaluate(self, epoch: int) -> Evaluation:
        m = rank_metrics(self.embed_all(), self.user_items, self.val_excl, self.val_t,
                         self.cfg.metrics_k, bias=self.inp.bias)   # embedded without gradients
        fields = {**{f"val_{k}": v for k, v in m.items() if k.startswith("hits@")},
                  "val_mrr": m["mrr"], "protocol": RANKED}
        return Evaluation(fields, m["mrr"])

    def finish(self, best: float | None, clock) -> tuple[dict[str, float], dict]:
        emb = self.embed_all()
        metrics = rank_metrics(emb, self.user_items, self.test_excl, self.test_t,
                               self.cfg.metrics_k, bias=self.inp.bias)
        return metrics, {"input": self.inp, "embeddings": emb, "entity_type": self.item_t}
