#!/usr/bin/env python
"""A GraphSAGE minibatch epoch and a layer-wise inference with ``torch`` imported before
``graphsys`` beside the same with ``graphsys`` imported first.

A labelled SBM (``--nodes``, 5 edges per node, ``--features`` wide features) is built and
stored once; then each order runs in its own fresh process, the two orders taking turns
``--pairs`` times (torch first, graphsys first, torch first, ...). Each process times one
``graphsys.gnn.train`` run (GraphSAGE, fanouts 10,10, ``--epochs`` epochs, one sampling
worker; its ``train_seconds``) and then ``embed_checkpoint`` of its checkpoint (layer-wise
inference over every node), and reports for each phase the wall and CPU time, the
voluntary and involuntary context switches (``resource.getrusage``), the numba threading
layer and the OpenMP runtimes loaded (``/proc/self/maps``). A first, untimed process
fills numba's cache. The JSON line holds every run, the medians per order and the per-pair
ratios (torch-first time over graphsys-first time) of the training steps (``steps``), the
whole ``train`` call and the inference::

    python benchmarks/gnn/import_order.py [--work DIR] [--nodes 100k] [--features 100]
        [--pairs 3] [--epochs 1] [--record FILE]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

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


def run_order(order: str, graph_dir: Path, epochs: int) -> dict:
    """One fresh process importing in ``order``: its figures, peaks and the load after."""
    out = harness.run_child([sys.executable, __file__, "--child", order, "--graph", graph_dir,
                             "--epochs", str(epochs)])
    return {**out.json, **out.peaks(), "loadavg": harness.load_average()[0]}


def fig(rec: dict, phase: str) -> float:
    """A run's seconds for ``phase``: the training steps, the whole train call, inference."""
    return rec["train"]["train_seconds"] if phase == "steps" else rec[phase]["wall_s"]


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--nodes", type=harness.count, default=harness.count("100k"))
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--child", choices=ORDERS, help=argparse.SUPPRESS)
    ap.add_argument("--graph", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.graph, args.epochs)
        return 0
    run = harness.Run("gnn/import_order", args.record, memory=False)
    work = Path(args.work or tempfile.mkdtemp(prefix="gs-bench-import-"))
    work.mkdir(parents=True, exist_ok=True)
    graph_dir = work / "sbm" if (work / "sbm").exists() else build(work, args.nodes,
                                                                  args.features)
    run_order("graphsys-first", graph_dir, 1)  # fills numba's cache
    turns = harness.alternate({o: lambda o=o: run_order(o, graph_dir, args.epochs)
                               for o in ORDERS}, args.pairs)
    phases = ("steps", "train", "inference")
    med = {o: {ph: harness.median(fig(r, ph) for r in turns[o]) for ph in phases}
           for o in ORDERS}
    ratios = {ph: harness.pair_ratios([fig(r, ph) for r in turns[ORDERS[0]]],
                                      [fig(r, ph) for r in turns[ORDERS[1]]]) for ph in phases}
    run.emit(nodes=args.nodes, features=args.features, epochs=args.epochs,
             median_wall_s=med, pair_ratios={k: v["ratios"] for k, v in ratios.items()},
             median_ratio={k: v["median"] for k, v in ratios.items()},
             runs=[list(pair) for pair in zip(*(turns[o] for o in ORDERS))])
    return 0


if __name__ == "__main__":
    sys.exit(main())
