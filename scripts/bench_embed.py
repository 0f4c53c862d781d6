#!/usr/bin/env python3
"""Benchmark graphsys embeddings against PyTorch-BigGraph 1.0.0 on FB15k-237.

Same model for both: ComplEx (complex_diagonal, dot comparator, reciprocal/dynamic relations),
softmax loss, dimension, batch size, 1000 uniform + 50 batch negatives, lr, epochs. PBG runs
in its own virtual environment (made here: torch==2.13.0 first so pip takes the local CPU
wheel, then setuptools<81 and torchbiggraph==1.0.0) and is evaluated with its own
FilteredRankingEvaluator; graphsys with ``graphsys.embed.evaluate`` (filtered, both sides).
Each system trains in a child process (peak RSS = that process and its children).
Prints one JSON line.

    python scripts/bench_embed.py [--epochs 10] [--dim 400] [--workdir /tmp/bench-embed]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from render_results import add_record_argument, emit

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "datasets" / "fb15k-237"

#: Run first in every PBG child: PBG 1.0.0's ``unpack_optional`` tests ``type_ is
#: Optional[arg]``, which is false on Python >= 3.11; an equality test works.
PBG_PY311_PATCH = textwrap.dedent("""
    import typing
    import torchbiggraph.schema as pbg_schema

    def unpack_optional(type_):
        args = getattr(type_, "__args__", None)
        if not args or type_ != typing.Optional[args[0]]:
            raise TypeError("Not an optional type")
        return args[0]

    pbg_schema.unpack_optional = unpack_optional
""")

GS_CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import torch
    from graphsys import open_graph
    from graphsys.embed import evaluate, load_config, train
    a = json.loads(sys.argv[1])
    if a["threads"]:
        torch.set_num_threads(a["threads"])
    cfg = load_config(None, a["overrides"])
    t0 = time.perf_counter()
    emb = train(a["graph"], cfg, edges="train", out=a["out"]).embeddings
    wall = time.perf_counter() - t0
    stats = emb.meta["stats"]
    edges = sum(s["edges"] for s in stats)
    train_s = sum(s["seconds"] for s in stats)
    res = evaluate(emb, open_graph(a["graph"]), "test", filtered=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"edges_per_s": edges / train_s, "train_seconds": train_s,
                      "wall_seconds": wall, "peak_rss_bytes": rss, "mrr": res["mrr"],
                      "hits@10": res["hits@10"], "count": res["count"],
                      "protocol": res["protocol"]}))
""")

PBG_CHILD = PBG_PY311_PATCH + textwrap.dedent("""
    import json, logging, resource, sys, time
    import attr
    from torchbiggraph.config import parse_config
    from torchbiggraph.converters.import_from_tsv import convert_input_data
    from torchbiggraph.eval import do_eval
    from torchbiggraph.filtered_eval import FilteredRankingEvaluator
    from torchbiggraph.train import train
    from torchbiggraph.util import SubprocessInitializer, setup_logging
    a = json.loads(sys.argv[1])
    setup_logging()
    w = a["work"]
    raw = dict(
        entity_path=w + "/pbg-data",
        edge_paths=[w + "/pbg-edges/" + k for k in ("train", "valid", "test")],
        checkpoint_path=w + "/pbg-ckpt",
        entities={"all": {"num_partitions": 1}},
        relations=[{"name": "all_edges", "lhs": "all", "rhs": "all",
                    "operator": "complex_diagonal"}],
        dynamic_relations=True, dimension=a["dim"], global_emb=False, comparator="dot",
        num_epochs=a["epochs"], num_uniform_negs=1000, num_batch_negs=50, batch_size=1000,
        loss_fn="softmax", lr=0.1, eval_fraction=0.0, workers=a["workers"])
    config = parse_config(raw)
    from pathlib import Path
    train_p, valid_p, test_p = config.edge_paths
    convert_input_data(config.entities, config.relations, config.entity_path,
                       config.edge_paths,
                       [Path(w + "/fb/" + k + ".txt") for k in ("train", "valid", "test")],
                       lhs_col=0, rhs_col=2, rel_col=1, dynamic_relations=True)
    init = SubprocessInitializer()
    t0 = time.perf_counter()
    train(attr.evolve(config, edge_paths=[train_p]), subprocess_init=init)
    train_s = time.perf_counter() - t0
    rels = [attr.evolve(r, all_negs=True) for r in config.relations]
    ev = attr.evolve(config, edge_paths=[test_p], relations=rels, num_uniform_negs=0)
    filt = [test_p, valid_p, train_p]
    do_eval(ev, evaluator=FilteredRankingEvaluator(ev, filt), subprocess_init=init)
    rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
              resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) * 1024
    print("BENCH " + json.dumps({"train_seconds": train_s, "peak_rss_bytes": rss}))
""")


