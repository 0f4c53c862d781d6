#!/usr/bin/env python
"""Interop cost: ``graphsys.from_pyg`` / ``graphsys.to_pyg`` beside PyG's own ``Data``
construction, on ogbn-arxiv-sized synthetic data.

Data: ``--nodes`` (169,343) nodes, ``--edges`` (1,166,243) random
directed edges (numpy ``default_rng(seed)``), ``--dim`` (128) float32 features, int64
labels and a bool train mask, as ogbn-arxiv has. Timed, each in a fresh child process (so
peak RSS is the step's own), medians of ``--repeats``:

* ``pyg_data``: ``torch_geometric.data.Data(x=, y=, edge_index=, train_mask=)`` from the
  tensors plus ``validate()`` and ``coalesce()`` (what a PyG user's loader does with an
  edge list; the peer);
* ``from_pyg``: that Data ingested into a graph directory with ``--partitions`` partitions
  (partition, bucket, write Arrow, sha256, manifest);
* ``to_pyg``: the stored graph read back as a Data (edges, features, labels, mask).

The steps take turns (PyG, from_pyg, to_pyg, PyG, ...). Peak RSS and peak anonymous RSS
of each step's process are sampled from outside (``harness.run_child``); the input tensors
are built in each child (their time is not counted, their memory is:
``baseline_rss_bytes`` is the RSS after building them). Usage::

    python benchmarks/interop/pyg_data.py [--nodes N] [--edges E] [--dim D]
        [--partitions P] [--repeats 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

STEPS = ("pyg_data", "from_pyg", "to_pyg")


def _build(args):
    import numpy as np
    import torch
    from torch_geometric.data import Data

    rng = np.random.default_rng(args.seed)
    ei = torch.from_numpy(rng.integers(0, args.nodes, (2, args.edges), dtype=np.int64))
    x = torch.from_numpy(rng.standard_normal((args.nodes, args.dim), dtype=np.float32))
    y = torch.from_numpy(rng.integers(0, 40, args.nodes, dtype=np.int64))
    mask = torch.from_numpy(rng.random(args.nodes) < 0.5)
    return Data, ei, x, y, mask


def child(args) -> None:
    """One step in this (fresh) process; prints its seconds, edges and baseline RSS."""
    import graphsys
    from graphsys.memory import current_memory

    Data, ei, x, y, mask = _build(args)
    out = Path(args.work) / "g"
    if args.step == "to_pyg":
        if not (out / "manifest.json").exists():
            graphsys.from_pyg(Data(x=x, y=y, edge_index=ei, train_mask=mask), out,
                              partitions=args.partitions)
        del Data, ei, x, y, mask
    base = current_memory().total
    t0 = time.perf_counter()
    if args.step == "pyg_data":
        d = Data(x=x, y=y, edge_index=ei, train_mask=mask)
        d.validate(raise_on_error=True)
        d = d.coalesce()
        n_edges = d.num_edges
    elif args.step == "from_pyg":
        shutil.rmtree(out, ignore_errors=True)
        g = graphsys.from_pyg(Data(x=x, y=y, edge_index=ei, train_mask=mask), out,
                              partitions=args.partitions)
        n_edges = g.num_edges()
    else:
        g = graphsys.open_graph(out)
        d = graphsys.to_pyg(g)
        n_edges = d.num_edges
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "edges": n_edges, "baseline_rss_bytes": base}))


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--nodes", type=int, default=169_343)
    ap.add_argument("--edges", type=int, default=1_166_243)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default=None)
    ap.add_argument("--step", choices=STEPS, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.step:
        child(args)
        return 0
    run = harness.Run("interop/pyg_data", args.record, memory=False)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-interop-"))
    work.mkdir(parents=True, exist_ok=True)
    options = [f"--{k}={getattr(args, k)}" for k in ("nodes", "edges", "dim", "partitions",
                                                      "seed")]

    def step(name: str):
        return lambda: harness.run_child([sys.executable, __file__, "--step", name, "--work",
                                          work, *options])

    turns = harness.alternate({name: step(name) for name in STEPS}, args.repeats)
    results = {}
    for name, runs in turns.items():
        seconds = [r.json["seconds"] for r in runs]
        results[name] = {
            "seconds_median": round(harness.median(seconds), 3),
            "seconds": [round(x, 3) for x in seconds],
            "peak_rss_bytes": max(r.peak_rss_bytes for r in runs),
            "peak_rss_anon_bytes": max(r.peak_rss_anon_bytes for r in runs),
            "baseline_rss_bytes": min(r.json["baseline_rss_bytes"] for r in runs),
            "edges": runs[0].json["edges"]}
    shutil.rmtree(work / "g", ignore_errors=True)
    peer = turns["pyg_data"]
    run.emit(nodes=args.nodes, edges=args.edges, dim=args.dim, partitions=args.partitions,
             results=results,
             from_pyg_vs_pyg_data=harness.pair_ratios(
                 [r.json["seconds"] for r in turns["from_pyg"]],
                 [r.json["seconds"] for r in peer], 2),
             to_pyg_vs_pyg_data=harness.pair_ratios(
                 [r.json["seconds"] for r in turns["to_pyg"]],
                 [r.json["seconds"] for r in peer], 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
