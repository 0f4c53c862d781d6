#!/usr/bin/env python
"""graphsys's PinSage recommender beside DGL's PinSage example on MovieLens-100k: test
hits@10 under one scoring rule, and training time.

Both sides train on the same interactions: the per-user leave-last-out split by timestamp
that ``graphsys datasets ingest movielens-100k --split temporal`` stores (each user's latest
rating in ``test``, the one before in ``valid``, the rest in ``train``), the same item
features (the 19 genre flags, ``feat``) plus a learned id embedding. Both are scored by one
rule, graphsys's (:func:`graphsys.gnn.recommendation.evaluate`, ``gnn recommend --evaluate
test``): a user's query is the normalised mean of the unit embeddings of their ``train``
items, item ``j`` scores ``<query, unit(z_j)> + b_j`` (``b`` each model's learned item bias),
every item except the user's ``train`` and ``valid`` items is ranked, and ``hits@10`` is the
share of users whose test item ranks in the top 10 (``mrr`` the mean reciprocal rank).

graphsys: :func:`graphsys.gnn.train` with ``task="link", model="pinsage"`` and its defaults
(``--epochs``, ``--patience`` override them), model selection on ``valid``; its checkpoint
is scored by :func:`~graphsys.gnn.recommendation.evaluate`. DGL: the example's own modules
(``model.PinSAGEModel``, ``sampler.ItemToItemBatchSampler``, ``NeighborSampler``,
``PinSAGECollator``; ``--dgl-example DIR`` holds ``examples/pytorch/pinsage`` of dmlc/dgl,
which this repository does not copy) driven by the loop of its ``model.py`` with its
defaults (2 layers, 16 hidden dims, batches of 32, Adam lr 3e-5, ``--dgl-batches``
20000 batches = one epoch, random walks 10 x length 2 with restart 0.5, 3 neighbours), the
item graph built from the ``train`` interactions (as its ``process_movielens1m.py`` builds
ML-1M's), without title text (graphsys stores none); its item representations
(``get_repr``) and scorer bias are scored by the rule above.

DGL runs with graphsys's OpenMP wait policy (``OMP_WAIT_POLICY=PASSIVE``, which this script
applies first; see ``graphsys/openmp.py``), not OpenMP's busy-waiting default, whose
spinning threads stall the sampler on a shared machine. Training time is each side's wall
time from the start of training to the final item embeddings (graphsys's includes its
per-epoch validation). The sides take turns (graphsys, DGL, graphsys, ...; ``--repeats``,
seeds 0, 1, ...); figures are medians with min and max, ratios of medians. Usage::

    python benchmarks/gnn/pinsage_movielens.py --dgl-example DIR [--graph ML]
        [--dgl-python PY | --skip-dgl] [--work DIR] [--repeats 1] [--threads N]
        [--epochs N] [--patience N] [--dgl-batches 20000] [--record FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness

KS = (10,)


# -- the DGL side (runs in DGL's environment: torch, dgl, numpy only) ---------------------------

def dgl_worker(inp: Path, out: Path, example: Path, batches: int, seed: int) -> None:
    """Train DGL's example on ``inp`` (npz) and write item representations and bias to
    ``out`` (npz); prints one JSON line with the training time."""
    import torch

    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    sys.path.insert(0, str(example))
    import dgl
    import model as ex_model
    import sampler as ex_sampler

    torch.manual_seed(seed)
    np.random.seed(seed)
    dgl.seed(seed)
    a = np.load(inp)
    u, i = torch.from_numpy(a["train_user"]), torch.from_numpy(a["train_item"])
    n_users, n_items = int(a["num_users"]), int(a["num_items"])
    g = dgl.heterograph({("user", "watched", "item"): (u, i),
                         ("item", "watched-by", "user"): (i, u)},
                        num_nodes_dict={"user": n_users, "item": n_items})
    g.nodes["user"].data["id"] = torch.arange(n_users)
    g.nodes["item"].data["id"] = torch.arange(n_items)
    g.nodes["item"].data["feat"] = torch.from_numpy(a["item_feat"])
    # model.py's argparse defaults
    walk_len, restart, walks, nbrs, layers, hidden, bs, lr = 2, 0.5, 10, 3, 2, 16, 32, 3e-5
    textset: dict = {}
    batch_sampler = ex_sampler.ItemToItemBatchSampler(g, "user", "item", bs)
    nsampler = ex_sampler.NeighborSampler(g, "user", "item", walk_len, restart, walks, nbrs,
                                          layers)
    collator = ex_sampler.PinSAGECollator(nsampler, g, "item", textset)
    loader = torch.utils.data.DataLoader(batch_sampler, collate_fn=collator.collate_train,
                                         num_workers=0)
    loader_test = torch.utils.data.DataLoader(torch.arange(n_items), batch_size=bs,
                                              collate_fn=collator.collate_test, num_workers=0)
    it = iter(loader)
    net = ex_model.PinSAGEModel(g, "item", textset, hidden, layers)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    t0 = time.perf_counter()
    net.train()
    losses = []
    for b in range(batches):
        pos_graph, neg_graph, blocks = next(it)
        loss = net(pos_graph, neg_graph, blocks).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if b % 1000 == 999:
            losses.append(round(float(loss), 4))
    train_s = time.perf_counter() - t0
    net.eval()
    with torch.no_grad():
        h = torch.cat([net.get_repr(blocks) for blocks in loader_test], 0)
    total_s = time.perf_counter() - t0
    np.savez(out, emb=h.numpy(), bias=net.scorer.bias.detach().numpy()[:, 0])
    print(json.dumps({"dgl": dgl.__version__, "torch": torch.__version__,
                      "torch_threads": torch.get_num_threads(), "batches": batches,
                      "train_s": round(train_s, 1), "seconds": round(total_s, 1),
                      "loss_every_1000": losses}))


# -- the graphsys side and the comparison --------------------------------------------------------

def split_arrays(graph) -> dict:
    """Type-local ``(user, item)`` arrays of the ``train``/``valid``/``test`` edge sets."""
    from graphsys.sampling.adjacency import typed_edges

    out = {}
    for name in ("train", "valid", "test"):
        s, d, _ = typed_edges(graph, name, "user", "item")
        out[name] = (s, d)
    return out


def score_rule(emb: np.ndarray, bias: np.ndarray, split: dict, n_users: int) -> dict:
    """hits@10 / MRR of the ``test`` items under graphsys's rule (module docstring), with
    :func:`graphsys.gnn.recommendation.ranking_metrics`."""
    from graphsys.gnn.item_task import per_user
    from graphsys.gnn.recommendation import ranking_metrics

    unit = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    hist = per_user(*split["train"], n_users)
    valid = per_user(*split["valid"], n_users)
    test = per_user(*split["test"], n_users)
    users = [u for u in range(n_users) if len(test[u])]
    q = np.stack([unit[hist[u]].mean(0) if len(hist[u]) else np.zeros(unit.shape[1])
                  for u in users])
    q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    scores = q @ unit.T + bias[None, :]
    m = ranking_metrics(scores, [test[u] for u in users],
                        [np.concatenate([hist[u], valid[u]]) for u in users], KS)
    return {"hits@10": round(m["hits@10"], 4), "mrr": round(m["mrr"], 4), "users": m["users"]}


def run_graphsys(graph, work: Path, seed: int, args, split: dict) -> dict:
    import torch

    from graphsys.gnn import TrainConfig, train
    from graphsys.gnn.recommendation import evaluate

    over = {k: v for k, v in (("epochs", args.epochs), ("patience", args.patience)) if v}
    cfg = TrainConfig(task="link", model="pinsage", seed=seed, **over)
    t0 = time.perf_counter()
    res = train(graph, cfg, out=work / f"gs{seed}")
    seconds = time.perf_counter() - t0
    m = evaluate(work / f"gs{seed}" / "checkpoint", graph=graph, ks=KS)
    emb = res.extra["embeddings"].float().numpy()
    bias = res.extra["input"].bias.detach().float().numpy()
    check = score_rule(emb, bias, split, graph.num_nodes("user"))
    return {"seconds": round(seconds, 1), "epochs": res.epochs,
            "best_epoch": max((r for r in res.history if r["best"]),
                              key=lambda r: r["epoch"])["epoch"],
            "hits@10": round(m["hits@10"], 4), "mrr": round(m["mrr"], 4),
            "users": m["users"], "rule_check_hits@10": check["hits@10"],
            "torch_threads": torch.get_num_threads()}


def run_dgl(py: Path, work: Path, seed: int, args, split: dict, n_users: int) -> dict:
    out = work / f"dgl{seed}.npz"
    # this environment (OMP_WAIT_POLICY=PASSIVE included), not the peer's defaults
    r = harness.run_child([py, __file__, "--dgl-worker", work / "input.npz", out,
                           "--dgl-example", args.dgl_example,
                           "--dgl-batches", str(args.dgl_batches), "--seed", str(seed)],
                          check=False)
    if r.returncode != 0 or r.json is None:
        return {"error": "DGL run failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]}
    res = {**r.json, **r.peaks()}
    a = np.load(out)
    res.update(score_rule(a["emb"], a["bias"], split, n_users))
    return res


def spread(runs: list[dict], key: str) -> dict:
    v = [r[key] for r in runs if key in r]
    return harness.spread(v) if v else {}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    harness.add_mirror_argument(ap)
    ap.add_argument("--graph", type=Path, default=None,
                    help="MovieLens-100k ingested with --split temporal (default: ingest it)")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--dgl-example", type=Path, default=None,
                    help="directory holding dmlc/dgl's examples/pytorch/pinsage")
    ap.add_argument("--dgl-batches", type=int, default=20000)
    ap.add_argument("--epochs", type=int, default=None, help="graphsys epochs (its default)")
    ap.add_argument("--patience", type=int, default=None, help="graphsys patience")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None,
                    help="torch, numba and OpenMP threads of both sides (default: every core)")
    harness.add_peer_argument(ap, "dgl")
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--dgl-worker", nargs=2, type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    if args.dgl_worker:
        dgl_worker(*args.dgl_worker, args.dgl_example, args.dgl_batches, args.seed)
        return 0

    import graphsys
    from graphsys.openmp import apply_wait_policy

    apply_wait_policy()  # exported to the DGL children too (module docstring)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    harness.use_mirror(args.mirror)
    run = harness.Run("gnn/pinsage_movielens", args.record)
    work = args.work or Path(tempfile.mkdtemp(prefix="graphsys-bench-pinsage-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.graph is None:
        graph = harness.dataset(run, "movielens-100k", work / "movielens-100k-temporal",
                                split="temporal", partitions=2)
        if graph is None:
            run.emit()
            return 1
    else:
        graph = graphsys.open_graph(args.graph)
    split = split_arrays(graph)
    n_users, n_items = graph.num_nodes("user"), graph.num_nodes("item")
    np.savez(work / "input.npz", train_user=split["train"][0], train_item=split["train"][1],
             num_users=n_users, num_items=n_items,
             item_feat=graph.node_column("feat", "item").astype(np.float32))
    if not args.skip_dgl and (args.dgl_example is None
                              or not (args.dgl_example / "model.py").is_file()):
        py, why = None, "--dgl-example must be a directory with DGL's pinsage model.py"
    else:
        py, why = harness.peer_python("dgl", work, args.dgl_python, args.skip_dgl)
    res = {"workload": "PinSage, MovieLens-100k temporal leave-last-out, test hits@10",
           "threads": args.threads, "dgl_batches": args.dgl_batches,
           "interactions": {k: len(v[0]) for k, v in split.items()}}
    gs_seeds, dgl_seeds = itertools.count(args.seed), itertools.count(args.seed)
    turns = harness.alternate({
        "graphsys": lambda: run_graphsys(graph, work, next(gs_seeds), args, split),
        "dgl": None if py is None else
        lambda: run_dgl(py, work, next(dgl_seeds), args, split, n_users)}, args.repeats)
    gs_runs, dgl_runs = turns["graphsys"], turns.get("dgl", [])
    res["graphsys"] = {"runs": gs_runs, **{k: spread(gs_runs, k)
                                           for k in ("seconds", "hits@10", "mrr")}}
    if dgl_runs and all("error" not in d for d in dgl_runs):
        res["dgl"] = {"runs": dgl_runs, **{k: spread(dgl_runs, k)
                                           for k in ("seconds", "hits@10", "mrr")}}
        g, d = res["graphsys"], res["dgl"]
        res["time_ratio_dgl_over_graphsys"] = round(d["seconds"]["median"]
                                                    / g["seconds"]["median"], 2)
        res["hits@10_ratio_graphsys_over_dgl"] = round(g["hits@10"]["median"]
                                                       / max(d["hits@10"]["median"], 1e-9), 2)
    else:
        run.missing("DGL rows", why or next(d["error"] for d in dgl_runs if "error" in d))
    run.emit(**res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
