#!/usr/bin/env python
"""A custom loop on ``TemporalNeighborSampler`` under three thread settings, each in a
fresh process: ``default`` (the libraries' own thread counts and wait policy, no graphsys
policy, every hop numba-parallel: the sampler before the policy), ``one``
(``NUMBA_NUM_THREADS=1``, ``OMP_NUM_THREADS=1``), ``policy``
(:func:`graphsys.threads.apply_thread_policy`, as the sampler's constructor applies it).

The loop is TGN's shape: events in time order, ``--batch`` at a time; each batch samples the
10 most recent earlier neighbours of its sources (numba-parallel) and then runs a small
torch step on them (gather embeddings, a linear layer, a mean). Timed: the whole pass,
median of ``--repeats``. Prints one JSON line.

Usage::

    python benchmarks/sampling/temporal_threads.py [--events 200000] [--batch 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository root

from benchmarks import harness  # noqa: E402


def child(setting: str, graph: str, batch: int, repeats: int) -> dict:
    """One setting's loop seconds (runs in the child process)."""
    import numpy as np
    import torch

    import graphsys
    from graphsys.sampling import temporal as tmod

    parallel = None
    if setting == "default":   # the sampler as before the policy: none, every hop parallel
        import graphsys.threads as th
        th._applied = th.ThreadPolicy(0, 0, 0)
        parallel = True
    g = graphsys.open_graph(graph)
    src = np.concatenate([e[0] for e in g.iter_edges()])
    t = np.concatenate(list(g.edge_column("timestamp")))
    order = np.argsort(t, kind="stable")
    src, t, n, events = src[order], t[order], g.num_nodes(), len(src)
    sampler = tmod.TemporalNeighborSampler(g, 10)
    emb, lin = torch.randn(n, 64), torch.nn.Linear(64, 64)
    sampler.sample_hop(src[:10], t[:10], 10)     # compile outside timing
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with torch.no_grad():
            for s in range(0, events, batch):
                hop = sampler.sample_hop(src[s:s + batch], np.full(min(batch, events - s), t[s]),
                                         10, parallel=parallel)
                nbr = torch.from_numpy(np.maximum(hop.nbr, 0))
                lin(emb[nbr]).relu().mean(1)
        times.append(time.perf_counter() - t0)
    import numba
    return {"seconds": sorted(times)[len(times) // 2], "numba_threads": numba.get_num_threads(),
            "torch_threads": torch.get_num_threads()}


def build(path: str, events: int) -> None:
    """The input graph: uniform random events among ``events / 20`` nodes."""
    import numpy as np
    import pyarrow as pa

    import graphsys

    rng = np.random.default_rng(0)
    n = max(events // 20, 10)
    graphsys.from_arrow(pa.table({"src": rng.integers(0, n, events),
                                  "dst": rng.integers(0, n, events),
                                  "timestamp": np.sort(rng.integers(0, 10**7, events))}),
                        path, edge_columns=["timestamp"])


def main(argv: list[str] | None = None) -> None:
    p = harness.parser(__doc__)
    p.add_argument("--events", type=int, default=200_000)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--graph", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.graph, a.batch, a.repeats)))
        return
    run = harness.Run("sampling/temporal_threads", a.record, memory=False)
    graph = tempfile.mkdtemp() + "/g"
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                    f"from benchmarks.sampling.temporal_threads import build; "
                    f"build({graph!r}, {a.events})"], check=True)
    out = {"events": a.events, "batch": a.batch, "cores": os.cpu_count()}
    for setting in ("default", "one", "policy"):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "GRAPHSYS_THREADS"):
            env.pop(k, None)
        if setting == "one":
            env.update(NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", GRAPHSYS_THREADS="0")
        done = subprocess.run([sys.executable, __file__, "--child", setting, "--graph",
                               graph, "--batch", str(a.batch), "--repeats",
                               str(a.repeats)], env=env, capture_output=True, text=True,
                              check=True)
        out[setting] = json.loads(done.stdout.strip().splitlines()[-1])
    run.emit(**out)


if __name__ == "__main__":
    main()
