#!/usr/bin/env python3
"""Benchmark R-GCN link prediction on FB15k-237 against the paper's filtered MRR.

Trains R-GCN (encoder) + DistMult (decoder) through :func:`graphsys.gnn.train` with a TOML
config (default ``datasets/configs/fb15k-237-rgcn.toml``; its ``rgcn.max_seconds`` caps
training time, 20 minutes) on FB15k-237 ingested from the dataset registry
(``--graph`` reuses an ingested directory; the mirror is ``--mirror`` or
``GRAPHSYS_MIRROR``), then ranks the test triples (heads and tails, filtered against train
+ valid + test, all 14,541 entities). Prints one JSON line: filtered test MRR beside the
paper's R-GCN row (Schlichtkrull et al. 2018, FB15k-237: filtered MRR 0.248, Hits@10
0.414 as the reference anchors quote them; the paper's table was not available offline to
check), with Hits@1/3/10, steps, training seconds and the evaluation history.

    GRAPHSYS_MIRROR=/work/shared/datasets python scripts/bench_rgcn.py [--graph DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from render_results import add_record_argument, emit

REPO = Path(__file__).resolve().parents[1]
PAPER_MRR = 0.248
PAPER_HITS10 = 0.414


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", type=Path, default=None,
                    help="an ingested FB15k-237 directory (default: ingest into a temporary "
                         "directory)")
    ap.add_argument("--config", type=Path,
                    default=REPO / "datasets" / "configs" / "fb15k-237-rgcn.toml")
    ap.add_argument("--mirror", default=os.environ.get("GRAPHSYS_MIRROR"))
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="training time cap in seconds (default: the config's max_seconds)")
    ap.add_argument("--batch-edges", type=int, default=None,
                    help="training triples per step (default: the config's batch_size)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--log", action="store_true", help="print each evaluation to stderr")
    add_record_argument(ap)
    args = ap.parse_args(argv)

    import sys

    import torch

    from graphsys.datasets import load_dataset
    from graphsys.gnn import load_train_config, train
    from graphsys.storage.graph import open_graph

    torch.set_num_threads(args.threads)
    overrides: dict = {}
    if args.max_seconds is not None:
        overrides["rgcn"] = {"max_seconds": args.max_seconds}
    if args.batch_edges is not None:
        overrides["batch_size"] = args.batch_edges
    cfg = load_train_config(args.config, overrides)
    if args.graph is not None and args.graph.exists():
        graph = open_graph(args.graph)
    else:
        out = args.graph or Path(tempfile.mkdtemp()) / "fb15k-237"
        graph = load_dataset("fb15k-237", out, mirror=args.mirror)
    log = (lambda rec: print(rec, file=sys.stderr, flush=True)) if args.log else None
    t0 = time.perf_counter()
    res = train(graph, cfg, log=log)
    wall = time.perf_counter() - t0
    m = res.metrics
    load = os.getloadavg()[0]
    emit({"workload": f"FB15k-237 link prediction, R-GCN + DistMult (d={cfg.hidden}, "
                      f"{cfg.rgcn.num_layers} layers, {res.extra['steps']} steps of "
                      f"{cfg.batch_size:,} triples): filtered test MRR",
          "peer": "R-GCN paper (Schlichtkrull et al. 2018), d=500, trained to convergence",
          "peer_figure": PAPER_MRR, "graphsys_figure": round(m["mrr"], 4), "unit": "",
          "ratio": round(m["mrr"] / PAPER_MRR, 2),
          "machine": f"{os.cpu_count()} shared cores, {args.threads} torch thread, "
                     f"load {load:.1f}",
          "mrr": m["mrr"], "hits@1": m["hits@1"], "hits@3": m["hits@3"],
          "hits@10": m["hits@10"], "paper_hits@10": PAPER_HITS10,
          "mean_rank": m["mean_rank"], "test_triples": m["count"], "protocol": res.protocol,
          "steps": res.extra["steps"], "train_seconds": round(res.extra["train_seconds"], 1),
          "wall_seconds": round(wall, 1), "history": res.history}, args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
