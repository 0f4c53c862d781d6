"""Planted knowledge graphs: exact counts, planted tails, recoverability and clean splits."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from graphsys.errors import GraphsysError
from graphsys.generators import kg as kg_module
from graphsys.generators import knowledge_graph


def _collect(chunks):
    chunks = list(chunks)
    return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}


@pytest.fixture(scope="module")
def model():
    return knowledge_graph(2000, 20_000, relations=10, cluster_size=4, seed=3)


@pytest.fixture(scope="module")
def triples(model):
    return _collect(model.triples(chunk_triples=3000))


def test_counts_ranges_and_relations(model, triples):
    assert len(triples["src"]) == 20_000 and triples["rel"].dtype == np.int64
    for key in ("src", "dst"):
        assert triples[key].min() >= 0 and triples[key].max() < 2000
    assert set(np.unique(triples["rel"]).tolist()) == set(range(10))
    assert model.relation_names == [f"r{i}" for i in range(10)]
    as_set = set(zip(triples["src"].tolist(), triples["rel"].tolist(), triples["dst"].tolist()))
    assert len(as_set) == 20_000  # no duplicate triples


def test_shifts_are_distinct_and_not_inverse(model):
    shifts = {tuple(s) for s in model.shifts.tolist()}
    assert len(shifts) == 10 and (0, 0) not in shifts
    assert not any((-dy, -dx) in shifts for dy, dx in shifts)


def test_tails_come_from_the_planted_set(model, triples):
    tails = defaultdict(set)
    for h, r, t in zip(triples["src"].tolist(), triples["rel"].tolist(), triples["dst"].tolist()):
        tails[(h, r)].add(t)
    sizes = []
    for (h, r), seen in list(tails.items())[:1500]:
        planted = set(model.planted_tails(h, r).tolist())
        assert seen <= planted
        assert model.cluster_of(np.array(list(planted))).tolist() == [
            model.cluster_of(np.array([next(iter(planted))]))[0]] * len(planted)
        sizes.append(len(seen) == len(planted))
    assert np.mean(sizes) > 0.95  # (head, rel) pairs come with their whole planted set


def test_held_out_triples_are_recoverable_from_train(model):
    """A test tail lies in the cluster that the training tails of (head's cluster, rel) point
    to: the structure a KGE model must learn is in the training data. (Measured: ComplEx, d=32,
    10 epochs on 400 entities / 6 relations / 4,000 triples reaches filtered MRR 0.99.)"""
    parts = defaultdict(list)
    for name, chunk in model.split((0.8, 0.1, 0.1)):
        parts[name].append(chunk)
    train, test = _collect(parts["train"]), _collect(parts["test"])
    cluster = model.cluster_of(np.arange(2000))
    target = defaultdict(set)
    for h, r, t in zip(train["src"].tolist(), train["rel"].tolist(), train["dst"].tolist()):
        target[(cluster[h], r)].add(cluster[t])
    assert all(len(v) == 1 for v in target.values())  # a relation maps a cluster to one cluster
    hits = [{cluster[t]} == target[(cluster[h], r)]
            for h, r, t in zip(test["src"].tolist(), test["rel"].tolist(), test["dst"].tolist())]
    assert np.mean(hits) > 0.98


def test_split_is_a_partition_and_held_out_entities_are_in_train(model, triples):
    parts = defaultdict(list)
    for name, chunk in model.split((0.8, 0.1, 0.1)):
        parts[name].append(chunk)
    parts = {k: _collect(v) for k, v in parts.items()}
    sizes = {k: len(v["src"]) for k, v in parts.items()}
    assert sum(sizes.values()) == 20_000
    assert 0.78 < sizes["train"] / 20_000 < 0.83
    assert 0.08 < sizes["valid"] / 20_000 < 0.11 and 0.08 < sizes["test"] / 20_000 < 0.11
    key = lambda t: set(zip(t["src"].tolist(), t["rel"].tolist(), t["dst"].tolist()))  # noqa
    assert set().union(*(key(p) for p in parts.values())) == key(triples)
    train_entities = set(parts["train"]["src"].tolist()) | set(parts["train"]["dst"].tolist())
    for name in ("valid", "test"):
        held = set(parts[name]["src"].tolist()) | set(parts[name]["dst"].tolist())
        assert held <= train_entities
        assert set(parts[name]["rel"].tolist()) <= set(parts["train"]["rel"].tolist())


def test_tiny_graph_split_keeps_the_guarantee():
    model = knowledge_graph(40, 60, relations=3, seed=1)
    parts = defaultdict(list)
    for name, chunk in model.split((0.5, 0.25, 0.25)):
        parts[name].append(chunk)
    train = _collect(parts["train"])
    seen = set(train["src"].tolist()) | set(train["dst"].tolist())
    for name in ("valid", "test"):
        for chunk in parts[name]:
            assert set(chunk["src"].tolist()) | set(chunk["dst"].tolist()) <= seen


def test_same_seed_same_triples_whatever_the_chunk_size(monkeypatch):
    monkeypatch.setattr(kg_module, "RNG_BLOCK_FACTS", 4000)  # 100 heads per block
    runs = [_collect(knowledge_graph(1000, 5000, seed=4).triples(chunk_triples=size))
            for size in (7, 1234, 10**6)]
    for run in runs[1:]:
        assert all(np.array_equal(run[k], runs[0][k]) for k in ("src", "rel", "dst"))
    other = _collect(knowledge_graph(1000, 5000, seed=5).triples())
    assert not np.array_equal(other["dst"], runs[0]["dst"])


def test_default_count_and_limits():
    assert knowledge_graph(500).num_triples == 5000
    small = knowledge_graph(40, 1, relations=2)
    with pytest.raises(GraphsysError, match=f"num_triples must be <= {small.max_triples}"):
        knowledge_graph(40, small.max_triples + 1, relations=2)
    with pytest.raises(GraphsysError, match="no planted facts"):
        knowledge_graph(4, 1, cluster_size=4)
    with pytest.raises(GraphsysError, match="must sum to 1"):
        small.split((0.5, 0.2, 0.2))
    for bad in (None, 5, "0.8,0.1,0.1", (0.8, 0.2)):  # None and 5 raised a raw TypeError
        with pytest.raises(GraphsysError, match="must be three numbers train,valid,test"):
            small.split(bad)
