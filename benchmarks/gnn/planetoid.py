#!/usr/bin/env python
"""Public-split node classification: graphsys GNNs on the Planetoid splits of Cora and
CiteSeer, mean ± std over seeds, beside the published figures.

The JSON line holds, per (dataset, model), the test accuracies of every seed, their mean
and (population) std, the published figure and whether it lies within one std of the mean.
Every run is ``graphsys.gnn.train`` on the registry graph with ``split="public"`` (140/500/
1000 Cora, 120/500/1000 CiteSeer), full neighbourhoods, the best-validation model, with the
hyperparameters of the papers, trained as they were: full-batch, one step per epoch on
the whole graph (``TrainConfig.full_graph``):

* GCN (Kipf & Welling 2017): hidden 16, dropout 0.5, Adam lr 0.01, weight decay 5e-4 on
  the first layer only, 200 epochs, early stopping patience 50 (here on validation accuracy).
* GraphSAGE-mean: hidden 64, otherwise as GCN (no published public-split figure; PyG's
  example is quoted in docs/benchmarks.md).
* GAT (Veličković et al. 2018): 8 heads x 8 hidden, ELU, dropout 0.6 (inputs and
  attention), lr 0.005, weight decay 5e-4, patience 100, up to 1000 epochs.

Usage::

    python benchmarks/gnn/planetoid.py [--seeds 10] [--work DIR]
        [--only cora:gcn,citeseer:gat] [--hidden H]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

#: Test accuracy published on the public split (GCN: Kipf & Welling 2017, Table 2; GAT:
#: Veličković et al. 2018, Table 2, whose ± is their std over 100 runs).
PUBLISHED = {("cora", "gcn"): 0.815, ("citeseer", "gcn"): 0.703,
             ("cora", "gat"): 0.830, ("citeseer", "gat"): 0.725}
RUNS = [("cora", "gcn"), ("cora", "sage"), ("cora", "gat"), ("citeseer", "gcn"),
        ("citeseer", "gat")]
HYPER = {
    "gcn": dict(hidden=16, dropout=0.5, lr=0.01, weight_decay=5e-4, weight_decay_layers="first",
                epochs=200, patience=50),
    "sage": dict(hidden=64, dropout=0.5, lr=0.01, weight_decay=5e-4, epochs=200,
                 patience=50),
    "gat": dict(hidden=64, heads=8, dropout=0.6, lr=0.005, weight_decay=5e-4, epochs=1000,
                patience=100),
}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    harness.add_mirror_argument(ap)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--work", default=None, help="cache directory (default: a temp dir)")
    ap.add_argument("--only", default=None, help="comma list of dataset:model")
    ap.add_argument("--selection", default=None,
                    help="TrainConfig.selection of every run (default: the config's, "
                         "val_accuracy)")
    ap.add_argument("--hidden", type=int, default=None,
                    help="hidden width of every model instead of the papers'")
    args = ap.parse_args(argv)
    harness.use_mirror(args.mirror)

    from graphsys.gnn import TrainConfig, train

    run = harness.Run("gnn/planetoid", args.record)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-planetoid-"))
    runs = RUNS if not args.only else [tuple(r.split(":")) for r in args.only.split(",")]
    results = {}
    for dataset, model in runs:
        graph = harness.dataset(run, dataset, work / f"{dataset}-public", split="public",
                                partitions=2)
        if graph is None:
            continue
        accs, seconds = [], []
        for seed in range(args.seeds):
            hyper = {**HYPER[model], **({"hidden": args.hidden} if args.hidden else {}),
                     **({"selection": args.selection} if args.selection else {})}
            cfg = TrainConfig(task="node", model=model, seed=seed, full_graph=True, **hyper)
            t0 = time.perf_counter()
            res = train(graph, cfg)
            seconds.append(time.perf_counter() - t0)
            accs.append(res.metrics["test_accuracy"])
            harness.log(f"{dataset}:{model} seed {seed}: {accs[-1]:.4f} ({res.epochs} epochs, "
                        f"{seconds[-1]:.1f} s)")
        mean, std = statistics.fmean(accs), statistics.pstdev(accs)
        pub = PUBLISHED.get((dataset, model))
        results[f"{dataset}:{model}"] = {
            "test_accuracy": [round(a, 4) for a in accs], "mean": round(mean, 4),
            "std": round(std, 4), "published": pub,
            "within_one_std": None if pub is None else abs(mean - pub) <= std,
            "seconds_per_run_median": round(statistics.median(seconds), 2),
            "hyper": hyper}
    run.emit(seeds=args.seeds, results=results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
