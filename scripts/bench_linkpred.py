#!/usr/bin/env python
"""Link prediction on held-out edges of one-type graphs: graphsys GNN training beside the
common-neighbours heuristic, ranked on the same test edges against the same negatives.

For each dataset: ``graphsys.gnn.train`` with ``TrainConfig(task="link")`` (the seeded
85/5/10 edge split, message passing over the training edges only, GraphSAGE and the
default decoder, filtered ranking against 1000 uniform negatives per test edge), then the
common-neighbours score ``|N(h) & N(t)|`` over the *training* graph, evaluated by the same
:func:`graphsys.gnn.link.evaluate_scores` with the same seed (so the same negatives):
``(A @ A)[h, t]`` of the training adjacency ``A``. Prints one JSON line with both sets of
metrics per dataset.

Usage::

    python scripts/bench_linkpred.py --mirror /work/shared/datasets [--datasets cora,ca-grqc]
        [--epochs 20] [--lr 0.01] [--seed 0] [--record FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
from render_results import add_record_argument, emit


def common_neighbours(data, ks, negatives: int, seed: int) -> dict[str, float]:
    """Filtered metrics of the test edges under the common-neighbours score of the
    training graph, ``(A @ A)[h, t]``, against the negatives the GNN was ranked with."""
    from graphsys.gnn.link import evaluate_scores
    from graphsys.sampling._util import derive_seed

    a = data.adj.to_scipy()
    a2 = (a @ a).tocsr()
    lo, hi = data.tails

    def pairs(h, t):
        return np.asarray(a2[np.repeat(h, t.shape[1]), t.ravel()]).reshape(t.shape)

    def every(h):
        return a2[h][:, lo:hi].toarray()

    return evaluate_scores(pairs, every, data, data.test, negatives, ks,
                           derive_seed(seed, 104729, 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", required=True)
    ap.add_argument("--work", default=None, help="dataset cache (default: a temporary one)")
    ap.add_argument("--datasets", default="cora,ca-grqc")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    add_record_argument(ap)
    args = ap.parse_args()

    from graphsys.gnn import TrainConfig, train
    from graphsys.gnn.data import open_source

    work = args.work or tempfile.mkdtemp()
    out = {"bench": "link-prediction-held-out-edges", "epochs": args.epochs, "lr": args.lr,
           "seed": args.seed, "datasets": {}}
    for name in args.datasets.split(","):
        g = open_source(name, mirror=args.mirror, cache=f"{work}/cache")
        cfg = TrainConfig(task="link", epochs=args.epochs, lr=args.lr, seed=args.seed)
        t0 = time.perf_counter()
        res = train(g, cfg)
        seconds = time.perf_counter() - t0
        data = res.extra["data"]
        cn = common_neighbours(data, cfg.metrics_k, cfg.link_eval_negatives, args.seed)
        out["datasets"][name] = {
            "edges": int(len(data.head)), "test_edges": int(data.test.sum()),
            "graphsys": {k: round(v, 4) for k, v in res.metrics.items()},
            "epochs_run": res.epochs, "seconds": round(seconds, 1),
            "config": {**{k: getattr(cfg, k) for k in (
                "model", "hidden", "fanouts", "batch_size", "link_decoder",
                "link_exclude_targets")}, "num_negatives": cfg.negatives_for("random")},
            "common_neighbours": {k: round(v, 4) for k, v in cn.items()
                                  if np.isfinite(v)}}
    emit(out, args.record)


if __name__ == "__main__":
    main()
