#!/usr/bin/env python
"""graphsys's samplers and GraphSAGE training epochs beside DGL 2.1.0.

The JSON line holds, for graphsys and for DGL 2.1.0 (torch 2.2.1, in its own environment:
``harness.PEERS["dgl"]``, made in the work directory unless ``--dgl-python`` names one):

* PinSage sampler seeds/s (num_traversals 3, termination_prob 0.5, num_random_walks 200,
  num_neighbors 10) on MovieLens-100k (item <- user bipartite) and on an R-MAT graph of
  20M edges viewed as bipartite (sources -> targets), same seeds for both libraries;
* 2-layer uniform neighbour sampling (fanouts 10,25, batches of 1024 seeds, in-edges)
  seeds/s and sampled edges/s on MovieLens-100k (user/item ids as one node type, both
  directions) and on the R-MAT graph;
* Cora and CiteSeer: full-neighbour 2-layer GraphSAGE-mean (hidden 128, dropout 0.5, Adam
  lr 0.01, weight decay 5e-4, 60 epochs, evaluated every epoch, best-validation model)
  epoch time and test accuracy, on the same graph, features and split; graphsys both on
  sampled full-neighbourhood blocks and with ``full_graph`` (one step on the whole graph).

The two libraries take turns ``--repeats`` times (graphsys, then DGL, then graphsys, ...),
so a change of machine load hits both; every figure is reported as min, median and max over
the repeats, and the ratios use the medians.

``--memory-only`` measures instead the peak anonymous memory (RSS) of building the default
``NeighborSampler(g, [10, 25])`` and sampling 20 batches of 1024 seeds on a stored R-MAT graph
(``--nodes``, ``--memory-edges``) with its CSR/CSC indexes, without and then with its
undirected ``sym`` index (``graphsys index --undirected``), each in a fresh process, and of
building that index; the JSON line holds the peaks, the process baseline (imports and the
opened graph) and the increments per edge (in-RAM build) and per node (mapped)::

    python benchmarks/sampling/samplers.py --memory-only [--work DIR] [--nodes 256Ki]
        [--memory-edges 4M]

If DGL cannot be installed or run, its rows are listed under ``missing`` with the reason,
and the graphsys figures are reported alone. Usage::

    python benchmarks/sampling/samplers.py --work DIR [--edges 20M] [--seconds 3]
        [--repeats 3] [--dgl-python PY | --skip-dgl]

Both libraries run with every core (numba / OpenMP threads, torch intra-op threads). The
input graphs are built once (R-MAT with ``graphsys.generators``, datasets via the registry
and the dataset mirror) and handed to DGL as .npy files; graphsys samplers use the same arrays (in-memory CSR), so the figures
measure sampling, not storage reads.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness

PINSAGE = dict(num_traversals=3, termination_prob=0.5, num_random_walks=200, num_neighbors=10)


# -- inputs -------------------------------------------------------------------------------------

# -- graphsys measurements ----------------------------------------------------------------------

def time_loop(fn, batches, seconds):
    """Run fn over batches (cycling) for at least `seconds`; returns (seeds/s, extra/s)."""
    fn(batches[0])                              # warm-up / JIT
    done = extra = 0
    t0 = time.perf_counter()
    k = 0
    while True:
        extra += fn(batches[k % len(batches)])
        done += len(batches[k % len(batches)])
        k += 1
        el = time.perf_counter() - t0
        if el >= seconds and k >= 3:
            return done / el, extra / el


def gs_pinsage(fw, bw, batches, seconds):
    from graphsys.sampling import RandomWalkNeighborSampler
    s = RandomWalkNeighborSampler(fw, bw, **PINSAGE)
    return time_loop(lambda b: s.sample_blocks(b, 1)[0].num_edges, batches, seconds)


def gs_neighbor(adj, batches, seconds):
    from graphsys.sampling import NeighborSampler
    s = NeighborSampler(adj, [10, 25])
    return time_loop(lambda b: sum(x.num_edges for x in s.sample_blocks(b, 1)), batches,
                     seconds)


def gs_epoch(graph_dir):
    """GraphSAGE epoch on sampled full-neighbourhood blocks and with ``full_graph``."""
    import graphsys
    from graphsys.gnn import TrainConfig, train
    g = graphsys.open_graph(graph_dir)
    out = {}
    for key, full in (("", False), ("full_graph_", True)):
        cfg = TrainConfig(model="sage", hidden=128, epochs=60, patience=1000, seed=0,
                          full_graph=full)
        train(g, TrainConfig(model="sage", hidden=128, epochs=2, seed=0,
                             full_graph=full))   # warm-up
        r = train(g, cfg)
        out.update({f"{key}epoch_ms": round(1000 * r.seconds / r.epochs, 1),
                    f"{key}test_accuracy": round(r.metrics["test_accuracy"], 4)})
    return out


# -- DGL ---------------------------------------------------------------------------------------

DGL_SCRIPT = r'''
import json, sys, time
import numpy as np, torch, dgl
import torch.nn.functional as F
work = sys.argv[1]; seconds = float(sys.argv[2]); out = {"dgl": dgl.__version__, "torch": torch.__version__, "measured": True}
def load(n): return np.load(f"{work}/{n}.npy")
def loop(fn, batches):
    fn(batches[0]); done = extra = 0; t0 = time.perf_counter(); k = 0
    while True:
        b = batches[k % len(batches)]; extra += fn(b); done += len(b); k += 1
        el = time.perf_counter() - t0
        if el >= seconds and k >= 3: return done / el, extra / el
for name in ("movielens", "rmat"):
    s, d = torch.from_numpy(load(f"{name}_bsrc")), torch.from_numpy(load(f"{name}_bdst"))
    G = dgl.heterograph({("B", "BA", "A"): (s, d), ("A", "AB", "B"): (d, s)},
                        num_nodes_dict={"B": int(load(f"{name}_nb")), "A": int(load(f"{name}_na"))})
    sampler = dgl.sampling.PinSAGESampler(G, "A", "B", 3, 0.5, 200, 10)
    batches = [torch.from_numpy(x) for x in load(f"{name}_pinsage_batches")]
    sps, eps = loop(lambda b: sampler(b).num_edges(), batches)
    out[f"pinsage_{name}_seeds_per_s"] = round(sps)
    hs, hd = torch.from_numpy(load(f"{name}_hsrc")), torch.from_numpy(load(f"{name}_hdst"))
    g = dgl.graph((hs, hd), num_nodes=int(load(f"{name}_hn")))
    ns = dgl.dataloading.NeighborSampler([10, 25])
    batches = [torch.from_numpy(x) for x in load(f"{name}_nbr_batches")]
    sps, eps = loop(lambda b: sum(x.num_edges() for x in ns.sample_blocks(g, b)[2]), batches)
    out[f"neighbor_{name}_seeds_per_s"] = round(sps); out[f"neighbor_{name}_edges_per_s"] = round(eps)
# GraphSAGE, full graph, same split and hyperparameters
from dgl.nn import SAGEConv
class SAGE(torch.nn.Module):
    def __init__(s, i, h, o):
        super().__init__(); s.c1 = SAGEConv(i, h, "mean"); s.c2 = SAGEConv(h, o, "mean"); s.dp = torch.nn.Dropout(0.5)
    def forward(s, g, x):
        h = F.relu(s.c1(g, s.dp(x))); return s.c2(g, s.dp(h))
for name in ("cora", "citeseer"):
    g = dgl.graph((torch.from_numpy(load(f"{name}_src")), torch.from_numpy(load(f"{name}_dst"))), num_nodes=int(load(f"{name}_n")))
    x = torch.from_numpy(load(f"{name}_x")); y = torch.from_numpy(load(f"{name}_y"))
    tr, va, te = (torch.from_numpy(load(f"{name}_{k}")) for k in ("train", "val", "test"))
    for warm, epochs in ((True, 2), (False, 60)):
        torch.manual_seed(0)
        m = SAGE(x.shape[1], 128, int(y.max()) + 1); opt = torch.optim.Adam(m.parameters(), lr=0.01, weight_decay=5e-4)
        best = (-1, 0); t0 = time.perf_counter()
        for ep in range(epochs):
            m.train(); loss = F.cross_entropy(m(g, x)[tr], y[tr]); opt.zero_grad(); loss.backward(); opt.step()
            m.eval()
            with torch.no_grad(): p = m(g, x).argmax(1)
            v = (p[va] == y[va]).float().mean().item(); t = (p[te] == y[te]).float().mean().item()
            if v > best[0]: best = (v, t)
    out[f"{name}_sage_epoch_ms"] = round(1000 * (time.perf_counter() - t0) / 60, 1); out[f"{name}_sage_test_accuracy"] = round(best[1], 4)
print(json.dumps(out))
'''


# -- main --------------------------------------------------------------------------------------

def prepare(args, work: Path) -> tuple[dict, dict, dict]:
    """The inputs: ``(arrays for DGL, graphsys objects, facts about them)``."""
    from graphsys.gnn.data import open_source
    from graphsys.gnn.inputs import node_task_data
    from graphsys.sampling import bipartite_adjacency
    from graphsys.sampling.adjacency import typed_edges

    rng = np.random.default_rng(0)
    arrays, objs, facts = {}, {}, {}
    # MovieLens-100k
    ml = open_source("movielens-100k", mirror=args.mirror, cache=work / "cache")
    u, i, _ = typed_edges(ml, None, "user", "item")
    nu, ni = ml.num_nodes("user"), ml.num_nodes("item")
    pin_batches = [rng.permutation(ni)[:1024] for _ in range(4)]
    hs = np.concatenate([u, i + nu]); hd = np.concatenate([i + nu, u])
    nbr_batches = [rng.choice(nu + ni, 1024, replace=False) for _ in range(4)]
    arrays.update(movielens_bsrc=u, movielens_bdst=i, movielens_nb=np.array(nu),
                  movielens_na=np.array(ni), movielens_pinsage_batches=np.stack(pin_batches),
                  movielens_hsrc=hs, movielens_hdst=hd, movielens_hn=np.array(nu + ni),
                  movielens_nbr_batches=np.stack(nbr_batches))
    objs["movielens"] = (bipartite_adjacency(ml, "item", "user"), pin_batches,
                         harness.csr_keeping_duplicates(hd, hs, nu + ni, nu + ni), nbr_batches)
    # R-MAT (as bipartite sources B -> targets A for PinSage; as one graph for neighbours)
    t0 = time.perf_counter()
    n = 1 << args.scale
    src, dst = harness.rmat_arrays(n, args.edges, seed=0)
    facts["rmat"] = {"nodes": n, "edges": args.edges,
                     "generate_s": round(time.perf_counter() - t0, 1)}
    fw_r = harness.csr_keeping_duplicates(dst, src, n, n)   # A (targets) -> B (sources)
    bw_r = harness.csr_keeping_duplicates(src, dst, n, n)
    has = np.flatnonzero(np.diff(fw_r.indptr) > 0)
    pin_r = [rng.choice(has, 1024, replace=False) for _ in range(4)]
    nbr_r = [rng.choice(n, 1024, replace=False) for _ in range(4)]
    arrays.update(rmat_bsrc=src, rmat_bdst=dst, rmat_nb=np.array(n), rmat_na=np.array(n),
                  rmat_pinsage_batches=np.stack(pin_r), rmat_hsrc=src, rmat_hdst=dst,
                  rmat_hn=np.array(n), rmat_nbr_batches=np.stack(nbr_r))
    objs["rmat"] = ((fw_r, bw_r), pin_r, fw_r, nbr_r)
    # Cora and CiteSeer
    for name in ("cora", "citeseer"):
        g = open_source(name, mirror=args.mirror, cache=work / "cache")
        data = node_task_data(g)
        s_, d_, _ = typed_edges(g, None, "node", "node")
        adj = np.unique(np.stack([np.r_[s_, d_], np.r_[d_, s_]]), axis=1)
        arrays.update({f"{name}_src": adj[0], f"{name}_dst": adj[1],
                       f"{name}_n": np.array(data["num_nodes"]), f"{name}_x": data["x"].numpy(),
                       f"{name}_y": data["labels"].numpy(),
                       **{f"{name}_{k}": data["split"][k].numpy()
                          for k in ("train", "val", "test")}})
        objs[name] = g.path
    return arrays, objs, facts


def measure_graphsys(objs: dict, seconds: float) -> dict:
    """One pass of every graphsys measurement: a flat dict of figures."""
    out = {}
    for name in ("movielens", "rmat"):
        (fw, bw), pin, hom, nbr = objs[name]
        out[f"pinsage_{name}_seeds_per_s"] = round(gs_pinsage(fw, bw, pin, seconds)[0])
        sps, eps = gs_neighbor(hom, nbr, seconds)
        out[f"neighbor_{name}_seeds_per_s"] = round(sps)
        out[f"neighbor_{name}_edges_per_s"] = round(eps)
    for name in ("cora", "citeseer"):
        out.update({f"{name}_sage_{k}": v for k, v in gs_epoch(objs[name]).items()})
    return out


def run_dgl(py: Path, work: Path, seconds: float) -> dict:
    """One DGL pass in its environment: its figures and its process's peaks, or
    ``{"error": ...}``."""
    r = harness.run_child([py, work / "dgl_bench.py", work, str(seconds)],
                          env=harness.peer_environment(), check=False)
    if r.returncode != 0 or r.json is None:
        return {"error": "DGL run failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]}
    return {**r.json, **r.peaks()}


# -- peak anonymous memory of the samplers on the mapped graph ----------------------------------
MEMORY_PROBE = r"""
import json, sys, time
import numpy as np
from graphsys import open_graph
from graphsys.memory import PeakMemory, current_memory
from graphsys.sampling import NeighborSampler
from graphsys.storage.adjacency_index import build_index

