"""``graphsys demo``: the main job on an embedded default, with no download.

Compiles the everyday vertex algorithms' kernels into the kernel cache (as ``graphsys
warmup`` does for every algorithm; a second demo loads them), generates a seeded R-MAT
graph, ingests it into P partitions, verifies the directory, runs PageRank over the stored
buckets, trains ComplEx embeddings on a generated knowledge graph (with a nearest-neighbour
query), trains GraphSAGE on a generated labelled SBM and writes a profiling report of the
PageRank run. Each step prints one line; ``--json`` prints every step's figures as one JSON
object instead.

The steps that do not read the R-MAT graph (the warm-up's groups of algorithms, ComplEx,
GraphSAGE) run in worker processes, one per CPU, costliest first, while this process
generates, ingests and verifies the graph; PageRank waits for its own kernels' warm-up
(so that no kernel is compiled twice). The lines are printed in the order of
:data:`STEPS`, each once it and those before it are done.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphsys.commands._common import emit_json, show_progress
from graphsys.errors import GraphsysError, check_count
from graphsys.outputs import check_output_directory


@dataclass
class _Demo:
    args: Any
    work: Path
    edge_file: Path
    graph_dir: Path


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help="generate, ingest, analyse and profile a graph",
                              description=__doc__)
    p.add_argument("--out", type=Path,
                   help="working directory to create (default: a new temporary directory)")
    p.add_argument("--nodes", type=int, default=1 << 14, help="R-MAT nodes (default 16384)")
    p.add_argument("--edges", type=int, default=200_000, help="R-MAT edges (default 200000)")
    p.add_argument("--partitions", dest="num_partitions", type=int, default=4,
                   help="P (default 4)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    p.set_defaults(func=run)


#: The algorithms the demo warms: the vertex programs a first session reaches for (the
#: whole-graph analyses, betweenness to Leiden, compile for minutes on a 2-core machine and
#: are warmed by ``graphsys warmup``, which takes every registered algorithm).
DEMO_WARMUP = ["pagerank", "ppr", "bfs", "sssp", "wcc", "lpa", "kcore", "hits"]


#: Seconds each unit of work the workers take from an empty cache on one core, roughly:
#: the order they are started in (costliest first). A group of :data:`DEMO_WARMUP` weighs
#: its algorithms' :data:`graphsys.bsp.warmup.COMPILE_SECONDS`.
UNIT_SECONDS = {"embed": 9.0, "gnn": 6.0}


def _warm_group(group: list[str], seed: int, say: bool) -> dict:
    """One group of :data:`DEMO_WARMUP`'s warm-up (in a worker process)."""
    import sys

    from graphsys.bsp.warmup import warmup

    def line(text: str) -> None:
        print(f"      warmup {text}", file=sys.stderr, flush=True)

    return warmup(group, seed=seed, progress=line if say else None)


def _warmup_line(reports: list[dict], t0: float) -> tuple[str, dict]:
    from graphsys.bsp.warmup import merged

    report = {**merged(reports, t0),
              "algorithms": {n: r["algorithms"][n] for r in reports for n in r["algorithms"]}}
    return (f"compiled {report['compiled']} kernel signatures and loaded {report['loaded']} "
            f"from the kernel cache ({report['cache']}): the first call of "
            f"{', '.join(DEMO_WARMUP)} in later processes loads them (graphsys warmup: every "
            f"algorithm)", report)


def _generate(d: _Demo) -> tuple[str, dict]:
    from graphsys.generators import rmat_edges, write_edges

    write_edges(rmat_edges(d.args.nodes, d.args.edges, seed=d.args.seed), d.edge_file)
    return (f"generated R-MAT graph: {d.args.edges:,} edges over {d.args.nodes:,} node ids "
            f"(seed {d.args.seed}) -> {d.edge_file}",
            {"file": str(d.edge_file), "nodes": d.args.nodes, "edges": d.args.edges,
             "seed": d.args.seed})


def _ingest(d: _Demo) -> tuple[str, dict]:
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    report = ingest_sources([EdgeSource([d.edge_file])], d.graph_dir,
                            IngestOptions(partitions=d.args.num_partitions, seed=d.args.seed,
                                          progress=show_progress(d.args)))
    return (f"ingested {report.nodes['node']:,} nodes, {report.edges['default']:,} edges into "
            f"{d.args.num_partitions} partitions (hash) -> {d.graph_dir}", report.to_json())


