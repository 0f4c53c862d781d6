"""Temporal link prediction (task temporal-link, TGN): the chronological split, no future
event in any sample, the metrics and their protocol, the checkpoint; CollegeMsg through the
dataset mirror."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest
import torch

import graphsys
from graphsys.errors import FormatError, GraphsysError, ParameterError
from graphsys.gnn import TrainConfig, train
from graphsys.gnn.checkpoint import load_checkpoint
from graphsys.gnn.temporal import average_precision
from graphsys.sampling.temporal import TemporalNeighborSampler

from .conftest import edit_config


def _recurring(tmp_path, weighted: bool = False):
    """Pairs that recur over time: the future is the past repeated."""
    rng = np.random.default_rng(0)
    n, pairs, m = 60, 90, 2400
    a, b = rng.integers(0, n, pairs), rng.integers(0, n, pairs)
    k = rng.integers(0, pairs, m)
    cols = {"src": a[k], "dst": b[k], "timestamp": np.sort(rng.integers(0, 10**6, m))}
    if weighted:
        cols["w"] = rng.integers(-10, 11, m).astype(np.float64)
    return graphsys.from_arrow(pa.table(cols), tmp_path / "g", edge_columns=["timestamp"],
                               weight_col="w" if weighted else None)


@pytest.fixture
def spy(monkeypatch):
    """Every hop a sampler draws, to check against the events it served."""
    hops = []
    real = TemporalNeighborSampler.sample_hop

    def recording(self, nodes, times, fanout, rng_seed=0, *, parallel=None):
        hop = real(self, nodes, times, fanout, rng_seed, parallel=parallel)
        hops.append(hop)
        return hop

    monkeypatch.setattr(TemporalNeighborSampler, "sample_hop", recording)
    return hops


def test_trains_learns_and_never_sees_the_future(tmp_path, spy):
    g = _recurring(tmp_path, weighted=True)
    cfg = TrainConfig(task="temporal-link", hidden=16, epochs=4, lr=0.01, batch_size=100,
                      link_eval_negatives=20, link_val_fraction=0.15, link_test_fraction=0.15)
    res = train(g, cfg, out=tmp_path / "run")
    assert cfg.model == "tgn" and res.protocol == "sampled@20, raw"
    assert {"mrr", "hits@10", "ap", "auc", "val_mrr"} <= set(res.metrics)
    # recurring pairs are predictable: above chance (MRR ~ 0.17 among 21 candidates)
    assert res.metrics["mrr"] > 0.25 and res.metrics["auc"] > 0.65
    ev, split = res.extra["events"], res.extra["split"]
    t = ev.time
    assert t[split["train"]].max() < t[split["valid"]].min() <= t[split["valid"]].max() \
        < t[split["test"]].min()
    # no future edge, ever: every sampled event precedes the batch it served
    assert spy and all((h.time[h.mask] < h.times[:, None].repeat(h.nbr.shape[1], 1)[h.mask])
                       .all() for h in spy)
    assert len(res.history) == 4 and all("epoch_seconds" in r for r in res.history)
    assert (tmp_path / "run" / "checkpoint").is_dir()
    # the run directory records its run; the checkpoint, which nodes its memory rows are
    assert json.loads((tmp_path / "run" / "run.json").read_text())["task"] == "temporal-link"
    state, config, meta = load_checkpoint(tmp_path / "run" / "checkpoint")
    assert config["model"] == "tgn" and meta["graph_identity"]["digest"]
    # the model, and its memory as validation began (what evaluating it again starts from)
    assert set(state) == set(res.model.state_dict()) | {
        f"train_end.{name}" for name, _ in res.model.memory.named_buffers()}
    assert meta["entity_type"] == "default" or meta["entity_type"] in g.entity_types
    edit_config(tmp_path / "run" / "checkpoint", heads=0)
    with pytest.raises(FormatError, match="config.heads must be a positive integer, got 0"):
        load_checkpoint(tmp_path / "run" / "checkpoint")


def test_split_at_times_and_until(tmp_path):
    g = _recurring(tmp_path)
    t = np.concatenate(list(g.edge_column("timestamp")))
    lo, hi = np.quantile(t, [0.5, 0.7]).astype(int)
    res = train(g, TrainConfig(task="temporal-link", hidden=8, epochs=1, valid_from=int(lo),
                               test_from=int(hi), until=int(np.quantile(t, 0.9)),
                               link_eval_negatives=10, temporal_strategy="uniform"))
    ev, split = res.extra["events"], res.extra["split"]
    assert ev.time.max() <= np.quantile(t, 0.9)               # the view until
    assert (ev.time[split["train"]] < lo).all() and (ev.time[split["test"]] >= hi).all()


def test_an_undirected_edge_is_one_event(tmp_path):
    """An undirected edge set stores each edge in both directions: 4 edges were 7 events
    (a self-loop is stored once), so the reverse copy of an event could be scored after
    the memory had taken the event itself. Each edge is one event (TGL's reading)."""
    from graphsys.gnn.temporal_task import Events

    g = graphsys.from_arrow(pa.table({"src": [0, 1, 2, 3], "dst": [1, 2, 3, 3],
                                      "timestamp": [5, 7, 8, 9]}), tmp_path / "u",
                            edge_columns=["timestamp"], undirected=True, partitions=2)
    ev = Events(g)
    ends = sorted(zip(g.to_original(ev.src).tolist(), g.to_original(ev.dst).tolist()))
    assert [sorted(p) for p in ends] == [[0, 1], [1, 2], [2, 3], [3, 3]]
    assert ev.time.tolist() == [5, 7, 8, 9]
    # TGB's candidates and history read each event both ways: on a star around node 9 every
    # kept copy is (leaf, 9), so a pool of its destinations was {9}, the true answer, and
    # every negative slot empty (a rank of 1 for any model)
    from graphsys.gnn.temporal_task import event_split, held_out_negatives

    leaves = np.arange(18) % 9
    star = graphsys.from_arrow(pa.table({"src": leaves, "dst": np.full(18, 9),
                                         "timestamp": np.arange(18)}), tmp_path / "star",
                               edge_columns=["timestamp"], undirected=True)
    ev = Events(star)
    cfg = TrainConfig(task="temporal-link", eval_protocol="tgb", link_eval_negatives=4,
                      link_val_fraction=0.2, link_test_fraction=0.2)
    neg = held_out_negatives(ev, event_split(ev, cfg), cfg)
    for name, rows in neg.items():
        assert rows.shape[1] == 4 and (rows >= 0).all(), name
    with pytest.raises(GraphsysError, match="at least 3 events, .* has 2"):
        Events(graphsys.from_arrow(pa.table({"src": [0, 1], "dst": [1, 2],
                                             "timestamp": [1, 2]}), tmp_path / "two",
                                   edge_columns=["timestamp"], undirected=True))


def test_stamps_further_apart_than_int64_keep_their_gaps(tmp_path, monkeypatch):
    """Stamps from -1.9 * 2**62 to 1.9 * 2**62: the offsets from the first event (and
    TGAT's gaps t - t_j) were int64 differences, which wrapped to negative numbers."""
    from graphsys.gnn.temporal_task import Events
    from graphsys.gnn.tgat import TGAT

    rng = np.random.default_rng(0)
    ts = np.linspace(-1.9 * 2**62, 1.9 * 2**62, 60).astype(np.int64)
    g = graphsys.from_arrow(pa.table({"src": rng.integers(0, 8, 60),
                                      "dst": rng.integers(0, 8, 60), "timestamp": ts}),
                            tmp_path / "g", edge_columns=["timestamp"])
    ev = Events(g)
    assert ev.seconds(ev.time).tolist() == [float(int(t) - int(ts[0])) for t in ev.time]
    gaps, real = [], TGAT.embed
    monkeypatch.setattr(TGAT, "embed", lambda self, blocks, gap, raw: (
        gaps.append(gap), real(self, blocks, gap, raw))[1])
    train(g, TrainConfig(task="temporal-link", model="tgat", hidden=8, epochs=1,
                         batch_size=20, link_eval_negatives=5))
    assert gaps and all((gap > 0).all() for gap in gaps)


def test_full_ranking_leaves_the_true_destination_out():
    """link_eval_negatives=-1 ranks among every node: the event's own destination was one
    of them, tying with itself, so a model scoring each true destination highest got rank
    1.5 and MRR 0.667 (full ranking: 1, the positive among the other nodes)."""
    from graphsys.gnn.temporal_task import event_metrics, held_out_candidates

    cfg = TrainConfig(task="temporal-link", link_eval_negatives=-1)
    dst = np.array([1, 2])
    cand, empty = held_out_candidates(2, 4, 1, cfg, dst=dst)
    assert cand.shape == (2, 5) and empty[:, :4].tolist() == [[False, True, False, False],
                                                              [False, False, True, False]]
    node_score = np.array([[0.0, 3.0, 1.0, 2.0], [0.0, 1.0, 3.0, 2.0]])   # dst highest
    neg = np.concatenate([node_score, np.zeros((2, 1))], axis=1)
    neg[empty] = np.nan
    assert event_metrics(np.array([3.0, 3.0]), neg, [1])["mrr"] == 1.0


def test_refusals(tmp_path):
    with pytest.raises(ParameterError, match="tgn"):
        TrainConfig(task="temporal-link", model="gcn")
    with pytest.raises(ParameterError, match="task temporal-link"):
        TrainConfig(model="tgn")
    with pytest.raises(ParameterError, match="fanouts"):
        TrainConfig(task="temporal-link", fanouts=[10, 5])
    # options the task would ignore: a random split (its split is by time), a neighbour
    # strategy where no neighbour is read
    with pytest.raises(ParameterError, match="link_split random does not apply"):
        TrainConfig(task="temporal-link", link_split="random")
    for kw in ({"task": "temporal-link", "model": "jodie"}, {"task": "node"},
               {"task": "link"}):
        with pytest.raises(ParameterError, match="temporal_strategy applies to task"):
            TrainConfig(temporal_strategy="uniform", **kw)
    assert TrainConfig(task="temporal-link", model="tgat", temporal_strategy="uniform",
                       link_split="time").link_split == "time"
    plain = graphsys.from_numpy([0, 1, 2], [1, 2, 0], tmp_path / "plain")
    with pytest.raises(GraphsysError, match="edge column 'timestamp'"):
        train(plain, TrainConfig(task="temporal-link", epochs=1))


def test_average_precision_against_sklearn_definition():
    rng = np.random.default_rng(1)
    pos, neg = rng.integers(0, 5, 40).astype(float), rng.integers(0, 5, 60).astype(float)
    # brute force: over each distinct threshold, precision times the recall it adds
    scores = np.r_[pos, neg]
    ap = 0.0
    prev = 0.0
    for th in np.unique(scores)[::-1]:
        tp = (pos >= th).sum()
        recall = tp / len(pos)
        ap += (recall - prev) * tp / (scores >= th).sum()
        prev = recall
    assert average_precision(pos, neg) == pytest.approx(ap)


MIRROR = os.environ.get("GRAPHSYS_MIRROR")


@pytest.mark.skipif(not MIRROR, reason="dataset mirror not found (set GRAPHSYS_MIRROR)")
def test_collegemsg_first_weeks(tmp_path):
    """The registered dataset through the mirror, as of its first 4,000 messages."""
    from graphsys.datasets import load_dataset

    g = load_dataset("collegemsg", tmp_path / "cm", cache=tmp_path / "cache", mirror=MIRROR)
    t = np.sort(np.concatenate(list(g.edge_column("timestamp"))))
    torch.manual_seed(0)
    res = train(g, TrainConfig(task="temporal-link", hidden=16, epochs=1, until=int(t[3999]),
                               link_eval_negatives=50))
    assert len(res.extra["events"].src) >= 4000
    assert res.metrics["auc"] > 0.6 and 0 < res.metrics["mrr"] <= 1


@pytest.mark.parametrize("task,model,ok", [
    ("temporal-link", None, "tgn"), ("temporal-link", "tgn", "tgn"),
    ("temporal-link", "tgat", "tgat"), ("node", "tgat", None), ("link", "tgat", None),
    ("temporal-link", "jodie", "jodie"), ("node", "jodie", None), ("link", "jodie", None),
    ("temporal-link", "sage", None), ("temporal-link", "pinsage", None),
    ("temporal-link", "rgcn", None), ("temporal-link", "m:F", None),
    ("node", None, "sage"), ("node", "gat", "gat"), ("node", "m:F", "m:F"),
    ("node", "tgn", None), ("node", "rgcn", None),
    ("link", None, "sage"), ("link", "rgcn", "rgcn"), ("link", "pinsage", "pinsage"),
    ("link", "tgn", None), ("link", "m:F", None),
])
def test_each_task_takes_its_own_models(task, model, ok):
    """A model a task does not train is refused in one line naming those it does (the
    temporal task used to train TGN whatever --model said)."""
    if ok is not None:
        assert TrainConfig(task=task, model=model).model == ok
        return
    with pytest.raises(ParameterError, match="must be") as info:
        TrainConfig(task=task, model=model)
    assert "\n" not in str(info.value) and ("tgn" in str(info.value)) == (task ==
                                                                         "temporal-link"
                                                                         or model == "tgn")


@pytest.fixture(scope="module")
def tgn_run(tmp_path_factory):
    """A TGN run with a checkpoint: ``(graph, result, checkpoint)``."""
    tmp = tmp_path_factory.mktemp("tgn-ckpt")
    g = _recurring(tmp, weighted=True)
    cfg = TrainConfig(task="temporal-link", hidden=8, epochs=2, batch_size=200,
                      link_eval_negatives=20, link_val_fraction=0.15, link_test_fraction=0.15)
    res = train(g, cfg, out=tmp / "run")
    return g, res, tmp / "run" / "checkpoint"


def test_checkpoint_evaluates_again_to_the_runs_metrics(tgn_run, tmp_path):
    """The checkpoint keeps the memory as validation began: streaming the validation and
    test events from it gives the run's metrics of its kept model, exactly; the saved
    end-of-stream memory is what that stream leaves."""
    from graphsys.gnn.temporal_checkpoint import evaluate_temporal, load_temporal
    from graphsys.gnn.temporal_task import TRAIN_END, event_split

    g, res, ckpt = tgn_run
    again = evaluate_temporal(ckpt)
    for key in ("mrr", "hits@10", "ap", "auc"):
        assert again[key] == res.metrics[key], key
    assert again["val_mrr"] == res.metrics["val_mrr"]
    assert again["protocol"] == res.protocol and again["events"]["test"] == 360
    assert set(evaluate_temporal(ckpt, ks=[2, 5])) >= {"hits@2", "hits@5"}
    # the memory saved at the end equals the train_end memory streamed through valid + test
    stream, cfg, state, _ = load_temporal(ckpt)
    stream.model.memory.load_state_dict({k[len(TRAIN_END):]: v for k, v in state.items()
                                         if k.startswith(TRAIN_END)}, strict=False)
    _, val_m, test_m = event_split(stream.ev, cfg)
    stream.evaluate(val_m, 1, cfg)
    stream.evaluate(test_m, 2, cfg)
    for name, buf in stream.model.memory.named_buffers():
        torch.testing.assert_close(buf, state[f"memory.{name}"], rtol=0, atol=0)


def test_checkpoint_embeds_every_node_at_the_end_of_the_stream(tgn_run, tmp_path):
    """gnn embed on a TGN checkpoint (it said "meta.entity_type is missing"): one row per
    node, each TGN's attention over the node's latest events on the end-of-stream memory,
    as the model embeds a node for an event after the last one."""
    from graphsys.embed import Embeddings
    from graphsys.gnn import embed_checkpoint
    from graphsys.gnn.temporal_checkpoint import load_temporal

    g, res, ckpt = tgn_run
    info = embed_checkpoint(ckpt, tmp_path / "emb")
    assert (info["num_nodes"], info["dimension"]) == (g.num_nodes(), 8)
    vectors = Embeddings.load(tmp_path / "emb").to_numpy()
    assert vectors.shape == (g.num_nodes(), 8) and np.isfinite(vectors).all()
    stream, _, _, _ = load_temporal(ckpt)
    nodes = np.array([3, 17, 40])                                  # internal ids
    with torch.no_grad():
        z = stream.embed_at(nodes, stream.ev.time[-1] + 1)[0].numpy()
    np.testing.assert_allclose(vectors[nodes], z, rtol=1e-5, atol=1e-6)


def test_checkpoint_refusals(tgn_run, tmp_path, capsys):
    """Another graph, an older checkpoint without the train_end memory (it still embeds),
    and --edge-set: one line each."""
    import argparse
    import shutil

    from graphsys.commands import gnn as gnn_command
    from graphsys.gnn import embed_checkpoint
    from graphsys.gnn.checkpoint import save_checkpoint
    from graphsys.gnn.temporal_checkpoint import evaluate_temporal
    from graphsys.gnn.temporal_task import TRAIN_END

    g, res, ckpt = tgn_run
    other = _recurring(tmp_path / "other")
    with pytest.raises(GraphsysError, match="memory belongs to the events it was trained"):
        evaluate_temporal(ckpt, graph=other)
    old = tmp_path / "old"
    shutil.copytree(ckpt, old)
    state, config, meta = load_checkpoint(old)
    save_checkpoint(old, {k: v for k, v in state.items() if not k.startswith(TRAIN_END)},
                    config, meta)
    with pytest.raises(GraphsysError, match="saved without the memory at the end of its "
                                            "training events"):
        evaluate_temporal(old)
    assert embed_checkpoint(old, tmp_path / "emb")["num_nodes"] == g.num_nodes()
    parser = argparse.ArgumentParser()
    gnn_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["gnn", "evaluate", str(ckpt), "--edge-set", "test"])
    with pytest.raises(GraphsysError, match="ranks no edge set"):
        args.func(args)


