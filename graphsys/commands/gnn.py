"""``graphsys gnn``: train GNNs with PinSage-style sampling, and embed every node.

``graphsys gnn train --dataset cora --task node --model sage --json`` trains and prints
test metrics; with ``--json`` stdout is one JSON line holding ``test_accuracy``
(node task) or ``hits@10`` and ``mrr`` (link task; on held-out edges, ``--link-split
random``, also ``hits@K`` and ``recall@K`` for each ``--metrics-k`` and ``auc``) with the
``protocol`` they were ranked under (``sampled@1000, filtered``, ``full, filtered``, or
``full, filtered, both sides`` for R-GCN), plus ``epochs`` and ``seconds``.
``--out DIR`` keeps the best checkpoint (``DIR/checkpoint``) and ``DIR/metrics.jsonl``.
``graphsys gnn embed --checkpoint DIR/checkpoint --out EMB`` runs streaming inference,
partition by partition, writing Arrow embedding files that ``graphsys.embed.Embeddings.load``
(and ``graphsys embed nearest EMB ID``) serve. Both show progress on stderr unless
``--quiet``: a tqdm bar on a terminal, else a line every ``GRAPHSYS_PROGRESS_SECONDS``
(default 10) seconds.

Data-parallel node training: ``torchrun --nproc-per-node K -m graphsys gnn train --graph G
--json`` runs one rank per process (gloo on CPU; NCCL with ``--device cuda``, one GPU per
rank); each rank samples its share of every global batch of ``--batch-size`` seeds, and rank
0 writes ``--out`` and prints the result, with ``world_size`` and each rank's ``seeds`` and
``seconds``. With ``--dropout 0``, K ranks reach the parameters of one process with the same
``--batch-size`` (to float rounding, sampled ``--fanouts`` included); with dropout they
agree in distribution only, as each rank draws dropout masks over its own batch. The
``feat`` column, in the node table or in a file of its own (``write_node_column``), is
memory-mapped, so the ranks share it through the page cache.

R-GCN on a typed graph's train/valid/test edge sets: ``graphsys gnn train --graph G --config
datasets/configs/fb15k-237-rgcn.toml --out RUN`` (a TOML file of training settings, its
``[rgcn]`` table the model's own); ``graphsys gnn evaluate RUN/checkpoint --edge-set test``
ranks an edge set again under the saved model (filtered, both sides; an item checkpoint: as
``gnn recommend --evaluate``). A TGN, TGAT or JODIE checkpoint (``--task temporal-link``):
``gnn evaluate`` streams the run's validation and test events again from the memory it
kept, and ``gnn embed`` writes every node's embedding at the end of the events (``--at
T``: at a time; :mod:`graphsys.gnn.temporal_checkpoint`); ``gnn score CHECKPOINT --events
FILE`` scores new events ``src,dst,timestamp`` (``--update``: each batch then taken into the memory;
:mod:`graphsys.gnn.temporal_score`). ``--eval-protocol tgb`` ranks held-out events as TGB's
evaluator does (:mod:`graphsys.gnn.temporal_eval`).

``graphsys gnn recommend DIR/checkpoint --users 1,2 --k 10`` prints each user's top-k
items of a link-task checkpoint (original ids, with a ``title`` item column when there is
one); ``--evaluate test --ks 10,20`` prints hits@K, recall@K and MRR of the held-out edge
set ``test`` instead (:mod:`graphsys.gnn.recommendation`).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

from graphsys.commands._common import (
    add_time_args,
    add_trace_arg,
    emit_json,
    show_progress,
    trace_path,
)
from graphsys.errors import GraphsysError
from graphsys.outputs import check_outputs, check_own_directory
from graphsys.plugins import GNN_MODELS


def register(subparsers) -> None:
    # the defaults are TrainConfig's: one set, shown here
    from graphsys.gnn.config import (
        EVAL_PROTOCOLS,
        SAMPLERS,
        SELECTIONS,
        WEIGHT_DECAY_LAYERS,
        TrainConfig,
    )

    field = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    p = subparsers.add_parser("gnn", help="train GNNs (PinSage, GraphSAGE, GCN, GAT, GIN, or "
                                          "your own module) and embed nodes",
                              description=__doc__)
    sub = p.add_subparsers(dest="gnn_command", metavar="SUBCOMMAND", required=True)

    t = sub.add_parser("train", help="train a GNN and print test metrics")
    _source_args(t)
    t.add_argument("--task", choices=("node", "link", "temporal-link"), default=field["task"],
                   help=f"node classification, link prediction, or temporal link prediction "
                        f"on timestamped edges (model tgn, tgat or jodie, a chronological "
                        f"split) (default "
                        f"{field['task']})")
    t.add_argument("--model", default=field["model"], metavar="MODEL",
                   help=f"{', '.join(GNN_MODELS.names())} (default sage; tgn (default), "
                        f"tgat or jodie for task temporal-link), "
                        "rgcn (task link on a typed graph with train/valid/test edge sets: "
                        "R-GCN encoder, DistMult decoder, filtered MRR / Hits@k), or "
                        "module:Factory: "
                        "a callable Factory(in_dim=, hidden_dim=, out_dim=, num_layers=, "
                        "dropout=) returning a torch.nn.Module called as model(blocks, x) "
                        "(node task)")
    t.add_argument("--weight-decay-layers", choices=WEIGHT_DECAY_LAYERS,
                   default=field["weight_decay_layers"],
                   help=f"layers the weight decay applies to: every one, or the first only "
                        f"(Kipf & Welling's GCN recipe) (default {field['weight_decay_layers']})")
    t.add_argument("--selection", choices=SELECTIONS, default=field["selection"],
                   help=f"node task: keep the model of the best validation accuracy "
                        f"(val_accuracy), or GAT's rule: patience restarts when validation "
                        f"accuracy or loss improves, a model is kept when both do "
                        f"(val_accuracy_and_loss) (default {field['selection']})")
    t.add_argument("--full-graph", action="store_true",
                   help="node task: one step per epoch on the whole graph (every node, full "
                        "neighbourhoods), as Kipf & Welling and PyG's Planetoid examples")
    t.add_argument("--fanouts", default=None,
                   help="neighbours per layer, input layer first, e.g. 10,25; -1 = all "
                        "(default: all for node, 10,10 for link; temporal-link: 10 for tgn, "
                        "10,10 for tgat, one hop per layer, none for jodie)")
    # left None, these take the task's (and model's) default in TrainConfig
    for flag, kind, what in (("--epochs", int, "maximum epochs"),
                             ("--lr", float, "Adam learning rate"),
                             ("--weight-decay", float, "Adam weight decay"),
                             ("--dropout", float, "dropout"),
                             ("--batch-size", int, "seeds / queries per step"),
                             ("--patience", int,
                              "early stopping: evaluations without improvement")):
        t.add_argument(flag, type=kind, default=None,
                       help=f"{what} ({_task_defaults(flag[2:].replace('-', '_'))})")
    for flag, what in (("--hidden", "hidden width"), ("--heads", "attention heads of gat's "
                                                                 "hidden layers"),
                       ("--workers", "sampling threads"), ("--prefetch", "batches sampled "
                                                                         "ahead")):
        name = "num_workers" if flag == "--workers" else flag[2:]
        t.add_argument(flag, dest=name, type=int, default=field[name], metavar="N",
                       help=f"{what} (default {field[name]})")
    t.add_argument("--sampler", choices=SAMPLERS, default=field["sampler"],
                   help=f"node task: where the training batches are sampled: on the training "
                        f"device (torch ops, the same blocks), on the CPU (numba threads), "
                        f"graph: on the device in padded shapes, each step (draw to update) "
                        f"one CUDA graph (the sage, gcn, gat or gin model on stored features), "
                        f"or auto: graph on CUDA where the run allows it, else the device "
                        f"on CUDA, else the CPU (default {field['sampler']})")
    t.add_argument("--batches-per-epoch", type=int, default=field["batches_per_epoch"],
                   help="cap on steps per epoch (link task)")
    t.add_argument("--eval-every", type=int, default=field["eval_every"], metavar="N",
                   help=f"epochs between validations, and after the last (default "
                        f"{field['eval_every']})")
    t.add_argument("--eval-fanouts", default=None,
                   help="node task: neighbours per layer of the validation and test seeds, "
                        "e.g. 10,25; -1 = every neighbour in every layer (default: the "
                        "training fanouts)")
    t.add_argument("--layerwise-inference", action="store_true",
                   help="node task: evaluate every node of the graph on full neighbourhoods, "
                        "layer by layer (default: only the validation and test seeds)")
    t.add_argument("--out", type=Path, default=None,
                   help="directory of the run: run.json, the best checkpoint and "
                        "metrics.jsonl, held by one run at a time; a rerun with the same "
                        "directory, settings and graph resumes after the last epoch it "
                        "finished (every task); a directory holding another run is refused")
    t.add_argument("--config", type=Path, default=None,
                   help="TOML or JSON file of training settings (TrainConfig's fields; a "
                        "[rgcn] table for --model rgcn), e.g. "
                        "datasets/configs/fb15k-237-rgcn.toml; a flag given overrides the "
                        "file's value")
    _link_args(t, field)
    add_trace_arg(t)
    _device_args(t, seed=field["seed"])
    # a setting's flag left out reads None: TrainConfig's default, or the --config file's
    t.set_defaults(func=run, link_keep_targets=None, **dict.fromkeys(field, None))

    e = sub.add_parser("embed", help="streaming inference: Arrow embeddings of every node")
    e.add_argument("--checkpoint", type=Path, required=True,
                   help="checkpoint directory written by gnn train --out")
    _source_args(e)
    e.add_argument("--out", type=Path, required=True, help="embedding directory to create")
    e.add_argument("--at", metavar="T", default=None,
                   help="a temporal checkpoint: embeddings at time T, from the events before it "
                        "(default: after the last event)")
    _device_args(e)
    e.set_defaults(func=run)

    c = sub.add_parser("score", help="score new events (src, dst, t) under a temporal "
                                     "checkpoint (tgn, tgat, jodie)")
    c.add_argument("checkpoint", type=Path, metavar="CHECKPOINT",
                   help="checkpoint directory written by gnn train --task temporal-link --out")
    c.add_argument("--events", type=Path, required=True,
                   help="CSV file with columns src, dst, timestamp (and weight, when the "
                        "training graph's edges have one), original node ids")
    c.add_argument("--update", action="store_true",
                   help="stream the events: each batch scored, then taken into the memory "
                        "(default: every event scored against the checkpoint's memory)")
    c.add_argument("--at", metavar="T", default=None,
                   help="start from the memory after the events before T (default: after "
                        "every event)")
    c.add_argument("--graph", type=Path, default=None,
                   help="graph directory (default: the one the checkpoint was trained on)")
    c.add_argument("--json", action="store_true", help="print one JSON line")
    c.set_defaults(func=_score)

    v = sub.add_parser("evaluate", help="rank an edge set under a checkpoint: R-GCN "
                                        "(filtered, both sides) or item recommendation; "
                                        "stream a TGN, TGAT or JODIE run's validation and "
                                        "test events")
    v.add_argument("checkpoint", type=Path, metavar="CHECKPOINT",
                   help="checkpoint directory written by gnn train --task link or "
                        "temporal-link --out")
    v.add_argument("--graph", type=Path, default=None,
                   help="graph directory (default: the one the checkpoint was trained on)")
    v.add_argument("--edge-set", default=None,
                   help="the held-out edges to rank (default: the run's test edge set)")
    v.add_argument("--ks", default=None,
                   help="comma-separated K of hits@K (default: the run's metrics_k)")
    v.add_argument("--eval-protocol", choices=EVAL_PROTOCOLS, default=None,
                   help="a temporal checkpoint: rank its events as the run did (default), among "
                        "uniform candidates (sampled) or TGB's fixed negatives (tgb)")
    v.add_argument("--json", action="store_true", help="print one JSON line")
    v.set_defaults(func=_evaluate)

    r = sub.add_parser("recommend", help="top-k items per user from a link-task checkpoint, "
                                         "or hits@K / recall@K / MRR of held-out edges")
    r.add_argument("checkpoint", type=Path, metavar="CHECKPOINT",
                   help="checkpoint directory written by gnn train --task link --out")
    r.add_argument("--users", default=None,
                   help="comma-separated original user ids, e.g. 1,2,3")
    r.add_argument("--k", type=int, default=10, help="items per user (default 10)")
    r.add_argument("--graph", type=Path, default=None,
                   help="graph directory (default: the one the checkpoint was trained on)")
    r.add_argument("--edge-set", default=None,
                   help="the users' history: its items form the query and are not "
                        "recommended (default: the training edge set)")
    r.add_argument("--include-seen", action="store_true",
                   help="recommend items of the users' history too")
    r.add_argument("--title-column", default=None,
                   help="item node column shown beside each item (default: title, when "
                        "the items have one)")
    r.add_argument("--evaluate", metavar="EDGE_SET", default=None,
                   help="instead of recommending: rank every user's edges of this held-out "
                        "edge set (e.g. test) and print hits@K, recall@K and MRR")
    r.add_argument("--ks", default="10",
                   help="with --evaluate: comma-separated cut-offs K (default 10)")
    r.add_argument("--json", action="store_true", help="print one JSON line")
    r.set_defaults(func=_recommend)


def _link_args(t, field: dict) -> None:
    """The link task's held-out-edge flags (TrainConfig's link_* keys and metrics_k)."""
    from graphsys.gnn.config import EVAL_PROTOCOLS, LINK_DECODERS, LINK_SPLITS

    t.add_argument("--link-split", choices=LINK_SPLITS, default=field["link_split"],
                   help=f"link task: hold out one interaction per user of a bipartite graph "
                        f"(user, PinSage recommendation), a seeded share of the edges of any "
                        f"graph (random), or the latest edges by their timestamp edge column "
                        f"(time); auto = user on a graph joining two entity types, else "
                        f"random (default {field['link_split']})")
    for flag, what in (("--link-val-fraction", "validation"), ("--link-test-fraction", "test")):
        name = flag[2:].replace("-", "_")
        t.add_argument(flag, type=float, default=field[name], metavar="F",
                       help=f"link task, random/time split: share of the edges held out for "
                            f"{what} (default {field[name]})")
    t.add_argument("--link-decoder", choices=LINK_DECODERS, default=field["link_decoder"],
                   help=f"link task, random/time split: edge score, a two-layer perceptron "
                        f"on h * t (mlp), <h, t> (dot) or <h, diag(r), t> (distmult) "
                        f"(default {field['link_decoder']})")
    t.add_argument("--link-keep-targets", action="store_true",
                   help="link task, random/time split: keep each training batch's target "
                        "edges in its own sampled neighbourhoods (default: removed, as "
                        "held-out edges are never in them)")
    t.add_argument("--link-eval-negatives", type=int, default=field["link_eval_negatives"],
                   metavar="N",
                   help=f"link task, random/time split: uniform negatives each held-out edge "
                        f"is ranked against, true edges filtered out; -1 = every candidate "
                        f"node (default {field['link_eval_negatives']})")
    add_time_args(t, "train on")
    for flag, what in (("--valid-from", "validation edges (up to --test-from)"),
                       ("--test-from", "test edges")):
        t.add_argument(flag, metavar="T", default=None,
                       help=f"link split time and task temporal-link: the edges stamped from "
                            f"T on are {what}, instead of the latest fractions (both flags or "
                            f"neither)")
    t.add_argument("--temporal-strategy", choices=("recent", "uniform"),
                   default=field["temporal_strategy"],
                   help=f"task temporal-link: each event's --fanouts neighbours among the "
                        f"edges strictly before it, the most recent or uniform ones (default "
                        f"{field['temporal_strategy']})")
    t.add_argument("--eval-protocol", choices=EVAL_PROTOCOLS, default=field["eval_protocol"],
                   help=f"task temporal-link: rank each held-out event among "
                        f"--link-eval-negatives uniform candidates, raw (sampled), or among "
                        f"TGB's fixed negatives, half historical, filtered (tgb) (default "
                        f"{field['eval_protocol']})")
    t.add_argument("--edge-features", default=None, metavar="COL,COL",
                   help="task temporal-link: the edge columns that are each event's features "
                        "(TGN's messages, the attention's edge input); '' for none (default: "
                        "every feature_* column, else the edge weight)")
    t.add_argument("--metrics-k", default=",".join(map(str, field["metrics_k"])), metavar="K,K",
                   help=f"link task: the k of hits@k and recall@k (default "
                        f"{','.join(map(str, field['metrics_k']))})")


def _task_defaults(name: str) -> str:
    """``default 200 node, 20 link``: the TrainConfig default of ``name`` per task (and
    model, where one differs)."""
    from graphsys.gnn.config import MODEL_DEFAULTS, TASK_DEFAULTS

    parts = [f"{values[name]} {task}" for task, values in TASK_DEFAULTS.items()]
    parts += [f"{values[name]} {model} ({task})" for (task, model), values in
              MODEL_DEFAULTS.items() if name in values]
    return "default " + ", ".join(parts)


def _source_args(p) -> None:
    p.add_argument("--dataset", help="registry dataset (fetched and ingested into the cache)")
    p.add_argument("--graph", type=Path, help="graph directory")
    p.add_argument("--mirror", help="local dataset mirror (else GRAPHSYS_MIRROR)")
    p.add_argument("--cache", help="dataset cache (else GRAPHSYS_DATA)")
    p.add_argument("--split", choices=("public", "random", "temporal"), default=None,
                   help="with --dataset: the standard public split (Planetoid for Cora and "
                        "CiteSeer; the default where it exists), the registry's seeded random "
                        "split (its own seed, not --seed), or (MovieLens) the leave-last-out "
                        "split by timestamp")


def _device_args(p, seed: int | None = None) -> None:
    """``--device``, ``--json``, ``--quiet`` and, given its default, ``--seed`` (gnn embed
    reads the checkpoint's)."""
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default cpu)")
    if seed is not None:
        p.add_argument("--seed", type=int, default=seed,
                       help=f"seed of every random choice (default {seed})")
    p.add_argument("--json", action="store_true", help="print one JSON line")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def run(args) -> int:
    if args.dataset is not None and args.graph is not None or (
            args.gnn_command == "train" and args.dataset is None and args.graph is None):
        raise GraphsysError("give exactly one of --dataset NAME or --graph DIR")
    return _train(args) if args.gnn_command == "train" else _embed(args)


