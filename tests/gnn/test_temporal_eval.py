"""Temporal link prediction under TGB's protocol (fixed historical and random negatives,
filtered, TGB's evaluator), the new-node (inductive) metrics, and a TGN checkpoint evaluated
again, embedded at a time and scoring new events from the API and the CLI."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pyarrow as pa
import pytest
import torch

import graphsys
from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn import TrainConfig, train
from graphsys.gnn.checkpoint import load_checkpoint
from graphsys.gnn.temporal_eval import (
    NEGATIVES,
    held_out_metrics,
    new_node_events,
    tgb_negatives,
)

from .conftest import replay_test_stream


def _events(rng, n=40, m=400, pairs=60):
    a, b = rng.integers(0, n, pairs), rng.integers(0, n, pairs)
    k = rng.integers(0, pairs, m)
    return a[k], b[k], np.sort(rng.integers(0, m // 3, m))      # many equal stamps


def test_tgb_negatives_are_fixed_by_the_seed_historical_random_and_filtered():
    rng = np.random.default_rng(1)
    src, dst, t = _events(rng)
    train = np.arange(len(src)) < 300
    held = ~train
    m = 10
    neg = tgb_negatives(src, dst, t, train, held, m, seed=5)
    assert neg.shape == (held.sum(), m)
    np.testing.assert_array_equal(neg, tgb_negatives(src, dst, t, train, held, m, seed=5))
    assert not np.array_equal(neg, tgb_negatives(src, dst, t, train, held, m, seed=6))
    pool = set(dst.tolist())
    hs, hd, ht = src[held], dst[held], t[held]
    for i in range(len(hs)):
        same = {int(d) for s, d, tt in zip(hs, hd, ht) if s == hs[i] and tt == ht[i]}
        seen = {int(d) for s, d in zip(src[train], dst[train]) if s == hs[i]}
        row = neg[i].tolist()
        k = min(m // 2, len(seen - same))
        hist, rand = row[:k], row[k:]
        assert set(hist) <= seen - same and len(set(hist)) == k       # historical, distinct
        assert not (set(rand) & (seen | same)) and set(rand) <= pool   # random, filtered
        if len(pool - seen - same) >= m - k:
            assert len(set(rand)) == m - k                            # without replacement
        assert not (set(row) & same)                                   # filtered: no answer


def test_tgb_negatives_refusals_and_empty_slots():
    with pytest.raises(ParameterError, match="eval_protocol"):
        TrainConfig(task="link", eval_protocol="tgb")
    with pytest.raises(ParameterError, match="eval_protocol"):
        TrainConfig(task="temporal-link", eval_protocol="ogb")
    with pytest.raises(ParameterError, match="link_eval_negatives"):
        TrainConfig(task="temporal-link", eval_protocol="tgb", link_eval_negatives=-1)
    with pytest.raises(ParameterError, match="negatives"):
        tgb_negatives([0], [1], [0], [True], [True], 0, seed=0)
    # every candidate destination is a true answer of the query: slots stay empty
    neg = tgb_negatives([0, 0], [1, 2], [5, 5], [False, False], [True, True], 3, seed=0)
    assert (neg == -1).all()


def test_tgb_negatives_and_edge_splits_refuse_a_seed_numpy_would_misread():
    """tgb_negatives and split_edges seeded NumPy with ``seed`` as given: None drew other
    negatives (another split) every call, True drew seed 1's and -1 raised NumPy's raw
    ValueError. They take a sampler's seeds, integers in [-2**63, 2**64)."""
    from graphsys.gnn.link import split_edges

    args = ([0, 0, 1, 1], [1, 2, 3, 4], [1, 2, 3, 4], [1, 1, 0, 0], [0, 0, 1, 1], 2)
    for bad in (None, True, 1.5, 1 << 64):
        with pytest.raises(GraphsysError, match="random seed must be an integer"):
            tgb_negatives(*args, seed=bad, pool=range(40))
        with pytest.raises(GraphsysError, match="random seed must be an integer"):
            split_edges(100, 0.1, 0.2, bad)
    assert (tgb_negatives(*args, seed=-1, pool=range(40))
            == tgb_negatives(*args, seed=np.int64(-1), pool=range(40))).all()
    assert (split_edges(100, 0.1, 0.2, -1)[2] == split_edges(100, 0.1, 0.2, -1)[2]).all()


