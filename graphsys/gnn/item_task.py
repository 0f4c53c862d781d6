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

import copy
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.batches import eval_blocks, pair_batch, walk_sampler
from graphsys.gnn.checkpoint import graph_identity, save_checkpoint
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.inference import layerwise_inference, partition_ranges
from graphsys.gnn.inputs import ItemInput
from graphsys.gnn.loader import PrefetchLoader
from graphsys.gnn.loop import (
    GNNResult,
    Monitor,
    batch_bar,
    config_json,
    finite_loss,
    finite_params,
    seed_all,
)
from graphsys.gnn.model import GNN
from graphsys.gnn.optim import adam
from graphsys.ranking import hits_at_k, mrr, protocol, ranks
from graphsys.sampling._util import derive_seed
from graphsys.sampling.adjacency import from_coo, typed_edges
from graphsys.sampling.block import MiniBatch
from graphsys.sampling.negative import PPRHardNegativeSampler
from graphsys.storage.graph import Graph

#: How the item task ranks a held-out item: among every item, the user's known items left out
RANKED = protocol()


def bipartite_types(graph: Graph, item_type: str | None = None) -> tuple[str, str]:
    """``(item_type, user_type)``: the right and left types of the first relation joining
    two different entity types (or the named item type and its partner)."""
    for r in graph.relation_types:
        if r.lhs != r.rhs and item_type in (None, r.rhs, r.lhs):
            if item_type == r.lhs:
                return r.lhs, r.rhs
            return r.rhs, r.lhs
    raise ParameterError("link_split", f"'user' needs a bipartite relation between two entity "
                                       f"types (e.g. user -> item); {graph.path} has "
                                       f"{[f'{r.lhs}->{r.rhs}' for r in graph.relation_types]}"
                                       f" (split 'random' holds out edges of any graph)")


