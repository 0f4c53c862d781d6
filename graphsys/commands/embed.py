"""``graphsys embed``: train, evaluate, export and query graph embeddings.

    graphsys embed train --graph DIR [--edges train] --config FILE.toml [--set key=value] --out CKPT
    graphsys embed eval CKPT --graph DIR --edges test [--filtered] [--relation-wise] [--json]
    graphsys embed export CKPT --format tsv|parquet|numpy --out PATH [--relations-out PATH]
        [--json]
    graphsys embed nearest CKPT ID [-k 10] [--by cos|dot] [--exact]
    graphsys embed index CKPT --kind flat|ivf|hnsw [--by cos|dot] [--json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graphsys.commands._common import (
    add_quiet_arg,
    add_time_args,
    add_trace_arg,
    emit_json,
    show_progress,
    trace_path,
    warned,
)
from graphsys.errors import GraphsysError


def register(subparsers) -> None:
    from graphsys.embed.config import config_help

    p = subparsers.add_parser("embed", help="train / evaluate / export graph embeddings",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="embed_command", metavar="SUBCOMMAND", required=True)

    t = sub.add_parser("train", help="train embeddings (resumes an existing --out)",
                       description=TRAIN_DESCRIPTION, epilog="config keys:\n" + config_help(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--graph", type=Path, help="graph directory (else the config's graph)")
    t.add_argument("--edges", help="training edge set, or several joined by commas "
                   "(default,day2) or all (default: train, or the only one, with the edge "
                   "sets appended to it)")
    add_time_args(t, "train on")
    t.add_argument("--config", type=Path, help="TOML or JSON config file, or a PyTorch-BigGraph "
                   "config (.py: parsed, never run; matched to --graph)")
    t.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (repeatable), e.g. --set lr=0.1")
    t.add_argument("--out", type=Path, help="checkpoint directory (else checkpoint_path)")
    t.add_argument("--device", choices=("cpu", "cuda", "auto"), help="overrides config device")
    t.add_argument("--init-from", type=Path, metavar="CKPT",
                   help="grow a trained model: start from CKPT, trained before new entities "
                   "were appended to the graph (ingest --append-to); new entities start at "
                   "their trained neighbours' mean, or random without any")
    t.add_argument("--freeze-old", action="store_true",
                   help="with --init-from: train only the new entities (else all fine-tune)")
    t.add_argument("--json", action="store_true", help="print one JSON line of statistics")
    add_quiet_arg(t)
    add_trace_arg(t)
    t.set_defaults(func=run_train)

    e = sub.add_parser("eval", help="link-prediction metrics on an edge set")
    e.add_argument("checkpoint", type=Path, metavar="CKPT")
    e.add_argument("--graph", type=Path, help="graph directory (default: the training graph)")
    e.add_argument("--edges", default="test", help="edge set to rank (default test)")
    e.add_argument("--filtered", action="store_true",
                   help="filter out other true triples of every edge set (the standard "
                   "protocol; the printed protocol says filtered or raw)")
    e.add_argument("--candidates", default="auto",
                   help="all, auto, or a number of sampled candidates (default auto)")
    e.add_argument("--relation-wise", action="store_true", help="also report per relation")
    e.add_argument("--seed", type=int, default=0, help="seed of sampled candidates")
    e.add_argument("--json", action="store_true", help="print one JSON line")
    e.set_defaults(func=run_eval)

    x = sub.add_parser("export", help="write embeddings as TSV (PBG), Parquet or NumPy")
    x.add_argument("checkpoint", type=Path, metavar="CKPT")
    x.add_argument("--format", choices=("tsv", "parquet", "numpy"), default="tsv")
    x.add_argument("--out", type=Path, required=True,
                   help="entities TSV / Parquet file / NumPy directory")
    x.add_argument("--relations-out", type=Path, help="TSV of relation parameters (tsv)")
    x.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out or --relations-out")
    x.add_argument("--entity-type", help="entity type (parquet/numpy; default the only one)")
    x.add_argument("--graph", type=Path, help="graph directory (default: the training graph)")
    x.add_argument("--json", action="store_true", help="print one JSON line (what was written)")
    x.set_defaults(func=run_export)

    n = sub.add_parser("nearest", help="most similar entities of an id (blocked matmul)")
    n.add_argument("checkpoint", type=Path, metavar="CKPT")
    n.add_argument("id", help="original node id")
    n.add_argument("-k", type=int, default=10, help="neighbours (default 10)")
    n.add_argument("--by", choices=("cos", "dot"), default="cos")
    n.add_argument("--entity-type", help="entity type (default the only one)")
    n.add_argument("--graph", type=Path, help="graph directory (default: the training graph)")
    n.add_argument("--exact", action="store_true",
                   help="blocked matmul even when a faiss index is stored (graphsys embed index)")
    n.add_argument("--json", action="store_true", help="print one JSON line")
    n.set_defaults(func=run_nearest)

    ix = sub.add_parser(
        "index", help="build a faiss nearest-neighbour index stored in the checkpoint",
        description="Build a faiss index (pip install 'graphsys[faiss]') of one entity type's "
        "embeddings and store it in CKPT/index/ (faiss's own binary format, no pickle), tied "
        "to the checkpoint's committed version; `graphsys embed nearest` and "
        "Embeddings.nearest use it (approximate for ivf and hnsw). Rebuild after training on.")
    ix.add_argument("checkpoint", type=Path, metavar="CKPT")
    ix.add_argument("--kind", choices=("flat", "ivf", "hnsw"), default="hnsw",
                    help="flat (exact), ivf or hnsw (approximate; default hnsw)")
    ix.add_argument("--by", choices=("cos", "dot"), default="cos", help="similarity (cos)")
    ix.add_argument("--entity-type", help="entity type (default the only one)")
    ix.add_argument("--nlist", type=int, help="ivf cells (default sqrt(N))")
    ix.add_argument("--nprobe", type=int,
                    help="ivf cells searched (default: picked for --target-recall)")
    ix.add_argument("--hnsw-m", type=int, default=32, help="hnsw links per node (32)")
    ix.add_argument("--ef-search", type=int,
                    help="hnsw search list (default: picked for --target-recall)")
    ix.add_argument("--target-recall", type=float, default=0.95,
                    help="recall@10 against the exact top 10 that the default --nprobe / "
                         "--ef-search is picked to reach (0.95)")
    ix.add_argument("--seed", type=int, default=0, help="seed of the ivf training sample")
    ix.add_argument("--json", action="store_true", help="print the index record as JSON")
    ix.set_defaults(func=run_index)

    i = sub.add_parser(
        "import-pbg", help="convert a PyTorch-BigGraph checkpoint into a graphsys one",
        description="Read a PyTorch-BigGraph (1.0.0) checkpoint directory (HDF5 embeddings, "
        "model and config.json; the row-wise Adagrad sums are read as raw float32 storage from "
        "PBG's optimizer archive, never unpickled) and the entity names of "
        "its --entity-path, match entities and relations to the graph's by name, and write a "
        "graphsys checkpoint at --out that `graphsys embed eval` reads and `graphsys embed "
        "train --config OUT/config.json --out OUT --set num_epochs=K` continues. Needs h5py "
        "(pip install 'graphsys[pbg]').")
    i.add_argument("pbg_checkpoint", type=Path, metavar="PBG_CKPT",
                   help="PBG checkpoint directory (checkpoint_version.txt, *.h5)")
    i.add_argument("--entity-path", type=Path,
                   help="PBG entity_path (entity_names_*.json); default: the config's")
    i.add_argument("--graph", type=Path, required=True, help="graphsys graph directory")
    i.add_argument("--out", type=Path, required=True, help="new graphsys checkpoint directory")
    i.add_argument("--config", type=Path, help="PBG config (.py or .json); default: "
                   "PBG_CKPT/config.json")
    i.add_argument("--edges", help="edge set recorded for continued training (default: "
                   "train, or the only one)")
    i.add_argument("--json", action="store_true", help="print the import report as one JSON "
                   "line")
    i.set_defaults(func=run_import_pbg)


TRAIN_DESCRIPTION = """\
Train embeddings into --out; an existing checkpoint with the same settings is resumed after
its last commit (each epoch, or each bucket with --set checkpoint_buckets=true).

