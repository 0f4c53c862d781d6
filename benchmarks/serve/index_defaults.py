#!/usr/bin/env python
"""Nearest-neighbour indexes at their defaults on trained R-MAT embeddings: recall@10 and
query time, beside the exact search.

The embeddings: ``graphsys.embed.train`` on a seeded R-MAT graph (``--edges`` edges over
``--nodes`` ids, ``--partitions`` partitions), dimension ``--dim``, one epoch, every other
setting at its default; the checkpoint is reused from ``--work``. Most entities of an R-MAT
graph have a few edges, so their rows are barely trained: a hard table for an approximate
index, unlike clustered synthetic data.

Per index kind (``hnsw``, ``ivf``): ``graphsys.embed.index.build_and_save`` at its defaults
(the search setting picked for recall@10 >= 0.95 on rows of the table; its held-out recall
as the record states it), then, through ``Embeddings.nearest(id, 10)`` (cos) on
``--queries`` entities drawn with a seed of their own: recall@10 against the exact top 10
(``nearest(..., exact=True)``), the median single-query latency over ``--single`` of them,
the exact search's and the index's calls alternating, and the batched queries/s. The same
index searched with the setting fixed at the values the defaults were before tuning
(``ef_search`` 128, ``nprobe`` 32), for comparison. Usage::

    python benchmarks/serve/index_defaults.py --work DIR [--edges 20M --nodes 2Mi --dim 100]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness

K = 10
#: The fixed search settings the defaults were before they were picked from a target recall.
FIXED = {"hnsw": {"ef_search": 128}, "ivf": {"nprobe": 32}}


def embeddings(work: Path, args) -> Path:
    """The trained checkpoint (reused when one epoch is done)."""
    from graphsys.embed import train

    ck = work / f"emb-{args.edges}-{args.nodes}-d{args.dim}-p{args.partitions}"
    record = ck / "checkpoint.json"
    if record.exists() and json.loads(record.read_text()).get("epochs_done", 0) >= 1:
        return ck  # a trained checkpoint (a run cut short leaves epoch 0's)
    graph, _ = harness.rmat_graph(work, args.edges, args.nodes, partitions=args.partitions,
                                  seed=args.seed)
    harness.log(f"training d = {args.dim}, 1 epoch")
    t0 = time.perf_counter()
    train(graph, {"dimension": args.dim, "num_epochs": 1, "seed": args.seed}, out=ck)
    harness.log(f"trained in {time.perf_counter() - t0:.0f} s")
    return ck


def measure(ck: Path, kind: str, params, ids, exact_ids, single: int,
            search: dict | None = None) -> dict:
    """Build the index (or, with ``search``, set that search setting on the one built
    last), then its recall and query times beside the exact search's."""
    from graphsys.embed import Embeddings
    from graphsys.embed.index import build_and_save, index_paths, search_recall

    emb = Embeddings.load(ck)
    if search is None:
        rec = build_and_save(emb, kind, "cos", params=params)
    else:
        rec = json.loads(index_paths(ck, emb.entity_types[0], "cos")[1].read_text())
    served, exact = Embeddings.load(ck), Embeddings.load(ck)
    if search is not None:
        served.ann_index(by="cos").set_search(*search.values())
        rec["params"].update(search)
        rec["recall"] = {"note": "the index built for the defaults, searched with "
                                 f"{search}"}
    got, _ = served.nearest(ids, K)
    served.nearest(ids[:2], K)  # warm: the index is opened and read
    times = harness.alternate(
        {"index": lambda: _one(served, ids, single, False),
         "exact": lambda: _one(exact, ids, single, True)}, 1)
    t0 = time.perf_counter()
    served.nearest(ids, K)
    batched = time.perf_counter() - t0
    return {"build_s": rec["seconds"] if search is None else None,
            "tune_s": rec["recall"].get("seconds"),
            "params": {k: rec["params"][k] for k in ("nlist", "nprobe", "hnsw_m",
                                                      "ef_construction", "ef_search")},
            "record_recall": rec["recall"],
            "recall_at_10": round(float(search_recall(got, exact_ids).mean()), 4),
            "single_ms": round(times["index"][0] * 1e3, 3),
            "exact_single_ms": round(times["exact"][0] * 1e3, 3),
            "speedup_vs_exact": round(times["exact"][0] / times["index"][0], 1),
            "batched_qps": round(len(ids) / batched, 1)}


def _one(emb, ids, single: int, exact: bool) -> float:
    """Median seconds of one-query calls over the first ``single`` ids."""
    lat = []
    for q in ids[:single]:
        t0 = time.perf_counter()
        emb.nearest(q, K, exact=exact)
        lat.append(time.perf_counter() - t0)
    return harness.median(lat)


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, required=True, help="work directory (reused)")
    ap.add_argument("--edges", type=harness.count, default=harness.count("20M"))
    ap.add_argument("--nodes", type=harness.count, default=harness.count("2Mi"))
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--dim", type=int, default=100, help="embedding dimension (100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=1000, help="query entities (1000)")
    ap.add_argument("--single", type=int, default=200,
                    help="one-query calls timed per side (200)")
    ap.add_argument("--kinds", default="hnsw,ivf", help="index kinds (hnsw,ivf)")
    args = ap.parse_args(argv)
    try:
        import faiss  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"faiss is needed (pip install 'graphsys[faiss]'): {exc}") from None
    from graphsys.embed import Embeddings
    from graphsys.embed.index import IndexParams

    ck = embeddings(args.work, args)
    run = harness.Run("serve/index_defaults", args.record)
    emb = Embeddings.load(ck)
    n = emb.num_entities()
    rng = np.random.default_rng(12345)  # not the seed the index tunes its sample with
    ids = list(emb.original(np.sort(rng.choice(n, min(args.queries, n), replace=False))))
    t0 = time.perf_counter()
    exact_ids, _ = emb.nearest(ids, K, exact=True)
    exact_s = time.perf_counter() - t0
    out = {}
    for kind in [k for k in args.kinds.split(",") if k]:
        harness.log(f"{kind}: defaults")
        out[kind] = measure(ck, kind, IndexParams(), ids, exact_ids, args.single)
        harness.log(f"{kind}: {out[kind]}")
        harness.log(f"{kind}: fixed {FIXED[kind]}")
        out[f"{kind}_fixed"] = measure(ck, kind, None, ids, exact_ids, args.single,
                                       search=FIXED[kind])
        harness.log(f"{kind} fixed: {out[f'{kind}_fixed']}")
    for suffix in ("faiss", "json"):  # leave the checkpoint without indexes
        (ck / "index" / f"{emb.entity_types[0]}.cos.{suffix}").unlink(missing_ok=True)
    run.emit(entities=n, dimension=emb.dimension, edges=args.edges, queries=len(ids),
             exact_batched_qps=round(len(ids) / exact_s, 1), **out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