def holdout_split(users: np.ndarray, items: np.ndarray, seed: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks (train, val, test) over interactions: one test and one validation
    interaction per user with at least 3 (seeded), the rest train."""
    rng = np.random.default_rng(seed)
    e = len(users)
    order = np.lexsort((rng.random(e), users))          # users grouped, random within user
    u_sorted = users[order]
    starts = np.flatnonzero(np.r_[True, u_sorted[1:] != u_sorted[:-1]])
    sizes = np.diff(np.r_[starts, e])
    ok = sizes >= 3
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
    order = np.argsort(users, kind="stable")
    splits = np.searchsorted(users[order], np.arange(n_users + 1))
    it = items[order]
    return [it[splits[u]:splits[u + 1]] for u in range(n_users)]


def rank_metrics(item_emb: torch.Tensor, user_items: list[np.ndarray],
                 exclude: list[np.ndarray], target: np.ndarray, ks=(10,),
                 bias: torch.Tensor | None = None) -> dict[str, float]:
    """``hits@k`` for each ``k`` in ``ks`` and MRR of held-out items among all items.

    ``target``: one item per user (int (n_users,), -1 for none), or held-out
    ``(user, item)`` rows (int (M, 2)), each ranked on its own. The query of user ``u`` is
    the normalised mean of ``user_items[u]``'s unit embeddings, item ``j`` scores
    ``<query, unit(z_j)> + bias[j]``, and the items in ``user_items[u]`` and ``exclude[u]``
    other than the target are not ranked; the target's rank counts the other items scored
    above it, and those tied half, a NaN score ranking worst (:func:`graphsys.ranking.ranks`).
    Averages are over the rows; with one held-out item per user, ``recall@k`` (also
    returned) equals ``hits@k``."""
    unit = F.normalize(item_emb.float(), dim=1)
    target = np.asarray(target, np.int64)
    if target.ndim == 1:
        users = np.flatnonzero(target >= 0)
        items = target[users]
    else:
        users, items = target[:, 0], target[:, 1]
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
        rows = torch.arange(len(chunk))
        tgt = torch.from_numpy(tchunk)
        valid[rows, tgt] = False                      # the target is not its own rival
        parts.append(ranks(scores[rows, tgt], scores, valid))
    if not parts:
        raise GraphsysError("no held-out interaction to rank (every user's held-out edge "
                            "sets are empty)")
    rank = np.concatenate(parts)
    out = {f"hits@{k}": hits_at_k(rank, k) for k in ks}
    out.update({f"recall@{k}": out[f"hits@{k}"] for k in ks})
    return {**out, "mrr": mrr(rank)}


def run_item_task(graph: Graph, cfg: TrainConfig, *, device="cpu", out: Path | None = None,
                  log: Callable[[dict], None] | None = None, progress: bool = False
                  ) -> GNNResult:
    """The link task of :func:`graphsys.gnn.train` with ``link_split="user"``, which
    resolves its arguments (see the module docstring)."""
    t0 = time.perf_counter()
    seed_all(cfg.seed)
    item_t, user_t = bipartite_types(graph, cfg.entity_type)
    n_items, n_users = graph.num_nodes(item_t), graph.num_nodes(user_t)
    users, items, train_m, val_m, test_m = interaction_split(graph, item_t, user_t, cfg.seed)
    if not test_m.any():                     # a stored split without a test edge set
        test_m = val_m
    fw = from_coo(items[train_m], users[train_m], n_items, n_users)    # item -> user
    bw = fw.transpose()                                                # user -> item
    fanouts = cfg.fanouts or [10, 10]
    sampler = walk_sampler(cfg, fw, bw, fanouts)

    feat = None
    if "feat" in graph.node_columns(item_t):
        feat = torch.from_numpy(graph.node_column("feat", item_t))
    inp = ItemInput(n_items, feat, cfg.hidden).to(device)
    model = GNN(cfg.model, cfg.hidden, cfg.hidden, cfg.hidden, len(fanouts),
                cfg.dropout).to(device)
    opt = adam(model, inp, cfg.lr, cfg.weight_decay, cfg.weight_decay_layers)
    hard = (PPRHardNegativeSampler(fw, bw, cfg.hard_band[0], cfg.hard_band[1],
                                   cfg.hard_negatives)
            if cfg.hard_negatives > 0 and cfg.hard_band[0] < n_items - 1 else None)

    # per-user training items, held-out targets
    user_items = per_user(users[train_m], items[train_m], n_users)
    val_t = np.stack([users[val_m], items[val_m]], 1)
    test_t = np.stack([users[test_m], items[test_m]], 1)
    val_excl = per_user(users[test_m], items[test_m], n_users)
    test_excl = per_user(users[val_m], items[val_m], n_users)
    active_items = np.flatnonzero(fw.degrees() > 0)
    per_epoch = max(1, int(train_m.sum()) // cfg.batch_size)
    if cfg.batches_per_epoch:
        per_epoch = min(per_epoch, cfg.batches_per_epoch)
    ranges = partition_ranges(graph, item_t)
    meta = {"task": "link", "entity_type": item_t, "other_type": user_t,
            "graph": str(graph.path), "train_config": config_json(cfg),
            "has_features": feat is not None, "num_items": n_items}
    if out is not None:  # which nodes its rows belong to (read back by check_graph)
        meta["graph_identity"] = graph_identity(graph)

    def save(path: Path):
        state = {f"model.{k}": v for k, v in model.state_dict().items()}
        state.update({f"input.{k}": v for k, v in inp.state_dict().items()})
        save_checkpoint(path, state, model.config(), meta)

    def embed_all() -> torch.Tensor:
        inp.eval()
        return layerwise_inference(model, inp, n_items, eval_blocks(sampler, cfg.seed),
                                   ranges, device=device)

    def make_batch(i: int, epoch: int) -> MiniBatch:
        rng = np.random.default_rng(derive_seed(cfg.seed, epoch, i))
        heads = rng.choice(active_items, cfg.batch_size)
        # positive: one item -> user -> item hop on the training graph
        deg = fw.degrees()[heads]
        mid = fw.indices[fw.indptr[heads] + (rng.random(len(heads)) * deg).astype(np.int64)]
        bdeg = bw.degrees()[mid]
        pos = bw.indices[bw.indptr[mid] + (rng.random(len(mid)) * bdeg).astype(np.int64)]
        negs = [rng.integers(0, n_items, (len(heads), cfg.negatives_for("user")))]
        if hard is not None and epoch > 1:
            negs.append(hard(heads, derive_seed(cfg.seed, epoch, i, 1)).numpy())
        neg = np.concatenate(negs, axis=1)
        return pair_batch(sampler, heads, pos, neg, derive_seed(cfg.seed, epoch, i, 2))

    monitor = Monitor(cfg, out, log, save)
    epoch = 0
    with batch_bar(cfg, per_epoch, progress) as bar:
        for epoch in range(1, cfg.epochs + 1):
            model.train()
            inp.train()
            bar.set_description(f"train {cfg.model} epoch {epoch}/{cfg.epochs}", refresh=False)
            loader = PrefetchLoader(per_epoch, lambda i, e=epoch: make_batch(i, e),
                                    num_workers=cfg.num_workers, prefetch=cfg.prefetch,
                                    device=device)
            loss_sum = 0.0
            for k, batch in enumerate(loader):
                z = F.normalize(model(batch.blocks, inp(batch.input_nodes)), dim=1)
                ex = batch.extra
                h, p, n = z[ex["head"]], z[ex["pos"]], z[ex["neg"]]
                b = inp.bias
                sp_ = (h * p).sum(1, keepdim=True) + b[batch.seeds[batch.extra["pos"]]
                                                       ].unsqueeze(1)
                sn = (h.unsqueeze(1) * n).sum(2) + b[batch.seeds[batch.extra["neg"]]]
                loss = F.relu(sn - sp_ + cfg.margin).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                loss_sum += finite_loss(float(loss.detach()), epoch, k, out)
                bar.update(1)
            finite_params((model, inp), epoch, out)
            if epoch % cfg.eval_every and epoch != cfg.epochs:
                continue
            with torch.no_grad():
                m = rank_metrics(embed_all(), user_items, val_excl, val_t, cfg.metrics_k,
                                 bias=inp.bias)
            record = {"epoch": epoch, "loss": loss_sum / per_epoch,
                      **{f"val_{k}": v for k, v in m.items() if k.startswith("hits@")},
                      "val_mrr": m["mrr"], "protocol": RANKED,
                      "seconds": round(time.perf_counter() - t0, 3)}
            bar.set_postfix(loss=f"{record['loss']:.4f}", val_mrr=f"{m['mrr']:.4f}")
            if monitor.step(model, record, m["mrr"]):
                break
            if record["best"]:
                best_inp = copy.deepcopy(inp.state_dict())
    if monitor.best_state is not None:
        model.load_state_dict(monitor.best_state)
        inp.load_state_dict(best_inp)
    with torch.no_grad():
        emb = embed_all()
        metrics = rank_metrics(emb, user_items, test_excl, test_t, cfg.metrics_k,
                               bias=inp.bias)
    return GNNResult(metrics, epoch, time.perf_counter() - t0, monitor.history, model,
                     {"input": inp, "embeddings": emb, "entity_type": item_t},
                     protocol=RANKED)
