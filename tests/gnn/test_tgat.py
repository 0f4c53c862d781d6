"""TGAT (``task="temporal-link", model="tgat"``) and the events' multi-column edge features
(``edge_features``: TGN's messages, both models' attention), on small generated graphs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

import graphsys
from graphsys.errors import ParameterError
from graphsys.gnn import TrainConfig, train
from graphsys.gnn.conv.temporal_attention import TimeEncoder
from graphsys.gnn.temporal_task import WEIGHT, Events, EventStream, TemporalTask

from .conftest import check_temporal_checkpoint, replay_test_stream

#: Settings of the learning runs: blocks of 100 events are batches of 100 events.
RUN = dict(task="temporal-link", hidden=16, epochs=6, eval_every=3, lr=0.01, batch_size=100,
           link_eval_negatives=20, link_val_fraction=0.15, link_test_fraction=0.15)
#: The expected MRR of a random ranking among 21 candidates: H(21) / 21.
RANDOM_MRR = sum(1 / r for r in range(1, 22)) / 21


def _marked(path, n=200, blocks=20, per=20, seed=0):
    """Events whose destinations only the edge feature ``feature_0`` tells: each block of
    100 events holds ``per`` markers (``feature_0 = 1``) and ``per`` decoys (0) to distinct
    random nodes, and three more events (0) to each node marked in the block before, in a
    random order; every event's source is random and ``feature_1`` is noise. A node marked
    and a decoy look alike but for the feature: a model that reads ``feature_0`` ranks the
    marked nodes first."""
    rng = np.random.default_rng(seed)
    src, dst, f0 = [], [], []
    prev = np.repeat(rng.choice(n, per, replace=False), 3)
    for _ in range(blocks):
        x = rng.choice(n, 2 * per, replace=False)
        d = np.concatenate([x, prev])
        f = np.concatenate([np.ones(per), np.zeros(per + len(prev))])
        order = rng.permutation(len(d))
        src.append(rng.integers(0, n, len(d)))
        dst.append(d[order])
        f0.append(f[order])
        prev = np.repeat(x[:per], 3)
    src, dst, f0 = map(np.concatenate, (src, dst, f0))
    m = len(src)
    return graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": np.arange(m),
                                         "feature_0": f0.astype(np.float32),
                                         "feature_1": rng.normal(size=m).astype(np.float32)}),
                               path, edge_columns=["timestamp", "feature_0", "feature_1"])


def test_tgat_learns_what_the_features_tell_and_evaluates_again(tmp_path):
    """TGAT ranks far above random with the features, near random without the one that
    tells; its checkpoint evaluates again to the run's metrics and embeds every node."""
    g = _marked(tmp_path / "g")
    torch.manual_seed(0)
    res = train(g, TrainConfig(**RUN, model="tgat", fanouts=[5, 5]), out=tmp_path / "run")
    assert res.model.config()["num_layers"] == 2 and res.model.raw_dim == 2
    # the time encoding's frequencies stay where they start (learned, a few hundred Adam
    # steps scramble the slow ones on gaps in seconds)
    torch.testing.assert_close(res.model.time_enc.state_dict(), TimeEncoder(16).state_dict())
    assert res.metrics["mrr"] > RANDOM_MRR + 0.08 and res.metrics["auc"] > 0.6, res.metrics
    blind = train(g, TrainConfig(**RUN, model="tgat", fanouts=[5, 5],
                                 edge_features=["feature_1"]))
    assert res.metrics["mrr"] > blind.metrics["mrr"] + 0.06, (res.metrics, blind.metrics)
    check_temporal_checkpoint(tmp_path / "run", res.metrics, 200, 16)
    # a scorer rewound to the test events replays them as evaluation did (its neighbour
    # store was sampled one hop deep: the two layers failed, "1 blocks for 2 layers")
    got, want, _, _ = replay_test_stream(tmp_path / "run" / "checkpoint")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.slow("full")