def test_filtered_mrr_equals_tgb_evaluator_by_brute_force():
    rng = np.random.default_rng(2)
    h, m = 50, 7
    pos = rng.integers(0, 5, h).astype(float)                        # many ties
    neg = rng.integers(0, 5, (h, m)).astype(float)
    neg[rng.random((h, m)) < 0.2] = np.nan                           # empty slots
    extra = rng.normal(size=h)
    new = rng.random(h) < 0.3
    out = held_out_metrics(pos, neg, extra, [1, 3], inductive=new)
    rr, hit1, hit3 = [], [], []
    for i in range(h):
        cand = [x for x in neg[i] if not np.isnan(x)]
        optimistic = sum(x > pos[i] for x in cand)
        pessimistic = sum(x >= pos[i] for x in cand)
        rank = 0.5 * (optimistic + pessimistic) + 1                  # TGB's Evaluator
        rr.append(1 / rank)
        hit1.append(rank <= 1)
        hit3.append(rank <= 3)
    assert out["mrr"] == pytest.approx(np.mean(rr), abs=1e-12)
    assert out["hits@1"] == pytest.approx(np.mean(hit1))
    assert out["hits@3"] == pytest.approx(np.mean(hit3))
    assert out["inductive_mrr"] == pytest.approx(np.mean(np.array(rr)[new]), abs=1e-12)
    assert out["inductive_events"] == int(new.sum())
    none = held_out_metrics(pos, neg, extra, [1], inductive=np.zeros(h, bool))
    assert none["inductive_events"] == 0 and "inductive_mrr" not in none


def test_new_node_events_by_brute_force():
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    train = np.arange(200) < 120
    src[150:], dst[180:] = rng.integers(0, 60, 50), rng.integers(0, 60, 20)   # new nodes
    known = set(src[train].tolist()) | set(dst[train].tolist())
    want = [not (s in known and d in known) for s, d in zip(src[~train], dst[~train])]
    assert new_node_events(src, dst, train, ~train).tolist() == want
    assert any(want) and not all(want)


def _graph(path, seed=0):
    """Recurring pairs over time, and nodes 60.. that appear only in the latest events."""
    rng = np.random.default_rng(seed)
    n, pairs, m = 60, 90, 1500
    a, b = rng.integers(0, n, pairs), rng.integers(0, n, pairs)
    k = rng.integers(0, pairs, m)
    src, dst = a[k], b[k]
    late = np.arange(m - 400, m, 7)
    src[late] = 60 + rng.integers(0, 10, len(late))
    return graphsys.from_arrow(pa.table({"src": src, "dst": dst,
                                         "timestamp": np.sort(rng.integers(0, 10**6, m))}),
                               path / "g", edge_columns=["timestamp"])


@pytest.fixture(scope="module")
def tgb_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tgb-run")
    g = _graph(tmp)
    cfg = TrainConfig(task="temporal-link", hidden=8, epochs=2, batch_size=100,
                      link_eval_negatives=10, eval_protocol="tgb",
                      link_val_fraction=0.15, link_test_fraction=0.15)
    res = train(g, cfg, out=tmp / "run")
    return g, res, tmp / "run" / "checkpoint"


def test_tgb_run_saves_its_negatives_and_evaluates_again_to_its_metrics(tgb_run):
    from graphsys.gnn.temporal_checkpoint import evaluate_temporal, load_temporal
    from graphsys.gnn.temporal_task import event_split, held_out_negatives

    g, res, ckpt = tgb_run
    assert res.protocol == "tgb@10 (hist_rnd), filtered"
    assert res.metrics["inductive_events"] > 0 and "val_inductive_mrr" in res.history[-1]
    assert 0 < res.metrics["mrr"] <= 1 and 0 <= res.metrics["inductive_ap"] <= 1
    state, _, _ = load_checkpoint(ckpt)
    stream, cfg, _, _ = load_temporal(ckpt)
    drawn = held_out_negatives(stream.ev, event_split(stream.ev, cfg), cfg)
    for name in ("valid", "test"):                       # saved, and fixed by the seed
        np.testing.assert_array_equal(state[NEGATIVES + name].numpy(), drawn[name])
    again = evaluate_temporal(ckpt)
    for key in ("mrr", "hits@10", "ap", "auc", "inductive_mrr", "inductive_ap",
                "inductive_events"):
        assert again[key] == res.metrics[key], key
    assert again["protocol"] == res.protocol and again["val_mrr"] == res.metrics["val_mrr"]
    other = evaluate_temporal(ckpt, eval_protocol="sampled")
    assert other["protocol"] == "sampled@10, raw"
    assert other["inductive_events"] == again["inductive_events"] and "inductive_mrr" in other
    with pytest.raises(ParameterError, match="eval_protocol"):
        evaluate_temporal(ckpt, eval_protocol="ogb")


