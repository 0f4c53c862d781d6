#!/usr/bin/env python3
"""Data-parallel GNN node training: 2 gloo ranks beside 1 process, and the ranks' memory with
features mapped or read into each rank.

Builds a labelled SBM (:func:`graphsys.generators.sbm`, ``--nodes`` nodes, 5 edges per
node, ``--features`` float32 features, no stored masks so the node task draws its seeded
60/20/20 split) twice: ``feat`` in a node column file of its own (memory-mapped,
:func:`~graphsys.storage.node_columns.write_node_column`) and ``feat`` in the node table.

Throughput: GraphSAGE (``--fanouts``, ``--batch-size``, one epoch, dropout 0) on the mapped
graph as 1 process with ``--cores`` torch threads and as 2 gloo ranks of ``--cores // 2``
threads each (``torchrun``'s environment, one process per rank on this machine), taking
turns ``--pairs`` times (1 rank, 2 ranks, 1 rank, ...). A run's rate is its training seeds
over the slowest rank's training seconds (``train_seconds``: evaluation excluded); per core
divides by ``--cores``. The ratio is the median over the pairs of 2-rank over 1-rank rate.

Memory: each rank's peak resident and peak anonymous bytes
(:class:`~graphsys.memory.PeakMemory`) over the whole ``train`` call of a 2-rank run, on
the mapped graph and on the node-table graph (whose features every rank reads into its own
memory).

Usage::

    python benchmarks/gnn/data_parallel.py [--work DIR] [--nodes 200k] [--features 100]
        [--pairs 3] [--skip-throughput | --skip-memory] [--record FILE]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness


def build(work: Path, nodes: int, features: int) -> dict[str, Path]:
    """The SBM stored twice under ``work``: ``{"mapped": dir, "table": dir}`` (reused)."""
    import graphsys
    from graphsys.generators import sbm
    from graphsys.storage.node_columns import write_node_column

    out = {"mapped": work / f"sbm{nodes}-f{features}-mapped",
           "table": work / f"sbm{nodes}-f{features}-table"}
    if all((p / "manifest.json").is_file() for p in out.values()):
        return out
    model = sbm(nodes, 5 * nodes, features=features, seed=0)
    edges = list(model.edges())
    src = np.concatenate([e["src"] for e in edges])
    dst = np.concatenate([e["dst"] for e in edges])
    label = np.empty(nodes, np.int64)
    feat = np.empty((nodes, features), np.float32)
    for chunk in model.nodes():
        label[chunk["id"]] = chunk["label"]
        feat[chunk["id"]] = chunk["feat"]
    common = dict(num_nodes=nodes, undirected=True, partitions=2)
    graphsys.from_numpy(src, dst, out["table"], node_columns={"label": label, "feat": feat},
                        **common)
    g = graphsys.from_numpy(src, dst, out["mapped"], node_columns={"label": label}, **common)
    rows = feat[g.node_ids()]                      # internal-id order
    write_node_column(out["mapped"], "feat", "features", lambda a, b: rows[a:b],
                      dim=features)
    return out


def worker(graph: str, cfg: str, dest: str) -> None:
    """One rank (the environment names it): train, write its figures to ``dest``."""
    from graphsys.gnn import TrainConfig, train
    from graphsys.memory import PeakMemory

    with PeakMemory() as peak:
        res = train(graph, TrainConfig(**json.loads(cfg)), distributed=None)
    ranks = res.extra["ranks"]                 # every rank's seeds and training seconds
    Path(dest).write_text(json.dumps({
        "rank": res.extra["rank"], "seeds": sum(r["seeds"] for r in ranks),
        "seconds": max(r["seconds"] for r in ranks), **peak.to_json()}))


def run(graph: Path, cfg: dict, world: int, threads: int, tmp: Path) -> list[dict]:
    """``world`` rank processes of :func:`worker`; each rank's figures, in rank order."""
    from graphsys.distributed import local_store, rank_environment

    store = local_store()  # the ranks' rendezvous, held until they have exited
    procs, dests = [], []
    for r in range(world):
        dest = tmp / f"rank{r}-{store.port}.json"
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), **rank_environment(store, r, world))
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", str(graph),
                                       json.dumps(cfg), str(dest)], env=env))
        dests.append(dest)
    codes = [p.wait() for p in procs]
    if any(codes):
        raise SystemExit(f"a rank failed (exit codes {codes})")
    return [json.loads(d.read_text()) for d in dests]


