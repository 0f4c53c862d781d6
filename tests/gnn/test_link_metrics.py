"""Link-prediction and node-classification metrics against brute-force computations:
filtered ranks / MRR / Hits@K against a naive loop, AUC against the Mann-Whitney U count
over every pair, recall@K against explicit per-query ranked lists, macro-F1 against a
per-class count; and the filtered evaluation of held-out edges against a full ranking done
by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.errors import ParameterError
from graphsys.gnn.link import (
    LinkData,
    LinkDecoder,
    evaluate_links,
    evaluate_scores,
    split_edges,
)
from graphsys.ranking import auc, group_positions, hits_at_k, macro_f1, mrr, ranks, recall_at_k
from graphsys.sampling.adjacency import from_coo


def _naive_rank(p, negs):
    """One per rival above, a half per rival tied; NaN worst (a NaN positive is below
    every rival, a NaN rival below every positive with a number)."""
    r = 1.0
    for s in negs:
        r += 1.0 if np.isnan(p) else 0.0 if np.isnan(s) else 1.0 if s > p else \
            0.5 if s == p else 0.0
    return r


def test_ranks_mrr_hits_against_a_loop():
    rng = np.random.default_rng(0)
    pos = rng.integers(0, 6, 200).astype(float)            # small integers: many ties
    neg = rng.integers(0, 6, (200, 30)).astype(float)
    valid = rng.random((200, 30)) < 0.7
    got = ranks(pos, neg, valid)
    naive = [_naive_rank(pos[i], neg[i][valid[i]]) for i in range(200)]
    assert got.tolist() == naive
    assert mrr(got) == pytest.approx(sum(1 / r for r in naive) / 200)
    for k in (1, 3, 10):
        assert hits_at_k(got, k) == pytest.approx(sum(r <= k for r in naive) / 200)
    assert ranks(pos, neg).tolist() == [_naive_rank(pos[i], neg[i]) for i in range(200)]
    with pytest.raises(ParameterError, match="^scores must have shape"):
        ranks(pos, neg[:5])
    with pytest.raises(ParameterError, match="^k must be a positive integer"):
        hits_at_k(got, 0)


def test_auc_is_the_mann_whitney_u_statistic():
    rng = np.random.default_rng(1)
    pos = rng.integers(0, 20, 150).astype(float)
    neg = rng.integers(0, 15, 230).astype(float)
    u = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    assert auc(pos, neg) == pytest.approx(u / (150 * 230))
    assert auc([1.0, 2.0], [0.0]) == 1.0 and auc([0.0], [1.0, 2.0]) == 0.0
    assert auc([1.0], [1.0]) == 0.5
    assert np.isnan(auc([], [1.0]))               # no pair: NaN, the rule for no input


def test_recall_at_k_against_explicit_ranked_lists():
    """Each positive's list: its own valid negatives plus the other positives of its
    query; recall@K of a query = share of its positives at a position <= K."""
    rng = np.random.default_rng(2)
    n = 120
    groups = rng.integers(0, 25, n)
    pos = rng.integers(0, 8, n).astype(float)
    neg = rng.integers(0, 8, (n, 12)).astype(float)
    pos[rng.random(n) < 0.1] = np.nan                    # NaN positives rank last
    neg[rng.random((n, 12)) < 0.1] = np.nan
    valid = rng.random((n, 12)) < 0.8
    positions = group_positions(ranks(pos, neg, valid), pos, groups)
    naive_pos = []
    for i in range(n):
        others = [pos[j] for j in range(n) if groups[j] == groups[i] and j != i]
        naive_pos.append(_naive_rank(pos[i], list(neg[i][valid[i]]) + others))
    assert positions.tolist() == naive_pos
    for k in (1, 2, 5, 20):
        per_group = {}
        for g, p in zip(groups.tolist(), naive_pos):
            per_group.setdefault(g, []).append(p <= k)
        want = np.mean([np.mean(v) for v in per_group.values()])
        assert recall_at_k(positions, groups, k) == pytest.approx(want)


def test_macro_f1_against_a_per_class_count():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 5, 300)
    pred = np.where(rng.random(300) < 0.6, labels, rng.integers(0, 6, 300))  # class 5: pred only
    f1s = []
    for c in sorted(set(labels.tolist()) | set(pred.tolist())):
        tp = sum(1 for p, y in zip(pred, labels) if p == c and y == c)
        fp = sum(1 for p, y in zip(pred, labels) if p == c and y != c)
        fn = sum(1 for p, y in zip(pred, labels) if p != c and y == c)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1s.append(2 * prec * rec / (prec + rec) if prec + rec else 0.0)
    assert macro_f1(pred, labels) == pytest.approx(np.mean(f1s))
    assert macro_f1(torch.tensor([1, 1]), torch.tensor([1, 1])) == 1.0
    with pytest.raises(ParameterError):
        macro_f1([0, 1], [0])


def test_split_edges_fractions_seed_and_time():
    tr, va, te = split_edges(1000, 0.05, 0.1, seed=4)
    assert (tr.sum(), va.sum(), te.sum()) == (850, 50, 100)
    assert not (tr & va).any() and not (tr & te).any() and not (va & te).any()
    again = split_edges(1000, 0.05, 0.1, seed=4)
    assert all((a == b).all() for a, b in zip((tr, va, te), again))
    assert not (split_edges(1000, 0.05, 0.1, seed=5)[2] == te).all()
    t = np.random.default_rng(0).permutation(1000)
    tr, va, te = split_edges(1000, 0.05, 0.1, seed=4, time=t)
    assert t[te].min() > t[va].max() and t[va].min() > t[tr].max()
    with pytest.raises(ParameterError, match="^link_test_fraction and link_val_fraction leave"):
        split_edges(10, 0.5, 0.5, seed=0)


def _toy_data(symmetric=True):
    """A 12-node graph with 30 random distinct pairs, 10 of them held out as 'test'."""
    rng = np.random.default_rng(6)
    n = 12
    pairs = set()
    while len(pairs) < 30:
        a, b = rng.integers(0, n, 2)
        if a != b and (min(a, b), max(a, b)) not in pairs:
            pairs.add((int(min(a, b)), int(max(a, b))))
    head, tail = map(np.array, zip(*sorted(pairs)))
    test = np.zeros(30, bool)
    test[rng.permutation(30)[:10]] = True
    train = ~test
    adj = from_coo(np.r_[head[train], tail[train]], np.r_[tail[train], head[train]], n, n)
    known = from_coo(np.r_[head, tail], np.r_[tail, head], n, n).to_scipy()
    return LinkData(head, tail, train, np.zeros(30, bool), test, n, (0, n), symmetric,
                    [("node", 0, n)], adj, known)


@pytest.mark.parametrize("decoder", ["dot", "distmult"])
def test_evaluate_links_full_ranking_against_brute_force(decoder):
    data = _toy_data()
    z = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))
    z = torch.round(z * 2) / 2                              # some tied scores
    dec = LinkDecoder(decoder, 4)
    if dec.rel is not None:
        dec.rel.data = torch.tensor([1.0, -0.5, 2.0, 0.5])
    out = evaluate_links(z, dec, data, data.test, -1, (1, 3, 5), seed=0)
    true = {(int(a), int(b)) for a, b in zip(data.head, data.tail)}
    true |= {(b, a) for a, b in true}

    def s(a, b):
        r = dec.rel.detach() if dec.rel is not None else torch.ones(4)
        return float((z[a] * r * z[b]).sum())

    ranks, positions, heads = [], [], []
    test_pairs = [(int(a), int(b)) for a, b in zip(data.head[data.test], data.tail[data.test])]
    for h, t in test_pairs:
        negs = [s(h, c) for c in range(12) if c != h and (h, c) not in true]
        ranks.append(_naive_rank(s(h, t), negs))
        others = [s(h, t2) for h2, t2 in test_pairs if h2 == h and t2 != t]
        positions.append(_naive_rank(s(h, t), negs + others))
        heads.append(h)
    assert out["mrr"] == pytest.approx(np.mean([1 / r for r in ranks]))
    for k in (1, 3, 5):
        assert out[f"hits@{k}"] == pytest.approx(np.mean([r <= k for r in ranks]))
        per = {}
        for h, p in zip(heads, positions):
            per.setdefault(h, []).append(p <= k)
        assert out[f"recall@{k}"] == pytest.approx(np.mean([np.mean(v) for v in per.values()]))
    assert 0.0 <= out["auc"] <= 1.0


def test_evaluate_links_sampled_negatives_are_filtered():
    """With sampled negatives, a negative that is a true edge never counts: with scores 2
    on every true edge and 0 elsewhere, each held-out edge ranks first."""
    data = _toy_data()
    n = 12
    a = np.zeros((n, n), np.float32)
    a[data.head, data.tail] = a[data.tail, data.head] = 1.0
    eye = np.eye(n, dtype=np.float32)
    # heads 0..n-1 as [A_h, e_h], tails n..2n-1 as [e_t, A_t]: <h, t> = 2 A_ht
    z = torch.from_numpy(np.concatenate([np.concatenate([a, eye], 1),
                                         np.concatenate([eye, a], 1)], 0))
    known = from_coo(np.r_[data.head, data.tail], np.r_[data.tail, data.head] + n,
                     2 * n, 2 * n).to_scipy()
    two = LinkData(data.head, data.tail + n, data.train, data.val, data.test, 2 * n,
                   (n, 2 * n), False, [("a", 0, n), ("b", n, 2 * n)], data.adj, known)
    out = evaluate_links(z, LinkDecoder("dot", 2 * n), two, two.test, 50, (1,), seed=1)
    assert out["mrr"] == 1.0 and out["hits@1"] == 1.0 and out["auc"] == 1.0
    unfiltered = LinkData(**{**two.__dict__, "known": from_coo([], [], 2 * n, 2 * n).to_scipy()})
    assert evaluate_links(z, LinkDecoder("dot", 2 * n), unfiltered, two.test, 50, (1,),
                          seed=1)["mrr"] < 1.0


@pytest.mark.parametrize("negatives", [-1, 7])
def test_evaluate_scores_of_any_score_matches_the_embedding_path(negatives):
    """Common neighbours as a pair score equal the dot products of adjacency rows."""
    data = _toy_data()
    a = data.adj.to_scipy()
    a2 = (a @ a).tocsr()

    def pairs(h, t):
        return np.asarray(a2[np.repeat(h, t.shape[1]), t.ravel()]).reshape(t.shape)

    got = evaluate_scores(pairs, lambda h: a2[h].toarray(), data, data.test, negatives,
                          (1, 3), seed=3)
    want = evaluate_links(torch.from_numpy(a.toarray()), LinkDecoder("dot", 12), data,
                          data.test, negatives, (1, 3), seed=3)
    assert got == pytest.approx(want)
