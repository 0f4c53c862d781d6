#!/usr/bin/env python
"""Temporal link prediction: graphsys's TGN, TGAT and JODIE (``task="temporal-link"``,
``model`` ``tgn``, ``tgat`` and ``jodie``) beside PyG's TGN
example model (``torch_geometric.nn.TGNMemory`` with ``IdentityMessage`` and
``LastAggregator``, ``examples/tgn.py``'s ``GraphAttentionEmbedding`` over a
``LastNeighborLoader`` and its ``LinkPredictor``), on the same chronological split, the
same training negatives' distribution and the same evaluation candidates.

Per dataset (CollegeMsg, bitcoin-otc): the events are every stored edge in time order
(:class:`graphsys.gnn.temporal_task.Events`, the edge weight scaled to [-1, 1] as the raw
message where there is one) and split chronologically, latest 15 % test and the 15 %
before validation (TGN's 70/15/15; ties never straddle a cut). Both models have memory,
time-encoding and embedding width ``--dim`` (100, as the example), 10 neighbours, batches of
200 events, Adam at ``--lr``, one uniform negative destination per training event, and run
``--epochs`` epochs; each epoch resets the memory, trains in time order, then streams the
validation and test events (score a batch, then update the memory with it). Each held-out
event is ranked against the same ``--negatives`` candidates (and one more uniform one for
AP / AUC): ``graphsys.gnn.temporal_task.held_out_candidates``, one seed for both sides; the
reported test metrics are those of the epoch with the best validation MRR. ``mrr`` is under
the protocol ``sampled@N, raw`` (uniform candidates), or with ``--eval-protocol tgb``
under TGB's (``tgb@N (hist_rnd), filtered``: fixed negatives, half historical, filtered;
:mod:`graphsys.gnn.temporal_eval`), with the new-node events' ``inductive_mrr``; ``ap`` /
``auc`` use one random negative per event (TGN's). TGAT (side ``tgat``) has no memory: 2
layers of temporal attention over ``--tgat-fanouts`` (``10,10``) most recent neighbours,
the same width, batches, optimiser, negatives and candidates. JODIE (side ``jodie``,
:mod:`graphsys.gnn.jodie`) has an RNN memory and no neighbours: each end's memory projected
to the event's time, the same width, batches, optimiser, negatives and candidates.
Side ``pyg-tgat`` is graphsys's TGAT run (the same sampler, loop, negatives and candidates)
with each attention layer PyG's ``TransformerConv`` (2 heads, ``edge_dim``, root weight) on
the sampled edges, featureless rows as zeros (PyG has no TGAT model or multi-hop temporal
sampler; this is its TGAT-style attention). ``epoch_seconds`` is the training pass of an
epoch (evaluation excluded), the median over epochs. The sides (``--sides``, default
``graphsys,tgat,pyg``; ``jodie`` and ``pyg-tgat`` when named) alternate ``--pairs`` times
per dataset; ``speedup`` is PyG's TGN epoch time over graphsys's TGN's, ``tgat_speedup``
over graphsys's TGAT's, ``jodie_speedup`` over graphsys's JODIE's, ``tgat_vs_pyg_tgat``
side ``pyg-tgat``'s over graphsys's TGAT's, per turn.

Usage::

    python benchmarks/gnn/temporal_link.py --work DIR [--datasets collegemsg,bitcoin-otc]
        [--epochs 5] [--pairs 1] [--eval-protocol sampled|tgb]
        [--sides graphsys,tgat,jodie,pyg,pyg-tgat]
        [--record FILE]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness

VAL, TEST = 0.15, 0.15
#: The test figures reported per side.
METRICS = ("mrr", "hits@10", "ap", "auc", "inductive_mrr")


def graphsys_side(graph, args, model: str = "tgn") -> dict:
    from graphsys.gnn import TrainConfig, train

    fanouts = {"tgn": [10], "jodie": None}.get(
        model, [int(f) for f in args.tgat_fanouts.split(",")])
    cfg = TrainConfig(task="temporal-link", model=model, hidden=args.dim, epochs=args.epochs,
                      lr=args.lr, batch_size=200, fanouts=fanouts, num_negatives=1, dropout=0.1,
                      link_val_fraction=VAL, link_test_fraction=TEST,
                      link_eval_negatives=args.negatives, patience=args.epochs,
                      seed=args.seed, eval_protocol=args.eval_protocol)
    res = train(graph, cfg)
    best = max(res.history, key=lambda r: r["val_mrr"])
    return {**{k: res.metrics[k] for k in METRICS if k in res.metrics},
            "val_mrr": best["val_mrr"],
            "epoch_seconds": harness.median(r["epoch_seconds"] for r in res.history)}


def pyg_tgat_side(graph, args) -> dict:
    """graphsys's TGAT run (the same sampler, loop, negatives and candidates) with its
    attention PyG's: each layer a ``TransformerConv`` (2 heads, ``edge_dim``, root weight)
    over the sampled edges, then TGAT's merge, on featureless rows as PyG takes them
    (``h0`` zeros, one row per sampled node)."""
    import torch
    from torch_geometric.nn import TransformerConv

    from graphsys.gnn import temporal_task
    from graphsys.gnn.tgat import TGAT

    class Attention(torch.nn.Module):
        def __init__(self, dim, edge_dim, heads, dropout):
            super().__init__()
            self.conv = TransformerConv(dim, dim // heads, heads=heads, dropout=dropout,
                                        edge_dim=edge_dim)

        def forward(self, x, x_src, nbr, edge, mask):
            flat = mask.reshape(-1).nonzero().squeeze(1)
            index = torch.stack([nbr.reshape(-1)[flat], flat // mask.shape[1]])
            return self.conv((x_src, x), index, edge)

    class PygTGAT(TGAT):
        def __init__(self, *a, dropout: float = 0.1, **kw):
            super().__init__(*a, dropout=dropout, **kw)
            for layer in self.layers:
                layer.attn = Attention(self.dim, self.raw_dim + self.dim, self.heads, dropout)

        def embed(self, layers, delta, raw):
            edge = torch.cat([raw, self.time_enc(delta)], dim=-1)
            nbr, mask = layers[0]
            h = edge.new_zeros(max(int(nbr.max()) + 1, mask.shape[0]), self.dim)
            for layer, (nbr, mask) in zip(self.layers, layers):
                h = layer(h[:mask.shape[0]], h, nbr, edge[:int(mask.sum())], mask)
            return h

    temporal_task.TGAT, saved = PygTGAT, temporal_task.TGAT    # what build_model makes
    try:
        return graphsys_side(graph, args, "tgat")
    finally:
        temporal_task.TGAT = saved


def pyg_side(graph, args) -> dict:
    """PyG's examples/tgn.py on the same events, split and evaluation candidates."""
    import torch
    from torch.nn import Linear
    from torch_geometric.nn import TGNMemory, TransformerConv
    from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator, LastNeighborLoader

    from graphsys.gnn import TrainConfig
    from graphsys.gnn.temporal_eval import new_node_events
    from graphsys.gnn.temporal_task import (
        Events,
        event_metrics,
        held_out_candidates,
        held_out_negatives,
    )
    from graphsys.gnn.time_split import chronological_split

    torch.manual_seed(args.seed)
    ev = Events(graph)
    masks = chronological_split(ev.time, val_fraction=VAL, test_fraction=TEST)
    n = ev.num_nodes
    cfg = TrainConfig(task="temporal-link", link_val_fraction=VAL, link_test_fraction=TEST,
                      link_eval_negatives=args.negatives, seed=args.seed,
                      eval_protocol=args.eval_protocol)
    negatives = held_out_negatives(ev, masks, cfg)      # TGB's, the graphsys side's draw
    src_all = torch.from_numpy(ev.src)
    dst_all = torch.from_numpy(ev.dst)
    t_all = torch.from_numpy((ev.time - ev.origin).astype(np.int64))
    msg_all = torch.from_numpy(ev.raw)
    if msg_all.shape[1] == 0:   # TGNMemory's message store needs a raw message: one zero
        msg_all = torch.zeros(len(ev.raw), 1)
    msg_dim, dim = msg_all.shape[1], args.dim

    class GraphAttentionEmbedding(torch.nn.Module):
        def __init__(self, in_channels, out_channels, msg_dim, time_enc):
            super().__init__()
            self.time_enc = time_enc
            edge_dim = msg_dim + time_enc.out_channels
            self.conv = TransformerConv(in_channels, out_channels // 2, heads=2,
                                        dropout=0.1, edge_dim=edge_dim)

        def forward(self, x, last_update, edge_index, t, msg):
            rel_t = last_update[edge_index[0]] - t
            rel_t_enc = self.time_enc(rel_t.to(x.dtype))
            edge_attr = torch.cat([rel_t_enc, msg], dim=-1)
            return self.conv(x, edge_index, edge_attr)

    class LinkPredictor(torch.nn.Module):
        def __init__(self, in_channels):
            super().__init__()
            self.lin_src = Linear(in_channels, in_channels)
            self.lin_dst = Linear(in_channels, in_channels)
            self.lin_final = Linear(in_channels, 1)

        def forward(self, z_src, z_dst):
            h = self.lin_src(z_src) + self.lin_dst(z_dst)
            return self.lin_final(h.relu())

    memory = TGNMemory(n, msg_dim, dim, dim, message_module=IdentityMessage(msg_dim, dim, dim),
                       aggregator_module=LastAggregator())
    gnn = GraphAttentionEmbedding(dim, dim, msg_dim, memory.time_enc)
    link_pred = LinkPredictor(dim)
    params = set(memory.parameters()) | set(gnn.parameters()) | set(link_pred.parameters())
    opt = torch.optim.Adam(params, lr=args.lr)
    criterion = torch.nn.BCEWithLogitsLoss()
    loader = LastNeighborLoader(n, size=10)
    assoc = torch.empty(n, dtype=torch.long)

    def embed(n_id):
        n_id, edge_index, e_id = loader(n_id)
        assoc[n_id] = torch.arange(n_id.size(0))
        mem, last_update = memory(n_id)
        return gnn(mem, last_update, edge_index, t_all[e_id], msg_all[e_id])

    def train_epoch(rng):
        memory.train()
        gnn.train()
        link_pred.train()
        memory.reset_state()
        loader.reset_state()
        idx_all = np.flatnonzero(masks[0])
        t0 = time.perf_counter()
        for a in range(0, len(idx_all), 200):
            idx = torch.from_numpy(idx_all[a:a + 200])
            opt.zero_grad()
            src, dst, t, msg = src_all[idx], dst_all[idx], t_all[idx], msg_all[idx]
            neg = torch.from_numpy(rng.integers(0, n, len(idx)))
            z = embed(torch.cat([src, dst, neg]).unique())
            pos_out = link_pred(z[assoc[src]], z[assoc[dst]])
            neg_out = link_pred(z[assoc[src]], z[assoc[neg]])
            loss = criterion(pos_out, torch.ones_like(pos_out)) + criterion(
                neg_out, torch.zeros_like(neg_out))
            memory.update_state(src, dst, t, msg)
            loader.insert(src, dst)
            loss.backward()
            opt.step()
            memory.detach()
        return time.perf_counter() - t0

    @torch.no_grad()
    def stream(mask, which):
        memory.eval()
        gnn.eval()
        link_pred.eval()
        idx_all = np.flatnonzero(mask)
        cand_all, empty = held_out_candidates(len(idx_all), n, which, cfg,
                                              negatives.get(("valid", "test")[which - 1]))
        pos_all, neg_all = [], []
        for a in range(0, len(idx_all), 200):
            idx = torch.from_numpy(idx_all[a:a + 200])
            cand = torch.from_numpy(cand_all[a:a + 200])
            src, dst, t, msg = src_all[idx], dst_all[idx], t_all[idx], msg_all[idx]
            z = embed(torch.cat([src, dst, cand.reshape(-1)]).unique())
            pos_all.append(link_pred(z[assoc[src]], z[assoc[dst]]).squeeze(-1).double().numpy())
            zc = z[assoc[cand.reshape(-1)]].view(len(idx), cand.shape[1], -1)
            zs = z[assoc[src]].unsqueeze(1).expand(-1, cand.shape[1], -1)
            neg_all.append(link_pred(zs, zc).squeeze(-1).double().numpy())
            memory.update_state(src, dst, t, msg)
            loader.insert(src, dst)
        neg = np.concatenate(neg_all)
        neg[empty] = np.nan
        return event_metrics(np.concatenate(pos_all), neg, (10,),
                             inductive=new_node_events(ev.src, ev.dst, masks[0], mask))

    best, seconds = None, []
    for epoch in range(1, args.epochs + 1):
        rng = np.random.default_rng([args.seed, epoch])
        seconds.append(train_epoch(rng))
        val, test = stream(masks[1], 1), stream(masks[2], 2)
        if best is None or val["mrr"] > best[0]:
            best = (val["mrr"], test)
    return {**{k: best[1][k] for k in METRICS if k in best[1]}, "val_mrr": best[0],
            "epoch_seconds": harness.median(seconds)}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    harness.add_mirror_argument(ap)
    ap.add_argument("--work", type=Path, required=True, help="dataset directory")
    ap.add_argument("--datasets", default="collegemsg,bitcoin-otc")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--negatives", type=int, default=100,
                    help="uniform candidates each held-out event is ranked against")
    ap.add_argument("--eval-protocol", choices=("sampled", "tgb"), default="sampled",
                    help="rank among uniform candidates, raw, or TGB's fixed negatives, "
                         "filtered")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sides", default="graphsys,tgat,pyg",
                    help="graphsys (TGN), tgat (graphsys's TGAT), jodie (graphsys's JODIE), "
                         "pyg (PyG's TGN example), pyg-tgat (TGAT with PyG's "
                         "TransformerConv layers)")
    ap.add_argument("--tgat-fanouts", default="10,10", help="TGAT's neighbours per layer")
    args = ap.parse_args(argv)
    sides = {"graphsys": graphsys_side, "tgat": lambda g, a: graphsys_side(g, a, "tgat"),
             "jodie": lambda g, a: graphsys_side(g, a, "jodie"), "pyg": pyg_side,
             "pyg-tgat": pyg_tgat_side}
    chosen = args.sides.split(",")
    if not chosen or any(s not in sides for s in chosen):
        ap.error(f"--sides: a comma list of {', '.join(sides)}, got {args.sides!r}")
    harness.use_mirror(args.mirror)
    run = harness.Run("gnn/temporal_link", args.record)
    import torch

    run["threads"] = torch.get_num_threads()
    out = {}
    for name in args.datasets.split(","):
        graph = harness.dataset(run, name, args.work / name)
        if graph is None:
            continue
        harness.log(f"{name}: {args.pairs} alternated pair(s) of {args.epochs} epochs")
        turns = harness.alternate({side: (lambda g=graph, f=sides[side]: f(g, args))
                                   for side in chosen}, args.pairs)
        out[name] = {side: harness.spread_by_key(runs) for side, runs in turns.items()}
        for key, side, peer in (("speedup", "graphsys", "pyg"), ("tgat_speedup", "tgat", "pyg"),
                                ("jodie_speedup", "jodie", "pyg"),
                                ("tgat_vs_pyg_tgat", "tgat", "pyg-tgat")):
            if peer in turns and side in turns:
                out[name][key] = harness.pair_ratios(
                    [r["epoch_seconds"] for r in turns[peer]],
                    [r["epoch_seconds"] for r in turns[side]])
        harness.log(f"{name}: {out[name]}")
    from graphsys.gnn import TrainConfig
    from graphsys.gnn.temporal_task import protocol_name

    ranked = protocol_name(TrainConfig(task="temporal-link", link_eval_negatives=args.negatives,
                                       eval_protocol=args.eval_protocol))
    run.emit(datasets=out, protocol=f"mrr, hits@10: {ranked}; ap, auc: one uniform negative "
                                    f"per event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