def prepare(work: Path) -> dict[str, int]:
    """Plain LF copies of the three splits (PBG's importer reads plain text)."""
    fb = work / "fb"
    fb.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, src in (("train", "train.txt.gz"), ("valid", "valid.txt"), ("test", "test.txt")):
        opener = gzip.open if src.endswith(".gz") else open
        with opener(DATA / src, "rt", newline="") as f:
            lines = [ln.rstrip("\r\n") for ln in f if ln.strip()]
        (fb / f"{split}.txt").write_text("\n".join(lines) + "\n")
        counts[split] = len(lines)
    return counts


def pbg_venv(work: Path) -> Path:
    venv = work / "pbg-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    ok = subprocess.run([str(py), "-c", "import torchbiggraph"], capture_output=True, check=False)
    if ok.returncode:
        pip = [str(py), "-m", "pip", "install", "-q"]
        subprocess.run(pip + ["torch==2.13.0"], check=True)
        subprocess.run(pip + ["setuptools<81", "torchbiggraph==1.0.0"], check=True)
    return py


def run_graphsys(work: Path, args) -> dict:
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest

    graph = work / "gs-graph"
    if not (graph / "manifest.json").exists():
        ingest([EdgeSource([work / "fb" / f"{s}.txt"], edge_set=s, src_col=0, rel_col=1,
                           dst_col=2) for s in ("train", "valid", "test")],
               graph, IngestOptions(num_partitions=1))
    out = work / "gs-ckpt"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    overrides = [f"dimension={args.dim}", "operator=\"complex_diagonal\"", "comparator=\"dot\"",
                 "loss_fn=\"softmax\"", "lr=0.1", f"num_epochs={args.epochs}",
                 "batch_size=1000", "num_uniform_negs=1000", "num_batch_negs=50",
                 "init_scale=0.001", f"workers={args.gs_workers}"]
    child = {"graph": str(graph), "out": str(out), "overrides": overrides,
             "threads": args.gs_threads}
    res = subprocess.run([sys.executable, "-c", GS_CHILD, json.dumps(child)], check=True,
                         capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_pbg(work: Path, args, train_edges: int) -> dict:
    from graphsys import peer_environment

    py = pbg_venv(work)
    for d in ("pbg-data", "pbg-ckpt", "pbg-edges"):
        subprocess.run(["rm", "-rf", str(work / d)], check=True)
    child = {"work": str(work), "dim": args.dim, "epochs": args.epochs, "workers": args.workers}
    t0 = time.perf_counter()
    res = subprocess.run([str(py), "-c", PBG_CHILD, json.dumps(child)], capture_output=True,
                         text=True, check=False, env=peer_environment())
    wall = time.perf_counter() - t0
    text = res.stdout + res.stderr
    if res.returncode:
        raise SystemExit(f"PBG failed:\n{text[-3000:]}")
    info = json.loads(re.findall(r"BENCH (\{.*\})", text)[-1])
    stats = re.findall(r"Stats: .*?mrr:\s*([0-9.]+).*?r10:\s*([0-9.]+)", text)
    mrr, r10 = (float(x) for x in stats[-1])
    return {"edges_per_s": train_edges * args.epochs / info["train_seconds"],
            "train_seconds": info["train_seconds"], "wall_seconds": wall,
            "peak_rss_bytes": info["peak_rss_bytes"], "mrr": mrr, "hits@10": r10,
            "protocol": "full, filtered, both sides"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--dim", type=int, default=400)
    ap.add_argument("--workers", type=int, default=2, help="PBG workers (default 2)")
    ap.add_argument("--gs-workers", type=int, default=1, help="graphsys HOGWILD threads")
    ap.add_argument("--gs-threads", type=int, default=0,
                    help="graphsys torch intra-op threads (0 = torch default)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bench-embed"))
    ap.add_argument("--skip-pbg", action="store_true")
    ap.add_argument("--reuse-graphsys", action="store_true",
                    help="reuse WORKDIR/graphsys-result.json of an earlier run with the same "
                         "settings")
    add_record_argument(ap)
    args = ap.parse_args()
    work = args.workdir.absolute()
    work.mkdir(parents=True, exist_ok=True)
    counts = prepare(work)
    load_before = os.getloadavg()
    cached = work / "graphsys-result.json"
    if args.reuse_graphsys and cached.exists():
        gs = json.loads(cached.read_text())
    else:
        gs = run_graphsys(work, args)
        cached.write_text(json.dumps(gs))
    print("graphsys: " + json.dumps(gs), file=sys.stderr, flush=True)
    pbg = None if args.skip_pbg else run_pbg(work, args, counts["train"])
    out = {"dataset": "fb15k-237", "train_edges": counts["train"], "epochs": args.epochs,
           "dimension": args.dim, "model": "ComplEx, softmax, 1000 uniform + 50 batch negs, "
           "batch 1000, lr 0.1", "load_avg_before": load_before,
           "load_avg_after": os.getloadavg(), "cpus": os.cpu_count(),
           "graphsys": gs, "pbg": pbg}
    if pbg:
        out["edges_per_s_ratio"] = gs["edges_per_s"] / pbg["edges_per_s"]
        out["mrr_delta"] = gs["mrr"] - pbg["mrr"]
    emit(out, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