def test_tgn_learns_what_the_features_tell(tmp_path):
    """TGN's messages carry the features: far above random with them, not without."""
    g = _marked(tmp_path / "g")
    torch.manual_seed(0)
    res = train(g, TrainConfig(**RUN, fanouts=[5]))
    blind = train(g, TrainConfig(**RUN, fanouts=[5], edge_features=["feature_1"]))
    assert res.metrics["mrr"] > blind.metrics["mrr"] + 0.06, (res.metrics, blind.metrics)


def _tiny(path, **cols):
    rng = np.random.default_rng(0)
    m = 40
    table = {"src": rng.integers(0, 10, m), "dst": rng.integers(0, 10, m),
             "timestamp": np.arange(m), **{k: v[:m] for k, v in cols.items()}}
    return graphsys.from_arrow(pa.table(table), path, edge_columns=[c for c in table if c not
                                                                    in ("src", "dst", "w")],
                               weight_col="w" if "w" in cols else None)


def test_events_read_the_feature_columns(tmp_path):
    f = np.linspace(-4, 2, 40)
    g = _tiny(tmp_path / "g", feature_10=f, feature_2=np.ones(40) * 3, label=np.arange(40.0),
              w=np.arange(40.0))
    ev = Events(g)                        # every feature_* column, in numeric order
    assert ev.columns == ["feature_2", "feature_10"]
    np.testing.assert_allclose(ev.raw_by_eid[:, 0], 1.0)
    stored = np.concatenate(list(g.edge_column("feature_10")))     # in edge-id order
    np.testing.assert_allclose(ev.raw_by_eid[:, 1], stored / 4, rtol=1e-6)
    assert np.abs(ev.raw_by_eid).max() == 1.0
    assert Events(g, ["label"]).columns == ["label"]
    assert Events(g, []).raw.shape == (40, 0)
    plain = _tiny(tmp_path / "w", w=np.arange(40.0))     # no feature_*: the weight
    assert Events(plain).columns == [WEIGHT] and Events(plain).raw.shape == (40, 1)
    with pytest.raises(ParameterError, match="names 'nope', not an edge column.*feature_10"):
        Events(g, ["nope"])
    with pytest.raises(ParameterError, match="twice"):
        Events(g, ["label", "label"])
    with pytest.raises(ParameterError, match="edge_features applies to task temporal-link"):
        TrainConfig(edge_features=["feature_0"])


@pytest.mark.parametrize("model", ["tgn", "tgat"])
def test_the_features_reach_the_messages_and_the_attention(tmp_path, model):
    """A batch's events leave their feature columns as TGN's pending messages; changing a
    feature of an earlier event changes both models' scores of a later batch."""
    f0 = np.random.default_rng(1).normal(size=40)
    g = _tiny(tmp_path / "g", feature_0=f0, feature_1=np.ones(40))
    cfg = TrainConfig(task="temporal-link", model=model, hidden=8, dropout=0.0)
    scores = []
    for flip in (False, True):
        torch.manual_seed(0)
        task = TemporalTask(g, cfg, torch.device("cpu"))
        if flip:
            task.ev.raw_by_eid[:, 0] *= -1
            task.stream = EventStream(task.model, task.ev, task.sampler, task.stream.k, "cpu")
        task.model.eval()
        with torch.no_grad():
            first = np.arange(20)
            task.stream.step(first, np.zeros((20, 1), np.int64), grad=False)
            if model == "tgn":        # the batch's last event: its destination's message
                mem, node = task.model.memory, int(task.ev.dst[19])
                assert bool(mem.has_msg[node]) and mem.msg_raw.shape[1] == 2
                torch.testing.assert_close(mem.msg_raw[node],
                                           task.stream.raw_by_eid[int(task.ev.eid[19])])
            pos, _ = task.stream.step(np.arange(20, 40), np.zeros((20, 1), np.int64),
                                      grad=False)
        scores.append(pos)
    assert not torch.allclose(scores[0], scores[1])