g = open_graph(sys.argv[1])
mode, limit = sys.argv[2], int(sys.argv[3])
out = {"mode": mode}
base = current_memory().anon
t0 = time.perf_counter()
with PeakMemory(interval=0.005) as pm:
    if mode == "index":
        build_index(g, ("sym",), force=True, memory_limit=limit)
        out["memory_limit"] = limit
    else:
        s = NeighborSampler(g, [10, 25], symmetric=mode != "in")
        out["build_s"] = round(time.perf_counter() - t0, 3)
        out["mapped"] = not s.adj.indices.flags.writeable
        rng = np.random.default_rng(0)
        for b in range(20):
            s.sample_blocks(rng.choice(s.num_nodes, 1024, replace=False), rng_seed=b)
out.update(seconds=round(time.perf_counter() - t0, 3), base_anon_bytes=base,
           peak_anon_bytes=pm.peak_anon, peak_file_bytes=pm.peak_file)
print(json.dumps(out))
"""


def memory_only(args, work: Path) -> dict:
    """Peak anonymous RSS of the default neighbour sampler with and without the ``sym``
    index, and of building that index under the default and a 16 MiB buffer budget (fresh
    processes; the numba kernels are compiled by a first, unreported run)."""
    py = sys.executable
    graph = work / "rmat_graph"
    src = work / "rmat.parquet"

    def cli(*argv):
        subprocess.run([py, "-m", "graphsys", *map(str, argv)], check=True,
                       stdout=subprocess.DEVNULL)

    def probe(mode, limit=2_000_000_000):
        return harness.run_child([py, "-c", MEMORY_PROBE, graph, mode, str(limit)]).json

    if (graph / "manifest.json").exists() and "sym" in json.loads(
            (graph / "manifest.json").read_text()).get("indexes", {}).get("default", {}):
        shutil.rmtree(graph)  # a previous run's: measure without it first
    if not (graph / "manifest.json").exists():
        cli("generate", "rmat", "--nodes", args.nodes, "--edges", args.memory_edges,
            "--seed", 0, "--out", src, "--overwrite", "--quiet")
        cli("ingest", src, "--out", graph, "--partitions", 4)
    cli("index", graph, "--csr", "--csc")
    from graphsys import open_graph
    from graphsys.storage.adjacency_index import min_build_memory

    g = open_graph(graph)
    n, m = g.num_nodes(), g.num_edges()
    probe("ram")  # compiles the kernels into the numba cache
    res = {"nodes": n, "edges": m, "ram": probe("ram"), "in_csc": probe("in"),
           "index_sym": probe("index"),  # the default budget, and a small one
           "index_sym_small": probe("index", min_build_memory(n) + (16 << 20))}
    res["mapped"] = probe("sym")
    for key, per, count in (("ram", "per_edge", m), ("mapped", "per_node", n)):
        r = res[key]
        r[f"increment_{per}"] = round((r["peak_anon_bytes"] - r["base_anon_bytes"]) / count, 2)
    res["sym_entries"] = json.loads((graph / "manifest.json").read_text())[
        "indexes"]["default"]["sym"]["num_edges"]
    return res


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    harness.add_mirror_argument(ap)
    ap.add_argument("--work", type=Path, default=None, help="work dir (kept; reuses the venv)")
    ap.add_argument("--edges", type=harness.count, default=harness.count("20M"),
                    help="R-MAT edges (default 20M)")
    ap.add_argument("--scale", type=int, default=21, help="R-MAT nodes = 2**scale")
    ap.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    ap.add_argument("--repeats", type=int, default=3, help="turns of each library")
    harness.add_peer_argument(ap, "dgl")
    ap.add_argument("--memory-only", action="store_true",
                    help="peak anonymous memory of the default neighbour sampler with and "
                         "without the undirected index, nothing else")
    ap.add_argument("--nodes", type=harness.count, default=harness.count("256Ki"),
                    help="--memory-only R-MAT nodes (default 256Ki)")
    ap.add_argument("--memory-edges", type=harness.count, default=harness.count("4M"),
                    help="--memory-only R-MAT edges (default 4M)")
    args = ap.parse_args(argv)
    args.mirror = harness.use_mirror(args.mirror)
    work = args.work or Path(tempfile.mkdtemp(prefix="graphsys-bench-gnn-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.memory_only:
        run = harness.Run("sampling/samplers --memory-only", args.record, memory=False)
        run.emit(**memory_only(args, work))
        return 0
    import numba
    import torch

    run = harness.Run("sampling/samplers", args.record)
    if args.mirror is None:
        run.missing("MovieLens-100k, Cora and CiteSeer rows (and so every row: the inputs "
                    "are built together)", "no dataset mirror: set GRAPHSYS_MIRROR")
        run.emit()
        return 1
    res = {"numba_threads": numba.get_num_threads(), "torch_threads": torch.get_num_threads(),
           "repeats": args.repeats}
    arrays, objs, facts = prepare(args, work)
    res.update(facts)
    py, why = harness.peer_python("dgl", work, args.dgl_python, args.skip_dgl)
    if py is not None:
        for k, v in arrays.items():
            np.save(work / f"{k}.npy", v, allow_pickle=False)
        (work / "dgl_bench.py").write_text(DGL_SCRIPT)
    turns = harness.alternate({
        "graphsys": lambda: measure_graphsys(objs, args.seconds),
        "dgl": None if py is None else lambda: run_dgl(py, work, args.seconds)}, args.repeats)
    gs = res["graphsys"] = harness.spread_by_key(turns["graphsys"])
    failed = [r["error"] for r in turns.get("dgl", []) if "error" in r]
    if py is None or failed:
        run.missing("DGL rows", why or failed[0])
        run.emit(**res)
        return 0
    dgl_runs = turns["dgl"]
    d = res["dgl"] = {"version": dgl_runs[0]["dgl"], "torch": dgl_runs[0]["torch"],
                      **harness.spread_by_key(dgl_runs)}
    # > 1: graphsys is faster (throughputs: ours / theirs; epoch times: theirs / ours)
    ratio = res["speedup_vs_dgl"] = {}
    for k in ("pinsage_movielens_seeds_per_s", "pinsage_rmat_seeds_per_s",
              "neighbor_movielens_seeds_per_s", "neighbor_rmat_seeds_per_s"):
        ratio[k] = {**harness.pair_ratios([r[k] for r in turns["graphsys"]],
                                          [r[k] for r in dgl_runs], 2),
                    "worst": round(gs[k]["min"] / d[k]["max"], 2)}
    for name in ("cora", "citeseer"):
        theirs = d[f"{name}_sage_epoch_ms"]
        for key in ("epoch_ms", "full_graph_epoch_ms"):
            ours = gs[f"{name}_sage_{key}"]
            ratio[f"{name}_sage_{key}"] = {
                **harness.pair_ratios([r[f"{name}_sage_epoch_ms"] for r in dgl_runs],
                                      [r[f"{name}_sage_{key}"] for r in turns["graphsys"]], 2),
                "worst": round(theirs["min"] / ours["max"], 2)}
    run.emit(**res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