def rate(ranks: list[dict]) -> float:
    """Training seeds of all ranks over the slowest rank's training seconds."""
    return ranks[0]["seeds"] / ranks[0]["seconds"]


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:5])
        return 0
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=None,
                    help="directory for the graphs (kept and reused; default: temporary)")
    ap.add_argument("--nodes", type=harness.count, default=harness.count("200k"))
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--fanouts", default="10,10")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--pairs", type=int, default=3, help="turns of 1 and 2 ranks (>= 1)")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 2,
                    help="cores a run uses: the 1-rank run's torch threads, twice the "
                         "threads of each of the 2 ranks (default: this machine's)")
    ap.add_argument("--skip-memory", action="store_true", help="throughput only")
    ap.add_argument("--skip-throughput", action="store_true",
                    help="memory only (after the warm-up run)")
    args = ap.parse_args(argv)
    run_line = harness.Run("gnn/data_parallel", args.record, memory=False)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-gnn-ddp-"))
    work.mkdir(parents=True, exist_ok=True)
    graphs = build(work, args.nodes, args.features)
    cfg = dict(model="sage", fanouts=[int(f) for f in args.fanouts.split(",")], hidden=64,
               epochs=1, eval_every=1, batch_size=args.batch_size, dropout=0.0, seed=0,
               num_workers=1)
    tmp = Path(tempfile.mkdtemp(prefix="ranks-", dir=work))
    one_t, two_t = max(1, args.cores), max(1, args.cores // 2)
    run(graphs["mapped"], cfg, 1, one_t, tmp)          # warm-up: numba caches, page cache
    load = [harness.load_average()[0]]

    def world(size: int, threads: int):
        def once() -> float:
            out = rate(run(graphs["mapped"], cfg, size, threads, tmp))
            load.append(harness.load_average()[0])
            return out
        return once

    turns = harness.alternate({"one": world(1, one_t), "two": world(2, two_t)},
                              0 if args.skip_throughput else max(1, args.pairs))
    ones, twos = turns["one"], turns["two"]
    out = {} if args.skip_throughput else {
        "graph": f"SBM {args.nodes} nodes, {5 * args.nodes} undirected edges, "
                 f"{args.features}-dim float32 features (mapped column)",
        "config": cfg, "cores": args.cores, "threads": {"1_rank": one_t, "2_ranks": two_t},
        "one_rank_seeds_per_s": [round(x) for x in ones],
        "two_ranks_seeds_per_s": [round(x) for x in twos],
        "one_rank_median": round(harness.median(ones)),
        "two_ranks_median": round(harness.median(twos)),
        "one_rank_median_per_core": round(harness.median(ones) / args.cores),
        "two_ranks_median_per_core": round(harness.median(twos) / args.cores),
        "pair_ratios": harness.pair_ratios(twos, ones)["ratios"],
        "ratio_median": harness.pair_ratios(twos, ones)["median"],
        "loadavg_1min": [round(x, 2) for x in load],
    }
    if not args.skip_memory:
        for kind in ("mapped", "table"):
            ranks = run(graphs[kind], cfg, 2, two_t, tmp)
            out[f"memory_2_ranks_{kind}"] = [
                {"rank": r["rank"], "peak_rss_mb": round(r["peak_rss_bytes"] / 2**20),
                 "peak_anon_rss_mb": round(r["peak_rss_anon_bytes"] / 2**20)} for r in ranks]
        out["features_mb"] = round(args.nodes * args.features * 4 / 2**20)
        load.append(harness.load_average()[0])
        out["loadavg_1min"] = [round(x, 2) for x in load]
    run_line.emit(**out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
