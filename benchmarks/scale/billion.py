#!/usr/bin/env python
"""Every engine end to end on one R-MAT graph (1B edges on the big run), memory measured.

A header line (the run's machine, load and graph), then stages, each in a fresh process (so
each peak is its own), each printing one JSON line:
``stage``, ``seconds``, ``edges_per_s``, ``peak_rss_bytes`` (total resident, sampled),
``peak_rss_anon_bytes`` (anonymous: heap and arrays, what a budget bounds; mapped graph
files are page cache and count only in the total), ``lifetime_peak_rss_bytes``
(``ru_maxrss``) and stage-specific fields:

* ``generate``: ``graphsys generate rmat`` to ``WORK/edges.parquet`` (kept across runs);
* ``baseline``: pyarrow streams the same Parquet file into one uncompressed Feather (Arrow
  IPC) file, record batch by record batch: the raw read + write cost of the bytes;
* ``ingest``: ``ingest`` with ``--partitions``, ``--memory-limit``; ``ratio_vs_baseline`` =
  baseline seconds / ingest seconds;
* ``index``: ``graphsys index`` (CSR and CSC, mapped files; with ``--push`` also PageRank's
  push layout, which the ``pagerank_memory`` stage then pushes over);
* ``pagerank_ooc``: out-of-core PageRank, ``--iters`` supersteps: seconds per iteration;
* ``pagerank_memory``: in-memory PageRank on the mapped index: ``setup_seconds`` (no build
  when the index is there), seconds per iteration and the ``method`` (the layout) it ran;
* ``sample``: ``NeighborSampler([10, 25])`` batches of ``--batch-size`` seeds on the mapped
  index (the in-neighbours on the CSC; with ``--symmetric`` the default undirected view on the
  ``sym`` index, which the ``index`` stage then builds too): minibatches/s;
* ``gnn``: GraphSAGE (2 layers, fanouts 10,25) on memory-mapped float16 features whose class
  is planted (``--classes`` communities: features = class mean + noise), ``--gnn-batches``
  steps through the prefetching loader: minibatches/s, sampler-wait share, accuracy;
* ``triangles``: ``mining.triangle_stats`` out of core within ``--memory-limit`` on the
  stored ``sym`` index (``index --symmetric`` builds it): the count and the transitivity.

    python benchmarks/scale/billion.py --edges 1000M --nodes 32Mi --partitions 16 \\
        --memory-limit 4GB --work DIR

``--stages`` picks stages (comma-separated, default all; ``pagerank`` = both PageRank
stages); ``--check-bounds`` exits non-zero when a stage's peak anonymous RSS exceeds its bound
(the CI test runs a small size so). The stages after ``index`` only read the graph, so they
re-run on an existing graph, e.g. the PageRank stages alone, without writing to it::

    python benchmarks/scale/billion.py --graph-dir DIR/g --work DIR/pr --stages pagerank \\
        --iters 5

Their bounds and the header's ``graph_nodes``/``graph_edges`` then come from the stored
graph's manifest (``--edges``/``--nodes`` size only generate and ingest).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

STAGES = ("generate", "baseline", "ingest", "index", "pagerank_ooc", "pagerank_memory",
          "sample", "features", "gnn", "triangles")
#: Names that stand for several stages in ``--stages``.
STAGE_GROUPS = {"pagerank": ("pagerank_ooc", "pagerank_memory")}
#: Stages sized by ``--nodes`` (the id space), not by a stored graph.
BEFORE_GRAPH = ("generate", "baseline", "ingest")
FEATURE_DIM = 64
#: Spread of the planted features around their class mean (class means are N(0, 1)).
FEATURE_NOISE = 4.0
#: The interpreter, numpy, pyarrow, numba and torch imported: the fixed term of every bound.
INTERPRETER_BYTES = 400 << 20


def stored_manifest(graph_dir: Path):
    """The manifest of the graph stored at ``graph_dir``, or None."""
    from graphsys.errors import GraphsysError
    from graphsys.storage.format import read_manifest

    if not (graph_dir / "manifest.json").is_file():
        return None
    try:
        return read_manifest(graph_dir)
    except GraphsysError:
        return None


def stored_counts(graph_dir: Path) -> tuple[int, int] | None:
    """(nodes, edges) of the graph stored at ``graph_dir`` from its manifest, or None."""
    m = stored_manifest(graph_dir)
    if m is None:
        return None
    return (sum(e.num_nodes for e in m.entity_types.values()),
            sum(e.num_edges for e in m.edge_sets.values()))


def has_push_index(graph_dir: Path) -> bool:
    """Whether the stored graph lists a push index (in-memory PageRank then pushes)."""
    m = stored_manifest(graph_dir)
    return m is not None and any("push" in kinds for kinds in m.indexes.values())


def parse_stages(text: str) -> list[str]:
    """``--stages`` to stage names, groups (:data:`STAGE_GROUPS`) expanded, in order."""
    out: list[str] = []
    for name in (s.strip() for s in text.split(",") if s.strip()):
        out += [x for x in STAGE_GROUPS.get(name, (name,)) if x not in out]
    return out


def bounds(args, num_nodes: int) -> dict[str, int]:
    """Peak anonymous RSS bound of each stage, bytes (docs/benchmarks.md states them)."""
    limit = args.memory_limit_bytes
    return {
        "generate": INTERPRETER_BYTES + (256 << 20),
        "baseline": INTERPRETER_BYTES + (256 << 20),
        # ingest: the budget + ids, id map, partition, local offset and routing code of every
        # node (README)
        "ingest": limit + 56 * num_nodes + INTERPRETER_BYTES,
        "index": limit + INTERPRETER_BYTES,
        "pagerank_ooc": 2_500_000_000 if num_nodes > 10**7 else INTERPRETER_BYTES + 64 * num_nodes
        + (256 << 20),
        # in memory: per-node state; over a push index, the ranks, degrees and sent values
        # also in its order plus the block sums (1.67 GB measured at 19.7 M nodes)
        "pagerank_memory": INTERPRETER_BYTES + (96 if has_push_index(args.graph_dir) else 48)
        * num_nodes + (256 << 20),
        "sample": INTERPRETER_BYTES + 16 * num_nodes + (512 << 20),
        "features": INTERPRETER_BYTES + (512 << 20),
        "gnn": 4_000_000_000 if num_nodes > 10**7 else INTERPRETER_BYTES + (512 << 20),
        # out of core: the whole process inside the budget
        "triangles": limit,
    }


# ---------------------------------------------------------------------------------------------
# stages (each runs in its own process)


def stage_generate(args, work: Path) -> dict:
    edges = args.edges_file
    if edges.exists():
        return {"skipped": "exists", "edges": args.edges}
    subprocess.run([sys.executable, "-m", "graphsys", "generate", "rmat", "--nodes",
                    str(args.nodes), "--edges", str(args.edges), "--seed", str(args.seed),
                    "--out", str(edges)], check=True, stdout=subprocess.DEVNULL)
    return {"edges": args.edges, "bytes": edges.stat().st_size, "child_process": True}


def stage_baseline(args, work: Path) -> dict:
    import pyarrow.ipc as paipc
    import pyarrow.parquet as pq

    out = work / "baseline.arrow"
    pf = pq.ParquetFile(str(args.edges_file), pre_buffer=False)
    rows = 0
    with paipc.new_file(str(out), pf.schema_arrow) as writer:
        for batch in pf.iter_batches(batch_size=1 << 20):
            writer.write_batch(batch)
            rows += batch.num_rows
    out.unlink()
    return {"edges": rows}


def stage_ingest(args, work: Path) -> dict:
    import shutil

    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    out = args.graph_dir
    shutil.rmtree(out, ignore_errors=True)
    rep = ingest_sources([EdgeSource([args.edges_file])], out, IngestOptions(
        partitions=args.partitions, memory_limit=args.memory_limit_bytes,
        progress=args.progress))
    return {"edges": sum(rep.edges.values()), "nodes": sum(rep.nodes.values()),
            "phases": rep.seconds, "memory_limit_bytes": args.memory_limit_bytes}


def stage_index(args, work: Path) -> dict:
    from graphsys import open_graph
    from graphsys.storage.adjacency_index import build_index

    g = args.graph_dir
    kinds = ("csr", "csc") + (("push",) if args.push else ()) + (("sym",) if args.symmetric
                                                                  else ())
    build_index(open_graph(g), kinds, memory_limit=args.memory_limit_bytes, force=True,
                progress=args.progress)
    size = sum(f.stat().st_size for f in (g / "index").rglob("*.arrow"))
    return {"edges": 2 * open_graph(g).num_edges(), "index_bytes": size}


def _pagerank(args, work: Path, mode: str) -> dict:
    from graphsys import bsp, open_graph

    graph = open_graph(args.graph_dir)
    t0 = time.perf_counter()
    res = bsp.pagerank(graph, mode=mode, max_iters=args.iters, tol=1e-12,
                       sum_dtype=args.sum_dtype)
    total = time.perf_counter() - t0
    steps = [s.total_seconds for s in res.stats.supersteps]
    per_iter = sorted(steps)[len(steps) // 2] if steps else 0.0
    m = graph.num_edges()
    return {"edges": m * len(steps), "iterations": len(steps), "seconds_per_iter": per_iter,
            "edges_per_s_per_iter": round(m / per_iter) if per_iter else None,
            "setup_seconds": round(res.stats.setup_seconds, 3), "wall_seconds": total,
            "sum_dtype": args.sum_dtype, "method": res.stats.method}


def stage_pagerank_ooc(args, work: Path) -> dict:
    return _pagerank(args, work, "out-of-core")


def stage_pagerank_memory(args, work: Path) -> dict:
    return _pagerank(args, work, "memory")


def stage_sample(args, work: Path) -> dict:
    import numpy as np

    from graphsys import open_graph
    from graphsys.sampling import NeighborSampler

    graph = open_graph(args.graph_dir)
    t0 = time.perf_counter()
    sampler = (NeighborSampler(graph, [10, 25]) if args.symmetric else
               NeighborSampler(graph, [10, 25], symmetric=False, direction="in"))
    setup = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    n = graph.num_nodes()
    edges = 0
    t1 = time.perf_counter()
    for k in range(args.sample_batches):
        seeds = np.unique(rng.integers(0, n, args.batch_size))
        blocks = sampler.sample_blocks(seeds, rng_seed=k)
        edges += sum(b.num_edges for b in blocks)
    secs = time.perf_counter() - t1
    return {"edges": edges, "setup_seconds": round(setup, 3), "symmetric": args.symmetric,
            "mapped": not sampler.adj.indices.flags.writeable,
            "minibatches": args.sample_batches, "minibatches_per_s":
            round(args.sample_batches / secs, 2), "seconds_sampling": secs}


def _planted_labels(seed: int, start: int, stop: int, classes: int):
    import numpy as np

    return np.random.default_rng([seed, start]).integers(0, classes, stop - start)


def stage_features(args, work: Path) -> dict:
    """Planted node classes (uniform) and float16 features = class mean + noise, written as
    memory-mapped node columns ``planted_feat`` / ``planted_label`` (replaced if present)."""
    import json as _json

    import numpy as np

    from graphsys import open_graph
    from graphsys.storage.node_columns import write_node_column

    graph = open_graph(args.graph_dir)
    manifest_path = args.graph_dir / "manifest.json"
    data = _json.loads(manifest_path.read_text())
    for et in data["entity_types"].values():  # a re-run replaces the planted columns
        et["columns"] = [c for c in et["columns"] if not c["name"].startswith("planted_")]
    data["files"] = {k: v for k, v in data["files"].items() if "column-planted_" not in k}
    manifest_path.write_text(_json.dumps(data, indent=1))
    means = np.random.default_rng(args.seed).normal(size=(args.classes, FEATURE_DIM)).astype(
        np.float32)
    chunk = 1 << 18  # rows per fill call: ~4 float32 copies of 64 MB

    def labels(start, stop):
        return _planted_labels(args.seed, start, stop, args.classes)

    def feats(start, stop):
        noise = np.random.default_rng([args.seed, 1, start]).normal(
            size=(stop - start, FEATURE_DIM)).astype(np.float32)
        return (means[labels(start, stop)] + FEATURE_NOISE * noise).astype(np.float16)

    write_node_column(args.graph_dir, "planted_label", "label", labels, chunk_rows=chunk)
    write_node_column(args.graph_dir, "planted_feat", "features", feats, dim=FEATURE_DIM,
                      dtype="float16", chunk_rows=chunk)
    n = graph.num_nodes()
    return {"nodes": n, "feature_bytes": n * FEATURE_DIM * 2, "classes": args.classes}


def stage_gnn(args, work: Path) -> dict:
    """GraphSAGE, 2 layers, fanouts 10,25 over in-neighbours (the mapped CSC), on the
    mapped float16 features; nodes with id % 10 < 8 train, the others test."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from graphsys import open_graph
    from graphsys.gnn.loader import PrefetchLoader
    from graphsys.gnn.model import GNN
    from graphsys.sampling import MiniBatch, NeighborSampler
    from graphsys.sampling.features import feature_rows

    torch.manual_seed(args.seed)
    graph = open_graph(args.graph_dir)
    n = graph.num_nodes()
    feat = graph.mapped_node_column("planted_feat")
    label = graph.mapped_node_column("planted_label")
    sampler = NeighborSampler(graph, [10, 25], symmetric=False, direction="in")
    model = GNN("sage", FEATURE_DIM, 64, args.classes, 2, 0.0)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    def seeds_for(i: int, test: bool) -> np.ndarray:
        rng = np.random.default_rng([args.seed, int(test), i])
        ids = np.unique(rng.integers(0, n, 2 * args.batch_size))
        ids = ids[(ids % 10 >= 8) if test else (ids % 10 < 8)]
        return ids[: args.batch_size]

    def make_batch(i: int, test: bool = False) -> MiniBatch:
        seeds = seeds_for(i, test)
        blocks = sampler.sample_blocks(seeds, rng_seed=i, parallel=False)
        x = feature_rows(feat, blocks[0].src_nodes)
        y = torch.from_numpy(label[seeds])
        return MiniBatch(torch.from_numpy(seeds), blocks, {"x": x, "y": y})

    wait = step = first_wait = 0.0
    edges = 0
    t0 = time.perf_counter()
    it = iter(PrefetchLoader(args.gnn_batches, make_batch, num_workers=args.gnn_workers,
                             prefetch=4))
    losses = []
    while True:
        tw = time.perf_counter()
        batch = next(it, None)
        ts = time.perf_counter()
        wait += ts - tw
        if not losses:
            first_wait = ts - tw  # the pipeline's fill: the first batch has no overlap
        if batch is None:
            break
        logits = model(batch.blocks, batch.extra["x"])
        loss = F.cross_entropy(logits, batch.extra["y"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        edges += sum(b.num_edges for b in batch.blocks)
        step += time.perf_counter() - ts
    train_seconds = time.perf_counter() - t0
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for i in range(10):
            b = make_batch(10**6 + i, test=True)
            pred = model(b.blocks, b.extra["x"]).argmax(1)
            correct += int((pred == b.extra["y"]).sum())
            total += len(pred)
    return {"edges": edges, "graph_edges": graph.num_edges(), "minibatches": args.gnn_batches,
            "minibatches_per_s": round(args.gnn_batches / train_seconds, 2),
            "sampler_wait_share": round(wait / train_seconds, 4),
            "sampler_wait_share_after_first": round((wait - first_wait)
                                                    / (train_seconds - first_wait), 4),
            "first_batch_wait_s": round(first_wait, 3),
            "train_seconds": round(train_seconds, 2), "first_loss": losses[0],
            "last_loss": float(np.mean(losses[-10:])), "test_accuracy": correct / total,
            "chance_accuracy": 1 / args.classes}


def stage_triangles(args, work: Path) -> dict:
    from graphsys import mining, open_graph
    from graphsys.errors import GraphsysError

    graph = open_graph(args.graph_dir)
    if graph.adjacency_index(None, "sym") is None:
        raise GraphsysError("the triangles stage reads the sym index: run the index stage "
                            "with --symmetric first")
    stats = mining.triangle_stats(graph, mode="out-of-core", memory_limit=args.memory_limit,
                                  progress=args.progress)
    return {"edges": graph.num_edges(), "triangles": stats.count,
            "transitivity": stats.transitivity, "memory_limit_bytes": args.memory_limit}


STAGE_FUNCS = {name: globals()[f"stage_{name}"] for name in STAGES if f"stage_{name}" in
               globals()}


def run_child(args) -> None:
    from graphsys.memory import PeakMemory, lifetime_peak_rss

    work = Path(args.work)
    with PeakMemory() as peak:
        t0 = time.perf_counter()
        out = STAGE_FUNCS[args.child](args, work)
        secs = time.perf_counter() - t0
    line = {"stage": args.child, "seconds": round(secs, 3),
            "edges_per_s": round(out.get("edges", 0) / secs) if secs else None,
            **peak.to_json(), "lifetime_peak_rss_bytes": lifetime_peak_rss(), **out}
    print(json.dumps(line))


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--edges", type=harness.count, default=harness.count("4M"),
                    help="M, e.g. 4M, 1000M, 1B (default 4M)")
    ap.add_argument("--nodes", type=harness.count, default=None,
                    help="N, e.g. 32Mi (default M/32, power of 2)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--memory-limit", type=harness.size, default=harness.size("1GB"),
                    help="ingest/index budget (default 1GB)")
    ap.add_argument("--work", required=True, help="work directory (edges and graph kept)")
    ap.add_argument("--edges-file", help="edge list (default WORK/edges.parquet)")
    ap.add_argument("--graph-dir", help="graph directory (default WORK/graph)")
    ap.add_argument("--stages", default=",".join(STAGES),
                    help=f"comma-separated, of {', '.join(STAGES)}, or pagerank (both)")
    ap.add_argument("--iters", type=int, default=5, help="PageRank supersteps (default 5)")
    ap.add_argument("--sum-dtype", choices=("float64", "float32"), default="float64",
                    help="PageRank's sum_dtype (default float64)")
    ap.add_argument("--batch-size", type=int, default=1024, help="seeds per minibatch")
    ap.add_argument("--sample-batches", type=int, default=50)
    ap.add_argument("--gnn-batches", type=int, default=200)
    ap.add_argument("--classes", type=int, default=8)
    ap.add_argument("--gnn-workers", type=int, default=2,
                    help="sampling threads of the gnn stage's loader (default 2)")
    ap.add_argument("--push", action="store_true",
                    help="index stage: also store PageRank's push layout (index --push)")
    ap.add_argument("--symmetric", action="store_true",
                    help="index stage: also store the undirected view (index --undirected); "
                         "sample stage: sample it, as NeighborSampler's default does")
    ap.add_argument("--check-bounds", action="store_true")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--child", choices=STAGES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.nodes = args.nodes or 1 << max(1, (args.edges // 32).bit_length() - 1)
    args.memory_limit_bytes = args.memory_limit
    args.edges_file = Path(args.edges_file or Path(args.work) / "edges.parquet")
    args.graph_dir = Path(args.graph_dir or Path(args.work) / "graph")
    if args.child:
        run_child(args)
        return 0
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    failed = []
    base_seconds = None
    header = {"edges": args.edges, "nodes": args.nodes,
              "partitions": args.partitions, "memory_limit_bytes": args.memory_limit_bytes}
    stages = parse_stages(args.stages)
    for stage in stages:
        if stage not in STAGE_FUNCS:
            ap.error(f"unknown stage {stage!r} (stages: {', '.join(STAGE_FUNCS)}, "
                     f"{', '.join(STAGE_GROUPS)})")
    stored = stored_counts(args.graph_dir)
    if stored:
        header["graph_nodes"], header["graph_edges"] = stored
    harness.Run("scale/billion", args.record, memory=False).emit(**header)
    for stage in stages:
        cmd = [sys.executable, __file__, *(sys.argv[1:] if argv is None else argv), "--child",
               stage]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            print(json.dumps({"stage": stage, "error": f"exit {proc.returncode}"}), flush=True)
            failed.append(stage)
            continue
        line = json.loads(proc.stdout.strip().splitlines()[-1])
        if stage == "baseline":
            base_seconds = line["seconds"]
        if stage == "ingest" and base_seconds:
            line["ratio_vs_baseline"] = round(base_seconds / line["seconds"], 3)
        if stage not in BEFORE_GRAPH:  # ingest may have (re)written the graph
            stored = stored_counts(args.graph_dir)
        nodes = stored[0] if stored and stage not in BEFORE_GRAPH else args.nodes
        limits = bounds(args, nodes)
        line["bound_anon_bytes"] = limits[stage]
        line["within_bound"] = line["peak_rss_anon_bytes"] <= limits[stage]
        line["load_avg"] = harness.load_average()
        if args.check_bounds and not line["within_bound"]:
            failed.append(stage)
        harness.emit(line, args.record)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
