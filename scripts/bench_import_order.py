#!/usr/bin/env python
"""Benchmark a GraphSAGE minibatch epoch and a layer-wise inference with ``torch`` imported
before ``graphsys`` and after it.

A labelled SBM (``--nodes``, 5 edges per node, ``--features`` wide features) is built and
stored once; then each order runs in its own fresh process, the two orders taking turns
``--pairs`` times (torch first, graphsys first, torch first, ...). Each process times one
``graphsys.gnn.train`` run (GraphSAGE, fanouts 10,10, ``--epochs`` epochs, one sampling
worker; its ``train_seconds``) and then ``embed_checkpoint`` of its checkpoint (layer-wise
inference over every node), and reports for each phase the wall and CPU time, the
voluntary and involuntary context switches (``resource.getrusage``), the numba threading
layer and the OpenMP runtimes loaded (``/proc/self/maps``). A first, untimed process
fills numba's cache. The JSON line holds every run, the medians per order, the per-pair
ratios (torch-first time over graphsys-first time) of the training steps
(``steps``), the whole ``train`` call and the inference, and the load average before and
after::

    python scripts/bench_import_order.py [--work DIR] [--nodes 100000] [--features 100]
        [--pairs 3] [--epochs 1] [--record FILE]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from render_results import add_record_argument, emit

ORDERS = ("torch-first", "graphsys-first")


def build(work: Path, nodes: int, features: int) -> Path:
    import numpy as np

    import graphsys
    from graphsys.generators import sbm

    m = sbm(nodes, 5 * nodes, blocks=4, features=features, train_per_class=nodes // 20,
            num_val=1000, num_test=1000)
    node_cols = {k: v for k, v in next(m.nodes(chunk_nodes=nodes)).items() if k != "id"}
    parts = list(m.edges())
    src = np.concatenate([p["src"] for p in parts])
    dst = np.concatenate([p["dst"] for p in parts])
    graphsys.from_numpy(src, dst, work / "sbm", num_nodes=nodes, undirected=True,
                        node_columns=node_cols)
    return work / "sbm"


def _usage():
    import resource
    import time
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (time.perf_counter(), r.ru_utime + r.ru_stime, r.ru_nvcsw, r.ru_nivcsw)


def _delta(a, b) -> dict:
    return {"wall_s": round(b[0] - a[0], 3), "cpu_s": round(b[1] - a[1], 3),
            "voluntary_cs": b[2] - a[2], "involuntary_cs": b[3] - a[3]}


def child(order: str, graph_dir: Path, epochs: int) -> None:
    """One timed process: import in ``order``, train, embed; print one JSON line."""
    first = ("torch", "graphsys") if order == "torch-first" else ("graphsys", "torch")
    for name in first:  # in this order (an import statement pair would be re-sorted)
        importlib.import_module(name)
        if name == "graphsys" and order == "graphsys-first":
            # the opt-in: the wait policy applied before torch loads its OpenMP runtime
            # (torch first: train applies it, holding the loaded runtime's idle team)
            importlib.import_module("graphsys.openmp").apply_wait_policy()
    import numba

    import graphsys
    from graphsys.gnn import TrainConfig, embed_checkpoint, train

    g = graphsys.open_graph(graph_dir)
    out = Path(tempfile.mkdtemp(prefix="gs-import-order-"))
    try:
        cfg = TrainConfig(model="sage", fanouts=[10, 10], hidden=64, epochs=epochs,
                          eval_every=epochs, batch_size=256, num_workers=1, seed=0)
        t0 = _usage()
        res = train(g, cfg, out=out / "run")
        t1 = _usage()
        embed_checkpoint(out / "run" / "checkpoint", out / "emb", graph=g)
        t2 = _usage()
        runtimes = sorted({line.split()[-1] for line in open("/proc/self/maps")
                           if "libgomp" in line or "libtbb" in line or "libiomp" in line})
        print(json.dumps({"order": order, "train": _delta(t0, t1) | {
            "train_seconds": round(res.extra["train_seconds"], 3)},
            "inference": _delta(t1, t2), "threading_layer": numba.threading_layer(),
            "numba_threads": numba.get_num_threads(), "openmp_runtimes": runtimes,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def run_child(order: str, graph_dir: Path, epochs: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", order, "--graph",
                          str(graph_dir), "--epochs", str(epochs)],
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{order} run failed: {out.stderr.strip().splitlines()[-1:]}")
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    rec["loadavg"] = os.getloadavg()[0]
    return rec


def fig(rec: dict, phase: str) -> float:
    """A run's seconds for ``phase``: the training steps, the whole train call, inference."""
    return rec["train"]["train_seconds"] if phase == "steps" else rec[phase]["wall_s"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--child", choices=ORDERS, help=argparse.SUPPRESS)
    ap.add_argument("--graph", type=Path, help=argparse.SUPPRESS)
    add_record_argument(ap)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.graph, args.epochs)
        return 0
    work = Path(args.work or tempfile.mkdtemp(prefix="gs-bench-import-"))
    work.mkdir(parents=True, exist_ok=True)
    graph_dir = work / "sbm" if (work / "sbm").exists() else build(work, args.nodes,
                                                                  args.features)
    load_before = os.getloadavg()
    run_child("graphsys-first", graph_dir, 1)  # fills numba's cache
    runs = []
    for _ in range(args.pairs):
        runs.append([run_child(o, graph_dir, args.epochs) for o in ORDERS])
    phases = ("steps", "train", "inference")
    med = {o: {ph: statistics.median(fig(p[i], ph) for p in runs) for ph in phases}
           for i, o in enumerate(ORDERS)}
    pair_ratios = {ph: [round(fig(p[0], ph) / fig(p[1], ph), 3) for p in runs]
                   for ph in phases}
    emit({"benchmark": "import_order", "nodes": args.nodes, "features": args.features,
          "epochs": args.epochs, "median_wall_s": med, "pair_ratios": pair_ratios,
          "median_ratio": {k: statistics.median(v) for k, v in pair_ratios.items()},
          "load_before": load_before, "load_after": os.getloadavg(),
          "cpu_count": os.cpu_count(), "runs": runs}, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