def _verify(d: _Demo) -> tuple[str, dict]:
    from graphsys.storage.graph import open_graph
    from graphsys.storage.info import format_info, graph_info
    from graphsys.storage.verify import verify_graph

    checked = verify_graph(d.graph_dir)
    info = graph_info(open_graph(d.graph_dir))
    return (f"verified {checked['files']} files ({checked['bytes']:,} bytes)\n"
            + format_info(info), {"verify": checked, "info": info})


def _pagerank(d: _Demo) -> tuple[str, dict]:
    import numpy as np

    from graphsys import bsp
    from graphsys.storage.graph import open_graph

    graph = open_graph(d.graph_dir)
    result = bsp.pagerank(graph, mode="out-of-core")
    top = np.argsort(-result.values, kind="stable")[:5]
    ids = graph.to_original(top)
    totals = result.stats.totals()
    top5 = [{"node": int(i), "rank": round(float(v), 6)} for i, v in zip(ids, result.values[top])]
    return (f"PageRank out of core: {result.stats.num_supersteps} supersteps, "
            f"{totals.get('edges_scanned', 0):,} edges scanned; top nodes "
            + ", ".join(f"{t['node']} ({t['rank']:.4f})" for t in top5),
            {"supersteps": result.stats.num_supersteps, "totals": totals, "top5": top5})


def _embed(d: _Demo) -> tuple[str, dict]:
    from graphsys.embed import evaluate, train
    from graphsys.generators import edge_schema, knowledge_graph, split_paths, write_split_edges
    from graphsys.storage.graph import open_graph
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    kg = knowledge_graph(500, 8000, relations=8, seed=d.args.seed)
    paths = split_paths(d.work / "kg.parquet")
    write_split_edges(kg.split((0.9, 0.05, 0.05)), paths, edge_schema(paths["train"], rel=True),
                      rel_names=kg.relation_names)
    graph_dir = d.work / "kg-graph"
    ingest_sources([EdgeSource([p], edge_set=name, rel_col="rel") for name, p in paths.items()],
                   graph_dir, IngestOptions(partitions=2, seed=d.args.seed))
    graph = open_graph(graph_dir)
    config = {"dimension": 32, "operator": "complex_diagonal", "comparator": "dot",
              "loss_fn": "softmax", "lr": 0.1, "batch_size": 200, "num_uniform_negs": 50,
              "num_batch_negs": 20, "num_epochs": 10, "seed": d.args.seed}
    emb = train(graph, config, edges="train", out=d.work / "kg-embeddings").embeddings
    metrics = evaluate(emb, graph, "test", filtered=True)
    query = graph.to_original([0])[0].item()
    ids, scores = emb.nearest(query, 5, by="cos")
    return (f"ComplEx embeddings of a planted knowledge graph (500 entities, 8 relations, 2 "
            f"partitions): filtered test MRR {metrics['mrr']:.3f}, Hits@10 "
            f"{metrics['hits@10']:.3f}; nearest to entity {query}: "
            + ", ".join(str(i) for i in ids),
            {"metrics": metrics, "nearest": {"query": query, "ids": list(ids),
                                             "scores": [float(x) for x in scores]}})


def _gnn(d: _Demo) -> tuple[str, dict]:
    import pyarrow.parquet as pq

    from graphsys.generators import sbm, write_edges, write_nodes
    from graphsys.gnn import TrainConfig, train
    from graphsys.storage.graph import open_graph
    from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources

    model = sbm(2000, 20_000, blocks=4, features=16, seed=d.args.seed)
    edges, nodes = d.work / "sbm.parquet", d.work / "sbm.nodes.parquet"
    write_edges(model.edges(), edges)
    write_nodes(model.nodes(), nodes, features=16)
    graph_dir = d.work / "sbm-graph"
    ingest_sources([EdgeSource([edges])], graph_dir,
                   IngestOptions(partitions=2, undirected=True, seed=d.args.seed),
                   [NodeSource(pq.read_table(nodes))])
    result = train(open_graph(graph_dir), TrainConfig(model="sage", fanouts=[10, 10], epochs=20,
                                                      seed=d.args.seed))
    acc = result.metrics["test_accuracy"]
    return (f"GraphSAGE on a 4-block SBM (2,000 nodes, 20,000 edges, fanouts 10,10): test "
            f"accuracy {acc:.3f} after {result.epochs} epochs",
            {"graph": str(graph_dir), "metrics": result.metrics, "epochs": result.epochs})


def _profile(d: _Demo) -> tuple[str, dict]:
    from graphsys.analysis.profile import demo_step

    out = demo_step(d.graph_dir, d.work / "profile")
    return f"profiling report of PageRank -> {out['report']}", out


