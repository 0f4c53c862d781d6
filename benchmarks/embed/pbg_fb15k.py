#!/usr/bin/env python3
"""Embedding training on FB15k-237 beside PyTorch-BigGraph 1.0.0: edges/s, filtered test
MRR and Hits@10, peak RSS.

Same model for both: ComplEx (complex_diagonal, dot comparator, reciprocal/dynamic relations),
softmax loss, dimension, batch size, 1000 uniform + 50 batch negatives, lr, epochs; the
same triples (the registry's FB15k-237, from the dataset mirror). PBG runs in its own
environment (``harness.PEERS["pbg"]``, made in the work directory unless ``--pbg-python``
names one) and is evaluated with its own ``FilteredRankingEvaluator``; graphsys with
``graphsys.embed.evaluate`` (filtered, both sides). Each system trains in a child process
whose peak RSS and peak anonymous RSS are sampled from outside (PBG's HOGWILD workers, which
share its embeddings, are not counted). Usage::

    python benchmarks/embed/pbg_fb15k.py [--epochs 10] [--dim 400] [--work DIR]
        [--pbg-python PY | --skip-pbg]
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

GS_CHILD = textwrap.dedent("""
    import json, sys, time
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
    print(json.dumps({"edges_per_s": edges / train_s, "train_seconds": train_s,
                      "wall_seconds": wall, "mrr": res["mrr"],
                      "hits@10": res["hits@10"], "count": res["count"],
                      "protocol": res["protocol"]}))
""")

PBG_CHILD = harness.PEERS["pbg"].prelude + textwrap.dedent("""
    import json, logging, sys, time
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
    print("BENCH " + json.dumps({"train_seconds": train_s}))
""")


def prepare(work: Path, fetched) -> dict[str, int]:
    """Plain LF copies of the three splits (PBG's importer reads plain text)."""
    fb = work / "fb"
    fb.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split in ("train", "valid", "test"):
        src = Path(fetched.path(split))
        opener = gzip.open if src.name.endswith(".gz") else open
        with opener(src, "rt", newline="") as f:
            lines = [ln.rstrip("\r\n") for ln in f if ln.strip()]
        (fb / f"{split}.txt").write_text("\n".join(lines) + "\n")
        counts[split] = len(lines)
    return counts


def run_graphsys(work: Path, graph: Path, args) -> dict:
    out = work / "gs-ckpt"
    shutil.rmtree(out, ignore_errors=True)
    overrides = [f"dimension={args.dim}", "operator=\"complex_diagonal\"", "comparator=\"dot\"",
                 "loss_fn=\"softmax\"", "lr=0.1", f"num_epochs={args.epochs}",
                 "batch_size=1000", "num_uniform_negs=1000", "num_batch_negs=50",
                 "init_scale=0.001", f"workers={args.gs_workers}"]
    child = {"graph": str(graph), "out": str(out), "overrides": overrides,
             "threads": args.gs_threads}
    res = harness.run_child([sys.executable, "-c", GS_CHILD, json.dumps(child)])
    return {**res.json, **res.peaks()}


def run_pbg(work: Path, py: Path, args, train_edges: int) -> dict:
    for d in ("pbg-data", "pbg-ckpt", "pbg-edges"):
        shutil.rmtree(work / d, ignore_errors=True)
    child = {"work": str(work), "dim": args.dim, "epochs": args.epochs, "workers": args.workers}
    res = harness.run_child([py, "-c", PBG_CHILD, json.dumps(child)],
                            env=harness.peer_environment())
    text = res.stdout + res.stderr
    info = json.loads(re.findall(r"BENCH (\{.*\})", text)[-1])
    stats = re.findall(r"Stats: .*?mrr:\s*([0-9.]+).*?r10:\s*([0-9.]+)", text)
    mrr, r10 = (float(x) for x in stats[-1])
    return {"edges_per_s": train_edges * args.epochs / info["train_seconds"],
            "train_seconds": info["train_seconds"], "wall_seconds": res.seconds,
            **res.peaks(), "mrr": mrr, "hits@10": r10, "protocol": "full, filtered, both sides"}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--dim", type=int, default=400)
    ap.add_argument("--workers", type=int, default=2, help="PBG workers (default 2)")
    ap.add_argument("--gs-workers", type=int, default=1, help="graphsys HOGWILD threads")
    ap.add_argument("--gs-threads", type=int, default=0,
                    help="graphsys torch intra-op threads (0 = torch default)")
    ap.add_argument("--work", "--workdir", dest="work", type=Path,
                    default=Path("/tmp/bench-embed"), help="work directory (kept)")
    harness.add_peer_argument(ap, "pbg")
    ap.add_argument("--reuse-graphsys", action="store_true",
                    help="reuse WORK/graphsys-result.json of an earlier run with the same "
                         "settings")
    args = ap.parse_args(argv)
    run = harness.Run("embed/pbg_fb15k", args.record, memory=False)
    work = args.work.absolute()
    work.mkdir(parents=True, exist_ok=True)
    fetched = harness.dataset_files(run, "fb15k-237", work / "cache")
    graph = harness.dataset(run, "fb15k-237", work / "gs-graph")
    if fetched is None or graph is None:
        run.emit(graphsys=None, pbg=None)
        return 1
    counts = prepare(work, fetched)
    cached = work / "graphsys-result.json"
    if args.reuse_graphsys and cached.exists():
        gs = json.loads(cached.read_text())
    else:
        gs = run_graphsys(work, graph.path, args)
        cached.write_text(json.dumps(gs))
    harness.log("graphsys: " + json.dumps(gs))
    py, why = harness.peer_python("pbg", work, args.pbg_python, args.skip_pbg)
    if py is None:
        run.missing("PyTorch-BigGraph rows", why)
    pbg = None if py is None else run_pbg(work, py, args, counts["train"])
    out = {"dataset": "fb15k-237", "train_edges": counts["train"], "epochs": args.epochs,
           "dimension": args.dim, "model": "ComplEx, softmax, 1000 uniform + 50 batch negs, "
           "batch 1000, lr 0.1", "graphsys": gs, "pbg": pbg}
    if pbg:
        out["edges_per_s_ratio"] = gs["edges_per_s"] / pbg["edges_per_s"]
        out["mrr_delta"] = gs["mrr"] - pbg["mrr"]
    run.emit(**out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
