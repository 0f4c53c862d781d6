#!/usr/bin/env python
"""The share of a GNN epoch spent evaluating, and the validation seconds per epoch, with
the default evaluation (the validation seeds' own sampled neighbourhoods) beside the
whole-graph layer-wise evaluation (``--layerwise-inference``).

The graph: ``graphsys generate sbm --nodes N`` (5 N undirected edges, 16 features, 4
classes), ingested with ``--undirected --partitions 2`` and its node table. Two node
tables are ingested: the generated one (20 training seeds per class, 500 validation, 1000
test: the ``validation`` rows) and the same without its mask columns, which
``gnn train`` splits 60/20/20 (the ``share`` rows). The models: the builtin ``sage`` and a
user model of two :class:`graphsys.gnn.SAGEConv` layers (``--model MODULE:Factory``, a
module this script writes into ``--work``). Every run is a fresh process of::

    graphsys gnn train --graph G [--model evalmodel:Factory] --fanouts 10,10 --epochs 3
        --out DIR --json [--layerwise-inference]

and its figures come from ``DIR/metrics.jsonl`` (cumulative ``train_seconds`` and
``eval_seconds`` per epoch), over epochs 2 to ``--epochs`` (the first pays the warm-up):
``share = eval / (train + eval)`` and ``validation = eval seconds per epoch``. The two
evaluations take turns ``--pairs`` times per row (default, layer-wise, default, ...), a
first untimed run fills numba's cache, and the JSON line holds every run, the medians and
the per-pair ratios (layer-wise over default)::

    python benchmarks/gnn/evaluation_share.py [--work DIR] [--nodes 100k] [--pairs 3]
        [--epochs 3] [--record FILE]
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

MODES = ("default", "layerwise")
#: the user model: two SAGEConv layers called as model(blocks, x)
USER_MODEL = '''
import torch
from torch import nn
from graphsys.gnn import SAGEConv


class Factory(nn.Module):
    def __init__(self, in_dim, hidden_dim, out_dim, num_layers, dropout):
        super().__init__()
        dims = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        self.convs = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims, dims[1:]))
        self.dropout = dropout

    def forward(self, blocks, x):
        for i, (conv, block) in enumerate(zip(self.convs, blocks)):
            x = conv(x, block)
            if i < len(self.convs) - 1:
                x = nn.functional.dropout(torch.relu(x), self.dropout, self.training)
        return x
'''


def graphsys_cli(*args: str | os.PathLike) -> None:
    """Run ``graphsys ARGS`` (this interpreter's), quietly; its error ends the benchmark in
    one message (the command and the tail of its stderr)."""
    harness.run_child([sys.executable, "-m", "graphsys", *map(str, args), "--quiet"])


def build(work: Path, nodes: int) -> dict[str, Path]:
    """The two graphs of ``nodes`` nodes (``masks``: the generated node table; ``split``:
    without its masks), made once under ``work/sbm-<nodes>``."""
    import pyarrow.parquet as pq

    base = work / f"sbm-{nodes}"
    graphs = {"masks": base / "masks", "split": base / "split"}
    if all((g / "manifest.json").exists() for g in graphs.values()):
        return graphs
    base.mkdir(parents=True, exist_ok=True)
    edges = base / "sbm.parquet"
    graphsys_cli("generate", "sbm", "--nodes", str(nodes), "--out", edges, "--overwrite")
    table = pq.read_table(base / "sbm.nodes.parquet")
    pq.write_table(table.drop([c for c in table.column_names if c.endswith("_mask")]),
                   base / "sbm.nomask.parquet")
    for name, node_table in (("masks", "sbm.nodes.parquet"), ("split", "sbm.nomask.parquet")):
        if graphs[name].exists():  # a build cut short: ingest refuses an existing directory
            shutil.rmtree(graphs[name])
        graphsys_cli("ingest", edges, "--out", graphs[name], "--undirected", "--partitions", "2",
                     "--nodes", base / node_table)
    return graphs


def train(work: Path, graph: Path, model: str, mode: str, epochs: int) -> dict:
    """One fresh ``gnn train`` process; its evaluation share and validation seconds per
    epoch over epochs 2..epochs, and the last validation accuracy (the run's directory is
    removed)."""
    out = Path(tempfile.mkdtemp(prefix="run-", dir=work))
    args = ["gnn", "train", "--graph", graph, "--fanouts", "10,10", "--epochs", str(epochs),
            "--out", out / "run", "--json", "--seed", "0"]
    if model == "own":
        args += ["--model", "evalmodel:Factory"]
    if mode == "layerwise":
        args.append("--layerwise-inference")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(work), str(harness.REPO), os.environ.get("PYTHONPATH", "")])}
    child = harness.run_child([sys.executable, "-m", "graphsys", *map(str, args)], env=env)
    records = [json.loads(line) for line in open(out / "run" / "metrics.jsonl")]
    shutil.rmtree(out)
    first, last = records[0], records[-1]
    train_s = last["train_seconds"] - first["train_seconds"]
    eval_s = last["eval_seconds"] - first["eval_seconds"]
    n = len(records) - 1
    return {"share": round(eval_s / (train_s + eval_s), 4),
            "validation_s": round(eval_s / n, 4), "train_s": round(train_s / n, 4),
            "val_accuracy": last.get("val_accuracy"), **child.peaks(),
            "loadavg": harness.load_average()[0]}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--nodes", type=harness.count, default=harness.count("100k"))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args(argv)
    if args.epochs < 2:
        ap.error("--epochs must be at least 2 (the first epoch is not counted)")
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    run = harness.Run("gnn/evaluation_share", args.record, memory=False)
    work = Path(args.work or tempfile.mkdtemp(prefix="gs-bench-evalshare-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "evalmodel.py").write_text(USER_MODEL)
    graphs = build(work, args.nodes)
    train(work, graphs["masks"], "builtin", "default", 2)  # fills numba's cache
    rows = {}
    for model in ("builtin", "own"):
        for graph, figure in (("split", "share"), ("masks", "validation_s")):
            turns = harness.alternate({m: lambda m=m, g=graph, mo=model: train(
                work, graphs[g], mo, m, args.epochs) for m in MODES}, args.pairs)
            med = {m: harness.median(r[figure] for r in turns[m]) for m in MODES}
            rows[f"{model}/{graph}"] = {
                "figure": figure, "median": med,
                "pair_ratio": harness.pair_ratios([r[figure] for r in turns["layerwise"]],
                                                  [r[figure] for r in turns["default"]]),
                "runs": turns}
            harness.log(f"{model}/{graph}: {figure} {med}")
    run.emit(nodes=args.nodes, epochs=args.epochs, pairs=args.pairs, rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