def _in_worker(step: str, d: _Demo) -> tuple[str, dict, float]:
    """``step`` (``embed`` or ``gnn``) in a worker process, on one torch thread (the
    workers are as many as the CPUs): its line, figures and seconds."""
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    line, figures = {"embed": _embed, "gnn": _gnn}[step](d)
    return line, figures, time.perf_counter() - t0


#: The steps in the order their lines are printed.
STEPS = ("generate", "ingest", "verify", "warmup", "pagerank", "embed", "gnn", "profile")


def _units(d: _Demo, pool, say: bool) -> tuple[list, dict]:
    """Start the workers' units, costliest first: the warm-up's groups (the futures, the
    PageRank group's first) and the training steps (step name -> future)."""
    from graphsys.bsp.warmup import COMPILE_SECONDS, FOLLOWS, balanced

    groups = balanced(DEMO_WARMUP, len(DEMO_WARMUP), COMPILE_SECONDS, FOLLOWS)
    groups.sort(key=lambda g: "pagerank" not in g)
    weight = {**{k: sum(COMPILE_SECONDS.get(a, 1) for a in g) for k, g in enumerate(groups)},
              **UNIT_SECONDS}
    warm: list = [None] * len(groups)
    steps: dict = {}
    for unit in sorted(weight, key=lambda u: -weight[u]):
        if isinstance(unit, int):
            warm[unit] = pool.submit(_warm_group, groups[unit], d.args.seed, say)
        else:
            steps[unit] = pool.submit(_in_worker, unit, d)
    return warm, steps


def _import_engines() -> None:
    """A worker's start: the modules its units run (imported while this process ingests)."""
    import graphsys.bsp.warmup  # noqa: F401
    import graphsys.embed  # noqa: F401
    import graphsys.gnn  # noqa: F401


def _worker_args(args) -> Any:
    """The plain values of ``args`` a worker process reads."""
    from types import SimpleNamespace

    return SimpleNamespace(**{k: getattr(args, k) for k in (
        "nodes", "edges", "num_partitions", "seed", "json")})


def run(args) -> int:
    import concurrent.futures as cf
    import multiprocessing

    from graphsys.threads import available_cores

    # checked before the workers start (an error then waits for none of them)
    for name, value in (("nodes", args.nodes), ("edges", args.edges),
                        ("partitions", args.num_partitions)):
        check_count(name, value)
    check_count("seed", args.seed, minimum=0)
    if args.out is not None:
        check_output_directory(args.out)
        if args.out.exists():
            raise GraphsysError(f"{args.out}: already exists (choose a new --out)")
        args.out.mkdir(parents=True)
        work = args.out
    else:
        work = Path(tempfile.mkdtemp(prefix="graphsys-demo-"))
    demo = _Demo(_worker_args(args), work, work / "rmat.parquet", work / "graph")
    results: dict[str, Any] = {"workdir": str(work)}
    done: dict[str, tuple[str, dict, float]] = {}
    printed = 0

    def show() -> None:  # the lines of the steps done, in STEPS' order
        nonlocal printed
        while printed < len(STEPS) and STEPS[printed] in done:
            name = STEPS[printed]
            line, figures, seconds = done[name]
            results[name] = {**figures, "seconds": round(seconds, 3)}
            printed += 1
            if not args.json:
                print(f"[{printed}/{len(STEPS)}] {line} ({seconds:.2f} s)", flush=True)

    def here(name: str, step: Callable[[_Demo], tuple[str, dict]]) -> None:
        t0 = time.perf_counter()
        line, figures = step(demo)
        done[name] = (line, figures, time.perf_counter() - t0)
        show()

    t_start = time.perf_counter()
    jobs = max(1, available_cores())
    pool = cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_import_engines)
    try:
        warm, steps = _units(demo, pool, not args.json)
        for name, step in (("generate", _generate), ("ingest", _ingest), ("verify", _verify)):
            here(name, step)
        reports = [warm[0].result()]  # PageRank's kernels, before the PageRank step
        here("pagerank", _pagerank)
        reports += [f.result() for f in warm[1:]]
        done["warmup"] = (*_warmup_line(reports, t_start), time.perf_counter() - t_start)
        show()
        here("profile", _profile)  # its kernels are the other groups' too; printed last
        for name in ("embed", "gnn"):
            done[name] = steps[name].result()
            show()
    except cf.process.BrokenProcessPool as exc:
        raise GraphsysError(f"demo: a worker process ended without its result ({exc})") from exc
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if args.json:
        emit_json(results)
    return 0
