#!/usr/bin/env python
"""Interop cost: ``graphsys.from_pyg`` / ``graphsys.to_pyg`` beside PyG's own ``Data``
construction, on ogbn-arxiv-sized synthetic data.

Prints one JSON line. Data: ``--nodes`` (169,343) nodes, ``--edges`` (1,166,243) random
directed edges (numpy ``default_rng(seed)``), ``--dim`` (128) float32 features, int64
labels and a bool train mask, as ogbn-arxiv has. Timed, each in a fresh child process (so
peak RSS is the step's own), medians of ``--repeats``:

* ``pyg_data``: ``torch_geometric.data.Data(x=, y=, edge_index=, train_mask=)`` from the
  tensors plus ``validate()`` and ``coalesce()`` (what a PyG user's loader does with an
  edge list; the peer);
* ``from_pyg``: that Data ingested into a graph directory with ``--partitions`` partitions
  (partition, bucket, write Arrow, sha256, manifest);
* ``to_pyg``: the stored graph read back as a Data (edges, features, labels, mask).

Peak RSS and peak anonymous RSS (``VmHWM`` / ``RssAnon`` high-water via /proc) are
reported per step. The input tensors are built in each child (their time is not counted,
their memory is: ``baseline_rss`` is the RSS after building them). Usage::

    python scripts/bench_interop.py [--nodes N] [--edges E] [--dim D] [--partitions P]
        [--repeats 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from render_results import add_record_argument, emit


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


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


class _AnonPeak:
    """Samples RssAnon every 5 ms in a thread: its maximum is the step's anonymous peak."""

    def __init__(self):
        import threading

        self.peak = _status_kb("RssAnon")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.wait(0.005):
            self.peak = max(self.peak, _status_kb("RssAnon"))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, _status_kb("RssAnon"))


def child(args) -> None:
    import graphsys

    Data, ei, x, y, mask = _build(args)
    base = _status_kb("VmRSS")
    out = Path(args.work) / "g"
    if args.step == "to_pyg":
        if not (out / "manifest.json").exists():
            graphsys.from_pyg(Data(x=x, y=y, edge_index=ei, train_mask=mask), out,
                              partitions=args.partitions)
        del Data, ei, x, y, mask
        base = _status_kb("VmRSS")
    with _AnonPeak() as anon:
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
    print(json.dumps({"seconds": seconds, "edges": n_edges, "baseline_rss_mb": base / 1024,
                      "peak_rss_mb": _status_kb("VmHWM") / 1024,
                      "peak_anon_rss_mb": anon.peak / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=169_343)
    ap.add_argument("--edges", type=int, default=1_166_243)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default=None)
    ap.add_argument("--step", default=None, help=argparse.SUPPRESS)
    add_record_argument(ap)
    args = ap.parse_args()
    if args.step:
        return child(args)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-interop-"))
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for step in ("pyg_data", "from_pyg", "to_pyg"):
        runs = []
        for _ in range(args.repeats):
            cmd = [sys.executable, __file__, "--step", step, "--work", str(work),
                   *[f"--{k}={getattr(args, k)}" for k in ("nodes", "edges", "dim",
                                                          "partitions", "seed")]]
            r = subprocess.run(cmd, capture_output=True, text=True, check=True)
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
        results[step] = {
            "seconds_median": round(statistics.median(r["seconds"] for r in runs), 3),
            "seconds": [round(r["seconds"], 3) for r in runs],
            "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
            "peak_anon_rss_mb": round(max(r["peak_anon_rss_mb"] for r in runs), 1),
            "baseline_rss_mb": round(min(r["baseline_rss_mb"] for r in runs), 1),
            "edges": runs[0]["edges"]}
    peer = results["pyg_data"]["seconds_median"]
    emit({
        "bench": "interop", "nodes": args.nodes, "edges": args.edges, "dim": args.dim,
        "partitions": args.partitions, "results": results,
        "from_pyg_vs_pyg_data": round(results["from_pyg"]["seconds_median"] / peer, 2),
        "to_pyg_vs_pyg_data": round(results["to_pyg"]["seconds_median"] / peer, 2),
        "machine": platform.machine(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}, args.record)
    shutil.rmtree(work / "g", ignore_errors=True)


if __name__ == "__main__":
    main()
