"""Stochastic block model: labels, block-pair counts, intra fraction, features and masks."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from graphsys.errors import GraphsysError
from graphsys.generators import sbm
from graphsys.generators.sbm import SBM


def _collect(chunks):
    chunks = list(chunks)
    return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}


@pytest.fixture(scope="module")
def model() -> SBM:
    return sbm(3000, 20_000, blocks=4, ratio=10.0, seed=7)


@pytest.fixture(scope="module")
def edges(model):
    return _collect(model.edges(chunk_edges=3000))


@pytest.fixture(scope="module")
def nodes(model):
    return _collect(model.nodes(chunk_nodes=1000))


def test_labels_are_balanced_blocks(model, nodes):
    assert np.array_equal(nodes["id"], np.arange(3000))
    assert np.array_equal(np.bincount(nodes["label"]), [750] * 4)
    assert np.array_equal(model.labels(nodes["id"]), nodes["label"])
    assert not np.array_equal(nodes["label"], np.sort(nodes["label"]))  # ids hide labels


def test_edges_follow_the_block_pair_counts(model, edges):
    src, dst = edges["src"], edges["dst"]
    assert len(src) == 20_000 and src.dtype == np.int64
    assert src.min() >= 0 and max(src.max(), dst.max()) < 3000
    assert not (src == dst).any()
    ls, ld = np.sort(np.stack([model.labels(src), model.labels(dst)]), axis=0)
    counts = {tuple(p): 0 for p in model.pair_blocks.tolist()}
    for pair in zip(ls.tolist(), ld.tolist()):
        counts[pair] += 1
    assert list(counts.values()) == model.pair_counts.tolist()


def test_intra_fraction_matches_the_ratio(model, edges):
    # 4 equal blocks: intra pairs 4 * C(750, 2), inter pairs 6 * 750**2, weighted by ratio 10
    expected = 10 * 4 * 750 * 749 / 2 / (10 * 4 * 750 * 749 / 2 + 6 * 750**2)
    assert model.intra_fraction == pytest.approx(expected)
    intra = np.mean(model.labels(edges["src"]) == model.labels(edges["dst"]))
    assert abs(intra - expected) < 0.015
    assert model.p_in == pytest.approx(10 * model.p_out)


def test_same_seed_same_graph_whatever_the_chunk_size(monkeypatch):
    module = importlib.import_module("graphsys.generators.sbm")  # ``sbm`` is also the function
    monkeypatch.setattr(module, "RNG_BLOCK_EDGES", 1000)
    monkeypatch.setattr(module, "RNG_BLOCK_NODES", 256)
    runs = []
    for chunk in (7, 999, 10**6):
        model = sbm(3000, 5000, seed=7)
        runs.append((_collect(model.edges(chunk_edges=chunk)),
                     _collect(model.nodes(chunk_nodes=chunk))))
    for e, n in runs[1:]:
        assert all(np.array_equal(e[k], runs[0][0][k]) for k in ("src", "dst"))
        assert all(np.array_equal(n[k], runs[0][1][k]) for k in runs[0][1])
    other = _collect(sbm(3000, 5000, seed=8).edges())
    assert not np.array_equal(other["src"], runs[0][0]["src"])


def test_masks_planetoid_style(nodes):
    train, val, test = nodes["train_mask"], nodes["val_mask"], nodes["test_mask"]
    assert not (train & val).any() and not (train & test).any() and not (val & test).any()
    assert np.array_equal(np.bincount(nodes["label"][train]), [20] * 4)
    assert val.sum() == 500 and test.sum() == 1000


def test_masks_scale_down_on_small_graphs():
    model = sbm(200, 500, blocks=4, seed=1)
    n = _collect(model.nodes())
    assert n["train_mask"].sum() == 80
    assert n["val_mask"].sum() + n["test_mask"].sum() == 120
    assert n["val_mask"].sum() == 120 * 500 // 1500


def test_features_carry_the_label(nodes):
    feat, label, train = nodes["feat"], nodes["label"], nodes["train_mask"]
    assert feat.dtype == np.float32 and feat.shape == (3000, 16)
    centroids = np.stack([feat[train & (label == c)].mean(axis=0) for c in range(4)])
    guess = ((feat[:, None, :] - centroids[None]) ** 2).sum(-1).argmin(1)
    accuracy = np.mean(guess[~train] == label[~train])
    assert 0.6 < accuracy < 0.97  # informative, not trivial


def test_no_features():
    chunk = next(sbm(100, 100, features=0).nodes())
    assert "feat" not in chunk


@pytest.mark.parametrize("kwargs, match", [
    ({"num_nodes": 3, "blocks": 4}, "blocks must be <= the number of nodes \\(3\\), got 4"),
    ({"num_edges": 10**6}, "p_in = .* must be <= 1"),
    ({"ratio": -1.0}, "ratio must be a finite number >= 0, got -1.0"),
    ({"blocks": 1, "ratio": 0.0}, "no node pair can be linked"),
    ({"features": -1}, "features must be a non-negative integer, got -1"),
])
def test_bad_arguments(kwargs, match):
    args = {"num_nodes": 100, "num_edges": 100, **kwargs}
    with pytest.raises(GraphsysError, match=match):
        sbm(args.pop("num_nodes"), args.pop("num_edges"), **args)


def test_single_node_blocks_are_limited_by_p_out_only():
    # 10 blocks of one node: no intra-block pair, so p_in (ratio x p_out) binds nothing;
    # 45 inter pairs take 5 edges at p_out = 1/9
    model = sbm(10, 5, blocks=10, seed=0)
    edges = _collect(model.edges())
    assert len(edges["src"]) == 5 and model.intra_fraction == 0.0
    assert (model.labels(edges["src"]) != model.labels(edges["dst"])).all()
    with pytest.raises(GraphsysError, match="p_out = 1.02"):
        sbm(10, 46, blocks=10)