def test_memory_refuses_the_graph_grown_since(tgn_run, tmp_path):
    """The memory is by node and event of the training graph: a copy of it grown by an
    append (new nodes, new events) is refused in one line naming what to rerun."""
    import shutil

    import pyarrow.parquet as pq

    from graphsys.gnn.temporal_checkpoint import evaluate_temporal

    g, _, ckpt = tgn_run
    shutil.copytree(g.path, tmp_path / "g")
    pq.write_table(pa.table({"src": [1, 70], "dst": [70, 71], "timestamp": [10**6, 10**6 + 1],
                             "w": [1.0, 2.0]}), tmp_path / "day2.parquet")
    grown = graphsys.ingest(tmp_path / "day2.parquet", tmp_path / "g", append=True,
                            edge_set="day2", weight_col="w", edge_columns=["timestamp"])
    assert grown.num_nodes() == g.num_nodes() + 2
    with pytest.raises(GraphsysError, match="an append since moves node ids.*train again"):
        evaluate_temporal(ckpt, graph=grown)


def test_scoring_new_events_of_a_weighted_graph_takes_their_weights(tgn_run):
    """The model reads each event's weight (scaled as its training graph's): scoring needs
    one per event, and an update stores it in the pending messages."""
    from graphsys.gnn.temporal_score import TemporalScorer

    g, res, ckpt = tgn_run
    scorer = TemporalScorer(ckpt)
    t = scorer.time + 1
    with pytest.raises(ParameterError, match="weight"):
        scorer.score([1], [2], [t])
    with pytest.raises(ParameterError, match="weight"):
        scorer.score([1], [2], [t], weight=[np.nan])
    scorer.score([1], [2], [t], weight=[5.0], update=True)
    a, b = g.to_internal([1, 2])
    mem = scorer.stream.model.memory
    assert bool(mem.has_msg[a]) and int(mem.msg_other[a]) == b
    assert float(mem.msg_raw[a, 0]) == pytest.approx(5.0 / scorer.stream.ev.scales[0])