def _train(args) -> int:
    from graphsys.device import resolve_device
    from graphsys.gnn import TrainConfig, load_train_config, train
    from graphsys.gnn.data import open_source
    from graphsys.sampling.neighbor import parse_fanouts
    from graphsys.trace import recording

    fanouts = parse_fanouts(args.fanouts) if args.fanouts is not None else None
    # the flags given (TrainConfig checks every value; a ParameterError is shown as the flag
    # that set it), over the --config file's values, over TrainConfig's defaults
    values = dict(
        task=args.task, model=args.model, fanouts=fanouts, hidden=args.hidden,
        epochs=args.epochs, lr=args.lr, weight_decay=args.weight_decay, dropout=args.dropout,
        weight_decay_layers=args.weight_decay_layers, full_graph=args.full_graph,
        selection=args.selection,
        heads=args.heads, batch_size=args.batch_size,
        batches_per_epoch=args.batches_per_epoch, patience=args.patience, seed=args.seed,
        num_workers=args.num_workers, prefetch=args.prefetch, sampler=args.sampler,
        link_split=args.link_split,
        link_val_fraction=args.link_val_fraction, link_test_fraction=args.link_test_fraction,
        link_decoder=args.link_decoder, link_eval_negatives=args.link_eval_negatives,
        link_exclude_targets=None if args.link_keep_targets is None else False,
        metrics_k=None if args.metrics_k is None else _ints(args.metrics_k, "metrics_k"),
        eval_every=args.eval_every,
        eval_fanouts=(parse_fanouts(args.eval_fanouts) if args.eval_fanouts is not None
                      else None),
        layerwise_inference=args.layerwise_inference, until=args.until, since=args.since,
        valid_from=args.valid_from, test_from=args.test_from,
        temporal_strategy=args.temporal_strategy, eval_protocol=args.eval_protocol,
        edge_features=(None if args.edge_features is None else
                       [c.strip() for c in args.edge_features.split(",") if c.strip()]))
    given = {k: v for k, v in values.items() if v is not None}
    cfg = load_train_config(args.config, given) if args.config is not None else \
        TrainConfig(**given)
    trace = trace_path(args)
    if args.out is not None:
        check_own_directory(args.out, what="a run")
    check_outputs([("--out", args.out, "directory"), ("--trace", args.trace, "file")],
                  overwrite=args.overwrite)
    device = resolve_device(args.device)
    node = cfg.task == "node"
    say = _say(args)
    graph = open_source(args.dataset, args.graph, mirror=args.mirror, cache=args.cache,
                        split=args.split, log=say)
    say(f"training {cfg.model} ({cfg.task} task) on {graph.path} [{device}]")
    t0 = time.perf_counter()
    key = "val_accuracy" if node else "val_mrr"
    with recording(trace, device):
        res = train(graph, cfg, device=device, out=args.out, progress=show_progress(args),
                    log=lambda r: say(f"epoch {r['epoch']:4d}  loss {r['loss']:.4f}  "
                                      f"{key} {r[key]:.4f}{'  *' if r['best'] else ''}"),
                    distributed=None)
    if res.extra.get("rank", 0) != 0:
        return 0
    seconds = time.perf_counter() - t0
    metrics = {k: round(v, 4) for k, v in res.metrics.items()}   # NaN (no input): null
    summary = {"task": cfg.task, "model": cfg.model, "graph": str(graph.path), **metrics,
               "epochs": res.epochs, "seconds": round(seconds, 3), "device": str(device)}
    if res.protocol is not None:
        summary["protocol"] = res.protocol
    if node:
        summary.update({k: res.extra[k] for k in ("train_seconds", "eval_seconds",
                                                   "world_size", "ranks") if k in res.extra})
    if args.out is not None:
        summary["checkpoint"] = str(args.out / "checkpoint")
    if args.json:
        emit_json(summary)
    else:
        print("  ".join(f"{k} {v}" for k, v in summary.items()))
    return 0


