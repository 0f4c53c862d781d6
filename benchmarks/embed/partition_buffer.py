#!/usr/bin/env python3
"""Partitioned embedding training with a buffer of c partitions: graphsys's buffer-aware
bucket order beside PBG's ``inside_out`` order, and beside PyTorch-BigGraph 1.0.0 itself, on
a large R-MAT graph (edges/s, partition loads and swaps, peak memory).

1. Generate a seeded R-MAT edge list (``graphsys.generators.rmat_edges``, Graph500 a, b, c;
   self-loops and duplicates kept; ``--nodes`` ids, default the power of two nearest
   edges/8) and ingest it into P partitions (hash partitioner). The graph is cached in
   the work directory (``harness.rmat_graph``) and reused when present.
2. For each buffer size c (``--buffer 2,3,4``) and each order (``--orders buffer,inside_out``:
   graphsys's ``bucket_order = "buffer"``, Marius's BETA ordering, and PBG's ``inside_out``;
   the same graphsys trainer for both), train ``--epochs`` epochs from a fresh checkpoint with
   ``buffer_partitions = c`` (the same as a ``memory_budget`` of c partitions: at most c
   embedding partitions resident, the others in the checkpoint directory, Belady eviction,
   the next step's partitions prefetched in a background thread when the step does not evict
   one of the current bucket's). Each training runs in a fresh child process (peak RSS and
   peak anonymous RSS per run, sampled from outside). Model (defaults; all in the JSON):
   one relation, operator none, dot comparator, softmax loss, d = 100, batch 1000, 100
   uniform + 50 batch negatives, lr 0.1, 2 HOGWILD workers, CPU.

   Per run: ``edges_per_s`` (trained edges / seconds of the epoch loop, swaps included),
   ``wall_seconds`` (trainer set-up + initial embeddings + epochs + checkpoint), ``train_seconds``,
   ``loads`` and ``swaps`` (loads that needed an eviction; the initial fill is not a swap) as
   the trainer reports them, ``load_calls`` / ``evict_calls`` counted on the buffer itself (a
   check of those), ``max_resident`` (most partitions resident at once), ``bytes_read`` /
   ``bytes_written`` by swaps, ``checkpoint_bytes``, ``io_seconds_blocking`` /
   ``io_seconds_prefetch`` (partition reads + writes on the training thread / on the prefetch
   thread), ``io_wait_seconds`` (seconds the training thread waited for them),
   ``peak_rss_bytes`` (includes the mapped edge files) and ``peak_rss_anon_bytes``
   (embeddings, optimiser state, temporaries), ``cpu_seconds``, the final ``loss``. Per c:
   ``min_swaps_bound`` (Marius's lower bound) and ``buffer_vs_inside_out`` ratios.
   ``--repeats N`` interleaves N runs per (c, order) and reports the median-edges/s run with
   the spread.
3. Optionally (``--with-pbg``) PyTorch-BigGraph 1.0.0 (its own environment, ``--pbg-python`` or
   made in the work directory) on the same partitioned edges (the graphsys buckets written as
   PBG's HDF5 edge files, cached) with P partitions, its ``inside_out`` order, the same model
   and ``--pbg-workers`` HOGWILD processes (``hogwild_delay`` 0 by default). PBG has no buffer:
   it holds the two partitions of the current bucket and keeps those the next bucket shares;
   its loads and writes are counted from its ``Swapping partitioned embeddings`` log lines, its
   edges/s over the buckets it trained (its compute + io seconds per bucket) and, when it
   finished, over its whole ``train()`` call; ``cpu_seconds_sampled``: CPU seconds of PBG and
   its workers (``/proc``, sampled every 0.5 s; on a shared machine edges per CPU-second is the
   steadier figure to compare with graphsys's ``cpu_seconds``). ``--pbg-max-seconds`` stops it
   (and its worker pool) early. ``--pbg-interleave`` (with ``--repeats N``) runs PBG after each
   graphsys repetition instead of once at the end: N PBG runs, the median reported, and
   ``graphsys_vs_pbg_pairs``, each repetition's ratio to the PBG run right after it (a shared
   VM's speed drifts by tens of percent over minutes; alternating puts the drift on both).

``--graph DIR`` trains on an existing graph instead (read only: the checkpoints go to the work
directory), e.g. the 1B-edge graph of ``benchmarks/scale/billion.py``; ``--max-buckets N``
stops each graphsys epoch after the first N non-empty buckets of its order (a full epoch at 1B
edges takes hours): edges/s and the swap counts are over those buckets, the peak RSS figures
over the whole run (set-up, initial embeddings, training, final checkpoint).

Progress goes to stderr. Usage::

    python benchmarks/embed/partition_buffer.py --edges 50M --partitions 8 --buffer 2,3,4 \\
        --dim 100 --epochs 1 --work DIR --seed 0 [--with-pbg]
    python benchmarks/embed/partition_buffer.py --graph BIG --buffer 4 --orders buffer \\
        --max-buckets 8 --work DIR --seed 0
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sys
import textwrap
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

# =============================================================================================
# Child process: one graphsys training run

GS_CHILD = textwrap.dedent(r"""
    import json, os, resource, sys, threading, time
    a = json.loads(sys.argv[1])
    import torch
    if a["threads"]:
        torch.set_num_threads(a["threads"])
    from pathlib import Path
    from graphsys.embed.buffer import PartitionBuffer
    from graphsys.embed.trainer import Trainer
    from graphsys.embed.config import config_from_dict
    from graphsys.storage.graph import open_graph

    # Count what the partition buffer really does (a check of the plan's counts).
    PB = PartitionBuffer
    io = {"load_calls": 0, "evict_calls": 0, "max_resident": 0,
          "io_seconds_blocking": 0.0, "io_seconds_prefetch": 0.0}
    lock = threading.Lock()
    orig_load, orig_evict = PB.load, PB.evict

    def timed(fn, kind):
        def wrapper(self, *args, **kw):
            t = time.perf_counter()
            res = fn(self, *args, **kw)
            dt = time.perf_counter() - t
            bg = threading.current_thread().name.startswith("graphsys-prefetch")
            with lock:
                io[kind] += 1
                io["io_seconds_prefetch" if bg else "io_seconds_blocking"] += dt
                io["max_resident"] = max(io["max_resident"],
                                         len(getattr(self, "resident", ())))
            return res
        return wrapper

    PB.load = timed(orig_load, "load_calls")
    PB.evict = timed(orig_evict, "evict_calls")

    if a["max_buckets"]:  # --max-buckets: the first N non-empty buckets of each epoch
        orig_order = Trainer._epoch_order
        Trainer._epoch_order = (
            lambda self, epoch, counts: orig_order(self, epoch, counts)[:a["max_buckets"]])

    cfg = config_from_dict(a["config"])
    g = open_graph(a["graph"])
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    trainer = Trainer(cfg, g, Path(a["out"]),
                                log=lambda m: print(m, file=sys.stderr, flush=True))
    stats = trainer.run()
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    def total(key):
        return sum(getattr(s, key, 0) or 0 for s in stats)

    edges, train_s = total("edges"), total("seconds")
    out = {
        "capacity": getattr(trainer, "capacity", None),
        "edges": edges, "epochs": len(stats),
        "edges_per_s": edges / train_s if train_s else 0.0,
        "wall_seconds": wall, "train_seconds": train_s,
        "checkpoint_seconds": total("checkpoint_seconds"),
        "loads": total("loads"), "swaps": total("swaps"),
        "bytes_read": total("bytes_read"), "bytes_written": total("bytes_written"),
        "checkpoint_bytes": total("checkpoint_bytes"),
        "io_wait_seconds": sum(getattr(r, "io_wait_seconds", 0.0) for s in stats
                               for r in s.ranks),  # (absent before the pipeline)
        "loss": stats[-1].loss,
        **io,
        "cpu_seconds": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        "per_epoch": [{k: getattr(s, k, None) for k in ("epoch", "edges", "seconds", "loss",
                       "loads", "swaps", "bytes_read", "bytes_written")} for s in stats],
    }
    print(json.dumps(out))