_EDITS = [
    (dict(config={"dim": 10 ** 9}), "model cannot be built from its config|model rebuilt "
                                     "from its config has"),
    (dict(config={"num_nodes": 10 ** 12}), "the model rebuilt from its config has "
                                           r"\(1000000000000, 4\)"),
    (dict(hidden=10 ** 9), "meta.train_config.hidden is 1000000000, config.dim 4"),
]


# TGAT holds no per-node tensor: its node count is compared with the graph's later
@pytest.mark.parametrize("model, edit, says", [
    (m, e, s) for m in ("tgn", "tgat", "jodie") for e, s in _EDITS
    if not (m == "tgat" and "num_nodes" in e.get("config", {}))])
def test_temporal_dimensions_are_checked_before_the_model_is_built(model, edit, says):
    """model.json's dimensions (no checksum) were the size of the TGN, TGAT or JODIE
    load_temporal built for the graph before any check: a train_config hidden of 10**9 ran
    past a minute allocating; now they are checked against the stored tensors on torch's
    meta device, and the settings against the config, first."""
    from graphsys.gnn.jodie import JODIE
    from graphsys.gnn.temporal import TGN
    from graphsys.gnn.temporal_checkpoint import _check_dimensions
    from graphsys.gnn.tgat import TGAT

    net = {"tgn": TGN, "tgat": TGAT, "jodie": JODIE}[model](6, 4, 2)
    config = {**net.config(), **edit.get("config", {})}
    fanouts = {"tgat": [10, 10], "tgn": [10], "jodie": None}[model]

    def settings(hidden):
        return TrainConfig(task="temporal-link", model=model, hidden=hidden, fanouts=fanouts)
    _check_dimensions("ck", net.config(), settings(4), net.state_dict())
    cfg = settings(edit.get("hidden", 4))
    with pytest.raises(FormatError, match=says):
        _check_dimensions("ck", config, cfg, net.state_dict())