def _ints(text: str, name: str) -> list[int]:
    """``"1,3,10"`` -> ``[1, 3, 10]``; anything else is a one-line error on ``name``."""
    from graphsys.errors import ParameterError

    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ParameterError(name, f"must be comma-separated integers, got {text!r}") from None


def _embed(args) -> int:
    from graphsys.device import resolve_device
    from graphsys.gnn.data import open_source
    from graphsys.gnn.embed import embed_checkpoint

    check_own_directory(args.out, what="an embedding directory")
    device = resolve_device(args.device)
    say = _say(args)
    graph = None
    if args.dataset is not None or args.graph is not None:
        graph = open_source(args.dataset, args.graph, mirror=args.mirror, cache=args.cache,
                            split=args.split, log=say)
    t0 = time.perf_counter()
    if args.at is not None:
        from graphsys.gnn.temporal_score import embed_temporal

        info = embed_temporal(args.checkpoint, args.out, graph=graph, at=args.at,
                              device=device, log=say)
    else:
        info = embed_checkpoint(args.checkpoint, args.out, graph=graph, device=device,
                                log=say, progress=show_progress(args))
    info["seconds"] = round(time.perf_counter() - t0, 3)
    if args.json:
        emit_json(info)
    else:
        print(f"wrote {info['num_nodes']:,} {info['entity_type']} embeddings of dimension "
              f"{info['dimension']} to {info['out']} in {info['seconds']} s")
    return 0