def test_tgb_negatives_in_the_checkpoint_are_checked(tgb_run, tmp_path):
    import shutil

    from graphsys.errors import FormatError
    from graphsys.gnn.checkpoint import save_checkpoint
    from graphsys.gnn.temporal_checkpoint import evaluate_temporal

    g, res, ckpt = tgb_run
    bad = tmp_path / "bad"
    shutil.copytree(ckpt, bad)
    state, config, meta = load_checkpoint(bad)
    good = state[NEGATIVES + "test"]
    state[NEGATIVES + "test"] = good[:, :3]
    save_checkpoint(bad, state, config, meta)
    with pytest.raises(FormatError, match="tgb_negatives.test must be integer"):
        evaluate_temporal(bad)
    state[NEGATIVES + "test"] = torch.full_like(good, 30_000)     # past the 68 nodes
    save_checkpoint(bad, state, config, meta)
    with pytest.raises(FormatError, match="holds a node outside the graph"):
        evaluate_temporal(bad)


def test_scorer_replays_the_test_stream_of_evaluation(tgb_run):
    """A scorer rewound to the first test event and fed the test events with update=True
    scores them as evaluation's stream does (same memory, neighbours and batches)."""
    g, res, ckpt = tgb_run
    got, want, scorer, state = replay_test_stream(ckpt)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # the memory it leaves is the end-of-stream memory the checkpoint saved
    for name, buf in scorer.stream.model.memory.named_buffers():
        torch.testing.assert_close(buf, state[f"memory.{name}"], rtol=1e-4, atol=1e-5)


def test_score_update_and_refusals(tgb_run):
    from graphsys.gnn.temporal_score import TemporalScorer

    g, res, ckpt = tgb_run
    scorer = TemporalScorer(ckpt)
    last = scorer.time
    src, dst, t = [1, 2, 3], [4, 5, 6], [last + 1, last + 2, last + 2]
    a = scorer.score(src, dst, t)
    np.testing.assert_array_equal(a, scorer.score(src, dst, t))      # nothing changed
    emb = scorer.embed([1, 4])
    assert scorer.time == last
    b = scorer.score(src, dst, t, update=True)
    assert scorer.time == last + 2
    np.testing.assert_array_equal(a[:1], b[:1])    # the first batch: the same state
    assert not np.allclose(scorer.embed([1, 4]), emb)                # memory moved on
    with pytest.raises(ParameterError, match="before"):
        scorer.score([1], [2], [last])
    with pytest.raises(GraphsysError, match="not in the graph"):
        scorer.score([1000], [2], [last + 5])


def test_score_cli_agrees_with_the_api(tgb_run, tmp_path, capsys):
    from graphsys.commands import gnn as gnn_command
    from graphsys.gnn.temporal_score import TemporalScorer

    g, res, ckpt = tgb_run
    last = TemporalScorer(ckpt).time
    events = tmp_path / "events.csv"
    new = int(g.node_ids().max())                    # a node of the latest events only
    rows = [(5, 7, last + 10), (7, 5, last + 10), (new, 3, last + 20), (5, 7, last + 30)]
    events.write_text("src,dst,timestamp\n" + "".join(f"{s},{d},{t}\n" for s, d, t in rows))
    parser = argparse.ArgumentParser()
    gnn_command.register(parser.add_subparsers(dest="command"))
    src, dst, t = (np.array(c) for c in zip(*rows))
    for update in (False, True):
        flags = ["gnn", "score", str(ckpt), "--events", str(events), "--json"]
        args = parser.parse_args(flags + (["--update"] if update else []))
        assert args.func(args) == 0
        out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        api = TemporalScorer(ckpt).score(src, dst, t, update=update)
        np.testing.assert_allclose(out["scores"], api, rtol=1e-6)
        assert out["events"] == 4 and out["update"] is update
    events.write_text("src,dst\n1,2\n")
    args = parser.parse_args(["gnn", "score", str(ckpt), "--events", str(events)])
    with pytest.raises(GraphsysError, match="no column 'timestamp'"):
        args.func(args)


def test_embeddings_at_a_time(tgb_run, tmp_path):
    from graphsys.embed import Embeddings
    from graphsys.gnn.temporal_score import TemporalScorer, embed_temporal

    g, res, ckpt = tgb_run
    scorer = TemporalScorer(ckpt)
    mid = int(np.median(scorer.stream.ev.time))                     # inside training
    info = embed_temporal(ckpt, tmp_path / "emb", at=mid)
    assert info["as_of"] == mid
    vectors = Embeddings.load(tmp_path / "emb").to_numpy()
    at_mid = TemporalScorer(ckpt, at=mid)
    np.testing.assert_allclose(vectors, at_mid.embed(internal=True), rtol=1e-5, atol=1e-6)
    assert not np.allclose(vectors, scorer.embed(internal=True))