def test_features_are_scaled_by_the_training_events_alone(tmp_path):
    """Each feature column was divided by its largest magnitude over all events, test
    events included: changing only the test events' weights changed every training input
    and the trained model. The training events' maximum is the divisor now, recorded in the
    checkpoint (a reload divides by it); one that recorded none keeps the old rule."""
    import shutil

    from graphsys.gnn.temporal_checkpoint import load_temporal
    from graphsys.gnn.temporal_task import TemporalTask

    rng = np.random.default_rng(1)
    m = 300
    src, dst = rng.integers(0, 20, m), rng.integers(0, 20, m)
    w = rng.uniform(-3, 3, m).astype(np.float32)     # weights are stored as float32
    cfg = dict(task="temporal-link", hidden=8, epochs=1, batch_size=50,
               link_eval_negatives=5, link_val_fraction=0.2, link_test_fraction=0.2)
    runs = []
    for name, test_w in (("a", w[240:]), ("b", w[240:] * 50)):
        g = graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": np.arange(m),
                                          "w": np.concatenate([w[:240], test_w])}),
                                tmp_path / name, edge_columns=["timestamp"], weight_col="w")
        task = TemporalTask(g, TrainConfig(**cfg), torch.device("cpu"))
        assert task.ev.scales.tolist() == [np.abs(w[:180]).max()]  # the 180 training ones
        res = train(g, TrainConfig(**cfg), out=tmp_path / f"run-{name}")
        runs.append((g, task.ev.raw[task.split[0]], tmp_path / f"run-{name}" / "checkpoint",
                     res))
    (ga, raw_a, ckpt_a, _), (_, raw_b, ckpt_b, _) = runs
    np.testing.assert_array_equal(raw_a, raw_b)
    sa, sb = load_checkpoint(ckpt_a)[0], load_checkpoint(ckpt_b)[0]
    stream_end = {f"memory.{b}" for b in ("memory", "last_update", "msg_other", "msg_time",
                                          "msg_raw", "has_msg")}   # after the test events
    for key in set(sa) - stream_end:       # parameters, and the memory as training ended
        assert torch.equal(sa[key], sb[key]), key
    meta = json.loads((ckpt_a / "model.json").read_text())["meta"]
    assert meta["feature_scales"] == [np.abs(w[:180]).max()]
    assert load_temporal(ckpt_a)[0].ev.scales.tolist() == meta["feature_scales"]
    # a checkpoint from before the scales were recorded: all events' largest magnitude
    old = tmp_path / "old"
    shutil.copytree(ckpt_a, old)
    data = json.loads((old / "model.json").read_text())
    del data["meta"]["feature_scales"]
    (old / "model.json").write_text(json.dumps(data))
    assert load_temporal(old)[0].ev.scales.tolist() == [np.abs(w).max()]
    data["meta"]["feature_scales"] = [0.0]
    (old / "model.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match="feature_scales must be 1 positive finite"):
        load_temporal(old)