def _evaluate(args) -> int:
    from graphsys.gnn.checkpoint import load_checkpoint
    from graphsys.gnn.config import RGCN, TEMPORAL_MODELS
    from graphsys.gnn.recommendation import evaluate as evaluate_items
    from graphsys.gnn.rgcn_link import evaluate as evaluate_rgcn

    t0 = time.perf_counter()
    ks = _ints(args.ks, "ks") if args.ks is not None else None
    _, config, meta = load_checkpoint(args.checkpoint)
    if config.get("model") in TEMPORAL_MODELS:
        from graphsys.gnn.temporal_checkpoint import evaluate_temporal

        if args.edge_set is not None:
            raise GraphsysError(f"--edge-set: a temporal checkpoint ({config['model']}) "
                                f"streams its run's validation and test events; it ranks no "
                                f"edge set")
        m = evaluate_temporal(args.checkpoint, graph=_opened(args.graph), ks=ks,
                              eval_protocol=args.eval_protocol)
    elif args.eval_protocol is not None:
        raise GraphsysError(f"--eval-protocol: ranks a temporal "
                            f"({', '.join(TEMPORAL_MODELS)}) checkpoint's events")
    elif config.get("model") == RGCN:
        m = evaluate_rgcn(args.checkpoint, graph=args.graph, edge_set=args.edge_set, ks=ks)
    elif meta.get("task") == "link" and ("other_type" in meta
                                         or len(meta.get("types") or ()) == 2):
        m = evaluate_items(args.checkpoint, graph=args.graph, edge_set=args.edge_set or "test",
                           ks=ks or (10,))
    else:
        raise GraphsysError(f"{args.checkpoint}: a {meta.get('task')}-task checkpoint of "
                            f"{config.get('model')}; gnn evaluate ranks R-GCN, TGN, TGAT, JODIE "
                            f"and item "
                            f"(link task, split user) checkpoints, gnn train reports the "
                            f"others' test metrics")
    m["seconds"] = round(time.perf_counter() - t0, 3)
    return _print_metrics(args, m)