""")

# =============================================================================================
# Child process: PBG 1.0.0 (its own venv)

PBG_CHILD = harness.PEERS["pbg"].prelude + textwrap.dedent(r"""
    import json, logging, sys, time, typing
    from pathlib import Path
    import numpy as np
    import torch
    import attr
    import h5py
    from torchbiggraph.config import parse_config
    from torchbiggraph.graph_storages import FileEntityStorage
    from torchbiggraph.train import train
    from torchbiggraph.util import SubprocessInitializer, setup_logging

    a = json.loads(sys.argv[1])
    P = a["partitions"]
    data = Path(a["data"])
    if not (data / "done").exists():  # graphsys buckets (.npy) -> PBG's HDF5 edge files
        t = time.perf_counter()
        ents = FileEntityStorage(str(data / "entities"))
        ents.prepare()
        for p, n in enumerate(a["partition_sizes"]):
            ents.save_count("all", p, int(n))
        (data / "edges").mkdir(parents=True, exist_ok=True)
        npy = Path(a["npy"])
        for i in range(P):
            for j in range(P):
                src = np.load(npy / f"src_{i}_{j}.npy").astype(np.int64)
                dst = np.load(npy / f"dst_{i}_{j}.npy").astype(np.int64)
                tmp = data / "edges" / f"edges_{i}_{j}.tmp.h5"
                with h5py.File(tmp, "w") as hf:  # the layout of PBG's FileEdgeAppender
                    hf.attrs["format_version"] = 1
                    hf.create_dataset("lhs", data=src)
                    hf.create_dataset("rhs", data=dst)
                    hf.create_dataset("rel", data=np.zeros(len(src), np.int64))
                tmp.rename(data / "edges" / f"edges_{i}_{j}.h5")
        (data / "done").write_text(json.dumps({"convert_seconds": time.perf_counter() - t}))
        print(f"converted to PBG format in {time.perf_counter() - t:.1f} s", file=sys.stderr,
              flush=True)
    setup_logging()
    raw = dict(
        entity_path=str(data / "entities"), edge_paths=[str(data / "edges")],
        checkpoint_path=a["ckpt"],
        entities={"all": {"num_partitions": P}},
        relations=[{"name": "all_edges", "lhs": "all", "rhs": "all", "operator": "none"}],
        dynamic_relations=False, dimension=a["dim"], global_emb=False,
        comparator=a["comparator"], loss_fn=a["loss_fn"], lr=a["lr"],
        num_epochs=a["epochs"], num_uniform_negs=a["uniform_negs"],
        num_batch_negs=a["batch_negs"], batch_size=a["batch_size"], eval_fraction=0.0,
        bucket_order="inside_out", workers=a["workers"], hogwild_delay=a["hogwild_delay"])
    config = parse_config(raw)
    t0 = time.perf_counter()
    train(config, subprocess_init=SubprocessInitializer())
    train_s = time.perf_counter() - t0
    print("BENCH " + json.dumps({"train_seconds": train_s}), flush=True)
