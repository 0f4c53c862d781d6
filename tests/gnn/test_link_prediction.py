"""The link task on held-out edges: one entity type (SBM, Cora, a SNAP graph), two entity
types (MovieLens as a plain edge split), no held-out edge in any sampled neighbourhood,
determinism, the time-split hook and the configuration checks."""

from __future__ import annotations

import numpy as np
import pytest

import graphsys
import graphsys.sampling.neighbor as neighbor
from graphsys.embed import Embeddings
from graphsys.errors import ParameterError
from graphsys.gnn import TrainConfig, embed_checkpoint, train
from graphsys.gnn.link import link_data

from .conftest import sbm_graph

KEYS = {"mrr", "auc", "val_mrr"} | {f"{m}@{k}" for m in ("hits", "recall") for k in (1, 3, 10, 20)}


def _cfg(**kw):
    base = dict(task="link", hidden=16, fanouts=[5, 5], epochs=3, batch_size=64, lr=0.01,
                link_eval_negatives=100, seed=0)
    return TrainConfig(**{**base, **kw})


def test_one_type_graph_trains_and_reports_the_metrics(tmp_path, device):
    g = sbm_graph(tmp_path)
    res = train(g, _cfg(epochs=6), out=tmp_path / "run", device=device)
    assert set(res.metrics) == KEYS, res.metrics
    # random scores rank a positive among 100 negatives at MRR ~ 0.05; the SBM's blocks
    # make its edges predictable from features and neighbourhoods
    assert res.metrics["mrr"] > 0.1 and res.metrics["auc"] > 0.7, res.metrics
    assert res.metrics["hits@1"] <= res.metrics["hits@3"] <= res.metrics["hits@20"]
    assert len(res.history) == 6 and {"val_mrr", "val_auc", "val_hits@10"} <= set(
        res.history[0])
    # the protocol beside every figure: 100 sampled tails, true edges filtered out
    assert res.protocol == "sampled@100, filtered"
    assert all(r["protocol"] == res.protocol for r in res.history)
    assert res.extra["embeddings"].shape == (200, 16)
    # streaming inference from the checkpoint: the same training graph, the same vectors
    info = embed_checkpoint(tmp_path / "run" / "checkpoint", tmp_path / "emb", device=device)
    assert info["num_nodes"] == 200 and info["dimension"] == 16
    got = Embeddings.load(tmp_path / "emb").to_numpy()
    np.testing.assert_allclose(got, res.extra["embeddings"].numpy(), rtol=1e-5, atol=1e-5)


def test_deterministic_and_seeded(tmp_path, device, deterministic):
    g = sbm_graph(tmp_path)
    a = train(g, _cfg(epochs=2, num_workers=1), device=device)
    b = train(g, _cfg(epochs=2, num_workers=2, prefetch=3), device=device)
    assert a.metrics == b.metrics and [h["loss"] for h in a.history] == [
        h["loss"] for h in b.history]
    c = train(g, _cfg(epochs=2, seed=1), device=device)
    assert c.metrics != a.metrics


def test_no_held_out_edge_in_any_sampled_neighbourhood(tmp_path, monkeypatch):
    """Every block built while training and evaluating (uniform samples and the full
    neighbourhoods of layer-wise inference) joins training pairs only."""
    g = sbm_graph(tmp_path)
    cfg = _cfg(epochs=2, fanouts=[-1, -1], link_val_fraction=0.2, link_test_fraction=0.2)
    seen = []
    make_block = neighbor.make_block

    def recording(dst, nbr, counts, *a, **kw):
        seen.append((np.repeat(np.asarray(dst), counts), np.asarray(nbr).copy()))
        return make_block(dst, nbr, counts, *a, **kw)

    monkeypatch.setattr(neighbor, "make_block", recording)
    res = train(g, cfg)
    data = res.extra["data"]
    assert data.val.sum() and data.test.sum()
    n = data.num_nodes
    held = data.val | data.test
    held_keys = set((np.minimum(data.head[held], data.tail[held]) * n
                     + np.maximum(data.head[held], data.tail[held])).tolist())
    train_keys = set((np.minimum(data.head[data.train], data.tail[data.train]) * n
                      + np.maximum(data.head[data.train], data.tail[data.train])).tolist())
    d = np.concatenate([x for x, _ in seen])
    s = np.concatenate([y for _, y in seen])
    used = set((np.minimum(s, d) * n + np.maximum(s, d)).tolist())
    assert len(d) > 0 and not used & held_keys
    assert used <= train_keys                          # and the training pairs are all used
    assert len(used) == len(train_keys)
    # the training adjacency itself
    rows = np.repeat(np.arange(n), data.adj.degrees())
    adj_keys = set((np.minimum(rows, data.adj.indices) * n
                    + np.maximum(rows, data.adj.indices)).tolist())
    assert adj_keys == train_keys


