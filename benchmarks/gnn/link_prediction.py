#!/usr/bin/env python
"""Link prediction on held-out edges of one-type graphs: graphsys GNN training beside the
common-neighbours heuristic, ranked on the same test edges against the same negatives.

For each dataset: ``graphsys.gnn.train`` with ``TrainConfig(task="link")`` (the seeded
85/5/10 edge split, message passing over the training edges only, GraphSAGE and the
default decoder, filtered ranking against 1000 uniform negatives per test edge), then the
common-neighbours score ``|N(h) & N(t)|`` over the *training* graph, evaluated by the same
:func:`graphsys.gnn.link.evaluate_scores` with the same seed (so the same negatives):
``(A @ A)[h, t]`` of the training adjacency ``A``. The JSON line holds both sets of metrics
per dataset; a dataset that cannot be had (no dataset mirror) is listed under ``missing``.

Usage::

    python benchmarks/gnn/link_prediction.py [--datasets cora,ca-grqc] [--epochs 20]
        [--lr 0.01] [--seed 0] [--work DIR] [--record FILE]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness


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


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    harness.add_mirror_argument(ap)
    ap.add_argument("--work", type=Path, default=None,
                    help="dataset cache (default: a temporary one)")
    ap.add_argument("--datasets", default="cora,ca-grqc")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    harness.use_mirror(args.mirror)

    from graphsys.gnn import TrainConfig, train

    run = harness.Run("gnn/link_prediction", args.record)
    work = args.work or Path(tempfile.mkdtemp())
    out = {"epochs": args.epochs, "lr": args.lr, "seed": args.seed, "datasets": {}}
    for name in args.datasets.split(","):
        g = harness.dataset(run, name, work / name, partitions=2)
        if g is None:
            continue
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
    run.emit(**out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