def test_tgat_settings():
    cfg = TrainConfig(task="temporal-link", model="tgat")
    assert cfg.fanouts == [10, 10] and TrainConfig(task="temporal-link").fanouts is None
    assert TrainConfig(task="temporal-link", model="tgat", fanouts=[5, 3, 2]).fanouts == [5, 3, 2]
    with pytest.raises(ParameterError, match="fanouts of model tgn is one number.*tgat"):
        TrainConfig(task="temporal-link", fanouts=[10, 5])
    with pytest.raises(ParameterError, match="must be one of tgn, tgat or jodie, got 'sage'"):
        TrainConfig(task="temporal-link", model="sage")


def test_a_checkpoint_from_before_feature_columns_still_evaluates(tmp_path):
    """A TGN run that recorded no ``edge_features`` read no feature column (only a weight):
    its checkpoint evaluates again with the features it was trained on."""
    import json

    from graphsys.gnn.temporal_checkpoint import evaluate_temporal

    f0 = np.random.default_rng(2).normal(size=40)
    g = _tiny(tmp_path / "g", feature_0=f0)
    res = train(g, TrainConfig(task="temporal-link", hidden=8, epochs=1, edge_features=[],
                               link_eval_negatives=5), out=tmp_path / "run")
    header = tmp_path / "run" / "checkpoint" / "model.json"
    old = json.loads(header.read_text())
    del old["meta"]["edge_features"], old["meta"]["train_config"]["edge_features"]
    header.write_text(json.dumps(old))
    assert evaluate_temporal(tmp_path / "run" / "checkpoint")["mrr"] == res.metrics["mrr"]