def _training_batches(monkeypatch, g, cfg):
    """Every training minibatch of ``train(g, cfg)``, as the loader yields it."""
    import graphsys.gnn.link_task as link_task

    batches = []
    plain = link_task.LinkTask.batches

    def recording(self, epoch):
        for batch in plain(self, epoch):
            batches.append(batch)
            yield batch

    monkeypatch.setattr(link_task.LinkTask, "batches", recording)
    train(g, cfg)
    return batches


def _blocks_with_own_targets(batches):
    """Per batch: how many block edges (any layer, either direction) join one of its own
    target pairs, counted pair by pair in Python."""
    counts = []
    for b in batches:
        seeds = b.seeds.tolist()
        targets = {frozenset((seeds[h], seeds[t]))
                   for h, t in zip(b.extra["head"].tolist(), b.extra["pos"].tolist())}
        hit = 0
        for blk in b.blocks:
            src = blk.src_nodes.tolist()
            for u, v in zip(blk.edge_src.tolist(), blk.edge_dst.tolist()):
                hit += frozenset((src[u], src[v])) in targets
        counts.append(hit)
    return counts


def test_no_minibatch_passes_messages_over_its_own_target_edges(tmp_path, monkeypatch):
    """With full neighbourhoods every training target is an edge of the training graph, so
    without the exclusion each batch's blocks contain its targets; with it (the default)
    no batch's blocks contain any of its own targets, in any layer or direction, while
    the other training edges stay."""
    g = sbm_graph(tmp_path)
    cfg = _cfg(epochs=1, fanouts=[-1, -1], batch_size=32)
    assert cfg.link_exclude_targets
    kept = _blocks_with_own_targets(_training_batches(monkeypatch, g, cfg))
    leaky_batches = _training_batches(
        monkeypatch, g, _cfg(epochs=1, fanouts=[-1, -1], batch_size=32,
                             link_exclude_targets=False))
    leaky = _blocks_with_own_targets(leaky_batches)
    assert len(kept) == len(leaky) > 1
    assert all(c == 0 for c in kept) and all(c > 0 for c in leaky), (kept, leaky)
    # only the targets went: the same seeds, edges fewer by exactly the leaked ones
    ex = _training_batches(monkeypatch, g, cfg)
    for a, b, c in zip(ex, leaky_batches, leaky):
        assert a.seeds.tolist() == b.seeds.tolist()
        assert sum(x.num_edges for x in b.blocks) - sum(x.num_edges for x in a.blocks) == c


def test_link_data_of_one_type_dedupes_unordered_pairs(tmp_path):
    g = sbm_graph(tmp_path)
    data = link_data(g, None, 0.05, 0.1, seed=0)
    key = np.minimum(data.head, data.tail) * 200 + np.maximum(data.head, data.tail)
    assert len(np.unique(key)) == len(key) and (data.head != data.tail).all()
    assert data.symmetric and data.tails == (0, 200)
    # ingest stores each undirected edge both ways; the pairs are the distinct ones
    s, d = np.nonzero(graphsys.to_scipy(g))
    assert len(key) == len({(min(a, b), max(a, b)) for a, b in zip(s, d) if a != b})
    assert (data.known != data.known.T).nnz == 0


def test_time_split_needs_a_timestamp_column(tmp_path):
    g = sbm_graph(tmp_path)
    with pytest.raises(ParameterError, match="^link_split 'time' needs the edge column "
                                             "'timestamp'.*edge columns: none"):
        train(g, _cfg(link_split="time"))
    with pytest.raises(ParameterError, match="^link_split 'user' needs a bipartite relation"):
        train(g, _cfg(link_split="user", link_eval_negatives=1000))  # the split's setting


