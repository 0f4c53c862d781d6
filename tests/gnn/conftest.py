"""Tiny labelled SBM graphs (numpy) stored through ingest, for trainer and CLI tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, NodeSource, ingest_sources
from graphsys.storage.node_columns import write_node_column


def write_sbm(out: Path, *, blocks=4, size=50, p_in=0.15, p_out=0.005, dim=8, noise=2.0,
              seed=0, labels=True, partitions=2, mapped_features=False) -> Path:
    """A stochastic block model: label = block, feat = class mean + noise; masks 10 train
    per class, 40 validation, the rest test. Returns the graph directory. With
    ``mapped_features``, feat is a node column in a file of its own (memory-mapped, added
    by :func:`~graphsys.storage.node_columns.write_node_column`) instead of in the node
    table."""
    rng = np.random.default_rng(seed)
    n = blocks * size
    y = np.repeat(np.arange(blocks), size)
    prob = np.where(y[:, None] == y[None, :], p_in, p_out)
    upper = np.triu(rng.random((n, n)) < prob, 1)
    s, d = np.nonzero(upper)
    mu = rng.normal(size=(blocks, dim))
    x = (mu[y] + noise * rng.normal(size=(n, dim))).astype(np.float32)
    perm = rng.permutation(n)
    train = np.zeros(n, bool)
    for c in range(blocks):
        train[perm[y[perm] == c][:10]] = True
    rest = perm[~train[perm]]
    val = np.zeros(n, bool)
    val[rest[:40]] = True
    test = ~(train | val)
    out.parent.mkdir(parents=True, exist_ok=True)
    edges = out.parent / f"{out.name}.tsv"
    edges.write_text("".join(f"{a}\t{b}\n" for a, b in zip(s.tolist(), d.tolist())))
    cols = {"id": pa.array(np.arange(n, dtype=np.int64))}
    if not mapped_features:
        cols["feat"] = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim)
    if labels:
        cols.update({"label": pa.array(y.astype(np.int64)), "train_mask": pa.array(train),
                     "val_mask": pa.array(val), "test_mask": pa.array(test)})
    ingest_sources([EdgeSource([edges], header=False)], out,
                   IngestOptions(partitions=partitions, undirected=True),
                   nodes=[NodeSource(pa.table(cols))])
    if mapped_features:
        rows = x[open_graph(out).node_ids()]             # internal-id order
        write_node_column(out, "feat", "features", lambda a, b: rows[a:b], dim=dim)
    return out


def sbm_graph(tmp_path, **kw):
    return open_graph(write_sbm(tmp_path / "sbm", **kw))


def write_bipartite(out: Path, *, partitions=1, seed=0, edge_sets=False) -> Path:
    """A random ``user -> item`` graph (30 users 0.., 40 items 100..; 600 ratings with a
    ``timestamp`` edge column); with ``edge_sets``, its last 60 ratings are a ``test`` edge
    set beside ``train``."""
    from graphsys.storage.format import RelationType

    rng = np.random.default_rng(seed)
    users, items = rng.integers(0, 30, 600), rng.integers(100, 140, 600)
    ts = rng.integers(0, 10_000, 600)
    parts = [("train", 0, 540), ("test", 540, 600)] if edge_sets else [("default", 0, 600)]
    ingest_sources([EdgeSource(table=pa.table({"src": users[a:b], "dst": items[a:b],
                                               "timestamp": ts[a:b]}), relation="rated",
                               edge_set=name, edge_columns=["timestamp"])
                    for name, a, b in parts],
                   out, IngestOptions(partitions=partitions,
                                      relation_types=[RelationType("rated", "user", "item")]))
    return out


def check_temporal_checkpoint(run_dir: Path, metrics: dict, num_nodes: int, dim: int) -> None:
    """A temporal-link run's checkpoint evaluates again to the run's ``metrics`` and embeds
    every node (``num_nodes`` rows of ``dim``)."""
    from graphsys.embed import Embeddings
    from graphsys.gnn import embed_checkpoint
    from graphsys.gnn.temporal_checkpoint import evaluate_temporal

    again = evaluate_temporal(run_dir / "checkpoint")
    for key in ("mrr", "hits@10", "ap", "auc", "val_mrr"):
        assert again[key] == metrics[key], key
    info = embed_checkpoint(run_dir / "checkpoint", run_dir / "emb")
    assert info["dimension"] == dim
    assert Embeddings.load(run_dir / "emb").to_numpy().shape == (num_nodes, dim)


def replay_test_stream(checkpoint: Path):
    """The test events' scores of a temporal checkpoint two ways: ``(got, want, scorer,
    state)``, ``got`` from a :class:`~graphsys.gnn.temporal_score.TemporalScorer` rewound
    to the first test event and fed the test events with ``update=True``, ``want`` from
    evaluation's stream (validation, then test, batch by batch from the ``train_end``
    memory)."""
    from graphsys.gnn.temporal_checkpoint import load_temporal, start_of_validation
    from graphsys.gnn.temporal_score import TemporalScorer
    from graphsys.gnn.temporal_task import event_split

    stream, cfg, state, _ = load_temporal(checkpoint)
    start_of_validation(stream, state, checkpoint)
    _, val_m, test_m = event_split(stream.ev, cfg)
    ev = stream.ev
    want = []
    with torch.no_grad():
        for mask in (val_m, test_m):
            idx_all = np.flatnonzero(mask)
            for a in range(0, len(idx_all), cfg.batch_size):
                idx = idx_all[a:a + cfg.batch_size]
                pos, _ = stream.step(idx, np.zeros((len(idx), 0), np.int64), grad=False)
                if mask is test_m:
                    want.append(pos.double().numpy())
    test = np.flatnonzero(test_m)
    scorer = TemporalScorer(checkpoint, at=ev.time[test[0]])
    assert scorer.time == ev.time[test[0]]
    weight = ev.raw[test] * ev.scales if ev.raw.shape[1] else None    # the events' columns
    got = scorer.score(ev.src[test], ev.dst[test], ev.time[test], weight=weight, update=True,
                       internal=True)
    return got, np.concatenate(want), scorer, state


def edit_config(checkpoint: Path, **values) -> None:
    """Overwrite fields of a checkpoint's ``config`` in its ``model.json`` (a damaged
    checkpoint, for refusal tests)."""
    import json

    header = Path(checkpoint) / "model.json"
    data = json.loads(header.read_text())
    data["config"].update(values)
    header.write_text(json.dumps(data))