def _score(args) -> int:
    from graphsys.gnn.temporal_score import TemporalScorer, read_events

    t0 = time.perf_counter()
    events = read_events(args.events)
    scorer = TemporalScorer(args.checkpoint, _opened(args.graph), at=args.at)
    scores = scorer.score(events["src"], events["dst"], events["timestamp"],
                          weight=events.get("weight"), update=args.update)
    seconds = round(time.perf_counter() - t0, 3)
    if args.json:
        emit_json({"checkpoint": str(args.checkpoint), "events": len(scores),
                   "update": args.update, "scores": scores.tolist(), "seconds": seconds})
        return 0
    for s, d, t, v in zip(events["src"], events["dst"], events["timestamp"], scores):
        print(f"{s} {d} {t} {v:.6f}")
    return 0


def _opened(path: Path | None):
    """The graph at ``path``, opened (None: None)."""
    from graphsys.storage.graph import open_graph

    return None if path is None else open_graph(path)


def _print_metrics(args, m: dict) -> int:
    """An evaluation's metrics: one JSON object with ``--json``, else ``key value`` pairs."""
    if args.json:
        emit_json({"checkpoint": str(args.checkpoint), **m})
    else:
        print("  ".join(f"{k} {round(v, 4) if isinstance(v, float) else v}"
                        for k, v in m.items()))
    return 0


