#!/usr/bin/env python
"""A minibatch GraphSAGE training epoch, end to end, graphsys beside DGL 2.1.0.

The workload: a labelled stochastic block model (:func:`graphsys.generators.sbm`) of
``--nodes`` nodes and ``--edges`` directed edges (``--edges / 2`` undirected pairs, stored
both ways), ``--features`` Gaussian features around the class means, ``--classes`` classes;
a 2-layer GraphSAGE-mean (hidden 256, ReLU, dropout 0.5 on both layers' inputs, the raw
features included), uniform neighbour sampling with fanouts 15,10 (input layer first) over
in-edges, batches of 1024 training seeds, Adam (lr 0.003), cross-entropy. Both libraries read
the same arrays (cached as .npy in ``--work``: edges, CSR, features, labels, split) and run
the same steps; the accuracy is measured on the same test nodes, with the same fanouts, after
every epoch (outside the timed epoch).

graphsys runs :class:`graphsys.gnn.NodeLoader` (one sampling thread that also gathers the
features and applies the input dropout) and :class:`graphsys.gnn.GNN`; DGL runs
``dgl.dataloading.DataLoader`` (in-process, features prefetched by its loader) and
``dgl.nn.SAGEConv`` with ``OMP_WAIT_POLICY=PASSIVE``. Each side is a fresh child process; the
two alternate ``--pairs`` times (graphsys, DGL, graphsys, ...), and each child's peak RSS and
peak anonymous RSS are sampled from outside. The JSON line holds per-side epoch seconds
(median over pairs of each run's median epoch), test accuracies after each epoch, the
per-pair ratios (DGL's epoch over graphsys's), their median and the peaks. Usage::

    python benchmarks/gnn/minibatch_epoch.py --work DIR [--pairs 3] [--epochs 2] [--steps N]
        [--dgl-python PATH | --skip-dgl] [--record FILE]

``--steps N`` times the first ``N`` batches of each epoch only (both sides). The DGL
environment is ``--dgl-python`` when given (checked, never installed into), else the one
``harness.PEERS["dgl"]`` makes in ``--work``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness

HIDDEN, FANOUTS, BATCH, LR, DROPOUT = 256, (15, 10), 1024, 0.003, 0.5
NUM_TEST = 20_000

# -- inputs -------------------------------------------------------------------------------------


def prepare(args, work: Path) -> Path:
    """Generate (once; reused while the parameters match) the graph's arrays under
    ``work/data-<nodes>-<edges>-<features>``."""
    from graphsys.generators import sbm

    data = work / f"data-{args.nodes}-{args.edges}-{args.features}-{args.classes}"
    meta = data / "meta.json"
    if meta.exists():
        return data
    data.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    train_per_class = args.train // args.classes
    model = sbm(args.nodes, args.edges // 2, blocks=args.classes, features=args.features,
                feature_noise=args.feature_noise, train_per_class=train_per_class, num_val=0,
                num_test=NUM_TEST, seed=0)
    feat = np.lib.format.open_memmap(data / "feat.npy", "w+", np.float32,
                                     (args.nodes, args.features))
    label = np.empty(args.nodes, np.int64)
    train, test = [], []
    for chunk in model.nodes():
        ids = chunk["id"]
        feat[ids] = chunk["feat"]
        label[ids] = chunk["label"]
        train.append(ids[chunk["train_mask"]])
        test.append(ids[chunk["test_mask"]])
    feat.flush()
    del feat
    src = np.concatenate([c["src"] for c in model.edges()]).astype(np.int64)
    dst = np.concatenate([c["dst"] for c in model.edges()]).astype(np.int64)
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    np.save(data / "src.npy", src)
    np.save(data / "dst.npy", dst)
    adj = harness.csr_keeping_duplicates(dst, src, args.nodes, args.nodes)  # v: in-neighbours
    np.save(data / "indptr.npy", adj.indptr)
    np.save(data / "indices.npy", adj.indices)
    np.save(data / "label.npy", label)
    np.save(data / "train.npy", np.sort(np.concatenate(train)))
    np.save(data / "test.npy", np.sort(np.concatenate(test)))
    meta.write_text(json.dumps({"nodes": args.nodes, "edges": int(len(src)),
                                "features": args.features, "classes": args.classes,
                                "train": int(sum(map(len, train))),
                                "test": int(sum(map(len, test))),
                                "generate_s": round(time.perf_counter() - t0, 1)}))
    return data


# -- graphsys side (a child process: ``--child graphsys``) ------------------------------------


def run_graphsys(data: Path, epochs: int, steps: int) -> dict:
    import torch
    import torch.nn.functional as F

    from graphsys.gnn import GNN, NodeLoader
    from graphsys.gnn.optim import fused_adam
    from graphsys.sampling import Adjacency, NeighborSampler

    def load(name):
        return np.load(data / f"{name}.npy", mmap_mode="r")

    adj = Adjacency(load("indptr"), load("indices"), int(len(load("indptr")) - 1))
    feat, label = load("feat"), torch.from_numpy(np.array(load("label")))
    train, test = np.array(load("train")), np.array(load("test"))
    classes = int(label.max()) + 1
    torch.manual_seed(0)
    sampler = NeighborSampler(adj, list(FANOUTS))
    model = GNN("sage", feat.shape[1], HIDDEN, classes, num_layers=2, dropout=DROPOUT)
    opt = fused_adam(model.parameters(), lr=LR)     # what gnn.train steps with
    loader = NodeLoader(None, sampler, train, batch_size=BATCH, seed=0, features=feat,
                        labels=label, input_dropout=DROPOUT)
    tests = NodeLoader(None, sampler, test, batch_size=BATCH, shuffle=False, seed=1,
                       features=feat, labels=label)
    out = {"epoch_s": [], "test_accuracy": [], "steps": []}
    for _ in range(epochs):
        model.train()
        t0 = time.perf_counter()
        done = 0
        for batch in loader:
            loss = F.cross_entropy(model(batch.blocks, batch.x, input_dropout=False), batch.y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
            if done == steps:
                break
        out["epoch_s"].append(time.perf_counter() - t0)
        out["steps"].append(done)
        model.eval()
        right = 0
        with torch.no_grad():
            for batch in tests:
                right += int((model(batch.blocks, batch.x).argmax(1) == batch.y).sum())
        out["test_accuracy"].append(right / len(test))
    out.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    return out


# -- DGL side: written into the work dir, run with the DGL venv's python ----------------------

DGL_SCRIPT = r'''
import json, sys, time
import numpy as np, torch, dgl
import torch.nn.functional as F
from dgl.nn import SAGEConv
data, epochs, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
HIDDEN, FANOUTS, BATCH, LR, DROPOUT = __CONSTANTS__
load = lambda n: np.load(f"{data}/{n}.npy")
g = dgl.graph((torch.from_numpy(load("src")), torch.from_numpy(load("dst"))),
              num_nodes=len(load("label")))
g.ndata["feat"] = torch.from_numpy(load("feat"))
g.ndata["label"] = torch.from_numpy(load("label"))
train, test = torch.from_numpy(load("train")), torch.from_numpy(load("test"))
classes = int(g.ndata["label"].max()) + 1

class SAGE(torch.nn.Module):
    def __init__(s, i, h, o):
        super().__init__()
        s.c1, s.c2 = SAGEConv(i, h, "mean"), SAGEConv(h, o, "mean")
        s.dp = torch.nn.Dropout(DROPOUT)

    def forward(s, blocks, x):
        h = F.relu(s.c1(blocks[0], s.dp(x)))
        return s.c2(blocks[1], s.dp(h))

torch.manual_seed(0)
m = SAGE(g.ndata["feat"].shape[1], HIDDEN, classes)
opt = torch.optim.Adam(m.parameters(), lr=LR)
sampler = dgl.dataloading.NeighborSampler(list(FANOUTS), prefetch_node_feats=["feat"],
                                          prefetch_labels=["label"])
loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=BATCH, shuffle=True)
tests = dgl.dataloading.DataLoader(g, test, sampler, batch_size=BATCH, shuffle=False)
out = {"epoch_s": [], "test_accuracy": [], "steps": [], "dgl": dgl.__version__,
       "torch": torch.__version__, "torch_threads": torch.get_num_threads()}
for ep in range(epochs):
    m.train()
    t0 = time.perf_counter()
    done = 0
    for _, _, blocks in loader:
        x, y = blocks[0].srcdata["feat"], blocks[-1].dstdata["label"]
        loss = F.cross_entropy(m(blocks, x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        done += 1
        if done == steps:
            break
    out["epoch_s"].append(time.perf_counter() - t0)
    out["steps"].append(done)
    m.eval()
    right = 0
    with torch.no_grad():
        for _, _, blocks in tests:
            x, y = blocks[0].srcdata["feat"], blocks[-1].dstdata["label"]
            right += int((m(blocks, x).argmax(1) == y).sum())
    out["test_accuracy"].append(right / len(test))
print(json.dumps(out))
'''


# -- the parent ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, required=True, help="work dir (arrays cached here)")
    ap.add_argument("--nodes", type=harness.count, default=harness.count("1M"))
    ap.add_argument("--edges", type=harness.count, default=harness.count("25M"),
                    help="directed edges")
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--classes", type=int, default=8)
    ap.add_argument("--feature-noise", type=float, default=8.0)
    ap.add_argument("--train", type=harness.count, default=harness.count("100k"),
                    help="training seeds")
    ap.add_argument("--pairs", type=int, default=3, help="alternated graphsys/DGL pairs")
    ap.add_argument("--epochs", type=int, default=2, help="epochs per run")
    ap.add_argument("--steps", type=int, default=0, help="batches per epoch (0: all)")
    harness.add_peer_argument(ap, "dgl")
    ap.add_argument("--child", choices=["graphsys"], help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(run_graphsys(args.data, args.epochs, args.steps)))
        return 0
    run = harness.Run("gnn/minibatch_epoch", args.record, memory=False)
    args.work.mkdir(parents=True, exist_ok=True)
    data = prepare(args, args.work)
    res = {**json.loads((data / "meta.json").read_text()),
           "fanouts": list(FANOUTS), "hidden": HIDDEN, "batch_size": BATCH, "lr": LR,
           "dropout": DROPOUT, "epochs": args.epochs, "steps_per_epoch": args.steps or "all",
           "pairs": args.pairs}
    py, why = harness.peer_python("dgl", args.work, args.dgl_python, args.skip_dgl)
    if py is None:
        run.missing("DGL rows", why)
    script = args.work / "dgl_gnn_train.py"
    script.write_text(DGL_SCRIPT.replace("__CONSTANTS__", repr(
        (HIDDEN, FANOUTS, BATCH, LR, DROPOUT))))
    dgl_env = harness.peer_environment(OMP_WAIT_POLICY="PASSIVE")
    gs_cmd = [sys.executable, __file__, "--child", "graphsys", "--work", str(args.work),
              "--data", str(data), "--epochs", str(args.epochs), "--steps", str(args.steps)]
    loads = []

    def side(cmd, env=None):
        def one():
            child = harness.run_child(cmd, env=env)
            loads.append(harness.load_average()[0])
            harness.log(f"{cmd[0]}: {json.dumps(child.json)}")
            return child
        return one

    turns = harness.alternate({
        "graphsys": side(gs_cmd),
        "dgl": None if py is None else side([py, script, data, str(args.epochs),
                                             str(args.steps)], dgl_env)}, args.pairs)

    def summary(rs):
        # the first epoch compiles / warms caches: a run's figure is its later epochs' median
        epoch = [harness.median(r.json["epoch_s"][1:] or r.json["epoch_s"]) for r in rs]
        return {"epoch_s": [round(e, 3) for e in epoch],
                "epoch_s_median": round(harness.median(epoch), 3),
                "test_accuracy": [[round(a, 4) for a in r.json["test_accuracy"]] for r in rs],
                "steps": rs[0].json["steps"], "torch": rs[0].json["torch"],
                "torch_threads": rs[0].json["torch_threads"],
                "peak_rss_bytes": max(r.peak_rss_bytes for r in rs),
                "peak_rss_anon_bytes": max(r.peak_rss_anon_bytes for r in rs)}

    res["graphsys"] = summary(turns["graphsys"])
    if turns.get("dgl"):
        res["dgl"] = {"version": turns["dgl"][0].json["dgl"], **summary(turns["dgl"])}
        ratios = harness.pair_ratios(res["dgl"]["epoch_s"], res["graphsys"]["epoch_s"], 2)
        res["ratios"], res["ratio_median"] = ratios["ratios"], ratios["median"]
    res["load_during"] = loads
    run.emit(**res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