Distributed (torch.distributed: gloo on CPU, NCCL with --device cuda, one GPU per rank):

    torchrun --nproc-per-node 2 -m graphsys embed train --graph G --config C.toml --out CKPT

runs one rank per process (python -m torch.distributed.run works as well; several hosts:
--nnodes N --node-rank K --master-addr HOST --master-port PORT). The ranks train buckets
with disjoint partitions at once, share the relation parameters, and hand partitions over
through --out, which must be on a filesystem that every rank sees; rank 0 commits and
prints the result.
"""


def run_train(args) -> int:
    from graphsys.embed import load_config, train
    from graphsys.outputs import check_outputs
    from graphsys.storage.graph import open_graph

    trace = trace_path(args)
    # a flag and a --set of its key: --set device beat --device, the other flags won
    flags = {"graph": "--graph", "edges": "--edges", "checkpoint_path": "--out",
             "device": "--device", "init_from": "--init-from", "freeze_old": "--freeze-old"}
    for item in args.overrides:
        key = item.split("=", 1)[0].strip()
        if key in flags and getattr(args, flags[key][2:].replace("-", "_")) not in (None, False):
            raise GraphsysError(f"{flags[key]} and --set {key}=... together: give one")
    log = (lambda msg: print(msg, file=sys.stderr)) if not args.json else None
    graph = (open_graph(args.graph, until=getattr(args, "until", None),
                        since=getattr(args, "since", None))
             if args.graph is not None else None)
    cfg = load_config(args.config, args.overrides, graph=graph, log=log, device=args.device)
    check_outputs([("--trace", args.trace, "file"),
                   ("--out" if args.out is not None else "checkpoint_path",
                    args.out if args.out is not None else cfg.checkpoint_path, "directory")],
                  overwrite=args.overwrite)
    if args.init_from is not None:
        cfg.init_from = str(args.init_from)
    if args.freeze_old:
        cfg.freeze_old = True
    result = train(graph, cfg, edges=args.edges, out=args.out,
                   progress=show_progress(args), log=log, distributed=None, trace=trace)
    if result.rank != 0:
        return 0
    summary = result.summary()
    if args.json:
        emit_json(summary)
    else:
        print(f"trained {summary['epochs']} epochs into {result.checkpoint}: "
              f"{summary['edges_per_s']:,.0f} edges/s, {summary['swaps']} swaps "
              f"({summary['bytes_read'] / 1e6:,.1f} MB read, "
              f"{summary['bytes_written'] / 1e6:,.1f} MB written)")
    return 0


def _load(args):
    from graphsys.embed.embeddings import Embeddings

    return Embeddings.load(args.checkpoint, graph=args.graph)


def run_eval(args) -> int:
    from graphsys.embed.evaluation import evaluate
    from graphsys.progress import progress_bar

    emb = _load(args)
    cand = args.candidates
    if cand not in ("all", "auto"):
        if not cand.isdigit() or int(cand) < 1:
            raise GraphsysError(f"--candidates: all, auto or a positive number, got {cand!r}")
        cand = int(cand)
    graph = emb.graph
    bar = progress_bar(total=graph.num_edges(args.edges), unit="edge", desc="eval",
               disable=not show_progress(args))
    res = evaluate(emb, graph, args.edges, filtered=args.filtered, candidates=cand,
                   relation_wise=args.relation_wise, seed=args.seed, progress=bar.update)
    bar.close()
    if args.json:
        emit_json(res)
    else:
        print(f"protocol {res['protocol']} on {args.edges} ({res['count']} triples): "
              f"MRR {res['mrr']:.4f}  Hits@1 {res['hits@1']:.4f}  "
              f"Hits@3 {res['hits@3']:.4f}  Hits@10 {res['hits@10']:.4f}  "
              f"mean rank {res['mean_rank']:.1f}")
        for name, d in res.get("relations", {}).items():
            print(f"  {name}\tcount {d['count']}\tMRR {d['mrr']:.4f}\tHits@10 "
                  f"{d['hits@10']:.4f}")
    return 0


def run_export(args) -> int:
    from graphsys.outputs import check_outputs
    from graphsys.progress import progress_bar

    tsv = args.format == "tsv"
    if (args.relations_out if not tsv else args.entity_type) is not None:
        raise GraphsysError(f"{'--entity-type' if tsv else '--relations-out'} does not go "
                            f"with --format {args.format} (--relations-out: tsv; "
                            f"--entity-type: parquet, numpy)")
    check_outputs([("--out", args.out, "file"), ("--relations-out", args.relations_out, "file")],
                  overwrite=args.overwrite)
    emb = _load(args)
    if tsv:
        types = emb.entity_types
        rows = sum(emb.num_entities(t) for t in types)
        with progress_bar(total=rows, unit="row", unit_scale=True, desc="export",
                  disable=not show_progress(args)) as bar:
            emb.export_tsv(args.out, args.relations_out, progress=bar.update)
    else:
        types = [emb._etype(args.entity_type)]
        rows = emb.num_entities(types[0])
        if args.format == "parquet":
            emb.export_parquet(args.out, types[0])
        else:
            emb.export_numpy(args.out, types[0])
    if args.json:
        emit_json({"format": args.format, "out": str(args.out),
                   "relations_out": str(args.relations_out) if args.relations_out else None,
                   "entity_types": types, "rows": rows, "dimension": emb.dimension})
    else:
        print(f"wrote {rows:,} rows of dimension {emb.dimension} to {args.out}",
              file=sys.stderr)
    return 0


def run_nearest(args) -> int:
    emb = _load(args)
    if args.k < 1:
        raise GraphsysError(f"-k: must be positive, got {args.k}")
    et = emb._etype(args.entity_type)  # several types and none named: --entity-type
    int_ids = emb.graph.entity_type(et).id_type == "int64"
    node = int(args.id) if int_ids and args.id.lstrip("-").isdigit() else args.id
    ids, scores = warned(emb.nearest, node, args.k, by=args.by, entity_type=et,
                         exact=args.exact)  # a stale index's warning: one line
    if args.json:
        emit_json({"id": node, "by": args.by, "neighbours": [
            {"id": i, "score": float(s)} for i, s in zip(ids, scores)]})
    else:
        for i, s in zip(ids, scores):
            print(f"{i}\t{s:.6f}")
    return 0


def run_index(args) -> int:
    from graphsys.embed.embeddings import Embeddings
    from graphsys.embed.index import IndexParams, build_and_save

    emb = Embeddings.load(args.checkpoint)
    params = IndexParams(nlist=args.nlist, nprobe=args.nprobe, hnsw_m=args.hnsw_m,
                         ef_search=args.ef_search, seed=args.seed,
                         target_recall=args.target_recall)
    rec = build_and_save(emb, args.kind, args.by, args.entity_type, params)
    if args.json:
        emit_json(rec)
        return 0
    print(f"built a {rec['kind']} index ({rec['by']}) of {rec['num_entities']:,} "
          f"{rec['entity_type']} rows x {rec['dimension']} for checkpoint version "
          f"{rec['checkpoint_version']} in {rec['seconds']:.1f} s")
    r = rec["recall"]
    setting = next((f"{name} {r[name]}" for name in ("nprobe", "ef_search") if name in r), "")
    how = (f"; {setting}, picked for target {r['target']}" if "target" in r else
           f"; {setting}" if setting else "")
    print(f"recall@{r['k']} {r['recall']:.3f} against the exact top {r['k']} on "
          f"{r['queries']} held-out queries{how}")
    if r.get("reached") is False:
        print(f"warning: the target recall {r['target']} was not reached at the largest "
              f"{setting.split()[0]} (recall {r['tuned_recall']:.3f} on the tuning "
              f"queries): a larger --hnsw-m builds a finer hnsw index",
              file=sys.stderr)
    return 0


def run_import_pbg(args) -> int:
    from graphsys.embed.interop.pbg_checkpoint import import_pbg_checkpoint
    from graphsys.outputs import check_output_directory

    check_output_directory(args.out)
    log = (lambda msg: print(msg, file=sys.stderr)) if not args.json else None
    rep = import_pbg_checkpoint(args.pbg_checkpoint, args.entity_path, args.graph, args.out,
                                config=args.config, edges=args.edges, log=log)
    if args.json:
        emit_json(rep.to_json())
        return 0
    for etype, st in rep.entities.items():
        print(f"{etype}: {st['imported']} of {st['graph_nodes']} nodes from PBG's "
              f"{st['pbg_type']!r}, {st['fresh_init']} freshly initialised, "
              f"{st['pbg_not_in_graph']} PBG entities not in the graph")
    rels = rep.relations
    print(f"relations: {rels['imported']} imported, {len(rels['fresh_init'])} freshly "
          f"initialised, {len(rels['pbg_not_in_graph'])} PBG relations not in the graph")
    if rep.ignored_keys:
        print("ignored PBG keys (no graphsys equivalent): " + ", ".join(rep.ignored_keys),
              file=sys.stderr)
    for w in rep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"optimizer state {rep.optimizer_state}", file=sys.stderr)
    print(f"wrote {rep.out} at epoch {rep.epochs_done} (PBG version {rep.pbg_version})")
    return 0
