#!/usr/bin/env python3
"""Growing a trained embedding model with new entities (``freeze_old``) beside a full
retrain: test MRR on the new entities' triples and training time.

FB15k-237 (from the dataset registry, through the dataset mirror ``GRAPHSYS_MIRROR``):

1. Hold out ``--holdout`` (10 %) of the training entities, drawn with ``--seed``; drop every
   training triple that touches one.
2. **old**: ingest the remaining training triples (edge set ``train``; all 237 relation types
   declared, so the model's shape does not change) and train ComplEx (d = ``--dim``,
   ``--epochs`` epochs).
3. **incremental**: append the held-out training triples as edge set ``grow`` (new entities
   appended to the partitions, old ids unchanged), then ``train(init_from=old, freeze_old)``
   for ``--inc-epochs`` epochs on ``grow`` only (and, with ``--fine-tune``, the same without
   ``freeze_old``).
4. **retrain**: ingest all training triples and train the same model from scratch for
   ``--epochs`` epochs.

Metrics: filtered MRR / Hits@10 (head and tail corruption, full ranking, filtered against
train + test triples) on the test triples that touch a held-out entity (``test_new``), and on
the other test triples (``test_old``). Usage::

    python benchmarks/embed/grow.py [--work DIR] [--fine-tune]
"""

from __future__ import annotations

import gzip
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness


def _triples(path: Path) -> list[tuple[str, str, str]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        return [tuple(ln.rstrip("\r\n").split("\t")) for ln in f if ln.strip()]


def _write(path: Path, triples) -> Path:
    path.write_text("".join("\t".join(t) + "\n" for t in triples))
    return path


def _config(args, epochs: int, extra=()):
    from graphsys.embed import load_config

    return load_config(None, [f"dimension={args.dim}", "operator=\"complex_diagonal\"",
                              "comparator=\"dot\"", "loss_fn=\"softmax\"", "lr=0.1",
                              "batch_size=1000", "num_uniform_negs=1000", "num_batch_negs=50",
                              "init_scale=0.001", f"num_epochs={epochs}",
                              f"seed={args.seed}", *extra])


def _metrics(ck: Path, graph: Path) -> dict:
    from graphsys.embed import Embeddings
    from graphsys.embed.evaluation import evaluate
    from graphsys.storage.graph import open_graph

    g = open_graph(graph)
    emb = Embeddings.load(ck, graph=g)
    out = {}
    for es in ("test_new", "test_old"):
        r = evaluate(emb, g, es, filtered=True, candidates="all")
        out[es] = {"mrr": round(r["mrr"], 4), "hits@10": round(r["hits@10"], 4),
                   "count": r["count"], "protocol": r["protocol"]}
    return out


def _timed_train(cfg, graph: Path, edges: str, out: Path) -> dict:
    from graphsys.embed import train
    from graphsys.storage.graph import open_graph

    t0 = time.perf_counter()
    train(graph, cfg, edges=edges, out=out)
    return {"seconds": round(time.perf_counter() - t0, 2), "edges": edges,
            "edges_per_epoch": open_graph(graph).num_edges(edges), "epochs": cfg.num_epochs}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", "--workdir", dest="work", type=Path,
                    default=Path("/tmp/bench-grow"), help="work directory (kept)")
    ap.add_argument("--holdout", type=float, default=0.10, help="fraction of entities (0.1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=5, help="old and retrain epochs (5)")
    ap.add_argument("--inc-epochs", type=int, default=5, help="incremental epochs (5)")
    ap.add_argument("--fine-tune", action="store_true", help="also run without freeze_old")
    args = ap.parse_args(argv)

    from graphsys.storage.append import append_edges
    from graphsys.storage.format import RelationType
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    run = harness.Run("embed/grow", args.record)
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    fetched = harness.dataset_files(run, "fb15k-237", work / "cache")
    if fetched is None:
        run.emit()
        return 1
    train_t = _triples(fetched.path("train"))
    test_t = _triples(fetched.path("test"))
    entities = sorted({x for h, _, t in train_t for x in (h, t)})
    rng = np.random.default_rng(args.seed)
    held = set(rng.choice(entities, int(round(args.holdout * len(entities))), replace=False))
    touches = (lambda tr: tr[0] in held or tr[2] in held)
    files = {
        "old": _write(work / "train_old.tsv", [t for t in train_t if not touches(t)]),
        "grow": _write(work / "train_grow.tsv", [t for t in train_t if touches(t)]),
        "all": _write(work / "train_all.tsv", train_t),
        "test_new": _write(work / "test_new.tsv", [t for t in test_t if touches(t)]),
        "test_old": _write(work / "test_old.tsv", [t for t in test_t if not touches(t)]),
    }
    rels = [RelationType(r, "node", "node") for r in sorted({r for _, r, _ in train_t})]

    def source(name: str, edge_set: str) -> EdgeSource:
        return EdgeSource([files[name]], edge_set=edge_set, src_col=0, rel_col=1, dst_col=2,
                          header=False)

    opts = IngestOptions(partitions=1, relation_types=rels)
    res: dict = {"dataset": "fb15k-237", "dim": args.dim,
                 "model": "ComplEx dot softmax, 1000 uniform + 50 batch negs, lr 0.1",
                 "held_out_entities": len(held), "entities": len(entities),
                 "train_old": sum(1 for t in train_t if not touches(t)),
                 "train_grow": sum(1 for t in train_t if touches(t)), "seed": args.seed}
    grown, full = work / "g-grown", work / "g-full"
    ck_old = work / "ck-old"
    ck_inc, ck_ft, ck_full = work / "ck-inc", work / "ck-finetune", work / "ck-full"
    for d in (grown, full, ck_old, ck_inc, ck_ft, ck_full):  # leftovers of an earlier run
        if d.exists():
            shutil.rmtree(d)
    ingest_sources([source("old", "train")], grown, opts)
    res["old"] = _timed_train(_config(args, args.epochs), grown, "train", ck_old)
    t0 = time.perf_counter()
    rep = append_edges(grown, [source("grow", "grow")], opts)
    res["append"] = {"seconds": round(time.perf_counter() - t0, 2), "new_nodes": rep.nodes}
    append_edges(grown, [source("test_new", "test_new"), source("test_old", "test_old")], opts)
    res["incremental"] = _timed_train(
        _config(args, args.inc_epochs, [f"init_from=\"{ck_old}\"", "freeze_old=true"]),
        grown, "grow", ck_inc)
    res["incremental"].update(_metrics(ck_inc, grown))
    if args.fine_tune:
        res["fine_tune"] = _timed_train(
            _config(args, args.inc_epochs, [f"init_from=\"{ck_old}\""]), grown, "grow", ck_ft)
        res["fine_tune"].update(_metrics(ck_ft, grown))
    ingest_sources([source("all", "train"), source("test_new", "test_new"),
                    source("test_old", "test_old")], full, opts)
    res["retrain"] = _timed_train(_config(args, args.epochs), full, "train", ck_full)
    res["retrain"].update(_metrics(ck_full, full))
    res["mrr_ratio_new"] = round(res["incremental"]["test_new"]["mrr"]
                                 / max(res["retrain"]["test_new"]["mrr"], 1e-12), 3)
    res["time_ratio"] = round(res["incremental"]["seconds"] / res["retrain"]["seconds"], 3)
    run.emit(**res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
