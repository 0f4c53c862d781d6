"""``graphsys gnn``: train GNNs with PinSage-style sampling, and embed every node.

``graphsys gnn train --dataset cora --task node --model sage --json`` trains and prints
test metrics; with ``--json`` the last line is one JSON object holding ``test_accuracy``
(node task) or ``hits@10`` and ``mrr`` (link task), plus ``epochs`` and ``seconds``.
``--out DIR`` keeps the best checkpoint (``DIR/checkpoint``) and ``DIR/metrics.jsonl``.
``graphsys gnn embed --checkpoint DIR/checkpoint --out EMB`` runs streaming inference,
partition by partition, writing Arrow embedding files that ``graphsys.embed.Embeddings.load``
(and ``graphsys embed nearest EMB ID``) serve. Both show progress on stderr unless
``--quiet``: a tqdm bar on a terminal, else a line every ``GRAPHSYS_PROGRESS_SECONDS``
(default 10) seconds.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from pathlib import Path

from graphsys.commands._common import add_trace_arg, emit_json, show_progress, trace_path
from graphsys.errors import GraphsysError
from graphsys.plugins import GNN_MODELS


def register(subparsers) -> None:
    # the defaults are TrainConfig's: one set, shown here
    from graphsys.gnn.config import SELECTIONS, WEIGHT_DECAY_LAYERS, TrainConfig

    field = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    p = subparsers.add_parser("gnn", help="train GNNs (PinSage, GraphSAGE, GCN, GAT, GIN, or "
                                          "your own module) and embed nodes",
                              description=__doc__)
    sub = p.add_subparsers(dest="gnn_command", metavar="SUBCOMMAND", required=True)

    t = sub.add_parser("train", help="train a GNN and print test metrics")
    _source_args(t)
    t.add_argument("--task", choices=("node", "link"), default=field["task"],
                   help=f"node classification or link prediction (default {field['task']})")
    t.add_argument("--model", default=field["model"], metavar="MODEL",
                   help=f"{', '.join(GNN_MODELS.names())} (default {field['model']}), or "
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
                        "(default: all for node, 10,10 for link)")
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
    t.add_argument("--batches-per-epoch", type=int, default=field["batches_per_epoch"],
                   help="cap on steps per epoch (link task)")
    t.add_argument("--out", type=Path, default=None,
                   help="directory for the best checkpoint and metrics.jsonl")
    add_trace_arg(t)
    _device_args(t, seed=field["seed"])
    t.set_defaults(func=run)

    e = sub.add_parser("embed", help="streaming inference: Arrow embeddings of every node")
    e.add_argument("--checkpoint", type=Path, required=True,
                   help="checkpoint directory written by gnn train --out")
    _source_args(e, required=False)
    e.add_argument("--out", type=Path, required=True, help="embedding directory to create")
    _device_args(e)
    e.set_defaults(func=run)


def _task_defaults(name: str) -> str:
    """``default 200 node, 20 link``: the TrainConfig default of ``name`` per task (and
    model, where one differs)."""
    from graphsys.gnn.config import MODEL_DEFAULTS, TASK_DEFAULTS

    parts = [f"{values[name]} {task}" for task, values in TASK_DEFAULTS.items()]
    parts += [f"{values[name]} {model} ({task})" for (task, model), values in
              MODEL_DEFAULTS.items() if name in values]
    return "default " + ", ".join(parts)


def _source_args(p, required: bool = True) -> None:
    p.add_argument("--dataset", help="registry dataset (fetched and ingested into the cache)")
    p.add_argument("--graph", type=Path, help="graph directory")
    p.add_argument("--mirror", help="local dataset mirror (else GRAPHSYS_MIRROR)")
    p.add_argument("--cache", help="dataset cache (else GRAPHSYS_DATA)")
    p.add_argument("--split", choices=("public", "random"), default=None,
                   help="with --dataset: the standard public split (Planetoid for Cora and "
                        "CiteSeer; the default where it exists) or the seeded random split")


def _device_args(p, seed: int = 0) -> None:
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default cpu)")
    p.add_argument("--seed", type=int, default=seed, help="seed of every random choice")
    p.add_argument("--json", action="store_true", help="last line: one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def run(args) -> int:
    if args.dataset is not None and args.graph is not None or (
            args.gnn_command == "train" and args.dataset is None and args.graph is None):
        raise GraphsysError("give exactly one of --dataset NAME or --graph DIR")
    return _train(args) if args.gnn_command == "train" else _embed(args)


def _train(args) -> int:
    from graphsys.device import resolve_device
    from graphsys.gnn import TrainConfig, train
    from graphsys.gnn.data import open_source
    from graphsys.sampling.neighbor import parse_fanouts
    from graphsys.trace import recording

    fanouts = parse_fanouts(args.fanouts) if args.fanouts is not None else None
    # TrainConfig checks every value (ParameterError: shown as the flag that set it)
    cfg = TrainConfig(
        task=args.task, model=args.model, fanouts=fanouts, hidden=args.hidden,
        epochs=args.epochs, lr=args.lr, weight_decay=args.weight_decay, dropout=args.dropout,
        weight_decay_layers=args.weight_decay_layers, full_graph=args.full_graph,
        selection=args.selection,
        heads=args.heads, batch_size=args.batch_size,
        batches_per_epoch=args.batches_per_epoch, patience=args.patience, seed=args.seed,
        num_workers=args.num_workers, prefetch=args.prefetch)
    trace = trace_path(args)
    device = resolve_device(args.device)
    node = args.task == "node"
    say = _say(args)
    graph = open_source(args.dataset, args.graph, mirror=args.mirror, cache=args.cache,
                        split=args.split, log=say)
    say(f"training {cfg.model} ({cfg.task} task) on {graph.path} [{device}]")
    t0 = time.perf_counter()
    key = "val_accuracy" if node else "val_mrr"
    with recording(trace, device):
        res = train(graph, cfg, device=device, out=args.out, progress=show_progress(args),
                    log=lambda r: say(f"epoch {r['epoch']:4d}  loss {r['loss']:.4f}  "
                                      f"{key} {r[key]:.4f}{'  *' if r['best'] else ''}"))
    seconds = time.perf_counter() - t0
    metrics = {k: round(v, 4) for k, v in res.metrics.items() if math.isfinite(v)}
    summary = {"task": cfg.task, "model": cfg.model, "graph": str(graph.path), **metrics,
               "epochs": res.epochs, "seconds": round(seconds, 3), "device": str(device)}
    if args.out is not None:
        summary["checkpoint"] = str(args.out / "checkpoint")
    if args.json:
        emit_json(summary)
    else:
        print("  ".join(f"{k} {v}" for k, v in summary.items()))
    return 0


def _embed(args) -> int:
    from graphsys.device import resolve_device
    from graphsys.gnn.data import open_source
    from graphsys.gnn.embed import embed_checkpoint

    device = resolve_device(args.device)
    say = _say(args)
    graph = None
    if args.dataset is not None or args.graph is not None:
        graph = open_source(args.dataset, args.graph, mirror=args.mirror, cache=args.cache,
                            split=args.split, log=say)
    t0 = time.perf_counter()
    info = embed_checkpoint(args.checkpoint, args.out, graph=graph, device=device,
                            log=say, progress=show_progress(args))
    info["seconds"] = round(time.perf_counter() - t0, 3)
    if args.json:
        emit_json(info)
    else:
        print(f"wrote {info['num_nodes']:,} {info['entity_type']} embeddings of dimension "
              f"{info['dimension']} to {info['out']} in {info['seconds']} s")
    return 0


def _say(args):
    """Progress lines on stderr, printed above any progress bar."""
    from tqdm import tqdm

    if args.json or args.quiet:
        return lambda *a: None
    return lambda line: tqdm.write(line, file=sys.stderr)