@pytest.mark.parametrize("raw_dim", [0, 2])
def test_the_fused_edge_input_is_torchs(raw_dim, monkeypatch):
    """The one-pass edge input of TGAT's first block (``[raw || cos(w * gap + b)]`` in the
    used slots) against torch's encoder, gather and concatenation, on gaps from 0 to 10^9
    (the slow range of torch's cos): the same to float32 rounding, and so the same
    embeddings and gradients."""
    from graphsys.gnn import tgat
    from graphsys.gnn.conv._time_encoding import fused_ok, slot_edges

    g = torch.Generator().manual_seed(0)
    enc = TimeEncoder(16).requires_grad_(False)
    delta = torch.cat([torch.zeros(3), torch.rand(200, generator=g) * 10.0 ** torch.randint(
        0, 10, (200,), generator=g)]).double()
    delta[-5:] *= 1e4         # beyond the two-part reduction: libm's
    raw = torch.rand(len(delta), raw_dim, generator=g) if raw_dim else None
    slot = torch.randperm(300, generator=g)[:len(delta)].sort().values
    assert fused_ok(enc.lin, delta)
    got = slot_edges(enc.lin, slot, 300, delta, raw)
    want = enc(delta)
    if raw_dim:
        want = torch.cat([raw, want], 1)
    torch.testing.assert_close(got[slot], want, rtol=0, atol=2e-7)
    rest = torch.ones(300, dtype=torch.bool).index_fill_(0, slot, False)
    assert not got[rest].any()
    # the model: fused against torch's path, the same outputs and gradients
    model = tgat.TGAT(10, 16, raw_dim, num_layers=2).eval()
    nbr = torch.tensor([[2, 3], [4, 0], [5, 0], [6, 0], [0, 0]])
    mask = torch.tensor([[1, 1], [1, 0], [1, 0], [1, 0], [0, 0]]).bool()
    args = ([(nbr, mask), (nbr[:2], mask[:2])], delta[:5] * 1e3,
            torch.rand(5, raw_dim, generator=g))
    runs = []
    for fused in (True, False):
        if not fused:
            monkeypatch.setattr(tgat, "fused_ok", lambda *a: False)
        model.zero_grad()
        z = model.embed(*args)
        z.square().sum().backward()
        runs.append((z.detach(), [p.grad.clone() for p in model.parameters()
                                  if p.grad is not None]))
    torch.testing.assert_close(runs[0][0], runs[1][0])
    for a, b in zip(runs[0][1], runs[1][1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("with_post", [False, True])
def test_the_fused_first_layer_attention_is_torchs(training, with_post, monkeypatch):
    """TGAT's first layer in one pass a destination (scores, softmax, the hashed attention
    dropout and both weighted sums, :func:`~graphsys.gnn.conv._slot_products.attend`), with
    and without a composed ``post`` map, against torch's matmuls, softmax and
    :class:`~graphsys.gnn.dropout.HashDropout` from the same generator state: the same
    outputs and gradients, rows without a used slot and a row with one slot included."""
    from graphsys.gnn.conv import temporal_attention as ta
    from graphsys.gnn.dropout import HashDropout

    g = torch.Generator().manual_seed(1)
    conv = ta.TemporalAttentionConv(16, 16, 7, heads=2)
    conv.dropout = HashDropout(0.3)
    conv.train(training)
    post = torch.nn.Linear(16, 16) if with_post else None
    edge = torch.randn(60, 5, 7, generator=g)
    mask = torch.rand(60, 5, generator=g) > 0.3
    mask[:2] = False
    mask[1, 2] = True
    args = (torch.randn(1, 16, generator=g), torch.randn(1, 16, generator=g),
            torch.zeros(60, 5, dtype=torch.long), edge, mask)
    params = list(conv.parameters()) + (list(post.parameters()) if with_post else [])
    runs = []
    for fused in (True, False):
        if not fused:        # torch's products, softmax and dropout module
            monkeypatch.setattr(ta, "usable", lambda *a: False)
        torch.manual_seed(5)
        out = conv(*args, post=post)
        seed = torch.randn(out.shape, generator=torch.Generator().manual_seed(2))
        runs.append((out.detach(), torch.autograd.grad((out * seed).sum(), params)))
    torch.testing.assert_close(runs[0][0], runs[1][0])
    for a, b in zip(runs[0][1], runs[1][1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("training", [False, True])
def test_the_fused_in_order_attention_is_torchs(training):
    """A layer past TGAT's first with its sources in order (``in_order``: keys, values,
    scores, softmax, the hashed attention dropout and the weighted sum in one pass a
    destination, :func:`~graphsys.gnn.conv._slot_products.attend_slots`) against the same
    layer gathering those rows by index (torch's products, scatters, softmax and
    :class:`~graphsys.gnn.dropout.HashDropout`) from the same generator state: the same
    outputs and gradients, rows without a used slot included."""
    from graphsys.gnn.conv import temporal_attention as ta
    from graphsys.gnn.dropout import HashDropout

    g = torch.Generator().manual_seed(3)
    conv = ta.TemporalAttentionConv(16, 16, 7, heads=2)
    conv.dropout = HashDropout(0.3)
    conv.train(training)
    mask = torch.rand(40, 5, generator=g) > 0.4
    mask[:3] = False
    used = int(mask.sum())
    nbr = torch.zeros(40, 5, dtype=torch.long)
    nbr[mask] = torch.arange(used)                  # the used slots' rows, in order
    x = torch.randn(40, 16, generator=g, requires_grad=True)
    x_src = torch.randn(used, 16, generator=g, requires_grad=True)
    edge = torch.randn(40, 5, 7, generator=g)
    params = [x, x_src, *conv.parameters()]
    runs = []
    for in_order in (True, False):
        torch.manual_seed(5)
        out = conv(x, x_src, nbr, edge, mask, in_order=in_order)
        seed = torch.randn(out.shape, generator=torch.Generator().manual_seed(2))
        runs.append((out.detach(), torch.autograd.grad((out * seed).sum(), params,
                                                       allow_unused=True)))
    torch.testing.assert_close(runs[0][0], runs[1][0])
    for a, b in zip(runs[0][1], runs[1][1]):
        if a is None or b is None:
            assert a is None and b is None
        else:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