def test_time_split_by_stored_timestamps_checked_by_hand(tmp_path):
    import pyarrow as pa

    # 10 distinct undirected pairs on 6 nodes; (0, 1) is stored twice (times 95 and 5) and
    # takes its earliest time; the self-loop is not a target edge
    edges = [(0, 1, 95), (1, 2, 20), (2, 3, 30), (3, 4, 40), (4, 5, 50), (5, 0, 60),
             (0, 2, 70), (1, 3, 80), (2, 4, 90), (3, 5, 100), (1, 0, 5), (4, 4, 1)]
    src, dst, ts = (list(c) for c in zip(*edges))
    g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": ts}),
                            tmp_path / "g", edge_columns=["timestamp"], partitions=2)
    data = link_data(g, None, 0.2, 0.2, seed=0, split="time")
    pairs = {tuple(sorted(g.to_original(np.array([h, t])).tolist())): (
        "test" if te else "val" if va else "train")
        for h, t, va, te in zip(data.head, data.tail, data.val, data.test)}
    # latest 2 of 10 -> test, the 2 before -> val, the rest (earliest 6) -> train
    assert pairs == {(3, 5): "test", (2, 4): "test", (1, 3): "val", (0, 2): "val",
                     (0, 1): "train", (1, 2): "train", (2, 3): "train", (3, 4): "train",
                     (4, 5): "train", (0, 5): "train"}
    # the training graph holds no held-out pair
    adj = data.adj.to_scipy()
    assert all(adj[h, t] == 0 for h, t, keep in zip(data.head, data.tail, data.train)
               if not keep)


def test_time_split_trains_on_movielens(mirror, tmp_path, device):
    g = _ingest(mirror, tmp_path, "movielens-100k")
    res = train(g, TrainConfig(task="link", link_split="time", hidden=16, epochs=1,
                               batches_per_epoch=5, lr=0.01, link_eval_negatives=100,
                               seed=0), device=device)
    data = res.extra["data"]
    times = graphsys.gnn.link.edge_timestamps(g)
    # every test rating is later than every training one (ties stay on the earlier side)
    assert times[data.test].min() > times[data.val].max() > times[data.train].max()
    assert 0 < data.test.sum() <= round(0.1 * len(data.head))


@pytest.mark.parametrize("kw,message", [
    ({"link_split": "edges"}, "^link_split must be one of auto, user, random, time"),
    ({"link_val_fraction": 1.0}, r"^link_val_fraction must be a finite number in \[0, 1\)"),
    ({"link_val_fraction": 0.5, "link_test_fraction": 0.5}, "^link_test_fraction plus"),
    ({"link_decoder": "bilinear"}, "^link_decoder must be one of dot, distmult, mlp"),
    ({"link_eval_negatives": 0}, "^link_eval_negatives must be an integer >= 1 or -1"),
    ({"link_eval_negatives": 1.5}, "^link_eval_negatives must be an integer >= 1 or -1"),
    ({"link_exclude_targets": 1}, "^link_exclude_targets must be True or False"),
    ({"num_negatives": 0}, "^num_negatives must be"),
    ({"metrics_k": [0, 3]}, "^metrics_k must be integers >= 1"),
    # these raised a raw TypeError / ValueError, or read True as hits@1
    ({"metrics_k": float("nan")}, "^metrics_k must be integers >= 1"),
    ({"metrics_k": [2.5]}, "^metrics_k must be integers >= 1"),
    ({"metrics_k": [True]}, "^metrics_k must be integers >= 1"),
    ({"metrics_k": "3"}, "^metrics_k must be integers >= 1"),
    ({"link_val_fraction": "0.1"}, r"^link_val_fraction must be a finite number in \[0, 1\)"),
    ({"link_test_fraction": None}, r"^link_test_fraction must be a finite number in \[0, 1\)"),
])
def test_config_checks(kw, message):
    with pytest.raises(ParameterError, match=message):
        TrainConfig(task="link", **kw)
    assert TrainConfig(task="link", metrics_k=[10, 1, 10]).metrics_k == (1, 10)


@pytest.mark.parametrize("kw,message", [
    ({"link_val_fraction": 0.5}, "^link_val_fraction applies to tasks link and temporal-link"),
    ({"metrics_k": [1]}, "^metrics_k applies to tasks link and temporal-link"),
    ({"heads": 4}, "^heads applies to model gat only, not 'sage'"),
    ({"heads": 4, "task": "link", "model": "gcn"}, "^heads applies to model gat only"),
])
def test_a_setting_the_run_would_not_read_is_refused(kw, message):
    """The node task reads no link setting and only gat reads heads: 'gnn train
    --link-val-fraction 0.5' (node task) and '--heads 4 --model sage' trained as if unset."""
    with pytest.raises(ParameterError, match=message):
        TrainConfig(**kw)
    assert TrainConfig(heads=4, model="gat").heads == 4
    assert TrainConfig(metrics_k=[1, 3, 10, 20]).task == "node"  # the default, as a list


def test_distmult_and_every_candidate(tmp_path, device):
    g = sbm_graph(tmp_path)
    res = train(g, _cfg(link_decoder="distmult", link_eval_negatives=-1, metrics_k=[5]),
                device=device)
    assert set(res.metrics) == {"mrr", "auc", "val_mrr", "hits@5", "recall@5"}
    assert res.extra["decoder"].rel is not None