def _recommend(args) -> int:
    from graphsys.errors import ParameterError
    from graphsys.gnn.recommendation import evaluate, recommend

    if (args.users is None) == (args.evaluate is None):
        raise GraphsysError("give exactly one of --users IDS (recommend) or --evaluate "
                            "EDGE_SET (metrics)")
    # each mode's own flags (given away from their defaults the other mode ignored them)
    stray = ([("--k", args.k != 10), ("--include-seen", args.include_seen),
              ("--title-column", args.title_column is not None)] if args.evaluate is not None
             else [("--ks", args.ks != "10")])
    mode, other = ("--evaluate", "--users") if args.evaluate is not None else (
        "--users", "--evaluate")
    for flag, given in stray:
        if given:
            raise GraphsysError(f"{flag} applies to {other}, not {mode}")
    t0 = time.perf_counter()
    if args.evaluate is not None:
        try:
            m = evaluate(args.checkpoint, graph=args.graph, edge_set=args.evaluate,
                         history=args.edge_set, ks=_ints(args.ks, "ks"))
        except ParameterError as exc:
            # evaluate's edge_set is --evaluate here, its history --edge-set
            renamed = {"edge_set": "evaluate", "history": "edge_set"}.get(exc.parameter)
            if renamed is None:
                raise
            raise ParameterError(renamed, exc.message) from None
        m["seconds"] = round(time.perf_counter() - t0, 3)
        return _print_metrics(args, m)
    users = [u.strip() for u in args.users.split(",") if u.strip()]
    recs = recommend(args.checkpoint, users, args.k, graph=args.graph,
                     exclude_seen=not args.include_seen, edge_set=args.edge_set,
                     title_column=args.title_column)
    rows = recs.to_pylist()
    if args.json:
        by_user = {}
        for row in rows:
            user = row.pop("user")
            by_user.setdefault(user, []).append(row)
        emit_json({"checkpoint": str(args.checkpoint), "k": args.k,
                   "recommendations": [{"user": u, "items": items}
                                       for u, items in by_user.items()],
                   "seconds": round(time.perf_counter() - t0, 3)})
        return 0
    for row in rows:
        title = f"  {row['title']}" if "title" in row else ""
        print(f"user {row['user']}  {row['rank']:3d}  item {row['item']}  "
              f"score {row['score']:.4f}{title}")
    return 0


def _say(args):
    """Progress lines on stderr, printed above any progress bar (under torchrun, rank 0's)."""
    from tqdm import tqdm

    from graphsys.distributed import this_rank

    if args.json or args.quiet or this_rank() != 0:
        return lambda *a: None
    return lambda line: tqdm.write(line, file=sys.stderr)