""")

# =============================================================================================
# Helpers


def rounded(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, float):
            out[k] = round(v, 1) if k.startswith("edges_per_s") else round(v, 3)
        else:
            out[k] = v
    return out


def run_graphsys(graph: Path, work: Path, order: str, c: int, model: dict, args) -> dict:
    out = work / f"ckpt-{order}-c{c}"
    shutil.rmtree(out, ignore_errors=True)
    cfg = dict(model, bucket_order=order, buffer_partitions=c, num_epochs=args.epochs,
               num_partitions=args.partitions, seed=args.seed, workers=args.workers,
               prefetch=not args.no_prefetch)
    arg = {"graph": str(graph), "out": str(out), "config": cfg, "threads": args.threads,
           "max_buckets": args.max_buckets}
    la = harness.load_average()
    child = harness.run_child([sys.executable, "-c", GS_CHILD, json.dumps(arg)],
                              stream_stderr=True)
    res = {**child.json, **child.peaks()}
    if not args.keep_checkpoints:
        shutil.rmtree(out, ignore_errors=True)
    res["load_avg_before"], res["load_avg_after"] = la, harness.load_average()
    per_epoch = res.pop("per_epoch")
    res = rounded(res)
    res["per_epoch"] = per_epoch if args.epochs > 1 else None
    if res["per_epoch"] is None:
        del res["per_epoch"]
    return res


def pbg_npy(graph_path: Path, work: Path) -> Path:
    """Bucket columns as .npy for the PBG child (its venv has no pyarrow); cached."""
    from graphsys.storage.graph import open_graph

    npy = work / (graph_path.name + ".npy")
    if (npy / "done").exists():
        return npy
    npy.mkdir(parents=True, exist_ok=True)
    import numpy as np

    g = open_graph(graph_path)
    P = g.num_partitions
    for i in range(P):
        for j in range(P):
            b = g.bucket(i, j)
            np.save(npy / f"src_{i}_{j}.npy", np.asarray(b.src))
            np.save(npy / f"dst_{i}_{j}.npy", np.asarray(b.dst))
    (npy / "done").write_text("ok\n")
    return npy


def run_pbg(py: Path, graph_path: Path, work: Path, model: dict, args, num_edges: int,
            sizes: list[int]) -> dict:
    data = work / (graph_path.name + ".pbg")
    npy = None
    if not (data / "done").exists():
        harness.log("writing bucket columns for the conversion to PBG's HDF5 edge files")
        npy = pbg_npy(graph_path, work)
    ckpt = work / "pbg-ckpt"
    shutil.rmtree(ckpt, ignore_errors=True)
    arg = {"partitions": args.partitions, "data": str(data), "npy": str(npy or ""),
           "partition_sizes": sizes, "ckpt": str(ckpt), "dim": model["dimension"],
           "comparator": model["comparator"], "loss_fn": model["loss_fn"], "lr": model["lr"],
           "epochs": args.epochs, "uniform_negs": model["num_uniform_negs"],
           "batch_negs": model["num_batch_negs"], "batch_size": model["batch_size"],
           "workers": args.pbg_workers, "hogwild_delay": args.pbg_hogwild_delay}
    la = harness.load_average()
    cpu: dict[int, float] = {}  # PBG and its HOGWILD workers, sampled every 0.5 s
    stop_cpu = threading.Event()

    def sample_cpu(pgid: int) -> None:
        while not stop_cpu.wait(0.5):
            for pid, sec in group_cpu_seconds(pgid).items():
                cpu[pid] = max(cpu.get(pid, 0.0), sec)

    def watch(pgid: int) -> None:  # the child leads its own process group
        threading.Thread(target=sample_cpu, args=(pgid,), daemon=True).start()

    # the time cap ends PBG and its HOGWILD pool (its process group)
    child = harness.run_child([py, "-c", PBG_CHILD, json.dumps(arg)],
                              env=harness.peer_environment(),
                              timeout=args.pbg_max_seconds or None, started=watch)
    stop_cpu.set()
    text = child.stdout + child.stderr
    complete = child.returncode == 0
    if child.timed_out:
        harness.log(f"PBG stopped after --pbg-max-seconds {args.pbg_max_seconds}; edges/s "
                    f"from the buckets it finished")
    wall = child.seconds
    if npy is not None and (data / "done").exists():
        shutil.rmtree(npy, ignore_errors=True)
    if not args.keep_checkpoints:
        shutil.rmtree(ckpt, ignore_errors=True)
    (work / "pbg-last.log").write_text(text)
    # "Swapping partitioned embeddings OLD NEW", buckets printed as "( i , j )" or None
    bucket = r"(None|\( \d+ , \d+ \))"
    loads = writes = 0
    for old, new in re.findall(r"Swapping partitioned embeddings " + bucket + " " + bucket,
                               text):
        o, n = (set() if x == "None" else {int(v) for v in re.findall(r"\d+", x)}
                for x in (old, new))
        loads += len(n - o)
        writes += len(o - n)
    done = [(int(n), float(c), float(io)) for n, c, io in re.findall(
        r"Processed (\d+) edges in ([0-9.]+) s .*?io: ([0-9.]+) s", text)]
    b_edges = sum(d[0] for d in done)
    b_compute = sum(d[1] for d in done)
    b_io = sum(d[2] for d in done)
    res = {"complete": complete, "buckets_trained": len(done), "edges_trained": b_edges,
           "edges_per_s_buckets": b_edges / (b_compute + b_io) if done else None,
           "bucket_compute_seconds": b_compute, "bucket_io_seconds": b_io,
           "partition_loads": loads, "partition_writes": writes,
           "swaps": max(0, loads - min(2, args.partitions)),
           "wall_seconds": wall, "cpu_seconds_sampled": sum(cpu.values()),
           "workers": args.pbg_workers,
           "hogwild_delay": args.pbg_hogwild_delay, **child.peaks(),
           "load_avg_before": la, "load_avg_after": harness.load_average()}
    bench = re.findall(r"BENCH (\{.*\})", text)
    if complete and bench:
        info = json.loads(bench[-1])
        res["train_seconds"] = info["train_seconds"]
        res["edges_per_s"] = num_edges * args.epochs / info["train_seconds"]
    conv = data / "done"
    if conv.exists():
        res["convert_seconds"] = round(json.loads(conv.read_text())["convert_seconds"], 1)
    return rounded(res)


def group_cpu_seconds(pgid: int) -> dict[int, float]:
    """CPU seconds (user + system) so far of each live process in process group ``pgid``
    (from ``/proc/PID/stat``)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields[0] is the state (field 3 of stat)
            out[int(d.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def median_pbg(runs: list[dict]) -> dict:
    """The PBG run with the median edges/s (over its trained buckets), plus the spread."""
    if len(runs) == 1:
        return runs[0]
    ranked = sorted(runs, key=lambda r: r.get("edges_per_s_buckets") or 0.0)
    out = dict(ranked[(len(ranked) - 1) // 2])
    out["edges_per_s_buckets_all"] = [r.get("edges_per_s_buckets") for r in runs]
    return out


def median_run(runs: list[dict]) -> dict:
    """The run with the median edges/s (all its fields), plus the spread when repeated."""
    if len(runs) == 1:
        return runs[0]
    ranked = sorted(runs, key=lambda r: r["edges_per_s"])
    out = dict(ranked[(len(ranked) - 1) // 2])
    out["edges_per_s_all"] = [r["edges_per_s"] for r in runs]
    return out


# =============================================================================================


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--edges", type=harness.count, default=harness.count("50M"),
                    help="R-MAT edges (e.g. 50M; default 50M)")
    ap.add_argument("--nodes", type=harness.count, default=None,
                    help="R-MAT id space (e.g. 8Mi, 8M; default: the power of two nearest "
                         "edges/8)")
    ap.add_argument("--partitions", type=int, default=8, help="P (default 8)")
    ap.add_argument("--buffer", default="2,3,4", help="buffer sizes c (default 2,3,4)")
    ap.add_argument("--orders", default="buffer,inside_out",
                    help="bucket orders to compare (default buffer,inside_out)")
    ap.add_argument("--dim", type=int, default=100, help="embedding dimension (default 100)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--uniform-negs", type=int, default=100)
    ap.add_argument("--batch-negs", type=int, default=50)
    ap.add_argument("--comparator", default="dot")
    ap.add_argument("--operator", default="none")
    ap.add_argument("--loss", default="softmax")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--workers", type=int, default=2,
                    help="graphsys HOGWILD worker threads (default 2, as PBG's workers)")
    ap.add_argument("--threads", type=int, default=0,
                    help="graphsys torch intra-op threads, shared by the workers (0 = torch "
                         "default)")
    ap.add_argument("--no-prefetch", action="store_true", help="graphsys: prefetch = false")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs per (c, order), interleaved; the median edges/s run is reported")
    ap.add_argument("--seed", type=int, default=0, help="graph and training seed")
    ap.add_argument("--memory-limit", type=harness.size, default=harness.size("2GB"),
                    help="ingest memory limit (default 2GB)")
    ap.add_argument("--work", "--workdir", dest="work", type=Path,
                    default=Path("/tmp/bench-embed-buffer"), help="work directory (kept)")
    ap.add_argument("--keep-checkpoints", action="store_true")
    ap.add_argument("--graph", type=Path, default=None,
                    help="train on this ingested graph (read only; its P) instead of "
                         "generating one; --edges, --nodes, --partitions are then ignored")
    ap.add_argument("--max-buckets", type=int, default=0,
                    help="graphsys: train only the first N non-empty buckets of each epoch's "
                         "order (a full epoch of a 1B-edge graph takes hours); edges/s is over "
                         "those buckets, peak RSS over the whole run (default 0: all)")
    ap.add_argument("--with-pbg", action="store_true",
                    help="also run PyTorch-BigGraph 1.0.0 (inside_out, P partitions)")
    ap.add_argument("--pbg-python", type=Path, default=None,
                    help="python of an environment with PyTorch-BigGraph 1.0.0 (default: "
                         "one made in the work directory)")
    ap.add_argument("--pbg-workers", type=int, default=2)
    ap.add_argument("--pbg-hogwild-delay", type=float, default=0.0,
                    help="PBG's hogwild_delay (its default 2 s idles all workers but one for "
                         "2 s per bucket in the first epoch; default here 0)")
    ap.add_argument("--pbg-interleave", action="store_true",
                    help="with --repeats N: run PBG after each graphsys repetition of the "
                         "first buffer size (N PBG runs, the median reported, and each "
                         "repetition's ratio to the PBG run after it), so that a shared "
                         "machine's drift over minutes falls on both")
    ap.add_argument("--pbg-max-seconds", type=float, default=900,
                    help="stop PBG after this many seconds and report edges/s over the "
                         "buckets it finished (0 = no limit; default 900)")
    args = ap.parse_args(argv)
    if args.pbg_interleave and not args.with_pbg:
        ap.error("--pbg-interleave alternates graphsys and PBG runs: it needs --with-pbg")

    from graphsys.embed.schedule import min_swaps
    from graphsys.storage.graph import open_graph

    run = harness.Run("embed/partition_buffer", args.record, memory=False)
    edges = args.edges
    nodes = args.nodes or 1 << max(1, round(math.log2(edges / 8)))
    buffers = [int(x) for x in args.buffer.split(",") if x.strip()]  # "" = PBG only
    orders = [x.strip() for x in args.orders.split(",")]
    work = args.work.absolute()
    work.mkdir(parents=True, exist_ok=True)
    pbg_python = None
    if args.with_pbg:
        pbg_python, why = harness.peer_python("pbg", work, args.pbg_python)
        if pbg_python is None:
            run.missing("PyTorch-BigGraph rows", why)

    if args.graph is not None:
        graph, build = args.graph.absolute(), {"reused": True, "given": True}
        g = open_graph(graph)
        args.partitions, nodes = g.num_partitions, int(g.num_nodes())
    else:
        graph, build = harness.rmat_graph(work, edges, nodes, partitions=args.partitions,
                                          seed=args.seed, memory_limit=args.memory_limit)
        g = open_graph(graph)
    sizes = [int(x) for x in g.partition_sizes()]
    counts = g.bucket_counts()
    num_edges = int(g.num_edges())
    per_part = [n * (args.dim + 1) * 4 for n in sizes]  # embeddings + row-Adagrad, float32
    graph_info = {
        "generator": f"given: {graph}" if args.graph else
                     "R-MAT (graphsys.generators.rmat_edges, a,b,c = 0.57,0.19,0.19, "
                     "self-loops and duplicates kept)",
        "edges": num_edges, "id_space": nodes, "nodes": int(g.num_nodes()), "seed": args.seed,
        "partitions": args.partitions, "partitioner": "hash",
        "partition_sizes": sizes, "nonempty_buckets": int((counts > 0).sum()),
        "bucket_edges_min_max": [int(counts.min()), int(counts.max())],
        "partition_bytes_max": max(per_part), "embedding_bytes_total": sum(per_part),
        **build}
    harness.log(f"graph {graph.name}: {num_edges:,} edges, {graph_info['nodes']:,} nodes, "
        f"partitions {sizes}, {max(per_part) / 2**20:.0f} MiB per partition at d={args.dim}")

    model = {"dimension": args.dim, "operator": args.operator, "comparator": args.comparator,
             "loss_fn": args.loss, "lr": args.lr, "batch_size": args.batch_size,
             "num_uniform_negs": args.uniform_negs, "num_batch_negs": args.batch_negs}

    pbg_runs: list[dict] = []

    def pbg_once() -> None:
        harness.log("PBG 1.0.0, inside_out")
        r = run_pbg(pbg_python, graph, work, model, args, num_edges, sizes)
        harness.log(f"  PBG {r['edges_per_s_buckets'] or 0:,.0f} edges/s over "
            f"{r['buckets_trained']} buckets, loads {r['partition_loads']}")
        pbg_runs.append(r)

    results, first_runs = [], None
    for c in buffers:
        runs: dict[str, list[dict]] = {o: [] for o in orders}
        first_runs = first_runs or runs
        for rep in range(args.repeats):
            for order in orders:
                harness.log(f"c={c} order={order} run {rep + 1}/{args.repeats}")
                r = run_graphsys(graph, work, order, c, model, args)
                harness.log(f"  {r['edges_per_s']:,.0f} edges/s, train {r['train_seconds']} s, "
                    f"loads {r['loads']}, swaps {r['swaps']}, peak RSS "
                    f"{r['peak_rss_bytes'] / 2**20:.0f} MiB")
                runs[order].append(r)
            if pbg_python and args.pbg_interleave and runs is first_runs:
                pbg_once()
        entry = {"buffer_partitions": c,
                 "resident_bytes_budget": c * max(per_part),
                 "min_swaps_bound": min_swaps(args.partitions, c)}
        for order in orders:
            entry[order] = median_run(runs[order])
        if "buffer" in orders and "inside_out" in orders:
            b, io = entry["buffer"], entry["inside_out"]

            def ratio(key, b=b, io=io):
                return round(b[key] / io[key], 3) if io[key] else None

            entry["buffer_vs_inside_out"] = {
                "edges_per_s": ratio("edges_per_s"), "train_seconds": ratio("train_seconds"),
                "wall_seconds": ratio("wall_seconds"), "swaps": ratio("swaps"),
                "loads": ratio("loads"), "bytes_read": ratio("bytes_read"),
                "bytes_written": ratio("bytes_written"),
                "peak_rss_bytes": ratio("peak_rss_bytes")}
        results.append(entry)

    if pbg_python and not pbg_runs:
        pbg_once()
    pbg = median_pbg(pbg_runs) if pbg_runs else None
    if pbg and len(pbg_runs) > 1 and first_runs:
        # --pbg-interleave: graphsys's repetition i against the PBG run right after it
        pbg["graphsys_vs_pbg_pairs"] = {
            f"{order}_c{results[0]['buffer_partitions']}": [
                round(g["edges_per_s"] / p["edges_per_s_buckets"], 3)
                for g, p in zip(first_runs[order], pbg_runs, strict=True)
                if p.get("edges_per_s_buckets")]
            for order in orders}

    if pbg and pbg.get("edges_per_s_buckets"):
        # PBG holds 2 partitions: compare with graphsys at the smallest buffer measured
        pbg["graphsys_vs_pbg_edges_per_s"] = {
            f"{order}_c{results[0]['buffer_partitions']}":
                round(results[0][order]["edges_per_s"] / pbg["edges_per_s_buckets"], 3)
            for order in orders} if results else None

    import torch

    out = {
        "torch": torch.__version__, "graph": graph_info,
        "model": dict(model, epochs=args.epochs, workers=args.workers,
                      threads=args.threads or torch.get_num_threads(),
                      threads_per_worker=max(1, (args.threads or torch.get_num_threads())
                                             // args.workers),
                      prefetch=not args.no_prefetch, init_scale=1e-3, device="cpu",
                      relations="one (operator none)"),
        "orders": orders, "repeats": args.repeats, "max_buckets": args.max_buckets or None,
        "results": results, "pbg": pbg,
    }
    run.emit(**out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