def test_mlp_decoder_scores_every_candidate_as_the_sampled_ones(tmp_path, device):
    g = sbm_graph(tmp_path)
    a = train(g, _cfg(link_decoder="mlp", link_eval_negatives=-1, metrics_k=[5]), device=device)
    assert a.extra["decoder"].mlp is not None and a.metrics["auc"] > 0.6, a.metrics
    # ranked against every candidate: at least as many competitors as 100 sampled ones
    b = train(g, _cfg(link_decoder="mlp", metrics_k=[5]), device=device)
    assert a.metrics["mrr"] <= b.metrics["mrr"] + 1e-9, (a.metrics, b.metrics)


def _ingest(mirror, tmp_path, name):
    from graphsys.gnn.data import open_source
    return open_source(name, mirror=mirror, cache=tmp_path / "cache")


def test_cora_link_prediction(mirror, tmp_path, device):
    g = _ingest(mirror, tmp_path, "cora")
    res = train(g, TrainConfig(task="link", epochs=8, lr=0.01, eval_every=4, seed=0), device=device)
    # random ranking among 1000 negatives: MRR ~ 0.0075, hits@10 ~ 0.01, AUC 0.5
    assert res.metrics["auc"] > 0.75 and res.metrics["hits@10"] > 0.04, res.metrics


def test_snap_graph_link_prediction(mirror, tmp_path, device):
    g = _ingest(mirror, tmp_path, "ca-grqc")
    res = train(g, TrainConfig(task="link", epochs=3, lr=0.01, eval_every=3,
                               link_eval_negatives=100, seed=0), device=device)
    assert res.metrics["mrr"] > 0.2 and res.metrics["hits@10"] > 0.4, res.metrics


def test_two_entity_types_as_an_edge_split(mirror, tmp_path, device):
    g = _ingest(mirror, tmp_path, "movielens-100k")
    res = train(g, TrainConfig(task="link", link_split="random", hidden=16, epochs=1,
                               batches_per_epoch=20, lr=0.01, link_eval_negatives=100,
                               seed=0), device=device)
    data = res.extra["data"]
    assert [t for t, _, _ in data.types] == ["user", "item"] and not data.symmetric
    assert data.tails == (943, 943 + 1682)
    assert (data.head < 943).all() and (data.tail >= 943).all()
    # 20 steps of learned id embeddings: above random (AUC 0.5, MRR ~ 0.05 among 100)
    assert res.metrics["auc"] > 0.55 and res.metrics["mrr"] > 0.055, res.metrics


def test_cli_link_flags(tmp_path, capsys):
    import json

    from graphsys.cli import main

    from .conftest import write_sbm

    d = write_sbm(tmp_path / "sbm")
    rc = main(["gnn", "train", "--graph", str(d), "--task", "link", "--epochs", "2",
               "--hidden", "16", "--fanouts", "5,5", "--link-val-fraction", "0.1",
               "--link-test-fraction", "0.2", "--link-decoder", "distmult",
               "--link-eval-negatives", "50", "--metrics-k", "5,1", "--json"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and {"mrr", "hits@1", "hits@5", "recall@1", "recall@5", "auc"} <= set(out)
    assert "hits@10" not in out and out["protocol"] == "sampled@50, filtered"
    rc = main(["gnn", "train", "--graph", str(d), "--task", "link", "--metrics-k", "1,x"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and err == "error: --metrics-k must be comma-separated integers, got '1,x'"


def test_target_pairs_keyed_as_records_past_the_int64_product(monkeypatch):
    """exclude_pairs keyed pairs ``min * n + max`` in int64, which wraps from about 3.04e9
    nodes (the pairs (2**31, 2**33 - 1) and (0, 2**33 - 1) then shared a key); past that
    size the keys are (u, v) records, forced here: the same edges are dropped."""
    import torch

    from graphsys.gnn.link import exclude_pairs
    from graphsys.sampling.block import Block
    from graphsys.storage import edge_changes

    b = Block(torch.tensor([0, 1, 2]), 2, torch.tensor([1, 0, 2, 2]),
              torch.tensor([0, 1, 1, 0]))                   # 1 -> 0, 0 -> 1, 2 -> 1, 2 -> 0
    want = exclude_pairs([b], np.array([0, 2]), np.array([1, 1]), 3)[0]
    monkeypatch.setattr(edge_changes, "MAX_PACKED_NODES", 1)
    got = exclude_pairs([b], np.array([0, 2]), np.array([1, 1]), 3)[0]
    assert got.edge_src.tolist() == want.edge_src.tolist() == [2]
    assert got.edge_dst.tolist() == want.edge_dst.tolist() == [0]
