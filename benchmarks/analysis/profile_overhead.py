#!/usr/bin/env python
"""The profiler's own cost: ``graphsys profile --workload gnn`` against the plain
``graphsys gnn train`` it profiles, whole processes, alternated.

Builds (or reuses, under ``--work``) a seeded labelled SBM (``graphsys.generators.sbm``:
100,000 nodes, 500,000 undirected edges, 4 classes, 12,500 training nodes per class, 16
features, seed 0), then runs, in turns, ``graphsys gnn train --graph G --fanouts 10,5
--epochs E --out DIR`` (the plain run) and ``graphsys profile --workload gnn G --set
epochs=E --report R.html`` (the profile of the same training: fanouts 10,5 are the
profile's defaults), each a fresh process, measuring wall seconds and peak RSS / peak
anonymous RSS from outside. Quotes the medians and the ratios profile / plain (the goal:
at most 1.5 for both), and what the profile says its own cost was. With ``--before SRC``
(another graphsys source tree, e.g. ``git archive COMMIT | tar -x -C SRC``) that tree's
``graphsys profile`` runs as a third side in the same turns (``before_*``). Usage::

    python benchmarks/analysis/profile_overhead.py [--epochs 3] [--turns 3] [--work DIR]
        [--before SRC]
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

NODES, EDGES, TRAIN_PER_CLASS, SEED = 100_000, 500_000, 12_500, 0


def sbm_graph(work: Path) -> Path:
    """The SBM graph under ``work`` (built once)."""
    graph = work / f"sbm-{NODES}-{EDGES}-t{TRAIN_PER_CLASS}-s{SEED}"
    if (graph / "manifest.json").is_file():
        return graph
    import graphsys
    from graphsys.generators import sbm, write_edges
    from graphsys.generators.writer import write_nodes

    harness.log(f"generating the SBM: {NODES:,} nodes, {EDGES:,} edges")
    model = sbm(NODES, EDGES, train_per_class=TRAIN_PER_CLASS, seed=SEED)
    edges, nodes = work / "sbm.parquet", work / "sbm.nodes.parquet"
    write_edges(model.edges(), edges, overwrite=True)
    write_nodes(model.nodes(), nodes, features=model.features, overwrite=True)
    graphsys.ingest(edges, graph, undirected=True, nodes=nodes)
    edges.unlink()
    nodes.unlink()
    return graph


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/profile_overhead_bench"))
    ap.add_argument("--before", type=Path, default=None,
                    help="another graphsys source tree whose profile runs as a third side")
    args = ap.parse_args(argv)
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    graph = sbm_graph(args.work)
    run = harness.Run("analysis/profile_overhead", args.record, memory=False)
    gs = [sys.executable, "-m", "graphsys"]
    out, report = args.work / "train-out", args.work / "profile.html"

    def plain():
        shutil.rmtree(out, ignore_errors=True)
        return harness.run_child(gs + ["gnn", "train", "--graph", graph, "--fanouts", "10,5",
                                       "--epochs", str(args.epochs), "--out", out, "--quiet",
                                       "--json"])

    def profile(env=None, cwd=None):
        return harness.run_child(gs + ["profile", "--workload", "gnn", graph, "--set",
                                       f"epochs={args.epochs}", "--report", report,
                                       "--overwrite", "--quiet", "--json"], env=env, cwd=cwd)

    sides = {"plain": plain, "profile": profile}
    if args.before is not None:
        src = args.before.resolve()  # python -m puts the working directory first
        env = dict(os.environ, PYTHONPATH=str(src))
        sides["before"] = lambda: profile(env, src)
    turns = harness.alternate(sides, args.turns)
    p, q = turns["plain"], turns["profile"]
    before = {}
    if args.before is not None:
        b = turns["before"]
        before = {"before_source": str(args.before),
                  "before_seconds": harness.spread([c.seconds for c in b]),
                  "before_peak_rss_bytes": harness.median(c.peak_rss_bytes for c in b),
                  "before_time_ratio": harness.pair_ratios([c.seconds for c in b],
                                                           [c.seconds for c in p]),
                  "before_rss_ratio": harness.pair_ratios([c.peak_rss_bytes for c in b],
                                                          [c.peak_rss_bytes for c in p])}
    own = [c.json["time"]["overhead"] for c in q]
    run.emit(graph={"nodes": NODES, "edges": EDGES, "train_nodes": 4 * TRAIN_PER_CLASS,
                    "seed": SEED}, epochs=args.epochs, turns=args.turns,
             plain_seconds=harness.spread([c.seconds for c in p]),
             profile_seconds=harness.spread([c.seconds for c in q]),
             plain_peak_rss_bytes=harness.median(c.peak_rss_bytes for c in p),
             profile_peak_rss_bytes=harness.median(c.peak_rss_bytes for c in q),
             plain_peak_rss_anon_bytes=harness.median(c.peak_rss_anon_bytes for c in p),
             profile_peak_rss_anon_bytes=harness.median(c.peak_rss_anon_bytes for c in q),
             time_ratio=harness.pair_ratios([c.seconds for c in q], [c.seconds for c in p]),
             rss_ratio=harness.pair_ratios([c.peak_rss_bytes for c in q],
                                           [c.peak_rss_bytes for c in p]),
             stated_profiler_seconds=harness.median(o["profiler_seconds"] for o in own),
             stated_events=own[-1]["events"],
             profile_wall_seconds=harness.median(c.json["time"]["wall_seconds"] for c in q),
             sampled=q[-1].json["time"].get("sampled"),
             threads=q[-1].json["time"].get("threads", []), **before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
