#!/usr/bin/env python
"""Temporal neighbour sampling throughput (sampled edges/s): graphsys's
``TemporalNeighborSampler`` beside PyG's TGN ``LastNeighborLoader`` on the same events.

The workload is TGN's: the events of a temporal graph (every stored edge, in time order)
in batches of ``--batch`` (200); for each batch, the 10 most recent earlier neighbours of
its distinct source and destination nodes. graphsys draws them from the temporal index
(``graphsys index --temporal``, mapped; built before timing) strictly before the batch's
first event; PyG's loader answers from the neighbours inserted so far and then inserts the
batch (``loader(n_id)``, ``loader.insert(src, dst)``), as ``examples/tgn.py`` does (so it
also returns an earlier batch's events stamped at this batch's first time, which graphsys,
strictly before, leaves out: the sampled-edge counts differ by those few). PyG's
``NeighborLoader(time_attr=...)`` would need pyg-lib or torch-sparse, neither of which
installs for torch 2.13 on CPU from the package index (pyg-lib is not on it, torch-sparse
only as a source distribution), so the pure-PyG loader is the peer. Timed: the whole pass
over the events, per side; the sides alternate ``--pairs`` times; figures are medians. Also
reported for graphsys alone: every event sampled at once at its own time
(``bulk_edges_per_s``, numba-parallel over events) and the uniform strategy
(``uniform_edges_per_s``).

Usage::

    python benchmarks/sampling/temporal_sampler.py --work DIR
        [--datasets collegemsg,bitcoin-otc] [--pairs 3] [--record FILE]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness

K = 10


def measure(graph, args) -> dict:
    """Both sides' sampled edges/s on one graph's events (see the module docstring)."""
    import torch
    from torch_geometric.nn.models.tgn import LastNeighborLoader

    from graphsys import open_graph
    from graphsys.gnn.temporal_task import Events
    from graphsys.sampling import TemporalNeighborSampler
    from graphsys.storage.adjacency_index import build_index

    build_index(graph, ("temporal",))
    graph = open_graph(graph.path)
    ev = Events(graph)
    starts = list(range(0, len(ev.src), args.batch))
    src_t, dst_t = torch.from_numpy(ev.src), torch.from_numpy(ev.dst)
    sampler = TemporalNeighborSampler(graph, K)
    uniform = TemporalNeighborSampler(graph, K, strategy="uniform")
    sampler.sample_hop(ev.src[:10], ev.time[:10], K)          # compile outside timing
    uniform.sample_hop(ev.src[:10], ev.time[:10], K)

    def ours(s=sampler):
        t0, edges = time.perf_counter(), 0
        for a in starts:
            q = np.unique(np.concatenate([ev.src[a:a + args.batch], ev.dst[a:a + args.batch]]))
            edges += s.sample_hop(q, np.full(len(q), ev.time[a]), K).num_edges
        return edges / (time.perf_counter() - t0), edges

    def pyg():
        loader = LastNeighborLoader(graph.num_nodes(), size=K)
        t0, edges = time.perf_counter(), 0
        for a in starts:
            s, d = src_t[a:a + args.batch], dst_t[a:a + args.batch]
            _, edge_index, _ = loader(torch.cat([s, d]).unique())
            edges += int(edge_index.size(1))
            loader.insert(s, d)
        return edges / (time.perf_counter() - t0), edges

    def bulk():
        t0 = time.perf_counter()
        hop = sampler.sample_hop(ev.src, ev.time, K)
        return hop.num_edges / (time.perf_counter() - t0)

    turns = harness.alternate({"graphsys": ours, "pyg": pyg}, args.pairs)
    rates = {side: [r for r, _ in v] for side, v in turns.items()}
    return {
        "events": len(ev.src), "batches": len(starts),
        "graphsys_edges_per_s": harness.spread(rates["graphsys"]),
        "pyg_edges_per_s": harness.spread(rates["pyg"]),
        "sampled_edges": {side: v[0][1] for side, v in turns.items()},
        "ratio": harness.pair_ratios(rates["graphsys"], rates["pyg"]),
        "bulk_edges_per_s": harness.spread([bulk() for _ in range(args.pairs)]),
        "uniform_edges_per_s": harness.spread([ours(uniform)[0] for _ in range(args.pairs)]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    harness.add_mirror_argument(ap)
    ap.add_argument("--work", type=Path, required=True, help="dataset directory")
    ap.add_argument("--datasets", default="collegemsg,bitcoin-otc")
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args(argv)
    harness.use_mirror(args.mirror)
    run = harness.Run("sampling/temporal_sampler", args.record)
    import torch

    run["threads"] = {"torch": torch.get_num_threads()}
    out = {}
    for name in args.datasets.split(","):
        graph = harness.dataset(run, name, args.work / name)
        if graph is not None:
            out[name] = measure(graph, args)
            harness.log(f"{name}: {out[name]}")
    run.emit(datasets=out, k=K, batch=args.batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
