#!/usr/bin/env python3
"""Embedding serving: nearest-neighbour queries/s, single and batched, with faiss flat / IVF /
HNSW indexes beside the exact answer (blocked matmul, the path without an index), and the
recall@10 of each index against it.

Two tables:

* **FB15k-237** (the registry's, from the dataset mirror): ComplEx (d = ``--dim``,
  ``--epochs`` epochs, the model of ``benchmarks/embed/pbg_fb15k.py``) trained on the 272,115
  training triples; queries through ``Embeddings.nearest`` (cos) on
  ``--queries`` entities drawn with a fixed seed, so the figures include the id mapping.
* **synthetic**: ``--synthetic-n`` rows x ``--synthetic-dim`` float32 in a memory-mapped
  ``.npy`` (a mixture of ``--clusters`` Gaussians, seeded; embeddings of real graphs are
  clustered, uniform noise is not a fair test of an ANN index), queried through
  :class:`graphsys.embed.index.NearestIndex` directly (no id mapping); exact answers by a
  blocked torch matmul over the mapped rows.

``single``: one query per call, median latency over the queries -> queries/s.
``batched``: all queries in one call -> queries/s. Usage::

    python benchmarks/serve/nearest.py [--work DIR]
        [--synthetic-n 10000000 --synthetic-dim 32] [--synthetic-kinds ivf]
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np
import torch

from benchmarks import harness

K = 10


def _anon() -> dict[str, int]:
    """Anonymous resident bytes now (the index built and held)."""
    from graphsys.memory import current_memory

    return {"rss_anon_bytes": current_memory().anon}


def _timed(fn, queries, single_n: int) -> dict[str, float]:
    """Median single-query latency over the first ``single_n`` queries and one batched call
    over all of them."""
    fn(queries[:2])  # warm-up (lazy loads)
    lat = []
    for q in queries[:single_n]:
        t0 = time.perf_counter()
        fn(q)
        lat.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    fn(queries)
    batch_s = time.perf_counter() - t0
    med = float(np.median(lat))
    return {"single_ms_median": round(med * 1e3, 4), "single_qps": round(1 / med, 1),
            "batched_qps": round(len(queries) / batch_s, 1), "batch": len(queries)}


# -- FB15k-237 -------------------------------------------------------------------------------
def fb15k(work: Path, args, run: harness.Run) -> dict | None:
    from graphsys.embed import Embeddings, load_config, train
    from graphsys.embed.index import IndexParams, build_and_save, search_recall

    fb_graph = harness.dataset(run, "fb15k-237", work / "fb-graph")
    if fb_graph is None:
        return None
    graph = fb_graph.path
    ck = work / f"fb-ckpt-d{args.dim}-e{args.epochs}"
    if not (ck / "checkpoint.json").exists():
        cfg = load_config(None, [f"dimension={args.dim}", "operator=\"complex_diagonal\"",
                                 "comparator=\"dot\"", "loss_fn=\"softmax\"", "lr=0.1",
                                 "batch_size=1000", "num_uniform_negs=1000",
                                 "num_batch_negs=50", "init_scale=0.001",
                                 f"num_epochs={args.epochs}"])
        train(graph, cfg, edges="train", out=ck)
    emb = Embeddings.load(ck)
    n = emb.num_entities()
    rng = np.random.default_rng(0)
    ids = emb.original(np.sort(rng.choice(n, args.queries, replace=False)))
    ids = list(ids)
    exact_ids, _ = emb.nearest(ids, K, exact=True)
    out = {"entities": n, "dimension": emb.dimension, "queries": len(ids),
           "exact": _timed(lambda q: emb.nearest(q, K, exact=True), ids, args.single)}
    for kind in ("flat", "ivf", "hnsw"):
        rec = build_and_save(emb, kind, "cos", params=IndexParams(nprobe=args.nprobe))
        served = Embeddings.load(ck)
        got, _ = served.nearest(ids, K)
        out[kind] = {"build_seconds": rec["seconds"], "params": rec["params"],
                     "recall@10": round(float(search_recall(got, exact_ids).mean()), 4),
                     **_timed(lambda q, e=served: e.nearest(q, K), ids, args.single)}
        out[kind]["single_speedup_vs_exact"] = round(
            out["exact"]["single_ms_median"] / out[kind]["single_ms_median"], 1)
    for suffix in ("faiss", "json"):  # leave the checkpoint without indexes
        (ck / "index" / f"{emb.entity_types[0]}.cos.{suffix}").unlink(missing_ok=True)
    return out


# -- synthetic ---------------------------------------------------------------------------------
def synthetic_table(path: Path, n: int, d: int, clusters: int, seed: int) -> np.ndarray:
    """A memory-mapped float32 ``(n, d)`` mixture of ``clusters`` unit-variance-ish Gaussians
    (centres N(0, 1), spread 0.35), written once in blocks."""
    if path.exists():
        arr = np.load(path, mmap_mode="r")
        if arr.shape == (n, d):
            return arr
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, d)).astype(np.float32)
    tmp = path.with_suffix(".tmp.npy")
    arr = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n, d))
    step = 1 << 20
    for start in range(0, n, step):
        m = min(step, n - start)
        c = rng.integers(0, clusters, m)
        arr[start:start + m] = centres[c] + 0.35 * rng.standard_normal((m, d), np.float32)
    arr.flush()
    del arr
    os.replace(tmp, path)
    return np.load(path, mmap_mode="r")


def exact_topk(table: np.ndarray, q: np.ndarray, exclude: np.ndarray, k: int,
               block: int = 1 << 16) -> np.ndarray:
    """Exact cos top-``k`` of unit queries ``q`` over the mapped ``table``, by blocks."""
    qt = torch.from_numpy(q)
    best_s = torch.full((len(q), 0), float("-inf"))
    best_i = torch.zeros((len(q), 0), dtype=torch.long)
    for start in range(0, len(table), block):
        x = torch.from_numpy(np.array(table[start:start + block]))
        x = torch.nn.functional.normalize(x, dim=1)
        s = qt @ x.T
        inside = (exclude >= start) & (exclude < start + len(x))
        rows = np.flatnonzero(inside)
        s[torch.from_numpy(rows), torch.from_numpy(exclude[rows] - start)] = float("-inf")
        ids = torch.arange(start, start + len(x)).expand(len(q), -1)
        s, ids = torch.cat([best_s, s], 1), torch.cat([best_i, ids], 1)
        best_s, pos = torch.topk(s, k, dim=1)
        best_i = torch.gather(ids, 1, pos)
    return best_i.numpy()


def synthetic(work: Path, args) -> dict:
    from graphsys.embed.index import IndexParams, NearestIndex, build_index, search_recall

    n, d = args.synthetic_n, args.synthetic_dim
    t0 = time.perf_counter()
    table = synthetic_table(work / f"synthetic-{n}x{d}.npy", n, d, args.clusters, 0)
    out = {"entities": n, "dimension": d, "clusters": args.clusters,
           "table_bytes": n * d * 4, "generate_seconds": round(time.perf_counter() - t0, 1)}
    rng = np.random.default_rng(1)
    qids = np.sort(rng.choice(n, args.queries, replace=False))
    raw = np.array(table[qids])
    unit = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
    t0 = time.perf_counter()
    want = exact_topk(table, unit.astype(np.float32), qids, K)
    exact_s = time.perf_counter() - t0
    out["exact"] = {"batched_qps": round(len(qids) / exact_s, 2), "batch": len(qids),
                    "note": "one blocked pass over the mapped table for the whole batch"}
    for kind in args.synthetic_kinds.split(","):
        params = IndexParams(nprobe=args.nprobe)
        t0 = time.perf_counter()
        idx = NearestIndex(build_index([table], kind, "cos", params), kind, "cos", params)
        build_s = time.perf_counter() - t0
        got, _ = idx.search(raw, K, exclude=qids)
        rows = [raw[i:i + 1] for i in range(len(raw))]
        lat = []
        for i, r in enumerate(rows[:args.single]):
            t1 = time.perf_counter()
            idx.search(r, K, exclude=qids[i:i + 1])
            lat.append(time.perf_counter() - t1)
        t1 = time.perf_counter()
        idx.search(raw, K, exclude=qids)
        batch_s = time.perf_counter() - t1
        med = float(np.median(lat))
        out[kind] = {"build_seconds": round(build_s, 1), "params": vars(params),
                     "recall@10": round(float(search_recall(got, want).mean()), 4),
                     "single_ms_median": round(med * 1e3, 4),
                     "single_qps": round(1 / med, 1),
                     "batched_qps": round(len(raw) / batch_s, 1), **_anon()}
        del idx
    return out


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", "--workdir", dest="work", type=Path,
                    default=Path("/tmp/bench-serve"), help="work directory (kept)")
    ap.add_argument("--dim", type=int, default=400, help="FB15k-237 model dimension (400)")
    ap.add_argument("--epochs", type=int, default=2, help="FB15k-237 training epochs (2)")
    ap.add_argument("--queries", type=int, default=1000, help="query entities (1000)")
    ap.add_argument("--single", type=int, default=200,
                    help="of which timed one per call (200)")
    ap.add_argument("--nprobe", type=int, default=32, help="IVF cells searched (32)")
    ap.add_argument("--synthetic-n", type=int, default=10_000_000)
    ap.add_argument("--synthetic-dim", type=int, default=32)
    ap.add_argument("--clusters", type=int, default=10_000)
    ap.add_argument("--synthetic-kinds", default="ivf",
                    help="comma-separated index kinds on the synthetic table (ivf; hnsw "
                         "takes long to build at 10M rows on 2 cores)")
    ap.add_argument("--skip-fb15k", action="store_true")
    ap.add_argument("--skip-synthetic", action="store_true")
    args = ap.parse_args(argv)
    run = harness.Run("serve/nearest", args.record)
    work = args.work.absolute()
    work.mkdir(parents=True, exist_ok=True)
    import faiss

    out = {"torch_threads": torch.get_num_threads(), "faiss": faiss.__version__, "k": K}
    if not args.skip_fb15k:
        out["fb15k-237"] = fb15k(work, args, run)
        harness.log("fb15k-237: " + json.dumps(out["fb15k-237"]))
    if not args.skip_synthetic:
        out["synthetic"] = synthetic(work, args)
    run.emit(**out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
